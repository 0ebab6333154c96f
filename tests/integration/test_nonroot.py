# SPDX-License-Identifier: MIT
"""Verbs programs as ordinary users and in containers: af_packet through the device's broker.

Creates two users (and a group) of its own, runs ibv_devinfo, ibv_rc_pingpong and
ib_write_bw as them between the two namespaces with no capability at all (and in a user
namespace of their own, as a container is), rping (rdma_cm) between namespaces and with both
users on one device (past the 0600 rings, by a packet socket of the broker's), ibv_rc_pingpong
on one device, mckey, then checks that `uroce link add --group` keeps a user outside the group
out with one clear line, and that `uroce link del` stops the broker.  The users are removed at the end.
"""

import errno
import json
import os
import re
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
from test_rdmacm import wait_listening  # noqa: E402

TAG = f'{os.getpid() & 0xffff:04x}'
USERS = [f'urnr{TAG}a', f'urnr{TAG}b']
GROUP = f'urnr{TAG}g'
PORT = 18620
USER_QPN_QUOTA = 4096	# `uroce link add ... user_qpns 4096` (the default: a quarter of the table)


def make_users():
    it.sh('groupadd', GROUP)
    it.sh('useradd', '-M', '-s', '/usr/sbin/nologin', '-G', GROUP, USERS[0])
    it.sh('useradd', '-M', '-s', '/usr/sbin/nologin', USERS[1])


def remove_users():
    for u in USERS:
        it.sh('userdel', u, check=False)
    it.sh('groupdel', GROUP, check=False)


def as_user(pair, user, argv):
    """ARGV run as USER (its own groups, no capabilities), through `uroce exec`."""
    return ['setpriv', f'--reuid={user}', f'--regid={user}', '--init-groups',
            pair.uroce, 'exec', '--'] + list(argv)


def in_container(pair, user, argv, pid_ns=False):
    """ARGV as USER inside a user namespace of its own (root there, no capability here);
    PID_NS: in a PID namespace too, with its own /proc (a mount namespace)."""
    ns = ['--pid', '--fork', '--mount', '--mount-proc'] if pid_ns else []
    return ['setpriv', f'--reuid={user}', f'--regid={user}', '--init-groups',
            'unshare', '--user', '--map-root-user'] + ns + [pair.uroce, 'exec', '--'] + list(argv)


def start(pair, side, user, argv):
    return pair.start(side, as_user(pair, user, argv), raw=True)


def client_server(pair, server_argv, client_argv, port):
    """Server (side 0) and client (side 1), each ARGV already run as some user."""
    srv = pair.start(0, server_argv, raw=True)
    if not pair.wait_listen(0, port, srv):
        srv.kill()
        srv.wait(5)
        return srv, None
    cli = pair.start(1, client_argv, raw=True)
    cli.wait(it.PROG_TIMEOUT)
    srv.wait(10 if cli.rc == 0 else 5)
    return srv, cli


def broker_pid(pair, side):
    path = os.path.join(pair.run_dirs[side], 'devices', 'uroce0.broker')
    with open(path) as f:
        return int(f.read().split()[0])


def gid_text(pair, side, index):
    return next(g['gid'] for g in pair.gids(side) if g['index'] == int(index))


def ring_check(tap, pair):
    """The victim's same-host receive ring: its owner's alone; the other user cannot read it."""
    loop = os.path.join(pair.run_dirs[0], 'loop', pair.ifs[0])
    uid = int(it.sh('id', '-u', USERS[0]).stdout)
    rings = [os.path.join(loop, f) for f in os.listdir(loop) if f.endswith('.ring')]
    mine = [r for r in rings if os.stat(r).st_uid == uid]
    modes = {r: f'{os.stat(r).st_mode & 0o777:o}' for r in mine}
    tap.ok(len(mine) == 1 and list(modes.values()) == ['600'],
           'the victim\'s receive ring is mode 0600',
           f'{rings} {modes}')
    if mine:
        p = pair.start(0, ['setpriv', f'--reuid={USERS[1]}', f'--regid={USERS[1]}',
                           '--init-groups', 'head', '-c', '1', mine[0]], raw=True)
        p.wait(10)
        tap.ok(p.rc != 0 and 'Permission denied' in p.out,
               'another user cannot read the victim\'s receive ring', p.out)


