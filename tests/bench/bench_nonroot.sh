#!/bin/bash
# SPDX-License-Identifier: MIT
# The unprivileged path beside the privileged one, in one run: ib_write_lat and ib_write_bw
# through uroce0 between two namespaces, once as root (the PMD opens its own sockets) and once
# as ordinary users the script creates (through the device's broker: the server's end one user,
# the client's another, as RLIMIT_MEMLOCK counts a user's processes together), runs interleaved;
# medians and the ratio user/root.  "user" has the default RLIMIT_MEMLOCK (8 MiB: af_packet's
# rings are mapped unlocked, af_xdp's UMEM is the small one), "user+memlock" 64 MiB (as
# limits.conf can give a group).  A benchmark (figures only).
#   sudo UROCE=build/tools/uroce tests/bench/bench_nonroot.sh [RUNS] [LAT_ITERS] [BW_ITERS]
# Environment: PMD (af_packet, the default, or af_xdp), NS_PREFIX (namespace/veth name
# prefix, default "un").
UROCE=${UROCE:?UROCE must point at the uroce command}
PORTTEST=${PORTTEST:-unused}
NS_PREFIX=${NS_PREFIX:-un}
PMD=${PMD:-af_packet}
SUFFIX=n$$
. "$(dirname "$0")/../dpdk/lib.sh"
RUNS=${1:-5}
LAT_ITERS=${2:-5000}
BW_ITERS=${3:-5000}
USERS=(urbench$$a urbench$$b)
PORT=18950

for u in "${USERS[@]}"; do useradd -M -s /usr/sbin/nologin $u || skip "cannot create a user"; done
trap 'cleanup; for u in "${USERS[@]}"; do userdel $u 2>/dev/null; done' EXIT
chmod 755 $WORK

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR) print v[int((NR + 1) / 2)]; else print "-" }'; }

# once WHO TOOL OPTS...: the client's output of one client/server run (WHO: root or user).
once() {
	local who=$1 tool=$2; shift 2
	local lim=()
	[ $who = user+memlock ] && lim=(prlimit --memlock=$((64 << 20)))
	as_user() { [ $who = root ] || echo setpriv --reuid=$1 --regid=$1 --init-groups; }
	PORT=$((PORT + 1))
	bg $WORK/srv inB env UROCE_RUN_DIR=$WORK/runB "${lim[@]}" $(as_user ${USERS[0]}) $UROCE exec -- $tool -d uroce0 -p $PORT -x 3 "$@"
	for _ in $(seq 50); do inB ss -ltn 2>/dev/null | grep -q ":$PORT " && break; sleep 0.1; done
	inA env UROCE_RUN_DIR=$WORK/runA "${lim[@]}" $(as_user ${USERS[1]}) $UROCE exec -- $tool -d uroce0 -p $PORT -x 3 "$@" $IPB >$WORK/cli 2>&1
	wait $LASTPID 2>/dev/null
	cat $WORK/cli
}

echo "root (the PMD's own sockets) against an ordinary user (through the broker), $PMD, veth MTU 1500"
echo "host: $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg); median of $RUNS interleaved runs"
setup_veth 1500
for side in A B; do
	v=$VA; [ $side = B ] && v=$VB
	mkdir -p $WORK/run$side
	in$side env UROCE_RUN_DIR=$WORK/run$side $UROCE link add uroce0 netdev $v --pmd $PMD >/dev/null ||
		skip "uroce link add failed"
done
declare -A fig
WHO="root user user+memlock"
prlimit --memlock=$((64 << 20)) true 2>/dev/null ||
	{ WHO="root user"; echo "user+memlock not measured: root here cannot raise RLIMIT_MEMLOCK (no CAP_SYS_RESOURCE)"; }
echo "users' RLIMIT_MEMLOCK: $(setpriv --reuid=${USERS[0]} --regid=${USERS[0]} --init-groups sh -c 'ulimit -l') KiB"
for _ in $(seq $RUNS); do
	for who in $WHO; do
		# Columns: #bytes #iterations t_min t_max t_typical t_avg ...
		r=$(once $who ib_write_lat -s 64 -n $LAT_ITERS -F | awk '$1 == 64 && NF >= 6 { print $5, $6 }')
		[ -n "$r" ] && fig[$who.typ]+="${r% *} " && fig[$who.avg]+="${r#* } "
		# Columns: #bytes #iterations BW_peak BW_average MsgRate
		r=$(once $who ib_write_bw -s 65536 -n $BW_ITERS -F | awk '$1 == 65536 && NF >= 5 { print $4 }')
		[ -n "$r" ] && fig[$who.bw]+="$r "
	done
done
for side in A B; do in$side env UROCE_RUN_DIR=$WORK/run$side $UROCE link del uroce0 >/dev/null 2>&1; done

printf "%-34s %8s %8s %8s %11s %13s\n" figure root user user/root user+memlock user+memlock/root
for k in "typ ib_write_lat 64 B t_typical (us)" "avg ib_write_lat 64 B t_avg (us)" "bw ib_write_bw 64 KiB (MB/s)"; do
	key=${k%% *} name=${k#* }
	r=$(printf '%s\n' ${fig[root.$key]:-} | median)
	u=$(printf '%s\n' ${fig[user.$key]:-} | median)
	m=$(printf '%s\n' ${fig[user+memlock.$key]:-} | median)
	[ -n "$m" ] || m=-
	ratio() { awk -v r="$1" -v u="$2" 'BEGIN { if (r + 0 > 0 && u + 0 > 0) printf "%.3f", u / r; else print "-" }'; }
	printf "%-34s %8s %8s %8s %11s %13s\n" "$name" "$r" "$u" "$(ratio "$r" "$u")" "$m" "$(ratio "$r" "$m")"
done
echo "runs:"
for who in $WHO; do
	for key in typ avg bw; do echo "  $who $key: ${fig[$who.$key]:-}"; done
done
