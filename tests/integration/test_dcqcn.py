# SPDX-License-Identifier: MIT
"""DCQCN end to end through a bottleneck that marks ECN (`uroce bottleneck`, docs/usage.md).

Two devices with `dcqcn on`; the server's netdev receives through a 300 Mbit/s bottleneck.
Unmodified ib_write_bw completes, and the counters read while it runs show the whole loop: the
bottleneck marked frames and dropped none for being not ECN-capable (a DCQCN device sends
ECT(0)), the server's responder saw CE and sent CNPs, the client's requester received them and
cut its rate.  Goodput is printed, not judged (tests/bench/bench_dcqcn.sh measures it).
"""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

RATE_MBIT = '300'


def counters(pair, side):
    """The side's device counters summed over its running processes, and the raw text."""
    stats = json.loads(pair.uroce_cmd(side, 'stat', '-a', '-j').stdout)
    total = {}
    for d in stats:
        for name, v in d.get('counters', {}).items():
            total[name] = total.get(name, 0) + v
    return total, json.dumps(stats)[:2000]


def bottleneck(pair):
    out = pair.uroce_cmd(0, 'bottleneck', pair.ifs[0], 'show').stdout
    return {k: int(v) for k, v in re.findall(r'(\w+) (\d+)', out)}, out


def body(tap, pair):
    bad = pair.uroce_cmd(0, 'bottleneck', pair.ifs[0], '300', 'mark', '9', '5', '1%', check=False)
    tap.ok(bad.returncode != 0 and 'kmin <= kmax' in bad.stdout,
           'uroce bottleneck refuses kmin above kmax', bad.stdout)
    pair.uroce_cmd(0, 'bottleneck', pair.ifs[0], RATE_MBIT, 'mark', '10000', '100000', '10%')
    try:
        r = perf.Runner(pair)
        opts = ['--report_gbits', '-s', '65536', '-D', '4']
        srv, cli = r.start('ib_write_bw', opts)
        seen = None
        if cli is not None:
            time.sleep(3)	# inside the 4 s run; counters are published every 100 ms
            seen = counters(pair, 0), counters(pair, 1), bottleneck(pair)
            cli.wait(60)
            srv.wait(15)
        perf.check(tap, f'ib_write_bw {" ".join(opts)} through a {RATE_MBIT} Mbit/s bottleneck, '
                   'DCQCN on', srv, cli)
        if seen:
            (server, s_out), (client, c_out), (neck, n_out) = seen
            tap.ok(neck['marked'] > 0, f'the bottleneck marked CE ({neck["marked"]})', n_out)
            tap.ok(neck['early_drops'] == 0,
                   'every frame it would mark was ECN-capable (no early drop)', n_out)
            for name, side, out in (('ecn_ce_rx', server, s_out), ('cnps_tx', server, s_out),
                                    ('cnps_rx', client, c_out), ('rate_cuts', client, c_out)):
                tap.ok(side.get(name, 0) > 0, f'{name} counted ({side.get(name, 0)})', out)
    finally:
        pair.uroce_cmd(0, 'bottleneck', pair.ifs[0], 'off', check=False)
    out = pair.uroce_cmd(0, 'bottleneck', pair.ifs[0], 'show').stdout
    link = it.sh('ip', '-n', pair.ns[0], 'link', 'show', pair.ifs[0]).stdout
    tap.ok('no bottleneck' in out and 'xdp' not in link,
           'bottleneck off removes the XDP program', out + link)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'dq', body,
                          link_args=('dcqcn', 'on', 'dce_tcp_rtt', '55', 'line_rate', '10000')))
