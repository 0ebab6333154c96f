#!/bin/bash
# SPDX-License-Identifier: MIT
# ARP and neighbour discovery from the port (af_packet: the kernel peer answers): IPv4, IPv6
# global and link-local; requests well-formed as tshark sees them; an absent host fails in bounded time.
. "$(dirname "$0")/lib.sh"
setup_veth

macB=$(inB cat /sys/class/net/$VB/address)
llB=$(inB ip -6 addr show dev $VB scope link | sed -n 's/.*inet6 \(fe80[^/]*\).*/\1/p')
bg $WORK/cap inB tshark -i $VB -f "arp or icmp6" -w $WORK/neigh.pcap
sleep 2
for peer in $IPB $IP6B $llB; do
	inA $PORTTEST resolve --netdev $VA --peer $peer --timeout 5 >$WORK/r 2>&1
	grep -q "resolved mac=$macB" $WORK/r && ok "$peer resolved to $macB ($(field after_ms $WORK/r) ms)" ||
		fail "$peer: $(grep -E 'resolve|uroce' $WORK/r)"
done
start=$(date +%s%N)
inA $PORTTEST resolve --netdev $VA --peer 10.77.0.99 --timeout 10 >$WORK/r 2>&1
took_ms=$(( ($(date +%s%N) - start) / 1000000 ))
grep -q "resolve failed: No route to host" $WORK/r && ok "absent host: EHOSTUNREACH after $(field after_ms $WORK/r) ms" ||
	fail "absent host: $(grep resolve $WORK/r)"
[ "$took_ms" -lt 6000 ] || fail "absent host took ${took_ms} ms"
[ "$(counter arp_req_tx $WORK/r)" -ge 10 ] && ok "requests retried ($(counter arp_req_tx $WORK/r))" || fail "arp_req_tx=$(counter arp_req_tx $WORK/r)"
sleep 1
kill $LASTPID; wait $LASTPID 2>/dev/null
# Independent check on the far end (af_packet sends bypass the local taps): tshark parses
# our requests, ND checksums verify.
n_arp=$(tshark -r $WORK/neigh.pcap -Y "arp.opcode == 1 && arp.src.proto_ipv4 == $IPA && eth.src == $(inA cat /sys/class/net/$VA/address)" 2>/dev/null | wc -l)
[ "$n_arp" -ge 2 ] && ok "tshark: $n_arp ARP requests from uroce" || fail "tshark saw $n_arp ARP requests"
tshark -r $WORK/neigh.pcap -Y "icmpv6.type == 135" -T fields \
	-e icmpv6.checksum.status -e icmpv6.nd.ns.target_address 2>/dev/null >$WORK/ns
grep -q "^1[[:space:]]$IP6B" $WORK/ns && grep -q "^1[[:space:]]$llB" $WORK/ns &&
	ok "tshark: neighbour solicitations with good checksums" || fail "NS as tshark sees them: $(cat $WORK/ns)"
grep -qv "^1" $WORK/ns && fail "an NS with a bad checksum"
finish
