# SPDX-License-Identifier: MIT
"""The benchmark suite's figures: read tool outputs, write the table and plots, check a run.

usage: suite.py perftest LOG COLUMN      value of perftest's result column (prefix match)
       suite.py sockperf LOG             sockperf's median (50th percentile), half round trip in us
       suite.py iperf3 JSON              iperf3's received goodput in Gbit/s
       suite.py report DIR [--doc FILE --img DIR]
                                         DIR/table.md and DIR/{latency,percentiles,bandwidth,
                                         loss}.png from
                                         DIR/results.csv; with --doc, the table goes between the
                                         bench markers of FILE and the plots into --img
       suite.py check DIR --quick        every figure of a --quick run is there and positive,
                                         the plots are PNG images
"""

import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict

KEY = ('tool', 'op', 'size', 'pmd', 'loss')
DOC_BEGIN = '<!-- bench-suite table: begin (written by tests/bench/run-suite.sh --update-docs) -->'
DOC_END = '<!-- bench-suite table: end -->'
PLOTS = ('latency', 'percentiles', 'bandwidth', 'loss')
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


# ---- tool outputs ----

def perftest_value(path, column):
    """The first result row's value under the header column starting with COLUMN.

    Header columns are separated by one space or more ("#bytes #iterations  t_min[usec]") and
    a few names hold a space themselves ("BW average[Gb/sec]", "99% percentile[usec]").
    """
    with open(path, errors='replace') as f:
        lines = f.read().splitlines()

    def words(text):
        return re.sub(r'(BW|%) (\w)', r'\1_\2', text).split()

    want = words(column)[0]
    for i, line in enumerate(lines):
        if '#bytes' not in line:
            continue
        cols = words(line)
        k = next((j for j, c in enumerate(cols) if c.startswith(want)), None)
        if k is None:
            continue
        for row in lines[i + 1:]:
            f = row.split()
            if len(f) == len(cols) and re.fullmatch(r'\d+', f[0]):
                return f[k]
    return ''


def perftest_samples(path):
    """The sorted latency samples perftest -H prints ("#, usec" then "N, VALUE" lines)."""
    try:
        with open(path, errors='replace') as f:
            text = f.read()
    except OSError:
        return []
    _, sep, rest = text.partition('#, usec')
    if not sep:
        return []
    return sorted(float(m.group(1)) for m in re.finditer(r'^\d+, ([0-9.]+)$', rest, re.M))


def sockperf_value(path):
    with open(path, errors='replace') as f:
        m = re.search(r'percentile 50\.000 =\s*([0-9.]+)', f.read())
    return m.group(1) if m else ''


def iperf3_value(path):
    try:
        with open(path) as f:
            bps = json.load(f)['end']['sum_received']['bits_per_second']
    except (OSError, ValueError, KeyError):
        return ''
    return f'{bps / 1e9:.3f}'


# ---- aggregation ----

def load(path):
    """{key: (unit, [values])} from results.csv, key = (tool, op, size, pmd, loss)."""
    rows = defaultdict(lambda: ['', []])
    with open(path, newline='') as f:
        for r in csv.DictReader(f):
            k = tuple(r[c] for c in KEY)
            rows[k][0] = r['unit']
            rows[k][1].append(float(r['value']))
    return rows


class Stat:
    def __init__(self, unit, values):
        self.unit = unit
        self.values = values
        self.median = statistics.median(values)
        self.lo = min(values)
        self.hi = max(values)

    def cell(self):
        """median [lowest..highest repeat]."""
        if len(self.values) == 1:
            return fmt(self.median)
        return f'{fmt(self.median)} [{fmt(self.lo)}..{fmt(self.hi)}]'


def fmt(v):
    if v >= 100:
        return f'{v:.0f}'
    if v >= 10:
        return f'{v:.1f}'
    if v >= 0.1:
        return f'{v:.2f}'
    return f'{v:.4f}'


