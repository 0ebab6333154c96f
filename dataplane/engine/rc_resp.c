// SPDX-License-Identifier: MIT
/*
 * The responder: checks and executes incoming requests (IBA ch. 9.7, 9.9),
 * queues read and atomic responses and ACK/NAKs, and receives UC and UD.
 */
#include <endian.h>
#include <errno.h>

#include "rc_internal.h"

enum resp_state {
	RESP_CHECK_PSN,		/* expected, duplicate or out of sequence */
	RESP_DUPLICATE,		/* answer again, execute nothing twice */
	RESP_SR_PLACE,		/* selective repeat: place a write packet ahead of ePSN */
	RESP_CHECK_XRC_SRQ,	/* XRC target: the XRCETH's SRQ is of the QP's domain */
	RESP_CHECK_OP_SEQ,	/* FIRST/MIDDLE/LAST follow each other */
	RESP_CHECK_OP_VALID,	/* the QP allows this operation */
	RESP_CHECK_RESOURCE,	/* a receive WQE or a responder resource */
	RESP_CHECK_LENGTH,	/* payload against PMTU, RETH and receive buffer */
	RESP_CHECK_RKEY,	/* R_Key, access and bounds */
	RESP_EXECUTE,		/* place data, queue a response, run the atomic */
	RESP_COMPLETE,		/* receive completion */
	RESP_ACKNOWLEDGE,	/* advance ePSN, schedule an ACK if asked */
	RESP_ERR_SEQ,		/* NAK: PSN sequence error, once per gap */
	RESP_ERR_RNR,		/* RNR NAK: no receive WQE */
	RESP_ERR_INVALID,	/* NAK: invalid request, then ERR */
	RESP_ERR_ACCESS,	/* NAK: remote access error, then ERR */
	RESP_ERR_OP,		/* NAK: remote operational error, then ERR */
	RESP_DROP,		/* silently, for a reason (UC errors, gaps after a NAK) */
	RESP_DONE,
};

static const char *const resp_state_name[] = {
	[RESP_CHECK_PSN]	= "CHECK_PSN",
	[RESP_DUPLICATE]	= "DUPLICATE",
	[RESP_SR_PLACE]		= "SR_PLACE",
	[RESP_CHECK_XRC_SRQ]	= "CHECK_XRC_SRQ",
	[RESP_CHECK_OP_SEQ]	= "CHECK_OP_SEQ",
	[RESP_CHECK_OP_VALID]	= "CHECK_OP_VALID",
	[RESP_CHECK_RESOURCE]	= "CHECK_RESOURCE",
	[RESP_CHECK_LENGTH]	= "CHECK_LENGTH",
	[RESP_CHECK_RKEY]	= "CHECK_RKEY",
	[RESP_EXECUTE]		= "EXECUTE",
	[RESP_COMPLETE]		= "COMPLETE",
	[RESP_ACKNOWLEDGE]	= "ACKNOWLEDGE",
	[RESP_ERR_SEQ]		= "ERR_SEQ",
	[RESP_ERR_RNR]		= "ERR_RNR",
	[RESP_ERR_INVALID]	= "ERR_INVALID",
	[RESP_ERR_ACCESS]	= "ERR_ACCESS",
	[RESP_ERR_OP]		= "ERR_OP",
	[RESP_DROP]		= "DROP",
	[RESP_DONE]		= "DONE",
};

struct resp_ctx {
	struct rc_qp		*qp;
	const struct wire_pkt	*pkt;
	wire_op_flags		fl;
	uint8_t			low;		/* opcode without the transport bits */
	bool			uc;
	uint8_t			*target;	/* host address of a write or atomic */
	bool			target_odp;	/* ... in an ODP region: rc_odp_write() */
	enum ibv_wc_status	status;		/* for the receive WQE on an error */
	bool			icrc_unchecked;	/* rc_resp_icrc_deferred(): checked in the copy */
	enum rc_drop		drop;		/* why, once the machine is in RESP_DROP */
};

#define AETH_ACK_SYNDROME	(WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID)
/* Requests that hold a responder resource until answered (IBA 9.5; atomic write and flush as rxe). */
#define RESP_NEEDS_RES	(WIRE_OPF_READ | WIRE_OPF_ATOMIC | WIRE_OPF_ATOMIC_WRITE | WIRE_OPF_FLUSH)

static bool starts(wire_op_flags fl)
{
	return fl & (WIRE_OPF_FIRST | WIRE_OPF_ONLY);
}

static bool ends(wire_op_flags fl)
{
	return fl & (WIRE_OPF_LAST | WIRE_OPF_ONLY);
}

static bool writes_imm(const struct resp_ctx *c)
{
	return (c->fl & WIRE_OPF_WRITE) && (c->fl & WIRE_OPF_IMM);
}

static const struct wire_reth *pkt_reth(const struct wire_pkt *pkt)
{
	return wire_pkt_ext(pkt, WIRE_EXT_RETH);
}

void rc_resp_reset(struct rc_qp *qp)
{
	struct rc_resp *r = &qp->resp;
	struct rc_recv_wqe *wqe = r->wqe;

	memset(r, 0, sizeof(*r));
	r->wqe = wqe;
	r->epsn = qp->attr.rq_psn;
	r->nres = qp->attr.max_dest_rd_atomic ? qp->attr.max_dest_rd_atomic : 1;
}

/* ---- Scheduling responses ---- */

static void schedule_ack(struct rc_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct rc_resp *r = &qp->resp;

	if (r->fatal)
		return;
	/* A selective NAK replaced before it went out: its hole may be named again. */
	if (r->ack_pending && r->ack_selective)
		r->sr_nak_end = r->epsn;
	r->ack_pending = true;
	r->ack_syndrome = syndrome;
	r->ack_psn = psn;
	r->ack_msn = r->msn;
	r->ack_selective = false;
	rc_qp_kick(qp);
}

static void schedule_fatal(struct resp_ctx *c, uint8_t code, enum ibv_event_type ev)
{
	struct rc_qp *qp = c->qp;

	schedule_ack(qp, WIRE_AETH_NAK | code, c->pkt->psn);
	qp->resp.fatal = true;
	qp->resp.fatal_event = (uint8_t)ev;
}

/* The receive WQE in hand completes with @wc (its wr_id and QP numbers filled in here). */
static void push_recv(struct rc_qp *qp, struct ibv_wc *wc, bool solicited)
{
	struct rc_resp *r = &qp->resp;

	wc->wr_id = r->wqe->wr_id;
	wc->qp_num = qp->qpn;
	wc->src_qp = qp->attr.dest_qp_num;
	r->have_wqe = false;
	rc_cq_push(rc_resp_cq(qp), wc, solicited);
	qp->cnt.completions++;
}

static void complete_recv(struct rc_qp *qp, const struct wire_pkt *pkt, enum ibv_wc_status st,
			  uint32_t byte_len)
{
	struct ibv_wc wc = { .status = st, .opcode = IBV_WC_RECV };

	if (st == IBV_WC_SUCCESS) {
		wire_op_flags fl = pkt->op->flags;

		wc.byte_len = byte_len;
		if (fl & WIRE_OPF_WRITE)
			wc.opcode = IBV_WC_RECV_RDMA_WITH_IMM;
		if (fl & WIRE_OPF_IMM) {
			const struct wire_immdt *imm = wire_pkt_ext(pkt, WIRE_EXT_IMMDT);

			wc.imm_data = htobe32(wire_get32(imm->imm));
			wc.wc_flags |= IBV_WC_WITH_IMM;
		}
		if (fl & WIRE_OPF_INV) {
			const struct wire_ieth *ieth = wire_pkt_ext(pkt, WIRE_EXT_IETH);

			wc.invalidated_rkey = wire_get32(ieth->rkey);
			wc.wc_flags |= IBV_WC_WITH_INV;
		}
	}
	push_recv(qp, &wc, pkt->se);
}

/* ---- Steps ---- */

/* The packet is dropped without an answer, for @why (counted once the machine stops). */
static enum resp_state drop(struct resp_ctx *c, enum rc_drop why)
{
	c->drop = why;
	return RESP_DROP;
}

static void abandon_message(struct rc_qp *qp)
{
	qp->resp.msg = RC_MSG_NONE;
	qp->resp.recv_len = 0;
	qp->resp.recv_cur.idx = qp->resp.recv_cur.off = 0;
}

