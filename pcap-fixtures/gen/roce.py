# SPDX-License-Identifier: MIT
"""RoCE v2 frames built with scapy, independently of uroce's C code.

scapy.contrib.roce has the BTH, the AETH and the CNP padding; the other
extension headers (IBA 9.3) are defined here, and the ICRC (Annex A17.3.3)
is computed here with zlib, so nothing in a fixture comes from uroce's
wire library.  Also: a small parser for the converter, and a pcap writer
with fixed timestamps so that generated files are reproducible byte for
byte.
"""

import ipaddress
import struct
import zlib

from scapy.compat import raw
from scapy.contrib.roce import BTH, AETH, CNPPadding
from scapy.fields import (BitField, IntField, XByteField, XIntField,
                          XLongField)
from scapy.layers.inet import IP, UDP
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import Dot1Q, Ether
from scapy.packet import Packet, Raw

ROCE_PORT = 4791          # Annex A17.2.1


class RETH(Packet):       # IBA 9.3.3
    name = "RETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0),
                   IntField("dma_len", 0)]


class AtomicETH(Packet):  # IBA 9.3.4
    name = "AtomicETH"
    fields_desc = [XLongField("va", 0), XIntField("rkey", 0),
                   XLongField("swap_add", 0), XLongField("compare", 0)]


class AtomicAckETH(Packet):  # IBA 9.5.3
    name = "AtomicAckETH"
    fields_desc = [XLongField("orig", 0)]


class ImmDt(Packet):      # IBA 9.3.6
    name = "ImmDt"
    fields_desc = [XIntField("imm", 0)]


class IETH(Packet):       # IBA 9.3.7
    name = "IETH"
    fields_desc = [XIntField("rkey", 0)]


class FETH(Packet):       # IBA 1.5 FLUSH, as the kernel's rxe_hdr.h
    name = "FETH"
    fields_desc = [BitField("reserved", 0, 26), BitField("sel", 0, 2),
                   BitField("plt", 0, 4)]


class XRCETH(Packet):     # IBA 1.2.1 XRC: the SRQ of the target's domain
    name = "XRCETH"
    fields_desc = [XByteField("reserved", 0), BitField("srqn", 0, 24)]


class DETH(Packet):       # IBA 9.3.2
    name = "DETH"
    fields_desc = [XIntField("qkey", 0), XByteField("resv8", 0),
                   BitField("src_qp", 0, 24)]


# ---- Opcodes (IBA table 38, CNP from Annex A17.9.3) ----

RC, UC, UD, XRC = 0x00, 0x20, 0x60, 0xa0
CNP = 0x81

# Low five bits: name, extension headers in wire order, payload allowed.
_OPS = {
    0x00: ("SEND_FIRST", (), True),
    0x01: ("SEND_MIDDLE", (), True),
    0x02: ("SEND_LAST", (), True),
    0x03: ("SEND_LAST_IMM", ("imm",), True),
    0x04: ("SEND_ONLY", (), True),
    0x05: ("SEND_ONLY_IMM", ("imm",), True),
    0x06: ("WRITE_FIRST", ("reth",), True),
    0x07: ("WRITE_MIDDLE", (), True),
    0x08: ("WRITE_LAST", (), True),
    0x09: ("WRITE_LAST_IMM", ("imm",), True),
    0x0a: ("WRITE_ONLY", ("reth",), True),
    0x0b: ("WRITE_ONLY_IMM", ("reth", "imm"), True),
    0x0c: ("READ_REQUEST", ("reth",), False),
    0x0d: ("READ_RESP_FIRST", ("aeth",), True),
    0x0e: ("READ_RESP_MIDDLE", (), True),
    0x0f: ("READ_RESP_LAST", ("aeth",), True),
    0x10: ("READ_RESP_ONLY", ("aeth",), True),
    0x11: ("ACK", ("aeth",), False),
    0x12: ("ATOMIC_ACK", ("aeth", "atomicack"), False),
    0x13: ("CMP_SWAP", ("atomic",), False),
    0x14: ("FETCH_ADD", ("atomic",), False),
    0x16: ("SEND_LAST_INV", ("ieth",), True),
    0x17: ("SEND_ONLY_INV", ("ieth",), True),
    0x1c: ("FLUSH", ("feth", "reth"), False),      # IBA 1.5, as rxe_opcode.c
    0x1d: ("ATOMIC_WRITE", ("reth",), True),       # IBA 1.5, 8 bytes of payload
}
_UC_OPS = range(0x00, 0x0c)          # sends and writes
_UD_OPS = (0x04, 0x05)               # send only (+ immediate)
_XRC_OPS = [low for low in _OPS if low < 0x1c]   # RC's but FLUSH and ATOMIC WRITE
_XRC_RESPONSES = range(0x0d, 0x13)   # read responses and ACKs: no XRCETH
_EXT_LEN = {"xrceth": 4, "feth": 4, "reth": 16, "aeth": 4, "atomic": 28, "atomicack": 8,
            "imm": 4, "ieth": 4, "deth": 8, "cnp": 16}

