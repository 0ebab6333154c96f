#!/bin/bash
# SPDX-License-Identifier: MIT
# RDMA through dp_device against baselines measured in the same run, on the same veth:
#   - RDMA write round trip (ib_write_lat style) vs plain DPDK ping-pong and busy-polling kernel UDP,
#     and vs the floor of any RC transport on that path: the plain ping-pong with an ACK frame in
#     front of every frame, in the same burst (each side acknowledges the peer's write with its own);
#   - one-way goodput of 64 KiB RDMA writes vs iperf3 TCP (af_packet and af_xdp), and vs what the
#     PMD carries one way with no transport at all (plain DPDK stream of path-MTU frames);
#   - memif goodput of 64 KiB writes vs memcpy() of 64 KiB blocks.
# A benchmark (figures and ratios), not a test.
#   PORTTEST=... ENGINETEST=... tests/bench/bench_dp_engine.sh [ITERS] [SECONDS]
PORTTEST=${PORTTEST:?PORTTEST must point at uroce-porttest}
ENGINETEST=${ENGINETEST:?ENGINETEST must point at uroce-enginetest}
SUFFIX=e$$
. "$(dirname "$0")/../dpdk/lib.sh"
ITERS=${1:-20000}
SECS=${2:-5}
mkdir -p $UROCE_RUN_DIR/devices
conf() { printf '%s\n' "${@:2}" >$UROCE_RUN_DIR/devices/$1.conf; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }

# engine DEV_A DEV_B ARGS...: server in B, client in A; prints the client's result line.
engine() {
	local a=$1 b=$2; shift 2
	rm -rf $WORK/x; mkdir -p $WORK/x
	bg $WORK/srv inB $ENGINETEST server $b --dir $WORK/x "$@"
	inA $ENGINETEST client $a --dir $WORK/x "$@" >$WORK/cli 2>&1
	wait $LASTPID
	grep -E '^(write_lat|write_bw)' $WORK/cli || echo "failed: $(cat $WORK/cli $WORK/srv | tr '\n' ' ')" >&2
}

port_plain_rtt() {	# pmd size [--with-ack]
	bg $WORK/pong inB $PORTTEST pong --pmd $1 --netdev $VB --qpn 0x300 --plain --timeout 120 ${3:-}
	wait_port $WORK/pong >/dev/null
	inA $PORTTEST ping --pmd $1 --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --plain \
		--peer-mac $(inB cat /sys/class/net/$VB/address) --count $ITERS --size $2 --quiet ${3:-} >$WORK/ping 2>&1
	kill $LASTPID; wait $LASTPID 2>/dev/null
	field rtt_median_us $WORK/ping
}

# plain_stream_gbps pmd payload: one-way goodput of raw bursts of one prebuilt frame (no transport).
plain_stream_gbps() {
	bg $WORK/sink inB $PORTTEST sink --pmd $1 --netdev $VB --plain --timeout $(( SECS + 20 )) --quiet
	wait_port $WORK/sink >/dev/null
	inA $PORTTEST stream --pmd $1 --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --plain \
		--peer-mac $(inB cat /sys/class/net/$VB/address) --size $2 --timeout $SECS --quiet >$WORK/stream 2>&1
	wait $LASTPID 2>/dev/null
	field goodput_gbps $WORK/sink
}

udp_rtt() {
	bg $WORK/upong inB $PORTTEST udp-pong --bind $IPB:9000 --timeout 120
	sleep 0.3
	inA $PORTTEST udp-ping --peer $IPB:9000 --count $ITERS --size $1 >$WORK/uping 2>&1
	kill $LASTPID; wait $LASTPID 2>/dev/null
	field rtt_median_us $WORK/uping
}

iperf_gbps() {
	bg $WORK/iperf inB iperf3 -s -1 -p 5299
	sleep 0.5
	inA iperf3 -c $IPB -p 5299 -t $SECS -J >$WORK/iperf.json 2>/dev/null
	wait $LASTPID 2>/dev/null
	$PY -c "import json; print('%.3f' % (json.load(open('$WORK/iperf.json'))['end']['sum_received']['bits_per_second'] / 1e9))"
}

