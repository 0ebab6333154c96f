# SPDX-License-Identifier: MIT
"""rdma-core's own provider test suite (python3-pyverbs), unmodified, on uroce0.

The installed suite (/usr/share/doc/rdma-core/tests, some files gzipped) is
unpacked to a temporary folder and run with run_tests.py --dev uroce0 --gid N
(N: the IPv4 RoCE v2 GID) through `uroce exec`, inside a namespace whose veth
peer is in another namespace; its rdmacm module again in a run of its own, with
`uroce exec`'s /sys view (there it finds the netdev).  Every test becomes one TAP line:
passed is ok, skipped is ok with its reason as the SKIP directive, failed and
errored are not ok.  Skip reasons are listed in docs/conformance.md.  Then both runs
once more as an ordinary user the test creates (through the device's broker): what
passed as root passes again, except the tests the suite itself keeps for root.
"""

import collections
import gzip
import json
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

SUITE_SRC = '/usr/share/doc/rdma-core/tests'
# The suite's huge-page tests want 2 MiB pages in the pool; uroce's own EAL runs with --no-huge.
HUGE_POOL = '/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages'
HUGE_PAGES = 64
DRIVER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'pyverbs_driver.py')
SUITE_TIMEOUT = 1500
# What passes on uroce0 with rdma-core 44 (docs/conformance.md): fewer is a regression.
MIN_PASSED = 154
RDMACM_MODULE = 'test_rdmacm'
USER = f'urpv{os.getpid() & 0xffff:04x}'
# How the suite skips what it keeps for root (raw packet QPs, flow steering).
ROOT_ONLY = re.compile(r'(run|done) by root')


def unpack(dst):
    """Copy the installed suite to @dst/tests, gunzipping the *.gz files."""
    tests = os.path.join(dst, 'tests')
    os.makedirs(tests)
    for name in os.listdir(SUITE_SRC):
        src = os.path.join(SUITE_SRC, name)
        if name.endswith('.gz'):
            with gzip.open(src, 'rb') as fi, open(os.path.join(tests, name[:-3]), 'wb') as fo:
                shutil.copyfileobj(fi, fo)
        elif os.path.isfile(src):
            shutil.copy(src, tests)
    return tests


def set_huge_pool(n):
    with open(HUGE_POOL, 'w') as f:
        f.write(str(n))
    with open(HUGE_POOL) as f:
        return int(f.read())


def body(tap, pair):
    """The suite with huge pages reserved for it, the host's pool given back after."""
    with open(HUGE_POOL) as f:
        before = int(f.read())
    got = set_huge_pool(max(before, HUGE_PAGES))
    tap.diag(f'2 MiB huge pages: {got} in the pool for the suite (was {before})')
    try:
        run_suite(tap, pair)
    finally:
        set_huge_pool(before)


def run_driver(tap, pair, tests, work, name, argv_tail, view, user=None):
    """One run_tests.py through `uroce exec` (with its /sys view or not; as USER, with no
    capability, or as root): the recorded tests, or None when it did not run to its end."""
    result = os.path.join(work, f'result-{name}.json')
    gid = pair.gid_index(0, 4)
    argv = ['/usr/bin/python3', DRIVER, tests, result,
            '--dev', 'uroce0', '--gid', str(gid), '-v'] + argv_tail
    exec_argv = [pair.uroce, 'exec'] + ([] if view else ['--no-sys-view']) + ['--']
    if user:
        exec_argv = ['setpriv', f'--reuid={user}', f'--regid={user}', '--init-groups'] + exec_argv
    tap.diag(f'{name}: run_tests.py --dev uroce0 --gid {gid} -v {" ".join(argv_tail)} '
             f'(in {pair.ns[0]}, via uroce exec{"" if view else " --no-sys-view"}'
             f'{f", as {user}" if user else ""})')
    p = pair.start(0, exec_argv + argv, raw=True)
    p.wait(SUITE_TIMEOUT)
    if p.rc != 0 or not os.path.exists(result):
        tap.ok(False, f'{name}: the suite ran to its end', p.out)
        return None
    with open(result) as f:
        return json.load(f)


