// SPDX-License-Identifier: MIT
/* Queue pairs: creation, the state machine of ibv_modify_qp (IBA 11.2.5), flush, posting. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

/*
 * Receives are taken from INIT on, sends from RTS on; in SQE and ERR posted work
 * completes at once, flushed.  SQD finishes the WQEs it started and starts no
 * more; SQE still receives (IBA 10.3.1).
 */
const struct rc_qp_state_info rc_qp_states[IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET]	= { .name = "RESET" },
	[IBV_QPS_INIT]	= { .name = "INIT", .post_recv = true },
	[IBV_QPS_RTR]	= { .name = "RTR", .post_recv = true, .recv = true },
	[IBV_QPS_RTS]	= { .name = "RTS", .post_send = true, .post_recv = true, .send = true,
			    .start = true, .recv = true },
	[IBV_QPS_SQD]	= { .name = "SQD", .post_send = true, .post_recv = true, .send = true,
			    .recv = true },
	[IBV_QPS_SQE]	= { .name = "SQE", .post_send = true, .post_recv = true, .recv = true },
	[IBV_QPS_ERR]	= { .name = "ERR", .post_send = true, .post_recv = true },
};

const char *rc_qp_state_name(enum ibv_qp_state state)
{
	if ((unsigned)state > IBV_QPS_ERR)
		return "UNKNOWN";
	return rc_qp_states[state].name;
}

/* ---- Legal transitions and the attributes each one requires and allows ---- */

/* Attribute columns: RC, UC, UD, the XRC initiator and target (the kernel's IB_QPT_XRC_INI/TGT), raw packet. */
enum { T_RC, T_UC, T_UD, T_XRC_INI, T_XRC_TGT, T_RAW, T_COUNT };

struct qp_transition {
	uint8_t	by;			/* enum rc_state_actor bits */
	int	req[T_COUNT];
	int	opt[T_COUNT];
};

#define U	RC_BY_USER
#define E	RC_BY_ENGINE
#define UE	(RC_BY_USER | RC_BY_ENGINE)

#define RTS_OPT_RC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |	\
		    IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER)
#define RTS_OPT_UC (IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |	\
		    IBV_QP_PATH_MIG_STATE)
#define RTS_OPT_UD (IBV_QP_CUR_STATE | IBV_QP_QKEY)
#define RTS_OPT_XRC_INI RTS_OPT_UC
#define RTS_OPT_XRC_TGT RTS_OPT_RC
#define INIT_ATTRS (IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)
#define RTR_REQ_UC (IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define RTR_REQ_RC (RTR_REQ_UC | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
/* Every attribute an SQD QP may change, RC and XRC alike. */
#define SQD_OPT_RC (IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |	\
		    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC |			\
		    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_ALT_PATH |			\
		    IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX |			\
		    IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE)
#define RTS_OPTS { [T_RC] = RTS_OPT_RC, [T_UC] = RTS_OPT_UC, [T_UD] = RTS_OPT_UD,	\
		   [T_XRC_INI] = RTS_OPT_XRC_INI, [T_XRC_TGT] = RTS_OPT_XRC_TGT }

/*
 * The QP state diagram with the attributes of IBA 11.2.5 for each step, as
 * ibv_modify_qp(3) documents them and the kernel enforces them.  The engine
 * itself moves a QP to ERR (fatal errors) and UC/UD to SQE.
 */
static const struct qp_transition transitions[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_INIT] = { .by = U,
			.req = {
				[T_RC] = INIT_ATTRS, [T_UC] = INIT_ATTRS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
				[T_XRC_INI] = INIT_ATTRS, [T_XRC_TGT] = INIT_ATTRS,
				[T_RAW] = IBV_QP_PORT,
			} },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_ERR] = { .by = UE },
		[IBV_QPS_INIT] = { .by = U,
			.opt = {
				[T_RC] = INIT_ATTRS, [T_UC] = INIT_ATTRS,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
				[T_XRC_INI] = INIT_ATTRS, [T_XRC_TGT] = INIT_ATTRS,
				[T_RAW] = IBV_QP_PORT,
			} },
		[IBV_QPS_RTR] = { .by = U,
			.req = {
				[T_RC] = RTR_REQ_RC, [T_UC] = RTR_REQ_UC,
				[T_XRC_INI] = RTR_REQ_UC, [T_XRC_TGT] = RTR_REQ_RC,
			},
			.opt = {
				[T_RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[T_UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
				[T_XRC_INI] = IBV_QP_ALT_PATH | IBV_QP_PKEY_INDEX,
				[T_XRC_TGT] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
			} },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_ERR] = { .by = UE },
		[IBV_QPS_RTS] = { .by = U,
			.req = {
				[T_RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					 IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				[T_UC] = IBV_QP_SQ_PSN,
				[T_UD] = IBV_QP_SQ_PSN,
				[T_XRC_INI] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
					      IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				[T_XRC_TGT] = IBV_QP_TIMEOUT | IBV_QP_SQ_PSN,
			},
			.opt = RTS_OPTS },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_ERR] = { .by = UE },
		[IBV_QPS_RTS] = { .by = U,
			.opt = RTS_OPTS },
		[IBV_QPS_SQD] = { .by = U,
			.opt = {
				[T_RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_XRC_INI] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				[T_XRC_TGT] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
			} },
		[IBV_QPS_SQE] = { .by = E },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_ERR] = { .by = UE },
		[IBV_QPS_RTS] = { .by = U,
			.opt = RTS_OPTS },
		[IBV_QPS_SQD] = { .by = U,
			.opt = {
				[T_RC] = SQD_OPT_RC, [T_XRC_INI] = SQD_OPT_RC, [T_XRC_TGT] = SQD_OPT_RC,
				[T_UC] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
					 IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
				[T_UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			} },
		[IBV_QPS_SQE] = { .by = E },
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_ERR] = { .by = UE },
		[IBV_QPS_RTS] = { .by = U,
			.opt = {
				[T_UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				[T_UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
				[T_RAW] = IBV_QP_CUR_STATE,
			} },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .by = U },
		[IBV_QPS_ERR] = { .by = UE },
	},
};

