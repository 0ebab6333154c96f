// SPDX-License-Identifier: MIT
/* The bounded soak CI runs: mixed operations over a lossy link, checked against a model. */
#include <check.h>
#include <stdio.h>

#include "engine_soak.h"
#include "suites.h"

static void report(const struct soak_cfg *c, const struct soak_result *r)
{
	printf("soak seed %llu loss %.2f: %s, %llu ops, %llu bytes, %llu frames, %llu retransmits, "
	       "%llu timeouts, %llu seq NAKs, %llu RNR NAKs, %llu lost, %llu corrupted, "
	       "%llu rate cuts, %u QPs out of retries, digest %016llx%s%s\n",
	       (unsigned long long)c->seed, c->loss, r->ok ? "ok" : "FAILED",
	       (unsigned long long)r->ops_done, (unsigned long long)r->bytes,
	       (unsigned long long)r->frames, (unsigned long long)r->retransmits, (unsigned long long)r->timeouts,
	       (unsigned long long)r->seq_naks, (unsigned long long)r->rnr_naks,
	       (unsigned long long)r->lost, (unsigned long long)r->corrupted,
	       (unsigned long long)r->rate_cuts, r->pairs_retry_exhausted, (unsigned long long)r->digest, r->ok ? "" : ": ", r->error);
}

/* Runs @c twice and checks both runs; the first one's result in *@out when set. */
static void run_checked(const struct soak_cfg *c, struct soak_result *out)
{
	struct soak_result r, again;

	soak_run(c, &r);
	report(c, &r);
	ck_assert_msg(r.ok, "seed %llu: %s", (unsigned long long)c->seed, r.error);
	ck_assert_uint_eq(r.ops_done + r.ops_flushed, (uint64_t)(c->pairs + c->loop_pairs) * c->ops);
	if (soak_loss_rate(c) < 0.1)
		ck_assert_uint_eq(r.pairs_retry_exhausted, 0);
	if (c->loss > 0)
		ck_assert_uint_gt(r.retransmits, 0);
	/* Same seed, same run. */
	soak_run(c, &again);
	ck_assert(again.ok);
	ck_assert_uint_eq(again.digest, r.digest);
	ck_assert_uint_eq(again.virtual_ns, r.virtual_ns);
	ck_assert_uint_eq(again.retransmits, r.retransmits);
	if (out)
		*out = r;
}

START_TEST(soak_mixed)
{
	struct soak_cfg c;

	soak_defaults(&c, 1000 + (uint64_t)_i);
	run_checked(&c, NULL);
}
END_TEST

START_TEST(soak_lossless)
{
	struct soak_cfg c;

	soak_defaults(&c, 77);
	c.loss = c.dup = c.reorder = c.corrupt = 0;
	run_checked(&c, NULL);
}
END_TEST

START_TEST(soak_heavy_loss)
{
	struct soak_cfg c;

	soak_defaults(&c, 2000 + (uint64_t)_i);
	c.loss = 0.20;
	c.reorder = 0.05;
	c.dup = 0.05;
	c.corrupt = 0.02;
	c.ops = 300;
	run_checked(&c, NULL);
}
END_TEST

/*
 * Payloads by reference (port.tx_ext): the same checks, and the link copies
 * a payload in wherever a fault needs the frame's bytes.
 */
START_TEST(soak_zero_copy)
{
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 3000 + (uint64_t)_i);
	c.zero_copy = true;
	run_checked(&c, &r);
	ck_assert_uint_gt(r.by_reference, 0);
	ck_assert_uint_gt(r.linearized, 0);
}
END_TEST

/*
 * One fault alone on an otherwise clean link (what `uroce-engine-soak
 * --reorder P` and the others set), three seeds each: every byte and
 * completion checked, the fault seen on the link, the same run twice.
 */
static const struct soak_fault {
	const char	*name;
	double		loss, reorder, dup, corrupt, ce_mark;
	unsigned	burst;
	bool		dcqcn;
} soak_faults[] = {
	{ "reorder 10 %", .reorder = 0.10 },
	{ "duplicate 10 %", .dup = 0.10 },
	{ "corrupt 5 %", .corrupt = 0.05 },
	{ "CE mark 20 %", .ce_mark = 0.20 },
	{ "CE mark 20 %, DCQCN", .ce_mark = 0.20, .dcqcn = true },
	{ "CE mark 5 %, loss 2 %, DCQCN", .ce_mark = 0.05, .loss = 0.02, .dcqcn = true },
	{ "bursts of 8 lost at 1 %", .loss = 0.01, .burst = 8 },
	{ "all at once", .loss = 0.02, .burst = 3, .reorder = 0.05, .dup = 0.05,
	  .corrupt = 0.02, .ce_mark = 0.05 },
};

#define SOAK_FAULT_SEEDS 3

