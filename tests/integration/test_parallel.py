# SPDX-License-Identifier: MIT
"""Two perftest pairs at once on one netdev do not disturb each other."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402


def body(tap, pair):
    r = perf.Runner(pair)
    runs = [('ib_write_bw', ['--report_gbits', '-D', '4']),
            ('ib_send_bw', ['--report_gbits', '-D', '4']),
            ('ib_read_lat', ['-n', '3000'])]
    started = [(tool, opts) + r.start(tool, opts) for tool, opts in runs]
    for tool, opts, srv, cli in started:
        if cli is not None:
            cli.wait(120)
            srv.wait(15)
        perf.check(tap, f'{tool} {" ".join(opts)} in parallel with two others', srv, cli)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'pa', body))
