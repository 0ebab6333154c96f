// SPDX-License-Identifier: MIT
/* Protection domains, memory regions and windows and their keys, and the checked copies to and from SGE lists. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include "rc_internal.h"

/* ---- Keys: SipHash-2-4 of a counter under a secret key (Aumasson & Bernstein) ---- */

#define ROTL64(x, b) (uint64_t)(((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND(v0, v1, v2, v3)					\
	do {								\
		v0 += v1; v1 = ROTL64(v1, 13); v1 ^= v0; v0 = ROTL64(v0, 32); \
		v2 += v3; v3 = ROTL64(v3, 16); v3 ^= v2;		\
		v0 += v3; v3 = ROTL64(v3, 21); v3 ^= v0;		\
		v2 += v1; v1 = ROTL64(v1, 17); v1 ^= v2; v2 = ROTL64(v2, 32); \
	} while (0)

static uint64_t siphash24_u64(uint64_t k0, uint64_t k1, uint64_t m)
{
	uint64_t v0 = k0 ^ 0x736f6d6570736575ull;
	uint64_t v1 = k1 ^ 0x646f72616e646f6dull;
	uint64_t v2 = k0 ^ 0x6c7967656e657261ull;
	uint64_t v3 = k1 ^ 0x7465646279746573ull;
	uint64_t b = 8ull << 56;

	v3 ^= m;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= m;
	v3 ^= b;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	SIPROUND(v0, v1, v2, v3);
	return v0 ^ v1 ^ v2 ^ v3;
}

/* The mw_index key of an rkey: its upper 24 bits (bit 24 set so it is never 0). */
static inline uint32_t mw_index_of(uint32_t key)
{
	return key >> 8 | 1u << 24;
}

/*
 * A fresh key, unique among live keys, and outside every window's 256
 * rkeys (a bind may change a window's low 8 bits).  Outputs of a PRF under
 * a secret key: knowing any number of keys tells nothing about the next one.
 */
static uint32_t new_key(struct rc_engine *eng)
{
	for (;;) {
		uint32_t k = (uint32_t)siphash24_u64(eng->sip_k0, eng->sip_k1, eng->key_ctr++);

		if (k && !rc_hash_get(&eng->keys, k) && !rc_hash_get(&eng->mw_index, mw_index_of(k)))
			return k;
	}
}

/* A window's rkey: no live key shares its upper 24 bits. */
static uint32_t new_mw_key(struct rc_engine *eng)
{
	for (;;) {
		uint32_t k = new_key(eng) & ~0xffu, low;

		for (low = 0; low < 256; low++)
			if (rc_hash_get(&eng->keys, k | low))
				break;
		if (low == 256)
			return k | (uint32_t)(eng->key_ctr & 0xff);
	}
}

/* ---- Protection domains ---- */

struct rc_pd *rc_pd_alloc(struct rc_engine *eng)
{
	struct rc_pd *pd;

	pthread_mutex_lock(&eng->lock);
	if (eng->n_pd >= RC_MAX_PD) {
		pthread_mutex_unlock(&eng->lock);
		errno = ENOMEM;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd) {
		pd->eng = eng;
		rc_list_add_tail(&eng->pds, &pd->link);
		eng->n_pd++;
	}
	pthread_mutex_unlock(&eng->lock);
	if (!pd)
		errno = ENOMEM;
	return pd;
}

int rc_pd_free(struct rc_pd *pd)
{
	struct rc_engine *eng = pd->eng;

	pthread_mutex_lock(&eng->lock);
	if (pd->refs) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	rc_list_del(&pd->link);
	eng->n_pd--;
	pthread_mutex_unlock(&eng->lock);
	free(pd);
	return 0;
}

void rc_pd_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->pds)
		free(container_of(pos, struct rc_pd, link));
	rc_list_init(&eng->pds);
}

/* ---- Memory regions ---- */

#define MR_ACCESS_KNOWN (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |		\
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |		\
			 IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND | IBV_ACCESS_HUGETLB |	\
			 RC_ACCESS_FLUSH | IBV_ACCESS_OPTIONAL_RANGE)