OP = {}          # "RC_SEND_FIRST" -> 0x00, ...
OP_INFO = {}     # opcode -> (name, headers, payload allowed)
for _low, (_name, _hdrs, _pay) in _OPS.items():
    OP["RC_" + _name] = RC | _low
    OP_INFO[RC | _low] = ("RC_" + _name, _hdrs, _pay)
for _low in _UC_OPS:
    _name, _hdrs, _pay = _OPS[_low]
    OP["UC_" + _name] = UC | _low
    OP_INFO[UC | _low] = ("UC_" + _name, _hdrs, _pay)
for _low in _UD_OPS:
    _name, _hdrs, _pay = _OPS[_low]
    OP["UD_" + _name] = UD | _low
    OP_INFO[UD | _low] = ("UD_" + _name, ("deth",) + _hdrs, _pay)
for _low in _XRC_OPS:
    _name, _hdrs, _pay = _OPS[_low]
    OP["XRC_" + _name] = XRC | _low
    OP_INFO[XRC | _low] = ("XRC_" + _name,
                           _hdrs if _low in _XRC_RESPONSES else ("xrceth",) + _hdrs, _pay)
OP["CNP"] = CNP
OP_INFO[CNP] = ("CNP", ("cnp",), False)

# AETH syndromes (IBA 9.7.5.2.1, table 44).
AETH_ACK = 0x00
AETH_RNR_NAK = 0x20
AETH_NAK = 0x60
NAK_PSN_SEQ = 0
NAK_INVALID_REQ = 1
NAK_REM_ACCESS = 2
NAK_REM_OP = 3
CREDITS_INVALID = 0x1f

# RNR timer codes (IBA table 45) in microseconds; code 0 is 655.36 ms.
RNR_TIMER_US = [655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480,
                640, 960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360,
                20480, 30720, 40960, 61440, 81920, 122880, 163840, 245760,
                327680, 491520]


def ack_timeout_us(code):
    """Local ACK timeout for the QP attribute (IBA 9.7.6.1.3): 4.096 us * 2^code."""
    return 4.096 * (1 << code)


def psn_add(psn, n):
    return (psn + n) & 0xffffff


# ---- Addresses ----

class Host:
    """One end of the link: a MAC and an IPv4 or IPv6 address."""

    def __init__(self, mac, ip):
        self.mac = mac
        self.ip = ip
        self.addr = ipaddress.ip_address(ip)
        self.v6 = self.addr.version == 6

    def gid(self):
        """The address in GID form (IPv4-mapped for IPv4)."""
        if self.v6:
            return self.addr.packed
        return b"\0" * 10 + b"\xff\xff" + self.addr.packed


# ---- ICRC (IBA Annex A17.3.3) ----

def _l3_offset(frame):
    etype = struct.unpack_from(">H", frame, 12)[0]
    if etype == 0x8100:
        return 18
    return 14


