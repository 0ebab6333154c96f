# SPDX-License-Identifier: MIT
"""An ordinary user with the broker's packet socket, looking for other users' frames.

usage: snoop.py RUN_DIR DEVICE NETDEV
  takes a packet socket from DEVICE's broker, tries to take its filter off and to write the
  QPN table, asks the broker for a QPN and to free one it does not hold, then for QPNs until
  the broker refuses (the user's quota, held while it snoops), prints {"qpn": ITS_QPN,
  "other": A_QPN_IN_THE_TABLE_IT_DOES_NOT_HOLD},
  counts what the socket receives until its stdin closes, gives the quota's QPNs back and
  prints one JSON line.
"""

import json
import os
import socket
import struct
import select
import sys

ETH_P_ALL = 0x0003
SO_DETACH_FILTER = 27
OP_ALLOC, OP_FREE = 1, 2
ROCE_V2_PORT = 4791
QPN_BASE, QPN_SLOTS = 0x100, 65536	# the QPN table's range (host_qpn.h)


def bth_dest_qp(frame):
    """DestQP of a RoCE v2 frame over IPv4 or IPv6 (untagged), else None."""
    proto = struct.unpack_from('!H', frame, 12)[0]
    if proto == 0x0800 and len(frame) >= 34 and frame[23] == 17:
        udp = 14 + (frame[14] & 0xf) * 4
    elif proto == 0x86dd and len(frame) >= 54 and frame[20] == 17:
        udp = 54
    else:
        return None
    if len(frame) < udp + 8 + 8 or struct.unpack_from('!H', frame, udp + 2)[0] != ROCE_V2_PORT:
        return None
    return int.from_bytes(frame[udp + 8 + 5:udp + 8 + 8], 'big')


def ask(conn, op, qpn=0):
    conn.sendall(struct.pack('=II', op, qpn))
    return struct.unpack('=iI', conn.recv(8, socket.MSG_WAITALL))


def main():
    run_dir, device, netdev = sys.argv[1:4]
    out = {}
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(os.path.join(run_dir, 'devices', device + '.sock'))
    # The socket comes with this process's PID and start time as the broker sees them.
    _, fds, _, _ = socket.recv_fds(conn, 8, 1, socket.MSG_WAITALL)
    sock = socket.socket(fileno=fds[0])
    sock.bind((netdev, ETH_P_ALL))
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_DETACH_FILTER, 0)
        out['detach'] = 'done'
    except OSError as e:
        out['detach'] = e.strerror
    try:
        open(os.path.join(run_dir, 'qpn', netdev), 'r+b').close()
        out['table_write'] = 'opened'
    except OSError as e:
        out['table_write'] = e.strerror
    ret, mine = ask(conn, OP_ALLOC)
    out['alloc'] = [ret, mine]
    out['free_other'] = ask(conn, OP_FREE, mine + 1)[0]
    held = []
    while len(held) < QPN_SLOTS:
        ret, qpn = ask(conn, OP_ALLOC)
        if ret:
            break
        held.append(qpn)
    out['quota'] = [len(held) + 1, ret]
    ours = set(held) | {mine}
    other = next(q for q in range(QPN_BASE, QPN_BASE + QPN_SLOTS) if q not in ours)
    print(json.dumps({'qpn': mine, 'other': other}), flush=True)
    mac = bytes.fromhex(open(f'/sys/class/net/{netdev}/address').read().strip().replace(':', ''))
    out.update(frames=0, roce_own_qpn=0, roce_other_qpn=0, unicast_elsewhere=0)
    while True:
        ready, _, _ = select.select([sock, sys.stdin], [], [])
        if sock not in ready:
            break
        f = sock.recv(65536)
        out['frames'] += 1
        if not f[0] & 1 and f[:6] != mac:
            out['unicast_elsewhere'] += 1
        qpn = bth_dest_qp(f)
        if qpn == mine:
            out['roce_own_qpn'] += 1
        elif qpn is not None:
            out['roce_other_qpn'] += qpn not in (1, 0xffffff)
    out['freed'] = sum(ask(conn, OP_FREE, qpn)[0] == 0 for qpn in held)
    out['alloc_after_free'] = ask(conn, OP_ALLOC)[0]
    print(json.dumps(out), flush=True)


if __name__ == '__main__':
    main()