def filter_check(tap, pair):
    """The broker's socket filter: UDP to another port never reaches a user's port."""
    it.sh(*pair.ns_argv(1, ['bash', '-c', f'for i in $(seq 20); do echo x >/dev/udp/{pair.ip4[0]}/9; done']))
    time.sleep(0.5)	# counters are published every 100 ms
    uid = it.sh('id', '-u', USERS[0]).stdout.strip()
    stats = json.loads(pair.uroce_cmd(0, 'stat', '-a', '-j').stdout)
    mine = [d for d in stats if os.path.exists(f'/proc/{d["pid"]}') and
            re.search(rf'^Uid:\s+{uid}\s', open(f'/proc/{d["pid"]}/status').read(), re.M)]
    tap.ok(len(mine) == 1 and mine[0]['counters']['rx_not_roce'] == 0 and
           mine[0]['counters']['rx_neigh'] > 0,
           'the broker\'s filter keeps other traffic (20 UDP datagrams to port 9) off a user\'s port',
           json.dumps(mine))


def bth_datagram(qpn):
    """A UDP 4791 payload: a BTH (SEND only, P_Key 0xffff) to QPN, and 8 bytes."""
    return bytes([4, 0x40, 0xff, 0xff, 0]) + qpn.to_bytes(3, 'big') + bytes(12)


