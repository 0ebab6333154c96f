# SPDX-License-Identifier: MIT
"""Thousands of RC QPs in one process and a connection storm (scale_check.c), perftest with -q 64 and 256."""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

QPS = 4096
STORM = 256
ROUNDS = 10
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
        verdicts = {ln.split()[1].rstrip(':'): ln for ln in lines
                    if ln.startswith(('PASS ', 'FAIL '))}
        for name in CHECKS:
            ln = verdicts.get(name, f'FAIL {name}: not reported')
            tap.ok(ln.startswith('PASS '), f'{side}: {name} ({QPS} QPs, storm {ROUNDS} x '
                   f'{STORM} pairs)', p.out if name not in verdicts else ln)
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


def body(tap, pair):
    scale_check(tap, pair)
    r = perf.Runner(pair, port=18900)
    for q in (64, 256):
        r.run(tap, 'ib_write_bw', ['--report_gbits', '-q', str(q), '-n', '200'], timeout=300)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'sc', body))
