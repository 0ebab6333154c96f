// SPDX-License-Identifier: MIT
/* Protection domains, memory regions, address handles, shared receive queues, XRC domains and queue pairs. */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "prov.h"
#include "prov_abi.h"

/* Handles only name objects in messages and pyverbs; unique per process is enough. */
static atomic_uint prov_next_handle = 1;

uint32_t prov_handle(void)
{
	return atomic_fetch_add(&prov_next_handle, 1);
}

/* ---- Protection domains ---- */

struct ibv_pd *prov_alloc_pd(struct ibv_context *ctx)
{
	struct prov_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return prov_null_errno(-ENOMEM);
	pd->rc = rc_pd_alloc(prov_eng(ctx));
	if (!pd->rc) {
		int saved = errno;

		free(pd);
		return prov_null_errno(-saved);
	}
	pd->ibv.context = ctx;
	pd->ibv.handle = prov_handle();
	return &pd->ibv;
}

int prov_dealloc_pd(struct ibv_pd *ibpd)
{
	struct prov_pd *pd = to_ppd(ibpd);
	int ret;

	if (atomic_load(&pd->users))
		return EBUSY;
	if (pd->base) {
		atomic_fetch_sub(&pd->base->users, 1);
		free(pd);
		return 0;
	}
	ret = rc_pd_free(pd->rc);
	if (ret)
		return -ret;
	free(pd);
	return 0;
}

/* No thread domains: a parent domain is a PD, a context for the application and allocators. */
struct ibv_pd *prov_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr)
{
	const uint32_t known = IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
			       IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	struct prov_pd *base, *pd;

	if (!attr->pd || attr->pd->context != ctx || (attr->comp_mask & ~known))
		return prov_null_errno(-EINVAL);
	if (attr->td)
		return prov_null_errno(-EOPNOTSUPP);
	base = to_ppd(attr->pd);
	if (base->base)
		return prov_null_errno(-EINVAL);
	if ((attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) &&
	    (!attr->alloc || !attr->free))
		return prov_null_errno(-EINVAL);
	pd = calloc(1, sizeof(*pd));
	if (!pd)
		return prov_null_errno(-ENOMEM);
	pd->rc = base->rc;
	pd->base = base;
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS) {
		pd->alloc = attr->alloc;
		pd->free = attr->free;
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	atomic_fetch_add(&base->users, 1);
	pd->ibv.context = ctx;
	pd->ibv.handle = prov_handle();
	return &pd->ibv;
}

/* rc_ring_alloc over a parent domain's allocators (IBV_ALLOCATOR_USE_DEFAULT: the engine's). */
static void *prov_ring_alloc(void *arg, enum rc_ring_kind kind, size_t size, size_t align)
{
	struct prov_pd *pd = arg;
	void *p = pd->alloc(&pd->ibv, pd->pd_context, size, align, kind);

	return p == IBV_ALLOCATOR_USE_DEFAULT ? RC_RING_DEFAULT : p;
}

static void prov_ring_free(void *arg, enum rc_ring_kind kind, void *ptr)
{
	struct prov_pd *pd = arg;

	pd->free(&pd->ibv, pd->pd_context, ptr, kind);
}

/* ---- Memory regions ---- */

/* An MR over @addr whose remote and local addresses start at @iova (ibv_reg_mr_iova(3)). */
struct prov_mr *prov_mr_create(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access)
{
	struct prov_mr *mr = calloc(1, sizeof(*mr));
	struct ibv_mr *ib;

	if (!mr)
		return prov_null_errno(-ENOMEM);
	mr->rc = rc_mr_reg(to_ppd(pd)->rc, addr, length, iova, access);
	if (!mr->rc) {
		int saved = errno;

		free(mr);
		return prov_null_errno(-saved);
	}
	ib = &mr->vmr.ibv_mr;
	ib->context = pd->context;
	ib->pd = pd;
	ib->addr = addr;
	ib->length = length;
	ib->handle = prov_handle();
	ib->lkey = rc_mr_lkey(mr->rc);
	ib->rkey = rc_mr_rkey(mr->rc);
	mr->vmr.mr_type = VERBS_MR_TYPE_MR;
	mr->vmr.access = access;
	return mr;
}

struct ibv_mr *prov_reg_mr(struct ibv_pd *pd, void *addr, size_t length, uint64_t hca_va,
			   int access)
{
	struct prov_mr *mr = prov_mr_create(pd, addr, length, hca_va, access);

	return mr ? &mr->vmr.ibv_mr : NULL;
}

