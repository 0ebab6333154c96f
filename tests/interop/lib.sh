# shellcheck shell=bash disable=SC2034 # settings used by the scripts that source this file
# SPDX-License-Identifier: MIT
# Shared settings and helpers of the rxe interop harness (sourced by run.sh and build-guest.sh).
#
# Topology, all inside two network namespaces this harness creates and deletes:
#
#   netns uipeer:  bridge uibr0 (192.168.79.254, ssh to the guest) -- tap uitap0 -- qemu guest eth0
#                  (192.168.79.2, rdma_rxe device rxe0)
#                  bridge uibr0 -- veth uiv0
#   netns uihost:  veth uiv1 (192.168.79.1): the host end where the RoCE v2 code under test runs
#
# Nothing is created in the default namespace.  Every name starts with "ui".

UI_DIR=${UROCE_INTEROP_DIR:-/var/tmp/uroce-interop}
UI_NS_PEER=uipeer
UI_NS_HOST=uihost
UI_BR=uibr0
UI_TAP=uitap0
UI_VETH_PEER=uiv0
UI_VETH_HOST=uiv1
UI_NET=192.168.79
UI_HOST_IP=$UI_NET.1
UI_GUEST_IP=$UI_NET.2
UI_BR_IP=$UI_NET.254
UI_GUEST_MAC=52:54:00:79:00:02
UI_HOST_MAC=52:54:00:79:00:01
UI_GUEST_LL=fe80::5054:ff:fe79:2	# IPv6 link-local addresses (EUI-64 of the MACs)
UI_HOST_LL=fe80::5054:ff:fe79:1
UI_VM_NAME=uroce-interop-rxe
UI_VM_MEM=${UROCE_INTEROP_MEM:-1024}
UI_RUN=$UI_DIR/run
UI_SUITE=bookworm
# The guest's packages come from the mirror apt uses on this host (UROCE_INTEROP_MIRROR wins).
ui_mirror() {
	local m
	m=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null)
	[ -n "$m" ] || m=$(awk -v s="$UI_SUITE" '$1 == "deb" && $3 == s {print $2; exit}' /etc/apt/sources.list 2>/dev/null)
	echo "${UROCE_INTEROP_MIRROR:-${m:-http://deb.debian.org/debian}}"
}

# Packages of the guest's root filesystem (Debian bookworm).
UI_GUEST_PKGS=(rdma-core ibverbs-providers ibverbs-utils perftest rdmacm-utils iproute2 tcpdump kmod
	       dropbear-bin procps python3-pyverbs iputils-ping)
# Kernel modules copied into the guest (with their dependencies).  rdma_rxe needs a crc32
# crypto driver that is not a module dependency: without one `rdma link add` fails ENOENT.
UI_GUEST_MODS=(crc32_generic crc32_pclmul virtio_pci virtio_net virtio_rng ib_core ib_uverbs
	       rdma_ucm rdma_rxe sch_netem)

ui_log() { printf '[interop %s] %s\n' "$(date +%T)" "$*" >&2; }
ui_die() { printf 'interop: %s\n' "$*" >&2; exit 1; }

ui_need_root() {
	[ "$(id -u)" = 0 ] || ui_die "must run as root (network namespaces, tap devices, qemu)"
}

# Directory of the built guest: keyed by a hash of everything that goes into it.
ui_guest_dir() {
	local here key
	here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
	key=$( { cat "$here/build-guest.sh" "$here/guest/init"; \
		 echo "${UI_GUEST_PKGS[*]} ${UI_GUEST_MODS[*]} $UI_SUITE"; } | sha256sum | cut -c1-16)
	echo "$UI_DIR/guest-$key"
}

ui_ns_peer() { ip netns exec "$UI_NS_PEER" "$@"; }
ui_ns_host() { ip netns exec "$UI_NS_HOST" "$@"; }

ui_net_up() {
	local mtu=${1:-1500}
	ip netns add "$UI_NS_PEER"
	ip netns add "$UI_NS_HOST"
	ui_ns_peer ip link set lo up
	ui_ns_host ip link set lo up
	ui_ns_peer ip link add "$UI_BR" type bridge stp_state 0 forward_delay 0
	ui_ns_peer ip addr add "$UI_BR_IP/24" dev "$UI_BR"
	ui_ns_peer ip tuntap add dev "$UI_TAP" mode tap
	ui_ns_peer ip link set "$UI_TAP" master "$UI_BR"
	ui_ns_peer ip link add "$UI_VETH_PEER" type veth peer name "$UI_VETH_HOST" netns "$UI_NS_HOST"
	ui_ns_peer ip link set "$UI_VETH_PEER" master "$UI_BR"
	ui_ns_host ip link set "$UI_VETH_HOST" address "$UI_HOST_MAC"
	ui_ns_host ip addr add "$UI_HOST_IP/24" dev "$UI_VETH_HOST"
	# The host end must not answer RoCE with ICMP port unreachable; the probe and uroce
	# bind UDP 4791 themselves.  No IPv6 DAD delay on the host end either.
	ui_ns_host sysctl -qw net.ipv6.conf.all.accept_dad=0 net.ipv6.conf.default.accept_dad=0
	ui_ns_host sysctl -qw "net.ipv6.conf.$UI_VETH_HOST.accept_dad=0"
	ui_net_mtu "$mtu"
	ui_ns_peer ip link set "$UI_TAP" up
	ui_ns_peer ip link set "$UI_VETH_PEER" up
	ui_ns_peer ip link set "$UI_BR" up
	ui_ns_host ip link set "$UI_VETH_HOST" up
}

