// SPDX-License-Identifier: MIT
/*
 * Loss recovery on the virtual clock: the RTT estimate, tail-loss probes,
 * early retransmission that leaves retry_cnt alone, the local ACK timeout as
 * the limit for a dead peer, the send window's restart after a loss, and a
 * read asked again only for the responses it lost.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS		20000000000ull
#define OP(x)		(WIRE_OPC_RC | WIRE_OP_##x)
#define TIMEOUT_NS(t)	(4096ull << (t))

static int write_to_peer(struct h_pair *p, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = h_sge(p, 0, off, len);

	return h_post_send(p->qp[0], IBV_WR_RDMA_WRITE, wr_id, &s, 1,
			   (uintptr_t)p->buf[1] + off, rc_mr_rkey(p->mr[1]), IBV_SEND_SIGNALED);
}

static void expect_wc(struct h_pair *p, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	ck_assert_int_eq(h_wait_cq(&p->e, p->e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_msg(wc.wr_id == wr_id && wc.status == st,
		      "completion %llu status %d, expected %llu status %d",
		      (unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id, st);
}

/* @n writes of @len bytes one after the other, each checked. */
static void writes(struct h_pair *p, unsigned n, uint32_t len)
{
	for (unsigned i = 0; i < n; i++) {
		h_fill(p->buf[0], len, i + 100);
		ck_assert_int_eq(write_to_peer(p, 1000 + i, 0, len), 0);
		expect_wc(p, 1000 + i, IBV_WC_SUCCESS);
		ck_assert_int_eq(memcmp(p->buf[0], p->buf[1], len), 0);
	}
}

/*
 * A constant one-way delay: SRTT converges to twice it, RTTVAR to nothing,
 * the RTO to the larger of the estimate and the floor (loop 0: 20 us each
 * way, under the 100 us floor; loop 1: 150 us, above it).
 */
START_TEST(rtt_converges_to_link_delay)
{
	uint64_t delay = _i ? 150000 : 20000, rtt = 2 * delay;
	struct h_opts o = { .delay_ns = delay };
	struct h_pair p;
	struct rc_counters c;

	h_pair_init(&p, &o, NULL, NULL);
	writes(&p, 40, 3000);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_ge(c.rtt_samples, 40);
	ck_assert_msg(c.srtt_ns >= rtt && c.srtt_ns <= rtt + rtt / 50,
		      "srtt %llu ns, link round trip %llu ns", (unsigned long long)c.srtt_ns,
		      (unsigned long long)rtt);
	if (_i)
		ck_assert_uint_le(c.rto_ns, rtt + rtt / 10);
	else
		ck_assert_uint_eq(c.rto_ns, 100000);
	ck_assert_uint_ge(c.rto_ns, c.srtt_ns);
	ck_assert_uint_eq(c.retransmits, 0);
	ck_assert_uint_eq(c.tail_probes, 0);
	ck_assert_uint_eq(c.early_retransmits, 0);
	h_pair_fini(&p);
}
END_TEST

/*
 * A lost tail after the RTT is known, local ACK timeout 14 (67 ms): the probe
 * answers within a few round trips.  Loop 0: the last packet lost (the probe
 * is it, executed); 1: the last two (the probe draws a sequence NAK); 2: the
 * ACK of the last (the probe is a duplicate, acknowledged again); 3: the last
 * packet without probes and early retransmission: the local ACK timeout.
 */
