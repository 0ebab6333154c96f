#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails the build when an include crosses the layers (docs/architecture.md, "The layers").

Each folder may include the headers of the folders below it and its own, never one above;
a DPDK header (rte_*.h) only in dataplane/dpdk/.  Usage: check_layers.py SOURCE_ROOT STAMP
"""
import pathlib
import re
import sys

# Folder -> the folders whose headers it may include (its own always).
ALLOWED = {
    'wire': set(),
    'wire/inspect': {'wire'},
    'dataplane/engine': {'wire'},
    'dataplane/ports': {'wire', 'dataplane/engine'},
    'dataplane/host': {'wire'},
    'dataplane/cm': {'wire', 'dataplane/engine'},
    'dataplane/dpdk': {'wire', 'dataplane/engine', 'dataplane/host'},
    'provider': {'wire', 'dataplane/engine', 'dataplane/host', 'dataplane/dpdk', 'dataplane/cm'},
    'tools/replay': {'wire', 'wire/inspect', 'dataplane/engine', 'dataplane/ports',
                     'dataplane/host', 'dataplane/dpdk'},
    'tools': {'wire', 'wire/inspect', 'dataplane/engine', 'dataplane/ports', 'dataplane/host',
              'dataplane/dpdk', 'dataplane/cm', 'provider', 'tools/replay'},
}
# The shared headers of include/uroce/ and the folder whose contract each is.
PUBLIC = {
    'wire.h': 'wire',
    'wire_mad.h': 'wire',
    'inspect_decode.h': 'wire/inspect',
    'inspect_ladder.h': 'wire/inspect',
    'port.h': 'dataplane/engine',
    'rc.h': 'dataplane/engine',
    'port_pcap.h': 'dataplane/ports',
    'config.h': 'dataplane/host',
    'host.h': 'dataplane/host',
    'dp.h': 'dataplane/dpdk',
    'cm.h': 'dataplane/cm',
    'sysfs.h': 'provider',
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)


def folder_of(root, path):
    rel = path.relative_to(root).parent.as_posix()
    while rel and rel not in ALLOWED:
        rel = rel.rpartition('/')[0]
    return rel or None


def main():
    root = pathlib.Path(sys.argv[1]).resolve()
    private = {}
    for h in root.glob('**/*.h'):
        owner = folder_of(root, h)
        if owner and not h.is_relative_to(root / 'include'):
            private.setdefault(h.name, owner)
    errors = []
    for src in sorted(root.glob('**/*.[ch]')):
        rel = src.relative_to(root).as_posix()
        if rel.startswith(('build', '.git')):
            continue
        owner = folder_of(root, src)
        for kind, name in INCLUDE.findall(src.read_text(errors='replace')):
            base = name.rpartition('/')[2]
            if kind == '<' and base.startswith('rte_') and owner != 'dataplane/dpdk':
                errors.append(f'{rel}: includes DPDK\'s {name}: only dataplane/dpdk/ may')
            if kind != '"' or not owner:
                continue
            target = PUBLIC.get(base) if name.startswith('uroce/') else private.get(base)
            if target and target != owner and target not in ALLOWED[owner]:
                errors.append(f'{rel}: includes {name} of {target}/, not a layer below {owner}/')
    for e in errors:
        print(e, file=sys.stderr)
    if errors:
        return 1
    pathlib.Path(sys.argv[2]).write_text('layers ok\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
