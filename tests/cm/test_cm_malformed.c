// SPDX-License-Identifier: MIT
/* Malformed and truncated MADs to the CM's QP1: each dropped and counted, a good REQ after them still taken. */
#include <check.h>
#include <string.h>

#include "cm_env.h"
#include "suites.h"

/* One way to spoil a good MAD, the bytes of it sent, and the reason it must be dropped for. */
struct malformed {
	const char		*name;
	enum wire_cm_attr	attr;
	uint32_t		len;
	void			(*spoil)(struct wire_cm_mad *m);
	enum wire_mad_drop	reason;
};

static void base_version(struct wire_cm_mad *m) { m->hdr.base_version = 2; }
static void not_cm(struct wire_cm_mad *m) { m->hdr.mgmt_class = 0x03; }
static void class_version(struct wire_cm_mad *m) { m->hdr.class_version = 1; }
static void get_resp(struct wire_cm_mad *m) { m->hdr.method = 0x81; }
static void lap(struct wire_cm_mad *m) { wire_set16(&m->hdr.attr_id, 0x0019); }
static void attr_zero(struct wire_cm_mad *m) { wire_set16(&m->hdr.attr_id, 0); }
static void rej_ari_len(struct wire_cm_mad *m) { m->u.rej.ari_len = (WIRE_CM_REJ_ARI + 1) << 1; }
static void rej_msg3(struct wire_cm_mad *m) { m->u.rej.msg_rejected = 3 << 6; }
static void mra_msg3(struct wire_cm_mad *m) { m->u.mra.msg_mraed = 3 << 6; }
static void sidr_info_len(struct wire_cm_mad *m) { m->u.sidr_rep.info_len = 0xff; }

static const struct malformed malformed[] = {
	{ "empty",		WIRE_CM_REQ,	0,		NULL,		WIRE_MAD_DROP_TRUNCATED },
	{ "header only",	WIRE_CM_REQ,	WIRE_MAD_HDR_LEN, NULL,		WIRE_MAD_DROP_TRUNCATED },
	{ "one byte short",	WIRE_CM_REQ,	WIRE_MAD_LEN - 1, NULL,		WIRE_MAD_DROP_TRUNCATED },
	{ "odd length",		WIRE_CM_RTU,	13,		NULL,		WIRE_MAD_DROP_TRUNCATED },
	{ "base version 2",	WIRE_CM_REQ,	WIRE_MAD_LEN,	base_version,	WIRE_MAD_DROP_BAD_BASE_VERSION },
	{ "SA class",		WIRE_CM_REQ,	WIRE_MAD_LEN,	not_cm,		WIRE_MAD_DROP_NOT_CM },
	{ "class version 1",	WIRE_CM_REQ,	WIRE_MAD_LEN,	class_version,	WIRE_MAD_DROP_BAD_CLASS_VERSION },
	{ "GetResp",		WIRE_CM_REQ,	WIRE_MAD_LEN,	get_resp,	WIRE_MAD_DROP_BAD_METHOD },
	{ "LAP",		WIRE_CM_REQ,	WIRE_MAD_LEN,	lap,		WIRE_MAD_DROP_UNKNOWN_ATTR },
	{ "attribute 0",	WIRE_CM_REQ,	WIRE_MAD_LEN,	attr_zero,	WIRE_MAD_DROP_UNKNOWN_ATTR },
	{ "REJ ARI 73",		WIRE_CM_REJ,	WIRE_MAD_LEN,	rej_ari_len,	WIRE_MAD_DROP_BAD_INFO_LEN },
	{ "REJ message 3",	WIRE_CM_REJ,	WIRE_MAD_LEN,	rej_msg3,	WIRE_MAD_DROP_BAD_MSG_REF },
	{ "MRA message 3",	WIRE_CM_MRA,	WIRE_MAD_LEN,	mra_msg3,	WIRE_MAD_DROP_BAD_MSG_REF },
	{ "SIDR_REP info 255",	WIRE_CM_SIDR_REP, WIRE_MAD_LEN,	sidr_info_len,	WIRE_MAD_DROP_BAD_INFO_LEN },
};

#define N_MALFORMED (int)(sizeof(malformed) / sizeof(malformed[0]))