START_TEST(soak_one_fault)
{
	const struct soak_fault *f = &soak_faults[_i / SOAK_FAULT_SEEDS];
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 4000 + (uint64_t)_i);
	c.loss = f->loss;
	c.burst = f->burst;
	c.reorder = f->reorder;
	c.dup = f->dup;
	c.corrupt = f->corrupt;
	c.ce_mark = f->ce_mark;
	c.dcqcn = f->dcqcn;
	printf("%s: ", f->name);
	run_checked(&c, &r);
	ck_assert_uint_eq(r.reordered > 0, c.reorder > 0);
	ck_assert_uint_eq(r.duplicated > 0, c.dup > 0);
	ck_assert_uint_eq(r.corrupted > 0, c.corrupt > 0);
	ck_assert_uint_eq(r.ce_marked > 0, c.ce_mark > 0);
	/* A CE mark is answered by a CNP (at most one per QP per interval), and the CNP arrives (twice if duplicated). */
	ck_assert_uint_eq(r.cnps_tx > 0, c.ce_mark > 0);
	ck_assert_uint_le(r.cnps_rx, r.cnps_tx + (c.dup > 0 ? r.duplicated : 0));
	if (c.ce_mark > 0 && !c.loss && !c.corrupt)
		ck_assert_uint_eq(r.cnps_rx, r.cnps_tx);
	if (c.burst)
		ck_assert_uint_ge(r.lost, c.burst);
	/* DCQCN: the CNPs cut the rates, and the rates came back up (the run converged). */
	ck_assert_uint_eq(r.rate_cuts > 0, c.dcqcn);
	ck_assert_uint_eq(r.rate_increases > 0, c.dcqcn);
	ck_assert_uint_le(r.rate_cuts, r.cnps_rx);
	if (c.dcqcn) {
		printf("  every QP back at %llu Mbit/s %llu us after the last completion\n",
		       (unsigned long long)r.rate_mbps_settled,
		       (unsigned long long)r.settle_ns / 1000);
		ck_assert_uint_eq(r.rate_mbps_settled, 100000);
	}
}
END_TEST

/*
 * Selective repeat on both engines (`uroce-engine-soak --selective-repeat`)
 * from 1 % to 20 % loss with reordering, duplication and corruption: the
 * model's checks (every byte, every completion once and in order), the same
 * run twice, and the responders placed packets ahead of ePSN and the
 * requesters resent on selective NAKs.
 */
static const double sr_loss[] = { 0.01, 0.05, 0.10, 0.20 };

START_TEST(soak_selective_repeat)
{
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 6000 + (uint64_t)_i);
	c.loss = sr_loss[_i % 4];
	c.reorder = 0.05;
	c.dup = 0.05;
	c.corrupt = 0.02;
	c.selective_repeat = true;
	if (c.loss >= 0.2)
		c.ops = 300;
	printf("selective repeat: ");
	run_checked(&c, &r);
	printf("  %llu selective NAKs, %llu selective resends, %llu placed ahead\n",
	       (unsigned long long)r.selective_naks, (unsigned long long)r.selective_resends,
	       (unsigned long long)r.selective_placed);
	ck_assert_uint_gt(r.selective_naks, 0);
	ck_assert_uint_gt(r.selective_resends, 0);
	ck_assert_uint_gt(r.selective_placed, 0);
}
END_TEST

/* The mix over XRC: every pair an initiator, a target and an XRC SRQ, under the default faults. */
START_TEST(soak_xrc)
{
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 5000 + (uint64_t)_i);
	c.xrc = true;
	run_checked(&c, &r);
	ck_assert_uint_gt(r.retransmits, 0);
}
END_TEST

/* IBA 1.5 ATOMIC WRITEs among the atomics, inline or not, under the default faults (the last seed in ODP regions): the CASes and FAAs after each see its value. */
START_TEST(soak_atomic_write)
{
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 6000 + (uint64_t)_i);
	c.atomic_write = true;
	c.odp = _i == 2;
	run_checked(&c, &r);
	ck_assert_uint_gt(r.atomic_writes, 0);
	ck_assert_uint_gt(r.retransmits, 0);
}
END_TEST

/* Every region on-demand paging: payload copies through the kernel, atomics on populated pages. */
START_TEST(soak_odp)
{
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 7000 + (uint64_t)_i);
	c.odp = true;
	run_checked(&c, &r);
	ck_assert_uint_gt(r.retransmits, 0);
}
END_TEST

/* A budget of 16 PSNs for 9 pairs of 8 operations in flight: QPs wait their turn under every fault. */
START_TEST(soak_small_inflight_budget)
{
	struct soak_cfg c;
	struct soak_result r;

	soak_defaults(&c, 8000 + (uint64_t)_i);
	c.inflight = 16;
	c.selective_repeat = _i == 2;
	run_checked(&c, &r);
	ck_assert_uint_gt(r.inflight_waits, 0);
}
END_TEST

Suite *rc_soak_suite(void)
{
	Suite *s = suite_create("rc_soak");
	TCase *tc = tcase_create("soak");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, soak_lossless);
	tcase_add_loop_test(tc, soak_mixed, 0, 4);
	tcase_add_loop_test(tc, soak_heavy_loss, 0, 3);
	tcase_add_loop_test(tc, soak_zero_copy, 0, 3);
	tcase_add_loop_test(tc, soak_selective_repeat, 0, 8);
	tcase_add_loop_test(tc, soak_one_fault, 0,
			    (int)(sizeof(soak_faults) / sizeof(soak_faults[0])) * SOAK_FAULT_SEEDS);
	tcase_add_loop_test(tc, soak_xrc, 0, 3);
	tcase_add_loop_test(tc, soak_atomic_write, 0, 3);
	tcase_add_loop_test(tc, soak_odp, 0, 2);
	tcase_add_loop_test(tc, soak_small_inflight_budget, 0, 3);
	suite_add_tcase(s, tc);
	return s;
}
