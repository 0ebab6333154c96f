#!/bin/bash
# SPDX-License-Identifier: MIT
# `uroce loss`: XDP drops a random fraction of the RoCE frames a netdev receives, before af_packet
# or the kernel see them (af_packet receiver), and inside the af_xdp port's own XDP program.
. "$(dirname "$0")/lib.sh"
UROCE=${UROCE:?UROCE must point at the uroce command}
setup_veth

check_loss() {	# check_loss LABEL PONGLOG PINGLOG
	local seen dropped rx got
	seen=$(inB $UROCE loss $VB show | sed -n 's/.*roce_frames \([0-9]*\).*/\1/p')
	dropped=$(inB $UROCE loss $VB show | sed -n 's/.*dropped \([0-9]*\).*/\1/p')
	rx=$(counter rx_roce $2); got=$(field received $3)
	[ "$seen" = 1000 ] || fail "$1: XDP saw $seen RoCE frames, expected 1000"
	[ $((rx + dropped)) = "$seen" ] && ok "$1: port received $rx = $seen seen - $dropped dropped (none leaked past XDP)" ||
		fail "$1: port received $rx, XDP saw $seen and dropped $dropped"
	[ "$dropped" -ge 140 ] && [ "$dropped" -le 260 ] && ok "$1: $dropped of 1000 dropped at 20%" || fail "$1: dropped $dropped at 20%"
	[ "$got" = "$rx" ] || fail "$1: ping got $got answers for $rx frames received"
}

# af_packet receiver: the program is attached by `uroce loss`.
inB $UROCE loss $VB 20% || fail "uroce loss"
inB ip link show $VB | grep -q xdp || fail "no XDP program"
bg $WORK/pong inB $PORTTEST pong --netdev $VB --qpn 0x300 --timeout 60
wait_port $WORK/pong || fail "pong did not start"
inA $PORTTEST blast --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 1000 --size 256 --wait-ms 200 >$WORK/ping 2>&1
kill $LASTPID; wait $LASTPID 2>/dev/null
check_loss af_packet $WORK/pong $WORK/ping
inB $UROCE loss $VB off || fail "loss off"
inB ip link show $VB | grep -q xdp && fail "XDP program left after off" || ok "loss off detaches the program"
inB $UROCE loss $VB off || fail "off twice"
inB $UROCE loss $VB 2 2>/dev/null && fail "rate 2 (200%) accepted"

# pass: the program attached, every frame seen and none dropped (a loss benchmark's baseline).
inB $UROCE loss $VB pass || fail "uroce loss pass"
inB ip link show $VB | grep -q xdp || fail "pass: no XDP program"
bg $WORK/pongp inB $PORTTEST pong --netdev $VB --qpn 0x300 --timeout 60
wait_port $WORK/pongp || fail "pong (pass) did not start"
inA $PORTTEST blast --netdev $VA --qpn 0x202 --peer $IPB --peer-qpn 0x300 --count 500 --size 256 --wait-ms 200 >$WORK/pingp 2>&1
kill $LASTPID; wait $LASTPID 2>/dev/null
show=$(inB $UROCE loss $VB show)
[[ "$show" == *"(pass) roce_frames 500 dropped 0"* ]] && [ "$(field received $WORK/pingp)" = 500 ] &&
	ok "pass: XDP saw 500, dropped none, 500 answered" || fail "pass: $show, $(grep '^blast' $WORK/pingp)"
inB $UROCE loss $VB off || fail "loss off after pass"
inB ip link show $VB | grep -q xdp && fail "XDP program left after pass, off" || ok "off after pass detaches"

# af_xdp receiver: the port loads uroce's XDP program; `uroce loss` sets its rate.
bg $WORK/pong2 inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --timeout 60
wait_port $WORK/pong2 || fail "af_xdp pong did not start"
inB $UROCE loss $VB 0.2 || fail "uroce loss on the af_xdp port's program"
inA $PORTTEST blast --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 1000 --size 256 --wait-ms 200 >$WORK/ping2 2>&1
seen=$(inB $UROCE loss $VB show | sed -n 's/.*roce_frames \([0-9]*\).*/\1/p')
dropped=$(inB $UROCE loss $VB show | sed -n 's/.*dropped \([0-9]*\).*/\1/p')
got=$(field received $WORK/ping2)
[ "$seen" = 1000 ] && [ $((got + dropped)) = 1000 ] && [ "$dropped" -ge 140 ] && [ "$dropped" -le 260 ] &&
	ok "af_xdp: $dropped of 1000 dropped in the port's own XDP program, $got answered" ||
	fail "af_xdp: seen $seen dropped $dropped answered $got"
inB $UROCE loss $VB off || fail "loss off (af_xdp)"
inB ip link show $VB | grep -q xdp && ok "off keeps the af_xdp port's program" || fail "off removed the af_xdp port's program"
inA $PORTTEST blast --netdev $VA --qpn 0x201 --peer $IPB --peer-qpn 0x300 --count 200 --size 64 --wait-ms 500 >$WORK/ping3 2>&1
[ "$(field received $WORK/ping3)" = 200 ] && ok "no loss after off" || fail "after off: $(grep '^blast' $WORK/ping3)"
kill $LASTPID; wait $LASTPID 2>/dev/null
finish