def snoop(tap, pair, gid):
    """USERS[1] with the broker's socket, while USERS[0]'s ib_write_bw runs through the same
    netdev: no frame of USERS[0]'s QPs, sent or received, reaches it; its own QPN's do."""
    global PORT
    snoop_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'snoop.py')
    spy = subprocess.Popen(
        pair.ns_argv(0, ['setpriv', f'--reuid={USERS[1]}', f'--regid={USERS[1]}', '--init-groups',
                         '/usr/bin/python3', snoop_py, pair.run_dirs[0], 'uroce0', pair.ifs[0]]),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        first = spy.stdout.readline()
        mine, other = (json.loads(first)[k] for k in ('qpn', 'other'))
        PORT += 1
        base = ['ib_write_bw', '-d', 'uroce0', '-F', '-p', str(PORT), '-s', '65536', '-n', '1000']
        srv, cli = client_server(pair, as_user(pair, USERS[0], base + ['-x', gid[0]]),
                                 as_user(pair, USERS[0], base + ['-x', gid[1], pair.ip4[0]]),
                                 PORT)
        it.both_ok(tap, 'ib_write_bw between namespaces beside another user\'s snooping socket',
                   srv, cli)
        # Three frames for the snooper's own QPN, three for one it does not hold.
        send = ';'.join(f's.sendto({bth_datagram(q)!r}, ("{pair.ip4[0]}", 4791))'
                        for q in (mine, mine, mine, other, other, other))
        it.sh(*pair.ns_argv(1, ['/usr/bin/python3', '-c',
                                f'import socket; s = socket.socket(socket.AF_INET, '
                                f'socket.SOCK_DGRAM); {send}']))
        time.sleep(0.5)
        rest, _ = spy.communicate('', timeout=60)
    finally:
        if spy.poll() is None:
            os.killpg(spy.pid, 9)
            spy.wait()
    try:
        got = json.loads(rest.strip().splitlines()[-1])
    except (ValueError, IndexError):
        got = {}
    detail = first + rest
    tap.ok(got.get('detach') == 'Operation not permitted',
           'the broker\'s socket filter cannot be taken off by its holder', detail)
    tap.ok(got.get('table_write') == 'Permission denied',
           'an ordinary user cannot write the QPN table', detail)
    tap.ok(got.get('alloc', [1])[0] == 0 and got.get('free_other') == -1,
           'the broker allocates a user a QPN and refuses to free one the user does not hold '
           '(-EPERM)', detail)
    quota = got.get('quota', [0, 0])
    tap.ok(quota == [USER_QPN_QUOTA, -errno.EDQUOT] and got.get('freed') == quota[0] - 1 and
           got.get('alloc_after_free') == 0,
           f'a user holds at most {USER_QPN_QUOTA} QPNs of a netdev (then -EDQUOT), and gets '
           f'more once it gives some back; another user\'s ib_write_bw ran meanwhile', detail)
    tap.ok(got.get('roce_own_qpn') == 3 and got.get('roce_other_qpn') == 0 and
           got.get('unicast_elsewhere') == 0,
           'another user\'s traffic never reaches a user\'s socket; its own QPN\'s frames do',
           detail)


def steal(tap, pair, thief_side):
    """USERS[1] tries USERS[0]'s QPN and rkey: errors only, the secret never moves."""
    steal_py = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'steal.py')
    gid = [str(pair.gid_index(i, 4)) for i in range(2)]
    where = 'over the wire' if thief_side else 'on the same device'
    victim = subprocess.Popen(
        pair.ns_argv(0, as_user(pair, USERS[0], ['/usr/bin/python3', steal_py, 'victim', gid[0],
                                                 gid_text(pair, 1, gid[1])])),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=pair.env(0), start_new_session=True)
    try:
        stolen = victim.stdout.readline()
        thief = pair.start(thief_side, as_user(pair, USERS[1], [
            '/usr/bin/python3', steal_py, 'thief', gid[thief_side], gid_text(pair, 0, gid[0]),
            stolen.strip()]), raw=True)
        thief.wait(60)
        if thief_side == 0:
            ring_check(tap, pair)
            filter_check(tap, pair)
        victim_out, _ = victim.communicate('', timeout=30)
    finally:
        if victim.poll() is None:
            os.killpg(victim.pid, 9)
            victim.wait()
    out = thief.out
    tap.diag(f'{where}: ' + '; '.join(x for x in out.splitlines() if ': IBV_WC_' in x))
    detail = f'stolen: {stolen}\nthief:\n{out}\nvictim:\n{victim_out}'
    tap.ok(thief.rc == 0 and re.search(r'^victim QPN READ: IBV_WC_(?!SUCCESS)', out, re.M) and
           re.search(r'^victim QPN WRITE: IBV_WC_(?!SUCCESS)', out, re.M),
           f'a stolen QPN and rkey ({where}) end in error completions', detail)
    tap.ok('own QP READ: IBV_WC_REM_ACCESS_ERR' in out,
           f'the stolen rkey on the thief\'s own QP ({where}) is a remote access error', detail)
    tap.ok('secret not in thief memory' in out and 'victim memory intact' in victim_out,
           f'no data moved either way ({where})', detail)


