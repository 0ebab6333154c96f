// SPDX-License-Identifier: MIT
/*
 * The completer: ACKs, NAKs, read responses and atomic acknowledgements
 * against the send queue (IBA ch. 9.7, reliable service), completions in WR order.
 */
#include <errno.h>

#include "rc_internal.h"

enum comp_state {
	COMP_GET_WQE,		/* the oldest WQE not complete */
	COMP_CHECK_PSN,		/* where the response falls against it */
	COMP_CHECK_ACK,		/* what the response says */
	COMP_READ,		/* place read response data */
	COMP_ATOMIC,		/* place the original value */
	COMP_ACKED,		/* an ACK for part of a send/write */
	COMP_COMPLETE,		/* the WQE is done */
	COMP_SEQ_NAK,		/* resend from the NAK's PSN */
	COMP_SR_NAK,		/* resend only the PSNs a selective NAK names */
	COMP_GAP,		/* responses are missing: resend from comp.psn */
	COMP_READ_AHEAD,	/* a later read's response while this read misses some */
	COMP_RNR,		/* wait the RNR timer, then resend */
	COMP_ERROR,		/* complete with an error, QP to ERR (SQE for UC/UD) */
	COMP_DONE,
};

static const char *const comp_state_name[] = {
	[COMP_GET_WQE]		= "GET_WQE",
	[COMP_CHECK_PSN]	= "CHECK_PSN",
	[COMP_CHECK_ACK]	= "CHECK_ACK",
	[COMP_READ]		= "READ",
	[COMP_ATOMIC]		= "ATOMIC",
	[COMP_ACKED]		= "ACKED",
	[COMP_COMPLETE]		= "COMPLETE",
	[COMP_SEQ_NAK]		= "SEQ_NAK",
	[COMP_SR_NAK]		= "SR_NAK",
	[COMP_GAP]		= "GAP",
	[COMP_READ_AHEAD]	= "READ_AHEAD",
	[COMP_RNR]		= "RNR",
	[COMP_ERROR]		= "ERROR",
	[COMP_DONE]		= "DONE",
};

struct comp_ctx {
	struct rc_qp		*qp;
	const struct wire_pkt	*pkt;	/* NULL: only local completions */
	struct rc_send_wqe	*w;
	uint8_t			syndrome;
	enum ibv_wc_status	status;
	unsigned		checked;	/* WQEs the packet was checked against */
	enum rc_drop		drop;		/* why, when it changed nothing */
};

/*
 * The packet is dropped for @why, unless it already acted: a response
 * checked against a second WQE completed the one before it.
 */
static enum comp_state drop(struct comp_ctx *c, enum rc_drop why)
{
	if (c->checked <= 1)
		c->drop = why;
	return COMP_DONE;
}

static uint8_t pkt_syndrome(const struct wire_pkt *pkt)
{
	const struct wire_aeth *a = wire_pkt_ext(pkt, WIRE_EXT_AETH);

	return a ? (uint8_t)(wire_get32(a->syn_msn) >> 24) : WIRE_AETH_ACK;
}

/* The oldest unacknowledged PSN moved: the peer is alive, the window opens. */
static void progress(struct rc_qp *qp, uint32_t new_psn)
{
	int32_t acked = psn_cmp(new_psn, qp->comp.psn);

	if (acked <= 0)
		return;
	qp->comp.psn = new_psn;
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	/* The peer took the packet it had refused: no need to wait any more. */
	if (qp->req.rnr_wait && psn_cmp(new_psn, qp->req.rnr_psn) > 0) {
		qp->req.rnr_wait = false;
		qp->rnr_deadline = 0;
	}
	rc_rto_progress(qp, (uint32_t)acked);
	/* A resend after a rewind is behind what the peer has acknowledged. */
	if (psn_cmp(qp->comp.psn, qp->req.psn) > 0 || qp->req.sr.active)
		rc_req_overtaken(qp);
	rc_qp_kick(qp);
}

/* Retire the head WQE, keeping the send cursor at or after it. */
static void retire(struct rc_qp *qp, struct rc_send_wqe *w, enum ibv_wc_status st)
{
	bool cursor_here = qp->sq_head == qp->req.wqe;
	uint32_t next_psn = psn_add(w->last_psn, 1);
	bool acked = st == IBV_WC_SUCCESS && rc_qp_reliable(qp);

	rc_qp_complete_send(qp, w, st);
	if (cursor_here) {
		qp->req.wqe = qp->sq_head;
		qp->req.offset = 0;
		qp->req.cur.idx = qp->req.cur.off = 0;
		if (acked && psn_cmp(next_psn, qp->req.psn) > 0)
			qp->req.psn = next_psn;
	}
	if (acked)
		progress(qp, next_psn);
	rc_qp_kick(qp);
}

