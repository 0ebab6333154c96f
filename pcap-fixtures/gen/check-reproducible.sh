#!/bin/sh
# SPDX-License-Identifier: MIT
# Fails unless the generators reproduce the committed fixtures byte for byte.
set -eu
gen=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$gen")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$gen/regenerate.sh" "$tmp"
status=0
for dir in spec rxe; do
	if ! diff -r "$root/$dir" "$tmp/$dir" >"$tmp/diff.txt" 2>&1; then
		echo "pcap-fixtures/$dir differs from what pcap-fixtures/gen produces:"
		head -20 "$tmp/diff.txt"
		status=1
	fi
done
[ $status -eq 0 ] && echo "all fixtures reproduced byte for byte"
exit $status
