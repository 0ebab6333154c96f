#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Regenerates the ladder diagrams of docs/operations.md with `uroce ladder`: the text between each
# "<!-- ladder NAME: ARGS -->" and "<!-- /ladder -->" marker, and docs/img/ladder-NAME.svg.
# ARGS are uroce ladder's arguments, paths relative to the repository root.
# Usage: docs/gen-ladders.sh [--check] [UROCE]     (UROCE: default build/tools/uroce)
#   --check  change nothing; exit 1 and name what is out of date (a meson test runs this)
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
check=0
if [ "${1:-}" = "--check" ]; then
	check=1
	shift
fi
uroce=${1:-$top/build/tools/uroce}
case $uroce in /*) ;; *) uroce=$PWD/$uroce ;; esac
if [ ! -x "$uroce" ]; then
	echo "gen-ladders: no uroce at $uroce; build it (meson setup build && ninja -C build) or name it" >&2
	exit 1
fi
cd "$top"
exec /usr/bin/python3 - "$check" "$uroce" <<'EOF'
import os, re, shlex, subprocess, sys

check, uroce = sys.argv[1] == "1", sys.argv[2]
doc = "docs/operations.md"
img = "docs/img"
marker = re.compile(r"(<!-- ladder ([a-z0-9-]+): (.*?) -->\n)(.*?)(<!-- /ladder -->)", re.S)

def ladder(args):
    r = subprocess.run([uroce, "ladder"] + args, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit("gen-ladders: uroce ladder %s failed: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout

text = open(doc).read()
svgs, stale, names = {}, [], set()

def block(m):
    name, args = m.group(2), shlex.split(m.group(3))
    if name in names:
        sys.exit("gen-ladders: two diagrams named %s" % name)
    names.add(name)
    svgs["%s/ladder-%s.svg" % (img, name)] = ladder(["--svg", "-"] + args)
    body = "```text\n%s```\n[ladder-%s.svg](img/ladder-%s.svg) (hover over an arrow in a browser " \
           "to see its frame decoded)\n" % (ladder(args), name, name)
    return m.group(1) + body + m.group(5)

new = marker.sub(block, text)
if not names:
    sys.exit("gen-ladders: no <!-- ladder NAME: ARGS --> markers in %s" % doc)
if new != text:
    stale.append(doc)
for path, svg in svgs.items():
    if not os.path.exists(path) or open(path).read() != svg:
        stale.append(path)
extra = []
if os.path.isdir(img):
    extra = [os.path.join(img, f) for f in sorted(os.listdir(img))
             if f.startswith("ladder-") and f.endswith(".svg") and os.path.join(img, f) not in svgs]
if check:
    if stale or extra:
        print("out of date (run docs/gen-ladders.sh): " + " ".join(stale + extra))
        sys.exit(1)
    print("ok: %d ladder diagrams in %s and %s are current" % (len(names), doc, img))
    sys.exit(0)
os.makedirs(img, exist_ok=True)
for path, svg in svgs.items():
    with open(path, "w") as f:
        f.write(svg)
for path in extra:
    os.remove(path)
with open(doc, "w") as f:
    f.write(new)
print("wrote %d diagrams (%s, %s/ladder-*.svg)%s" % (len(names), doc, img,
      "; removed " + " ".join(extra) if extra else ""))
EOF
