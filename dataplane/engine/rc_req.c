// SPDX-License-Identifier: MIT
/*
 * The requester: turns send WQEs into packets (IBA ch. 9.4, 9.7, 9.8), one
 * PSN per packet, and rewinds to the oldest unacknowledged PSN on a NAK, a
 * detected gap, an RNR NAK's timer or the local ACK timeout (Go-Back-N).
 */
#include <errno.h>

#include "rc_internal.h"

enum req_state {
	REQ_GET_WQE,		/* the WQE at the send cursor */
	REQ_START_WQE,		/* gates (SQD, fence, max_rd_atomic), checks, PSNs */
	REQ_CHECK_WINDOW,	/* unacknowledged PSNs below RC_WINDOW */
	REQ_CHECK_ROUTE,	/* destination MAC known */
	REQ_SEND_PACKET,	/* one packet of the WQE */
	REQ_NEXT_WQE,		/* the WQE is fully sent */
	REQ_STALL,		/* blocked until an event (ACK, timer, completion) */
	REQ_AGAIN,		/* more to do, next pass (quota, no buffer, MAC pending) */
	REQ_DONE,		/* nothing left */
};

static const char *const req_state_name[] = {
	[REQ_GET_WQE]		= "GET_WQE",
	[REQ_START_WQE]		= "START_WQE",
	[REQ_CHECK_WINDOW]	= "CHECK_WINDOW",
	[REQ_CHECK_ROUTE]	= "CHECK_ROUTE",
	[REQ_SEND_PACKET]	= "SEND_PACKET",
	[REQ_NEXT_WQE]		= "NEXT_WQE",
	[REQ_STALL]		= "STALL",
	[REQ_AGAIN]		= "AGAIN",
	[REQ_DONE]		= "DONE",
};

struct req_ctx {
	struct rc_qp		*qp;
	struct rc_send_wqe	*w;
	unsigned		quota;
	unsigned		sent;
	int			err;	/* -ENOBUFS when the port ran out */
};

static uint32_t qp_pmtu(const struct rc_qp *qp)
{
	return qp->type == IBV_QPT_UD ? qp->eng->port_pmtu : qp->pmtu;
}

static unsigned max_rd_atomic(const struct rc_qp *qp)
{
	/* 0 would block every read forever; one at a time is the least. */
	return qp->attr.max_rd_atomic ? qp->attr.max_rd_atomic : 1;
}

void rc_req_reset(struct rc_qp *qp)
{
	qp->req.psn = qp->attr.sq_psn;
	qp->req.max_psn = qp->attr.sq_psn;
	qp->req.wqe = qp->sq_head;
	qp->req.offset = 0;
	qp->req.cur.idx = qp->req.cur.off = 0;
	qp->req.since_ackreq = 0;
	qp->req.rd_atomic = 0;
	qp->req.rnr_wait = false;
	qp->req.peer_sr = false;
	qp->req.rereads_wanted = false;
	qp->req.sr.active = false;
	qp->req.sr.reread = false;
	qp->comp.psn = qp->attr.sq_psn;
	qp->comp.resp_high = psn_add(qp->attr.sq_psn, WIRE_PSN_MASK);
	qp->req.reread_seq = 0;
	qp->comp.reread_answered = 0;
	qp->comp.reread_watch = false;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.rewound = false;
	rc_rto_reset(qp);
	rc_dcqcn_reset(qp);
}

static bool sr_resend_done(struct rc_qp *qp, const struct rc_send_wqe *w);

/* The WQE fails locally: the completer reports it once the WQEs before it are done. */
static enum req_state fail_wqe(struct req_ctx *c, enum ibv_wc_status st)
{
	c->w->state = RC_WQE_ERROR;
	c->w->status = (uint8_t)st;
	rc_comp_run(c->qp);
	return REQ_STALL;
}

