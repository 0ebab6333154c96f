# SPDX-License-Identifier: MIT
# Shared by the tests in tests/dpdk/: two network namespaces joined by a veth pair.
# Names start with "ud" (udA/udB, udvA/udvB + a suffix per test) so parallel runs never collide;
# NS_PREFIX=xx changes "ud" (benchmarks run next to the tests use their own).

set -u
PORTTEST=${PORTTEST:?PORTTEST must point at uroce-porttest}
UROCE=${UROCE:-}
PY=/usr/bin/python3
SUFFIX=${SUFFIX:-$$}
NS_PREFIX=${NS_PREFIX:-ud}
NSA=${NS_PREFIX}A$SUFFIX
NSB=${NS_PREFIX}B$SUFFIX
VA=${NS_PREFIX}vA$SUFFIX
VB=${NS_PREFIX}vB$SUFFIX
IPA=10.77.0.1
IPB=10.77.0.2
IP6A=fd77::1
IP6B=fd77::2
WORK=$(mktemp -d /tmp/uroce-dptest.XXXXXX)
export UROCE_RUN_DIR=$WORK/run
mkdir -p "$UROCE_RUN_DIR"
FAILED=0
PIDS=""

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; FAILED=1; }
ok() { echo "ok: $*"; }

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces)"

cleanup() {
	for p in $PIDS; do kill "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip netns del "$NSA" 2>/dev/null
	ip netns del "$NSB" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

# Veth names are at most 15 characters: the suffix is cut to fit.
case ${#VA} in 1[6-9]|2[0-9]) VA=${NS_PREFIX}vA${SUFFIX: -8}; VB=${NS_PREFIX}vB${SUFFIX: -8};; esac

# setup_veth [MTU]: namespaces, veth, IPv4 and IPv6 addresses, link up.
setup_veth() {
	local mtu=${1:-1500}
	ip netns add "$NSA" && ip netns add "$NSB" || skip "cannot create network namespaces"
	ip link add "$VA" mtu "$mtu" type veth peer name "$VB" mtu "$mtu" || skip "cannot create veth"
	ip link set "$VA" netns "$NSA"
	ip link set "$VB" netns "$NSB"
	ip -n "$NSA" addr add $IPA/24 dev "$VA"
	ip -n "$NSB" addr add $IPB/24 dev "$VB"
	ip -n "$NSA" addr add $IP6A/64 dev "$VA" nodad
	ip -n "$NSB" addr add $IP6B/64 dev "$VB" nodad
	ip -n "$NSA" link set "$VA" up
	ip -n "$NSB" link set "$VB" up
	ip -n "$NSA" link set lo up
	ip -n "$NSB" link set lo up
}

inA() { ip netns exec "$NSA" "$@"; }
inB() { ip netns exec "$NSB" "$@"; }

# bg LOG CMD...: start in the background, remember the PID (of the program itself, so that
# kill reaches it: inA/inB are expanded here rather than run as a shell function).
bg() {
	local log=$1; shift
	case $1 in
	inA) shift; set -- ip netns exec "$NSA" "$@";;
	inB) shift; set -- ip netns exec "$NSB" "$@";;
	esac
	"$@" >"$log" 2>&1 &
	PIDS="$PIDS $!"
	LASTPID=$!
}

# counter NAME LOG: value of a "name=value" line printed by uroce-porttest.
counter() { sed -n "s/^$1=//p" "$2" | tail -1; }

# field NAME LOG: value of "name=value" inside a summary line.
field() { grep -o "\b$1=[^ ]*" "$2" | tail -1 | cut -d= -f2; }

# wait_port LOG: until the port in LOG is open (it prints "port ...").
wait_port() {
	for _ in $(seq 100); do grep -q '^port ' "$1" 2>/dev/null && return 0; sleep 0.1; done
	cat "$1"; return 1
}

finish() {
	[ "$FAILED" = 0 ] && echo "PASS" && exit 0
	echo "FAILED"; exit 1
}
