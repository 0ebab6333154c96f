// SPDX-License-Identifier: MIT
/* Completion queues: classic and extended polling, notification and completion events. */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "prov.h"
#include "prov_channel.h"

/* The completion fields the extended poll API can read. */
#define PROV_CQ_WC_STAMPS (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |			\
			   IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
#define PROV_CQ_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |		\
			  IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP |		\
			  IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL |			\
			  IBV_WC_EX_WITH_DLID_PATH_BITS | PROV_CQ_WC_STAMPS)

void prov_engine_cq_event(void *arg, struct rc_cq *rc, void *cq_user)
{
	struct ib_uverbs_comp_event_desc ev;
	struct prov_cq *cq = cq_user;

	(void)arg;
	(void)rc;
	if (!cq->chan)
		return;
	ev.cq_handle = (uintptr_t)&cq->vcq.cq;
	/* Non-blocking: one event per arming, so the pipe fills only if nobody reads. */
	if (write(cq->chan->wfd, &ev, sizeof(ev)) != sizeof(ev))
		return;
}

void prov_cq_event(struct ibv_cq *cq)
{
	atomic_fetch_add(&to_pcq(cq)->comp_reported, 1);
}

static struct prov_cq *prov_cq_new(struct ibv_context *ctx, int cqe,
				   struct ibv_comp_channel *channel, int comp_vector)
{
	struct prov_channel *chan = NULL;
	struct prov_cq *cq;

	if (cqe < 1 || cqe > RC_MAX_CQE || comp_vector < 0 ||
	    comp_vector >= PROV_NUM_COMP_VECTORS)
		return prov_null_errno(-EINVAL);
	if (channel) {
		/* Only the interposer makes channels for uroce contexts (prov_channel.h). */
		if (channel->context != ctx)
			return prov_null_errno(-EINVAL);
		chan = prov_channel_from_ibv(channel);
		if (!chan)
			return prov_null_errno(-EINVAL);
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return prov_null_errno(-ENOMEM);
	cq->chan = chan;
	pthread_mutex_init(&cq->poll_lock, NULL);
	cq->rc = rc_cq_create(prov_eng(ctx), cqe, cq);
	if (!cq->rc) {
		int saved = errno;

		pthread_mutex_destroy(&cq->poll_lock);
		free(cq);
		return prov_null_errno(-saved);
	}
	cq->vcq.cq.context = ctx;
	cq->vcq.cq.cqe = rc_cq_size(cq->rc);
	return cq;
}

struct ibv_cq *prov_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int comp_vector)
{
	struct prov_cq *cq = prov_cq_new(ctx, cqe, channel, comp_vector);

	return cq ? &cq->vcq.cq : NULL;
}

int prov_destroy_cq(struct ibv_cq *ibcq)
{
	struct prov_cq *cq = to_pcq(ibcq);
	int ret = rc_cq_destroy(cq->rc);

	if (ret)
		return -ret;
	prov_wait_events_acked(&ibcq->mutex, &ibcq->cond, &ibcq->comp_events_completed,
			       atomic_load(&cq->comp_reported));
	prov_wait_events_acked(&ibcq->mutex, &ibcq->cond, &ibcq->async_events_completed,
			       atomic_load(&cq->async_reported));
	pthread_mutex_destroy(&cq->poll_lock);
	free(cq);
	return 0;
}

int prov_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct prov_cq *cq = to_pcq(ibcq);
	int ret;

	if (cqe < 1 || cqe > RC_MAX_CQE)
		return EINVAL;
	ret = rc_cq_resize(cq->rc, cqe);
	if (ret)
		return -ret;
	ibcq->cqe = rc_cq_size(cq->rc);
	return 0;
}

/* Progress the engine from this thread first: polling is what drives a busy-polling program. */
int prov_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	dp_device_poll(prov_dp(ibcq->context));
	return rc_cq_poll(to_pcq(ibcq)->rc, n, wc);
}

/* Arming is what an application does before it blocks for an event: the progress thread takes over. */
int prov_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	int ret = rc_cq_req_notify(to_pcq(ibcq)->rc, solicited_only != 0);

	dp_device_app_waits(prov_dp(ibcq->context));
	return -ret;
}

/* ---- Extended polling: one completion at a time, so entries not iterated stay queued ---- */

static int prov_cq_take(struct prov_cq *cq)
{
	int n = rc_cq_poll_stamped(cq->rc, 1, &cq->cur, &cq->cur_stamp);

	if (n < 0)
		return -n;
	if (n == 0)
		return ENOENT;
	cq->vcq.cq_ex.wr_id = cq->cur.wr_id;
	cq->vcq.cq_ex.status = cq->cur.status;
	return 0;
}

