#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The rxe interop suite: build (or reuse) the guest, boot it once, run every case against the
# kernel's Soft-RoCE in it, print PASS/FAIL per case, clean up (also when interrupted).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh"

usage() {
	cat <<EOF
usage: tests/interop/run.sh [--build-dir DIR] [--probe PATH] [--uroce PATH] [--cases PATTERN]
                           [--list]
  --build-dir DIR  meson build directory (default: build); the programs are taken from it
  --probe PATH     the rxe-probe program (default: DIR/tests/interop/rxe-probe)
  --engine-probe PATH  the engine-probe program (default: DIR/tests/interop/engine-probe)
  --uroce PATH     the uroce command, for 'uroce decode' (default: DIR/tools/uroce)
  --cases PATTERN  run only the cases whose name matches this extended regex
  --list           print the case names and exit
  --known-bugs     also run the cases listed as known bugs of the code under test (by
                   default they are reported as SKIP with the reason)
  --exec CMD       instead of the cases: boot the guest, run the shell command CMD in it
                   (\$GID_V4 / \$GID_V6 are rxe0's RoCE v2 GID indexes), exit with its status;
                   e.g. rdma-core's own tests on rxe, the baseline of issue 9:
                   --exec 'cp -r /usr/share/doc/rdma-core/tests /tmp/t && gunzip /tmp/t/*.gz &&
                           cd /tmp/t && python3 run_tests.py --dev rxe0 --gid \$GID_V4'
  --mtu N          MTU of the guest for --exec (default 1500)
Needs root.  The guest is built once into $UI_DIR (about 1-2 minutes, needs the Debian
archive) and reused while its inputs do not change.  Results and captures of each run go to
$UI_DIR/results/<time>/ ($UI_DIR/results/latest).
EOF
}

build_dir=build probe='' engine_probe='' uroce='' pattern='' list=0 known=0 exec_cmd='' exec_mtu=1500
while [ $# -gt 0 ]; do
	case "$1" in
	--build-dir) build_dir=$2; shift ;;
	--probe) probe=$2; shift ;;
	--engine-probe) engine_probe=$2; shift ;;
	--uroce) uroce=$2; shift ;;
	--cases) pattern=$2; shift ;;
	--list) list=1 ;;
	--known-bugs) known=1 ;;
	--exec) exec_cmd=$2; shift ;;
	--mtu) exec_mtu=$2; shift ;;
	-h|--help) usage; exit 0 ;;
	*) usage >&2; exit 2 ;;
	esac
	shift
done
probe=${probe:-$build_dir/tests/interop/rxe-probe}
engine_probe=${engine_probe:-$build_dir/tests/interop/engine-probe}
uroce=${uroce:-$build_dir/tools/uroce}

