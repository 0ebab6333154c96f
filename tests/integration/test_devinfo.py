# SPDX-License-Identifier: MIT
"""ibv_devices and ibv_devinfo describe uroce0 correctly; `uroce link` and `uroce exec` errors."""

import json
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402

# include/uroce/rc.h RC_MAX_* and WIRE_GID_TABLE_LEN, as query_device must report them.
LIMITS = {'max_qp': 16384, 'max_qp_wr': 16384, 'max_sge': 32, 'max_cq': 4096,
          'max_cqe': 1048576, 'max_mr': 65536, 'max_pd': 4096, 'max_qp_rd_atom': 16,
          'max_qp_init_rd_atom': 16, 'max_srq': 1024, 'max_srq_wr': 16384,
          'max_ah': 65536, 'phys_port_cnt': 1, 'max_mcast_grp': 64, 'max_mcast_qp_attach': 16,
          'max_total_mcast_qp_attach': 1024, 'max_mw': 65536}
IB_MTU = {1500: '1024 (3)', 9000: '4096 (5)'}


def eui64(mac):
    b = bytes.fromhex(mac.replace(':', ''))
    g = bytes([b[0] ^ 2]) + b[1:3] + b'\xff\xfe' + b[3:]
    return g.hex()


def field(text, name):
    m = re.search(rf'^\s*{name}:\s*(.+)$', text, re.M)
    return m.group(1).strip() if m else None


def devinfo(pair, side):
    p = pair.start(side, ['ibv_devinfo', '-v', '-d', 'uroce0'])
    p.wait(30)
    return p