#undef U
#undef E
#undef UE

static int type_index(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_UC:	return T_UC;
	case IBV_QPT_UD:	return T_UD;
	case IBV_QPT_XRC_SEND:	return T_XRC_INI;
	case IBV_QPT_XRC_RECV:	return T_XRC_TGT;
	case IBV_QPT_RAW_PACKET:	return T_RAW;
	default:		return T_RC;
	}
}

/* ---- Completions ---- */

static void check_drained(struct rc_qp *qp)
{
	if (qp->state == IBV_QPS_SQD && !qp->req.drained_sent && qp->sq_head == qp->req.wqe) {
		qp->req.drained_sent = true;
		if (qp->attr.en_sqd_async_notify)
			rc_async(qp->eng, IBV_EVENT_SQ_DRAINED, qp->user);
	}
}

/**
 * rc_qp_complete_send() - retire the oldest send WQE.
 * @w: must be the WQE at sq_head (completions come in WR order).
 *
 * A completion is written when the WR was signaled, the QP signals all, or
 * the status is an error (IBA 10.7.3.1: errors are always reported).
 */
void rc_qp_complete_send(struct rc_qp *qp, struct rc_send_wqe *w, enum ibv_wc_status st)
{
	if (st != IBV_WC_SUCCESS || w->signaled || qp->sq_sig_all) {
		struct ibv_wc wc = {
			.wr_id = w->wr_id,
			.status = st,
			.opcode = rc_wqe_op(w)->wc_opcode,
			.qp_num = qp->qpn,
		};

		if (st == IBV_WC_SUCCESS)
			wc.byte_len = w->length;
		rc_cq_push(qp->scq, &wc, false);
		qp->cnt.completions++;
	}
	if (w->rd_atomic_held) {
		w->rd_atomic_held = false;
		qp->req.rd_atomic--;
	}
	qp->sq_head++;
	check_drained(qp);
}

static void complete_recv_flush(struct rc_qp *qp, uint64_t wr_id)
{
	struct ibv_wc wc = {
		.wr_id = wr_id,
		.status = IBV_WC_WR_FLUSH_ERR,
		.opcode = IBV_WC_RECV,
		.qp_num = qp->qpn,
	};

	rc_cq_push(rc_resp_cq(qp), &wc, false);
	qp->cnt.completions++;
}

/* Every send WQE not yet complete, oldest first, as flushed. */
static void flush_send(struct rc_qp *qp)
{
	while (qp->sq_head != qp->sq_tail)
		rc_qp_complete_send(qp, rc_sq_at(qp, qp->sq_head), IBV_WC_WR_FLUSH_ERR);
	qp->req.wqe = qp->sq_head;
	qp->req.offset = 0;
}

static void flush_recv(struct rc_qp *qp)
{
	if (qp->resp.have_wqe) {
		qp->resp.have_wqe = false;
		complete_recv_flush(qp, qp->resp.wqe->wr_id);
	}
	if (qp->srq)
		return;
	while (rc_rq_count(&qp->rq)) {
		complete_recv_flush(qp, rc_rq_at(&qp->rq, qp->rq.head)->wr_id);
		qp->rq.head++;
	}
}

static void stop_timers(struct rc_qp *qp)
{
	rc_rto_stop(qp);
	qp->rnr_deadline = 0;
	qp->pace_deadline = 0;
	if (qp->on_timer) {
		rc_list_del(&qp->timer_link);
		qp->on_timer = false;
	}
}

static void stop_work(struct rc_qp *qp)
{
	if (qp->on_work) {
		rc_list_del(&qp->work_link);
		qp->on_work = false;
	}
	rc_budget_release(qp);
}

static void reset_queues(struct rc_qp *qp)
{
	qp->sq_head = qp->sq_tail = 0;
	qp->rq.head = qp->rq.tail = 0;
	rc_req_reset(qp);
	rc_resp_reset(qp);
}

