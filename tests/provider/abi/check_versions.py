# SPDX-License-Identifier: MIT
"""The provider may bind only libibverbs symbol versions rdma-core 34 already has.

usage: check_versions.py PROVIDER.so

rdma-core 34's libibverbs defines IBVERBS_1.0 .. IBVERBS_1.12 and
IBVERBS_PRIVATE_34; a provider that needs anything newer (for example
IBVERBS_1.14 for ibv_query_qp_data_in_order) is refused by the dynamic loader
of older releases.  Reads the module's version needs with readelf.
"""

import re
import subprocess
import sys

OLDEST_MINOR = 12


def main():
    out = subprocess.run(['readelf', '-V', '--wide', sys.argv[1]], stdout=subprocess.PIPE,
                         text=True, check=True).stdout
    needs, lib = [], None
    for line in out.splitlines():
        m = re.search(r'File: (\S+)', line)
        if m:
            lib = m.group(1)
            continue
        m = re.search(r'Name: (\S+)', line)
        if m and lib and lib.startswith('libibverbs.so'):
            needs.append(m.group(1))
    print('libibverbs versions needed:', ' '.join(needs) or 'none')
    bad = [v for v in needs
           if v != 'IBVERBS_PRIVATE_34' and not (
               re.fullmatch(r'IBVERBS_1\.(\d+)', v) and
               int(re.fullmatch(r'IBVERBS_1\.(\d+)', v).group(1)) <= OLDEST_MINOR)]
    if 'IBVERBS_PRIVATE_34' not in needs:
        print('the provider does not bind IBVERBS_PRIVATE_34')
        return 1
    if bad:
        print('not in rdma-core 34:', ' '.join(bad))
        return 1
    return 0


if __name__ == '__main__':
    sys.exit(main())
