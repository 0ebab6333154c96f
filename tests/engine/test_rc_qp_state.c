// SPDX-License-Identifier: MIT
/* The QP state machine: legal transitions, modify masks and values, posting rules per state and opcode, flush. */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS 100000000ull

static const int all_states[] = {
	IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_SQD, IBV_QPS_SQE,
	IBV_QPS_ERR,
};

/* The mask a user must give for @from -> @to on RC (IBA 11.2.5, ibv_modify_qp(3)). */
static int rc_required(int from, int to)
{
	if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
		return IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
	if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
		return IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
		return IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
		       IBV_QP_MAX_QP_RD_ATOMIC;
	return 0;
}

static bool rc_legal(int from, int to)
{
	switch (from) {
	case IBV_QPS_RESET:
		return to == IBV_QPS_RESET || to == IBV_QPS_INIT;
	case IBV_QPS_INIT:
		return to == IBV_QPS_RESET || to == IBV_QPS_ERR || to == IBV_QPS_INIT ||
		       to == IBV_QPS_RTR;
	case IBV_QPS_RTR:
		return to == IBV_QPS_RESET || to == IBV_QPS_ERR || to == IBV_QPS_RTS;
	case IBV_QPS_RTS:
		return to == IBV_QPS_RESET || to == IBV_QPS_ERR || to == IBV_QPS_RTS ||
		       to == IBV_QPS_SQD;
	case IBV_QPS_SQD:
		return to == IBV_QPS_RESET || to == IBV_QPS_ERR || to == IBV_QPS_RTS ||
		       to == IBV_QPS_SQD;
	case IBV_QPS_SQE:
		return to == IBV_QPS_RESET || to == IBV_QPS_ERR || to == IBV_QPS_RTS;
	default:
		return to == IBV_QPS_RESET || to == IBV_QPS_ERR;
	}
}

static void fill_attr(struct ibv_qp_attr *a, int to)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = (enum ibv_qp_state)to;
	a->port_num = 1;
	a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
	a->path_mtu = IBV_MTU_1024;
	a->dest_qp_num = 0x55;
	a->rq_psn = 1;
	a->sq_psn = 2;
	a->max_dest_rd_atomic = 4;
	a->max_rd_atomic = 4;
	a->min_rnr_timer = 12;
	a->timeout = 14;
	a->retry_cnt = 7;
	a->rnr_retry = 7;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.hop_limit = 64;
	h_gid(1, 0, a->ah_attr.grh.dgid.raw);
}

static int go(struct rc_qp *qp, int to)
{
	struct ibv_qp_attr a;
	struct ibv_qp_attr q;

	rc_qp_query(qp, &q, IBV_QP_STATE, NULL);
	fill_attr(&a, to);
	return rc_qp_modify(qp, &a, IBV_QP_STATE | rc_required(q.qp_state, to));
}

/* Bring a fresh RC QP to @state along legal steps (SQE only the engine can enter: skipped). */
static void reach(struct rc_qp *qp, int state)
{
	static const int path[] = { IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS };

	if (state == IBV_QPS_RESET)
		return;
	if (state == IBV_QPS_ERR) {
		ck_assert_int_eq(go(qp, IBV_QPS_INIT), 0);
		ck_assert_int_eq(go(qp, IBV_QPS_ERR), 0);
		return;
	}
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_int_eq(go(qp, path[i]), 0);
		if (path[i] == state)
			return;
	}
	ck_assert_int_eq(go(qp, IBV_QPS_SQD), 0);
}

/* Every (from, to) pair: allowed exactly when the table allows it. */
START_TEST(transition_table)
{
	int from = all_states[_i / 7], to = all_states[_i % 7];
	struct h_env e;
	struct h_qp_opts o = { .type = IBV_QPT_RC };
	struct rc_qp *qp;
	int ret;

	if (from == IBV_QPS_SQE)
		return;		/* only the engine enters SQE (covered by the UC test) */
	h_env_init(&e, NULL);
	qp = h_qp(&e, 0, &o);
	reach(qp, from);
	ck_assert_int_eq(h_qp_state(qp), from);
	ret = go(qp, to);
	if (rc_legal(from, to)) {
		ck_assert_msg(ret == 0, "%s -> %s refused", rc_qp_state_name(from),
			      rc_qp_state_name(to));
		ck_assert_int_eq(h_qp_state(qp), to);
	} else {
		ck_assert_msg(ret == -EINVAL, "%s -> %s allowed", rc_qp_state_name(from),
			      rc_qp_state_name(to));
		ck_assert_int_eq(h_qp_state(qp), from);
	}
	ck_assert_int_eq(rc_qp_destroy(qp), 0);
	h_env_fini(&e);
}
END_TEST

