# SPDX-License-Identifier: MIT
"""tools/demo.sh as a user runs it: its results, its decoded packets, and that it leaves nothing behind.

usage: test_demo.py run|interrupt|refuse --build BUILD_DIR --source SOURCE_DIR

run        the whole demo as a second run is: packages checked, nothing to rebuild; exit 0,
           perftest result lines with non-zero figures, decoded packets of that run with
           ICRC ok, then no namespace, device, run directory, process or capture directory
           of it left.
interrupt  SIGINT to the script's PID while perftest runs: it says so, cleans up the same
           way and exits 130.
refuse     the clear errors: not root; a namespace of that name exists already (which
           the demo must then leave alone).

The demo runs on this build directory (interrupt and refuse: as it is, --prebuilt) with its
own names (prefix dm...). Output is TAP; needs root, else skipped.
"""

import os
import re
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import it  # noqa: E402

DEMO_TIMEOUT = 300
# A failed check shows this much of the demo's output.
DETAIL_LINES = 60


class Demo:
    def __init__(self, source, build, tag, prebuilt=True):
        self.prefix = f'dm{os.getpid() & 0xffff:04x}{tag}'
        self.ns = [self.prefix + 'A', self.prefix + 'B']
        self.argv = [os.path.join(source, 'tools', 'demo.sh'), '--build', build,
                     '--prefix', self.prefix] + (['--prebuilt'] if prebuilt else [])

    def start(self):
        """Start the demo in its own process group; returns its Popen."""
        env = dict(os.environ)
        env.pop('UROCE_RUN_DIR', None)
        self.proc = it.Proc(self.argv, env)
        return self.proc.p

    def finish(self, timeout=DEMO_TIMEOUT):
        """(exit code, output) once it ends; after TIMEOUT seconds it is killed."""
        rc = self.proc.wait(timeout)
        return rc, self.proc.out

    def own_processes(self):
        """PIDs of processes run in the demo's namespaces: `uroce exec` names the run directory."""
        marks = [f'UROCE_RUN_DIR=/run/uroce/netns/{ns}'.encode() for ns in self.ns]
        found = []
        for pid in filter(str.isdigit, os.listdir('/proc')):
            try:
                with open(f'/proc/{pid}/environ', 'rb') as f:
                    env = f.read().split(b'\0')
            except OSError:
                continue
            if any(m in env for m in marks):
                found.append(int(pid))
        return found

    def leftovers(self, out):
        """Everything of this demo still there, as text lines (none: clean)."""
        left = []
        for ns in self.ns:
            if os.path.exists(f'/run/netns/{ns}'):
                left.append(f'namespace {ns}')
            if os.path.exists(f'/run/uroce/netns/{ns}'):
                left.append(f'run directory /run/uroce/netns/{ns}')
        links = subprocess.run(['ip', '-o', 'link', 'show'], stdout=subprocess.PIPE,
                               text=True).stdout
        left += [f'interface {m}' for m in re.findall(rf'\d+: ({self.prefix}[ab])[@:]', links)]
        left += [f'process {pid}' for pid in self.own_processes()]
        for tmp in set(re.findall(r'UROCE_PCAP=(/tmp/uroce-demo\.\w+)/', out)):
            if os.path.exists(tmp):
                left.append(f'capture directory {tmp}')
        return left


def results(out, tool_header):
    """The figures of the result row under perftest's '#bytes' table after TOOL_HEADER."""
    start = out.find(tool_header)
    if start < 0:
        return None
    lines = out[start:].splitlines()
    for i, ln in enumerate(lines):
        if ln.lstrip().startswith('#bytes'):
            row = lines[i + 1].split()
            return [float(x) for x in row if re.fullmatch(r'[\d.]+', x)]
    return None


