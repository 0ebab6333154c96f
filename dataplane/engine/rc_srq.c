// SPDX-License-Identifier: MIT
/* Receive queues: the ring behind a QP's receive queue and behind shared receive queues; XRC domains. */
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

/* A free XRC SRQ number: 24 bits, never 0 (what rc_srq_num() says of a basic SRQ). */
static int alloc_srqn(struct rc_engine *eng, uint32_t *srqn)
{
	for (uint32_t tries = 0; tries < WIRE_SRQN_MASK; tries++) {
		uint32_t n = eng->next_srqn++ & WIRE_SRQN_MASK;

		if (n && !rc_hash_get(&eng->xrc_srqs, n)) {
			*srqn = n;
			return 0;
		}
	}
	return -ENOMEM;
}

static struct rc_srq *srq_create(struct rc_pd *pd, struct rc_xrcd *xrcd, struct rc_cq *cq,
				 struct ibv_srq_init_attr *attr, void *user)
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
	srq->xrcd = xrcd;
	srq->cq = cq;
	srq->user = user;

	pthread_mutex_lock(&eng->lock);
	if (eng->n_srq >= RC_MAX_SRQ) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	if (xrcd) {
		ret = alloc_srqn(eng, &srq->srqn);
		if (!ret)
			ret = rc_hash_put(&eng->xrc_srqs, srq->srqn, srq);
		if (ret)
			goto err_unlock;
		xrcd->refs++;
		cq->refs++;
	}
	eng->n_srq++;
	pd->refs++;
	rc_list_add_tail(&eng->srqs, &srq->link);
	pthread_mutex_unlock(&eng->lock);
	attr->attr.max_sge = srq->rq.max_sge;
	return srq;

err_unlock:
	pthread_mutex_unlock(&eng->lock);
	rc_rq_fini(&srq->rq);
err_free_srq:
	free(srq);
	errno = -ret;
	return NULL;
}

struct rc_srq *rc_srq_create(struct rc_pd *pd, struct ibv_srq_init_attr *attr, void *user)
{
	return srq_create(pd, NULL, NULL, attr, user);
}

struct rc_srq *rc_srq_create_xrc(struct rc_pd *pd, struct rc_xrcd *xrcd, struct rc_cq *cq,
				 struct ibv_srq_init_attr *attr, void *user)
{
	if (!xrcd || !cq || xrcd->eng != pd->eng || cq->eng != pd->eng) {
		errno = EINVAL;
		return NULL;
	}
	return srq_create(pd, xrcd, cq, attr, user);
}

uint32_t rc_srq_num(const struct rc_srq *srq)
{
	return srq->srqn;
}

struct rc_srq *rc_xrc_srq_get(struct rc_engine *eng, uint32_t srqn)
{
	return rc_hash_get(&eng->xrc_srqs, srqn & WIRE_SRQN_MASK);
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

/*
 * XRC target QPs hold no reference on the SRQ of their message in progress
 * (any SRQ of the domain may be named): one going away abandons that message,
 * whose next packet then fails the XRCETH check.
 */
static void detach_targets(struct rc_srq *srq)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &srq->eng->qp_list) {
		struct rc_qp *qp = container_of(pos, struct rc_qp, link);

		if (qp->type == IBV_QPT_XRC_RECV && qp->resp.xsrq == srq) {
			qp->resp.xsrq = NULL;
			qp->resp.have_wqe = false;
		}
	}
}

int rc_srq_destroy(struct rc_srq *srq)
{
	struct rc_engine *eng = srq->eng;

	pthread_mutex_lock(&eng->lock);
	if (srq->refs) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	if (srq->xrcd) {
		detach_targets(srq);
		rc_hash_del(&eng->xrc_srqs, srq->srqn);
		srq->xrcd->refs--;
		srq->cq->refs--;
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
	rc_hash_free(&eng->xrc_srqs);
}

/* ---- XRC domains ---- */

struct rc_xrcd *rc_xrcd_alloc(struct rc_engine *eng)
{
	struct rc_xrcd *x = calloc(1, sizeof(*x));

	if (!x) {
		errno = ENOMEM;
		return NULL;
	}
	x->eng = eng;
	pthread_mutex_lock(&eng->lock);
	eng->n_xrcd++;
	rc_list_add_tail(&eng->xrcds, &x->link);
	pthread_mutex_unlock(&eng->lock);
	return x;
}

int rc_xrcd_free(struct rc_xrcd *x)
{
	struct rc_engine *eng = x->eng;

	pthread_mutex_lock(&eng->lock);
	if (x->refs) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	rc_list_del(&x->link);
	eng->n_xrcd--;
	pthread_mutex_unlock(&eng->lock);
	free(x);
	return 0;
}

void rc_xrcd_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->xrcds)
		free(container_of(pos, struct rc_xrcd, link));
	rc_list_init(&eng->xrcds);
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
