// SPDX-License-Identifier: MIT
/* The uroce libibverbs provider: registration, devices, contexts, queries and asynchronous events. */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>

#include "prov.h"
#include "prov_abi.h"
#include "uroce/sysfs.h"

#ifndef UROCE_VERSION
#define UROCE_VERSION "0"
#endif

/* ---- Per-process dataplanes ---- */

static pthread_mutex_t prov_dataplanes_lock = PTHREAD_MUTEX_INITIALIZER;
static struct prov_dataplane *prov_dataplanes;

/*
 * fork(): the child has none of the parent's threads, so the dataplanes it
 * inherited have no progress and share their ports with the parent.  It
 * forgets them (without closing anything of the parent's) and opens its own
 * devices anew, as a child of a kernel RDMA process opens new contexts.
 */
static void dataplanes_lock_for_fork(void)
{
	pthread_mutex_lock(&prov_dataplanes_lock);
}

static void dataplanes_unlock_in_parent(void)
{
	pthread_mutex_unlock(&prov_dataplanes_lock);
}

static void dataplanes_forget_in_child(void)
{
	pthread_mutex_init(&prov_dataplanes_lock, NULL);
	prov_dataplanes = NULL;
}

/* Return: false when the event was dropped. */
static bool prov_async_write(struct prov_context *ctx, uint64_t element, enum ibv_event_type type)
{
	struct ib_uverbs_async_event_desc ev = {
		.element = element,
		.event_type = (uint32_t)type,
	};

	/*
	 * Non-blocking: a full pipe means the application ignores its events;
	 * dropping one then beats stalling the engine, which holds its lock.
	 */
	return write(ctx->async_wfd, &ev, sizeof(ev)) == sizeof(ev);
}

static void prov_sync_gids(struct prov_dataplane *dpl);

/* What an asynchronous event is about: the element its descriptor names. */
enum prov_event_object {
	PROV_EVENT_PORT,	/* unaffiliated: element is the port number */
	PROV_EVENT_CQ,
	PROV_EVENT_QP,
	PROV_EVENT_SRQ,
};

/* Affiliated events name the CQ, QP or SRQ they are about; all others name the port. */
static enum prov_event_object prov_event_object(enum ibv_event_type type)
{
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		return PROV_EVENT_CQ;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
	case IBV_EVENT_COMM_EST:
	case IBV_EVENT_SQ_DRAINED:
	case IBV_EVENT_PATH_MIG:
	case IBV_EVENT_PATH_MIG_ERR:
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		return PROV_EVENT_QP;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		return PROV_EVENT_SRQ;
	default:
		return PROV_EVENT_PORT;
	}
}

/*
 * Affiliated events come from the engine with its lock held and go to the
 * context that owns the object; port events come from the dataplane's
 * thread without it and go to every context open on the device in this
 * process.
 */
static void prov_engine_async_event(void *arg, enum ibv_event_type type, void *obj_user)
{
	struct prov_dataplane *dpl = arg;

	switch (prov_event_object(type)) {
	case PROV_EVENT_CQ: {
		struct prov_cq *cq = obj_user;

		prov_async_write(to_pctx(cq->vcq.cq.context), (uintptr_t)&cq->vcq.cq, type);
		return;
	}
	case PROV_EVENT_QP: {
		struct prov_qp *qp = obj_user;

		/* Counted before the write: the application may read it at once. */
		atomic_fetch_add(&qp->async_written, 1);
		if (!prov_async_write(to_pctx(qp->vqp.qp.context), (uintptr_t)&qp->vqp.qp, type))
			atomic_fetch_sub(&qp->async_written, 1);
		return;
	}
	case PROV_EVENT_SRQ: {
		struct prov_srq *srq = obj_user;

		prov_async_write(to_pctx(srq->vsrq.srq.context), (uintptr_t)&srq->vsrq.srq, type);
		return;
	}
	case PROV_EVENT_PORT:
		/* From the dataplane's thread, engine lock not held: sysfs first, then tell. */
		if (type == IBV_EVENT_GID_CHANGE)
			prov_sync_gids(dpl);
		pthread_mutex_lock(&dpl->ctx_lock);
		for (struct prov_context *c = dpl->contexts; c; c = c->next_ctx)
			prov_async_write(c, PROV_PORT_NUM, type);
		pthread_mutex_unlock(&dpl->ctx_lock);
		return;
	}
}

