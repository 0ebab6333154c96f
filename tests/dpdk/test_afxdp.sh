#!/bin/bash
# SPDX-License-Identifier: MIT
# af_xdp over veth: ping-pong, the MTU the port can carry (one 4 KiB UMEM chunk per frame),
# uroce's XDP program takes only RoCE v2: the kernel keeps answering ARP/ND and carrying ping and TCP,
# uroce learns MACs from copies of the answers; the XDP program removed at close.  A ping is lost
# only without an answer for 1 s: on a loaded 2-core machine a busy-polling peer can stall 200 ms.
. "$(dirname "$0")/lib.sh"
setup_veth 3500

bg $WORK/pong inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --count 1500
wait_port $WORK/pong || fail "pong did not start"
grep -q "mtu=3438" $WORK/pong && ok "IP MTU 3438: the UMEM chunk, not the netdev's 3500" || fail "$(grep ^port $WORK/pong)"
inB ip link show $VB | grep -q xdp && ok "XDP program attached" || fail "no XDP program on $VB"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 64 --wait-ms 1000 \
	>$WORK/ping1 2>&1 || fail "ping 64"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 500 --size 2048 --wait-ms 1000 \
	>$WORK/ping2 2>&1 || fail "ping 2048"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IP6B --peer-qpn 0x300 --count 500 --size 256 --wait-ms 1000 \
	>$WORK/ping3 2>&1 || fail "ping IPv6"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 3 --size 4096 \
	--wait-ms 20 >$WORK/ping4 2>&1
wait $LASTPID
for f in ping1:64 ping2:2048 ping3:IPv6; do
	[ "$(field received $WORK/${f%%:*})" = 500 ] && ok "500 pings (${f#*:}) answered" ||
		fail "${f#*:}: $(grep -E '^(ping|rx_icmp|rx_ring|rx_not|rx_neigh|tx_dropped)' $WORK/${f%%:*} | tr '\n' ' ')"
done
[ "$(counter tx_too_big $WORK/ping4)" -ge 3 ] && ok "4 KiB payload refused (frame above the UMEM chunk), counted" ||
	fail "tx_too_big=$(counter tx_too_big $WORK/ping4)"
[ "$(counter arp_reply_tx $WORK/pong)" = 0 ] && [ "$(counter na_tx $WORK/pong)" = 0 ] &&
	ok "uroce left ARP and ND answers to B's kernel" ||
	fail "uroce answered for the kernel (arp_reply_tx=$(counter arp_reply_tx $WORK/pong) na_tx=$(counter na_tx $WORK/pong))"
[ "$(counter arp_reply_rx $WORK/ping1)" -ge 1 ] && [ "$(counter na_rx $WORK/ping3)" -ge 1 ] &&
	ok "A's port resolved B through the kernel's ARP and ND answers (arp_reply_rx=$(counter arp_reply_rx $WORK/ping1) na_rx=$(counter na_rx $WORK/ping3))" ||
	fail "no ARP/ND answers seen: $(grep -E '^(arp|na|ns)_' $WORK/ping1 $WORK/ping3 | tr '\n' ' ')"
inB ip link show $VB | grep -q xdp && fail "XDP program left behind" || ok "XDP program removed at close"

# The kernel's own traffic on B's netdev while its af_xdp port is up: ARP/ND, ping, TCP.
bg $WORK/pong2 inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --timeout 8
wait_port $WORK/pong2 || fail "pong did not start"
PONG2=$LASTPID
inA ip neigh flush dev $VA
inB ip neigh flush dev $VB
inA ping -c 2 -W 2 $IPB >$WORK/kping4 2>&1 && inA ping -c 2 -W 2 $IP6B >$WORK/kping6 2>&1 &&
	ok "kernel ping over IPv4 and IPv6 to the af_xdp side" || fail "kernel ping: $(cat $WORK/kping4 $WORK/kping6)"
macB=$(inB cat /sys/class/net/$VB/address)
inA ip neigh show $IPB | grep -q "$macB" && inA ip neigh show $IP6B | grep -q "$macB" &&
	ok "A's kernel learnt B's MAC for IPv4 and IPv6 from B's kernel" ||
	fail "A's kernel neighbours: $(inA ip neigh show dev $VA)"
bg $WORK/tcpsrv inB $PY -c "
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('$IPB', 18515)); s.listen(1); s.settimeout(5)
c, _ = s.accept(); c.settimeout(5)
data = b''
while len(data) < 100000:
    d = c.recv(65536)
    if not d: break
    data += d
c.sendall(str(len(data)).encode()); c.close()"
sleep 0.3
inA timeout 10 $PY -c "
import socket
s = socket.create_connection(('$IPB', 18515), timeout=5)
s.sendall(b'r' * 100000); s.shutdown(socket.SHUT_WR); print(s.recv(100).decode())" >$WORK/tcpcli 2>&1
[ "$(cat $WORK/tcpcli)" = 100000 ] && ok "TCP to port 18515 on the af_xdp side: 100000 bytes echoed as counted" ||
	fail "TCP: $(cat $WORK/tcpcli $WORK/tcpsrv)"
# One af_xdp port per netdev queue: a second live process is refused with a clear line...
inB $PORTTEST pong --pmd af_xdp --netdev $VB --timeout 1 >$WORK/second 2>&1 && fail "second af_xdp process accepted"
grep -q "af_xdp is in use by process $PONG2" $WORK/second && ok "second process refused: $(cat $WORK/second)" ||
	fail "second process: $(cat $WORK/second)"
# ...and the XDP program of a process that died is taken over, not an obstacle.
kill -9 $PONG2; wait $PONG2 2>/dev/null
inB ip link show $VB | grep -q xdp || fail "expected the killed process's XDP program to stay"
bg $WORK/pong3 inB $PORTTEST pong --pmd af_xdp --netdev $VB --qpn 0x300 --count 100
wait_port $WORK/pong3 && ok "port opened over a dead process's XDP program" || fail "$(cat $WORK/pong3)"
inA $PORTTEST ping --pmd af_xdp --netdev $VA --qpn 0x200 --peer $IPB --peer-qpn 0x300 --count 100 --size 64 >$WORK/ping5 2>&1
wait $LASTPID
[ "$(field received $WORK/ping5)" = 100 ] && ok "and it carries traffic" || fail "$(grep '^ping port' $WORK/ping5)"
finish
