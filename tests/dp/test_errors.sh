#!/bin/bash
# SPDX-License-Identifier: MIT
# Errors a user can cause: one line saying what, why and the fix; exit non-zero; no DPDK usage text.
. "$(dirname "$0")/lib.sh"
setup_veth 9000

one_line() {	# one_line LOG PATTERN DESCRIPTION
	if grep -q -- "$2" $1 && [ "$(wc -l <$1)" = 1 ]; then ok "$3: $(cat $1)"; else fail "$3: $(cat $1)"; fi
}
inA $PORTTEST pong --netdev udnope0 --timeout 1 >$WORK/e1 2>&1 && fail "missing netdev accepted"
one_line $WORK/e1 "netdev udnope0 does not exist in this network namespace" "missing netdev"
inA $PORTTEST pong --netdev $VA --eal-args "--bogus-option" --timeout 1 >$WORK/e2 2>&1 && fail "bad EAL args accepted"
one_line $WORK/e2 "DPDK cannot start (.*): fix eal_args" "bad EAL arguments"
grep -qi usage $WORK/e2 && fail "DPDK's usage text reached the user"
if [ -n "$UROCE" ]; then
	inA $UROCE loss $VA 1% || fail "uroce loss"
	inA $PORTTEST pong --pmd af_xdp --netdev $VA --timeout 1 >$WORK/e3 2>&1 && fail "af_xdp over another XDP program accepted"
	one_line $WORK/e3 "af_xdp port on $VA.*already run an XDP program" "af_xdp where an XDP program runs"
	inA $UROCE loss $VA off
fi
$PORTTEST pong --pmd memif --netdev udm$SUFFIX --pmd-args role=bogus --ip 10.1.1.1 --timeout 1 >$WORK/e4 2>&1 && fail "bad memif role accepted"
one_line $WORK/e4 "cannot open the memif port" "bad memif arguments"
inA setpriv --reuid=nobody --regid=nogroup --clear-groups env UROCE_RUN_DIR=/tmp $PORTTEST pong --netdev $VA --timeout 1 >$WORK/e5 2>&1 &&
	fail "unprivileged af_packet accepted"
one_line $WORK/e5 "needs CAP_NET_RAW and CAP_NET_ADMIN: run as root" "no privileges"
finish