def size_label(s):
    s = int(s)
    if s >= 1 << 20 and s % (1 << 20) == 0:
        return f'{s >> 20} MiB'
    if s >= 1024 and s % 1024 == 0:
        return f'{s >> 10} KiB'
    return f'{s} B'


class Results:
    def __init__(self, rows):
        self.stats = {k: Stat(u, v) for k, (u, v) in rows.items()}
        self.repeats = max((len(s.values) for s in self.stats.values()), default=0)

    def get(self, tool, op, size, pmd, loss='0'):
        return self.stats.get((tool, op, str(size), pmd, str(loss)))

    def sizes(self, tool, op, pmd, loss='0'):
        return sorted({int(k[2]) for k in self.stats
                       if k[0] == tool and k[1] == op and k[3] == pmd and k[4] == loss})

    def losses(self, tool, pmd):
        return sorted({float(k[4]) for k in self.stats
                       if k[0] == tool and k[3] == pmd and k[4] != '0'})

    def loss_get(self, tool, pmd, x):
        """The 64 KiB goodput of TOOL on PMD at loss X (a float; 0: lossless)."""
        return next((st for k, st in self.stats.items()
                     if k[0] == tool and k[2] == '65536' and k[3] == pmd and float(k[4]) == x), None)


LAT_PMDS = ('af_packet', 'af_xdp', 'memif', 'same_host', 'same_host_frames')


def ratio(a, b):
    return a.median / b.median if a and b and b.median else None