/*
 * Completions of @qp left in its CQs.  An XRC initiator has no receive CQ, a
 * target no CQ of its own: what it completed into its SRQs' CQs stays there.
 */
static void clean_cqs(struct rc_qp *qp)
{
	if (qp->scq)
		rc_cq_clean(qp->scq, qp->qpn);
	if (qp->rcq)
		rc_cq_clean(qp->rcq, qp->qpn);
}

/**
 * rc_qp_set_state() - the one place a QP changes state.
 * @who: the user (modify) or the engine (errors); the table says who may.
 * Return: 0, or -EINVAL for a transition the table does not allow.
 */
int rc_qp_set_state(struct rc_qp *qp, enum ibv_qp_state to, enum rc_state_actor who)
{
	enum ibv_qp_state from = qp->state;

	if ((unsigned)to > IBV_QPS_ERR || !(transitions[from][to].by & who))
		return -EINVAL;
	qp->state = to;
	qp->attr.qp_state = to;
	RC_TRACE(qp, "qp", rc_qp_state_name(to));
	rc_direct_update_qp(qp, false);

	switch (to) {
	case IBV_QPS_RESET:
		stop_timers(qp);
		stop_work(qp);
		reset_queues(qp);
		clean_cqs(qp);
		break;
	case IBV_QPS_RTS:
		qp->req.drained_sent = false;
		if (qp->sq_head != qp->sq_tail)
			rc_qp_kick(qp);
		break;
	case IBV_QPS_SQD:
		qp->req.drained_sent = false;
		check_drained(qp);
		break;
	case IBV_QPS_SQE:
		/* The failed WQE is complete; the rest of the send queue is flushed. */
		stop_timers(qp);
		rc_budget_release(qp);
		flush_send(qp);
		break;
	case IBV_QPS_ERR:
		stop_timers(qp);
		stop_work(qp);
		flush_send(qp);
		flush_recv(qp);
		rc_req_reset(qp);
		rc_resp_reset(qp);
		/* An SRQ user takes no more WQEs from it: tell the application. */
		if (qp->srq && from != IBV_QPS_ERR)
			rc_async(qp->eng, IBV_EVENT_QP_LAST_WQE_REACHED, qp->user);
		break;
	default:
		break;
	}
	return 0;
}

void rc_qp_error(struct rc_qp *qp, enum ibv_event_type event, bool raise)
{
	if (qp->state == IBV_QPS_ERR || qp->state == IBV_QPS_RESET)
		return;
	rc_qp_set_state(qp, IBV_QPS_ERR, RC_BY_ENGINE);
	if (raise)
		rc_async(qp->eng, event, qp->user);
}

/* ---- Create / destroy ---- */

static int alloc_qpn(struct rc_engine *eng, uint32_t *qpn)
{
	if (eng->cfg.qpn_alloc)
		return eng->cfg.qpn_alloc(eng->cfg.qpn_arg, qpn);
	for (uint32_t tries = 0; tries < WIRE_QPN_MASK; tries++) {
		uint32_t n = eng->next_qpn++;

		if (eng->next_qpn > WIRE_QPN_MASK)
			eng->next_qpn = RC_DEFAULT_QPN;
		if (!rc_hash_get(&eng->qps, n)) {
			*qpn = n;
			return 0;
		}
	}
	return -ENOMEM;
}

static void free_qpn(struct rc_engine *eng, uint32_t qpn)
{
	if (qpn != WIRE_GSI_QPN && eng->cfg.qpn_free)
		eng->cfg.qpn_free(eng->cfg.qpn_arg, qpn);
}