static enum req_state get_wqe(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;

	if (qp->req.rnr_wait)
		return REQ_STALL;
	if (unlikely(qp->req.rereads_wanted) && !qp->req.sr.active)
		(void)rc_req_reread(qp);
	if (unlikely(qp->req.sr.active) &&
	    sr_resend_done(qp, qp->req.wqe == qp->sq_tail ? NULL : rc_sq_at(qp, qp->req.wqe)))
		return REQ_GET_WQE;
	if (qp->req.wqe == qp->sq_tail)
		return REQ_DONE;
	c->w = rc_sq_at(qp, qp->req.wqe);
	switch (c->w->state) {
	case RC_WQE_POSTED:
		return REQ_START_WQE;
	case RC_WQE_ACTIVE:
		/* A read all of whose responses came ahead of an earlier one's has nothing to ask. */
		if (c->w->opcode == IBV_WR_RDMA_READ && c->w->resp_pkts == c->w->npkts) {
			c->w->reread_want = false;
			qp->req.psn = psn_add(c->w->last_psn, 1);
			return REQ_NEXT_WQE;
		}
		return REQ_CHECK_WINDOW;
	case RC_WQE_ERROR:
		return REQ_STALL;
	default:
		return REQ_NEXT_WQE;
	}
}

/* Local checks: keys, access and length of the local buffers. */
static enum ibv_wc_status check_local(struct rc_qp *qp, const struct rc_send_wqe *w)
{
	int access = 0;

	if (qp->type == IBV_QPT_UD ? w->length > qp->eng->port_pmtu : w->length > RC_MAX_MSG_SIZE)
		return IBV_WC_LOC_LEN_ERR;
	/* PSN distances must stay below 2^23: at most 2^22 packets in one message. */
	if (w->length / qp_pmtu(qp) >= RC_MAX_MSG_PKTS)
		return IBV_WC_LOC_LEN_ERR;
	if (w->is_inline)
		return IBV_WC_SUCCESS;
	/* Where responses land; an atomic write's SGE is its source. */
	if (rc_wqe_op(w)->kind & (RC_WR_READ | RC_WR_ATOMIC))
		access = IBV_ACCESS_LOCAL_WRITE;
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];

		if (s->length && !rc_mr_local(qp->eng, qp->pd, s->lkey, s->addr, s->length, access))
			return IBV_WC_LOC_PROT_ERR;
	}
	return IBV_WC_SUCCESS;
}

/*
 * Bind a window or invalidate a key: done here, in send queue order, no
 * packet; the completer reports it in its turn.  Its PSN range is empty.
 */
static enum req_state local_op(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_send_wqe *w = c->w;

	if (w->opcode == IBV_WR_BIND_MW ? rc_mw_bind(qp, w) :
	    rc_mr_invalidate(qp->eng, qp->pd, qp->qpn, w->imm))
		return fail_wqe(c, w->opcode == IBV_WR_BIND_MW ? IBV_WC_MW_BIND_ERR :
				IBV_WC_LOC_QP_OP_ERR);
	w->npkts = 0;
	w->first_psn = qp->req.psn;
	w->last_psn = psn_add(qp->req.psn, WIRE_PSN_MASK);
	w->state = RC_WQE_DONE;
	return REQ_NEXT_WQE;
}

static enum req_state start_wqe(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_send_wqe *w = c->w;
	uint8_t kind = rc_wqe_op(w)->kind;
	enum ibv_wc_status st;
	uint32_t pmtu = qp_pmtu(qp);

	/* SQD: WQEs already started finish, new ones wait. */
	if (!rc_qp_states[qp->state].start)
		return REQ_STALL;
	/* A fenced WQE waits for every earlier read and atomic to complete. */
	if (w->fence && qp->req.rd_atomic)
		return REQ_STALL;
	if ((kind & RC_WR_READ_OR_ATOMIC) && qp->req.rd_atomic >= max_rd_atomic(qp))
		return REQ_STALL;
	if (kind & RC_WR_LOCAL)
		return local_op(c);
	st = check_local(qp, w);
	if (st != IBV_WC_SUCCESS)
		return fail_wqe(c, st);
	/* To another process of this host: copied into or from its memory, no packet. */
	if (rc_direct_try(qp, w)) {
		w->npkts = 0;
		w->first_psn = qp->req.psn;
		w->last_psn = psn_add(qp->req.psn, WIRE_PSN_MASK);
		w->state = RC_WQE_DONE;
		return REQ_NEXT_WQE;
	}

	if (kind & RC_WR_READ_OR_ATOMIC) {
		/* None outstanding: no response older than this one counts as the highest. */
		if (!qp->req.rd_atomic)
			qp->comp.resp_high = psn_add(qp->req.psn, WIRE_PSN_MASK);
		w->rd_atomic_held = true;
		qp->req.rd_atomic++;
	}
	w->reread_want = false;
	w->rereading = false;
	if ((kind & (RC_WR_ATOMIC | RC_WR_ATOMIC_WRITE)) || qp->type == IBV_QPT_UD)
		w->npkts = 1;
	else
		w->npkts = w->length ? (w->length + pmtu - 1) / pmtu : 1;
	w->first_psn = qp->req.psn;
	w->last_psn = psn_add(w->first_psn, w->npkts - 1);
	w->resp_pkts = 0;
	w->resp_cur.idx = w->resp_cur.off = 0;
	w->state = RC_WQE_ACTIVE;
	qp->req.offset = 0;
	qp->req.cur.idx = qp->req.cur.off = 0;
	return REQ_CHECK_WINDOW;
}

