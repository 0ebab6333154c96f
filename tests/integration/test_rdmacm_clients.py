# SPDX-License-Identifier: MIT
"""More librdmacm clients over uroce's rdma_cm, and what a crowd or a crash does to it: a hundred
connects at once to one listener (cmtime, ucmatose), a listener killed while clients connect,
a process killed with an idle connection (its peer disconnected), qperf -cm1, rsockets (rstream,
rpoll(), librspreload) and libfabric's verbs provider."""

import json
import os
import re
import shutil
import time
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
from test_rdmacm import CM_ENV, RDMA_PS_TCP, cm_client_server, wait_listening  # noqa: E402

STORM = 100
STORM_ROUNDS = 3


def proc_stat(pair, side, pid):
    """`uroce stat -j` of one process on a side: (counters, live QPNs), or (None, None)."""
    for d in json.loads(pair.uroce_cmd(side, 'stat', '-a', '-j').stdout):
        if d['pid'] == pid:
            return d['counters'], sorted(q['qpn'] for q in d['qps'])
    return None, None


def listeners(pair, side, port):
    """The PIDs the host's listen table (RUN_DIR/cm/NETDEV) has for the port's service ID."""
    sid = f'{RDMA_PS_TCP << 16 | port:016x}'
    try:
        with open(os.path.join(pair.run_dirs[side], 'cm', pair.ifs[side])) as f:
            return [int(w[1]) for w in (ln.split() for ln in f) if w[:1] == [sid]]
    except FileNotFoundError:
        return []


def wait_until(cond, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.01)
    return False


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


def killed_listener(tap, pair):
    """A listener killed (SIGKILL, nothing said to anyone) while its clients connect, and one
    killed under a running rping: the clients end in error events or error completions, never
    hang; the dead process's port is free again and a new listener on it takes connections."""
    a = pair.ip4[0]
    port = 7310
    srv = pair.start(0, CM_ENV + ['cmtime', '-b', a, '-p', str(port)])
    if not wait_listening(pair, 0, port, srv):
        srv.kill()
        srv.wait(5)
        return tap.ok(False, 'cmtime server listens', srv.out)
    dead = srv.p.pid
    # Killed as soon as the client says it starts connecting (its output line-buffered).
    cli = pair.start(1, CM_ENV + ['stdbuf', '-oL', 'cmtime', '-s', a, '-p', str(port),
                                  '-c', str(STORM)], log='cmtime-killed.log')
    taken = wait_until(lambda: 'connecting' in cli.so_far(), 30)
    srv.kill()
    srv.wait(5)
    t0 = time.monotonic()
    cli.wait(60)
    took = time.monotonic() - t0
    events = re.findall(r'event: (RDMA_CM_EVENT_\w+)', cli.out)
    events = [f'{events.count(e)} {e}' for e in sorted(set(events))]
    tap.ok(taken and cli.rc not in (None, -9) and re.search(r'^disconnect\s*:', cli.out, re.M),
           f'cmtime -c {STORM}, its listener killed while they connect: the client ends '
           f'({took:.1f} s, {", ".join(events) or "no error event"})', cli.out)

    # Another process's CM on that netdev now answers for the dead one: the port is nobody's.
    other = pair.start(0, CM_ENV + ['rping', '-s', '-a', a, '-p', str(port + 1)])
    if wait_listening(pair, 0, port + 1, other):
        cli = pair.start(1, CM_ENV + ['rping', '-c', '-a', a, '-p', str(port), '-C', '1'])
        cli.wait(60)
        tap.ok('RDMA_CM_EVENT_REJECTED, error 8' in cli.out and dead not in listeners(pair, 0, port),
               'the dead listener\'s port: a connect is rejected (invalid service ID), its entry gone',
               cli.out)
    else:
        tap.ok(False, 'rping -s listens', other.out)

    # A new listener on the port: every connection of a storm established.
    srv = pair.start(0, CM_ENV + ['cmtime', '-b', a, '-p', str(port)])
    up = wait_until(lambda: srv.p.pid in listeners(pair, 0, port) or srv.p.poll() is not None, 30)
    cli = pair.start(1, CM_ENV + ['cmtime', '-s', a, '-p', str(port), '-c', str(STORM)])
    cli.wait(60)
    srv.kill()
    srv.wait(5)
    tap.ok(up and cli.rc == 0 and 'event:' not in cli.out and 'error' not in cli.out,
           f'a new listener on the dead one\'s port: cmtime -c {STORM} connects and disconnects',
           srv.out + cli.out)

    # Killed under a running ib_write_bw -R: the client's writes end in error completions
    # (retry exceeded), and it exits.
    perf_port = port + 2
    argv = ['ib_write_bw', '-d', 'uroce0', '-F', '-R', '-D', '30', '-p', str(perf_port)]
    srv = pair.start(0, CM_ENV + argv)
    if not wait_listening(pair, 0, perf_port, srv):
        return tap.ok(False, 'ib_write_bw -R listens', srv.out)
    cli = pair.start(1, CM_ENV + argv + [a], log='write-bw-killed.log')

    def writing_qps():
        return [q for d in json.loads(pair.uroce_cmd(1, 'stat', '-j').stdout)
                if d['pid'] == cli.p.pid for q in d['qps'] if q.get('tx_packets', 0) > 1000]
    running = wait_until(writing_qps, 30)
    qp = writing_qps()
    tap.ok(qp and all(k in qp[0] for k in ('rx_packets', 'tx_packets', 'srtt_ns',
                                           'drop_seq_after_nak')) and
           not any(k.startswith('cm_') for k in qp[0]),
           'uroce stat -j: a QP\'s counters under the engine\'s names', json.dumps(qp))
    srv.kill()
    srv.wait(5)
    t0 = time.monotonic()
    cli.wait(60)
    took = time.monotonic() - t0
    tap.ok(running and cli.rc not in (0, -9) and
           re.search(r'completion with error|wc status 12', cli.out, re.I),
           f'ib_write_bw -R, its server killed while it writes: error completions, the client '
           f'exits ({took:.1f} s)', cli.out[-3000:])
    other.kill()
    other.wait(5)


