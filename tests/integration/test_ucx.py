# SPDX-License-Identifier: MIT
"""UCX (Debian's ucx-utils 1.13) on uroce0: ucx_info, ucx_perftest over rc_verbs and ud_verbs, io_demo's data check.

Every program runs through `uroce exec`, server in one namespace, client in the
other.  Which transport UCP used is read from UCX's own log (UCX_LOG_LEVEL=info
prints each endpoint's lanes), never assumed from UCX_TLS.  ucx_perftest 1.13
cannot check data (its VALIDATE flag has no option and no code), so io_demo -q
checks it: every buffer is filled from a seed and checked on arrival, and a
mismatch aborts the receiver.
"""

import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

DEV = 'uroce0:1'
# UCP transports: rc_v is rc_verbs with ud_verbs for wireup only, ud_v is ud_verbs alone.
UCP_TLS = {'rc_verbs': 'rc_v', 'ud_verbs': 'ud_v'}
PORT = 13400


def final(out):
    """ucx_perftest's "Final:" row: (iterations, median and average usec, MB/s, msg/s)."""
    m = re.search(r'^Final:\s+(\d+)\s+(\S+)\s+(\S+)\s+\S+\s+(\S+)\s+\S+\s+(\S+)', out, re.M)
    return (int(m.group(1)),) + tuple(float(m.group(i)) for i in range(2, 6)) if m else None


def lanes(out):
    """Each ep_cfg line of UCX's info log: {lane kind: transport/device}."""
    return [dict(re.findall(r'(\w+)\(([\w]+/[\w:]+)\)', m))
            for m in re.findall(r'ep_cfg\[\d+\]: (.*)$', out, re.M)]


def ucx_env(tls=None):
    env = ['env', 'UCX_LOG_LEVEL=info', f'UCX_NET_DEVICES={DEV}']
    return env + ([f'UCX_TLS={tls}'] if tls else [])


def perftest(tap, pair, name, opts, tls=None, iters=2000):
    """ucx_perftest OPTS between the namespaces; the client's result row, or None."""
    global PORT
    PORT += 1
    base = ['ucx_perftest', '-p', str(PORT), '-n', str(iters), '-w', '100'] + opts
    srv, cli = pair.client_server(ucx_env(tls) + base, ucx_env(tls) + base[:1] + [pair.ip4[0]] +
                                  base[1:], PORT, timeout=120)
    if not it.both_ok(tap, name, srv, cli):
        return None
    row = final(cli.out)
    tap.ok(row is not None and row[0] == iters and row[3] > 0,
           f'{name}: {iters} iterations, bandwidth reported', cli.out)
    if row:
        tap.diag(f'{name}: latency median {row[1]:g} average {row[2]:g} usec, {row[3]:g} MB/s, '
                 f'{row[4]:g} msg/s')
    return cli


def uct(tap, pair, tl, test, layout, size, iters=2000):
    return perftest(tap, pair, f'UCT {test} {tl} {layout} {size} B',
                    ['-d', DEV, '-x', tl, '-t', test, '-D', layout, '-s', str(size)],
                    iters=iters)


def ucp(tap, pair, tl, test, size, lane, iters=2000):
    """A UCP test with UCX_TLS naming TL; UCX's log must show LANE on TL over uroce0."""
    cli = perftest(tap, pair, f'UCP {test} {tl} {size} B', ['-t', test, '-s', str(size)],
                   tls=UCP_TLS[tl], iters=iters)
    if cli is not None:
        used = lanes(cli.out)
        tap.ok(bool(used) and all(u.get(lane) == f'{tl}/{DEV}' for u in used),
               f'UCP {test} {tl}: UCX\'s log shows its {lane} lane on {tl}/{DEV}', cli.out)


def io_demo(tap, pair, tl, am):
    """io_demo -q: reads and writes of 1 B to 100 kB, every byte checked by the receiver."""
    global PORT
    PORT += 1
    api = ['-A'] if am else []
    base = ['io_demo', '-q', '-p', str(PORT), '-d', '1:100000', '-o', 'read,write'] + api
    name = f'io_demo -q {"AM" if am else "tag"} API over {tl}: data checked'
    srv = pair.start(0, ucx_env(UCP_TLS[tl]) + base)
    if not pair.wait_listen(0, PORT, srv):
        srv.kill()
        srv.wait(5)
        tap.ok(False, name, f'server did not listen:\n{srv.out}')
        return
    cli = pair.start(1, ucx_env(UCP_TLS[tl]) + base + ['-i', '3000', pair.ip4[0]])
    cli.wait(120)
    # The server serves until stopped: alive here means it found no bad byte (that aborts it).
    server_alive = srv.p.poll() is None
    srv.kill()
    srv.wait(5)
    tap.ok(cli.rc == 0 and "Client exit with status 'OK'" in cli.out and server_alive,
           name, f'server alive {server_alive}:\n{srv.out}\nclient exit {cli.rc}:\n{cli.out}')
    used = lanes(cli.out)
    kind = 'am' if am else 'tag'
    tap.ok(bool(used) and all(u.get(kind) == f'{tl}/{DEV}' for u in used),
           f'io_demo over {tl}: UCX\'s log shows its {kind} lanes on {tl}/{DEV}', cli.out)


def body(tap, pair):
    p = pair.start(0, ['env', 'UCX_LOG_LEVEL=diag', 'ucx_info', '-d'])
    p.wait(60)
    block = p.out.split('# Memory domain: uroce0', 1)[1].split('# Memory domain:', 1)[0] \
        if '# Memory domain: uroce0' in p.out else ''
    for tl in UCP_TLS:
        tap.ok(p.rc == 0 and re.search(rf'Transport: {tl}\s*\n#\s+Device: {DEV}', block),
               f'ucx_info -d lists {tl} on {DEV}', p.out)
    tap.ok('failed to read' not in p.out,
           'ucx_info -d: UCX reads every sysfs file it looks for (the /sys view)', p.out)

    for test, layout, size in (('am_lat', 'short', 8), ('am_bw', 'short', 8),
                               ('am_bw', 'bcopy', 1000)):
        for tl in UCP_TLS:
            uct(tap, pair, tl, test, layout, size, iters=10000 if size == 8 else 2000)
    uct(tap, pair, 'rc_verbs', 'am_bw', 'zcopy', 8192)
    uct(tap, pair, 'rc_verbs', 'put_bw', 'short', 8)
    uct(tap, pair, 'rc_verbs', 'put_bw', 'bcopy', 4096)
    uct(tap, pair, 'rc_verbs', 'put_bw', 'zcopy', 65536)
    uct(tap, pair, 'rc_verbs', 'get', 'bcopy', 4096)
    uct(tap, pair, 'rc_verbs', 'get', 'zcopy', 65536)

    for tl in UCP_TLS:
        ucp(tap, pair, tl, 'tag_lat', 8, 'tag', iters=10000)
        ucp(tap, pair, tl, 'tag_bw', 8, 'tag', iters=10000)
        ucp(tap, pair, tl, 'tag_bw', 1000000, 'tag', iters=200)
        rma = 'rma' if tl == 'rc_verbs' else 'rma_am'	# ud_verbs: put and get over AM
        ucp(tap, pair, tl, 'ucp_put_bw', 65536, rma, iters=500)
        ucp(tap, pair, tl, 'ucp_get', 65536, rma, iters=200)

    for tl in UCP_TLS:
        io_demo(tap, pair, tl, am=False)
        io_demo(tap, pair, tl, am=True)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'ucx', body))