# Case table: NAME  MTU  KIND  ARGS.  Cases of one MTU run back to back on one boot; the
# guest's MTU changes in place between the groups (rxe follows its netdev's MTU).
#   probe CASE SERVER... [COUNTER=DELTA...]: rxe-probe --case CASE (CASE6: over IPv6 with
#   link-local GIDs) plays perftest's client with packets built by wire/ against the perftest
#   SERVER in the guest; rxe's hw_counters must then have moved by exactly DELTA.
#   serve CASE CLIENT... [loss=PCT] [drop=N] [COUNTER=DELTA...]: the other way round, the
#   perftest CLIENT in the guest (rxe as requester) against rxe-probe --case serve-CASE as
#   the responder; loss= adds netem loss on the guest's eth0, drop= makes the probe drop
#   every Nth response frame, so both sides' Go-Back-N and duplicate handling are used.
#   cm SIDE PROGRAM ARGS: an unmodified rdmacm-utils or perftest -R program connecting through
#   rdma_cm, uroce's CM on one end and the kernel's (rdma_ucm, ib_cm) in the guest on the other;
#   SIDE client: uroce connects to the guest's server.  PROGRAM reject: a REQ to a port nobody
#   listens on (a CM listens on another) must get REJ reason 8.  The CM messages in uroce's
#   capture, named by tshark, must come in the handshake's order from the right ends.
#   perftest -R runs with the guest as the client only: with the guest as the server, perftest
#   4.5-0.17's client may connect its second ID before the server listens again (REJ 8, 1 run
#   in 3 here), and its retry then uses the IDs and channel it has just freed (SIGSEGV).
#   engine / engine-serve: the same with uroce's transport engine (dataplane/, through
#   engine-probe on an AF_PACKET port) in place of rxe-probe: as the client of the perftest
#   SERVER, or as the server of the perftest CLIENT; drop= drops every Nth frame it sends.
cases() {
	cat <<'EOF'
wire-write-mtu1500  1500 probe write  ib_write_bw -s 16384 -n 5   rcvd_pkts=17 sent_pkts=10 duplicate_request=1 out_of_seq_request=1 send_rnr_err=1
wire-read-mtu1500   1500 probe read   ib_read_bw -s 16384 -n 5    rcvd_pkts=10 sent_pkts=18 duplicate_request=1
wire-atomic-mtu1500 1500 probe atomic ib_atomic_bw -n 5           rcvd_pkts=10 sent_pkts=10 duplicate_request=1
wire-send-mtu1500   1500 probe send   ib_send_bw -s 16384 -n 8    rcvd_pkts=14 sent_pkts=8 duplicate_request=1 send_rnr_err=1 rdma_recvs=8
wire-ud-mtu1500     1500 probe ud     ib_send_bw -c UD -s 1024 -n 6 rcvd_pkts=6 sent_pkts=0 rdma_recvs=6
wire-write6-mtu1500 1500 probe write6 ib_write_bw -s 16384 -n 5   rcvd_pkts=17 sent_pkts=10 duplicate_request=1 out_of_seq_request=1 send_rnr_err=1
wire-serve-write-mtu1500 1500 serve write ib_write_bw -s 4096 -n 200 rcvd_seq_err=0 retry_exceeded_err=0
wire-serve-read-mtu1500  1500 serve read  ib_read_bw -s 4096 -n 200  rcvd_seq_err=0 retry_exceeded_err=0
wire-serve-atomic-mtu1500 1500 serve atomic ib_atomic_bw -n 200      rcvd_seq_err=0 retry_exceeded_err=0
wire-serve-send-mtu1500  1500 serve send  ib_send_bw -s 4096 -n 200  rcvd_seq_err=0 retry_exceeded_err=0
wire-serve-write-loss   1500 serve write ib_write_bw -s 4096 -n 200 loss=1 drop=97 retry_exceeded_err=0
wire-serve-read-loss    1500 serve read  ib_read_bw -s 4096 -n 200  loss=1 drop=97 retry_exceeded_err=0
wire-serve-atomic-loss  1500 serve atomic ib_atomic_bw -n 200       loss=1 drop=97 retry_exceeded_err=0
engine-write-mtu1500      1500 engine write  ib_write_bw -s 4096 -n 200
engine-read-mtu1500       1500 engine read   ib_read_bw -s 4096 -n 200
engine-atomic-mtu1500     1500 engine atomic ib_atomic_bw -n 200
engine-send-mtu1500       1500 engine send   ib_send_bw -s 4096 -n 200
engine-ud-mtu1500         1500 engine ud     ib_send_bw -c UD -s 1024 -n 200 rcvd_pkts=200 rdma_recvs=200
engine-serve-ud-mtu1500   1500 engine-serve ud ib_send_bw -c UD -s 1024 -n 200 sent_pkts=200
engine-serve-write-mtu1500 1500 engine-serve write ib_write_bw -s 4096 -n 200 rcvd_seq_err=0 retry_exceeded_err=0
engine-serve-read-mtu1500 1500 engine-serve read  ib_read_bw -s 4096 -n 200  rcvd_seq_err=0 retry_exceeded_err=0
engine-serve-atomic-mtu1500 1500 engine-serve atomic ib_atomic_bw -n 200     rcvd_seq_err=0 retry_exceeded_err=0
engine-serve-send-mtu1500 1500 engine-serve send  ib_send_bw -s 4096 -n 200  rcvd_seq_err=0 retry_exceeded_err=0
engine-write-loss         1500 engine write  ib_write_bw -s 4096 -n 200 loss=1 drop=97
engine-read-loss          1500 engine read   ib_read_bw -s 4096 -n 200  loss=1 drop=97
engine-atomic-loss        1500 engine atomic ib_atomic_bw -n 200        loss=1 drop=97
engine-serve-write-loss   1500 engine-serve write ib_write_bw -s 4096 -n 200 loss=1 drop=97 retry_exceeded_err=0
engine-serve-read-loss    1500 engine-serve read  ib_read_bw -s 4096 -n 200  loss=1 drop=97 retry_exceeded_err=0
uroce-client-write_bw-mtu1500 1500 verbs client ib_write_bw -s 8192 -n 100 -u 18
uroce-client-write_bw-q2-mtu1500 1500 verbs client ib_write_bw -s 2048 -n 100 -q 2 -u 18
uroce-client-read_bw-mtu1500 1500 verbs client ib_read_bw -s 8192 -n 100 -u 18
uroce-client-read_bw-q2-mtu1500 1500 verbs client ib_read_bw -s 2048 -n 100 -q 2 -u 18
uroce-client-send_bw-mtu1500 1500 verbs client ib_send_bw -s 8192 -n 100 -u 18
uroce-client-send_bw-small-mtu1500 1500 verbs client ib_send_bw -s 61 -n 100 -u 18
uroce-client-send_bw-q2-mtu1500 1500 verbs client ib_send_bw -s 2048 -n 100 -q 2 -u 18
uroce-client-atomic_bw-faa-mtu1500 1500 verbs client ib_atomic_bw -A FETCH_AND_ADD -n 100
uroce-client-atomic_bw-cas-mtu1500 1500 verbs client ib_atomic_bw -A CMP_AND_SWAP -n 100
uroce-client-write_lat-mtu1500 1500 verbs client ib_write_lat -s 2 -n 100
uroce-client-write_lat-multi-mtu1500 1500 verbs client ib_write_lat -s 3000 -n 100
uroce-client-read_lat-mtu1500 1500 verbs client ib_read_lat -s 64 -n 100
uroce-client-read_lat-multi-mtu1500 1500 verbs client ib_read_lat -s 3000 -n 100
uroce-client-send_lat-mtu1500 1500 verbs client ib_send_lat -s 1 -n 100
uroce-client-send_lat-multi-mtu1500 1500 verbs client ib_send_lat -s 3000 -n 100
uroce-client-send_bw-ud-mtu1500 1500 verbs client ib_send_bw -c UD -s 1024 -n 100
uroce-client-rc_pingpong-mtu1500 1500 verbs client ibv_rc_pingpong -s 3000 -n 100 -c
uroce-client-ud_pingpong-mtu1500 1500 verbs client ibv_ud_pingpong -s 1024 -n 100 -c
uroce-server-write_bw-mtu1500 1500 verbs server ib_write_bw -s 8192 -n 100 -u 18
uroce-server-write_bw-q2-mtu1500 1500 verbs server ib_write_bw -s 2048 -n 100 -q 2 -u 18
uroce-server-read_bw-mtu1500 1500 verbs server ib_read_bw -s 8192 -n 100 -u 18
uroce-server-read_bw-q2-mtu1500 1500 verbs server ib_read_bw -s 2048 -n 100 -q 2 -u 18
uroce-server-send_bw-mtu1500 1500 verbs server ib_send_bw -s 8192 -n 100 -u 18
uroce-server-send_bw-small-mtu1500 1500 verbs server ib_send_bw -s 61 -n 100 -u 18
uroce-server-send_bw-q2-mtu1500 1500 verbs server ib_send_bw -s 2048 -n 100 -q 2 -u 18
uroce-server-atomic_bw-faa-mtu1500 1500 verbs server ib_atomic_bw -A FETCH_AND_ADD -n 100
uroce-server-atomic_bw-cas-mtu1500 1500 verbs server ib_atomic_bw -A CMP_AND_SWAP -n 100
uroce-server-write_lat-mtu1500 1500 verbs server ib_write_lat -s 2 -n 100
uroce-server-write_lat-multi-mtu1500 1500 verbs server ib_write_lat -s 3000 -n 100
uroce-server-read_lat-mtu1500 1500 verbs server ib_read_lat -s 64 -n 100
uroce-server-read_lat-multi-mtu1500 1500 verbs server ib_read_lat -s 3000 -n 100
uroce-server-send_lat-mtu1500 1500 verbs server ib_send_lat -s 1 -n 100
uroce-server-send_lat-multi-mtu1500 1500 verbs server ib_send_lat -s 3000 -n 100
uroce-server-send_bw-ud-mtu1500 1500 verbs server ib_send_bw -c UD -s 1024 -n 100
uroce-server-rc_pingpong-mtu1500 1500 verbs server ibv_rc_pingpong -s 3000 -n 100 -c
uroce-server-ud_pingpong-mtu1500 1500 verbs server ibv_ud_pingpong -s 1024 -n 100 -c
uroce-client-write_bw-loss 1500 verbs client ib_write_bw -s 8192 -n 200 -u 18 loss=1
uroce-client-read_bw-loss 1500 verbs client ib_read_bw -s 8192 -n 200 -u 18 loss=1
uroce-client-send_bw-loss 1500 verbs client ib_send_bw -s 8192 -n 200 -u 18 loss=1
uroce-client-write_bw-q2-loss 1500 verbs client ib_write_bw -s 4096 -n 200 -q 2 -u 18 loss=1
uroce-client-atomic_bw-faa-loss 1500 verbs client ib_atomic_bw -A FETCH_AND_ADD -n 600 loss=1
uroce-client-atomic_bw-cas-loss 1500 verbs client ib_atomic_bw -A CMP_AND_SWAP -n 600 loss=1
uroce-client-write_lat-loss 1500 verbs client ib_write_lat -s 3000 -n 200 loss=1
uroce-client-read_lat-loss 1500 verbs client ib_read_lat -s 3000 -n 200 loss=1
uroce-client-send_lat-loss 1500 verbs client ib_send_lat -s 3000 -n 200 loss=1
uroce-client-rc_pingpong-loss 1500 verbs client ibv_rc_pingpong -s 3000 -n 600 -c loss=1
uroce-server-write_bw-loss 1500 verbs server ib_write_bw -s 8192 -n 200 -u 18 loss=1
uroce-server-read_bw-loss 1500 verbs server ib_read_bw -s 8192 -n 200 -u 18 loss=1
uroce-server-send_bw-loss 1500 verbs server ib_send_bw -s 8192 -n 200 -u 18 loss=1
uroce-server-write_bw-q2-loss 1500 verbs server ib_write_bw -s 4096 -n 200 -q 2 -u 18 loss=1
uroce-server-atomic_bw-faa-loss 1500 verbs server ib_atomic_bw -A FETCH_AND_ADD -n 600 loss=1
uroce-server-atomic_bw-cas-loss 1500 verbs server ib_atomic_bw -A CMP_AND_SWAP -n 600 loss=1
uroce-server-write_lat-loss 1500 verbs server ib_write_lat -s 3000 -n 200 loss=1
uroce-server-read_lat-loss 1500 verbs server ib_read_lat -s 3000 -n 200 loss=1
uroce-server-send_lat-loss 1500 verbs server ib_send_lat -s 3000 -n 200 loss=1
uroce-server-rc_pingpong-loss 1500 verbs server ibv_rc_pingpong -s 3000 -n 600 -c loss=1
wire-write-mtu9000  9000 probe write  ib_write_bw -s 16384 -n 5   rcvd_pkts=17 sent_pkts=10 duplicate_request=1 out_of_seq_request=1 send_rnr_err=1
wire-read-mtu9000   9000 probe read   ib_read_bw -s 16384 -n 5    rcvd_pkts=10 sent_pkts=18 duplicate_request=1
wire-atomic-mtu9000 9000 probe atomic ib_atomic_bw -n 5           rcvd_pkts=10 sent_pkts=10 duplicate_request=1
wire-send-mtu9000   9000 probe send   ib_send_bw -s 16384 -n 8    rcvd_pkts=14 sent_pkts=8 duplicate_request=1 send_rnr_err=1 rdma_recvs=8
wire-ud-mtu9000     9000 probe ud     ib_send_bw -c UD -s 4096 -n 6 rcvd_pkts=6 sent_pkts=0 rdma_recvs=6
wire-serve-write-mtu9000 9000 serve write ib_write_bw -s 16384 -n 200 rcvd_seq_err=0 retry_exceeded_err=0
wire-serve-read-mtu9000  9000 serve read  ib_read_bw -s 16384 -n 200  rcvd_seq_err=0 retry_exceeded_err=0
engine-write-mtu9000      9000 engine write  ib_write_bw -s 16384 -n 200
engine-serve-read-mtu9000 9000 engine-serve read ib_read_bw -s 16384 -n 200 rcvd_seq_err=0 retry_exceeded_err=0
uroce-client-write_bw-mtu9000 9000 verbs client ib_write_bw -s 32768 -n 100 -u 18
uroce-client-write_bw-q2-mtu9000 9000 verbs client ib_write_bw -s 8192 -n 100 -q 2 -u 18
uroce-client-read_bw-mtu9000 9000 verbs client ib_read_bw -s 32768 -n 100 -u 18
uroce-client-send_bw-mtu9000 9000 verbs client ib_send_bw -s 32768 -n 100 -u 18
uroce-client-atomic_bw-faa-mtu9000 9000 verbs client ib_atomic_bw -A FETCH_AND_ADD -n 100
uroce-client-atomic_bw-cas-mtu9000 9000 verbs client ib_atomic_bw -A CMP_AND_SWAP -n 100
uroce-client-write_lat-multi-mtu9000 9000 verbs client ib_write_lat -s 10000 -n 100
uroce-client-read_lat-multi-mtu9000 9000 verbs client ib_read_lat -s 10000 -n 100
uroce-client-send_lat-multi-mtu9000 9000 verbs client ib_send_lat -s 10000 -n 100
uroce-client-send_bw-ud-mtu9000 9000 verbs client ib_send_bw -c UD -s 4096 -n 100
uroce-client-rc_pingpong-mtu9000 9000 verbs client ibv_rc_pingpong -s 10000 -n 100 -c
uroce-client-ud_pingpong-mtu9000 9000 verbs client ibv_ud_pingpong -s 4096 -n 100 -c
uroce-server-write_bw-mtu9000 9000 verbs server ib_write_bw -s 32768 -n 100 -u 18
uroce-server-write_bw-q2-mtu9000 9000 verbs server ib_write_bw -s 8192 -n 100 -q 2 -u 18
uroce-server-read_bw-mtu9000 9000 verbs server ib_read_bw -s 32768 -n 100 -u 18
uroce-server-send_bw-mtu9000 9000 verbs server ib_send_bw -s 32768 -n 100 -u 18
uroce-server-atomic_bw-faa-mtu9000 9000 verbs server ib_atomic_bw -A FETCH_AND_ADD -n 100
uroce-server-atomic_bw-cas-mtu9000 9000 verbs server ib_atomic_bw -A CMP_AND_SWAP -n 100
uroce-server-write_lat-multi-mtu9000 9000 verbs server ib_write_lat -s 10000 -n 100
uroce-server-read_lat-multi-mtu9000 9000 verbs server ib_read_lat -s 10000 -n 100
uroce-server-send_lat-multi-mtu9000 9000 verbs server ib_send_lat -s 10000 -n 100
uroce-server-send_bw-ud-mtu9000 9000 verbs server ib_send_bw -c UD -s 4096 -n 100
uroce-server-rc_pingpong-mtu9000 9000 verbs server ibv_rc_pingpong -s 10000 -n 100 -c
uroce-server-ud_pingpong-mtu9000 9000 verbs server ibv_ud_pingpong -s 4096 -n 100 -c
cm-client-rping           1500 cm client rping -C 200 -V
cm-server-rping           1500 cm server rping -C 200 -V
cm-server-write_bw        1500 cm server ib_write_bw -R -n 200
cm-client-rdma_server     1500 cm client rdma_server
cm-server-rdma_server     1500 cm server rdma_server
cm-client-udaddy          1500 cm client udaddy
cm-server-udaddy          1500 cm server udaddy
cm-client-reject          1500 cm client reject
cm-server-reject          1500 cm server reject
EOF
}