def table(res, machine):
    out = []
    w = out.append
    w(f'Medians of {res.repeats} repeat(s), in brackets the lowest and the highest repeat. '
      'The machine is noisy (2 shared cores, other work running): compare medians, and re-run '
      'before trusting a difference smaller than the spread.')
    w('')
    w('```')
    w(machine.strip())
    w('```')
    w('')

    w('### Targets: ratios of medians measured in this run')
    w('')
    w('| figure | uroce | baseline | ratio | target |')
    w('| --- | --- | --- | --- | --- |')

    def target_row(label, a, b, bname, want, better):
        r = ratio(a, b)
        if r is None:
            w(f'| {label} | - | - | - | {want} |')
            return
        met = 'met' if better(r) else 'not met'
        w(f'| {label} | {fmt(a.median)} | {bname} {fmt(b.median)} | {r:.2f} | {want}: {met} |')

    def floor_row(label, a, b, bname):
        r = ratio(a, b)
        if r is not None:
            w(f'| {label} | {fmt(a.median)} | {bname} {fmt(b.median)} | {r:.2f} | (a floor) |')

    for pmd in ('af_packet', 'af_xdp'):
        for s in (64, 4096):
            wl = res.get('ib_write_lat', 'write', s, pmd)
            if not wl:
                continue
            target_row(f'{pmd} write latency {size_label(s)} (µs, ½ RTT) vs plain DPDK', wl,
                       res.get('dpdk_plain', 'pingpong', s, pmd), 'DPDK', '≤ 1.3',
                       lambda r: r <= 1.3)
            ku = res.get('sockperf', 'udp_pingpong', s, 'af_packet')
            if ku:
                target_row(f'{pmd} write latency {size_label(s)} (µs, ½ RTT) vs kernel UDP', wl, ku,
                           'sockperf', '≤ 0.75', lambda r: r <= 0.75)
    target_row('af_xdp 64 KiB write goodput (Gbit/s) vs iperf3 TCP',
               res.get('ib_write_bw', 'write', 65536, 'af_xdp'),
               res.get('iperf3', 'tcp_bw', 0, 'af_xdp'), 'iperf3', '≥ 1.0', lambda r: r >= 1.0)
    # perftest copies one buffer again and again: the fair baseline is memcpy() of one block, hot.
    # Direct placement is the kernel's cross-process copy: its ceiling is that copy's own speed.
    for size in (65536, 1048576):
        for tool, op in (('ib_write_bw', 'write'), ('ib_read_bw', 'read')):
            target_row(f'same host {size_label(size)} {op} goodput (Gbit/s) vs memcpy of one block',
                       res.get(tool, op, size, 'same_host'),
                       res.get('memcpy', 'memcpy_hot', size, 'same_host'), 'memcpy', '≥ 0.50',
                       lambda r: r >= 0.50)
            floor_row(f'same host {size_label(size)} {op} goodput (Gbit/s) vs process_vm_writev '
                      'of one block', res.get(tool, op, size, 'same_host'),
                      res.get('memcpy', 'cma_hot', size, 'same_host'), 'process_vm_writev')
        target_row(f'floor: process_vm_writev {size_label(size)} (Gbit/s) vs memcpy of one block',
                   res.get('memcpy', 'cma_hot', size, 'same_host'),
                   res.get('memcpy', 'memcpy_hot', size, 'same_host'), 'memcpy', '≥ 0.50',
                   lambda r: r >= 0.50)
    for pmd in ('same_host', 'memif', 'af_packet'):
        wl = res.get('ib_write_lat', 'write', 64, pmd)
        if not wl:
            continue
        if pmd != 'af_packet':
            w(f'| {pmd} write latency 64 B median (µs, ½ RTT) | {fmt(wl.median)} | - | - | ≤ 1.5: '
              f'{"met" if wl.median <= 1.5 else "not met"} |')
            if pmd == 'same_host':
                for tool, what in (('shm_pingpong', 'shared-memory'),
                                   ('cma_pingpong', 'process_vm_writev')):
                    fl = res.get(tool, 'pingpong', 64, 'same_host')
                    floor_row(f'same_host write latency 64 B vs the {what} ping-pong', wl, fl,
                              what)
                fl = res.get('cma_pingpong', 'pingpong', 64, 'same_host')
                if fl:
                    w(f'| floor: process_vm_writev ping-pong (µs, ½ RTT) | {fmt(fl.median)} | - | - '
                      f'| ≤ 1.5: {"met" if fl.median <= 1.5 else "not met"} |')
            target_row(f'{pmd} write latency 64 B: 99th percentile vs median',
                       res.get('ib_write_lat', 'write_p99', 64, pmd), wl, 'median', '≤ 5',
                       lambda r: r <= 5)
        target_row(f'{pmd} send latency 64 B vs write latency (½ RTT each)',
                   res.get('ib_send_lat', 'send', 64, pmd), wl, 'write', '≤ 1.25', lambda r: r <= 1.25)
        target_row(f'{pmd} read latency 64 B (RTT) vs write latency (½ RTT)',
                   res.get('ib_read_lat', 'read', 64, pmd), wl, 'write', '≤ 2.5', lambda r: r <= 2.5)
    for tool, op in (('ib_write_bw', 'write'), ('ib_read_bw', 'read')):
        target_row(f'memif 64 KiB {op} goodput (Gbit/s) vs memcpy',
                   res.get(tool, op, 65536, 'memif'),
                   res.get('memcpy', 'memcpy', 65536, 'memif'), 'memcpy', '≥ 0.40',
                   lambda r: r >= 0.40)
    w('')

    w('### Latency (µs): perftest t_typical (median) and 99th percentile; write and send: '
      '½ round trip, read and atomic: a whole one')
    w('')
    w('same_host: two processes on one device, writes and reads placed directly; '
      'same_host_frames: the same with `direct = off`.')
    w('')
    w('| tool | pmd | size | uroce median | uroce p99 | p99/median | plain DPDK (½ RTT) | '
      'kernel UDP sockperf (½ RTT) |')
    w('| --- | --- | --- | --- | --- | --- | --- | --- |')
    for pmd in LAT_PMDS:
        for tool in ('ib_write_lat', 'ib_read_lat', 'ib_send_lat', 'ib_atomic_lat'):
            op = tool[3:-4]
            for s in res.sizes(tool, op, pmd):
                st = res.get(tool, op, s, pmd)
                p99 = res.get(tool, op + '_p99', s, pmd)
                r = ratio(p99, st)
                d = res.get('dpdk_plain', 'pingpong', s, pmd)
                k = res.get('sockperf', 'udp_pingpong', s, 'af_packet') if pmd in ('af_packet', 'af_xdp') else None
                w(f'| {tool} | {pmd} | {size_label(s)} | {st.cell()} | {p99.cell() if p99 else "-"} | '
                  f'{f"{r:.1f}" if r else "-"} | {d.cell() if d else "-"} | {k.cell() if k else "-"} |')
    w('')

    w('### Bandwidth (Gbit/s): perftest BW average, one QP')
    w('')
    w('| tool | pmd | size | uroce | baseline | uroce/baseline |')
    w('| --- | --- | --- | --- | --- | --- |')
    for pmd in ('af_packet', 'af_xdp', 'memif', 'same_host', 'same_host_frames'):
        base = (res.get('iperf3', 'tcp_bw', 0, pmd), 'iperf3 TCP') if pmd in ('af_packet', 'af_xdp') else None
        for tool in ('ib_write_bw', 'ib_read_bw', 'ib_send_bw'):
            op = tool[3:-3]
            for s in res.sizes(tool, op, pmd):
                st = res.get(tool, op, s, pmd)
                b, bname = base if base else (res.get('memcpy', 'memcpy', s, 'memif'),
                                              'memcpy (64 MiB span)')
                if pmd.startswith('same_host'):
                    b, bname = res.get('memcpy', 'memcpy_hot', s, 'same_host'), 'memcpy (one block)'
                r = ratio(st, b)
                w(f'| {tool} | {pmd} | {size_label(s)} | {st.cell()} | '
                  f'{bname + " " + b.cell() if b else "-"} | {f"{r:.2f}" if r else "-"} |')
    w('')

    mr = res.get('ib_write_bw', 'write_msgrate', 8, 'af_packet')
    if mr:
        w(f'Message rate, 8 B RDMA writes on 4 QPs (`ib_write_bw -s 8 -q 4`), af_packet: '
          f'{mr.cell()} Mpps.')
        w('')

    curves = loss_curves(res)
    if curves:
        w('### Goodput with loss: 64 KiB messages, af_packet, frames dropped on both ends')
        w('')
        w('Gbit/s, and in brackets relative to the lossless run of the same tool and mode, then '
          'to the lossless run with the loss injector attached dropping nothing (`uroce loss IFACE '
          'pass`, the row "0%, injector"): on a veth the XDP program makes the kernel copy every '
          'frame a packet socket sent, a cost of the measurement, not of the protocol. '
          'Go-Back-N is what a spec peer (the kernel\'s rxe, hardware) gets; selective repeat '
          'is negotiated between uroce devices with `selective_repeat on` and applies to writes.')
        w('')
        w('| loss | ' + ' | '.join(c['title'] for c in curves) + ' |')
        w('| --- |' + ' --- |' * len(curves))
        rows = [('0%', lambda c: (c['base'], 1.0, None)),
                ('0%, injector', lambda c: (c['ctl'], ratio(c['ctl'], c['base']), 1.0)
                 if c['ctl'] else None)]
        for x in sorted({x for c in curves for x, _, _ in c['pts']} - {0.0}):
            rows.append((f'{x:g}%', lambda c, x=x: next(((st, r, ratio(st, c['ctl']))
                                                         for px, st, r in c['pts'] if px == x),
                                                        None)))
        for label, get in rows:
            cells = []
            for c in curves:
                got = get(c)
                if not got or not got[0]:
                    cells.append('-')
                    continue
                st, r, rc = got
                extra = f' / {rc:.2f}' if rc is not None else ''
                cells.append(f'{st.cell()} ({r:.2f}{extra})' if r is not None else st.cell())
            w(f'| {label} | ' + ' | '.join(cells) + ' |')
        w('')
    return '\n'.join(out) + '\n'