/*
 * Keep the GID table libibverbs reads (sysfs) and the engine's in step.
 * The dataplane built the engine's table from the netdev's addresses just
 * now; when they differ from sysfs (addresses changed since `uroce link
 * add`), sysfs is rewritten if this process may, else the engine takes the
 * sysfs table so that a GID index means the same to both, and the user is
 * told how to refresh.
 */
static void prov_sync_gids(struct prov_dataplane *dpl)
{
	struct wire_gid_entry fresh[WIRE_GID_TABLE_LEN], seen[WIRE_GID_TABLE_LEN];
	struct host_link_info link;
	int ret;

	pthread_mutex_lock(&dpl->gid_lock);
	if (!dpl->ready)
		goto out;
	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++)
		if (rc_engine_get_gid(dpl->eng, i, &fresh[i]))
			memset(&fresh[i], 0, sizeof(fresh[i]));
	if (prov_sysfs_read_gids(dpl->ibdev_path, seen, WIRE_GID_TABLE_LEN) ||
	    prov_gid_tables_equal(fresh, seen, WIRE_GID_TABLE_LEN))
		goto out;
	if (dp_device_link(dpl->dp, &link))
		link.netdev[0] = '\0';
	if (!link.netdev[0] || !if_nametoindex(link.netdev))
		link.netdev[0] = '\0';
	ret = prov_sysfs_write_gids(dpl->ibdev_path, fresh, WIRE_GID_TABLE_LEN, link.netdev);
	if (ret) {
		for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++)
			rc_engine_set_gid(dpl->eng, i, &seen[i]);
		fprintf(stderr, PROV_NAME ": the GID table of %s is stale (addresses of %s "
			"changed) and cannot be updated here (%s): run `uroce link refresh %s`\n",
			dpl->ibdev, link.netdev[0] ? link.netdev : "its netdev", strerror(-ret),
			dpl->ibdev);
	}
out:
	pthread_mutex_unlock(&dpl->gid_lock);
}

static struct prov_dataplane *prov_dataplane_get(const struct ibv_device *dev)
{
	struct dp_open_args args = {
		.cq_event = prov_engine_cq_event,
		.async_event = prov_engine_async_event,
		.extra_names = prov_ucma_counter_names(),
	};
	struct prov_dataplane *dpl;
	char err[256] = "";
	int ret;

	pthread_mutex_lock(&prov_dataplanes_lock);
	for (dpl = prov_dataplanes; dpl; dpl = dpl->next)
		if (!strcmp(dpl->ibdev, dev->name))
			break;
	if (dpl) {
		dpl->refs++;
		pthread_mutex_unlock(&prov_dataplanes_lock);
		prov_sync_gids(dpl);
		return dpl;
	}
	dpl = calloc(1, sizeof(*dpl));
	if (!dpl) {
		pthread_mutex_unlock(&prov_dataplanes_lock);
		errno = ENOMEM;
		return NULL;
	}
	snprintf(dpl->ibdev, sizeof(dpl->ibdev), "%s", dev->name);
	snprintf(dpl->ibdev_path, sizeof(dpl->ibdev_path), "%s", dev->ibdev_path);
	pthread_mutex_init(&dpl->ctx_lock, NULL);
	pthread_mutex_init(&dpl->gid_lock, NULL);
	args.event_arg = dpl;
	ret = dp_device_open(dev->name, &args, &dpl->dp, err, sizeof(err));
	if (ret) {
		pthread_mutex_unlock(&prov_dataplanes_lock);
		fprintf(stderr, PROV_NAME ": cannot open %s: %s\n", dev->name,
			err[0] ? err : strerror(-ret));
		pthread_mutex_destroy(&dpl->ctx_lock);
		pthread_mutex_destroy(&dpl->gid_lock);
		free(dpl);
		errno = -ret;
		return NULL;
	}
	pthread_mutex_lock(&dpl->gid_lock);
	dpl->eng = dp_device_engine(dpl->dp);
	dpl->ready = true;
	pthread_mutex_unlock(&dpl->gid_lock);
	dpl->refs = 1;
	dpl->pid = getpid();
	dpl->next = prov_dataplanes;
	prov_dataplanes = dpl;
	pthread_mutex_unlock(&prov_dataplanes_lock);
	prov_sync_gids(dpl);
	return dpl;
}