/* A required attribute missing, or one not allowed: -EINVAL and nothing changes. */
START_TEST(masks_checked)
{
	struct h_env e;
	struct h_qp_opts o = { .type = IBV_QPT_RC };
	struct rc_qp *qp;
	struct ibv_qp_attr a, q;
	int req;

	h_env_init(&e, NULL);
	qp = h_qp(&e, 0, &o);

	fill_attr(&a, IBV_QPS_INIT);
	req = rc_required(IBV_QPS_RESET, IBV_QPS_INIT);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | (req & ~IBV_QP_ACCESS_FLAGS)), -EINVAL);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req | IBV_QP_SQ_PSN), -EINVAL);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req | IBV_QP_QKEY), -EINVAL);
	ck_assert_int_eq(h_qp_state(qp), IBV_QPS_RESET);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req), 0);

	/* INIT -> RTR without MIN_RNR_TIMER (RC needs it), then with a bad PMTU. */
	fill_attr(&a, IBV_QPS_RTR);
	req = rc_required(IBV_QPS_INIT, IBV_QPS_RTR);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | (req & ~IBV_QP_MIN_RNR_TIMER)),
			 -EINVAL);
	a.path_mtu = (enum ibv_mtu)6;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req), -EINVAL);
	rc_qp_query(qp, &q, 0, NULL);
	ck_assert_int_eq(q.qp_state, IBV_QPS_INIT);
	ck_assert_uint_eq(q.dest_qp_num, 0);		/* untouched by the failed calls */
	fill_attr(&a, IBV_QPS_RTR);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req), 0);

	/* RTR -> RTS: out-of-range values, CUR_STATE that does not match. */
	fill_attr(&a, IBV_QPS_RTS);
	req = rc_required(IBV_QPS_RTR, IBV_QPS_RTS);
	a.retry_cnt = 8;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req), -EINVAL);
	fill_attr(&a, IBV_QPS_RTS);
	a.timeout = 32;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req), -EINVAL);
	fill_attr(&a, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_INIT;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req | IBV_QP_CUR_STATE), -EINVAL);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req | IBV_QP_ALT_PATH), -EINVAL);
	ck_assert_int_eq(h_qp_state(qp), IBV_QPS_RTR);
	fill_attr(&a, IBV_QPS_RTS);
	a.cur_qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | req | IBV_QP_CUR_STATE), 0);

	/* RTS -> RTS with an allowed optional attribute; a required-elsewhere one is refused. */
	fill_attr(&a, IBV_QPS_RTS);
	a.min_rnr_timer = 3;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_MIN_RNR_TIMER), 0);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_SQ_PSN), -EINVAL);
	rc_qp_query(qp, &q, 0, NULL);
	ck_assert_uint_eq(q.min_rnr_timer, 3);
	ck_assert_uint_eq(q.sq_psn, 2);
	ck_assert_uint_eq(q.timeout, 14);
	ck_assert_uint_eq(q.max_rd_atomic, 4);
	ck_assert_int_eq(q.path_mtu, IBV_MTU_1024);
	ck_assert_int_eq(rc_qp_destroy(qp), 0);
	h_env_fini(&e);
}
END_TEST

/*
 * perftest sets the initiator depth to the peer's max_qp_rd_atom (rxe: 128): it is capped at
 * ours, not refused; responder resources above ours are still refused.
 */
