# SPDX-License-Identifier: MIT
"""Unmodified perftest, every tool, with -a, -q 4, -D, --report_gbits, UD sends and GID auto-selection."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402


def body(tap, pair):
    r = perf.Runner(pair)
    bw = ['--report_gbits', '-n', '2000']
    for tool in perf.BW_TOOLS:
        r.run(tap, tool, bw)
        r.run(tap, tool, ['--report_gbits', '-a', '-n', '20'])
        r.run(tap, tool, ['--report_gbits', '-q', '4', '-n', '1000'])
    r.run(tap, 'ib_atomic_bw', ['-A', 'FETCH_AND_ADD', '-n', '2000'])
    r.run(tap, 'ib_atomic_bw', ['-A', 'CMP_AND_SWAP', '-n', '2000'])
    r.run(tap, 'ib_atomic_bw', ['-A', 'FETCH_AND_ADD', '-q', '4', '-n', '500'])
    for tool in perf.LAT_TOOLS:
        r.run(tap, tool, ['-n', '1000'])
        r.run(tap, tool, ['-a', '-n', '20'])
    r.run(tap, 'ib_atomic_lat', ['-A', 'FETCH_AND_ADD', '-n', '1000'])
    r.run(tap, 'ib_atomic_lat', ['-A', 'CMP_AND_SWAP', '-n', '1000'])
    r.run(tap, 'ib_send_bw', ['-c', 'UD', '--report_gbits', '-a', '-n', '200'])
    r.run(tap, 'ib_send_lat', ['-c', 'UD', '-n', '1000'])
    r.run(tap, 'ib_write_bw', ['-c', 'UC', '--report_gbits', '-n', '1000'])
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-D', '3'])
    r.run(tap, 'ib_send_lat', ['-D', '3'])
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '1000'], default_gid=True,
          label=' with the GID perftest picks')


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'pt', body, mtus=(1500, 9000)))
