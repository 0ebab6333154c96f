# SPDX-License-Identifier: MIT
"""Selective repeat between two uroce devices (`selective_repeat on`) with 1% loss on both ends.

Unmodified perftest and ibv_rc_pingpong complete, and the engines' counters,
read while a 64 KiB ib_write_bw runs, show that the server placed writes out
of order and the client resent on selective NAKs (docs/engine.md, "Selective
repeat").  Goodput is printed, not judged: that is the benchmarks' business.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
from loss import lose_requests_only  # noqa: E402
import perf  # noqa: E402

RATE = '1%'


def counter(pair, side, name):
    """NAME summed over the side's running processes' devices (`uroce stat -a -j`)."""
    stats = json.loads(pair.uroce_cmd(side, 'stat', '-a', '-j').stdout)
    return sum(d.get('counters', {}).get(name, 0) for d in stats), json.dumps(stats)[:2000]


def body(tap, pair):
    for i in range(2):
        pair.uroce_cmd(i, 'loss', pair.ifs[i], RATE)
    try:
        r = perf.Runner(pair)
        opts = ['--report_gbits', '-s', '65536', '-D', '4']
        srv, cli = r.start('ib_write_bw', opts)
        seen = {}
        if cli is not None:
            time.sleep(3)	# inside the 4 s run; counters are published every 100 ms
            for side, name in ((1, 'selective_naks_rx'), (1, 'selective_resends'),
                               (0, 'selective_naks_tx'), (0, 'selective_placed')):
                seen[name] = counter(pair, side, name)
            cli.wait(60)
            srv.wait(15)
        perf.check(tap, f'ib_write_bw {" ".join(opts)} with {RATE} loss, selective repeat',
                   srv, cli)
        for name, (value, out) in seen.items():
            tap.ok(value > 0, f'{name} counted during the 64 KiB ib_write_bw ({value})', out)

        for tool in ('ib_send_bw', 'ib_read_bw'):
            r.run(tap, tool, ['--report_gbits', '-s', '65536', '-n', '500'],
                  label=f' with {RATE} loss, selective repeat')
        lose_requests_only(tap, pair, r, RATE, label=', selective repeat,')
        g = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]
        base = ['ibv_rc_pingpong', '-d', 'uroce0', '-c', '-s', '65536', '-n', '300',
                '-p', '18590']
        srv, cli = pair.client_server(base + ['-g', g[0]], base + ['-g', g[1], pair.ip4[0]], 18590)
        it.both_ok(tap, f'ibv_rc_pingpong -c -s 65536 with {RATE} of the requests lost on both '
                   'ends, selective repeat', srv, cli)
    finally:
        for i in range(2):
            pair.uroce_cmd(i, 'loss', pair.ifs[i], 'off', check=False)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'sr', body,
                          link_args=('selective_repeat', 'on')))