def icrc(frame):
    """ICRC of a RoCE v2 frame whose last four bytes are the ICRC field.

    The CRC-32 covers 8 bytes of ones for the absent LRH, the IP header
    with its variant fields (IPv4 TOS, TTL, checksum; IPv6 traffic class,
    flow label, hop limit) set to ones, the UDP header with its checksum
    set to ones, the BTH with resv8a set to ones, and everything after it
    up to the ICRC.
    """
    l3 = _l3_offset(frame)
    ip = bytearray(frame[l3:])
    if ip[0] >> 4 == 4:
        ihl = (ip[0] & 0xf) * 4
        end = struct.unpack_from(">H", ip, 2)[0]
        ip[1] = 0xff
        ip[8] = 0xff
        ip[10:12] = b"\xff\xff"
    else:
        ihl = 40
        end = 40 + struct.unpack_from(">H", ip, 4)[0]
        ip[0] |= 0x0f
        ip[1:4] = b"\xff\xff\xff"
        ip[7] = 0xff
    ip[ihl + 6:ihl + 8] = b"\xff\xff"      # UDP checksum
    ip[ihl + 8 + 4] = 0xff                  # BTH resv8a
    return zlib.crc32(b"\xff" * 8 + bytes(ip[:end - 4])) & 0xffffffff


def icrc_ok(frame):
    l3 = _l3_offset(frame)
    ip = frame[l3:]
    if ip[0] >> 4 == 4:
        end = l3 + struct.unpack_from(">H", ip, 2)[0]
    else:
        end = l3 + 40 + struct.unpack_from(">H", ip, 4)[0]
    return struct.unpack_from("<I", frame, end - 4)[0] == icrc(frame[:end])


