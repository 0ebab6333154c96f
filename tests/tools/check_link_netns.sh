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
