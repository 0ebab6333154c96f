#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# A device whose run directory was removed without `uroce link del` leaves its
# /dev/infiniband node behind; `uroce link add` takes such orphans back (also several at
# once) and never a live device's node.
# Usage: check_link_orphans.sh UROCE   (as root; exits 77 without root)
set -euo pipefail
uroce=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }

work=$(mktemp -d /tmp/urlo.XXXXXX)
cleanup() {
	for d in "$work"/run*; do
		[ -d "$d" ] || continue
		for c in "$d"/devices/*.conf; do
			[ -e "$c" ] && UROCE_RUN_DIR=$d "$uroce" link del "$(basename "$c" .conf)" >/dev/null 2>&1
		done
	done
	rm -rf "$work"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

add() {	# add I: device o$I in run directory run$I, a pcap port (no netdev, no broker)
	UROCE_RUN_DIR=$work/run$1 "$uroce" link add "o$1" netdev "lab$1" --pmd pcap:rx_pcap=/dev/null
}
node() {	# node I: the /dev/infiniband name of device o$I
	UROCE_RUN_DIR=$work/run$1 "$uroce" link show | sed -n 's/.* uverbs \(uverbs[0-9]*\).*/\1/p'
}

for i in 1 2 3 4; do add $i >/dev/null 2>&1 || fail "link add o$i"; done
live="$(node 2) $(node 4)"
orphans="$(node 1) $(node 3)"
rm -rf "$work/run1" "$work/run3"
for n in $orphans; do
	[ "$(readlink "/dev/infiniband/$n")" = /dev/full ] || fail "$n gone before any link add"
done

pids=()
for i in 5 6 7; do
	add $i >"$work/add$i.log" 2>&1 &
	pids+=($!)
done
for i in 5 6 7; do
	wait "${pids[$((i - 5))]}" || { cat "$work/add$i.log"; fail "link add o$i"; }
done
taken=$(cat "$work"/add*.log | sed -n 's|^uroce: took back /dev/infiniband/\(uverbs[0-9]*\):.*|\1|p' | sort)
[ "$taken" = "$(echo "$orphans" | tr ' ' '\n' | sort)" ] || fail "took back '$taken', orphans were '$orphans'"
new="$(node 5) $(node 6) $(node 7)"
all=$(echo "$live $new" | tr ' ' '\n' | sort)
[ "$(echo "$all" | uniq | wc -l)" -eq 5 ] || fail "nodes shared: live $live, new $new"
for n in $orphans; do
	echo " $new " | grep -q " $n " || fail "orphan $n not reused by $new"
done
for i in 2 4; do
	[ "$(cat "/run/uroce/uverbs/$(node $i)")" = "$work/run$i/devices/o$i.conf" ] ||
		fail "the owner of o$i's node changed"
done
UROCE_RUN_DIR=$work/run2 "$uroce" link del o2
[ ! -e "/run/uroce/uverbs/$(echo "$live" | cut -d' ' -f1)" ] || fail "link del left the owner file"
echo "ok: orphans $orphans taken back by three concurrent link add; live $live untouched"