int prov_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		  size_t length, int access)
{
	struct prov_mr *mr = to_pmr(vmr);
	struct rc_pd *rc_pd = (flags & IBV_REREG_MR_CHANGE_PD) && pd ? to_ppd(pd)->rc : NULL;
	int ret;

	if ((flags & IBV_REREG_MR_CHANGE_PD) && !pd)
		return EINVAL;
	/* Device memory stays where it was allocated (ibv_reg_dm_mr(3)). */
	if (mr->dm)
		return EINVAL;
	ret = rc_mr_rereg(mr->rc, flags, rc_pd, addr, length, access);
	if (ret) {
		errno = -ret;
		return -ret;
	}
	vmr->ibv_mr.lkey = rc_mr_lkey(mr->rc);
	vmr->ibv_mr.rkey = rc_mr_rkey(mr->rc);
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		vmr->access = access;
	return 0;
}

/* The prefetch advices over ODP regions; the errors are ibv_advise_mr(3)'s, as errno values. */
int prov_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg_list, uint32_t num_sges)
{
	return -rc_mr_advise(to_ppd(pd)->rc, advice, flags, sg_list, num_sges);
}

int prov_dereg_mr(struct verbs_mr *vmr)
{
	struct prov_mr *mr = to_pmr(vmr);
	int ret = rc_mr_dereg(mr->rc);

	if (ret)
		return -ret;
	if (mr->dm)
		prov_dm_put(mr->dm);
	free(mr);
	return 0;
}

/* ---- Address handles: the engine owns the ibv_ah ---- */

struct ibv_ah *prov_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct rc_ah *ah = rc_ah_create(to_ppd(pd)->rc, attr);
	struct ibv_ah *ib;

	if (!ah)
		return NULL;
	ib = rc_ah_ibv(ah);
	ib->context = pd->context;
	ib->pd = pd;
	ib->handle = prov_handle();
	return ib;
}

int prov_destroy_ah(struct ibv_ah *ah)
{
	return -rc_ah_destroy(rc_ah_from_ibv(ah));
}

/* ---- Memory windows: the engine owns the ibv_mw ---- */

struct ibv_mw *prov_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
	struct rc_mw *mw = rc_mw_alloc(to_ppd(pd)->rc, type);
	struct ibv_mw *ib;

	if (!mw)
		return NULL;
	ib = rc_mw_ibv(mw);
	ib->context = pd->context;
	ib->pd = pd;
	ib->handle = prov_handle();
	return ib;
}

int prov_dealloc_mw(struct ibv_mw *mw)
{
	return -rc_mw_dealloc(rc_mw_from_ibv(mw));
}

/*
 * ibv_bind_mw() (type 1): a BIND_MW work request with the next rkey (the
 * low 8 bits stepped, as every provider does), which the window carries
 * from the moment the request is posted.
 */
int prov_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = {
		.wr_id = mw_bind->wr_id,
		.opcode = IBV_WR_BIND_MW,
		.send_flags = mw_bind->send_flags,
		.bind_mw = { .mw = mw, .rkey = ibv_inc_rkey(mw->rkey),
			     .bind_info = mw_bind->bind_info },
	};
	struct ibv_send_wr *bad;
	int ret;

	if (mw->type != IBV_MW_TYPE_1)
		return EINVAL;
	ret = prov_post_send(qp, &wr, &bad);
	if (!ret)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}

/* ---- Shared receive queues ---- */

/* A basic SRQ, or with @xrcd and @cq an XRC SRQ of that domain completing into @cq. */
static struct ibv_srq *prov_srq_new(struct ibv_pd *pd, struct ibv_srq_init_attr *attr,
				    struct ibv_xrcd *xrcd, struct ibv_cq *cq)
{
	struct prov_srq *srq = calloc(1, sizeof(*srq));
	struct ibv_srq *ib;