# Cases that fail because of a bug in the code under test, not in the harness, one per line:
# NAME REASON.  They are reported as SKIP with the reason unless --known-bugs.  None now.
known_bugs() {
	true
}

# Cases that fail because of a bug of rdma_rxe in the guest's kernel (6.1), not of uroce, one
# per line: NAME REASON.  They run; a failure is reported as XFAIL with the reason and does not
# fail the suite, a pass (XPASS) does: the entry is then stale.  See docs/conformance.md.
expected_failures() {
	true
}

selected=$(cases | awk -v re="$pattern" 're == "" || $1 ~ re')
if [ $list = 1 ]; then
	echo "$selected" | awk '{print $1}'
	exit 0
fi
[ -n "$selected" ] || ui_die "no case matches '$pattern' (see --list)"

if [ "$(id -u)" != 0 ]; then
	echo "interop: SKIP: needs root (network namespaces, tap, qemu)"
	exit 77
fi
for prog in "$probe" "$engine_probe" "$uroce"; do
	[ -x "$prog" ] || ui_die "no $prog: build first (ninja -C $build_dir) or pass its option"
done
probe=$(cd "$(dirname "$probe")" && pwd)/$(basename "$probe")
engine_probe=$(cd "$(dirname "$engine_probe")" && pwd)/$(basename "$engine_probe")
uroce=$(cd "$(dirname "$uroce")" && pwd)/$(basename "$uroce")

mkdir -p "$UI_DIR"
exec 9>"$UI_DIR/lock"
flock -n 9 || ui_die "another interop run holds $UI_DIR/lock"

UI_GUEST=$("$here/build-guest.sh" | tail -n 1)
res=$UI_DIR/results/$(date +%Y%m%d-%H%M%S)
mkdir -p "$res"
ln -sfn "$res" "$UI_DIR/results/latest"
# keep the last five runs
find "$UI_DIR/results" -mindepth 1 -maxdepth 1 -type d -name '2*' | sort -r | tail -n +6 |
	xargs -r rm -rf

# The uroce device on the host end: created once after the guest is up (see below).
UROCE_DEV_RUN=$UI_RUN/uroce
uroce_ns() { ip netns exec "$UI_NS_HOST" env UROCE_RUN_DIR="$UROCE_DEV_RUN" "$@"; }
uroce_dev_up() {
	rm -rf "$UROCE_DEV_RUN"
	mkdir -p "$UROCE_DEV_RUN"
	uroce_ns "$uroce" link add uroce0 netdev "$UI_VETH_HOST" >/dev/null ||
		ui_die "uroce link add uroce0 netdev $UI_VETH_HOST failed"
	uroce_dev=1
	# the RoCE v2 GID of 192.168.79.1 (perftest -x, pingpong -g)
	uroce_gid=$(uroce_ns "$uroce" exec -- ibv_devinfo -v -d uroce0 |
		sed -n "s/.*GID\[ *\([0-9]*\)\]:.*::ffff:$UI_HOST_IP, RoCE v2.*/\1/p" | head -n 1)
	[ -n "$uroce_gid" ] || ui_die "uroce0 has no RoCE v2 GID for $UI_HOST_IP"
	ui_log "uroce0 on $UI_VETH_HOST, RoCE v2 GID index $uroce_gid"
}
uroce_dev_down() {
	[ "${uroce_dev:-0}" = 1 ] || return 0
	uroce_ns "$uroce" link del uroce0 >/dev/null 2>&1 || true
	uroce_dev=0
}