static enum comp_state get_wqe(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;

	/* Nothing sent is outstanding: a response never checked acknowledges what already is. */
	if (qp->sq_head == qp->sq_tail)
		return c->checked ? COMP_DONE : drop(c, RC_DROP_STALE_RESPONSE);
	c->w = rc_sq_at(qp, qp->sq_head);
	switch (c->w->state) {
	case RC_WQE_DONE:
		return COMP_COMPLETE;
	case RC_WQE_ERROR:
		c->status = c->w->status;
		return COMP_ERROR;
	case RC_WQE_ACTIVE:
	case RC_WQE_SENT:
		/*
		 * A read that got responses while an earlier one waited
		 * (read_ahead()): those are acknowledged now, and all of
		 * them complete it.
		 */
		if (c->w->opcode == IBV_WR_RDMA_READ && c->w->resp_pkts) {
			if (c->w->resp_pkts == c->w->npkts)
				return COMP_COMPLETE;
			progress(qp, psn_add(c->w->first_psn, c->w->resp_pkts));
		}
		return c->pkt ? COMP_CHECK_PSN : COMP_DONE;
	default:
		return c->checked ? COMP_DONE : drop(c, RC_DROP_STALE_RESPONSE);
	}
}

static bool is_read_response(const struct wire_pkt *pkt)
{
	switch (pkt->opcode & WIRE_OPC_LOW_MASK) {
	case WIRE_OP_READ_RESP_FIRST:
	case WIRE_OP_READ_RESP_MIDDLE:
	case WIRE_OP_READ_RESP_LAST:
	case WIRE_OP_READ_RESP_ONLY:
		return true;
	default:
		return false;
	}
}

static enum comp_state check_psn(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_send_wqe *w = c->w;

	c->checked++;
	if (psn_cmp(c->pkt->psn, w->last_psn) > 0) {
		/*
		 * The response is for a later request: it acknowledges this
		 * send/write implicitly, but a read or atomic
		 * needs its own response, which got lost.
		 */
		if (w->opcode == IBV_WR_RDMA_READ && is_read_response(c->pkt))
			return COMP_READ_AHEAD;
		if (rc_wqe_op(w)->kind & RC_WR_READ_OR_ATOMIC)
			return COMP_GAP;
		return COMP_COMPLETE;
	}
	if (psn_cmp(c->pkt->psn, qp->comp.psn) < 0)
		return drop(c, RC_DROP_STALE_RESPONSE);	/* a duplicate of one handled */
	return COMP_CHECK_ACK;
}

static enum comp_state check_nak(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;

	switch (c->syndrome & WIRE_AETH_CODE_MASK) {
	case WIRE_NAK_PSN_SEQ_ERR:
		if (c->pkt->sr_nak && qp->req.peer_sr) {
			qp->cnt.selective_naks_rx++;
			return COMP_SR_NAK;
		}
		qp->cnt.seq_naks_rx++;
		return COMP_SEQ_NAK;
	case WIRE_NAK_INVALID_REQ:
		qp->cnt.inv_req_naks_rx++;
		c->status = IBV_WC_REM_INV_REQ_ERR;
		return COMP_ERROR;
	case WIRE_NAK_REM_ACCESS_ERR:
		qp->cnt.rem_access_naks_rx++;
		c->status = IBV_WC_REM_ACCESS_ERR;
		return COMP_ERROR;
	case WIRE_NAK_INVALID_RD_REQ:
		qp->cnt.inv_req_naks_rx++;
		c->status = IBV_WC_REM_INV_RD_REQ_ERR;
		return COMP_ERROR;
	default:
		qp->cnt.rem_op_naks_rx++;
		c->status = IBV_WC_REM_OP_ERR;
		return COMP_ERROR;
	}
}

static enum comp_state check_ack(struct comp_ctx *c)
{
	const struct wire_pkt *pkt = c->pkt;
	struct rc_send_wqe *w = c->w;
	uint8_t low = pkt->opcode & WIRE_OPC_LOW_MASK;