START_TEST(initiator_depth_capped)
{
	struct h_env e;
	struct h_qp_opts o = { .type = IBV_QPT_RC };
	struct rc_qp *qp;
	struct ibv_qp_attr a, q;

	h_env_init(&e, NULL);
	qp = h_qp(&e, 0, &o);
	ck_assert_int_eq(go(qp, IBV_QPS_INIT), 0);
	fill_attr(&a, IBV_QPS_RTR);
	a.max_dest_rd_atomic = RC_MAX_RD_ATOMIC + 1;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | rc_required(IBV_QPS_INIT, IBV_QPS_RTR)),
			 -EINVAL);
	fill_attr(&a, IBV_QPS_RTR);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | rc_required(IBV_QPS_INIT, IBV_QPS_RTR)),
			 0);
	fill_attr(&a, IBV_QPS_RTS);
	a.max_rd_atomic = 128;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | rc_required(IBV_QPS_RTR, IBV_QPS_RTS)),
			 0);
	rc_qp_query(qp, &q, 0, NULL);
	ck_assert_uint_eq(q.max_rd_atomic, RC_MAX_RD_ATOMIC);
	ck_assert_int_eq(h_qp_state(qp), IBV_QPS_RTS);
	ck_assert_int_eq(rc_qp_destroy(qp), 0);
	h_env_fini(&e);
}
END_TEST

/* UD needs a Q_Key at INIT, nothing but the state at RTR, a PSN at RTS. */
START_TEST(ud_masks)
{
	struct h_env e;
	struct h_qp_opts o = { .type = IBV_QPT_UD };
	struct rc_qp *qp;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = 0x11 };

	h_env_init(&e, NULL);
	qp = h_qp(&e, 0, &o);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_ACCESS_FLAGS), -EINVAL);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				      IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV), -EINVAL);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE), -EINVAL);
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	ck_assert_int_eq(rc_qp_destroy(qp), 0);
	h_env_fini(&e);
}
END_TEST

START_TEST(posting_rules)
{
	struct h_env e;
	struct h_qp_opts o = { .type = IBV_QPT_RC, .max_send_wr = 2, .max_recv_wr = 2,
			       .max_sge = 2, .max_inline = 16 };
	struct h_qp_opts uo = { .type = IBV_QPT_UC };
	struct rc_qp *qp, *uc;
	uint8_t buf[64] = { 0 };
	struct rc_mr *mr;
	struct ibv_sge s[3];
	struct ibv_send_wr wr = { 0 }, wr2 = { 0 }, *bad = NULL;
	struct ibv_recv_wr rwr = { 0 }, *rbad = NULL;

	h_env_init(&e, NULL);
	qp = h_qp(&e, 0, &o);
	uc = h_qp(&e, 0, &uo);
	mr = rc_mr_reg(e.pd[0], buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
	for (int i = 0; i < 3; i++)
		s[i] = (struct ibv_sge){ (uintptr_t)buf, 8, rc_mr_lkey(mr) };
	wr.sg_list = s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	rwr.sg_list = s;
	rwr.num_sge = 1;

	/* RESET: neither queue takes work; INIT and RTR take receives only. */
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	ck_assert_int_eq(rc_post_recv(qp, &rwr, &rbad), -EINVAL);
	ck_assert_int_eq(go(qp, IBV_QPS_INIT), 0);
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	ck_assert_int_eq(rc_post_recv(qp, &rwr, &rbad), 0);
	ck_assert_int_eq(go(qp, IBV_QPS_RTR), 0);
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	ck_assert_int_eq(go(qp, IBV_QPS_RTS), 0);

	/* Bad WRs: the first refused is named, the ones before are posted. */
	wr.num_sge = 3;
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_INLINE;
	s[1].length = 20;
	wr.num_sge = 2;
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	wr.num_sge = 1;
	wr.send_flags = 0;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	s[0].length = 4;
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	s[0].length = 8;
	wr.opcode = IBV_WR_TSO;
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	wr.opcode = IBV_WR_SEND;
	wr.next = &wr2;
	wr2 = wr;
	wr2.next = NULL;
	wr2.num_sge = 5;
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr2);
	/* The queue holds 2: one is in, one more fits, the third is ENOMEM. */
	wr.next = NULL;
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), 0);
	ck_assert_int_eq(rc_post_send(qp, &wr, &bad), -ENOMEM);
	ck_assert_int_eq(rc_post_recv(qp, &rwr, &rbad), 0);
	ck_assert_int_eq(rc_post_recv(qp, &rwr, &rbad), -ENOMEM);

	/* UC: no reads, atomics or send-with-invalidate. */
	h_connect_one(uc, 1, 0x55, 0, 0, NULL);
	wr.opcode = IBV_WR_RDMA_READ;
	ck_assert_int_eq(rc_post_send(uc, &wr, &bad), -EINVAL);
	wr.opcode = IBV_WR_SEND_WITH_INV;
	ck_assert_int_eq(rc_post_send(uc, &wr, &bad), -EINVAL);
	ck_assert_int_eq(rc_qp_destroy(uc), 0);
	ck_assert_int_eq(rc_qp_destroy(qp), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_env_fini(&e);
}
END_TEST

