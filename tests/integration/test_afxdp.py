# SPDX-License-Identifier: MIT
"""af_xdp on both ends of the only veth: the port alone (uroce-porttest), then verbs programs.

uroce's XDP program redirects only RoCE v2 (UDP 4791) to the AF_XDP socket,
so the kernel still owns the netdev: it answers ARP/ND (the port learns MACs
from copies of the answers), carries ping and TCP, and perftest connects over
the same link (no second veth, no -F workaround).  Veth MTU 3500: an af_xdp
frame fits one 4 KiB UMEM chunk, so the port's IP MTU is 3438, not the
netdev's, and the path MTU 2048.  The XDP program goes at close; a second
process on the netdev is refused with a clear line, and the program of a
process that died is taken over.  A process killed with an rdma_cm connection up:
its peer gets DISCONNECTED (the device's broker posts the DREQ it left).  A port ping is lost only without an answer
for 1 s: on a loaded 2-core machine a busy-polling peer can stall 200 ms.
"""

import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import loss  # noqa: E402
import perf  # noqa: E402
from test_rdmacm_clients import killed_idle  # noqa: E402
import test_nonroot as nonroot  # noqa: E402

PY = '/usr/bin/python3'
TCP_PORT = 18516
TCP_BYTES = 200000
MTU = 3500
PORT_MTU = 3438		# frames end at 3456 bytes, an mbuf in one 4 KiB UMEM chunk (dp_port.c)

# Counts what it receives until EOF and sends the count back.
TCP_SERVER = f'''
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("{{addr}}", {TCP_PORT})); s.listen(1); s.settimeout(20)
c, _ = s.accept(); c.settimeout(20)
n = 0
while True:
    d = c.recv(65536)
    if not d:
        break
    n += len(d)
c.sendall(str(n).encode())
'''

TCP_CLIENT = f'''
import socket
s = socket.create_connection(("{{addr}}", {TCP_PORT}), timeout=10)
s.sendall(b"k" * {TCP_BYTES}); s.shutdown(socket.SHUT_WR)
print(s.recv(100).decode())
'''


def xdp_attached(pair, side):
    out = it.sh('ip', '-n', pair.ns[side], 'link', 'show', pair.ifs[side]).stdout
    return ' xdp' in out, out


def wait_xdp(pair, want, secs):
    """Wait up to SECS for an XDP program on both netdevs (WANT) or on neither: done?, ip's lines."""
    end = time.monotonic() + secs
    while True:
        seen = [xdp_attached(pair, i) for i in range(2)]
        done = all(a == want for a, _ in seen)
        if done or time.monotonic() >= end:
            return done, '\n'.join(out for _, out in seen)
        time.sleep(0.1)


def counter(out, name):
    """The last "NAME=value" line uroce-porttest printed (its port counters at exit)."""
    v = re.findall(rf'^{name}=(\S*)$', out, re.M)
    return int(v[-1]) if v else -1


def field(out, name):
    """The last NAME=value inside a summary line."""
    v = re.findall(rf'\b{name}=(\S*)', out)
    return v[-1] if v else None


class Port:
    """uroce-porttest on one end's af_xdp port (A pings, B pongs)."""

    def __init__(self, pair, porttest):
        self.pair = pair
        self.porttest = porttest
        self.n = 0

    def argv(self, side, mode, *args):
        return [self.porttest, mode, '--pmd', 'af_xdp', '--netdev', self.pair.ifs[side]] + \
            list(args)

    def start(self, side, mode, *args):
        self.n += 1
        return self.pair.start(side, self.argv(side, mode, *args), raw=True,
                               log=f'port-{self.n}-{mode}')

    def pong(self, *args):
        """Start B's pong and wait until its port is open: the process, or None."""
        p = self.start(1, 'pong', '--qpn', '0x300', *args)
        end = time.monotonic() + 10
        while time.monotonic() < end and p.p.poll() is None:
            if re.search(r'^port ', p.so_far(), re.M):
                return p
            time.sleep(0.1)
        p.kill()
        p.wait(5)
        return None

    def ping(self, peer, count, size, *args):
        p = self.start(0, 'ping', '--qpn', '0x200', '--peer', peer, '--peer-qpn', '0x300',
                       '--count', str(count), '--size', str(size), *args)
        p.wait(120)
        return p