	c->syndrome = pkt_syndrome(pkt);
	switch (low) {
	case WIRE_OP_READ_RESP_FIRST:
	case WIRE_OP_READ_RESP_MIDDLE:
	case WIRE_OP_READ_RESP_LAST:
	case WIRE_OP_READ_RESP_ONLY: {
		uint32_t expected;

		/* An atomic write's answer: an empty read response at its PSN (IBA 1.5, rxe). */
		if (rc_wqe_op(w)->kind & RC_WR_ATOMIC_WRITE) {
			if (low != WIRE_OP_READ_RESP_ONLY || pkt->psn != w->first_psn ||
			    (c->syndrome & WIRE_AETH_TYPE_MASK) != WIRE_AETH_ACK)
				return drop(c, RC_DROP_UNEXPECTED_RESPONSE);
			if (pkt->payload_len) {
				c->status = IBV_WC_BAD_RESP_ERR;
				return COMP_ERROR;
			}
			return COMP_COMPLETE;
		}
		if (w->opcode != IBV_WR_RDMA_READ ||
		    (c->syndrome & WIRE_AETH_TYPE_MASK) != WIRE_AETH_ACK)
			return drop(c, RC_DROP_UNEXPECTED_RESPONSE);
		expected = psn_add(w->first_psn, w->resp_pkts);
		if (pkt->psn != expected)
			return psn_cmp(pkt->psn, expected) > 0 ? COMP_GAP :
			       drop(c, RC_DROP_STALE_RESPONSE);
		return COMP_READ;
	}
	case WIRE_OP_ATOMIC_ACKNOWLEDGE:
		if (!(rc_wqe_op(w)->kind & RC_WR_ATOMIC) || pkt->psn != w->first_psn ||
		    (c->syndrome & WIRE_AETH_TYPE_MASK) != WIRE_AETH_ACK)
			return drop(c, RC_DROP_UNEXPECTED_RESPONSE);
		return COMP_ATOMIC;
	case WIRE_OP_ACKNOWLEDGE:
		switch (c->syndrome & WIRE_AETH_TYPE_MASK) {
		case WIRE_AETH_ACK:
			c->qp->cnt.acks_rx++;
			/* An ACK inside a read or atomic: its responses are missing. */
			if (rc_wqe_op(w)->kind & RC_WR_READ_OR_ATOMIC)
				return COMP_GAP;
			return pkt->psn == w->last_psn ? COMP_COMPLETE : COMP_ACKED;
		case WIRE_AETH_RNR_NAK:
			c->qp->cnt.rnr_naks_rx++;
			return COMP_RNR;
		case WIRE_AETH_NAK:
			return check_nak(c);
		default:
			return drop(c, RC_DROP_UNEXPECTED_RESPONSE);	/* reserved AETH type */
		}
	default:
		return drop(c, RC_DROP_UNEXPECTED_RESPONSE);
	}
}

/*
 * Place the read response @pkt, the next @w expects, into @w's memory.
 * Return: IBV_WC_SUCCESS, or the status @w completes with.
 */
static enum ibv_wc_status place_read(struct rc_qp *qp, struct rc_send_wqe *w,
				     const struct wire_pkt *pkt)
{
	wire_op_flags fl = pkt->op->flags;
	bool last = pkt->psn == w->last_psn;
	uint32_t done = w->resp_pkts * qp->pmtu;
	uint32_t want = last ? w->length - done : qp->pmtu;

	/*
	 * Response packets in order: FIRST/MIDDLE before the end, LAST/ONLY at
	 * it (a retried read restarts with FIRST or ONLY), a full PMTU except
	 * the last.
	 */
	if ((last && !(fl & (WIRE_OPF_LAST | WIRE_OPF_ONLY))) ||
	    (!last && !(fl & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE))) || pkt->payload_len != want)
		return IBV_WC_BAD_RESP_ERR;
	if (want && rc_sge_scatter(qp->eng, qp->pd, w->sge, w->num_sge, &w->resp_cur,
				   wire_pkt_payload(pkt), want))
		return IBV_WC_LOC_PROT_ERR;
	w->resp_pkts++;
	return IBV_WC_SUCCESS;
}

static void rewind_once(struct rc_qp *qp);

static uint32_t read_hole(const struct rc_send_wqe *w)
{
	return psn_add(w->first_psn, w->resp_pkts);
}

/*
 * The last resend of read @w should have been answered, and its hole is
 * still open: the responder answers in order, and it has answered a request
 * sent after that resend (a response at or past reread_next), or a later
 * resend's hole was filled.
 */
static bool reread_overdue(const struct rc_qp *qp, const struct rc_send_wqe *w)
{
	return w->rereading && w->reread_psn == read_hole(w) &&
	       (psn_cmp(qp->comp.resp_high, w->reread_next) >= 0 ||
		(int32_t)(w->reread_seq - qp->comp.reread_answered) < 0);
}

