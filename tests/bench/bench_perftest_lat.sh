#!/bin/bash
# SPDX-License-Identifier: MIT
# Unmodified perftest latency tools (ib_write_lat, ib_send_lat, ib_read_lat, ib_atomic_lat) through
# uroce0 between two namespaces over a veth: median of RUNS runs of each tool's t_avg and t_typical.
# A benchmark (figures only), not a test.
#   UROCE=build/tools/uroce tests/bench/bench_perftest_lat.sh [ITERS] [RUNS] [TOOLS...]
# Environment: PMD=af_packet|af_xdp, SIZES="64 4096", CPUS_A/CPUS_B (taskset lists for each side),
# NS_PREFIX (namespace/veth name prefix, default "ub").
UROCE=${UROCE:?UROCE must point at the uroce command}
PORTTEST=${PORTTEST:-unused}
NS_PREFIX=${NS_PREFIX:-ub}
SUFFIX=l$$
. "$(dirname "$0")/../dpdk/lib.sh"
ITERS=${1:-5000}
RUNS=${2:-3}
shift 2 2>/dev/null
TOOLS=${*:-ib_write_lat ib_send_lat ib_read_lat ib_atomic_lat}
PMD=${PMD:-af_packet}
SIZES=${SIZES:-64 4096}
PORT=18900
MTU=9000
[ "$PMD" = af_xdp ] && MTU=3500

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

# lat_once TOOL SIZE: "t_typical t_avg" of one client/server run, or nothing on failure.
lat_once() {
	local tool=$1 size=$2 opts=(-n $ITERS -F -x 3) ta=() tb=()
	[ "$tool" = ib_atomic_lat ] || opts+=(-s $size)
	[ -n "${CPUS_A:-}" ] && ta=(taskset -c $CPUS_A)
	[ -n "${CPUS_B:-}" ] && tb=(taskset -c $CPUS_B)
	PORT=$((PORT + 1))
	bg $WORK/srv inB env UROCE_RUN_DIR=$WORK/runB "${tb[@]}" $UROCE exec -- $tool -d uroce0 -p $PORT "${opts[@]}"
	for _ in $(seq 50); do inB ss -ltn 2>/dev/null | grep -q ":$PORT " && break; sleep 0.1; done
	inA env UROCE_RUN_DIR=$WORK/runA "${ta[@]}" $UROCE exec -- $tool -d uroce0 -p $PORT "${opts[@]}" $IPB >$WORK/cli 2>&1
	wait $LASTPID 2>/dev/null
	# Columns: #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
	awk '$1 ~ /^[0-9]+$/ && NF >= 6 { print $5, $6 }' $WORK/cli | tail -1
}

echo "perftest latency through uroce ($PMD): $ITERS iterations, median of $RUNS runs, µs"
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)," \
     "taskset A=${CPUS_A:-all} B=${CPUS_B:-all}"
setup_veth $MTU
# Each side has its own run directory, as two hosts would.
for side in A B; do
	v=$VA; [ $side = B ] && v=$VB
	mkdir -p $WORK/run$side
	in$side env UROCE_RUN_DIR=$WORK/run$side $UROCE link add uroce0 netdev $v --pmd $PMD >/dev/null ||
		skip "uroce link add failed"
done
printf "%-14s %6s %12s %12s %s\n" tool size t_typical t_avg "runs (t_avg)"
for tool in $TOOLS; do
	for size in $SIZES; do
		[ "$tool" = ib_atomic_lat ] && [ "$size" != 64 ] && continue
		typ=() avg=()
		for _ in $(seq $RUNS); do
			r=$(lat_once $tool $size)
			[ -n "$r" ] || { echo "$tool $size failed: $(tail -3 $WORK/cli | tr '\n' ' ')" >&2; continue; }
			typ+=(${r% *}); avg+=(${r#* })
		done
		printf "%-14s %6s %12s %12s %s\n" $tool $size \
			$(printf '%s\n' "${typ[@]}" | median) $(printf '%s\n' "${avg[@]}" | median) "${avg[*]}"
	done
done
for side in A B; do in$side env UROCE_RUN_DIR=$WORK/run$side $UROCE link del uroce0 >/dev/null 2>&1; done