echo "uroce engine benchmark: $ITERS round trips (median RTT, µs), ${SECS}s transfers"
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
setup_veth 9000
inA $PORTTEST kfilter add $VA; inB $PORTTEST kfilter add $VB
conf ubA "netdev = $VA"; conf ubB "netdev = $VB"
conf uxA "netdev = $VA" "pmd = af_xdp"; conf uxB "netdev = $VB" "pmd = af_xdp"

echo
echo "RDMA write round trip (median µs); rc_floor: plain DPDK with an ACK frame per hop"
HDR="%-9s %-6s %10s %10s %10s %10s %10s %10s %12s\n"
printf "$HDR" pmd size rdma_write plain_dpdk rc_floor kernel_udp write/dpdk floor/dpdk write/kernel
lat_row() {	# pmd devA devB size pmtu
	local w p f k
	w=$(engine $2 $3 --mode lat --size $4 --iters $ITERS --mtu $5 | grep -o 'rtt_median_us=[^ ]*' | cut -d= -f2)
	p=$(port_plain_rtt $1 $4)
	f=$(port_plain_rtt $1 $4 --with-ack)
	k=$(udp_rtt $(( $4 + 28 )))	# BTH + RETH + data + ICRC
	printf "$HDR" $1 $4 $w $p $f $k $(ratio $w $p) $(ratio $f $p) $(ratio $w $k)
}
lat_row af_packet ubA ubB 64 4096
lat_row af_packet ubA ubB 4096 4096
echo
echo "64 KiB RDMA write goodput (Gbit/s), 16 outstanding; plain_stream: path-MTU frames, no transport"
GHDR="%-9s %-6s %10s %12s %10s %10s %14s\n"
printf "$GHDR" pmd pmtu rdma_write plain_stream iperf3_tcp write/tcp plain_stream/tcp
g=$(engine ubA ubB --mode bw --size 65536 --depth 16 --seconds $SECS --mtu 4096 | grep -o 'goodput_gbps=[^ ]*' | cut -d= -f2)
c=$(plain_stream_gbps af_packet 4096)
t=$(iperf_gbps)
printf "$GHDR" af_packet 4096 $g $c $t $(ratio $g $t) $(ratio $c $t)

inA ip link set $VA mtu 3500; inB ip link set $VB mtu 3500
g=$(engine uxA uxB --mode bw --size 65536 --depth 16 --seconds $SECS --mtu 2048 | grep -o 'goodput_gbps=[^ ]*' | cut -d= -f2)
c=$(plain_stream_gbps af_xdp 2048)
t=$(iperf_gbps)
printf "$GHDR" af_xdp 2048 $g $c $t $(ratio $g $t) $(ratio $c $t)
echo
echo "RDMA write round trip over af_xdp (median µs)"
printf "$HDR" pmd size rdma_write plain_dpdk rc_floor kernel_udp write/dpdk floor/dpdk write/kernel
lat_row af_xdp uxA uxB 64 2048
lat_row af_xdp uxA uxB 2048 2048

echo
echo "memif: 64 KiB RDMA write goodput vs memcpy (Gbit/s)"
conf umA "netdev = um$SUFFIX" "pmd = memif" "pmd_args = role=client" "ipv4 = 10.88.0.1" "mtu = 9000"
conf umB "netdev = um$SUFFIX" "pmd = memif" "pmd_args = role=server" "ipv4 = 10.88.0.2" "mtu = 9000"
g=$(engine umA umB --mode bw --size 65536 --depth 16 --seconds $SECS --mtu 4096 | grep -o 'goodput_gbps=[^ ]*' | cut -d= -f2)
m=$($ENGINETEST none none --mode memcpy --size 65536 --seconds $SECS | grep -o 'goodput_gbps=[^ ]*' | cut -d= -f2)
printf "%-9s %10s %10s %10s\n" memif rdma_write memcpy write/memcpy
printf "%-9s %10s %10s %10s\n" memif $g $m $(ratio $g $m)
