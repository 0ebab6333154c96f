# SPDX-License-Identifier: MIT
"""memif: a port is ACTIVE before its peer process comes, and DOWN once a connected peer is gone;
writes and reads between the link's two devices are placed directly.

One namespace holds two devices joined by DPDK's memif PMD (docs/dataplane.md,
"memif link state"): umA serves the link (role=server), umB is its client.
Each program opens its device alone first; the other end's program comes
later, on purpose, as with perftest (its server checks the port before any
client exists).  Unmodified perftest must pass in both role orders with no
second attempt, the port must stay ACTIVE past the device's link refreshes
without a peer, and a peer that connected and went away must show as
IBV_EVENT_PORT_ERR, one that comes back as IBV_EVENT_PORT_ACTIVE.
"""

import os
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import perf  # noqa: E402

DEVS = ('umA', 'umB')
ROLE = {'umA': 'memif server', 'umB': 'memif client'}
GID = '1'			# the RoCE v2 link-local GID: memif devices have no IP address
# Longer than the device's link recheck (1 s, docs/dataplane.md "Progress"): the state a
# program sees after this is the refreshed one, not the one it opened with.
PAST_REFRESH_MS = 2500
LATE_S = 2			# how long the second program of a pair comes after the first


class MemifLink(it.Pair):
    """One namespace, one run directory, umA and umB on one memif link."""

    def __init__(self, build, tag, **kwargs):
        super().__init__(build, tag, **kwargs)
        self.ns = [self.ns[0]] * 2
        self.run_dirs = [os.path.join(self.tmp, 'run')] * 2
        self.link = f'{it.NS_PREFIX}m{self.tag}'
        self.added = []

    def setup(self):
        it.sh('ip', 'netns', 'add', self.ns[0])
        self.created.append(self.ns[0])
        it.sh('ip', '-n', self.ns[0], 'link', 'set', 'lo', 'up')
        os.makedirs(self.run_dirs[0])
        for dev, role in zip(DEVS, ('server', 'client')):
            self.uroce_cmd(0, 'link', 'add', dev, 'netdev', self.link, '--pmd',
                           f'memif:role={role}')
            self.added.append(dev)

    def teardown(self):
        for p in self.procs:
            p.kill()
        for dev in self.added:
            self.uroce_cmd(0, 'link', 'del', dev, check=False)
        self.added = []
        self.teardown_netns()
        shutil.rmtree(self.tmp, ignore_errors=True)


class Lines:
    """A program's output read as it comes, so the harness can act on one line."""

    def __init__(self, proc):
        self.proc = proc
        self.lines = []
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.p.stdout:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()

    def wait_for(self, text, timeout):
        """True once a line holds TEXT; False when the program ended or TIMEOUT passed first."""
        end = time.monotonic() + timeout
        with self.cond:
            while not any(text in ln for ln in self.lines):
                left = end - time.monotonic()
                if left <= 0 or (not self.thread.is_alive() and self.proc.p.poll() is not None):
                    return False
                self.cond.wait(min(left, 0.2))
            return True

    def finish(self, timeout):
        """Wait for the program; its exit status and whole output."""
        try:
            self.proc.rc = self.proc.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.rc = self.proc.p.wait()
        self.thread.join(10)
        self.proc.out = ''.join(self.lines)
        return self.proc.rc


def verbs_check(pair, dev, *args):
    return [os.path.join(pair.build, 'tests', 'integration', 'verbs_check'), '-d', dev,
            '-g', GID] + list(args)


def late_pair(pair, tool, args, server_dev, port):
    """perftest's server on SERVER_DEV; its client on the other device LATE_S after it listens."""
    client_dev = DEVS[1 - DEVS.index(server_dev)]
    srv = pair.start(0, [tool, '-d', server_dev, '-x', GID, '-F', '-p', str(port)] + args)
    if not pair.wait_listen(0, port, srv):
        srv.kill()
        srv.wait(5)
        return srv, None
    time.sleep(LATE_S)
    cli = pair.start(0, [tool, '-d', client_dev, '-x', GID, '-F', '-p', str(port)] + args +
                     ['127.0.0.1'])
    cli.wait(it.PROG_TIMEOUT)
    srv.wait(10 if cli.rc == 0 else 5)
    return srv, cli


