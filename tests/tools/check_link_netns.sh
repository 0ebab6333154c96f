#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Devices are per network namespace: `uroce link add` inside a namespace named by
# `ip netns` keeps its device under /run/uroce/netns/NAME, invisible elsewhere.
# Usage: check_link_netns.sh UROCE   (as root; exits 77 without root)
set -euo pipefail
uroce=$1
[ "$(id -u)" -eq 0 ] || { echo "SKIP: needs root"; exit 77; }

ns=urln$$
veth=urln$$
unset UROCE_RUN_DIR
cleanup() {
	ip netns exec "$ns" "$uroce" link del uroce0 >/dev/null 2>&1 || true
	ip netns del "$ns" 2>/dev/null || true
	ip link del "${veth}b" 2>/dev/null || true
	rm -rf "/run/uroce/netns/$ns"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }

ip netns add "$ns"
ip link add "${veth}a" type veth peer name "${veth}b"
ip link set "${veth}a" netns "$ns"
ip link set "${veth}b" up
ip netns exec "$ns" ip link set "${veth}a" up
ip netns exec "$ns" ip addr add 10.67.0.1/24 dev "${veth}a"

ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a"
[ -f "/run/uroce/netns/$ns/devices/uroce0.conf" ] || fail "no config under /run/uroce/netns/$ns"
ip netns exec "$ns" "$uroce" link show | grep -q '^link uroce0/1 ' || fail "not listed inside $ns"
if "$uroce" link show 2>/dev/null | grep -q "netdev ${veth}a"; then
	fail "listed outside $ns"
fi
ip netns exec "$ns" "$uroce" exec -- ibv_devices | grep -q uroce0 || fail "ibv_devices inside $ns"
UROCE_RUN_DIR=/run/uroce/netns/$ns "$uroce" link show | grep -q '^link uroce0/1 ' ||
	fail "UROCE_RUN_DIR does not override"
ip netns exec "$ns" "$uroce" link del uroce0
[ ! -e "/run/uroce/netns/$ns/devices/uroce0.conf" ] || fail "config left after link del"
echo "ok: per-namespace devices"

# A namespace deleted with its device, then created again with the same name and netdev names,
# starts clean: the old device is gone, its /dev/infiniband node given back.
ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a"
old=$(awk -F' = ' '$1 == "uverbs" { print $2 }' "/run/uroce/netns/$ns/devices/uroce0.conf")
[ -L "/dev/infiniband/$old" ] || fail "no /dev/infiniband/$old for the first device"
read -r broker broker_start < "/run/uroce/netns/$ns/devices/uroce0.broker" ||
	fail "no broker PID file for the first device"
kill -0 "$broker" || fail "the first device's broker $broker is not running"
# A program's leftovers in the old namespace: a QPN table, a same-host ring.
ip netns exec "$ns" "$uroce" exec -- ibv_devinfo -d uroce0 >/dev/null || fail "ibv_devinfo"
table="/run/uroce/netns/$ns/qpn/${veth}a"
[ -f "$table" ] || fail "no QPN table after a program opened the device"
touch -d @1 "$table"	# marked old: a table made for the new device is newer
mkdir -p "/run/uroce/netns/$ns/loop/stale"
touch "/run/uroce/netns/$ns/loop/stale/1.ring"
ip netns del "$ns"
ip netns add "$ns"
ip link add "${veth}a" type veth peer name "${veth}b2"
ip link set "${veth}a" netns "$ns"
ip link set "${veth}b2" up
ip netns exec "$ns" ip link set "${veth}a" up
ip netns exec "$ns" ip addr add 10.67.0.1/24 dev "${veth}a"
out=$(ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a" 2>&1) ||
	fail "link add in the recreated namespace: $out"
grep -q 'network namespace of the same name that was deleted' <<<"$out" ||
	fail "no word of the removed devices: $out"
ip netns exec "$ns" "$uroce" link show | grep -c '^link ' | grep -qx 1 ||
	fail "not exactly one device in the recreated namespace"
ip netns exec "$ns" "$uroce" exec -- ibv_devices | grep -q uroce0 || fail "ibv_devices after recreation"
new=$(awk -F' = ' '$1 == "uverbs" { print $2 }' "/run/uroce/netns/$ns/devices/uroce0.conf")
[ "$new" = "$old" ] || [ ! -e "/dev/infiniband/$old" ] || fail "/dev/infiniband/$old of the old device left"
[ ! -e "/run/uroce/netns/$ns/loop/stale" ] || fail "the old namespace's rings left"
# link add made the new device's table (root's, for its broker); the old one is gone.
[ "$(ls -A "/run/uroce/netns/$ns/qpn")" = "${veth}a" ] && [ "$(stat -c %Y "$table")" -gt 1 ] ||
	fail "the old namespace's QPN tables left"
# The old broker was ended (it kept the deleted namespace alive); a new one serves the new device.
stat=$(cat "/proc/$broker/stat" 2>/dev/null) || stat=
if [ -n "$stat" ]; then
	set -- ${stat##*) }	# fields from the third on: the start time is field 22
	[ $((${20} | 1)) != "$broker_start" ] || fail "the old namespace's broker $broker still runs"
fi
read -r broker2 _ < "/run/uroce/netns/$ns/devices/uroce0.broker" || fail "no broker for the new device"
kill -0 "$broker2" || fail "the new device's broker $broker2 is not running"
# A namespace that still exists is not stale: a second add is refused as before.
if ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a" 2>/dev/null; then
	fail "a live device was replaced"
fi
ip netns exec "$ns" "$uroce" link del uroce0
ip link del "${veth}b2" 2>/dev/null || true
echo "ok: a recreated namespace starts clean"

# Loss recovery settings on the command line land in the configuration; a bad one is refused.
conf=/run/uroce/netns/$ns/devices/uroce0.conf
ip link add "${veth}a" type veth peer name "${veth}b"
ip link set "${veth}a" netns "$ns"
ip link set "${veth}b" up
ip netns exec "$ns" ip link set "${veth}a" up
out=$(ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a" tlp maybe 2>&1) &&
	fail "tlp maybe accepted"
grep -q "bad tlp 'maybe': tlp must be on or off" <<<"$out" || fail "no word of the bad tlp: $out"
[ ! -e "$conf" ] || fail "config written for a refused add"
out=$(ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a" dcqcn on rpg_gd 3 2>&1) &&
	fail "rpg_gd 3 accepted"
grep -q "bad rpg_gd '3': rpg_gd must be a number from 10 to 20" <<<"$out" ||
	fail "no word of the bad rpg_gd: $out"
ip netns exec "$ns" "$uroce" link add uroce0 netdev "${veth}a" rto_min_us 50 restart_window 32 \
	adaptive off tlp off selective_repeat on dcqcn on rpg_ai_rate 10 line_rate 25000
for line in "rto_min_us = 50" "restart_window = 32" "adaptive = off" "tlp = off" \
	    "selective_repeat = on" "dcqcn = on" "rpg_ai_rate = 10" "line_rate = 25000"; do
	grep -qx "$line" "$conf" || fail "'$line' not in $conf"
done
ip netns exec "$ns" "$uroce" link del uroce0
echo "ok: loss recovery and DCQCN settings"
