#!/bin/bash
# SPDX-License-Identifier: MIT
# memif between two processes of one host: ping-pong over shared memory, ARP and ND answered by
# uroce on both sides (DPDK owns the link), addresses and MAC from the configuration.
. "$(dirname "$0")/lib.sh"

common="--pmd memif --netdev udm$SUFFIX --mtu 9000"
bg $WORK/pong $PORTTEST pong $common --pmd-args role=server --name udmB --ip 10.88.0.2 --ip fd88::2 \
	--mac 02:00:00:88:00:02 --qpn 0x300 --count 1500
wait_port $WORK/pong || fail "pong did not start"
for size in 64 4096; do
	$PORTTEST ping $common --pmd-args role=client --name udmA --ip 10.88.0.1 --mac 02:00:00:88:00:01 \
		--qpn 0x200 --peer 10.88.0.2 --peer-qpn 0x300 --count 500 --size $size >$WORK/ping$size 2>&1
	[ "$(field received $WORK/ping$size)" = 500 ] && ok "500 pings of $size B over memif" ||
		fail "memif $size: $(grep -E '^ping|^resolve|uroce' $WORK/ping$size)"
done
grep -q "resolved mac=02:00:00:88:00:02" $WORK/ping64 && ok "ARP over memif answered with the configured MAC" ||
	fail "$(grep resolve $WORK/ping64)"
$PORTTEST ping $common --pmd-args role=client --name udmA --ip fd88::1 --mac 02:00:00:88:00:01 \
	--qpn 0x200 --peer fd88::2 --peer-qpn 0x300 --count 500 --size 512 >$WORK/ping6 2>&1
[ "$(field received $WORK/ping6)" = 500 ] && ok "IPv6 over memif (ND answered by uroce)" || fail "memif IPv6: $(grep -E '^ping|^resolve' $WORK/ping6)"
wait $LASTPID
[ "$(counter arp_reply_tx $WORK/pong)" -ge 1 ] && [ "$(counter na_tx $WORK/pong)" -ge 1 ] || fail "pong answered no ARP/ND"
finish
