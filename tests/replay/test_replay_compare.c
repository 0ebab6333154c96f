// SPDX-License-Identifier: MIT
/* The replay comparison rules: every compared bit matters, the exempt ones do not, ACK coalescing. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "uroce/wire.h"

static void load(const char *name, const char *suffix, struct rp_frames *fs)
{
	char path[1024], err[512];

	snprintf(path, sizeof(path), "%s/spec/%s%s", UROCE_FIXTURES_DIR, name, suffix);
	memset(fs, 0, sizeof(*fs));
	ck_assert_msg(!rp_frames_read(path, fs, err, sizeof(err)), "%s", err);
}

/* Expected output of a fixture with its windows, and a copy as "what uroce sent". */
static void load_pair(const char *name, struct rp_frames *e, struct rp_frames *a)
{
	struct rp_frames in;

	load(name, ".in.pcap", &in);
	load(name, ".out.pcap", e);
	rp_frames_set_windows(e, &in);
	rp_frames_free(&in);
	memset(a, 0, sizeof(*a));
	for (unsigned i = 0; i < e->n; i++) {
		ck_assert_int_eq(rp_frames_add(a, e->f[i].t_ns, e->f[i].data, e->f[i].len), 0);
		a->f[i].window = e->f[i].window;
	}
}

/*
 * Insert a copy of @src before position @at of @fs, in window @window,
 * sent at the time of the frame it goes before (or after).
 */
static void insert(struct rp_frames *fs, unsigned at, const struct rp_frame *src, unsigned window)
{
	struct rp_frame copy = *src;

	copy.data = malloc(src->len);
	memcpy(copy.data, src->data, src->len);
	copy.window = window;
	copy.t_ns = at < fs->n ? fs->f[at].t_ns : fs->f[fs->n - 1].t_ns;
	ck_assert_int_eq(rp_frames_add(fs, 0, "", 0), 0);
	free(fs->f[fs->n - 1].data);
	memmove(&fs->f[at + 1], &fs->f[at], (fs->n - 1 - at) * sizeof(*fs->f));
	fs->f[at] = copy;
}

static void drop(struct rp_frames *fs, unsigned at)
{
	free(fs->f[at].data);
	memmove(&fs->f[at], &fs->f[at + 1], (fs->n - 1 - at) * sizeof(*fs->f));
	fs->n--;
}

/* Fix the IPv4 header checksum and the ICRC after a change, as a real sender would send it. */
static void reseal(uint8_t *frame, uint32_t len)
{
	struct wire_pkt p;
	uint32_t end;

	if (wire_parse(frame, len, WIRE_PARSE_SKIP_ICRC | WIRE_PARSE_SKIP_IP_CSUM, &p) != WIRE_DROP_NONE)
		return;
	if (p.ip_version == 4) {
		struct wire_ipv4_hdr *ip = (struct wire_ipv4_hdr *)(frame + p.l3_off);

		wire_set16(&ip->checksum, 0);
		wire_set16(&ip->checksum, wire_ipv4_csum(ip, (ip->version_ihl & 0xfu) * 4));
	}
	end = p.payload_off + p.payload_len + p.pad;
	wire_icrc_store(frame + end, wire_icrc(frame, p.l3_off, end));
}

/* Change the PSN of an ACK (and its MSN) in place. */
static void set_ack(struct rp_frame *f, uint32_t psn, uint32_t msn)
{
	struct wire_pkt p;
	struct wire_bth *bth;
	struct wire_aeth *aeth;

	ck_assert_int_eq(wire_parse(f->data, f->len, 0, &p), WIRE_DROP_NONE);
	bth = (struct wire_bth *)(f->data + p.bth_off);
	aeth = (struct wire_aeth *)(f->data + p.bth_off + sizeof(*bth));
	wire_set32(&bth->apsn, (wire_get32(bth->apsn) & ~WIRE_24BIT_MASK) | psn);
	wire_set32(&aeth->syn_msn, (wire_get32(aeth->syn_msn) & ~WIRE_24BIT_MASK) | msn);
	reseal(f->data, f->len);
}

/* ---- Every bit of every expected frame ---- */

/*
 * The bits docs/conformance.md lets differ, written down here from the
 * document (not from the comparator's table): IPv4 ID, UDP source port,
 * ECN to another non-CE value, BTH MigReq, AckReq inside an RC message or
 * on a non-SEND/WRITE request, AETH credit bits of an ACK-type syndrome,
 * DSCP of a CNP.
 */