/*
 * Read @w misses the response at its hole while later ones came: of @w
 * itself (@own), or of a later read.  The responder answers in order, so that
 * one was lost; @w is asked again for what it misses (rc_req_reread()), not
 * every request after it.  Once per hole, unless the resend is overdue, or a
 * packet of @w's own comes after a response beyond reread_high: every
 * original of @w came before that one, so this packet answers the resend,
 * and the resend's packet at the hole was lost.
 */
static void reread(struct rc_qp *qp, struct rc_send_wqe *w, bool own)
{
	if (!w->reread_want) {
		if (w->rereading && w->reread_psn == read_hole(w) && !reread_overdue(qp, w) &&
		    !(own && psn_cmp(qp->comp.resp_high, w->reread_high) > 0))
			return;
		w->reread_want = true;
		qp->req.rereads_wanted = true;
	}
	if (rc_req_reread(qp) || w != rc_sq_at(qp, qp->sq_head) ||
	    (qp->req.sr.active && qp->req.sr.reread))
		return;
	/* The oldest read cannot wait for the cursor to come between messages. */
	rewind_once(qp);
}

/* Overdue read resends go again; the watch moves to the oldest one still out. */
static void check_rereads(struct rc_qp *qp)
{
	struct rc_comp *k = &qp->comp;

	k->reread_watch = false;
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct rc_send_wqe *w = rc_sq_at(qp, i);

		if (w->state != RC_WQE_ACTIVE && w->state != RC_WQE_SENT)
			break;
		if (w->opcode != IBV_WR_RDMA_READ || !w->rereading || w->reread_want ||
		    w->reread_psn != read_hole(w))
			continue;
		if (reread_overdue(qp, w)) {
			reread(qp, w, false);
		} else if (!k->reread_watch || psn_cmp(w->reread_next, k->watch_psn) < 0) {
			k->reread_watch = true;
			k->watch_psn = w->reread_next;
		}
	}
}

/* @w's hole was just filled: by the answer to its last resend, the newest answered so far? */
static void reread_answered(struct rc_qp *qp, const struct rc_send_wqe *w, uint32_t psn)
{
	if (w->rereading && psn == w->reread_psn &&
	    (int32_t)(w->reread_seq - qp->comp.reread_answered) > 0)
		qp->comp.reread_answered = w->reread_seq;
}

static enum comp_state do_read(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_send_wqe *w = c->w;

	c->status = place_read(qp, w, c->pkt);
	if (c->status != IBV_WC_SUCCESS)
		return COMP_ERROR;
	reread_answered(qp, w, c->pkt->psn);
	if (w->resp_pkts == w->npkts)
		return COMP_COMPLETE;
	progress(qp, psn_add(c->pkt->psn, 1));
	return COMP_DONE;
}

/*
 * A response for a later read while the oldest one (@c->w) still misses
 * some.  The later read's response is placed when it is the next that read
 * expects (completions still go in order: get_wqe() completes it once it is
 * the oldest); a read before it that misses responses, and the later read
 * itself when this one is out of its order, are asked again (reread()).
 * Anything the later read cannot take here (bad) is left for when it is the
 * oldest, where do_read() judges it.
 */
static enum comp_state read_ahead(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	const struct wire_pkt *pkt = c->pkt;

	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++) {
		struct rc_send_wqe *w = rc_sq_at(qp, i);
		bool is_read = w->opcode == IBV_WR_RDMA_READ && w->resp_pkts < w->npkts;

		if (w->state != RC_WQE_ACTIVE && w->state != RC_WQE_SENT)
			break;
		if (psn_cmp(pkt->psn, w->first_psn) < 0 || psn_cmp(pkt->psn, w->last_psn) > 0) {
			if (is_read)
				reread(qp, w, false);
			continue;
		}
		if (is_read && (pkt_syndrome(pkt) & WIRE_AETH_TYPE_MASK) == WIRE_AETH_ACK) {
			int32_t ahead = psn_cmp(pkt->psn, psn_add(w->first_psn, w->resp_pkts));

			if (ahead > 0)
				reread(qp, w, true);
			else if (!ahead && place_read(qp, w, pkt) == IBV_WC_SUCCESS) {
				reread_answered(qp, w, pkt->psn);
				qp->cnt.reads_ahead++;
				rc_rto_alive(qp);
			}
		}
		break;
	}
	return COMP_DONE;
}