# MTU of every host-side link (the guest's eth0 is set over ssh).
ui_net_mtu() {
	ui_ns_peer ip link set "$UI_TAP" mtu "$1"
	ui_ns_peer ip link set "$UI_VETH_PEER" mtu "$1"
	ui_ns_host ip link set "$UI_VETH_HOST" mtu "$1"
	ui_ns_peer ip link set "$UI_BR" mtu "$1"
}

ui_net_down() {
	local ns
	for ns in "$UI_NS_PEER" "$UI_NS_HOST"; do
		ip netns list | awk '{print $1}' | grep -qx "$ns" && ip netns del "$ns"
	done
	return 0
}

# True if the pid in the file is our qemu (checked by its -name).
ui_vm_pid() {
	local pid
	pid=$(cat "$UI_RUN/qemu.pid" 2>/dev/null) || return 1
	[ -n "$pid" ] && tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null |
		grep -q -- "-name $UI_VM_NAME " && echo "$pid"
}

ui_vm_stop() {
	local pid
	if pid=$(ui_vm_pid); then
		kill "$pid"
		for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
		kill -0 "$pid" 2>/dev/null && kill -9 "$pid"
		ui_log "guest stopped (pid $pid)"
	fi
	rm -f "$UI_RUN/qemu.pid"
}

UI_SSH_OPTS=(-n -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR
	     -o ConnectTimeout=5 -o BatchMode=yes -o ServerAliveInterval=10
	     -o ServerAliveCountMax=6)

# Run a shell command in the guest; /etc/uroce-guest.env is sourced first
# ($GID_V4, $GID_V6: RoCE v2 GID indexes of rxe0).
ui_vm_exec() {
	ui_ns_peer ssh "${UI_SSH_OPTS[@]}" -i "$UI_GUEST/ssh/id_ed25519" "root@$UI_GUEST_IP" \
		". /etc/uroce-guest.env; $*"
}

# Run a command of qemu's human monitor; its output.
ui_vm_monitor() {
	/usr/bin/python3 - "$UI_RUN/monitor.sock" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(5)
s.connect(sys.argv[1])
out = b""
def until_prompt():
    global out
    while not out.endswith(b"(qemu) "):
        out += s.recv(65536)
until_prompt()
out = b""
s.sendall(sys.argv[2].encode() + b"\n")
until_prompt()
lines = out.decode(errors="replace").replace("\r", "").split("\n")[1:-1]
print("\n".join(l for l in lines if not l.startswith("\x1b")))
PY
}

# Boot the guest on the tap in netns uipeer; wait for its READY line and for ssh.
# Sets UI_GID_V4 / UI_GID_V6 (RoCE v2 GID indexes of rxe0).
ui_vm_start() {
	local mtu=$1 t0=$SECONDS
	mkdir -p "$UI_RUN"
	rm -f "$UI_RUN/console.log"
	ui_ns_peer qemu-system-x86_64 -name "$UI_VM_NAME" -accel tcg,thread=multi -cpu max \
		-smp 1 -m "$UI_VM_MEM" -nodefaults -no-user-config -display none -vga none \
		-no-reboot -kernel "$UI_GUEST/vmlinuz" -initrd "$UI_GUEST/initrd.img" \
		-append "console=ttyS0 loglevel=4 panic=-1 uroce.ip=$UI_GUEST_IP/24 uroce.mtu=$mtu" \
		-chardev "file,id=ser0,path=$UI_RUN/console.log" -serial chardev:ser0 \
		-netdev "tap,id=n0,ifname=$UI_TAP,script=no,downscript=no" \
		-device "virtio-net-pci,netdev=n0,mac=$UI_GUEST_MAC,romfile=" \
		-device virtio-rng-pci -monitor "unix:$UI_RUN/monitor.sock,server=on,wait=off" \
		-pidfile "$UI_RUN/qemu.pid" -daemonize ||
		ui_die "qemu did not start"
	until grep -q UROCE-GUEST-READY "$UI_RUN/console.log" 2>/dev/null; do
		ui_vm_pid >/dev/null || { tail -20 "$UI_RUN/console.log" >&2; ui_die "guest died during boot"; }
		[ $((SECONDS - t0)) -lt 180 ] || { tail -20 "$UI_RUN/console.log" >&2; ui_die "guest not ready after 180 s"; }
		sleep 0.5
	done
	grep -q UROCE-GUEST-ERROR "$UI_RUN/console.log" &&
		{ grep -a UROCE-GUEST "$UI_RUN/console.log" >&2; ui_die "guest setup failed"; }
	until ui_vm_exec true 2>/dev/null; do
		[ $((SECONDS - t0)) -lt 240 ] || ui_die "guest's sshd does not answer"
		sleep 1
	done
	UI_GID_V4=$(sed -n 's/.*UROCE-GUEST-READY.* gid_v4=\([0-9]*\).*/\1/p' "$UI_RUN/console.log")
	UI_GID_V6=$(sed -n 's/.*UROCE-GUEST-READY.* gid_v6=\([0-9]*\).*/\1/p' "$UI_RUN/console.log")
	ui_log "guest ready in $((SECONDS - t0)) s: $(grep -a UROCE-GUEST-READY "$UI_RUN/console.log" | tr -d '\r')"
}