static enum resp_state check_psn(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	int32_t d = psn_cmp(c->pkt->psn, r->epsn);

	if (c->uc) {
		/* UC: a gap drops the message; the next FIRST/ONLY resynchronises (IBA ch. 9.8). */
		if (d == 0 && !r->drop_msg)
			return RESP_CHECK_OP_SEQ;
		abandon_message(qp);
		if (starts(c->fl)) {
			r->drop_msg = false;
			r->epsn = c->pkt->psn;
			return RESP_CHECK_OP_SEQ;
		}
		r->drop_msg = true;
		qp->cnt.out_of_sequence++;
		return drop(c, RC_DROP_UC_GAP);
	}
	if (d == 0) {
		r->nak_sent = false;
		return qp->type == IBV_QPT_XRC_RECV ? RESP_CHECK_XRC_SRQ : RESP_CHECK_OP_SEQ;
	}
	if (d < 0) {
		qp->cnt.duplicates++;
		return RESP_DUPLICATE;
	}
	qp->cnt.out_of_sequence++;
	if (r->peer_sr)
		return RESP_SR_PLACE;
	/* One NAK per gap: quiet until the expected PSN arrives. */
	return r->nak_sent ? drop(c, RC_DROP_SEQ_AFTER_NAK) : RESP_ERR_SEQ;
}

/* XRC target: the SRQ the packet's XRCETH names when it is of the QP's domain, else NULL. */
static struct rc_srq *xrc_srq_of(const struct rc_qp *qp, const struct wire_pkt *pkt)
{
	const struct wire_xrceth *x = wire_pkt_ext(pkt, WIRE_EXT_XRCETH);
	struct rc_srq *srq = rc_xrc_srq_get(qp->eng, wire_get32(x->srqn));

	return srq && srq->xrcd == qp->xrcd ? srq : NULL;
}

/* The PD a request is checked against: an XRC target's is its SRQ's. */
static struct rc_pd *request_pd(const struct rc_qp *qp, const struct wire_pkt *pkt)
{
	const struct rc_srq *srq;

	if (qp->type != IBV_QPT_XRC_RECV)
		return qp->pd;
	srq = xrc_srq_of(qp, pkt);
	return srq ? srq->pd : NULL;
}

static struct rc_resp_res *find_res(struct rc_qp *qp, uint8_t type, uint32_t psn)
{
	struct rc_resp *r = &qp->resp;
	uint32_t n = r->res_head < r->nres ? r->res_head : r->nres;

	for (uint32_t s = r->res_head - n; s != r->res_head; s++) {
		struct rc_resp_res *x = &r->res[s % r->nres];

		if (x->type == type && psn_cmp(psn, x->first_psn) >= 0 &&
		    psn_cmp(psn, x->last_psn) <= 0)
			return x;
	}
	return NULL;
}

/*
 * A duplicate send or write is acknowledged again and not
 * executed; a duplicate read is executed again from its PSN; a duplicate
 * atomic is answered with the saved original value, a duplicate atomic
 * write or flush with its empty read response: none is executed twice.
 */
static enum resp_state duplicate(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	struct rc_resp_res *x;

	/*
	 * A duplicate read runs again as a new read of the range it asks for
	 * (what the requester is missing): responses start with FIRST or ONLY
	 * at its PSN and never go past the original's last PSN.
	 */
	if (c->fl & WIRE_OPF_READ) {
		const struct wire_reth *reth = pkt_reth(c->pkt);
		uint32_t len = wire_get32(reth->dma_len);
		uint64_t va = wire_get64(reth->va);
		uint32_t npkts = len ? (len + qp->pmtu - 1) / qp->pmtu : 1;
		uint32_t last = psn_add(c->pkt->psn, npkts - 1);

		struct rc_pd *pd = request_pd(qp, c->pkt);

		x = find_res(qp, RC_RES_READ, c->pkt->psn);
		if (!x || !pd || psn_cmp(last, x->last_psn) > 0 ||
		    (len && !rc_mr_remote(qp->eng, pd, qp->qpn, wire_get32(reth->rkey), va, len,
					  IBV_ACCESS_REMOTE_READ, NULL)))
			return drop(c, RC_DROP_DUP_NOT_HELD);
		x->first_psn = x->cur_psn = c->pkt->psn;
		x->last_psn = last;
		x->va = va;
		x->rkey = wire_get32(reth->rkey);
		x->len = len;
		x->pending = true;
		x->replay = true;
		rc_qp_kick(qp);
		return RESP_DONE;
	}
	if (c->fl & (WIRE_OPF_ATOMIC | WIRE_OPF_ATOMIC_WRITE | WIRE_OPF_FLUSH)) {
		x = find_res(qp, (c->fl & WIRE_OPF_ATOMIC) ? RC_RES_ATOMIC : RC_RES_EMPTY_READ,
			     c->pkt->psn);
		if (!x)
			return drop(c, RC_DROP_DUP_NOT_HELD);
		x->pending = true;
		rc_qp_kick(qp);
		return RESP_DONE;
	}
	/* Re-ACK the newest, unless a NAK is waiting to go. */
	if (!(r->ack_pending && (r->ack_syndrome & WIRE_AETH_TYPE_MASK) != WIRE_AETH_ACK))
		schedule_ack(qp, AETH_ACK_SYNDROME, psn_add(r->epsn, (uint32_t)-1));
	return RESP_DONE;
}

/*
 * XRC target (IBA 1.2.1 XRC): the XRCETH must name an SRQ of the QP's XRC
 * domain, and the same one in every packet of a message, else the request
 * is invalid.  That SRQ gives the message its receive WQE, PD and CQ.
 */
static enum resp_state check_xrc_srq(struct resp_ctx *c)
{
	struct rc_resp *r = &c->qp->resp;
	struct rc_srq *srq = xrc_srq_of(c->qp, c->pkt);

	if (!srq || (r->msg != RC_MSG_NONE && srq != r->xsrq)) {
		c->status = IBV_WC_REM_INV_REQ_ERR;
		return RESP_ERR_INVALID;
	}
	r->xsrq = srq;
	return RESP_CHECK_OP_SEQ;
}

static enum resp_state check_op_seq(struct resp_ctx *c)
{
	struct rc_resp *r = &c->qp->resp;
	bool ok;

	switch (r->msg) {
	case RC_MSG_SEND:
		ok = (c->fl & WIRE_OPF_SEND) && !starts(c->fl);
		break;
	case RC_MSG_WRITE:
		ok = (c->fl & WIRE_OPF_WRITE) && !starts(c->fl);
		break;
	default:
		ok = starts(c->fl);
		break;
	}
	if (ok)
		return RESP_CHECK_OP_VALID;
	c->status = IBV_WC_REM_INV_REQ_ERR;
	return RESP_ERR_INVALID;
}

static uint32_t pkt_feth(const struct wire_pkt *pkt)
{
	return wire_get32(((const struct wire_feth *)wire_pkt_ext(pkt, WIRE_EXT_FETH))->bits);
}

/* The rights a flush's placement type needs (as rxe); 0 for none or a reserved one. */
static int flush_access(const struct wire_pkt *pkt)
{
	uint32_t plt = pkt_feth(pkt) & WIRE_FETH_PLT_MASK;

	if (!plt || (plt & ~(WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT)))
		return 0;
	return ((plt & WIRE_FLUSH_GLOBAL) ? RC_ACCESS_FLUSH_GLOBAL : 0) |
	       ((plt & WIRE_FLUSH_PERSISTENT) ? RC_ACCESS_FLUSH_PERSISTENT : 0);
}

static enum resp_state check_op_valid(struct resp_ctx *c)
{
	int access = c->qp->attr.qp_access_flags;

	/* Operations the QP does not enable are invalid requests (as rxe answers). */
	if (((c->fl & WIRE_OPF_WRITE) && !(access & IBV_ACCESS_REMOTE_WRITE)) ||
	    ((c->fl & WIRE_OPF_READ) && !(access & IBV_ACCESS_REMOTE_READ)) ||
	    ((c->fl & WIRE_OPF_ATOMIC) && !(access & IBV_ACCESS_REMOTE_ATOMIC)) ||
	    ((c->fl & WIRE_OPF_ATOMIC_WRITE) && !(access & IBV_ACCESS_REMOTE_WRITE)) ||
	    ((c->fl & WIRE_OPF_FLUSH) && !(access & flush_access(c->pkt)))) {
		c->status = IBV_WC_REM_INV_REQ_ERR;
		return RESP_ERR_INVALID;
	}
	return RESP_CHECK_RESOURCE;
}