def body(tap, pair):
    mac = json.loads(it.sh('ip', '-n', pair.ns[0], '-j', 'link', 'show', pair.ifs[0]).stdout)[0]['address']

    p = pair.start(0, ['ibv_devices'])
    p.wait(30)
    tap.ok(p.rc == 0 and re.search(rf'uroce0\s+{eui64(mac)}', p.out) is not None,
           f'ibv_devices lists uroce0 with the EUI-64 of {mac} (MTU {pair.mtu})', p.out)

    p = devinfo(pair, 0)
    out = p.out
    tap.ok(p.rc == 0 and field(out, 'hca_id') == 'uroce0', 'ibv_devinfo -v opens uroce0', out)
    guid = eui64(mac)
    tap.ok(field(out, 'node_guid') == ':'.join(guid[i:i + 4] for i in range(0, 16, 4)),
           'node_guid is the EUI-64 of the MAC', out)
    bad = [f'{k}={field(out, k)}' for k, v in LIMITS.items() if field(out, k) != str(v)]
    tap.ok(not bad, 'device limits are the engine\'s RC_MAX_*', ' '.join(bad) + '\n' + out)
    tap.ok(field(out, 'atomic_cap') == 'ATOMIC_HCA (1)', 'atomic_cap ATOMIC_HCA', out)
    tap.ok(field(out, 'state') == 'PORT_ACTIVE (4)' and field(out, 'phys_state') == 'LINK_UP (5)',
           'port is ACTIVE while the netdev is up', out)
    tap.ok(field(out, 'link_layer') == 'Ethernet', 'link_layer Ethernet', out)
    tap.ok(field(out, 'active_mtu') == IB_MTU[pair.mtu] and field(out, 'max_mtu') == '4096 (5)',
           f'active_mtu {IB_MTU[pair.mtu]} at netdev MTU {pair.mtu}', out)
    tap.ok(field(out, 'gid_tbl_len') == '16', 'gid_tbl_len 16', out)
    want = [rf'GID\[\s*\d+\]:\s+::ffff:{re.escape(pair.ip4[0])}, RoCE v2',
            rf'GID\[\s*\d+\]:\s+{re.escape(pair.ip6[0])}, RoCE v2',
            rf'GID\[\s*0\]:\s+fe80:0000:0000:0000:{guid[0:4]}:{guid[4:8]}:{guid[8:12]}:{guid[12:16]}, RoCE v1',
            rf'GID\[\s*1\]:\s+fe80::.*, RoCE v2']
    missing = [w for w in want if not re.search(w, out)]
    tap.ok(not missing, 'GID table: default GID, IPv4-mapped and IPv6 entries, v1 and v2',
           '\n'.join(missing) + '\n' + out)

    # What `uroce exec` sets up: the environment, and a seccomp filter that
    # refuses RDMA netlink with EPROTONOSUPPORT and nothing else.
    probe = ('import os, socket\n'
             'print(open("/proc/self/status").read().split("Seccomp:")[1].split()[0])\n'
             'for k in ("SYSFS_PATH", "RDMAV_DRIVERS", "LD_PRELOAD"): print(k, os.environ.get(k))\n'
             'socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0).close(); print("route ok")\n'
             'try:\n'
             '    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 20)\n'
             'except OSError as e:\n'
             '    print("rdma", e.errno)\n')
    p = pair.start(0, ['/usr/bin/python3', '-c', probe])
    p.wait(30)
    sysfs = os.path.join(pair.run_dirs[0], 'sysfs')
    tap.ok(p.rc == 0 and p.out.splitlines()[0] == '2' and f'SYSFS_PATH {sysfs}' in p.out and
           'liburoce-compchan.so' in p.out and 'provider/liburoce' in p.out and
           'route ok' in p.out and 'rdma 93' in p.out,
           'uroce exec: SYSFS_PATH, provider, interposer, seccomp hiding only RDMA netlink', p.out)

    # The documented alternative for polling programs: only SYSFS_PATH (plus the
    # provider's path, since the build tree is not installed).
    env = pair.env(0)
    env['SYSFS_PATH'] = os.path.join(pair.run_dirs[0], 'sysfs')
    env['RDMAV_DRIVERS'] = os.path.join(pair.build, 'provider', 'liburoce')
    r = it.sh(*pair.ns_argv(0, ['ibv_devices']), env=env, check=False)
    tap.ok(r.returncode == 0 and 'uroce0' in r.stdout, 'SYSFS_PATH alone finds uroce0', r.stdout)

    # Port state follows the netdev.
    it.sh('ip', '-n', pair.ns[0], 'link', 'set', pair.ifs[0], 'down')
    p = devinfo(pair, 0)
    it.sh('ip', '-n', pair.ns[0], 'link', 'set', pair.ifs[0], 'up')
    pair.wait_running()
    tap.ok(field(p.out, 'state') == 'PORT_DOWN (1)', 'port is DOWN while the netdev is down',
           p.out)

    # Port events reach the application's async fd when the netdev goes down and up.
    prog = os.path.join(pair.build, 'tests', 'integration', 'verbs_check')
    ev = pair.start(0, [prog, '-d', 'uroce0', '--port-events', '-p', '18598'])
    if pair.wait_listen(0, 18598, ev):
        it.sh('ip', '-n', pair.ns[0], 'link', 'set', pair.ifs[0], 'down')
        time.sleep(2)
        it.sh('ip', '-n', pair.ns[0], 'link', 'set', pair.ifs[0], 'up')
        pair.wait_running()
    ev.wait(40)
    tap.ok(ev.rc == 0 and 'PASS port_events' in ev.out,
           'IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE on the async fd', ev.out)

    # Addresses added later: the provider refreshes the table on ibv_open_device...
    extra = pair.ip4[0].rsplit('.', 1)[0] + '.11'
    it.sh('ip', '-n', pair.ns[0], 'addr', 'add', f'{extra}/24', 'dev', pair.ifs[0])
    p = devinfo(pair, 0)
    tap.ok(f'::ffff:{extra}, RoCE v2' in p.out, 'a new address shows at the next open', p.out)
    # ...and `uroce link refresh` without any program running.
    it.sh('ip', '-n', pair.ns[0], 'addr', 'del', f'{extra}/24', 'dev', pair.ifs[0])
    r = pair.uroce_cmd(0, 'link', 'refresh', 'uroce0', check=False)
    gids = [g['gid'] for g in pair.gids(0)]
    tap.ok(r.returncode == 0 and f'::ffff:{extra}' not in gids and
           f'::ffff:{pair.ip4[0]}' in gids, 'uroce link refresh drops a removed address',
           r.stdout + str(gids))

    # ...and while a program has the device open, the dataplane's address watch
    # (IBV_EVENT_GID_CHANGE) makes the provider rewrite the table at once.
    srv = pair.start(0, ['ibv_rc_pingpong', '-d', 'uroce0', '-p', '18599'])
    seen = False
    if pair.wait_listen(0, 18599, srv):
        it.sh('ip', '-n', pair.ns[0], 'addr', 'add', f'{extra}/24', 'dev', pair.ifs[0])
        end = time.monotonic() + 10
        while not seen and time.monotonic() < end:
            seen = f'::ffff:{extra}' in [g['gid'] for g in pair.gids(0)]
            time.sleep(0.1)
        it.sh('ip', '-n', pair.ns[0], 'addr', 'del', f'{extra}/24', 'dev', pair.ifs[0])
    srv.kill()
    srv.wait(5)
    tap.ok(seen, 'an address added while the device is open shows without a refresh', srv.out)

    # One clear line for each user error, non-zero exit.
    def err(name, side, args, pattern, env=None):
        r = it.sh(*pair.ns_argv(side, [pair.uroce] + args), check=False,
                  env=env or pair.env(side))
        lines = r.stdout.strip().splitlines()
        tap.ok(r.returncode != 0 and len(lines) == 1 and re.search(pattern, lines[0]),
               name, f'exit {r.returncode}: {r.stdout}')

    err('link add of an existing device fails', 0,
        ['link', 'add', 'uroce0', 'netdev', pair.ifs[0]], r'uroce0 exists')
    err('link add on a missing netdev fails', 0,
        ['link', 'add', 'uroce9', 'netdev', 'upnosuch'], r'upnosuch does not exist')
    down = f'{it.NS_PREFIX}d{pair.tag}'
    it.sh('ip', '-n', pair.ns[0], 'link', 'add', down, 'type', 'veth', 'peer', 'name',
          f'{it.NS_PREFIX}e{pair.tag}')
    err('link add on a netdev that is down fails', 0,
        ['link', 'add', 'uroce9', 'netdev', down], rf'{down} is down')
    it.sh('ip', '-n', pair.ns[0], 'link', 'del', down)
    r = it.sh(*pair.ns_argv(0, ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups',
                                pair.uroce, 'link', 'add', 'uroce9', 'netdev', pair.ifs[0]]),
              check=False, env=pair.env(0))
    tap.ok(r.returncode != 0 and 'permission denied' in r.stdout and 'root' in r.stdout,
           'link add without root says root is needed', r.stdout)
    err('link del of an unknown device fails', 0, ['link', 'del', 'uroce9'], r'no device uroce9')
    err('link add with a bad --pmd fails', 0,
        ['link', 'add', 'uroce9', 'netdev', pair.ifs[0], '--pmd', 'bogus'], r'bad --pmd')
    env = dict(pair.env(0))
    env['UROCE_RUN_DIR'] = os.path.join(pair.tmp, 'empty')
    err('exec without a device says how to make one', 0, ['exec', '--', 'true'],
        r'uroce link add', env=env)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'di', body, mtus=(1500, 9000)))
