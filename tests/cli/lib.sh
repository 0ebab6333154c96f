# SPDX-License-Identifier: MIT
# Shared start of check_decode_cli.sh and check_ladder_cli.sh: arguments, scratch dir, counted checks.
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

# finish WHAT: exits 1 if any check failed, else says WHAT passed.
finish() {
	if [ "$failures" -ne 0 ]; then
		echo "$failures check(s) failed"
		exit 1
	fi
	echo "ok: $1 CLI checks passed"
}
