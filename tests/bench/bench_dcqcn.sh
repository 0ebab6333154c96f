#!/bin/bash
# SPDX-License-Identifier: MIT
# DCQCN at a bottleneck: two ib_write_bw flows from two processes on one uroce device share one
# rate-limited link that marks ECN: `uroce bottleneck` on the receiver's veth (an XDP program: a
# queue drained at RATE Mbit/s, marking as RED does, here from 10 KB to 100 KB (MARK_WORDS); this
# kernel has no RED qdisc). Flow 1 runs SECONDS, flow 2 joins after a third of it and leaves
# after two thirds. Once with `dcqcn on` on the senders' device (its frames are then ECT(0): the
# bottleneck marks them, the receiver answers with CNPs, the senders cut their rate) and once
# with DCQCN off (frames not ECN-capable: the bottleneck drops them), in the same run.
# Prints, for each mode, the bottleneck's use while both flows run, its drops and marks, each
# flow's share, and writes OUT/dcqcn.png: each QP's rate over time, sampled from `uroce stat`.
# A benchmark: it fails only when a run produced no figure.
#   sudo UROCE=build/tools/uroce tests/bench/bench_dcqcn.sh [--seconds S] [--rate MBIT] [--out DIR]
#   (sudo ninja -C build bench-dcqcn)
# Environment: DCQCN_WORDS (the senders' DCQCN settings), MARK_WORDS (`uroce bottleneck`'s marking).
set -u
UROCE=${UROCE:?UROCE must point at the uroce command}
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
SECS=15
RATE=1000
OUT=
# Alpha updated every 55 us as in the DCQCN paper: with mlx5's dce_tcp_rtt of 1 us alpha decays
# between two CNPs (at most one per 50 us per QP) and a cut takes about 1 % of the rate.
DCQCN_WORDS=${DCQCN_WORDS-dce_tcp_rtt 55}
# Marking for 1 Gbit/s: from 10 KB (a few frames), certain past 100 KB, 10 % at 100 KB.
MARK_WORDS=${MARK_WORDS-mark 10000 100000 10%}
while [ $# -gt 0 ]; do
	case $1 in
	--seconds) SECS=$2; shift;;
	--rate) RATE=$2; shift;;
	--out) OUT=$2; shift;;
	*) sed -n '13,15p' "$0" | sed 's/^# *//' >&2; exit 2;;
	esac
	shift
done
[ "$(id -u)" = 0 ] || { echo "bench_dcqcn: needs root (network namespaces)"; exit 77; }
for t in ib_write_bw gnuplot; do
	command -v $t >/dev/null || { echo "bench_dcqcn: $t is missing: run tools/install-deps.sh" >&2; exit 1; }
done
OUT=${OUT:-$(mktemp -d /tmp/uroce-dcqcn.XXXXXX)}
mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1

TAG=$(printf %04x $(($$ & 0xffff)))
NSS=dqS$TAG NSR=dqR$TAG
VS=dqs$TAG VR=dqr$TAG
IPS=10.95.0.1 IPR=10.95.0.2
RUNS=$OUT/runS RUNR=$OUT/runR
PIDS=""

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	UROCE_RUN_DIR=$RUNS ip netns exec $NSS $UROCE link del uroce0 >/dev/null 2>&1
	UROCE_RUN_DIR=$RUNR ip netns exec $NSR $UROCE link del uroce0 >/dev/null 2>&1
	for ns in $NSS $NSR; do ip netns del $ns 2>/dev/null; done
	rm -rf "$RUNS" "$RUNR"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

for ns in $NSS $NSR; do ip netns add $ns || exit 1; ip -n $ns link set lo up; done
ip link add $VS netns $NSS mtu 9000 type veth peer name $VR netns $NSR mtu 9000 || exit 1
ip -n $NSS addr add $IPS/24 dev $VS && ip -n $NSS link set $VS up
ip -n $NSR addr add $IPR/24 dev $VR && ip -n $NSR link set $VR up
mkdir -p $RUNS $RUNR

