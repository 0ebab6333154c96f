#!/bin/bash
# SPDX-License-Identifier: MIT
# af_packet over veth: RoCE ping-pong (IPv4, IPv6, 8 KB frames at MTU 9000), the kernel's
# ICMP port unreachable counted then suppressed by the tc filter, UROCE_PCAP recording.
# (4 KiB payloads make 4.2 KB frames: more than af_packet's default 2 KiB ring frames.)
. "$(dirname "$0")/lib.sh"
setup_veth 9000

# 1. Without the kernel filter: the kernel answers RoCE with ICMP, the port drops and counts it.
bg $WORK/pong1 inB $PORTTEST pong --netdev $VB --qpn 0x300 --count 500
wait_port $WORK/pong1 || fail "pong did not start"
# DPDK is linked statically with only uroce's drivers: no plugin directory scan, no mlx5/libibverbs.
if grep -E 'librte_|mlx[45]|libibverbs' /proc/$LASTPID/maps >$WORK/maps; then
	fail "DPDK shared objects or mlx drivers mapped: $(awk '{print $6}' $WORK/maps | sort -u | tr '\n' ' ')"
else
	ok "no librte_*.so, mlx4/mlx5 or libibverbs in the process"
fi
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 64 \
	>$WORK/ping1 2>&1 || fail "ping 64 B: $(tail -3 $WORK/ping1)"
wait $LASTPID
[ "$(field received $WORK/ping1)" = 500 ] && ok "500 pings of 64 B answered" || fail "64 B: $(grep ping $WORK/ping1)"
[ "$(field bad $WORK/ping1)" = 0 ] && [ "$(field mismatched $WORK/ping1)" = 0 ] || fail "bad frames"
icmp=$(( $(counter rx_icmp_unreach $WORK/ping1) + $(counter rx_icmp_unreach $WORK/pong1) ))
[ "$icmp" -gt 0 ] && ok "kernel ICMP port unreachable seen and dropped ($icmp)" || fail "no ICMP counted without the filter"

# 2. With the filter (what `uroce link add` installs): no ICMP, the kernel's UDP never sees 4791.
inA $PORTTEST kfilter add $VA && inB $PORTTEST kfilter add $VB || fail "kfilter add"
inA $PORTTEST kfilter add $VA || fail "kfilter add is not idempotent"
noports() { ip netns exec $1 awk '/^Udp:/{getline; print $3}' /proc/net/snmp; }
np_a=$(noports $NSA); np_b=$(noports $NSB)
export UROCE_PCAP=$WORK/rec-%p.pcap
bg $WORK/pong2 inB $PORTTEST pong --netdev $VB --qpn 0x300 --count 1500
pong2_pid=$LASTPID
wait_port $WORK/pong2 || fail "pong did not start"
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 1024 \
	>$WORK/ping2 2>&1 || fail "ping 1 KB"
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IP6B --peer-qpn 0x300 --count 500 --size 256 \
	>$WORK/ping3 2>&1 || fail "ping IPv6"
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 4096 \
	>$WORK/ping4 2>&1 || fail "ping 4096 B"
wait $LASTPID
unset UROCE_PCAP
for f in ping2:1024 ping3:IPv6 ping4:4096; do
	[ "$(field received $WORK/${f%%:*})" = 500 ] && ok "500 pings (${f#*:}) answered" ||
		fail "${f#*:}: $(grep '^ping' $WORK/${f%%:*})"
done
icmp=$(( $(counter rx_icmp_unreach $WORK/ping2) + $(counter rx_icmp_unreach $WORK/pong2) ))
[ "$icmp" = 0 ] && ok "no ICMP with the tc filter" || fail "$icmp ICMP port unreachable with the filter"
[ "$(noports $NSA)" = "$np_a" ] && [ "$(noports $NSB)" = "$np_b" ] && ok "kernel UDP saw no RoCE" ||
	fail "kernel UDP NoPorts grew: $np_a -> $(noports $NSA), $np_b -> $(noports $NSB)"

