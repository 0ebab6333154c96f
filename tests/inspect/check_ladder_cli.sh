#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# `uroce ladder` end to end: the arrows of real captures checked against tshark, fixtures (in and
# out merged), trimming, widths, SVG parsed as XML, and one clear error line for every bad input.
# Usage: check_ladder_cli.sh UROCE SOURCE_ROOT
set -uo pipefail
# shellcheck source=SCRIPTDIR/lib.sh
. "$(dirname "$0")/lib.sh"
spec=$top/pcap-fixtures/spec
py=/usr/bin/python3

has_line() {
	local name=$1 regex=$2
	grep -Eq -- "$regex" "$tmp/out" || fail "$name: no line matching '$regex'"
}

# The arrows' labels in order (the part between the shafts), one per line.
labels() {
	sed -nE 's/^ *[0-9]* +[0-9.]*  +\|(<?[-=~.]{1,2} )(.*[^-=~.> ]) [-=~.]*>?\|.*$/\2/p; s/^ +\|-- (psn .* lost .*[)]) -*X.*$/\1/p' "$1"
}

# expect_labels NAME: the arrows' labels of the last output are the lines given on stdin.
expect_labels() {
	labels "$tmp/out" >"$tmp/labels"
	cat >"$tmp/want"
	diff -u "$tmp/want" "$tmp/labels" >"$tmp/diff" || fail "$1: arrows differ: $(cat "$tmp/diff")"
}

# --- A real loss capture, checked frame by frame against tshark --------------------------------
loss=$caps/rxe/loss1pct_rc_write.pcap
expect_exit 0 loss -- "$uroce" ladder --max 0 "$loss"
cp "$tmp/out" "$tmp/loss.txt"
head -n 5 "$tmp/out" | grep -Eq '^frame +time  192\.168\.77\.3 \(perftest client\) +192\.168\.77\.2 \(perftest server\)$' ||
	fail "loss: header is not client (left) and server (right)"
has_line loss '^   22 1\.074491  \|-- WRITE FIRST psn 10418352 rkey 0x18f4 len 4096 1024B -+>\|$'
has_line loss '^   28 1\.075518  \|<- ACK psn 10418355 msn 1 -+\|$'
has_line loss '^  110 1\.080006  \|<~ NAK seq error psn 10418386 msn 8 ~+\|$'
has_line loss '^  112 1\.080847  \|== WRITE MIDDLE psn 10418386 1024B \(resent: NAK\) =+>\|$'
has_line loss '^  113 1\.081073  \|== WRITE LAST psn 10418387 ackreq 1024B \(resent\) =+>\|$'
# The lost PSN sits between the packets around the gap.
grep -A1 '^   57 ' "$tmp/out" | tail -n 1 | grep -Eq '^ +\|-- psn 10418386 lost \(not in capture\) -+X +\|$' ||
	fail "loss: no lost row for PSN 10418386 right after frame 57"
grep -A1 'psn 10418386 lost' "$tmp/out" | tail -n 1 | grep -q '^   58 ' ||
	fail "loss: frame 58 does not follow the lost row"
has_line loss '^203 arrows: 160 requests \(59 resent\), 25 ACKs, 2 NAKs, 16 perftest TCP segments; 2 PSNs lost before$'

tshark -r "$loss" -d udp.port==4791,infiniband -T fields -e frame.number -e ip.src \
	-e infiniband.bth.opcode -e infiniband.bth.psn -e infiniband.aeth.syndrome \
	>"$tmp/tshark.tsv" 2>/dev/null || fail "tshark could not read $loss"
# Every RoCE frame has its arrow (same frame, PSN, direction, opcode); the lost and resent PSNs
# are those a plain walk over tshark's PSNs finds.
$py - "$tmp/loss.txt" "$tmp/tshark.tsv" <<'EOF' || fail "loss: ladder and tshark disagree"
import re, sys
rows, lost = {}, []
for line in open(sys.argv[1]):
    m = re.match(r'^ *(\d+) [\d.]+  \|(.*)\|$', line.rstrip('\n'))
    if m:
        rows[int(m.group(1))] = m.group(2)
    m = re.match(r'^ +\|-- psn (\d+) lost', line)
    if m:
        lost.append(int(m.group(1)))