	if (!srq)
		return prov_null_errno(-ENOMEM);
	srq->rc = xrcd ? rc_srq_create_xrc(to_ppd(pd)->rc, to_pxrcd(xrcd)->rc, to_pcq(cq)->rc, attr,
					   srq) :
			 rc_srq_create(to_ppd(pd)->rc, attr, srq);
	if (!srq->rc) {
		int saved = errno;

		free(srq);
		return prov_null_errno(-saved);
	}
	ib = &srq->vsrq.srq;
	ib->context = pd->context;
	ib->srq_context = attr->srq_context;
	ib->pd = pd;
	ib->handle = prov_handle();
	ib->events_completed = 0;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	srq->vsrq.srq_type = xrcd ? IBV_SRQT_XRC : IBV_SRQT_BASIC;
	if (xrcd) {
		srq->vsrq.xrcd = &to_pxrcd(xrcd)->vxrcd;
		srq->vsrq.cq = cq;
		srq->vsrq.srq_num = rc_srq_num(srq->rc);
	}
	return ib;
}

struct ibv_srq *prov_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr)
{
	return prov_srq_new(pd, attr, NULL, NULL);
}

/* Basic and XRC SRQs; no tag matching. */
struct ibv_srq *prov_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr)
{
	const uint32_t known = IBV_SRQ_INIT_ATTR_PD | IBV_SRQ_INIT_ATTR_TYPE |
			       IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ;
	enum ibv_srq_type type = (attr->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) ? attr->srq_type :
				 IBV_SRQT_BASIC;
	struct ibv_srq_init_attr basic;
	struct ibv_srq *srq;
	bool xrc = type == IBV_SRQT_XRC;

	if (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_PD) || !attr->pd || attr->pd->context != ctx)
		return prov_null_errno(-EINVAL);
	if ((attr->comp_mask & ~known) || (type != IBV_SRQT_BASIC && !xrc))
		return prov_null_errno(-EOPNOTSUPP);
	/* An XRC SRQ names its domain and CQ (ibv_create_srq_ex(3)); a basic one neither. */
	if (xrc && (!(attr->comp_mask & IBV_SRQ_INIT_ATTR_XRCD) || !attr->xrcd ||
		    attr->xrcd->context != ctx || !(attr->comp_mask & IBV_SRQ_INIT_ATTR_CQ) ||
		    !attr->cq || attr->cq->context != ctx))
		return prov_null_errno(-EINVAL);
	basic.srq_context = attr->srq_context;
	basic.attr = attr->attr;
	srq = prov_srq_new(attr->pd, &basic, xrc ? attr->xrcd : NULL, xrc ? attr->cq : NULL);
	if (srq)
		attr->attr = basic.attr;
	return srq;
}

int prov_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	struct prov_srq *srq = to_psrq(ibsrq);

	if (srq->vsrq.srq_type != IBV_SRQT_XRC)
		return EINVAL;
	*srq_num = srq->vsrq.srq_num;
	return 0;
}

int prov_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask)
{
	return -rc_srq_modify(to_psrq(srq)->rc, attr, mask);
}

int prov_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr)
{
	return -rc_srq_query(to_psrq(srq)->rc, attr);
}

int prov_destroy_srq(struct ibv_srq *ibsrq)
{
	struct prov_srq *srq = to_psrq(ibsrq);
	int ret = rc_srq_destroy(srq->rc);

	if (ret)
		return -ret;
	prov_wait_events_acked(&ibsrq->mutex, &ibsrq->cond, &ibsrq->events_completed,
			       atomic_load(&srq->async_reported));
	free(srq);
	return 0;
}

int prov_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return -rc_srq_post_recv(to_psrq(srq)->rc, wr, bad);
}

/* ---- XRC domains ---- */

static pthread_mutex_t prov_xrcds_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prov_xrcd *prov_xrcds;

/* The open domain of @ctx's engine on the file @st names, under prov_xrcds_lock. */
static struct prov_xrcd *prov_xrcd_of_file(struct ibv_context *ctx, const struct stat *st)
{
	for (struct prov_xrcd *x = prov_xrcds; x; x = x->next)
		if (x->has_file && x->dev == st->st_dev && x->ino == st->st_ino &&
		    x->vxrcd.xrcd.context == ctx)
			return x;
	return NULL;
}

/*
 * ibv_open_xrcd(3): fd -1 makes a domain of its own (O_CREAT required); a
 * file opens the domain already tied to it in this process, or with
 * O_CREAT makes one (O_EXCL: only a new one).
 */
struct ibv_xrcd *prov_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr)
{
	const uint32_t need = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
	struct prov_xrcd *x = NULL;
	struct stat st;
	int ret;