cleanup() {
	local pid
	trap '' INT TERM HUP
	for pid in $(jobs -p); do	# our own background processes still running
		kill "$pid" 2>/dev/null || true
	done
	uroce_dev_down
	ui_vm_stop
	ui_net_down
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

ui_vm_stop	# left over by a run that was killed outright
ui_net_down
ui_net_up 1500
ui_vm_start 1500
cur_mtu=1500

# rxe's hw_counters as "name value" lines.
counters() {
	# shellcheck disable=SC2016 # expanded in the guest
	ui_vm_exec 'cd /sys/class/infiniband/rxe0/ports/1/hw_counters && for f in *; do echo "$f $(cat $f)"; done'
}

# Wait (up to $2 seconds) for a background pid; its exit status, 124 on timeout.
wait_pid() {
	local pid=$1 end=$((SECONDS + $2))
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			kill "$pid" 2>/dev/null
			sleep 1
			kill -9 "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null || true
			return 124
		fi
		sleep 0.2
	done
	wait "$pid"
}

set_mtu() {
	[ "$1" = "$cur_mtu" ] && return 0
	ui_vm_exec "ip link set eth0 mtu $1"
	ui_net_mtu "$1"
	cur_mtu=$1
	ui_log "MTU $1 (rxe0: $(ui_vm_exec 'ibv_devinfo -d rxe0 | sed -n "s/.*active_mtu:[[:space:]]*//p"'))"
}

start_capture() {
	local out=$1
	ip netns exec "$UI_NS_HOST" tcpdump -Z root --immediate-mode -B 65536 -i "$UI_VETH_HOST" -U -s 0 \
		-w "$out.pcap" \
		'udp port 4791 or tcp port 18515' 2>"$out.tcpdump.log" &
	cap_pid=$!
	for _ in $(seq 50); do
		grep -q 'listening on' "$out.tcpdump.log" 2>/dev/null && return 0
		sleep 0.1
	done
	ui_die "tcpdump did not start: $(cat "$out.tcpdump.log")"
}

roce_frames() {
	tcpdump -r "$1" -nn 'udp dst port 4791' 2>/dev/null | wc -l
}

# tcpdump stops at once on SIGINT, dropping what it has not read yet: first let it catch up
# with the RoCE v2 frames the probe says it sent and received (at most 20 s).
stop_capture() {
	local want
	want=$(sed -n 's/^# RoCE v2 frames: sent=\([0-9]*\) received=\([0-9]*\)$/\1 + \2/p' "$1.client.log")
	want=$((${want:-0}))
	for _ in $(seq 100); do
		[ "$(roce_frames "$1.pcap")" -ge "$want" ] && break
		sleep 0.2
	done
	sleep 0.5	# the TCP segments that close perftest's exchange
	kill -INT "$cap_pid" 2>/dev/null || true
	wait_pid "$cap_pid" 10 || true
}

# Every RoCE v2 frame of a capture through `uroce decode` (wire_parse with the ICRC) and
# tshark's InfiniBand dissector (UDP checksums checked too).  The probe's client log says how
# many frames it broke on purpose; those may fail.  rxe's IPv6 frames carry UDP checksum 0,
# which tshark calls illegal (RFC 8200 8.1): counted and reported, not an error of the code
# under test.
# Heuristic dissectors of upper-layer protocols (iSER, SMB Direct, EoIB, ...) guess at the
# test payloads and call them malformed: they are turned off, the RoCE headers are checked.
# The last one, "ethertype" (a payload read as an IPoIB-style EtherType: perftest's latency
# counter 0x61 decodes as CRTP), cannot be disabled as a protocol: its preference turns it off.
tshark_no_ulp="-o infiniband.identify_payload:FALSE$(tshark -G heuristic-decodes 2>/dev/null |
	awk '$1 == "infiniband.payload" && $2 != "ethertype" {printf " --disable-protocol %s", $2}')"
check_capture() {
	local pcap=$1 log=$2 bad_icrc bad_csum roce want
	bad_icrc=$(sed -n 's/^# broken on purpose: bad_icrc=\([0-9]*\).*/\1/p' "$log")
	bad_csum=$(sed -n 's/^# broken on purpose: .*bad_udp_csum=\([0-9]*\).*/\1/p' "$log")
	want=$(sed -n 's/^# RoCE v2 frames: sent=\([0-9]*\) received=\([0-9]*\)$/\1 + \2/p' "$log")
	want=$((${want:-0}))
	roce=$(roce_frames "$pcap")
	if ! awk '/packets captured/ {c = $1} /received by filter/ {r = $1} END {exit c != r}' \
		"${pcap%.pcap}.tcpdump.log"; then
		echo "capture: tcpdump missed frames: $(tr '\n' ' ' <"${pcap%.pcap}.tcpdump.log")"
		return 1
	fi
	if [ "$roce" != "$want" ]; then
		echo "capture: $roce RoCE v2 frames, the probe sent and received $want"
		return 1
	fi
	# shellcheck disable=SC2086 # a list of options
	tshark -o udp.check_checksum:TRUE -r "$pcap" -d udp.port==4791,infiniband $tshark_no_ulp \
		-Y 'udp.dstport == 4791 && (_ws.malformed || _ws.expert.severity >= "error" || !infiniband.bth)' \
		-T fields -E separator='|' -e frame.number -e ip.src -e ipv6.src -e _ws.expert.message \
		2>/dev/null | awk -F'|' -v host="$UI_HOST_IP" -v host6="$UI_HOST_LL" -v guest6="$UI_GUEST_LL" \
			-v roce="$roce" -v allow="${bad_csum:-0}" '
		{ src = $2 != "" ? $2 : $3; v6 = $3 != "" }
		v6 && src == guest6 && $4 == "Illegal checksum value (0)" { zero6++; next }
		(src == host || src == host6) && $4 ~ /^Bad checksum/ && broken < allow { broken++; next }
		{ print "tshark: frame " $1 " from " src ": " ($4 != "" ? $4 : "not decoded as InfiniBand"); bad++ }
		END {
			printf "tshark: %d RoCE v2 frames, %d rejected, %d with the UDP checksum broken on purpose", roce, bad, broken
			if (zero6) printf ", %d from rxe with UDP checksum 0 over IPv6", zero6
			print ""
			exit (bad > 0 || roce == 0 || broken != allow)
		}' || return 1
	"$uroce" decode "$pcap" >"${pcap%.pcap}.decode.txt" || return 1
	tail -n 1 "${pcap%.pcap}.decode.txt" | sed 's/^/uroce decode: /'
	# "N frames: R RoCE v2 (A accepted), O other[; dropped: REASON COUNT ...]"
	bad_icrc=${bad_icrc:-0}
	local expect="$want RoCE v2 ($((want - bad_icrc)) accepted), [0-9]* other"
	[ "$bad_icrc" = 0 ] || expect="$expect; dropped: BAD_ICRC $bad_icrc"
	tail -n 1 "${pcap%.pcap}.decode.txt" | grep -q ": $expect\$" && return 0
	echo "uroce decode: want $want RoCE v2 frames: $((want - bad_icrc)) accepted," \
		"$bad_icrc with a bad ICRC, no other drop"
	return 1
}

