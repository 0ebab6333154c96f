# SPDX-License-Identifier: MIT
"""Eight hosts on one bridge: every pair moves data at once, one host leaves, then joins again.

Each host is a network namespace with uroce0 on a veth whose other end is on a
bridge in a ninth namespace; devices live in their namespace's own run
directory (/run/uroce/netns/NAME), as for users.  Every one of the 28 pairs
runs scale_check at once (QPs created, connected, data checked, destroyed, in
rounds; nothing left) while two hosts' netdevs drop 1 % of the RoCE frames they
receive (`uroce loss`): on every host, the packets its peers sent to it are
those its processes received plus those counted as dropped.  Then the last host's
programs are killed and its namespace deleted while seven peers stream writes
to it: each peer's QPs end in IBV_WC_RETRY_EXC_ERR within the retry budget.
The host's namespace is created again with the same names: it starts clean
(its old device and broker removed) and moves data with the first host.
"""

import json
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

HOSTS = 8
CHECKS = ['many_qps_data', 'many_qps_counted', 'many_qps_nothing_left', 'storm_data',
          'storm_nothing_left', 'storm_no_memory_growth']
MESH_ARGS = ['-n', '8', '--storm', '8', '--rounds', '2']
LOSS = '1%'
LOSSY = (1, 4)	# hosts whose netdev drops LOSS of the RoCE frames it receives


class Mesh:
    def __init__(self, build, tag, mtu=1500, subnet=90, link_args=()):
        tag = f'{tag}{os.getpid() & 0xffff:04x}'
        p = it.NS_PREFIX
        self.build = build
        self.mtu = mtu
        self.hub = f'{p}{tag}H'
        self.ns = [f'{p}{tag}{i}' for i in range(HOSTS)]
        self.ifs = [f'{p}v{tag}{i}' for i in range(HOSTS)]
        self.ports = [f'{p}p{tag}{i}' for i in range(HOSTS)]
        self.ip4 = [f'10.{subnet}.0.{i + 1}' for i in range(HOSTS)]
        self.tmp = tempfile.mkdtemp(prefix=f'uroce-mesh-{tag}-')
        self.uroce = os.path.join(build, 'tools', 'uroce')
        self.prog = os.path.join(build, 'tests', 'integration', 'scale_check')
        self.procs = []
        self.created = []

    def setup(self):
        it.sh('ip', 'netns', 'add', self.hub)
        self.created.append(self.hub)
        it.sh('ip', '-n', self.hub, 'link', 'add', 'br0', 'type', 'bridge')
        it.sh('ip', '-n', self.hub, 'link', 'set', 'br0', 'up')
        for i in range(HOSTS):
            self.host_up(i)

    def host_up(self, i):
        self.ns_add(i)
        self.link_up(i)

    def ns_add(self, i):
        it.sh('ip', 'netns', 'add', self.ns[i])
        if self.ns[i] not in self.created:
            self.created.append(self.ns[i])
        it.sh('ip', '-n', self.ns[i], 'link', 'set', 'lo', 'up')

    def link_up(self, i):
        """Veth to the bridge, address, uroce0."""
        it.sh('ip', 'link', 'add', self.ifs[i], 'netns', self.ns[i], 'mtu', str(self.mtu),
              'type', 'veth', 'peer', 'name', self.ports[i], 'netns', self.hub,
              'mtu', str(self.mtu))
        it.sh('ip', '-n', self.hub, 'link', 'set', self.ports[i], 'master', 'br0', 'up')
        it.sh('ip', '-n', self.ns[i], 'addr', 'add', f'{self.ip4[i]}/24', 'dev', self.ifs[i])
        it.sh('ip', '-n', self.ns[i], 'link', 'set', self.ifs[i], 'up')
        end = time.monotonic() + 10
        while 'state UP' not in it.sh('ip', '-n', self.ns[i], 'link', 'show',
                                      self.ifs[i]).stdout:
            if time.monotonic() > end:
                raise it.TapFailure(f'{self.ifs[i]} not running after 10 s')
            time.sleep(0.05)
        self.uroce_cmd(i, 'link', 'add', 'uroce0', 'netdev', self.ifs[i])

    def host_gone(self, i):
        """Kill host @i's programs and delete its namespace; its device is left behind."""
        for p in self.procs:
            if p.argv[3] == self.ns[i]:
                p.kill()
        it.sh('ip', 'netns', 'del', self.ns[i])

    def wait_port_gone(self, i, timeout=10):
        """The old veth goes with the old namespace, once nothing keeps that alive."""
        end = time.monotonic() + timeout
        while it.sh('ip', '-n', self.hub, 'link', 'show', self.ports[i], check=False).returncode == 0:
            if time.monotonic() > end:
                raise it.TapFailure(f'{self.ports[i]} of the deleted namespace still there')
            time.sleep(0.05)

    def teardown(self):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait(5)
        for i in range(HOSTS):
            self.uroce_cmd(i, 'link', 'del', 'uroce0', check=False)
        for ns in self.created:
            it.sh('ip', 'netns', 'del', ns, check=False)
        for ns in self.ns:
            shutil.rmtree(f'/run/uroce/netns/{ns}', ignore_errors=True)
        self.created = []
        shutil.rmtree(self.tmp, ignore_errors=True)

    def kernel_drops(self):
        """Frames the kernel dropped on the way: every veth end's and the bridge's drop counters."""
        total = 0
        for ns in self.created:
            out = it.sh('ip', '-n', ns, '-s', '-j', 'link', 'show', check=False).stdout
            for link in json.loads(out or '[]'):
                st = link.get('stats64', {})
                total += st.get('rx', {}).get('dropped', 0) + st.get('tx', {}).get('dropped', 0)
        return total

    def loss_counts(self, i):
        """`uroce loss show` on host @i's netdev: (RoCE frames seen, dropped)."""
        out = self.uroce_cmd(i, 'loss', self.ifs[i], 'show').stdout
        m = re.search(r'roce_frames (\d+) dropped (\d+)', out)
        if not m:
            raise it.TapFailure(f'uroce loss show: {out}')
        return int(m.group(1)), int(m.group(2))

    def env(self):
        e = dict(os.environ)
        e.pop('UROCE_RUN_DIR', None)
        return e

    def uroce_cmd(self, i, *args, check=True):
        return it.sh('ip', 'netns', 'exec', self.ns[i], self.uroce, *args, check=check,
                     env=self.env())

    def gid_index(self, i):
        out = self.uroce_cmd(i, 'link', 'show', '-j', 'uroce0').stdout
        return next(g['index'] for g in json.loads(out)[0]['gids']
                    if g['type'] == 'RoCE v2' and g['gid'].startswith('::ffff:'))

    def start(self, i, args, log):
        p = it.Proc(['ip', 'netns', 'exec', self.ns[i], self.uroce, 'exec', '--', self.prog,
                     '-d', 'uroce0', '-g', str(self.gid_index(i)), '--uroce', self.uroce] + args,
                    self.env(), log=os.path.join(self.tmp, log))
        self.procs.append(p)
        return p

    def listening(self, i, port):
        return bool(it.sh('ip', 'netns', 'exec', self.ns[i], 'ss', '-Hltn',
                          f'sport = :{port}', check=False).stdout.strip())

    def pairs(self, tap, pairs, args, first_port, timeout=300):
        """Run scale_check on every (client, server) pair at once: [(i, j, server, client)]."""
        runs = []
        for k, (i, j) in enumerate(pairs):
            port = str(first_port + k)
            runs.append((i, j, port, self.start(j, ['-p', port] + args, f'srv-{i}-{j}.log')))
        end = time.monotonic() + 60
        for i, j, port, srv in runs:
            while not self.listening(j, port) and srv.p.poll() is None:
                if time.monotonic() > end:
                    break
                time.sleep(0.05)
        out = []
        for i, j, port, srv in runs:
            cli = self.start(i, ['-p', port] + args + [self.ip4[j]], f'cli-{i}-{j}.log')
            out.append((i, j, srv, cli))
        for i, j, srv, cli in out:
            cli.wait(timeout)
        for i, j, srv, cli in out:
            srv.wait(30)
        return out


