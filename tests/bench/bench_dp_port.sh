#!/bin/bash
# SPDX-License-Identifier: MIT
# Round-trip latency of RoCE frames through uroce's DPDK port, against a plain DPDK ping-pong on
# the same ethdev (rte_eth_rx/tx_burst, same PMD settings) and a busy-polling kernel UDP
# ping-pong (non-blocking sockets), all over the same veth pair between two namespaces.
# Prints figures and ratios measured in this run; it is a benchmark, not a test.
#   PORTTEST=build/tests/dpdk/uroce-porttest tests/bench/bench_dp_port.sh [ITERS]
PORTTEST=${PORTTEST:?PORTTEST must point at uroce-porttest}
SUFFIX=b$$
. "$(dirname "$0")/../dpdk/lib.sh"
ITERS=${1:-20000}

median() { field rtt_median_us "$1"; }

# latency PMD PEER SIZE LABEL MODE...: median RTT in µs of one ping-pong run.
port_rtt() {
	local pmd=$1 peer=$2 size=$3 plain=$4
	bg $WORK/pong inB $PORTTEST pong --pmd $pmd --netdev $VB --qpn 0x300 $plain --timeout 120
	wait_port $WORK/pong >/dev/null || { echo "pong failed: $(cat $WORK/pong)" >&2; return 1; }
	# The peer's MAC is given: a plain DPDK loop answers no ARP (nor does the kernel under af_xdp).
	inA $PORTTEST ping --pmd $pmd --netdev $VA --qpn 0x200 --peer $peer --peer-qpn 0x300 \
		--peer-mac $(inB cat /sys/class/net/$VB/address) \
		--count $ITERS --size $size --quiet $plain >$WORK/ping 2>&1
	kill $LASTPID; wait $LASTPID 2>/dev/null
	median $WORK/ping
}

udp_rtt() {
	local size=$1
	bg $WORK/upong inB $PORTTEST udp-pong --bind $IPB:9000 --timeout 120
	sleep 0.3
	inA $PORTTEST udp-ping --peer $IPB:9000 --count $ITERS --size $size >$WORK/uping 2>&1
	kill $LASTPID; wait $LASTPID 2>/dev/null
	median $WORK/uping
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

echo "uroce port latency benchmark: $ITERS round trips each, median RTT in microseconds"
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%-9s %-6s %10s %10s %10s %12s %12s\n" pmd size uroce plain_dpdk kernel_udp uroce/dpdk uroce/kernel

# af_packet: MTU 9000 so that 4 KiB payloads fit.
setup_veth 9000
inA $PORTTEST kfilter add $VA; inB $PORTTEST kfilter add $VB
for size in 64 4096; do
	u=$(port_rtt af_packet $IPB $size "")
	p=$(port_rtt af_packet $IPB $size --plain)
	k=$(udp_rtt $((size + 24)))	# same UDP payload as the RoCE frame: BTH + DETH + data + ICRC
	printf "%-9s %-6s %10s %10s %10s %12s %12s\n" af_packet $size $u $p $k $(ratio $u $p) $(ratio $u $k)
done

# UROCE_PCAP recording on both sides: the cost of a buffered capture.
u=$(port_rtt af_packet $IPB 64 "")
c=$(UROCE_PCAP=$WORK/cap-%p.pcap port_rtt af_packet $IPB 64 "")
echo "UROCE_PCAP on both sides, af_packet 64 B: $c µs (without: $u µs, ratio $(ratio $c $u))"

# af_xdp: one 4 KiB UMEM chunk per frame, so 2 KiB payloads at most.
inA ip link set $VA mtu 3500; inB ip link set $VB mtu 3500
for size in 64 2048; do
	u=$(port_rtt af_xdp $IPB $size "")
	p=$(port_rtt af_xdp $IPB $size --plain)
	k=$(udp_rtt $((size + 24)))
	printf "%-9s %-6s %10s %10s %10s %12s %12s\n" af_xdp $size $u $p $k $(ratio $u $p) $(ratio $u $k)
done