# Counter deltas named in EXPECT (name=value ...) must hold; all deltas are printed.
check_counters() {
	local before=$1 after=$2 ok=0 e name want got
	join "$before" "$after" | awk '$3 != $2 {printf "%s +%d ", $1, $3 - $2} END {print ""}' |
		sed 's/^/rxe counters: /'
	for e in $3; do
		name=${e%=*} want=${e#*=}
		got=$(join "$before" "$after" | awk -v n="$name" '$1 == n {print $3 - $2}')
		if [ "$got" != "$want" ]; then
			echo "rxe counter $name: +$got, want +$want"
			ok=1
		fi
	done
	return $ok
}

# Run a perftest program in the guest in the background; its pid in $guest_pid.
# Callers pass perftest's -F: under TCG its clock calibration fails now and then
# ("Correlation coefficient r^2 < 0.9") and without -F it then exits 1 after the test.
guest_perftest() {
	local log=$1
	shift
	ip netns exec "$UI_NS_PEER" ssh "${UI_SSH_OPTS[@]}" -i "$UI_GUEST/ssh/id_ed25519" \
		"root@$UI_GUEST_IP" ". /etc/uroce-guest.env; exec timeout 120 stdbuf -oL $*" \
		>"$log" 2>&1 &
	guest_pid=$!
}

# Wait up to 30 s for TEXT in FILE while PID lives.
wait_for_text() {
	for _ in $(seq 150); do
		grep -q "$1" "$2" 2>/dev/null && return 0
		kill -0 "$3" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

# NAME KIND CASE GUEST-ARGS... [loss=PCT] [drop=N] [counter=delta ...]
#   probe: the guest runs the perftest server GUEST-ARGS, rxe-probe is its client;
#   serve: rxe-probe is the server, the guest runs the perftest client GUEST-ARGS against
#          it, with netem loss PCT% on the guest's eth0 and every Nth response of the probe
#          dropped.
run_probe_case() {
	local name=$1 kind=$2 verb=$3 out=$res/$1 guest=() expect=() a rc_c rc_s why='' pmtu
	local gid=GID_V4 opts=() cpid loss='' checks guest_line note served prog side
	shift 3
	case "$verb" in *6) verb=${verb%6} gid=GID_V6 opts+=(--ipv6) ;; esac
	for a in "$@"; do
		case "$a" in
		loss=*) loss=${a#loss=} ;;
		drop=*) opts+=(--drop-every "${a#drop=}") ;;
		*=*) expect+=("$a") ;;
		*) guest+=("$a") ;;
		esac
	done
	prog=$probe
	case "$kind" in
	engine*)
		prog=$engine_probe
		# the engine runs as many operations of the same size as the perftest peer
		set -- "${guest[@]}"
		while [ $# -gt 0 ]; do
			case "$1" in -n|-s) opts+=("$([ "$1" = -n ] && echo --iters || echo --size)" "$2"); shift ;; esac
			shift
		done
		;;
	esac
	case "$kind" in *serve) verb=serve-$verb side=serve ;; *) side=client ;; esac
	[ "$cur_mtu" = 9000 ] && pmtu=4096 || pmtu=1024
	counters | sort >"$out.counters.before"
	ui_vm_exec 'dmesg -c >/dev/null'
	[ -z "$loss" ] || ui_vm_exec "tc qdisc replace dev eth0 root netem loss $loss%"
	start_capture "$out"
	# all in the background, so that a signal reaches our trap at once
	if [ "$side" = client ]; then
		guest_perftest "$out.guest.log" "${guest[*]} -F -d rxe0 -x \$$gid"
		wait_for_text 'Waiting for client' "$out.guest.log" "$guest_pid" || true
	fi
	ip netns exec "$UI_NS_HOST" "$prog" --case "$verb" --ifname "$UI_VETH_HOST" \
		--local "$UI_HOST_IP" --peer "$UI_GUEST_IP" --peer-mac "$UI_GUEST_MAC" \
		--pmtu "$pmtu" "${opts[@]}" >"$out.client.log" 2>&1 &
	cpid=$!
	if [ "$side" = serve ]; then
		wait_for_text 'waiting for a perftest client' "$out.client.log" "$cpid" || true
		guest_perftest "$out.guest.log" "${guest[*]} -F -d rxe0 -x \$$gid $UI_HOST_IP"
	fi
	rc_c=0
	wait_pid "$cpid" 150 || rc_c=$?
	rc_s=0
	wait_pid "$guest_pid" 60 || rc_s=$?
	[ -z "$loss" ] || ui_vm_exec 'tc qdisc del dev eth0 root'
	stop_capture "$out"
	counters | sort >"$out.counters.after"
	ui_vm_exec 'dmesg' >"$out.guest-dmesg.log" 2>&1 || true
	{
		check_counters "$out.counters.before" "$out.counters.after" "${expect[*]}" ||
			why="$why rxe counters;"
		check_capture "$out.pcap" "$out.client.log" || why="$why capture;"
	} >"$out.checks.log" 2>&1
	[ $rc_c = 0 ] || why="$why rxe-probe exit $rc_c;"
	[ $rc_s = 0 ] || why="$why perftest in the guest exit $rc_s;"
	checks=$(sed -n 's/^# \([0-9]* passed, [0-9]* failed\)$/\1/p' "$out.client.log")
	guest_line=$(awk '/#bytes/ {getline; print; exit}' "$out.guest.log" | tr -s ' \t' ' ')
	served=$(sed -n 's/^# served \(.*\)/; served \1/p; s/^# engine: \(.*\)/; engine \1/p' "$out.client.log")
	note=$(grep -o ', [0-9]* from rxe with UDP checksum 0 over IPv6' "$out.checks.log" | cut -c3- || true)
	if [ -z "$why" ]; then
		printf 'PASS %-26s probe checks: %s; perftest in the guest:%s%s%s\n' "$name" \
			"$checks" "$guest_line" "$served" "${note:+; note: $note}"
		return 0
	fi
	printf 'FAIL %-26s%s probe checks: %s (logs: %s.*)\n' "$name" "$why" "${checks:-none}" "$out"
	grep -h '^not ok' "$out.client.log" | sed 's/^/     /' || true
	grep -hv '^tshark: [0-9]* RoCE v2 frames, 0 rejected\|^uroce decode: [0-9]* frames' "$out.checks.log" |
		sed 's/^/     /' || true
	return 1
}

# A capture written by uroce (UROCE_PCAP) through tshark's InfiniBand dissector (UDP
# checksums checked, no malformed frame, no error) and `uroce decode` (every RoCE v2 frame
# accepted: ICRC, lengths, opcode rules; no drop reason at all).
check_uroce_capture() {
	local pcap=$1 roce summary ok=0
	[ -s "$pcap" ] || { echo "capture: uroce wrote no $pcap"; return 1; }
	roce=$(roce_frames "$pcap")
	# shellcheck disable=SC2086 # a list of options
	tshark -o udp.check_checksum:TRUE -r "$pcap" -d udp.port==4791,infiniband $tshark_no_ulp \
		-Y 'udp.port == 4791 && (_ws.malformed || _ws.expert.severity >= "error" || !infiniband.bth)' \
		-T fields -E separator='|' -e frame.number -e ip.src -e _ws.expert.message 2>/dev/null |
		awk -F'|' -v roce="$roce" '
		{ print "tshark: frame " $1 " from " $2 ": " ($3 != "" ? $3 : "not decoded as InfiniBand"); bad++ }
		END {
			printf "tshark: %d RoCE v2 frames, %d rejected\n", roce, bad
			exit (bad > 0 || roce == 0)
		}' || ok=1
	"$uroce" decode "$pcap" >"${pcap%.pcap}.decode.txt" || { echo "uroce decode failed"; return 1; }
	summary=$(tail -n 1 "${pcap%.pcap}.decode.txt")
	echo "uroce decode: $summary"
	# "N frames: R RoCE v2 (A accepted), O other[; dropped: REASON COUNT ...]"
	echo "$summary" | grep -Eq "^[0-9]+ frames: $roce RoCE v2 \\($roce accepted\\), [0-9]+ other\$" && return $ok
	echo "uroce decode: want all $roce RoCE v2 frames accepted and nothing dropped"
	return 1
}