def kernel_traffic(tap, pair, label, tcp_server=0, fresh_neigh=False):
    """Ping both ways (IPv4 and IPv6) and one TCP transfer into TCP_SERVER's end, through the kernel.

    fresh_neigh: both kernels forget their neighbours first and must learn them again over
    the af_xdp netdev.
    """
    if fresh_neigh:
        for side in range(2):
            it.sh('ip', '-n', pair.ns[side], 'neigh', 'flush', 'dev', pair.ifs[side])
    for side in range(2):
        for addr in (pair.ip4[1 - side], pair.ip6[1 - side]):
            p = it.sh(*pair.ns_argv(side, ['ping', '-c', '2', '-W', '2', addr]), check=False)
            tap.ok(p.returncode == 0, f'kernel ping {pair.ns[side]} -> {addr} {label}', p.stdout)
    if fresh_neigh:
        for side in range(2):
            mac = it.sh('ip', 'netns', 'exec', pair.ns[1 - side], 'cat',
                        f'/sys/class/net/{pair.ifs[1 - side]}/address').stdout.strip()
            neigh = [it.sh('ip', '-n', pair.ns[side], 'neigh', 'show', addr, 'dev',
                           pair.ifs[side]).stdout
                     for addr in (pair.ip4[1 - side], pair.ip6[1 - side])]
            tap.ok(all(mac in n for n in neigh),
                   f'{pair.ns[side]}\'s kernel learnt the other end\'s MAC {mac} for IPv4 and '
                   f'IPv6 from its kernel {label}', ''.join(neigh))
    addr = pair.ip4[tcp_server]
    srv = pair.start(tcp_server, [PY, '-c', TCP_SERVER.format(addr=addr)], raw=True)
    if not pair.wait_listen(tcp_server, TCP_PORT, srv):
        srv.kill()
        srv.wait(5)
        return tap.ok(False, f'TCP server listens {label}', srv.out)
    cli = pair.start(1 - tcp_server, [PY, '-c', TCP_CLIENT.format(addr=addr)], raw=True)
    cli.wait(30)
    srv.wait(10)
    return tap.ok(cli.rc == 0 and cli.out.strip() == str(TCP_BYTES),
                  f'kernel TCP to {pair.ns[tcp_server]}, {TCP_BYTES} bytes counted by it {label}',
                  f'client exit {cli.rc}: {cli.out}\nserver exit {srv.rc}: {srv.out}')


def port_alone(tap, pair, port):
    """B pongs, A pings: sizes up to the UMEM chunk, IPv6, neighbours through the kernels."""
    pong = port.pong('--count', '1500')
    if pong is None:
        tap.ok(False, 'porttest pong on B starts (af_xdp)', port.pair.procs[-1].out)
        return
    tap.ok(f'mtu={PORT_MTU}' in pong.so_far(),
           f'IP MTU {PORT_MTU}: the UMEM chunk, not the netdev\'s {MTU}', pong.so_far())
    attached, out = xdp_attached(pair, 1)
    tap.ok(attached, f'XDP program attached to {pair.ifs[1]} by the port', out)
    pings = [(port.ping(pair.ip4[1], 500, 64, '--wait-ms', '1000'), '64 bytes'),
             (port.ping(pair.ip4[1], 500, 2048, '--wait-ms', '1000'), '2048 bytes'),
             (port.ping(pair.ip6[1], 500, 256, '--wait-ms', '1000'), 'IPv6')]
    big = port.ping(pair.ip4[1], 3, 4096, '--wait-ms', '20')
    pong.wait(60)
    for p, what in pings:
        tap.ok(p.rc == 0 and field(p.out, 'received') == '500',
               f'500 port pings ({what}) answered', p.out)
    tap.ok(counter(big.out, 'tx_too_big') >= 3,
           '4 KiB payload refused (frame above the UMEM chunk), counted', big.out)
    tap.ok(counter(pong.out, 'arp_reply_tx') == 0 and counter(pong.out, 'na_tx') == 0,
           'the port left ARP and ND answers to B\'s kernel', pong.out)
    arp, na = counter(pings[0][0].out, 'arp_reply_rx'), counter(pings[2][0].out, 'na_rx')
    tap.ok(arp >= 1 and na >= 1,
           f'A\'s port resolved B through the kernel\'s ARP and ND answers '
           f'(arp_reply_rx={arp} na_rx={na})', pings[0][0].out + pings[2][0].out)
    attached, out = xdp_attached(pair, 1)
    tap.ok(not attached, 'XDP program removed at the port\'s close', out)