static enum comp_state do_atomic(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_send_wqe *w = c->w;
	const struct wire_atomic_ack_eth *ack = wire_pkt_ext(c->pkt, WIRE_EXT_ATOMIC_ACK_ETH);
	/* The original value lands in host order, as verbs define it. */
	uint64_t orig = wire_get64(ack->orig);
	struct rc_sge_cursor cur = { 0, 0 };

	if (rc_sge_scatter(qp->eng, qp->pd, w->sge, w->num_sge, &cur, (const uint8_t *)&orig,
			   sizeof(orig))) {
		c->status = IBV_WC_LOC_PROT_ERR;
		return COMP_ERROR;
	}
	return COMP_COMPLETE;
}

static enum comp_state acked(struct comp_ctx *c)
{
	progress(c->qp, psn_add(c->pkt->psn, 1));
	return COMP_DONE;
}

static enum comp_state complete(struct comp_ctx *c)
{
	retire(c->qp, c->w, IBV_WC_SUCCESS);
	return COMP_GET_WQE;
}

/*
 * A NAK or gap at a PSN the last rewind has resent already, less than a
 * round trip after that rewind, was caused by packets sent before it: the
 * ones that overtook a reordered packet, or arrived behind it after the
 * responder took it late.  The resend is on its way; going back again would
 * only send every packet a third time.  The shortest RTT measured bounds
 * how soon a resent packet can be answered; without one nothing is stale.
 */
static bool stale_rewind(const struct rc_qp *qp)
{
	const struct rc_comp *c = &qp->comp;

	return c->rewound && qp->rto.have_rtt && psn_cmp(c->psn, c->rewound_psn) > 0 &&
	       psn_cmp(c->psn, qp->req.psn) < 0 &&
	       qp->eng->now - c->rewound_at < qp->rto.min_rtt;
}

/*
 * Rewind once per PSN for NAKs and gaps; the timeout covers a lost retry.
 * At once, not left to the requester's next service pass behind a kick:
 * the rest of the burst (progress() arms or stops the timer by the send
 * pointer) and this pass's timers (a timeout counts only PSNs still
 * outstanding) must see the rewound send pointer, and a QP skipped by the
 * pass's TX budget would see it a pass late.  Deferred, the soak's
 * retransmissions and timeouts change.
 */
static void rewind_once(struct rc_qp *qp)
{
	if (qp->comp.rewound && qp->comp.rewound_psn == qp->comp.psn)
		return;
	if (stale_rewind(qp)) {
		qp->cnt.stale_naks++;
		return;
	}
	qp->comp.rewound = true;
	qp->comp.rewound_psn = qp->comp.psn;
	qp->comp.rewound_end = qp->req.max_psn;
	qp->comp.rewound_at = qp->eng->now;
	rc_rto_loss(qp);
	rc_req_rewind(qp);
}

static enum comp_state seq_nak(struct comp_ctx *c)
{
	/* A NAK acknowledges every PSN before its own. */
	progress(c->qp, c->pkt->psn);
	rewind_once(c->qp);
	return COMP_DONE;
}

/*
 * A selective NAK acknowledges what is before its PSN, like any NAK, and
 * names the PSNs missing from it on (the MSN field): only those are sent
 * again, at most once per smoothed round trip: the responder names a hole
 * again when a packet behind it asks for an ACK.  A hole inside the last
 * resend, sooner than the shortest RTT after it, is that resend still on
 * its way (stale_rewind()).
 */
static enum comp_state sr_nak(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	struct rc_comp *k = &qp->comp;
	const struct wire_aeth *a = wire_pkt_ext(c->pkt, WIRE_EXT_AETH);
	uint32_t missing = wire_get32(a->syn_msn) & WIRE_MSN_MASK;

	progress(qp, c->pkt->psn);
	if (k->rewound && k->rewound_psn == k->psn &&
	    (!qp->rto.have_rtt || qp->eng->now - k->rewound_at < qp->rto.srtt))
		return COMP_DONE;
	if (k->rewound && qp->rto.have_rtt && psn_cmp(k->psn, k->rewound_psn) > 0 &&
	    psn_cmp(k->psn, k->rewound_end) < 0 && qp->eng->now - k->rewound_at < qp->rto.min_rtt) {
		qp->cnt.stale_naks++;
		return COMP_DONE;
	}
	k->rewound = true;
	k->rewound_psn = k->psn;
	k->rewound_end = psn_add(k->psn, missing ? missing : 1);
	k->rewound_at = qp->eng->now;
	rc_rto_loss(qp);
	rc_req_resend(qp, k->psn, missing ? missing : 1);
	return COMP_DONE;
}

