# SPDX-License-Identifier: MIT
"""Open MPI 4.1 over UCX on uroce0: mpi_check on 2 ranks in 2 namespaces and 8 ranks in 4.

The namespaces hang off one bridge.  mpirun runs in the first namespace and
starts its daemons through an rsh agent of ours that enters the host's
namespace and runs the daemon under `uroce exec`, so every rank has uroce0.
mpi_check (ping-pong between every pair of ranks, allreduce, all-to-all)
checks every result itself; which transport UCX used is read from UCX's own
log (UCX_LOG_LEVEL=info prints each endpoint configuration's lanes).
"""

import os
import re
import stat
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

CHECKS = 10		# mpi_check's PASS/FAIL lines: 4 ping-pong sizes, 3 allreduce, 3 all-to-all
DEV = 'uroce0:1'
# UCX_TLS: self for a rank to itself, then rc_verbs (with ud_verbs for wireup only) or ud_verbs.
UCX_TLS = {'rc_verbs': 'self,rc_v', 'ud_verbs': 'self,ud_v'}

AGENT = '''#!/bin/sh
# mpirun's plm_rsh_agent: "HOST COMMAND..." runs COMMAND (one shell line, as ssh
# runs it) in network namespace HOST under `uroce exec`, with HOST's run directory.
# Each host gets a TMPDIR of its own: the "hosts" share /tmp and one hostname, so
# Open MPI's session directories and PMIx's rendezvous sockets would be one for all.
host=$1
shift
case $host in
{cases}
*) echo "agent: no namespace $host" >&2; exit 1;;
esac
mkdir -p "$run/tmp"
exec ip netns exec "$host" env UROCE_RUN_DIR="$run" TMPDIR="$run/tmp" {uroce} exec -- /bin/sh -c "$*"
'''


def write_agent(mesh):
    path = os.path.join(mesh.tmp, 'agent.sh')
    cases = '\n'.join(f'{ns}) run={rd};;' for ns, rd in zip(mesh.ns, mesh.run_dirs))
    with open(path, 'w') as f:
        f.write(AGENT.format(cases=cases, uroce=mesh.uroce))
    os.chmod(path, stat.S_IRWXU)
    return path


def rank_lanes(out):
    """{pid: set of tag lanes} from the ranks' ep_cfg lines in UCX's info log."""
    lanes = {}
    # "[host:pid :thread]  file:line UCX  INFO  ep_cfg[N]: tag(self/memory0 rc_verbs/uroce0:1) ..."
    for pid, cfg in re.findall(r'\[[^\]:]+:(\d+)\s*:\w+\]\s+\S+\s+UCX\s+INFO\s+ep_cfg\[\d+\]: (.*)',
                               out):
        for group in re.findall(r'tag\(([^)]*)\)', cfg):
            lanes.setdefault(pid, set()).update(group.split())
    return lanes


def mpirun(tap, mesh, agent, ranks, hosts, tl):
    hostfile = os.path.join(mesh.tmp, f'hosts{hosts}')
    with open(hostfile, 'w') as f:
        f.writelines(f'{ns} slots={ranks // hosts}\n' for ns in mesh.ns[:hosts])
    prog = os.path.join(mesh.build, 'tests', 'integration', 'mpi_check')
    argv = ['mpirun', '--allow-run-as-root', '--hostfile', hostfile, '-np', str(ranks),
            # Every "host" is this machine: binding would pile each host's ranks on its core 0.
            '--map-by', 'node', '--bind-to', 'none', '--mca', 'plm_rsh_agent', agent,
            '--mca', 'plm_rsh_no_tree_spawn', '1', '--mca', 'pml', 'ucx', '--mca', 'btl', 'self',
            '-x', f'UCX_TLS={UCX_TLS[tl]}', '-x', f'UCX_NET_DEVICES={DEV}',
            '-x', 'UCX_LOG_LEVEL=info', prog]
    name = f'{ranks} ranks in {hosts} namespaces over {tl}'
    tmp = os.path.join(mesh.tmp, 'mpirun-tmp')	# mpirun's own, apart from its daemons'
    os.makedirs(tmp, exist_ok=True)
    p = mesh.start(0, ['env', f'TMPDIR={tmp}'] + argv, raw=True, log=f'mpirun-{ranks}-{tl}.log')
    p.wait(300)
    results = re.findall(r'^(PASS|FAIL) (.*?)(?: \(([\d.]+ s)\))?$', p.out, re.M)
    for verdict, what, took in results:
        if tap.ok(verdict == 'PASS', f'{name}: {what}', p.out):
            tap.diag(f'{name}: {what}: {took}')
    tap.ok(p.rc == 0 and len(results) == CHECKS, f'{name}: mpirun ran every check',
           f'mpirun exit {p.rc}:\n{p.out}')
    lanes = rank_lanes(p.out)
    remote = {pid: ls - {'self/memory0'} for pid, ls in lanes.items()}
    tap.ok(len(remote) == ranks and all(ls == {f'{tl}/{DEV}'} for ls in remote.values()),
           f'{name}: UCX\'s log shows every rank\'s tag lanes on {tl}/{DEV}, and only there',
           f'{remote}\n{p.out}')
    for line in re.findall(r'^FIGURE (.*)$', p.out, re.M):
        tap.diag(f'{name}: {line}')


def body(tap, mesh):
    prog = os.path.join(mesh.build, 'tests', 'integration', 'mpi_check')
    if not tap.ok(os.path.exists(prog), 'mpi_check is built',
                  'no mpicc when meson configured: run tools/install-deps.sh, then reconfigure'):
        return
    agent = write_agent(mesh)
    for tl in UCX_TLS:
        mpirun(tap, mesh, agent, 2, 2, tl)
        mpirun(tap, mesh, agent, 8, 4, tl)


class Mesh4(it.Mesh):
    def __init__(self, build, tag, **kw):
        super().__init__(build, tag, n=4, **kw)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'mpi', body, pair_cls=Mesh4))
