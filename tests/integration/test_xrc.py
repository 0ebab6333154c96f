# SPDX-License-Identifier: MIT
"""Unmodified ibv_xsrq_pingpong (XRC domain, XRC SRQ, initiator and target QPs): one and two clients,
polling and -e events, IPv4 and IPv6 GIDs.  The veth is captured: tshark must see XRC opcodes
only (requests and ACKs), and uroce decode accept every frame with its XRCETH."""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

PORT = 18915


def clients_run(tap, pair, name, srv_argv, cli_argv, port, clients):
    """The server in namespace 0 with -c CLIENTS, that many clients from namespace 1."""
    srv = pair.start(0, srv_argv)
    if not pair.wait_listen(0, port, srv):
        srv.kill()
        srv.wait(5)
        return it.both_ok(tap, name, srv, None)
    clis = [pair.start(1, cli_argv) for _ in range(clients)]
    for c in clis:
        c.wait(120)
    srv.wait(10)
    bad = [c for c in clis if c.rc != 0]
    return it.both_ok(tap, name, srv, bad[0] if bad else clis[0])


def start_capture(tap, pair):
    cap = os.path.join(pair.tmp, 'xrc.pcap')
    dump = pair.start(1, ['tcpdump', '-i', pair.ifs[1], '-U', '-w', cap, 'udp port 4791'], raw=True)
    end = time.monotonic() + 10
    while not os.path.exists(cap) and time.monotonic() < end and dump.p.poll() is None:
        time.sleep(0.05)
    tap.ok(os.path.exists(cap), 'tcpdump captures RoCE v2 on the veth')
    return dump, cap


def check_capture(tap, pair, dump, cap):
    os.killpg(dump.p.pid, signal.SIGINT)
    dump.wait(10)
    out = subprocess.run(['tshark', '-r', cap, '-T', 'fields', '-e', 'infiniband.bth.opcode'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=60).stdout
    ops = [int(x) for x in re.findall(r'^\d+$', out, re.M)]
    seen = sorted(set(ops))
    xrc_send_first, xrc_ack = 0xa0, 0xb1
    tap.ok(ops and all(0xa0 <= op <= 0xb7 for op in ops) and xrc_send_first in seen and
           xrc_ack in seen, 'tshark: every frame is XRC, sends (FIRST..LAST) and XRC ACKs',
           f'{len(ops)} frames, opcodes {[hex(o) for o in seen]}')
    dec = subprocess.run([pair.uroce, 'decode', cap], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    lines = dec.strip().splitlines()
    last = lines[-1] if lines else '(no output)'
    srq = sum(1 for ln in lines if ' xrc-srq 0x' in ln)
    sends = sum(1 for op in ops if op <= 0xa5)
    tap.ok(last.startswith(f'{len(ops)} frames: {len(ops)} RoCE v2') and
           f'({len(ops)} accepted)' in last and srq == sends,
           'uroce decode accepts every frame; each XRC send shows its XRCETH SRQ',
           f'{last}; {srq} with xrc-srq, {sends} sends')
    tap.diag(last)


def body(tap, pair):
    global PORT
    dump, cap = start_capture(tap, pair)
    for family in (4, 6):
        gids = [str(pair.gid_index(0, family)), str(pair.gid_index(1, family))]
        for clients in (1, 2):
            for extra in ([], ['-e']):
                PORT += 1
                base = ['ibv_xsrq_pingpong', '-d', 'uroce0', '-p', str(PORT), '-m', '1024',
                        '-n', '50', '-s', '3000'] + extra
                name = (f'ibv_xsrq_pingpong {clients} client(s) {" ".join(extra)} '
                        f'IPv{family} GID').replace('  ', ' ')
                clients_run(tap, pair, name, base + ['-c', str(clients), '-g', gids[0]],
                            base + ['-g', gids[1], pair.ip4[0]], PORT, clients)
    check_capture(tap, pair, dump, cap)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'xrc', body))
