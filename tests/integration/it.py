# SPDX-License-Identifier: MIT
"""Integration tests: unmodified verbs programs on uroce0 between two network namespaces.

usage: it.py SUITE --build BUILD_DIR

Each suite builds its own pair of namespaces up<tag>A / up<tag>B joined by a
veth pair upv<tag>a / upv<tag>b (prefix "up" unless UROCE_NS_PREFIX says otherwise), creates uroce0 on each end (each namespace
has its own UROCE_RUN_DIR), runs programs through `uroce exec`, and removes
everything again, also when interrupted.  Output is TAP.  Every program runs
under a timeout; only processes started here are ever killed, by process group.
Needs root: without it the suite is skipped (TAP "1..0 # SKIP").
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

# UROCE_NS_PREFIX: for running next to other users of the same machine.
NS_PREFIX = os.environ.get('UROCE_NS_PREFIX', 'up')
PROG_TIMEOUT = 120


class TapFailure(Exception):
    pass


class Tap:
    """TAP output: one line per check, the plan at the end."""

    def __init__(self, detail_lines=40):
        self.n = 0
        self.failed = 0
        self.detail_lines = detail_lines

    def ok(self, cond, name, detail=''):
        """Print the check's line; when it failed, the last detail_lines lines of DETAIL too, also
        on stderr."""
        self.n += 1
        if cond:
            print(f'ok {self.n} - {name}', flush=True)
        else:
            self.failed += 1
            print(f'not ok {self.n} - {name}', flush=True)
            # meson's error log shows a TAP test's stderr only: the detail goes to both.
            print(f'not ok {self.n} - {name}', file=sys.stderr, flush=True)
            for line in str(detail).strip().splitlines()[-self.detail_lines:]:
                print(f'#   {line}', flush=True)
                print(f'#   {line}', file=sys.stderr, flush=True)
        return cond

    def diag(self, text):
        for line in str(text).splitlines():
            print(f'# {line}', flush=True)

    def done(self):
        print(f'1..{self.n}', flush=True)
        return 1 if self.failed else 0


def sh(*argv, check=True, timeout=30, env=None):
    """Run a short setup command; raise with its output when it fails."""
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=timeout, env=env)
    if check and p.returncode:
        raise TapFailure(f'{" ".join(argv)}: exit {p.returncode}: {p.stdout.strip()}')
    return p


class Proc:
    """A program started in a namespace, in its own process group.

    With LOG its output goes to that file, so it can be read while it runs (so_far()).
    """

    def __init__(self, argv, env, log=None):
        self.argv = argv
        self.log = log
        out = open(log, 'w') if log else subprocess.PIPE
        self.p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                                  text=True, env=env, start_new_session=True)
        if log:
            out.close()
        self.out = ''
        self.rc = None

    def so_far(self):
        with open(self.log) as f:
            return f.read()

    def wait(self, timeout):
        late = ''
        try:
            self.out, _ = self.p.communicate(timeout=timeout)
            self.rc = self.p.returncode
        except subprocess.TimeoutExpired:
            self.kill()
            self.out, _ = self.p.communicate()
            late = f'\n[killed after {timeout} s]'
            self.rc = -9
        self.out = (self.so_far() if self.log else self.out) + late
        return self.rc

    def kill(self):
        if self.p.poll() is None:
            try:
                os.killpg(self.p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass


class Pair:
    """Two namespaces, a veth between them, uroce0 on each end."""

    def __init__(self, build, tag, mtu=1500, subnet=77, link_args=()):
        self.build = build
        self.link_args = list(link_args)
        # Unique per run, so two runs of a suite at once never share a name.
        tag = f'{tag}{os.getpid() & 0xffff:04x}'
        self.tag = tag
        self.mtu = mtu
        self.ns = [f'{NS_PREFIX}{tag}A', f'{NS_PREFIX}{tag}B']
        self.ifs = [f'{NS_PREFIX}v{tag}a', f'{NS_PREFIX}v{tag}b']
        self.ip4 = [f'10.{subnet}.0.1', f'10.{subnet}.0.2']
        self.ip6 = [f'fd00:{subnet}::1', f'fd00:{subnet}::2']
        self.tmp = tempfile.mkdtemp(prefix=f'uroce-it-{tag}-')
        self.run_dirs = [os.path.join(self.tmp, 'A'), os.path.join(self.tmp, 'B')]
        self.uroce = os.path.join(build, 'tools', 'uroce')
        self.procs = []
        self.devices = [False, False]
        self.created = []

    # ---- setup and teardown ----

    def add_netns(self, ns):
        sh('ip', 'netns', 'add', ns)
        self.created.append(ns)
        # No duplicate address detection (addresses are usable at once), and
        # IPv6 addresses survive the link going down and up again.
        for conf in ('all', 'default'):
            for knob in ('accept_dad=0', 'keep_addr_on_down=1'):
                sh('ip', 'netns', 'exec', ns, 'sysctl', '-qw', f'net.ipv6.conf.{conf}.{knob}')
        sh('ip', '-n', ns, 'link', 'set', 'lo', 'up')

    def link(self):
        """The veth between the two namespaces."""
        sh('ip', 'link', 'add', self.ifs[0], 'netns', self.ns[0], 'mtu', str(self.mtu),
           'type', 'veth', 'peer', 'name', self.ifs[1], 'netns', self.ns[1],
           'mtu', str(self.mtu))

    def setup(self):
        for ns in self.ns:
            self.add_netns(ns)
        self.link()
        for i in range(len(self.ns)):
            sh('ip', '-n', self.ns[i], 'addr', 'add', f'{self.ip4[i]}/24', 'dev', self.ifs[i])
            sh('ip', '-n', self.ns[i], 'addr', 'add', f'{self.ip6[i]}/64', 'dev', self.ifs[i],
               'nodad')
            sh('ip', '-n', self.ns[i], 'link', 'set', self.ifs[i], 'up')
        self.wait_running()
        for i in range(len(self.ns)):
            os.makedirs(self.run_dirs[i])
            self.uroce_cmd(i, 'link', 'add', 'uroce0', 'netdev', self.ifs[i], *self.link_args)
            self.devices[i] = True

    def wait_running(self, timeout=10):
        """Wait for carrier on every end: the kernel reports it up to a second late (linkwatch)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            states = [json.loads(sh('ip', '-n', ns, '-j', 'link', 'show',
                                    ifname).stdout)[0].get('operstate')
                      for ns, ifname in zip(self.ns, self.ifs)]
            if all(st == 'UP' for st in states):
                return
            time.sleep(0.05)
        raise TapFailure(f'veth {self.ifs} not running after {timeout} s')

    def teardown_netns(self):
        """Delete the namespaces this run created (and so their veth ends)."""
        for ns in self.created:
            sh('ip', 'netns', 'del', ns, check=False)
        self.created = []

    def teardown(self):
        for p in self.procs:
            p.kill()
        for i in range(len(self.ns)):
            if self.devices[i]:
                self.uroce_cmd(i, 'link', 'del', 'uroce0', check=False)
                self.devices[i] = False
        self.teardown_netns()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- running things ----

    def env(self, side):
        e = dict(os.environ)
        e['UROCE_RUN_DIR'] = self.run_dirs[side]
        return e

    def ns_argv(self, side, argv):
        return ['ip', 'netns', 'exec', self.ns[side]] + list(argv)

    def uroce_cmd(self, side, *args, check=True):
        return sh(*self.ns_argv(side, [self.uroce] + list(args)), check=check,
                  env=self.env(side))

    def verbs_argv(self, side, argv):
        """A verbs program as users run it: through `uroce exec`."""
        return self.ns_argv(side, [self.uroce, 'exec', '--'] + list(argv))

    def start(self, side, argv, raw=False, log=None):
        """LOG: a file name in this run's directory to send the output to."""
        p = Proc(self.ns_argv(side, argv) if raw else self.verbs_argv(side, argv),
                 self.env(side), log=os.path.join(self.tmp, log) if log else None)
        self.procs.append(p)
        return p

    def wait_listen(self, side, port, proc, timeout=30):
        """Wait until a TCP port listens in a namespace (or the server died)."""
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if proc.p.poll() is not None:
                return False
            out = sh(*self.ns_argv(side, ['ss', '-Hltn', f'sport = :{port}']),
                     check=False).stdout
            if out.strip():
                return True
            time.sleep(0.05)
        return False

    def client_server(self, server_argv, client_argv, port, timeout=PROG_TIMEOUT,
                      server_side=0):
        """Run a server in one namespace and its client in the other; both must exit 0."""
        srv = self.start(server_side, server_argv)
        if not self.wait_listen(server_side, port, srv):
            srv.kill()
            srv.wait(5)
            return srv, None
        cli = self.start(1 - server_side, client_argv)
        cli.wait(timeout)
        srv.wait(10 if cli.rc == 0 else 5)
        return srv, cli

    def gids(self, side):
        """The GID table `uroce link show -j` reports: list of dicts."""
        out = self.uroce_cmd(side, 'link', 'show', '-j', 'uroce0').stdout
        return json.loads(out)[0]['gids']

    def gid_index(self, side, family, rocev=2):
        want = 'RoCE v2' if rocev == 2 else 'RoCE v1'
        for g in self.gids(side):
            if g['type'] != want:
                continue
            v4 = g['gid'].startswith('::ffff:')
            if family == 4 and v4:
                return g['index']
            if family == 6 and not v4 and not g['gid'].startswith('fe80'):
                return g['index']
            if family == 'll' and g['gid'].startswith('fe80'):
                return g['index']
        raise TapFailure(f'no {want} GID of family {family} on side {side}')


