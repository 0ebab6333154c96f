#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The whole test suite on a fresh Debian 12 machine, as root: install, build with warnings as
# errors, run every test, then the unit tests again under ASan+UBSan.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"

"$top/tools/install-deps.sh"

build=${UROCE_BUILD:-build-test}
[ -d "$build" ] || meson setup "$build" -Dwerror=true >/dev/null
ninja -C "$build"
meson test -C "$build" --print-errorlogs

# Each libFuzzer target for a bounded time on the committed seed corpus (clang build).
"$top/tests/fuzz/run.sh" "${UROCE_FUZZ_SECONDS:-30}" "$top/${build}-fuzz"

# Last: the unit tests under ASan+UBSan, so the run ends with meson's summary line.
san=${build}-asan
[ -d "$san" ] || meson setup "$san" -Dwerror=true -Db_sanitize=address,undefined \
	-Db_lundef=false >/dev/null
ninja -C "$san"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C "$san" --print-errorlogs --suite unit