	if ((attr->comp_mask & need) != need || (attr->oflags & ~(O_CREAT | O_EXCL)))
		return prov_null_errno(-EINVAL);
	if (attr->fd == -1 && !(attr->oflags & O_CREAT))
		return prov_null_errno(-EINVAL);
	if (attr->fd != -1 && fstat(attr->fd, &st))
		return prov_null_errno(-EBADF);
	pthread_mutex_lock(&prov_xrcds_lock);
	if (attr->fd != -1)
		x = prov_xrcd_of_file(ctx, &st);
	if (x) {
		ret = attr->oflags & O_EXCL ? -EEXIST : 0;
		if (!ret)
			x->opens++;
		goto out;
	}
	ret = -ENOENT;
	if (!(attr->oflags & O_CREAT))
		goto out;
	ret = -ENOMEM;
	x = calloc(1, sizeof(*x));
	if (!x)
		goto out;
	x->rc = rc_xrcd_alloc(prov_eng(ctx));
	if (!x->rc) {
		free(x);
		x = NULL;
		goto out;
	}
	x->vxrcd.xrcd.context = ctx;
	x->vxrcd.handle = prov_handle();
	x->has_file = attr->fd != -1;
	if (x->has_file) {
		x->dev = st.st_dev;
		x->ino = st.st_ino;
	}
	x->opens = 1;
	x->next = prov_xrcds;
	prov_xrcds = x;
	ret = 0;
out:
	pthread_mutex_unlock(&prov_xrcds_lock);
	return ret ? prov_null_errno(ret) : &x->vxrcd.xrcd;
}

/* The last close frees the domain, refused (EBUSY) while SRQs or QPs use it. */
int prov_close_xrcd(struct ibv_xrcd *ibxrcd)
{
	struct prov_xrcd *x = to_pxrcd(ibxrcd);
	int ret = 0;

	pthread_mutex_lock(&prov_xrcds_lock);
	if (x->opens > 1) {
		x->opens--;
		goto out;
	}
	ret = -rc_xrcd_free(x->rc);
	if (ret)
		goto out;
	for (struct prov_xrcd **p = &prov_xrcds; *p; p = &(*p)->next)
		if (*p == x) {
			*p = x->next;
			break;
		}
	free(x);
out:
	pthread_mutex_unlock(&prov_xrcds_lock);
	return ret;
}

/* ---- Queue pairs ---- */

/*
 * What each QP type needs: RC, UC, UD a PD and both CQs; the XRC initiator a
 * PD and a send CQ; the XRC target its domain and nothing else; a raw packet
 * QP CAP_NET_RAW, a PD and both CQs or (RSS) an indirection table.
 */
static int prov_qp_check(struct ibv_context *ctx, const struct ibv_qp_init_attr_ex *attr)
{
	const uint32_t known = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS |
			       IBV_QP_INIT_ATTR_CREATE_FLAGS | IBV_QP_INIT_ATTR_XRCD |
			       IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE;
	bool has_pd = (attr->comp_mask & IBV_QP_INIT_ATTR_PD) && attr->pd;
	bool rss = attr->comp_mask & (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE);

	if ((attr->comp_mask & ~known) ||
	    ((attr->comp_mask & IBV_QP_INIT_ATTR_CREATE_FLAGS) && attr->create_flags))
		return -EOPNOTSUPP;
	if (rss && attr->qp_type != IBV_QPT_RAW_PACKET)
		return -EINVAL;
	switch (attr->qp_type) {
	case IBV_QPT_RAW_PACKET:
		/* Whoever sends frames of their own making needs CAP_NET_RAW, as the kernel's uverbs asks. */
		if (!prov_may_create_raw_qp())
			return -EPERM;
		/* An RSS QP's CQ is its indirection table's. */
		if (!rss && (!attr->send_cq || !attr->recv_cq))
			return -EINVAL;
		break;
	case IBV_QPT_XRC_RECV:
		if (!(attr->comp_mask & IBV_QP_INIT_ATTR_XRCD) || !attr->xrcd ||
		    attr->xrcd->context != ctx)
			return -EINVAL;
		return 0;
	case IBV_QPT_XRC_SEND:
		if (!attr->send_cq)
			return -EINVAL;
		break;
	case IBV_QPT_RC:
	case IBV_QPT_UC:
	case IBV_QPT_UD:
		if (!attr->send_cq || !attr->recv_cq)
			return -EINVAL;
		break;
	default:
		return -EOPNOTSUPP;
	}
	return has_pd && attr->pd->context == ctx ? 0 : -EINVAL;
}

