#!/bin/bash
# SPDX-License-Identifier: MIT
# Two processes on one netdev: QPNs from the host-wide allocator never collide, and each process
# takes only the frames for its own QPNs (the other's are dropped silently: no answer, no NAK).
. "$(dirname "$0")/lib.sh"
setup_veth

bg $WORK/p1 inB $PORTTEST pong --netdev $VB --qpn-alloc --timeout 60
P1=$LASTPID
bg $WORK/p2 inB $PORTTEST pong --netdev $VB --qpn-alloc --timeout 60
P2=$LASTPID
wait_port $WORK/p1 && wait_port $WORK/p2 || fail "pongs did not start"
q1=$(sed -n 's/^qpn=//p' $WORK/p1); q2=$(sed -n 's/^qpn=//p' $WORK/p2)
[ -n "$q1" ] && [ -n "$q2" ] && [ "$q1" != "$q2" ] && ok "distinct QPNs $q1 and $q2" || fail "QPNs '$q1' '$q2'"
inA $PORTTEST ping --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn $q1 --count 300 --size 64 >$WORK/a1 2>&1
inA $PORTTEST ping --netdev $VA --qpn 0x201 --peer $IPB --peer-qpn $q2 --count 200 --size 64 >$WORK/a2 2>&1
kill $P1 $P2; wait $P1 $P2
[ "$(field received $WORK/a1)" = 300 ] && [ "$(field received $WORK/a2)" = 200 ] &&
	ok "each QPN answered every ping" || fail "$(grep '^ping port' $WORK/a1 $WORK/a2)"
[ "$(field echoed $WORK/p1)" = 300 ] && [ "$(field echoed $WORK/p2)" = 200 ] &&
	ok "each process answered only its own (300 / 200)" || fail "$(grep ^pong $WORK/p1 $WORK/p2)"
[ "$(counter rx_other_qpn $WORK/p1)" -ge 200 ] && [ "$(counter rx_other_qpn $WORK/p2)" -ge 200 ] &&
	ok "frames for the other process dropped silently (rx_other_qpn $(counter rx_other_qpn $WORK/p1) / $(counter rx_other_qpn $WORK/p2))" ||
	fail "rx_other_qpn $(counter rx_other_qpn $WORK/p1) / $(counter rx_other_qpn $WORK/p2)"
[ "$(counter tx_frames $WORK/p1)" = 300 ] && [ "$(counter tx_frames $WORK/p2)" = 200 ] ||
	fail "a process sent something for a QPN not its own"
finish