# NAME WHY OUT: the FAIL line of a case run through `uroce exec` (verbs, cm), what its checks said
# beyond the expected lines, and the last lines of both programs' logs.  Returns 1.
report_failure() {
	printf 'FAIL %-30s%s (logs: %s.*)\n' "$1" "$2" "$3"
	grep -hv '^tshark: [0-9]* RoCE v2 frames, 0 rejected\|^uroce decode: [0-9]* frames' "$3.checks.log" |
		sed 's/^/     /' || true
	tail -n 5 "$3.uroce.log" "$3.guest.log" 2>/dev/null | sed 's/^/     /'
	return 1
}

# NAME verbs SIDE TOOL ARGS... [loss=PCT]: the unmodified verbs program TOOL with ARGS through
# `uroce exec` on uroce0 against the same program on rxe0 in the guest.  SIDE client: uroce
# is the client of TOOL's server in the guest; server: the other way round.  loss= adds
# netem loss on the guest's eth0 (so both Go-Back-N implementations meet).
verbs_port=18600
run_verbs_case() {
	local name=$1 side=$3 tool=$4 out=$res/$1 args=() a loss='' port mtu_arg=() gidopt
	local srv_log cli_log u_args g_args upid gpid rc_u rc_g why='' fig drops_to_uroce drops_to_rxe
	shift 4
	for a in "$@"; do
		case "$a" in
		loss=*) loss=${a#loss=} ;;
		*) args+=("$a") ;;
		esac
	done
	verbs_port=$((verbs_port + 1))
	port=$verbs_port
	case "$tool" in
	ibv_*)
		gidopt=-g
		[ "$tool" = ibv_ud_pingpong ] ||
			mtu_arg=(-m "$([ "$cur_mtu" = 9000 ] && echo 4096 || echo 1024)")
		;;
	*) gidopt=-x; args+=(-F) ;;
	esac
	u_args=("$tool" -d uroce0 "$gidopt" "$uroce_gid" -p "$port" "${mtu_arg[@]}" "${args[@]}")
	g_args="$tool -d rxe0 $gidopt \$GID_V4 -p $port ${mtu_arg[*]} ${args[*]}"
	# shellcheck disable=SC2016 # expanded in the guest
	ui_vm_exec 'dmesg -c >/dev/null; cd /sys/class/infiniband/rxe0/ports/1/hw_counters &&
		for f in *; do echo "$f $(cat $f)"; done' | sort >"$out.counters.before"
	if [ -n "$loss" ]; then
		# rxe -> uroce: netem on the guest's eth0; uroce -> rxe: uroce's own XDP loss
		# program on the bridge's end of the veth (the host kernel has no netem).
		# ibv_rc_pingpong's client exits once it has the server's last message, and a lost
		# ACK of it would leave the server's resends unanswered (retry exceeded, on any
		# pair of devices): for it only the frames to the client are lost.
		if [ "$tool" != ibv_rc_pingpong ] || [ "$side" = client ]; then
			ui_vm_exec "tc qdisc replace dev eth0 root netem loss $loss%"
		fi
		if [ "$tool" != ibv_rc_pingpong ] || [ "$side" = server ]; then
			ip netns exec "$UI_NS_PEER" "$uroce" loss "$UI_VETH_PEER" "$loss%" >/dev/null ||
				ui_die "uroce loss $UI_VETH_PEER $loss% failed"
		fi
	fi
	rm -f "$out.pcap"
	if [ "$side" = client ]; then
		srv_log=$out.guest.log cli_log=$out.uroce.log
		# shellcheck disable=SC2016 # expanded in the guest
		ip netns exec "$UI_NS_PEER" ssh "${UI_SSH_OPTS[@]}" -i "$UI_GUEST/ssh/id_ed25519" \
			"root@$UI_GUEST_IP" ". /etc/uroce-guest.env; timeout 150 stdbuf -oL $g_args & p=\$!
			while kill -0 \$p 2>/dev/null && ! ss -Hltn 'sport = :$port' | grep -q .; do sleep 0.1; done
			echo UROCE-LISTENING; wait \$p" >"$srv_log" 2>&1 &
		gpid=$!
		wait_for_text UROCE-LISTENING "$srv_log" "$gpid" || true
		uroce_ns UROCE_PCAP="$out.pcap" timeout 150 "$uroce" exec -- "${u_args[@]}" "$UI_GUEST_IP" \
			>"$cli_log" 2>&1 &
		upid=$!
	else
		srv_log=$out.uroce.log cli_log=$out.guest.log
		uroce_ns UROCE_PCAP="$out.pcap" timeout 150 "$uroce" exec -- "${u_args[@]}" >"$srv_log" 2>&1 &
		upid=$!
		for _ in $(seq 150); do
			kill -0 "$upid" 2>/dev/null || break
			ip netns exec "$UI_NS_HOST" ss -Hltn "sport = :$port" | grep -q . && break
			sleep 0.1
		done
		ip netns exec "$UI_NS_PEER" ssh "${UI_SSH_OPTS[@]}" -i "$UI_GUEST/ssh/id_ed25519" \
			"root@$UI_GUEST_IP" ". /etc/uroce-guest.env; exec timeout 150 stdbuf -oL $g_args $UI_HOST_IP" \
			>"$cli_log" 2>&1 &
		gpid=$!
	fi
	rc_u=0
	wait_pid "$upid" 170 || rc_u=$?
	rc_g=0
	wait_pid "$gpid" 60 || rc_g=$?
	if [ -n "$loss" ]; then
		ui_vm_exec 'tc -s qdisc show dev eth0; tc qdisc del dev eth0 root 2>/dev/null || true' \
			>"$out.netem.log" 2>&1 || true
		ip netns exec "$UI_NS_PEER" "$uroce" loss "$UI_VETH_PEER" show >"$out.loss.log" 2>&1 || true
		ip netns exec "$UI_NS_PEER" "$uroce" loss "$UI_VETH_PEER" off >/dev/null 2>&1 || true
		# The loss must have happened: netem's and uroce's XDP drop counters.
		drops_to_uroce=$(sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' "$out.netem.log" | head -n 1)
		drops_to_rxe=$(sed -n 's/.* dropped \([0-9]*\)$/\1/p' "$out.loss.log")
		[ $((${drops_to_uroce:-0} + ${drops_to_rxe:-0})) -gt 0 ] ||
			why="$why no frame dropped (netem: ${drops_to_uroce:-none}, uroce loss: ${drops_to_rxe:-none});"
	fi
	# shellcheck disable=SC2016 # expanded in the guest
	ui_vm_exec 'dmesg >/tmp/dmesg.log; cd /sys/class/infiniband/rxe0/ports/1/hw_counters &&
		for f in *; do echo "$f $(cat $f)"; done; echo =; cat /tmp/dmesg.log' >"$out.guest.after" 2>&1 || true
	sed '/^=$/,$d' "$out.guest.after" | sort >"$out.counters.after"
	sed '1,/^=$/d' "$out.guest.after" >"$out.guest-dmesg.log"
	rm -f "$out.guest.after"
	{
		check_counters "$out.counters.before" "$out.counters.after" "" || true
		[ -z "$loss" ] || sed 's/^/uroce loss on the way to rxe: /' "$out.loss.log"
		check_uroce_capture "$out.pcap" || why="$why capture;"
	} >"$out.checks.log" 2>&1
	[ $rc_u = 0 ] || why="$why uroce side exit $rc_u;"
	[ $rc_g = 0 ] || why="$why rxe side exit $rc_g;"
	# perftest: the result row under the header; pingpong: "N bytes in T seconds = ..."
	fig=$(awk '/#bytes/ {h = 1; next} h && $1 ~ /^[0-9]+$/ {print; exit}
		/ bytes in .* seconds = / {print; exit}' "$cli_log" | tr -s ' \t' ' ')
	fig="$fig$(awk '/ iters in .* seconds = / {print ";" $0; exit}' "$cli_log" | tr -s ' \t' ' ')"
	grep -h '^tshark: [0-9]* RoCE v2 frames, 0 rejected$' "$out.checks.log" >/dev/null &&
		fig="$fig; $(sed -n 's/^tshark: \([0-9]*\) RoCE v2 frames.*/\1 RoCE v2 frames/p' "$out.checks.log")"
	[ -z "$loss" ] || fig="$fig; dropped ${drops_to_uroce:-0} on the way to uroce, ${drops_to_rxe:-0} to rxe"
	if [ -z "$why" ]; then
		printf 'PASS %-30s %s\n' "$name" "$fig"
		return 0
	fi
	report_failure "$name" "$why" "$out"
}

# The guest's listener: wait until the kernel lists a listening rdma_cm ID on PORT.
guest_cm_listening() {
	ui_vm_exec "for i in \$(seq 150); do rdma res show cm_id | grep -q 'state LISTEN .*:$1 ' && exit 0
		sleep 0.1; done; exit 1"
}

# uroce's listener: wait until the host's listen table has the service ID of PORT (PS: 0x0106 TCP,
# 0x0111 UDP) while PID lives.
uroce_cm_listening() {
	local sid table=$UROCE_DEV_RUN/cm/$UI_VETH_HOST
	sid=$(printf '%016x' $(($3 << 16 | $1)))
	for _ in $(seq 150); do
		kill -0 "$2" 2>/dev/null || return 1
		awk -v s="$sid" '$1 == s {f = 1} END {exit !f}' "$table" 2>/dev/null && return 0
		sleep 0.1
	done
	return 1
}

# The CM messages of a capture in order, as tshark names them: "C:REQ S:REP C:RTU ...", C the
# client's end, S the server's.
cm_sequence() {
	tshark -r "$1" -d udp.port==4791,infiniband -Y infiniband.mad -T fields -e ip.src \
		-e infiniband.mad.attributeid 2>/dev/null | awk -v c="$2" '
		BEGIN { n["0x0010"] = "REQ"; n["0x0011"] = "MRA"; n["0x0012"] = "REJ"; n["0x0013"] = "REP"
			n["0x0014"] = "RTU"; n["0x0015"] = "DREQ"; n["0x0016"] = "DREP"
			n["0x0017"] = "SIDR_REQ"; n["0x0018"] = "SIDR_REP" }
		{ printf "%s%s:%s", sep, ($1 == c ? "C" : "S"), ($2 in n ? n[$2] : $2); sep = " " }
		END { print "" }'
}

# NAME cm SIDE PROGRAM ARGS...: see the case table.
# A connection: REQ, REP, RTU (perftest -R opens two), then a DREQ from either end or from both at
# once.  The DREP may come after the capturing process has exited: both programs' exit status 0
# says the disconnect reached them.
conn_want='^C:REQ S:REP C:RTU( C:REQ S:REP C:RTU)* [CS]:DREQ'
cm_port=18700
run_cm_case() {
	local name=$1 side=$3 tool=$4 out=$res/$1 port srv_ip cli_ip u_argv g_cmd ps=262
	local s_argv c_argv upid gpid rc_u=0 rc_g=0 why='' seq want rc_want=0 fig s_time=150
	shift 4
	cm_port=$((cm_port + 1))
	port=$cm_port
	if [ "$side" = client ]; then
		srv_ip=$UI_GUEST_IP cli_ip=$UI_HOST_IP
	else
		srv_ip=$UI_HOST_IP cli_ip=$UI_GUEST_IP
	fi
	case "$tool" in
	rping)
		s_argv="rping -s -a $srv_ip -p $port $*" c_argv="rping -c -a $srv_ip -p $port $*"
		want=$conn_want ;;
	ib_*)
		s_argv="$tool -d DEV -F -p $port $*" c_argv="$tool -d DEV -F -p $port $* $srv_ip"
		want=$conn_want ;;
	rdma_server)	# librdmacm's rdma_create_ep() examples: a SEND each way
		s_argv="rdma_server -s $srv_ip -p $port" c_argv="rdma_client -s $srv_ip -p $port"
		want=$conn_want ;;
	udaddy)
		port=7174 ps=273
		s_argv="udaddy -b $srv_ip" c_argv="udaddy -s $srv_ip"
		want='^C:SIDR_REQ S:SIDR_REP$' ;;
	reject)
		# the listener is on PORT, the client asks for PORT + 1
		s_argv="rping -s -a $srv_ip -p $port -C 1" c_argv="rping -c -a $srv_ip -p $((port + 1)) -C 1"
		want='^C:REQ S:REJ$' rc_want=1 s_time=15 ;;	# the server runs until its timeout
	*) ui_die "cm case $name: unknown program $tool" ;;
	esac
	rm -f "$out.pcap"
	if [ "$side" = client ]; then
		g_cmd=${s_argv//DEV/rxe0} u_argv=${c_argv//DEV/uroce0}
		ip netns exec "$UI_NS_PEER" ssh "${UI_SSH_OPTS[@]}" -i "$UI_GUEST/ssh/id_ed25519" \
			"root@$UI_GUEST_IP" "exec timeout $s_time stdbuf -oL $g_cmd" >"$out.guest.log" 2>&1 &
		gpid=$!
		guest_cm_listening "$port" || why="$why the guest's server did not listen;"
		# shellcheck disable=SC2086 # a command line
		uroce_ns UROCE_PCAP="$out.pcap" timeout 150 "$uroce" exec -- $u_argv >"$out.uroce.log" 2>&1 &
		upid=$!
		wait_pid "$upid" 170 || rc_u=$?
		wait_pid "$gpid" 60 || rc_g=$?
		[ "$tool" = reject ] && [ "$rc_g" = 124 ] && rc_g=0
		[ "$rc_want" = 0 ] || { [ "$rc_u" != 0 ] && [ "$rc_u" != 124 ] && rc_u=0 || rc_u=unexpected-$rc_u; }
	else
		u_argv=${s_argv//DEV/uroce0} g_cmd=${c_argv//DEV/rxe0}
		# shellcheck disable=SC2086 # a command line
		uroce_ns UROCE_PCAP="$out.pcap" timeout "$s_time" "$uroce" exec -- $u_argv >"$out.uroce.log" 2>&1 &
		upid=$!
		uroce_cm_listening "$port" "$upid" "$ps" || why="$why uroce's server did not listen;"
		ip netns exec "$UI_NS_PEER" ssh "${UI_SSH_OPTS[@]}" -i "$UI_GUEST/ssh/id_ed25519" \
			"root@$UI_GUEST_IP" "exec timeout 150 stdbuf -oL $g_cmd" >"$out.guest.log" 2>&1 &
		gpid=$!
		wait_pid "$gpid" 170 || rc_g=$?
		wait_pid "$upid" 60 || rc_u=$?
		[ "$tool" = reject ] && [ "$rc_u" = 124 ] && rc_u=0
		[ "$rc_want" = 0 ] || { [ "$rc_g" != 0 ] && [ "$rc_g" != 124 ] && rc_g=0 || rc_g=unexpected-$rc_g; }
	fi
	if [ "$tool" = reject ] && ! grep -q 'RDMA_CM_EVENT_REJECTED, error 8' "$out.$([ "$side" = client ] &&
		echo uroce || echo guest).log"; then
		why="$why the client was not told REJECTED, error 8;"
	fi
	seq=$(cm_sequence "$out.pcap" "$cli_ip")
	{
		echo "CM messages: $seq"
		check_uroce_capture "$out.pcap" || echo "capture-check-failed"
	} >"$out.checks.log" 2>&1
	grep -q '^capture-check-failed' "$out.checks.log" && why="$why capture;"
	echo "$seq" | grep -Eq "$want" || why="$why CM messages '$seq', want /$want/;"
	[ "$rc_u" = 0 ] || why="$why uroce side exit $rc_u;"
	[ "$rc_g" = 0 ] || why="$why rxe side exit $rc_g;"
	fig=$(awk '/#bytes/ {h = 1; next} h && $1 ~ /^[0-9]+$/ {print; exit}' "$out.uroce.log" "$out.guest.log" |
		tr -s ' \t' ' ')
	if [ -z "$why" ]; then
		printf 'PASS %-30s CM messages: %s%s\n' "$name" "$seq" "${fig:+; $fig}"
		return 0
	fi
	report_failure "$name" "$why" "$out"
}