def port_shared(tap, pair, port):
    """B's port up: the kernel's own traffic, a second process refused, a dead one's program taken over."""
    pong = port.pong('--timeout', '60')
    if pong is None:
        tap.ok(False, 'porttest pong on B starts (af_xdp)', port.pair.procs[-1].out)
        return
    kernel_traffic(tap, pair, 'while B\'s port is up', tcp_server=1, fresh_neigh=True)
    # One af_xdp port per netdev queue: a second live process is refused with a clear line...
    second = it.sh(*pair.ns_argv(1, port.argv(1, 'pong', '--timeout', '1')), check=False,
                   env=pair.env(1))
    tap.ok(second.returncode != 0 and
           f'af_xdp is in use by process {pong.p.pid}' in second.stdout,
           f'second process refused: {second.stdout.strip()}', second.stdout)
    # ...and the XDP program of a process that died is taken over, not an obstacle.
    pong.kill()
    pong.wait(5)
    attached, out = xdp_attached(pair, 1)
    tap.ok(attached, 'the killed process\'s XDP program stays', out)
    pong = port.pong('--count', '100')
    if not tap.ok(pong is not None, 'port opened over a dead process\'s XDP program',
                  port.pair.procs[-1].out):
        return
    ping = port.ping(pair.ip4[1], 100, 64)
    pong.wait(30)
    tap.ok(field(ping.out, 'received') == '100', 'and it carries traffic', ping.out)


def verbs(tap, pair):
    """perftest over af_xdp on both ends, alone and beside the kernel's traffic."""
    r = perf.Runner(pair)
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '2000'], label=' (af_xdp)')
    r.run(tap, 'ib_read_lat', ['-n', '1000'], label=' (af_xdp)')
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '1000', '-m', '2048'],
          label=' at path MTU 2048 (af_xdp)')
    # RoCE v1 (EtherType 0x8915) through the same XDP program: GID 2 is the IPv4-mapped v1 GID.
    r.gids = ['2', '2']
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '2000'], label=' -x 2, RoCE v1 (af_xdp)')
    r.run(tap, 'ib_read_lat', ['-n', '1000'], label=' -x 2, RoCE v1 (af_xdp)')
    r.gids = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]

    # Both af_xdp ports up (a timed run), and the kernel's own traffic alongside.
    srv, cli = r.start('ib_write_bw', ['--report_gbits', '-D', '6'])
    if cli is None:
        tap.ok(False, 'ib_write_bw -D 6 server starts (af_xdp)', srv.out)
        return
    done, out = wait_xdp(pair, True, 4)
    tap.ok(done, 'XDP program on both netdevs while perftest runs', out)
    kernel_traffic(tap, pair, 'while both af_xdp ports are up')
    cli.wait(60)
    srv.wait(15)
    perf.check(tap, 'ib_write_bw -D 6 alongside kernel traffic (af_xdp)', srv, cli)
    for i in range(2):
        attached, out = xdp_attached(pair, i)
        tap.ok(not attached, f'XDP program removed from {pair.ifs[i]} after perftest', out)