static int check_init(struct rc_engine *eng, const struct rc_qp_init *init)
{
	const struct ibv_qp_cap *c = &init->cap;

	if (init->qp_type == IBV_QPT_XRC_RECV)
		return init->xrcd && init->xrcd->eng == eng && !init->pd && !init->send_cq &&
		       !init->recv_cq && !init->srq && !init->gsi ? 0 : -EINVAL;
	if (init->xrcd)
		return -EINVAL;
	if (init->qp_type == IBV_QPT_XRC_SEND) {
		if (init->recv_cq || init->srq || init->gsi)
			return -EINVAL;
	} else if (init->qp_type != IBV_QPT_RC && init->qp_type != IBV_QPT_UC &&
		   init->qp_type != IBV_QPT_UD && init->qp_type != IBV_QPT_RAW_PACKET) {
		return -EOPNOTSUPP;
	} else if (!init->recv_cq || init->recv_cq->eng != eng) {
		return -EINVAL;
	}
	if (init->gsi && init->qp_type != IBV_QPT_UD)
		return -EINVAL;
	if (init->rss && init->qp_type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	if (!init->pd || !init->send_cq || init->pd->eng != eng ||
	    init->send_cq->eng != eng || (init->srq && init->srq->eng != eng))
		return -EINVAL;
	if (c->max_send_wr > RC_MAX_QP_WR || c->max_send_sge > RC_MAX_SGE ||
	    c->max_inline_data > RC_MAX_INLINE)
		return -EINVAL;
	if (!init->srq && (c->max_recv_wr > RC_MAX_QP_WR || c->max_recv_sge > RC_MAX_SGE))
		return -EINVAL;
	return 0;
}

static uint32_t round_pow2(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* A ring from the QP's allocator (zeroed), or NULL with *@custom false for the default. */
static void *ring_get(struct rc_qp *qp, enum rc_ring_kind kind, size_t size, bool *custom,
		      int *ret)
{
	void *p;

	*custom = false;
	*ret = 0;
	if (!qp->ring_alloc.alloc)
		return NULL;
	p = qp->ring_alloc.alloc(qp->ring_alloc.arg, kind, size, RC_RING_ALIGN);
	if (p == RC_RING_DEFAULT)
		return NULL;
	if (!p) {
		*ret = -ENOMEM;
		return NULL;
	}
	memset(p, 0, size);
	*custom = true;
	return p;
}

static void rings_put(struct rc_qp *qp)
{
	if (qp->rq_custom && qp->rq.buf)
		qp->ring_alloc.free(qp->ring_alloc.arg, RC_RING_RQ, qp->rq.buf);
	rc_rq_fini(&qp->rq);
	if (qp->sq_custom)
		qp->ring_alloc.free(qp->ring_alloc.arg, RC_RING_SQ, qp->sq_buf);
	else
		free(qp->sq_buf);
}

/* Take (@d 1) or drop (-1) the references a QP holds on the objects it was created with. */
static void objects_ref(struct rc_qp *qp, int d)
{
	if (qp->pd)
		qp->pd->refs += (unsigned)d;
	if (qp->scq)
		qp->scq->refs += (unsigned)d;
	if (qp->rcq)
		qp->rcq->refs += (unsigned)d;
	if (qp->srq)
		qp->srq->refs += (unsigned)d;
	if (qp->xrcd)
		qp->xrcd->refs += (unsigned)d;
}

struct rc_qp *rc_qp_create(struct rc_engine *eng, struct rc_qp_init *init)
{
	struct ibv_qp_cap *c = &init->cap;
	struct rc_qp *qp;
	int ret;

	ret = check_init(eng, init);
	if (ret)
		goto err;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		ret = -ENOMEM;
		goto err;
	}
	qp->eng = eng;
	qp->type = init->qp_type;
	qp->pd = init->pd;
	qp->scq = init->send_cq;
	qp->rcq = init->recv_cq;
	qp->srq = init->srq;
	qp->xrcd = init->xrcd;
	qp->opc_base = init->qp_type == IBV_QPT_UC ? WIRE_OPC_UC :
		       init->qp_type == IBV_QPT_UD ? WIRE_OPC_UD :
		       init->qp_type == IBV_QPT_RC ? WIRE_OPC_RC : WIRE_OPC_XRC;
	qp->user = init->user;
	qp->sq_sig_all = init->sq_sig_all;
	qp->ring_alloc = init->ring_alloc;
	if (qp->ring_alloc.alloc && !qp->ring_alloc.free) {
		ret = -EINVAL;
		goto err_free_qp;
	}

	/* XRC: a target has no send queue, neither half a receive queue. */
	if (init->qp_type == IBV_QPT_XRC_RECV)
		*c = (struct ibv_qp_cap){ 0 };
	if (!c->max_send_sge)
		c->max_send_sge = 1;
	if (init->srq || init->qp_type == IBV_QPT_XRC_SEND || init->qp_type == IBV_QPT_XRC_RECV) {
		c->max_recv_wr = 0;
		c->max_recv_sge = 0;
	} else if (!c->max_recv_sge) {
		c->max_recv_sge = 1;
	}
	qp->cap = *c;
	qp->sq_size = round_pow2(c->max_send_wr ? c->max_send_wr : 1);
	qp->sq_stride = (uint32_t)((sizeof(struct rc_send_wqe) +
				    c->max_send_sge * sizeof(struct ibv_sge) +
				    c->max_inline_data + 7) & ~(size_t)7);
	qp->sq_buf = ring_get(qp, RC_RING_SQ, (size_t)qp->sq_size * qp->sq_stride, &qp->sq_custom,
			      &ret);
	if (!qp->sq_buf && !ret)
		qp->sq_buf = calloc(qp->sq_size, qp->sq_stride);
	if (!qp->sq_buf) {
		ret = -ENOMEM;
		goto err_free_qp;
	}
	if (!init->srq && init->qp_type != IBV_QPT_XRC_SEND && init->qp_type != IBV_QPT_XRC_RECV) {
		void *rq_buf = ring_get(qp, RC_RING_RQ, rc_rq_bytes(c->max_recv_wr, c->max_recv_sge),
					&qp->rq_custom, &ret);

		if (!ret)
			ret = rc_rq_init(&qp->rq, c->max_recv_wr, c->max_recv_sge, rq_buf);
		if (ret)
			goto err_free_rings;
	}
	qp->resp.wqe = malloc(sizeof(struct rc_recv_wqe) + RC_MAX_SGE * sizeof(struct ibv_sge));
	if (!qp->resp.wqe) {
		ret = -ENOMEM;
		goto err_free_rings;
	}
	qp->bytes = sizeof(*qp) + (size_t)qp->sq_size * qp->sq_stride +
		    (init->srq ? 0 : rc_rq_bytes(c->max_recv_wr, c->max_recv_sge)) +
		    sizeof(struct rc_recv_wqe) + RC_MAX_SGE * sizeof(struct ibv_sge);
	if (init->rss) {
		ret = rc_raw_rss_init(qp, init->rss);
		if (ret)
			goto err_free_wqe;
	}

	qp->state = IBV_QPS_RESET;
	qp->attr.qp_state = IBV_QPS_RESET;
	qp->attr.path_mtu = IBV_MTU_1024;
	qp->attr.port_num = 1;
	qp->pmtu = 1024;
	rc_list_init(&qp->work_link);
	rc_list_init(&qp->timer_link);
	rc_list_init(&qp->budget_link);
	rc_req_reset(qp);
	rc_resp_reset(qp);

	pthread_mutex_lock(&eng->lock);
	if (eng->n_qp >= RC_MAX_QP) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	if (init->gsi) {
		qp->qpn = WIRE_GSI_QPN;
		ret = rc_hash_get(&eng->qps, WIRE_GSI_QPN) ? -EBUSY : 0;
	} else {
		ret = alloc_qpn(eng, &qp->qpn);
	}
	if (ret)
		goto err_unlock;
	qp->qpn &= WIRE_QPN_MASK;
	ret = rc_hash_put(&eng->qps, qp->qpn, qp);
	if (ret)
		goto err_free_qpn;
	eng->n_qp++;
	eng->qp_bytes += qp->bytes;
	objects_ref(qp, 1);
	rc_list_add_tail(&eng->qp_list, &qp->link);
	pthread_mutex_unlock(&eng->lock);
	return qp;

err_free_qpn:
	free_qpn(eng, qp->qpn);
err_unlock:
	pthread_mutex_unlock(&eng->lock);
	free(qp->rss);
err_free_wqe:
	free(qp->resp.wqe);
err_free_rings:
	rings_put(qp);
err_free_qp:
	free(qp);
err:
	errno = -ret;
	return NULL;
}

struct rc_qp *rc_qp_open_xrc(struct rc_xrcd *xrcd, uint32_t qpn)
{
	struct rc_engine *eng = xrcd->eng;
	struct rc_qp *qp;

	pthread_mutex_lock(&eng->lock);
	qp = rc_hash_get(&eng->qps, qpn & WIRE_QPN_MASK);
	if (qp && (qp->type != IBV_QPT_XRC_RECV || qp->xrcd != xrcd))
		qp = NULL;
	pthread_mutex_unlock(&eng->lock);
	if (!qp)
		errno = EINVAL;
	return qp;
}

void *rc_qp_user(const struct rc_qp *qp)
{
	return qp->user;
}

static void qp_free(struct rc_qp *qp)
{
	free(qp->rss);
	free(qp->resp.wqe);
	rings_put(qp);
	free(qp);
}

int rc_qp_destroy(struct rc_qp *qp)
{
	struct rc_engine *eng = qp->eng;

	pthread_mutex_lock(&eng->lock);
	/* A flow holds its QP, as the kernel's uverbs does (ibv_destroy_flow first). */
	if (qp->n_flows) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	rc_resp_ack_before_stop(qp);
	rc_tx_drain(eng);
	stop_timers(qp);
	stop_work(qp);
	rc_direct_update_qp(qp, true);
	rc_mcast_qp_gone(qp);
	rc_list_del(&qp->link);
	rc_hash_del(&eng->qps, qp->qpn);
	rc_engine_retire_counters(eng, &qp->cnt);
	clean_cqs(qp);
	eng->n_qp--;
	eng->qp_bytes -= qp->bytes;
	objects_ref(qp, -1);
	free_qpn(eng, qp->qpn);
	pthread_mutex_unlock(&eng->lock);
	qp_free(qp);
	return 0;
}

void rc_qp_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->qp_list) {
		struct rc_qp *qp = container_of(pos, struct rc_qp, link);

		free_qpn(eng, qp->qpn);
		qp_free(qp);
	}
	rc_list_init(&eng->qp_list);
	rc_list_init(&eng->work);
	rc_list_init(&eng->timers);
	rc_list_init(&eng->budget_wait);
	eng->inflight = 0;
}