LOSS_MODES = (('af_packet', 'Go-Back-N'), ('af_packet_sr', 'selective repeat'))


def loss_curves(res):
    """[{title, base, ctl, pts: [(loss, stat, relative to lossless)]}]: one curve per tool and
    mode that has a lossless figure and at least one with loss; ctl is the lossless figure with
    the injector attached (None when not measured)."""
    curves = []
    for tool in ('ib_write_bw', 'ib_read_bw', 'ib_send_bw'):
        for pmd, mode in LOSS_MODES:
            base, losses = res.loss_get(tool, pmd, 0), res.losses(tool, pmd)
            if base and base.median and losses:
                pts = [(0.0, base, 1.0)] + [(x, st, st.median / base.median) for x in losses
                                            for st in [res.loss_get(tool, pmd, x)]]
                curves.append({'title': f'{tool.split("_")[1]}, {mode}', 'base': base,
                               'ctl': res.loss_get(tool, pmd + '_pass', 0), 'pts': pts})
    return curves


# ---- plots ----

def series(path, rows):
    """A gnuplot data file: x median min max [label]."""
    with open(path, 'w') as f:
        for r in rows:
            f.write(' '.join(str(v) for v in r) + '\n')
    return path


def plots(res, d):
    data = os.path.join(d, 'plotdata')
    os.makedirs(data, exist_ok=True)
    scripts = []
    common = ('set terminal pngcairo size 900,640 font "sans,10" noenhanced\n'
              'set grid\nset key above maxrows 3 width 2\n')

    lines = []
    for tool, op, pmd, title in (
            ('ib_write_lat', 'write', 'af_packet', 'ib_write_lat af_packet'),
            ('ib_send_lat', 'send', 'af_packet', 'ib_send_lat af_packet'),
            ('ib_read_lat', 'read', 'af_packet', 'ib_read_lat af_packet (RTT)'),
            ('ib_atomic_lat', 'atomic', 'af_packet', 'ib_atomic_lat af_packet (RTT)'),
            ('ib_write_lat', 'write', 'af_xdp', 'ib_write_lat af_xdp'),
            ('ib_write_lat', 'write', 'memif', 'ib_write_lat memif'),
            ('ib_read_lat', 'read', 'memif', 'ib_read_lat memif (RTT)'),
            ('ib_send_lat', 'send', 'memif', 'ib_send_lat memif'),
            ('ib_write_lat', 'write', 'same_host', 'ib_write_lat same host'),
            ('ib_read_lat', 'read', 'same_host', 'ib_read_lat same host (RTT)'),
            ('ib_send_lat', 'send', 'same_host', 'ib_send_lat same host'),
            ('dpdk_plain', 'pingpong', 'af_packet', 'plain DPDK af_packet'),
            ('dpdk_plain', 'pingpong', 'af_xdp', 'plain DPDK af_xdp'),
            ('sockperf', 'udp_pingpong', 'af_packet', 'kernel UDP (sockperf)')):
        pts = [(s, st.median, st.lo, st.hi) for s in res.sizes(tool, op, pmd)
               for st in [res.get(tool, op, s, pmd)]]
        if pts:
            p = series(os.path.join(data, f'lat-{tool}-{pmd}.dat'), pts)
            lines.append(f'"{p}" using 1:2:3:4 with yerrorlines title "{title}"')
    # A run of only some figures (--loss) has no series for some plots: those are not drawn.
    if lines:
        scripts.append(common + f'set output "{os.path.join(d, "latency.png")}"\n'
                       'set title "Latency vs message size (medians, bars: min..max of repeats)"\n'
                       'set xlabel "message size (bytes)"\nset ylabel "latency (µs; ½ RTT unless marked RTT)"\n'
                       'set logscale xy\nset xrange [1:8192]\n'
                       'set xtics ("2 B" 2, "8 B" 8, "64 B" 64, "512 B" 512, "4 KiB" 4096)\n'
                       'plot ' + ', \\\n  '.join(lines) + '\n')

    lines = []
    for tool, op, pmd in (('ib_write_bw', 'write', 'af_packet'), ('ib_read_bw', 'read', 'af_packet'),
                          ('ib_send_bw', 'send', 'af_packet'), ('ib_write_bw', 'write', 'af_xdp'),
                          ('ib_write_bw', 'write', 'memif'), ('ib_read_bw', 'read', 'memif'),
                          ('memcpy', 'memcpy', 'memif'),
                          ('ib_write_bw', 'write', 'same_host'), ('ib_read_bw', 'read', 'same_host'),
                          ('ib_write_bw', 'write', 'same_host_frames'),
                          ('memcpy', 'memcpy_hot', 'same_host')):
        pts = [(s, st.median, st.lo, st.hi) for s in res.sizes(tool, op, pmd)
               for st in [res.get(tool, op, s, pmd)]]
        if pts:
            p = series(os.path.join(data, f'bw-{tool}-{pmd}.dat'), pts)
            lines.append(f'"{p}" using 1:2:3:4 with yerrorlines title "{tool} {pmd}"')
    for pmd in ('af_packet', 'af_xdp'):
        st = res.get('iperf3', 'tcp_bw', 0, pmd)
        if st:
            mtu = 9000 if pmd == 'af_packet' else 3500
            p = series(os.path.join(data, f'bw-iperf3-{pmd}.dat'),
                       [(s, st.median, st.lo, st.hi) for s in (32, 2 << 20)])
            lines.append(f'"{p}" using 1:2 with lines dashtype 2 lw 2 '
                         f'title "iperf3 TCP, veth MTU {mtu} ({pmd} runs)"')
    if lines:
        scripts.append(common + f'set output "{os.path.join(d, "bandwidth.png")}"\n'
                       'set title "Bandwidth vs message size (medians, bars: min..max of repeats)"\n'
                       'set xlabel "message size (bytes)"\nset ylabel "goodput (Gbit/s)"\n'
                       'set logscale xy\nset xrange [32:2097152]\n'
                       'set xtics ("64 B" 64, "1 KiB" 1024, "4 KiB" 4096, "64 KiB" 65536, "1 MiB" 1048576)\n'
                       'plot ' + ', \\\n  '.join(lines) + '\n')

    # Latency against percentile: ib_write_lat 64 B of repeat 1, every sample perftest -H printed;
    # x is 1 / (1 - percentile), so that the tail gets the room.
    lines = []
    for pmd in LAT_PMDS:
        v = perftest_samples(os.path.join(d, 'logs', f'{pmd}-ib_write_lat-64-r1.log'))
        if v:
            pts = [(len(v) / (len(v) - i - 0.5), x) for i, x in enumerate(v)]
            p = series(os.path.join(data, f'pct-{pmd}.dat'), pts)
            lines.append(f'"{p}" using 1:2 with lines lw 2 title "{pmd}"')
    if lines:
        scripts.append(common + f'set output "{os.path.join(d, "percentiles.png")}"\n'
                       'set title "ib_write_lat 64 B: latency against percentile (every sample of repeat 1)"\n'
                       'set xlabel "percentile"\nset ylabel "latency (µs, ½ RTT)"\n'
                       'set logscale xy\n'
                       'set xtics ("0%%" 1, "50%%" 2, "90%%" 10, "99%%" 100, "99.9%%" 1000, "99.99%%" 10000)\n'
                       'plot ' + ', \\\n  '.join(lines) + '\n')

    # Goodput against loss: x is the loss rate's place (0, 0.1, 1, 5 % evenly spaced).
    curves = loss_curves(res)
    places = {x: i for i, x in enumerate(sorted({x for c in curves for x, _, _ in c['pts']}))}
    lines = []
    for n, c in enumerate(curves):
        title, pts = c['title'], c['pts']
        base = pts[0][1].median
        p = series(os.path.join(data, f'loss-{n}.dat'),
                   [(places[x], f'"{x:g}%"', 100 * r, 100 * st.lo / base, 100 * st.hi / base)
                    for x, st, r in pts])
        dash = 1 if 'Go-Back-N' in title else 2
        color = 1 + ['write', 'read', 'send'].index(title.split(',')[0])
        lines.append(f'"{p}" using 1:3:4:5:xtic(2) with yerrorlines lw 2 lc {color} '
                     f'dashtype {dash} title "{title}"')
    if not lines:	# the quick suite's check wants the plot: an empty one
        p = series(os.path.join(data, 'loss-none.dat'), [(0, '"0%"', 0, 0, 0)])
        lines.append(f'"{p}" using 1:3:xtic(2) with points title "no figures"')
    scripts.append(common + f'set output "{os.path.join(d, "loss.png")}"\n'
                   'set title "64 KiB goodput with loss on both ends (af_packet; bars: min..max of repeats)"\n'
                   'set xlabel "frames dropped on receive (each end)"\n'
                   'set ylabel "goodput relative to lossless (%)"\nset yrange [0:110]\n'
                   'set offsets 0.3, 0.3, 0, 0\n'
                   'plot ' + ', \\\n  '.join(lines) + '\n')

    for s in scripts:
        subprocess.run(['gnuplot'], input=s, text=True, check=True)