def body(tap, pair):
    global PORT
    # The test's run directories must be reachable by its users.
    os.chmod(pair.tmp, 0o755)
    gid = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]

    p = start(pair, 0, USERS[0], ['grep', 'CapEff', '/proc/self/status'])
    p.wait(30)
    tap.ok(p.rc == 0 and re.search(r'CapEff:\s+0+$', p.out, re.M) is not None,
           'the test user runs with no capability', p.out)

    p = start(pair, 0, USERS[0], ['ibv_devinfo', '-d', 'uroce0'])
    p.wait(30)
    tap.ok(p.rc == 0 and 'PORT_ACTIVE' in p.out, 'ibv_devinfo opens uroce0 as an ordinary user',
           p.out)

    for users in ([USERS[0], USERS[0]], [USERS[0], USERS[1]]):
        PORT += 1
        base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '500']
        srv, cli = client_server(pair, as_user(pair, users[0], base + ['-g', gid[0]]),
                                 as_user(pair, users[1], base + ['-g', gid[1], pair.ip4[0]]),
                                 PORT)
        it.both_ok(tap, f'ibv_rc_pingpong between namespaces as {users[0]} and {users[1]}',
                   srv, cli)

    # Every kind of frame the broker's filter must pass: RoCE v2 over IPv6 (ND), RoCE v1.
    for family, rocev, label in ((6, 2, 'RoCE v2 IPv6'), (4, 1, 'RoCE v1')):
        PORT += 1
        g = [str(pair.gid_index(i, family, rocev)) for i in range(2)]
        base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '200']
        srv, cli = client_server(pair, as_user(pair, USERS[0], base + ['-g', g[0]]),
                                 as_user(pair, USERS[1], base + ['-g', g[1], pair.ip4[0]]),
                                 PORT)
        it.both_ok(tap, f'ibv_rc_pingpong as ordinary users, {label} GID', srv, cli)

    # A container: a user namespace with CAP_NET_RAW that does not count in this network namespace.
    p = pair.start(0, in_container(pair, USERS[0], ['ibv_devinfo', '-d', 'uroce0']), raw=True)
    p.wait(30)
    tap.ok(p.rc == 0 and 'PORT_ACTIVE' in p.out,
           'ibv_devinfo in a user namespace (unshare --user --map-root-user)', p.out)
    PORT += 1
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '500']
    srv, cli = client_server(pair, in_container(pair, USERS[0], base + ['-g', gid[0]]),
                             as_user(pair, USERS[1], base + ['-g', gid[1], pair.ip4[0]]), PORT)
    it.both_ok(tap, 'ibv_rc_pingpong server in a user namespace, client an ordinary user', srv, cli)
    PORT += 1
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '500', '-c']
    srv, cli = client_server(pair, in_container(pair, USERS[0], base + ['-g', gid[0]], pid_ns=True),
                             as_user(pair, USERS[1], base + ['-g', gid[1], pair.ip4[0]]), PORT)
    it.both_ok(tap, 'ibv_rc_pingpong -c server in user, PID and mount namespaces of its own '
               '(its PID 1 there), client an ordinary user', srv, cli)

    PORT += 1
    base = ['ib_write_bw', '-d', 'uroce0', '-F', '-p', str(PORT), '-s', '65536', '-n', '2000']
    srv, cli = client_server(pair, as_user(pair, USERS[0], base + ['-x', gid[0]]),
                             as_user(pair, USERS[1], base + ['-x', gid[1], pair.ip4[0]]), PORT)
    if it.both_ok(tap, 'ib_write_bw between namespaces as two ordinary users', srv, cli):
        tap.diag(cli.out.strip().splitlines()[-2])

    for thief_side in (1, 0):
        steal(tap, pair, thief_side)
    snoop(tap, pair, gid)

    rdma_cm_as_users(tap, pair, gid)
    pid_namespace(tap, pair, gid)

    # Only the group's members may open a device made with --group.
    pair.uroce_cmd(0, 'link', 'del', 'uroce0')
    pair.uroce_cmd(0, 'link', 'add', 'uroce0', 'netdev', pair.ifs[0], '--group', GROUP)
    sock = os.path.join(pair.run_dirs[0], 'devices', 'uroce0.sock')
    st = os.stat(sock)
    tap.ok(st.st_mode & 0o777 == 0o660 and st.st_gid == int(it.sh('getent', 'group', GROUP)
                                                             .stdout.split(':')[2]),
           f'--group {GROUP}: the broker socket is 0660 and of that group',
           f'mode {st.st_mode & 0o777:o} gid {st.st_gid}')
    p = start(pair, 0, USERS[0], ['ibv_devinfo', '-d', 'uroce0'])
    p.wait(30)
    tap.ok(p.rc == 0 and 'PORT_ACTIVE' in p.out, 'a member of the group opens the device', p.out)
    p = start(pair, 0, USERS[1], ['ibv_devinfo', '-d', 'uroce0'])
    p.wait(30)
    line = [s for s in p.out.splitlines() if s.startswith('uroce:')]
    tap.ok(p.rc not in (0, -9) and len(line) == 1 and
           f'permission denied: only members of group {GROUP} may use it' in line[0],
           'a user outside the group gets one line saying so (no crash, no hang)', p.out)

    pid = broker_pid(pair, 0)
    pair.uroce_cmd(0, 'link', 'del', 'uroce0')
    pair.devices[0] = False
    tap.ok(not os.path.exists(f'/proc/{pid}') and not os.path.exists(sock),
           '`uroce link del` stops the broker and removes its socket',
           subprocess.run(['ps', '-o', 'pid,args', '-p', str(pid)], capture_output=True,
                          text=True).stdout)


