#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Oracle: scapy recomputes the ICRC of every packet uroce's builder made.

Usage: check_scapy_icrc.py WIRE_ORACLE_GEN OUT.pcap
IPv4 packets: scapy's own BTH.compute_icrc (scapy.contrib.roce), the code whose
known answers include a ConnectX-4 Lx CNP.  IPv6 packets (scapy only handles
IPv4): the same masking steps applied to scapy's IPv6 fields (traffic class,
flow label, hop limit), CRC-32 from Python's zlib.  RoCE v1 packets (scapy's
GRH layer on EtherType 0x8915): Annex A16's, on scapy's GRH fields (TClass,
FlowLabel, HopLmt), no UDP.  Exits non-zero on any
mismatch, and when scapy is missing.
"""
import os
import subprocess
import sys
import zlib

SEED = os.environ.get("ORACLE_SEED", "424242")
PER_OPCODE = "8"


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


try:
    from scapy.all import Ether, IP, IPv6, Raw, UDP, raw, rdpcap
    from scapy.contrib.roce import BTH, GRH
except ImportError as e:
    fail(f"scapy is not importable by {sys.executable} ({e}); apt-get install python3-scapy")


def icrc_masked(pkt):
    """Annex A17.3.3 over an IPv6 packet, A16 over a RoCE v1 GRH, by scapy fields (as
    compute_icrc does for IPv4): 8 bytes of ones, the masked header copy, CRC-32 to the ICRC."""
    if GRH in pkt:
        pshdr = Raw(b"\xff" * 8) / pkt[GRH].copy()
        pshdr[GRH].tclass = 0xFF
        pshdr[GRH].flowlabel = 0xFFFFF
        pshdr[GRH].hoplmt = 0xFF
    else:
        pshdr = Raw(b"\xff" * 8) / pkt[IPv6].copy()
        pshdr[IPv6].tc = 0xFF
        pshdr[IPv6].fl = 0xFFFFF
        pshdr[IPv6].hlim = 0xFF
        pshdr[UDP].chksum = 0xFFFF
    pshdr[BTH].fecn = 1
    pshdr[BTH].becn = 1
    pshdr[BTH].resv6 = 0xFF
    return zlib.crc32(raw(pshdr)[:-4]) & 0xFFFFFFFF


def main():
    if len(sys.argv) != 3:
        fail("usage: check_scapy_icrc.py WIRE_ORACLE_GEN OUT.pcap")
    gen, pcap = sys.argv[1:3]
    subprocess.run([gen, pcap, SEED, PER_OPCODE], check=True)
    frames = rdpcap(pcap)
    checked = {4: 0, 6: 0, 1: 0}
    opcodes = set()
    for n, frame in enumerate(frames, 1):
        data = raw(frame)
        pkt = Ether(data)
        if BTH not in pkt:
            fail(f"frame {n}: scapy finds no BTH")
        carried = pkt[BTH].icrc
        opcodes.add(pkt[BTH].opcode)
        if IP in pkt:
            del pkt[BTH].icrc
            recomputed = Ether(raw(pkt))[BTH].icrc
            checked[4] += 1
        elif GRH in pkt or IPv6 in pkt:
            # scapy shows the 4 ICRC bytes as a big-endian number; the CRC goes LSB first.
            recomputed = int.from_bytes(icrc_masked(pkt).to_bytes(4, "little"), "big")
            checked[1 if GRH in pkt else 6] += 1
        else:
            fail(f"frame {n}: neither IPv4, IPv6 nor RoCE v1")
        if recomputed != carried:
            fail(f"frame {n} opcode {pkt[BTH].opcode:#04x}: ICRC {carried:#010x}, "
                 f"scapy computes {recomputed:#010x}")
    if checked[4] == 0 or checked[6] == 0 or checked[1] == 0 or len(opcodes) != 63:
        fail(f"too little checked: {checked}, {len(opcodes)} opcodes")
    print(f"ok: {len(frames)} packets, {len(opcodes)} opcodes; ICRC recomputed by scapy's "
          f"BTH.compute_icrc for {checked[4]} IPv4 packets and by scapy IPv6 fields + zlib "
          f"for {checked[6]} IPv6 packets, by scapy GRH fields + zlib for {checked[1]} RoCE v1 "
          f"packets (seed {SEED})")


main()