static void prov_dataplane_put(struct prov_dataplane *dpl)
{
	/* A context a child of fork() inherited: its dataplane is the parent's to close. */
	if (dpl->pid != getpid())
		return;
	pthread_mutex_lock(&prov_dataplanes_lock);
	if (--dpl->refs) {
		pthread_mutex_unlock(&prov_dataplanes_lock);
		return;
	}
	for (struct prov_dataplane **p = &prov_dataplanes; *p; p = &(*p)->next)
		if (*p == dpl) {
			*p = dpl->next;
			break;
		}
	pthread_mutex_unlock(&prov_dataplanes_lock);
	dp_device_close(dpl->dp);
	pthread_mutex_destroy(&dpl->ctx_lock);
	pthread_mutex_destroy(&dpl->gid_lock);
	free(dpl);
}

/* ---- Queries ---- */

static uint64_t prov_guid_be(struct ibv_context *ctx)
{
	struct host_link_info link;

	if (dp_device_link(prov_dp(ctx), &link))
		return 0;
	return htobe64(prov_node_guid(link.mac));
}

static int prov_query_device_ex(struct ibv_context *ctx,
				const struct ibv_query_device_ex_input *input,
				struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a = { 0 };
	struct ibv_device_attr *o = &a.orig_attr;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(attr->orig_attr))
		return EINVAL;

	snprintf(o->fw_ver, sizeof(o->fw_ver), "uroce %s", UROCE_VERSION);
	o->node_guid = prov_guid_be(ctx);
	o->sys_image_guid = o->node_guid;
	o->max_mr_size = RC_MAX_MR_SIZE;
	o->page_size_cap = ~0xfffull;		/* any multiple of 4 KiB */
	o->vendor_id = 0xffffff;		/* no IEEE OUI assigned (as rxe) */
	o->vendor_part_id = 0;
	o->hw_ver = 0;
	o->max_qp = RC_MAX_QP;
	o->max_qp_wr = RC_MAX_QP_WR;
	/*
	 * Flow steering for raw packet QPs (ibv_create_flow(3), note 1).  No
	 * IBV_DEVICE_RAW_IP_CSUM and no raw_packet_caps: frames leave as
	 * posted, no checksum computed, no VLAN stripped, no FCS scattered.
	 */
	o->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_SRQ_RESIZE |
			      IBV_DEVICE_PORT_ACTIVE_EVENT | IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B | IBV_DEVICE_XRC |
			      IBV_DEVICE_MANAGED_FLOW_STEERING;
	o->max_sge = RC_MAX_SGE;
	o->max_sge_rd = RC_MAX_SGE;
	o->max_cq = RC_MAX_CQ;
	o->max_cqe = RC_MAX_CQE;
	o->max_mr = RC_MAX_MR;
	o->max_pd = RC_MAX_PD;
	o->max_qp_rd_atom = RC_MAX_RD_ATOMIC;
	o->max_qp_init_rd_atom = RC_MAX_RD_ATOMIC;
	o->max_res_rd_atom = RC_MAX_RD_ATOMIC * RC_MAX_QP;
	/* Atomics are atomic among the requests this device executes, not against the CPU. */
	o->atomic_cap = IBV_ATOMIC_HCA;
	o->max_ah = RC_MAX_AH;
	o->max_mcast_grp = RC_MAX_MCAST_GROUPS;
	o->max_mcast_qp_attach = RC_MAX_MCAST_QP_ATTACH;
	o->max_total_mcast_qp_attach = RC_MAX_MCAST_GROUPS * RC_MAX_MCAST_QP_ATTACH;
	o->max_mw = RC_MAX_MW;
	o->max_srq = RC_MAX_SRQ;
	o->max_srq_wr = RC_MAX_SRQ_WR;
	o->max_srq_sge = RC_MAX_SGE;
	o->max_pkeys = 1;
	o->local_ca_ack_delay = 15;
	o->phys_port_cnt = 1;
	/* IBA 1.5 ATOMIC WRITE: the kernel's IB_UVERBS_DEVICE_ATOMIC_WRITE (libibverbs v44 has no name). */
	a.device_cap_flags_ex = o->device_cap_flags | PROV_DEVICE_ATOMIC_WRITE;
	/*
	 * On-demand paging where the engine's copies to and from ODP memory go
	 * through the kernel and fail instead of faulting: the payloads of
	 * sends, receives (SRQ ones too), writes and reads.  Not atomics: the
	 * CPU's atomic instructions have no failing form.
	 */
	a.odp_caps.general_caps = IBV_ODP_SUPPORT | IBV_ODP_SUPPORT_IMPLICIT;
	a.odp_caps.per_transport_caps.rc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_WRITE | IBV_ODP_SUPPORT_READ |
						    IBV_ODP_SUPPORT_SRQ_RECV;
	a.odp_caps.per_transport_caps.uc_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV |
						    IBV_ODP_SUPPORT_WRITE;
	a.odp_caps.per_transport_caps.ud_odp_caps = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
	/* XRC runs RC's requester and responder, the copies the same. */
	a.xrc_odp_caps = a.odp_caps.per_transport_caps.rc_odp_caps;
	a.max_dm_size = PROV_MAX_DM_SIZE;
	/* Completion stamps count the engine clock's nanoseconds, in 64 bits. */
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = 1000000;	/* kHz */
	a.phys_port_cnt_ex = 1;
	/* Receive-side scaling of raw packet QPs over work queues (rc_qp_rss). */
	a.rss_caps.supported_qpts = 1u << IBV_QPT_RAW_PACKET;
	a.rss_caps.max_rwq_indirection_tables = RC_MAX_QP;
	a.rss_caps.max_rwq_indirection_table_size = 1u << RC_RSS_LOG_SIZE_MAX;
	a.rss_caps.rx_hash_function = IBV_RX_HASH_FUNC_TOEPLITZ;
	a.rss_caps.rx_hash_fields_mask = RC_RSS_FIELDS;
	a.max_wq_type_rq = RC_MAX_QP;

	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	if (attr_size > sizeof(a))
		memset((char *)attr + sizeof(a), 0, attr_size - sizeof(a));
	return 0;
}