def figure(out, kind):
    """The key=value pairs of scale_check's first 'FIGURE KIND ...' line."""
    m = re.search(rf'^FIGURE {kind} (.*)$', out, re.M)
    return dict(kv.split('=') for kv in m.group(1).split()) if m else {}


def verdicts_ok(out):
    got = {ln.split()[1].rstrip(':'): ln.startswith('PASS ') for ln in out.splitlines()
           if ln.startswith(('PASS ', 'FAIL '))}
    return all(got.get(c) for c in CHECKS)


def all_pairs(tap, mesh, pairs, label, first_port, lossy=()):
    """Run PAIRS at once with `uroce loss` on the hosts in LOSSY; check data and packet counts."""
    kernel_before = mesh.kernel_drops()
    for k in lossy:
        mesh.uroce_cmd(k, 'loss', mesh.ifs[k], LOSS)
    try:
        runs = mesh.pairs(tap, pairs, MESH_ARGS, first_port)
        xdp = {k: mesh.loss_counts(k) for k in lossy}
    finally:
        for k in lossy:
            mesh.uroce_cmd(k, 'loss', mesh.ifs[k], 'off', check=False)
    kernel = mesh.kernel_drops() - kernel_before
    failed = [(i, j, srv, cli) for i, j, srv, cli in runs
              if not (srv.rc == 0 and cli.rc == 0 and verdicts_ok(srv.out) and verdicts_ok(cli.out))]
    detail = '\n'.join(f'pair {i}-{j}: server exit {srv.rc}, client exit {cli.rc}\n'
                       f'server:\n{srv.out}\nclient:\n{cli.out}' for i, j, srv, cli in failed[:2])
    tap.ok(not failed, f'{label}: {len(runs)} pairs at once, data checked, nothing left '
           f'({len(failed)} failed)', detail)
    # Counted per receiving host: what its peers sent towards it (less what their ports dropped),
    # what its processes received, and what its receive rings dropped.  Without the QPN socket
    # filter a process's ring holds every frame of the netdev, so its drops may be another
    # process's frames: an upper bound.
    sent, got, ring, uneven = {}, {}, {}, []
    for i, j, srv, cli in runs:
        s, c = figure(srv.out, 'end'), figure(cli.out, 'end')
        for a, b, to, way in ((c, s, j, f'{i}->{j}'), (s, c, i, f'{j}->{i}')):
            if not a or not b:
                uneven.append(f'{way}: no packet counts')
                continue
            if int(a['tx_packets']) < int(b['rx_packets']):
                uneven.append(f'{way}: more received than sent: sent {a}, received {b}')
            sent[to] = sent.get(to, 0) + int(a['tx_packets']) - int(a['tx_dropped'])
            got[to] = got.get(to, 0) + int(b['rx_packets'])
            ring[to] = ring.get(to, 0) + int(b['rx_ring_drops'])
    tap.ok(not uneven, f'{label}: no end received more packets than its peer sent it',
           '\n'.join(uneven))
    wrong, lines = [], {}
    for k in sorted(sent):
        seen, dropped = xdp.get(k, (None, 0))
        missing = sent[k] - got[k]
        lines[k] = (f'host {k + 1}: {sent[k]} sent to it, {got[k]} received, {dropped} dropped by '
                    f'loss injection' + (f' of {seen} it saw' if seen is not None else '') +
                    f', {ring[k]} by receive rings')
        if seen is not None and not kernel and seen != sent[k]:
            wrong.append(lines[k] + ': the loss program saw another number than was sent')
        if k in lossy and not dropped:
            wrong.append(lines[k] + ': the loss program dropped nothing')
        if not dropped <= missing <= dropped + ring[k]:
            wrong.append(lines[k] + f': {missing} not received')
    tap.ok(not wrong, f'{label}: on every host, packets sent to it = received + counted as '
           'dropped' + (f' (loss {LOSS} on hosts {", ".join(str(k + 1) for k in lossy)})'
                        if lossy else ''), '\n'.join(wrong))
    total = sum(sent.values())
    tap.diag(f'{label}: {total} packets sent in all, {total - sum(got.values())} not received, '
             f'{sum(d for _, d in xdp.values())} dropped by loss injection, {kernel} by the kernel')
    for k in lossy:
        tap.diag(lines.get(k, f'host {k + 1}: no packet counts'))