#define NONE (-1)

/*
 * What the verbs promise for each opcode, written from ibv_post_send(3) and the BTH OpCode
 * table (IBA 9.2), not from the engine's table: the QP types that take it, the requester's
 * completion, and the responder's (its opcode and the IMM/INV flag), NONE where there is none.
 */
static const struct expect {
	int			op;
	const char		*name;
	bool			rc, uc, ud;
	int			wc;
	int			resp_wc;
	unsigned		resp_flags;
} rows[] = {
#define ROW(op, rc, uc, ud, wc, resp_wc, resp_flags) \
	{ IBV_WR_##op, #op, rc, uc, ud, wc, resp_wc, resp_flags }
	ROW(SEND,		 1, 1, 1, IBV_WC_SEND, IBV_WC_RECV, 0),
	ROW(SEND_WITH_IMM,	 1, 1, 1, IBV_WC_SEND, IBV_WC_RECV, IBV_WC_WITH_IMM),
	ROW(SEND_WITH_INV,	 1, 0, 0, IBV_WC_SEND, IBV_WC_RECV, IBV_WC_WITH_INV),
	ROW(RDMA_WRITE,		 1, 1, 0, IBV_WC_RDMA_WRITE, NONE, 0),
	ROW(RDMA_WRITE_WITH_IMM, 1, 1, 0, IBV_WC_RDMA_WRITE, IBV_WC_RECV_RDMA_WITH_IMM,
	    IBV_WC_WITH_IMM),
	ROW(RDMA_READ,		 1, 0, 0, IBV_WC_RDMA_READ, NONE, 0),
	ROW(ATOMIC_CMP_AND_SWP,	 1, 0, 0, IBV_WC_COMP_SWAP, NONE, 0),
	ROW(ATOMIC_FETCH_AND_ADD, 1, 0, 0, IBV_WC_FETCH_ADD, NONE, 0),
	ROW(LOCAL_INV,		 1, 1, 0, IBV_WC_LOCAL_INV, NONE, 0),
	ROW(BIND_MW,		 1, 1, 0, IBV_WC_BIND_MW, NONE, 0),
	ROW(ATOMIC_WRITE,	 1, 0, 0, IBV_WC_ATOMIC_WRITE, NONE, 0),
	/* Opcodes the engine does not implement: refused everywhere. */
	ROW(TSO,		 0, 0, 0, NONE, NONE, 0),
	ROW(DRIVER1,		 0, 0, 0, NONE, NONE, 0),
#undef ROW
	{ 200, NULL, 0, 0, 0, NONE, NONE, 0 },
};

#define N_ROWS		(sizeof(rows) / sizeof(rows[0]))

static const enum ibv_qp_type qp_types[] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
static const char *const qp_type_names[] = { "RC", "UC", "UD" };

static bool allowed_on(const struct expect *x, enum ibv_qp_type t)
{
	return t == IBV_QPT_RC ? x->rc : t == IBV_QPT_UC ? x->uc : x->ud;
}

/* Every opcode the table names has a row here, under the same name; no other does. */
START_TEST(wr_opcode_rows)
{
	unsigned named = 0;

	for (unsigned op = 0; op < RC_WR_OPCODE_COUNT; op++)
		named += rc_wr_opcode_info[op].name != NULL;
	for (unsigned i = 0; i < N_ROWS; i++) {
		const struct expect *x = &rows[i];
		bool known = x->rc || x->uc || x->ud;

		if (known) {
			ck_assert_str_eq(rc_wr_opcode_name((enum ibv_wr_opcode)x->op), x->name);
			named--;
		} else {
			ck_assert_str_eq(rc_wr_opcode_name((enum ibv_wr_opcode)x->op), "UNKNOWN");
		}
	}
	ck_assert_uint_eq(named, 0);
}
END_TEST

struct wr_env {
	struct h_pair	p;
	struct rc_ah	*ah;		/* UD: side 0 to side 1 */
	struct rc_mr	*victim[2];	/* keys LOCAL_INV (side 0) and SEND_WITH_INV (side 1) kill */
	struct rc_mw	*mw;		/* side 0's window for BIND_MW */
	struct ibv_mr	ib_victim;
	struct ibv_sge	s, r;
};

static uint8_t victim_mem[2][4096];

static void wr_env_init(struct wr_env *w, enum ibv_qp_type t)
{
	struct h_qp_opts qo = { .type = t };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1, .grh.hop_limit = 64 };

	h_pair_init(&w->p, NULL, NULL, &qo);
	h_gid(1, 0, aa.grh.dgid.raw);
	w->ah = rc_ah_create(w->p.e.pd[0], &aa);
	ck_assert_ptr_nonnull(w->ah);
	for (int s = 0; s < 2; s++) {
		w->victim[s] = rc_mr_reg(w->p.e.pd[s], victim_mem[s], sizeof(victim_mem[s]),
					 (uintptr_t)victim_mem[s],
					 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		ck_assert_ptr_nonnull(w->victim[s]);
	}
	w->mw = rc_mw_alloc(w->p.e.pd[0], IBV_MW_TYPE_2);
	ck_assert_ptr_nonnull(w->mw);
	w->ib_victim.lkey = rc_mr_lkey(w->victim[0]);
	w->s = h_sge(&w->p, 0, 0, 8);
	/* Room for the 40-byte GRH a UD receive starts with. */
	w->r = h_sge(&w->p, 1, 4096, 64);
	ck_assert_int_eq(h_post_recv(w->p.qp[1], 99, &w->r, 1), 0);
}

static void wr_env_fini(struct wr_env *w)
{
	ck_assert_int_eq(rc_mw_dealloc(w->mw), 0);
	ck_assert_int_eq(rc_ah_destroy(w->ah), 0);
	for (int s = 0; s < 2; s++)
		ck_assert_int_eq(rc_mr_dereg(w->victim[s]), 0);
	h_pair_fini(&w->p);
}

/* A work request of @op that is valid in every other respect on a QP of type @t. */
static void wr_fill(struct wr_env *w, enum ibv_qp_type t, int op, struct ibv_send_wr *wr)
{
	memset(wr, 0, sizeof(*wr));
	wr->wr_id = 1;
	wr->opcode = (enum ibv_wr_opcode)op;
	wr->send_flags = IBV_SEND_SIGNALED;
	wr->sg_list = &w->s;
	wr->num_sge = 1;
	switch (op) {
	case IBV_WR_SEND_WITH_IMM:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		wr->imm_data = htobe32(0x1234);
		break;
	case IBV_WR_SEND_WITH_INV:
		wr->invalidate_rkey = rc_mr_rkey(w->victim[1]);
		break;
	case IBV_WR_LOCAL_INV:
		wr->num_sge = 0;
		wr->invalidate_rkey = rc_mr_rkey(w->victim[0]);
		break;
	case IBV_WR_BIND_MW:
		wr->num_sge = 0;
		wr->bind_mw.mw = rc_mw_ibv(w->mw);
		wr->bind_mw.rkey = ibv_inc_rkey(rc_mw_ibv(w->mw)->rkey);
		wr->bind_mw.bind_info.mr = &w->ib_victim;
		wr->bind_mw.bind_info.addr = (uintptr_t)victim_mem[0];
		wr->bind_mw.bind_info.length = 1024;
		wr->bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
		break;
	default:
		break;
	}
	if (t == IBV_QPT_UD) {
		wr->wr.ud.ah = rc_ah_ibv(w->ah);
		wr->wr.ud.remote_qpn = rc_qp_num(w->p.qp[1]);
		wr->wr.ud.remote_qkey = 0;	/* the harness gives UD QPs Q_Key 0 */
	} else if (op == IBV_WR_ATOMIC_CMP_AND_SWP || op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr->wr.atomic.remote_addr = (uintptr_t)w->p.buf[1] + 64;
		wr->wr.atomic.rkey = rc_mr_rkey(w->p.mr[1]);
		wr->wr.atomic.compare_add = 1;
	} else {
		wr->wr.rdma.remote_addr = (uintptr_t)w->p.buf[1] + 128;
		wr->wr.rdma.rkey = rc_mr_rkey(w->p.mr[1]);
	}
}

/*
 * Each row on each QP type: posted and completed with the requester's opcode (and the
 * responder's, with its IMM/INV flag) where the verbs allow it; refused with EINVAL and
 * *bad_wr naming it elsewhere, with nothing queued.
 */
START_TEST(wr_opcode_on_each_qp_type)
{
	const struct expect *x = &rows[_i / 3];
	enum ibv_qp_type t = qp_types[_i % 3];
	const char *tn = qp_type_names[_i % 3];
	struct ibv_send_wr wr, *bad = NULL;
	struct wr_env w;
	struct ibv_wc wc;
	int ret;

	wr_env_init(&w, t);
	wr_fill(&w, t, x->op, &wr);
	ret = rc_post_send(w.p.qp[0], &wr, &bad);
	if (!allowed_on(x, t)) {
		ck_assert_msg(ret == -EINVAL, "opcode %d on %s: %d", x->op, tn, ret);
		ck_assert_ptr_eq(bad, &wr);
		h_run(&w.p.e, RUN_NS);
		ck_assert_int_eq(rc_cq_poll(w.p.e.cq[0], 1, &wc), 0);
		ck_assert_int_eq(rc_cq_poll(w.p.e.cq[1], 1, &wc), 0);
		ck_assert_int_eq(h_qp_state(w.p.qp[0]), IBV_QPS_RTS);
		goto out;
	}
	ck_assert_msg(ret == 0, "%s on %s: %d", x->name, tn, ret);
	ck_assert_int_eq(h_wait_cq(&w.p.e, w.p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_msg(wc.status == IBV_WC_SUCCESS, "%s on %s: status %d", x->name, tn, wc.status);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(wc.opcode, x->wc);
	if (x->resp_wc == NONE) {
		h_run(&w.p.e, RUN_NS);
		ck_assert_int_eq(rc_cq_poll(w.p.e.cq[1], 1, &wc), 0);
		goto out;
	}
	ck_assert_int_eq(h_wait_cq(&w.p.e, w.p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 99);
	ck_assert_int_eq(wc.opcode, x->resp_wc);
	ck_assert_uint_eq(wc.wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV), x->resp_flags);
	if (x->resp_flags & IBV_WC_WITH_IMM)
		ck_assert_uint_eq(be32toh(wc.imm_data), 0x1234);
	if (x->resp_flags & IBV_WC_WITH_INV)
		ck_assert_uint_eq(wc.invalidated_rkey, rc_mr_rkey(w.victim[1]));
out:
	wr_env_fini(&w);
}
END_TEST

/* ERR flushes sends and receives, oldest first, signaled or not; later posts flush at once. */
START_TEST(flush_in_order)
{
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s, r;
	struct ibv_wc wc[8];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	cap.drop_all[0] = true;
	s = h_sge(&p, 0, 0, 100);
	for (uint64_t i = 1; i <= 4; i++)
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, i, &s, 1, 0, 0,
					     i == 3 ? IBV_SEND_SIGNALED : 0), 0);
	r = h_sge(&p, 0, 1000, 100);
	for (uint64_t i = 11; i <= 13; i++)
		ck_assert_int_eq(h_post_recv(p.qp[0], i, &r, 1), 0);
	h_run(&p.e, 1000000);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 0);
	ck_assert_int_eq(rc_qp_modify(p.qp[0], &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 7);
	for (int i = 0; i < 4; i++) {
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 1);
		ck_assert_int_eq(wc[i].status, IBV_WC_WR_FLUSH_ERR);
	}
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(wc[4 + i].wr_id, (uint64_t)i + 11);
		ck_assert_int_eq(wc[4 + i].status, IBV_WC_WR_FLUSH_ERR);
		ck_assert_int_eq(wc[4 + i].opcode, IBV_WC_RECV);
	}
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 5, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_post_recv(p.qp[0], 14, &r, 1), 0);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 2);
	ck_assert_uint_eq(wc[0].wr_id, 5);
	ck_assert_int_eq(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(wc[1].wr_id, 14);
	/* RESET empties the queues without completions. */
	a.qp_state = IBV_QPS_RESET;
	ck_assert_int_eq(rc_qp_modify(p.qp[0], &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 0);
	h_pair_fini(&p);
}
END_TEST

START_TEST(sqd_drains_with_event)
{
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_SQD, .en_sqd_async_notify = 1 };

	h_pair_init(&p, NULL, NULL, NULL);
	s = h_sge(&p, 0, 0, 3000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	rc_engine_progress(p.e.eng[0], 0);	/* the write is on its way */
	ck_assert_int_eq(rc_qp_modify(p.qp[0], &a, IBV_QP_STATE | IBV_QP_EN_SQD_ASYNC_NOTIFY), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 1);
	h_run(&p.e, RUN_NS);
	ck_assert_uint_eq(h_count_events(&p.e, IBV_EVENT_SQ_DRAINED), 1);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 1, &wc), 0);	/* the second waits */
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(rc_qp_modify(p.qp[0], &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	h_pair_fini(&p);
}
END_TEST

/* An UC send error puts the QP in SQE: the rest flushed, receives still work, back to RTS. */
START_TEST(uc_send_error_sqe)
{
	struct h_qp_opts o = { .type = IBV_QPT_UC };
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_wc wc;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS };

	h_pair_init(&p, NULL, NULL, &o);
	s = h_sge(&p, 0, 0, 10);
	s.lkey ^= 1;
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	s = h_sge(&p, 0, 0, 10);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 2, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(h_qp_state(p.qp[0]), IBV_QPS_SQE);
	/* Still receives in SQE. */
	r = h_sge(&p, 0, 1000, 100);
	ck_assert_int_eq(h_post_recv(p.qp[0], 3, &r, 1), 0);
	s = h_sge(&p, 1, 0, 10);
	ck_assert_int_eq(h_post_send(p.qp[1], IBV_WR_SEND, 4, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(rc_qp_modify(p.qp[0], &a, IBV_QP_STATE), 0);
	s = h_sge(&p, 0, 0, 10);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 5, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	h_pair_fini(&p);
}
END_TEST

START_TEST(create_checks_and_qpn_hook)
{
	struct h_env e;
	struct rc_qp_init init = { 0 };
	struct rc_qp *qp;

	h_env_init(&e, NULL);
	init.qp_type = IBV_QPT_RC;
	init.pd = e.pd[0];
	init.send_cq = e.cq[0];
	init.recv_cq = e.cq[0];
	init.cap.max_send_wr = RC_MAX_QP_WR + 1;
	ck_assert_ptr_null(rc_qp_create(e.eng[0], &init));
	ck_assert_int_eq(errno, EINVAL);
	init.cap.max_send_wr = 4;
	init.cap.max_inline_data = RC_MAX_INLINE + 1;
	ck_assert_ptr_null(rc_qp_create(e.eng[0], &init));
	init.cap.max_inline_data = 0;
	init.qp_type = IBV_QPT_XRC_SEND;
	ck_assert_ptr_null(rc_qp_create(e.eng[0], &init));
	init.qp_type = IBV_QPT_RC;
	init.pd = e.pd[1];	/* another engine's PD */
	ck_assert_ptr_null(rc_qp_create(e.eng[0], &init));
	init.pd = e.pd[0];
	qp = rc_qp_create(e.eng[0], &init);
	ck_assert_ptr_nonnull(qp);
	ck_assert_uint_eq(rc_qp_num(qp), 0x11);		/* the private allocator starts there */
	ck_assert_int_eq(rc_pd_free(e.pd[0]), -EBUSY);
	ck_assert_int_eq(rc_cq_destroy(e.cq[0]), -EBUSY);
	ck_assert_int_eq(rc_qp_destroy(qp), 0);
	h_env_fini(&e);
}
END_TEST

static unsigned hook_allocs, hook_frees;

static int hook_alloc(void *arg, uint32_t *qpn)
{
	(void)arg;
	*qpn = 0x4000 + hook_allocs++;
	return 0;
}

static void hook_free(void *arg, uint32_t qpn)
{
	(void)arg;
	ck_assert_uint_ge(qpn, 0x4000);
	hook_frees++;
}

static uint64_t zero_clock(void *arg)
{
	(void)arg;
	return 0;
}

START_TEST(qpn_from_hook)
{
	struct port_sim_cfg sc = { .now_ns = zero_clock };
	struct port_sim *link = port_sim_create(&sc);
	struct rc_engine_cfg cfg = {
		.port = port_sim_port(link, 0), .now_ns = zero_clock,
		.qpn_alloc = hook_alloc, .qpn_free = hook_free, .seed = 1,
	};
	struct rc_engine *eng = rc_engine_create(&cfg);
	struct rc_pd *pd = rc_pd_alloc(eng);
	struct rc_cq *cq = rc_cq_create(eng, 4, NULL);
	struct rc_qp_init init = { .qp_type = IBV_QPT_UD, .pd = pd, .send_cq = cq, .recv_cq = cq };
	struct rc_qp *a = rc_qp_create(eng, &init), *b = rc_qp_create(eng, &init);
	struct rc_objects o;

	ck_assert_uint_eq(rc_qp_num(a), 0x4000);
	ck_assert_uint_eq(rc_qp_num(b), 0x4001);
	rc_qp_destroy(a);
	ck_assert_uint_eq(hook_frees, 1);
	/* b, its CQ and PD are left on purpose: rc_engine_destroy() frees them. */
	rc_engine_objects(eng, &o);
	ck_assert(o.qp == 1 && o.cq == 1 && o.pd == 1 && !o.srq && !o.ah && !o.mw && !o.mr);
	rc_engine_destroy(eng);
	ck_assert_uint_eq(hook_frees, 2);
	port_sim_destroy(link);
}
END_TEST

/*
 * The ACK a QP still owes when its application stops it goes out first.  A
 * read of 100 responses takes the responder's pass past its QP's quota, so the
 * peer's SEND behind it is complete there while its ACK waits.  _i: 0 the
 * application moves the QP to ERR, 1 to RESET, 2 destroys it.
 */
START_TEST(owed_ack_sent_before_stop)
{
	const unsigned ack_op = WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE;
	struct ibv_qp_attr a = { .qp_state = _i == 1 ? IBV_QPS_RESET : IBV_QPS_ERR };
	struct ibv_sge rd, snd, rcv;
	const struct h_frame *send, *ack;
	struct h_pair p;
	struct h_cap cap;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	rcv = h_sge(&p, 1, 200000, 64);
	ck_assert_int_eq(h_post_recv(p.qp[1], 7, &rcv, 1), 0);
	rd = h_sge(&p, 0, 0, 100 * 1024);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 1, &rd, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	snd = h_sge(&p, 0, 200000, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 2, &snd, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert(wc.wr_id == 7 && wc.status == IBV_WC_SUCCESS);
	ck_assert_uint_eq(h_cap_count(&cap, 1, ack_op), 0);
	ck_assert_uint_lt(h_cap_count(&cap, 1, WIRE_OPC_RC | WIRE_OP_READ_RESP_MIDDLE), 98);

	if (_i == 2) {
		ck_assert_int_eq(rc_qp_destroy(p.qp[1]), 0);
		p.qp[1] = NULL;
	} else {
		ck_assert_int_eq(rc_qp_modify(p.qp[1], &a, IBV_QP_STATE), 0);
	}
	send = h_cap_find(&cap, 0, WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 0);
	ack = h_cap_find(&cap, 1, ack_op, 0);
	ck_assert_ptr_nonnull(send);
	ck_assert_ptr_nonnull(ack);
	ck_assert_uint_eq(ack->psn, send->psn);
	ck_assert_uint_eq(ack->syndrome & WIRE_AETH_TYPE_MASK, WIRE_AETH_ACK);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_qp_state_suite(void)
{
	Suite *s = suite_create("rc_qp_state");
	TCase *tc = tcase_create("qp");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, transition_table, 0, 49);
	tcase_add_test(tc, masks_checked);
	tcase_add_test(tc, initiator_depth_capped);
	tcase_add_test(tc, ud_masks);
	tcase_add_test(tc, posting_rules);
	tcase_add_test(tc, flush_in_order);
	tcase_add_test(tc, sqd_drains_with_event);
	tcase_add_test(tc, uc_send_error_sqe);
	tcase_add_loop_test(tc, owed_ack_sent_before_stop, 0, 3);
	tcase_add_test(tc, create_checks_and_qpn_hook);
	tcase_add_test(tc, qpn_from_hook);
	suite_add_tcase(s, tc);

	tc = tcase_create("wr_opcode");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, wr_opcode_rows);
	tcase_add_loop_test(tc, wr_opcode_on_each_qp_type, 0, (int)N_ROWS * 3);
	suite_add_tcase(s, tc);
	return s;
}