/*
 * The largest IB MTU whose RoCE v2 packets fit the netdev's IP MTU: an IB
 * MTU of payload plus IPv6 40 (the larger IP header), UDP 8, and the
 * largest headers a packet with payload carries, BTH 12 + RETH 16 + ImmDt 4
 * (RDMA WRITE Only with Immediate), and the ICRC 4.
 */
static enum ibv_mtu prov_ib_mtu(uint32_t ip_mtu)
{
	const uint32_t overhead = 40 + 8 + 12 + 16 + 4 + 4;
	uint32_t room = ip_mtu > overhead ? ip_mtu - overhead : 0;

	if (room >= 4096)
		return IBV_MTU_4096;
	if (room >= 2048)
		return IBV_MTU_2048;
	if (room >= 1024)
		return IBV_MTU_1024;
	if (room >= 512)
		return IBV_MTU_512;
	return IBV_MTU_256;
}

/* Ethernet speed as an IB width and lane speed whose product is at or just below it. */
static void prov_ib_speed(uint32_t mbps, uint8_t *width, uint8_t *speed)
{
	static const struct {
		uint32_t mbps;
		uint8_t width, speed;
	} map[] = {
		{ 100000, 2, 32 },	/* 4X EDR */
		{ 50000, 2, 8 },	/* 4X FDR10 (40) */
		{ 25000, 1, 32 },	/* 1X EDR */
		{ 20000, 2, 2 },	/* 4X DDR */
		{ 10000, 1, 8 },	/* 1X FDR10 */
	};

	*width = 1;	/* 1X SDR: also when the speed is unknown */
	*speed = 1;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (mbps >= map[i].mbps) {
			*width = map[i].width;
			*speed = map[i].speed;
			return;
		}
}

