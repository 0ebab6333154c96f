#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The main job end to end: unmodified perftest over uroce between two network namespaces, then its packets decoded.
#
# usage: tools/demo.sh [--build DIR] [--prebuilt] [--prefix NAME] [--keep DIR] [-h]
#
#   --build DIR   build directory (default: $UROCE_BUILD, else build/ in the source tree);
#                 configured with `meson setup` when it has no build.ninja yet
#   --prebuilt    use DIR as it is: no package check, no meson, no ninja (tests use this)
#   --prefix NAME names of what the demo creates: namespaces NAME{A,B}, veth NAME{a,b}
#                 (default: $UROCE_DEMO_PREFIX, else urdemo; at most 12 characters)
#   --keep DIR    keep the captures there (write.pcap, read.pcap, atomic.pcap)
#
# As root. Everything the demo creates (namespaces, veth, uroce devices, their run directories,
# the processes it starts) is removed on exit, on error and on Ctrl-C.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${UROCE_BUILD:-$top/build}
prefix=${UROCE_DEMO_PREFIX:-urdemo}
prebuilt=0
keep=

usage() {
	sed -n '5,15s/^# \{0,1\}//p' "$0"
}

while [ $# -gt 0 ]; do
	case $1 in
	--build) build=${2:?--build wants a directory}; shift 2 ;;
	--prebuilt) prebuilt=1; shift ;;
	--prefix) prefix=${2:?--prefix wants a name}; shift 2 ;;
	--keep) keep=${2:?--keep wants a directory}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "demo.sh: unknown argument '$1' (tools/demo.sh -h shows the options)" >&2; exit 2 ;;
	esac
