// SPDX-License-Identifier: MIT
/* Raw packet QPs at the verbs boundary: who may create them, flows, work queues, RSS tables. */
#include <linux/capability.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prov.h"

struct prov_flow {
	struct ibv_flow	ibv;
	struct rc_flow	*rc;
};

bool prov_may_create_raw_qp(void)
{
	char line[256];
	bool ok = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return false;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long eff;

		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			ok = eff & (1ull << CAP_NET_RAW);
			break;
		}
	}
	fclose(f);
	return ok;
}

struct ibv_flow *prov_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr)
{
	struct prov_flow *flow = calloc(1, sizeof(*flow));

	if (!flow)
		return prov_null_errno(-ENOMEM);
	flow->rc = rc_flow_create(to_pqp(qp)->rc, attr);
	if (!flow->rc) {
		int saved = errno;

		free(flow);
		return prov_null_errno(-saved);
	}
	flow->ibv.context = qp->context;
	flow->ibv.handle = prov_handle();
	return &flow->ibv;
}

int prov_destroy_flow(struct ibv_flow *ibflow)
{
	struct prov_flow *flow = container_of(ibflow, struct prov_flow, ibv);
	int ret = rc_flow_destroy(flow->rc);

	if (ret)
		return -ret;
	free(flow);
	return 0;
}

/* ---- Work queues and indirection tables (receive-side scaling) ---- */

/* A work queue is a raw packet QP of the engine with a receive queue and no flow of its own. */
struct prov_wq {
	struct ibv_wq	ibv;
	struct rc_qp	*rc;
	atomic_uint	tables;		/* indirection tables naming it */
};

struct prov_ind_table {
	struct ibv_rwq_ind_table	ibv;
	uint32_t			log_size;
	struct prov_wq			**wqs;
	atomic_uint			qps;	/* RSS QPs over it */
};

static struct prov_wq *to_pwq(struct ibv_wq *wq)
{
	return container_of(wq, struct prov_wq, ibv);
}

static int prov_post_wq_recv(struct ibv_wq *wq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return -rc_post_recv(to_pwq(wq)->rc, wr, bad);
}

struct ibv_wq *prov_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *attr)
{
	struct rc_qp_init init = {
		.qp_type = IBV_QPT_RAW_PACKET,
		.cap = { .max_recv_wr = attr->max_wr, .max_recv_sge = attr->max_sge },
	};
	struct prov_wq *wq;

	if (attr->wq_type != IBV_WQT_RQ || attr->comp_mask || !attr->pd || !attr->cq)
		return prov_null_errno(attr->wq_type != IBV_WQT_RQ || attr->comp_mask ?
				       -EOPNOTSUPP : -EINVAL);
	if (!prov_may_create_raw_qp())
		return prov_null_errno(-EPERM);
	wq = calloc(1, sizeof(*wq));
	if (!wq)
		return prov_null_errno(-ENOMEM);
	init.pd = to_ppd(attr->pd)->rc;
	init.send_cq = init.recv_cq = to_pcq(attr->cq)->rc;
	init.user = wq;
	wq->rc = rc_qp_create(prov_eng(ctx), &init);
	if (!wq->rc) {
		int saved = errno;

		free(wq);
		return prov_null_errno(-saved);
	}
	attr->max_wr = init.cap.max_recv_wr;
	attr->max_sge = init.cap.max_recv_sge;
	wq->ibv.context = ctx;
	wq->ibv.wq_context = attr->wq_context;
	wq->ibv.pd = attr->pd;
	wq->ibv.cq = attr->cq;
	wq->ibv.wq_num = rc_qp_num(wq->rc);
	wq->ibv.handle = prov_handle();
	wq->ibv.state = IBV_WQS_RESET;
	wq->ibv.wq_type = IBV_WQT_RQ;
	wq->ibv.post_recv = prov_post_wq_recv;
	return &wq->ibv;
}

/* RESET, RDY (the engine QP in RTR: it receives) and ERR (what it holds flushed). */
int prov_modify_wq(struct ibv_wq *ibwq, struct ibv_wq_attr *attr)
{
	struct prov_wq *wq = to_pwq(ibwq);
	struct ibv_qp_attr a = { .port_num = PROV_PORT_NUM };
	int ret = 0;

	if (attr->attr_mask & ~(uint32_t)(IBV_WQ_ATTR_STATE | IBV_WQ_ATTR_CURR_STATE))
		return EOPNOTSUPP;
	if ((attr->attr_mask & IBV_WQ_ATTR_CURR_STATE) && attr->curr_wq_state != ibwq->state)
		return EINVAL;
	if (!(attr->attr_mask & IBV_WQ_ATTR_STATE))
		return 0;
	switch (attr->wq_state) {
	case IBV_WQS_RESET:
		a.qp_state = IBV_QPS_RESET;
		ret = rc_qp_modify(wq->rc, &a, IBV_QP_STATE);
		break;
	case IBV_WQS_RDY:
		if (ibwq->state != IBV_WQS_RESET)
			return ibwq->state == IBV_WQS_RDY ? 0 : EINVAL;
		a.qp_state = IBV_QPS_INIT;
		ret = rc_qp_modify(wq->rc, &a, IBV_QP_STATE | IBV_QP_PORT);
		a.qp_state = IBV_QPS_RTR;
		ret = ret ? ret : rc_qp_modify(wq->rc, &a, IBV_QP_STATE);
		break;
	case IBV_WQS_ERR:
		a.qp_state = IBV_QPS_ERR;
		ret = rc_qp_modify(wq->rc, &a, IBV_QP_STATE);
		break;
	default:
		return EINVAL;
	}
	if (ret)
		return -ret;
	ibwq->state = attr->wq_state;
	return 0;
}

