# SPDX-License-Identifier: MIT
"""`uroce exec` shows uroce's devices at the real /sys/class paths to its program only; --no-sys-view does not."""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

IBDEV = '/sys/class/infiniband/uroce0'


def run(pair, argv, raw=False):
    p = pair.start(0, argv, raw=raw)
    p.wait(30)
    return p


def listing(pair, path, view=True):
    """The names in PATH as a program sees them: under `uroce exec` (VIEW) or in the namespace only."""
    p = run(pair, ['ls', '-1', path]) if view else run(pair, ['ls', '-1', path], raw=True)
    return set(p.out.split()) if p.rc == 0 else None


def body(tap, pair):
    host_classes = set(os.listdir('/sys/class'))
    ns_classes = listing(pair, '/sys/class', view=False)
    netdev = pair.ifs[0]
    mac = json.loads(it.sh('ip', '-n', pair.ns[0], '-j', 'link', 'show', netdev).stdout)[0]['address']

    tap.ok(listing(pair, '/sys/class/infiniband') == {'uroce0'},
           'uroce exec: /sys/class/infiniband lists uroce0', listing(pair, '/sys/class/infiniband'))
    uverbs = listing(pair, '/sys/class/infiniband_verbs') or set()
    tap.ok(any(n.startswith('uverbs') for n in uverbs) and 'abi_version' in uverbs,
           'uroce exec: /sys/class/infiniband_verbs has uroce0\'s uverbs node', uverbs)
    tap.ok(listing(pair, f'{IBDEV}/device/net') == {netdev},
           f'uroce exec: {IBDEV}/device/net names {netdev}', listing(pair, f'{IBDEV}/device/net'))
    p = run(pair, ['cat', f'{IBDEV}/device/net/{netdev}/address'])
    tap.ok(p.rc == 0 and p.out.strip() == mac,
           'uroce exec: device/net/NETDEV leads to the netdev\'s attributes (its MAC)', p.out)
    gid4 = pair.gid_index(0, 4)
    p = run(pair, ['cat', f'{IBDEV}/ports/1/gid_attrs/ndevs/{gid4}'])
    tap.ok(p.rc == 0 and p.out.strip() == netdev,
           f'uroce exec: gid_attrs/ndevs/{gid4} (what UCX reads) is {netdev}', p.out)
    view = listing(pair, '/sys/class')
    tap.ok(view == ns_classes | {'infiniband', 'infiniband_verbs'},
           'uroce exec: every other class of the namespace is still in /sys/class',
           f'view {sorted(view or ())}\nnamespace {sorted(ns_classes or ())}')
    tap.ok(listing(pair, f'/sys/class/net/{netdev}') == listing(pair, f'/sys/class/net/{netdev}',
                                                                 view=False),
           f'uroce exec: /sys/class/net/{netdev} is the real one')
    p = run(pair, ['touch', f'{IBDEV}/node_type', '/sys/class/uroce-probe'])
    tap.ok(p.rc != 0 and p.out.count('Read-only file system') == 2,
           'uroce exec: the view is read-only (the device tree and /sys/class itself)', p.out)

    tap.ok(not os.path.exists(IBDEV) and set(os.listdir('/sys/class')) == host_classes,
           'the host\'s /sys/class is unchanged')
    tap.ok(listing(pair, '/sys/class', view=False) == ns_classes and
           'uroce0' not in (listing(pair, '/sys/class/infiniband', view=False) or set()),
           'the namespace\'s /sys/class (ip netns exec, no uroce exec) is unchanged')

    p = run(pair, [pair.uroce, 'exec', '--no-sys-view', '--', 'ls', '-1', '/sys/class'], raw=True)
    tap.ok(p.rc == 0 and set(p.out.split()) == ns_classes,
           'uroce exec --no-sys-view: /sys/class is the namespace\'s', p.out)
    p = run(pair, [pair.uroce, 'exec', '--no-sys-view', '--', 'ibv_devices'], raw=True)
    tap.ok(p.rc == 0 and 'uroce0' in p.out,
           'uroce exec --no-sys-view: libibverbs still finds uroce0 (SYSFS_PATH)', p.out)
    p = run(pair, [pair.uroce, 'exec', '--sys-vew', 'true'], raw=True)
    tap.ok(p.rc == 2 and 'unknown option --sys-vew' in p.out,
           'uroce exec: an unknown option is refused, naming it', p.out)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'sv', body))
