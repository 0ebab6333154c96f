// SPDX-License-Identifier: MIT
/* The ibv_wr_* post-send API: work requests are gathered, then posted as one chain by wr_complete. */
#include <stdlib.h>
#include <string.h>

#include "prov.h"

/* Grow @*arr (elements of @size) to hold @need; false when out of memory. */
static bool prov_grow(void **arr, size_t size, size_t need, size_t *cap)
{
	size_t n = *cap ? *cap : 8;
	void *p;

	if (need <= *cap)
		return true;
	while (n < need)
		n *= 2;
	p = realloc(*arr, n * size);
	if (!p)
		return false;
	*arr = p;
	*cap = n;
	return true;
}

static void prov_batch_fail(struct prov_wr_batch *b, int err)
{
	if (!b->err)
		b->err = err;
}

/* Start a work request with the wr_id and flags the application set on the QP. */
static struct ibv_send_wr *prov_wr_new(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode opcode)
{
	struct prov_qp *qp = to_pqp_ex(ibqp);
	struct prov_wr_batch *b = &qp->batch;
	struct prov_wr_slot *s;
	size_t cap = b->cap_slot;

	/* The IBV_QP_EX_WITH_* flag create_qp_ex must have been given for the opcode. */
	if (!(qp->send_ops & rc_wr_opcode_info[opcode].qp_ex_flag)) {
		prov_batch_fail(b, EOPNOTSUPP);
		return NULL;
	}
	if (!prov_grow((void **)&b->slot, sizeof(*b->slot), b->n_slot + 1, &cap)) {
		prov_batch_fail(b, ENOMEM);
		return NULL;
	}
	b->cap_slot = (unsigned)cap;
	s = &b->slot[b->n_slot++];
	memset(s, 0, sizeof(*s));
	s->sge_first = b->n_sge;
	s->wr.wr_id = ibqp->wr_id;
	s->wr.send_flags = ibqp->wr_flags;
	s->wr.opcode = opcode;
	return &s->wr;
}

/* The work request the setters apply to: the last one started. */
static struct prov_wr_slot *prov_wr_cur(struct ibv_qp_ex *ibqp)
{
	struct prov_wr_batch *b = &to_pqp_ex(ibqp)->batch;

	if (!b->n_slot) {
		prov_batch_fail(b, EINVAL);
		return NULL;
	}
	return &b->slot[b->n_slot - 1];
}

static void prov_wr_start(struct ibv_qp_ex *ibqp)
{
	struct prov_wr_batch *b = &to_pqp_ex(ibqp)->batch;

	b->n_slot = 0;
	b->n_sge = 0;
	b->n_data = 0;
	b->err = 0;
}

static void prov_wr_abort(struct ibv_qp_ex *ibqp)
{
	prov_wr_start(ibqp);
}

/*
 * Link the gathered requests and post them.  A building error posts
 * nothing.  Return: 0 or a positive errno (the engine's ibv_post_send one).
 */
static int prov_wr_complete(struct ibv_qp_ex *ibqp)
{
	struct prov_qp *qp = to_pqp_ex(ibqp);
	struct prov_wr_batch *b = &qp->batch;
	struct ibv_send_wr *bad;
	int ret = b->err;

	if (!ret && b->n_slot) {
		for (unsigned i = 0; i < b->n_slot; i++) {
			struct prov_wr_slot *s = &b->slot[i];

			s->wr.next = i + 1 < b->n_slot ? &b->slot[i + 1].wr : NULL;
			s->wr.sg_list = s->wr.num_sge ? &b->sge[s->sge_first] : NULL;
			if (s->inline_copy)
				for (int j = 0; j < s->wr.num_sge; j++)
					s->wr.sg_list[j].addr += (uintptr_t)b->data;
		}
		ret = -rc_post_send(qp->rc, &b->slot[0].wr, &bad);
		dp_device_kick(prov_dp(qp->vqp.qp.context));
	}
	prov_wr_start(ibqp);
	return ret;
}

static void prov_wr_send(struct ibv_qp_ex *ibqp)
{
	prov_wr_new(ibqp, IBV_WR_SEND);
}

static void prov_wr_send_imm(struct ibv_qp_ex *ibqp, __be32 imm)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, IBV_WR_SEND_WITH_IMM);

	if (wr)
		wr->imm_data = imm;
}

static void prov_wr_send_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, IBV_WR_SEND_WITH_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

static void prov_wr_local_inv(struct ibv_qp_ex *ibqp, uint32_t invalidate_rkey)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, IBV_WR_LOCAL_INV);

	if (wr)
		wr->invalidate_rkey = invalidate_rkey;
}

