#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Oracle: tshark decodes packets uroce built, field by field, against uroce's parser.

Usage: check_tshark.py WIRE_ORACLE_GEN UROCE OUT.pcap
wire-oracle-gen builds random packets of every opcode (IPv4, IPv6, VLAN, and
RoCE v1 on EtherType 0x8915, which tshark dissects as InfiniBand GRH + BTH);
`uroce decode -j` gives the view of uroce's parser; `tshark -T json
-d udp.port==4791,infiniband` decodes the same file independently, with IPv4 and
UDP checksum validation on.  Every field both know must agree; tshark must
know every opcode but CNP and IBA 1.5's FLUSH and ATOMIC WRITE (which tshark 4.0 shows as vendor
data: BTH compared only).  tshark 4.0 names the XRC opcodes but shows what follows their BTH as
vendor data too: for those the BTH is compared, and the XRCETH with the first 4 bytes of that data.
Exits non-zero on any disagreement, and when tshark is missing.
"""
import ipaddress
import json
import os
import shutil
import subprocess
import sys

SEED = os.environ.get("ORACLE_SEED", "20241129")
PER_OPCODE = "12"
CNP = 0x81
# Opcodes tshark 4.0 dissects as vendor data: CNP, RC FLUSH and RC ATOMIC WRITE (IBA 1.5).
# XRC (0xa0..0xb7) as well, whose XRCETH is checked against the first bytes of the vendor data.
XRC = range(0xa0, 0xb8)
BTH_ONLY = (CNP, 0x1c, 0x1d, *XRC)
# Heuristic payload dissectors would read our random payloads as RPC-over-RDMA,
# iSER...; an exception there hides the ICRC, so they are turned off.
PAYLOAD_HEURISTICS = ("mellanox_eoib", "eth_over_ib", "fc_infiniband", "sdp_infiniband", "iser_infiniband",
                      "lnet_ib", "rpcrdma_infiniband", "smb_direct_infiniband", "smcr_infiniband")


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def num(s):
    """tshark prints numbers in decimal or 0x-hex."""
    return int(s, 16) if s.startswith("0x") else int(s)


def hexbytes(s):
    return int(s.replace(":", ""), 16)


class Compare:
    def __init__(self, frame, opcode):
        self.where = f"frame {frame} opcode {opcode:#04x}"
        self.fields = 0

    def eq(self, name, theirs, ours):
        if theirs != ours:
            fail(f"{self.where}: {name}: tshark {theirs!r}, uroce {ours!r}")
        self.fields += 1


def compare_ip(c, layers, ours):
    ip = ours["ip"]
    if ip["version"] == 4:
        t = layers["ip"]
        c.eq("ip.src", t["ip.src"], ip["src"])
        c.eq("ip.dst", t["ip.dst"], ip["dst"])
        c.eq("ip.dsfield", num(t["ip.dsfield"]), ip["tclass"])
        c.eq("ip.ttl", num(t["ip.ttl"]), ip["hop_limit"])
        c.eq("ip.id", num(t["ip.id"]), ip["id"])
        c.eq("ip.flags.df", t["ip.flags_tree"]["ip.flags.df"] == "1", ip["df"])
        c.eq("ip.checksum.status (1 = good)", t["ip.checksum.status"], "1")
    else:
        t = layers["ipv6"]
        c.eq("ipv6.src", ipaddress.ip_address(t["ipv6.src"]), ipaddress.ip_address(ip["src"]))
        c.eq("ipv6.dst", ipaddress.ip_address(t["ipv6.dst"]), ipaddress.ip_address(ip["dst"]))
        c.eq("ipv6.tclass", num(t["ipv6.tclass"]), ip["tclass"])
        c.eq("ipv6.flow", num(t["ipv6.flow"]), ip["flow_label"])
        c.eq("ipv6.hlim", num(t["ipv6.hlim"]), ip["hop_limit"])
        # RFC 8200 requires the UDP checksum over IPv6: tshark must find it good.
        c.eq("udp.checksum.status (1 = good)", layers["udp"]["udp.checksum.status"], "1")


def gid(text):
    """A GID as tshark (always IPv6) or uroce (IPv4-mapped ones as IPv4) writes it."""
    a = ipaddress.ip_address(text)
    return a.ipv4_mapped if a.version == 6 and a.ipv4_mapped else a


def compare_grh(c, ib, ours, frame_len):
    """RoCE v1: tshark's GRH fields against uroce's view of the same header."""
    g = ib["infiniband.grh_tree"]
    ip = ours["ip"]
    c.eq("grh.ipver", num(g["infiniband.grh.ipver"]), 6)
    c.eq("grh.tclass", num(g["infiniband.grh.tclass"]), ip["tclass"])
    c.eq("grh.flowlabel", num(g["infiniband.grh.flowlabel"]), ip["flow_label"])
    c.eq("grh.hoplmt", num(g["infiniband.grh.hoplmt"]), ip["hop_limit"])
    c.eq("grh.nxthdr", num(g["infiniband.grh.nxthdr"]), 0x1B)
    hdr = 14 + (4 if "vlan" in ours["eth"] else 0) + 40
    c.eq("grh.paylen", num(g["infiniband.grh.paylen"]), frame_len - hdr)
    c.eq("grh.sgid", gid(g["infiniband.grh.sgid"]), gid(ip["src"]))
    c.eq("grh.dgid", gid(g["infiniband.grh.dgid"]), gid(ip["dst"]))


def compare_ib(c, ib, ours):
    bth = ib["infiniband.bth_tree"]
    ob = ours["bth"]
    c.eq("bth.opcode", num(bth["infiniband.bth.opcode"]), ob["opcode"])
    c.eq("bth.se", bth["infiniband.bth.se"] == "1", ob["se"])
    c.eq("bth.m", bth["infiniband.bth.m"] == "1", ob["mig"])
    c.eq("bth.padcnt", num(bth["infiniband.bth.padcnt"]), ob["pad"])
    c.eq("bth.tver", num(bth["infiniband.bth.tver"]), ob["tver"])
    c.eq("bth.p_key", num(bth["infiniband.bth.p_key"]), ob["pkey"])
    c.eq("bth.reserved (resv8a)", hexbytes(bth["infiniband.reserved"]), ob["resv8a"])
    c.eq("bth.destqp", num(bth["infiniband.bth.destqp"]), ob["dest_qp"])
    c.eq("bth.a", bth["infiniband.bth.a"] == "1", ob["ackreq"])
    c.eq("bth.psn", num(bth["infiniband.bth.psn"]), ob["psn"])
    if "xrceth" in ours:
        vendor = ib["infiniband.vendor"].split(":")
        c.eq("xrceth (vendor data bytes 0-3)", int("".join(vendor[:4]), 16), ours["xrceth"]["srqn"])
    if ob["opcode"] in BTH_ONLY:
        return
    present = {k[len("infiniband."):-len("_tree")] for k in ib if k.endswith("_tree")}
    ours_ext = {k for k in ("xrceth", "reth", "aeth", "atomiceth", "atomicacketh", "immdt", "ieth",
                            "deth") if k in ours}
    c.eq("extension headers", sorted(present - {"bth", "grh"}), sorted(ours_ext))
    if "xrceth" in ours:
        t = ib["infiniband.xrceth_tree"]
        c.eq("xrceth.xrcsrq", num(t["infiniband.xrceth.xrcsrq"]), ours["xrceth"]["srqn"])
    if "reth" in ours:
        t = ib["infiniband.reth_tree"]
        c.eq("reth.va", num(t["infiniband.reth.va"]), num(ours["reth"]["va"]))
        c.eq("reth.r_key", num(t["infiniband.reth.r_key"]), ours["reth"]["rkey"])
        c.eq("reth.dmalen", num(t["infiniband.reth.dmalen"]), ours["reth"]["dma_len"])
    if "aeth" in ours:
        t = ib["infiniband.aeth_tree"]
        c.eq("aeth.syndrome", num(t["infiniband.aeth.syndrome"]), ours["aeth"]["syndrome"])
        c.eq("aeth.msn", num(t["infiniband.aeth.msn"]), ours["aeth"]["msn"])
    if "atomiceth" in ours:
        t = ib["infiniband.atomiceth_tree"]
        c.eq("atomiceth.va", num(t["infiniband.reth.va"]), num(ours["atomiceth"]["va"]))
        c.eq("atomiceth.r_key", num(t["infiniband.reth.r_key"]), ours["atomiceth"]["rkey"])
        c.eq("atomiceth.swapdt", num(t["infiniband.atomiceth.swapdt"]),
             num(ours["atomiceth"]["swap_add"]))
        c.eq("atomiceth.cmpdt", num(t["infiniband.atomiceth.cmpdt"]),
             num(ours["atomiceth"]["compare"]))
    if "atomicacketh" in ours:
        t = ib["infiniband.atomicacketh_tree"]
        c.eq("atomicacketh.origremdt", num(t["infiniband.atomicacketh.origremdt"]),
             num(ours["atomicacketh"]["orig"]))
    if "immdt" in ours:
        c.eq("immdt", hexbytes(ib["infiniband.immdt"]), ours["immdt"])
    if "ieth" in ours:
        c.eq("ieth", hexbytes(ib["infiniband.ieth"]), ours["ieth"])
    if "deth" in ours:
        t = ib["infiniband.deth_tree"]
        c.eq("deth.q_key", num(t["infiniband.deth.q_key"]), ours["deth"]["qkey"])
        c.eq("deth.srcqp", num(t["infiniband.deth.srcqp"]), ours["deth"]["src_qp"])
    # tshark shows the 4 ICRC bytes as one big-endian number; uroce the CRC, sent LSB first.
    sent = int(ours["icrc"], 16).to_bytes(4, "little")
    c.eq("invariant.crc", num(ib["infiniband.invariant.crc"]), int.from_bytes(sent, "big"))


def main():
    if len(sys.argv) != 4:
        fail("usage: check_tshark.py WIRE_ORACLE_GEN UROCE OUT.pcap")
    gen, uroce, pcap = sys.argv[1:4]
    tshark = shutil.which("tshark")
    if not tshark:
        fail("tshark not found; apt-get install tshark")
    subprocess.run([gen, pcap, SEED, PER_OPCODE], check=True)
    ours = [json.loads(line) for line in
            subprocess.run([uroce, "decode", "-j", pcap], check=True, capture_output=True,
                           text=True).stdout.splitlines()]
    args = [tshark, "-r", pcap, "-T", "json", "--no-duplicate-keys",
            "-d", "udp.port==4791,infiniband",
            "-o", "ip.check_checksum:TRUE", "-o", "udp.check_checksum:TRUE",
            "--disable-protocol", "nvme-rdma"]
    for h in PAYLOAD_HEURISTICS:
        args += ["--disable-heuristic", h]
    theirs = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    if len(ours) != len(theirs) or not ours:
        fail(f"uroce decoded {len(ours)} frames, tshark {len(theirs)}")

    fields = 0
    opcodes = {}
    versions = {1: 0, 2: 0}
    for n, (o, t) in enumerate(zip(ours, theirs), 1):
        layers = t["_source"]["layers"]
        if o["drop"] != "NONE" or not o.get("icrc_ok"):
            fail(f"frame {n}: uroce's parser drops it ({o['drop']})")
        c = Compare(n, o["bth"]["opcode"])
        if "infiniband" not in layers:
            fail(f"{c.where}: tshark does not decode it as InfiniBand")
        eth = layers["eth"]
        c.eq("eth.src", eth["eth.src"], o["eth"]["src"])
        c.eq("eth.dst", eth["eth.dst"], o["eth"]["dst"])
        if "vlan" in o["eth"]:
            v = layers["vlan"]
            c.eq("vlan.id", num(v["vlan.id"]), o["eth"]["vlan"]["vid"])
            c.eq("vlan.priority", num(v["vlan.priority"]), o["eth"]["vlan"]["pcp"])
            c.eq("vlan.dei", num(v["vlan.dei"]), o["eth"]["vlan"]["dei"])
        else:
            c.eq("vlan layer", "vlan" in layers, False)
        if o.get("roce_version") == 1:
            etype = layers["vlan"]["vlan.etype"] if "vlan" in layers else eth["eth.type"]
            c.eq("EtherType", num(etype), 0x8915)
            c.eq("ip / udp layers", "ipv6" in layers or "udp" in layers, False)
            compare_grh(c, layers["infiniband"], o, o["len"])
            versions[1] += 1
        else:
            compare_ip(c, layers, o)
            c.eq("udp.srcport", num(layers["udp"]["udp.srcport"]), o["udp"]["sport"])
            c.eq("udp.dstport", num(layers["udp"]["udp.dstport"]), 4791)
            versions[2] += 1
        compare_ib(c, layers["infiniband"], o)
        if o["bth"]["opcode"] not in BTH_ONLY:
            data = num(layers["data"]["data.len"]) if "data" in layers else 0
            c.eq("payload length (data.len)", data, o["payload_len"] + o["bth"]["pad"])
        fields += c.fields
        opcodes[o["bth"]["opcode"]] = opcodes.get(o["bth"]["opcode"], 0) + 1
    if len(opcodes) != 63 or not versions[1] or not versions[2]:
        fail(f"only {len(opcodes)} opcodes compared, RoCE v2/v1 packets {versions}")
    print(f"ok: {len(ours)} packets ({versions[2]} RoCE v2, {versions[1]} RoCE v1), "
          f"{len(opcodes)} opcodes, {fields} fields agree between tshark and uroce's parser "
          f"(CNP, FLUSH, ATOMIC WRITE: BTH only; XRC: BTH and XRCETH; seed {SEED})")


main()