/* Each malformed MAD alone: dropped for its reason, nothing delivered; a good REQ then taken. */
START_TEST(test_malformed_dropped)
{
	const struct malformed *t = &malformed[_i];
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;

	cm_env_init(&c, true, false);
	if (t->attr == WIRE_CM_REQ)
		cm_env_req(&m, 0x1001);
	else
		wire_cm_mad_init(&m, t->attr, 1);
	if (t->spoil)
		t->spoil(&m);
	cm_env_inject(&c, &m, t->len);
	n = cm_env_counters(&c);
	ck_assert_msg(n.mads_rx == 1, "%s: %lu MADs received", t->name, (unsigned long)n.mads_rx);
	for (unsigned r = 0; r < WIRE_MAD_DROP_COUNT; r++)
		ck_assert_msg(n.drops[r] == (r == t->reason), "%s: drop %s = %lu", t->name,
			      wire_mad_drop_name(r), (unsigned long)n.drops[r]);
	ck_assert_uint_eq(c.reqs + c.others, 0);
	ck_assert_uint_eq(n.not_ours, 0);

	cm_env_req(&m, 0x1002);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.mads_rx, 2);
	ck_assert_uint_eq(n.drops[t->reason], 1);
	ck_assert_uint_eq(c.reqs, 1);
	ck_assert_uint_eq(c.others, 0);
	cm_env_fini(&c);
}
END_TEST

/* Every malformed MAD in one burst: each reason counted as often as it was sent. */
START_TEST(test_malformed_sequence_counted)
{
	uint64_t want[WIRE_MAD_DROP_COUNT] = { 0 };
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;

	cm_env_init(&c, true, false);
	for (int i = 0; i < N_MALFORMED; i++) {
		const struct malformed *t = &malformed[i];

		if (t->attr == WIRE_CM_REQ)
			cm_env_req(&m, 0x2000 + (uint32_t)i);
		else
			wire_cm_mad_init(&m, t->attr, 1);
		if (t->spoil)
			t->spoil(&m);
		cm_env_inject(&c, &m, t->len);
		want[t->reason]++;
	}
	cm_env_req(&m, 0x2fff);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.mads_rx, N_MALFORMED + 1);
	for (unsigned r = 1; r < WIRE_MAD_DROP_COUNT; r++)
		ck_assert_msg(n.drops[r] == want[r], "drop %s = %lu, want %lu",
			      wire_mad_drop_name(r), (unsigned long)n.drops[r],
			      (unsigned long)want[r]);
	ck_assert_uint_eq(c.reqs, 1);
	ck_assert_uint_eq(c.others, 0);
	cm_env_fini(&c);
}
END_TEST

/*
 * Well-formed MADs naming comm IDs this CM never gave out (or a service
 * nobody here listens on): not ours, counted, no event, nothing answered
 * (no answerer is configured), and the next good REQ still taken.
 */
START_TEST(test_unknown_comm_ids)
{
	static const enum wire_cm_attr attrs[] = {
		WIRE_CM_REP, WIRE_CM_RTU, WIRE_CM_REJ, WIRE_CM_MRA, WIRE_CM_DREQ, WIRE_CM_DREP,
		WIRE_CM_SIDR_REP,
	};
	struct cm_env c;
	struct wire_cm_mad m;
	struct cm_counters n;
	unsigned sent = 0;

	cm_env_init(&c, true, false);
	for (unsigned i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++, sent++) {
		wire_cm_mad_init(&m, attrs[i], 1);
		/* Local and remote comm IDs lead every message; SIDR_REP has its request ID alone. */
		wire_set32(&m.u.rtu.local_comm_id, 0x0badc0de);
		if (attrs[i] != WIRE_CM_SIDR_REP)
			wire_set32(&m.u.rtu.remote_comm_id, 0x0badbeef);
		cm_env_inject(&c, &m, WIRE_MAD_LEN);
	}
	cm_env_req(&m, 0x3001);
	wire_set64(&m.u.req.service_id, CM_ENV_SERVICE_ID + 1);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	sent++;
	/* A REQ for a service without a listener waits for one first (test_cm_listen_grace.c). */
	cm_env_advance(&c, CM_LISTEN_GRACE_MS * 1000000ull);
	n = cm_env_counters(&c);
	ck_assert_uint_eq(n.mads_rx, sent);
	ck_assert_uint_eq(n.not_ours, sent);
	ck_assert_uint_eq(n.mads_tx, 0);
	for (unsigned r = 1; r < WIRE_MAD_DROP_COUNT; r++)
		ck_assert_uint_eq(n.drops[r], 0);
	ck_assert_uint_eq(c.reqs + c.others, 0);

	cm_env_req(&m, 0x3002);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	ck_assert_uint_eq(c.reqs, 1);
	cm_env_fini(&c);
}
END_TEST

Suite *cm_malformed_suite(void)
{
	Suite *s = suite_create("cm_malformed");
	TCase *tc = tcase_create("drop");

	tcase_add_loop_test(tc, test_malformed_dropped, 0, N_MALFORMED);
	tcase_add_test(tc, test_malformed_sequence_counted);
	tcase_add_test(tc, test_unknown_comm_ids);
	suite_add_tcase(s, tc);
	return s;
}
