// SPDX-License-Identifier: MIT
/* Device memory: ibv_alloc_dm(3), ibv_memcpy_to/from_dm, and zero-based MRs over it. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "prov.h"

/* Offsets and lengths of device-memory copies are whole 4-byte words, as on ConnectX. */
#define PROV_DM_UNIT	4
#define PROV_DM_MAX_LOG_ALIGN	12

static struct prov_dm *to_pdm(struct ibv_dm *dm)
{
	return container_of(dm, struct prov_dm, ibv);
}

static bool dm_range_ok(const struct prov_dm *dm, uint64_t off, size_t len)
{
	return off % PROV_DM_UNIT == 0 && len % PROV_DM_UNIT == 0 && off <= dm->len &&
	       len <= dm->len - off;
}

static int prov_memcpy_to_dm(struct ibv_dm *ibdm, uint64_t off, const void *src, size_t len)
{
	struct prov_dm *dm = to_pdm(ibdm);

	if (!dm_range_ok(dm, off, len))
		return EINVAL;
	memcpy(dm->buf + off, src, len);
	return 0;
}

static int prov_memcpy_from_dm(void *dst, struct ibv_dm *ibdm, uint64_t off, size_t len)
{
	struct prov_dm *dm = to_pdm(ibdm);

	if (!dm_range_ok(dm, off, len))
		return EINVAL;
	memcpy(dst, dm->buf + off, len);
	return 0;
}

struct ibv_dm *prov_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr)
{
	struct prov_dataplane *dpl = to_pctx(ctx)->dpl;
	size_t align, len;
	struct prov_dm *dm;

	if (attr->comp_mask || attr->length == 0 || attr->log_align_req > PROV_DM_MAX_LOG_ALIGN)
		return prov_null_errno(-EINVAL);
	len = (attr->length + PROV_DM_UNIT - 1) / PROV_DM_UNIT * PROV_DM_UNIT;
	if (len > PROV_MAX_DM_SIZE ||
	    atomic_fetch_add(&dpl->dm_used, len) + len > PROV_MAX_DM_SIZE) {
		if (len <= PROV_MAX_DM_SIZE)
			atomic_fetch_sub(&dpl->dm_used, len);
		return prov_null_errno(-ENOMEM);
	}
	dm = calloc(1, sizeof(*dm));
	if (!dm)
		goto err_unaccount;
	align = (size_t)1 << (attr->log_align_req > 6 ? attr->log_align_req : 6);
	dm->buf = aligned_alloc(align, (len + align - 1) / align * align);
	if (!dm->buf)
		goto err_free_dm;
	memset(dm->buf, 0, len);
	dm->len = len;
	dm->ibv.context = ctx;
	dm->ibv.memcpy_to_dm = prov_memcpy_to_dm;
	dm->ibv.memcpy_from_dm = prov_memcpy_from_dm;
	return &dm->ibv;

err_free_dm:
	free(dm);
err_unaccount:
	atomic_fetch_sub(&dpl->dm_used, len);
	return prov_null_errno(-ENOMEM);
}

int prov_free_dm(struct ibv_dm *ibdm)
{
	struct prov_dm *dm = to_pdm(ibdm);

	if (atomic_load(&dm->mrs))
		return EBUSY;
	atomic_fetch_sub(&to_pctx(ibdm->context)->dpl->dm_used, dm->len);
	free(dm->buf);
	free(dm);
	return 0;
}

void prov_dm_put(struct prov_dm *dm)
{
	atomic_fetch_sub(&dm->mrs, 1);
}

/*
 * An MR over [dm_offset, dm_offset + length) of the device memory, addressed
 * from 0 (IBV_ACCESS_ZERO_BASED, which ibv_reg_dm_mr(3) requires): a work
 * request's SGE and a peer's RETH name offsets into it.
 */
struct ibv_mr *prov_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *ibdm, uint64_t dm_offset,
			      size_t length, unsigned int access)
{
	struct prov_dm *dm = to_pdm(ibdm);
	struct prov_mr *mr;

	if (!(access & IBV_ACCESS_ZERO_BASED) || ibdm->context != pd->context ||
	    dm_offset > dm->len || length > dm->len - dm_offset)
		return prov_null_errno(-EINVAL);
	mr = prov_mr_create(pd, dm->buf + dm_offset, length, 0, (int)(access & ~IBV_ACCESS_ZERO_BASED));
	if (!mr)
		return NULL;
	mr->dm = dm;
	atomic_fetch_add(&dm->mrs, 1);
	mr->vmr.ibv_mr.addr = NULL;
	mr->vmr.access = (int)access;
	return &mr->vmr.ibv_mr;
}
