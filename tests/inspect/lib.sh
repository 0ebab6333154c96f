# SPDX-License-Identifier: MIT
# Shared by check_decode_cli.sh and check_ladder_cli.sh: arguments, scratch dir, counted checks, fuzz pcap.
# Sourced first thing by scripts run as SCRIPT UROCE SOURCE_ROOT; the scratch dir goes on exit.
# shellcheck shell=bash disable=SC2034 # uroce and caps are for the scripts that source this file
uroce=$1
top=$2
caps=$top/pcap-fixtures/captures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
	echo "FAIL: $*"
	failures=$((failures + 1))
}

# expect_exit CODE NAME -- CMD...: runs CMD, stdout/stderr into $tmp/out, $tmp/err.
expect_exit() {
	local want=$1 name=$2
	shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"
	local got=$?
	[ "$got" -eq "$want" ] || fail "$name: exit $got, expected $want ($(head -c 300 "$tmp/err"))"
}

one_error_line() {
	local name=$1 pattern=$2
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "$name: stderr has $(wc -l <"$tmp/err") lines"
	grep -q -- "$pattern" "$tmp/err" || fail "$name: stderr lacks '$pattern': $(cat "$tmp/err")"
	[ ! -s "$tmp/out" ] || fail "$name: wrote to stdout"
}

# fuzz_inputs_pcap OUT: every fuzz seed and regression input of tests/fuzz, one frame each, in one pcap.
fuzz_inputs_pcap() {
	/usr/bin/python3 -c '
import glob, struct, sys
with open(sys.argv[2], "wb") as o:
    o.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    for f in sorted(glob.glob(sys.argv[1] + "/corpus/*") + glob.glob(sys.argv[1] + "/regressions/*")):
        d = open(f, "rb").read()
        o.write(struct.pack("<IIII", 0, 0, len(d), len(d)) + d)
' "$top/tests/fuzz" "$1"
}

# finish WHAT: exits 1 if any check failed, else says WHAT passed.
finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "ok: $1 CLI checks passed"
}