static enum req_state check_window(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;

	if (c->sent >= c->quota)
		return REQ_AGAIN;
	if (unlikely(qp->req.sr.active) && sr_resend_done(qp, c->w))
		return REQ_GET_WQE;
	/* A reread asks for PSNs the window took in when the read was first sent. */
	if (rc_qp_reliable(qp) && !qp->req.sr.reread &&
	    psn_cmp(qp->req.psn, qp->comp.psn) >= (int32_t)qp->rto.cwnd)
		return REQ_STALL;
	/* New PSNs wait for the engine's budget; a resend goes at once (its PSNs are counted). */
	if (rc_qp_reliable(qp) && qp->req.psn == qp->req.max_psn && !rc_budget_may_send(qp))
		return REQ_STALL;
	if (unlikely(qp->cc.limited) && !rc_dcqcn_may_send(qp))
		return REQ_STALL;
	return REQ_CHECK_ROUTE;
}

static enum req_state check_route(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_path *p = qp->type == IBV_QPT_UD ? &c->w->u.ud.path : &qp->path;
	int ret;

	if (likely(p->mac_ok))
		return REQ_SEND_PACKET;
	ret = rc_path_resolve(qp->eng, p);
	if (ret == -EAGAIN)
		return REQ_AGAIN;
	if (ret)
		/* No way to the peer: an error completion, never a hang. */
		return fail_wqe(c, qp->type == IBV_QPT_UD ? IBV_WC_GENERAL_ERR : IBV_WC_RETRY_EXC_ERR);
	if (qp->type != IBV_QPT_UD)
		memcpy(qp->tmpl.dst_mac, p->dmac, 6);
	return REQ_SEND_PACKET;
}

struct gather_arg {
	struct rc_qp		*qp;
	struct rc_send_wqe	*w;
};

/* Payload straight from the user's buffers (or the inline copy) into the frame. */
static int gather(void *arg, uint8_t *dst, uint32_t len, uint32_t *crc)
{
	struct gather_arg *g = arg;
	struct rc_qp *qp = g->qp;

	if (g->w->is_inline) {
		const uint8_t *src = rc_wqe_inline(g->w, qp->cap.max_send_sge) + qp->req.offset;

		if (crc)
			*crc = wire_crc32_copy(*crc, dst, src, len);
		else
			memcpy(dst, src, len);
		return 0;
	}
	return rc_sge_gather(qp->eng, qp->pd, g->w->sge, g->w->num_sge, &qp->req.cur, dst, len,
			     crc);
}

/* An atomic write's 8 bytes, kept in the WQE since it was posted inline. */
static int gather_atomic_write(void *arg, uint8_t *dst, uint32_t len, uint32_t *crc)
{
	const struct gather_arg *g = arg;
	const uint8_t *src = (const uint8_t *)&g->w->u.rc.compare_add;

	if (crc)
		*crc = wire_crc32_copy(*crc, dst, src, len);
	else
		memcpy(dst, src, len);
	return 0;
}

