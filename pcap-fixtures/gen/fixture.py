# SPDX-License-Identifier: MIT
"""Writes a conformance fixture: NAME.fixture (text) + NAME.in.pcap + NAME.out.pcap.

The text format is documented in docs/conformance.md; this module only
produces it, so a fixture written by hand and one written here look alike.
"""

import os

import roce

ACCESS_ALL = "LOCAL_WRITE,REMOTE_WRITE,REMOTE_READ,REMOTE_ATOMIC"


def _t(us):
    return "%dus" % us


def _hexlines(data, width=64):
    for i in range(0, len(data), width):
        yield i, data[i:i + width].hex()


class Fixture:
    """One scenario.  Times are integers in microseconds of virtual time."""

    def __init__(self, name, summary, spec, role, local, peers,
                 timing="window", end_us=None, link_mtu=None):
        self.name = name
        self.summary = summary
        self.spec = spec
        self.role = role
        self.local = local
        self.peers = peers            # [(name, Host)]
        self.timing = timing
        self.end_us = end_us
        self.link_mtu = link_mtu
        self.setup = []               # text lines
        self.actions = []             # (t_us, text)
        self.expects = []
        self.comments = []
        self.ignores = []
        self.rx = []                  # (t_us, bytes)
        self.tx = []                  # (t_us, bytes)
        self.mrs = {}                 # name -> (iova, expected final bytes)
        self.baseline = {}            # name -> initial bytes + pokes

    # ---- set-up ----
    def comment(self, text):
        self.comments.append(text)

    def ignore(self, field, why):
        self.ignores.append((field, why))

    def mr(self, name, length, iova, rkey, access=ACCESS_ALL, init=None):
        """@init: None (zeros), ("pattern", seed), ("fill", byte) or bytes."""
        mem = bytearray(length)
        if init is None:
            spec = "zero"
        elif isinstance(init, (bytes, bytearray)):
            mem[:] = init
            spec = "hex:" + bytes(init).hex()
        elif init[0] == "pattern":
            mem[:] = roce.pattern(init[1], length)
            spec = "pattern:%d" % init[1]
        else:
            mem[:] = bytes([init[1]]) * length
            spec = "fill:0x%02x" % init[1]
        self.mrs[name] = (iova, mem)
        self.baseline[name] = bytearray(mem)
        key = "" if rkey is None else " rkey=0x%08x" % rkey
        self.setup.append("mr %s len=%d iova=0x%x access=%s%s init=%s"
                          % (name, length, iova, access, key, spec))

    def qp(self, name, qp_type, qpn, dest_qp, peer=None, **attrs):
        words = ["qp %s type=%s qpn=0x%06x dest_qp=0x%06x"
                 % (name, qp_type, qpn, dest_qp)]
        if peer:
            words.append("peer=%s" % peer)
        for k, v in attrs.items():
            if isinstance(v, int) and k.endswith(("psn", "qkey")):
                words.append("%s=0x%06x" % (k, v))
            else:
                words.append("%s=%s" % (k, v))
        self.setup.append(" ".join(words))

    def _at(self, t_us, text):
        if t_us is None:
            self.setup.append(text)
        else:
            self.actions.append((t_us, "at %s %s" % (_t(t_us), text)))

    def post_recv(self, qp, wr_id, sges, t_us=None):
        self._at(t_us, "post_recv %s wr_id=%d %s" % (qp, wr_id, self._sges(sges)))

    def post_send(self, qp, wr_id, op, sges=(), t_us=None, flags="SIGNALED", **kw):
        words = ["post_send %s wr_id=%d op=%s" % (qp, wr_id, op)]
        if sges:
            words.append(self._sges(sges))
        for k, v in kw.items():
            words.append("%s=%s" % (k, "0x%x" % v if isinstance(v, int) else v))
        words.append("flags=%s" % flags)
        self._at(t_us, " ".join(words))

    def dereg(self, mr, t_us=None):
        self._at(t_us, "dereg %s" % mr)

    def poke(self, mr, offset, data, t_us):
        """A local CPU store into an MR at @t_us (not a verb: plain memory)."""
        self._at(t_us, "poke %s 0x%x hex:%s" % (mr, offset, bytes(data).hex()))
        self.mrs[mr][1][offset:offset + len(data)] = data
        self.baseline[mr][offset:offset + len(data)] = data

    @staticmethod
    def _sges(sges):
        return " ".join("sge=%s:%d:%d" % s for s in sges)

    # ---- traffic ----
    def recv(self, t_us, frame):
        """A frame that arrives at uroce at @t_us."""
        self.rx.append((t_us, frame))

    def send(self, t_us, frame):
        """A frame uroce must send; @t_us is the earliest time allowed."""
        self.tx.append((t_us, frame))

    # ---- expectations ----
    def cqe(self, qp, queue, wr_id, status="SUCCESS", **kw):
        words = ["expect cqe %s %s wr_id=%d status=%s" % (qp, queue, wr_id, status)]
        for k, v in kw.items():
            words.append("%s=%s" % (k, "0x%x" % v if isinstance(v, int) and k != "byte_len" else v))
        self.expects.append(" ".join(words))

    def mem(self, mr, offset, data):
        """Expected bytes of @mr after the run (everything else unchanged)."""
        self.mrs[mr][1][offset:offset + len(data)] = data

    def counter(self, name, value):
        self.expects.append("expect counter %s %d" % (name, value))

    def state(self, qp, state):
        self.expects.append("expect state %s %s" % (qp, state))

    def event(self, qp, event):
        self.expects.append("expect event %s %s" % (qp, event))

    # ---- output ----
    def _mem_expectations(self):
        """expect mem lines for the bytes that differ from initial + pokes."""
        lines = []
        for name, (_, mem) in self.mrs.items():
            base = self.baseline[name]
            diff = [i for i in range(len(mem)) if mem[i] != base[i]]
            runs = []
            for i in diff:
                if runs and i - runs[-1][1] <= 8:
                    runs[-1][1] = i + 1
                else:
                    runs.append([i, i + 1])
            for a, b in runs:
                for off, hx in _hexlines(bytes(mem[a:b])):
                    lines.append("expect mem %s 0x%x hex:%s" % (name, a + off, hx))
        return lines

    def write(self, outdir, generator):
        base = os.path.join(outdir, self.name)
        rx = sorted(self.rx, key=lambda r: r[0])
        tx = sorted(self.tx, key=lambda r: r[0])
        lines = ["# uroce conformance fixture; format: docs/conformance.md",
                 "# Generated by pcap-fixtures/gen/%s: edit the generator, not this file." % generator,
                 "uroce-fixture 1",
                 "name %s" % self.name,
                 "summary %s" % self.summary,
                 "spec %s" % self.spec,
                 "role %s" % self.role,
                 "timing %s" % self.timing]
        for c in self.comments:
            lines.append("# " + c)
        if self.end_us is not None:
            lines.append("end %s" % _t(self.end_us))
        mtu = " mtu=%d" % self.link_mtu if self.link_mtu else ""
        lines.append("local mac=%s ip=%s%s" % (self.local.mac, self.local.ip, mtu))
        for name, host in self.peers:
            lines.append("peer %s mac=%s ip=%s" % (name, host.mac, host.ip))
        lines += self.setup
        lines += [a for _, a in sorted(self.actions, key=lambda a: a[0])]
        lines += self.expects
        lines += self._mem_expectations()
        for field, why in self.ignores:
            lines.append("ignore %s  # %s" % (field, why))
        with open(base + ".fixture", "w") as f:
            f.write("\n".join(lines) + "\n")
        roce.write_pcap(base + ".in.pcap", rx)
        roce.write_pcap(base + ".out.pcap", tx)
