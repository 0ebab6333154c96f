# SPDX-License-Identifier: MIT
"""Raw packet QPs between two namespaces: frames through the DPDK port, steered by a flow.

raw_peer.py in one namespace sends UDP frames from a raw QP; in the other a raw QP with a flow
for its MAC and one UDP port receives them byte for byte, and neither the frame to another port
nor the one to another MAC.  Without CAP_NET_RAW a raw QP is refused (EPERM), as by the kernel.
"""

import json
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import it  # noqa: E402
import raw_peer  # noqa: E402

PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'raw_peer.py')
FRAMES = 16


def body(tap, pair):
    mac = json.loads(it.sh('ip', '-n', pair.ns[1], '-j', 'link', 'show',
                           pair.ifs[1]).stdout)[0]['address']
    rx = pair.start(1, ['/usr/bin/python3', PEER, 'recv', mac, str(FRAMES)], log='raw_recv.log')
    end = time.monotonic() + 30
    while 'ready' not in rx.so_far() and rx.p.poll() is None and time.monotonic() < end:
        time.sleep(0.05)
    tx = pair.start(0, ['/usr/bin/python3', PEER, 'send', mac, str(FRAMES)])
    tx.wait(60)
    rx.wait(60)
    tap.ok(tx.rc == 0, f'the sender\'s {FRAMES + 2} raw sends complete IBV_WC_SEND', tx.out)
    lines = rx.out.strip().splitlines()
    try:
        got = json.loads(lines[-1])
    except (IndexError, ValueError):
        tap.ok(False, 'the receiver reports what it got', rx.out)
        return
    want = [raw_peer.frame(bytes.fromhex(mac.replace(':', '')), raw_peer.DPORT, i).hex()
            for i in range(FRAMES)]
    tap.ok(rx.rc == 0 and [g['frame'] for g in got] == want,
           f'the {FRAMES} frames the flow matches arrive whole and in order, nothing else',
           f'got {len(got)}:\n{rx.out}')
    tap.ok(all(g['status'] == 0 and g['opcode'] == 128 and g['byte_len'] == raw_peer.FRAME_LEN
               for g in got), 'each an IBV_WC_RECV of the frame\'s length', rx.out)

    # The bounding set without it: the program has no CAP_NET_RAW and opens uroce0 through the broker.
    p = pair.start(0, ['capsh', '--drop=cap_net_raw', '--', '-c',
                       f'exec /usr/bin/python3 {PEER} eperm'])
    p.wait(60)
    tap.ok(p.rc == 0 and 'errno 1' in p.out, 'without CAP_NET_RAW a raw QP is refused with EPERM',
           p.out)


if __name__ == '__main__':
    sys.exit(it.run_suite(sys.argv[sys.argv.index('--build') + 1], 'raw', body))