/* The low five bits of a packet's opcode: its place in the send or write (IBA 9.7). */
static uint8_t send_opcode(const struct rc_wr_opcode_info *op, bool first, bool last)
{
	bool imm = op->flags & RC_WR_IMM, inv = op->flags & RC_WR_INV;

	if (op->kind & RC_WR_WRITE) {
		if (first && last)
			return imm ? WIRE_OP_WRITE_ONLY_IMM : WIRE_OP_WRITE_ONLY;
		if (first)
			return WIRE_OP_WRITE_FIRST;
		if (!last)
			return WIRE_OP_WRITE_MIDDLE;
		return imm ? WIRE_OP_WRITE_LAST_IMM : WIRE_OP_WRITE_LAST;
	}
	if (first && last)
		return inv ? WIRE_OP_SEND_ONLY_INV : imm ? WIRE_OP_SEND_ONLY_IMM : WIRE_OP_SEND_ONLY;
	if (first)
		return WIRE_OP_SEND_FIRST;
	if (!last)
		return WIRE_OP_SEND_MIDDLE;
	return inv ? WIRE_OP_SEND_LAST_INV : imm ? WIRE_OP_SEND_LAST_IMM : WIRE_OP_SEND_LAST;
}

static void ud_desc(struct rc_qp *qp, const struct rc_send_wqe *w, struct wire_build_desc *d)
{
	memset(d, 0, sizeof(*d));
	rc_path_fill_desc(qp->eng, &w->u.ud.path, d);
	d->dest_qp = w->u.ud.remote_qpn;
	d->udp_sport = wire_udp_sport(qp->qpn, w->u.ud.remote_qpn);
	d->pkey = WIRE_DEFAULT_PKEY;
	/* A Q_Key with the high bit set means "use the QP's own" (controlled Q_Keys). */
	d->deth.qkey = (w->u.ud.remote_qkey & 0x80000000u) ? qp->attr.qkey : w->u.ud.remote_qkey;
	d->deth.src_qp = qp->qpn;
}

/**
 * build_desc() - headers of the next packet of @w.
 * @payload: out, payload bytes of this packet.
 * @npsn: out, PSNs this packet consumes (a read request takes one per response).
 * @last: out, the packet ends the request.
 */
static void build_desc(struct rc_qp *qp, struct rc_send_wqe *w, struct wire_build_desc *d,
		       uint32_t *payload, uint32_t *npsn, bool *last)
{
	uint32_t pmtu = qp_pmtu(qp);
	uint8_t base = qp->opc_base;

	if (qp->type == IBV_QPT_UD)
		ud_desc(qp, w, d);
	else
		*d = qp->tmpl;
	d->psn = qp->req.psn;
	d->xrc_srqn = w->xrc_srqn;
	*payload = 0;
	*npsn = 1;
	*last = true;

	switch (w->opcode) {
	case IBV_WR_RDMA_READ: {
		/* A retried read asks only for what has not arrived. */
		uint32_t done = w->resp_pkts * pmtu;

		d->opcode = base | WIRE_OP_READ_REQUEST;
		d->reth.va = w->u.rc.remote_addr + done;
		d->reth.rkey = w->u.rc.rkey;
		d->reth.len = w->length - done;
		*npsn = w->npkts - w->resp_pkts;
		return;
	}
	case IBV_WR_ATOMIC_CMP_AND_SWP:
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		d->opcode = base | (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
					   WIRE_OP_COMPARE_SWAP : WIRE_OP_FETCH_ADD);
		d->atomic.va = w->u.rc.remote_addr;
		d->atomic.rkey = w->u.rc.rkey;
		if (w->opcode == IBV_WR_ATOMIC_CMP_AND_SWP) {
			d->atomic.swap_add = w->u.rc.swap;
			d->atomic.compare = w->u.rc.compare_add;
		} else {
			d->atomic.swap_add = w->u.rc.compare_add;
		}
		return;
	case IBV_WR_ATOMIC_WRITE:
		d->opcode = base | WIRE_OP_ATOMIC_WRITE;
		d->reth.va = w->u.rc.remote_addr;
		d->reth.rkey = w->u.rc.rkey;
		d->reth.len = 8;
		*payload = 8;
		return;
	default: {
		const struct rc_wr_opcode_info *op = rc_wqe_op(w);
		uint32_t remaining = w->length - qp->req.offset;
		bool first = qp->req.offset == 0;

		*last = remaining <= pmtu;
		*payload = *last ? remaining : pmtu;
		d->opcode = base | send_opcode(op, first, *last);
		if ((op->kind & RC_WR_WRITE) && first) {
			d->reth.va = w->u.rc.remote_addr;
			d->reth.rkey = w->u.rc.rkey;
			d->reth.len = w->length;
		}
		if (*last) {
			d->imm = w->imm;
			d->ieth_rkey = w->imm;
			d->se = w->solicited && w->opcode != IBV_WR_RDMA_WRITE;
		}
		return;
	}
	}
}

