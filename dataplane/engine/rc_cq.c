// SPDX-License-Identifier: MIT
/* Completion queues: a ring of ibv_wc, overflow detection, one-shot notification. */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

static uint32_t cq_cap_for(int cqe)
{
	uint32_t cap = 1;

	while (cap < (uint32_t)cqe)
		cap <<= 1;
	return cap;
}

struct rc_cq *rc_cq_create(struct rc_engine *eng, int cqe, void *user)
{
	struct rc_cq *cq;

	if (cqe < 1 || cqe > RC_MAX_CQE) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		goto err_nomem;
	cq->cap = cq_cap_for(cqe);
	cq->ring = calloc(cq->cap, sizeof(*cq->ring));
	if (!cq->ring)
		goto err_free_cq;
	cq->eng = eng;
	cq->user = user;

	pthread_mutex_lock(&eng->lock);
	if (eng->n_cq >= RC_MAX_CQ) {
		pthread_mutex_unlock(&eng->lock);
		free(cq->ring);
		free(cq);
		errno = ENOMEM;
		return NULL;
	}
	eng->n_cq++;
	rc_list_add_tail(&eng->cqs, &cq->link);
	pthread_mutex_unlock(&eng->lock);
	return cq;

err_free_cq:
	free(cq);
err_nomem:
	errno = ENOMEM;
	return NULL;
}

int rc_cq_destroy(struct rc_cq *cq)
{
	struct rc_engine *eng = cq->eng;

	pthread_mutex_lock(&eng->lock);
	if (cq->refs) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	rc_list_del(&cq->link);
	eng->n_cq--;
	pthread_mutex_unlock(&eng->lock);
	free(cq->stamps);
	free(cq->ring);
	free(cq);
	return 0;
}

void rc_cq_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->cqs) {
		struct rc_cq *cq = container_of(pos, struct rc_cq, link);

		free(cq->stamps);
		free(cq->ring);
		free(cq);
	}
	rc_list_init(&eng->cqs);
}

int rc_cq_enable_stamps(struct rc_cq *cq)
{
	uint64_t *stamps = calloc(cq->cap, sizeof(*stamps));

	if (!stamps)
		return -ENOMEM;
	pthread_mutex_lock(&cq->eng->lock);
	free(cq->stamps);
	cq->stamps = stamps;
	pthread_mutex_unlock(&cq->eng->lock);
	return 0;
}