static int check_access(int access)
{
	if (access & ~MR_ACCESS_KNOWN)
		return -EINVAL;
	/* ibv_reg_mr(3): remote write and remote atomic need local write too. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return 0;
}

/*
 * An implicit ODP region (ibv_reg_mr(3)): the whole address space, at iova
 * 0, reaching whatever the process has mapped when the access happens.
 */
static bool is_implicit(const void *addr, size_t len, int access)
{
	return (access & IBV_ACCESS_ON_DEMAND) && !addr && len == SIZE_MAX;
}

static int check_range(uint64_t iova, size_t len)
{
	if (len > RC_MAX_MR_SIZE || iova + len < iova)
		return -EINVAL;
	return 0;
}

static int issue_keys(struct rc_engine *eng, struct rc_mr *mr)
{
	int ret;

	mr->lkey = new_key(eng);
	ret = rc_hash_put(&eng->keys, mr->lkey, mr);
	if (ret)
		return ret;
	mr->rkey = new_key(eng);
	ret = rc_hash_put(&eng->keys, mr->rkey, mr);
	if (ret) {
		rc_hash_del(&eng->keys, mr->lkey);
		return ret;
	}
	mr->keys_live = true;
	rc_direct_publish_mr(mr);
	return 0;
}

static void revoke_keys(struct rc_engine *eng, struct rc_mr *mr)
{
	if (!mr->keys_live)
		return;
	rc_direct_withdraw_mr(mr);
	rc_hash_del(&eng->keys, mr->lkey);
	rc_hash_del(&eng->keys, mr->rkey);
	mr->keys_live = false;
}

struct rc_mr *rc_mr_reg(struct rc_pd *pd, void *addr, size_t len, uint64_t iova, int access)
{
	struct rc_engine *eng = pd->eng;
	struct rc_mr *mr;
	int ret;

	ret = check_access(access);
	if (!ret && !is_implicit(addr, len, access))
		ret = check_range(iova, len);
	else if (!ret && iova)
		ret = -EINVAL;
	if (ret) {
		errno = -ret;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->kind = RC_KEY_MR;
	mr->eng = eng;
	mr->pd = pd;
	mr->addr = addr;
	mr->len = is_implicit(addr, len, access) ? UINT64_MAX : len;
	mr->iova = iova;
	mr->access = access;

	pthread_mutex_lock(&eng->lock);
	if (eng->n_mr >= RC_MAX_MR) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = issue_keys(eng, mr);
	if (ret)
		goto err_unlock;
	pd->refs++;
	eng->n_mr++;
	rc_list_add_tail(&eng->mrs, &mr->link);
	pthread_mutex_unlock(&eng->lock);
	return mr;

err_unlock:
	pthread_mutex_unlock(&eng->lock);
	free(mr);
	errno = -ret;
	return NULL;
}

int rc_mr_rereg(struct rc_mr *mr, int flags, struct rc_pd *pd, void *addr, size_t len, int access)
{
	struct rc_engine *eng = mr->eng;
	int ret;

	if (flags & ~(IBV_REREG_MR_CHANGE_TRANSLATION | IBV_REREG_MR_CHANGE_PD |
		      IBV_REREG_MR_CHANGE_ACCESS))
		return -EINVAL;
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		ret = check_access(access);
		if (ret)
			return ret;
		/* Pinned and ODP regions are copied differently: the kind stays. */
		if ((access ^ mr->access) & IBV_ACCESS_ON_DEMAND)
			return -EINVAL;
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		ret = check_range((uintptr_t)addr, len);
		if (ret)
			return ret;
	}
	if ((flags & IBV_REREG_MR_CHANGE_PD) && (!pd || pd->eng != eng))
		return -EINVAL;

	/*
	 * The keys stay (as rxe and mlx5 keep them): peers that were given the
	 * rkey reach the region with its new attributes at once.  A region
	 * invalidated meanwhile gets fresh keys (its old values may be reused).
	 */
	pthread_mutex_lock(&eng->lock);
	/* No copy from another process lands while the region changes. */
	rc_direct_withdraw_mr(mr);
	if (!mr->keys_live) {
		ret = issue_keys(eng, mr);
		if (ret) {
			pthread_mutex_unlock(&eng->lock);
			return ret;
		}
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		mr->addr = addr;
		mr->len = len;
		mr->iova = (uintptr_t)addr;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS)
		mr->access = access;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		mr->pd->refs--;
		mr->pd = pd;
		pd->refs++;
	}
	rc_direct_publish_mr(mr);
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

int rc_mr_dereg(struct rc_mr *mr)
{
	struct rc_engine *eng = mr->eng;

	pthread_mutex_lock(&eng->lock);
	/* IBA 10.6.7.2.5: a region with windows bound to it stays. */
	if (mr->n_mw) {
		pthread_mutex_unlock(&eng->lock);
		return -EBUSY;
	}
	revoke_keys(eng, mr);
	mr->pd->refs--;
	eng->n_mr--;
	rc_list_del(&mr->link);
	pthread_mutex_unlock(&eng->lock);
	free(mr);
	return 0;
}

void rc_mr_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->mrs)
		free(container_of(pos, struct rc_mr, link));
	rc_list_init(&eng->mrs);
	rc_hash_free(&eng->keys);
}

