# SPDX-License-Identifier: MIT
"""RoCE v1 (EtherType 0x8915): unmodified pingpongs and perftest on the v1 GIDs, v1 and v2 at once.

Every v1 frame on the veth is captured (tcpdump, `ether proto 0x8915`) and
must be a RoCE packet uroce's parser accepts, ICRC and all.  Then the XDP
loss program drops 1% of the v1 frames each end receives (the client's only, for
ibv_rc_pingpong), and RC recovers.
"""

import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
from loss import dropped, lose_requests_only  # noqa: E402
import perf  # noqa: E402

PORT = 18615


def pingpong(tap, pair, prog, gids, opts, label):
    global PORT
    PORT += 1
    base = ['-d', 'uroce0', '-p', str(PORT), '-n', '500'] + opts
    srv, cli = pair.client_server([prog] + base + ['-g', gids[0]],
                                  [prog] + base + ['-g', gids[1], pair.ip4[0]],
                                  PORT, timeout=120)
    if it.both_ok(tap, f'{prog} -g {gids[0]} ({label})', srv, cli):
        tap.diag(cli.out.strip().splitlines()[-1])


def at_once(tap, pair, v1, v2):
    """An RC pingpong on a v1 GID and one on a v2 GID of the same device, running together."""
    global PORT
    runs = []
    for gids in (v1, v2):
        PORT += 1
        base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '3000']
        srv = pair.start(0, base + ['-g', gids[0]])
        if not pair.wait_listen(0, PORT, srv):
            runs.append((srv, None))
            continue
        runs.append((srv, pair.start(1, base + ['-g', gids[1], pair.ip4[0]])))
    for srv, cli in runs:
        if cli is not None:
            cli.wait(120)
            srv.wait(10)
    for (srv, cli), what in zip(runs, ('RoCE v1', 'RoCE v2')):
        it.both_ok(tap, f'ibv_rc_pingpong on a {what} GID while the other version runs', srv,
                   cli)


def body(tap, pair):
    ll = [str(pair.gid_index(s, 'll', rocev=1)) for s in (0, 1)]
    v4 = [str(pair.gid_index(s, 4, rocev=1)) for s in (0, 1)]
    v2 = [str(pair.gid_index(s, 4)) for s in (0, 1)]
    tap.ok(ll == ['0', '0'] and v4 == ['2', '2'], 'v1 GIDs at ConnectX\'s indices 0 and 2',
           f'fe80:: v1 {ll}, IPv4-mapped v1 {v4}')
    cap = os.path.join(pair.tmp, 'v1.pcap')
    dump = pair.start(1, ['tcpdump', '-i', pair.ifs[1], '-U', '-w', cap,
                          'ether proto 0x8915'], raw=True)
    end = time.monotonic() + 10
    while not os.path.exists(cap) and time.monotonic() < end and dump.p.poll() is None:
        time.sleep(0.05)
    tap.ok(os.path.exists(cap), 'tcpdump captures 0x8915 frames on the veth', dump.so_far()
           if dump.log else '')
    pingpong(tap, pair, 'ibv_rc_pingpong', ll, ['-c'], 'fe80:: RoCE v1 GID')
    pingpong(tap, pair, 'ibv_rc_pingpong', v4, ['-c'], 'IPv4-mapped RoCE v1 GID')
    pingpong(tap, pair, 'ibv_uc_pingpong', ll, ['-c'], 'fe80:: RoCE v1 GID')
    pingpong(tap, pair, 'ibv_uc_pingpong', v4, ['-c'], 'IPv4-mapped RoCE v1 GID')
    pingpong(tap, pair, 'ibv_ud_pingpong', ll, ['-s', '1024', '-c'], 'fe80:: RoCE v1 GID')
    pingpong(tap, pair, 'ibv_ud_pingpong', v4, ['-s', '1024', '-c'], 'IPv4-mapped RoCE v1 GID')
    at_once(tap, pair, ll, v2)

    r = perf.Runner(pair)
    r.gids = ll
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '2000'], label=' -x 0 (RoCE v1)')
    r.run(tap, 'ib_read_lat', ['-n', '1000'], label=' -x 0 (RoCE v1)')
    r.run(tap, 'ib_send_lat', ['-n', '1000'], label=' -x 0 (RoCE v1)')
    r.run(tap, 'ib_atomic_bw', ['-A', 'FETCH_AND_ADD', '-n', '2000'], label=' -x 0 (RoCE v1)')
    r.gids = v4
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '2000'], label=' -x 2 (RoCE v1)')
    r.run(tap, 'ib_read_lat', ['-n', '1000'], label=' -x 2 (RoCE v1)')
    r.run(tap, 'ib_send_lat', ['-n', '1000'], label=' -x 2 (RoCE v1)')
    r.run(tap, 'ib_atomic_bw', ['-A', 'FETCH_AND_ADD', '-n', '2000'], label=' -x 2 (RoCE v1)')

    os.killpg(dump.p.pid, signal.SIGINT)
    dump.wait(10)
    out = it.sh(pair.uroce, 'decode', cap, check=False).stdout.strip().splitlines()
    last = out[-1] if out else '(no output)'
    n = int(last.split()[0]) if last.split()[0].isdigit() else 0
    tap.ok(n > 1000 and last.startswith(f'{n} frames: 0 RoCE v2 + {n} RoCE v1 ({n} accepted), '
                                        '0 other'),
           'every 0x8915 frame on the veth is RoCE v1 that uroce accepts', last)
    tap.diag(last)
    verbose = it.sh(pair.uroce, 'decode', '-v', '-n', '1', cap, check=False).stdout
    tap.ok('NxtHdr         0x1b' in verbose and 'IBA Annex A16' in verbose,
           'uroce decode -v explains a captured v1 frame', verbose)
    with_loss(tap, pair, r, ll)


def with_loss(tap, pair, r, gids):
    for i in range(2):
        pair.uroce_cmd(i, 'loss', pair.ifs[i], '1%')
    try:
        r.gids = gids
        r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '500'], label=' -x 0 with 1% loss')
        r.run(tap, 'ib_read_lat', ['-n', '500'], label=' -x 0 with 1% loss')
        counts = [dropped(pair, i) for i in range(2)]
        tap.ok(all(n > 0 for n, _ in counts), 'the XDP program dropped v1 frames on both ends',
               '\n'.join(out for _, out in counts))
        tap.diag('; '.join(out.strip() for _, out in counts))
        lose_requests_only(tap, pair, r, '1%', label=' -x 0')
        before = [dropped(pair, i)[0] for i in range(2)]
        pingpong(tap, pair, 'ibv_rc_pingpong', gids, ['-c'],
                 'fe80:: RoCE v1 GID, 1% of the requests lost on both ends')
        after = [dropped(pair, i) for i in range(2)]
        tap.ok(sum(n for n, _ in after) > sum(before), 'v1 frames of the pingpong were dropped',
               '\n'.join(out for _, out in after))
    finally:
        for i in range(2):
            pair.uroce_cmd(i, 'loss', pair.ifs[i], 'off', check=False)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'v1', body))
