// SPDX-License-Identifier: MIT
/*
 * Loss recovery of the RC requester: an RTO estimated from measured ACK
 * round trips (RFC 6298), early Go-Back-N on it, tail-loss probes (RFC 8985's
 * idea), and a send window that restarts small after a loss.  The QP's local
 * ACK timeout and retry_cnt keep their IBA meaning (C9-140: retry_cnt
 * retries, each after the timeout without progress): early retransmissions
 * and probes never count against them.
 */
#include "rc_internal.h"

static uint64_t rto_min(const struct rc_engine *eng)
{
	return eng->cfg.rto_min_us ? eng->cfg.rto_min_us * 1000ull : RC_RTO_MIN_NS;
}

static uint32_t inflight_max(const struct rc_engine *eng)
{
	return eng->cfg.inflight ? eng->cfg.inflight : RC_INFLIGHT_MAX;
}

static uint32_t restart_window(const struct rc_engine *eng)
{
	uint32_t w = eng->cfg.restart_window ? eng->cfg.restart_window : RC_RESTART_WINDOW;

	return w < RC_WINDOW ? w : RC_WINDOW;
}

/* Sent and not acknowledged: up to the cursor, or the front a selective resend goes back to. */
static bool outstanding(const struct rc_qp *qp)
{
	return psn_cmp(qp->req.sr.active ? qp->req.sr.psn : qp->req.psn, qp->comp.psn) > 0;
}

/* The early timer never waits longer than the local ACK timeout: that one would fire first. */
static uint64_t rto_ceiling(const struct rc_qp *qp)
{
	return qp->timeout_ns ? qp->timeout_ns : RC_RTO_MAX_NS;
}

/* RFC 6298 (2.3): SRTT + 4 RTTVAR, at least the floor, at most the ceiling; 0 before a sample. */
static uint64_t rto_now(const struct rc_qp *qp)
{
	const struct rc_rto *t = &qp->rto;
	uint64_t rto = t->srtt + 4 * t->rttvar, floor = rto_min(qp->eng), top = rto_ceiling(qp);

	if (!t->have_rtt)
		return 0;
	if (rto < floor)
		rto = floor;
	return rto < top ? rto : top;
}

/* The early timer with its backoff (RFC 6298 5.5), or 0 when it is off or has nothing to add. */
static uint64_t early_timeout(const struct rc_qp *qp)
{
	uint64_t rto = rto_now(qp), top = rto_ceiling(qp);

	if (qp->eng->cfg.no_adaptive_rto || !rto)
		return 0;
	rto <<= qp->rto.backoff;
	if (rto >= top)
		return qp->timeout_ns ? 0 : top;
	return rto;
}

/* retx_deadline: the earliest armed clock, as the engine's timer list knows it. */
static void rearm(struct rc_qp *qp)
{
	const struct rc_rto *t = &qp->rto;
	uint64_t next = 0;

	for (const uint64_t *d = (const uint64_t[]){ t->iba_deadline, t->early_deadline,
						     t->probe_deadline }, *end = d + 3; d != end; d++)
		if (*d && (!next || *d < next))
			next = *d;
	if (next)
		rc_timer_arm(qp, &qp->retx_deadline, next);
	else
		qp->retx_deadline = 0;
}

/* The early clock from now, unless the local ACK timeout comes first anyway. */
static void arm_early(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;
	uint64_t rto = early_timeout(qp), when = qp->eng->now + rto;

	t->early_deadline = rto && (!t->iba_deadline || when < t->iba_deadline) ? when : 0;
}

void rc_rto_reset(struct rc_qp *qp)
{
	memset(&qp->rto, 0, sizeof(qp->rto));
	qp->rto.cwnd = qp->rto.ssthresh = RC_WINDOW;
}

void rc_rto_stop(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;

	t->iba_deadline = t->early_deadline = t->probe_deadline = 0;
	qp->retx_deadline = 0;
}

/* RFC 6298 (2.2, 2.3) with the gains 1/8 and 1/4. */
static void rtt_sample(struct rc_qp *qp, uint64_t r)
{
	struct rc_rto *t = &qp->rto;

	qp->cnt.rtt_samples++;
	if (!t->have_rtt || r < t->min_rtt)
		t->min_rtt = r;
	if (!t->have_rtt) {
		t->have_rtt = true;
		t->srtt = r;
		t->rttvar = r / 2;
		return;
	}
	t->rttvar = t->rttvar - t->rttvar / 4 + (t->srtt > r ? t->srtt - r : r - t->srtt) / 4;
	t->srtt = t->srtt - t->srtt / 8 + r / 8;
}