/* A receive WQE from the SRQ or the QP's own queue, kept until the message completes. */
static bool take_recv_wqe(struct rc_qp *qp)
{
	struct rc_resp *r = &qp->resp;
	struct rc_srq *srq = rc_resp_srq(qp);

	if (r->have_wqe)
		return true;
	if (srq) {
		if (!rc_srq_pop(srq, r->wqe))
			return false;
	} else {
		struct rc_recv_wqe *w;

		if (!rc_rq_count(&qp->rq))
			return false;
		w = rc_rq_at(&qp->rq, qp->rq.head);
		memcpy(r->wqe, w, sizeof(*w) + w->num_sge * sizeof(struct ibv_sge));
		qp->rq.head++;
	}
	r->have_wqe = true;
	r->recv_len = 0;
	r->recv_cur.idx = r->recv_cur.off = 0;
	return true;
}

static enum resp_state check_resource(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;

	if (((c->fl & WIRE_OPF_SEND) && starts(c->fl)) || (writes_imm(c) && ends(c->fl))) {
		if (!take_recv_wqe(qp)) {
			if (c->uc) {
				r->drop_msg = true;
				abandon_message(qp);
				return drop(c, RC_DROP_NO_RECV_WQE);
			}
			return RESP_ERR_RNR;
		}
		if (c->fl & WIRE_OPF_SEND) {
			r->recv_len = 0;
			r->recv_cur.idx = r->recv_cur.off = 0;
		}
	}
	if (c->fl & RESP_NEEDS_RES) {
		/*
		 * No responder resources: an invalid request.  Otherwise the new
		 * request takes the oldest slot even if it still has responses
		 * queued: the requester keeps at most max_dest_rd_atomic reads
		 * and atomics outstanding (IBA 9.5), so a new one means it no
		 * longer waits for that oldest one.
		 */
		if (!qp->attr.max_dest_rd_atomic) {
			c->status = IBV_WC_REM_INV_REQ_ERR;
			return RESP_ERR_INVALID;
		}
	}
	return RESP_CHECK_LENGTH;
}

static enum resp_state length_error(struct resp_ctx *c)
{
	c->status = (c->fl & WIRE_OPF_SEND) ? IBV_WC_LOC_LEN_ERR : IBV_WC_REM_INV_REQ_ERR;
	return RESP_ERR_INVALID;
}

static enum resp_state check_length(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	uint32_t len = c->pkt->payload_len;
	bool full = c->fl & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE);

	/* FIRST and MIDDLE carry exactly one PMTU, LAST and ONLY at most one. */
	if (full ? len != qp->pmtu : len > qp->pmtu)
		return length_error(c);
	if (c->fl & WIRE_OPF_SEND) {
		if ((uint64_t)r->recv_len + len > r->wqe->length)
			return length_error(c);
	} else if (c->fl & WIRE_OPF_WRITE) {
		uint32_t resid = r->resid;

		if (starts(c->fl)) {
			resid = wire_get32(pkt_reth(c->pkt)->dma_len);
			if (resid > RC_MAX_MSG_SIZE)
				return length_error(c);
		}
		if (ends(c->fl) ? len != resid : len >= resid)
			return length_error(c);
	} else if (c->fl & WIRE_OPF_READ) {
		if (wire_get32(pkt_reth(c->pkt)->dma_len) > RC_MAX_MSG_SIZE)
			return length_error(c);
	} else if (c->fl & WIRE_OPF_ATOMIC_WRITE) {
		/* Exactly 8 bytes, and the RETH says so (rxe: resid == payload). */
		if (len != 8 || wire_get32(pkt_reth(c->pkt)->dma_len) != 8)
			return length_error(c);
	}
	return RESP_CHECK_RKEY;
}

/*
 * The 8-byte target of an atomic or an atomic write: on an 8-byte boundary
 * (else an invalid request) in a region with @access.  The CPU's atomic
 * instructions have no failing form: an ODP target's page is first made
 * present and writable by the kernel, so an unmapped or read-only one is an
 * access error.  A page unmapped between the two is not covered (odp_caps
 * claims no atomics).
 */
static enum resp_state check_target8(struct resp_ctx *c, uint32_t rkey, uint64_t va, int access)
{
	struct rc_qp *qp = c->qp;

	if (va & 7)
		goto invalid;
	c->target = rc_mr_remote(qp->eng, rc_resp_pd(qp), qp->qpn, rkey, va, 8, access, &c->target_odp);
	if (!c->target)
		return RESP_ERR_ACCESS;
	if (unlikely(c->target_odp) && rc_odp_populate_write(c->target, 8))
		return RESP_ERR_ACCESS;
	if ((uintptr_t)c->target & 7)
		goto invalid;
	c->status = IBV_WC_SUCCESS;
	return RESP_EXECUTE;
invalid:
	c->status = IBV_WC_REM_INV_REQ_ERR;
	return RESP_ERR_INVALID;
}

static enum resp_state check_rkey(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;

	c->status = IBV_WC_REM_ACCESS_ERR;
	if (c->fl & WIRE_OPF_WRITE) {
		uint32_t len = c->pkt->payload_len;

		if (starts(c->fl)) {
			const struct wire_reth *reth = pkt_reth(c->pkt);

			r->va = wire_get64(reth->va);
			r->rkey = wire_get32(reth->rkey);
			r->write_len = r->resid = wire_get32(reth->dma_len);
			/* A zero-length write touches nothing: its R_Key is not checked. */
			if (!r->write_len)
				return RESP_EXECUTE;
			if (!rc_mr_remote(qp->eng, rc_resp_pd(qp), qp->qpn, r->rkey, r->va, r->write_len,
					  IBV_ACCESS_REMOTE_WRITE, NULL))
				return RESP_ERR_ACCESS;
		}
		if (len) {
			/* Again for each packet: the region may have gone away meanwhile. */
			c->target = rc_mr_remote(qp->eng, rc_resp_pd(qp), qp->qpn, r->rkey, r->va, len,
						 IBV_ACCESS_REMOTE_WRITE, &c->target_odp);
			if (!c->target)
				return RESP_ERR_ACCESS;
		}
	} else if (c->fl & WIRE_OPF_READ) {
		const struct wire_reth *reth = pkt_reth(c->pkt);
		uint32_t len = wire_get32(reth->dma_len);

		if (len && !rc_mr_remote(qp->eng, rc_resp_pd(qp), qp->qpn, wire_get32(reth->rkey),
					 wire_get64(reth->va), len, IBV_ACCESS_REMOTE_READ, NULL))
			return RESP_ERR_ACCESS;
	} else if (c->fl & WIRE_OPF_ATOMIC) {
		const struct wire_atomic_eth *a = wire_pkt_ext(c->pkt, WIRE_EXT_ATOMIC_ETH);

		return check_target8(c, wire_get32(a->rkey), wire_get64(a->va),
				     IBV_ACCESS_REMOTE_ATOMIC);
	} else if (c->fl & WIRE_OPF_ATOMIC_WRITE) {
		const struct wire_reth *reth = pkt_reth(c->pkt);

		/* Remote write access, as rxe's atomic_write_reply(). */
		return check_target8(c, wire_get32(reth->rkey), wire_get64(reth->va),
				     IBV_ACCESS_REMOTE_WRITE);
	} else if (c->fl & WIRE_OPF_FLUSH) {
		const struct wire_reth *reth = pkt_reth(c->pkt);
		uint32_t sel = (pkt_feth(c->pkt) & WIRE_FETH_SEL_MASK) >> WIRE_FETH_SEL_SHIFT;
		/* A whole-region flush names the region by its key; va must lie in it. */
		uint32_t len = sel == WIRE_FLUSH_MR ? 0 : wire_get32(reth->dma_len);

		if (sel != WIRE_FLUSH_RANGE && sel != WIRE_FLUSH_MR) {
			c->status = IBV_WC_REM_INV_REQ_ERR;
			return RESP_ERR_INVALID;
		}
		/* The region must have been registered with the placement type's rights. */
		if (!rc_mr_remote(qp->eng, rc_resp_pd(qp), qp->qpn, wire_get32(reth->rkey),
				  wire_get64(reth->va), len, flush_access(c->pkt), NULL))
			return RESP_ERR_ACCESS;
	}
	c->status = IBV_WC_SUCCESS;
	return RESP_EXECUTE;
}

