# SPDX-License-Identifier: MIT
"""The loss injection of a pair's netdevs (`uroce loss`), as the loss suites use it."""

import re


def show(pair, side):
    """(RoCE frames seen, dropped, the line) of the XDP program on SIDE's netdev."""
    out = pair.uroce_cmd(side, 'loss', pair.ifs[side], 'show', check=False).stdout
    seen = re.search(r'roce_frames (\d+)', out)
    dropped = re.search(r'dropped (\d+)', out)
    return (int(seen.group(1)) if seen else -1, int(dropped.group(1)) if dropped else 0,
            out.strip())


def dropped(pair, side):
    """(Frames dropped, the line) on SIDE's netdev."""
    _, n, out = show(pair, side)
    return n, out


def lose_requests_only(tap, pair, runner, rate, label=''):
    """Both ends lose RATE of the requests they receive and no ACK, NAK or response.

    ibv_rc_pingpong ends each side once its own last message is answered: the
    ACK of the other side's last message may then be lost and resent to nobody,
    which ends in retry exceeded on any pair of devices (CI runs hit it).  An
    ib_write_bw first shows the requester's side sees ACKs and drops none.
    """
    for i in range(2):
        pair.uroce_cmd(i, 'loss', pair.ifs[i], rate, 'requests')
    runner.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '500'],
               label=f'{label} with {rate} of the requests lost')
    _, at_responder, srv_out = show(pair, 0)
    acks, at_requester, cli_out = show(pair, 1)
    tap.ok(at_responder > 0 and acks > 0 and at_requester == 0,
           f'{rate} of the requests: writes dropped at the responder, none of the requester\'s '
           'ACKs', f'{srv_out}\n{cli_out}')
