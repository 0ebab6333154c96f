// SPDX-License-Identifier: MIT
/* Protection domains, memory regions and their keys, and the checked copies to and from SGE lists. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

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

/*
 * A fresh key, unique among live keys.  Outputs of a PRF under a secret
 * key: knowing any number of keys tells nothing about the next one.
 */
static uint32_t new_key(struct rc_engine *eng)
{
	for (;;) {
		uint32_t k = (uint32_t)siphash24_u64(eng->sip_k0, eng->sip_k1, eng->key_ctr++);

		if (k && !rc_hash_get(&eng->keys, k))
			return k;
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
			 IBV_ACCESS_MW_BIND | IBV_ACCESS_HUGETLB | IBV_ACCESS_OPTIONAL_RANGE)

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
	return 0;
}

static void revoke_keys(struct rc_engine *eng, struct rc_mr *mr)
{
	if (!mr->keys_live)
		return;
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
	if (!ret)
		ret = check_range(iova, len);
	if (ret) {
		errno = -ret;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	mr->eng = eng;
	mr->pd = pd;
	mr->addr = addr;
	mr->len = len;
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
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

int rc_mr_dereg(struct rc_mr *mr)
{
	struct rc_engine *eng = mr->eng;

	pthread_mutex_lock(&eng->lock);
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
	return mr->addr + (addr - mr->iova);
}

uint8_t *rc_mr_local(struct rc_engine *eng, struct rc_pd *pd, uint32_t lkey, uint64_t addr,
		     uint64_t len, int access)
{
	struct rc_mr *mr = rc_hash_get(&eng->keys, lkey);

	if (unlikely(!mr || mr->lkey != lkey || mr->pd != pd || (mr->access & access) != access))
		return NULL;
	return mr_map(mr, addr, len);
}

uint8_t *rc_mr_remote(struct rc_engine *eng, struct rc_pd *pd, uint32_t rkey, uint64_t va,
		      uint64_t len, int access)
{
	struct rc_mr *mr = rc_hash_get(&eng->keys, rkey);

	if (unlikely(!mr || mr->rkey != rkey || mr->pd != pd || (mr->access & access) != access))
		return NULL;
	return mr_map(mr, va, len);
}

int rc_mr_invalidate(struct rc_engine *eng, struct rc_pd *pd, uint32_t rkey)
{
	struct rc_mr *mr = rc_hash_get(&eng->keys, rkey);

	if (!mr || mr->rkey != rkey || mr->pd != pd)
		return -EINVAL;
	/* An invalidated region is in the Free state: both keys are dead. */
	revoke_keys(eng, mr);
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
 * @access through its lkey.  Return: 0 with *@p and *@n set, -ENOSPC when
 * the list is exhausted, -EFAULT for a bad lkey or range.
 */
static int sge_next(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		    uint32_t num, struct rc_sge_cursor *cur, uint32_t len, int access,
		    uint8_t **p, uint32_t *n)
{
	while (cur->idx < num && cur->off >= sge[cur->idx].length) {
		cur->idx++;
		cur->off = 0;
	}
	if (cur->idx >= num)
		return -ENOSPC;
	*n = sge[cur->idx].length - cur->off;
	if (*n > len)
		*n = len;
	*p = rc_mr_local(eng, pd, sge[cur->idx].lkey, sge[cur->idx].addr + cur->off, *n, access);
	return *p ? 0 : -EFAULT;
}

int rc_sge_gather(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		  uint32_t num, struct rc_sge_cursor *cur, uint8_t *dst, uint32_t len,
		  uint32_t *crc)
{
	while (len) {
		uint32_t n;
		uint8_t *p;
		int ret = sge_next(eng, pd, sge, num, cur, len, 0, &p, &n);

		if (ret)
			return ret;
		if (crc)
			*crc = wire_crc32_copy(*crc, dst, p, n);
		else
			memcpy(dst, p, n);
		dst += n;
		len -= n;
		cur->off += n;
	}
	return 0;
}

int rc_sge_scatter(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		   uint32_t num, struct rc_sge_cursor *cur, const uint8_t *src, uint32_t len)
{
	while (len) {
		uint32_t n;
		uint8_t *p;
		int ret = sge_next(eng, pd, sge, num, cur, len, IBV_ACCESS_LOCAL_WRITE, &p, &n);

		if (ret)
			return ret;
		memcpy(p, src, n);
		src += n;
		len -= n;
		cur->off += n;
	}
	return 0;
}