def test_run(tap, demo):
    demo.start()
    rc, out = demo.finish()
    tap.ok(rc == 0, 'demo exits 0', out)
    tap.ok(re.search(r'^install-deps: all \d+ packages present$', out, re.M) is not None and
           'ninja: no work to do.' in out, 'packages checked, nothing rebuilt (a second run)', out)
    # ib_write_bw: bytes, iterations, BW peak, BW average, MsgRate.
    w = results(out, 'RDMA_Write BW Test')
    tap.ok(w is not None and len(w) == 5 and w[0] == 65536 and w[3] > 0,
           f'ib_write_bw result line with non-zero bandwidth ({w})', out)
    # ib_read_lat: bytes, iterations, t_min, t_max, t_typical, t_avg, ...
    r = results(out, 'RDMA_Read Latency Test')
    tap.ok(r is not None and len(r) >= 6 and r[1] == 1000 and r[5] > 0,
           f'ib_read_lat result line with a latency ({r})', out)
    a = results(out, 'Atomic FETCH_AND_ADD BW Test')
    tap.ok(a is not None and len(a) == 5 and a[0] == 8 and a[3] > 0,
           f'ib_atomic_bw result line with non-zero bandwidth ({a})', out)
    opcodes = re.findall(r'^frame \d+: \d+ bytes, time [\d.]+: (RC_\w+) .* icrc ok$', out, re.M)
    want = ['RC_RDMA_WRITE_FIRST', 'RC_ACKNOWLEDGE', 'RC_RDMA_READ_REQUEST',
            'RC_RDMA_READ_RESPONSE_ONLY', 'RC_FETCH_ADD', 'RC_ATOMIC_ACKNOWLEDGE']
    tap.ok(opcodes == want, f'decoded packets, ICRC ok: {opcodes}', out)
    # The decoded WRITE FIRST is of this run: the client's first PSN, the server's QPN, rkey, address.
    sec = out[out.find('RDMA_Write BW Test'):]
    local = re.search(r'local address: LID \w+ QPN (0x[0-9a-f]+) PSN (0x[0-9a-f]+)', sec)
    remote = re.search(r'remote address: LID \w+ QPN (0x[0-9a-f]+) PSN 0x[0-9a-f]+ '
                       r'RKey (0x[0-9a-f]+) VAddr (0x[0-9a-f]+)', sec)
    first = re.search(r'^frame \d+: .*RC_RDMA_WRITE_FIRST qp (0x[0-9a-f]+) psn (\d+) va '
                      r'(0x[0-9a-f]+) rkey (0x[0-9a-f]+) ', out, re.M)
    same = bool(local and remote and first) and (
        int(first[1], 16) == int(remote[1], 16) and int(first[2]) == int(local[2], 16) and
        int(first[3], 16) == int(remote[3], 16) and int(first[4], 16) == int(remote[2], 16))
    tap.ok(same, 'the decoded WRITE FIRST carries the QPN, PSN, rkey and address perftest '
           'exchanged', out)
    verdicts = out.count('verdict: accepted: every check passed, ICRC ok')
    icrc = len(re.findall(r'ICRC +0x([0-9a-f]{8}) \(computed 0x\1\) .*: ok$', out, re.M))
    tap.ok(verdicts == 6 and icrc == 6, f'every decoded packet accepted, ICRC recomputed '
           f'({verdicts} verdicts, {icrc} ICRC fields)', out)
    summaries = re.findall(r'^  (\w+)\.pcap: (\d+) frames: (\d+) RoCE v2 \((\d+) accepted\)', out,
                           re.M)
    tap.ok(len(summaries) == 3 and all(int(s[2]) > 0 and s[2] == s[3] for s in summaries),
           f'every captured RoCE frame accepted: {summaries}', out)
    tap.diag(f'ib_write_bw {w}\nib_read_lat {r}\nib_atomic_bw {a}')
    left = demo.leftovers(out)
    tap.ok(not left, 'nothing left after the demo', '\n'.join(left))


def test_interrupt(tap, demo):
    p = demo.start()
    out = []
    running = False
    end = time.monotonic() + DEMO_TIMEOUT
    # Wait for perftest itself to run in the namespaces, then interrupt as Ctrl-C would.
    for line in p.stdout:
        out.append(line)
        if 'Running ib_write_bw' in line:
            while time.monotonic() < end and not demo.own_processes() and p.poll() is None:
                time.sleep(0.02)
            running = bool(demo.own_processes())
            break
    tap.ok(running, 'perftest runs in the demo namespaces', ''.join(out))
    os.kill(p.pid, signal.SIGINT)
    rc, rest = demo.finish(60)
    out = ''.join(out) + rest
    tap.ok(rc == 130, f'interrupted demo exits 130 (got {rc})', out)
    tap.ok('demo.sh: interrupted' in out and 'Cleaning up' in out and 'stopping process' in out,
           'it says it was interrupted, stops its processes and cleans up', out)
    tap.diag('the end of its output:\n' + '\n'.join(out.splitlines()[-12:]))
    left = demo.leftovers(out)
    tap.ok(not left, 'nothing left after the interrupted demo', '\n'.join(left) + '\n' + out)


def test_refuse(tap, demo):
    p = subprocess.run(['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', 'bash']
                       + demo.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                       timeout=60)
    tap.ok(p.returncode == 1 and 'demo.sh: needs root' in p.stdout,
           'not root: one clear error, exit 1', p.stdout)
    ns = demo.ns[0]
    subprocess.run(['ip', 'netns', 'add', ns], check=True)
    try:
        demo.start()
        rc, out = demo.finish(60)
        tap.ok(rc == 1 and f'network namespace {ns} exists already' in out,
               'existing namespace: clear error, exit 1', out)
        tap.ok(os.path.exists(f'/run/netns/{ns}'), 'the namespace it did not create is left alone',
               out)
        tap.ok(not os.path.exists(f'/run/netns/{demo.ns[1]}'), 'and nothing else is left', out)
    finally:
        subprocess.run(['ip', 'netns', 'del', ns])


def main():
    mode = sys.argv[1]
    build = os.path.abspath(sys.argv[sys.argv.index('--build') + 1])
    source = os.path.abspath(sys.argv[sys.argv.index('--source') + 1])
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (network namespaces, /dev/infiniband)')
        return 77
    tap = it.Tap(DETAIL_LINES)
    demo = Demo(source, build, {'run': 'r', 'interrupt': 'i', 'refuse': 'x'}[mode],
                prebuilt=mode != 'run')
    {'run': test_run, 'interrupt': test_interrupt, 'refuse': test_refuse}[mode](tap, demo)
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
