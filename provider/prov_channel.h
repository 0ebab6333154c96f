/* SPDX-License-Identifier: MIT */
/* Completion channels made by the interposer (liburoce-compchan.so), as the provider finds them. */
#ifndef UROCE_PROVIDER_PROV_CHANNEL_H
#define UROCE_PROVIDER_PROV_CHANNEL_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "verbs_abi.h"

/*
 * libibverbs creates a completion channel by a command to the kernel,
 * without asking the provider, so on a uroce device it cannot succeed.
 * `uroce exec` preloads an interposer whose ibv_create_comp_channel() makes
 * this object instead: @ibv.fd is the read end of a pipe, @wfd its write
 * end.  When an armed CQ of the channel gets a completion the provider
 * writes a struct ib_uverbs_comp_event_desc (cq_handle = the ibv_cq
 * pointer) to @wfd, which is exactly what libibverbs' own
 * ibv_get_cq_event() reads from @ibv.fd.
 */
#define PROV_CHANNEL_MAGIC	0x75726f6365636368ull	/* "urocecch" */

struct prov_channel {
	struct ibv_comp_channel	ibv;	/* what the application holds; first */
	uint64_t		magic;
	int			wfd;	/* non-blocking */
};

/* A context of a uroce device (and not of another provider libibverbs loaded). */
static inline bool prov_is_uroce(struct ibv_context *context)
{
	const struct verbs_device *vdev = (const struct verbs_device *)context->device;

	return vdev->ops && vdev->ops->name && !strcmp(vdev->ops->name, "uroce");
}

static inline struct prov_channel *prov_channel_from_ibv(struct ibv_comp_channel *ch)
{
	struct prov_channel *pc = (struct prov_channel *)ch;

	return pc && pc->magic == PROV_CHANNEL_MAGIC ? pc : NULL;
}

#endif
