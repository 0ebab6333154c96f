#!/bin/bash
# SPDX-License-Identifier: MIT
# A netdev that goes down in the middle of a transfer: no hang, frames counted as lost or dropped,
# traffic resumes when it comes back.
. "$(dirname "$0")/lib.sh"
setup_veth

bg $WORK/pong inB $PORTTEST pong --netdev $VB --qpn 0x300 --timeout 60
PONG=$LASTPID
wait_port $WORK/pong || fail "pong did not start"
bg $WORK/ping inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 1000000 \
	--size 1024 --wait-ms 5 --timeout 7
PING=$LASTPID
sleep 2; inA ip link set $VA down			# the sender's own netdev
sleep 1; inA ip link set $VA up
sleep 1; inB ip link set $VB down			# the far end
sleep 1; inB ip link set $VB up
start=$(date +%s)
wait $PING; rc=$?
took=$(( $(date +%s) - start ))
[ "$took" -le 4 ] && ok "ping finished on its own timeout (${took}s after the last change, rc $rc)" || fail "ping hung (${took}s)"
sent=$(field sent $WORK/ping); got=$(field received $WORK/ping); lost=$(field lost $WORK/ping)
[ "$lost" -gt 0 ] && [ "$got" -gt 0 ] && ok "sent $sent, answered $got, lost $lost" || fail "$(grep ^ping $WORK/ping)"
[ "$(counter tx_link_down $WORK/ping)" -gt 0 ] && ok "frames dropped while the link was down: $(counter tx_link_down $WORK/ping)" ||
	fail "tx_link_down=$(counter tx_link_down $WORK/ping)"
[ "$(grep -c 'link changed' $WORK/ping)" -ge 2 ] || fail "link changes not noticed"
# Traffic flows again after the last change.
inA $PORTTEST blast --netdev $VA --qpn 0x201 --peer $IPB --peer-qpn 0x300 --count 100 --size 64 --wait-ms 500 >$WORK/after 2>&1
[ "$(field received $WORK/after)" = 100 ] && ok "answers again after the links came back" || fail "after: $(grep '^blast' $WORK/after)"
kill $PONG
finish