names = {6: 'WRITE FIRST', 7: 'WRITE MIDDLE', 8: 'WRITE LAST'}
nxt = high = None
want_lost, want_resent, resent = [], set(), set()
n = 0
for line in open(sys.argv[2]):
    f = line.rstrip('\n').split('\t')
    if not f[2]:
        continue
    n += 1
    frame, src, op, psn = int(f[0]), f[1], int(f[2]), int(f[3])
    arrow = rows.get(frame)
    assert arrow is not None, 'frame %d has no arrow' % frame
    assert re.search(r'\bpsn %d\b' % psn, arrow), (frame, psn, arrow)
    rightward = arrow.endswith('>')
    assert rightward == (src == '192.168.77.3'), (frame, src, arrow)
    if op == 17:
        syn = int(f[4])
        assert arrow.lstrip('<-~ ').startswith('NAK seq error' if syn == 0x60 else 'ACK '), (frame, arrow)
        continue
    assert arrow.lstrip('-= ').startswith(names[op] + ' '), (frame, op, arrow)
    if '(resent' in arrow:
        resent.add(frame)
    if nxt is not None and psn > nxt:
        want_lost.extend(range(nxt, psn))
    if high is not None and psn < high:
        want_resent.add(frame)
    nxt = psn + 1
    high = max(high or 0, nxt)
assert n == 187, n
assert lost == want_lost, (lost, want_lost)
assert resent == want_resent, sorted(resent ^ want_resent)
EOF

# Frames before -n still count: frame 112 is known as a resend after the NAK of frame 110.
expect_exit 0 range -- "$uroce" ladder -n 112-115 "$loss"
has_line range '^  112 1\.080847  \|== WRITE MIDDLE psn 10418386 1024B \(resent: NAK\) =+>\|$'
[ "$(grep -Ec '^ +[0-9]+ [0-9.]+  \|' "$tmp/out")" -eq 4 ] || fail "range: not 4 arrows"
has_line range '^Trimmed: frames 112-115 of 208; -n FIRST-LAST and --max N \(0: all\) choose others\.'
# A range starting with the server's ACK keeps the client (first in the capture) on the left.
expect_exit 0 range-columns -- "$uroce" ladder -n 104-106 "$loss"
head -n 5 "$tmp/out" | grep -Eq '^frame +time  192\.168\.77\.3 \(perftest client\) ' ||
	fail "range-columns: the client is not the left column"
has_line range-columns '^  104 1\.078910  \|<- ACK psn 10418371 msn 5 -+\|$'

# --max: at most N arrows, and the trim said.
expect_exit 0 max -- "$uroce" ladder --max 10 "$loss"
[ "$(grep -Ec '^ +[0-9]+ [0-9.]+  \|' "$tmp/out")" -eq 10 ] || fail "--max 10: not 10 arrows"
has_line max '^Trimmed: frames 1-13 of 208 \(--max reached\)'
# Default: 200.
expect_exit 0 default-max -- "$uroce" ladder "$loss"
[ "$(grep -Ec '^ +[0-9]+ [0-9.]+  \|' "$tmp/out")" -eq 200 ] || fail "default: not 200 arrows"

# Widths: every line fits.
for w in 80 100 132; do
	expect_exit 0 "width $w" -- "$uroce" ladder --width "$w" --max 0 "$loss"
	awk -v w="$w" 'length($0) > w { bad = 1 } END { exit bad }' "$tmp/out" ||
		fail "--width $w: a line is longer"
done
expect_exit 0 width-default -- "$uroce" ladder --max 0 "$caps/hw_third_party_rc_send.pcap"
awk 'length($0) > 100 { bad = 1 } END { exit bad }' "$tmp/out" || fail "default width: a line is longer than 100"

# --all: the frames counted only by default are drawn too.
expect_exit 0 all -- "$uroce" ladder --all --max 0 "$caps/hw_third_party_rc_send.pcap"
has_line all 'ARP|ICMPv6'
grep -q "not drawn" "$tmp/out" && fail "--all: still says frames were not drawn"

