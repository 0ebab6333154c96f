# SPDX-License-Identifier: MIT
"""Unmodified rdmacm-utils over uroce's rdma_cm: a channel closed under a thread's GET_EVENT,
rping with data verification (IPv4, IPv6), ucmatose (4 and 20 connections, IDs migrated to a new
channel, the type of service), mckey (multicast), udaddy (UD, service ID resolution), connects
that end in an error, not a hang, perftest connecting through rdma_cm (-R),
rdma_server/rdma_client, rstream (rsockets) and cmtime; rping and ib_write_bw -R with server and
client on one device."""

import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

PORT = 7174
RDMA_PS_TCP = 0x0106
RDMA_PS_UDP = 0x0111
# Short CM retransmission timers, so the failure cases end within seconds.
CM_ENV = ['env', 'UROCE_CM_TIMEOUT_MS=200']


def wait_listening(pair, side, port, proc, timeout=30, ps=RDMA_PS_TCP):
    """Wait until the host's rdma_cm listen table (RUN_DIR/cm/NETDEV) has the port's service ID."""
    sid = f'{ps << 16 | port:016x}'
    path = os.path.join(pair.run_dirs[side], 'cm', pair.ifs[side])
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.p.poll() is not None:
            return False
        try:
            with open(path) as f:
                if any(line.split()[:1] == [sid] for line in f):
                    return True
        except FileNotFoundError:
            pass
        time.sleep(0.05)
    return False


def cm_stat_check(tap, pair):
    """`uroce stat` on the rejecting side: the CM's counters are there, its REJ counted, no MAD
    dropped as malformed."""
    time.sleep(0.5)	# counters are published every 100 ms
    stats = json.loads(pair.uroce_cmd(0, 'stat', '-a', '-j').stdout)
    cm = [d['counters'] for d in stats if d['counters'].get('cm_rej_tx', 0) >= 1]
    drops = [k for k in (cm[0] if cm else {}) if k.startswith('cm_drop_')]
    tap.ok(len(cm) == 1 and cm[0]['cm_mads_rx'] >= 1 and 'cm_drop_truncated' in drops and
           sum(cm[0][k] for k in drops) == 0,
           'uroce stat: the CM\'s REJ and the MAD it answered counted, no MAD dropped',
           json.dumps(stats))