uint32_t rc_mr_lkey(const struct rc_mr *mr)
{
	return mr->lkey;
}

uint32_t rc_mr_rkey(const struct rc_mr *mr)
{
	return mr->rkey;
}

static inline uint8_t *mr_map(const struct rc_mr *mr, uint64_t addr, uint64_t len)
{
	if (addr < mr->iova || len > mr->len || addr - mr->iova > mr->len - len)
		return NULL;
	return (uint8_t *)((uintptr_t)mr->addr + (addr - mr->iova));
}

static inline bool mr_odp(const struct rc_mr *mr)
{
	return mr->access & IBV_ACCESS_ON_DEMAND;
}

/* The live MR @key names (as its lkey or its rkey per @rkey), or NULL. */
static inline struct rc_mr *mr_of_key(struct rc_engine *eng, uint32_t key, bool rkey)
{
	struct rc_mr *mr = rc_hash_get(&eng->keys, key);

	if (unlikely(!mr || mr->kind != RC_KEY_MR || (rkey ? mr->rkey : mr->lkey) != key))
		return NULL;
	return mr;
}

/* The live MR of @pd that @lkey names with @access, or NULL. */
static inline struct rc_mr *mr_local(struct rc_engine *eng, struct rc_pd *pd, uint32_t lkey,
				     int access)
{
	struct rc_mr *mr = mr_of_key(eng, lkey, false);

	if (unlikely(!mr || mr->pd != pd || (mr->access & access) != access))
		return NULL;
	return mr;
}

uint8_t *rc_mr_local(struct rc_engine *eng, struct rc_pd *pd, uint32_t lkey, uint64_t addr,
		     uint64_t len, int access)
{
	struct rc_mr *mr = mr_local(eng, pd, lkey, access);

	return mr ? mr_map(mr, addr, len) : NULL;
}

/* Through a window (IBA 10.6.7): its own range and rights, the region's memory. */
static uint8_t *mw_remote(const struct rc_mw *mw, struct rc_pd *pd, uint32_t qpn, uint64_t va,
			  uint64_t len, int access, bool *odp)
{
	if (!mw->bound || mw->pd != pd || (mw->type == IBV_MW_TYPE_2 && mw->qpn != qpn) ||
	    (mw->access & access) != access)
		return NULL;
	if (va < mw->addr || len > mw->len || va - mw->addr > mw->len - len)
		return NULL;
	if (odp)
		*odp = mr_odp(mw->mr);
	return mr_map(mw->mr, va, len);
}

uint8_t *rc_mr_remote(struct rc_engine *eng, struct rc_pd *pd, uint32_t qpn, uint32_t rkey,
		      uint64_t va, uint64_t len, int access, bool *odp)
{
	struct rc_mr *mr = rc_hash_get(&eng->keys, rkey);

	if (unlikely(!mr))
		return NULL;
	if (unlikely(mr->kind == RC_KEY_MW)) {
		const struct rc_mw *mw = (const struct rc_mw *)mr;

		return mw->rkey == rkey ? mw_remote(mw, pd, qpn, va, len, access, odp) : NULL;
	}
	if (unlikely(mr->rkey != rkey || mr->pd != pd || (mr->access & access) != access))
		return NULL;
	if (odp)
		*odp = mr_odp(mr);
	return mr_map(mr, va, len);
}

/* ---- On-demand paging: accesses that fail instead of faulting ---- */

