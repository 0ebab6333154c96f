# SPDX-License-Identifier: MIT
"""Same-host loopback: server and client on one host and one device (two processes on uroce0).

Both programs run in the same namespace on the same uroce0 and address its
own IPv4 (and IPv6) GID; the veth's peer sits in the other namespace.  The
frames go from one process's engine to the other's receive ring
(docs/dataplane.md, "Same-host delivery"), never over the veth: its
transmit counter must not move with the traffic.  Each process's UROCE_PCAP
capture must hold the exchange as on the wire: opcodes by tshark, ICRC by
`uroce decode`.
"""

import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

PORT = 18900
# Frames the veth may carry meanwhile that are not ours (IPv6 router solicitations and the like).
VETH_NOISE = 20


def veth_tx(pair):
    path = f'/sys/class/net/{pair.ifs[0]}/statistics/tx_packets'
    return int(it.sh('ip', 'netns', 'exec', pair.ns[0], 'cat', path).stdout)


def same_host(pair, argv_srv, argv_cli, pcap_dir=None, timeout=120):
    """Server and client, both in namespace A on uroce0; the client connects to A's own address."""
    global PORT
    PORT += 1
    env = pair.env(0)
    if pcap_dir:
        env['UROCE_PCAP'] = os.path.join(pcap_dir, '%p.pcap')
    port = ['-p', str(PORT)]
    srv = it.Proc(pair.verbs_argv(0, argv_srv + port), env)
    pair.procs.append(srv)
    if not pair.wait_listen(0, PORT, srv):
        srv.kill()
        srv.wait(5)
        return srv, None
    cli = it.Proc(pair.verbs_argv(0, argv_cli + port + [pair.ip4[0]]), env)
    pair.procs.append(cli)
    cli.wait(timeout)
    srv.wait(15 if cli.rc == 0 else 5)
    return srv, cli


def body(tap, pair):
    gid4 = str(pair.gid_index(0, 4))
    gid6 = str(pair.gid_index(0, 6))

    # ibv_rc_pingpong over the IPv4 and the IPv6 GID, and the ibv_wr_* API (-N); captured.
    for gid, extra in ((gid4, []), (gid6, []), (gid4, ['-N'])):
        pcaps = os.path.join(pair.tmp, f'pcap{PORT + 1}')
        os.makedirs(pcaps)
        argv = ['ibv_rc_pingpong', '-d', 'uroce0', '-g', gid, '-n', '500', '-c'] + extra
        before = veth_tx(pair)
        srv, cli = same_host(pair, argv, argv, pcap_dir=pcaps)
        name = f'ibv_rc_pingpong {" ".join(extra)} same host, same device, GID {gid}'
        if not it.both_ok(tap, name, srv, cli):
            continue
        tap.diag(cli.out.strip().splitlines()[-1])
        moved = veth_tx(pair) - before
        tap.ok(moved < VETH_NOISE, f'{name}: nothing on the veth ({moved} frames)')
        files = sorted(glob.glob(os.path.join(pcaps, '*.pcap')))
        res = [it.capture_facts(pair, f) for f in files]
        # 500 messages of 4096 bytes each way at IB MTU 1024: SEND First, Middle, Last (0, 1,
        # 2), 4 packets a message, plus ACKs (17); each process records what it sends and receives.
        tap.ok(len(files) == 2 and all(n >= 4000 and good == n and {'0', '1', '2', '17'} <= ops
                                       for n, ops, good in res),
               f'{name}: each process\'s UROCE_PCAP holds both directions (tshark), '
               'ICRC good (uroce decode)',
               f'{files} {res}')

    perf.direct_checks(tap, pair, 'same host, same device', ('uroce0',), [('uroce0', gid4)] * 2,
                       lambda s, c, pcaps: same_host(pair, s, c, pcap_dir=pcaps))

    ud = ['ibv_ud_pingpong', '-d', 'uroce0', '-g', gid4, '-n', '500', '-s', '1024', '-c']
    srv, cli = same_host(pair, ud, ud)
    it.both_ok(tap, 'ibv_ud_pingpong same host, same device', srv, cli)

    for tool, opts in (('ib_write_bw', ['--report_gbits', '-n', '5000']),
                       ('ib_write_bw', ['--report_gbits', '-a', '-n', '50']),
                       ('ib_read_lat', ['-n', '1000']),
                       ('ib_read_lat', ['-a', '-n', '50']),
                       ('ib_atomic_bw', ['-A', 'FETCH_AND_ADD', '-n', '2000']),
                       ('ib_atomic_bw', ['-A', 'CMP_AND_SWAP', '-n', '2000']),
                       ('ib_send_bw', ['-q', '4', '--report_gbits', '-n', '1000'])):
        argv = [tool, '-d', 'uroce0', '-F', '-x', gid4] + opts
        before = veth_tx(pair)
        srv, cli = same_host(pair, argv, argv, timeout=180)
        name = f'{tool} {" ".join(opts)} same host, same device'
        if perf.check(tap, name, srv, cli):
            moved = veth_tx(pair) - before
            tap.ok(moved < VETH_NOISE, f'{name}: nothing on the veth ({moved} frames)')


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'lb', body))