uint32_t rc_qp_num(const struct rc_qp *qp)
{
	return qp->qpn;
}

bool rc_qp_completions_unpolled(struct rc_engine *eng, uint32_t qpn)
{
	struct rc_qp *qp;
	bool held;

	pthread_mutex_lock(&eng->lock);
	qp = rc_hash_get(&eng->qps, qpn);
	held = qp && ((qp->scq && rc_cq_holds(qp->scq, qpn)) ||
		      (qp->rcq && rc_cq_holds(qp->rcq, qpn)));
	pthread_mutex_unlock(&eng->lock);
	return held;
}

/* ---- Modify ---- */

#define QP_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |		\
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |		\
			 IBV_ACCESS_MW_BIND | RC_ACCESS_FLUSH | IBV_ACCESS_OPTIONAL_RANGE)

static int max_mtu_enum(const struct rc_engine *eng)
{
	int e = IBV_MTU_256;

	while (e < IBV_MTU_4096 && wire_mtu_bytes((unsigned)e + 1) <= eng->port_pmtu)
		e++;
	return e;
}

/* Check every attribute value named in @mask before anything changes. */
static int check_values(struct rc_qp *qp, const struct ibv_qp_attr *a, int mask,
			struct rc_path *path)
{
	struct rc_engine *eng = qp->eng;

