#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Runs each libFuzzer target for a bounded time on the committed seed corpus; fails on any crash.
# Usage: tests/fuzz/run.sh [SECONDS_PER_TARGET] [BUILD_DIR]   (defaults: 60, build-fuzz)
# Builds BUILD_DIR with clang first if it does not exist.  New interesting inputs go to a
# scratch directory, never into the committed corpus; crash files are left in
# BUILD_DIR/fuzz-artifacts/ to be copied into tests/fuzz/regressions/.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-60}
build=${2:-$top/build-fuzz}

case $seconds in
''|*[!0-9]*) echo "run.sh: SECONDS must be a number, got '$seconds'" >&2; exit 2 ;;
esac
if [ ! -d "$build" ]; then
	CC=clang meson setup "$build" "$top" -Dfuzz=true >/dev/null
fi
ninja -C "$build" tests/fuzz/fuzz_parse tests/fuzz/fuzz_roundtrip tests/fuzz/fuzz_responder \
	tests/fuzz/fuzz_cm

artifacts=$build/fuzz-artifacts
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir -p "$artifacts"

status=0
# target, its seed corpus, its largest input
for spec in "fuzz_parse corpus 9300" "fuzz_roundtrip corpus 9300" \
	    "fuzz_responder corpus_responder 4096" "fuzz_cm corpus_cm 4096"; do
	read -r target corpus max_len <<<"$spec"
	mkdir -p "$scratch/$target"
	echo "== $target: $seconds s"
	if ! "$build/tests/fuzz/$target" "$scratch/$target" "$top/tests/fuzz/$corpus" \
		-max_total_time="$seconds" -max_len="$max_len" -rss_limit_mb=2048 -timeout=10 \
		-print_final_stats=1 -artifact_prefix="$artifacts/$target-" 2>"$scratch/$target.log"; then
		tail -n 40 "$scratch/$target.log" >&2
		echo "run.sh: $target FAILED; reproducer(s): $(ls "$artifacts"/$target-* 2>/dev/null)" >&2
		status=1
	else
		grep -E "^stat::(number_of_executed_units|peak_rss_mb|new_units_added)|cov: " \
			"$scratch/$target.log" | tail -n 4
	fi
done
exit $status