/*
 * An ODP region may name memory the process has not mapped (an implicit
 * one names all of it), and the application may unmap a page of it at any
 * time.  The kernel makes these copies: process_vm_readv() and
 * process_vm_writev() on this very process return a short count or EFAULT
 * where a memcpy() would take SIGSEGV.  A system call per copy, but only
 * for ODP regions: pinned ones never come here.
 */
int rc_odp_read(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)src, len };

	return process_vm_readv(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

int rc_odp_write(uint8_t *dst, const uint8_t *src, uint32_t len)
{
	struct iovec l = { (void *)(uintptr_t)src, len }, r = { dst, len };

	return process_vm_writev(getpid(), &l, 1, &r, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* madvise(2) over the pages of [p, p + len). */
static int advise_pages(uintptr_t p, uint32_t len, int advice)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = p & ~(page - 1);

	return madvise((void *)start, (size_t)(p + len - start), advice) ? -errno : 0;
}

int rc_odp_populate_write(uint8_t *p, uint32_t len)
{
	/* ENOMEM: a hole in the range; EFAULT or EINVAL: pages that may not be written. */
	return advise_pages((uintptr_t)p, len, MADV_POPULATE_WRITE) ? -EFAULT : 0;
}

/*
 * A prefetch of one ODP range (ibv_advise_mr(3)): its pages faulted in
 * readable, or writable for PREFETCH_WRITE, so that the copies which follow
 * find them present; NO_FAULT only hints.  -EFAULT when part of the range
 * is not mapped (or not writable for a write prefetch).
 */
static int prefetch(uint8_t *p, uint32_t len, enum ibv_advise_mr_advice advice)
{
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT) {
		(void)advise_pages((uintptr_t)p, len, MADV_WILLNEED);
		return 0;
	}
	if (advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE)
		return rc_odp_populate_write(p, len);
	/* As for writes: ENOMEM, EFAULT and EINVAL all mean pages that may not be read. */
	return advise_pages((uintptr_t)p, len, MADV_POPULATE_READ) ? -EFAULT : 0;
}

int rc_mr_advise(struct rc_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 const struct ibv_sge *sge, uint32_t num)
{
	struct rc_engine *eng = pd->eng;
	int access = advice == IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE ? IBV_ACCESS_LOCAL_WRITE : 0;
	int ret = 0;

	if (advice != IBV_ADVISE_MR_ADVICE_PREFETCH &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE &&
	    advice != IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT)
		return -EOPNOTSUPP;
	if ((flags & ~(uint32_t)IBV_ADVISE_MR_FLAG_FLUSH) || !num || !sge)
		return -EINVAL;
	for (uint32_t i = 0; i < num && !ret; i++) {
		struct rc_mr *mr;
		uint8_t *p = NULL;

		pthread_mutex_lock(&eng->lock);
		mr = mr_local(eng, pd, sge[i].lkey, access);
		if (mr && mr_odp(mr))
			p = mr_map(mr, sge[i].addr, sge[i].length);
		pthread_mutex_unlock(&eng->lock);
		ret = !p ? -EFAULT : sge[i].length ? prefetch(p, sge[i].length, advice) : 0;
	}
	return ret;
}

static void mw_unbind(struct rc_mw *mw)
{
	if (mw->bound)
		mw->mr->n_mw--;
	mw->bound = false;
	mw->mr = NULL;
}

int rc_mr_invalidate(struct rc_engine *eng, struct rc_pd *pd, uint32_t qpn, uint32_t rkey)
{
	struct rc_mr *mr = rc_hash_get(&eng->keys, rkey);

	if (!mr)
		return -EINVAL;
	if (mr->kind == RC_KEY_MW) {
		struct rc_mw *mw = (struct rc_mw *)mr;

		/* Only a bound type 2 window, by the QP it is bound to (IBA 10.6.7.2.6). */
		if (mw->rkey != rkey || mw->type != IBV_MW_TYPE_2 || !mw->bound || mw->pd != pd ||
		    mw->qpn != qpn)
			return -EINVAL;
		mw_unbind(mw);
		return 0;
	}
	if (mr->rkey != rkey || mr->pd != pd)
		return -EINVAL;
	/* An invalidated region is in the Free state: both keys are dead. */
	revoke_keys(eng, mr);
	return 0;
}

/* ---- Memory windows ---- */

#define MW_BIND_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |	\
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

struct rc_mw *rc_mw_alloc(struct rc_pd *pd, enum ibv_mw_type type)
{
	struct rc_engine *eng = pd->eng;
	struct rc_mw *mw;
	int ret;

	if (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2) {
		errno = EINVAL;
		return NULL;
	}
	mw = calloc(1, sizeof(*mw));
	if (!mw) {
		errno = ENOMEM;
		return NULL;
	}
	mw->kind = RC_KEY_MW;
	mw->eng = eng;
	mw->pd = pd;
	mw->type = type;
	pthread_mutex_lock(&eng->lock);
	if (eng->n_mw >= RC_MAX_MW) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	mw->rkey = new_mw_key(eng);
	ret = rc_hash_put(&eng->keys, mw->rkey, mw);
	if (ret)
		goto err_unlock;
	ret = rc_hash_put(&eng->mw_index, mw_index_of(mw->rkey), mw);
	if (ret) {
		rc_hash_del(&eng->keys, mw->rkey);
		goto err_unlock;
	}
	mw->ibv.rkey = mw->rkey;
	mw->ibv.type = type;
	pd->refs++;
	eng->n_mw++;
	rc_list_add_tail(&eng->mws, &mw->link);
	pthread_mutex_unlock(&eng->lock);
	return mw;

err_unlock:
	pthread_mutex_unlock(&eng->lock);
	free(mw);
	errno = -ret;
	return NULL;
}

int rc_mw_dealloc(struct rc_mw *mw)
{
	struct rc_engine *eng = mw->eng;

	pthread_mutex_lock(&eng->lock);
	mw_unbind(mw);
	rc_hash_del(&eng->keys, mw->rkey);
	rc_hash_del(&eng->mw_index, mw_index_of(mw->rkey));
	mw->pd->refs--;
	eng->n_mw--;
	rc_list_del(&mw->link);
	pthread_mutex_unlock(&eng->lock);
	free(mw);
	return 0;
}

void rc_mw_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->mws)
		free(container_of(pos, struct rc_mw, link));
	rc_list_init(&eng->mws);
	rc_hash_free(&eng->mw_index);
}

