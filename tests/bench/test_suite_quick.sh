#!/bin/bash
# SPDX-License-Identifier: MIT
# The benchmark suite's smoke test: `run-suite.sh --quick`, then every figure of it must be in the
# CSV with a positive value and the plots must be PNG images. Asserts no speed.
#   test_suite_quick.sh BUILD_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?usage: test_suite_quick.sh BUILD_DIR}
OUT=$BUILD/bench-quick
rm -rf "$OUT"
"$HERE/run-suite.sh" --quick --build "$BUILD" --out "$OUT"
rc=$?
[ $rc = 77 ] && exit 77
[ -f "$OUT/results.csv" ] || { echo "FAIL: run-suite.sh wrote no results.csv (exit $rc)"; exit 1; }
/usr/bin/python3 "$HERE/suite.py" check "$OUT" --quick