class Mesh(Pair):
    """N namespaces on one bridge (in a hub namespace of its own), uroce0 in each."""

    def __init__(self, build, tag, n=4, mtu=1500, subnet=80, link_args=()):
        super().__init__(build, tag, mtu=mtu, subnet=subnet, link_args=link_args)
        tag = self.tag
        self.hub = f'{NS_PREFIX}{tag}H'
        self.ns = [f'{NS_PREFIX}{tag}{i}' for i in range(n)]
        self.ifs = [f'{NS_PREFIX}v{tag}{i}' for i in range(n)]
        self.ports = [f'{NS_PREFIX}h{tag}{i}' for i in range(n)]
        self.ip4 = [f'10.{subnet}.0.{i + 1}' for i in range(n)]
        self.ip6 = [f'fd00:{subnet}::{i + 1}' for i in range(n)]
        self.run_dirs = [os.path.join(self.tmp, str(i)) for i in range(n)]
        self.devices = [False] * n

    def link(self):
        """A bridge in the hub, a veth from each namespace to one of its ports."""
        self.add_netns(self.hub)
        sh('ip', '-n', self.hub, 'link', 'add', 'br0', 'mtu', str(self.mtu), 'type', 'bridge')
        sh('ip', '-n', self.hub, 'link', 'set', 'br0', 'up')
        for ns, ifname, port in zip(self.ns, self.ifs, self.ports):
            sh('ip', 'link', 'add', ifname, 'netns', ns, 'mtu', str(self.mtu), 'type', 'veth',
               'peer', 'name', port, 'netns', self.hub, 'mtu', str(self.mtu))
            sh('ip', '-n', self.hub, 'link', 'set', port, 'master', 'br0', 'up')


