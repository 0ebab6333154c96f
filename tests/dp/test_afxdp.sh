#!/bin/bash
# SPDX-License-Identifier: MIT
# af_xdp over veth: ping-pong, the MTU the port can carry (one 4 KiB UMEM chunk per frame),
# ARP and ND answered by uroce (the kernel no longer sees the frames), the XDP program removed at close.
. "$(dirname "$0")/lib.sh"
setup_veth 3500

bg $WORK/pong inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --count 1500
wait_port $WORK/pong || fail "pong did not start"
grep -q "mtu=3438" $WORK/pong && ok "IP MTU 3438: the UMEM chunk, not the netdev's 3500" || fail "$(grep ^port $WORK/pong)"
inB ip link show $VB | grep -q xdp && ok "XDP program attached" || fail "no XDP program on $VB"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 64 \
	>$WORK/ping1 2>&1 || fail "ping 64"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 2048 \
	>$WORK/ping2 2>&1 || fail "ping 2048"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IP6B --peer-qpn 0x300 --count 500 --size 256 \
	>$WORK/ping3 2>&1 || fail "ping IPv6"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 3 --size 4096 \
	--wait-ms 20 >$WORK/ping4 2>&1
wait $LASTPID
for f in ping1:64 ping2:2048 ping3:IPv6; do
	[ "$(field received $WORK/${f%%:*})" = 500 ] && ok "500 pings (${f#*:}) answered" ||
		fail "${f#*:}: $(grep '^ping' $WORK/${f%%:*})"
done
[ "$(counter tx_too_big $WORK/ping4)" -ge 3 ] && ok "4 KiB payload refused (frame above the UMEM chunk), counted" ||
	fail "tx_too_big=$(counter tx_too_big $WORK/ping4)"
[ "$(counter arp_reply_tx $WORK/pong)" -ge 1 ] && [ "$(counter na_tx $WORK/pong)" -ge 1 ] &&
	ok "uroce answered ARP and ND (arp_reply_tx=$(counter arp_reply_tx $WORK/pong) na_tx=$(counter na_tx $WORK/pong))" ||
	fail "no ARP/ND answers from the af_xdp side"
inB ip link show $VB | grep -q xdp && fail "XDP program left behind" || ok "XDP program removed at close"

# The kernel on the far side resolves uroce's address: answered by uroce, not by B's kernel.
bg $WORK/pong2 inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --timeout 6
wait_port $WORK/pong2 || fail "pong did not start"
inA ip neigh flush dev $VA
inA $PY -c "import socket; s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.sendto(b'x', ('$IPB', 9))"
inA $PY -c "import socket; s=socket.socket(socket.AF_INET6, socket.SOCK_DGRAM); s.sendto(b'x', ('$IP6B', 9))"
sleep 0.5
macB=$(inB cat /sys/class/net/$VB/address)
inA ip neigh show $IPB | grep -q "$macB" && inA ip neigh show $IP6B | grep -q "$macB" &&
	ok "A's kernel learnt B's MAC for IPv4 and IPv6 from uroce's answers" ||
	fail "A's kernel neighbours: $(inA ip neigh show dev $VA)"
# One af_xdp port per netdev queue: a second live process is refused with a clear line...
inB $PORTTEST pong --pmd af_xdp --netdev $VB --timeout 1 >$WORK/second 2>&1 && fail "second af_xdp process accepted"
grep -q "af_xdp is in use by process $LASTPID" $WORK/second && ok "second process refused: $(cat $WORK/second)" ||
	fail "second process: $(cat $WORK/second)"
# ...and the XDP program of a process that died is taken over, not an obstacle.
kill -9 $LASTPID; wait $LASTPID 2>/dev/null
inB ip link show $VB | grep -q xdp || fail "expected the killed process's XDP program to stay"
bg $WORK/pong3 inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --count 100
wait_port $WORK/pong3 && ok "port opened over a dead process's XDP program" || fail "$(cat $WORK/pong3)"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 100 --size 64 >$WORK/ping5 2>&1
wait $LASTPID
[ "$(field received $WORK/ping5)" = 100 ] && ok "and it carries traffic" || fail "$(grep '^ping port' $WORK/ping5)"
finish