static struct ibv_qp *prov_qp_new(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	bool target = attr->qp_type == IBV_QPT_XRC_RECV;
	/* An XRC initiator receives nothing: a receive CQ or SRQ given is ignored, as the kernel does. */
	bool receives = !target && attr->qp_type != IBV_QPT_XRC_SEND;
	struct rc_qp *rss_wqs[1 << RC_RSS_LOG_SIZE_MAX];
	struct prov_ind_table *table = NULL;
	struct rc_qp_rss rss;
	struct rc_qp_init init = { 0 };
	struct prov_qp *qp;
	struct ibv_qp *ib;
	int ret;

	ret = prov_qp_check(ctx, attr);
	if (ret)
		return prov_null_errno(ret);
	if (attr->comp_mask & (IBV_QP_INIT_ATTR_RX_HASH | IBV_QP_INIT_ATTR_IND_TABLE)) {
		ret = prov_rss_get(attr, &rss, rss_wqs, &table);
		if (ret)
			return prov_null_errno(ret);
	}

	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return prov_null_errno(-ENOMEM);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		ret = prov_qp_ex_init(qp, attr->qp_type, attr->send_ops_flags);
		if (ret)
			goto err_free_qp;
	}
	init.qp_type = attr->qp_type;
	if (target) {
		init.xrcd = to_pxrcd(attr->xrcd)->rc;
	} else {
		init.pd = to_ppd(attr->pd)->rc;
		init.send_cq = table ? prov_ind_table_cq(table) : to_pcq(attr->send_cq)->rc;
		init.recv_cq = table ? prov_ind_table_cq(table) :
			       receives ? to_pcq(attr->recv_cq)->rc : NULL;
		init.srq = receives && attr->srq ? to_psrq(attr->srq)->rc : NULL;
		init.rss = table ? &rss : NULL;
	}
	init.cap = attr->cap;
	init.sq_sig_all = attr->sq_sig_all != 0;
	init.user = qp;
	if (!target && to_ppd(attr->pd)->alloc)
		init.ring_alloc = (struct rc_ring_alloc){ prov_ring_alloc, prov_ring_free,
							  to_ppd(attr->pd) };
	qp->rc = rc_qp_create(prov_eng(ctx), &init);
	if (!qp->rc) {
		ret = -errno;
		goto err_fini_ex;
	}
	if (!target && to_ppd(attr->pd)->base)
		atomic_fetch_add(&to_ppd(attr->pd)->users, 1);
	if (table)
		prov_ind_table_hold(table, 1);
	qp->ind_table = table;
	attr->cap = init.cap;
	dp_device_qp_add(prov_dp(ctx), qp->rc);

	ib = &qp->vqp.qp;
	ib->context = ctx;
	ib->qp_context = attr->qp_context;
	ib->pd = target ? NULL : attr->pd;
	ib->send_cq = target ? NULL : attr->send_cq;
	ib->recv_cq = receives ? attr->recv_cq : NULL;
	ib->srq = receives ? attr->srq : NULL;
	ib->handle = prov_handle();
	ib->qp_num = rc_qp_num(qp->rc);
	ib->state = IBV_QPS_RESET;
	ib->qp_type = attr->qp_type;
	ib->events_completed = 0;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	if (attr->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)
		prov_abi_qp_set_ex(&qp->vqp);
	return ib;

err_fini_ex:
	prov_qp_ex_fini(qp);
err_free_qp:
	free(qp);
	return prov_null_errno(ret);
}

struct ibv_qp *prov_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex ex = {
		.qp_context = attr->qp_context,
		.send_cq = attr->send_cq,
		.recv_cq = attr->recv_cq,
		.srq = attr->srq,
		.cap = attr->cap,
		.qp_type = attr->qp_type,
		.sq_sig_all = attr->sq_sig_all,
		.comp_mask = IBV_QP_INIT_ATTR_PD,
		.pd = pd,
	};
	struct ibv_qp *qp = prov_qp_new(pd->context, &ex);

	if (qp)
		attr->cap = ex.cap;
	return qp;
}

struct ibv_qp *prov_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr)
{
	return prov_qp_new(ctx, attr);
}

/*
 * ibv_open_qp(3): another handle of an XRC target QP of the domain, created
 * in this process (domains are per process).  It modifies and queries the
 * same QP; destroying it leaves the QP to its creator.
 */
struct ibv_qp *prov_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr)
{
	const uint32_t need = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD | IBV_QP_OPEN_ATTR_TYPE;
	struct prov_qp *owner, *qp;
	struct rc_qp *rc;
	struct ibv_qp *ib;

