# SPDX-License-Identifier: MIT
"""More librdmacm clients over uroce's rdma_cm, and what a crowd or a crash does to it: a hundred
connects at once to one listener (cmtime, ucmatose), a listener killed while clients connect,
qperf -cm1, rsockets (rstream, librspreload under iperf3) and libfabric's verbs provider."""

import json
import os
import re
import time
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
from test_rdmacm import CM_ENV, cm_client_server, wait_listening  # noqa: E402

STORM = 100
STORM_ROUNDS = 3


def proc_stat(pair, side, pid):
    """`uroce stat -j` of one process on a side: (counters, live QPNs), or (None, None)."""
    for d in json.loads(pair.uroce_cmd(side, 'stat', '-a', '-j').stdout):
        if d['pid'] == pid:
            return d['counters'], sorted(q['qpn'] for q in d['qps'])
    return None, None


def fds(pid):
    d = f'/proc/{pid}/fd'
    return sorted(f'{n}->{os.readlink(os.path.join(d, n))}' for n in os.listdir(d))


def storm(tap, pair):
    """STORM connects at once to one cmtime listener, STORM_ROUNDS times: every one established
    and disconnected, the listener's descriptors and QPs what they were after the first round,
    and its CM's counters exactly the MADs of the connections.  The CM's timers are the wire's
    (4.3 s), not the short ones of the other tests, and QP1 drops nothing for want of a receive
    WQE: a REQ lost in the crowd would show as a duplicate or a drop."""
    a = pair.ip4[0]
    port = 7300
    srv = pair.start(0, ['cmtime', '-b', a, '-p', str(port)])
    if not wait_listening(pair, 0, port, srv):
        srv.kill()
        srv.wait(5)
        return tap.ok(False, 'cmtime server listens', srv.out)
    pid = srv.p.pid
    fds0 = qps0 = None
    for r in range(STORM_ROUNDS):
        cli = pair.start(1, ['cmtime', '-s', a, '-p', str(port), '-c', str(STORM)])
        cli.wait(120)
        tap.ok(cli.rc == 0 and re.search(r'^disconnect\s*:', cli.out, re.M) and
               'event:' not in cli.out and 'error' not in cli.out,
               f'cmtime -c {STORM} round {r + 1}: every connect established and disconnected',
               cli.out)
        tap.diag('\n'.join(ln for ln in cli.out.splitlines()
                           if ln.split(':')[0].strip() in ('connect', 'disconnect')))
        if r == 0:
            # What the first connection opens for good (librdmacm's verbs context, its
            # pipes) is there from now on: later rounds must leave exactly this.
            time.sleep(0.5)
            fds0 = fds(pid)
            _, qps0 = proc_stat(pair, 0, pid)
    time.sleep(0.5)	# the server's last DREPs and counters (published every 100 ms)
    cnt, qps = proc_stat(pair, 0, pid)
    tap.ok(fds(pid) == fds0, 'cmtime server: no descriptor left over by rounds 2 and 3',
           f'after round 1 {fds0}\nnow {fds(pid)}')
    tap.ok(qps is not None and qps == qps0, 'cmtime server: no QP left over by rounds 2 and 3',
           f'after round 1 {qps0}\nnow {qps}')
    n = STORM * STORM_ROUNDS
    tap.diag('cmtime server CM: ' + ' '.join(f'{k}={v}' for k, v in (cnt or {}).items()
                                            if k.startswith('cm_') and v))
    # In: REQ, RTU, DREQ of each (a DREQ repeated after its ID is gone is unclaimed);
    # out: REP and DREP of each, plus the DREPs for those repeats.
    tap.ok(cnt is not None and cnt['drop_no_recv_wqe'] == 0 and
           cnt['cm_mads_rx'] - cnt['cm_unclaimed'] - cnt['cm_duplicates'] == 3 * n and
           cnt['cm_mads_tx'] - cnt['cm_unclaimed'] - cnt['cm_retransmits'] == 2 * n and
           cnt['cm_not_ours'] == 0 and cnt['cm_timeouts'] == 0 and cnt['cm_rej_tx'] == 0,
           f'cmtime server: its CM took {3 * n} MADs and sent {2 * n}, QP1 dropped none',
           json.dumps(cnt))
    srv.kill()
    srv.wait(5)

    srv, cli = cm_client_server(pair, ['ucmatose', '-b', a, '-c', str(STORM)],
                                ['ucmatose', '-s', a, '-c', str(STORM)], 7471)
    it.both_ok(tap, f'ucmatose -c {STORM}: connections, data, disconnects', srv, cli)


def body(tap, pair):
    storm(tap, pair)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'cmc', body))