START_TEST(tail_loss_probed)
{
	/* The write's 8 packets are side 0's frames 1 to 8 from here on. */
	static const struct { int from; unsigned opcode, nth, count; } drop[] = {
		{ 0, 0xffff, 8, 1 },
		{ 0, 0xffff, 7, 2 },
		{ 1, OP(ACKNOWLEDGE), 1, 1 },
		{ 0, 0xffff, 8, 1 },
	};
	bool probe = _i != 3;
	struct h_opts o = { .delay_ns = 10000, .no_tail_probe = !probe, .no_adaptive_rto = !probe };
	struct h_conn conn = { .timeout = 14 };
	struct h_pair p;
	struct h_cap cap;
	struct rc_counters c;
	uint64_t t0;

	h_pair_init(&p, &o, &conn, NULL);
	writes(&p, 4, 8192);
	h_capture(&p.e, &cap);
	h_drop(&cap, drop[_i].from, drop[_i].opcode, drop[_i].nth, drop[_i].count);
	h_fill(p.buf[0], 8192, 7);
	t0 = p.e.now;
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 8192), 0);
	expect_wc(&p, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 8192), 0);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_eq(c.tail_probes, probe);
	ck_assert_uint_eq(c.timeouts, !probe);
	ck_assert_uint_eq(c.early_retransmits, 0);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).seq_naks_tx, _i == 1 ? 1 : 0);
	/* Sent, 2 SRTT without an answer, the probe's round trip (and the NAK's resend). */
	if (probe)
		ck_assert_msg(p.e.now - t0 < TIMEOUT_NS(14) / 100, "took %llu ns",
			      (unsigned long long)(p.e.now - t0));
	else
		ck_assert_uint_ge(p.e.now - t0, TIMEOUT_NS(14));
	h_pair_fini(&p);
}
END_TEST

/* Drops the first @times transmissions of PSN @psn from side 0. */
struct psn_drop {
	uint32_t	psn;
	unsigned	times, seen;
};

static bool drop_psn(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct psn_drop *d = arg;
	struct wire_pkt pkt;

	if (from != 0 || wire_parse(frame, len, 0, &pkt) || pkt.psn != d->psn)
		return false;
	return d->seen++ < d->times;
}

/*
 * A packet lost, then its resend after the NAK lost too: the responder stays
 * quiet (one NAK per gap), so only a timer helps.  The early one resends
 * within a few RTOs and leaves retry_cnt alone (retry_cnt 1 here: one more
 * counted retry would be the last).
 */
START_TEST(lost_resend_recovered_early)
{
	struct h_opts o = { .delay_ns = 10000 };
	struct h_conn conn = { .timeout = 14, .retry_set = true, .retry_cnt = 1, .rnr_retry = 7 };
	struct h_pair p;
	struct psn_drop d = { .times = 2 };
	struct rc_counters c;
	uint64_t t0;

	h_pair_init(&p, &o, &conn, NULL);
	writes(&p, 4, 8192);
	/* 4 writes of 8 packets from the initial PSN 0: the third packet of the next. */
	d.psn = 4 * 8 + 2;
	port_sim_set_filter(p.e.link, drop_psn, &d);
	h_fill(p.buf[0], 20000, 9);
	t0 = p.e.now;
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 20000), 0);
	expect_wc(&p, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 20000), 0);
	ck_assert_uint_eq(d.seen, 3);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_eq(c.seq_naks_rx, 1);
	ck_assert_uint_ge(c.early_retransmits, 1);
	ck_assert_uint_eq(c.timeouts, 0);
	ck_assert_uint_lt(p.e.now - t0, 10 * 100000);
	/* retry_cnt is whole: a dead peer now still gets its two timeouts. */
	port_sim_set_filter(p.e.link, NULL, NULL);
	{
		struct h_cap cap;

		h_capture(&p.e, &cap);
		cap.drop_all[0] = true;
		t0 = p.e.now;
		ck_assert_int_eq(write_to_peer(&p, 2, 0, 64), 0);
		expect_wc(&p, 2, IBV_WC_RETRY_EXC_ERR);
		ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, 2);
		ck_assert_uint_ge(p.e.now - t0, 2 * TIMEOUT_NS(14));
	}
	h_pair_fini(&p);
}
END_TEST

/*
 * A dead peer after the RTT is known: early retransmissions back off, and
 * IBV_WC_RETRY_EXC_ERR comes after about timeout x (retry_cnt + 1) all the
 * same.  Loop over retry_cnt 0, 3 and 7 with timeout 14 (67 ms), and retry_cnt
 * 7 with timeout 8 (1 ms, near the RTO floor).
 */