if [ -n "$exec_cmd" ]; then
	set_mtu "$exec_mtu"
	rc=0
	ui_vm_exec "$exec_cmd" || rc=$?
	exit $rc
fi

# FILE FROM TO TEXT: the first line's verdict FROM becomes TO, TEXT appended.
mark_result() {
	awk -v from="$2" -v to="$3" -v text="$4" 'NR == 1 {sub("^" from, to); $0 = $0 text} 1' "$1" >"$1.tmp"
	mv "$1.tmp" "$1"
}

# The guest's virtio-net can stop transmitting for good under TCG: its kernel then logs "NETDEV
# WATCHDOG: ... transmit queue 0 timed out" every 5 s and nothing reaches the bridge again (not
# even ARP replies), so every later case would fail.  With too little traffic to fill the queue
# the watchdog stays silent and the guest just stops answering (ssh: "No route to host").  That
# is a fault of the emulated peer, not of the code under test: the first run's logs go to
# NAME.stalled/ with qemu's view of the queues, the guest boots again (about 10 s) and the case
# runs once more.
# The first "NETDEV WATCHDOG" line the guest wrote to its console past byte OFFSET.
guest_nic_stalled() {
	{ tail -c +$(($1 + 1)) "$UI_RUN/console.log" | grep -a -m 1 'NETDEV WATCHDOG' || true; } | tr -d '\r'
}
# Why the guest is lost after a failed case (console past byte OFFSET), or nothing if it is not:
# its watchdog spoke, or three ssh attempts over about 20 s got no answer.
guest_lost() {
	local why
	why=$(guest_nic_stalled "$1")
	[ -z "$why" ] || { echo "$why"; return; }
	for _ in 1 2 3; do
		ui_vm_exec true 2>/dev/null && return
		sleep 2
	done
	if ui_vm_pid >/dev/null; then
		echo "no answer to ssh, qemu still running"
	else
		echo "no answer to ssh, qemu has exited"
	fi
}
# The guest's virtio-net device, as qemu's monitor names it.
VIRTIO_NET='/machine/peripheral-anon/device[0]/virtio-backend'
# The transmit ring's indexes as the guest wrote them (qemu's shadow copies may be stale): avail
# flags and idx, used flags and idx, used_event, avail_event; ST: the monitor's status of queue 1.
guest_tx_ring() {
	local st=$1 num avail used
	num=$(sed -n 's/^ *num: *//p' <<<"$st")
	avail=$(sed -n 's/^ *avail: *//p' <<<"$st")
	used=$(sed -n 's/^ *used: *//p' <<<"$st")
	[ -n "$num" ] && [ -n "$avail" ] && [ -n "$used" ] || return 1
	echo "guest memory of the transmit ring (flags idx):"
	ui_vm_monitor "xp /2hx $avail"
	ui_vm_monitor "xp /2hx $used"
	echo "used_event, avail_event:"
	ui_vm_monitor "xp /1hx $((avail + 4 + 2 * num))"
	ui_vm_monitor "xp /1hx $((used + 4 + 8 * num))"
}