void rc_rto_sent(struct rc_qp *qp, uint32_t psn, bool first, bool answered)
{
	struct rc_rto *t = &qp->rto;
	bool arm = false;

	/* One packet timed at a time, and only one sent once (Karn's rule). */
	if (first && answered && !t->timing) {
		t->timing = true;
		t->timed_psn = psn;
		t->timed_at = qp->eng->now;
		t->timed_rewound_at = 0;
	}
	/* A new tail: its probe is armed when the requester runs out of packets. */
	if (first)
		t->probe_deadline = 0;
	if (!t->iba_deadline && qp->timeout_ns) {
		t->iba_deadline = qp->eng->now + qp->timeout_ns;
		arm = true;
	}
	if (!t->early_deadline) {
		arm_early(qp);
		arm |= t->early_deadline != 0;
	}
	if (arm || !qp->retx_deadline)
		rearm(qp);
	if (first)
		rc_budget_sync(qp);
}

/*
 * RFC 8985's probe timeout, 2 SRTT: longer than the answer takes when all is
 * well, much shorter than the RTO.  Only a requester at the front (nothing
 * being resent) that has nothing more it may send probes, once per tail.
 */
void rc_rto_idle(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;
	uint64_t pto, when;

	if (qp->eng->cfg.no_tail_probe || !t->have_rtt || t->probed || t->probe_deadline ||
	    qp->req.rnr_wait || !outstanding(qp) || qp->req.psn != qp->req.max_psn)
		return;
	pto = 2 * t->srtt > RC_PROBE_MIN_NS ? 2 * t->srtt : RC_PROBE_MIN_NS;
	when = qp->eng->now + pto;
	if ((t->early_deadline && when >= t->early_deadline) ||
	    (t->iba_deadline && when >= t->iba_deadline))
		return;
	t->probe_deadline = when;
	rearm(qp);
}

/*
 * RFC 5681's growth: slow start (one more PSN in flight for each one
 * acknowledged) up to ssthresh, then one more per window acknowledged.
 */
static void grow_window(struct rc_rto *t, uint32_t acked)
{
	if (t->cwnd < t->ssthresh) {
		uint32_t below = t->ssthresh - t->cwnd;

		if (acked <= below) {
			t->cwnd += acked;
			return;
		}
		t->cwnd = t->ssthresh;
		acked -= below;
	}
	for (t->ca_acked += acked; t->ca_acked >= t->cwnd && t->cwnd < RC_WINDOW; t->cwnd++)
		t->ca_acked -= t->cwnd;
	if (t->cwnd == RC_WINDOW)
		t->ca_acked = 0;
}

void rc_rto_progress(struct rc_qp *qp, uint32_t acked)
{
	struct rc_rto *t = &qp->rto;

	if (t->timing && psn_cmp(qp->comp.psn, t->timed_psn) > 0) {
		uint64_t since_rewind = qp->eng->now - t->timed_rewound_at;

		t->timing = false;
		/*
		 * Karn: after a resend the answer is ambiguous, unless it came sooner than any
		 * answer to the resend can: then the original was answered and the early
		 * expiry that resent it was spurious (Eifel's idea, with min_rtt for a timestamp).
		 */
		if (!t->timed_rewound_at) {
			rtt_sample(qp, qp->eng->now - t->timed_at);
		} else if (since_rewind < t->min_rtt) {
			qp->cnt.spurious_rtos++;
			rtt_sample(qp, qp->eng->now - t->timed_at);
		}
	}
	grow_window(t, acked);
	rc_budget_sync(qp);
	t->backoff = 0;
	t->probed = false;
	t->probe_deadline = 0;
	if (!outstanding(qp)) {
		rc_rto_stop(qp);
		return;
	}
	/* The peer is alive: both clocks start again (RFC 6298 5.3; C9-140's "no progress"). */
	t->iba_deadline = qp->timeout_ns ? qp->eng->now + qp->timeout_ns : 0;
	arm_early(qp);
	rearm(qp);
}

void rc_rto_alive(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;

	t->backoff = 0;
	t->probed = false;
	t->probe_deadline = 0;
	arm_early(qp);
	rearm(qp);
}

/*
 * Once per loss episode (the window is above the restart size again): grow
 * back fast to half the window the loss happened at, then slowly, so that a
 * lossy path settles at the window it can carry (RFC 5681's halving).
 */
void rc_rto_loss(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;
	uint32_t w = restart_window(qp->eng);

	if (t->cwnd > w) {
		t->ssthresh = t->cwnd / 2 > w ? t->cwnd / 2 : w;
		t->cwnd = w;
		t->ca_acked = 0;
		qp->cnt.window_restarts++;
	}
}