gid() {	# NS RUN: the RoCE v2 GID index of the device's IPv4 address
	UROCE_RUN_DIR=$2 ip netns exec $1 $UROCE link show -j uroce0 | $PY -c '
import json, sys
print(next(g["index"] for g in json.load(sys.stdin)[0]["gids"]
           if g["type"] == "RoCE v2" and g["gid"].startswith("::ffff:")))'
}

bottleneck() { ip netns exec $NSR $UROCE bottleneck $VR "$@"; }

# run MODE: both flows once with the senders' device in MODE (dcqcn on|off).
run() {
	local mode=$1 t0 f1 f2 s1 s2 log=$OUT/$1
	for d in S R; do
		eval "local ns=\$NS$d run=\$RUN$d dev=\$V$d"
		UROCE_RUN_DIR=$run ip netns exec $ns $UROCE link del uroce0 >/dev/null 2>&1
		if [ $d = S ]; then
			UROCE_RUN_DIR=$run ip netns exec $ns $UROCE link add uroce0 netdev $dev \
				dcqcn $mode line_rate 10000 $DCQCN_WORDS >/dev/null || return 1
		else
			UROCE_RUN_DIR=$run ip netns exec $ns $UROCE link add uroce0 netdev $dev >/dev/null ||
				return 1
		fi
	done
	local gs gr
	gs=$(gid $NSS $RUNS) gr=$(gid $NSR $RUNR)
	bottleneck $RATE $MARK_WORDS || return 1
	for n in 1 2; do
		UROCE_RUN_DIR=$RUNR ip netns exec $NSR $UROCE exec -- ib_write_bw -d uroce0 -x $gr -F \
			-p $((19300 + n)) -s 65536 --report_gbits >$log-server$n.log 2>&1 &
		PIDS="$PIDS $!"
		eval "s$n=\$!"
	done
	for n in 1 2; do
		for _ in $(seq 100); do
			ip netns exec $NSR ss -ltn | grep -q ":$((19300 + n)) " && break
			sleep 0.1
		done
	done
	: >$log-samples.jsonl
	t0=$(date +%s.%N)
	client() {	# N SECONDS
		UROCE_RUN_DIR=$RUNS ip netns exec $NSS $UROCE exec -- ib_write_bw -d uroce0 -x $gs -F \
			-p $((19300 + $1)) -s 65536 --report_gbits -D $2 $IPR >$log-client$1.log 2>&1
	}
	client 1 $SECS &
	f1=$!
	PIDS="$PIDS $f1"
	(sleep $((SECS / 3)); client 2 $((SECS / 3))) &
	f2=$!
	PIDS="$PIDS $f2"
	# every 100 ms: the senders' QP counters and the bottleneck's counters
	while kill -0 $f1 2>/dev/null || kill -0 $f2 2>/dev/null; do
		printf '{"t0":%s,"t":%s,"stat":%s,"bottleneck":"%s"}\n' $t0 \
			"$(awk -v now="$(date +%s.%N)" -v t0=$t0 'BEGIN { printf "%.3f", now - t0 }')" \
			"$(UROCE_RUN_DIR=$RUNS ip netns exec $NSS $UROCE stat -j)" "$(bottleneck show)" \
			>>$log-samples.jsonl
		sleep 0.1
	done
	wait $f1 $f2
	for p in $s1 $s2; do
		for _ in $(seq 50); do kill -0 $p 2>/dev/null || break; sleep 0.1; done
		kill $p 2>/dev/null
	done
	return 0
}

echo "DCQCN bottleneck: two 64 KiB ib_write_bw flows, af_packet, veth MTU 9000, \`uroce" \
	"bottleneck\` ${RATE} Mbit/s on the receiver's veth; flow 1 ${SECS} s," \
	"flow 2 from $((SECS / 3)) s for $((SECS / 3)) s; $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg)"
ok=1
for mode in on off; do
	run $mode || { echo "bench_dcqcn: dcqcn $mode: uroce link add failed" >&2; ok=0; }
done
$PY "$HERE/dcqcn_report.py" "$OUT" $RATE || ok=0
echo "results: $OUT (summary.md, dcqcn.png, *-samples.jsonl, *-client*.log)"
[ $ok = 1 ]