# Keep what the stalled guest shows in DIR (with the logs of case NAME, if any), boot it again.
restart_stalled_guest() {
	local dir=$1 name=$2 f q st=
	mkdir -p "$dir"
	for q in 0 1; do	# receive and transmit queue of the virtio-net device
		st=$(ui_vm_monitor "info virtio-queue-status $VIRTIO_NET $q" 2>&1) || true
		echo "$st"
	done >"$dir/qemu-virtio-queues.log"
	guest_tx_ring "$st" >>"$dir/qemu-virtio-queues.log" 2>&1 || true
	cp "$UI_RUN/console.log" "$dir/console.log"
	for f in ${name:+"$res/$name".*}; do
		[ -f "$f" ] && mv "$f" "$dir/"
	done
	ui_vm_stop
	ui_vm_start "$cur_mtu"
	stalls=$((stalls + 1))
}

pass=0 fail=0 skip=0 xfail=0 stalls=0 console_at=0
summary=$res/summary.txt
ui_log "results in $res"
! awk '$3 == "verbs" || $3 == "cm" {f = 1} END {exit !f}' <<<"$selected" || uroce_dev_up
while read -r name mtu kind args <&3; do
	why=$(known_bugs | awk -v n="$name" '$1 == n {sub(/^[^ ]+ /, ""); print}')
	if [ -n "$why" ] && [ $known = 0 ]; then
		printf 'SKIP %-26s known bug: %s\n' "$name" "$why" | tee -a "$summary"
		skip=$((skip + 1))
		continue
	fi
	# A stall that began as the last case ended: boot again before this one.
	stall=$(guest_nic_stalled "$console_at")
	if [ -n "$stall" ] && [ $stalls -lt 3 ]; then
		printf 'STALL %-25s the guest stopped transmitting before this case (%s); guest logs in %s, booted again\n' \
			"$name" "$stall" "$res/stall-$stalls" | tee -a "$summary"
		restart_stalled_guest "$res/stall-$stalls" ''
		console_at=0
	fi
	set_mtu "$mtu"
	case "$kind" in
	probe|serve|engine|engine-serve) run=run_probe_case ;;
	verbs) run=run_verbs_case ;;
	cm) run=run_cm_case ;;
	*) ui_die "unknown case kind $kind" ;;
	esac
	xwhy=$(expected_failures | awk -v n="$name" '$1 == n {sub(/^[^ ]+ /, ""); print}')
	console_at=$(stat -c %s "$UI_RUN/console.log")
	ok=0
	# shellcheck disable=SC2086 # ARGS are words
	$run "$name" "$kind" $args >"$res/$name.result" || ok=$?
	stall=
	[ $ok = 0 ] || stall=$(guest_lost "$console_at")
	if [ -n "$stall" ] && [ $stalls -lt 3 ]; then
		printf 'STALL %-25s the guest network stopped (%s); first run in %s.stalled/, run again on a rebooted guest\n' \
			"$name" "$stall" "$res/$name" | tee -a "$summary"
		restart_stalled_guest "$res/$name.stalled" "$name"
		console_at=0
		ok=0
		# shellcheck disable=SC2086 # ARGS are words
		$run "$name" "$kind" $args >"$res/$name.result" || ok=$?
	fi
	if [ $ok = 0 ]; then
		if [ -n "$xwhy" ]; then
			mark_result "$res/$name.result" PASS XPASS " (expected to fail: $xwhy)"
			fail=$((fail + 1))
		else
			pass=$((pass + 1))
		fi
	elif [ -n "$xwhy" ]; then
		mark_result "$res/$name.result" FAIL XFAIL "; expected: $xwhy"
		xfail=$((xfail + 1))
	else
		fail=$((fail + 1))
	fi
	tee -a "$summary" <"$res/$name.result"
done 3<<<"$selected"
echo "interop: $pass passed, $fail failed, $xfail expected failures (rxe bugs), $skip skipped," \
	"$stalls guest restarts after its network stalled" |
	tee -a "$summary"
[ $fail = 0 ]
