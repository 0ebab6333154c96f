# SPDX-License-Identifier: MIT
"""af_xdp on both ends of the only veth: perftest's TCP exchange, ping and TCP keep working.

uroce's XDP program redirects only RoCE v2 (UDP 4791) to the AF_XDP socket,
so the kernel still owns the netdev: it answers ARP/ND, and perftest
connects over the same link (no second veth, no -F workaround).  MTU 3000:
an af_xdp frame fits one 4 KiB UMEM chunk, so the path MTU is 2048.
"""

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

PY = '/usr/bin/python3'
TCP_PORT = 18516
TCP_BYTES = 200000

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


def kernel_traffic(tap, pair, label):
    """Ping both ways (IPv4 and IPv6) and one TCP transfer, through the kernel."""
    for side in range(2):
        for addr in (pair.ip4[1 - side], pair.ip6[1 - side]):
            p = it.sh(*pair.ns_argv(side, ['ping', '-c', '2', '-W', '2', addr]), check=False)
            tap.ok(p.returncode == 0, f'kernel ping {pair.ns[side]} -> {addr} {label}', p.stdout)
    srv = pair.start(0, [PY, '-c', TCP_SERVER.format(addr=pair.ip4[0])], raw=True)
    if not pair.wait_listen(0, TCP_PORT, srv):
        srv.kill()
        srv.wait(5)
        return tap.ok(False, f'TCP server listens {label}', srv.out)
    cli = pair.start(1, [PY, '-c', TCP_CLIENT.format(addr=pair.ip4[0])], raw=True)
    cli.wait(30)
    srv.wait(10)
    return tap.ok(cli.rc == 0 and cli.out.strip() == str(TCP_BYTES),
                  f'kernel TCP, {TCP_BYTES} bytes counted by the far side {label}',
                  f'client exit {cli.rc}: {cli.out}\nserver exit {srv.rc}: {srv.out}')


def body(tap, pair):
    for i in range(2):
        out = it.sh('tc', '-n', pair.ns[i], 'filter', 'show', 'dev', pair.ifs[i], 'ingress').stdout
        tap.ok('handle 0x4791' in out,
               f'`uroce link add --pmd af_xdp` put the tc ICMP suppressor on {pair.ifs[i]}', out)
    r = perf.Runner(pair)
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '2000'], label=' (af_xdp)')
    r.run(tap, 'ib_read_lat', ['-n', '1000'], label=' (af_xdp)')
    r.run(tap, 'ib_write_bw', ['--report_gbits', '-n', '1000', '-m', '2048'],
          label=' at path MTU 2048 (af_xdp)')

    # Both af_xdp ports up (a timed run), and the kernel's own traffic alongside.
    srv, cli = r.start('ib_write_bw', ['--report_gbits', '-D', '6'])
    if cli is None:
        tap.ok(False, 'ib_write_bw -D 6 server starts (af_xdp)', srv.out)
        return
    end = time.monotonic() + 4
    attached = [False, False]
    while time.monotonic() < end and not all(attached):
        attached = [xdp_attached(pair, i)[0] for i in range(2)]
        time.sleep(0.1)
    tap.ok(all(attached), 'XDP program on both netdevs while perftest runs',
           '\n'.join(xdp_attached(pair, i)[1] for i in range(2)))
    kernel_traffic(tap, pair, 'while both af_xdp ports are up')
    cli.wait(60)
    srv.wait(15)
    perf.check(tap, 'ib_write_bw -D 6 alongside kernel traffic (af_xdp)', srv, cli)
    for i in range(2):
        attached, out = xdp_attached(pair, i)
        tap.ok(not attached, f'XDP program removed from {pair.ifs[i]} after perftest', out)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'ax', body, mtus=(3000,),
                          link_args=('--pmd', 'af_xdp')))
