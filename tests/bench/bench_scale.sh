#!/bin/bash
# SPDX-License-Identifier: MIT
# Memory and throughput against the number of RC QPs, between two namespaces (af_packet, veth
# MTU 1500): for 1, 16, 256 and 1024 QPs, the engine's memory per QP as `uroce stat` reports it
# (bytes_per_qp) and the growth of resident memory per QP, both from scale_check (every QP writes
# one 4 KiB block, data checked), then ib_write_bw -q N with 64 KiB messages: the total and the
# share of one QP.  A benchmark (figures only).
#   sudo UROCE=build/tools/uroce SCALE_CHECK=build/tests/integration/scale_check \
#     tests/bench/bench_scale.sh [SECONDS] [QP_COUNTS...]     (ninja -C build bench-scale)
# Environment: NS_PREFIX (namespace/veth name prefix, default "uq").
UROCE=${UROCE:?UROCE must point at the uroce command}
SCALE_CHECK=${SCALE_CHECK:?SCALE_CHECK must point at tests/integration/scale_check}
PORTTEST=${PORTTEST:-unused}
NS_PREFIX=${NS_PREFIX:-uq}
SUFFIX=q$$
. "$(dirname "$0")/../dpdk/lib.sh"
SECONDS_BW=${1:-3}
shift 2>/dev/null
COUNTS=${*:-1 16 256 1024}
PORT=19050

setup_veth 1500
for side in A B; do
	v=$VA; [ $side = B ] && v=$VB
	mkdir -p $WORK/run$side
	in$side env UROCE_RUN_DIR=$WORK/run$side $UROCE link add uroce0 netdev $v >/dev/null ||
		skip "uroce link add failed"
done
gid() { in$1 env UROCE_RUN_DIR=$WORK/run$1 $UROCE link show -j uroce0 | $PY -c '
import json, sys
print(next(g["index"] for g in json.load(sys.stdin)[0]["gids"]
           if g["type"] == "RoCE v2" and g["gid"].startswith("::ffff:")))'; }
GA=$(gid A) GB=$(gid B)

# pair GID_OPTION TOOL ARGS...: the server in B, the client in A; the client's output.
pair() {
	local opt=$1 tool=$2; shift 2
	PORT=$((PORT + 1))
	bg $WORK/srv inB env UROCE_RUN_DIR=$WORK/runB $UROCE exec -- $tool -p $PORT "$@" $opt $GB
	for _ in $(seq 100); do inB ss -ltn 2>/dev/null | grep -q ":$PORT " && break; sleep 0.1; done
	inA env UROCE_RUN_DIR=$WORK/runA $UROCE exec -- $tool -p $PORT "$@" $opt $GA $IPB >$WORK/cli 2>&1
	wait $LASTPID 2>/dev/null
	cat $WORK/cli
}

echo "RC QPs between two namespaces, af_packet, veth MTU 1500; host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf "%6s %14s %14s %12s %14s %14s\n" qps bytes_per_qp rss_per_qp connect_ms "MB/s total" "MB/s per QP"
for n in $COUNTS; do
	fig=$(pair -g $SCALE_CHECK -d uroce0 -n $n --storm $n --rounds 0 --uroce $UROCE |
		grep '^FIGURE qps=')
	val() { grep -o "\b$1=[^ ]*" <<<"$fig" | cut -d= -f2; }
	# Columns: #bytes #iterations BW_peak BW_average MsgRate
	bw=$(pair -x ib_write_bw -d uroce0 -F -q $n -s 65536 -D $SECONDS_BW |
		awk '$1 == 65536 && NF >= 5 { print $4 }')
	per=$(awk -v b="$bw" -v n=$n 'BEGIN { if (b + 0 > 0) printf "%.1f", b / n; else print "-" }')
	printf "%6s %14s %14s %12s %14s %14s\n" $n "$(val bytes_per_qp)" "$(val rss_per_qp)" \
		"$(val connect_ms)" "${bw:--}" "$per"
done
for side in A B; do in$side env UROCE_RUN_DIR=$WORK/run$side $UROCE link del uroce0 >/dev/null 2>&1; done