struct ibv_mw *rc_mw_ibv(struct rc_mw *mw)
{
	return &mw->ibv;
}

struct rc_mw *rc_mw_from_ibv(struct ibv_mw *ibv)
{
	return container_of(ibv, struct rc_mw, ibv);
}

/*
 * IBA 10.6.7.2 (and C10-72..C10-77): window and QP in one PD, the region
 * live, in that PD and with MW_BIND access, the range inside it, remote
 * write or atomic only over a region with local write, the rkey's upper 24
 * bits kept, and a type 2 window free before it is bound.  A zero-length
 * bind leaves the window unbound under its new rkey.
 */
int rc_mw_bind(struct rc_qp *qp, const struct rc_send_wqe *w)
{
	struct rc_engine *eng = qp->eng;
	struct rc_mw *mw = w->u.bind.mw;
	uint32_t rkey = w->u.bind.rkey;
	struct rc_mr *mr = NULL;
	int ret;

	if (mw->eng != eng || mw->pd != qp->pd || (rkey ^ mw->rkey) >> 8 ||
	    (w->u.bind.access & ~MW_BIND_ACCESS))
		return -EINVAL;
	if (mw->type == IBV_MW_TYPE_2 && mw->bound)
		return -EINVAL;
	if (w->u.bind.len) {
		mr = w->u.bind.has_mr ? mr_of_key(eng, w->u.bind.lkey, false) : NULL;
		if (!mr || !mr->keys_live || mr->pd != qp->pd || !(mr->access & IBV_ACCESS_MW_BIND))
			return -EINVAL;
		if ((w->u.bind.access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		    !(mr->access & IBV_ACCESS_LOCAL_WRITE))
			return -EINVAL;
		if (w->u.bind.addr < mr->iova || w->u.bind.len > mr->len ||
		    w->u.bind.addr - mr->iova > mr->len - w->u.bind.len)
			return -EINVAL;
	}
	if (rkey != mw->rkey) {
		rc_hash_del(&eng->keys, mw->rkey);
		ret = rc_hash_put(&eng->keys, rkey, mw);
		if (ret) {
			rc_hash_put(&eng->keys, mw->rkey, mw);
			return ret;
		}
		mw->rkey = rkey;
	}
	mw_unbind(mw);
	if (mr) {
		mw->mr = mr;
		mr->n_mw++;
		mw->bound = true;
		mw->addr = w->u.bind.addr;
		mw->len = w->u.bind.len;
		mw->access = w->u.bind.access;
		mw->qpn = qp->qpn;
	}
	return 0;
}

/* ---- SGE lists ---- */

void rc_sge_seek(const struct ibv_sge *sge, uint32_t num, uint32_t offset,
		 struct rc_sge_cursor *cur)
{
	uint32_t i = 0;

	while (i < num && offset >= sge[i].length) {
		offset -= sge[i].length;
		i++;
	}
	cur->idx = i;
	cur->off = i < num ? offset : 0;
}

/*
 * The next piece of the SGE list at @cur, at most @len bytes, mapped with
 * @access through its lkey.  Return: 0 with *@p, *@n and *@odp (the piece
 * is in an ODP region) set, -ENOSPC when the list is exhausted, -EFAULT for
 * a bad lkey or range.
 */
static int sge_next(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		    uint32_t num, struct rc_sge_cursor *cur, uint32_t len, int access,
		    uint8_t **p, uint32_t *n, bool *odp)
{
	struct rc_mr *mr;

	while (cur->idx < num && cur->off >= sge[cur->idx].length) {
		cur->idx++;
		cur->off = 0;
	}
	if (cur->idx >= num)
		return -ENOSPC;
	*n = sge[cur->idx].length - cur->off;
	if (*n > len)
		*n = len;
	mr = mr_local(eng, pd, sge[cur->idx].lkey, access);
	*p = mr ? mr_map(mr, sge[cur->idx].addr + cur->off, *n) : NULL;
	if (!*p)
		return -EFAULT;
	*odp = mr_odp(mr);
	return 0;
}

int rc_sge_gather(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		  uint32_t num, struct rc_sge_cursor *cur, uint8_t *dst, uint32_t len,
		  uint32_t *crc)
{
	while (len) {
		uint32_t n;
		uint8_t *p;
		bool odp;
		int ret = sge_next(eng, pd, sge, num, cur, len, 0, &p, &n, &odp);

		if (ret)
			return ret;
		if (unlikely(odp)) {
			if (rc_odp_read(dst, p, n))
				return -EFAULT;
			if (crc)
				*crc = wire_crc32(*crc, dst, n);
		} else if (crc) {
			*crc = wire_crc32_copy(*crc, dst, p, n);
		} else {
			wire_payload_copy(dst, p, n);
		}
		dst += n;
		len -= n;
		cur->off += n;
	}
	return 0;
}

const uint8_t *rc_sge_ref(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
			 uint32_t num, struct rc_sge_cursor *cur, uint32_t len)
{
	struct rc_sge_cursor at = *cur;
	uint32_t n;
	uint8_t *p;
	bool odp;

	/* Never ODP memory: the port would read it with no way to fail. */
	if (sge_next(eng, pd, sge, num, &at, len, 0, &p, &n, &odp) || n < len || odp)
		return NULL;
	at.off += len;
	*cur = at;
	return p;
}

static int scatter(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		   uint32_t num, struct rc_sge_cursor *cur, const uint8_t *src, uint32_t len,
		   bool may_fault)
{
	while (len) {
		uint32_t n;
		uint8_t *p;
		bool odp;
		int ret = sge_next(eng, pd, sge, num, cur, len, IBV_ACCESS_LOCAL_WRITE, &p, &n,
				   &odp);

		if (ret)
			return ret;
		if (unlikely(odp || may_fault)) {
			if (rc_odp_write(p, src, n))
				return -EFAULT;
		} else {
			wire_payload_copy(p, src, n);
		}
		src += n;
		len -= n;
		cur->off += n;
	}
	return 0;
}

int rc_sge_scatter(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		   uint32_t num, struct rc_sge_cursor *cur, const uint8_t *src, uint32_t len)
{
	return scatter(eng, pd, sge, num, cur, src, len, false);
}

int rc_sge_scatter_may_fault(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
			     uint32_t num, struct rc_sge_cursor *cur, const uint8_t *src,
			     uint32_t len)
{
	return scatter(eng, pd, sge, num, cur, src, len, true);
}