/* ---- The deferred ICRC check ---- */

static bool icrc_matches(struct rc_engine *eng, uint32_t crc, const struct wire_pkt *pkt)
{
	if (crc == pkt->icrc)
		return true;
	eng->cnt.drops.count[WIRE_DROP_BAD_ICRC]++;
	return false;
}

bool rc_icrc_ok(struct rc_engine *eng, const struct wire_pkt *pkt)
{
	return icrc_matches(eng, wire_pkt_icrc(pkt), pkt);
}

/*
 * Decided here, not in rc_recv.c, because its safety rests on the
 * responder: on its state (ePSN, a NAK outstanding, the write's range
 * checked by its first packet), on before_icrc() (the steps that run before
 * the check change nothing) and on execute() verifying the CRC while it
 * copies (copy_checked()).  The receive side only asks.
 *
 * A write's middle packet at the expected PSN goes into memory its message
 * already owns (the range its first packet was checked for): its ICRC is
 * computed while the payload is copied there, one pass over the bytes
 * instead of two.  Should it not match, the packet is dropped like any
 * other, and the bytes are written again by the retransmission before the
 * message can complete (the last byte is never placed unchecked).  Every
 * other packet is checked before anything acts on it.
 */
bool rc_resp_icrc_deferred(const struct rc_qp *qp, const struct wire_pkt *pkt)
{
	return (pkt->opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_WRITE_MIDDLE && rc_qp_reliable(qp) &&
	       pkt->psn == qp->resp.epsn && !qp->resp.nak_sent &&
	       pkt->payload_len >= RC_ICRC_IN_COPY_MIN;
}

/* What may run before a deferred ICRC is verified: checks that change nothing, and the copy. */
static bool before_icrc(enum resp_state s)
{
	return s == RESP_CHECK_PSN || s == RESP_CHECK_XRC_SRQ || s == RESP_CHECK_OP_SEQ || s == RESP_CHECK_OP_VALID ||
	       s == RESP_CHECK_RESOURCE || s == RESP_CHECK_LENGTH || s == RESP_CHECK_RKEY ||
	       s == RESP_EXECUTE;
}

/* A middle packet's payload to @dst with its ICRC computed on the way; false: mismatch (counted). */
static bool copy_checked(struct rc_engine *eng, uint8_t *dst, const struct wire_pkt *pkt)
{
	return icrc_matches(eng, wire_pkt_icrc_copy(pkt, dst), pkt);
}

/* ---- Selective repeat (docs/engine.md, "Selective repeat") ---- */

static uint64_t *sr_word(struct rc_resp *r, uint32_t psn, uint64_t *bit)
{
	uint32_t i = psn & (RC_SR_WINDOW - 1);

	*bit = 1ull << (i & 63);
	return &r->sr_placed[i / 64];
}

static bool sr_is_placed(struct rc_resp *r, uint32_t psn)
{
	uint64_t bit, *w = sr_word(r, psn, &bit);

	return *w & bit;
}

static void sr_mark(struct rc_resp *r, uint32_t psn, bool placed)
{
	uint64_t bit, *w = sr_word(r, psn, &bit);

	*w = placed ? *w | bit : *w & ~bit;
}

static struct rc_sr_write *sr_write_of(struct rc_resp *r, uint32_t psn)
{
	for (unsigned i = 0; i < RC_SR_WRITES; i++) {
		struct rc_sr_write *e = &r->sr_write[i];

		if (e->used && psn_cmp(psn, e->first_psn) >= 0 && psn_cmp(psn, e->last_psn) <= 0)
			return e;
	}
	return NULL;
}

/*
 * Remember the RETH of a write of @len bytes whose first packet has PSN
 * @psn.  Return: the entry, or NULL when the table is full, the write is
 * empty or too long, or its PSNs overlap a known write's (no correct
 * requester sends that; its packets then wait for ePSN).
 */
static struct rc_sr_write *sr_write_add(struct rc_qp *qp, uint32_t psn, uint64_t va,
					uint32_t rkey, uint32_t len)
{
	struct rc_resp *r = &qp->resp;
	uint32_t npkts = (len + qp->pmtu - 1) / qp->pmtu, last = psn_add(psn, npkts - 1);
	struct rc_sr_write *slot = NULL;

	if (!len || len > RC_MAX_MSG_SIZE || npkts >= RC_MAX_MSG_PKTS)
		return NULL;
	for (unsigned i = 0; i < RC_SR_WRITES; i++) {
		struct rc_sr_write *e = &r->sr_write[i];

		if (!e->used) {
			slot = slot ? slot : e;
			continue;
		}
		if (psn_cmp(last, e->first_psn) >= 0 && psn_cmp(psn, e->last_psn) <= 0)
			return NULL;
	}
	if (!slot)
		return NULL;
	*slot = (struct rc_sr_write){ .used = true, .first_psn = psn, .last_psn = last,
				      .va = va, .rkey = rkey, .len = len };
	return slot;
}

/* Forget @e and whatever of it was placed ahead: its packets go the in-order way again. */
static void sr_write_drop(struct rc_resp *r, struct rc_sr_write *e)
{
	for (uint32_t p = e->first_psn; psn_cmp(p, psn_add(r->epsn, RC_SR_WINDOW)) < 0;
	     p = psn_add(p, 1)) {
		/* Only the window's PSNs: a bit stands for a PSN mod 256. */
		if (psn_cmp(p, r->epsn) > 0)
			sr_mark(r, p, false);
		if (p == e->last_psn)
			break;
	}
	e->used = false;
}

/*
 * The hole at ePSN, once: a selective NAK for the PSNs from ePSN up to the
 * first one placed, or up to the newest that arrived ahead (IBA's NAK
 * meaning for its PSN, WIRE_BTH_SR_NAK and the count in the MSN field).
 * No second one until ePSN passes what it named, the resend being on its
 * way, unless @again: a packet ahead asked for an ACK, and the NAK is what
 * it gets (a lost resend is found so, not by a timeout; the requester
 * resends a hole at most once per round trip).  Not while an RNR NAK waits
 * (nak_sent): it must not be overwritten.  Return: scheduled.
 */
static bool sr_nak_hole(struct rc_qp *qp, bool again)
{
	struct rc_resp *r = &qp->resp;
	int32_t seen = psn_cmp(r->sr_seen, r->epsn);
	uint32_t n = 1;

	if (r->nak_sent || seen <= 0 || (!again && psn_cmp(r->epsn, r->sr_nak_end) < 0))
		return false;
	while ((int32_t)n < seen && !sr_is_placed(r, psn_add(r->epsn, n)))
		n++;
	schedule_ack(qp, WIRE_AETH_NAK | WIRE_NAK_PSN_SEQ_ERR, r->epsn);
	r->ack_msn = n;
	r->ack_selective = true;
	r->sr_nak_end = psn_add(r->epsn, n);
	return true;
}

/* The packet is not placed ahead: it waits to come again at ePSN. */
static enum resp_state sr_not_placed(struct resp_ctx *c)
{
	if (sr_nak_hole(c->qp, c->pkt->ackreq))
		return RESP_DONE;
	return drop(c, RC_DROP_SR_NOT_PLACED);
}

/*
 * A request past ePSN from a selective-repeat requester.  Only packets of
 * RDMA WRITEs are placed: their place is known from the first packet's RETH
 * (kept in rc_sr_write), and the R_Key and bounds are checked for each as
 * in order.  The last byte of a message is held back until ePSN reaches
 * it, so the end of a buffer still changes last, and so is a write with
 * immediate's completion (its receive WQE is taken then, in order).  Sends,
 * reads and atomics wait for their turn (Go-Back-N rules).
 */
static enum resp_state sr_place(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	const struct wire_pkt *pkt = c->pkt;
	uint32_t len = pkt->payload_len, off, want;
	struct rc_sr_write *e = NULL;
	bool last, odp;
	uint8_t *dst;

	if (psn_cmp(pkt->psn, r->epsn) >= RC_SR_WINDOW)
		return sr_not_placed(c);
	if (psn_cmp(pkt->psn, r->sr_seen) >= 0)
		r->sr_seen = psn_add(pkt->psn, 1);
	if (sr_is_placed(r, pkt->psn)) {
		qp->cnt.duplicates++;
		if (sr_nak_hole(qp, pkt->ackreq))
			return RESP_DONE;
		return drop(c, RC_DROP_SR_DUPLICATE);
	}
	if (!(qp->attr.qp_access_flags & IBV_ACCESS_REMOTE_WRITE) ||
	    (pkt->opcode & WIRE_OPC_TRANSPORT_MASK) != WIRE_OPC_RC)
		return sr_not_placed(c);
	switch (c->low) {
	case WIRE_OP_WRITE_FIRST:
	case WIRE_OP_WRITE_ONLY:
	case WIRE_OP_WRITE_ONLY_IMM: {
		const struct wire_reth *reth = pkt_reth(pkt);
		uint32_t dma = wire_get32(reth->dma_len);

		if (c->low == WIRE_OP_WRITE_FIRST ? len != qp->pmtu || dma <= len :
		    dma != len || len > qp->pmtu)
			return sr_not_placed(c);
		if (!rc_mr_remote(qp->eng, qp->pd, qp->qpn, wire_get32(reth->rkey),
				  wire_get64(reth->va), dma, IBV_ACCESS_REMOTE_WRITE, NULL))
			return sr_not_placed(c);
		e = sr_write_add(qp, pkt->psn, wire_get64(reth->va), wire_get32(reth->rkey), dma);
		break;
	}
	case WIRE_OP_WRITE_MIDDLE:
	case WIRE_OP_WRITE_LAST:
	case WIRE_OP_WRITE_LAST_IMM:
		e = sr_write_of(r, pkt->psn);
		if (e && (pkt->psn == e->first_psn ||
			  (pkt->psn == e->last_psn) != (c->low != WIRE_OP_WRITE_MIDDLE)))
			return sr_not_placed(c);
		break;
	default:
		break;
	}
	if (!e)
		return sr_not_placed(c);
	last = pkt->psn == e->last_psn;
	off = (uint32_t)psn_cmp(pkt->psn, e->first_psn) * qp->pmtu;
	want = last ? e->len - off : qp->pmtu;
	if (len != want)
		return sr_not_placed(c);
	dst = rc_mr_remote(qp->eng, qp->pd, qp->qpn, e->rkey, e->va + off, len,
			   IBV_ACCESS_REMOTE_WRITE, &odp);
	if (!dst || odp)
		return sr_not_placed(c);
	if (last) {
		wire_payload_copy(dst, wire_pkt_payload(pkt), len - 1);
		e->last_byte = wire_pkt_payload(pkt)[len - 1];
		e->held = true;
		e->with_imm = c->fl & WIRE_OPF_IMM;
		if (e->with_imm)
			e->imm = wire_get32(((const struct wire_immdt *)
					     wire_pkt_ext(pkt, WIRE_EXT_IMMDT))->imm);
		e->solicited = pkt->se;
	} else {
		wire_payload_copy(dst, wire_pkt_payload(pkt), len);
	}
	sr_mark(r, pkt->psn, true);
	qp->cnt.selective_placed++;
	sr_nak_hole(qp, pkt->ackreq);
	return RESP_DONE;
}

/*
 * ePSN moved from @from: what was placed ahead of it is taken in order.  A
 * write's packets are crossed as if they had just arrived (the held last
 * byte stored, a write with immediate completed, the MSN counted); a placed
 * PSN that does not continue what came before it (a write that starts
 * inside a message, a region gone, no receive WQE for the immediate) is
 * forgotten with its write, to come again in order (then an RNR NAK if
 * there is still no WQE).  Then an ACK for the new ePSN, and a selective
 * NAK if packets arrived behind the next hole.
 */
static void sr_advance(struct rc_qp *qp, uint32_t from)
{
	struct rc_resp *r = &qp->resp;
	bool moved = false;

	/* PSNs ePSN jumped over in order (a read's) hold nothing placed. */
	for (uint32_t p = from, n = 0; p != r->epsn && n < RC_SR_WINDOW; p = psn_add(p, 1), n++) {
		struct rc_sr_write *e = sr_is_placed(r, p) ? sr_write_of(r, p) : NULL;

		sr_mark(r, p, false);
		if (e)
			sr_write_drop(r, e);
	}
	while (sr_is_placed(r, r->epsn)) {
		struct rc_sr_write *e = sr_write_of(r, r->epsn);
		uint32_t k = e ? (uint32_t)psn_cmp(r->epsn, e->first_psn) : 0;
		uint8_t *dst = NULL;

		if (e && e->held && r->epsn == e->last_psn && (!e->with_imm || take_recv_wqe(qp)))
			dst = rc_mr_remote(qp->eng, qp->pd, qp->qpn, e->rkey, e->va + e->len - 1, 1,
					   IBV_ACCESS_REMOTE_WRITE, NULL);
		if (!e || r->msg != (k ? RC_MSG_WRITE : RC_MSG_NONE) ||
		    (r->epsn == e->last_psn && !dst)) {
			sr_mark(r, r->epsn, false);
			if (e)
				sr_write_drop(r, e);
			break;
		}
		sr_mark(r, r->epsn, false);
		if (dst) {
			__atomic_store_n(dst, e->last_byte, __ATOMIC_RELEASE);
			if (e->with_imm) {
				struct ibv_wc wc = {
					.opcode = IBV_WC_RECV_RDMA_WITH_IMM, .byte_len = e->len,
					.imm_data = htobe32(e->imm), .wc_flags = IBV_WC_WITH_IMM,
				};

				push_recv(qp, &wc, e->solicited);
			}
			r->msg = RC_MSG_NONE;
			r->msn = (r->msn + 1) & WIRE_MSN_MASK;
			e->used = false;
		} else {
			uint32_t off = (k + 1) * qp->pmtu;

			r->msg = RC_MSG_WRITE;
			r->va = e->va + off;
			r->rkey = e->rkey;
			r->write_len = e->len;
			r->resid = e->len - off;
		}
		r->epsn = psn_add(r->epsn, 1);
		moved = true;
	}
	for (unsigned i = 0; i < RC_SR_WRITES; i++)
		if (r->sr_write[i].used && psn_cmp(r->sr_write[i].last_psn, r->epsn) < 0)
			r->sr_write[i].used = false;
	if (moved)
		schedule_ack(qp, AETH_ACK_SYNDROME, psn_add(r->epsn, (uint32_t)-1));
	/* Both stay at or ahead of ePSN, so that PSN comparisons with them never wrap. */
	if (psn_cmp(r->sr_seen, r->epsn) < 0)
		r->sr_seen = r->epsn;
	if (psn_cmp(r->sr_nak_end, r->epsn) < 0)
		r->sr_nak_end = r->epsn;
	sr_nak_hole(qp, false);
}

/* ---- Executing ---- */

/*
 * Bytes in ascending order, the very last byte of a message last, so a
 * program spinning on the end of its buffer sees the whole message
 * (memcpy may store the tail of a block first).
 */
static void place_ordered(uint8_t *dst, const uint8_t *src, uint32_t len, bool last)
{
	if (!last) {
		wire_payload_copy(dst, src, len);
		return;
	}
	wire_payload_copy(dst, src, len - 1);
	__atomic_store_n(dst + len - 1, src[len - 1], __ATOMIC_RELEASE);
}

/* place_ordered() into ODP memory; -EFAULT where it is not mapped writable. */
static int place_odp(uint8_t *dst, const uint8_t *src, uint32_t len, bool last)
{
	if (!last)
		return rc_odp_write(dst, src, len);
	if (rc_odp_write(dst, src, len - 1))
		return -EFAULT;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return rc_odp_write(dst + len - 1, src + len - 1, 1);
}

/*
 * An atomic write (its 8 bytes stored at once) or a flush (every earlier
 * write placed before the answer; memory here is coherent, so a fence is
 * all both placement types need), answered like rxe with a zero-length
 * RDMA READ response from a responder resource.
 */
static enum resp_state execute_empty_read(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	const struct wire_pkt *pkt = c->pkt;
	struct rc_resp_res *x = &r->res[r->res_head % r->nres];

	if (c->fl & WIRE_OPF_ATOMIC_WRITE) {
		uint64_t v;

		memcpy(&v, wire_pkt_payload(pkt), 8);
		if (unlikely(c->target_odp)) {
			if (rc_odp_write(c->target, (const uint8_t *)&v, 8)) {
				c->status = IBV_WC_REM_ACCESS_ERR;
				return RESP_ERR_ACCESS;
			}
		} else {
			__atomic_store_n((uint64_t *)(void *)c->target, v, __ATOMIC_SEQ_CST);
		}
	} else {
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
	}
	memset(x, 0, sizeof(*x));
	x->type = RC_RES_EMPTY_READ;
	x->pending = true;
	x->first_psn = x->last_psn = x->cur_psn = pkt->psn;
	r->res_head++;
	r->msn = (r->msn + 1) & WIRE_MSN_MASK;
	r->epsn = psn_add(pkt->psn, 1);
	r->ack_pending = false;
	rc_qp_kick(qp);
	return RESP_DONE;
}

/* What is left of the request opcodes after sends, writes and reads: the atomics. */
static enum resp_state execute_atomic(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	const struct wire_pkt *pkt = c->pkt;
	const struct wire_atomic_eth *a = wire_pkt_ext(pkt, WIRE_EXT_ATOMIC_ETH);
	struct rc_resp_res *x = &r->res[r->res_head % r->nres];
	uint64_t *p = (uint64_t *)(void *)c->target;
	uint64_t orig;

	/* Atomic with respect to CPU atomics on the same memory, too. */
	if ((pkt->opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_COMPARE_SWAP) {
		orig = wire_get64(a->compare);
		__atomic_compare_exchange_n(p, &orig, wire_get64(a->swap_add), false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, wire_get64(a->swap_add), __ATOMIC_SEQ_CST);
	}
	memset(x, 0, sizeof(*x));
	x->type = RC_RES_ATOMIC;
	x->pending = true;
	x->first_psn = x->last_psn = x->cur_psn = pkt->psn;
	x->orig = orig;
	r->res_head++;
	r->msn = (r->msn + 1) & WIRE_MSN_MASK;
	r->epsn = psn_add(pkt->psn, 1);
	r->ack_pending = false;
	rc_qp_kick(qp);
	return RESP_DONE;
}

static enum resp_state execute(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;
	const struct wire_pkt *pkt = c->pkt;
	uint32_t len = pkt->payload_len;

	if (c->fl & WIRE_OPF_SEND) {
		if (len && rc_sge_scatter(qp->eng, rc_resp_pd(qp), r->wqe->sge, r->wqe->num_sge,
					  &r->recv_cur, wire_pkt_payload(pkt), len)) {
			c->status = IBV_WC_LOC_PROT_ERR;
			return RESP_ERR_OP;
		}
		r->recv_len += len;
		r->msg = ends(c->fl) ? RC_MSG_NONE : RC_MSG_SEND;
		if (!ends(c->fl))
			return RESP_ACKNOWLEDGE;
		if (c->fl & WIRE_OPF_INV) {
			const struct wire_ieth *ieth = wire_pkt_ext(pkt, WIRE_EXT_IETH);

			if (rc_mr_invalidate(qp->eng, rc_resp_pd(qp), qp->qpn, wire_get32(ieth->rkey))) {
				c->status = IBV_WC_REM_INV_REQ_ERR;
				return RESP_ERR_INVALID;
			}
		}
		return RESP_COMPLETE;
	}
	if (c->fl & WIRE_OPF_WRITE) {
		if (unlikely(c->target_odp)) {
			/* No copy that checks on the way: the ICRC first, then the kernel's copy. */
			if (c->icrc_unchecked && !rc_icrc_ok(qp->eng, pkt))
				return RESP_DROP;	/* counted as WIRE_DROP_BAD_ICRC */
			c->icrc_unchecked = false;
			if (len && place_odp(c->target, wire_pkt_payload(pkt), len, ends(c->fl))) {
				c->status = IBV_WC_REM_ACCESS_ERR;
				return RESP_ERR_ACCESS;
			}
		} else if (c->icrc_unchecked) {
			if (!copy_checked(qp->eng, c->target, pkt))
				return RESP_DROP;	/* counted as WIRE_DROP_BAD_ICRC */
			c->icrc_unchecked = false;
		} else if (len) {
			place_ordered(c->target, wire_pkt_payload(pkt), len, ends(c->fl));
		}
		if (r->peer_sr && !ends(c->fl) && (c->fl & WIRE_OPF_FIRST))
			sr_write_add(qp, pkt->psn, r->va, r->rkey, r->write_len);
		r->va += len;
		r->resid -= len;
		r->msg = ends(c->fl) ? RC_MSG_NONE : RC_MSG_WRITE;
		return ends(c->fl) && writes_imm(c) ? RESP_COMPLETE : RESP_ACKNOWLEDGE;
	}
	if (c->fl & WIRE_OPF_READ) {
		const struct wire_reth *reth = pkt_reth(pkt);
		struct rc_resp_res *x = &r->res[r->res_head % r->nres];
		uint32_t dma = wire_get32(reth->dma_len);
		uint32_t npkts = dma ? (dma + qp->pmtu - 1) / qp->pmtu : 1;

		memset(x, 0, sizeof(*x));
		x->type = RC_RES_READ;
		x->pending = true;
		x->first_psn = x->cur_psn = pkt->psn;
		x->last_psn = psn_add(pkt->psn, npkts - 1);
		x->va = wire_get64(reth->va);
		x->rkey = wire_get32(reth->rkey);
		x->len = dma;
		x->srqn = qp->type == IBV_QPT_XRC_RECV ? r->xsrq->srqn : 0;
		r->res_head++;
		r->msn = (r->msn + 1) & WIRE_MSN_MASK;
		r->epsn = psn_add(x->last_psn, 1);
		/* The responses acknowledge everything before them. */
		r->ack_pending = false;
		rc_qp_kick(qp);
		return RESP_DONE;
	}
	if (c->fl & (WIRE_OPF_ATOMIC_WRITE | WIRE_OPF_FLUSH))
		return execute_empty_read(c);
	return execute_atomic(c);
}

static enum resp_state complete(struct resp_ctx *c)
{
	struct rc_resp *r = &c->qp->resp;

	complete_recv(c->qp, c->pkt, IBV_WC_SUCCESS,
		      (c->fl & WIRE_OPF_WRITE) ? r->write_len : r->recv_len);
	return RESP_ACKNOWLEDGE;
}

static enum resp_state acknowledge(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_resp *r = &qp->resp;

	r->epsn = psn_add(c->pkt->psn, 1);
	if (ends(c->fl))
		r->msn = (r->msn + 1) & WIRE_MSN_MASK;
	if (!c->uc && c->pkt->ackreq)
		schedule_ack(qp, AETH_ACK_SYNDROME, c->pkt->psn);
	return RESP_DONE;
}

static enum resp_state err_seq(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;

	qp->resp.nak_sent = true;
	schedule_ack(qp, WIRE_AETH_NAK | WIRE_NAK_PSN_SEQ_ERR, qp->resp.epsn);
	return RESP_DONE;
}

static enum resp_state err_rnr(struct resp_ctx *c)
{
	struct rc_qp *qp = c->qp;

	/* Not executed; ePSN stays; later packets are dropped until the retry. */
	qp->resp.nak_sent = true;
	schedule_ack(qp, WIRE_AETH_RNR_NAK | (qp->attr.min_rnr_timer & WIRE_AETH_CODE_MASK),
		     c->pkt->psn);
	return RESP_DONE;
}

/* Responder errors (IBA ch. 9.9): NAK, complete the receive WQE in error, QP to ERR. */
static enum resp_state err_fatal(struct resp_ctx *c, uint8_t code, enum ibv_event_type ev)
{
	struct rc_qp *qp = c->qp;

	if (c->uc) {
		qp->resp.drop_msg = true;
		abandon_message(qp);
		return drop(c, RC_DROP_UC_ERROR);
	}
	if (qp->resp.have_wqe)
		complete_recv(qp, c->pkt, c->status, 0);
	schedule_fatal(c, code, ev);
	return RESP_DONE;
}

static enum resp_state run_step(struct resp_ctx *c, enum resp_state s)
{
	switch (s) {
	case RESP_CHECK_PSN:
		return check_psn(c);
	case RESP_DUPLICATE:
		return duplicate(c);
	case RESP_SR_PLACE:
		return sr_place(c);
	case RESP_CHECK_XRC_SRQ:
		return check_xrc_srq(c);
	case RESP_CHECK_OP_SEQ:
		return check_op_seq(c);
	case RESP_CHECK_OP_VALID:
		return check_op_valid(c);
	case RESP_CHECK_RESOURCE:
		return check_resource(c);
	case RESP_CHECK_LENGTH:
		return check_length(c);
	case RESP_CHECK_RKEY:
		return check_rkey(c);
	case RESP_EXECUTE:
		return execute(c);
	case RESP_COMPLETE:
		return complete(c);
	case RESP_ACKNOWLEDGE:
		return acknowledge(c);
	case RESP_ERR_SEQ:
		return err_seq(c);
	case RESP_ERR_RNR:
		return err_rnr(c);
	case RESP_ERR_INVALID:
		return err_fatal(c, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	case RESP_ERR_ACCESS:
		return err_fatal(c, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	case RESP_ERR_OP:
		return err_fatal(c, WIRE_NAK_REM_OP_ERR, IBV_EVENT_QP_FATAL);
	default:
		return RESP_DONE;
	}
}

/* ---- UD ---- */

static void ud_rx(struct rc_qp *qp, const struct wire_pkt *pkt)
{
	const struct wire_deth *deth = wire_pkt_ext(pkt, WIRE_EXT_DETH);
	struct rc_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;
	struct rc_resp *r = &qp->resp;
	struct rc_recv_wqe *head;
	uint8_t grh[RC_GRH_LEN];
	struct rc_sge_cursor cur = { 0, 0 };
	uint32_t len = pkt->payload_len;
	enum ibv_wc_status st = IBV_WC_SUCCESS;
	struct ibv_wc wc;

	/* The Q_Key must match; a mismatch is dropped silently. */
	if (wire_get32(deth->qkey) != qp->attr.qkey) {
		qp->cnt.rc_drops.count[RC_DROP_BAD_QKEY]++;
		return;
	}
	if (!rc_rq_count(rq)) {
		qp->cnt.rc_drops.count[RC_DROP_NO_RECV_WQE]++;
		return;
	}
	head = rc_rq_at(rq, rq->head);
	if (qp->srq) {
		rc_srq_pop(qp->srq, r->wqe);
	} else {
		memcpy(r->wqe, head, sizeof(*head) + head->num_sge * sizeof(struct ibv_sge));
		rq->head++;
	}

	/*
	 * The receive buffer starts with 40 bytes for the GRH: for IPv4 the IP
	 * header sits in the last 20 of them, for IPv6 the whole IPv6 header
	 * (as rxe and mlx5 place it).
	 */
	memset(grh, 0, sizeof(grh));
	if (pkt->ip_version == 4)
		memcpy(grh + RC_GRH_LEN - sizeof(struct wire_ipv4_hdr), pkt->frame + pkt->l3_off,
		       sizeof(struct wire_ipv4_hdr));
	else
		memcpy(grh, pkt->frame + pkt->l3_off, sizeof(struct wire_ipv6_hdr));

	if ((uint64_t)RC_GRH_LEN + len > r->wqe->length)
		st = IBV_WC_LOC_LEN_ERR;
	else if (rc_sge_scatter_may_fault(qp->eng, qp->pd, r->wqe->sge, r->wqe->num_sge, &cur,
					  grh, RC_GRH_LEN) ||
		 (len && rc_sge_scatter_may_fault(qp->eng, qp->pd, r->wqe->sge, r->wqe->num_sge,
						  &cur, wire_pkt_payload(pkt), len)))
		st = IBV_WC_LOC_PROT_ERR;

	memset(&wc, 0, sizeof(wc));
	wc.wr_id = r->wqe->wr_id;
	wc.status = st;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->qpn;
	wc.src_qp = wire_get32(deth->src_qp) & WIRE_QPN_MASK;
	if (st == IBV_WC_SUCCESS) {
		wc.byte_len = RC_GRH_LEN + len;
		wc.wc_flags = IBV_WC_GRH;
		wc.sl = pkt->roce_v1 ? RC_UD_SL_GRH :
			RC_UD_SL_UDP | (pkt->ip_version == 4 ? RC_UD_SL_IPV4 : RC_UD_SL_IPV6);
		if (pkt->op->flags & WIRE_OPF_IMM) {
			const struct wire_immdt *imm = wire_pkt_ext(pkt, WIRE_EXT_IMMDT);

			wc.imm_data = htobe32(wire_get32(imm->imm));
			wc.wc_flags |= IBV_WC_WITH_IMM;
		}
	}
	rc_cq_push(qp->rcq, &wc, pkt->se);
	qp->cnt.completions++;
}

void rc_resp_rx(struct rc_qp *qp, const struct wire_pkt *pkt, bool icrc_unchecked)
{
	struct resp_ctx c = {
		.qp = qp,
		.pkt = pkt,
		.fl = pkt->op->flags,
		.low = pkt->opcode & WIRE_OPC_LOW_MASK,
		.uc = qp->type == IBV_QPT_UC,
		.icrc_unchecked = icrc_unchecked,
	};
	enum resp_state s = RESP_CHECK_PSN;
	uint32_t epsn = qp->resp.epsn;

	if (!rc_qp_may_recv(qp)) {
		rc_rx_drop(qp, pkt, icrc_unchecked, RC_DROP_QP_STATE);
		return;
	}
	if (qp->type == IBV_QPT_UD) {
		ud_rx(qp, pkt);
		return;
	}
	if (qp->resp.fatal) {
		rc_rx_drop(qp, pkt, icrc_unchecked, RC_DROP_RESP_IN_ERROR);
		return;
	}
	memcpy(qp->resp.reply_mac, pkt->src_mac, 6);
	qp->resp.reply_mac_ok = true;
	/* A checked packet only: a corrupted bit must not turn selective repeat on. */
	if (unlikely(pkt->sr_cap) && !qp->resp.peer_sr && !icrc_unchecked &&
	    qp->eng->cfg.selective_repeat && qp->type == IBV_QPT_RC) {
		qp->resp.peer_sr = true;
		qp->resp.sr_seen = qp->resp.sr_nak_end = qp->resp.epsn;
	}
	while (s != RESP_DONE && s != RESP_DROP) {
		RC_TRACE(qp, "resp", resp_state_name[s]);
		if (unlikely(c.icrc_unchecked) && !before_icrc(s)) {
			if (!rc_icrc_ok(qp->eng, pkt))
				return;
			c.icrc_unchecked = false;
		}
		s = run_step(&c, s);
	}
	RC_TRACE(qp, "resp", resp_state_name[s]);
	if (s == RESP_DROP && c.drop)
		rc_rx_drop(qp, pkt, c.icrc_unchecked, c.drop);
	if (unlikely(qp->resp.peer_sr) && qp->resp.epsn != epsn && !qp->resp.fatal)
		sr_advance(qp, epsn);
}

/* ---- ECN: Annex A17.9, a CE mark makes the responder send a CNP ---- */

void rc_resp_ecn(struct rc_qp *qp, const struct wire_pkt *pkt)
{
	struct rc_resp *r = &qp->resp;

	qp->cnt.ecn_ce_rx++;
	if (qp->eng->now < r->next_cnp_ns)
		return;
	r->next_cnp_ns = qp->eng->now + rc_cnp_interval_ns(qp->eng);
	if (qp->type == IBV_QPT_UD) {
		const struct wire_deth *deth = wire_pkt_ext(pkt, WIRE_EXT_DETH);

		r->cnp_qpn = wire_get32(deth->src_qp) & WIRE_QPN_MASK;
	} else {
		r->cnp_qpn = qp->attr.dest_qp_num;
	}
	memcpy(r->cnp_gid, pkt->src_gid, 16);
	memcpy(r->cnp_src_gid, pkt->dst_gid, 16);
	memcpy(r->cnp_mac, pkt->src_mac, 6);
	r->cnp_ipver = pkt->ip_version;
	r->cnp_pending = true;
	rc_qp_kick(qp);
}

/* ---- Transmit: CNPs, read/atomic responses in PSN order, then the ACK/NAK ---- */

static void response_desc(struct rc_qp *qp, struct wire_build_desc *d)
{
	*d = qp->tmpl;
	if (!qp->path.mac_ok && qp->resp.reply_mac_ok)
		memcpy(d->dst_mac, qp->resp.reply_mac, 6);
	/* Offered to every requester: one that does not do it ignores a reserved bit. */
	d->sr_cap = qp->eng->cfg.selective_repeat && qp->type == IBV_QPT_RC;
}

static int send_cnp(struct rc_qp *qp)
{
	struct rc_resp *r = &qp->resp;
	struct wire_build_desc d;
	int ret;

	/* Back to the sender of the marked packet, from the GID it was sent to. */
	memset(&d, 0, sizeof(d));
	memcpy(d.src_mac, qp->eng->port->mac, 6);
	memcpy(d.dst_mac, r->cnp_mac, 6);
	memcpy(d.src_gid, r->cnp_src_gid, 16);
	memcpy(d.dst_gid, r->cnp_gid, 16);
	d.ip_version = r->cnp_ipver;
	d.opcode = WIRE_OPC_CNP;
	d.dest_qp = r->cnp_qpn;
	d.udp_sport = wire_udp_sport(qp->qpn, r->cnp_qpn);
	d.pkey = WIRE_DEFAULT_PKEY;
	ret = rc_tx_packet(qp->eng, qp, rc_gid_is_local(qp->eng, r->cnp_gid), &d, 0, NULL, NULL, NULL);
	if (!ret) {
		r->cnp_pending = false;
		qp->cnt.cnps_tx++;
	}
	return ret;
}

struct read_arg {
	const uint8_t	*src;
	bool		may_fault;	/* ODP region or a replay: rc_odp_read() */
};

static int copy_read(void *arg, uint8_t *dst, uint32_t len, uint32_t *crc)
{
	const struct read_arg *a = arg;
	const uint8_t *src = a->src;

	if (unlikely(a->may_fault)) {
		if (rc_odp_read(dst, src, len))
			return -EFAULT;
		if (crc)
			*crc = wire_crc32(*crc, dst, len);
	} else if (crc)
		*crc = wire_crc32_copy(*crc, dst, src, len);
	else
		wire_payload_copy(dst, src, len);
	return 0;
}

/* The PD a read response is read under: an XRC target's SRQ may be gone by then. */
static struct rc_pd *res_pd(const struct rc_qp *qp, const struct rc_resp_res *x)
{
	const struct rc_srq *srq;

	if (qp->type != IBV_QPT_XRC_RECV)
		return qp->pd;
	srq = rc_xrc_srq_get(qp->eng, x->srqn);
	return srq && srq->xrcd == qp->xrcd ? srq->pd : NULL;
}

/* One packet of a read or atomic response; -EFAULT when the region (or XRC SRQ) went away. */
static int send_response(struct rc_qp *qp, struct rc_resp_res *x)
{
	struct rc_resp *r = &qp->resp;
	struct wire_build_desc d;
	struct read_arg a = { NULL, false };
	uint32_t payload = 0;
	int ret;

	response_desc(qp, &d);
	d.psn = x->cur_psn;
	d.aeth.syndrome = AETH_ACK_SYNDROME;
	d.aeth.msn = r->msn;
	if (x->type == RC_RES_ATOMIC) {
		d.opcode = qp->opc_base | WIRE_OP_ATOMIC_ACKNOWLEDGE;
		d.atomic_orig = x->orig;
	} else {
		uint32_t k = (uint32_t)psn_cmp(x->cur_psn, x->first_psn);
		uint32_t off = k * qp->pmtu;
		bool first = k == 0, last = x->cur_psn == x->last_psn;

		payload = last ? x->len - off : qp->pmtu;
		d.opcode = qp->opc_base | (first && last ? WIRE_OP_READ_RESP_ONLY :
					  first ? WIRE_OP_READ_RESP_FIRST :
					  last ? WIRE_OP_READ_RESP_LAST : WIRE_OP_READ_RESP_MIDDLE);
		if (payload) {
			struct rc_pd *pd = res_pd(qp, x);

			a.src = pd ? rc_mr_remote(qp->eng, pd, qp->qpn, x->rkey, x->va + off, payload,
						  IBV_ACCESS_REMOTE_READ, &a.may_fault) : NULL;
			if (!a.src)
				return -EFAULT;
			a.may_fault |= x->replay;
		}
	}
	ret = rc_tx_packet(qp->eng, qp, qp->path.local, &d, payload, copy_read, &a, NULL);
	if (ret)
		return ret;
	if (x->cur_psn == x->last_psn)
		x->pending = false;
	else
		x->cur_psn = psn_add(x->cur_psn, 1);
	return 0;
}

static void count_ack_tx(struct rc_qp *qp, uint8_t syndrome)
{
	switch (syndrome & WIRE_AETH_TYPE_MASK) {
	case WIRE_AETH_ACK:
		qp->cnt.acks_tx++;
		break;
	case WIRE_AETH_RNR_NAK:
		qp->cnt.rnr_naks_tx++;
		break;
	default:
		switch (syndrome & WIRE_AETH_CODE_MASK) {
		case WIRE_NAK_PSN_SEQ_ERR:
			qp->cnt.seq_naks_tx++;
			break;
		case WIRE_NAK_INVALID_REQ:
			qp->cnt.inv_req_naks_tx++;
			break;
		case WIRE_NAK_REM_ACCESS_ERR:
			qp->cnt.rem_access_naks_tx++;
			break;
		default:
			qp->cnt.rem_op_naks_tx++;
			break;
		}
	}
}

static int send_ack(struct rc_qp *qp)
{
	struct rc_resp *r = &qp->resp;
	struct wire_build_desc d;
	int ret;

	response_desc(qp, &d);
	d.opcode = qp->opc_base | WIRE_OP_ACKNOWLEDGE;
	d.psn = r->ack_psn;
	d.aeth.syndrome = r->ack_syndrome;
	d.aeth.msn = r->ack_msn;
	d.sr_nak = r->ack_selective;
	ret = rc_tx_packet(qp->eng, qp, qp->path.local, &d, 0, NULL, NULL, NULL);
	if (ret)
		return ret;
	r->ack_pending = false;
	if (r->ack_selective)
		qp->cnt.selective_naks_tx++;
	else
		count_ack_tx(qp, r->ack_syndrome);
	return 0;
}

/*
 * The ACK or NAK @qp still owes goes out now, before the QP stops (ERR, RESET,
 * destroy): what it acknowledges was completed here, and a peer without it
 * would retry into a QP that no longer answers.
 */
void rc_resp_ack_before_stop(struct rc_qp *qp)
{
	if (qp->resp.ack_pending && rc_qp_may_recv(qp))
		(void)send_ack(qp);
}

int rc_resp_tx(struct rc_qp *qp, unsigned quota, bool *more)
{
	struct rc_resp *r = &qp->resp;
	unsigned sent = 0;
	uint32_t n;
	int ret;

	if (!rc_qp_may_recv(qp))
		return 0;
	if (r->cnp_pending) {
		ret = send_cnp(qp);
		if (ret)
			return ret;
		sent++;
	}
	if (qp->type == IBV_QPT_UD)
		return (int)sent;

	n = r->res_head < r->nres ? r->res_head : r->nres;
	for (uint32_t s = r->res_head - n; s != r->res_head; s++) {
		struct rc_resp_res *x = &r->res[s % r->nres];

		while (x->pending) {
			if (sent >= quota) {
				*more = true;
				return (int)sent;
			}
			ret = send_response(qp, x);
			if (ret == -EFAULT && x->replay) {
				/* The requester had the original: nothing of its waits on this. */
				x->pending = false;
				qp->cnt.rc_drops.count[RC_DROP_DUP_NOT_HELD]++;
				break;
			}
			if (ret == -EFAULT) {
				/* The region was deregistered under a read: remote access error. */
				x->pending = false;
				r->ack_pending = true;
				r->ack_syndrome = WIRE_AETH_NAK | WIRE_NAK_REM_ACCESS_ERR;
				r->ack_psn = x->cur_psn;
				r->ack_msn = r->msn;
				r->fatal = true;
				r->fatal_event = IBV_EVENT_QP_ACCESS_ERR;
				break;
			}
			if (ret)
				return ret;
			sent++;
		}
	}
	if (r->ack_pending) {
		if (sent >= quota) {
			*more = true;
			return (int)sent;
		}
		ret = send_ack(qp);
		if (ret)
			return ret;
		sent++;
		if (r->fatal)
			rc_qp_error(qp, (enum ibv_event_type)r->fatal_event, true);
	}
	return (int)sent;
}
