// SPDX-License-Identifier: MIT
/*
 * DCQCN's reaction point (Zhu et al., SIGCOMM 2015; Annex A17.9 names the
 * CNP that drives it): a CNP cuts a requester's rate by alpha/2 and raises
 * alpha; without CNPs alpha decays, and a timer and a byte counter raise the
 * rate back: fast recovery towards the rate before the cut, then additive,
 * then hyper increase of that target.  The pacer spaces packets at the rate;
 * a QP at its line rate is not paced at all.  Parameters and defaults are
 * ConnectX's (uroce/dcqcn.h).
 */
#include "rc_internal.h"

#define ALPHA_ONE	(1u << RC_ALPHA_SHIFT)

/* Each parameter by its mlx5 name, the default for 0. */
#define DCQCN_PARAM(name, def, min, max, what)				\
	static inline uint64_t name(const struct rc_engine *eng)	\
	{								\
		return eng->cfg.dcqcn.name ? eng->cfg.dcqcn.name : (def);	\
	}
DCQCN_PARAMS(DCQCN_PARAM)
#undef DCQCN_PARAM

uint64_t rc_cnp_interval_ns(const struct rc_engine *eng)
{
	return min_time_between_cnps(eng) * 1000;
}

static uint64_t line_kbps(const struct rc_engine *eng)
{
	return line_rate(eng) * 1000;
}

void rc_dcqcn_reset(struct rc_qp *qp)
{
	memset(&qp->cc, 0, sizeof(qp->cc));
	qp->cc.rate = qp->cc.target = line_kbps(qp->eng);
	qp->pace_deadline = 0;
}

/* @f to the @n in fixed point (1 is ALPHA_ONE), by squaring. */
static uint64_t pow_fixed(uint64_t f, uint64_t n)
{
	uint64_t r = ALPHA_ONE;

	while (n && r) {
		if (n & 1)
			r = r * f >> RC_ALPHA_SHIFT;
		f = f * f >> RC_ALPHA_SHIFT;
		n >>= 1;
	}
	return r;
}

/* Alpha after the updates without a CNP from alpha_at to @now: each keeps dce_tcp_g/1024. */
static uint32_t alpha_decayed(const struct rc_qp *qp, uint64_t now)
{
	const struct rc_engine *eng = qp->eng;
	uint64_t periods = (now - qp->cc.alpha_at) / (dce_tcp_rtt(eng) * 1000);
	uint64_t keep = dce_tcp_g(eng) << (RC_ALPHA_SHIFT - 10);

	return (uint32_t)(qp->cc.alpha * pow_fixed(keep, periods) >> RC_ALPHA_SHIFT);
}

/* DCQCN's alpha = (1 - g) alpha + g for the update that saw this CNP; the first one starts it. */
static void alpha_cnp(struct rc_qp *qp)
{
	struct rc_dcqcn *cc = &qp->cc;
	uint64_t now = qp->eng->now, g = dce_tcp_g(qp->eng);

	if (!cc->have_alpha) {
		cc->have_alpha = true;
		cc->alpha = (uint32_t)(initial_alpha_value(qp->eng) * ALPHA_ONE / 1023);
	} else {
		uint64_t a = alpha_decayed(qp, now);

		cc->alpha = (uint32_t)((a * g + (uint64_t)(1024 - g) * ALPHA_ONE) >> 10);
	}
	cc->alpha_at = now;
}

/* The pacer's clock: the next packet or the next timer increase, whichever is first. */
static void arm(struct rc_qp *qp, uint64_t when)
{
	if (!qp->pace_deadline || when < qp->pace_deadline)
		rc_timer_arm(qp, &qp->pace_deadline, when);
}

void rc_dcqcn_cnp(struct rc_qp *qp)
{
	const struct rc_engine *eng = qp->eng;
	struct rc_dcqcn *cc = &qp->cc;
	uint64_t now = eng->now, cut, floor;

	if (!eng->cfg.dcqcn.on || !rc_qp_reliable(qp))
		return;
	alpha_cnp(qp);
	if (cc->limited && now - cc->last_cut < rate_reduce_monitor_period(eng) * 1000)
		return;
	/* RT = RC, RC = RC (1 - alpha / 2) with rpg_gd 11, never below min_dec_fac % or the floor. */
	cut = cc->rate * cc->alpha >> (RC_ALPHA_SHIFT + rpg_gd(eng) - 10);
	floor = cc->rate * rpg_min_dec_fac(eng) / 100;
	cc->target = cc->rate;
	cc->rate = cc->rate - cut > floor ? cc->rate - cut : floor;
	if (cc->rate < rpg_min_rate(eng) * 1000)
		cc->rate = rpg_min_rate(eng) * 1000;
	cc->t_stage = cc->b_stage = 0;
	cc->bytes = 0;
	cc->timer_at = now + rpg_time_reset(eng) * 1000;
	cc->last_cut = now;
	if (!cc->limited)
		cc->next_tx = now;
	cc->limited = true;
	qp->cnt.rate_cuts++;
	arm(qp, cc->timer_at);
}