START_TEST(dead_peer_bound)
{
	static const uint8_t retry[] = { 0, 3, 7, 7 }, timeout[] = { 14, 14, 14, 8 };
	struct h_opts o = { .delay_ns = 10000 };
	struct h_conn conn = { .timeout = timeout[_i], .retry_set = true, .retry_cnt = retry[_i],
			       .rnr_retry = 7 };
	uint64_t bound = TIMEOUT_NS(timeout[_i]) * (retry[_i] + 1u), t0, took;
	struct h_pair p;
	struct h_cap cap;
	struct rc_counters c;

	h_pair_init(&p, &o, &conn, NULL);
	writes(&p, 4, 8192);
	h_capture(&p.e, &cap);
	cap.drop_all[0] = true;
	t0 = p.e.now;
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 8192), 0);
	expect_wc(&p, 1, IBV_WC_RETRY_EXC_ERR);
	took = p.e.now - t0;
	ck_assert_msg(took >= bound * 9 / 10 && took <= bound * 3 / 2,
		      "error after %llu ns, bound %llu ns", (unsigned long long)took,
		      (unsigned long long)bound);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_eq(c.timeouts, retry[_i] + 1u);
	ck_assert_uint_ge(c.early_retransmits, 1);
	ck_assert_int_eq(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	h_pair_fini(&p);
}
END_TEST

/*
 * After a loss the window restarts at 16 PSNs and grows back: between the
 * NAK's arrival and the first ACK of the resend, at most 16 packets go out;
 * it grows fast to half the window the loss came at (128), then by one PSN
 * per window: a later transfer of 200 PSNs takes it one or two past 128.
 */
START_TEST(window_restarts_after_loss)
{
	struct h_opts o = { .delay_ns = 20000 };
	struct h_pair p;
	struct h_cap cap;
	const struct h_frame *nak = NULL;
	unsigned burst = 0;
	struct rc_counters c;

	h_pair_init(&p, &o, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 0, OP(WRITE_MIDDLE), 10, 1);
	h_fill(p.buf[0], 200 * 1024, 3);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 200 * 1024), 0);
	expect_wc(&p, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 200 * 1024), 0);
	for (unsigned i = 0; i < cap.n && !nak; i++)
		if (cap.f[i].from == 1 && cap.f[i].opcode == OP(ACKNOWLEDGE) &&
		    (cap.f[i].syndrome & WIRE_AETH_TYPE_MASK) == WIRE_AETH_NAK)
			nak = &cap.f[i];
	ck_assert_ptr_nonnull(nak);
	/* The resend starts when the NAK arrives; its first ACK is back one round trip later. */
	for (unsigned i = 0; i < cap.n; i++)
		burst += cap.f[i].from == 0 && cap.f[i].t >= nak->t + o.delay_ns &&
			 cap.f[i].t < nak->t + 3 * o.delay_ns;
	ck_assert_uint_ge(burst, 1);
	ck_assert_uint_le(burst, 16);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_eq(c.window_restarts, 1);
	ck_assert_uint_eq(c.send_window, 128);
	ck_assert_uint_eq(c.timeouts, 0);
	ck_assert_int_eq(write_to_peer(&p, 2, 0, 200 * 1024), 0);
	expect_wc(&p, 2, IBV_WC_SUCCESS);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_ge(c.send_window, 129);
	ck_assert_uint_le(c.send_window, 130);
	ck_assert_uint_eq(c.window_restarts, 1);
	h_pair_fini(&p);
}
END_TEST

/*
 * The ACKs slow down after the RTT is known: the early timer fires before the
 * ACK of a 64-packet write can arrive (after the tail-loss probe).  It
 * resends a small window only, and once the late ACK covers the write
 * nothing of it is sent again.
 */
