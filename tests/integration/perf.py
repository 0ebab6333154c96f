# SPDX-License-Identifier: MIT
"""Running perftest pairs and reading their results, shared by the perftest, loss and parallel suites."""

import glob
import os
import re

import it

BW_TOOLS = ['ib_write_bw', 'ib_read_bw', 'ib_send_bw']
LAT_TOOLS = ['ib_write_lat', 'ib_read_lat', 'ib_send_lat']


def results(out):
    """(column, [values]) of perftest's result table: BW average in Gb/s, or t_avg in usec."""
    lines = out.splitlines()
    for i, ln in enumerate(lines):
        if '#bytes' not in ln:
            continue
        cols = re.split(r'\s{2,}', ln.strip())
        want = next((c for c in cols if c.startswith(('BW average', 't_avg'))), None)
        if want is None:
            continue
        k = cols.index(want)
        vals = []
        for row in lines[i + 1:]:
            f = row.split()
            if len(f) > k and re.fullmatch(r'\d+', f[0]):
                vals.append(float(f[k]))
        return want, vals
    return None, []


class Runner:
    def __init__(self, pair, port=18700):
        self.pair = pair
        self.port = port
        self.gids = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]

    def args(self, side, tool, opts, default_gid):
        port = ['-p', str(self.port)]
        gid = [] if default_gid else ['-x', self.gids[side]]
        return [tool, '-d', 'uroce0', '-F'] + gid + port + opts

    def start(self, tool, opts, default_gid=False):
        """Start a pair without waiting: (server, client); client None if the server failed."""
        self.port += 1
        # To a file: with many QPs (-q) the server prints more than a pipe holds before
        # the client ends, and would block in write() while the client waits for it.
        srv = self.pair.start(0, self.args(0, tool, opts, default_gid),
                              log=f'server-{self.port}.log')
        if not self.pair.wait_listen(0, self.port, srv):
            srv.kill()
            srv.wait(5)
            return srv, None
        cli = self.pair.start(1, self.args(1, tool, opts, default_gid) + [self.pair.ip4[0]])
        return srv, cli

    def run(self, tap, tool, opts, timeout=180, default_gid=False, label=''):
        srv, cli = self.start(tool, opts, default_gid)
        if cli is not None:
            cli.wait(timeout)
            srv.wait(15)
        return check(tap, f'{tool} {" ".join(opts)}{label} (MTU {self.pair.mtu})', srv, cli)


def check(tap, name, srv, cli):
    if not it.both_ok(tap, name, srv, cli):
        return False
    col, vals = results(cli.out)
    ok = tap.ok(bool(vals) and all(v > 0 for v in vals), f'{name}: results reported', cli.out)
    if ok:
        tap.diag(f'{name}: {col} ' + ' '.join(f'{v:g}' for v in vals))
    return ok


def direct_checks(tap, pair, where, devs, ends, run):
    """Writes and reads between two processes of this host are copied between their memories, no
    frame (docs/dataplane.md, "Direct placement"); with `direct = off` on DEVS the same runs go by
    frames.  Data and errors: verbs_check's cases.  ENDS: (device, GID index) of the server and
    of the client; RUN(server_argv, client_argv, pcap_dir): the pair run to its end, (server,
    client), client None when the server never listened; each process captures into pcap_dir."""
    prog = os.path.join(pair.build, 'tests', 'integration', 'verbs_check')
    srv, cli = run(*([prog, '-d', dev, '-g', gid] for dev, gid in ends), None)
    if it.both_ok(tap, f'verbs_check integrity and error cases {where}', srv, cli):
        tap.diag(f'verbs_check: {cli.out.count("PASS ")} cases passed')
    # RDMA WRITE First/Middle/Last/Only (6-8, 10) and READ Request (12) on the wire.
    wire_ops = {'6', '7', '8', '10', '12'}
    for on in (True, False):
        it.set_direct(pair, on, devs)
        for tool, opts in (('ib_write_bw', ['-s', '65536', '-n', '2000']),
                           ('ib_read_lat', ['-s', '64', '-n', '1000'])):
            pcaps = os.path.join(pair.tmp, f'pcap-direct-{tool}-{on}')
            os.makedirs(pcaps)
            srv, cli = run(*([tool, '-d', dev, '-F', '-x', gid] + opts for dev, gid in ends), pcaps)
            name = f'{tool} {" ".join(opts)} {where}, direct {"on" if on else "off"}'
            if not check(tap, name, srv, cli):
                continue
            ops = set().union(*(it.capture_facts(pair, f)[1]
                                for f in glob.glob(os.path.join(pcaps, '*.pcap'))))
            if on:
                tap.ok(not ops & wire_ops, f'{name}: placed directly, no write or read frame',
                       sorted(ops))
            else:
                tap.ok(bool(ops & wire_ops), f'{name}: by frames', sorted(ops))
    it.set_direct(pair, True, devs)
