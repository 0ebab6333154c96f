// SPDX-License-Identifier: MIT
/* Stale connections (IBA 12.9.8.3.1): a REQ from a QP a connection here holds, or held within time-wait. */
#include <check.h>
#include <string.h>

#include "cm_env.h"
#include "suites.h"

#define UD_SEND		(WIRE_OPC_UD | WIRE_OP_SEND_ONLY)
#define PEER_QPN	0x000123u	/* cm_env_req()'s */
/* Time-wait in the environment: its cfg.timeout_ms. */
#define TIMEWAIT_NS	(50 * 1000000ull)

/* MADs side 1 has sent with attribute @attr; the first in @first. */
static unsigned sent(const struct h_cap *cap, uint16_t attr, const struct wire_cm_mad **first)
{
	unsigned n = 0;

	*first = NULL;
	for (unsigned i = 0; i < h_cap_count(cap, 1, UD_SEND); i++) {
		const struct h_frame *f = h_cap_find(cap, 1, UD_SEND, i);
		const struct wire_cm_mad *m = (const struct wire_cm_mad *)f->payload_head;

		if (f->dest_qp != WIRE_GSI_QPN || wire_get16(m->hdr.attr_id) != attr)
			continue;
		if (!n++)
			*first = m;
	}
	return n;
}

/* One REJ "stale connection" sent, to the REQ of @comm_id. */
static void assert_stale_rej(const struct h_cap *cap, uint32_t comm_id)
{
	const struct wire_cm_mad *rej;

	ck_assert_uint_eq(sent(cap, WIRE_CM_REJ, &rej), 1);
	ck_assert_uint_eq(wire_get16(rej->u.rej.reason), WIRE_CM_REJ_STALE_CONN);
	ck_assert_uint_eq(wire_get32(rej->u.rej.remote_comm_id), comm_id);
	ck_assert_uint_eq(rej->u.rej.msg_rejected >> 6, WIRE_CM_MSG_REQ);
}

/* A REQ from the QP of an established connection: REJ "stale connection", and the old one gets a DREQ. */
START_TEST(stale_while_established)
{
	const struct wire_cm_mad *dreq;
	struct wire_cm_mad m;
	struct h_cap cap;
	struct cm_env c;
	struct cm_id *id;

	cm_env_init(&c, true, false);
	id = cm_env_establish(&c, 0x4001);
	h_capture(&c.e, &cap);
	cm_env_req(&m, 0x4002);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	cm_env_advance(&c, CM_ENV_RUN_NS);
	ck_assert_uint_eq(c.reqs, 1);
	ck_assert_uint_eq(cm_env_counters(&c).stale, 1);
	assert_stale_rej(&cap, 0x4002);
	ck_assert_uint_eq(sent(&cap, WIRE_CM_DREQ, &dreq), 1);
	ck_assert_uint_eq(wire_get32(dreq->u.dreq.remote_comm_id), 0x4001);
	ck_assert_int_eq(cm_id_state(id), CM_DREQ_SENT);
	cm_env_fini(&c);
}
END_TEST

/*
 * The peer disconnects and the ID is destroyed at once (rdma_destroy_id()
 * after DISCONNECTED): a REQ from that QP is stale until time-wait is over,
 * then taken.  A REQ from another QP is taken all along.
 */
START_TEST(stale_until_timewait_ends)
{
	struct wire_cm_mad m;
	struct h_cap cap;
	struct cm_env c;
	struct cm_id *id;

	cm_env_init(&c, true, false);
	id = cm_env_establish(&c, 0x4001);
	cm_env_peer_dreq(&c, id, 0x4001);
	ck_assert_int_eq(cm_id_state(id), CM_TIMEWAIT);
	cm_id_destroy(id);

	h_capture(&c.e, &cap);
	cm_env_advance(&c, TIMEWAIT_NS / 2);
	cm_env_req(&m, 0x4002);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	cm_env_advance(&c, CM_ENV_RUN_NS);
	ck_assert_uint_eq(c.reqs, 1);
	ck_assert_uint_eq(cm_env_counters(&c).stale, 1);
	assert_stale_rej(&cap, 0x4002);

	cm_env_req(&m, 0x4003);
	wire_set_hi24_lo8(&m.u.req.qpn_rres, PEER_QPN + 1, 4);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	ck_assert_uint_eq(c.reqs, 2);

	cm_env_advance(&c, TIMEWAIT_NS / 2);
	cm_env_req(&m, 0x4004);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	ck_assert_uint_eq(c.reqs, 3);
	ck_assert_uint_eq(cm_env_counters(&c).stale, 1);
	cm_env_fini(&c);
}
END_TEST

/* A REQ repeated with its own comm ID is a duplicate, not stale: the connection it made stands. */
START_TEST(repeat_is_not_stale)
{
	struct wire_cm_mad m;
	struct cm_env c;
	struct cm_id *id;

	cm_env_init(&c, true, false);
	id = cm_env_establish(&c, 0x4001);
	cm_env_req(&m, 0x4001);
	cm_env_inject(&c, &m, WIRE_MAD_LEN);
	ck_assert_uint_eq(cm_env_counters(&c).stale, 0);
	ck_assert_uint_eq(cm_env_counters(&c).duplicates, 1);
	ck_assert_int_eq(cm_id_state(id), CM_ESTABLISHED);
	cm_env_fini(&c);
}
END_TEST

Suite *cm_stale_suite(void)
{
	Suite *s = suite_create("cm_stale");
	TCase *tc = tcase_create("stale");

	tcase_add_test(tc, stale_while_established);
	tcase_add_test(tc, stale_until_timewait_ends);
	tcase_add_test(tc, repeat_is_not_stale);
	suite_add_tcase(s, tc);
	return s;
}
