# SPDX-License-Identifier: MIT
"""One user's RC QP and memory; another user trying them with the stolen QPN and rkey (pyverbs).

usage: steal.py victim GID_INDEX PEER_GID
         registers 4 KiB holding a secret, connects an RC QP to a QPN nobody has at PEER_GID,
         prints {"qpn", "rkey", "addr"} as one JSON line, waits for stdin to close, then
         prints "victim memory intact" or "victim memory changed"
       steal.py thief GID_INDEX VICTIM_GID VICTIM_JSON
         RDMA READ and WRITE with the stolen rkey and address: once on an RC QP connected to
         the victim's QPN (PSN unknown to the thief), once on the thief's own loopback QP pair;
         prints each work completion's status and whether the secret reached the thief
"""

import ipaddress
import json
import sys

from pyverbs.addr import AHAttr, GID, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
import pyverbs.enums as e
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR

SECRET = b'uroce-secret-of-the-victim-'
SIZE = 4096
NOBODY_QPN = 0xfff0
ACCESS = (e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_READ | e.IBV_ACCESS_REMOTE_WRITE)


def rc_qp(ctx, pd, cq):
    cap = QPCap(max_send_wr=4, max_recv_wr=4, max_send_sge=1, max_recv_sge=1)
    return QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=cap))


def connect(qp, gid_index, dgid, dqpn, psn):
    """INIT, RTR towards (DGID, DQPN) expecting PSN, RTS sending from PSN; one quick retry."""
    attr = QPAttr(qp_state=e.IBV_QPS_INIT, port_num=1)
    attr.qp_access_flags = ACCESS
    qp.to_init(attr)
    # pyverbs takes a GID only in full: eight groups of four hex digits.
    full = ipaddress.IPv6Address(dgid).exploded
    gr = GlobalRoute(dgid=GID(full), sgid_index=gid_index, hop_limit=64)
    attr = QPAttr(qp_state=e.IBV_QPS_RTR, port_num=1, path_mtu=e.IBV_MTU_1024)
    attr.dest_qp_num = dqpn
    attr.rq_psn = psn
    attr.max_dest_rd_atomic = 1
    attr.min_rnr_timer = 1
    attr.ah_attr = AHAttr(gr=gr, is_global=1, port_num=1)
    qp.to_rtr(attr)
    attr.qp_state = e.IBV_QPS_RTS
    attr.sq_psn = psn
    attr.timeout = 10
    attr.retry_cnt = 1
    attr.rnr_retry = 1
    attr.max_rd_atomic = 1
    qp.to_rts(attr)


def post_and_wait(qp, cq, opcode, mr, rkey, addr):
    wr = SendWR(opcode=opcode, num_sge=1, sg=[SGE(mr.buf, 64, mr.lkey)])
    wr.set_wr_rdma(rkey, addr)
    qp.post_send(wr)
    while True:
        n, wcs = cq.poll()
        if n:
            return wcs[0].status


def victim(gid_index, peer_gid):
    ctx = Context(name='uroce0')
    pd = PD(ctx)
    mr = MR(pd, SIZE, ACCESS)
    mr.write(SECRET * (SIZE // len(SECRET)), SIZE // len(SECRET) * len(SECRET))
    before = mr.read(SIZE, 0)
    cq = CQ(ctx, 8)
    qp = rc_qp(ctx, pd, cq)
    connect(qp, gid_index, peer_gid, NOBODY_QPN, 0x123456)
    print(json.dumps({'qpn': qp.qp_num, 'rkey': mr.rkey, 'addr': mr.buf}), flush=True)
    sys.stdin.read()
    print('victim memory intact' if mr.read(SIZE, 0) == before else 'victim memory changed',
          flush=True)


def thief(gid_index, victim_gid, stolen):
    ctx = Context(name='uroce0')
    pd = PD(ctx)
    mr = MR(pd, SIZE, ACCESS)
    cq = CQ(ctx, 16)
    own_gid = str(ctx.query_gid(1, gid_index))

    # The victim's QP itself, with a guessed PSN.
    qp = rc_qp(ctx, pd, cq)
    connect(qp, gid_index, victim_gid, stolen['qpn'], 0)
    for name, op in (('READ', e.IBV_WR_RDMA_READ), ('WRITE', e.IBV_WR_RDMA_WRITE)):
        if name == 'WRITE':
            qp = rc_qp(ctx, pd, cq)
            connect(qp, gid_index, victim_gid, stolen['qpn'], 0)
            mr.write(b'X' * 64, 64)
        status = post_and_wait(qp, cq, op, mr, stolen['rkey'], stolen['addr'])
        print(f'victim QPN {name}: {e.ibv_wc_status(status).name}', flush=True)

    # The stolen rkey on a connection of the thief's own (a loopback pair).
    a, b = rc_qp(ctx, pd, cq), rc_qp(ctx, pd, cq)
    connect(a, gid_index, own_gid, b.qp_num, 0x100)
    connect(b, gid_index, own_gid, a.qp_num, 0x100)
    status = post_and_wait(a, cq, e.IBV_WR_RDMA_READ, mr, stolen['rkey'], stolen['addr'])
    print(f'own QP READ: {e.ibv_wc_status(status).name}', flush=True)
    got = mr.read(SIZE, 0)
    print('secret reached the thief' if SECRET[:8] in got else 'secret not in thief memory',
          flush=True)


if __name__ == '__main__':
    if sys.argv[1] == 'victim':
        victim(int(sys.argv[2]), sys.argv[3])
    else:
        thief(int(sys.argv[2]), sys.argv[3], json.loads(sys.argv[4]))