/*
 * One increase event of the timer or the byte counter (its stage already
 * counted): fast recovery while both stages are within rpg_threshold, hyper
 * increase once both are past it, additive increase between.  Back at the
 * line rate the pacer is off.
 */
static void increase(struct rc_qp *qp)
{
	const struct rc_engine *eng = qp->eng;
	struct rc_dcqcn *cc = &qp->cc;
	uint32_t f = (uint32_t)rpg_threshold(eng);
	uint64_t line = line_kbps(eng);

	if (cc->t_stage <= f && cc->b_stage <= f) {
		qp->cnt.rate_fast_recovery++;
	} else if (cc->t_stage > f && cc->b_stage > f) {
		uint32_t i = (cc->t_stage < cc->b_stage ? cc->t_stage : cc->b_stage) - f;

		cc->target += rpg_hai_rate(eng) * 1000 * i;
		qp->cnt.rate_hyper++;
	} else {
		cc->target += rpg_ai_rate(eng) * 1000;
		qp->cnt.rate_additive++;
	}
	if (cc->target > line)
		cc->target = line;
	cc->rate = (cc->rate + cc->target) / 2;
	if (cc->target == line && line - cc->rate <= rpg_ai_rate(eng) * 1000) {
		cc->rate = line;
		cc->limited = false;
	}
}

/* The timer increase events due by now. */
static void timer_events(struct rc_qp *qp)
{
	struct rc_dcqcn *cc = &qp->cc;

	while (cc->limited && qp->eng->now >= cc->timer_at) {
		cc->t_stage++;
		cc->timer_at += rpg_time_reset(qp->eng) * 1000;
		increase(qp);
	}
}

void rc_dcqcn_timer(struct rc_qp *qp)
{
	timer_events(qp);
	if (qp->cc.limited)
		arm(qp, qp->cc.timer_at);
	rc_qp_kick(qp);
}

bool rc_dcqcn_may_send(struct rc_qp *qp)
{
	struct rc_dcqcn *cc = &qp->cc;

	timer_events(qp);
	if (!cc->limited || qp->eng->now >= cc->next_tx)
		return true;
	qp->cnt.rate_paced++;
	arm(qp, cc->next_tx);
	return false;
}

static uint64_t gap_ns(const struct rc_dcqcn *cc, uint64_t bytes)
{
	return bytes * 8000000 / cc->rate;
}

bool rc_dcqcn_ackreq_due(const struct rc_qp *qp, uint32_t payload)
{
	const struct rc_dcqcn *cc = &qp->cc;

	return qp->eng->now - cc->ackreq_at >= RC_PACE_ACKREQ_NS ||
	       gap_ns(cc, payload + RC_PACE_HDR_BYTES) >= RC_PACE_ACKREQ_NS;
}

void rc_dcqcn_sent(struct rc_qp *qp, uint32_t bytes)
{
	struct rc_dcqcn *cc = &qp->cc;
	uint64_t reset = rpg_byte_reset(qp->eng), now = qp->eng->now;

	if (cc->next_tx < now)
		cc->next_tx = now;
	cc->next_tx += gap_ns(cc, bytes);
	cc->bytes += bytes;
	while (cc->limited && cc->bytes >= reset) {
		cc->bytes -= reset;
		cc->b_stage++;
		increase(qp);
	}
}

void rc_dcqcn_gauges(const struct rc_qp *qp, struct rc_counters *out)
{
	uint64_t rate = qp->cc.rate / 1000;
	uint32_t alpha;

	if (!qp->eng->cfg.dcqcn.on || !rc_qp_reliable(qp))
		return;
	if (!out->rate_mbps || rate < out->rate_mbps)
		out->rate_mbps = rate;
	alpha = qp->cc.have_alpha ? alpha_decayed(qp, qp->eng->now) >> (RC_ALPHA_SHIFT - 10) : 0;
	if (alpha > out->dcqcn_alpha)
		out->dcqcn_alpha = alpha;
}
