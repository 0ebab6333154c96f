// SPDX-License-Identifier: MIT
/* A REQ or SIDR_REQ that comes just before its listener: kept for CM_LISTEN_GRACE_MS, then taken or answered. */
#include <check.h>
#include <string.h>

#include "cm_env.h"
#include "suites.h"

#define GRACE_NS	(CM_LISTEN_GRACE_MS * 1000000ull)
#define UD_SEND		(WIRE_OPC_UD | WIRE_OP_SEND_ONLY)

static void make(struct wire_cm_mad *m, bool sidr, uint32_t id)
{
	if (sidr)
		cm_env_sidr_req(m, id);
	else
		cm_env_req(m, id);
}

/*
 * perftest -R's server listens again right after its first connection; its
 * client's REQ may come first.  It is kept, not answered, and taken when the
 * listener comes within the grace: one event, no REJ.
 */
START_TEST(test_listener_comes_within_grace)
{
	bool sidr = _i;
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;
	struct h_cap cap;

	cm_env_init(&c, false, true);
	h_capture(&c.e, &cap);
	make(&m, sidr, 0x4001);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	cm_env_advance(&c, GRACE_NS / 2);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.parked, 1);
	ck_assert_uint_eq(n.unclaimed + n.rej_tx + n.not_ours, 0);
	ck_assert_uint_eq(h_cap_count(&cap, 1, UD_SEND), 0);

	cm_env_listen(&c);
	cm_env_advance(&c, 1000);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(c.reqs, 1);
	ck_assert_uint_eq(c.others, 0);
	ck_assert_uint_eq(n.unclaimed + n.rej_tx + n.not_ours + n.duplicates, 0);
	/* Taken once: neither the grace's end nor a repeat of the REQ brings it again. */
	cm_env_advance(&c, GRACE_NS);
	ck_assert_uint_eq(c.reqs, 1);
	cm_env_fini(&c);
}
END_TEST

/* Nobody listens: the answerer rejects (REJ "invalid service ID", SIDR_REP) once the grace is over, not before. */
START_TEST(test_answered_after_grace)
{
	bool sidr = _i;
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;
	struct h_cap cap;
	const struct h_frame *f;

	cm_env_init(&c, false, true);
	h_capture(&c.e, &cap);
	make(&m, sidr, 0x4002);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	/* A repeat while it waits is a duplicate, not a second request. */
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	cm_env_advance(&c, GRACE_NS - CM_ENV_RUN_NS * 3);
	ck_assert_uint_eq(h_cap_count(&cap, 1, UD_SEND), 0);
	cm_env_advance(&c, CM_ENV_RUN_NS * 3);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.parked, 1);
	ck_assert_uint_eq(n.duplicates, 1);
	ck_assert_uint_eq(n.unclaimed, 1);
	ck_assert_uint_eq(n.rej_tx, sidr ? 0 : 1);
	ck_assert_uint_eq(h_cap_count(&cap, 1, UD_SEND), 1);
	f = h_cap_find(&cap, 1, UD_SEND, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_ge(f->t, GRACE_NS);
	ck_assert_uint_eq(c.reqs + c.others, 0);
	cm_env_fini(&c);
}
END_TEST

/* Not the answerer: after the grace the request is another process's (not ours), nothing sent. */
START_TEST(test_left_to_others_after_grace)
{
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;
	struct h_cap cap;

	cm_env_init(&c, false, false);
	h_capture(&c.e, &cap);
	cm_env_req(&m, 0x4003);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	cm_env_advance(&c, GRACE_NS);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.not_ours, 1);
	ck_assert_uint_eq(n.unclaimed + n.rej_tx, 0);
	ck_assert_uint_eq(h_cap_count(&cap, 1, 0xffff), 0);
	cm_env_fini(&c);
}
END_TEST

/* More requests than can wait: those past CM_PARKED_MAX are decided at once, none is lost. */
START_TEST(test_parking_full)
{
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;

	cm_env_init(&c, false, true);
	for (uint32_t i = 0; i < 40; i++) {
		cm_env_req(&m, 0x5000 + i);
		wire_set_hi24_lo8(&m.u.req.qpn_rres, 0x000200 + i, 4);	/* 40 clients' QPs */
		cm_env_inject(&c, &m, WIRE_MAD_LEN);
	}
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.parked, 32);
	ck_assert_uint_eq(n.unclaimed, 40 - 32);
	cm_env_listen(&c);
	cm_env_advance(&c, 1000);
	ck_assert_uint_eq(c.reqs, 32);
	ck_assert_uint_eq(cm_env_counters(&c).unclaimed, 40 - 32);
	cm_env_fini(&c);
}
END_TEST

Suite *cm_listen_grace_suite(void)
{
	Suite *s = suite_create("cm_listen_grace");
	TCase *tc = tcase_create("grace");

	tcase_add_loop_test(tc, test_listener_comes_within_grace, 0, 2);
	tcase_add_loop_test(tc, test_answered_after_grace, 0, 2);
	tcase_add_test(tc, test_left_to_others_after_grace);
	tcase_add_test(tc, test_parking_full);
	suite_add_tcase(s, tc);
	return s;
}
