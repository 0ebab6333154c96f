#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""bench_dcqcn.sh's figures: dcqcn_report.py OUT RATE_MBIT.

Reads OUT/{on,off}-samples.jsonl (every ~100 ms: the time, `uroce stat -j` of the senders'
namespace, `uroce bottleneck IFACE show`) and the clients' perftest logs; writes
OUT/summary.md and OUT/dcqcn.png (each flow's rate over time, per mode) and prints the summary.
Exit 1 when a mode has no figure.
"""
import json
import os
import re
import subprocess
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def flows(samples):
    """{pid: [(t, tx_bytes, rate_mbps, retransmits, cnps_rx)]} of each sending process's busiest QP."""
    out = {}
    for s in samples:
        for dev in s['stat']:
            qps = [q for q in dev['qps'] if q.get('tx_bytes', 0) > 0]
            pts = out.setdefault(dev['pid'], [])
            # the time the process published these counters, not the time they were read
            t = dev['updated_ns'] / 1e9 - s['t0']
            if qps and (not pts or t > pts[-1][0]):
                q = max(qps, key=lambda q: q['tx_bytes'])
                pts.append((t, q['tx_bytes'], q.get('rate_mbps', 0), q.get('retransmits', 0),
                            q.get('cnps_rx', 0)))
    return dict(sorted(((p, f) for p, f in out.items() if f), key=lambda kv: kv[1][0][0]))


def red(sample):
    """The bottleneck's counters in one sample: bytes passed, drops, marks."""
    v = {k: int(x) for k, x in re.findall(r'(\w+) (\d+)', sample['bottleneck'])}
    return (v.get('passed_bytes', 0), v.get('early_drops', 0) + v.get('queue_drops', 0),
            v.get('marked', 0))


def rates(points):
    """[(t, Mbit/s)] between consecutive samples whose counters moved (stat publishes every 100 ms)."""
    out = []
    last = points[0]
    for p in points[1:]:
        if p[1] != last[1] and p[0] > last[0]:
            out.append(((p[0] + last[0]) / 2, (p[1] - last[1]) * 8 / (p[0] - last[0]) / 1e6))
            last = p
    return out


def value_at(points, t):
    """The counter of @points at time t, interpolated."""
    prev = points[0]
    for p in points:
        if p[0] >= t:
            if p[0] == prev[0]:
                return p[1]
            return prev[1] + (p[1] - prev[1]) * (t - prev[0]) / (p[0] - prev[0])
        prev = p
    return points[-1][1]


def perftest_gbps(path):
    try:
        with open(path) as f:
            rows = [ln.split() for ln in f if ln.strip().startswith('65536')]
        return float(rows[-1][3]) if rows else None
    except (OSError, ValueError, IndexError):
        return None


def analyse(d, mode, rate):
    samples = load(os.path.join(d, f'{mode}-samples.jsonl'))
    fl = list(flows(samples).values())
    if len(fl) < 2 or len(samples) < 10:
        return None
    f1, f2 = fl[0], fl[1]
    # both flows send: from 1 s after flow 2's first byte to 0.5 s before its last
    moving = [p for a, p in zip(f2, f2[1:]) if p[1] > a[1]]
    a, b = moving[0][0] + 1.0, moving[-1][0] - 0.5
    if b - a < 1:
        return None
    both = [s for s in samples if a <= s['t'] <= b]
    q0, q1 = red(both[0]), red(both[-1])
    dt = both[-1]['t'] - both[0]['t']
    use = (q1[0] - q0[0]) * 8 / dt / (rate * 1e6)
    # flow 1 alone: from 1 s after its first byte to flow 2's first
    alone = [s for s in samples if f1[0][0] + 1.0 <= s['t'] <= moving[0][0] - 0.2]
    use_alone = ((red(alone[-1])[0] - red(alone[0])[0]) * 8 / (alone[-1]['t'] - alone[0]['t']) /
                 (rate * 1e6) if len(alone) > 2 else 0)
    r = [(value_at(f, both[-1]['t']) - value_at(f, both[0]['t'])) * 8 / dt / 1e6 for f in (f1, f2)]
    last = red(samples[-1])
    first = red(samples[0])
    return {
        'mode': mode, 'window': (a, b), 'use': use, 'use_alone': use_alone, 'flow_mbps': r,
        'fair': min(r) / max(r) if max(r) > 0 else 0,
        'share': [x / (sum(r) / 2) for x in r] if sum(r) > 0 else [0, 0],
        'drops': last[1] - first[1], 'marks': last[2] - first[2],
        'retransmits': [f[-1][3] for f in (f1, f2)], 'cnps': [f[-1][4] for f in (f1, f2)],
        'perftest': [perftest_gbps(os.path.join(d, f'{mode}-client{n}.log')) for n in (1, 2)],
        'series': [rates(f) for f in (f1, f2)],
    }


def plot(d, res, rate):
    data = os.path.join(d, 'plot')
    os.makedirs(data, exist_ok=True)
    s = ('set terminal pngcairo size 1100,700 font ",10"\n'
         f'set output "{os.path.join(d, "dcqcn.png")}"\n'
         'set multiplot layout 2,1\nset grid\nset key top right\n'
         'set ylabel "Mbit/s"\nset xlabel "time (s)"\n')
    for r in res:
        lines = []
        for n, ser in enumerate(r['series'], 1):
            p = os.path.join(data, f'{r["mode"]}-flow{n}.dat')
            with open(p, 'w') as f:
                f.writelines(f'{t:.3f} {v:.1f}\n' for t, v in ser)
            lines.append(f'"{p}" using 1:2 with lines lw 2 title "flow {n} (sent, resends included)"')
        lines.append(f'{rate} with lines lc rgb "black" dashtype 3 title "bottleneck"')
        title = ('DCQCN on: ECT(0) frames, the bottleneck marks, CNPs cut the rate'
                 if r['mode'] == 'on' else
                 'DCQCN off: frames not ECN-capable, the bottleneck drops where it would mark')
        s += (f'set title "{title}"\nset yrange [0:{rate * 2.5}]\n'
              'plot ' + ', \\\n  '.join(lines) + '\n')
    s += 'unset multiplot\n'
    subprocess.run(['gnuplot'], input=s, text=True, check=True)


def main(d, rate):
    rate = float(rate)
    res = []
    lines = ['| DCQCN | bottleneck use, flow 1 alone | bottleneck use, both flows | '
             'flow 1 / flow 2 (Mbit/s) | share of fair (1.00 each) | drops | ECN marks | '
             'CNPs received | retransmits | perftest BW average (Gbit/s) |',
             '| --- |' + ' --- |' * 9]
    ok = True
    for mode in ('on', 'off'):
        r = analyse(d, mode, rate)
        if not r:
            print(f'NO FIGURE: dcqcn {mode} (see {d}/{mode}-*)')
            ok = False
            continue
        res.append(r)
        pf = ' / '.join('-' if x is None else f'{x:.2f}' for x in r['perftest'])
        lines.append(f'| {mode} | {r["use_alone"]:.2f} | {r["use"]:.2f} | {r["flow_mbps"][0]:.0f} / {r["flow_mbps"][1]:.0f} | '
                     f'{r["share"][0]:.2f} / {r["share"][1]:.2f} | {r["drops"]} | {r["marks"]} | '
                     f'{sum(r["cnps"])} | {sum(r["retransmits"])} | {pf} |')
    text = (f'Bottleneck {rate:g} Mbit/s. Use: the bytes it passed against its rate; "both flows" '
            'is the time both sent, less its first second and last half second; the flows\' rates '
            'count resends; drops, marks, CNPs and retransmits are for the whole run.\n\n' +
            '\n'.join(lines) + '\n')
    with open(os.path.join(d, 'summary.md'), 'w') as f:
        f.write(text)
    print(text)
    if res:
        plot(d, res, rate)
    return 0 if ok else 1


if __name__ == '__main__':
    if len(sys.argv) != 3:
        sys.stderr.write(__doc__)
        sys.exit(2)
    sys.exit(main(sys.argv[1], sys.argv[2]))
