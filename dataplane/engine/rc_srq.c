// SPDX-License-Identifier: MIT
/* Receive queues: the ring behind a QP's receive queue and behind shared receive queues. */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

static uint32_t pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

size_t rc_rq_bytes(uint32_t max_wr, uint32_t max_sge)
{
	return (size_t)pow2_at_least(max_wr ? max_wr : 1) *
	       (sizeof(struct rc_recv_wqe) + max_sge * sizeof(struct ibv_sge));
}

int rc_rq_init(struct rc_rq *rq, uint32_t max_wr, uint32_t max_sge, void *buf)
{
	memset(rq, 0, sizeof(*rq));
	rq->size = pow2_at_least(max_wr ? max_wr : 1);
	rq->stride = (uint32_t)(sizeof(struct rc_recv_wqe) + max_sge * sizeof(struct ibv_sge));
	rq->max_wr = max_wr;
	rq->max_sge = max_sge;
	rq->owns_buf = !buf;
	rq->buf = buf ? buf : calloc(rq->size, rq->stride);
	return rq->buf ? 0 : -ENOMEM;
}

void rc_rq_fini(struct rc_rq *rq)
{
	if (rq->owns_buf)
		free(rq->buf);
	rq->buf = NULL;
}

/* Return: 0, -EINVAL (too many SGEs), -ENOMEM (queue full). */
int rc_rq_post(struct rc_rq *rq, const struct ibv_recv_wr *wr)
{
	struct rc_recv_wqe *w;
	uint32_t len = 0;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > rq->max_sge)
		return -EINVAL;
	if (rc_rq_count(rq) >= rq->max_wr)
		return -ENOMEM;
	w = rc_rq_at(rq, rq->tail);
	w->wr_id = wr->wr_id;
	w->num_sge = (uint32_t)wr->num_sge;
	for (int i = 0; i < wr->num_sge; i++) {
		w->sge[i] = wr->sg_list[i];
		len += wr->sg_list[i].length;
	}
	w->length = len;
	rq->tail++;
	return 0;
}

static int rq_resize(struct rc_rq *rq, uint32_t max_wr)
{
	struct rc_rq n;
	uint32_t count = rc_rq_count(rq);
	int ret;

	if (max_wr < count)
		return -EINVAL;
	ret = rc_rq_init(&n, max_wr, rq->max_sge, NULL);
	if (ret)
		return ret;
	for (uint32_t i = 0; i < count; i++)
		memcpy(rc_rq_at(&n, i), rc_rq_at(rq, rq->head + i), rq->stride);
	n.tail = count;
	rc_rq_fini(rq);
	*rq = n;
	return 0;
}

struct rc_srq *rc_srq_create(struct rc_pd *pd, struct ibv_srq_init_attr *attr, void *user)
{
	struct rc_engine *eng = pd->eng;
	struct rc_srq *srq;
	int ret;

	if (!attr->attr.max_wr || attr->attr.max_wr > RC_MAX_SRQ_WR ||
	    attr->attr.max_sge > RC_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	ret = rc_rq_init(&srq->rq, attr->attr.max_wr, attr->attr.max_sge ? attr->attr.max_sge : 1,
			 NULL);
	if (ret)
		goto err_free_srq;
	srq->eng = eng;
	srq->pd = pd;
	srq->user = user;

	pthread_mutex_lock(&eng->lock);
	if (eng->n_srq >= RC_MAX_SRQ) {
		pthread_mutex_unlock(&eng->lock);
		ret = -ENOMEM;
		goto err_fini_rq;
	}
	eng->n_srq++;
	pd->refs++;
	rc_list_add_tail(&eng->srqs, &srq->link);
	pthread_mutex_unlock(&eng->lock);
	attr->attr.max_sge = srq->rq.max_sge;
	return srq;

err_fini_rq:
	rc_rq_fini(&srq->rq);
err_free_srq:
	free(srq);
	errno = -ret;
	return NULL;
}

int rc_srq_modify(struct rc_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	struct rc_engine *eng = srq->eng;
	int ret = 0;

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return -EINVAL;
	pthread_mutex_lock(&eng->lock);
	if ((mask & IBV_SRQ_MAX_WR) && (!attr->max_wr || attr->max_wr > RC_MAX_SRQ_WR)) {
		ret = -EINVAL;
		goto out;
	}
	if (mask & IBV_SRQ_LIMIT) {
		uint32_t max = (mask & IBV_SRQ_MAX_WR) ? attr->max_wr : srq->rq.max_wr;

		if (attr->srq_limit > max) {
			ret = -EINVAL;
			goto out;
		}
	}
	if (mask & IBV_SRQ_MAX_WR) {
		ret = rq_resize(&srq->rq, attr->max_wr);
		if (ret)
			goto out;
	}
	if (mask & IBV_SRQ_LIMIT)
		srq->limit = attr->srq_limit;
out:
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

int rc_srq_query(struct rc_srq *srq, struct ibv_srq_attr *attr)
{
	pthread_mutex_lock(&srq->eng->lock);
	attr->max_wr = srq->rq.max_wr;
	attr->max_sge = srq->rq.max_sge;
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&srq->eng->lock);
	return 0;
}

int rc_srq_destroy(struct rc_srq *srq)
{
	struct rc_engine *eng = srq->eng;

	pthread_mutex_lock(&eng->lock);
	if (srq->refs) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	rc_list_del(&srq->link);
	eng->n_srq--;
	srq->pd->refs--;
	pthread_mutex_unlock(&eng->lock);
	rc_rq_fini(&srq->rq);
	free(srq);
	return 0;
}

void rc_srq_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->srqs) {
		struct rc_srq *srq = container_of(pos, struct rc_srq, link);

		rc_rq_fini(&srq->rq);
		free(srq);
	}
	rc_list_init(&eng->srqs);
}

int rc_srq_post_recv(struct rc_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr)
{
	int ret = 0;

	pthread_mutex_lock(&srq->eng->lock);
	for (; wr; wr = wr->next) {
		ret = rc_rq_post(&srq->rq, wr);
		if (ret) {
			*bad_wr = wr;
			break;
		}
	}
	pthread_mutex_unlock(&srq->eng->lock);
	return ret;
}

/*
 * Take the oldest WQE.  Falling below an armed limit raises
 * IBV_EVENT_SRQ_LIMIT_REACHED once and disarms it (ibv_modify_srq(3)).
 */
bool rc_srq_pop(struct rc_srq *srq, struct rc_recv_wqe *dst)
{
	struct rc_recv_wqe *w;

	if (!rc_rq_count(&srq->rq))
		return false;
	w = rc_rq_at(&srq->rq, srq->rq.head);
	memcpy(dst, w, sizeof(*w) + w->num_sge * sizeof(struct ibv_sge));
	srq->rq.head++;
	if (srq->limit && rc_rq_count(&srq->rq) < srq->limit) {
		srq->limit = 0;
		rc_async(srq->eng, IBV_EVENT_SRQ_LIMIT_REACHED, srq->user);
	}
	return true;
}