START_TEST(spurious_early_retransmit_bounded)
{
	struct h_opts o = { .delay_ns = 10000 };
	struct port_sim_faults slow = { .delay_ns = 150000 };
	struct h_pair p;
	struct rc_counters before, c;

	h_pair_init(&p, &o, NULL, NULL);
	writes(&p, 4, 8192);
	before = h_qp_counters(p.qp[0]);
	port_sim_set_faults(p.e.link, 1, &slow);
	h_fill(p.buf[0], 64 * 1024, 4);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 64 * 1024), 0);
	expect_wc(&p, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 64 * 1024), 0);
	c = h_qp_counters(p.qp[0]);
	ck_assert_uint_ge(c.early_retransmits - before.early_retransmits, 1);
	ck_assert_uint_eq(c.tail_probes - before.tail_probes, 1);
	ck_assert_uint_le(c.retransmits - before.retransmits, 16 + 1);
	ck_assert_uint_eq(c.timeouts, 0);
	h_pair_fini(&p);
}
END_TEST

struct reorder_run {
	uint64_t	frames;		/* both directions */
	uint64_t	reordered, retransmits, seq_naks, stale_naks;
	uint64_t	duplicates;	/* requests the responder had already */
};

#define REORDER_WRITES	64
#define REORDER_DEPTH	8
#define REORDER_LEN	(32 * 1024)

/*
 * 64 writes of 32 KiB, 8 in flight, over a link of 10 us each way where a
 * fraction @reorder of the frames in each direction is held back @hold_ns:
 * every byte checked at its completion, the frames both ends sent counted.
 */
static struct reorder_run reordered_writes(double reorder, uint64_t hold_ns)
{
	struct h_opts o = { .delay_ns = 10000, .seed = 7 };
	struct port_sim_faults f = { .reorder = reorder, .reorder_ns = hold_ns, .delay_ns = 10000 };
	struct h_pair p;
	struct reorder_run r = { 0 };
	struct rc_counters c;

	h_pair_init(&p, &o, NULL, NULL);
	port_sim_set_faults(p.e.link, 0, &f);
	port_sim_set_faults(p.e.link, 1, &f);
	for (unsigned i = 0; i < REORDER_WRITES + REORDER_DEPTH; i++) {
		size_t off = (size_t)(i % REORDER_DEPTH) * REORDER_LEN;

		if (i >= REORDER_DEPTH) {
			expect_wc(&p, i - REORDER_DEPTH, IBV_WC_SUCCESS);
			ck_assert_int_eq(memcmp(p.buf[0] + off, p.buf[1] + off, REORDER_LEN), 0);
		}
		if (i >= REORDER_WRITES)
			continue;
		h_fill(p.buf[0] + off, REORDER_LEN, i);
		ck_assert_int_eq(write_to_peer(&p, i, off, REORDER_LEN), 0);
	}
	for (int s = 0; s < 2; s++) {
		struct port_sim_stats st;

		port_sim_get_stats(p.e.link, s, &st);
		r.frames += st.sent;
		r.reordered += st.reordered;
	}
	c = h_qp_counters(p.qp[0]);
	r.retransmits = c.retransmits;
	r.seq_naks = c.seq_naks_rx;
	r.stale_naks = c.stale_naks;
	r.duplicates = h_qp_counters(p.qp[1]).duplicates;
	printf("reorder %.2f held %llu ns: %llu frames, %llu reordered, %llu retransmits, "
	       "%llu sequence NAKs (%llu stale), %llu duplicates\n", reorder,
	       (unsigned long long)hold_ns, (unsigned long long)r.frames,
	       (unsigned long long)r.reordered, (unsigned long long)r.retransmits,
	       (unsigned long long)r.seq_naks, (unsigned long long)r.stale_naks,
	       (unsigned long long)r.duplicates);
	h_pair_fini(&p);
	return r;
}

/*
 * Reordering alone, no loss.  Go-Back-N loses what overtook the held frame
 * (the responder takes requests only in order), so each event costs about
 * the window in flight once; it must not cost it twice.  Loop 0: held 5 us,
 * shorter than the 20 us round trip, so the held frame arrives before its
 * resend and the frames behind it draw a second NAK at a PSN already resent
 * (stale: ignored).  Without that rule the responder saw 275 and 1620
 * duplicates, 3644 and 6618 frames (1 %, 10 %).  Loop 1: held 50 us, the
 * resend wins.
 */