static bool exempt_bit(const struct wire_pkt *p, uint32_t byte, unsigned bit)
{
	const struct wire_opcode_info *op = p->op;
	uint32_t b = p->bth_off;

	if (p->ip_version == 4 && (byte == p->l3_off + 4u || byte == p->l3_off + 5u))
		return true;
	if (byte == p->l3_off + 1u && p->ip_version == 4) {
		if (bit < 2)
			return (p->tclass & WIRE_ECN_MASK) != WIRE_ECN_CE &&
			       ((p->tclass ^ (1u << bit)) & WIRE_ECN_MASK) != WIRE_ECN_CE;
		return op->flags & WIRE_OPF_CNP;
	}
	if (byte == p->l4_off || byte == p->l4_off + 1u)
		return true;
	if (byte == b + 1 && bit == 6)
		return true;
	if (byte == b + 8 && bit == 7 && (op->flags & WIRE_OPF_RC) && (op->flags & WIRE_OPF_REQUEST))
		return !((op->flags & (WIRE_OPF_SEND | WIRE_OPF_WRITE)) &&
			 (op->flags & (WIRE_OPF_LAST | WIRE_OPF_ONLY)));
	if ((op->hdrs & WIRE_HDR_AETH) && byte == b + op->off[WIRE_EXT_AETH] && bit < 5)
		return (p->frame[byte] & WIRE_AETH_TYPE_MASK) == WIRE_AETH_ACK;
	return false;
}

static const char *const bit_fixtures[] = {
	"rc_out_of_sequence",		/* NAK, ACKs */
	"rc_read_many_packets",		/* read responses First/Middle/Last */
	"rc_cmp_swap_hit",		/* atomic ACK */
	"req_write",			/* RETH, ImmDt, AckReq rules */
	"req_send_imm_inv_segmented",	/* IETH */
	"req_atomics",			/* AtomicETH */
	"req_ud_send",			/* DETH */
	"ecn_ce_sends_cnp",		/* CNP */
	"rc_rnr_nak_and_retry",		/* RNR NAK */
};

START_TEST(every_bit)
{
	struct rp_frames e, a;
	struct rp_mismatch mm;
	unsigned checked = 0, exempt = 0;

	load_pair(bit_fixtures[_i], &e, &a);
	ck_assert(rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	for (unsigned i = 0; i < e.n; i++) {
		struct wire_pkt p;
		uint32_t icrc_at, csum_at;

		ck_assert_int_eq(wire_parse(e.f[i].data, e.f[i].len, 0, &p), WIRE_DROP_NONE);
		icrc_at = p.payload_off + p.payload_len + p.pad;
		csum_at = p.l3_off + 10;
		for (uint32_t byte = 0; byte < e.f[i].len; byte++) {
			/* The checksums are recomputed after each change: flipping them means nothing. */
			if (byte >= icrc_at || (p.ip_version == 4 && (byte == csum_at || byte == csum_at + 1)))
				continue;
			for (unsigned bit = 0; bit < 8; bit++) {
				bool want = exempt_bit(&p, byte, bit), got;

				a.f[i].data[byte] ^= (uint8_t)(1u << bit);
				reseal(a.f[i].data, a.f[i].len);
				got = rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm);
				ck_assert_msg(got == want, "%s frame %u byte %u bit %u: comparison says %s%s%s",
					      bit_fixtures[_i], i + 1, byte, bit, got ? "equal" : "different: ",
					      got ? "" : mm.what, "");
				memcpy(a.f[i].data, e.f[i].data, e.f[i].len);
				checked++;
				exempt += want;
			}
		}
	}
	ck_assert_uint_gt(checked, 400);
	ck_assert_uint_gt(exempt, 0);
	rp_frames_free(&e);
	rp_frames_free(&a);
}
END_TEST

/* ---- ACK coalescing, on rc_out_of_sequence: NAK (w1), ACK 0 (w3), ACK 1 (w4), ACK 2 (w5) ---- */

#define PSN0 0x100000u

static bool ooo_variant(int variant, enum fx_timing timing, char *what, size_t cap)
{
	struct rp_frames e, a;
	struct rp_mismatch mm;
	bool ok;

	load_pair("rc_out_of_sequence", &e, &a);
	ck_assert_uint_eq(e.n, 4);
	switch (variant) {
	case 0:		/* as expected */
		break;
	case 1:		/* the ACK of window 4 missing */
		drop(&a, 2);
		break;
	case 2:		/* the ACK of window 4 sent twice */
		insert(&a, 2, &a.f[2], 4);
		break;
	case 3:		/* window 4 repeats the ACK of window 3 first */
		insert(&a, 2, &a.f[1], 4);
		break;
	case 4:		/* window 3 acknowledges one PSN too many */
		insert(&a, 2, &a.f[1], 3);
		set_ack(&a.f[2], PSN0 + 1, 2);
		break;
	case 5:		/* window 4's ACK comes in window 5 */
		a.f[2].window = 5;
		break;
	case 6:		/* an ACK in window 2, where nothing is due */
		insert(&a, 1, &a.f[1], 2);
		break;
	case 7:		/* the NAK missing */
		drop(&a, 0);
		break;
	case 8:		/* the NAK twice */
		insert(&a, 0, &a.f[0], 1);
		break;
	case 9:		/* window 5 acknowledges a PSN too few */
		set_ack(&a.f[3], PSN0 + 1, 2);
		break;
	case 10:	/* an ACK going back: window 5 repeats window 3's after its own */
		insert(&a, 4, &a.f[1], 5);
		break;
	case 11:	/* window 5 repeats its ACK: allowed */
		insert(&a, 4, &a.f[3], 5);
		break;
	}
	ok = rp_compare_frames(&e, &a, timing, &mm);
	snprintf(what, cap, "%s", mm.what);
	rp_frames_free(&e);
	rp_frames_free(&a);
	return ok;
}