# The trap the sizing avoids: with DPDK's default 2 KiB ring frames a 4 KiB frame never arrives.
bg $WORK/pong5 inB $PORTTEST pong --netdev $VB --qpn 0x300 --pmd-args framesz=2048,blocksz=4096,framecnt=512 --timeout 4
wait_port $WORK/pong5 || fail "pong did not start"
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 5 --size 4096 --wait-ms 100 >$WORK/ping5 2>&1
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 5 --size 1024 --wait-ms 100 >$WORK/ping6 2>&1
kill $LASTPID; wait $LASTPID 2>/dev/null
[ "$(field received $WORK/ping5)" = 0 ] && [ "$(field received $WORK/ping6)" = 5 ] &&
	ok "2 KiB ring frames lose 4 KiB frames (the reason framesz follows the MTU)" ||
	fail "default framesz: 4 KiB got $(field received $WORK/ping5), 1 KiB got $(field received $WORK/ping6)"

# 3. UROCE_PCAP: every RoCE frame sent and received, readable by tshark, ICRC checked by scapy.
pong_pcap=$WORK/rec-$pong2_pid.pcap	# the pings recorded theirs too
n=$(tshark -r "$pong_pcap" -Y 'infiniband' 2>/dev/null | wc -l)
[ "$n" = 3000 ] && ok "UROCE_PCAP of the pong: 3000 RoCE frames (tshark)" || fail "UROCE_PCAP has $n frames, expected 3000"
$PY - "$pong_pcap" <<'PYEOF' && ok "ICRC of recorded IPv4 frames verified by scapy" || fail "scapy ICRC check"
import sys
from scapy.all import rdpcap, IP, UDP, Ether, load_contrib
load_contrib('roce')
from scapy.contrib.roce import BTH
n = 0
for p in rdpcap(sys.argv[1]):
    if IP not in p or UDP not in p or p[UDP].dport != 4791:
        continue
    raw = bytes(p)
    q = Ether(raw)
    q[BTH].icrc = None
    if bytes(q) != raw:
        sys.exit("ICRC mismatch in frame %d" % n)
    n += 1
if n != 2000:
    sys.exit("expected 2000 IPv4 frames, got %d" % n)
PYEOF

# 4. The benchmark's plain baselines (tests/bench/bench_dp_engine.sh): raw rte_eth bursts.
MACB=$(inB cat /sys/class/net/$VB/address)
bg $WORK/pong7 inB $PORTTEST pong --netdev $VB --qpn 0x300 --plain --with-ack --count 200
wait_port $WORK/pong7 || fail "pong did not start"
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --plain --with-ack \
	--peer-mac $MACB --count 200 --size 64 >$WORK/ping7 2>&1
wait $LASTPID
[ "$(field received $WORK/ping7)" = 200 ] && [ "$(field bad $WORK/ping7)" = 0 ] &&
	[ "$(field echoed $WORK/pong7)" = 200 ] && [ "$(field bad $WORK/pong7)" = 0 ] &&
	ok "plain ping-pong with an ACK frame per hop: 200 answered, ACKs not taken for answers" ||
	fail "--with-ack: $(grep -h -E '^(ping|pong)' $WORK/ping7 $WORK/pong7 | tr '\n' ' ')"
bg $WORK/sink inB $PORTTEST sink --netdev $VB --plain --timeout 10 --quiet
wait_port $WORK/sink || fail "sink did not start"
inA $PORTTEST stream --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --plain \
	--peer-mac $MACB --size 1024 --timeout 0.5 --quiet >$WORK/stream 2>&1
wait $LASTPID
sent=$(field sent $WORK/stream); got=$(field frames $WORK/sink)
[ "${sent:-0}" -gt 1000 ] && [ "${got:-0}" -gt 0 ] && [ "$got" -le "$sent" ] &&
	[ "$(field payload_bytes $WORK/sink)" = $(( got * 1024 )) ] &&
	ok "plain stream: $sent frames sent, $got counted at the sink with their 1 KiB payloads" ||
	fail "stream/sink: $(cat $WORK/stream $WORK/sink | grep -E '^(stream|sink)' | tr '\n' ' ')"

# 5. Removing the filter leaves the clsact qdisc alone.
inA $PORTTEST kfilter del $VA || fail "kfilter del"
inA tc filter show dev $VA ingress | grep -q 'handle 0x4791' && fail "filter still there"
inA $PORTTEST kfilter del $VA || fail "kfilter del is not idempotent"
inA tc qdisc show dev $VA | grep -q clsact && ok "filter removed, clsact kept" || fail "clsact qdisc gone"
finish