done
case $build in /*) ;; *) build=$PWD/$build ;; esac
if [ ${#prefix} -gt 12 ] || ! [[ $prefix =~ ^[a-zA-Z][a-zA-Z0-9]*$ ]]; then
	echo "demo.sh: --prefix must be letters and digits, at most 12 (interface names stop at 15)" >&2
	exit 2
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "demo.sh: needs root (it installs packages and creates network namespaces and" \
		"/dev/infiniband nodes): run it as root, e.g. sudo $0" >&2
	exit 1
fi

ns=("${prefix}A" "${prefix}B")
veth=("${prefix}a" "${prefix}b")
ip4=(10.250.0.1 10.250.0.2)
port=18515
uroce=$build/tools/uroce
tmp=
pids=()
created_ns=()
devices=()

if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
step() {
	printf '\n%s==> %s%s\n' "$bold" "$*" "$plain"
}

# Shows a command, then runs it.
run() {
	printf '  $ %s\n' "$*"
	"$@"
}

cleanup() {
	local rc=$? pid i
	# A second Ctrl-C must not stop the cleanup halfway.
	trap '' INT TERM
	trap - EXIT
	set +e
	if [ ${#pids[@]} -gt 0 ] || [ ${#devices[@]} -gt 0 ] || [ ${#created_ns[@]} -gt 0 ]; then
		step "Cleaning up"
	fi
	for pid in "${pids[@]}"; do
		# `timeout` runs each program in its own process group and passes TERM on to it.
		if kill -0 "$pid" 2>/dev/null; then
			echo "  stopping process $pid"
			kill -TERM "$pid" 2>/dev/null
		fi
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null
	done
	for i in "${devices[@]}"; do
		run ip netns exec "${ns[$i]}" "$uroce" link del uroce0
	done
	for i in "${created_ns[@]}"; do
		run ip netns del "${ns[$i]}"
		# uroce keeps a namespace's devices, QPN and counter files in /run/uroce/netns/NAME.
		rm -rf "/run/uroce/netns/${ns[$i]}"
	done
	[ -n "$tmp" ] && rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'echo; echo "demo.sh: interrupted"; exit 130' INT
trap 'echo "demo.sh: terminated"; exit 143' TERM

fail() {
	echo "demo.sh: $*" >&2
	exit 1
}

# Starts "$@" in the background under a timeout, output into file $1; sets $last_pid.
start_bg() {
	local out=$1
	shift
	timeout 90 "$@" >"$out" 2>&1 &
	last_pid=$!
	pids+=("$last_pid")
}

# Waits for a background program; returns its exit status. `wait` (unlike a foreground
# program) lets Ctrl-C and TERM reach the traps at once.
wait_pid() {
	local rc=0
	wait "$1" || rc=$?
	return "$rc"
}

# Runs `ip netns exec NS uroce exec -- PROGRAM...` in the background, output into file $2.
verbs_bg() {
	local side=$1 out=$2
	shift 2
	start_bg "$out" env ${pcap:+UROCE_PCAP=$pcap} ip netns exec "${ns[$side]}" "$uroce" exec -- "$@"
}

# The index of the RoCE v2 GID of the namespace's IPv4 address (::ffff:a.b.c.d).
gid_index() {
	ip netns exec "${ns[$1]}" "$uroce" link show uroce0 |
		awk '$1 == "gid" && $3 ~ /^::ffff:/ && $4 == "RoCE" && $5 == "v2" { print $2; exit }'
}

wait_listen() {
	local side=$1 pid=$2 t
	for t in $(seq 1500); do
		kill -0 "$pid" 2>/dev/null || return 1
		[ -n "$(ip netns exec "${ns[$side]}" ss -Hltn "sport = :$port")" ] && return 0
		sleep 0.02
	done
	return 1
}

# One perftest tool: server in namespace A, client in B, both on uroce0 through `uroce exec`.
# The client's frames go to $tmp/NAME.pcap; perftest's own output is printed as it is.
perftest() {
	local name=$1 tool=$2 srv cli rc=0
	shift 2
	port=$((port + 1))
	local common=(-d uroce0 -F -p "$port" "$@")
	step "Running $tool between the namespaces (server in ${ns[0]}, client in ${ns[1]})"
	echo "  Server: ip netns exec ${ns[0]} uroce exec -- $tool ${common[*]} -x ${gid[0]}"
	echo "  Client: ip netns exec ${ns[1]} uroce exec -- $tool ${common[*]} -x ${gid[1]} ${ip4[0]}"
	echo "  (the client records its frames: UROCE_PCAP=$tmp/$name.pcap)"
	pcap= verbs_bg 0 "$tmp/$name-server.txt" "$tool" "${common[@]}" -x "${gid[0]}"
	srv=$last_pid
	if ! wait_listen 0 "$srv"; then
		cat "$tmp/$name-server.txt"
		fail "the $tool server did not start listening on TCP port $port (its output is above)"
	fi
	pcap=$tmp/$name.pcap verbs_bg 1 "$tmp/$name-client.txt" "$tool" "${common[@]}" -x "${gid[1]}" "${ip4[0]}"
	cli=$last_pid
	wait_pid "$cli" || rc=$?
	echo
	cat "$tmp/$name-client.txt"
	if [ "$rc" -ne 0 ]; then
		kill -TERM "$srv" 2>/dev/null || true
		wait "$srv" 2>/dev/null || true
		echo "  --- server output ---"
		cat "$tmp/$name-server.txt"
		fail "$tool client exited with status $rc (output above)"
	fi
	rc=0
	wait_pid "$srv" || rc=$?
	[ "$rc" -eq 0 ] || { cat "$tmp/$name-server.txt"; fail "$tool server exited with status $rc"; }
}

# Decodes the first frame of capture NAME whose one-line summary (in NAME.txt) has OPCODE.
decode_first() {
	local name=$1 opcode=$2 n
	n=$(grep -n -m1 " $opcode " "$tmp/$name.txt" | cut -d: -f1)
	[ -n "$n" ] || fail "no $opcode frame in the $name capture"
	printf '\n  $ uroce decode -v -n %s %s.pcap    # the first %s\n' "$n" "$name" "$opcode"
	# Without the totals line (and the empty line before it) that ends every decode.
	"$uroce" decode -v -n "$n" "$tmp/$name.pcap" | head -n -2
}

started=$SECONDS

if [ "$prebuilt" -eq 0 ]; then
	step "Checking the Debian packages uroce needs (tools/install-deps.sh --demo)"
	"$top/tools/install-deps.sh" --demo

	step "Building uroce in $build"
	if [ ! -f "$build/build.ninja" ]; then
		run meson setup "$build" "$top" >/dev/null
	fi
	# Only what the demo runs: the uroce command, the provider and the completion-channel shim.
	run ninja -C "$build" tools/uroce provider/liburoce-rdmav34.so provider/liburoce-compchan.so
fi
for f in tools/uroce provider/liburoce-rdmav34.so provider/liburoce-compchan.so; do
	[ -e "$build/$f" ] || fail "$build/$f is missing: build first (meson setup $build && ninja -C $build)"
done

step "The provider"
echo "  Not installed: $build/tools/uroce exec points libibverbs at the provider of this build"
echo "  directory (RDMAV_DRIVERS=$build/provider/liburoce), at the device list uroce"
echo "  writes (SYSFS_PATH=/run/uroce/netns/NS/sysfs; this kernel has no RDMA) and preloads"
echo "  liburoce-compchan.so for completion channels. \`ninja -C $build install\` would put the"
echo "  provider into libibverbs' own directory (/etc/libibverbs.d/uroce.driver) and uroce into"
echo "  /usr/local/bin, where uroce exec finds them the same way."

step "Creating network namespaces ${ns[0]} and ${ns[1]}, joined by the veth pair ${veth[0]} -- ${veth[1]}"
unset UROCE_RUN_DIR
for i in 0 1; do
	if [ -e "/run/netns/${ns[$i]}" ]; then
		fail "network namespace ${ns[$i]} exists already (another demo running, or left by a killed one):" \
			"remove it with \`ip netns del ${ns[$i]}\`, or choose other names with --prefix"
	fi
done
for i in 0 1; do
	run ip netns add "${ns[$i]}"
	created_ns+=("$i")
	ip -n "${ns[$i]}" link set lo up
done
run ip link add "${veth[0]}" netns "${ns[0]}" type veth peer name "${veth[1]}" netns "${ns[1]}"
for i in 0 1; do
	run ip -n "${ns[$i]}" addr add "${ip4[$i]}/24" dev "${veth[$i]}"
	run ip -n "${ns[$i]}" link set "${veth[$i]}" up
done
# The kernel reports carrier up to a second late (linkwatch).
for t in $(seq 100); do
	up=0
	for i in 0 1; do
		ip -n "${ns[$i]}" link show "${veth[$i]}" | grep -q 'state UP' && up=$((up + 1))
	done
	[ "$up" -eq 2 ] && break
	sleep 0.05
done

step "Creating the RoCE device uroce0 on each end (like: rdma link add rxe0 type rxe netdev ...)"
for i in 0 1; do
	run ip netns exec "${ns[$i]}" "$uroce" link add uroce0 netdev "${veth[$i]}"
	devices+=("$i")
done
gid=()
for i in 0 1; do
	run ip netns exec "${ns[$i]}" "$uroce" link show uroce0
	gid[$i]=$(gid_index "$i")
	[ -n "${gid[$i]}" ] || fail "uroce0 in ${ns[$i]} has no RoCE v2 GID for ${ip4[$i]}"
done
echo "  perftest needs -x with the GID index of RoCE v2 over IPv4 (::ffff:a.b.c.d): ${gid[0]} and ${gid[1]}"

tmp=$(mktemp -d /tmp/uroce-demo.XXXXXX)
perftest write ib_write_bw --report_gbits -n 1000
perftest read ib_read_lat -n 1000
perftest atomic ib_atomic_bw -A FETCH_AND_ADD -n 1000

step "The RoCE v2 packets of these runs, as the client sent and received them (uroce decode -v)"
for name in write read atomic; do
	"$uroce" decode "$tmp/$name.pcap" >"$tmp/$name.txt"
	printf '  %s.pcap: %s\n' "$name" "$(tail -n 1 "$tmp/$name.txt")"
done
decode_first write RC_RDMA_WRITE_FIRST
decode_first write RC_ACKNOWLEDGE
decode_first read RC_RDMA_READ_REQUEST
decode_first read RC_RDMA_READ_RESPONSE_ONLY
decode_first atomic RC_FETCH_ADD
decode_first atomic RC_ATOMIC_ACKNOWLEDGE

if [ -n "$keep" ]; then
	mkdir -p "$keep"
	cp "$tmp"/write.pcap "$tmp"/read.pcap "$tmp"/atomic.pcap "$keep"/
	echo
	echo "  The captures are in $keep: try uroce ladder $keep/read.pcap, or open them in Wireshark."
fi

step "Done in $((SECONDS - started)) s"
echo "  More: docs/usage.md (every uroce command), docs/operations.md (each operation's packets),"
echo "  docs/wire-format.md (every header field), docs/architecture.md (how uroce works)."