int prov_destroy_wq(struct ibv_wq *ibwq)
{
	struct prov_wq *wq = to_pwq(ibwq);
	int ret;

	if (atomic_load(&wq->tables))
		return EBUSY;
	ret = rc_qp_destroy(wq->rc);
	if (ret)
		return -ret;
	free(wq);
	return 0;
}

struct ibv_rwq_ind_table *prov_create_rwq_ind_table(struct ibv_context *ctx,
						    struct ibv_rwq_ind_table_init_attr *attr)
{
	size_t n = (size_t)1 << attr->log_ind_tbl_size;
	struct prov_ind_table *t;

	if (attr->comp_mask)
		return prov_null_errno(-EOPNOTSUPP);
	if (attr->log_ind_tbl_size > RC_RSS_LOG_SIZE_MAX || !attr->ind_tbl)
		return prov_null_errno(-EINVAL);
	for (size_t i = 0; i < n; i++)
		if (!attr->ind_tbl[i] || attr->ind_tbl[i]->context != ctx)
			return prov_null_errno(-EINVAL);
	t = calloc(1, sizeof(*t) + n * sizeof(*t->wqs));
	if (!t)
		return prov_null_errno(-ENOMEM);
	t->wqs = (struct prov_wq **)(t + 1);
	t->log_size = attr->log_ind_tbl_size;
	for (size_t i = 0; i < n; i++) {
		t->wqs[i] = to_pwq(attr->ind_tbl[i]);
		atomic_fetch_add(&t->wqs[i]->tables, 1);
	}
	t->ibv.context = ctx;
	t->ibv.ind_tbl_handle = prov_handle();
	t->ibv.ind_tbl_num = t->ibv.ind_tbl_handle;
	return &t->ibv;
}

int prov_destroy_rwq_ind_table(struct ibv_rwq_ind_table *ibt)
{
	struct prov_ind_table *t = container_of(ibt, struct prov_ind_table, ibv);

	if (atomic_load(&t->qps))
		return EBUSY;
	for (size_t i = 0; i < (size_t)1 << t->log_size; i++)
		atomic_fetch_sub(&t->wqs[i]->tables, 1);
	free(t);
	return 0;
}

int prov_rss_get(struct ibv_qp_init_attr_ex *attr, struct rc_qp_rss *rss, struct rc_qp **wqs,
		 struct prov_ind_table **table)
{
	const struct ibv_rx_hash_conf *h = &attr->rx_hash_conf;
	struct prov_ind_table *t;

	if (!(attr->comp_mask & IBV_QP_INIT_ATTR_RX_HASH) ||
	    !(attr->comp_mask & IBV_QP_INIT_ATTR_IND_TABLE) || !attr->rwq_ind_tbl ||
	    attr->qp_type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	if (h->rx_hash_function != IBV_RX_HASH_FUNC_TOEPLITZ)
		return -EOPNOTSUPP;
	if (h->rx_hash_key_len > RC_RSS_KEY_MAX || (h->rx_hash_key_len && !h->rx_hash_key))
		return -EINVAL;
	t = container_of(attr->rwq_ind_tbl, struct prov_ind_table, ibv);
	memset(rss, 0, sizeof(*rss));
	rss->log_size = t->log_size;
	rss->fields = h->rx_hash_fields_mask;
	rss->key_len = h->rx_hash_key_len;
	if (rss->key_len)
		memcpy(rss->key, h->rx_hash_key, rss->key_len);
	for (size_t i = 0; i < (size_t)1 << t->log_size; i++)
		wqs[i] = t->wqs[i]->rc;
	rss->wqs = wqs;
	*table = t;
	return 0;
}

struct rc_cq *prov_ind_table_cq(struct prov_ind_table *t)
{
	return to_pcq(t->wqs[0]->ibv.cq)->rc;
}

void prov_ind_table_hold(struct prov_ind_table *t, int delta)
{
	atomic_fetch_add(&t->qps, (unsigned)delta);
}