def ns_pids(pid):
    """The PIDs of process PID in its PID namespaces, outermost first (/proc/PID/status NSpid)."""
    try:
        with open(f'/proc/{pid}/status') as f:
            return next(ln.split()[1:] for ln in f if ln.startswith('NSpid:'))
    except (OSError, StopIteration):
        return []


def pid_namespace(tap, pair, gid):
    """A process in PID (and user and mount) namespaces of its own is PID 1 there: through the
    broker it learns the PID the run directory knows it by, so processes outside reach it on one
    device (the same-host rings), `uroce stat` shows that PID, and its rdma_cm connection is not
    taken for a dead process's (the broker would post its DREQ)."""
    global PORT
    PORT += 1
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '20000', '-c', '-g', gid[0]]
    srv = pair.start(0, in_container(pair, USERS[0], base, pid_ns=True), raw=True)
    if not pair.wait_listen(0, PORT, srv):
        srv.kill()
        srv.wait(5)
        tap.ok(False, 'ibv_rc_pingpong server in a PID namespace listens', srv.out)
        return
    stats = json.loads(pair.uroce_cmd(0, 'stat', '-a', '-j').stdout)
    nspids = [ns_pids(d['pid']) for d in stats]
    tap.ok(any(len(n) == 2 and n[-1] == '1' for n in nspids),
           'uroce stat shows the process by its PID outside its namespace (NSpid '
           f'{nspids}), not as 1', json.dumps([d['pid'] for d in stats]))
    cli = start(pair, 0, USERS[0], base + [pair.ip4[0]])
    during = loop_counts_while(pair, cli, 'rx_loop', 'tx_loop')
    cli.wait(it.PROG_TIMEOUT)
    srv.wait(10 if cli.rc == 0 else 5)
    if it.both_ok(tap, 'ibv_rc_pingpong -c on one device between a process in a PID namespace '
                  'and one outside it (same user)', srv, cli):
        tap.ok(len(during) == 2 and all(rx > 0 and tx > 0 for rx, tx in during),
               'their frames went through the same-host rings (rx_loop, tx_loop)', str(during))

    # rdma_cm: 2000 round trips, long past the broker's 100 ms reaping of dead processes' DREQs.
    PORT += 1
    opts = ['-a', pair.ip4[0], '-p', str(PORT), '-C', '2000', '-V']
    srv = pair.start(0, in_container(pair, USERS[0], ['rping', '-s'] + opts, pid_ns=True),
                     raw=True)
    if not wait_listening(pair, 0, PORT, srv):
        srv.kill()
        srv.wait(5)
        tap.ok(False, 'rping -s in a PID namespace listens', srv.out)
        return
    cli = start(pair, 1, USERS[1], ['rping', '-c'] + opts)
    cli.wait(it.PROG_TIMEOUT)
    srv.wait(10 if cli.rc == 0 else 5)
    it.both_ok(tap, 'rping -C 2000 -V, its server in a PID namespace of its own', srv, cli)


