#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cut the fuzz seed corpus out of pcap files: one frame per kind of packet.

Usage: make_corpus.py OUT_DIR CAPTURE... (pcap or pcapng)
Keeps the first frame of each (file, kind) where kind is the BTH opcode for
RoCE v2, plus an ACK/NAK syndrome class, and the EtherType / IP protocol /
port for the rest, so the corpus covers every opcode and every non-RoCE
shape the captures hold.  Frames are written as raw bytes, named
<capture>-<frame number>.
"""
import os
import struct
import sys


def pcapng_frames(data):
    off, n, endian = 0, 0, "<"
    while off + 12 <= len(data):
        btype = struct.unpack(endian + "I", data[off:off + 4])[0]
        if btype == 0x0A0D0D0A:
            endian = "<" if data[off + 8:off + 12] == b"\x4d\x3c\x2b\x1a" else ">"
        blen = struct.unpack(endian + "I", data[off + 4:off + 8])[0]
        if blen < 12:
            sys.exit("corrupt pcapng block")
        if btype == 6:          # Enhanced Packet Block
            caplen = struct.unpack(endian + "I", data[off + 20:off + 24])[0]
            n += 1
            yield n, data[off + 28:off + 28 + caplen]
        off += blen


def frames(path):
    with open(path, "rb") as f:
        data = f.read()
    magic = data[:4]
    if magic == b"\x0a\x0d\x0d\x0a":
        yield from pcapng_frames(data)
        return
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        endian = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        endian = ">"
    else:
        sys.exit(f"{path}: neither pcap nor pcapng")
    off, n = 24, 0
    while off + 16 <= len(data):
        _, _, caplen, _ = struct.unpack(endian + "IIII", data[off:off + 16])
        off += 16
        n += 1
        yield n, data[off:off + caplen]
        off += caplen


def kind(f):
    if len(f) < 14:
        return ("short",)
    etype, l3 = struct.unpack(">H", f[12:14])[0], 14
    vlan = etype == 0x8100
    if vlan and len(f) >= 18:
        etype, l3 = struct.unpack(">H", f[16:18])[0], 18
    if etype == 0x0800 and len(f) >= l3 + 20:
        proto, l4 = f[l3 + 9], l3 + (f[l3] & 15) * 4
    elif etype == 0x86DD and len(f) >= l3 + 40:
        proto, l4 = f[l3 + 6], l3 + 40
    else:
        return ("ether", etype, vlan)
    if proto not in (6, 17) or len(f) < l4 + 4:
        return ("ip", etype, proto, vlan)
    dport = struct.unpack(">H", f[l4 + 2:l4 + 4])[0]
    if proto == 17 and dport == 4791 and len(f) >= l4 + 8 + 12:
        opcode = f[l4 + 8]
        syndrome = f[l4 + 20] >> 5 if opcode == 0x11 and len(f) > l4 + 20 else 0
        return ("roce", etype, vlan, opcode, syndrome)
    if proto == 6:
        return ("tcp", etype, min(dport, struct.unpack(">H", f[l4:l4 + 2])[0]), len(f) > 100)
    return ("udp", etype, dport)


def main():
    out, files = sys.argv[1], sys.argv[2:]
    os.makedirs(out, exist_ok=True)
    written = 0
    for path in files:
        stem = os.path.splitext(os.path.basename(path))[0]
        seen = set()
        for n, f in frames(path):
            k = kind(f)
            if k in seen:
                continue
            seen.add(k)
            with open(os.path.join(out, f"{stem}-{n:04d}"), "wb") as o:
                o.write(f)
            written += 1
    print(f"{written} seed inputs in {out}")


main()
