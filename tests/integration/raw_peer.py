# SPDX-License-Identifier: MIT
"""One end of test_raw.py: a raw packet QP on uroce0 that sends UDP frames, or receives what its flow takes.

raw_peer.py eperm: a raw QP without CAP_NET_RAW is refused with EPERM.
raw_peer.py send DST_MAC N: first two frames no flow of the receiver matches (another UDP port,
another unicast MAC), then N that match.  raw_peer.py recv MAC N: a flow for UDP port DPORT to
MAC, "ready" once it is in place, then the frames received (hex) as one JSON line.
"""

import errno
import json
import sys
import time

from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.flow import Flow, FlowAttr
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.pyverbs_error import PyverbsRDMAError
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.spec import EthSpec, Ipv4ExtSpec, TcpUdpSpec
from pyverbs.wr import SGE, RecvWR, SendWR
import pyverbs.enums as e

SRC_MAC = bytes.fromhex('02aabbccdd01')
OTHER_MAC = bytes.fromhex('02aabbccdd02')
DPORT = 5678
OTHER_DPORT = 9999
FRAME_LEN = 200
SLOT = 256
EXTRA = 4


def ip_csum(h):
    s = sum(int.from_bytes(h[i:i + 2], 'big') for i in range(0, len(h), 2))
    while s >> 16:
        s = (s & 0xffff) + (s >> 16)
    return (~s & 0xffff).to_bytes(2, 'big')


def frame(dst_mac, dport, seed):
    """Ethernet, IPv4 1.1.1.1 -> 2.2.2.2, UDP 1234 -> DPORT, a pattern of SEED: FRAME_LEN bytes."""
    payload = bytes((seed * 7 + j) & 0xff for j in range(FRAME_LEN - 14 - 20 - 8))
    udp = (1234).to_bytes(2, 'big') + dport.to_bytes(2, 'big') + \
        (8 + len(payload)).to_bytes(2, 'big') + b'\0\0' + payload
    ip = bytes([0x45, 0]) + (20 + len(udp)).to_bytes(2, 'big') + b'\0\0\x40\0\x40\x11\0\0' + \
        bytes([1, 1, 1, 1, 2, 2, 2, 2])
    ip = ip[:10] + ip_csum(ip) + ip[12:]
    return dst_mac + SRC_MAC + b'\x08\x00' + ip + udp


def raw_qp(ctx, pd, cq, n):
    cap = QPCap(max_send_wr=n, max_recv_wr=n, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RAW_PACKET, scq=cq, rcq=cq, cap=cap),
              QPAttr(port_num=1))


def poll(cq, deadline):
    while time.monotonic() < deadline:
        n, wcs = cq.poll()
        if n:
            return wcs[0]
    return None


def send(ctx, pd, cq, mac, n):
    mr = MR(pd, FRAME_LEN, e.IBV_ACCESS_LOCAL_WRITE)
    qp = raw_qp(ctx, pd, cq, 4)
    frames = [frame(mac, OTHER_DPORT, 100), frame(OTHER_MAC, DPORT, 101)] + \
        [frame(mac, DPORT, i) for i in range(n)]
    for f in frames:
        mr.write(f, len(f))
        qp.post_send(SendWR(opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(mr.buf, len(f), mr.lkey)],
                            send_flags=e.IBV_SEND_SIGNALED))
        wc = poll(cq, time.monotonic() + 10)
        if wc is None or wc.status != e.IBV_WC_SUCCESS or wc.opcode != e.IBV_WC_SEND:
            print(f'send completion: {wc}')
            return 1
    print('sent', len(frames))
    return 0


def recv(ctx, pd, cq, mac, n):
    slots = n + EXTRA
    mr = MR(pd, SLOT * slots, e.IBV_ACCESS_LOCAL_WRITE)
    qp = raw_qp(ctx, pd, cq, slots)
    for i in range(slots):
        qp.post_recv(RecvWR(wr_id=i, num_sge=1, sg=[SGE(mr.buf + i * SLOT, SLOT, mr.lkey)]))
    attr = FlowAttr(num_of_specs=3, port=1)
    attr.specs.append(EthSpec(ether_type=0x800, dst_mac=':'.join(f'{b:02x}' for b in mac)))
    attr.specs.append(Ipv4ExtSpec(proto=17))
    attr.specs.append(TcpUdpSpec(e.IBV_FLOW_SPEC_UDP, dst_port=DPORT))
    flow = Flow(qp, attr)
    print('ready', flush=True)
    got = []
    end = time.monotonic() + 20
    # Past the N expected, a second longer: a frame no flow should take would show up here.
    while len(got) < slots:
        wc = poll(cq, end if len(got) < n else min(end, time.monotonic() + 1))
        if wc is None:
            break
        got.append({'status': wc.status, 'opcode': wc.opcode, 'byte_len': wc.byte_len,
                    'frame': mr.read(wc.byte_len, wc.wr_id * SLOT).hex()})
    flow.close()
    print(json.dumps(got))
    return 0


def eperm(ctx, pd, cq):
    try:
        raw_qp(ctx, pd, cq, 1)
    except PyverbsRDMAError as ex:
        print(f'refused: errno {ex.error_code}')
        return 0 if ex.error_code == errno.EPERM else 1
    print('created')
    return 1


def main():
    ctx = Context(name='uroce0')
    pd = PD(ctx)
    cq = CQ(ctx, 64)
    if sys.argv[1] == 'eperm':
        return eperm(ctx, pd, cq)
    role, mac, n = sys.argv[1], bytes.fromhex(sys.argv[2].replace(':', '')), int(sys.argv[3])
    return (send if role == 'send' else recv)(ctx, pd, cq, mac, n)


if __name__ == '__main__':
    sys.exit(main())