def _csum16(data):
    if len(data) & 1:
        data += b"\0"
    s = sum(struct.unpack(">%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return ~s & 0xffff


def _udp6_checksum(frame, l3):
    ip = frame[l3:l3 + 40]
    plen = struct.unpack_from(">H", ip, 4)[0]
    udp = bytearray(frame[l3 + 40:l3 + 40 + plen])
    udp[6:8] = b"\0\0"
    pseudo = ip[8:40] + struct.pack(">IxxxB", plen, 17)
    c = _csum16(pseudo + bytes(udp))
    return c or 0xffff


# ---- Building ----

def frame(src, dst, opcode, dqpn, psn, payload=b"", *, reth=None, aeth=None,
          atomic=None, atomic_orig=None, imm=None, ieth=None, deth=None,
          feth=None, xrceth=None, ackreq=False, se=False, mig=False, pkey=0xffff, becn=False,
          tver=0, pad=None, sport=49152, dport=ROCE_PORT, tos=0, ttl=64,
          ip_id=0, df=True, vlan=None, flow_label=0, icrc_value=None,
          bad_icrc=False):
    """Build one RoCE v2 frame and return its bytes.

    reth = (va, rkey, dma_len); aeth = (syndrome, msn);
    atomic = (va, rkey, swap_add, compare); deth = (qkey, src_qp);
    feth = (placement type, selectivity level); xrceth = the XRC SRQ number.
    The payload is padded to four bytes and the pad count set, unless
    @pad forces a value (for malformed frames).  The ICRC is computed,
    or taken from @icrc_value, or computed and then corrupted (@bad_icrc).
    """
    name, hdrs, _ = OP_INFO[opcode]
    padlen = (-len(payload)) & 3
    bth = BTH(opcode=opcode, solicited=int(se), migreq=int(mig),
              padcount=padlen if pad is None else pad, version=tver,
              pkey=pkey, becn=int(becn), dqpn=dqpn, ackreq=int(ackreq),
              psn=psn, icrc=0)
    layers = bth
    for h in hdrs:
        if h == "xrceth":
            layers = layers / XRCETH(srqn=xrceth)
        elif h == "reth":
            layers = layers / RETH(va=reth[0], rkey=reth[1], dma_len=reth[2])
        elif h == "aeth":
            layers = layers / AETH(syndrome=aeth[0], msn=aeth[1])
        elif h == "atomic":
            layers = layers / AtomicETH(va=atomic[0], rkey=atomic[1],
                                        swap_add=atomic[2], compare=atomic[3])
        elif h == "atomicack":
            layers = layers / AtomicAckETH(orig=atomic_orig)
        elif h == "imm":
            layers = layers / ImmDt(imm=imm)
        elif h == "ieth":
            layers = layers / IETH(rkey=ieth)
        elif h == "deth":
            layers = layers / DETH(qkey=deth[0], src_qp=deth[1])
        elif h == "feth":
            layers = layers / FETH(plt=feth[0], sel=feth[1])
        elif h == "cnp":
            layers = layers / CNPPadding()
    body = payload + b"\0" * padlen
    if body:
        layers = layers / Raw(body)

    udp = UDP(sport=sport, dport=dport)
    if src.v6:
        l3 = IPv6(src=src.ip, dst=dst.ip, tc=tos, fl=flow_label, hlim=ttl)
        udp.chksum = 0
    else:
        l3 = IP(src=src.ip, dst=dst.ip, tos=tos, ttl=ttl, id=ip_id,
                flags="DF" if df else 0)
        udp.chksum = 0          # as rxe and RoCE NICs send it over IPv4
    eth = Ether(src=src.mac, dst=dst.mac)
    if vlan is not None:
        eth = eth / Dot1Q(vlan=vlan & 0xfff, prio=vlan >> 13)
    out = bytearray(raw(eth / l3 / udp / layers))

    end = len(out)
    value = icrc(bytes(out)) if icrc_value is None else icrc_value
    if bad_icrc:
        value ^= 0x00ff00ff
    struct.pack_into("<I", out, end - 4, value)
    if src.v6:
        l3off = _l3_offset(out)
        struct.pack_into(">H", out, l3off + 46, _udp6_checksum(bytes(out), l3off))
    return bytes(out)


def syndrome_ack(credits=CREDITS_INVALID):
    return AETH_ACK | credits


def syndrome_nak(code):
    return AETH_NAK | code


def syndrome_rnr(timer_code):
    return AETH_RNR_NAK | timer_code


# ---- Parsing (for the converter and self-checks) ----

class Parsed:
    """Fields of a RoCE v2 frame, or of an ordinary IPv4 frame (roce False)."""
    pass


def parse(data):
    p = Parsed()
    p.frame = data
    p.roce = False
    p.dst_mac, p.src_mac = data[0:6], data[6:12]
    l3 = _l3_offset(data)
    etype = struct.unpack_from(">H", data, l3 - 2)[0]
    p.l3 = l3
    if etype == 0x0800:
        ihl = (data[l3] & 0xf) * 4
        p.tos, p.ttl = data[l3 + 1], data[l3 + 8]
        p.ip_id = struct.unpack_from(">H", data, l3 + 4)[0]
        p.proto = data[l3 + 9]
        p.src_ip = str(ipaddress.IPv4Address(data[l3 + 12:l3 + 16]))
        p.dst_ip = str(ipaddress.IPv4Address(data[l3 + 16:l3 + 20]))
        l4 = l3 + ihl
        end = l3 + struct.unpack_from(">H", data, l3 + 2)[0]
    elif etype == 0x86dd:
        p.proto = data[l3 + 6]
        p.ttl = data[l3 + 7]
        p.tos = (struct.unpack_from(">I", data, l3)[0] >> 20) & 0xff
        p.src_ip = str(ipaddress.IPv6Address(data[l3 + 8:l3 + 24]))
        p.dst_ip = str(ipaddress.IPv6Address(data[l3 + 24:l3 + 40]))
        l4 = l3 + 40
        end = l4 + struct.unpack_from(">H", data, l3 + 4)[0]
    else:
        return p
    p.l4 = l4
    p.ip_end = end
    if p.proto == 6:
        thl = (data[l4 + 12] >> 4) * 4
        p.tcp_sport, p.tcp_dport = struct.unpack_from(">HH", data, l4)
        p.tcp_payload = data[l4 + thl:end]
        return p
    if p.proto != 17:
        return p
    p.sport, p.dport = struct.unpack_from(">HH", data, l4)
    if p.dport != ROCE_PORT:
        return p
    b = l4 + 8
    p.roce = True
    p.opcode = data[b]
    p.se = bool(data[b + 1] & 0x80)
    p.mig = bool(data[b + 1] & 0x40)
    p.pad = (data[b + 1] >> 4) & 3
    p.tver = data[b + 1] & 0xf
    p.pkey = struct.unpack_from(">H", data, b + 2)[0]
    p.resv8a = data[b + 4]
    p.dqpn = struct.unpack_from(">I", data, b + 4)[0] & 0xffffff
    apsn = struct.unpack_from(">I", data, b + 8)[0]
    p.ackreq = bool(apsn >> 31)
    p.psn = apsn & 0xffffff
    info = OP_INFO.get(p.opcode)
    p.name = info[0] if info else "UNKNOWN"
    off = b + 12
    p.reth = p.aeth = p.atomic = p.atomic_orig = p.imm = p.ieth = p.deth = p.feth = None
    p.xrceth = None
    p.ext_off = {}
    for h in (info[1] if info else ()):
        p.ext_off[h] = off
        if h == "xrceth":
            p.xrceth = struct.unpack_from(">I", data, off)[0] & 0xffffff
        elif h == "reth":
            p.reth = struct.unpack_from(">QII", data, off)
        elif h == "aeth":
            w = struct.unpack_from(">I", data, off)[0]
            p.aeth = (w >> 24, w & 0xffffff)
        elif h == "atomic":
            p.atomic = struct.unpack_from(">QIQQ", data, off)
        elif h == "atomicack":
            p.atomic_orig = struct.unpack_from(">Q", data, off)[0]
        elif h == "imm":
            p.imm = struct.unpack_from(">I", data, off)[0]
        elif h == "ieth":
            p.ieth = struct.unpack_from(">I", data, off)[0]
        elif h == "deth":
            q, s = struct.unpack_from(">II", data, off)
            p.deth = (q, s & 0xffffff)
        elif h == "feth":
            w = struct.unpack_from(">I", data, off)[0]
            p.feth = (w & 0xf, (w >> 4) & 3)
        off += _EXT_LEN[h]
    p.payload = data[off:end - 4 - p.pad]
    p.icrc_ok = icrc_ok(data)
    return p


# ---- pcap files ----

def write_pcap(path, records):
    """Classic pcap, microsecond timestamps, Ethernet; @records = [(t_us, bytes)]."""
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
        for t_us, data in records:
            f.write(struct.pack("<IIII", t_us // 1000000, t_us % 1000000,
                                len(data), len(data)))
            f.write(data)


def read_pcap(path):
    """[(t_us, bytes)] of a classic pcap file (either byte order, us or ns)."""
    with open(path, "rb") as f:
        blob = f.read()
    magic = struct.unpack_from("<I", blob, 0)[0]
    if magic in (0xa1b2c3d4, 0xa1b23c4d):
        endian = "<"
    else:
        endian = ">"
        magic = struct.unpack_from(">I", blob, 0)[0]
    nano = magic == 0xa1b23c4d
    out = []
    off = 24
    while off + 16 <= len(blob):
        sec, frac, caplen, _ = struct.unpack_from(endian + "IIII", blob, off)
        off += 16
        t_us = sec * 1000000 + (frac // 1000 if nano else frac)
        out.append((t_us, blob[off:off + caplen]))
        off += caplen
    return out


# ---- Memory patterns shared with the fixture format ----

def pattern(seed, length, start=0):
    """Bytes of the fixture format's pattern:SEED (docs/conformance.md)."""
    return bytes(((seed * 31 + i * 7 + (i >> 8) * 13) & 0xff)
                 for i in range(start, start + length))