def run_suite(tap, pair):
    if not os.path.exists(os.path.join(SUITE_SRC, 'run_tests.py')):
        tap.ok(False, f'rdma-core test suite installed at {SUITE_SRC} (python3-pyverbs)')
        return
    work = tempfile.mkdtemp(prefix='uroce-pyverbs-')
    try:
        tests = unpack(work)
        # Without the /sys view the suite finds no netdev under device/net and skips its
        # rdmacm tests.  They run in a run of their own, with the view: each forks its two
        # sides from the test process, and in the run of the whole suite that process's
        # librdmacm already holds contexts, which the children would inherit
        # (docs/conformance.md).
        whole = run_driver(tap, pair, tests, work, 'whole suite', [], False)
        rdmacm = run_driver(tap, pair, tests, work, 'rdmacm', [RDMACM_MODULE], True)
        if whole is None or rdmacm is None:
            return
        outcome = {t['id']: t for t in whole['tests']}
        outcome.update({t['id']: t for t in rdmacm['tests']})
        res = list(outcome.values())
        count = collections.Counter(t['outcome'] for t in res)
        reasons = collections.Counter(t['reason'] for t in res if t['outcome'] == 'skipped')
        for t in res:
            if t['outcome'] == 'passed':
                tap.ok(True, t['id'])
            elif t['outcome'] == 'skipped':
                tap.n += 1
                reason = ' '.join(t['reason'].split())
                print(f'ok {tap.n} - {t["id"]} # SKIP {reason}', flush=True)
            else:
                tap.ok(False, f'{t["id"]} ({t["outcome"]})', t.get('detail', ''))
        tap.diag(f'ran {len(res)}: passed {count["passed"]}, failed {count["failed"]}, '
                 f'skipped {count["skipped"]}, errored {count["errored"]}')
        tap.diag('skip reasons (count, reason):')
        for reason, n in reasons.most_common():
            tap.diag(f'  {n:4d}  {reason}')
        tap.ok(count['passed'] >= MIN_PASSED,
               f'at least {MIN_PASSED} tests passed ({count["passed"]})')
        tap.ok(whole['status'] == 0 and rdmacm['status'] == 0 and not count['failed'] and
               not count['errored'], 'run_tests.py exit status 0 (both runs), no failure, no error',
               f'status {whole["status"]}, {rdmacm["status"]}')
        as_user(tap, pair, tests, work, whole, rdmacm)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def as_user(tap, pair, tests, work, whole, rdmacm):
    """Both runs again as an ordinary user (the rdmacm one with `uroce exec`'s /sys view, which
    a user gets in a user namespace of its own): each test that passed as root passes, or is one
    the suite keeps for root (ROOT_ONLY)."""
    it.sh('useradd', '-M', '-s', '/usr/sbin/nologin', USER)
    try:
        for path in (pair.tmp, work, tests):
            os.chmod(path, 0o755)
        out = os.path.join(work, 'user')
        os.makedirs(out)
        shutil.chown(out, USER, USER)
        run = run_driver(tap, pair, tests, out, 'whole suite', [], False, user=USER)
        run_cm = run_driver(tap, pair, tests, out, 'rdmacm', [RDMACM_MODULE], True, user=USER)
        if run is None or run_cm is None:
            return
        mine = {t['id']: t for t in run['tests'] + run_cm['tests']}
        as_root = {'tests': whole['tests'] + rdmacm['tests']}
        run = {'status': run['status'] or run_cm['status'], 'tests': list(mine.values())}
        count = collections.Counter(t['outcome'] for t in run['tests'])
        tap.diag(f'as {USER}: passed {count["passed"]}, failed {count["failed"]}, '
                 f'skipped {count["skipped"]}, errored {count["errored"]}')
        lost, root_only = [], []
        for t in as_root['tests']:
            if t['outcome'] != 'passed':
                continue
            u = mine.get(t['id'], {'outcome': 'not run', 'reason': ''})
            if u['outcome'] == 'skipped' and ROOT_ONLY.search(u['reason']):
                root_only.append(t['id'])
            elif u['outcome'] != 'passed':
                lost.append(f'{t["id"]}: {u["outcome"]} {u.get("reason", "")}'
                            f'{u.get("detail", "")[-400:]}')
        tap.diag(f'as {USER}: {len(root_only)} kept for root by the suite itself')
        tap.ok(run['status'] == 0 and not count['failed'] and not count['errored'] and not lost,
               f'as an ordinary user: every test that passed as root passes ({count["passed"]}) '
               f'but the {len(root_only)} the suite keeps for root; no failure, no error',
               '\n'.join(lost) or f'status {run["status"]}')
    finally:
        it.sh('userdel', USER, check=False)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'pv', body))
