// SPDX-License-Identifier: MIT
/* One CM on side 1 of the simulated link, MADs injected to its QP1 from side 0. */
#include <check.h>
#include <string.h>

#include "cm_env.h"

static uint64_t env_now(void *arg)
{
	return ((struct h_env *)arg)->now;
}

static int env_event(void *arg, struct cm_id *id, const struct cm_event *ev)
{
	struct cm_env *c = arg;

	if ((ev->type == CM_EV_REQ || ev->type == CM_EV_SIDR_REQ) && c->listen &&
	    ev->listen == c->listen) {
		c->reqs++;
		c->req_id = id;
	}
	else
		c->others++;
	return 0;
}

static bool env_answers(void *arg, uint64_t service_id)
{
	(void)service_id;
	return ((struct cm_env *)arg)->answerer;
}

static void env_exit_dreq(void *arg, uint32_t comm_id, const uint8_t *frame, uint32_t len)
{
	struct cm_env *c = arg;

	c->exit_calls++;
	c->exit_comm_id = comm_id;
	c->exit_len = len;
	if (len && len <= sizeof(c->exit_frame))
		memcpy(c->exit_frame, frame, len);
}

void cm_env_init(struct cm_env *c, bool listen, bool answerer)
{
	struct cm_cfg cfg = {
		.node_guid = 0x0200000000000002ull,
		.now_ns = env_now,
		.event = env_event,
		.answers_unclaimed = env_answers,
		.exit_dreq = env_exit_dreq,
		.timeout_ms = 50,
		.seed = 1,
	};

	memset(c, 0, sizeof(*c));
	c->answerer = answerer;
	h_env_init(&c->e, NULL);
	cfg.eng = c->e.eng[1];
	cfg.arg = c;
	c->cm = cm_create(&cfg);
	ck_assert_ptr_nonnull(c->cm);
	if (listen)
		cm_env_listen(c);
}

void cm_env_listen(struct cm_env *c)
{
	c->listen = cm_id_create(c->cm, NULL);
	ck_assert_ptr_nonnull(c->listen);
	ck_assert_int_eq(cm_listen(c->listen, CM_ENV_SERVICE_ID), 0);
}

void cm_env_fini(struct cm_env *c)
{
	cm_destroy(c->cm);
	h_env_fini(&c->e);
}

void cm_env_inject(struct cm_env *c, const void *mad, uint32_t len)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
	d.dest_qp = WIRE_GSI_QPN;
	d.deth.qkey = WIRE_GSI_QKEY;
	d.deth.src_qp = WIRE_GSI_QPN;
	h_inject(&c->e, 1, &d, mad, len);
	h_run(&c->e, CM_ENV_RUN_NS);
	cm_process(c->cm);
}

void cm_env_advance(struct cm_env *c, uint64_t ns)
{
	c->e.now += ns;
	cm_process(c->cm);
	h_run(&c->e, CM_ENV_RUN_NS);
}

struct cm_counters cm_env_counters(const struct cm_env *c)
{
	struct cm_counters n;

	cm_counters(c->cm, &n);
	return n;
}

struct cm_id *cm_env_establish(struct cm_env *c, uint32_t peer_comm_id)
{
	struct cm_conn conn = { .qpn = 0x000456, .psn = 0x10 };
	unsigned reqs = c->reqs, exit_calls = c->exit_calls;
	struct wire_cm_mad m;
	struct cm_id *id;

	cm_env_req(&m, peer_comm_id);
	cm_env_inject(c, &m, WIRE_MAD_LEN);
	ck_assert_uint_eq(c->reqs, reqs + 1);
	id = c->req_id;
	ck_assert_int_eq(cm_send_rep(id, &conn), 0);
	ck_assert_uint_eq(c->exit_calls, exit_calls);
	wire_cm_mad_init(&m, WIRE_CM_RTU, 1);
	wire_set32(&m.u.rtu.local_comm_id, peer_comm_id);
	wire_set32(&m.u.rtu.remote_comm_id, cm_id_comm_id(id));
	cm_env_inject(c, &m, WIRE_MAD_LEN);
	ck_assert_int_eq(cm_id_state(id), CM_ESTABLISHED);
	return id;
}

void cm_env_peer_dreq(struct cm_env *c, struct cm_id *id, uint32_t peer_comm_id)
{
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, WIRE_CM_DREQ, 2);
	wire_set32(&m.u.dreq.local_comm_id, peer_comm_id);
	wire_set32(&m.u.dreq.remote_comm_id, cm_id_comm_id(id));
	cm_env_inject(c, &m, WIRE_MAD_LEN);
}

void cm_env_req(struct wire_cm_mad *m, uint32_t comm_id)
{
	wire_cm_mad_init(m, WIRE_CM_REQ, 0xabcd0000ull | comm_id);
	wire_set32(&m->u.req.local_comm_id, comm_id);
	wire_set64(&m->u.req.service_id, CM_ENV_SERVICE_ID);
	wire_set_hi24_lo8(&m->u.req.qpn_rres, 0x000123, 4);
	wire_set_hi24_lo8(&m->u.req.psn_misc, 0x000777, 0);
}

void cm_env_sidr_req(struct wire_cm_mad *m, uint32_t request_id)
{
	wire_cm_mad_init(m, WIRE_CM_SIDR_REQ, 0xabce0000ull | request_id);
	wire_set32(&m->u.sidr_req.request_id, request_id);
	wire_set64(&m->u.sidr_req.service_id, CM_ENV_SERVICE_ID);
}
