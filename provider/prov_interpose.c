// SPDX-License-Identifier: MIT
/* liburoce-compchan.so: completion channels for uroce devices, preloaded by `uroce exec`. */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "prov_channel.h"
#include "verbs_abi.h"

/*
 * libibverbs makes a channel with a command to the kernel's uverbs device,
 * which a uroce device does not have (its command fd is /dev/full).  These
 * two functions replace libibverbs' for uroce contexts only, with a pipe
 * (prov_channel.h); any other device's context goes to libibverbs.  The
 * rest of the event path, ibv_get_cq_event() and ibv_ack_cq_events(), is
 * libibverbs' own.  The version script binds both names to IBVERBS_1.0, the
 * version programs reference.
 */

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context);
int ibv_destroy_comp_channel(struct ibv_comp_channel *channel);

static void *prov_next(const char *name)
{
	void *fn = dlvsym(RTLD_NEXT, name, "IBVERBS_1.0");

	return fn ? fn : dlsym(RTLD_NEXT, name);
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct prov_channel *ch;
	int pfd[2];

	if (!prov_is_uroce(context)) {
		struct ibv_comp_channel *(*next)(struct ibv_context *) =
			(struct ibv_comp_channel *(*)(struct ibv_context *))
				prov_next("ibv_create_comp_channel");

		if (!next) {
			errno = ENOSYS;
			return NULL;
		}
		return next(context);
	}
	ch = calloc(1, sizeof(*ch));
	if (!ch)
		return NULL;
	if (pipe2(pfd, O_CLOEXEC))
		goto err_free_ch;
	/* The provider writes under the engine's lock: never block there. */
	if (fcntl(pfd[1], F_SETFL, O_NONBLOCK))
		goto err_close;
	ch->ibv.context = context;
	ch->ibv.fd = pfd[0];
	ch->ibv.refcnt = 0;
	ch->magic = PROV_CHANNEL_MAGIC;
	ch->wfd = pfd[1];
	return &ch->ibv;

err_close:
	close(pfd[0]);
	close(pfd[1]);
err_free_ch:
	free(ch);
	return NULL;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct ibv_context *context = channel->context;
	struct prov_channel *ch;
	int ret = 0;

	if (!prov_is_uroce(context)) {
		int (*next)(struct ibv_comp_channel *) =
			(int (*)(struct ibv_comp_channel *))prov_next("ibv_destroy_comp_channel");

		return next ? next(channel) : ENOSYS;
	}
	ch = prov_channel_from_ibv(channel);
	if (!ch)
		return EINVAL;
	/* libibverbs counts the channel's CQs under the context mutex. */
	pthread_mutex_lock(&context->mutex);
	if (channel->refcnt) {
		ret = EBUSY;
	} else {
		close(ch->ibv.fd);
		close(ch->wfd);
		ch->magic = 0;
		free(ch);
	}
	pthread_mutex_unlock(&context->mutex);
	return ret;
}
