#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Turn a real capture of two kernel Soft-RoCE peers into a conformance fixture.

    capture.py trim FULL.pcap N TRIMMED.pcap
        Keep perftest's TCP exchange, the first N RoCE packets the client
        sends, and the server's packets that answer them (in their original
        order and timestamps).  Run once by hand; the result is committed.
    capture.py fixture TRIMMED.pcap NAME OUTDIR
        Write OUTDIR/NAME.{fixture,in.pcap,out.pcap}: uroce takes the
        server's place.  The client's RoCE packets are the input; what the
        kernel's server sent is the expected output, compared in stream
        mode (docs/conformance.md).  The server's own requests (latency
        tests are ping-pong) become work requests posted at the times the
        kernel posted them, so uroce's requester is compared too.

The QP and MR set-up comes from perftest's exchange on TCP port 18515
(QPN, PSN, rkey, virtual address, GID of each side).  Memory contents
come from the capture: read responses and atomic originals tell what the
server's buffer held.  Every inference is checked against the kernel's
packets, and the converter stops with a message if they disagree.
"""

import re
import sys

import roce
from fixture import Fixture

EXCHANGE_PORT = 18515
_KEY_RE = re.compile(rb"([0-9a-f]{4}):([0-9a-f]{4}):([0-9a-f]{6}):([0-9a-f]{6}):"
                     rb"([0-9a-f]{8}):([0-9a-f]{16}):((?:[0-9a-f]{2}:){15}[0-9a-f]{2})")


def die(msg):
    sys.stderr.write("capture.py: %s\n" % msg)
    sys.exit(1)


def psn_cmp(a, b):
    d = (a - b) & 0xffffff
    return 0 if d == 0 else (1 if d < 0x800000 else -1)


class Side:
    pass


def exchange(recs):
    """QP parameters of both sides from perftest's first message each way."""
    sides = {}
    for _, data in recs:
        p = roce.parse(data)
        if getattr(p, "proto", None) != 6 or EXCHANGE_PORT not in (p.tcp_sport, p.tcp_dport):
            continue
        m = _KEY_RE.search(p.tcp_payload)
        if not m:
            continue
        role = "server" if p.tcp_sport == EXCHANGE_PORT else "client"
        if role in sides:
            continue
        s = Side()
        s.out_reads = int(m.group(2), 16)
        s.qpn = int(m.group(3), 16)
        s.psn = int(m.group(4), 16)
        s.rkey = int(m.group(5), 16)
        s.va = int(m.group(6), 16)
        s.gid = bytes(int(x, 16) for x in m.group(7).split(b":"))
        s.ip = p.src_ip
        s.mac = ":".join("%02x" % b for b in p.src_mac)
        sides[role] = s
    if set(sides) != {"client", "server"}:
        die("no perftest exchange on TCP port %d (need one message from each side)" % EXCHANGE_PORT)
    for s in sides.values():
        if s.gid[-4:] != roce.Host(s.mac, s.ip).addr.packed:
            die("GID %s does not match IP %s" % (s.gid.hex(), s.ip))
    return sides["client"], sides["server"]


def roce_packets(recs, client):
    out = []
    for i, (t, data) in enumerate(recs):
        p = roce.parse(data)
        if not p.roce:
            continue
        if not p.icrc_ok:
            die("frame %d: ICRC wrong in a real capture" % (i + 1))
        p.t = t
        p.index = i
        p.from_client = p.src_ip == client.ip
        out.append(p)
    return out


def is_request(p):
    low = p.opcode & 0x1f
    return p.opcode != roce.CNP and not (0x0d <= low <= 0x12)