def memif_pair(pair, argv_srv, argv_cli, port, pcaps=None):
    """A server on umA and its client on umB, both started now; each process captures into
    PCAPS when given."""
    env = ['env', f'UROCE_PCAP={os.path.join(pcaps, "%p.pcap")}'] if pcaps else []
    srv = pair.start(0, env + argv_srv + ['-p', str(port)])
    if not pair.wait_listen(0, port, srv):
        srv.kill()
        srv.wait(5)
        return srv, None
    cli = pair.start(0, env + argv_cli + ['-p', str(port), '127.0.0.1'])
    cli.wait(it.PROG_TIMEOUT)
    srv.wait(15 if cli.rc == 0 else 5)
    return srv, cli


def body(tap, pair):
    # Alone on the link, past the device's link refreshes: ACTIVE, no port error.
    for dev in DEVS:
        p = pair.start(0, verbs_check(pair, dev, '--port-state', str(PAST_REFRESH_MS)))
        p.wait(60)
        tap.ok(p.rc == 0 and 'PASS port_state' in p.out,
               f'{ROLE[dev]} alone: port ACTIVE after {PAST_REFRESH_MS} ms, no IBV_EVENT_PORT_ERR',
               p.out)

    # Unmodified perftest, the second program late, both role orders: one attempt each.
    port = 18700
    for tool, args in (('ib_write_lat', ['-s', '64', '-n', '1000']),
                       ('ib_write_bw', ['-s', '65536', '-n', '2000', '--report_gbits'])):
        for server_dev in DEVS:
            port += 1
            srv, cli = late_pair(pair, tool, args, server_dev, port)
            name = f'{tool}: server on the {ROLE[server_dev]}, client {LATE_S} s later'
            if it.both_ok(tap, name, srv, cli):
                tap.diag(cli.out.strip().splitlines()[-2].strip())

    ports = iter(range(18780, 18790))
    perf.direct_checks(tap, pair, 'across the memif link', DEVS, [(dev, GID) for dev in DEVS],
                       lambda s, c, pcaps: memif_pair(pair, s, c, next(ports), pcaps))

    # A peer that was connected and went away is a link down, one that connects again a link up:
    # on the server when its client leaves and another comes ...
    srv = pair.start(0, verbs_check(pair, 'umA', '--port-events', '-p', '18790'))
    srv_watch = Lines(srv)
    if not pair.wait_listen(0, 18790, srv):
        srv_watch.finish(5)
        tap.ok(False, 'memif server: port events', srv.out)
        return
    first = pair.start(0, verbs_check(pair, 'umB', '--port-state', str(PAST_REFRESH_MS)))
    first.wait(60)
    tap.ok(first.rc == 0 and not any('port error' in ln for ln in srv_watch.lines),
           'memif client connected: ACTIVE on both ends, no port error on the server', first.out)
    tap.ok(srv_watch.wait_for('port error', 15),
           'memif client gone: IBV_EVENT_PORT_ERR on the server', ''.join(srv_watch.lines))
    # ... and on the client when its server leaves (this one, once it saw the client come back)
    # and another comes.
    cli = pair.start(0, verbs_check(pair, 'umB', '--port-events', '-p', '18791'))
    cli_watch = Lines(cli)
    srv_watch.finish(30)
    tap.ok(srv.rc == 0 and 'PASS port_events' in srv.out,
           'memif client back: IBV_EVENT_PORT_ACTIVE on the server', srv.out)
    tap.ok(cli_watch.wait_for('port error', 15),
           'memif server gone: IBV_EVENT_PORT_ERR on the client', ''.join(cli_watch.lines))
    # Holds the link while the client reconnects; what it sees afterwards is not judged here.
    again = pair.start(0, verbs_check(pair, 'umA', '--port-state', '10000'))
    cli_watch.finish(30)
    again.kill()
    again.wait(10)
    tap.ok(cli.rc == 0 and 'PASS port_events' in cli.out,
           'memif server back: the client reconnects, IBV_EVENT_PORT_ACTIVE on the client', cli.out)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'mf', body,
                          pair_cls=MemifLink))
