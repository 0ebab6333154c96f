#!/bin/bash
# SPDX-License-Identifier: MIT
# The pcap PMD: frames written by scapy replayed into the port, the answers written to a pcap and
# checked by scapy (ICRC, QPNs, PSNs, payloads); a corrupted frame is refused; ARP for us answered.
. "$(dirname "$0")/lib.sh"

$PY - $WORK/in.pcap <<'PYEOF' || skip "scapy cannot build the input"
import sys
from scapy.all import Ether, IP, UDP, Raw, ARP, wrpcap, load_contrib
load_contrib('roce')
from scapy.contrib.roce import BTH
ours, peer = '02:00:00:99:00:02', '02:00:00:99:00:01'
frames = [Ether(dst='ff:ff:ff:ff:ff:ff', src=peer) /
          ARP(op=1, hwsrc=peer, psrc='10.99.0.1', pdst='10.99.0.2')]
for i in range(20):
    deth = (0x11111111).to_bytes(4, 'big') + (0x200).to_bytes(4, 'big')
    payload = bytes((i * 7 + k) & 0xff for k in range(100 + i))
    pad = (4 - len(payload) % 4) % 4
    f = (Ether(dst=ours, src=peer) / IP(src='10.99.0.1', dst='10.99.0.2', flags='DF') /
         UDP(sport=50000, dport=4791, chksum=0) /
         BTH(opcode=0x64, padcount=pad, dqpn=0x300, psn=1000 + i) / Raw(deth + payload + bytes(pad)))
    frames.append(f)
bad = Ether(bytes(frames[5]))
raw = bytearray(bytes(bad)); raw[-5] ^= 0xff          # last payload byte: the ICRC no longer matches
frames.append(Ether(bytes(raw)))
wrpcap(sys.argv[1], frames)
PYEOF

$PORTTEST pong --pmd pcap --netdev udpcap --pmd-args rx=$WORK/in.pcap,tx=$WORK/out.pcap \
	--ip 10.99.0.2 --mac 02:00:00:99:00:02 --qpn 0x300 --timeout 2 >$WORK/pong 2>&1 || fail "pong: $(cat $WORK/pong)"
[ "$(field echoed $WORK/pong)" = 20 ] && [ "$(field bad $WORK/pong)" = 1 ] &&
	ok "20 frames echoed, the corrupted one refused" || fail "$(grep ^pong $WORK/pong)"
$PY - $WORK/out.pcap <<'PYEOF' && ok "answers verified by scapy (ICRC, QPN, PSN, payload, ARP reply)" || fail "scapy check of out.pcap"
import sys
from scapy.all import rdpcap, Ether, ARP, UDP, load_contrib
load_contrib('roce')
from scapy.contrib.roce import BTH
arp = roce = 0
for p in rdpcap(sys.argv[1]):
    if ARP in p:
        assert p[ARP].op == 2 and p[ARP].psrc == '10.99.0.2' and p[ARP].hwsrc == '02:00:00:99:00:02'
        assert p[ARP].pdst == '10.99.0.1' and p.dst == '02:00:00:99:00:01'
        arp += 1
        continue
    raw = bytes(p)
    q = Ether(raw); q[BTH].icrc = None
    assert bytes(q) == raw, "ICRC"
    b = p[BTH]
    i = b.psn - 1000
    assert b.opcode == 0x64 and b.dqpn == 0x200, (b.opcode, b.dqpn)
    body = bytes(b.payload)
    assert body[4:8] == (0x300).to_bytes(4, 'big'), "DETH source QP"
    payload = body[8:8 + 100 + i]
    assert payload == bytes((i * 7 + k) & 0xff for k in range(100 + i)), "payload %d" % i
    roce += 1
assert (arp, roce) == (1, 20), (arp, roce)
PYEOF

# A missing input file: one clear line, no DPDK noise.
$PORTTEST pong --pmd pcap --netdev udpcap --pmd-args rx=$WORK/nope.pcap,tx=$WORK/o.pcap \
	--ip 10.99.0.2 --timeout 1 >$WORK/err 2>&1 && fail "missing rx pcap accepted"
grep -q "cannot open the pcap port" $WORK/err && [ "$(wc -l <$WORK/err)" = 1 ] &&
	ok "missing rx pcap: $(cat $WORK/err)" || fail "error output: $(cat $WORK/err)"
finish