static int prov_query_port(struct ibv_context *ctx, uint8_t port, struct ibv_port_attr *attr)
{
	struct host_link_info link;
	int ret;

	if (port != PROV_PORT_NUM)
		return EINVAL;
	ret = dp_device_link(prov_dp(ctx), &link);
	if (ret)
		return -ret;

	/*
	 * No memset: libibverbs hands over a zeroed buffer of its own
	 * sizeof(struct ibv_port_attr), which is shorter than ours when it is
	 * older than the headers we were built with (rdma-core 49 appended
	 * active_speed_ex).  Only fields every release 34..56 has are set.
	 */
	attr->state = link.up ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	attr->phys_state = link.up ? 5 : 3;	/* LinkUp : Disabled (IBA 14.2.5.6) */
	attr->max_mtu = IBV_MTU_4096;
	attr->active_mtu = prov_ib_mtu(link.mtu);
	attr->gid_tbl_len = WIRE_GID_TABLE_LEN;
	attr->port_cap_flags = IBV_PORT_IP_BASED_GIDS;
	attr->max_msg_sz = RC_MAX_MSG_SIZE;
	attr->pkey_tbl_len = 1;
	attr->max_vl_num = 1;
	prov_ib_speed(link.speed_mbps, &attr->active_width, &attr->active_speed);
	attr->link_layer = IBV_LINK_LAYER_ETHERNET;
	return 0;
}

/* ---- Asynchronous events as the application reads them ---- */

/* True once every event written about @qp was read and acknowledged. */
static bool prov_qp_events_done(struct prov_qp *qp)
{
	struct ibv_qp *ib = &qp->vqp.qp;
	unsigned reported = atomic_load(&qp->async_reported);
	bool done;

	pthread_mutex_lock(&ib->mutex);
	done = ib->events_completed == reported && reported == atomic_load(&qp->async_written);
	pthread_mutex_unlock(&ib->mutex);
	return done;
}

/* Free the destroyed QPs of @ctx whose events are done; @all: every one (the context goes). */
static void prov_reap_destroyed(struct prov_context *ctx, bool all)
{
	pthread_mutex_lock(&ctx->destroyed_lock);
	for (struct prov_qp **p = &ctx->destroyed; *p;) {
		struct prov_qp *qp = *p;

		if (!all && !prov_qp_events_done(qp)) {
			p = &qp->next_destroyed;
			continue;
		}
		*p = qp->next_destroyed;
		free(qp);
	}
	pthread_mutex_unlock(&ctx->destroyed_lock);
}

void prov_qp_release(struct prov_qp *qp)
{
	struct prov_context *ctx = to_pctx(qp->vqp.qp.context);

	if (prov_qp_events_done(qp)) {
		free(qp);
	} else {
		pthread_mutex_lock(&ctx->destroyed_lock);
		qp->next_destroyed = ctx->destroyed;
		ctx->destroyed = qp;
		pthread_mutex_unlock(&ctx->destroyed_lock);
	}
	prov_reap_destroyed(ctx, false);
}

/* Called by ibv_get_async_event() after the read: counts what destroy must wait for. */
static void prov_async_event(struct ibv_context *ctx, struct ibv_async_event *event)
{
	switch (prov_event_object(event->event_type)) {
	case PROV_EVENT_CQ:
		atomic_fetch_add(&to_pcq(event->element.cq)->async_reported, 1);
		break;
	case PROV_EVENT_QP:
		atomic_fetch_add(&to_pqp(event->element.qp)->async_reported, 1);
		/* This one waits for its acknowledgement; earlier ones may be done. */
		prov_reap_destroyed(to_pctx(ctx), false);
		break;
	case PROV_EVENT_SRQ:
		atomic_fetch_add(&to_psrq(event->element.srq)->async_reported, 1);
		break;
	case PROV_EVENT_PORT:
		break;
	}
}