# pcapng input (editcap's output).
expect_exit 0 pcapng -- "$uroce" ladder "$caps/rxe_rc_write_first80.pcap"
has_line pcapng '\|-- WRITE FIRST psn 659642 rkey 0x[0-9a-f]+ len 4096 1024B -+>\|$'

# Reads: a request spans one PSN per response packet, so no false gap or resend.
expect_exit 0 read -- "$uroce" ladder --max 0 "$caps/rxe/rc_read.pcap"
has_line read '^216 arrows: 40 requests, 160 responses, 16 perftest TCP segments;'
grep -Eq 'lost \(|\(resent|\(again' "$tmp/out" && fail "read: a read looks lost or resent"
has_line read '\|<- READ RESP FIRST psn 9586593 msn 1 1024B -+\|$'

# --- Fixtures: input and expected output merged, uroce named ---------------------------------
expect_exit 0 fixture-gbn -- "$uroce" ladder "$spec/req_go_back_n_seq_nak.fixture"
expect_labels fixture-gbn <<'EOF'
WRITE FIRST psn 2097152 rkey 0xc0ffee len 4000 1024B
WRITE MIDDLE psn 2097153 1024B
WRITE MIDDLE psn 2097154 1024B
WRITE LAST psn 2097155 ackreq 928B
NAK seq error psn 2097153 msn 0
WRITE MIDDLE psn 2097153 1024B (resent: NAK)
WRITE MIDDLE psn 2097154 1024B (resent)
WRITE LAST psn 2097155 ackreq 928B (resent)
ACK psn 2097155 msn 1
EOF
has_line fixture-gbn '^frame +time  10\.0\.0\.1 \(uroce\) +10\.0\.0\.2 \(peer\)$'

expect_exit 0 fixture-rnr -- "$uroce" ladder "$spec/req_rnr_retry.fixture"
expect_labels fixture-rnr < <(printf '%s\n' "SEND ONLY psn 2097152 ackreq 16B" \
	"RNR NAK psn 2097152 wait 1.28ms msn 0" "SEND ONLY psn 2097152 ackreq 16B (resent: RNR)" \
	"ACK psn 2097152 msn 1")

# A fixture's work requests, expected completions and final QP state are printed under the diagram.
expect_exit 0 fixture-retry -- "$uroce" ladder "$spec/req_retry_exhausted.fixture"
has_line fixture-retry '^uroce.s work requests: ibv_post_send\(q\) wr_id 22 SEND 16B; ibv_post_send\(q\) wr_id 23 SEND 16B$'
has_line fixture-retry '^Completions uroce must give: send wr_id 22 RETRY_EXC_ERR; send wr_id 23 WR_FLUSH_ERR$'
has_line fixture-retry '^QP q ends in ERR$'
has_line fixture-retry '^Requester: no answer at all; retry_cnt=2 resends, then RETRY_EXC_ERR'
expect_exit 0 fixture-rnr-recv -- "$uroce" ladder "$spec/rc_rnr_nak_and_retry.fixture"
has_line fixture-rnr-recv '^uroce.s work requests: ibv_post_recv\(q\) wr_id 11 64B at 0\.001500s$'
has_line fixture-rnr-recv '^Completions uroce must give: recv wr_id 11 SUCCESS RECV byte_len 48$'

expect_exit 0 fixture-timeout -- "$uroce" ladder "$spec/req_go_back_n_timeout.fixture"
has_line fixture-timeout '^    5 0\.004194  \|== WRITE MIDDLE psn 2097153 1024B \(resent: no NAK\) =+>\|$'

expect_exit 0 fixture-uc-gap -- "$uroce" ladder "$spec/uc_gap_drops_message.fixture"
expect_labels fixture-uc-gap < <(printf '%s\n' "UC SEND FIRST psn 1048576 1024B" \
	"psn 1048577 lost (not in capture)" "UC SEND LAST psn 1048578 952B" "UC SEND ONLY psn 1048579 100B")