START_TEST(reorder_no_storm)
{
	static const uint64_t hold_ns[] = { 5000, 50000 };
	struct reorder_run clean = reordered_writes(0, 0);
	struct reorder_run one = reordered_writes(0.01, hold_ns[_i]);
	struct reorder_run ten = reordered_writes(0.10, hold_ns[_i]);

	ck_assert_uint_eq(clean.retransmits, 0);
	ck_assert_uint_gt(ten.reordered, 0);
	ck_assert_uint_le(one.frames, clean.frames * 17 / 10);
	ck_assert_uint_le(ten.frames, clean.frames * 3);
	if (hold_ns[_i] < 20000) {
		ck_assert_uint_gt(one.stale_naks + ten.stale_naks, 0);
		ck_assert_uint_le(one.duplicates, one.reordered);
		ck_assert_uint_le(ten.duplicates, ten.reordered);
	}
}
END_TEST

/* Reads @reads blocks of @len bytes from side 1 to side 0 (wr_ids 10 on), all in flight. */
static void read_blocks(struct h_pair *p, unsigned reads, unsigned len)
{
	for (unsigned i = 0; i < reads; i++) {
		struct ibv_sge sg = h_sge(p, 0, i * len, len);

		ck_assert_int_eq(h_post_send(p->qp[0], IBV_WR_RDMA_READ, 10 + i, &sg, 1,
					     (uintptr_t)p->buf[1] + i * len, rc_mr_rkey(p->mr[1]),
					     IBV_SEND_SIGNALED), 0);
	}
	for (unsigned i = 0; i < reads; i++)
		expect_wc(p, 10 + i, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p->buf[0], p->buf[1], reads * len), 0);
}

/*
 * Four 8 KiB reads in a row (8 responses each at PMTU 1024), the third
 * response of the first lost: the later reads' responses are placed as
 * they come, and only the first read is asked again, for its last six
 * packets, not every read after it (as Go-Back-N would).  Completions stay
 * in order, every byte lands; loop 1 loses the first read's last response,
 * a tail the next read's responses reveal.
 */
START_TEST(read_loss_asks_only_what_is_missing)
{
	const unsigned nth = _i ? 8 : 3, reads = 4, len = 8192;
	struct h_opts o = { .delay_ns = 10000 };
	struct h_conn conn = { .timeout = 14 };
	struct rc_counters req, resp;
	struct h_pair p;
	struct h_cap cap;

	h_pair_init(&p, &o, &conn, NULL);
	for (unsigned i = 0; i < reads; i++)
		h_fill(p.buf[1] + i * len, len, 50 + i);
	memset(p.buf[0], 0, reads * len);
	h_capture(&p.e, &cap);
	h_drop(&cap, 1, 0xffff, nth, 1);
	read_blocks(&p, reads, len);
	req = h_qp_counters(p.qp[0]);
	resp = h_qp_counters(p.qp[1]);
	ck_assert_uint_eq(req.rereads, 1);
	ck_assert_uint_ge(req.reads_ahead, 1);
	ck_assert_uint_eq(req.retransmits, 1);
	ck_assert_uint_eq(resp.duplicates, 1);
	/* 32 responses, one lost, and the rest of the first read once more. */
	ck_assert_uint_eq(resp.tx_packets, reads * 8 + 8 - (nth - 1));
	h_pair_fini(&p);
}
END_TEST

/* Drops the @nth transmission (1-based) of PSN @psn from side @from, for each rule. */
struct psn_rules {
	unsigned	n;
	struct { int from; uint32_t psn; unsigned nth, seen; } r[3];
};

static bool drop_psn_rules(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct psn_rules *d = arg;
	struct wire_pkt pkt;
	bool drop = false;

	if (wire_parse(frame, len, 0, &pkt))
		return false;
	for (unsigned i = 0; i < d->n; i++)
		if (d->r[i].from == from && d->r[i].psn == pkt.psn && ++d->r[i].seen == d->r[i].nth)
			drop = true;
	return drop;
}

