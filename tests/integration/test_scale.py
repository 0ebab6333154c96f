# SPDX-License-Identifier: MIT
"""Thousands of RC QPs in one process and a connection storm (scale_check.c), tens of
thousands on one host (two process pairs holding theirs at once), perftest with -q 64 and 256."""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

QPS = 4096
STORM = 256
ROUNDS = 10
HOST_PAIRS = 2		# process pairs at once, each end in its own namespace
HOST_QPS = 8192		# QPs each: 16384 per namespace, 32768 on the host
HOST_CHECKS = ['many_qps_data', 'many_qps_counted', 'many_qps_listed', 'many_qps_nothing_left']
CHECKS = ['many_qps_data', 'many_qps_counted', 'many_qps_listed', 'many_qps_nothing_left',
          'storm_data', 'storm_nothing_left', 'storm_no_memory_growth']


def scale_check(tap, pair):
    prog = os.path.join(pair.build, 'tests', 'integration', 'scale_check')
    g = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]
    common = ['-d', 'uroce0', '-p', '18800', '-n', str(QPS), '--storm', str(STORM),
              '--rounds', str(ROUNDS), '--uroce', pair.uroce]
    srv, cli = pair.client_server([prog, '-g', g[0]] + common,
                                  [prog, '-g', g[1]] + common + [pair.ip4[0]], 18800,
                                  timeout=600)
    if cli is None:
        tap.ok(False, 'scale_check server starts', srv.out)
        return
    for side, p in (('server', srv), ('client', cli)):
        lines = p.out.splitlines()
        got = verdicts(p.out)
        for name in CHECKS:
            ln = got.get(name, f'FAIL {name}: not reported')
            tap.ok(ln.startswith('PASS '), f'{side}: {name} ({QPS} QPs, storm {ROUNDS} x '
                   f'{STORM} pairs)', p.out if name not in got else ln)
        tap.ok(p.rc == 0, f'{side}: scale_check exits 0', p.out)
        tap.diag('\n'.join(f'{side}: {ln}' for ln in lines if ln.startswith('FIGURE ')))
    # Every packet one end sent reached the other or is counted as dropped by a port.
    ends = [dict(kv.split('=') for kv in m.group(1).split()) if m else None
            for m in (re.search(r'^FIGURE end (.*)$', p.out, re.M) for p in (srv, cli))]
    if None in ends:
        tap.ok(False, 'packet counts reported', srv.out + cli.out)
    else:
        for a, b, way in ((ends[1], ends[0], 'client to server'), (ends[0], ends[1], 'server to client')):
            missing = int(a['tx_packets']) - int(b['rx_packets'])
            tap.ok(0 <= missing <= int(a['tx_dropped']) + int(b['rx_ring_drops']),
                   f'{way}: packets sent = received + counted as dropped', f'sent {a}\nreceived {b}')
    for side in range(2):
        out = pair.uroce_cmd(side, 'stat').stdout
        tap.ok(out.startswith('no running uroce device'),
               f'side {side}: no uroce device left running after scale_check exits', out)


def verdicts(out):
    return {ln.split()[1].rstrip(':'): ln for ln in out.splitlines()
            if ln.startswith(('PASS ', 'FAIL '))}


def device_totals(pair, side):
    """Summed over the processes `uroce stat -j` shows: (processes, live_qps, qpns_held)."""
    procs = json.loads(pair.uroce_cmd(side, 'stat', '-j').stdout or '[]')
    return (len(procs), sum(p['counters']['live_qps'] for p in procs),
            sum(p['counters']['qpns_held'] for p in procs))


def host_wide(tap, pair):
    """HOST_PAIRS scale_check pairs between the two namespaces, all holding HOST_QPS QPs at once.

    Each QP posts its write at the same moment as every other: 24576 frames a process into
    af_packet rings of 4096 frames that each take every frame of the netdev.  Without the
    engine's in-flight budget the rings overflow, the QPs time out and resend together, and
    some end in IBV_WC_RETRY_EXC_ERR (docs/dataplane.md, "Many QPs").
    """
    prog = os.path.join(pair.build, 'tests', 'integration', 'scale_check')
    g = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]
    release = os.path.join(pair.tmp, 'release')
    procs = []
    for k in range(HOST_PAIRS):
        port = str(18810 + k)
        common = ['-d', 'uroce0', '-p', port, '-n', str(HOST_QPS), '--rounds', '0',
                  '--uroce', pair.uroce, '--hold', release]
        srv = pair.start(0, [prog, '-g', g[0]] + common, log=f'host-srv-{k}.log')
        if not pair.wait_listen(0, port, srv):
            tap.ok(False, f'host-wide: scale_check server {k} starts', srv.so_far())
            return
        procs.append(srv)
        procs.append(pair.start(1, [prog, '-g', g[1]] + common + [pair.ip4[0]],
                                log=f'host-cli-{k}.log'))
    t0 = time.monotonic()
    end = t0 + 300
    while time.monotonic() < end and not all('HOLDING' in p.so_far() or p.p.poll() is not None
                                             for p in procs):
        time.sleep(0.1)
    up_s = time.monotonic() - t0
    holding = sum('HOLDING' in p.so_far() for p in procs)
    tap.ok(holding == len(procs), f'host-wide: {len(procs)} processes hold {HOST_QPS} connected '
           f'QPs each, data checked', '\n'.join(p.so_far() for p in procs))
    for side in range(2):
        n, live, held = device_totals(pair, side)
        want = HOST_PAIRS * HOST_QPS
        tap.ok(n == HOST_PAIRS and live == want and held == want,
               f'host-wide: side {side}: uroce stat shows {HOST_PAIRS} processes with {want} '
               f'live QPs and QPNs held', f'{n} processes, live_qps {live}, qpns_held {held}')
    tap.diag(f'host-wide: {2 * HOST_PAIRS * HOST_QPS} QPs live on the host, '
             f'{up_s:.1f} s to create, connect and check them all')
    open(release, 'w').close()
    for p in procs:
        p.wait(300)
    for k, p in enumerate(procs):
        got = verdicts(p.out)
        bad = [got.get(c, f'FAIL {c}: not reported') for c in HOST_CHECKS
               if not got.get(c, '').startswith('PASS ')]
        tap.ok(p.rc == 0 and not bad, f'host-wide: process {k}: {", ".join(HOST_CHECKS)}, exit 0',
               p.out)
        tap.diag('\n'.join(f'host-wide: process {k}: {ln}' for ln in p.out.splitlines()
                           if ln.startswith('FIGURE ')))
    for side in range(2):
        out = pair.uroce_cmd(side, 'stat').stdout
        tap.ok(out.startswith('no running uroce device'),
               f'host-wide: side {side}: no uroce device left running afterwards', out)


def body(tap, pair):
    scale_check(tap, pair)
    host_wide(tap, pair)
    r = perf.Runner(pair, port=18900)
    for q in (64, 256):
        r.run(tap, 'ib_write_bw', ['--report_gbits', '-q', str(q), '-n', '200'], timeout=300)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'sc', body))