/*
 * The first read in [@i, @end) that the completer wants asked again, sq_tail
 * when none; a read that got all its responses meanwhile no longer wants it.
 */
static uint32_t next_reread(const struct rc_qp *qp, uint32_t i, uint32_t end)
{
	for (; i != end && i != qp->sq_tail; i++) {
		struct rc_send_wqe *w = rc_sq_at(qp, i);

		if (!w->reread_want)
			continue;
		if (w->resp_pkts < w->npkts &&
		    (w->state == RC_WQE_SENT || w->state == RC_WQE_ACTIVE))
			return i;
		w->reread_want = false;
	}
	return qp->sq_tail;
}

/* The reread cursor moves to read @i, to ask for what it misses. */
static void goto_reread(struct rc_qp *qp, uint32_t i)
{
	struct rc_req *q = &qp->req;
	struct rc_send_wqe *w = rc_sq_at(qp, i);

	w->state = RC_WQE_ACTIVE;
	q->wqe = i;
	q->psn = psn_add(w->first_psn, w->resp_pkts);
	q->offset = 0;
	q->cur.idx = q->cur.off = 0;
	q->sr.from = q->psn;
	q->sr.end = psn_add(w->last_psn, 1);
	rc_rto_rewound(qp, q->psn);
	rc_qp_kick(qp);
}

/* A selective resend starts: where the cursor is, for sr_jump() to come back to. */
static void sr_save(struct rc_req *q)
{
	q->sr.active = true;
	q->sr.psn = q->psn;
	q->sr.wqe = q->wqe;
	q->sr.offset = q->offset;
	q->sr.cur = q->cur;
	q->sr.since_ackreq = q->since_ackreq;
}

/*
 * The end of a selective resend: the cursor goes back to where it was.
 * Every WQE it passes on the way was sent whole before.
 */
static void sr_jump(struct rc_qp *qp)
{
	struct rc_req *q = &qp->req;

	for (uint32_t j = q->wqe; (int32_t)(q->sr.wqe - j) > 0; j++) {
		struct rc_send_wqe *x = rc_sq_at(qp, j);

		if (x->state == RC_WQE_ACTIVE)
			x->state = RC_WQE_SENT;
	}
	q->psn = q->sr.psn;
	q->wqe = q->sr.wqe;
	q->offset = q->sr.offset;
	q->cur = q->sr.cur;
	q->since_ackreq = q->sr.since_ackreq;
	q->sr.active = false;
	q->sr.reread = false;
}

/*
 * Whether the responder took the packet at the cursor (of @w) while the
 * hole was open: only packets of non-empty writes whose first packet came
 * before the hole (docs/engine.md, "Selective repeat").  Anything else was
 * dropped and goes with the hole.
 */
static bool sr_was_placed(const struct rc_qp *qp, const struct rc_send_wqe *w)
{
	if (!(rc_wqe_op(w)->kind & RC_WR_WRITE) || !w->length)
		return false;
	return psn_cmp(w->first_psn, qp->req.sr.from) < 0 ||
	       psn_cmp(w->first_psn, qp->req.psn) >= 0;
}

/*
 * The cursor reached the end of a selective resend: back to the front
 * (true), unless the packet at it (of @w, NULL at the end of the queue)
 * was not placed and must go as well: the resend grows by one.
 */
static bool sr_resend_done(struct rc_qp *qp, const struct rc_send_wqe *w)
{
	struct rc_req *q = &qp->req;
	uint32_t i;

	if (q->sr.reread) {
		i = next_reread(qp, q->wqe, q->sr.wqe);
		if (i == qp->sq_tail) {
			sr_jump(qp);
			return true;
		}
		if (i == q->wqe && rc_sq_at(qp, i)->state == RC_WQE_ACTIVE)
			return false;
		goto_reread(qp, i);
		return true;
	}
	if (psn_cmp(q->psn, q->sr.end) < 0)
		return false;
	if (w && w->state == RC_WQE_ACTIVE && psn_cmp(q->psn, q->sr.psn) < 0 &&
	    !sr_was_placed(qp, w)) {
		q->sr.end = psn_add(q->psn, 1);
		return false;
	}
	sr_jump(qp);
	return true;
}

