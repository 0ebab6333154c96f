# SPDX-License-Identifier: MIT
"""Unmodified ibverbs-utils pingpongs (RC, UC, UD, SRQ), polling and -e events, IPv4 and IPv6 GIDs."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

PORT = 18515


def body(tap, pair):
    global PORT
    ib_mtu = '4096' if pair.mtu >= 9000 else '1024'
    ud_size = '4096' if pair.mtu >= 9000 else '1024'
    progs = {
        'ibv_rc_pingpong': ['-m', ib_mtu, '-c'],
        'ibv_uc_pingpong': ['-m', ib_mtu, '-c'],
        'ibv_ud_pingpong': ['-s', ud_size, '-c'],
        'ibv_srq_pingpong': ['-m', ib_mtu, '-c', '-q', '4'],
    }
    for family in (4, 6):
        gids = [str(pair.gid_index(0, family)), str(pair.gid_index(1, family))]
        for prog, opts in progs.items():
            variants = [[], ['-e']]
            if prog == 'ibv_rc_pingpong':
                variants.append(['-N'])	# the ibv_wr_* post-send API
            for extra in variants:
                PORT += 1
                base = ['-d', 'uroce0', '-p', str(PORT), '-n', '500'] + opts + extra
                srv, cli = pair.client_server([prog] + base + ['-g', gids[0]],
                                              [prog] + base + ['-g', gids[1], pair.ip4[0]],
                                              PORT, timeout=120)
                name = f'{prog} {" ".join(opts + extra)} IPv{family} GID, MTU {pair.mtu}'
                if it.both_ok(tap, name, srv, cli):
                    tap.diag(cli.out.strip().splitlines()[-1])


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'pp', body, mtus=(1500, 9000)))
