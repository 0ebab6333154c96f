// SPDX-License-Identifier: MIT
/*
 * DCQCN's reaction point on the virtual clock: a CNP cuts the rate by
 * alpha/2, alpha decays between CNPs, the timer and the byte counter raise
 * the rate back (fast recovery, additive, hyper increase), the pacer spaces
 * packets, and with DCQCN off a CNP is only counted.  Line rate 1000 Mbit/s,
 * a link without delay: every number below follows from the mlx5 defaults.
 */
#include <check.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS	20000000000ull

static void pair_init(struct h_pair *p, const struct dcqcn_cfg *cc)
{
	struct h_opts o = { .dcqcn = *cc };

	o.dcqcn.line_rate = 1000;
	h_pair_init(p, &o, NULL, NULL);
}

/* A write of @len from side 0, every frame of it CE-marked when @marked. */
static void write_once(struct h_pair *p, uint64_t wr_id, uint32_t len, bool marked)
{
	struct port_sim_faults f = { .ce_mark = marked ? 1.0 : 0 };
	struct ibv_sge s = h_sge(p, 0, 0, len);
	struct ibv_wc wc;

	port_sim_set_faults(p->e.link, 0, &f);
	h_fill(p->buf[0], len, (unsigned)wr_id);
	ck_assert_int_eq(h_post_send(p->qp[0], IBV_WR_RDMA_WRITE, wr_id, &s, 1,
				     (uintptr_t)p->buf[1], rc_mr_rkey(p->mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p->e, p->e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, wr_id);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p->buf[0], p->buf[1], len), 0);
	f.ce_mark = 0;
	port_sim_set_faults(p->e.link, 0, &f);
}

static struct rc_counters req(struct h_pair *p)
{
	return h_qp_counters(p->qp[0]);
}

/*
 * The first CNP halves the rate (alpha starts at 1023/1023); 100 us later
 * alpha has decayed 100 times by 1019/1024 and risen once by 5/1024, and the
 * second CNP cuts by half of that.
 */
START_TEST(cnp_cuts_by_half_alpha)
{
	struct dcqcn_cfg cc = { .on = true };
	struct h_pair p;
	struct rc_counters c;
	double alpha = 1, expect;
	uint64_t t1;

	pair_init(&p, &cc);
	ck_assert_uint_eq(req(&p).rate_mbps, 1000);
	write_once(&p, 1, 64, true);
	t1 = p.e.now;
	c = req(&p);
	ck_assert_uint_eq(c.cnps_rx, 1);
	ck_assert_uint_eq(c.rate_cuts, 1);
	ck_assert_uint_eq(c.rate_mbps, 500);
	ck_assert_uint_eq(c.dcqcn_alpha, 1024);
	p.e.now += 100000;
	write_once(&p, 2, 64, true);
	ck_assert_uint_eq(p.e.now - t1, 100000);
	for (int i = 0; i < 100; i++)
		alpha *= 1019.0 / 1024;
	alpha = alpha * 1019 / 1024 + 5.0 / 1024;
	expect = 500 * (1 - alpha / 2);
	c = req(&p);
	ck_assert_uint_eq(c.rate_cuts, 2);
	ck_assert_msg(c.rate_mbps >= expect - 1 && c.rate_mbps <= expect + 1,
		      "rate %llu Mbit/s after the second CNP, expected %.1f",
		      (unsigned long long)c.rate_mbps, expect);
	ck_assert_msg(c.dcqcn_alpha >= alpha * 1024 - 2 && c.dcqcn_alpha <= alpha * 1024 + 1,
		      "alpha %llu/1024, expected %.1f", (unsigned long long)c.dcqcn_alpha,
		      alpha * 1024);
	h_pair_fini(&p);
}
END_TEST

/*
 * Without traffic the timer raises the rate every 300 us: fast recovery
 * halves the way to the target (the rate before the cut), then additive
 * increases of 5 Mbit/s to the target, until within 5 Mbit/s of the line
 * rate the pacer is off: 750, 875, ... 996 and 1000 after seven events.
 */
START_TEST(timer_raises_rate)
{
	static const uint64_t after[] = { 750, 875, 937, 968, 984, 992, 1000 };
	struct dcqcn_cfg cc = { .on = true };
	struct h_pair p;
	struct rc_counters c;

	pair_init(&p, &cc);
	write_once(&p, 1, 64, true);
	ck_assert_uint_eq(req(&p).rate_mbps, 500);
	for (unsigned i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
		h_run(&p.e, 300000);
		c = req(&p);
		ck_assert_msg(c.rate_mbps == after[i], "after %u timer events: %llu Mbit/s, not %llu",
			      i + 1, (unsigned long long)c.rate_mbps, (unsigned long long)after[i]);
		ck_assert_uint_eq(c.rate_fast_recovery, 1);
		ck_assert_uint_eq(c.rate_additive, i);
	}
	/* At the line rate nothing is armed any more. */
	ck_assert_uint_eq(rc_engine_next_deadline(p.e.eng[0]), UINT64_MAX);
	h_run(&p.e, 3000000);
	c = req(&p);
	ck_assert_uint_eq(c.rate_additive, 6);
	ck_assert_uint_eq(c.rate_hyper, 0);
	h_pair_fini(&p);
}
END_TEST