/*
 * Four 8 KiB reads (PSNs 8i..8i+7), each resend of a read's missing
 * responses lost or needed again is found by the order the responder
 * answers in, never by a timer:
 * loop 0: the first read loses its third response and the second its
 * fourth; the second is asked again at once, not after the first completes.
 * Loop 1: the first read's resend loses its first answer: the resend's next
 * answer, coming after responses of later reads, shows it.  Loop 2: the
 * first read's resend request is lost: the answer to the second read's
 * later resend shows it.  Every byte lands, completions stay in order.
 */
START_TEST(read_resends_without_timer)
{
	static const struct psn_rules rules[] = {
		{ 2, { { 1, 2, 1, 0 }, { 1, 11, 1, 0 } } },
		{ 2, { { 1, 2, 1, 0 }, { 1, 2, 2, 0 } } },
		{ 3, { { 1, 2, 1, 0 }, { 1, 11, 1, 0 }, { 0, 2, 1, 0 } } },
	};
	static const unsigned rereads[] = { 2, 2, 3 };
	const unsigned reads = 4, len = 8192;
	struct psn_rules d = rules[_i];
	struct h_opts o = { .delay_ns = 10000 };
	struct h_conn conn = { .timeout = 14 };
	struct rc_counters req;
	struct h_pair p;

	h_pair_init(&p, &o, &conn, NULL);
	for (unsigned i = 0; i < reads; i++)
		h_fill(p.buf[1] + i * len, len, 70 + i);
	memset(p.buf[0], 0, reads * len);
	port_sim_set_filter(p.e.link, drop_psn_rules, &d);
	read_blocks(&p, reads, len);
	port_sim_set_filter(p.e.link, NULL, NULL);
	for (unsigned i = 0; i < d.n; i++)
		ck_assert_uint_ge(d.r[i].seen, d.r[i].nth);
	req = h_qp_counters(p.qp[0]);
	ck_assert_uint_eq(req.rereads, rereads[_i]);
	ck_assert_uint_eq(req.early_retransmits, 0);
	ck_assert_uint_eq(req.tail_probes, 0);
	ck_assert_uint_eq(req.timeouts, 0);
	h_pair_fini(&p);
}
END_TEST

/* ---- The engine's in-flight budget ---- */

struct budget_watch {
	struct h_env	*e;
	uint32_t	most;		/* side 0's largest in-flight count seen */
	int		done, want;	/* successful completions on side 0 */
};

static bool budget_watch(void *arg)
{
	struct budget_watch *w = arg;
	struct rc_objects o;
	struct ibv_wc wc[16];
	int n;

	rc_engine_objects(w->e->eng[0], &o);
	if (o.inflight > w->most)
		w->most = o.inflight;
	n = rc_cq_poll(w->e->cq[0], 16, wc);
	for (int i = 0; i < n; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		w->done++;
	}
	return w->done == w->want;
}