int rc_cq_resize(struct rc_cq *cq, int cqe)
{
	struct rc_engine *eng = cq->eng;
	uint64_t *stamps = NULL;
	struct ibv_wc *ring;
	uint32_t cap;

	if (cqe < 1 || cqe > RC_MAX_CQE)
		return -EINVAL;
	cap = cq_cap_for(cqe);
	ring = calloc(cap, sizeof(*ring));
	if (!ring || (cq->stamps && !(stamps = calloc(cap, sizeof(*stamps))))) {
		free(ring);
		return -ENOMEM;
	}
	pthread_mutex_lock(&eng->lock);
	if (cq->count > cap) {
		pthread_mutex_unlock(&eng->lock);
		free(stamps);
		free(ring);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < cq->count; i++) {
		uint32_t from = (cq->head + i) & (cq->cap - 1);

		ring[i] = cq->ring[from];
		if (stamps)
			stamps[i] = cq->stamps[from];
	}
	free(cq->ring);
	free(cq->stamps);
	cq->ring = ring;
	cq->stamps = stamps;
	cq->cap = cap;
	cq->head = 0;
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

int rc_cq_size(const struct rc_cq *cq)
{
	return (int)cq->cap;
}

/**
 * rc_cq_push() - add a completion (engine lock held).
 * @solicited: a receive completion of a message with SE set.
 *
 * A full CQ is an overrun: the CQ goes to error, the entry is
 * lost, IBV_EVENT_CQ_ERR is raised once.
 */
void rc_cq_push(struct rc_cq *cq, const struct ibv_wc *wc, bool solicited)
{
	struct rc_engine *eng = cq->eng;

	if (unlikely(cq->overflowed))
		return;
	if (unlikely(cq->count == cq->cap)) {
		cq->overflowed = true;
		eng->cnt.cq_overflows++;
		rc_async(eng, IBV_EVENT_CQ_ERR, cq->user);
		return;
	}
	cq->ring[(cq->head + cq->count) & (cq->cap - 1)] = *wc;
	if (cq->stamps)
		cq->stamps[(cq->head + cq->count) & (cq->cap - 1)] =
			eng->cfg.now_ns(eng->cfg.clock_arg);
	cq->count++;
	if (cq->armed && (!cq->solicited_only || solicited || wc->status != IBV_WC_SUCCESS)) {
		cq->armed = false;
		if (eng->cfg.cq_event)
			eng->cfg.cq_event(eng->cfg.event_arg, cq, cq->user);
	}
}

/**
 * rc_cq_clean() - drop the completions of one QP nobody polled yet (engine lock held).
 *
 * For a QP moved to RESET or destroyed, as mlx4/mlx5 clean their CQs: a
 * QP brought back to RTS must not hand its new user the flushed work of
 * before.  The other QPs' entries keep their order.
 */
void rc_cq_clean(struct rc_cq *cq, uint32_t qpn)
{
	uint32_t kept = 0;

	for (uint32_t i = 0; i < cq->count; i++) {
		uint32_t from = (cq->head + i) & (cq->cap - 1), to = (cq->head + kept) & (cq->cap - 1);

		if (cq->ring[from].qp_num == qpn)
			continue;
		cq->ring[to] = cq->ring[from];
		if (cq->stamps)
			cq->stamps[to] = cq->stamps[from];
		kept++;
	}
	cq->count = kept;
}

/* Does @cq hold a completion of QP @qpn nobody polled yet (engine lock held)? */
bool rc_cq_holds(const struct rc_cq *cq, uint32_t qpn)
{
	for (uint32_t i = 0; i < cq->count; i++)
		if (cq->ring[(cq->head + i) & (cq->cap - 1)].qp_num == qpn)
			return true;
	return false;
}

int rc_cq_poll(struct rc_cq *cq, int n, struct ibv_wc *wc)
{
	return rc_cq_poll_stamped(cq, n, wc, NULL);
}

int rc_cq_poll_stamped(struct rc_cq *cq, int n, struct ibv_wc *wc, uint64_t *stamps)
{
	struct rc_engine *eng = cq->eng;
	uint32_t k;

	if (n < 0)
		return -EINVAL;
	pthread_mutex_lock(&eng->lock);
	if (cq->overflowed) {
		pthread_mutex_unlock(&eng->lock);
		return -EOVERFLOW;
	}
	k = cq->count < (uint32_t)n ? cq->count : (uint32_t)n;
	for (uint32_t i = 0; i < k; i++) {
		wc[i] = cq->ring[(cq->head + i) & (cq->cap - 1)];
		if (stamps)
			stamps[i] = cq->stamps ? cq->stamps[(cq->head + i) & (cq->cap - 1)] : 0;
	}
	cq->head = (cq->head + k) & (cq->cap - 1);
	cq->count -= k;
	pthread_mutex_unlock(&eng->lock);
	return (int)k;
}

int rc_cq_req_notify(struct rc_cq *cq, bool solicited_only)
{
	struct rc_engine *eng = cq->eng;

	pthread_mutex_lock(&eng->lock);
	/* Arming for "any" wins over a pending "solicited only" (ibv_req_notify_cq(3)). */
	if (!cq->armed)
		cq->solicited_only = solicited_only;
	else if (!solicited_only)
		cq->solicited_only = false;
	cq->armed = true;
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

/* The clock completion stamps come from (the one the engine was given). */
uint64_t rc_engine_clock(struct rc_engine *eng)
{
	return eng->cfg.now_ns(eng->cfg.clock_arg);
}
