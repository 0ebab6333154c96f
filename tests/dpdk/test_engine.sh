#!/bin/bash
# SPDX-License-Identifier: MIT
# The engine through dp_device between two namespaces: RC writes, reads, atomics and sends with
# data checks (af_packet IPv4 and IPv6, af_xdp, memif), under 1% loss, counters from `uroce stat`,
# and a netdev that goes down mid-transfer (error completion, no hang).
. "$(dirname "$0")/lib.sh"
ENGINETEST=${ENGINETEST:?ENGINETEST must point at uroce-enginetest}
UROCE=${UROCE:?UROCE must point at the uroce command}
setup_veth 9000
mkdir -p $UROCE_RUN_DIR/devices
conf() { printf '%s\n' "${@:2}" >$UROCE_RUN_DIR/devices/$1.conf; }
conf udeA "netdev = $VA"
conf udeB "netdev = $VB"
inA $PORTTEST kfilter add $VA && inB $PORTTEST kfilter add $VB || fail "kfilter"

# run NAME SERVER_DEV CLIENT_DEV ARGS...: server in B, client in A; both must succeed.
run() {
	local name=$1 sdev=$2 cdev=$3; shift 3
	rm -rf $WORK/x; mkdir -p $WORK/x
	bg $WORK/$name.s inB timeout 120 $ENGINETEST server $sdev --dir $WORK/x "$@"
	inA timeout 120 $ENGINETEST client $cdev --dir $WORK/x "$@" >$WORK/$name.c 2>&1; crc=$?
	wait $LASTPID; src=$?
	if [ $crc = 0 ] && [ $src = 0 ]; then ok "$name: $(grep -h -E '^(check|pingpong|write)' $WORK/$name.c | head -1)"
	else fail "$name: client $crc server $src: $(cat $WORK/$name.c $WORK/$name.s | tr '\n' ' ')"; fi
}
run check-v4 udeB udeA --mode check --mtu 1024
run check-v6 udeB udeA --mode check --mtu 4096 --ipv6
run pingpong udeB udeA --mode pingpong --size 256 --iters 2000

# Counters from outside while a transfer runs.
rm -rf $WORK/x; mkdir -p $WORK/x
bg $WORK/bw.s inB timeout 60 $ENGINETEST server udeB --dir $WORK/x --mode bw --mtu 4096
SRV=$LASTPID
bg $WORK/bw.c inA timeout 60 $ENGINETEST client udeA --dir $WORK/x --mode bw --mtu 4096 --seconds 3 --size 65536
CLI=$LASTPID
sleep 2.5
$UROCE stat >$WORK/stat; $UROCE stat -j >$WORK/stat.json
wait $CLI $SRV || fail "bw run: $(cat $WORK/bw.c)"
grep -q "^udeA pid [0-9]* af_packet:$VA" $WORK/stat && grep -q "^udeB pid [0-9]* af_packet:$VB" $WORK/stat &&
	grep -q "  qp 0x" $WORK/stat && ok "uroce stat shows both processes and their QPs" || fail "uroce stat: $(cat $WORK/stat)"
$PY -c "import json,sys; d=json.load(open('$WORK/stat.json')); assert len(d)==2 and all(x['counters']['rx_roce']>0 and x['qps'] for x in d)" &&
	ok "uroce stat -j parses, counters move" || fail "uroce stat -j: $(head -c 300 $WORK/stat.json)"
$PY -c "import json,sys; d=json.load(open('$WORK/stat.json')); assert all('drop_bad_icrc' in x['counters'] and 'drop_wrong_transport' in x['counters'] and all('drop_wrong_peer' in q for q in x['qps']) for x in d)" &&
	ok "uroce stat -j has the parser's and the engine's drop reasons, the engine's per QP" ||
	fail "uroce stat -j drop reasons: $(head -c 300 $WORK/stat.json)"
ok "bw (af_packet, PMTU 4096): $(grep write_bw $WORK/bw.c)"

# Go-Back-N under 1% loss each way: data still checks out.
inA $UROCE loss $VA 1% && inB $UROCE loss $VB 1% || fail "uroce loss"
run check-loss udeB udeA --mode check --mtu 1024
r=$(sed -n 's/.*retransmits=\([0-9]*\).*/\1/p' $WORK/check-loss.c)
[ "${r:-0}" -gt 0 ] && ok "retransmissions under loss: $r" || fail "no retransmission under 1% loss"
inA $UROCE loss $VA off; inB $UROCE loss $VB off

# The far netdev goes down mid-transfer: the writer gets an error completion, nobody hangs.
rm -rf $WORK/x; mkdir -p $WORK/x
bg $WORK/down.s inB timeout 60 $ENGINETEST server udeB --dir $WORK/x --mode bw --mtu 1024
SRV=$LASTPID
bg $WORK/down.c inA timeout 60 $ENGINETEST client udeA --dir $WORK/x --mode bw --mtu 1024 --seconds 20 --size 65536
CLI=$LASTPID
sleep 2; inB ip link set $VB down; t0=$(date +%s)
wait $CLI; rc=$?
took=$(( $(date +%s) - t0 ))
kill $SRV 2>/dev/null; wait $SRV 2>/dev/null
inB ip link set $VB up
[ $rc = 1 ] && grep -q "write status 12" $WORK/down.c && [ $took -le 10 ] &&
	ok "link down: retry-exceeded error completion after ${took}s" || fail "link down: rc $rc after ${took}s: $(cat $WORK/down.c)"

# af_xdp (veth MTU within the XDP limit) and memif.
inA ip link set $VA mtu 3500; inB ip link set $VB mtu 3500
conf udxA "netdev = $VA" "pmd = af_xdp"
conf udxB "netdev = $VB" "pmd = af_xdp"
run check-afxdp udxB udxA --mode check --mtu 2048
conf udmA "netdev = udm$SUFFIX" "pmd = memif" "pmd_args = role=client" "ipv4 = 10.88.0.1" "mtu = 9000"
conf udmB "netdev = udm$SUFFIX" "pmd = memif" "pmd_args = role=server" "ipv4 = 10.88.0.2" "mtu = 9000"
run check-memif udmB udmA --mode check --mtu 4096
finish