def report(d, doc=None, img=None):
    res = Results(load(os.path.join(d, 'results.csv')))
    try:
        with open(os.path.join(d, 'machine.txt')) as f:
            machine = f.read()
    except OSError:
        machine = ''
    text = table(res, machine)
    with open(os.path.join(d, 'table.md'), 'w') as f:
        f.write(text)
    plots(res, d)
    if doc:
        with open(doc) as f:
            body = f.read()
        a, b = body.find(DOC_BEGIN), body.find(DOC_END)
        if a < 0 or b < a:
            sys.exit(f'suite.py: {doc} has no bench-suite markers')
        body = body[:a + len(DOC_BEGIN)] + '\n' + text + body[b:]
        with open(doc, 'w') as f:
            f.write(body)
        os.makedirs(img, exist_ok=True)
        for p in PLOTS:
            if os.path.exists(os.path.join(d, f'{p}.png')):	# a partial run draws fewer
                shutil.copy(os.path.join(d, f'{p}.png'), os.path.join(img, f'perf-{p}.png'))
        shutil.copy(os.path.join(d, 'results.csv'), os.path.join(img, 'perf-results.csv'))
        print(f'updated {doc} and {img}/perf-*.png')


# ---- check of a --quick run ----

QUICK_ROWS = [
    ('ib_write_bw', 'write', '65536', 'af_packet', '0'),
    ('ib_read_bw', 'read', '65536', 'af_packet', '0'),
    ('ib_send_bw', 'send', '65536', 'af_packet', '0'),
    ('ib_write_lat', 'write', '64', 'af_packet', '0'),
    ('ib_read_lat', 'read', '64', 'af_packet', '0'),
    ('ib_send_lat', 'send', '64', 'af_packet', '0'),
    ('ib_atomic_lat', 'atomic', '8', 'af_packet', '0'),
    ('ib_write_bw', 'write_msgrate', '8', 'af_packet', '0'),
    ('sockperf', 'udp_pingpong', '64', 'af_packet', '0'),
    ('dpdk_plain', 'pingpong', '64', 'af_packet', '0'),
    ('iperf3', 'tcp_bw', '0', 'af_packet', '0'),
    ('ib_write_bw', 'write', '65536', 'af_packet', '1'),
    ('ib_write_bw', 'write', '65536', 'af_packet_pass', '0'),
    ('ib_write_bw', 'write', '65536', 'af_xdp', '0'),
    ('ib_write_lat', 'write', '64', 'af_xdp', '0'),
    ('dpdk_plain', 'pingpong', '64', 'af_xdp', '0'),
    ('iperf3', 'tcp_bw', '0', 'af_xdp', '0'),
    ('ib_write_bw', 'write', '65536', 'memif', '0'),
    ('memcpy', 'memcpy', '65536', 'memif', '0'),
    ('ib_write_lat', 'write', '64', 'memif', '0'),
    ('ib_write_bw', 'write', '65536', 'same_host', '0'),
    ('memcpy', 'memcpy_hot', '65536', 'same_host', '0'),
    ('ib_read_bw', 'read', '65536', 'same_host', '0'),
    ('ib_write_lat', 'write', '64', 'same_host', '0'),
    ('ib_read_lat', 'read', '64', 'same_host', '0'),
    ('ib_send_lat', 'send', '64', 'same_host', '0'),
    ('ib_write_bw', 'write', '65536', 'same_host_frames', '0'),
    ('ib_write_lat', 'write', '64', 'same_host_frames', '0'),
    ('memcpy', 'cma_hot', '65536', 'same_host', '0'),
    ('shm_pingpong', 'pingpong', '64', 'same_host', '0'),
    ('cma_pingpong', 'pingpong', '64', 'same_host', '0'),
]
# Every latency figure comes with its 99th percentile.
QUICK_ROWS += [(t, op + '_p99', size, pmd, loss) for t, op, size, pmd, loss in QUICK_ROWS
               if t.endswith('_lat')]