/* The window takes @rkey when the bind executes; the engine checks the rest then. */
static void prov_wr_bind_mw(struct ibv_qp_ex *ibqp, struct ibv_mw *mw, uint32_t rkey,
			    const struct ibv_mw_bind_info *bind_info)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, IBV_WR_BIND_MW);

	if (!wr)
		return;
	wr->bind_mw.mw = mw;
	wr->bind_mw.rkey = rkey;
	wr->bind_mw.bind_info = *bind_info;
}

static void prov_wr_rdma(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode op, uint32_t rkey,
			 uint64_t remote_addr, __be32 imm)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, op);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	wr->imm_data = imm;
}

static void prov_wr_rdma_write(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t remote_addr)
{
	prov_wr_rdma(ibqp, IBV_WR_RDMA_WRITE, rkey, remote_addr, 0);
}

static void prov_wr_rdma_write_imm(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t remote_addr,
				   __be32 imm)
{
	prov_wr_rdma(ibqp, IBV_WR_RDMA_WRITE_WITH_IMM, rkey, remote_addr, imm);
}

static void prov_wr_rdma_read(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t remote_addr)
{
	prov_wr_rdma(ibqp, IBV_WR_RDMA_READ, rkey, remote_addr, 0);
}

static void prov_wr_atomic(struct ibv_qp_ex *ibqp, enum ibv_wr_opcode op, uint32_t rkey,
			   uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, op);

	if (!wr)
		return;
	wr->wr.atomic.rkey = rkey;
	wr->wr.atomic.remote_addr = remote_addr;
	wr->wr.atomic.compare_add = compare_add;
	wr->wr.atomic.swap = swap;
}

static void prov_wr_atomic_cmp_swp(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t remote_addr,
				   uint64_t compare, uint64_t swap)
{
	prov_wr_atomic(ibqp, IBV_WR_ATOMIC_CMP_AND_SWP, rkey, remote_addr, compare, swap);
}

static void prov_wr_atomic_fetch_add(struct ibv_qp_ex *ibqp, uint32_t rkey,
				     uint64_t remote_addr, uint64_t add)
{
	prov_wr_atomic(ibqp, IBV_WR_ATOMIC_FETCH_AND_ADD, rkey, remote_addr, add, 0);
}

static void prov_wr_set_ud_addr(struct ibv_qp_ex *ibqp, struct ibv_ah *ah, uint32_t remote_qpn,
				uint32_t remote_qkey)
{
	struct prov_wr_slot *s = prov_wr_cur(ibqp);

	if (!s)
		return;
	s->wr.wr.ud.ah = ah;
	s->wr.wr.ud.remote_qpn = remote_qpn;
	s->wr.wr.ud.remote_qkey = remote_qkey;
}

/* XRC initiator: the SRQ of the target the current request is for (its XRCETH). */
static void prov_wr_set_xrc_srqn(struct ibv_qp_ex *ibqp, uint32_t remote_srqn)
{
	struct prov_wr_slot *s = prov_wr_cur(ibqp);

	if (s)
		s->wr.qp_type.xrc.remote_srqn = remote_srqn;
}

/* Replace the current request's scatter list with @n entries; NULL when out of memory. */
static struct ibv_sge *prov_wr_sges(struct ibv_qp_ex *ibqp, size_t n, bool inline_copy)
{
	struct prov_wr_batch *b = &to_pqp_ex(ibqp)->batch;
	struct prov_wr_slot *s = prov_wr_cur(ibqp);
	size_t cap = b->cap_sge;

	if (!s)
		return NULL;
	if (n > RC_MAX_SGE) {
		prov_batch_fail(b, EINVAL);
		return NULL;
	}
	/* Only the last request's list can be replaced in place; earlier ones stay. */
	b->n_sge = s->sge_first;
	if (!prov_grow((void **)&b->sge, sizeof(*b->sge), b->n_sge + n, &cap)) {
		prov_batch_fail(b, ENOMEM);
		return NULL;
	}
	b->cap_sge = (unsigned)cap;
	s->wr.num_sge = (int)n;
	s->inline_copy = inline_copy;
	if (inline_copy)
		s->wr.send_flags |= IBV_SEND_INLINE;
	b->n_sge += (unsigned)n;
	return &b->sge[s->sge_first];
}

static void prov_wr_set_sge(struct ibv_qp_ex *ibqp, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge *sge = prov_wr_sges(ibqp, 1, false);

	if (sge) {
		sge->lkey = lkey;
		sge->addr = addr;
		sge->length = length;
	}
}

