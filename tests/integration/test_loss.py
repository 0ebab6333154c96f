# SPDX-License-Identifier: MIT
"""With 1% of the RoCE frames each end receives dropped, every reliable (RC) tool still completes.

UC and UD do not retransmit (IBA chapter 9): a lost frame is a lost
message, and perftest's UD/UC receivers then wait for it forever, so they
are left out here; the loss-free suites run them.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
from loss import dropped, lose_requests_only, show  # noqa: E402
import perf  # noqa: E402

RATE = '1%'


def body(tap, pair):
    for words, want in ((['show', 'requests'], "'requests' goes after a RATE, not after 'show'"),
                        (['off', 'requests'], "'requests' goes after a RATE, not after 'off'"),
                        (['1%', 'responses'], 'usage: uroce loss'),
                        (['lots'], "'lots' is not a rate")):
        p = pair.uroce_cmd(0, 'loss', pair.ifs[0], *words, check=False)
        tap.ok(p.returncode == 2 and want in p.stdout and 'no loss injection' in show(pair, 0)[2],
               f'uroce loss IFACE {" ".join(words)} is refused and changes nothing',
               f'exit {p.returncode}: {p.stdout}{show(pair, 0)[2]}')
    for i in range(2):
        pair.uroce_cmd(i, 'loss', pair.ifs[i], RATE)
    try:
        r = perf.Runner(pair)
        for tool in perf.BW_TOOLS:
            r.run(tap, tool, ['--report_gbits', '-n', '500'], label=f' with {RATE} loss')
        r.run(tap, 'ib_atomic_bw', ['-A', 'FETCH_AND_ADD', '-n', '1000'], label=f' with {RATE} loss')
        r.run(tap, 'ib_atomic_bw', ['-A', 'CMP_AND_SWAP', '-n', '1000'], label=f' with {RATE} loss')
        for tool in perf.LAT_TOOLS:
            r.run(tap, tool, ['-n', '500'], label=f' with {RATE} loss')
        r.run(tap, 'ib_atomic_lat', ['-A', 'FETCH_AND_ADD', '-n', '500'], label=f' with {RATE} loss')
        r.run(tap, 'ib_atomic_lat', ['-A', 'CMP_AND_SWAP', '-n', '500'], label=f' with {RATE} loss')
        r.run(tap, 'ib_write_bw', ['--report_gbits', '-q', '4', '-n', '300'],
              label=f' with {RATE} loss')

        # Data checks: pingpong validating every buffer, and our own integrity cases.
        counts = [dropped(pair, i) for i in range(2)]
        tap.ok(all(n > 0 for n, _ in counts), 'frames were really dropped on both ends',
               '\n'.join(out for _, out in counts))
        tap.diag('; '.join(out.strip() for _, out in counts))
        lose_requests_only(tap, pair, r, RATE)
        g = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]
        base = ['ibv_rc_pingpong', '-d', 'uroce0', '-c', '-n', '500', '-p', '18590']
        srv, cli = pair.client_server(base + ['-g', g[0]], base + ['-g', g[1], pair.ip4[0]], 18590)
        it.both_ok(tap, f'ibv_rc_pingpong -c with {RATE} of the requests lost on both ends',
                   srv, cli)
        for i in range(2):
            pair.uroce_cmd(i, 'loss', pair.ifs[i], RATE)

        # verbs_check's error cases end with the responder's NAK, after which its QP is in
        # the error state (IBA 9.9.2, class C): a lost NAK can only end in a retry-exceeded
        # error, on any pair of devices.  Loss stays on the responder's receive side (server,
        # namespace 0), so the bad requests are lost and resent, but never the NAK.
        pair.uroce_cmd(1, 'loss', pair.ifs[1], 'off')
        before, _ = dropped(pair, 0)
        prog = os.path.join(pair.build, 'tests', 'integration', 'verbs_check')
        srv, cli = pair.client_server([prog, '-d', 'uroce0', '-g', g[0], '-p', '18591'],
                                      [prog, '-d', 'uroce0', '-g', g[1], '-p', '18591',
                                       pair.ip4[0]], 18591, timeout=300)
        it.both_ok(tap, f'verbs_check integrity and error cases with {RATE} loss at the '
                   'responder', srv, cli)
        after, out = dropped(pair, 0)
        tap.ok(after > before, 'frames to the responder were really dropped during verbs_check',
               out)
        tap.diag(f'dropped at the responder during verbs_check: {after - before}')
    finally:
        for i in range(2):
            pair.uroce_cmd(i, 'loss', pair.ifs[i], 'off', check=False)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'lo', body))