static enum comp_state gap(struct comp_ctx *c)
{
	/* Inside the oldest read, later responses of its own came: the rest of it is asked again. */
	if (c->w->opcode == IBV_WR_RDMA_READ && is_read_response(c->pkt) &&
	    psn_cmp(c->pkt->psn, c->w->last_psn) <= 0)
		reread(c->qp, c->w, true);
	else
		rewind_once(c->qp);
	return COMP_DONE;
}

static enum comp_state rnr(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;
	uint64_t wait_ns;

	progress(qp, c->pkt->psn);
	if (qp->attr.rnr_retry != 7) {		/* 7 means retry forever */
		if (!qp->comp.rnr_left) {
			c->status = IBV_WC_RNR_RETRY_EXC_ERR;
			return COMP_ERROR;
		}
		qp->comp.rnr_left--;
	}
	wait_ns = (uint64_t)wire_rnr_timer_us(c->syndrome & WIRE_AETH_CODE_MASK) * 1000;
	qp->req.rnr_wait = true;
	qp->req.rnr_psn = c->pkt->psn;
	rc_rto_stop(qp);
	rc_timer_arm(qp, &qp->rnr_deadline, qp->eng->now + wait_ns);
	return COMP_DONE;
}

static enum comp_state error(struct comp_ctx *c)
{
	struct rc_qp *qp = c->qp;

	retire(qp, c->w, c->status);
	if (rc_qp_reliable(qp))
		rc_qp_error(qp, 0, false);
	else
		rc_qp_set_state(qp, IBV_QPS_SQE, RC_BY_ENGINE);
	return COMP_DONE;
}

static void run(struct rc_qp *qp, const struct wire_pkt *pkt)
{
	struct comp_ctx c = { .qp = qp, .pkt = pkt };
	enum comp_state s = COMP_GET_WQE;

	while (s != COMP_DONE) {
		RC_TRACE(qp, "comp", comp_state_name[s]);
		switch (s) {
		case COMP_GET_WQE:
			s = get_wqe(&c);
			break;
		case COMP_CHECK_PSN:
			s = check_psn(&c);
			break;
		case COMP_CHECK_ACK:
			s = check_ack(&c);
			break;
		case COMP_READ:
			s = do_read(&c);
			break;
		case COMP_ATOMIC:
			s = do_atomic(&c);
			break;
		case COMP_ACKED:
			s = acked(&c);
			break;
		case COMP_COMPLETE:
			s = complete(&c);
			break;
		case COMP_SEQ_NAK:
			s = seq_nak(&c);
			break;
		case COMP_SR_NAK:
			s = sr_nak(&c);
			break;
		case COMP_GAP:
			s = gap(&c);
			break;
		case COMP_READ_AHEAD:
			s = read_ahead(&c);
			break;
		case COMP_RNR:
			s = rnr(&c);
			break;
		case COMP_ERROR:
			s = error(&c);
			break;
		case COMP_DONE:
			break;
		}
	}
	if (pkt && c.drop)
		qp->cnt.rc_drops.count[c.drop]++;
}

void rc_comp_rx(struct rc_qp *qp, const struct wire_pkt *pkt)
{
	uint32_t answered;

	if (!rc_qp_may_send(qp)) {
		qp->cnt.rc_drops.count[RC_DROP_QP_STATE]++;
		return;
	}
	/* Nothing acknowledges a PSN this QP has not sent yet. */
	if (psn_cmp(pkt->psn, qp->req.max_psn) >= 0) {
		qp->cnt.rc_drops.count[RC_DROP_GHOST_RESPONSE]++;
		return;
	}
	if (unlikely(pkt->sr_cap) && qp->eng->cfg.selective_repeat && qp->type == IBV_QPT_RC)
		qp->req.peer_sr = true;
	answered = qp->comp.reread_answered;
	if (is_read_response(pkt) && psn_cmp(pkt->psn, qp->comp.resp_high) > 0)
		qp->comp.resp_high = pkt->psn;
	run(qp, pkt);
	if (qp->comp.reread_watch && rc_qp_may_send(qp) &&
	    (psn_cmp(qp->comp.resp_high, qp->comp.watch_psn) >= 0 ||
	     answered != qp->comp.reread_answered))
		check_rereads(qp);
}

void rc_comp_run(struct rc_qp *qp)
{
	run(qp, NULL);
}