static int prov_start_poll(struct ibv_cq_ex *ibcq, struct ibv_poll_cq_attr *attr)
{
	struct prov_cq *cq = to_pcq_ex(ibcq);
	int ret;

	if (attr->comp_mask)
		return EINVAL;
	dp_device_poll(prov_dp(ibcq->context));
	/* Held until end_poll: cur belongs to one poller at a time. */
	if (!cq->single_threaded)
		pthread_mutex_lock(&cq->poll_lock);
	ret = prov_cq_take(cq);
	if (ret && !cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
	return ret;
}

static int prov_next_poll(struct ibv_cq_ex *ibcq)
{
	return prov_cq_take(to_pcq_ex(ibcq));
}

static void prov_end_poll(struct ibv_cq_ex *ibcq)
{
	struct prov_cq *cq = to_pcq_ex(ibcq);

	if (!cq->single_threaded)
		pthread_mutex_unlock(&cq->poll_lock);
}

/*
 * The ibv_wc_read_*() accessors: each returns one field of the completion
 * start_poll/next_poll made current, under the ibv_cq_ex member of the same
 * name.
 */
#define PROV_CQ_READERS(X)				\
	X(opcode, enum ibv_wc_opcode)			\
	X(vendor_err, uint32_t)				\
	X(byte_len, uint32_t)				\
	X(imm_data, __be32)				\
	X(qp_num, uint32_t)				\
	X(src_qp, uint32_t)				\
	X(wc_flags, unsigned int)			\
	X(slid, uint32_t)				\
	X(sl, uint8_t)					\
	X(dlid_path_bits, uint8_t)

#define PROV_CQ_READER(field, type)				\
	static type prov_read_##field(struct ibv_cq_ex *ibcq)	\
	{							\
		return to_pcq_ex(ibcq)->cur.field;		\
	}
PROV_CQ_READERS(PROV_CQ_READER)
#undef PROV_CQ_READER

/* The device clock is the engine's: nanoseconds, so hca_core_clock is 1 GHz. */
static uint64_t prov_read_completion_ts(struct ibv_cq_ex *ibcq)
{
	return to_pcq_ex(ibcq)->cur_stamp;
}

/* The stamp moved to CLOCK_REALTIME by the two clocks' offset now. */
static uint64_t prov_read_completion_wallclock_ns(struct ibv_cq_ex *ibcq)
{
	struct prov_cq *cq = to_pcq_ex(ibcq);
	uint64_t age = rc_engine_clock(prov_eng(ibcq->context)) - cq->cur_stamp;
	struct timespec now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec - age;
}

int prov_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values)
{
	uint64_t ns;

	if (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK)
		return EINVAL;
	if (values->comp_mask & IBV_VALUES_MASK_RAW_CLOCK) {
		ns = rc_engine_clock(prov_eng(ctx));
		values->raw_clock.tv_sec = (time_t)(ns / 1000000000ull);
		values->raw_clock.tv_nsec = (long)(ns % 1000000000ull);
	}
	return 0;
}

struct ibv_cq_ex *prov_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr)
{
	struct ibv_cq_ex *ex;
	struct prov_cq *cq;

	/* No VLAN, flow tags or overrun-ignoring CQs; the ring is the engine's. */
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS | IBV_CQ_INIT_ATTR_MASK_PD))
		return prov_null_errno(-EOPNOTSUPP);
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (!attr->parent_domain || attr->parent_domain->context != ctx ||
	     !to_ppd(attr->parent_domain)->base))
		return prov_null_errno(-EINVAL);
	if (attr->wc_flags & ~(uint64_t)PROV_CQ_WC_FLAGS)
		return prov_null_errno(-EOPNOTSUPP);
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    (attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED))
		return prov_null_errno(-EOPNOTSUPP);

	cq = prov_cq_new(ctx, (int)attr->cqe, attr->channel, (int)attr->comp_vector);
	if (!cq)
		return NULL;
	if ((attr->wc_flags & PROV_CQ_WC_STAMPS) && rc_cq_enable_stamps(cq->rc)) {
		prov_destroy_cq(&cq->vcq.cq);
		return prov_null_errno(-ENOMEM);
	}
	cq->wc_flags = attr->wc_flags;
	cq->single_threaded = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
			      (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	ex = &cq->vcq.cq_ex;
	ex->start_poll = prov_start_poll;
	ex->next_poll = prov_next_poll;
	ex->end_poll = prov_end_poll;
#define PROV_CQ_SET_READER(field, type) ex->read_##field = prov_read_##field;
	PROV_CQ_READERS(PROV_CQ_SET_READER)
#undef PROV_CQ_SET_READER
	ex->read_completion_ts = prov_read_completion_ts;
	ex->read_completion_wallclock_ns = prov_read_completion_wallclock_ns;
	return ex;
}