void prov_wait_events_acked(pthread_mutex_t *mutex, pthread_cond_t *cond,
			    const uint32_t *completed, unsigned reported)
{
	pthread_mutex_lock(mutex);
	while (*completed != reported)
		pthread_cond_wait(cond, mutex);
	pthread_mutex_unlock(mutex);
}

/* ---- Contexts and devices ---- */

static void prov_free_context(struct ibv_context *ibctx);

/* In the newest layout; prov_register() lays it out for the running libibverbs. */
static const struct verbs_context_ops prov_ops = {
	.advise_mr = prov_advise_mr,
	.alloc_dm = prov_alloc_dm,
	.alloc_mw = prov_alloc_mw,
	.alloc_parent_domain = prov_alloc_parent_domain,
	.alloc_pd = prov_alloc_pd,
	.async_event = prov_async_event,
	.attach_mcast = prov_attach_mcast,
	.bind_mw = prov_bind_mw,
	.close_xrcd = prov_close_xrcd,
	.cq_event = prov_cq_event,
	.create_ah = prov_create_ah,
	.create_cq = prov_create_cq,
	.create_cq_ex = prov_create_cq_ex,
	.create_flow = prov_create_flow,
	.create_rwq_ind_table = prov_create_rwq_ind_table,
	.create_qp = prov_create_qp,
	.create_qp_ex = prov_create_qp_ex,
	.create_srq = prov_create_srq,
	.create_srq_ex = prov_create_srq_ex,
	.create_wq = prov_create_wq,
	.dealloc_mw = prov_dealloc_mw,
	.dealloc_pd = prov_dealloc_pd,
	.dereg_mr = prov_dereg_mr,
	.destroy_ah = prov_destroy_ah,
	.destroy_cq = prov_destroy_cq,
	.destroy_flow = prov_destroy_flow,
	.destroy_rwq_ind_table = prov_destroy_rwq_ind_table,
	.destroy_qp = prov_destroy_qp,
	.destroy_srq = prov_destroy_srq,
	.destroy_wq = prov_destroy_wq,
	.detach_mcast = prov_detach_mcast,
	.free_context = prov_free_context,
	.free_dm = prov_free_dm,
	.get_srq_num = prov_get_srq_num,
	.modify_qp = prov_modify_qp,
	.modify_srq = prov_modify_srq,
	.open_qp = prov_open_qp,
	.open_xrcd = prov_open_xrcd,
	.modify_wq = prov_modify_wq,
	.poll_cq = prov_poll_cq,
	.post_recv = prov_post_recv,
	.post_send = prov_post_send,
	.post_srq_recv = prov_post_srq_recv,
	.query_device_ex = prov_query_device_ex,
	.query_port = prov_query_port,
	.query_qp = prov_query_qp,
	.query_rt_values = prov_query_rt_values,
	.query_srq = prov_query_srq,
	.reg_dm_mr = prov_reg_dm_mr,
	.reg_mr = prov_reg_mr,
	.req_notify_cq = prov_req_notify_cq,
	.rereg_mr = prov_rereg_mr,
	.resize_cq = prov_resize_cq,
};

/* prov_ops as the running libibverbs reads it. */
static struct prov_ops_table prov_ops_native;

