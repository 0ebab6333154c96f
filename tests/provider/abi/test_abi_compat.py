# SPDX-License-Identifier: MIT
"""One provider binary in libibverbs of several rdma-core releases (34..56): detection, ibv_devinfo, pingpong.

usage: test_abi_compat.py --build BUILD_DIR --probe ABI_PROBE

Needs an rdma-core git repository (UROCE_RDMA_CORE_GIT, with the release tags
vNN.0) and root; skipped otherwise.  For each release in UROCE_ABI_RELEASES
(default "34 35 56") it builds only libibverbs, ibv_devinfo and
ibv_rc_pingpong of that release under UROCE_ABI_WORK (default
/var/tmp/uroce-abi-compat; kept, so later runs reuse it), then runs with
LD_LIBRARY_PATH pointing there: the provider's ABI detection (ABI_PROBE),
and between two namespaces that release's ibv_devinfo and ibv_rc_pingpong
(plain and -N, the ibv_wr_* API) and the system's ibv_rc_pingpong -N (built
against newer headers than an old library).  Output is TAP.
"""

import os
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'integration'))
import it  # noqa: E402

PORT = 18900
BUILD_TIMEOUT = 600


def build_release(tap, git, work, rel):
    """libibverbs, ibv_devinfo, ibv_rc_pingpong of rdma-core REL under WORK/vREL; its dir or None."""
    top = os.path.join(work, f'v{rel}')
    src, bld, etc = (os.path.join(top, d) for d in ('src', 'build', 'etc'))
    targets = ['lib/libibverbs.so.1', 'bin/ibv_devinfo', 'bin/ibv_rc_pingpong']
    if all(os.path.exists(os.path.join(bld, t)) for t in targets):
        tap.ok(True, f'rdma-core {rel}: built earlier in {bld}')
        return bld
    start = time.monotonic()
    try:
        os.makedirs(src, exist_ok=True)
        os.makedirs(os.path.join(etc, 'libibverbs.d'), exist_ok=True)
        os.makedirs(bld, exist_ok=True)
        archive = subprocess.run(['git', '-C', git, 'archive', f'v{rel}.0'],
                                 stdout=subprocess.PIPE, check=True, timeout=120).stdout
        subprocess.run(['tar', '-x', '-C', src], input=archive, check=True, timeout=120)
        # Its own empty config directory: no other provider is loaded, no warning about it.
        it.sh('cmake', '-GNinja', '-DNO_PYVERBS=1', '-DNO_MAN_PAGES=1', '-DENABLE_VALGRIND=0',
              '-DCMAKE_BUILD_TYPE=RelWithDebInfo', f'-DCMAKE_INSTALL_SYSCONFDIR={etc}',
              '-S', src, '-B', bld, timeout=BUILD_TIMEOUT)
        it.sh('ninja', '-j2', '-C', bld, *targets, timeout=BUILD_TIMEOUT)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, it.TapFailure) as e:
        tap.ok(False, f'rdma-core {rel}: build libibverbs', e)
        return None
    tap.ok(True, f'rdma-core {rel}: built libibverbs in {time.monotonic() - start:.0f} s')
    return bld


def check_release(tap, pair, probe, rel, bld):
    global PORT
    lib = os.path.join(bld, 'lib')
    env = dict(os.environ, LD_LIBRARY_PATH=lib)
    p = it.sh(probe, check=False, env=env)
    tap.ok(p.returncode == 0, f'rdma-core {rel}: provider detects the library\'s layout',
           p.stdout)
    tap.diag(p.stdout.strip())

    def run(side, argv):
        proc = it.Proc(pair.verbs_argv(side, argv), dict(pair.env(side), LD_LIBRARY_PATH=lib))
        pair.procs.append(proc)
        return proc

    dev = run(0, [os.path.join(bld, 'bin', 'ibv_devinfo'), '-d', 'uroce0'])
    dev.wait(60)
    tap.ok(dev.rc == 0 and 'hca_id:\turoce0' in dev.out and 'PORT_ACTIVE' in dev.out and
           'Ethernet' in dev.out and 'Warning' not in dev.out,
           f'rdma-core {rel}: its ibv_devinfo describes uroce0', dev.out)

    gids = [str(pair.gid_index(0, 4)), str(pair.gid_index(1, 4))]
    own = os.path.join(bld, 'bin', 'ibv_rc_pingpong')
    for prog, extra in ((own, []), (own, ['-N']), ('ibv_rc_pingpong', ['-N'])):
        PORT += 1
        base = [prog, '-d', 'uroce0', '-p', str(PORT), '-n', '200', '-c'] + extra
        srv = run(0, base + ['-g', gids[0]])
        if not pair.wait_listen(0, PORT, srv):
            srv.kill()
            srv.wait(5)
            tap.ok(False, f'rdma-core {rel}: {prog} server listens', srv.out)
            continue
        cli = run(1, base + ['-g', gids[1], pair.ip4[0]])
        cli.wait(120)
        srv.wait(10 if cli.rc == 0 else 5)
        who = 'its' if prog == own else 'system'
        it.both_ok(tap, f'rdma-core {rel}: {who} ibv_rc_pingpong {" ".join(extra)}'.rstrip(),
                   srv, cli)


def main():
    build = sys.argv[sys.argv.index('--build') + 1]
    probe = sys.argv[sys.argv.index('--probe') + 1]
    git = os.environ.get('UROCE_RDMA_CORE_GIT', '')
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root (network namespaces)')
        return 77
    if not git or not os.path.isdir(git):
        print('1..0 # SKIP set UROCE_RDMA_CORE_GIT to an rdma-core git repository')
        return 77
    work = os.environ.get('UROCE_ABI_WORK', '/var/tmp/uroce-abi-compat')
    releases = os.environ.get('UROCE_ABI_RELEASES', '34 35 56').split()
    tap = it.Tap()
    built = [(rel, build_release(tap, git, work, rel)) for rel in releases]
    pair = it.Pair(build, 'abi', subnet=79)

    def on_term(signum, frame):
        pair.teardown()
        sys.exit(1)

    signal.signal(signal.SIGTERM, on_term)
    signal.signal(signal.SIGINT, on_term)
    try:
        pair.setup()
        for rel, bld in built:
            if bld:
                check_release(tap, pair, probe, rel, bld)
    except (it.TapFailure, subprocess.TimeoutExpired) as e:
        tap.ok(False, 'abi-compat setup/run', e)
    finally:
        pair.teardown()
    return tap.done()


if __name__ == '__main__':
    sys.exit(main())