static void prov_wr_set_sge_list(struct ibv_qp_ex *ibqp, size_t n, const struct ibv_sge *list)
{
	struct ibv_sge *sge = prov_wr_sges(ibqp, n, false);

	if (sge && n)
		memcpy(sge, list, n * sizeof(*sge));
}

/* Inline data is copied now: the application may reuse its buffers as soon as the call returns. */
static void prov_wr_set_inline_data_list(struct ibv_qp_ex *ibqp, size_t n,
					 const struct ibv_data_buf *bufs)
{
	struct prov_wr_batch *b = &to_pqp_ex(ibqp)->batch;
	struct ibv_sge *sge;
	size_t total = 0;

	for (size_t i = 0; i < n; i++)
		total += bufs[i].length;
	if (total > RC_MAX_INLINE) {
		prov_batch_fail(b, EINVAL);
		return;
	}
	sge = prov_wr_sges(ibqp, n, true);
	if (!sge || !prov_grow((void **)&b->data, 1, b->n_data + total, &b->cap_data)) {
		prov_batch_fail(b, ENOMEM);
		return;
	}
	for (size_t i = 0; i < n; i++) {
		memcpy(b->data + b->n_data, bufs[i].addr, bufs[i].length);
		sge[i].addr = b->n_data;	/* an offset until wr_complete */
		sge[i].length = (uint32_t)bufs[i].length;
		sge[i].lkey = 0;
		b->n_data += bufs[i].length;
	}
}

static void prov_wr_set_inline_data(struct ibv_qp_ex *ibqp, void *addr, size_t length)
{
	struct ibv_data_buf buf = { .addr = addr, .length = length };

	prov_wr_set_inline_data_list(ibqp, 1, &buf);
}

/* The 8 bytes at @atomic_wr are copied now, as inline data (IBA 1.5 ATOMIC WRITE). */
static void prov_wr_atomic_write(struct ibv_qp_ex *ibqp, uint32_t rkey, uint64_t remote_addr,
				 const void *atomic_wr)
{
	struct ibv_send_wr *wr = prov_wr_new(ibqp, IBV_WR_ATOMIC_WRITE);

	if (!wr)
		return;
	wr->wr.rdma.rkey = rkey;
	wr->wr.rdma.remote_addr = remote_addr;
	prov_wr_set_inline_data(ibqp, (void *)(uintptr_t)atomic_wr, 8);
}

int prov_qp_ex_init(struct prov_qp *qp, enum ibv_qp_type type, uint64_t send_ops_flags)
{
	struct ibv_qp_ex *ex = &qp->vqp.qp_ex;
	uint64_t allowed = 0;

	/* The operations the engine takes on this QP type, as ibv_post_send would. */
	for (unsigned op = 0; op < RC_WR_OPCODE_COUNT; op++)
		if (rc_wr_opcode_info[op].qp_types & RC_QPT_BIT(type))
			allowed |= rc_wr_opcode_info[op].qp_ex_flag;
	if (send_ops_flags & ~allowed)
		return -EOPNOTSUPP;
	qp->send_ops = send_ops_flags;
	ex->wr_start = prov_wr_start;
	ex->wr_complete = prov_wr_complete;
	ex->wr_abort = prov_wr_abort;
	ex->wr_send = prov_wr_send;
	ex->wr_send_imm = prov_wr_send_imm;
	ex->wr_send_inv = prov_wr_send_inv;
	ex->wr_local_inv = prov_wr_local_inv;
	ex->wr_bind_mw = prov_wr_bind_mw;
	ex->wr_rdma_write = prov_wr_rdma_write;
	ex->wr_rdma_write_imm = prov_wr_rdma_write_imm;
	ex->wr_rdma_read = prov_wr_rdma_read;
	ex->wr_atomic_cmp_swp = prov_wr_atomic_cmp_swp;
	ex->wr_atomic_fetch_add = prov_wr_atomic_fetch_add;
	ex->wr_atomic_write = prov_wr_atomic_write;
	ex->wr_set_ud_addr = prov_wr_set_ud_addr;
	ex->wr_set_xrc_srqn = prov_wr_set_xrc_srqn;
	ex->wr_set_sge = prov_wr_set_sge;
	ex->wr_set_sge_list = prov_wr_set_sge_list;
	ex->wr_set_inline_data = prov_wr_set_inline_data;
	ex->wr_set_inline_data_list = prov_wr_set_inline_data_list;
	return 0;
}

void prov_qp_ex_fini(struct prov_qp *qp)
{
	free(qp->batch.slot);
	free(qp->batch.sge);
	free(qp->batch.data);
	memset(&qp->batch, 0, sizeof(qp->batch));
}