static struct verbs_context *prov_alloc_context(struct ibv_device *ibdev, int cmd_fd,
						void *private_data)
{
	struct prov_context *ctx;
	int pfd[2], saved_errno;

	(void)private_data;
	/* cmd_fd is /dev/full: no command ever reaches a kernel. */
	ctx = _verbs_init_and_alloc_context(ibdev, cmd_fd, sizeof(*ctx),
					    (struct verbs_context *)(uintptr_t)
						    offsetof(struct prov_context, vctx), 0);
	if (!ctx)
		return NULL;
	pthread_mutex_init(&ctx->destroyed_lock, NULL);
	if (pipe2(pfd, O_CLOEXEC))
		goto err_uninit;
	if (fcntl(pfd[1], F_SETFL, O_NONBLOCK)) {
		close(pfd[0]);
		close(pfd[1]);
		goto err_uninit;
	}
	ctx->vctx.context.async_fd = pfd[0];
	ctx->async_wfd = pfd[1];
	ctx->vctx.context.num_comp_vectors = PROV_NUM_COMP_VECTORS;

	ctx->dpl = prov_dataplane_get(ibdev);
	if (!ctx->dpl)
		goto err_close_wfd;
	pthread_mutex_lock(&ctx->dpl->ctx_lock);
	ctx->next_ctx = ctx->dpl->contexts;
	ctx->dpl->contexts = ctx;
	pthread_mutex_unlock(&ctx->dpl->ctx_lock);

	verbs_set_ops(&ctx->vctx, prov_ops_native.op);
	return &ctx->vctx;

err_close_wfd:
	close(ctx->async_wfd);
err_uninit:
	saved_errno = errno;
	verbs_uninit_context(&ctx->vctx);
	free(ctx);
	errno = saved_errno;
	return NULL;
}

static void prov_free_context(struct ibv_context *ibctx)
{
	struct prov_context *ctx = to_pctx(ibctx);
	struct prov_dataplane *dpl = ctx->dpl;

	pthread_mutex_lock(&dpl->ctx_lock);
	for (struct prov_context **p = &dpl->contexts; *p; p = &(*p)->next_ctx)
		if (*p == ctx) {
			*p = ctx->next_ctx;
			break;
		}
	pthread_mutex_unlock(&dpl->ctx_lock);
	prov_dataplane_put(dpl);
	close(ctx->async_wfd);
	verbs_uninit_context(&ctx->vctx);
	prov_reap_destroyed(ctx, true);
	pthread_mutex_destroy(&ctx->destroyed_lock);
	free(ctx);
}

static struct verbs_device *prov_alloc_device(struct verbs_sysfs_dev *sysfs_dev)
{
	struct prov_device *dev;

	(void)sysfs_dev;
	dev = calloc(1, sizeof(*dev));
	return dev ? &dev->vdev : NULL;
}

static void prov_uninit_device(struct verbs_device *vdev)
{
	free(container_of(vdev, struct prov_device, vdev));
}

/*
 * Devices are matched by the modalias `uroce link add` writes
 * (class/infiniband/<dev>/device/modalias), never by name, so any name works
 * and no other provider's device is taken.
 */
static const struct verbs_match_ent prov_match_table[] = {
	{ .u.modalias = UROCE_MODALIAS_PREFIX "*", .kind = VERBS_MATCH_MODALIAS },
	{ .kind = VERBS_MATCH_SENTINEL },
};

static const struct verbs_device_ops prov_device_ops = {
	.name = PROV_NAME,
	.match_min_abi_version = UROCE_SYSFS_ABI,
	.match_max_abi_version = UROCE_SYSFS_ABI,
	.match_table = prov_match_table,
	.alloc_device = prov_alloc_device,
	.uninit_device = prov_uninit_device,
	.alloc_context = prov_alloc_context,
};

/*
 * A provider that registered with the wrong table layout would call the
 * wrong functions, so an unknown libibverbs gets no uroce devices and one
 * line on stderr instead.
 */
__attribute__((constructor)) static void prov_register(void)
{
	char err[384];
	int ret;

	ret = prov_abi_detect(&prov_abi, err, sizeof(err));
	if (!ret)
		ret = prov_ops_convert(prov_abi.ops_layout, &prov_ops, &prov_ops_native);
	if (ret == -EOPNOTSUPP)
		snprintf(err, sizeof(err), "%s has no slot for an operation uroce implements",
			 prov_ops_layout_name(prov_abi.ops_layout));
	if (ret) {
		fprintf(stderr, PROV_NAME ": provider ABI mismatch, not registering: %s\n", err);
		return;
	}
	pthread_atfork(dataplanes_lock_for_fork, dataplanes_unlock_in_parent,
		       dataplanes_forget_in_child);
	prov_ucma_atfork();
	verbs_register_driver_34(&prov_device_ops);
}
