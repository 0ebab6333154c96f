# SPDX-License-Identifier: MIT
"""Data integrity and error semantics through the real libibverbs (verbs_check.c), and peer death."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402


def body(tap, pair):
    prog = os.path.join(pair.build, 'tests', 'integration', 'verbs_check')
    g = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]
    srv, cli = pair.client_server([prog, '-d', 'uroce0', '-g', g[0], '-p', '18600'],
                                  [prog, '-d', 'uroce0', '-g', g[1], '-p', '18600', pair.ip4[0]],
                                  18600, timeout=240)
    if cli is None:
        tap.ok(False, 'verbs_check server starts', srv.out)
        return
    cases = [ln for ln in cli.out.splitlines() if ln.startswith(('PASS ', 'FAIL '))]
    for ln in cases:
        verdict, rest = ln.split(' ', 1)
        tap.ok(verdict == 'PASS', f'{rest} (MTU {pair.mtu})', ln)
    tap.ok(len(cases) == 16 and cli.rc == 0 and srv.rc == 0, 'verbs_check ran every case',
           f'client exit {cli.rc}:\n{cli.out}\nserver exit {srv.rc}:\n{srv.out}')

    srv, cli = pair.client_server([prog, '-d', 'uroce0', '-g', g[0], '-p', '18601'],
                                  [prog, '-d', 'uroce0', '-g', g[1], '-p', '18601',
                                   '--peer-death', pair.ip4[0]], 18601, timeout=120)
    ok = cli is not None and cli.rc == 0 and 'PASS peer_death' in cli.out and srv.rc == -9
    tap.ok(ok, f'peer killed mid-transfer -> IBV_WC_RETRY_EXC_ERR in time (MTU {pair.mtu})',
           (cli.out if cli else '') + f'\nserver exit {srv.rc}:\n{srv.out}')
    if ok:
        tap.diag([ln for ln in cli.out.splitlines() if 'retry exhaustion' in ln][0])


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'vc', body, mtus=(1500, 9000)))