def body(tap, mesh):
    all_pairs(tap, mesh, [(i, j) for i in range(HOSTS) for j in range(i + 1, HOSTS)],
              'mesh of 8', 19200, lossy=LOSSY)

    # The last host leaves while its seven peers stream writes to it.
    gone = HOSTS - 1
    srvs, clis = [], []
    for i in range(gone):
        port = str(19300 + i)
        srvs.append(mesh.start(gone, ['-p', port, '-n', '4', '--peer-loss'], f'loss-srv-{i}.log'))
    for i, srv in enumerate(srvs):
        end = time.monotonic() + 30
        while not mesh.listening(gone, 19300 + i) and srv.p.poll() is None and time.monotonic() < end:
            time.sleep(0.05)
        clis.append(mesh.start(i, ['-p', str(19300 + i), '-n', '4', '--peer-loss',
                                   mesh.ip4[gone]], f'loss-cli-{i}.log'))
    end = time.monotonic() + 60
    while time.monotonic() < end and not all('streaming' in c.so_far() or c.p.poll() is not None
                                             for c in clis):
        time.sleep(0.1)
    tap.ok(all('streaming' in c.so_far() for c in clis), 'seven peers stream writes to host 8',
           '\n'.join(c.so_far() for c in clis))
    mesh.host_gone(gone)
    for c in clis:
        c.wait(60)
    bad = [c for c in clis if c.rc != 0 or 'PASS peer_loss_retry_exc_err' not in c.out]
    tap.ok(not bad, 'host 8 leaves: every peer QP ends in IBV_WC_RETRY_EXC_ERR within the '
           'retry budget', '\n'.join(f'exit {c.rc}: {c.out}' for c in bad))
    tap.diag('peer loss: ' + ', '.join(figure(c.out, 'peer_loss').get('slowest_ms', '?') + ' ms'
                                       for c in clis) +
             f' (budget {figure(clis[0].out, "peer_loss").get("budget_ms", "?")} ms)')

    # It joins again under the same names: its old device and broker are removed first.
    mesh.ns_add(gone)
    shown = mesh.uroce_cmd(gone, 'link', 'show', check=False).stdout
    tap.ok('deleted since' in shown and not re.search(r'^link ', shown, re.M),
           'host 8 again: its old device is removed, none shown', shown)
    mesh.wait_port_gone(gone)
    mesh.link_up(gone)
    shown = mesh.uroce_cmd(gone, 'link', 'show').stdout
    tap.ok(len(re.findall(r'^link ', shown, re.M)) == 1,
           'host 8 again: uroce link add with the same names, one device', shown)
    all_pairs(tap, mesh, [(0, gone)], 'host 8 back', 19400)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'm', body, pair_cls=Mesh))
