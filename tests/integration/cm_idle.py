# SPDX-License-Identifier: MIT
"""An rdma_cm connection that then does nothing, through pyverbs (run under `uroce exec`).

    cm_idle.py listen|connect ADDR PORT sleep|wait

Prints "established" once the RC connection is up; then `sleep` sleeps until killed (the process
whose death the test is about), `wait` waits for the next CM event and prints
"event NAME after S s" (the survivor, which must get DISCONNECTED)."""

import sys
import time

import pyverbs.cm_enums as ce
import pyverbs.enums as e
from pyverbs.cmid import AddrInfo, CMEvent, CMEventChannel, CMID, ConnParam
from pyverbs.qp import QPCap, QPInitAttr


def next_event(ch, want):
    ev = CMEvent(ch)
    kind = ev.event_type
    if kind != want:
        sys.exit(f'event {ev.event_str()} where {want} was expected')
    return ev


def main():
    role, addr, port, then = sys.argv[1:5]
    ch = CMEventChannel()
    init = QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_recv_wr=1))
    if role == 'listen':
        listener = CMID(creator=ch, port_space=ce.RDMA_PS_TCP)
        listener.bind_addr(AddrInfo(src=addr, src_service=port, port_space=ce.RDMA_PS_TCP,
                                    flags=ce.RAI_PASSIVE))
        listener.listen()
        ev = next_event(ch, ce.RDMA_CM_EVENT_CONNECT_REQUEST)
        cmid = CMID(creator=ev, listen_id=listener)
        ev.ack_cm_event()
        cmid.create_qp(init)
        cmid.accept(ConnParam())
    else:
        cmid = CMID(creator=ch, port_space=ce.RDMA_PS_TCP)
        cmid.resolve_addr(AddrInfo(dst=addr, dst_service=port, port_space=ce.RDMA_PS_TCP))
        next_event(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED).ack_cm_event()
        cmid.resolve_route()
        next_event(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED).ack_cm_event()
        cmid.create_qp(init)
        cmid.connect(ConnParam())
    next_event(ch, ce.RDMA_CM_EVENT_ESTABLISHED).ack_cm_event()
    print('established', flush=True)
    if then == 'sleep':
        time.sleep(3600)
        return
    t0 = time.monotonic()
    ev = CMEvent(ch)
    print(f'event {ev.event_str()} after {time.monotonic() - t0:.2f} s', flush=True)
    ev.ack_cm_event()


if __name__ == '__main__':
    main()