def type_of_service(tap, pair):
    """ucmatose -t: the client's rdma_set_option(TOS) reaches the IP header of every RC frame, and
    the server's, whose path comes from the REQ's traffic class, as the kernel's CM does."""
    tos = 0x68	# DSCP 26 (AF31)
    pcap = os.path.join(pair.tmp, 'tos.pcap')
    a = pair.ip4[0]
    srv, cli = cm_client_server(pair, ['ucmatose', '-b', a, '-c', '2'],
                                ['env', f'UROCE_PCAP={pcap}', 'ucmatose', '-s', a, '-c', '2',
                                 '-t', hex(tos)], 7471)
    if not it.both_ok(tap, f'ucmatose -t {hex(tos)} -c 2', srv, cli):
        return
    out = subprocess.run(['tshark', '-r', pcap, '-T', 'fields', '-e', 'ip.src', '-e',
                          'ip.dsfield.dscp', '-e', 'infiniband.bth.opcode'], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    # RC opcodes are 0-31; the CM's MADs are UD sends (100) to QP1.
    rc = [f for f in (ln.split('\t') for ln in out.splitlines())
          if len(f) == 3 and f[2].isdigit() and int(f[2]) < 32]
    dscp = {(src, d) for src, d, _ in rc}
    tap.ok(len(rc) >= 8 and dscp == {(pair.ip4[0], str(tos >> 2)), (pair.ip4[1], str(tos >> 2))},
           f'ucmatose -t {hex(tos)}: every RC frame both ways carries DSCP {tos >> 2} (tshark)',
           f'{len(rc)} RC frames, (source, DSCP) seen: {sorted(dscp)}\n{out[:2000]}')


def cm_client_server(pair, srv_argv, cli_argv, port, ps=RDMA_PS_TCP, srv_exits=True,
                     client_side=1):
    """A server in namespace A, once it listens on the port's service ID, and its client in B
    (or, CLIENT_SIDE 0, beside it in A): (server, client), client None when the server never
    listened.  A server that does not end by itself (SRV_EXITS false) is stopped once its client
    has ended."""
    srv = pair.start(0, CM_ENV + srv_argv)
    if not wait_listening(pair, 0, port, srv, ps=ps):
        srv.kill()
        srv.wait(5)
        return srv, None
    cli = pair.start(client_side, CM_ENV + cli_argv)
    cli.wait(120)
    if not srv_exits:
        srv.kill()
    srv.wait(15 if cli.rc == 0 else 5)
    return srv, cli


def rping_pair(tap, pair, name, addr, port, opts, check=None):
    srv = pair.start(0, CM_ENV + ['rping', '-s', '-a', addr, '-p', str(port)] + opts)
    if not wait_listening(pair, 0, port, srv):
        srv.kill()
        srv.wait(5)
        return tap.ok(False, name, f'server did not start listening:\n{srv.out}')
    cli = pair.start(1, CM_ENV + ['rping', '-c', '-a', addr, '-p', str(port)] + opts)
    cli.wait(120)
    srv.wait(10 if cli.rc == 0 else 5)
    if not it.both_ok(tap, name, srv, cli):
        return False
    if check:
        return check(cli)
    return True


def perftest_pair(tap, pair, tool, opts, port):
    """A perftest pair whose connection is set up by rdma_cm (-R): the server listens on the
    port's service ID, not on a TCP socket."""
    argv = [tool, '-d', 'uroce0', '-F', '-R', '-p', str(port)] + opts
    name = f'{tool} -R {" ".join(opts)}'
    srv, cli = cm_client_server(pair, argv, argv + [pair.ip4[0]], port)
    return perf.check(tap, name, srv, cli)


def perftests(tap, pair, port):
    for tool in perf.BW_TOOLS + ['ib_atomic_bw']:
        port += 1
        perftest_pair(tap, pair, tool, ['-n', '200'], port)
    for tool in perf.LAT_TOOLS + ['ib_atomic_lat']:
        port += 1
        perftest_pair(tap, pair, tool, ['-n', '200'], port)
    return port


def more_tools(tap, pair, port):
    """Many connections at once, librdmacm's rdma_create_ep API, rsockets, and cmtime."""
    a = pair.ip4[0]
    srv, cli = cm_client_server(pair, ['ucmatose', '-b', a, '-c', '20'],
                                ['ucmatose', '-s', a, '-c', '20'], 7471)
    it.both_ok(tap, 'ucmatose -c 20', srv, cli)

    port += 1
    srv, cli = cm_client_server(pair, ['rdma_server', '-s', a, '-p', str(port)],
                                ['rdma_client', '-s', a, '-p', str(port)], port)
    if it.both_ok(tap, 'rdma_server / rdma_client', srv, cli):
        tap.ok('rdma_client: end 0' in cli.out and 'rdma_server: end 0' in srv.out,
               'rdma_server / rdma_client: both report end 0', srv.out + cli.out)

    # rsockets (librdmacm's socket API over RDMA): 100 transfers of 4 KiB each way.
    port += 1
    opts = ['-p', str(port), '-S', '4096', '-C', '100']
    srv, cli = cm_client_server(pair, ['rstream', '-b', a] + opts, ['rstream', '-s', a] + opts,
                                port)
    if it.both_ok(tap, 'rstream -S 4096 -C 100', srv, cli):
        tap.ok(all(re.search(r'^custom\s+4k\s+100\s', p.out, re.M) for p in (srv, cli)),
               'rstream: both sides report 100 transfers of 4k', srv.out + cli.out)

    # cmtime's server (rdma-core 44) keeps listening after its client is done: stopped then.
    port += 1
    srv, cli = cm_client_server(pair, ['cmtime', '-b', a, '-p', str(port), '-c', '20'],
                                ['cmtime', '-s', a, '-p', str(port), '-c', '20'], port,
                                srv_exits=False)
    steps = ('connect', 'disconnect')
    tap.ok(cli is not None and cli.rc == 0 and
           all(re.search(rf'^{s}\s*:', cli.out, re.M) for s in steps),
           'cmtime -c 20: the client connects and disconnects 20 and reports the times',
           srv.out + (cli.out if cli else ''))
    if cli is not None:
        tap.diag('\n'.join(ln for ln in cli.out.splitlines() if ln.split(':')[0].strip() in
                           ('resolve addr', 'connect', 'disconnect')))
    return port


def close_race(tap, pair):
    """A GET_EVENT written just after another thread closed its channel sleeps (rping's event
    thread against its main thread's rdma_destroy_event_channel: rping exited 255 once in 20 to 40
    runs when it got EBADF instead)."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'ucma_close_race.py')
    p = pair.start(0, ['/usr/bin/python3', script])
    p.wait(30)
    tap.ok(p.rc == 0 and p.out.count('ok: ') == 5,
           'a GET_EVENT after its channel\'s close sleeps, other commands EBADF, the fd released',
           f'exit {p.rc}:\n{p.out}')


def last_word(tap, pair, port):
    """A peer's last message with its DREQ right behind it: DISCONNECTED waits while the
    message's completion is unpolled (a program that destroys its QP on that event, as
    libfabric's rxm does, would lose the completion), and comes once it is polled; unpolled, it
    comes when the hold runs out.  The holds are set long (UROCE_CM_DISC_HOLD_MS) so that the
    sleeps here are far inside them."""
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'cm_last_word.py')
    a = pair.ip4[0]
    for mode, hold_ms, wait_s in (('poll', 5000, 0.5), ('nopoll', 300, 2.0)):
        port += 1
        srv = pair.start(0, CM_ENV + [f'UROCE_CM_DISC_HOLD_MS={hold_ms}', '/usr/bin/python3',
                                      script, 'take', a, str(port), str(wait_s), mode])
        if not wait_listening(pair, 0, port, srv):
            srv.kill()
            srv.wait(5)
            tap.ok(False, f'cm_last_word {mode}: the receiver listens', srv.out)
            continue
        cli = pair.start(1, CM_ENV + ['/usr/bin/python3', script, 'send', a, str(port)])
        cli.wait(60)
        srv.wait(60)
        after = re.search(r'RDMA_CM_EVENT_DISCONNECTED ([\d.]+) s after', srv.out)
        if mode == 'poll':
            tap.ok(srv.rc == 0 and cli.rc == 0 and 'before the poll: no' in srv.out and
                   'receive: status 0, 64 bytes' in srv.out and after and float(after[1]) < 3,
                   'a peer\'s DREQ right behind its last message: DISCONNECTED waits until '
                   f'the receive completion is polled, then comes ({after and after[1]} s after)',
                   f'receiver exit {srv.rc}:\n{srv.out}\nsender exit {cli.rc}:\n{cli.out}')
        else:
            tap.ok(srv.rc == 0 and cli.rc == 0 and 'before the poll: yes' in srv.out and
                   after and 0.25 <= float(after[1]) < 3,
                   f'never polled, DISCONNECTED comes when the {hold_ms} ms hold runs out '
                   f'({after and after[1]} s after ESTABLISHED)',
                   f'receiver exit {srv.rc}:\n{srv.out}\nsender exit {cli.rc}:\n{cli.out}')
    return port


def same_host(tap, pair, port):
    """Server and client on one device in one namespace: their MADs to QP1 never leave the host
    (every process's CM gets a copy through the same-host rings, docs/rdma-cm.md)."""
    a = pair.ip4[0]
    opts = ['-a', a, '-p', str(port), '-C', '100', '-V']
    srv, cli = cm_client_server(pair, ['rping', '-s'] + opts, ['rping', '-c'] + opts, port,
                                client_side=0)
    it.both_ok(tap, 'rping -C 100 -V, server and client on one device', srv, cli)
    argv = ['ib_write_bw', '-d', 'uroce0', '-F', '-R', '-p', str(port + 1), '-n', '200']
    srv, cli = cm_client_server(pair, argv, argv + [a], port + 1, client_side=0)
    perf.check(tap, 'ib_write_bw -R -n 200, server and client on one device', srv, cli)


def netdev_groups(pair, side):
    """The IP multicast groups the side's netdev is a member of (`ip maddr`)."""
    out = subprocess.run(['ip', 'netns', 'exec', pair.ns[side], 'ip', 'maddr', 'show', 'dev',
                          pair.ifs[side]], capture_output=True, text=True).stdout
    return re.findall(r'inet6?\s+(\S+)', out)


def multicast(tap, pair):
    """mckey: rdma_join_multicast, UD datagrams to the group's QPN 0xffffff, rdma_leave_multicast;
    the receiver in another namespace, then beside the sender on one device.  The receiving
    netdev is a member of the IP group (IGMP) while a QP is attached, and no longer after."""
    for name, group, rx_side in (('between namespaces', '239.1.2.3', 0),
                                 ('on one device', '239.1.2.4', 1)):
        count = '20'
        rcv = pair.start(rx_side, ['mckey', '-m', group, '-b', pair.ip4[rx_side], '-C', count])
        end = time.monotonic() + 30
        while group not in netdev_groups(pair, rx_side) and time.monotonic() < end and \
                rcv.p.poll() is None:
            time.sleep(0.05)
        joined = group in netdev_groups(pair, rx_side)
        snd = pair.start(1, ['mckey', '-m', group, '-b', pair.ip4[1], '-s', '-C', count])
        snd.wait(60)
        rcv.wait(15 if snd.rc == 0 else 5)
        if it.both_ok(tap, f'mckey -C {count} {name}', rcv, snd):
            tap.ok(joined and f'joined dgid: ::ffff:{group}' in rcv.out and
                   'data transfers complete' in rcv.out,
                   f'mckey {name}: the receiver joined ::ffff:{group} (netdev in the IP group) '
                   f'and received {count} datagrams', rcv.out)
            tap.ok(group not in netdev_groups(pair, rx_side),
                   f'mckey {name}: the netdev left the IP group with the receiver',
                   ' '.join(netdev_groups(pair, rx_side)))


def body(tap, pair):
    global PORT
    if not shutil.which('rping'):
        tap.ok(False, 'rping installed', 'rdmacm-utils is missing: tools/install-deps.sh')
        return

    close_race(tap, pair)

    PORT += 1
    rping_pair(tap, pair, 'rping -C 500 -V (IPv4)', pair.ip4[0], PORT, ['-C', '500', '-V'])

    PORT += 1
    n = 50

    def pings_seen(cli):
        lines = [ln for ln in cli.out.splitlines() if ln.startswith('ping data: rdma-ping-')]
        return tap.ok(len(lines) == n, f'rping -v: the client saw {n} verified pings',
                      f'{len(lines)} ping lines:\n{cli.out}')
    rping_pair(tap, pair, f'rping -C {n} -V -v (IPv4)', pair.ip4[0], PORT,
               ['-C', str(n), '-V', '-v'], pings_seen)

    PORT += 1
    rping_pair(tap, pair, 'rping -C 200 -V (IPv6)', pair.ip6[0], PORT, ['-C', '200', '-V'])

    # Four connections at once, each moving data, then disconnected (ucmatose's port: 7471).
    a = pair.ip4[0]
    srv, cli = cm_client_server(pair, ['ucmatose', '-b', a, '-c', '4'],
                                ['ucmatose', '-s', a, '-c', '4'], 7471)
    it.both_ok(tap, 'ucmatose -c 4', srv, cli)
    # -m: every ID, the listener's too, moved to a new event channel (MIGRATE_ID) mid-run.
    srv, cli = cm_client_server(pair, ['ucmatose', '-m', '-b', a, '-c', '4'],
                                ['ucmatose', '-m', '-s', a, '-c', '4'], 7471)
    if it.both_ok(tap, 'ucmatose -m -c 4', srv, cli):
        tap.ok(all('migrating to new event channel' in p.out and 'return status 0' in p.out
                   for p in (srv, cli)),
               'ucmatose -m: both sides migrated their IDs and ended with status 0',
               srv.out + cli.out)

    type_of_service(tap, pair)
    multicast(tap, pair)

    # UD: the client resolves the service ID (SIDR_REQ/SIDR_REP), then datagrams both ways.
    srv, cli = cm_client_server(pair, ['udaddy', '-b', a], ['udaddy', '-s', a], 7174,
                                ps=RDMA_PS_UDP)
    it.both_ok(tap, 'udaddy', srv, cli)

    # Nobody on the other side runs a CM: the REQ goes unanswered, the client gives up.
    PORT += 1
    t0 = time.monotonic()
    cli = pair.start(1, CM_ENV + ['rping', '-c', '-a', pair.ip4[0], '-p', str(PORT), '-C', '1'])
    cli.wait(60)
    took = time.monotonic() - t0
    tap.ok(cli.rc not in (0, -9) and 'RDMA_CM_EVENT_UNREACHABLE' in cli.out,
           f'rping -c to a silent host ends in UNREACHABLE ({took:.1f} s)', cli.out)

    # A CM listens there, on another port: the REQ is rejected as the kernel does (reason 8).
    PORT += 1
    srv = pair.start(0, CM_ENV + ['rping', '-s', '-a', pair.ip4[0], '-p', str(PORT), '-C', '1'])
    if wait_listening(pair, 0, PORT, srv):
        cli = pair.start(1, CM_ENV + ['rping', '-c', '-a', pair.ip4[0], '-p', str(PORT + 1),
                                      '-C', '1'])
        cli.wait(60)
        tap.ok(cli.rc not in (0, -9) and 'RDMA_CM_EVENT_REJECTED, error 8' in cli.out,
               'rping -c to a port nobody listens on is rejected (invalid service ID)', cli.out)
        cm_stat_check(tap, pair)
    else:
        tap.ok(False, 'rping -s listens', srv.out)
    srv.kill()
    srv.wait(5)
    PORT += 1

    PORT = perftests(tap, pair, PORT)
    PORT = more_tools(tap, pair, PORT)
    PORT = last_word(tap, pair, PORT)
    same_host(tap, pair, PORT + 1)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'cm', body))