void rc_rto_rewound(struct rc_qp *qp, uint32_t psn)
{
	struct rc_rto *t = &qp->rto;

	if (t->timing && psn_cmp(t->timed_psn, psn) >= 0 && !t->timed_rewound_at)
		t->timed_rewound_at = qp->eng->now;
}

/* The local ACK timeout: a retry counted against retry_cnt, or the end (C9-140). */
static void iba_expired(struct rc_qp *qp)
{
	qp->rto.iba_deadline = 0;
	qp->cnt.timeouts++;
	if (!qp->comp.retry_left) {
		struct rc_send_wqe *w = rc_sq_at(qp, qp->sq_head);

		rc_qp_complete_send(qp, w, IBV_WC_RETRY_EXC_ERR);
		rc_qp_error(qp, 0, false);
		return;
	}
	qp->comp.retry_left--;
	/* The next retry's clock runs from now, whatever early retransmissions do meanwhile. */
	if (qp->timeout_ns)
		qp->rto.iba_deadline = qp->eng->now + qp->timeout_ns;
	qp->rto.early_deadline = 0;
	rc_rto_loss(qp);
	qp->comp.rewound = false;
	rc_req_rewind(qp);
}

static void early_expired(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;

	t->early_deadline = 0;
	qp->cnt.early_retransmits++;
	if (t->backoff < RC_RTO_BACKOFF_MAX)
		t->backoff++;
	rc_rto_loss(qp);
	qp->comp.rewound = false;
	rc_req_rewind(qp);
}

static void probe_expired(struct rc_qp *qp)
{
	qp->rto.probe_deadline = 0;
	if (qp->rto.probed || !rc_req_probe(qp))
		return;
	qp->rto.probed = true;
	qp->cnt.tail_probes++;
}

void rc_req_timeout(struct rc_qp *qp)
{
	struct rc_rto *t = &qp->rto;
	uint64_t now = qp->eng->now;

	if (!rc_qp_may_send(qp) || !outstanding(qp) || qp->req.rnr_wait) {
		rc_rto_stop(qp);
		return;
	}
	if (t->iba_deadline && t->iba_deadline <= now)
		iba_expired(qp);
	else if (t->early_deadline && t->early_deadline <= now)
		early_expired(qp);
	else if (t->probe_deadline && t->probe_deadline <= now)
		probe_expired(qp);
	if (rc_qp_may_send(qp))
		rearm(qp);
}

void rc_rto_gauges(const struct rc_qp *qp, struct rc_counters *out)
{
	const struct rc_rto *t = &qp->rto;
	uint64_t rto = rto_now(qp);

	if (!rc_qp_reliable(qp))
		return;
	if (t->srtt > out->srtt_ns)
		out->srtt_ns = t->srtt;
	if (rto > out->rto_ns)
		out->rto_ns = rto;
	if (t->cwnd > out->send_window)
		out->send_window = t->cwnd;
}

/* ---- The engine's in-flight budget ---- */

void rc_budget_sync(struct rc_qp *qp)
{
	int32_t out = psn_cmp(qp->req.max_psn, qp->comp.psn);
	uint32_t now = out > 0 ? (uint32_t)out : 0;

	qp->eng->inflight = qp->eng->inflight - qp->inflight + now;
	qp->inflight = now;
}

void rc_budget_release(struct rc_qp *qp)
{
	qp->eng->inflight -= qp->inflight;
	qp->inflight = 0;
	if (qp->on_budget) {
		rc_list_del(&qp->budget_link);
		qp->on_budget = false;
	}
}

bool rc_budget_may_send(struct rc_qp *qp)
{
	struct rc_engine *eng = qp->eng;

	if (eng->inflight < inflight_max(eng))
		return true;
	if (!qp->on_budget) {
		qp->on_budget = true;
		rc_list_add_tail(&eng->budget_wait, &qp->budget_link);
		qp->cnt.inflight_waits++;
	}
	return false;
}

bool rc_budget_filling(const struct rc_engine *eng, uint32_t npsn)
{
	return eng->inflight + npsn >= inflight_max(eng);
}

void rc_budget_wake(struct rc_engine *eng)
{
	uint32_t max = inflight_max(eng), room;

	room = eng->inflight < max ? max - eng->inflight : 0;
	while (room && !rc_list_empty(&eng->budget_wait)) {
		struct rc_qp *qp = container_of(eng->budget_wait.next, struct rc_qp, budget_link);

		rc_list_del(&qp->budget_link);
		qp->on_budget = false;
		rc_qp_kick(qp);
		room--;
	}
}