/*
 * With the timer out of the way (10 s), the byte counter alone: a 64 KiB
 * write in 64 frames of 1098 and 1082 bytes passes 32767 bytes at the 31st
 * (fast recovery: 750) and 65534 at the 61st (additive: 875).  The pacer
 * spaces it at those rates: 31 frames at 500 Mbit/s, 30 at 750, 3 at 875,
 * about 0.9 ms where the unpaced write takes no time on this link.
 */
START_TEST(byte_counter_raises_rate)
{
	struct dcqcn_cfg cc = { .on = true, .rpg_time_reset = 10000000 };
	struct h_pair p;
	struct rc_counters c;
	uint64_t t0;

	pair_init(&p, &cc);
	write_once(&p, 1, 64, true);
	t0 = p.e.now;
	write_once(&p, 2, 64 * 1024, false);
	c = req(&p);
	ck_assert_uint_eq(c.rate_cuts, 1);
	ck_assert_uint_eq(c.rate_fast_recovery, 1);
	ck_assert_uint_eq(c.rate_additive, 1);
	ck_assert_uint_eq(c.rate_mbps, 875);
	ck_assert_uint_gt(c.rate_paced, 0);
	ck_assert_uint_eq(c.retransmits, 0);
	ck_assert_msg(p.e.now - t0 >= 850000 && p.e.now - t0 <= 950000, "the write took %llu ns",
		      (unsigned long long)(p.e.now - t0));
	h_pair_fini(&p);
}
END_TEST

/*
 * A short timer (10 us) and byte counter (2000 bytes) under a long write:
 * both counters pass rpg_threshold, and hyper increase adds 50 Mbit/s per
 * stage past it; the rate is back at the line rate by the end of the write.
 */
START_TEST(hyper_increase)
{
	struct dcqcn_cfg cc = { .on = true, .rpg_time_reset = 10, .rpg_byte_reset = 2000 };
	struct h_pair p;
	struct rc_counters c;

	pair_init(&p, &cc);
	write_once(&p, 1, 64, true);
	write_once(&p, 2, H_BUF_LEN, false);
	c = req(&p);
	ck_assert_uint_ge(c.rate_fast_recovery, 1);
	ck_assert_uint_ge(c.rate_additive, 1);
	ck_assert_uint_ge(c.rate_hyper, 1);
	ck_assert_uint_eq(c.rate_mbps, 1000);
	h_pair_fini(&p);
}
END_TEST

struct ecn_seen {
	unsigned	frames[2];	/* RoCE frames from each end */
	unsigned	ect0[2];	/* of them, ECN ECT(0) */
};

static bool count_ecn(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct ecn_seen *e = arg;
	struct wire_pkt pkt;

	if (wire_parse(frame, len, 0, &pkt) == WIRE_DROP_NONE) {
		e->frames[from]++;
		e->ect0[from] += (pkt.tclass & WIRE_ECN_MASK) == WIRE_ECN_ECT0;
	}
	return false;
}

/*
 * With DCQCN on every frame (requests and ACKs) is ECN-capable, ECT(0), so a
 * marking switch can signal congestion; off, the traffic class is sent as given.
 */
START_TEST(ecn_capable_when_on)
{
	for (int on = 0; on <= 1; on++) {
		struct dcqcn_cfg cc = { .on = on };
		struct ecn_seen e;
		struct h_pair p;

		memset(&e, 0, sizeof(e));
		pair_init(&p, &cc);
		port_sim_set_filter(p.e.link, count_ecn, &e);
		write_once(&p, 1, 16384, false);
		ck_assert_uint_ge(e.frames[0], 4);
		ck_assert_uint_ge(e.frames[1], 1);
		for (int end = 0; end < 2; end++)
			ck_assert_uint_eq(e.ect0[end], on ? e.frames[end] : 0);
		h_pair_fini(&p);
	}
}
END_TEST

/* DCQCN off (the default): the CNP is counted, the rate stays, nothing is paced. */
START_TEST(off_counts_only)
{
	struct dcqcn_cfg cc = { .on = false };
	struct h_pair p;
	struct rc_counters c;

	pair_init(&p, &cc);
	write_once(&p, 1, 64, true);
	write_once(&p, 2, 64 * 1024, false);
	c = req(&p);
	ck_assert_uint_eq(c.cnps_rx, 1);
	ck_assert_uint_eq(c.rate_cuts, 0);
	ck_assert_uint_eq(c.rate_paced, 0);
	ck_assert_uint_eq(c.rate_mbps, 0);
	ck_assert_uint_eq(c.dcqcn_alpha, 0);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_dcqcn_suite(void)
{
	Suite *s = suite_create("rc_dcqcn");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, cnp_cuts_by_half_alpha);
	tcase_add_test(tc, timer_raises_rate);
	tcase_add_test(tc, byte_counter_raises_rate);
	tcase_add_test(tc, hyper_increase);
	tcase_add_test(tc, off_counts_only);
	tcase_add_test(tc, ecn_capable_when_on);
	suite_add_tcase(s, tc);
	return s;
}
