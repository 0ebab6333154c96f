#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `uroce link add` run at once in several network namespaces: every one succeeds
# and each device gets its own /dev/infiniband/uverbsN.
# Usage: check_link_parallel.sh UROCE   (as root; exits 77 without root)
set -euo pipefail
uroce=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }

count=6
prefix=urlp$$
unset UROCE_RUN_DIR
cleanup() {
	for i in $(seq $count); do
		ip netns exec "$prefix$i" "$uroce" link del uroce0 >/dev/null 2>&1 || true
		ip netns del "$prefix$i" 2>/dev/null || true
		rm -rf "/run/uroce/netns/$prefix$i"
	done
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

for i in $(seq $count); do
	ip netns add "$prefix$i"
	ip netns exec "$prefix$i" ip link add va type veth peer name vb
	ip netns exec "$prefix$i" ip link set va up
	ip netns exec "$prefix$i" ip link set vb up
	ip netns exec "$prefix$i" ip addr add 10.68.0.1/24 dev va
done

pids=()
for i in $(seq $count); do
	ip netns exec "$prefix$i" "$uroce" link add uroce0 netdev va >"/tmp/$prefix$i.log" 2>&1 &
	pids+=($!)
done
failed=0
for i in $(seq $count); do
	wait "${pids[$((i - 1))]}" || { failed=1; echo "link add in $prefix$i:"; cat "/tmp/$prefix$i.log"; }
	rm -f "/tmp/$prefix$i.log"
done
[ $failed -eq 0 ] || fail "a concurrent link add failed"

names=$(for i in $(seq $count); do
	ip netns exec "$prefix$i" "$uroce" link show | sed -n 's/.* uverbs \(uverbs[0-9]*\).*/\1/p'
done | sort)
[ "$(echo "$names" | wc -l)" -eq $count ] || fail "expected $count devices, got: $names"
[ "$(echo "$names" | uniq | wc -l)" -eq $count ] || fail "uverbs names shared: $names"
for n in $names; do
	[ "$(readlink "/dev/infiniband/$n")" = /dev/full ] || fail "/dev/infiniband/$n is not ours"
done
echo "ok: $count concurrent link add, distinct nodes:" $names