/* 16 QPs write 8 packets each at once; the engine keeps at most its budget in flight. */
START_TEST(many_qps_stay_within_inflight_budget)
{
	enum { QPS = 16, LEN = 8192, BUDGET = 32 };
	struct h_opts o = { .delay_ns = 10000, .inflight = BUDGET };
	struct rc_qp *a[QPS], *b[QPS];
	struct budget_watch w = { .want = QPS };
	struct rc_counters c = { 0 };
	struct rc_objects ob;
	struct h_pair p;

	h_pair_init(&p, &o, NULL, NULL);
	w.e = &p.e;
	a[0] = p.qp[0];
	b[0] = p.qp[1];
	for (int i = 1; i < QPS; i++) {
		struct h_qp_opts qo = { .type = IBV_QPT_RC };

		a[i] = h_qp(&p.e, 0, &qo);
		b[i] = h_qp(&p.e, 1, &qo);
		h_connect(&p.e, a[i], 0, b[i], 1, NULL);
	}
	h_fill(p.buf[0], QPS * LEN, 7);
	for (int i = 0; i < QPS; i++) {
		struct ibv_sge sg = h_sge(&p, 0, (size_t)i * LEN, LEN);

		ck_assert_int_eq(h_post_send(a[i], IBV_WR_RDMA_WRITE, (uint64_t)i, &sg, 1,
					     (uintptr_t)p.buf[1] + (size_t)i * LEN,
					     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	}
	ck_assert(h_run_until(&p.e, budget_watch, &w, RUN_NS));
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], QPS * LEN), 0);
	ck_assert_msg(w.most == BUDGET, "at most %u PSNs in flight, budget %u", w.most, BUDGET);
	for (int i = 0; i < QPS; i++) {
		struct rc_counters q = h_qp_counters(a[i]);

		c.inflight_waits += q.inflight_waits;
		c.retransmits += q.retransmits;
	}
	ck_assert_uint_gt(c.inflight_waits, 0);
	ck_assert_uint_eq(c.retransmits, 0);
	rc_engine_objects(p.e.eng[0], &ob);
	ck_assert_uint_eq(ob.inflight, 0);
	for (int i = 1; i < QPS; i++) {
		ck_assert_int_eq(rc_qp_destroy(a[i]), 0);
		ck_assert_int_eq(rc_qp_destroy(b[i]), 0);
	}
	h_pair_fini(&p);
}
END_TEST

/* A QP that fails or is destroyed with PSNs in flight, or while it waits, gives them back. */
START_TEST(inflight_budget_released_by_error_and_destroy)
{
	struct h_opts o = { .delay_ns = 10000, .inflight = 16 };
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	struct rc_qp *a2, *b2;
	struct rc_objects ob;
	struct h_pair p;
	struct ibv_sge sg;

	h_pair_init(&p, &o, NULL, NULL);
	a2 = h_qp(&p.e, 0, &qo);
	b2 = h_qp(&p.e, 1, &qo);
	h_connect(&p.e, a2, 0, b2, 1, NULL);
	sg = h_sge(&p, 0, 0, 32768);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &sg, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_post_send(a2, IBV_WR_RDMA_WRITE, 2, &sg, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	/* One pass: the first QP fills the budget, the second waits in line. */
	rc_engine_progress(p.e.eng[0], 0);
	rc_engine_objects(p.e.eng[0], &ob);
	ck_assert_uint_eq(ob.inflight, 16);
	ck_assert_uint_eq(h_qp_counters(a2).inflight_waits, 1);
	ck_assert_int_eq(rc_qp_modify(p.qp[0], &(struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR },
				      IBV_QP_STATE), 0);
	rc_engine_objects(p.e.eng[0], &ob);
	ck_assert_uint_eq(ob.inflight, 0);
	ck_assert_int_eq(rc_qp_destroy(a2), 0);
	ck_assert_int_eq(rc_qp_destroy(b2), 0);
	h_run(&p.e, RUN_NS);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_loss_suite(void)
{
	Suite *s = suite_create("loss");
	TCase *tc = tcase_create("core");

	tcase_add_loop_test(tc, rtt_converges_to_link_delay, 0, 2);
	tcase_add_loop_test(tc, tail_loss_probed, 0, 4);
	tcase_add_test(tc, lost_resend_recovered_early);
	tcase_add_loop_test(tc, dead_peer_bound, 0, 4);
	tcase_add_test(tc, window_restarts_after_loss);
	tcase_add_test(tc, spurious_early_retransmit_bounded);
	tcase_add_loop_test(tc, reorder_no_storm, 0, 2);
	tcase_add_loop_test(tc, read_loss_asks_only_what_is_missing, 0, 2);
	tcase_add_loop_test(tc, read_resends_without_timer, 0, 3);
	tcase_add_test(tc, many_qps_stay_within_inflight_budget);
	tcase_add_test(tc, inflight_budget_released_by_error_and_destroy);
	suite_add_tcase(s, tc);
	return s;
}