	if ((attr->comp_mask & need) != need || !attr->xrcd || attr->xrcd->context != ctx ||
	    attr->qp_type != IBV_QPT_XRC_RECV)
		return prov_null_errno(-EINVAL);
	rc = rc_qp_open_xrc(to_pxrcd(attr->xrcd)->rc, attr->qp_num);
	if (!rc)
		return prov_null_errno(-errno);
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return prov_null_errno(-ENOMEM);
	owner = rc_qp_user(rc);
	atomic_fetch_add(&owner->opened, 1);
	qp->rc = rc;
	qp->owner = owner;
	ib = &qp->vqp.qp;
	ib->context = ctx;
	ib->qp_context = (attr->comp_mask & IBV_QP_OPEN_ATTR_CONTEXT) ? attr->qp_context : NULL;
	ib->handle = prov_handle();
	ib->qp_num = rc_qp_num(rc);
	ib->state = owner->vqp.qp.state;
	ib->qp_type = IBV_QPT_XRC_RECV;
	pthread_mutex_init(&ib->mutex, NULL);
	pthread_cond_init(&ib->cond, NULL);
	return ib;
}

int prov_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask)
{
	struct ibv_qp_attr a = *attr;

	/*
	 * IBV_ACCESS_ON_DEMAND is a region's flag, meaningless on a QP; the
	 * kernel and mlx5 take it there without a word (rdma-core's ODP tests
	 * give their QPs the access flags of their regions), so uroce does too.
	 */
	if (mask & IBV_QP_ACCESS_FLAGS)
		a.qp_access_flags &= ~(unsigned int)IBV_ACCESS_ON_DEMAND;
	return -rc_qp_modify(to_pqp(qp)->rc, &a, mask);
}

int prov_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init)
{
	int ret = rc_qp_query(to_pqp(qp)->rc, attr, mask, init);

	if (ret)
		return -ret;
	/* The engine knows its own objects; the application knows these. */
	init->qp_context = qp->qp_context;
	init->send_cq = qp->send_cq;
	init->recv_cq = qp->recv_cq;
	init->srq = qp->srq;
	init->qp_type = qp->qp_type;
	return 0;
}

/* ibv_attach_mcast: a UD QP receives its group's datagrams (IBA 10.5.2); the LID means nothing on RoCE. */
int prov_attach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct prov_qp *qp = to_pqp(ibqp);
	int ret;

	(void)lid;
	if (qp->owner)
		return EINVAL;
	ret = rc_mcast_attach(qp->rc, gid->raw);
	return ret < 0 ? -ret : 0;
}

int prov_detach_mcast(struct ibv_qp *ibqp, const union ibv_gid *gid, uint16_t lid)
{
	struct prov_qp *qp = to_pqp(ibqp);

	(void)lid;
	if (qp->owner)
		return EINVAL;
	return -rc_mcast_detach(qp->rc, gid->raw);
}

int prov_destroy_qp(struct ibv_qp *ibqp)
{
	struct prov_qp *qp = to_pqp(ibqp);
	int ret;

	if (qp->owner) {
		atomic_fetch_sub(&qp->owner->opened, 1);
		free(qp);
		return 0;
	}
	if (atomic_load(&qp->opened))
		return EBUSY;
	dp_device_qp_del(prov_dp(ibqp->context), qp->rc);
	ret = rc_qp_destroy(qp->rc);
	if (ret) {
		dp_device_qp_add(prov_dp(ibqp->context), qp->rc);
		return -ret;
	}
	prov_wait_events_acked(&ibqp->mutex, &ibqp->cond, &ibqp->events_completed,
			       atomic_load(&qp->async_reported));
	if (ibqp->pd && to_ppd(ibqp->pd)->base)
		atomic_fetch_sub(&to_ppd(ibqp->pd)->users, 1);
	if (qp->ind_table)
		prov_ind_table_hold(qp->ind_table, -1);
	prov_qp_ex_fini(qp);
	prov_qp_release(qp);
	return 0;
}

/* Posting kicks the dataplane so the first packets leave now, not at the next poll. */
int prov_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	int ret = rc_post_send(to_pqp(qp)->rc, wr, bad);

	dp_device_kick(prov_dp(qp->context));
	return -ret;
}

int prov_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return -rc_post_recv(to_pqp(qp)->rc, wr, bad);
}
