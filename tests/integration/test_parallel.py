# SPDX-License-Identifier: MIT
"""Three perftest pairs at once on one netdev do not disturb each other.

Each process's packet socket takes only its own QPs' frames: the QPN socket
filter (docs/dataplane.md, "Many QPs") is on in every process, and none of
them sees a frame for another's QP (rx_other_qpn stays 0).
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402


def body(tap, pair):
    r = perf.Runner(pair)
    runs = [('ib_write_bw', ['--report_gbits', '-D', '4']),
            ('ib_send_bw', ['--report_gbits', '-D', '4']),
            ('ib_read_lat', ['-n', '3000'])]
    started = [(tool, opts) + r.start(tool, opts) for tool, opts in runs]
    seen = {}	# (side, pid): the counters as last sampled
    while any(cli is not None and cli.p.poll() is None for _, _, _, cli in started):
        for side in range(2):
            out = pair.uroce_cmd(side, 'stat', '-j', check=False).stdout
            for p in json.loads(out or '[]'):
                seen[(side, p['pid'])] = p['counters']
        time.sleep(0.3)
    for tool, opts, srv, cli in started:
        if cli is not None:
            cli.wait(120)
            srv.wait(15)
        perf.check(tap, f'{tool} {" ".join(opts)} in parallel with two others', srv, cli)
    tap.ok(len(seen) == 2 * len(runs), f'uroce stat showed all {2 * len(runs)} processes',
           repr(sorted(seen)))
    bad = [f'side {side} pid {pid}: qpn_filter {c.get("qpn_filter")}, rx_other_qpn '
           f'{c.get("rx_other_qpn")}, rx_roce {c.get("rx_roce")}'
           for (side, pid), c in sorted(seen.items())
           if c.get('qpn_filter') != 1 or c.get('rx_other_qpn') != 0 or not c.get('rx_roce')]
    tap.ok(not bad, 'every process filters by QPN in the kernel: no frame of another '
           'process\'s QP reached it', '\n'.join(bad))


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'pa', body))
