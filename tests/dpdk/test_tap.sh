#!/bin/bash
# SPDX-License-Identifier: MIT
# The tap PMD: uroce on the DPDK side of a TAP interface, a second port (af_packet) on its kernel
# side as the peer: ARP answered by uroce, RoCE ping-pong through the TAP.
. "$(dirname "$0")/lib.sh"
ip netns add "$NSA" || skip "cannot create a network namespace"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
TAP=udtap${SUFFIX: -8}

bg $WORK/pong inA $PORTTEST pong --pmd tap --netdev $TAP --ip 10.66.0.2 --mac 02:00:00:66:00:02 \
	--qpn 0x300 --count 300
wait_port $WORK/pong || fail "tap pong did not start"
# DPDK mirrors its MAC onto the kernel side; give the kernel side its own, it is the peer here.
inA ip link set $TAP address 02:00:00:66:00:01
inA ip addr add 10.66.0.1/24 dev $TAP
inA ip link set $TAP up
inA $PORTTEST ping --netdev $TAP --qpn 0x200 --peer 10.66.0.2 --peer-qpn 0x300 --count 300 --size 512 \
	>$WORK/ping 2>&1
wait $LASTPID
grep -q "resolved mac=02:00:00:66:00:02" $WORK/ping && ok "ARP through the TAP answered by uroce" ||
	fail "$(grep -E 'resolve|uroce' $WORK/ping)"
[ "$(field received $WORK/ping)" = 300 ] && ok "300 pings through the TAP" || fail "$(grep '^ping' $WORK/ping)"
[ "$(counter arp_reply_tx $WORK/pong)" -ge 1 ] || fail "uroce answered no ARP"
finish
