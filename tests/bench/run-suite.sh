#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmark suite: unmodified perftest through uroce and its baselines, in one run, on one veth.
#
#   tests/bench/run-suite.sh [--quick] [--repeats N] [--seconds S] [--iters N] [--build DIR]
#                            [--out DIR] [--update-docs]
#   tests/bench/run-suite.sh --profile [--seconds S] [--iters N] [--build DIR] [--out DIR]
#   tests/bench/run-suite.sh --loss [--repeats N] [--seconds S] [--build DIR] [--out DIR]
#
# Between two network namespaces joined by a veth pair (names bn*), for every repeat:
#   af_packet (MTU 9000, path MTU 4096): ib_{write,read,send}_bw at 64 B..1 MiB, ib_{write,read,
#     send}_lat at 2 B..4 KiB, ib_atomic_lat (fetch&add), message rate (8 B writes, -q 4),
#     64 KiB write, read and send goodput with 0.1/1/5% loss on both ends (`uroce loss`), with
#     Go-Back-N and with selective repeat (pmd af_packet_sr), and the baselines on the
#     same veth: sockperf UDP ping-pong (busy-polling, non-blocking), the plain DPDK ping-pong
#     (uroce-porttest --plain: raw rx/tx bursts on the same PMD), iperf3 TCP;
#   af_xdp (MTU 3500, path MTU 2048): write bandwidth and latency, plain DPDK ping-pong, iperf3;
#   memif (two devices in one namespace): write bandwidth and latency, memcpy() of the same sizes;
#   same host (two processes on one device): write and read bandwidth, write, read and send
#     latency, with direct placement (pmd same_host) and by frames (`direct = off`:
#     same_host_frames), and the floors under them: memcpy() and process_vm_writev() of one
#     block, a shared-memory ping-pong and one made of process_vm_writev() (bench_shm_pingpong).
# Every latency figure comes with its 99th percentile (op OP_p99); ib_write_lat 64 B runs with
# perftest's -H, whose samples give latency.png's companion percentiles.png.
# Output in --out (default BUILD/bench-results/DATE): results.csv (one row per figure), table.md
# (medians, spread, ratios against the baselines), latency.png, bandwidth.png, loss.png, machine.txt
# and logs/. --update-docs also puts the table and plots into docs/performance.md and docs/img/.
# --profile runs only ib_write_bw (64 KiB) and ib_write_lat (64 B) over af_packet, each side under
# `perf record`, and writes the top functions of each side to profile-TOOL-SIDE.txt.
# --loss runs only the 64 KiB goodput without loss and at each loss rate (--quick: Go-Back-N
# writes at 1 %).
# A benchmark, not a test: it fails only when a measurement produced no figure.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
PY=/usr/bin/python3
SUITE_PY=$HERE/suite.py

QUICK=0
REPEATS=3
SECS=
ITERS=
BUILD=$SRC/build
OUT=
UPDATE_DOCS=0
PROFILE=0
LOSS_ONLY=0
usage() { sed -n '5,8p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) QUICK=1;;
	--repeats) REPEATS=$2; shift;;
	--seconds) SECS=$2; shift;;
	--iters) ITERS=$2; shift;;
	--build) BUILD=$2; shift;;
	--out) OUT=$2; shift;;
	--update-docs) UPDATE_DOCS=1;;
	--profile) PROFILE=1;;
	--loss) LOSS_ONLY=1;;
	*) usage;;
	esac
	shift
done
BUILD=$(cd "$BUILD" && pwd) || { echo "run-suite: no build directory (run meson setup build)" >&2; exit 1; }

if [ $QUICK = 1 ]; then
	REPEATS=1; SECS=${SECS:-1}; ITERS=${ITERS:-500}
	BW_SIZES="65536"; LAT_SIZES="64"; LOSS_RATES="1"; LOSS_TOOLS="ib_write_bw"; LOSS_MODES="gbn"
	XDP_BW_SIZES="65536"; XDP_LAT_SIZES="64"; MEMIF_BW_SIZES="65536"; SAME_BW_SIZES="65536"