def capture_facts(pair, path):
    """(frames, opcodes seen) of a capture by tshark, and frames `uroce decode` finds a good ICRC in."""
    out = subprocess.run(['tshark', '-r', path, '-T', 'fields', '-e', 'infiniband.bth.opcode'],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         timeout=60).stdout
    ops = [ln.strip() for ln in out.splitlines() if re.fullmatch(r'\d+', ln.strip())]
    dec = subprocess.run([pair.uroce, 'decode', path], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True, timeout=60).stdout
    return len(ops), set(ops), dec.count('icrc ok')


def set_direct(pair, on, devs=('uroce0',)):
    """The devices' `direct` setting (docs/dataplane.md, "Direct placement"), read at each open."""
    for dev in devs:
        conf = os.path.join(pair.run_dirs[0], 'devices', f'{dev}.conf')
        with open(conf) as f:
            lines = [ln for ln in f if not ln.startswith('direct')]
        if not on:
            lines.append('direct = off\n')
        with open(conf, 'w') as f:
            f.writelines(lines)


def both_ok(tap, name, srv, cli):
    if cli is None:
        return tap.ok(False, name, f'server did not start listening:\n{srv.out}')
    detail = (f'server ({" ".join(srv.argv[4:])}) exit {srv.rc}:\n{srv.out}\n'
              f'client exit {cli.rc}:\n{cli.out}'
              f'\n(server exit {srv.rc}, client exit {cli.rc})')
    return tap.ok(srv.rc == 0 and cli.rc == 0, name, detail)


def run_suite(build, tag, body, mtus=(1500,), link_args=(), pair_cls=Pair):
    tap = Tap()
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (network namespaces, /dev/infiniband)')
        return 77
    for k, mtu in enumerate(mtus):
        pair = pair_cls(build, f'{tag}{k}', mtu=mtu, subnet=70 + k, link_args=link_args)

        def on_term(signum, frame):
            pair.teardown()
            sys.exit(1)

        signal.signal(signal.SIGTERM, on_term)
        signal.signal(signal.SIGINT, on_term)
        try:
            pair.setup()
            body(tap, pair)
        except (TapFailure, subprocess.TimeoutExpired) as e:
            tap.ok(False, f'{tag} setup/run at MTU {mtu}', e)
        finally:
            pair.teardown()
    return tap.done()