def loop_counts_while(pair, proc, rx, tx):
    """(RX, TX) counters of every process on side 0's device, sampled while PROC runs (a
    process's counters go with it), until both of two processes have counted some."""
    during = []
    while proc.p.poll() is None and not (len(during) == 2 and all(min(c) for c in during)):
        time.sleep(0.02)
        stats = json.loads(pair.uroce_cmd(0, 'stat', '-a', '-j').stdout)
        during = [(d['counters'].get(rx, 0), d['counters'].get(tx, 0)) for d in stats]
    return during


def rdma_cm_as_users(tap, pair, gid):
    """rdma_cm as two ordinary users: rping between namespaces and on one device, and mckey
    (multicast) between namespaces.  On one device the same-host rings are each user's own
    (0600): their frames, QP1's MADs too, go on the netdev from a packet socket the broker handed
    out that does not bypass the qdisc layer, for the kernel to hand to the other user's packet
    socket."""
    global PORT
    a = pair.ip4[0]
    for label, client_side in (('between namespaces', 1), ('on one device', 0)):
        PORT += 1
        opts = ['-a', a, '-p', str(PORT), '-C', '100', '-V']
        srv = start(pair, 0, USERS[0], ['rping', '-s'] + opts)
        if not wait_listening(pair, 0, PORT, srv):
            srv.kill()
            srv.wait(5)
            tap.ok(False, f'rping -s as {USERS[0]} listens', srv.out)
            continue
        cli = start(pair, client_side, USERS[1], ['rping', '-c'] + opts)
        cli.wait(it.PROG_TIMEOUT)
        srv.wait(10 if cli.rc == 0 else 5)
        it.both_ok(tap, f'rping -C 100 -V as {USERS[0]} and {USERS[1]} {label}', srv, cli)

    # A connection and its traffic between two users' processes on one device.
    PORT += 1
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(PORT), '-n', '20000', '-g', gid[0]]
    srv = start(pair, 0, USERS[0], base)
    if not pair.wait_listen(0, PORT, srv):
        srv.kill()
        srv.wait(5)
        tap.ok(False, f'ibv_rc_pingpong as {USERS[0]} listens', srv.out)
    else:
        cli = start(pair, 0, USERS[1], base + [a])
        during = loop_counts_while(pair, cli, 'rx_user_loop', 'tx_user_loop')
        cli.wait(it.PROG_TIMEOUT)
        srv.wait(10 if cli.rc == 0 else 5)
        if it.both_ok(tap, f'ibv_rc_pingpong as {USERS[0]} and {USERS[1]} on one device', srv,
                      cli):
            tap.ok(len(during) == 2 and all(rx > 0 and tx > 0 for rx, tx in during),
                   'both processes sent and took frames past the same-host rings '
                   '(rx_user_loop, tx_user_loop)', str(during))
            tap.diag(' '.join(ln for ln in cli.out.splitlines() if 'usec/iter' in ln))

    group = '239.7.7.7'
    rcv = start(pair, 0, USERS[0], ['mckey', '-m', group, '-b', a, '-C', '10'])
    end = time.monotonic() + 30
    while time.monotonic() < end and rcv.p.poll() is None and \
            group not in it.sh('ip', '-n', pair.ns[0], 'maddr', 'show', 'dev', pair.ifs[0]).stdout:
        time.sleep(0.05)
    snd = start(pair, 1, USERS[1], ['mckey', '-m', group, '-b', pair.ip4[1], '-s', '-C', '10'])
    snd.wait(it.PROG_TIMEOUT)
    rcv.wait(15 if snd.rc == 0 else 5)
    it.both_ok(tap, f'mckey -C 10 (multicast) as {USERS[0]} and {USERS[1]} between namespaces',
               rcv, snd)


def main():
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (network namespaces, users)')
        return 77
    make_users()
    try:
        return it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'nr', body,
                            link_args=('user_qpns', str(USER_QPN_QUOTA)))
    finally:
        remove_users()


if __name__ == '__main__':
    sys.exit(main())