else
	SECS=${SECS:-3}; ITERS=${ITERS:-1000}
	BW_SIZES="64 4096 65536 1048576"; LAT_SIZES="2 64 4096"; LOSS_RATES="0.1 1 5"
	LOSS_TOOLS="ib_write_bw ib_read_bw ib_send_bw"; LOSS_MODES="gbn sr"
	XDP_BW_SIZES="64 4096 65536 1048576"; XDP_LAT_SIZES="2 64"; MEMIF_BW_SIZES="64 4096 65536 1048576"
	SAME_BW_SIZES="65536 1048576"
fi
LOSS_SIZE=65536
# Narrow a --loss run for an experiment, e.g. BENCH_LOSS_TOOLS=ib_read_bw BENCH_LOSS_RATES=1
# BENCH_LOSS_MODES=gbn.
LOSS_TOOLS=${BENCH_LOSS_TOOLS:-$LOSS_TOOLS}; LOSS_RATES=${BENCH_LOSS_RATES:-$LOSS_RATES}
LOSS_MODES=${BENCH_LOSS_MODES:-$LOSS_MODES}

UROCE=$BUILD/tools/uroce
PORTTEST=$BUILD/tests/dpdk/uroce-porttest
ENGINETEST=$BUILD/tests/dpdk/uroce-enginetest
SHM_PINGPONG=$BUILD/tests/bench/bench_shm_pingpong
for f in "$UROCE" "$PORTTEST" "$ENGINETEST" "$SHM_PINGPONG"; do
	[ -x "$f" ] || { echo "run-suite: $f is missing: build first (ninja -C $BUILD)" >&2; exit 1; }
done
if [ "$(id -u)" != 0 ]; then echo "run-suite: needs root (network namespaces)"; exit 77; fi
for t in ib_write_bw sockperf iperf3 gnuplot; do
	command -v $t >/dev/null || { echo "run-suite: $t is missing: run tools/install-deps.sh" >&2; exit 1; }
done