def as_users(tap, pair):
    """Ordinary users (no capability, the default RLIMIT_MEMLOCK) on af_xdp, through the broker."""
    os.chmod(pair.tmp, 0o755)
    users = nonroot.USERS
    gid = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]

    def argv(user, args):
        return nonroot.as_user(pair, user, args)

    p = pair.start(0, argv(users[0], ['sh', '-c', 'ulimit -l; grep CapEff /proc/self/status']),
                   raw=True)
    p.wait(30)
    m = re.match(r'(\d+|unlimited)\n', p.out)
    tap.ok(p.rc == 0 and m and re.search(r'CapEff:\s+0+$', p.out, re.M),
           'the test user runs with no capability', p.out)
    # Its UMEM counts against RLIMIT_MEMLOCK: below 32 MiB the port takes 2.4 KiB chunks.
    compact = m and m.group(1) != 'unlimited' and int(m.group(1)) < 33 << 10
    p = pair.start(0, argv(users[0], ['ibv_devinfo', '-v', '-d', 'uroce0']), raw=True)
    p.wait(30)
    mtu = '1024' if compact else '2048'
    tap.ok(p.rc == 0 and 'PORT_ACTIVE' in p.out and re.search(rf'active_mtu:\s+{mtu}\b', p.out),
           f'ibv_devinfo opens uroce0 (af_xdp) as an ordinary user, path MTU {mtu} '
           f'(RLIMIT_MEMLOCK {m.group(1) if m else "?"} KiB)', p.out)

    port = 18530
    base = ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(port), '-n', '500', '-c']
    srv, cli = nonroot.client_server(pair, argv(users[0], base + ['-g', gid[0]]),
                                     argv(users[1], base + ['-g', gid[1], pair.ip4[0]]), port)
    it.both_ok(tap, 'ibv_rc_pingpong -c (data checked) between namespaces as two ordinary users '
               '(af_xdp)', srv, cli)

    # A timed run: both ports up, their frames through the XDP programs the brokers attached.
    port += 1
    base = ['ib_write_bw', '-d', 'uroce0', '-p', str(port), '-s', '65536', '-D', '5',
            '--report_gbits']
    srv = pair.start(0, argv(users[0], base + ['-x', gid[0]]), raw=True)
    if not pair.wait_listen(0, port, srv):
        srv.kill()
        srv.wait(5)
        tap.ok(False, 'ib_write_bw server starts as an ordinary user (af_xdp)', srv.out)
        return
    cli = pair.start(1, argv(users[1], base + ['-x', gid[1], pair.ip4[0]]), raw=True)
    done, out = wait_xdp(pair, True, 4)
    tap.ok(done, 'the brokers attached the XDP program on both netdevs', out)
    end = time.monotonic() + 4
    seen = [0, 0]
    while time.monotonic() < end and min(seen) <= 1000:
        seen = [loss.show(pair, i)[0] for i in range(2)]
        time.sleep(0.2)
    # One af_xdp process per netdev queue, for users as for root.
    second = it.sh(*pair.ns_argv(0, argv(users[1], ['ibv_devinfo', '-d', 'uroce0'])),
                   check=False, env=pair.env(0))
    tap.ok(second.returncode != 0 and f'af_xdp is in use by process {srv.p.pid}' in second.stdout,
           'a second user\'s process on the busy netdev is refused: '
           f'{second.stdout.strip().splitlines()[0] if second.stdout.strip() else ""}',
           second.stdout)
    cli.wait(60)
    srv.wait(15)
    perf.check(tap, 'ib_write_bw -D 5 64 KiB between namespaces as two ordinary users (af_xdp)',
               srv, cli)
    tap.ok(all(n > 1000 for n in seen), f'their frames went through the XDP programs '
           f'(RoCE frames seen mid-run: {seen[0]} and {seen[1]})', str(seen))
    done, out = wait_xdp(pair, False, 5)
    tap.ok(done, 'the brokers detached the XDP programs when the users\' processes ended', out)

    # A killed user's process: its broker connection closes, and the netdev is free again.
    port += 1
    srv = pair.start(0, argv(users[0], ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(port),
                                        '-g', gid[0]]), raw=True)
    pair.wait_listen(0, port, srv)
    up = xdp_attached(pair, 0)[0]
    srv.kill()
    srv.wait(5)
    end = time.monotonic() + 5
    while time.monotonic() < end and xdp_attached(pair, 0)[0]:
        time.sleep(0.1)
    p = pair.start(0, argv(users[1], ['ibv_devinfo', '-d', 'uroce0']), raw=True)
    p.wait(30)
    tap.ok(up and not xdp_attached(pair, 0)[0] and p.rc == 0 and 'PORT_ACTIVE' in p.out,
           'a killed user\'s program leaves no XDP program behind; the next user opens the device',
           p.out)

    # The kernel counts a user's locked memory across its processes: with the default limit one
    # af_xdp port per user at a time, the second told so in one line.
    if compact and int(m.group(1)) < 15 << 10:
        port += 1
        srv = pair.start(0, argv(users[0], ['ibv_rc_pingpong', '-d', 'uroce0', '-p', str(port),
                                            '-g', gid[0]]), raw=True)
        pair.wait_listen(0, port, srv)
        p = pair.start(1, argv(users[0], ['ibv_devinfo', '-d', 'uroce0']), raw=True)
        p.wait(30)
        srv.kill()
        srv.wait(5)
        line = [s for s in p.out.splitlines() if s.startswith('uroce:')]
        tap.ok(p.rc not in (0, -9) and len(line) == 1 and
               'this user\'s processes lock more than its RLIMIT_MEMLOCK already' in line[0],
               'the same user\'s second af_xdp port, past RLIMIT_MEMLOCK, gets one line saying so',
               p.out)

    # Too little RLIMIT_MEMLOCK for even the small UMEM: one line, no hang.
    p = pair.start(0, ['prlimit', f'--memlock={4 << 20}', '--'] +
                   argv(users[0], ['ibv_devinfo', '-d', 'uroce0']), raw=True)
    p.wait(30)
    line = [s for s in p.out.splitlines() if s.startswith('uroce:')]
    tap.ok(p.rc not in (0, -9) and len(line) == 1 and 'RLIMIT_MEMLOCK, 4096 KiB here' in line[0],
           'with RLIMIT_MEMLOCK 4 MiB the user gets one line saying so', p.out)

    # --group: its members only, as for af_packet.
    pair.uroce_cmd(0, 'link', 'del', 'uroce0')
    pair.uroce_cmd(0, 'link', 'add', 'uroce0', 'netdev', pair.ifs[0], '--pmd', 'af_xdp',
                   '--group', nonroot.GROUP)
    member = pair.start(0, argv(users[0], ['ibv_devinfo', '-d', 'uroce0']), raw=True)
    member.wait(30)
    other = pair.start(0, argv(users[1], ['ibv_devinfo', '-d', 'uroce0']), raw=True)
    other.wait(30)
    tap.ok(member.rc == 0 and 'PORT_ACTIVE' in member.out and other.rc not in (0, -9) and
           f'only members of group {nonroot.GROUP} may use it' in other.out,
           f'--group {nonroot.GROUP} on af_xdp: a member opens the device, another user is told why',
           member.out + other.out)


def body(tap, pair):
    for i in range(2):
        out = it.sh('tc', '-n', pair.ns[i], 'filter', 'show', 'dev', pair.ifs[i], 'ingress').stdout
        tap.ok('handle 0x4791' in out,
               f'`uroce link add --pmd af_xdp` put the tc ICMP suppressor on {pair.ifs[i]}', out)
    port = Port(pair, PORTTEST)
    port_alone(tap, pair, port)
    verbs(tap, pair)
    port_shared(tap, pair, port)
    # The device's broker posts the DREQs of a process that died, on af_xdp as on af_packet.
    killed_idle(tap, pair)
    as_users(tap, pair)


def main():
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (network namespaces, XDP, users)')
        return 77
    nonroot.make_users()
    try:
        return it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'ax', body, mtus=(MTU,),
                            link_args=('--pmd', 'af_xdp'))
    finally:
        nonroot.remove_users()


if __name__ == '__main__':
    PORTTEST = sys.argv[sys.argv.index('--porttest') + 1]
    sys.exit(main())