START_TEST(ack_coalescing_window)
{
	static const bool want[] = { true, false, true, true, false, false, false, false, false,
				     false, false, true };
	char what[512];

	ck_assert_msg(ooo_variant(_i, FX_TIMING_WINDOW, what, sizeof(what)) == want[_i],
		      "variant %d: %s", _i, what);
}
END_TEST

START_TEST(ack_coalescing_stream)
{
	/*
	 * Without windows only the acknowledgement points between NAKs count:
	 * moving, dropping or adding ACKs inside the run is fine as long as the
	 * last one matches and none goes back or beyond.
	 */
	static const bool want[] = { true, true, true, true, true, true, true, false, false,
				     false, false, true };
	char what[512];

	ck_assert_msg(ooo_variant(_i, FX_TIMING_STREAM, what, sizeof(what)) == want[_i],
		      "variant %d: %s", _i, what);
}
END_TEST

/* ---- Time: a retransmission may not come before its timer ---- */

START_TEST(retransmit_not_early)
{
	struct rp_frames e, a;
	struct rp_mismatch mm;

	load_pair("req_go_back_n_timeout", &e, &a);
	ck_assert_uint_eq(e.n, 5);
	ck_assert(rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	a.f[3].t_ns += 200000;		/* later, same window */
	a.f[4].t_ns += 200000;
	ck_assert_msg(rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm), "%s", mm.what);
	a.f[3].t_ns = e.f[3].t_ns - 1000;
	ck_assert(!rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	ck_assert_ptr_nonnull(strstr(mm.what, "earlier than allowed"));
	rp_frames_free(&e);
	rp_frames_free(&a);
}
END_TEST

/* ---- Streams: requests, responses and CNPs are ordered only among themselves ---- */

START_TEST(streams_independent)
{
	struct rp_frames e, a;
	struct rp_mismatch mm;
	struct rp_frame t;

	load_pair("ecn_ce_sends_cnp", &e, &a);
	ck_assert_uint_eq(e.n, 2);
	t = a.f[0];
	a.f[0] = a.f[1];
	a.f[1] = t;
	ck_assert_msg(rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm), "%s", mm.what);
	drop(&a, 0);
	ck_assert(!rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	rp_frames_free(&e);
	rp_frames_free(&a);
}
END_TEST

/* ---- Frames a receiver would drop are failures whatever was expected ---- */

START_TEST(bad_frames_fail)
{
	struct rp_frames e, a;
	struct rp_mismatch mm;
	struct wire_pkt p;

	load_pair("rc_write_only", &e, &a);
	ck_assert_int_eq(wire_parse(a.f[0].data, a.f[0].len, 0, &p), WIRE_DROP_NONE);
	a.f[0].data[a.f[0].len - 1] ^= 1;		/* ICRC */
	ck_assert(!rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	ck_assert_ptr_nonnull(strstr(mm.what, "must drop"));
	memcpy(a.f[0].data, e.f[0].data, e.f[0].len);
	a.f[0].data[p.l4_off + 7] = 1;			/* a wrong UDP checksum */
	reseal(a.f[0].data, a.f[0].len);
	ck_assert(!rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	ck_assert_ptr_nonnull(strstr(mm.what, "UDP checksum"));
	memcpy(a.f[0].data, e.f[0].data, e.f[0].len);
	a.f[0].data[p.l3_off + 1] |= WIRE_ECN_CE;	/* CE on a sent frame */
	reseal(a.f[0].data, a.f[0].len);
	ck_assert(!rp_compare_frames(&e, &a, FX_TIMING_WINDOW, &mm));
	ck_assert_ptr_nonnull(strstr(mm.what, "CE"));
	rp_frames_free(&e);
	rp_frames_free(&a);
}
END_TEST

Suite *replay_compare_suite(void);

Suite *replay_compare_suite(void)
{
	Suite *s = suite_create("replay_compare");
	TCase *tc = tcase_create("rules");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, every_bit, 0, sizeof(bit_fixtures) / sizeof(bit_fixtures[0]));
	tcase_add_loop_test(tc, ack_coalescing_window, 0, 12);
	tcase_add_loop_test(tc, ack_coalescing_stream, 0, 12);
	tcase_add_test(tc, retransmit_not_early);
	tcase_add_test(tc, streams_independent);
	tcase_add_test(tc, bad_frames_fail);
	suite_add_tcase(s, tc);
	return s;
}