OUT=${OUT:-$BUILD/bench-results/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT/logs" || exit 1
OUT=$(cd "$OUT" && pwd)
CSV=$OUT/results.csv
echo "tool,op,size,pmd,loss,repeat,value,unit" >"$CSV"

TAG=$(printf %04x $(($$ & 0xffff)))
NSA=bnA$TAG NSB=bnB$TAG VA=bnvA$TAG VB=bnvB$TAG CA=bncA$TAG CB=bncB$TAG
IPA=10.93.0.1 IPB=10.93.0.2
# perftest's own TCP connection (it exchanges QPNs, PSNs, GIDs, rkeys) goes over a second veth
# pair: an af_xdp port takes every frame of its netdev, so the kernel's TCP never sees them.
CTRL_A=10.94.0.1
WORK=$(mktemp -d /tmp/uroce-bench.XXXXXX)
RUNA=$WORK/runA RUNB=$WORK/runB RUNM=$WORK/runM
mkdir -p $RUNA $RUNB $RUNM
PIDS=""
MISSING=0
PORT=18900

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	for d in A B; do
		eval "UROCE_RUN_DIR=\$RUN$d ip netns exec \$NS$d $UROCE link del uroce0" >/dev/null 2>&1
	done
	UROCE_RUN_DIR=$RUNM ip netns exec $NSA $UROCE link del umA >/dev/null 2>&1
	UROCE_RUN_DIR=$RUNM ip netns exec $NSA $UROCE link del umB >/dev/null 2>&1
	ip netns del $NSA 2>/dev/null	# and with it the veth pairs
	ip netns del $NSB 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT
trap 'echo "run-suite: interrupted"; exit 130' INT TERM

log() { printf '[%s] %s\n' "$(date -u +%H:%M:%S)" "$*"; }

# record TOOL OP SIZE PMD LOSS VALUE UNIT LOGFILE: one CSV row, or a warning when VALUE is empty.
record() {
	if [ -n "$6" ] && awk -v v="$6" 'BEGIN { exit !(v > 0) }'; then
		echo "$1,$2,$3,$4,$5,$REP,$6,$7" >>"$CSV"
		printf '    %-14s %-14s %8s %-9s loss=%-4s %12s %s\n' "$1" "$2" "$3" "$4" "$5" "$6" "$7"
	else
		MISSING=$((MISSING + 1))
		echo "    NO FIGURE: $1 $2 size=$3 pmd=$4 loss=$5 (log: $8)"
	fi
}

# bg LOG ARGV...: start in the background, remember the PID.
bg() {
	local logf=$1; shift
	"$@" >"$logf" 2>&1 &
	LASTPID=$!
	PIDS="$PIDS $LASTPID"
}

# stop PID: end a background program started here, if still running.
stop() {
	kill "$1" 2>/dev/null
	wait "$1" 2>/dev/null
	PIDS=$(echo "$PIDS" | tr ' ' '\n' | grep -vx "$1" | tr '\n' ' ')
}

# wait_tcp NS PORT PID: until a TCP port listens in NS (or the server died).
wait_tcp() {
	for _ in $(seq 300); do
		kill -0 "$3" 2>/dev/null || return 1
		[ -n "$(ip netns exec "$1" ss -Hltn "sport = :$2")" ] && return 0
		sleep 0.05
	done
	return 1
}

# The side a perftest pair runs on, set per PMD: server namespace, run dir, device, GID index;
# client likewise; the address the client connects to.
set_sides_veth() {
	S_NS=$NSA S_RUN=$RUNA S_DEV=uroce0 C_NS=$NSB C_RUN=$RUNB C_DEV=uroce0 PEER=$CTRL_A
	S_GID=$(gid_v4 $NSA $RUNA uroce0) C_GID=$(gid_v4 $NSB $RUNB uroce0)
}
set_sides_memif() {
	S_NS=$NSA S_RUN=$RUNM S_DEV=umA C_NS=$NSA C_RUN=$RUNM C_DEV=umB PEER=127.0.0.1
	S_GID=1 C_GID=1		# the RoCE v2 link-local GID: memif devices have no IP address
}
# Same host: server and client in namespace A on one uroce0, the client at A's loopback.
set_sides_samehost() {
	S_NS=$NSA S_RUN=$RUNA S_DEV=uroce0 C_NS=$NSA C_RUN=$RUNA C_DEV=uroce0 PEER=127.0.0.1
	S_GID=$(gid_v4 $NSA $RUNA uroce0) C_GID=$S_GID
}
# direct_placement on|off: the same-host device's setting, read by each program as it opens it.
direct_placement() {
	local conf=$RUNA/devices/uroce0.conf
	sed -i '/^direct/d' $conf
	[ $1 = off ] && echo "direct = off" >>$conf
}
gid_v4() { UROCE_RUN_DIR=$2 ip netns exec $1 $UROCE link show $3 | awk '/::ffff:.*RoCE v2/ { print $2; exit }'; }

# perftest LOGNAME TOOL ARGS...: run a perftest pair through `uroce exec`; the client's output
# ends up in $OUT/logs/LOGNAME.log (the server's in LOGNAME.srv.log).
perftest() {
	local name=$1 tool=$2; shift 2
	local slog=$OUT/logs/$name.srv.log clog=$OUT/logs/$name.log spid rc
	PORT=$((PORT + 1))
	bg $slog env UROCE_RUN_DIR=$S_RUN ip netns exec $S_NS timeout 150 \
		${PERF_S[@]+"${PERF_S[@]}"} $UROCE exec -- $tool -d $S_DEV -x $S_GID -F -p $PORT "$@"
	spid=$LASTPID
	if wait_tcp $S_NS $PORT $spid; then
		UROCE_RUN_DIR=$C_RUN ip netns exec $C_NS timeout 150 \
			${PERF_C[@]+"${PERF_C[@]}"} $UROCE exec -- $tool -d $C_DEV -x $C_GID -F -p $PORT \
			"$@" $PEER >$clog 2>&1
		rc=$?
		for _ in $(seq 100); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
	else
		echo "server did not listen" >$clog
		rc=1
	fi
	stop $spid
	return $rc
}

op_of() { local op=${1#ib_}; echo ${op%_*}; }

# bw PMD TOOL SIZE LOSS [EXTRA...]: one bandwidth figure in Gbit/s.
bw() {
	local pmd=$1 tool=$2 size=$3 loss=$4; shift 4
	local name=$pmd-$tool-$size-loss$loss-r$REP
	perftest $name $tool -s $size -D $SECS --report_gbits "$@"
	record $tool $(op_of $tool) $size $pmd $loss "$($PY $SUITE_PY perftest $OUT/logs/$name.log 'BW average')" \
		Gbit/s $OUT/logs/$name.log
}

# lat PMD TOOL SIZE [EXTRA...]: perftest's median latency (t_typical): half a round trip for
# write and send ping-pongs, a whole one for read and atomics (one operation, one completion).
lat() {
	local pmd=$1 tool=$2 size=$3; shift 3
	local name=$pmd-$tool-$size-r$REP unit=us_half_rtt
	case $tool in ib_read_lat|ib_atomic_lat) unit=us_rtt;; esac
	if [ $tool = ib_atomic_lat ]; then
		perftest $name $tool -n $ITERS "$@"
	else
		perftest $name $tool -s $size -n $ITERS "$@"
	fi
	record $tool $(op_of $tool) $size $pmd 0 "$($PY $SUITE_PY perftest $OUT/logs/$name.log t_typical)" \
		$unit $OUT/logs/$name.log
	record $tool $(op_of $tool)_p99 $size $pmd 0 \
		"$($PY $SUITE_PY perftest $OUT/logs/$name.log '99% percentile')" $unit $OUT/logs/$name.log
}

# same_host LABEL: the same-host figures, with the device's direct placement as it is set.
same_host() {
	local pmd=$1
	for s in $SAME_BW_SIZES; do
		bw $pmd ib_write_bw $s 0
		[ $pmd = same_host ] || continue
		bw $pmd ib_read_bw $s 0
		memcpy_bw $s hot
		memcpy_bw $s cma
	done
	lat $pmd ib_write_lat 64 -H
	[ $pmd = same_host ] || return 0
	lat $pmd ib_read_lat 64
	lat $pmd ib_send_lat 64
	shm_pingpong
	shm_pingpong cma
}

# shm_pingpong [cma]: the floor under same-host latency, two processes spinning on a counter each
# writes into the other's memory: shared memory, or (cma) process_vm_writev() as direct placement
# writes, one system call each way.
shm_pingpong() {
	local name=shm-pingpong${1:+-$1}-r$REP tool=shm_pingpong
	[ "${1:-}" = cma ] && tool=cma_pingpong
	$SHM_PINGPONG ${1:+--$1} $((ITERS * 20)) >$OUT/logs/$name.log 2>&1
	record $tool pingpong 64 same_host 0 \
		"$(grep -o 't_typical=[^ ]*' $OUT/logs/$name.log | cut -d= -f2)" us_half_rtt $OUT/logs/$name.log
}

# msgrate PMD: 8-byte RDMA writes on 4 QPs, messages per second.
msgrate() {
	local name=$1-msgrate-r$REP
	perftest $name ib_write_bw -s 8 -q 4 -D $SECS
	record ib_write_bw write_msgrate 8 $1 0 "$($PY $SUITE_PY perftest $OUT/logs/$name.log MsgRate)" \
		Mpps $OUT/logs/$name.log
}

# sockperf PMD_LABEL SIZE: kernel UDP ping-pong, busy-polling non-blocking sockets on both ends;
# median half round trip of UDP payloads as large as the RDMA write's RoCE payload
# (BTH 12 + RETH 16 + data + ICRC 4).
sockperf_lat() {
	local size=$2 name=sockperf-$1-$2-r$REP
	PORT=$((PORT + 1))
	bg $OUT/logs/$name.srv.log ip netns exec $NSB timeout 60 sockperf server -i $IPB -p $PORT --nonblocked
	local spid=$LASTPID
	sleep 0.3
	ip netns exec $NSA timeout 60 sockperf ping-pong -i $IPB -p $PORT -m $((size + 32)) -t $SECS \
		--nonblocked >$OUT/logs/$name.log 2>&1
	stop $spid
	record sockperf udp_pingpong $size $1 0 "$($PY $SUITE_PY sockperf $OUT/logs/$name.log)" us_half_rtt \
		$OUT/logs/$name.log
}

# plain_dpdk PMD SIZE: the plain DPDK ping-pong (raw rte_eth_rx/tx_burst on the same PMD and veth).
plain_dpdk() {
	local pmd=$1 size=$2 name=plain-dpdk-$1-$2-r$REP
	bg $OUT/logs/$name.srv.log ip netns exec $NSB timeout 60 $PORTTEST pong --pmd $pmd --netdev $VB \
		--qpn 0x300 --plain --timeout 50
	local spid=$LASTPID
	for _ in $(seq 100); do grep -q '^port ' $OUT/logs/$name.srv.log 2>/dev/null && break; sleep 0.1; done
	ip netns exec $NSA timeout 60 $PORTTEST ping --pmd $pmd --netdev $VA --qpn 0x200 --peer $IPB \
		--peer-qpn 0x300 --plain --peer-mac $(ip netns exec $NSB cat /sys/class/net/$VB/address) \
		--count $((ITERS * 4)) --size $size --quiet >$OUT/logs/$name.log 2>&1
	stop $spid
	local rtt
	rtt=$(grep -o 'rtt_median_us=[^ ]*' $OUT/logs/$name.log | tail -1 | cut -d= -f2)
	record dpdk_plain pingpong $size $pmd 0 "$(awk -v r="$rtt" 'BEGIN { if (r > 0) printf "%.3f", r / 2 }')" \
		us_half_rtt $OUT/logs/$name.log
}

# iperf3 PMD_LABEL: TCP goodput on the veth at its current MTU.
iperf() {
	local name=iperf3-$1-r$REP
	PORT=$((PORT + 1))
	bg $OUT/logs/$name.srv.log ip netns exec $NSB timeout 60 iperf3 -s -1 -p $PORT
	local spid=$LASTPID
	sleep 0.4
	ip netns exec $NSA timeout 60 iperf3 -c $IPB -p $PORT -t $SECS -J >$OUT/logs/$name.json 2>&1
	for _ in $(seq 30); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
	stop $spid
	record iperf3 tcp_bw 0 $1 0 "$($PY $SUITE_PY iperf3 $OUT/logs/$name.json)" Gbit/s $OUT/logs/$name.json
}

# memcpy_bw SIZE [hot|cma]: memcpy() of SIZE blocks through 64 MiB buffers (pmd memif), or of one
# block again and again as perftest reuses its buffer (hot: op memcpy_hot, pmd same_host), or
# that with process_vm_writev(), the copy direct placement makes (cma: op cma_hot).
memcpy_bw() {
	local name=memcpy-$1${2:+-$2}-r$REP mode=memcpy op=memcpy pmd=memif
	[ "${2:-}" = hot ] && mode=memcpy-hot op=memcpy_hot pmd=same_host
	[ "${2:-}" = cma ] && mode=cma-hot op=cma_hot pmd=same_host
	$ENGINETEST none none --mode $mode --size $1 --seconds $SECS >$OUT/logs/$name.log 2>&1
	record memcpy $op $1 $pmd 0 "$(grep -o 'goodput_gbps=[^ ]*' $OUT/logs/$name.log | cut -d= -f2)" \
		Gbit/s $OUT/logs/$name.log
}

# veth_link PMD MTU [WORDS...]: uroce0 on both veth ends with this PMD, veth at this MTU, the
# device configured by WORDS (`uroce link add` takes them after the netdev).
veth_link() {
	local pmd=$1 mtu=$2 extra=
	shift 2
	[ $pmd = af_xdp ] && extra="--pmd af_xdp"
	for d in A B; do
		eval "local ns=\$NS$d run=\$RUN$d dev=\$V$d"
		UROCE_RUN_DIR=$run ip netns exec $ns $UROCE link del uroce0 >/dev/null 2>&1
		ip -n $ns link set $dev mtu $mtu
		UROCE_RUN_DIR=$run ip netns exec $ns $UROCE link add uroce0 netdev $dev "$@" $extra || return 1
	done
	set_sides_veth
}

loss_on_both() {	# RATE|pass|off
	UROCE_RUN_DIR=$RUNA ip netns exec $NSA $UROCE loss $VA $1 >/dev/null &&
		UROCE_RUN_DIR=$RUNB ip netns exec $NSB $UROCE loss $VB $1 >/dev/null
}

# 64 KiB goodput of each loss tool without loss and at each loss rate, frames dropped on both
# ends, for each mode: Go-Back-N (pmd af_packet) and selective repeat (af_packet_sr). The
# lossless Go-Back-N figures of the full suite's size runs serve as their baseline, and a second
# lossless run with the injector attached dropping nothing (pmd PMD_pass, `uroce loss IFACE pass`)
# as the baseline of what the protocol loses: on a veth the program costs a copy of each frame.
loss_runs() {
	local mode pmd tool rate
	for mode in $LOSS_MODES; do
		pmd=af_packet
		if [ $mode = sr ]; then
			pmd=af_packet_sr
			veth_link af_packet 9000 selective_repeat on ||
				{ echo "run-suite: uroce link add ... selective_repeat on failed" >&2; exit 1; }
		fi
		for tool in $LOSS_TOOLS; do
			if [ $pmd != af_packet ] || [ $LOSS_ONLY = 1 ] || ! [[ " $BW_SIZES " == *" $LOSS_SIZE "* ]]; then
				bw $pmd $tool $LOSS_SIZE 0
			fi
			loss_on_both pass || { echo "run-suite: uroce loss pass failed" >&2; exit 1; }
			bw ${pmd}_pass $tool $LOSS_SIZE 0
			loss_on_both off
			for rate in $LOSS_RATES; do
				loss_on_both $rate% || { echo "run-suite: uroce loss failed" >&2; exit 1; }
				bw $pmd $tool $LOSS_SIZE $rate
				loss_on_both off
			done
		done
	done
	[ "$LOSS_MODES" = gbn ] || veth_link af_packet 9000 ||
		{ echo "run-suite: uroce link add failed" >&2; exit 1; }
}

setup() {
	ip netns add $NSA && ip netns add $NSB || { echo "run-suite: cannot create namespaces" >&2; exit 1; }
	ip link add $VA netns $NSA mtu 9000 type veth peer name $VB netns $NSB mtu 9000 || exit 1
	ip -n $NSA addr add $IPA/24 dev $VA
	ip -n $NSB addr add $IPB/24 dev $VB
	for ns in $NSA $NSB; do ip -n $ns link set lo up; done
	ip -n $NSA link set $VA up
	ip -n $NSB link set $VB up
	ip link add $CA netns $NSA type veth peer name $CB netns $NSB || exit 1
	ip -n $NSA addr add $CTRL_A/24 dev $CA
	ip -n $NSB addr add 10.94.0.2/24 dev $CB
	ip -n $NSA link set $CA up
	ip -n $NSB link set $CB up
	# memif: two devices of one namespace share a run directory (the socket file lives there).
	UROCE_RUN_DIR=$RUNM ip netns exec $NSA $UROCE link add umA netdev bnm$TAG --pmd memif:role=server &&
	UROCE_RUN_DIR=$RUNM ip netns exec $NSA $UROCE link add umB netdev bnm$TAG --pmd memif:role=client ||
		exit 1
	# A memif link has no netdev MTU: set it in the device configuration (docs/dataplane.md).
	for d in umA umB; do echo "mtu = 9000" >>$RUNM/devices/$d.conf; done
}

machine() {
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "commit: $(git -C "$SRC" rev-parse --short HEAD 2>/dev/null)$(git -C "$SRC" diff --quiet HEAD 2>/dev/null || echo ' (modified)')"
	echo "cpu: $(nproc) x $(sed -n 's/^model name[^:]*: //p' /proc/cpuinfo | head -1)"
	echo "memory: $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "kernel: $(uname -r)"
	echo "os: $(. /etc/os-release && echo "$PRETTY_NAME")"
	echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null), dpdk: $(pkg-config --modversion libdpdk 2>/dev/null)"
	local mode=full
	[ $QUICK = 1 ] && mode=quick
	[ $PROFILE = 1 ] && mode="profile (repeats ignored)"
	echo "mode: $mode, repeats $REPEATS, ${SECS} s per bandwidth run, $ITERS latency iterations"
}

# profile NAME TOOL ARGS...: a perftest pair with each side under `perf record` (sampling every
# thread of the process: application, progress thread), then its top functions per side.
profile() {
	local name=$1; shift
	PERF_S=(perf record -q -F 1999 -o $OUT/$name-server.perf.data --)
	PERF_C=(perf record -q -F 1999 -o $OUT/$name-client.perf.data --)
	perftest $name "$@" || echo "    $name failed: see $OUT/logs/$name.log"
	PERF_S=() PERF_C=()
	for side in server client; do
		perf report -q -i $OUT/$name-$side.perf.data --stdio --no-children --sort comm,dso,sym \
			--percent-limit 0.8 2>/dev/null | sed 's/[[:space:]]*$//' | grep -v '^$' \
			>$OUT/profile-$name-$side.txt
		echo "== $name, $side side: top functions (self time, all threads of the process)"
		head -n 25 $OUT/profile-$name-$side.txt
	done
}

run_profile() {
	command -v perf >/dev/null || { echo "run-suite: perf is missing (apt-get install linux-perf)" >&2; exit 1; }
	machine | tee $OUT/machine.txt
	setup
	veth_link af_packet 9000 || exit 1
	REP=1
	profile ib_write_bw ib_write_bw -s 65536 -D $SECS --report_gbits
	profile ib_write_lat ib_write_lat -s 64 -n $((ITERS * 3))
	echo "profiles: $OUT/profile-*.txt (perf report -i $OUT/NAME-SIDE.perf.data for more)"
}

run_suite() {
	echo "uroce benchmark suite -> $OUT"
	echo "NOTE: this machine is noisy (shared cores, other work running): every figure is repeated"
	echo "      $REPEATS time(s); the table reports the median and the spread (min..max) of the repeats."
	machine | tee $OUT/machine.txt
	echo "load average at start: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $OUT/machine.txt
	setup

	for REP in $(seq 1 $REPEATS); do
		log "repeat $REP/$REPEATS: af_packet, veth MTU 9000"
		veth_link af_packet 9000 || { echo "run-suite: uroce link add failed" >&2; exit 1; }
		if [ $LOSS_ONLY = 1 ]; then
			loss_runs
			continue
		fi
		for tool in ib_write_bw ib_read_bw ib_send_bw; do
			for s in $BW_SIZES; do bw af_packet $tool $s 0; done
		done
		for tool in ib_write_lat ib_read_lat ib_send_lat; do
			for s in $LAT_SIZES; do
				if [ $tool = ib_write_lat ] && [ $s = 64 ]; then
					lat af_packet $tool $s -H
				else
					lat af_packet $tool $s
				fi
			done
		done
		lat af_packet ib_atomic_lat 8 -A FETCH_AND_ADD
		msgrate af_packet
		for s in $LAT_SIZES; do sockperf_lat af_packet $s; plain_dpdk af_packet $s; done
		iperf af_packet
		loss_runs

		log "repeat $REP/$REPEATS: same host, two processes on one device"
		set_sides_samehost
		direct_placement on
		same_host same_host
		direct_placement off
		same_host same_host_frames
		direct_placement on
		set_sides_veth

		log "repeat $REP/$REPEATS: af_xdp, veth MTU 3500"
		veth_link af_xdp 3500 || { echo "run-suite: uroce link add --pmd af_xdp failed" >&2; exit 1; }
		for s in $XDP_BW_SIZES; do bw af_xdp ib_write_bw $s 0; done
		for s in $XDP_LAT_SIZES; do
			[ $s = 64 ] && lat af_xdp ib_write_lat $s -H || lat af_xdp ib_write_lat $s
			plain_dpdk af_xdp $s
		done
		iperf af_xdp

		log "repeat $REP/$REPEATS: memif"
		set_sides_memif
		for s in $MEMIF_BW_SIZES; do bw memif ib_write_bw $s 0; memcpy_bw $s; done
		lat memif ib_write_lat 64 -H
		[ $QUICK = 1 ] && continue
		bw memif ib_read_bw 65536 0
		lat memif ib_read_lat 64
		lat memif ib_send_lat 64
	done

	echo "load average at end: $(cut -d' ' -f1-3 /proc/loadavg)" | tee -a $OUT/machine.txt
	echo "duration: $(( $(date +%s) - START )) s" | tee -a $OUT/machine.txt
	doc_args=()
	[ $UPDATE_DOCS = 1 ] && doc_args=(--doc "$SRC/docs/performance.md" --img "$SRC/docs/img")
	$PY $SUITE_PY report "$OUT" "${doc_args[@]}" || exit 1
	echo
	cat $OUT/table.md
	echo
	echo "NOTE: noisy machine: medians of $REPEATS repeat(s) with their spread; re-run to compare."
	echo "results: $OUT (results.csv, table.md, latency.png, bandwidth.png, loss.png, logs/)"
	if [ $MISSING != 0 ]; then
		echo "run-suite: $MISSING measurement(s) produced no figure (see NO FIGURE above)" >&2
		exit 1
	fi
}

# All of the run is in functions, read before it starts: editing this file during a run is safe.
START=$(date +%s)
if [ $PROFILE = 1 ]; then run_profile; else run_suite; fi; exit $?