static enum req_state send_packet(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_send_wqe *w = c->w;
	struct gather_arg g = { qp, w };
	struct rc_sge_cursor ref_cur = qp->req.cur;	/* moves once the packet is sent */
	const uint8_t *ref = NULL;
	struct wire_build_desc d;
	uint32_t payload, npsn;
	bool last, local, first, mcast;
	uint64_t tx_bytes = qp->cnt.tx_bytes;
	int ret;

	/* A read asks from its first response not placed yet (some may have come ahead, rc_comp.c). */
	if (w->opcode == IBV_WR_RDMA_READ)
		qp->req.psn = psn_add(w->first_psn, w->resp_pkts);
	build_desc(qp, w, &d, &payload, &npsn, &last);
	if (rc_qp_reliable(qp) && !(rc_wqe_op(w)->kind & RC_WR_READ_OR_ATOMIC)) {
		qp->req.since_ackreq++;
		/*
		 * AckReq on the last packet, periodically inside long messages, twice
		 * per window while it is small after a loss (the ACKs open it), at
		 * its edge or the engine's budget's, and often enough while paced
		 * that ACKs keep coming.
		 */
		if (last || qp->req.since_ackreq >= RC_ACKREQ_PERIOD ||
		    rc_budget_filling(qp->eng, npsn) ||
		    (unlikely(qp->cc.limited) && rc_dcqcn_ackreq_due(qp, payload)) ||
		    qp->req.since_ackreq >= qp->rto.cwnd / 2 ||
		    psn_cmp(qp->req.psn, qp->comp.psn) >= (int32_t)qp->rto.cwnd - 1) {
			d.ackreq = true;
			qp->req.since_ackreq = 0;
			qp->cc.ackreq_at = qp->eng->now;
		}
	}
	d.sr_cap = qp->req.peer_sr;
	local = qp->type == IBV_QPT_UD ? w->u.ud.path.local : qp->path.local;
	/* A group's datagram: built for this host's members, and the same frame to the wire. */
	mcast = qp->type == IBV_QPT_UD && w->u.ud.path.mcast;
	local |= mcast;
	qp->eng->tap_off = mcast;
	/*
	 * By reference only for RC: its buffers stay put until the ACK; UC and
	 * UD complete when sent, and the application may reuse them at once.
	 */
	if (rc_qp_reliable(qp) && !w->is_inline && rc_tx_can_ref(qp->eng, local, &d, payload))
		ref = rc_sge_ref(qp->eng, qp->pd, w->sge, w->num_sge, &ref_cur, payload);
	ret = rc_tx_packet(qp->eng, qp, local, &d, payload,
			   w->opcode == IBV_WR_ATOMIC_WRITE && !w->num_sge ? gather_atomic_write : gather,
			   &g, ref);
	qp->eng->tap_off = false;
	if (mcast && !ret)
		ret = rc_tx_mirror_self(qp->eng);
	if (ref && !ret)
		qp->req.cur = ref_cur;
	if (unlikely(ret == -ENOBUFS)) {
		c->err = ret;
		return REQ_AGAIN;
	}
	if (unlikely(ret))
		return fail_wqe(c, IBV_WC_LOC_PROT_ERR);
	if (unlikely(qp->cc.limited))
		rc_dcqcn_sent(qp, (uint32_t)(qp->cnt.tx_bytes - tx_bytes));

	first = psn_cmp(qp->req.psn, qp->req.max_psn) >= 0;
	if (!first)
		qp->cnt.retransmits++;
	if (unlikely(qp->req.sr.active))
		qp->cnt.selective_resends++;
	if (w->opcode == IBV_WR_RDMA_READ && !first) {
		/* A resend's own answers may still come after a later one is sent. */
		w->reread_high = w->rereading && psn_cmp(qp->comp.resp_high, w->last_psn) > 0 ?
				 qp->comp.resp_high : w->last_psn;
		w->reread_want = false;
		w->rereading = true;
		w->reread_psn = qp->req.psn;
		w->reread_next = qp->req.max_psn;
		w->reread_seq = ++qp->req.reread_seq;
		if (!qp->comp.reread_watch) {
			qp->comp.reread_watch = true;
			qp->comp.watch_psn = qp->req.max_psn;
		}
		if (qp->req.sr.reread)
			qp->cnt.rereads++;
	}
	if (first)
		qp->req.max_psn = psn_add(qp->req.psn, npsn);
	if (rc_qp_reliable(qp))
		rc_rto_sent(qp, qp->req.psn, first,
			    d.ackreq || (rc_wqe_op(w)->kind & RC_WR_READ_OR_ATOMIC));
	qp->req.psn = psn_add(qp->req.psn, npsn);
	qp->req.offset += payload;
	c->sent++;
	return last ? REQ_NEXT_WQE : REQ_CHECK_WINDOW;
}

