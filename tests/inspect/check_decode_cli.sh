#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `uroce decode` end to end: pcap and pcapng fixtures, the three output modes, frame ranges, and
# one clear error line with a non-zero exit for every kind of bad input.
# Usage: check_decode_cli.sh UROCE SOURCE_ROOT
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"

last_line_is() {
	local want=$1 got
	got=$(tail -n 1 "$tmp/out")
	[ "$got" = "$want" ] || fail "last line '$got', expected '$want'"
}

# Classic pcap and pcapng (editcap's output) both decode, every frame, summary line last.
expect_exit 0 pcap -- "$uroce" decode "$caps/rxe_rc_send_lat_inline.pcap"
last_line_is "1237 frames: 1208 RoCE v2 (1208 accepted), 29 other"
[ "$(wc -l <"$tmp/out")" -eq 1238 ] || fail "pcap: $(wc -l <"$tmp/out") lines"
head -c 4 "$caps/rxe_rc_write_first80.pcap" | od -An -tx1 | grep -q "0a 0d 0d 0a" ||
	fail "rxe_rc_write_first80.pcap is not pcapng any more; pick another pcapng fixture"
expect_exit 0 pcapng -- "$uroce" decode "$caps/rxe_rc_write_first80.pcap"
last_line_is "80 frames: 59 RoCE v2 (59 accepted), 21 other"
grep -q "RC_RDMA_WRITE_FIRST qp 0x00001b psn 659642 va 0x[0-9a-f]* rkey 0x[0-9a-f]* dmalen 4096 payload 1024 icrc ok" "$tmp/out" ||
	fail "pcapng: no RDMA Write First line"

# -v: a verdict and every layer per RoCE frame.
expect_exit 0 verbose -- "$uroce" decode -v "$caps/hw_third_party_rc_send.pcap"
[ "$(grep -c '^verdict: accepted' "$tmp/out")" -eq 105 ] || fail "-v: not 105 accepted verdicts"
[ "$(grep -c '^BTH base transport header' "$tmp/out")" -eq 105 ] || fail "-v: not 105 BTHs"
grep -q "^ARP, 28 bytes" "$tmp/out" || fail "-v: ARP not shown"

# -j: one valid JSON object per frame, no summary line.
expect_exit 0 json -- "$uroce" decode -j "$caps/hw_third_party_rc_send.pcap"
/usr/bin/python3 -c '
import json, sys
objs = [json.loads(line) for line in open(sys.argv[1])]
assert len(objs) == 123, len(objs)
assert sum(o["kind"] == "roce" and o["drop"] == "NONE" for o in objs) == 105
assert [o["frame"] for o in objs] == list(range(1, 124))
' "$tmp/out" || fail "-j: output is not 123 JSON frames with 105 good RoCE packets"

# -j stays valid JSON on broken frames: every fuzz seed and regression input, in one pcap.
fuzz_inputs_pcap "$tmp/fuzz.pcap"
expect_exit 0 json-fuzz-inputs -- "$uroce" decode -j "$tmp/fuzz.pcap"
/usr/bin/python3 -c '
import json, sys
n = sum(1 for line in open(sys.argv[1]) if json.loads(line))
assert n > 100, n
' "$tmp/out" || fail "-j: invalid JSON for the fuzz inputs"

# -n: a range of frames.
expect_exit 0 range -- "$uroce" decode -n 16-17 "$caps/hw_third_party_rc_send.pcap"
[ "$(wc -l <"$tmp/out")" -eq 3 ] || fail "-n 16-17: $(wc -l <"$tmp/out") lines"
grep -q "^16.291892 192.168.70.6.72 > 192.168.70.4.4791: RC_ACKNOWLEDGE" "$tmp/out" ||
	fail "-n 16-17: frame 16 is not the first line"

# Bad input: one line on stderr, nothing on stdout, non-zero exit.
expect_exit 1 missing -- "$uroce" decode "$tmp/no-such.pcap"
one_error_line missing "cannot read capture .*no-such.pcap: No such file or directory"
expect_exit 1 not-a-capture -- "$uroce" decode "$caps/README.md"
one_error_line not-a-capture "unknown file format (expected pcap or pcapng"
expect_exit 1 directory -- "$uroce" decode "$caps"
one_error_line directory "cannot read capture"
head -c 5000 "$caps/rxe_rc_write_lat.pcap" >"$tmp/cut.pcap"
expect_exit 1 truncated -- "$uroce" decode "$tmp/cut.pcap"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "truncated" "$tmp/err" ||
	fail "truncated file: $(cat "$tmp/err")"
[ -s "$tmp/out" ] || fail "truncated file: the frames before the cut were not shown"
printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\0\0\0\0\0\0\0\0\xff\xff\0\0\x71\0\0\0' >"$tmp/sll.pcap"
expect_exit 1 link-type -- "$uroce" decode "$tmp/sll.pcap"
one_error_line link-type "link type LINUX_SLL, not Ethernet"
expect_exit 2 bad-option -- "$uroce" decode -x "$caps/rxe_ud_send.pcap"
one_error_line bad-option "unknown option -x"
expect_exit 2 bad-range -- "$uroce" decode -n 9-3 "$caps/rxe_ud_send.pcap"
one_error_line bad-range "wants FRAME or FIRST-LAST"
expect_exit 2 no-file -- "$uroce" decode
grep -q "usage: uroce decode" "$tmp/err" || fail "no file: no usage"

finish "uroce decode"
