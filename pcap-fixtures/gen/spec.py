#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Synthetic conformance fixtures: what IBA requires, packet by packet.

Every expected packet below is written from the specification (sections
cited per fixture), built with scapy (roce.py); nothing here runs or
imports uroce.  `spec.py OUTDIR` writes NAME.fixture, NAME.in.pcap and
NAME.out.pcap for every fixture into OUTDIR (pcap-fixtures/spec/).

Conventions used by all fixtures:
  uroce is 10.0.0.1 (QPN 0x0011ab), the peer 10.0.0.2 (QPN 0x0022cd).
  Responder fixtures: the peer's requests start at PSN 0x100000; inputs
  arrive 1 ms apart and each expected response carries the timestamp of
  the input that causes it (same window, docs/conformance.md).
  Requester fixtures: work requests are posted at time 0; uroce's first
  PSN is 0x200000.  MSNs count completed request messages (IBA 9.7;
  an RDMA READ counts when its responses start, C9-148).
  XRC responder fixtures: uroce's QP is an XRC target whose XRC SRQ, the
  run's first, is number 1 (XRC_SRQN); its receives are posted there.
"""

import sys

import roce
from fixture import ACCESS_ALL, Fixture
from roce import OP, psn_add, syndrome_ack, syndrome_nak, syndrome_rnr

L = roce.Host("02:00:00:00:00:01", "10.0.0.1")       # uroce
P = roce.Host("02:00:00:00:00:02", "10.0.0.2")       # the peer
L6 = roce.Host("02:00:00:00:00:01", "fd00::1")
P6 = roce.Host("02:00:00:00:00:02", "fd00::2")
LQ, PQ = 0x0011ab, 0x0022cd
RQ_PSN = 0x100000         # first PSN the peer sends
SQ_PSN = 0x200000         # first PSN uroce sends
BUF_VA, BUF_RKEY = 0x7f5a00010000, 0x1a2b3c4d
BUF2_VA, BUF2_RKEY = 0x7f5a00020000, 0x5e6f7081
REMOTE_VA, REMOTE_RKEY = 0x55aa00001000, 0x00c0ffee
MTU = 1024
MIN_RNR = 14              # 1.28 ms (IBA table 45)
XRC_SRQN = 1              # the XRC SRQ of an XRC target fixture
QKEY = 0x11111111

FIXTURES = []


def fixture(fn):
    FIXTURES.append(fn)
    return fn


def data(seed, n):
    return roce.pattern(seed, n)


def t(k):
    """Time of the k-th input (k >= 1): k milliseconds."""
    return 1000 * k


class Side:
    """Frames between uroce (L) and the peer (P) for one QP pair."""

    def __init__(self, qp_type="RC", local=L, peer=P):
        self.prefix = qp_type + "_"
        self.local, self.peer = local, peer

    def to_uroce(self, op, psn, payload=b"", **kw):
        name = op if op == "CNP" else self.prefix + op
        return roce.frame(self.peer, self.local, OP[name], LQ, psn, payload,
                          sport=0xd1e5, **kw)

    def from_uroce(self, op, psn, payload=b"", **kw):
        name = op if op == "CNP" else self.prefix + op
        return roce.frame(self.local, self.peer, OP[name], PQ, psn, payload,
                          sport=0xc000, **kw)

    def ack(self, psn, msn):
        return self.from_uroce("ACK", psn, aeth=(syndrome_ack(), msn))

    def nak(self, psn, msn, code):
        return self.from_uroce("ACK", psn, aeth=(syndrome_nak(code), msn))

    def rnr_nak(self, psn, msn, timer=MIN_RNR):
        return self.from_uroce("ACK", psn, aeth=(syndrome_rnr(timer), msn))

    def peer_ack(self, psn, msn, syndrome=None):
        return self.to_uroce("ACK", psn, aeth=(syndrome_ack() if syndrome is None else syndrome, msn))


def responder(name, summary, spec, qp_type="RC", mtu=MTU, local=L, peer=P,
              buf_access=ACCESS_ALL, **qp):
    f = Fixture(name, summary, spec, "responder", local, [("peer", peer)])
    f.mr("buf", 16384, BUF_VA, BUF_RKEY, access=buf_access, init=("pattern", 1))
    attrs = dict(rq_psn=RQ_PSN, sq_psn=SQ_PSN, mtu=mtu)
    if qp_type in ("RC", "XRC_RECV"):
        attrs.update(min_rnr_timer=MIN_RNR, max_dest_rd_atomic=4)
    if qp_type == "XRC_RECV":
        attrs.update(srqn=XRC_SRQN)
    if qp_type == "UD":
        attrs = dict(qkey=QKEY, sq_psn=SQ_PSN)
    attrs.update(qp)
    f.qp("q", qp_type, LQ, PQ if qp_type != "UD" else 0, **attrs)
    return f, Side("XRC" if qp_type == "XRC_RECV" else qp_type, local, peer)


def requester(name, summary, spec, qp_type="RC", mtu=MTU, **qp):
    f = Fixture(name, summary, spec, "requester", L, [("peer", P)])
    f.mr("buf", 16384, BUF_VA, BUF_RKEY, init=("pattern", 2))
    attrs = dict(rq_psn=RQ_PSN, sq_psn=SQ_PSN, mtu=mtu)
    if qp_type == "RC":
        attrs.update(timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=4)
    if qp_type == "UD":
        attrs = dict(qkey=QKEY, sq_psn=SQ_PSN)
    attrs.update(qp)
    f.qp("q", qp_type, LQ, PQ if qp_type != "UD" else 0, **attrs)
    return f, Side(qp_type)


def segments(payload, mtu=MTU):
    return [payload[i:i + mtu] for i in range(0, len(payload), mtu)] or [b""]


# =====================================================================
# RC responder: sends
# =====================================================================

@fixture
def rc_send_only():
    f, s = responder("rc_send_only", "RC SEND Only lands in the posted receive buffer and is acknowledged",
                     "IBA 9.4 (SEND), 9.7 (ACK carries the request's PSN), ch. 10 (completion)")
    f.post_recv("q", 1, [("buf", 0x100, 256)])
    msg = data(50, 64)
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, msg, ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 1, opcode="RECV", byte_len=64)
    f.mem("buf", 0x100, msg)
    return f


@fixture
def rc_send_only_imm():
    f, s = responder("rc_send_only_imm", "RC SEND Only with Immediate: data, immediate in the completion",
                     "IBA 9.4 (SEND with immediate), 9.3 (ImmDt), ch. 10 (immediate data in the completion)")
    f.post_recv("q", 7, [("buf", 0, 128)])
    msg = data(51, 100)
    f.recv(t(1), s.to_uroce("SEND_ONLY_IMM", RQ_PSN, msg, imm=0xa1b2c3d4, ackreq=True, se=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 7, opcode="RECV", byte_len=100, flags="IMM", imm=0xa1b2c3d4)
    f.mem("buf", 0, msg)
    return f


@fixture
def rc_send_first_middle_last():
    f, s = responder("rc_send_first_middle_last",
                     "RC SEND First/Middle/Last of 2600 bytes over path MTU 1024, scattered over two SGEs",
                     "IBA 9.4 (SEND), 9.7 (opcode sequence, ACK on AckReq)")
    f.post_recv("q", 3, [("buf", 0x40, 1000), ("buf", 0x2000, 4000)])
    msg = data(52, 2600)
    f.recv(t(1), s.to_uroce("SEND_FIRST", RQ_PSN, msg[:1024]))
    f.recv(t(2), s.to_uroce("SEND_MIDDLE", psn_add(RQ_PSN, 1), msg[1024:2048]))
    f.recv(t(3), s.to_uroce("SEND_LAST", psn_add(RQ_PSN, 2), msg[2048:], ackreq=True))
    f.send(t(3), s.ack(psn_add(RQ_PSN, 2), 1))
    f.cqe("q", "recv", 3, opcode="RECV", byte_len=2600)
    f.mem("buf", 0x40, msg[:1000])
    f.mem("buf", 0x2000, msg[1000:])
    return f


@fixture
def rc_send_last_imm():
    f, s = responder("rc_send_last_imm", "RC SEND First + Last with Immediate",
                     "IBA 9.4 (SEND with immediate), 9.3 (ImmDt), 9.7 (opcode sequence)")
    f.post_recv("q", 4, [("buf", 0, 4096)])
    msg = data(53, 1500)
    f.recv(t(1), s.to_uroce("SEND_FIRST", RQ_PSN, msg[:1024]))
    f.recv(t(2), s.to_uroce("SEND_LAST_IMM", psn_add(RQ_PSN, 1), msg[1024:], imm=0x01020304, ackreq=True))
    f.send(t(2), s.ack(psn_add(RQ_PSN, 1), 1))
    f.cqe("q", "recv", 4, opcode="RECV", byte_len=1500, flags="IMM", imm=0x01020304)
    f.mem("buf", 0, msg)
    return f


@fixture
def rc_send_only_inv():
    f, s = responder("rc_send_only_inv",
                     "RC SEND Only with Invalidate invalidates the named rkey; a later access with it fails",
                     "IBA 9.4 (SEND with invalidate), 9.3 (IETH), ch. 10 (invalidated R_Key in the completion), "
                     "9.7 (NAK Remote Access Error for the invalidated key)")
    f.mr("buf2", 4096, BUF2_VA, BUF2_RKEY, init=("pattern", 9))
    f.comment("uroce has no memory windows; remote invalidation applies to its MRs (issue 3).")
    f.post_recv("q", 5, [("buf", 0, 64)])
    msg = data(54, 32)
    f.recv(t(1), s.to_uroce("SEND_ONLY_INV", RQ_PSN, msg, ieth=BUF2_RKEY, ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 5, opcode="RECV", byte_len=32, flags="INV", invalidated_rkey=BUF2_RKEY)
    f.mem("buf", 0, msg)
    # The key no longer works: an RDMA WRITE with it is a remote access error.
    f.recv(t(2), s.to_uroce("WRITE_ONLY", psn_add(RQ_PSN, 1), data(55, 16),
                            reth=(BUF2_VA, BUF2_RKEY, 16), ackreq=True))
    f.send(t(2), s.nak(psn_add(RQ_PSN, 1), 1, roce.NAK_REM_ACCESS))
    f.state("q", "ERR")
    f.event("q", "QP_ACCESS_ERR")
    return f


@fixture
def rc_send_last_inv():
    f, s = responder("rc_send_last_inv", "RC SEND First + Last with Invalidate",
                     "IBA 9.4 (SEND with invalidate), 9.3 (IETH), ch. 10 (invalidated R_Key in the completion)")
    f.mr("buf2", 4096, BUF2_VA, BUF2_RKEY)
    f.post_recv("q", 6, [("buf", 0, 2048)])
    msg = data(56, 1100)
    f.recv(t(1), s.to_uroce("SEND_FIRST", RQ_PSN, msg[:1024]))
    f.recv(t(2), s.to_uroce("SEND_LAST_INV", psn_add(RQ_PSN, 1), msg[1024:], ieth=BUF2_RKEY, ackreq=True))
    f.send(t(2), s.ack(psn_add(RQ_PSN, 1), 1))
    f.cqe("q", "recv", 6, opcode="RECV", byte_len=1100, flags="INV", invalidated_rkey=BUF2_RKEY)
    f.mem("buf", 0, msg)
    return f


# =====================================================================
# RC responder: RDMA WRITE
# =====================================================================

@fixture
def rc_write_only():
    f, s = responder("rc_write_only", "RC RDMA WRITE Only: data placed at the RETH address, ACK",
                     "IBA 9.4 (RDMA WRITE), 9.3 (RETH), 9.7 (ACK carries the request's PSN)")
    msg = data(60, 64)
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, msg, reth=(BUF_VA + 0x100, BUF_RKEY, 64), ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.mem("buf", 0x100, msg)
    return f


@fixture
def rc_write_first_middle_last():
    f, s = responder("rc_write_first_middle_last", "RC RDMA WRITE First/Middle/Middle/Last of 3500 bytes",
                     "IBA 9.4 (RDMA WRITE), 9.7 (opcode sequence, ACK on AckReq)")
    msg = data(61, 3500)
    va = BUF_VA + 0x1003
    segs = segments(msg)
    f.recv(t(1), s.to_uroce("WRITE_FIRST", RQ_PSN, segs[0], reth=(va, BUF_RKEY, len(msg))))
    f.recv(t(2), s.to_uroce("WRITE_MIDDLE", psn_add(RQ_PSN, 1), segs[1]))
    f.recv(t(3), s.to_uroce("WRITE_MIDDLE", psn_add(RQ_PSN, 2), segs[2]))
    f.recv(t(4), s.to_uroce("WRITE_LAST", psn_add(RQ_PSN, 3), segs[3], ackreq=True))
    f.send(t(4), s.ack(psn_add(RQ_PSN, 3), 1))
    f.mem("buf", 0x1003, msg)
    return f


@fixture
def rc_write_only_imm():
    f, s = responder("rc_write_only_imm",
                     "RC RDMA WRITE Only with Immediate consumes a receive WQE (no data in it)",
                     "IBA 9.4 (RDMA WRITE with immediate consumes a receive WQE), ch. 10 (byte_len = DMA length)")
    f.post_recv("q", 9, [("buf", 0x3000, 16)])
    msg = data(62, 200)
    f.recv(t(1), s.to_uroce("WRITE_ONLY_IMM", RQ_PSN, msg, reth=(BUF_VA + 0x10, BUF_RKEY, 200),
                            imm=0xfeedf00d, ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 9, opcode="RECV_RDMA_WITH_IMM", byte_len=200, flags="IMM", imm=0xfeedf00d)
    f.mem("buf", 0x10, msg)
    return f


@fixture
def rc_write_last_imm():
    f, s = responder("rc_write_last_imm", "RC RDMA WRITE First + Last with Immediate",
                     "IBA 9.4 (RDMA WRITE with immediate), 9.3 (ImmDt), ch. 10 (completion)")
    f.post_recv("q", 10, [("buf", 0x3000, 16)])
    msg = data(63, 1030)
    f.recv(t(1), s.to_uroce("WRITE_FIRST", RQ_PSN, msg[:1024], reth=(BUF_VA, BUF_RKEY, 1030)))
    f.recv(t(2), s.to_uroce("WRITE_LAST_IMM", psn_add(RQ_PSN, 1), msg[1024:], imm=0x00000042, ackreq=True))
    f.send(t(2), s.ack(psn_add(RQ_PSN, 1), 1))
    f.cqe("q", "recv", 10, opcode="RECV_RDMA_WITH_IMM", byte_len=1030, flags="IMM", imm=0x42)
    f.mem("buf", 0, msg)
    return f


@fixture
def rc_write_zero_length():
    f, s = responder("rc_write_zero_length",
                     "RC RDMA WRITE of 0 bytes: R_Key and VA are not checked, ACK, memory untouched",
                     "IBA 9.4 (a zero-length RDMA operation does not validate R_Key or VA)")
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, b"", reth=(0, 0, 0), ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    return f


# =====================================================================
# RC responder: RDMA READ
# =====================================================================

def read_responses(s, psn, payload, msn, mtu=MTU):
    """The response packets IBA 9.4 (RDMA READ) requires for a read of @payload."""
    segs = segments(payload, mtu)
    if len(segs) == 1:
        return [s.from_uroce("READ_RESP_ONLY", psn, segs[0], aeth=(syndrome_ack(), msn))]
    out = [s.from_uroce("READ_RESP_FIRST", psn, segs[0], aeth=(syndrome_ack(), msn))]
    for i, seg in enumerate(segs[1:-1], 1):
        out.append(s.from_uroce("READ_RESP_MIDDLE", psn_add(psn, i), seg))
    out.append(s.from_uroce("READ_RESP_LAST", psn_add(psn, len(segs) - 1), segs[-1],
                            aeth=(syndrome_ack(), msn)))
    return out


def buf_init(f, name="buf"):
    return bytes(f.baseline[name])


@fixture
def rc_read_zero_length():
    f, s = responder("rc_read_zero_length", "RC RDMA READ of 0 bytes: one Read Response Only without payload",
                     "IBA 9.4 (RDMA READ), C9-148 (MSN)")
    f.recv(t(1), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA, BUF_RKEY, 0), ackreq=True))
    for pk in read_responses(s, RQ_PSN, b"", 1):
        f.send(t(1), pk)
    return f


@fixture
def rc_read_one_packet():
    f, s = responder("rc_read_one_packet", "RC RDMA READ of 700 bytes: Read Response Only",
                     "IBA 9.4 (RDMA READ), table 38 (read response opcodes), C9-148 (MSN)")
    init = buf_init(f)
    f.recv(t(1), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA + 0x222, BUF_RKEY, 700), ackreq=True))
    for pk in read_responses(s, RQ_PSN, init[0x222:0x222 + 700], 1):
        f.send(t(1), pk)
    return f


@fixture
def rc_read_many_packets():
    f, s = responder("rc_read_many_packets",
                     "RC RDMA READ of 5000 bytes: First/Middle/Middle/Middle/Last; the read uses 5 PSNs",
                     "IBA 9.4 (RDMA READ: a read request consumes one PSN per response packet)")
    init = buf_init(f)
    f.recv(t(1), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA + 0x800, BUF_RKEY, 5000), ackreq=True))
    for pk in read_responses(s, RQ_PSN, init[0x800:0x800 + 5000], 1):
        f.send(t(1), pk)
    # The next request carries PSN + 5.
    msg = data(64, 8)
    f.recv(t(2), s.to_uroce("WRITE_ONLY", psn_add(RQ_PSN, 5), msg, reth=(BUF_VA, BUF_RKEY, 8), ackreq=True))
    f.send(t(2), s.ack(psn_add(RQ_PSN, 5), 2))
    f.mem("buf", 0, msg)
    return f


# =====================================================================
# RC responder: atomics (memory holds 64-bit little-endian values)
# =====================================================================

def le64(v):
    return (v & (2**64 - 1)).to_bytes(8, "little")


@fixture
def rc_cmp_swap_hit():
    f, s = responder("rc_cmp_swap_hit", "RC Compare&Swap whose compare value matches: swapped, original returned",
                     "IBA 9.4 (atomic operations), 9.3 (AtomicETH, AtomicAckETH)")
    init = buf_init(f)
    old = int.from_bytes(init[0x40:0x48], "little")
    f.recv(t(1), s.to_uroce("CMP_SWAP", RQ_PSN, atomic=(BUF_VA + 0x40, BUF_RKEY, 0x1122334455667788, old),
                            ackreq=True))
    f.send(t(1), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    f.mem("buf", 0x40, le64(0x1122334455667788))
    return f


@fixture
def rc_cmp_swap_miss():
    f, s = responder("rc_cmp_swap_miss", "RC Compare&Swap whose compare value differs: memory unchanged, original returned",
                     "IBA 9.4 (atomic operations), 9.3 (AtomicETH, AtomicAckETH)")
    init = buf_init(f)
    old = int.from_bytes(init[0x48:0x50], "little")
    f.recv(t(1), s.to_uroce("CMP_SWAP", RQ_PSN, atomic=(BUF_VA + 0x48, BUF_RKEY, 0x1122334455667788, old ^ 1),
                            ackreq=True))
    f.send(t(1), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    return f


@fixture
def rc_fetch_add():
    f, s = responder("rc_fetch_add", "RC Fetch&Add (wrapping at 2^64): sum stored, original returned",
                     "IBA 9.4 (atomic operations), 9.3 (AtomicETH, AtomicAckETH)")
    init = buf_init(f)
    old = int.from_bytes(init[0x80:0x88], "little")
    add = 0xffffffffffffff00
    f.recv(t(1), s.to_uroce("FETCH_ADD", RQ_PSN, atomic=(BUF_VA + 0x80, BUF_RKEY, add, 0), ackreq=True))
    f.send(t(1), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    f.mem("buf", 0x80, le64(old + add))
    return f


# =====================================================================
# RC responder: IBA 1.5 ATOMIC WRITE and FLUSH (answered by an empty RDMA READ
# Response Only, as the kernel's rxe does)
# =====================================================================

FLUSH_GLOBAL, FLUSH_PERSISTENT = 1, 2          # FETH placement type bits
FLUSH_RANGE, FLUSH_MR = 0, 1                   # FETH selectivity level


@fixture
def rc_atomic_write():
    f, s = responder("rc_atomic_write", "RC ATOMIC WRITE: its 8 bytes stored at the aligned va, an empty READ Response Only answers",
                     "IBA 1.5 (RDMA ATOMIC WRITE); rxe_resp.c atomic_write_reply(), send_read_response_ack()")
    value = data(120, 8)
    f.recv(t(1), s.to_uroce("ATOMIC_WRITE", RQ_PSN, value, reth=(BUF_VA + 0x200, BUF_RKEY, 8), ackreq=True))
    f.send(t(1), s.from_uroce("READ_RESP_ONLY", RQ_PSN, aeth=(syndrome_ack(), 1)))
    f.mem("buf", 0x200, value)
    return f


@fixture
def rc_atomic_write_duplicate():
    f, s = responder("rc_atomic_write_duplicate",
                     "RC ATOMIC WRITE sent twice: answered twice, executed once (a CPU store between them stays)",
                     "IBA 1.5 (ATOMIC WRITE uses a responder resource), 9.7 (duplicates are not executed again)")
    value = data(121, 8)
    req = s.to_uroce("ATOMIC_WRITE", RQ_PSN, value, reth=(BUF_VA + 0x208, BUF_RKEY, 8), ackreq=True)
    f.recv(t(1), req)
    f.send(t(1), s.from_uroce("READ_RESP_ONLY", RQ_PSN, aeth=(syndrome_ack(), 1)))
    f.poke("buf", 0x208, le64(0x5a5a5a5a5a5a5a5a), t(1) + 500)
    f.recv(t(2), req)
    f.send(t(2), s.from_uroce("READ_RESP_ONLY", RQ_PSN, aeth=(syndrome_ack(), 1)))
    return f


@fixture
def rc_nak_atomic_write_no_remote_write():
    f, s = responder("rc_nak_atomic_write_no_remote_write",
                     "RC ATOMIC WRITE into an MR registered without REMOTE_WRITE: NAK Remote Access Error, memory untouched",
                     "IBA 1.5 (ATOMIC WRITE needs remote write access, as rxe's check_rkey()), 9.9 (class C)",
                     buf_access="LOCAL_WRITE,REMOTE_READ,REMOTE_ATOMIC")
    f.recv(t(1), s.to_uroce("ATOMIC_WRITE", RQ_PSN, data(122, 8), reth=(BUF_VA + 0x200, BUF_RKEY, 8),
                            ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_REM_ACCESS))
    f.state("q", "ERR")
    f.event("q", "QP_ACCESS_ERR")
    return f


@fixture
def rc_flush_global():
    f, s = responder("rc_flush_global", "RC FLUSH of a range and of the whole region (global visibility): each answered "
                     "by an empty READ Response Only",
                     "IBA 1.5 (RDMA FLUSH, FETH); rxe_resp.c process_flush()",
                     buf_access="LOCAL_WRITE,REMOTE_WRITE,FLUSH_GLOBAL", access="REMOTE_WRITE,FLUSH_GLOBAL")
    f.recv(t(1), s.to_uroce("FLUSH", RQ_PSN, feth=(FLUSH_GLOBAL, FLUSH_RANGE), reth=(BUF_VA + 0x100, BUF_RKEY, 0x400),
                            ackreq=True))
    f.send(t(1), s.from_uroce("READ_RESP_ONLY", RQ_PSN, aeth=(syndrome_ack(), 1)))
    f.recv(t(2), s.to_uroce("FLUSH", psn_add(RQ_PSN, 1), feth=(FLUSH_GLOBAL, FLUSH_MR), reth=(BUF_VA, BUF_RKEY, 0),
                            ackreq=True))
    f.send(t(2), s.from_uroce("READ_RESP_ONLY", psn_add(RQ_PSN, 1), aeth=(syndrome_ack(), 2)))
    return f


@fixture
def rc_nak_flush_no_flush_right():
    f, s = responder("rc_nak_flush_no_flush_right",
                     "RC FLUSH (global) of an MR registered without FLUSH_GLOBAL: NAK Remote Access Error",
                     "IBA 1.5 (the placement type must be one the region allows, as rxe's check_rkey())",
                     access="REMOTE_WRITE,FLUSH_GLOBAL")
    f.recv(t(1), s.to_uroce("FLUSH", RQ_PSN, feth=(FLUSH_GLOBAL, FLUSH_RANGE), reth=(BUF_VA, BUF_RKEY, 64),
                            ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_REM_ACCESS))
    f.state("q", "ERR")
    f.event("q", "QP_ACCESS_ERR")
    return f


# =====================================================================
# RC responder: PSN wrap, duplicates, sequence errors, RNR
# =====================================================================

@fixture
def rc_psn_wraparound():
    f, s = responder("rc_psn_wraparound", "RC requests across PSN 0xffffff -> 0: write, then a read that wraps",
                     "IBA 9.7 (PSNs are 24-bit and wrap modulo 2^24)", rq_psn=0xfffffe)
    msg = data(65, 2100)
    f.recv(t(1), s.to_uroce("WRITE_FIRST", 0xfffffe, msg[:1024], reth=(BUF_VA, BUF_RKEY, 2100)))
    f.recv(t(2), s.to_uroce("WRITE_MIDDLE", 0xffffff, msg[1024:2048]))
    f.recv(t(3), s.to_uroce("WRITE_LAST", 0x000000, msg[2048:], ackreq=True))
    f.send(t(3), s.ack(0x000000, 1))
    f.mem("buf", 0, msg)
    # A three-packet read at PSN 1 uses 1, 2, 3; then a send at 4.
    init = buf_init(f)
    f.recv(t(4), s.to_uroce("READ_REQUEST", 1, reth=(BUF_VA + 0x1000, BUF_RKEY, 3000), ackreq=True))
    for pk in read_responses(s, 1, init[0x1000:0x1000 + 3000], 2):
        f.send(t(4), pk)
    f.post_recv("q", 1, [("buf", 0x3000, 64)])
    f.recv(t(5), s.to_uroce("SEND_ONLY", 4, data(66, 8), ackreq=True))
    f.send(t(5), s.ack(4, 3))
    f.cqe("q", "recv", 1, opcode="RECV", byte_len=8)
    f.mem("buf", 0x3000, data(66, 8))
    return f


@fixture
def rc_read_psn_wraparound():
    f, s = responder("rc_read_psn_wraparound", "RC RDMA READ whose responses wrap: PSNs 0xffffff, 0, 1",
                     "IBA 9.7 (PSN arithmetic modulo 2^24)", rq_psn=0xffffff)
    init = buf_init(f)
    f.recv(t(1), s.to_uroce("READ_REQUEST", 0xffffff, reth=(BUF_VA, BUF_RKEY, 2500), ackreq=True))
    for pk in read_responses(s, 0xffffff, init[:2500], 1):
        f.send(t(1), pk)
    f.recv(t(2), s.to_uroce("WRITE_ONLY", 2, data(67, 4), reth=(BUF_VA + 0x3000, BUF_RKEY, 4), ackreq=True))
    f.send(t(2), s.ack(2, 2))
    f.mem("buf", 0x3000, data(67, 4))
    return f


@fixture
def rc_duplicate_write():
    f, s = responder("rc_duplicate_write",
                     "RC duplicate RDMA WRITE: acknowledged again, not executed again (the duplicate carries other bytes)",
                     "IBA 9.7 (duplicate requests), C9-105")
    f.comment("The duplicate's payload differs on purpose: memory must keep the first one.")
    first, other = data(70, 32), data(71, 32)
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, first, reth=(BUF_VA, BUF_RKEY, 32), ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.recv(t(2), s.to_uroce("WRITE_ONLY", RQ_PSN, other, reth=(BUF_VA, BUF_RKEY, 32), ackreq=True))
    f.send(t(2), s.ack(RQ_PSN, 1))
    f.mem("buf", 0, first)
    f.counter("duplicates", 1)
    return f


@fixture
def rc_duplicate_send():
    f, s = responder("rc_duplicate_send",
                     "RC duplicate SEND: acknowledged again, no second receive WQE consumed",
                     "IBA 9.7 (duplicate requests), C9-105 (duplicate SEND/WRITE: acknowledge, do not execute)")
    f.post_recv("q", 1, [("buf", 0, 64)])
    f.post_recv("q", 2, [("buf", 0x100, 64)])
    msg = data(72, 40)
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, msg, ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.recv(t(2), s.to_uroce("SEND_ONLY", RQ_PSN, data(73, 40), ackreq=True))
    f.send(t(2), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 1, opcode="RECV", byte_len=40)
    f.mem("buf", 0, msg)
    return f


@fixture
def rc_duplicate_read():
    f, s = responder("rc_duplicate_read",
                     "RC duplicate RDMA READ is executed again: the responses carry the memory as it is now",
                     "IBA 9.7 (duplicate RDMA READ requests are executed again)")
    init = buf_init(f)
    f.recv(t(1), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA + 0x400, BUF_RKEY, 2048), ackreq=True))
    for pk in read_responses(s, RQ_PSN, init[0x400:0x400 + 2048], 1):
        f.send(t(1), pk)
    # The host changes the buffer; the duplicate read must see the new bytes.
    f.poke("buf", 0x400, data(74, 16), 1500)
    now = buf_init(f)
    f.recv(t(2), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA + 0x400, BUF_RKEY, 2048), ackreq=True))
    for pk in read_responses(s, RQ_PSN, now[0x400:0x400 + 2048], 1):
        f.send(t(2), pk)
    f.counter("duplicates", 1)
    return f


@fixture
def rc_duplicate_read_tail():
    f, s = responder("rc_duplicate_read_tail",
                     "RC re-requested read tail: a duplicate READ at the 2nd response PSN for the remaining bytes",
                     "IBA 9.7 (a retried RDMA READ re-reads only what was not answered, so that every duplicate "
                     "response has the PSN and payload of the original: Vol 1 Rel 1.4 p. 282); the retried "
                     "request is a request of its own, answered First..Last from its PSN")
    f.comment("Same PSNs and payload as the original Middle/Last, but the response to the new request")
    f.comment("starts with First (rxe's requester accepts this restart; rxe's responder replays Middle).")
    init = buf_init(f)
    f.recv(t(1), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA, BUF_RKEY, 3072), ackreq=True))
    for pk in read_responses(s, RQ_PSN, init[:3072], 1):
        f.send(t(1), pk)
    f.recv(t(2), s.to_uroce("READ_REQUEST", psn_add(RQ_PSN, 1), reth=(BUF_VA + 1024, BUF_RKEY, 2048),
                            ackreq=True))
    for pk in read_responses(s, psn_add(RQ_PSN, 1), init[1024:3072], 1):
        f.send(t(2), pk)
    f.counter("duplicates", 1)
    return f


@fixture
def rc_duplicate_cmp_swap():
    f, s = responder("rc_duplicate_cmp_swap",
                     "RC duplicate Compare&Swap answered from the replay cache: same original, memory changed once",
                     "IBA 9.4 (atomics), 9.7 (duplicate atomics return the saved result, never re-execute)")
    init = buf_init(f)
    old = int.from_bytes(init[0x100:0x108], "little")
    req = s.to_uroce("CMP_SWAP", RQ_PSN, atomic=(BUF_VA + 0x100, BUF_RKEY, 0x0123456789abcdef, old), ackreq=True)
    f.recv(t(1), req)
    f.send(t(1), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    f.recv(t(2), req)
    f.send(t(2), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    f.mem("buf", 0x100, le64(0x0123456789abcdef))
    return f


@fixture
def rc_duplicate_fetch_add():
    f, s = responder("rc_duplicate_fetch_add",
                     "RC duplicate Fetch&Add answered from the replay cache: memory incremented once",
                     "IBA 9.4 (atomics), 9.7 (duplicate atomics are answered from saved results)")
    init = buf_init(f)
    old = int.from_bytes(init[0x108:0x110], "little")
    req = s.to_uroce("FETCH_ADD", RQ_PSN, atomic=(BUF_VA + 0x108, BUF_RKEY, 5, 0), ackreq=True)
    f.recv(t(1), req)
    f.send(t(1), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    f.recv(t(2), req)
    f.send(t(2), s.from_uroce("ATOMIC_ACK", RQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=old))
    f.mem("buf", 0x108, le64(old + 5))
    return f


@fixture
def rc_out_of_sequence():
    f, s = responder("rc_out_of_sequence",
                     "RC PSN gap: one PSN sequence error NAK (expected PSN), silence until the gap is filled",
                     "IBA 9.7 (PSN sequence error NAK: carries the expected PSN, sent once until the expected PSN arrives)")
    w = [data(80 + i, 16) for i in range(3)]

    def wr(i):
        return s.to_uroce("WRITE_ONLY", psn_add(RQ_PSN, i), w[i], reth=(BUF_VA + 16 * i, BUF_RKEY, 16), ackreq=True)
    f.recv(t(1), wr(1))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_PSN_SEQ))
    f.recv(t(2), wr(2))
    f.recv(t(3), wr(0))
    f.send(t(3), s.ack(RQ_PSN, 1))
    f.recv(t(4), wr(1))
    f.send(t(4), s.ack(psn_add(RQ_PSN, 1), 2))
    f.recv(t(5), wr(2))
    f.send(t(5), s.ack(psn_add(RQ_PSN, 2), 3))
    for i in range(3):
        f.mem("buf", 16 * i, w[i])
    f.counter("seq_naks_tx", 1)
    return f


@fixture
def rc_rnr_nak_and_retry():
    f, s = responder("rc_rnr_nak_and_retry",
                     "RC SEND without a receive WQE: RNR NAK with min_rnr_timer; the retry after post_recv succeeds",
                     "IBA 9.7 (RNR NAK, timer field = min_rnr_timer, table 45; the requester retries)")
    msg = data(85, 48)
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, msg, ackreq=True))
    f.send(t(1), s.rnr_nak(RQ_PSN, 0))
    f.post_recv("q", 11, [("buf", 0x500, 64)], t_us=1500)
    f.recv(t(3), s.to_uroce("SEND_ONLY", RQ_PSN, msg, ackreq=True))
    f.send(t(3), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 11, opcode="RECV", byte_len=48)
    f.mem("buf", 0x500, msg)
    f.counter("rnr_naks_tx", 1)
    return f


# =====================================================================
# XRC responder: the target QP, its domain's SRQ named by the XRCETH
# =====================================================================

@fixture
def xrc_send_to_srq():
    f, s = responder("xrc_send_to_srq",
                     "XRC SEND Only naming the target's SRQ lands in that SRQ's WQE; an XRC ACK (no XRCETH) answers",
                     "IBA 1.2.1 XRC (XRCETH names the SRQ; responses carry none), 9.4 (SEND), 9.7 (ACK)",
                     qp_type="XRC_RECV")
    f.post_recv("q", 1, [("buf", 0x100, 256)])
    msg = data(200, 64)
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, msg, xrceth=XRC_SRQN, ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.cqe("q", "recv", 1, opcode="RECV", byte_len=64)
    f.mem("buf", 0x100, msg)
    return f


@fixture
def xrc_write_then_read():
    f, s = responder("xrc_write_then_read",
                     "XRC RDMA WRITE Only then RDMA READ of it through the target: ACK, then an XRC Read Response Only",
                     "IBA 1.2.1 XRC (requests carry an XRCETH, the R_Key is the SRQ's PD's), 9.4 (WRITE, READ), C9-148 (MSN)",
                     qp_type="XRC_RECV")
    msg = data(201, 96)
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, msg, xrceth=XRC_SRQN,
                            reth=(BUF_VA + 0x300, BUF_RKEY, 96), ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.recv(t(2), s.to_uroce("READ_REQUEST", psn_add(RQ_PSN, 1), xrceth=XRC_SRQN,
                            reth=(BUF_VA + 0x300, BUF_RKEY, 96), ackreq=True))
    for pk in read_responses(s, psn_add(RQ_PSN, 1), msg, 2):
        f.send(t(2), pk)
    f.mem("buf", 0x300, msg)
    return f


@fixture
def xrc_srq_not_in_domain():
    f, s = responder("xrc_srq_not_in_domain",
                     "XRC SEND naming an SRQ that is not of the target's domain: NAK Invalid Request, QP to Error",
                     "IBA 1.2.1 XRC (the XRCETH's SRQ must be of the target QP's XRC domain), 9.9 (class C), "
                     "ch. 11 (Invalid Request Local WQ Error event)",
                     qp_type="XRC_RECV")
    f.post_recv("q", 2, [("buf", 0, 256)])
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, data(202, 32), xrceth=0x7777, ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_INVALID_REQ))
    f.state("q", "ERR")
    f.event("q", "QP_REQ_ERR")
    f.counter("inv_req_naks_tx", 1)
    return f


# =====================================================================
# RC responder: NAK codes and access errors
# =====================================================================

@fixture
def rc_nak_invalid_request_sequence():
    f, s = responder("rc_nak_invalid_request_sequence",
                     "RC WRITE Middle without First: NAK Invalid Request, QP to Error",
                     "IBA 9.7 (opcode sequence check; NAK Invalid Request), 9.9 (class C: QP to Error), "
                     "ch. 11 (Invalid Request Local WQ Error event)")
    f.recv(t(1), s.to_uroce("WRITE_MIDDLE", RQ_PSN, data(90, 1024)))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_INVALID_REQ))
    f.recv(t(2), s.to_uroce("WRITE_ONLY", psn_add(RQ_PSN, 1), data(91, 4), reth=(BUF_VA, BUF_RKEY, 4), ackreq=True))
    f.state("q", "ERR")
    f.event("q", "QP_REQ_ERR")
    f.counter("inv_req_naks_tx", 1)
    return f


@fixture
def rc_nak_invalid_request_too_long():
    f, s = responder("rc_nak_invalid_request_too_long",
                     "RC SEND longer than the receive WQE: NAK Invalid Request, WQE completes with local length error",
                     "IBA 9.7 (NAK Invalid Request: message longer than the receive buffer), ch. 10 (Local Length Error), 9.9 (class C)")
    f.post_recv("q", 12, [("buf", 0, 64)])
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, data(92, 128), ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_INVALID_REQ))
    f.cqe("q", "recv", 12, status="LOC_LEN_ERR")
    f.state("q", "ERR")
    f.counter("inv_req_naks_tx", 1)
    f.ignore("mem.buf", "a WQE completed in error may hold partial data (IBA ch. 10: contents of a WQE completed in error are undefined)")
    return f


@fixture
def rc_nak_remote_access_deregistered():
    f, s = responder("rc_nak_remote_access_deregistered",
                     "RC RDMA WRITE with the rkey of a deregistered MR: NAK Remote Access Error",
                     "IBA 9.7 (NAK Remote Access Error), ch. 10 (a deregistered region's key is invalid), 9.9 (class C: QP to Error), ch. 11 (Local Access Violation WQ Error event)")
    f.mr("buf2", 4096, BUF2_VA, BUF2_RKEY)
    f.dereg("buf2")
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, data(93, 8), reth=(BUF2_VA, BUF2_RKEY, 8), ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_REM_ACCESS))
    f.state("q", "ERR")
    f.event("q", "QP_ACCESS_ERR")
    f.counter("rem_access_naks_tx", 1)
    return f


@fixture
def rc_nak_remote_access_read_beyond_mr():
    f, s = responder("rc_nak_remote_access_read_beyond_mr",
                     "RC RDMA READ that ends 1 byte past the MR: NAK Remote Access Error, nothing sent from memory",
                     "IBA 9.4 (RDMA READ), 9.7 (NAK Remote Access Error: VA + length outside the region)")
    f.recv(t(1), s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA + 16384 - 100, BUF_RKEY, 101), ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_REM_ACCESS))
    f.state("q", "ERR")
    f.event("q", "QP_ACCESS_ERR")
    return f


@fixture
def rc_nak_remote_access_no_remote_write():
    f, s = responder("rc_nak_remote_access_no_remote_write",
                     "RC RDMA WRITE into an MR registered without REMOTE_WRITE: NAK Remote Access Error, memory untouched",
                     "IBA 9.7 (NAK Remote Access Error), ch. 10 (memory region access rights), 9.9 (class C)",
                     buf_access="LOCAL_WRITE,REMOTE_READ")
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, data(94, 8), reth=(BUF_VA, BUF_RKEY, 8), ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_REM_ACCESS))
    f.state("q", "ERR")
    f.event("q", "QP_ACCESS_ERR")
    return f


@fixture
def rc_nak_misaligned_atomic():
    f, s = responder("rc_nak_misaligned_atomic",
                     "RC Fetch&Add at an address that is not 8-byte aligned: NAK Invalid Request, memory untouched",
                     "IBA 9.4 (atomics on naturally aligned 64-bit words), 9.9 (misaligned atomic: class C, "
                     "NAK Invalid Request; rxe maps it the same way)")
    f.recv(t(1), s.to_uroce("FETCH_ADD", RQ_PSN, atomic=(BUF_VA + 0x44, BUF_RKEY, 1, 0), ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_INVALID_REQ))
    f.state("q", "ERR")
    f.event("q", "QP_REQ_ERR")
    return f


@fixture
def rc_nak_remote_operational():
    f, s = responder("rc_nak_remote_operational",
                     "RC SEND into a receive WQE whose buffer lacks LOCAL_WRITE: NAK Remote Operational Error",
                     "IBA 9.7 (NAK Remote Operational Error: a responder-local failure), ch. 10 (Local Protection Error), 9.9 (class A)")
    f.mr("ro", 4096, BUF2_VA, BUF2_RKEY, access="REMOTE_READ")
    f.post_recv("q", 13, [("ro", 0, 64)])
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, data(95, 32), ackreq=True))
    f.send(t(1), s.nak(RQ_PSN, 0, roce.NAK_REM_OP))
    f.cqe("q", "recv", 13, status="LOC_PROT_ERR")
    f.state("q", "ERR")
    f.counter("rem_op_naks_tx", 1)
    return f


# =====================================================================
# Malformed frames: silently dropped and counted (the QP is unaffected)
# =====================================================================

def drop_fixture(name, summary, spec, bad, reason):
    f, s = responder(name, summary, spec)
    f.recv(t(1), bad(s))
    good = data(101, 24)
    f.recv(t(2), s.to_uroce("WRITE_ONLY", RQ_PSN, good, reth=(BUF_VA, BUF_RKEY, 24), ackreq=True))
    f.send(t(2), s.ack(RQ_PSN, 1))
    f.mem("buf", 0, good)
    f.counter("drops." + reason, 1)
    f.comment("The dropped frame writes other bytes to the same place: memory must hold only the good frame's.")
    return f


def _bad_write(s, **kw):
    return s.to_uroce("WRITE_ONLY", RQ_PSN, data(100, 24), reth=(BUF_VA, BUF_RKEY, 24), ackreq=True, **kw)


@fixture
def drop_bad_icrc():
    return drop_fixture("drop_bad_icrc", "Frame with a wrong ICRC is dropped silently and counted",
                        "IBA Annex A17.3.3 (ICRC), 9.6 (a packet failing a check is silently dropped)",
                        lambda s: _bad_write(s, bad_icrc=True), "BAD_ICRC")


@fixture
def drop_truncated():
    def bad(s):
        return _bad_write(s)[:-12]
    return drop_fixture("drop_truncated", "Frame cut short (IP length larger than the frame) is dropped and counted",
                        "IBA 9.6 (packet header validation: malformed packets are silently dropped), Annex A17", bad, "IP_LEN")


@fixture
def drop_wrong_udp_port():
    return drop_fixture("drop_wrong_udp_port", "UDP destination port 4792 is not RoCE v2: dropped and counted",
                        "IBA Annex A17.2.1 (UDP destination port 4791)",
                        lambda s: _bad_write(s, dport=4792), "NOT_ROCE_PORT")


@fixture
def drop_bad_bth_version():
    return drop_fixture("drop_bad_bth_version", "BTH TVer 1 is dropped silently and counted",
                        "IBA 9.2 (TVer is 0), 9.6 (header version check: silent drop)",
                        lambda s: _bad_write(s, tver=1), "BAD_TVER")


@fixture
def drop_bad_pad_count():
    def bad(s):
        return s.to_uroce("READ_REQUEST", RQ_PSN, reth=(BUF_VA, BUF_RKEY, 24), ackreq=True, pad=2)
    f = drop_fixture("drop_bad_pad_count", "A Read Request (no payload allowed) with PadCnt 2 is dropped and counted",
                     "IBA 9.2 (PadCnt), 9.6 (length and pad consistency: silent drop)", bad, "BAD_PAD")
    return f


@fixture
def ecn_ce_sends_cnp():
    f, s = responder("ecn_ce_sends_cnp",
                     "CE-marked RoCE packet: processed normally and a CNP goes back to the sending QP",
                     "IBA Annex A17.9 (ECN; A17.9.3 CNP: opcode 0x81, BECN set, DestQP = the sender's QP, PSN 0, 16 reserved bytes)")
    msg = data(102, 16)
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, msg, reth=(BUF_VA, BUF_RKEY, 16), ackreq=True, tos=0x03))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.send(t(1), s.from_uroce("CNP", 0, becn=True))
    f.mem("buf", 0, msg)
    f.counter("ecn_ce_rx", 1)
    f.counter("cnps_tx", 1)
    return f


@fixture
def rc_write_ipv6():
    f, s = responder("rc_write_ipv6", "RC WRITE Only and READ over IPv6 (ICRC with the IPv6 pseudo-header, UDP checksum)",
                     "IBA Annex A17.3.3 (ICRC over IPv6)", local=L6, peer=P6)
    msg = data(103, 40)
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, msg, reth=(BUF_VA, BUF_RKEY, 40), ackreq=True))
    f.send(t(1), s.ack(RQ_PSN, 1))
    f.mem("buf", 0, msg)
    init = buf_init(f)
    f.recv(t(2), s.to_uroce("READ_REQUEST", psn_add(RQ_PSN, 1), reth=(BUF_VA + 0x200, BUF_RKEY, 33), ackreq=True))
    for pk in read_responses(s, psn_add(RQ_PSN, 1), init[0x200:0x200 + 33], 2):
        f.send(t(2), pk)
    return f


# =====================================================================
# UC and UD responder
# =====================================================================

@fixture
def uc_send_all_opcodes():
    f, s = responder("uc_send_all_opcodes", "UC SEND Only, Only+Imm, First/Middle/Last, First/Last+Imm: no ACKs",
                     "IBA 9.8 (UC: no acknowledgements), 9.4 (SEND)", qp_type="UC")
    for i in range(4):
        f.post_recv("q", 20 + i, [("buf", 0x1000 * i, 4096)])
    m = [data(110, 20), data(111, 30), data(112, 2500), data(113, 1300)]
    f.recv(t(1), s.to_uroce("SEND_ONLY", RQ_PSN, m[0]))
    f.recv(t(2), s.to_uroce("SEND_ONLY_IMM", psn_add(RQ_PSN, 1), m[1], imm=0x55))
    f.recv(t(3), s.to_uroce("SEND_FIRST", psn_add(RQ_PSN, 2), m[2][:1024]))
    f.recv(t(4), s.to_uroce("SEND_MIDDLE", psn_add(RQ_PSN, 3), m[2][1024:2048]))
    f.recv(t(5), s.to_uroce("SEND_LAST", psn_add(RQ_PSN, 4), m[2][2048:]))
    f.recv(t(6), s.to_uroce("SEND_FIRST", psn_add(RQ_PSN, 5), m[3][:1024]))
    f.recv(t(7), s.to_uroce("SEND_LAST_IMM", psn_add(RQ_PSN, 6), m[3][1024:], imm=0x66))
    f.cqe("q", "recv", 20, opcode="RECV", byte_len=20)
    f.cqe("q", "recv", 21, opcode="RECV", byte_len=30, flags="IMM", imm=0x55)
    f.cqe("q", "recv", 22, opcode="RECV", byte_len=2500)
    f.cqe("q", "recv", 23, opcode="RECV", byte_len=1300, flags="IMM", imm=0x66)
    for i in range(4):
        f.mem("buf", 0x1000 * i, m[i])
    return f


@fixture
def uc_write_all_opcodes():
    f, s = responder("uc_write_all_opcodes", "UC RDMA WRITE Only, Only+Imm, First/Middle/Last, First/Last+Imm: no ACKs",
                     "IBA 9.8 (UC), 9.4 (RDMA WRITE)", qp_type="UC", access="REMOTE_WRITE")
    f.post_recv("q", 30, [("buf", 0x3f00, 8)])
    f.post_recv("q", 31, [("buf", 0x3f00, 8)])
    m = [data(120, 20), data(121, 30), data(122, 2100), data(123, 1100)]
    va = [BUF_VA, BUF_VA + 0x100, BUF_VA + 0x1000, BUF_VA + 0x2000]
    f.recv(t(1), s.to_uroce("WRITE_ONLY", RQ_PSN, m[0], reth=(va[0], BUF_RKEY, 20)))
    f.recv(t(2), s.to_uroce("WRITE_ONLY_IMM", psn_add(RQ_PSN, 1), m[1], reth=(va[1], BUF_RKEY, 30), imm=0x77))
    f.recv(t(3), s.to_uroce("WRITE_FIRST", psn_add(RQ_PSN, 2), m[2][:1024], reth=(va[2], BUF_RKEY, 2100)))
    f.recv(t(4), s.to_uroce("WRITE_MIDDLE", psn_add(RQ_PSN, 3), m[2][1024:2048]))
    f.recv(t(5), s.to_uroce("WRITE_LAST", psn_add(RQ_PSN, 4), m[2][2048:]))
    f.recv(t(6), s.to_uroce("WRITE_FIRST", psn_add(RQ_PSN, 5), m[3][:1024], reth=(va[3], BUF_RKEY, 1100)))
    f.recv(t(7), s.to_uroce("WRITE_LAST_IMM", psn_add(RQ_PSN, 6), m[3][1024:], imm=0x88))
    f.cqe("q", "recv", 30, opcode="RECV_RDMA_WITH_IMM", byte_len=30, flags="IMM", imm=0x77)
    f.cqe("q", "recv", 31, opcode="RECV_RDMA_WITH_IMM", byte_len=1100, flags="IMM", imm=0x88)
    for i in range(4):
        f.mem("buf", va[i] - BUF_VA, m[i])
    return f


@fixture
def uc_gap_drops_message():
    f, s = responder("uc_gap_drops_message",
                     "UC SEND with a lost Middle: the message is dropped silently, the WQE serves the next message",
                     "IBA 9.8 (UC: a PSN gap discards the message in progress, no NAK)", qp_type="UC")
    f.post_recv("q", 40, [("buf", 0, 4096)])
    lost = data(130, 3000)
    f.recv(t(1), s.to_uroce("SEND_FIRST", RQ_PSN, lost[:1024]))
    f.recv(t(2), s.to_uroce("SEND_LAST", psn_add(RQ_PSN, 2), lost[2048:]))
    good = data(131, 100)
    f.recv(t(3), s.to_uroce("SEND_ONLY", psn_add(RQ_PSN, 3), good))
    f.cqe("q", "recv", 40, opcode="RECV", byte_len=100)
    f.mem("buf", 0, good)
    f.ignore("mem.buf", "bytes of the discarded message may have been placed before the gap was seen "
                        "(IBA ch. 10: buffer contents of a WQE not completed successfully are undefined)")
    return f


def grh_bytes(frame):
    """The 40 bytes a UD receive buffer starts with (IBA ch. 11, UD receive: a 40-byte GRH precedes the data; RoCEv2 over IPv4 puts the
    IPv4 header in its last 20 bytes, Annex A17):
    IPv6: the IPv6 header; IPv4: 20 bytes of zeros then the IPv4 header."""
    p = roce.parse(frame)
    ip = frame[p.l3:p.l3 + (40 if ":" in p.src_ip else 20)]
    return ip if len(ip) == 40 else b"\0" * 20 + ip


@fixture
def ud_send_only():
    f, s = responder("ud_send_only", "UD SEND Only and Only+Imm over IPv4: GRH (20 zero + IPv4 header) then data",
                     "IBA 9.8 (UD), 9.3 (DETH), Annex A17 (GRH of RoCEv2 over IPv4)", qp_type="UD")
    f.post_recv("q", 50, [("buf", 0, 40), ("buf", 0x100, 256)])
    f.post_recv("q", 51, [("buf", 0x1000, 1024)])
    a, b = data(140, 200), data(141, 64)
    fa = s.to_uroce("SEND_ONLY", 0x000123, a, deth=(QKEY, 0x000777))
    fb = s.to_uroce("SEND_ONLY_IMM", 0x000124, b, deth=(QKEY, 0x000777), imm=0x12345678, se=True)
    f.recv(t(1), fa)
    f.recv(t(2), fb)
    f.cqe("q", "recv", 50, opcode="RECV", byte_len=240, flags="GRH", src_qp=0x000777)
    f.cqe("q", "recv", 51, opcode="RECV", byte_len=104, flags="GRH,IMM", imm=0x12345678, src_qp=0x000777)
    f.mem("buf", 0, grh_bytes(fa))
    f.mem("buf", 0x100, a)
    f.mem("buf", 0x1000, grh_bytes(fb) + b)
    return f


@fixture
def ud_send_ipv6():
    f, s = responder("ud_send_ipv6", "UD SEND Only over IPv6: the GRH is the IPv6 header",
                     "IBA 9.8 (UD), Annex A17 (GRH of RoCEv2 over IPv6)", qp_type="UD", local=L6, peer=P6)
    f.post_recv("q", 52, [("buf", 0, 1024)])
    a = data(142, 90)
    fa = s.to_uroce("SEND_ONLY", 0x000200, a, deth=(QKEY, 0x000888))
    f.recv(t(1), fa)
    f.cqe("q", "recv", 52, opcode="RECV", byte_len=130, flags="GRH", src_qp=0x000888)
    f.mem("buf", 0, grh_bytes(fa) + a)
    return f


@fixture
def ud_qkey_mismatch():
    f, s = responder("ud_qkey_mismatch", "UD SEND with a wrong Q_Key is dropped silently; the next one is received",
                     "IBA 9.6 (UD Q_Key check: silent drop)", qp_type="UD")
    f.post_recv("q", 53, [("buf", 0, 1024)])
    a = data(143, 50)
    f.recv(t(1), s.to_uroce("SEND_ONLY", 0x000300, data(144, 50), deth=(QKEY ^ 1, 0x000999)))
    fa = s.to_uroce("SEND_ONLY", 0x000301, a, deth=(QKEY, 0x000999))
    f.recv(t(2), fa)
    f.cqe("q", "recv", 53, opcode="RECV", byte_len=90, flags="GRH", src_qp=0x000999)
    f.mem("buf", 0, grh_bytes(fa) + a)
    return f


# =====================================================================
# RC requester
# =====================================================================

def sends_for(s, kind, psn, payload, mtu=MTU, reth=None, imm=None, ieth=None, se=False, ackreq_last=True):
    """The packets IBA 9.4 segmentation makes of one message."""
    segs = segments(payload, mtu)
    out = []
    last = len(segs) - 1
    for i, seg in enumerate(segs):
        if last == 0:
            pos = "ONLY"
        elif i == 0:
            pos = "FIRST"
        elif i == last:
            pos = "LAST"
        else:
            pos = "MIDDLE"
        op = "%s_%s" % (kind, pos)
        kw = {}
        if kind == "WRITE" and pos in ("FIRST", "ONLY"):
            kw["reth"] = reth
        if pos in ("LAST", "ONLY"):
            if imm is not None:
                op += "_IMM"
                kw["imm"] = imm
            elif ieth is not None:
                op += "_INV"
                kw["ieth"] = ieth
            kw["se"] = se
            kw["ackreq"] = ackreq_last
        out.append(s.from_uroce(op, psn_add(psn, i), seg, **kw))
    return out


def buf2(f, off, n):
    return bytes(f.baseline["buf"][off:off + n])


@fixture
def req_send_only():
    f, s = requester("req_send_only", "Requester: SEND of 64 bytes is one SEND Only with AckReq; the ACK completes it",
                     "IBA 9.4 (SEND), 9.7 (the ACK completes the WR), ch. 10")
    f.post_send("q", 1, "SEND", [("buf", 0x10, 64)])
    for pk in sends_for(s, "SEND", SQ_PSN, buf2(f, 0x10, 64)):
        f.send(0, pk)
    f.recv(t(1), s.peer_ack(SQ_PSN, 1))
    f.cqe("q", "send", 1, opcode="SEND")
    return f


@fixture
def req_send_segmented():
    f, s = requester("req_send_segmented",
                     "Requester: SEND of 3000 bytes from two SGEs is First/Middle/Last; SEND with Immediate is Only+Imm",
                     "IBA 9.4 (SEND: segmentation by path MTU), 9.7 (opcode sequence)")
    f.post_send("q", 2, "SEND", [("buf", 0, 1000), ("buf", 0x2000, 2000)], flags="SIGNALED,SOLICITED")
    f.post_send("q", 3, "SEND_WITH_IMM", [("buf", 0x3000, 10)], imm=0xcafe0001)
    pk = sends_for(s, "SEND", SQ_PSN, buf2(f, 0, 1000) + buf2(f, 0x2000, 2000), se=True)
    pk += sends_for(s, "SEND", psn_add(SQ_PSN, 3), buf2(f, 0x3000, 10), imm=0xcafe0001)
    for p in pk:
        f.send(0, p)
    f.recv(t(1), s.peer_ack(psn_add(SQ_PSN, 3), 2))
    f.cqe("q", "send", 2, opcode="SEND")
    f.cqe("q", "send", 3, opcode="SEND")
    return f


@fixture
def req_send_imm_inv_segmented():
    f, s = requester("req_send_imm_inv_segmented",
                     "Requester: SEND with Immediate of 1500 bytes (First + Last+Imm), SEND with Invalidate Only and First + Last+Inv",
                     "IBA 9.4 (SEND with immediate, SEND with invalidate), 9.3 (ImmDt, IETH)")
    f.post_send("q", 4, "SEND_WITH_IMM", [("buf", 0x100, 1500)], imm=0x0badf00d)
    f.post_send("q", 5, "SEND_WITH_INV", [("buf", 0x800, 20)], invalidate=0x33445566)
    f.post_send("q", 6, "SEND_WITH_INV", [("buf", 0x1000, 1200)], invalidate=0x778899aa)
    pk = sends_for(s, "SEND", SQ_PSN, buf2(f, 0x100, 1500), imm=0x0badf00d)
    pk += sends_for(s, "SEND", psn_add(SQ_PSN, 2), buf2(f, 0x800, 20), ieth=0x33445566)
    pk += sends_for(s, "SEND", psn_add(SQ_PSN, 3), buf2(f, 0x1000, 1200), ieth=0x778899aa)
    for p in pk:
        f.send(0, p)
    f.recv(t(1), s.peer_ack(psn_add(SQ_PSN, 4), 3))
    for w in (4, 5, 6):
        f.cqe("q", "send", w, opcode="SEND")
    return f


@fixture
def req_write():
    f, s = requester("req_write",
                     "Requester: RDMA WRITE Only, First/Middle/Last (RETH on First), with Immediate Only and First + Last+Imm",
                     "IBA 9.4 (RDMA WRITE), 9.3 (RETH, ImmDt)")
    f.post_send("q", 7, "RDMA_WRITE", [("buf", 0, 100)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    f.post_send("q", 8, "RDMA_WRITE", [("buf", 0x100, 2500)], remote=REMOTE_VA + 0x1000, rkey=REMOTE_RKEY)
    f.post_send("q", 9, "RDMA_WRITE_WITH_IMM", [("buf", 0x1000, 16)], remote=REMOTE_VA, rkey=REMOTE_RKEY, imm=0x99)
    f.post_send("q", 10, "RDMA_WRITE_WITH_IMM", [("buf", 0x2000, 1100)], remote=REMOTE_VA + 0x4000,
                rkey=REMOTE_RKEY, imm=0x98)
    pk = sends_for(s, "WRITE", SQ_PSN, buf2(f, 0, 100), reth=(REMOTE_VA, REMOTE_RKEY, 100))
    pk += sends_for(s, "WRITE", psn_add(SQ_PSN, 1), buf2(f, 0x100, 2500), reth=(REMOTE_VA + 0x1000, REMOTE_RKEY, 2500))
    pk += sends_for(s, "WRITE", psn_add(SQ_PSN, 4), buf2(f, 0x1000, 16), reth=(REMOTE_VA, REMOTE_RKEY, 16), imm=0x99)
    pk += sends_for(s, "WRITE", psn_add(SQ_PSN, 5), buf2(f, 0x2000, 1100),
                    reth=(REMOTE_VA + 0x4000, REMOTE_RKEY, 1100), imm=0x98)
    for p in pk:
        f.send(0, p)
    f.recv(t(1), s.peer_ack(psn_add(SQ_PSN, 6), 4))
    f.cqe("q", "send", 7, opcode="RDMA_WRITE")
    f.cqe("q", "send", 8, opcode="RDMA_WRITE")
    f.cqe("q", "send", 9, opcode="RDMA_WRITE")
    f.cqe("q", "send", 10, opcode="RDMA_WRITE")
    return f


@fixture
def req_read():
    f, s = requester("req_read",
                     "Requester: RDMA READ of 0, 300 and 2500 bytes; responses Only/First/Middle/Last land in the SGEs",
                     "IBA 9.4 (RDMA READ: one PSN per response packet; the responses complete the WR)")
    f.post_send("q", 11, "RDMA_READ", [], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    f.post_send("q", 12, "RDMA_READ", [("buf", 0x10, 300)], remote=REMOTE_VA + 0x100, rkey=REMOTE_RKEY)
    f.post_send("q", 13, "RDMA_READ", [("buf", 0x1000, 1000), ("buf", 0x2000, 1500)],
                remote=REMOTE_VA + 0x2000, rkey=REMOTE_RKEY)
    f.send(0, s.from_uroce("READ_REQUEST", SQ_PSN, reth=(REMOTE_VA, REMOTE_RKEY, 0), ackreq=True))
    f.send(0, s.from_uroce("READ_REQUEST", psn_add(SQ_PSN, 1), reth=(REMOTE_VA + 0x100, REMOTE_RKEY, 300), ackreq=True))
    f.send(0, s.from_uroce("READ_REQUEST", psn_add(SQ_PSN, 2), reth=(REMOTE_VA + 0x2000, REMOTE_RKEY, 2500),
                           ackreq=True))
    r1, r2 = data(150, 300), data(151, 2500)
    f.recv(t(1), s.to_uroce("READ_RESP_ONLY", SQ_PSN, b"", aeth=(syndrome_ack(), 1)))
    f.recv(t(2), s.to_uroce("READ_RESP_ONLY", psn_add(SQ_PSN, 1), r1, aeth=(syndrome_ack(), 2)))
    f.recv(t(3), s.to_uroce("READ_RESP_FIRST", psn_add(SQ_PSN, 2), r2[:1024], aeth=(syndrome_ack(), 3)))
    f.recv(t(4), s.to_uroce("READ_RESP_MIDDLE", psn_add(SQ_PSN, 3), r2[1024:2048]))
    f.recv(t(5), s.to_uroce("READ_RESP_LAST", psn_add(SQ_PSN, 4), r2[2048:], aeth=(syndrome_ack(), 3)))
    for w in (11, 12, 13):
        f.cqe("q", "send", w, opcode="RDMA_READ")
    f.mem("buf", 0x10, r1)
    f.mem("buf", 0x1000, r2[:1000])
    f.mem("buf", 0x2000, r2[1000:])
    return f


@fixture
def req_atomics():
    f, s = requester("req_atomics",
                     "Requester: Compare&Swap and Fetch&Add; the original value lands in the local SGE (host byte order)",
                     "IBA 9.4 (atomic operations), 9.3 (AtomicAckETH), ch. 10 (completions)")
    f.post_send("q", 14, "ATOMIC_CMP_AND_SWP", [("buf", 0x40, 8)], remote=REMOTE_VA + 8, rkey=REMOTE_RKEY,
                compare=0x1111, swap=0x2222)
    f.post_send("q", 15, "ATOMIC_FETCH_AND_ADD", [("buf", 0x48, 8)], remote=REMOTE_VA + 16, rkey=REMOTE_RKEY,
                add=0x10)
    f.send(0, s.from_uroce("CMP_SWAP", SQ_PSN, atomic=(REMOTE_VA + 8, REMOTE_RKEY, 0x2222, 0x1111), ackreq=True))
    f.send(0, s.from_uroce("FETCH_ADD", psn_add(SQ_PSN, 1), atomic=(REMOTE_VA + 16, REMOTE_RKEY, 0x10, 0), ackreq=True))
    f.recv(t(1), s.to_uroce("ATOMIC_ACK", SQ_PSN, aeth=(syndrome_ack(), 1), atomic_orig=0x1111))
    f.recv(t(2), s.to_uroce("ATOMIC_ACK", psn_add(SQ_PSN, 1), aeth=(syndrome_ack(), 2), atomic_orig=0x0102030405060708))
    f.cqe("q", "send", 14, opcode="COMP_SWAP")
    f.cqe("q", "send", 15, opcode="FETCH_ADD")
    f.mem("buf", 0x40, le64(0x1111))
    f.mem("buf", 0x48, le64(0x0102030405060708))
    return f


@fixture
def req_atomic_write():
    f, s = requester("req_atomic_write",
                     "Requester: ATOMIC WRITE sends RETH (length 8) and the 8 bytes; an empty READ Response Only completes it",
                     "IBA 1.5 (RDMA ATOMIC WRITE), as rxe_req.c sends it; ch. 10 (completion IBV_WC_ATOMIC_WRITE)")
    init = buf_init(f)
    f.post_send("q", 16, "ATOMIC_WRITE", [("buf", 0x50, 8)], remote=REMOTE_VA + 24, rkey=REMOTE_RKEY)
    f.send(0, s.from_uroce("ATOMIC_WRITE", SQ_PSN, init[0x50:0x58], reth=(REMOTE_VA + 24, REMOTE_RKEY, 8)))
    f.recv(t(1), s.to_uroce("READ_RESP_ONLY", SQ_PSN, aeth=(syndrome_ack(), 1)))
    f.cqe("q", "send", 16, opcode="ATOMIC_WRITE")
    return f


@fixture
def req_psn_wraparound():
    f, s = requester("req_psn_wraparound", "Requester: a 3-packet WRITE starting at PSN 0xfffffe uses 0xfffffe, 0xffffff, 0",
                     "IBA 9.7 (PSN arithmetic modulo 2^24)", sq_psn=0xfffffe)
    f.post_send("q", 16, "RDMA_WRITE", [("buf", 0, 2100)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    for p in sends_for(s, "WRITE", 0xfffffe, buf2(f, 0, 2100), reth=(REMOTE_VA, REMOTE_RKEY, 2100)):
        f.send(0, p)
    f.recv(t(1), s.peer_ack(0, 1))
    f.cqe("q", "send", 16, opcode="RDMA_WRITE")
    return f


@fixture
def req_implicit_ack():
    f, s = requester("req_implicit_ack",
                     "Requester: one ACK for the last PSN completes all earlier messages (coalesced ACK)",
                     "IBA 9.7 (coalesced ACKs: an ACK acknowledges every earlier PSN)")
    f.post_send("q", 17, "RDMA_WRITE", [("buf", 0, 8)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    f.post_send("q", 18, "SEND", [("buf", 8, 8)])
    f.post_send("q", 19, "RDMA_WRITE", [("buf", 16, 8)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    pk = sends_for(s, "WRITE", SQ_PSN, buf2(f, 0, 8), reth=(REMOTE_VA, REMOTE_RKEY, 8))
    pk += sends_for(s, "SEND", psn_add(SQ_PSN, 1), buf2(f, 8, 8))
    pk += sends_for(s, "WRITE", psn_add(SQ_PSN, 2), buf2(f, 16, 8), reth=(REMOTE_VA, REMOTE_RKEY, 8))
    for p in pk:
        f.send(0, p)
    f.recv(t(1), s.peer_ack(psn_add(SQ_PSN, 2), 3))
    for w in (17, 18, 19):
        f.cqe("q", "send", w, opcode="RDMA_WRITE" if w != 18 else "SEND")
    return f


@fixture
def req_go_back_n_seq_nak():
    f, s = requester("req_go_back_n_seq_nak",
                     "Requester Go-Back-N: a PSN sequence error NAK for PSN n resends n.. unchanged (Middle stays Middle)",
                     "IBA 9.7 (NAK PSN sequence error: it acknowledges PSN n-1; resend from n)")
    f.post_send("q", 20, "RDMA_WRITE", [("buf", 0, 4000)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    pk = sends_for(s, "WRITE", SQ_PSN, buf2(f, 0, 4000), reth=(REMOTE_VA, REMOTE_RKEY, 4000))
    for p in pk:
        f.send(0, p)
    f.recv(t(1), s.peer_ack(psn_add(SQ_PSN, 1), 0, syndrome=syndrome_nak(roce.NAK_PSN_SEQ)))
    for p in pk[1:]:
        f.send(t(1), p)
    f.recv(t(2), s.peer_ack(psn_add(SQ_PSN, 3), 1))
    f.cqe("q", "send", 20, opcode="RDMA_WRITE")
    f.counter("seq_naks_rx", 1)
    return f


@fixture
def req_go_back_n_timeout():
    timeout = 10
    T = roce.ack_timeout_us(timeout)
    f, s = requester("req_go_back_n_timeout",
                     "Requester Go-Back-N on the local ACK timeout: resend from the oldest unacknowledged PSN",
                     "IBA 9.7 (requester: transport timer 4.096 us * 2^timeout, resend from the first "
                     "unacknowledged packet)", timeout=timeout, retry_cnt=3)
    f.comment("Timeout 4.096us*2^10 = %.0f us: the resend may not come earlier, and must come before the ACK "
              "at 1.5 timeouts (a second timeout would resend again)." % T)
    f.post_send("q", 21, "RDMA_WRITE", [("buf", 0, 3000)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    pk = sends_for(s, "WRITE", SQ_PSN, buf2(f, 0, 3000), reth=(REMOTE_VA, REMOTE_RKEY, 3000))
    for p in pk:
        f.send(0, p)
    f.recv(100, s.peer_ack(SQ_PSN, 0))
    for p in pk[1:]:
        f.send(int(T), p)
    f.recv(int(1.5 * T), s.peer_ack(psn_add(SQ_PSN, 2), 1))
    f.cqe("q", "send", 21, opcode="RDMA_WRITE")
    f.counter("timeouts", 1)
    return f


@fixture
def req_retry_exhausted():
    timeout = 10
    T = roce.ack_timeout_us(timeout)
    f, s = requester("req_retry_exhausted",
                     "Requester: no answer at all; retry_cnt=2 resends, then RETRY_EXC_ERR, QP to Error, the next WR flushed",
                     "IBA 9.7 (requester: retry_cnt), ch. 10 (completion status Transport Retry Counter Exceeded; flushed WRs complete in order)",
                     timeout=timeout, retry_cnt=2)
    f.end_us = int(40 * T)
    f.post_send("q", 22, "SEND", [("buf", 0, 16)])
    f.post_send("q", 23, "SEND", [("buf", 16, 16)])
    a = sends_for(s, "SEND", SQ_PSN, buf2(f, 0, 16))[0]
    b = sends_for(s, "SEND", psn_add(SQ_PSN, 1), buf2(f, 16, 16))[0]
    f.send(0, a)
    f.send(0, b)
    for k in (1, 2):
        f.send(int(k * T), a)
        f.send(int(k * T), b)
    f.cqe("q", "send", 22, status="RETRY_EXC_ERR")
    f.cqe("q", "send", 23, status="WR_FLUSH_ERR")
    f.state("q", "ERR")
    return f


@fixture
def req_rnr_retry():
    rnr = 14
    f, s = requester("req_rnr_retry",
                     "Requester: RNR NAK, wait the AETH's RNR timer (1.28 ms), resend, ACK completes",
                     "IBA 9.7 (RNR NAK; the requester waits the table 45 timer of the AETH, then resends)")
    f.post_send("q", 24, "SEND", [("buf", 0, 16)])
    a = sends_for(s, "SEND", SQ_PSN, buf2(f, 0, 16))[0]
    f.send(0, a)
    f.recv(10, s.to_uroce("ACK", SQ_PSN, aeth=(syndrome_rnr(rnr), 0)))
    f.send(10 + roce.RNR_TIMER_US[rnr], a)
    f.recv(10 + 8 * roce.RNR_TIMER_US[rnr], s.peer_ack(SQ_PSN, 1))
    f.cqe("q", "send", 24, opcode="SEND")
    f.counter("rnr_naks_rx", 1)
    return f


@fixture
def req_rnr_retry_exhausted():
    rnr = 14
    f, s = requester("req_rnr_retry_exhausted",
                     "Requester: rnr_retry=1; the second RNR NAK ends the WR with RNR_RETRY_EXC_ERR",
                     "IBA 9.7 (requester: rnr_retry), ch. 10 (completion status RNR Retry Counter Exceeded)", rnr_retry=1)
    f.post_send("q", 25, "SEND", [("buf", 0, 16)])
    a = sends_for(s, "SEND", SQ_PSN, buf2(f, 0, 16))[0]
    f.send(0, a)
    nak = s.to_uroce("ACK", SQ_PSN, aeth=(syndrome_rnr(rnr), 0))
    f.recv(10, nak)
    f.send(10 + roce.RNR_TIMER_US[rnr], a)
    f.recv(10 + 8 * roce.RNR_TIMER_US[rnr], nak)
    f.cqe("q", "send", 25, status="RNR_RETRY_EXC_ERR")
    f.state("q", "ERR")
    return f


def req_nak(name, code, status, spec):
    f, s = requester(name, "Requester: NAK %s ends the WR with %s and moves the QP to Error" % (
        {1: "Invalid Request", 2: "Remote Access Error", 3: "Remote Operational Error"}[code], status), spec)
    f.post_send("q", 26, "RDMA_WRITE", [("buf", 0, 8)], remote=REMOTE_VA, rkey=REMOTE_RKEY)
    f.send(0, sends_for(s, "WRITE", SQ_PSN, buf2(f, 0, 8), reth=(REMOTE_VA, REMOTE_RKEY, 8))[0])
    f.recv(t(1), s.peer_ack(SQ_PSN, 0, syndrome=syndrome_nak(code)))
    f.cqe("q", "send", 26, status=status)
    f.state("q", "ERR")
    return f


@fixture
def req_nak_invalid_request():
    return req_nak("req_nak_invalid_request", roce.NAK_INVALID_REQ, "REM_INV_REQ_ERR",
                   "IBA 9.7 (NAK codes, table 44), ch. 10 (completion status Remote Invalid Request Error)")


@fixture
def req_nak_remote_access():
    return req_nak("req_nak_remote_access", roce.NAK_REM_ACCESS, "REM_ACCESS_ERR",
                   "IBA 9.7 (NAK codes, table 44), ch. 10 (completion status Remote Access Error)")


@fixture
def req_nak_remote_operational():
    return req_nak("req_nak_remote_operational", roce.NAK_REM_OP, "REM_OP_ERR",
                   "IBA 9.7 (NAK codes, table 44), ch. 10 (completion status Remote Operation Error)")


@fixture
def req_cnp_received():
    f, s = requester("req_cnp_received", "Requester: an incoming CNP is counted and changes nothing else",
                     "IBA Annex A17.9 (congestion control: the reaction point receives CNPs)")
    f.recv(t(1), s.to_uroce("CNP", 0, becn=True))
    f.counter("cnps_rx", 1)
    return f


@fixture
def req_uc_send_write():
    f, s = requester("req_uc_send_write", "UC requester: SEND and RDMA WRITE complete once sent (no ACK on UC)",
                     "IBA 9.8 (UC: a WR completes once sent), ch. 10", qp_type="UC")
    f.post_send("q", 27, "SEND", [("buf", 0, 2000)])
    f.post_send("q", 28, "RDMA_WRITE_WITH_IMM", [("buf", 0x1000, 50)], remote=REMOTE_VA, rkey=REMOTE_RKEY, imm=0x31)
    pk = sends_for(s, "SEND", SQ_PSN, buf2(f, 0, 2000), ackreq_last=False)
    pk += sends_for(s, "WRITE", psn_add(SQ_PSN, 2), buf2(f, 0x1000, 50), reth=(REMOTE_VA, REMOTE_RKEY, 50),
                    imm=0x31, ackreq_last=False)
    for p in pk:
        f.send(0, p)
    f.cqe("q", "send", 27, opcode="SEND")
    f.cqe("q", "send", 28, opcode="RDMA_WRITE")
    return f


@fixture
def req_ud_send():
    f, s = requester("req_ud_send", "UD requester: SEND Only and Only+Imm with DETH (Q_Key, source QPN)",
                     "IBA 9.8 (UD), 9.3 (DETH)", qp_type="UD")
    f.post_send("q", 29, "SEND", [("buf", 0, 100)], ah="peer", remote_qpn=0x000444, remote_qkey=0x22222222)
    f.post_send("q", 30, "SEND_WITH_IMM", [("buf", 0x100, 8)], ah="peer", remote_qpn=0x000444,
                remote_qkey=0x22222222, imm=0x10203040)
    f.send(0, roce.frame(L, P, OP["UD_SEND_ONLY"], 0x000444, SQ_PSN, buf2(f, 0, 100),
                         deth=(0x22222222, LQ), sport=0xc000))
    f.send(0, roce.frame(L, P, OP["UD_SEND_ONLY_IMM"], 0x000444, psn_add(SQ_PSN, 1), buf2(f, 0x100, 8),
                         deth=(0x22222222, LQ), imm=0x10203040, sport=0xc000))
    f.cqe("q", "send", 29, opcode="SEND")
    f.cqe("q", "send", 30, opcode="SEND")
    return f


def main():
    if len(sys.argv) != 2:
        sys.stderr.write("usage: spec.py OUTDIR\n")
        return 2
    names = set()
    for fn in FIXTURES:
        f = fn()
        assert f.name not in names, f.name
        names.add(f.name)
        f.write(sys.argv[1], "spec.py")
    return 0


if __name__ == "__main__":
    sys.exit(main())