expect_exit 0 fixture-access -- "$uroce" ladder "$spec/rc_nak_remote_access_no_remote_write.fixture"
has_line fixture-access '^    2 0\.000000  \|<~ NAK remote access error psn 1048576 msn 0 ~+\|$'
expect_exit 0 fixture-cnp -- "$uroce" ladder "$spec/ecn_ce_sends_cnp.fixture"
has_line fixture-cnp '\|<- CNP qp 0x22cd -+\|$'
expect_exit 0 fixture-icrc -- "$uroce" ladder "$spec/drop_bad_icrc.fixture"
has_line fixture-icrc '^    1 0\.000000  \|-- WRITE ONLY psn 1048576 ackreq rkey 0x1a2b3c4d len 24 DROP BAD_ICRC -+>\|$'
expect_exit 0 fixture-dup-read -- "$uroce" ladder "$spec/rc_duplicate_read_tail.fixture"
[ "$(grep -c '(again)' "$tmp/out")" -eq 2 ] || fail "fixture-dup-read: not 2 repeated responses"

# Every committed fixture draws.
for f in "$top"/pcap-fixtures/spec/*.fixture "$top"/pcap-fixtures/rxe/*.fixture; do
	"$uroce" ladder "$f" >"$tmp/out" 2>"$tmp/err" || fail "$(basename "$f"): $(cat "$tmp/err")"
done

# --- SVG ------------------------------------------------------------------------------------
expect_exit 0 svg -- "$uroce" ladder --max 0 --svg "$tmp/loss.svg" "$loss"
[ ! -s "$tmp/out" ] || fail "svg: wrote text to stdout as well"
$py - "$tmp/loss.svg" "$tmp/loss.txt" <<'EOF' || fail "svg: not the document expected"
import re, sys
import xml.etree.ElementTree as ET
ns = '{http://www.w3.org/2000/svg}'
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + 'svg', root.tag
float(root.get('width')); float(root.get('height'))
pkts = [g for g in root.iter(ns + 'g') if (g.get('class') or '').startswith('pkt ')]
kinds = [g.get('class').split()[1] for g in pkts]
# One group per text row (arrows and lost rows), in the same order.
text_rows = [l for l in open(sys.argv[2]) if re.match(r'^ *(\d+ [\d.]+  |\s+)\|[-=<~.]', l)]
assert len(pkts) == len(text_rows) == 205, (len(pkts), len(text_rows))
assert kinds.count('nak') == 2 and kinds.count('lost') == 2, kinds
assert kinds.count('ack') == 25 and kinds.count('setup') == 16, kinds
assert sum('resent' in g.get('class') for g in pkts) == 59
frames = [int(g.get('data-frame')) for g in pkts if g.get('class') != 'pkt lost']
assert frames == sorted(frames) and len(set(frames)) == len(frames), frames
for g in pkts:
    assert g.find(ns + 'text') is not None
    if 'lost' not in g.get('class'):
        assert g.find(ns + 'line') is not None and g.find(ns + 'polygon') is not None
        assert g.find(ns + 'title').text.startswith('frame %s: ' % g.get('data-frame'))
t = {g.get('data-frame'): g.find(ns + 'title').text for g in pkts if g.find(ns + 'title') is not None}
assert t['110'] == ('frame 110: 192.168.77.2.50673 > 192.168.77.3.4791: RC_ACKNOWLEDGE qp 0x000027 '
                    'psn 10418386 NAK PSN sequence error msn 8 icrc ok'), t['110']
EOF
expect_exit 0 svg-stdout -- "$uroce" ladder --svg - "$spec/req_go_back_n_seq_nak.fixture"
$py -c '
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
g = [g for g in ET.parse(sys.argv[1]).getroot().iter(ns + "g") if (g.get("class") or "").startswith("pkt ")]
assert len(g) == 9, len(g)
assert [x.get("class") for x in g][4:6] == ["pkt nak", "pkt request resent"], [x.get("class") for x in g]
' "$tmp/out" || fail "svg-stdout: not 9 packets with the NAK and the resend"

# Broken frames (every fuzz seed and regression input in one pcap) are drawn, never a crash.
fuzz_inputs_pcap "$tmp/fuzz.pcap"
expect_exit 0 fuzz-text -- "$uroce" ladder --all --max 0 "$tmp/fuzz.pcap"
has_line fuzz-text 'DROP '
expect_exit 0 fuzz-svg -- "$uroce" ladder --all --max 0 --svg "$tmp/fuzz.svg" "$tmp/fuzz.pcap"
$py -c '
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
g = [g for g in ET.parse(sys.argv[1]).getroot().iter(ns + "g") if (g.get("class") or "").startswith("pkt ")]
assert len(g) > 100 and any("bad" in x.get("class") for x in g), len(g)
' "$tmp/fuzz.svg" || fail "fuzz-svg: not well-formed, or no dropped frame drawn"

# --- Bad input: one line on stderr, nothing on stdout, non-zero exit ----------------------------
expect_exit 1 missing -- "$uroce" ladder "$tmp/no-such.pcap"
one_error_line missing "cannot read capture .*no-such.pcap: No such file or directory"
expect_exit 1 not-a-capture -- "$uroce" ladder "$caps/README.md"
one_error_line not-a-capture "unknown file format (expected pcap or pcapng"
printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\0\0\0\0\0\0\0\0\xff\xff\0\0\x71\0\0\0' >"$tmp/sll.pcap"
expect_exit 1 link-type -- "$uroce" ladder "$tmp/sll.pcap"
one_error_line link-type "link type LINUX_SLL, not Ethernet"
expect_exit 1 missing-fixture -- "$uroce" ladder "$tmp/none.fixture"
one_error_line missing-fixture "none.fixture"
cp "$spec/rc_write_only.fixture" "$tmp/alone.fixture"
sed -i 's/^name rc_write_only$/name alone/' "$tmp/alone.fixture"
expect_exit 1 fixture-no-pcaps -- "$uroce" ladder "$tmp/alone.fixture"
one_error_line fixture-no-pcaps "cannot read capture .*alone.in.pcap"
expect_exit 1 svg-unwritable -- "$uroce" ladder --svg "$tmp/no/dir/x.svg" "$loss"
one_error_line svg-unwritable "cannot write .*no/dir/x.svg: No such file or directory"
expect_exit 1 range-past-end -- "$uroce" ladder -n 300-400 "$loss"
one_error_line range-past-end "has 208 frames; -n starts at frame 300"
head -c 5000 "$caps/rxe_rc_write_lat.pcap" >"$tmp/cut.pcap"
expect_exit 1 truncated -- "$uroce" ladder "$tmp/cut.pcap"
[ "$(wc -l <"$tmp/err")" -eq 1 ] && grep -q "truncated" "$tmp/err" || fail "truncated: $(cat "$tmp/err")"
grep -q "ends with an error after frame 40" "$tmp/out" || fail "truncated: frames before the cut not drawn"
printf '\xd4\xc3\xb2\xa1\x02\x00\x04\x00\0\0\0\0\0\0\0\0\xff\xff\0\0\x01\0\0\0' >"$tmp/empty.pcap"
expect_exit 0 empty -- "$uroce" ladder "$tmp/empty.pcap"
has_line empty '^\(no frames to draw\)$'
for bad in "-n 0" "-n 9-3" "-n x" "--max -1" "--max x" "--width 10" "--width 5000" "-x" "--bogus"; do
	# shellcheck disable=SC2086
	expect_exit 2 "option $bad" -- "$uroce" ladder $bad "$loss"
	[ "$(wc -l <"$tmp/err")" -eq 1 ] || fail "option $bad: stderr has $(wc -l <"$tmp/err") lines"
	[ ! -s "$tmp/out" ] || fail "option $bad: wrote to stdout"
done
expect_exit 2 missing-value -- "$uroce" ladder "$loss" --max
one_error_line missing-value "missing the value after --max"
expect_exit 2 no-file -- "$uroce" ladder
grep -q "usage: uroce ladder" "$tmp/err" || fail "no file: no usage"
expect_exit 2 two-files -- "$uroce" ladder "$loss" "$loss"
grep -q "usage: uroce ladder" "$tmp/err" || fail "two files: no usage"
expect_exit 0 help -- "$uroce" ladder -h
grep -q "usage: uroce ladder" "$tmp/out" || fail "-h: no usage"
expect_exit 0 listed -- "$uroce" --help
grep -q "uroce ladder" "$tmp/out" || fail "uroce --help does not list ladder"

finish "uroce ladder"
