// SPDX-License-Identifier: MIT
/* cfg.exit_dreq: an established connection's DREQ frame, for the broker to post should the process die, and its withdrawal. */
#include <check.h>
#include <string.h>

#include "cm_env.h"
#include "suites.h"

#define PEER_COMM_ID	0x4001u
#define PEER_QPN	0x000123u	/* cm_env_req()'s */

/* The frame kept on establishment is the DREQ the CM itself would send, to the peer's QP1. */
static void assert_dreq_kept(const struct cm_env *c, const struct cm_id *id)
{
	const struct wire_cm_mad *m;
	struct wire_pkt p;

	ck_assert_uint_eq(c->exit_calls, 1);
	ck_assert_uint_eq(c->exit_comm_id, cm_id_comm_id(id));
	ck_assert_int_eq(wire_parse(c->exit_frame, c->exit_len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(p.opcode, WIRE_OPC_UD | WIRE_OP_SEND_ONLY);
	ck_assert_uint_eq(p.dest_qp, WIRE_GSI_QPN);
	ck_assert_uint_eq(p.payload_len, WIRE_MAD_LEN);
	m = (const struct wire_cm_mad *)wire_pkt_payload(&p);
	ck_assert_int_eq(wire_cm_mad_check(m, WIRE_MAD_LEN), WIRE_MAD_DROP_NONE);
	ck_assert_uint_eq(wire_get16(m->hdr.attr_id), WIRE_CM_DREQ);
	ck_assert_uint_eq(wire_get32(m->u.dreq.local_comm_id), cm_id_comm_id(id));
	ck_assert_uint_eq(wire_get32(m->u.dreq.remote_comm_id), PEER_COMM_ID);
	ck_assert_uint_eq(wire_hi24(m->u.dreq.remote_qpn), PEER_QPN);
}

/* The peer disconnects: the kept frame is withdrawn. */
START_TEST(withdrawn_when_peer_disconnects)
{
	struct cm_env c;
	struct cm_id *id;

	cm_env_init(&c, true, false);
	id = cm_env_establish(&c, PEER_COMM_ID);
	assert_dreq_kept(&c, id);
	cm_env_peer_dreq(&c, id, PEER_COMM_ID);
	ck_assert_int_eq(cm_id_state(id), CM_TIMEWAIT);
	ck_assert_uint_eq(c.exit_calls, 2);
	ck_assert_uint_eq(c.exit_len, 0);
	cm_id_destroy(id);
	ck_assert_uint_eq(c.exit_calls, 2);
	cm_env_fini(&c);
}
END_TEST

/* We disconnect (DREQ), or destroy the ID while established: withdrawn once. */
START_TEST(withdrawn_when_we_disconnect)
{
	bool destroy = _i;
	struct cm_env c;
	struct cm_id *id;

	cm_env_init(&c, true, false);
	id = cm_env_establish(&c, PEER_COMM_ID);
	assert_dreq_kept(&c, id);
	if (destroy) {
		cm_id_destroy(id);
	} else {
		ck_assert_int_eq(cm_send_dreq(id, NULL, 0), 0);
		ck_assert_int_eq(cm_id_state(id), CM_DREQ_SENT);
	}
	ck_assert_uint_eq(c.exit_calls, 2);
	ck_assert_uint_eq(c.exit_len, 0);
	if (!destroy)
		cm_id_destroy(id);
	ck_assert_uint_eq(c.exit_calls, 2);
	cm_env_fini(&c);
}
END_TEST

Suite *cm_exit_suite(void)
{
	Suite *s = suite_create("cm_exit");
	TCase *tc = tcase_create("exit");

	tcase_add_test(tc, withdrawn_when_peer_disconnects);
	tcase_add_loop_test(tc, withdrawn_when_we_disconnect, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