def check(d):
    """TAP: one line per expected figure and per plot."""
    n = failed = 0

    def ok(cond, name):
        nonlocal n, failed
        n += 1
        failed += not cond
        print(f'{"ok" if cond else "not ok"} {n} - {name}', flush=True)

    rows = defaultdict(list)
    header = None
    with open(os.path.join(d, 'results.csv'), newline='') as f:
        rd = csv.reader(f)
        header = next(rd, None)
        for r in rd:
            rows[tuple(r[:5])].append(r)
    ok(header == ['tool', 'op', 'size', 'pmd', 'loss', 'repeat', 'value', 'unit'], 'CSV header')
    for k in QUICK_ROWS:
        got = rows.get(k, [])
        good = len(got) == 1 and got[0][5] == '1' and got[0][7] != '' and float(got[0][6]) > 0
        ok(good, f'{" ".join(k)}: one positive figure ({got})')
    ok(sum(len(v) for v in rows.values()) == len(QUICK_ROWS), 'no unexpected rows')
    for p in PLOTS:
        path = os.path.join(d, f'{p}.png')
        try:
            with open(path, 'rb') as f:
                head = f.read(24)
            size = os.path.getsize(path)
        except OSError:
            head, size = b'', 0
        ok(head[:8] == PNG_MAGIC and head[12:16] == b'IHDR' and size > 2000,
           f'{p}.png is a PNG image ({size} bytes)')
    with open(os.path.join(d, 'table.md')) as f:
        t = f.read()
    ok('noisy' in t and 'Medians of 1 repeat' in t, 'table says the machine is noisy, medians of repeats')
    ok(re.search(r'write latency 64 B .* vs plain DPDK \| [0-9.]+ \|', t) is not None,
       'table has the write latency / plain DPDK ratio')
    print(f'1..{n}')
    return 1 if failed else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == 'perftest':
        print(perftest_value(argv[1], argv[2]))
    elif len(argv) == 2 and argv[0] == 'sockperf':
        print(sockperf_value(argv[1]))
    elif len(argv) == 2 and argv[0] == 'iperf3':
        print(iperf3_value(argv[1]))
    elif len(argv) >= 2 and argv[0] == 'report':
        doc = argv[argv.index('--doc') + 1] if '--doc' in argv else None
        img = argv[argv.index('--img') + 1] if '--img' in argv else None
        report(argv[1], doc, img)
    elif len(argv) == 3 and argv[0] == 'check' and argv[2] == '--quick':
        return check(argv[1])
    else:
        sys.stderr.write(__doc__)
        return 2
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