def read_psns(length, mtu):
    return max(1, (length + mtu - 1) // mtu)


class Model:
    """The responder's expected PSN as IBA 9.7 defines it, to cut a capture
    and to find where a PSN sequence error NAK is due."""

    def __init__(self, psn, mtu):
        self.epsn = psn
        self.mtu = mtu
        self.nak_sent = False
        self.naks = []            # (input index, expected PSN)

    def feed(self, k, p):
        c = psn_cmp(p.psn, self.epsn)
        if c == 0:
            n = read_psns(p.reth[2], self.mtu) if p.name == "RC_READ_REQUEST" else 1
            self.epsn = roce.psn_add(self.epsn, n)
            self.nak_sent = False
        elif c > 0 and p.name.startswith("RC_") and not self.nak_sent:
            self.naks.append((k, self.epsn))
            self.nak_sent = True


def path_mtu(pkts):
    for p in pkts:
        if p.name.endswith(("_FIRST", "_MIDDLE")):
            return len(p.payload)
    return 1024


def client_requests(pkts):
    return [p for p in pkts if p.from_client and is_request(p)]


def kernel_answers(pkts, client, kept_requests, mtu):
    """The server's responder packets that answer @kept_requests, in order."""
    model = Model(client.psn, mtu)
    for k, p in enumerate(kept_requests):
        model.feed(k, p)
    last_acked = roce.psn_add(model.epsn, -1)
    naks = [psn for _, psn in model.naks]
    out = []
    for p in pkts:
        if p.from_client or is_request(p):
            continue
        syndrome = p.aeth[0] if p.aeth else 0
        if p.name == "RC_ACK" and syndrome & 0x60 == 0x60:
            if not naks or naks[0] != p.psn:
                break
            naks.pop(0)
        elif psn_cmp(p.psn, last_acked) > 0:
            break
        out.append(p)
    if naks:
        die("PSN sequence error NAKs for PSNs %s are due (IBA 9.7) but the kernel's are missing"
            % ", ".join("%06x" % n for n in naks))
    return out, model


def server_requests(pkts, client):
    """The server's own request packets and the client's answers to them."""
    return ([p for p in pkts if not p.from_client and is_request(p)],
            [p for p in pkts if p.from_client and not is_request(p)])


def trim(full, n, out):
    recs = roce.read_pcap(full)
    client, _ = exchange(recs)
    pkts = roce_packets(recs, client)
    reqs = client_requests(pkts)[:n]
    answers, _ = kernel_answers(pkts, client, reqs, path_mtu(pkts))
    keep = {p.index for p in reqs} | {p.index for p in answers}
    last = max(keep)
    # The server's own requests and the client's answers to them, up to the last kept packet.
    sreq, sans = server_requests(pkts, client)
    keep |= {p.index for p in sreq + sans if p.index <= last}
    first_roce = pkts[0].index
    records = [r for i, r in enumerate(recs) if i < first_roce or i in keep]
    roce.write_pcap(out, records)
    print("%s: %d of %d frames kept (%d client requests)" % (out, len(records), len(recs), len(reqs)))


class Mem:
    """What the capture shows of the server's registered buffer."""

    def __init__(self, va):
        self.va = va
        self.known = {}            # offset -> byte seen in a response (initial contents)
        self.extent = 0

    def touch(self, va, length):
        if va < self.va:
            die("access at %#x below the exchanged buffer address %#x" % (va, self.va))
        self.extent = max(self.extent, va - self.va + length)

    def learn(self, off, data, what):
        for i, b in enumerate(data):
            old = self.known.setdefault(off + i, b)
            if old != b:
                die("%s: byte %#x of the buffer read as %#04x and %#04x" % (what, off + i, old, b))


def make_fixture(trimmed, name, outdir):
    recs = roce.read_pcap(trimmed)
    client, server = exchange(recs)
    pkts = roce_packets(recs, client)
    mtu = path_mtu(pkts)
    reqs = client_requests(pkts)
    answers, model = kernel_answers(pkts, client, reqs, mtu)
    sreq, sans = server_requests(pkts, client)
    t0 = pkts[0].t - 1000
    ud = reqs and reqs[0].name.startswith("UD_")

    local = roce.Host(server.mac, server.ip)
    peer = roce.Host(client.mac, client.ip)
    frame_max = max(len(p.frame) for p in pkts)
    f = Fixture(name, "Kernel Soft-RoCE (rdma_rxe, Linux 6.1) capture %s: uroce in the server's place"
                % trimmed.split("/")[-1],
                "IBA 9.7 (RC responder and requester); expected packets are the kernel's, differences "
                "documented in docs/conformance.md", "responder" if not sreq else "responder+requester",
                local, [("client", peer)], timing="stream",
                link_mtu=9000 if frame_max > 1600 else None)
    f.comment("perftest exchange: client QPN %#x PSN %#x rkey %#x VA %#x; server QPN %#x PSN %#x rkey %#x VA %#x"
              % (client.qpn, client.psn, client.rkey, client.va, server.qpn, server.psn, server.rkey, server.va))
    f.comment("%d client requests, %d kernel responder packets, %d server requests; path MTU %d"
              % (len(reqs), len(answers), len(sreq), mtu))

    # ---- the server's buffer: extent and contents seen in the capture ----
    mem = Mem(server.va)
    atomics = {}
    for p in reqs:
        if p.reth and p.name != "RC_READ_REQUEST" and p.reth[2]:
            mem.touch(p.reth[0], p.reth[2])
        if p.name == "RC_READ_REQUEST":
            mem.touch(p.reth[0], p.reth[2])
        if p.atomic:
            mem.touch(p.atomic[0], 8)
    reads = {}
    for p in reqs:
        if p.name == "RC_READ_REQUEST":
            reads[p.psn] = p
    for p in answers:
        if p.name.startswith("RC_READ_RESP"):
            base = None
            for k in range(read_psns(4096 * 1024, mtu)):
                r = reads.get(roce.psn_add(p.psn, -k))
                if r is not None:
                    base = (r, k)
                    break
            if base is None:
                die("read response PSN %06x answers no read request in the capture" % p.psn)
            r, k = base
            mem.learn(r.reth[0] - server.va + k * mtu, p.payload, "read response %06x" % p.psn)
        if p.name == "RC_ATOMIC_ACK":
            req = [q for q in reqs if q.atomic and q.psn == p.psn][0]
            off = req.atomic[0] - server.va
            value = p.atomic_orig
            if off not in atomics:
                mem.learn(off, value.to_bytes(8, "little"), "atomic original")
            elif atomics[off] != value:
                die("atomic at %#x returned %#x, expected %#x" % (off, value, atomics[off]))
            atomics[off] = (value + req.atomic[2]) & (2**64 - 1) if req.name == "RC_FETCH_ADD" else \
                (req.atomic[2] if value == req.atomic[3] else value)

    # Replay the accepted requests on a copy of the buffer: that is the memory expected at the end.
    # SEND and UD messages land at offset 0 of the buffer, one receive WQE each (as perftest posts them).
    sends = []            # (payload, immediate, GRH) per completed message
    writes = []           # (offset, bytes) in arrival order
    cur = b""
    wva = None
    model2 = Model(client.psn, mtu)
    for k, p in enumerate(reqs):
        before = model2.epsn
        model2.feed(k, p)
        if not ud and psn_cmp(model2.epsn, before) == 0:
            continue                 # duplicate or out of sequence: not executed
        if "SEND" in p.name:
            cur += bytes(p.payload)
            if p.name.endswith(("_LAST", "_ONLY", "_IMM", "_INV")):
                grh = b"\0" * 20 + bytes(p.frame[p.l3:p.l3 + 20]) if ud else b""
                sends.append((cur, p.imm, grh))
                cur = b""
        elif "WRITE" in p.name:
            if p.reth:
                wva = p.reth[0]
            if p.payload:
                mem.touch(wva, len(p.payload))
                writes.append((wva - server.va, bytes(p.payload)))
                wva += len(p.payload)
    partial = cur
    recv_len = max([len(m[0]) for m in sends] + [len(partial)]) + (40 if ud else 0)
    length = max(mem.extent, recv_len, 64)
    length = (length + 4095) & ~4095
    init = bytearray(length)
    for off, b in mem.known.items():
        init[off] = b
    f.mr("buf", length, server.va, server.rkey, access="LOCAL_WRITE,REMOTE_WRITE,REMOTE_READ,REMOTE_ATOMIC",
         init=bytes(init) if mem.known else None)
    final = bytearray(init)
    for off, chunk in writes:
        final[off:off + len(chunk)] = chunk
    if sends:
        payload, _, grh = sends[-1]
        final[0:len(grh) + len(payload)] = grh + payload
    for off, value in atomics.items():
        final[off:off + 8] = value.to_bytes(8, "little")

    # The server's own messages: payloads live in a second, local-only buffer.
    # rxe resent two of its writes in rc_write_lat within a millisecond, with no NAK
    # and long before its ACK timeout; IBA 9.7 resends on a NAK or a timeout only,
    # so uroce is expected to send each of these packets once.
    smsgs = []
    cur = []
    first_tx = []
    for p in sreq:
        if any(psn_cmp(p.psn, q.psn) == 0 for q in first_tx):
            continue                 # a retransmission, not a new message
        first_tx.append(p)
        cur.append(p)
        if p.name.endswith(("_ONLY", "_LAST", "_IMM", "_INV")) or p.name in ("RC_READ_REQUEST",):
            smsgs.append(cur)
            cur = []
    if cur:
        die("the server's last message is cut off (trim at another N)")
    sbuf = b"".join(b"".join(bytes(q.payload) for q in m) for m in smsgs)
    if smsgs:
        f.mr("sbuf", max(4096, (len(sbuf) + 4095) & ~4095), 0x10000000, None, access="LOCAL_WRITE", init=sbuf)

    qp = dict(rq_psn=client.psn, sq_psn=server.psn, mtu=mtu)
    if ud:
        f.qp("q", "UD", server.qpn, 0, qkey=reqs[0].deth[0], sq_psn=server.psn)
    else:
        # perftest exchanged the kernel's limit (128); uroce's is RC_MAX_RD_ATOMIC (16).
        qp.update(min_rnr_timer=12, max_dest_rd_atomic=min(16, max(1, client.out_reads)),
                  max_rd_atomic=min(16, max(1, server.out_reads)), timeout=14, retry_cnt=7, rnr_retry=7)
        f.qp("q", "RC", server.qpn, client.qpn, **qp)

    # One receive WQE per message that started, like perftest's deep receive queue
    # (a message cut off by the trim still needs its WQE, or uroce would RNR-NAK it).
    for k in range(len(sends) + (1 if partial else 0)):
        f.post_recv("q", 1 + k, [("buf", 0, recv_len)])

    off = 0
    last_msg_psn = {}
    for k, m in enumerate(smsgs):
        head = m[0]
        size = sum(len(q.payload) for q in m)
        kw = {}
        if "WRITE" in head.name:
            op = "RDMA_WRITE_WITH_IMM" if m[-1].imm is not None else "RDMA_WRITE"
            kw = dict(remote=head.reth[0], rkey=head.reth[1])
        elif "SEND" in head.name:
            op = "SEND_WITH_IMM" if m[-1].imm is not None else "SEND"
        else:
            die("server request %s is not supported by the converter" % head.name)
        if m[-1].imm is not None:
            kw["imm"] = m[-1].imm
        flags = "SIGNALED"
        if head.name.startswith("RC_SEND") and size <= 256:
            flags += ",INLINE"
        f.post_send("q", 1000 + k, op, [("sbuf", off, size)], t_us=head.t - t0, flags=flags, **kw)
        off += size
        last_msg_psn[1000 + k] = m[-1].psn

    # ---- traffic ----
    for p in reqs + sans:
        f.recv(p.t - t0, p.frame)
    for p in answers + first_tx:
        f.send(p.t - t0, p.frame)
    f.end_us = max(p.t for p in pkts) - t0 + 1000

    # ---- completions and memory ----
    for k, (payload, imm, grh) in enumerate(sends):
        kw = dict(opcode="RECV", byte_len=len(grh) + len(payload))
        flags = []
        if ud:
            flags.append("GRH")
            kw["src_qp"] = reqs[0].deth[1]
        if imm is not None:
            flags.append("IMM")
            kw["imm"] = imm
        if flags:
            kw["flags"] = ",".join(flags)
        f.cqe("q", "recv", 1 + k, **kw)
    f.mem("buf", 0, bytes(final))
    acks = [p.psn for p in sans if p.aeth and p.aeth[0] & 0x60 == 0]
    for wr, psn in last_msg_psn.items():
        if not any(psn_cmp(a, psn) >= 0 for a in acks):
            die("the server's message with PSN %06x is never acknowledged in the capture" % psn)
        f.cqe("q", "send", wr, opcode="SEND" if "SEND" in smsgs[wr - 1000][0].name else "RDMA_WRITE")
    f.write(outdir, "capture.py")


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "trim":
        trim(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "fixture":
        make_fixture(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