static enum req_state next_wqe(struct req_ctx *c)
{
	struct rc_qp *qp = c->qp;

	if (c->w->state == RC_WQE_ACTIVE)
		c->w->state = rc_qp_reliable(qp) ? RC_WQE_SENT : RC_WQE_DONE;
	qp->req.wqe++;
	qp->req.offset = 0;
	qp->req.cur.idx = qp->req.cur.off = 0;
	if (c->w->state == RC_WQE_DONE)
		rc_comp_run(qp);
	return REQ_GET_WQE;
}

int rc_req_tx(struct rc_qp *qp, unsigned quota, bool *more)
{
	struct req_ctx c = { .qp = qp, .quota = quota };
	enum req_state s = REQ_GET_WQE;

	if (!rc_qp_may_send(qp))
		return 0;
	for (;;) {
		RC_TRACE(qp, "req", req_state_name[s]);
		switch (s) {
		case REQ_GET_WQE:
			s = get_wqe(&c);
			break;
		case REQ_START_WQE:
			s = start_wqe(&c);
			break;
		case REQ_CHECK_WINDOW:
			s = check_window(&c);
			break;
		case REQ_CHECK_ROUTE:
			s = check_route(&c);
			break;
		case REQ_SEND_PACKET:
			s = send_packet(&c);
			break;
		case REQ_NEXT_WQE:
			s = next_wqe(&c);
			break;
		case REQ_AGAIN:
			*more = true;
			return c.err ? c.err : (int)c.sent;
		case REQ_STALL:
		case REQ_DONE:
			/* Held by the pacer, it has more to send: no tail to probe. */
			if (rc_qp_reliable(qp) &&
			    !(qp->cc.limited && qp->cc.next_tx > qp->eng->now))
				rc_rto_idle(qp);
			return (int)c.sent;
		}
		/* A failure or completion may have moved the QP out of the sending states. */
		if (!rc_qp_may_send(qp))
			return (int)c.sent;
	}
}

/*
 * Resume sending at @target inside WQE @i: a write or send at the packet of
 * that PSN, a read asked again for the part not yet received (@target is
 * then first_psn + resp_pkts), an atomic sent again with its PSN (the
 * responder answers it from its replay cache).  PSNs of every WQE stay what
 * they were.
 */
static void resume_at(struct rc_qp *qp, uint32_t i, uint32_t target)
{
	struct rc_send_wqe *w = rc_sq_at(qp, i);

	/* What came of a read (also ahead of an earlier one, rc_comp.c) is not asked again. */
	if (w->opcode == IBV_WR_RDMA_READ)
		target = psn_add(w->first_psn, w->resp_pkts);

	for (uint32_t j = i; j != qp->req.wqe + 1 && j != qp->sq_tail; j++) {
		struct rc_send_wqe *x = rc_sq_at(qp, j);

		if (x->state == RC_WQE_SENT)
			x->state = RC_WQE_ACTIVE;
	}
	qp->req.wqe = i;
	qp->req.psn = target;
	qp->req.since_ackreq = 0;
	if (rc_wqe_op(w)->kind & RC_WR_READ_OR_ATOMIC) {
		/* An ATOMIC WRITE's 8 bytes are gathered again from its SGE's start. */
		qp->req.offset = 0;
		qp->req.cur.idx = qp->req.cur.off = 0;
	} else {
		qp->req.offset = (uint32_t)psn_cmp(target, w->first_psn) * qp->pmtu;
		if (!w->is_inline)
			rc_sge_seek(w->sge, w->num_sge, qp->req.offset, &qp->req.cur);
	}
	rc_rto_rewound(qp, target);
	rc_qp_kick(qp);
}

