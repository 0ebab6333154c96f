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
# Someone else's XDP program on the netdev: af_xdp cannot take the hook.
printf '#include <linux/bpf.h>\n__attribute__((section("xdp"), used)) int foreign(struct xdp_md *c) { return XDP_PASS; }\nchar _l[] __attribute__((section("license"), used)) = "GPL";\n' >$WORK/foreign.c
if clang -target bpf -O2 -c $WORK/foreign.c -o $WORK/foreign.o -I/usr/include/$(gcc -print-multiarch) 2>/dev/null &&
   inA ip link set dev $VA mtu 3000 && inB ip link set dev $VB mtu 3000 && inA ip link set dev $VA xdp obj $WORK/foreign.o sec xdp 2>/dev/null; then
	inA $PORTTEST pong --pmd af_xdp --netdev $VA --timeout 1 >$WORK/e3 2>&1 && fail "af_xdp over a foreign XDP program accepted"
	one_line $WORK/e3 "another XDP program is attached" "af_xdp where a foreign XDP program runs"
	inA ip link set dev $VA xdp off
else
	echo "note: no foreign XDP program could be attached; that check is left out"
fi
$PORTTEST pong --pmd memif --netdev udm$SUFFIX --pmd-args role=bogus --ip 10.1.1.1 --timeout 1 >$WORK/e4 2>&1 && fail "bad memif role accepted"
one_line $WORK/e4 "cannot open the memif port" "bad memif arguments"
inA setpriv --reuid=nobody --regid=nogroup --clear-groups env UROCE_RUN_DIR=/tmp $PORTTEST pong --netdev $VA --timeout 1 >$WORK/e5 2>&1 &&
	fail "unprivileged af_packet accepted"
one_line $WORK/e5 "needs CAP_NET_RAW and CAP_NET_ADMIN: run as root" "no privileges"
finish