	if ((mask & IBV_QP_PKEY_INDEX) && a->pkey_index != 0)
		return -EINVAL;
	if ((mask & IBV_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (a->qp_access_flags & ~QP_ACCESS_KNOWN))
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (a->path_mtu < IBV_MTU_256 || (int)a->path_mtu > max_mtu_enum(eng)))
		return -EINVAL;
	if ((mask & IBV_QP_TIMEOUT) && a->timeout > 31)
		return -EINVAL;
	if ((mask & IBV_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & IBV_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > RC_MAX_RD_ATOMIC)
		return -EINVAL;
	if ((mask & IBV_QP_DEST_QPN) && a->dest_qp_num > WIRE_QPN_MASK)
		return -EINVAL;
	/* No alternate paths on RoCE (the kernel refuses them too). */
	if (mask & IBV_QP_ALT_PATH)
		return -EINVAL;
	if ((mask & IBV_QP_PATH_MIG_STATE) && a->path_mig_state != IBV_MIG_MIGRATED)
		return -EINVAL;
	if (mask & IBV_QP_AV)
		return rc_path_from_ah_attr(eng, &a->ah_attr, path);
	return 0;
}

static void build_template(struct rc_qp *qp)
{
	struct wire_build_desc *d = &qp->tmpl;

	memset(d, 0, sizeof(*d));
	rc_path_fill_desc(qp->eng, &qp->path, d);
	d->dest_qp = qp->attr.dest_qp_num;
	d->udp_sport = wire_path_udp_sport(qp->path.flow_label, qp->qpn, qp->attr.dest_qp_num);
	d->pkey = WIRE_DEFAULT_PKEY;
}

static void apply(struct rc_qp *qp, const struct ibv_qp_attr *a, int mask,
		  const struct rc_path *path)
{
	struct ibv_qp_attr *q = &qp->attr;

	if (mask & IBV_QP_PKEY_INDEX)
		q->pkey_index = a->pkey_index;
	if (mask & IBV_QP_PORT)
		q->port_num = a->port_num;
	if (mask & IBV_QP_QKEY)
		q->qkey = a->qkey;
	if (mask & IBV_QP_ACCESS_FLAGS)
		q->qp_access_flags = a->qp_access_flags;
	if (mask & IBV_QP_AV) {
		q->ah_attr = a->ah_attr;
		qp->path = *path;
	}
	if (mask & IBV_QP_PATH_MTU) {
		q->path_mtu = a->path_mtu;
		qp->pmtu = wire_mtu_bytes(a->path_mtu);
	}
	if (mask & IBV_QP_TIMEOUT) {
		q->timeout = a->timeout;
		/* ibv_modify_qp(3): 4.096 us * 2^timeout; 0 means wait forever. */
		qp->timeout_ns = a->timeout ? 4096ull << a->timeout : 0;
	}
	if (mask & IBV_QP_RETRY_CNT) {
		q->retry_cnt = a->retry_cnt;
		qp->comp.retry_left = a->retry_cnt;
	}
	if (mask & IBV_QP_RNR_RETRY) {
		q->rnr_retry = a->rnr_retry;
		qp->comp.rnr_left = a->rnr_retry;
	}
	if (mask & IBV_QP_MIN_RNR_TIMER)
		q->min_rnr_timer = a->min_rnr_timer;
	/*
	 * The initiator depth is capped at what we support, not refused: perftest sets it to
	 * the peer's max_qp_rd_atom (rxe: 128), and fewer reads in flight than the responder
	 * allows is always safe (IBA 9.5: the requester's limit).  bnxt_re caps it the same way.
	 * max_dest_rd_atomic is responder resources we would have to have: refused above.
	 */
	if (mask & IBV_QP_MAX_QP_RD_ATOMIC)
		q->max_rd_atomic = a->max_rd_atomic < RC_MAX_RD_ATOMIC ? a->max_rd_atomic :
									 RC_MAX_RD_ATOMIC;
	if (mask & IBV_QP_MAX_DEST_RD_ATOMIC) {
		q->max_dest_rd_atomic = a->max_dest_rd_atomic;
		qp->resp.nres = a->max_dest_rd_atomic ? a->max_dest_rd_atomic : 1;
	}
	if (mask & IBV_QP_DEST_QPN)
		q->dest_qp_num = a->dest_qp_num;
	if (mask & IBV_QP_RQ_PSN) {
		q->rq_psn = a->rq_psn & WIRE_PSN_MASK;
		qp->resp.epsn = q->rq_psn;
	}
	if (mask & IBV_QP_SQ_PSN) {
		q->sq_psn = a->sq_psn & WIRE_PSN_MASK;
		qp->req.psn = q->sq_psn;
		qp->req.max_psn = q->sq_psn;
		qp->comp.psn = q->sq_psn;
	}
	if (mask & IBV_QP_EN_SQD_ASYNC_NOTIFY)
		q->en_sqd_async_notify = a->en_sqd_async_notify;
	if (mask & IBV_QP_PATH_MIG_STATE)
		q->path_mig_state = a->path_mig_state;
	if ((mask & (IBV_QP_AV | IBV_QP_DEST_QPN)) && qp->type != IBV_QPT_UD)
		build_template(qp);
}

int rc_qp_modify(struct rc_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct rc_engine *eng = qp->eng;
	enum ibv_qp_state cur, next;
	const struct qp_transition *t;
	struct rc_path path;
	int req, opt, ret;

	pthread_mutex_lock(&eng->lock);
	cur = qp->state;
	ret = -EINVAL;
	if (mask & IBV_QP_CUR_STATE) {
		if (cur != IBV_QPS_RTR && cur != IBV_QPS_RTS && cur != IBV_QPS_SQD &&
		    cur != IBV_QPS_SQE)
			goto out;
		if (attr->cur_qp_state != cur)
			goto out;
	}
	next = (mask & IBV_QP_STATE) ? attr->qp_state : cur;
	if ((unsigned)next > IBV_QPS_ERR)
		goto out;
	t = &transitions[cur][next];
	if (!(t->by & RC_BY_USER))
		goto out;
	req = t->req[type_index(qp->type)];
	opt = t->opt[type_index(qp->type)];
	if ((mask & req) != req || (mask & ~(req | opt | IBV_QP_STATE)))
		goto out;
	ret = check_values(qp, attr, mask, &path);
	if (ret)
		goto out;
	apply(qp, attr, mask, &path);
	if (next == IBV_QPS_RESET || next == IBV_QPS_ERR) {
		rc_resp_ack_before_stop(qp);
		rc_tx_drain(eng);
	}
	if (next != cur || next == IBV_QPS_RESET || next == IBV_QPS_ERR)
		ret = rc_qp_set_state(qp, next, RC_BY_USER);
	else if (mask & IBV_QP_ACCESS_FLAGS)
		rc_direct_update_qp(qp, false);
out:
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

int rc_qp_query(struct rc_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init)
{
	(void)mask;
	pthread_mutex_lock(&qp->eng->lock);
	*attr = qp->attr;
	attr->qp_state = qp->state;
	attr->cur_qp_state = qp->state;
	attr->cap = qp->cap;
	attr->sq_draining = qp->state == IBV_QPS_SQD && qp->sq_head != qp->req.wqe;
	if (init) {
		/* The provider fills the ibv_* object pointers it owns. */
		memset(init, 0, sizeof(*init));
		init->qp_type = qp->type;
		init->cap = qp->cap;
		init->sq_sig_all = qp->sq_sig_all;
	}
	pthread_mutex_unlock(&qp->eng->lock);
	return 0;
}

/* ---- Posting ---- */

static int enqueue_send(struct rc_qp *qp, const struct ibv_send_wr *wr)
{
	const struct rc_wr_opcode_info *op;
	struct rc_send_wqe *w;
	uint64_t len = 0;
	bool inl;

	if ((unsigned)wr->opcode >= RC_WR_OPCODE_COUNT)
		return -EINVAL;
	op = &rc_wr_opcode_info[wr->opcode];
	if (!(op->qp_types & RC_QPT_BIT(qp->type)))
		return -EINVAL;
	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge)
		return -EINVAL;
	if (qp->sq_tail - qp->sq_head >= qp->cap.max_send_wr)
		return -ENOMEM;
	for (int i = 0; i < wr->num_sge; i++)
		len += wr->sg_list[i].length;
	inl = (wr->send_flags & IBV_SEND_INLINE) && !(op->kind & RC_WR_READ_OR_ATOMIC);
	if (inl && len > qp->cap.max_inline_data)
		return -EINVAL;
	if ((op->kind & (RC_WR_ATOMIC | RC_WR_ATOMIC_WRITE)) && (wr->num_sge != 1 || len != 8))
		return -EINVAL;
	if (qp->type == IBV_QPT_UD && !wr->wr.ud.ah)
		return -EINVAL;
	if (wr->opcode == IBV_WR_BIND_MW && (!wr->bind_mw.mw || wr->num_sge))
		return -EINVAL;

	w = rc_sq_at(qp, qp->sq_tail);
	memset(w, 0, sizeof(*w));
	w->wr_id = wr->wr_id;
	w->opcode = (uint8_t)wr->opcode;
	w->state = RC_WQE_POSTED;
	w->signaled = wr->send_flags & IBV_SEND_SIGNALED;
	w->fence = wr->send_flags & IBV_SEND_FENCE;
	w->solicited = wr->send_flags & IBV_SEND_SOLICITED;
	w->is_inline = inl;
	/* Lengths beyond 2^31 fail when the WQE starts (local length error). */
	w->length = len > UINT32_MAX ? UINT32_MAX : (uint32_t)len;
	if (qp->type == IBV_QPT_XRC_SEND)
		w->xrc_srqn = wr->qp_type.xrc.remote_srqn & WIRE_SRQN_MASK;
	if (op->flags & RC_WR_INV)
		w->imm = wr->invalidate_rkey;
	else
		w->imm = be32toh(wr->imm_data);

	if (inl) {
		uint8_t *dst = rc_wqe_inline(w, qp->cap.max_send_sge);

		for (int i = 0; i < wr->num_sge; i++) {
			memcpy(dst, (const void *)(uintptr_t)wr->sg_list[i].addr,
			       wr->sg_list[i].length);
			dst += wr->sg_list[i].length;
		}
		w->num_sge = 0;
	} else {
		w->num_sge = (uint32_t)wr->num_sge;
		if (wr->num_sge)
			memcpy(w->sge, wr->sg_list, (size_t)wr->num_sge * sizeof(struct ibv_sge));
	}

	if (wr->opcode == IBV_WR_BIND_MW) {
		const struct ibv_mw_bind_info *bi = &wr->bind_mw.bind_info;

		w->u.bind.mw = rc_mw_from_ibv(wr->bind_mw.mw);
		w->u.bind.rkey = wr->bind_mw.rkey;
		w->u.bind.has_mr = bi->mr != NULL;
		w->u.bind.lkey = bi->mr ? bi->mr->lkey : 0;
		w->u.bind.addr = bi->addr;
		w->u.bind.len = bi->length;
		w->u.bind.access = (int)bi->mw_access_flags;
	} else if (qp->type == IBV_QPT_UD) {
		struct rc_ah *ah = rc_ah_from_ibv(wr->wr.ud.ah);

		w->u.ud.path = ah->path;
		w->u.ud.remote_qpn = wr->wr.ud.remote_qpn & WIRE_QPN_MASK;
		w->u.ud.remote_qkey = wr->wr.ud.remote_qkey;
	} else if (op->kind & RC_WR_ATOMIC_WRITE) {
		/*
		 * Inline (as ibv_wr_atomic_write() posts it) the value is taken
		 * now from the host address; otherwise the SGE is read when sent.
		 */
		if (wr->send_flags & IBV_SEND_INLINE) {
			memcpy(&w->u.rc.compare_add, (const void *)(uintptr_t)wr->sg_list[0].addr, 8);
			w->num_sge = 0;
		}
		w->u.rc.remote_addr = wr->wr.rdma.remote_addr;
		w->u.rc.rkey = wr->wr.rdma.rkey;
	} else if (op->kind & RC_WR_ATOMIC) {
		w->u.rc.remote_addr = wr->wr.atomic.remote_addr;
		w->u.rc.rkey = wr->wr.atomic.rkey;
		w->u.rc.compare_add = wr->wr.atomic.compare_add;
		w->u.rc.swap = wr->wr.atomic.swap;
	} else {
		w->u.rc.remote_addr = wr->wr.rdma.remote_addr;
		w->u.rc.rkey = wr->wr.rdma.rkey;
	}
	qp->sq_tail++;
	return 0;
}

int rc_post_send(struct rc_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr)
{
	struct rc_engine *eng = qp->eng;
	bool posted = false;
	int ret = 0;

	pthread_mutex_lock(&eng->lock);
	if (!rc_qp_states[qp->state].post_send) {
		ret = -EINVAL;
		*bad_wr = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		ret = enqueue_send(qp, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
		posted = true;
	}
	if (posted) {
		/* Work posted where nothing sends it (SQE, ERR) completes at once, flushed. */
		if (!rc_qp_may_send(qp))
			flush_send(qp);
		else
			rc_qp_kick(qp);
		/* A pass already under way may have served the work list before this. */
		atomic_store(&eng->pass_wanted, true);
	}
out:
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

int rc_post_recv(struct rc_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	struct rc_engine *eng = qp->eng;
	int ret = 0;

	pthread_mutex_lock(&eng->lock);
	if (!rc_qp_states[qp->state].post_recv || qp->srq || !qp->rq.buf) {
		ret = -EINVAL;
		*bad_wr = wr;
		goto out;
	}
	for (; wr; wr = wr->next) {
		ret = rc_rq_post(&qp->rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	if (qp->state == IBV_QPS_ERR)
		flush_recv(qp);
out:
	pthread_mutex_unlock(&eng->lock);
	return ret;
}
