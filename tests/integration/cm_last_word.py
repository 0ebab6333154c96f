# SPDX-License-Identifier: MIT
"""A peer's last message with its DREQ right behind it, through pyverbs (run under `uroce exec`).

    cm_last_word.py send ADDR PORT
    cm_last_word.py take ADDR PORT WAIT_S poll|nopoll

`send` connects, sends one message and disconnects at once. `take` listens with a receive
posted; once connected, with `poll` it sleeps WAIT_S, with `nopoll` it waits at most WAIT_S
for its channel, and prints whether a CM event waits there ("disconnected before the poll:
yes|no"; a blocking read in a thread would hold pyverbs' GIL); then with
`poll` takes the receive completion ("receive: status N, B bytes") and prints how long the
event took after it ("EVENT S s after the poll"); with `nopoll` how long after ESTABLISHED
the channel had it ("EVENT S s after established")."""

import os
import select
import sys
import time

import pyverbs.cm_enums as ce
import pyverbs.enums as e
from pyverbs.cmid import AddrInfo, CMEvent, CMEventChannel, CMID, ConnParam
from pyverbs.qp import QPCap, QPInitAttr

MSG = 64


def next_event(ch, want):
    ev = CMEvent(ch)
    if ev.event_type != want:
        sys.exit(f'event {ev.event_str()} where {want} was expected')
    ev.ack_cm_event()


def send(addr, port):
    ch = CMEventChannel()
    cmid = CMID(creator=ch, port_space=ce.RDMA_PS_TCP)
    cmid.resolve_addr(AddrInfo(dst=addr, dst_service=port, port_space=ce.RDMA_PS_TCP))
    next_event(ch, ce.RDMA_CM_EVENT_ADDR_RESOLVED)
    cmid.resolve_route()
    next_event(ch, ce.RDMA_CM_EVENT_ROUTE_RESOLVED)
    cmid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
    mr = cmid.reg_msgs(MSG)
    cmid.connect(ConnParam())
    next_event(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
    cmid.post_send(mr, e.IBV_SEND_SIGNALED, MSG)
    cmid.get_send_comp()
    cmid.disconnect()
    print('sent and disconnected', flush=True)


def eventfds():
    out = set()
    for f in os.listdir('/proc/self/fd'):
        try:
            if os.readlink(f'/proc/self/fd/{f}') == 'anon_inode:[eventfd]':
                out.add(int(f))
        except FileNotFoundError:	# listdir's own
            pass
    return out


def channel_fd():
    """A new event channel and its descriptor, which pyverbs does not show.  The first channel
    opens the devices (their descriptors too): it is made and kept before."""
    first = CMEventChannel()
    before = eventfds()
    ch = CMEventChannel()
    new = list(eventfds() - before)
    del first
    if len(new) != 1:
        sys.exit(f'cannot tell the channel\'s descriptor among {new}')
    return ch, new[0]


def take(addr, port, wait_s, poll):
    ch, fd = channel_fd()
    listener = CMID(creator=ch, port_space=ce.RDMA_PS_TCP)
    listener.bind_addr(AddrInfo(src=addr, src_service=port, port_space=ce.RDMA_PS_TCP,
                                flags=ce.RAI_PASSIVE))
    listener.listen()
    ev = CMEvent(ch)
    if ev.event_type != ce.RDMA_CM_EVENT_CONNECT_REQUEST:
        sys.exit(f'event {ev.event_str()} where a connect request was expected')
    cmid = CMID(creator=ev, listen_id=listener)
    ev.ack_cm_event()
    cmid.create_qp(QPInitAttr(qp_type=e.IBV_QPT_RC, cap=QPCap(max_send_wr=1, max_recv_wr=1)))
    mr = cmid.reg_msgs(MSG)
    cmid.post_recv(mr, MSG)
    cmid.accept(ConnParam())
    next_event(ch, ce.RDMA_CM_EVENT_ESTABLISHED)
    established = time.monotonic()
    print('established', flush=True)

    if poll == 'poll':
        time.sleep(wait_s)
        ready = select.select([fd], [], [], 0)[0]
    else:
        ready = select.select([fd], [], [], wait_s)[0]
    arrived = time.monotonic()
    print(f'disconnected before the poll: {"yes" if ready else "no"}', flush=True)
    if poll == 'poll':
        wc = cmid.get_recv_comp()
        polled = time.monotonic()
        print(f'receive: status {wc.status}, {wc.byte_len} bytes', flush=True)
    ev = CMEvent(ch)
    at = time.monotonic()
    what = ev.event_str()
    ev.ack_cm_event()
    if poll == 'poll':
        print(f'{what} {at - polled:.3f} s after the poll', flush=True)
    else:
        print(f'{what} {arrived - established:.3f} s after established', flush=True)


def main():
    role, addr, port = sys.argv[1:4]
    if role == 'send':
        send(addr, port)
    else:
        take(addr, port, float(sys.argv[4]), sys.argv[5])


if __name__ == '__main__':
    main()
