#!/bin/sh
# SPDX-License-Identifier: MIT
# Regenerate every conformance fixture into pcap-fixtures/ (or into DIR): regenerate.sh [DIR]
set -eu
export PYTHONDONTWRITEBYTECODE=1
gen=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$gen")
out=${1:-$root}
py=${PYTHON:-/usr/bin/python3}
mkdir -p "$out/spec" "$out/rxe"
"$py" "$gen/spec.py" "$out/spec"
for cap in "$root"/captures/rxe/*.pcap; do
	name=$(basename "$cap" .pcap)
	"$py" "$gen/capture.py" fixture "$cap" "rxe_$name" "$out/rxe"
done