QPERF_PORT = 19765	# qperf's TCP listen port (its parameters; the RC QPs meet by rdma_cm)


def exit_files(path):
    """The processes' DREQ files in RUN_DIR/cm/NETDEV.exit (PID.START), none while it is absent."""
    try:
        return [n for n in os.listdir(path) if n.count('.') == 1]
    except FileNotFoundError:
        return []


def killed_idle(tap, pair):
    """A process killed (SIGKILL) with a connection up that nobody uses: its peer, only waiting
    for a CM event, gets DISCONNECTED, because the broker of the dead process's device posts the
    DREQ its CM left (RUN_DIR/cm/NETDEV.exit), as the kernel sends it when the file closes.  Once
    as the active side's death, once as the passive side's."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cm_idle.py')
    a = pair.ip4[0]
    for port, victim_role in ((7330, 'connect'), (7331, 'listen')):
        victim_side = 1 if victim_role == 'connect' else 0
        srv = pair.start(0, CM_ENV + ['/usr/bin/python3', script, 'listen', a, str(port),
                                      'sleep' if victim_side == 0 else 'wait'],
                         log=f'idle-srv-{port}.log')
        if not wait_listening(pair, 0, port, srv):
            srv.kill()
            srv.wait(5)
            tap.ok(False, 'cm_idle.py listens', srv.out)
            continue
        cli = pair.start(1, CM_ENV + ['/usr/bin/python3', script, 'connect', a, str(port),
                                      'sleep' if victim_side == 1 else 'wait'],
                         log=f'idle-cli-{port}.log')
        victim, survivor = (cli, srv) if victim_side == 1 else (srv, cli)
        exit_dir = os.path.join(pair.run_dirs[victim_side], 'cm', f'{pair.ifs[victim_side]}.exit')
        up = wait_until(lambda: 'established' in survivor.so_far() and
                        'established' in victim.so_far(), 30)
        kept = up and wait_until(lambda: len(exit_files(exit_dir)) == 1, 5)
        victim.kill()
        victim.wait(5)
        t0 = time.monotonic()
        survivor.wait(30)
        took = time.monotonic() - t0
        tap.ok(kept and survivor.rc == 0 and 'event RDMA_CM_EVENT_DISCONNECTED' in survivor.out,
               f'the {victim_role}ing side killed with an idle connection: its peer gets '
               f'DISCONNECTED ({took:.2f} s)', f'survivor exit {survivor.rc}:\n{survivor.out}\n'
               f'victim:\n{victim.out}\nexit files before the kill: {kept}')
        tap.ok(wait_until(lambda: not exit_files(exit_dir), 5),
               f'the dead {victim_role}ing side\'s DREQ file is gone once posted',
               str(exit_files(exit_dir)))


def qperf(tap, pair):
    """qperf -cm1: rc_bw and rc_lat with their QPs connected by rdma_cm."""
    srv = pair.start(0, CM_ENV + ['qperf'])
    if not pair.wait_listen(0, QPERF_PORT, srv):
        srv.kill()
        srv.wait(5)
        return tap.ok(False, 'qperf server listens', srv.out)
    cli = pair.start(1, CM_ENV + ['qperf', '-v', '-t', '2', '-cm1', pair.ip4[0], 'rc_bw',
                                  'rc_lat'])
    cli.wait(120)
    srv.kill()
    srv.wait(5)
    bw = re.search(r'^rc_bw:\n\s+bw\s+=\s+([\d.]+ \S+)', cli.out, re.M)
    lat = re.search(r'^rc_lat:\n\s+latency\s+=\s+([\d.]+ \S+)', cli.out, re.M)
    tap.ok(cli.rc == 0 and bw and lat and len(re.findall(r'use_cm\s+=\s+1', cli.out)) == 2,
           f'qperf -cm1 rc_bw rc_lat: {bw and bw[1]}, {lat and lat[1]}', srv.out + cli.out)


RSPRELOAD = '/usr/lib/x86_64-linux-gnu/rsocket/librspreload.so'
RSTREAM_LINE = re.compile(r'^custom\s+(\S+)\s+(\S+)\s+\S+\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)$', re.M)


def rsocket_poll(tap, pair, port, nbytes=8 << 20):
    """rsocket_poll: 8 MiB each way through non-blocking rsockets, each call after rpoll()."""
    prog = os.path.join(pair.build, 'tests', 'integration', 'rsocket_poll')
    if not os.path.exists(prog):
        return tap.ok(False, 'rsocket_poll built', 'librdmacm-dev: tools/install-deps.sh')
    a = pair.ip4[0]
    srv, cli = cm_client_server(pair, [prog, 'server', a, str(port), str(nbytes)],
                                [prog, 'client', a, str(port), str(nbytes)], port)
    if not it.both_ok(tap, 'rsocket_poll (rpoll)', srv, cli):
        return
    got = re.search(r'client: sent (\d+) bytes, received (\d+) verified, (\d+) polls, '
                    r'(\d+) hang-ups', cli.out)
    tap.ok(got and int(got[1]) == nbytes and int(got[2]) == nbytes and int(got[3]) > 2 and
           f'server: received {nbytes} bytes verified' in srv.out,
           f'rsocket_poll: {nbytes} bytes each way verified through rpoll() '
           f'({got and got[3]} polls, {got and got[4]} hang-ups with data still readable)',
           srv.out + cli.out)


def rstream_pair(tap, pair, name, port, opts, preload=()):
    """rstream server and client with OPTS (and -v's data check); the client's figures."""
    a = pair.ip4[0]
    o = ['-p', str(port), '-T', 'v'] + opts
    srv, cli = cm_client_server(pair, list(preload) + ['rstream', '-b', a] + o,
                                list(preload) + ['rstream', '-s', a] + o, port)
    if not it.both_ok(tap, name, srv, cli):
        return
    got = RSTREAM_LINE.search(cli.out)
    tap.ok(got and 'verification failed' not in cli.out + srv.out,
           f'{name}: {got and got[2]} transfers of {got and got[1]} verified, '
           f'{got and got[3]} Gb/s, {got and got[4]} us each', srv.out + cli.out)


def rsockets(tap, pair):
    """rsockets, librdmacm's socket API over RC QPs connected by rdma_cm: rstream's own
    calls (blocking, non-blocking), rpoll() driving non-blocking rsockets (rsocket_poll.c),
    and plain socket calls turned into rsockets by librspreload.so, preloaded after uroce's
    libraries.  Not rstream -T a: its do_poll() (librdmacm/examples/common.c) ends the run at
    an rpoll() that reports the peer's hang-up together with data still readable, which
    rsockets does whenever the server closes while the client is behind (issue 17's note)."""
    port = 7420
    for opts in (['-S', '4096', '-C', '1000'], ['-T', 'n', '-S', '1000000', '-C', '20']):
        port += 1
        rstream_pair(tap, pair, f'rstream {" ".join(opts)} -T v', port, opts)
    port += 1
    rsocket_poll(tap, pair, port)
    if not os.path.exists(RSPRELOAD):
        return tap.ok(False, 'librspreload.so installed', 'librdmacm1: tools/install-deps.sh')
    # -T s: the socket calls of libc, each an rsocket under the preload (no TCP socket listens).
    port += 1
    preload = ['sh', '-c', f'LD_PRELOAD="$LD_PRELOAD:{RSPRELOAD}" exec "$@"', 'sh']
    rstream_pair(tap, pair, 'rstream -T s (sockets) under librspreload -S 65536 -C 500', port,
                 ['-T', 's', '-S', '65536', '-C', '500'], preload)


FI_CTRL_PORT = 47592	# fi_pingpong's TCP port for its out-of-band exchange
FI_LINE = re.compile(r'^(\S+)\s+(\S+)\s+=(\S+)\s+\S+\s+\S+\s+([\d.]+)\s+([\d.]+)\s+[\d.]+$', re.M)


def libfabric(tap, pair):
    """libfabric's verbs provider: fi_pingpong with its data check (-c) on a connected
    endpoint (msg: rdma_cm connects the RC QP), a reliable datagram one (rdm: ofi_rxm, RC QPs
    connected by rdma_cm on demand) and a datagram one (dgram: UD, no rdma_cm)."""
    # A datagram is at most one MTU.
    for ep, big in (('msg', '65536'), ('rdm', '65536'), ('dgram', '1024')):
        for size, iters in (('64', '1000'), (big, '200')):
            argv = ['fi_pingpong', '-p', 'verbs', '-e', ep, '-c', '-S', size, '-I', iters]
            srv = pair.start(0, CM_ENV + argv)
            if not pair.wait_listen(0, FI_CTRL_PORT, srv):
                srv.kill()
                srv.wait(5)
                tap.ok(False, f'fi_pingpong -e {ep} server starts', srv.out)
                continue
            cli = pair.start(1, CM_ENV + argv + [pair.ip4[0]])
            cli.wait(60)
            srv.wait(10 if cli.rc == 0 else 5)
            got = FI_LINE.search(cli.out)
            tap.ok(srv.rc == 0 and cli.rc == 0 and got and got[2] == got[3],
                   f'fi_pingpong -p verbs -e {ep} -c -S {size} -I {iters}: '
                   f'{got and got[5]} us per transfer, {got and got[4]} MB/s',
                   f'server exit {srv.rc}:\n{srv.out}\nclient exit {cli.rc}:\n{cli.out}')


def body(tap, pair):
    storm(tap, pair)
    killed_listener(tap, pair)
    killed_idle(tap, pair)
    qperf(tap, pair)
    rsockets(tap, pair)
    if shutil.which('fi_pingpong'):
        libfabric(tap, pair)
    else:
        tap.ok(False, 'fi_pingpong installed', 'libfabric-bin is missing: tools/install-deps.sh')


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'cmc', body))