/* The started WQE, not past the send cursor, whose PSNs hold @psn; sq_tail when none does. */
static uint32_t wqe_of_psn(const struct rc_qp *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		const struct rc_send_wqe *w = rc_sq_at(qp, i);

		if (w->state == RC_WQE_POSTED || w->state == RC_WQE_ERROR)
			break;
		if (psn_cmp(psn, w->first_psn) >= 0 && psn_cmp(psn, w->last_psn) <= 0)
			return i;
		if (i == qp->req.wqe)
			break;
	}
	return qp->sq_tail;
}

/*
 * Go-Back-N: send again from the oldest unacknowledged PSN (IBA 9.7.5.1.1).
 * A later read that got responses ahead of an earlier one is asked only for
 * the rest (send_packet()): the responder may hold no more of it, as a
 * duplicate read narrows what it keeps to the range asked (rc_resp.c).
 */
void rc_req_rewind(struct rc_qp *qp)
{
	uint32_t i;

	/* From the front: a WQE a resend passed over is sent again too. */
	if (qp->req.sr.active)
		sr_jump(qp);
	i = wqe_of_psn(qp, qp->comp.psn);
	if (i != qp->sq_tail)
		resume_at(qp, i, qp->comp.psn);
}

bool rc_req_reread(struct rc_qp *qp)
{
	struct rc_req *q = &qp->req;
	uint32_t i;

	if (!q->rereads_wanted || q->sr.active || q->offset)
		return false;
	i = next_reread(qp, qp->sq_head, q->wqe);
	if (i == qp->sq_tail) {
		q->rereads_wanted = false;
		return false;
	}
	sr_save(q);
	q->sr.reread = true;
	goto_reread(qp, i);
	return true;
}

void rc_req_overtaken(struct rc_qp *qp)
{
	uint32_t i;

	if (qp->req.sr.active && psn_cmp(qp->comp.psn, qp->req.sr.end) >= 0)
		sr_jump(qp);
	if (psn_cmp(qp->comp.psn, qp->req.psn) <= 0)
		return;
	i = wqe_of_psn(qp, qp->comp.psn);
	if (i != qp->sq_tail)
		resume_at(qp, i, qp->comp.psn);
}

/*
 * The cursor keeps its place (sr) and resends the hole; a cursor at or
 * behind the hole's end resends it anyway, as after a rewind.
 */
void rc_req_resend(struct rc_qp *qp, uint32_t from, uint32_t n)
{
	struct rc_req *q = &qp->req;
	uint32_t end = psn_add(from, n), i;

	if (psn_cmp(end, q->max_psn) > 0)
		end = q->max_psn;
	/*
	 * From the front when a reread is under way (its reads stay wanted) or
	 * the hole reaches the front: every WQE up to it is then sent again.
	 */
	if (q->sr.active && (q->sr.reread || psn_cmp(q->sr.psn, end) <= 0))
		sr_jump(qp);
	if (psn_cmp(q->psn, from) <= 0)
		return;
	i = wqe_of_psn(qp, from);
	if (i == qp->sq_tail)
		return;
	q->sr.from = from;
	if (!q->sr.active && psn_cmp(q->psn, end) > 0)
		sr_save(q);
	q->sr.end = end;
	resume_at(qp, i, from);
}

/*
 * The newest packet once more, so that the responder answers: a duplicate
 * with an ACK (C9-105), a packet after a gap with a sequence NAK, a lost one
 * by executing it.  Only from the front: a cursor behind max_psn is resending
 * already, and moving it would skip what it has still to send.
 */
bool rc_req_probe(struct rc_qp *qp)
{
	uint32_t newest = psn_add(qp->req.max_psn, WIRE_PSN_MASK), i;
	const struct rc_send_wqe *w;

	if (qp->req.psn != qp->req.max_psn)
		return false;
	i = wqe_of_psn(qp, newest);
	if (i == qp->sq_tail)
		return false;
	w = rc_sq_at(qp, i);
	/* A read's request asks for what has not arrived; an atomic has one PSN. */
	if (rc_wqe_op(w)->kind & RC_WR_READ_OR_ATOMIC)
		newest = psn_add(w->first_psn, w->resp_pkts);
	resume_at(qp, i, newest);
	return true;
}

void rc_req_rnr_expired(struct rc_qp *qp)
{
	if (!qp->req.rnr_wait)
		return;
	qp->req.rnr_wait = false;
	if (!rc_qp_may_send(qp))
		return;
	rc_req_rewind(qp);
	rc_qp_kick(qp);
}
