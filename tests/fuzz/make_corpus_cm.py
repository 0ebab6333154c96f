#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Seeds for fuzz_cm: the MADs of a capture (UD SENDs to QP1) as record sequences.

Usage: make_corpus_cm.py OUT_DIR CAPTURE.pcap
Takes the MADs of the first MAD's sender (the active side). Writes each MAD alone, the whole handshake and teardown (REQ, then every later
MAD with its remote comm ID the CM's own, record 5), the same with the clock
moved past the retransmission timers and each MAD repeated, and a truncated REQ.
Record format: fuzz_cm.c, above fuzz_cm_one().
"""
import hashlib
import pathlib
import struct
import sys


def mads(path):
    data = pathlib.Path(path).read_bytes()
    # little-endian pcap, microsecond or nanosecond timestamps
    endian = '<' if data[:4] in (b'\xd4\xc3\xb2\xa1', b'\x4d\x3c\xb2\xa1') else '>'
    off = 24
    while off + 16 <= len(data):
        caplen = struct.unpack(endian + 'I', data[off + 8:off + 12])[0]
        f = data[off + 16:off + 16 + caplen]
        off += 16 + caplen
        if len(f) < 14 or struct.unpack('>H', f[12:14])[0] != 0x0800:
            continue
        l4 = 14 + (f[14] & 15) * 4
        if f[23] != 17 or struct.unpack('>H', f[l4 + 2:l4 + 4])[0] != 4791:
            continue
        bth = l4 + 8
        if f[bth] == 0x64 and struct.unpack('>I', f[bth + 4:bth + 8])[0] & 0xffffff == 1:
            yield f[26:30], f[bth + 20:len(f) - 4]    # source IP; past BTH and DETH, before the ICRC


def mad_record(kind, mad):
    return bytes([kind]) + struct.pack('<H', len(mad) - 1) + mad


def main():
    out = pathlib.Path(sys.argv[1])
    out.mkdir(parents=True, exist_ok=True)
    # the active side's MADs: the first one's sender (its REQ), not the answers to it
    found = list(mads(sys.argv[2]))
    found = [m for src, m in found if src == found[0][0]]
    seeds = [mad_record(0, m) for m in found]
    seeds.append(b''.join(mad_record(0 if i == 0 else 5, m) for i, m in enumerate(found)))
    seeds.append(b''.join(mad_record(0 if i == 0 else 5, m) + b'\x07' + b'\x06\xe8\x03'
                          for i, m in enumerate(found)))
    seeds.append(mad_record(0, found[0][:100]))
    for s in seeds:
        (out / hashlib.sha1(s).hexdigest()).write_bytes(s)
    print(f'{len(found)} MADs, {len(seeds)} seeds in {out}')


main()
