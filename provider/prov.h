/* SPDX-License-Identifier: MIT */
/* The provider's objects: each embeds its libibverbs base object and is reached with container_of. */
#ifndef UROCE_PROVIDER_PROV_H
#define UROCE_PROVIDER_PROV_H

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "uroce/dp.h"
#include "uroce/rc.h"
#include "verbs_abi.h"

#define PROV_NAME		"uroce"
#define PROV_PORT_NUM		1
#define PROV_NUM_COMP_VECTORS	1

/* One per device libibverbs lists (alloc_device). */
struct prov_device {
	struct verbs_device	vdev;
};

/*
 * One per device per process: every ibv_open_device() of the same device
 * shares one dataplane (one port, one engine, one QPN space).  The engine's
 * event callbacks get this as their argument.
 */
struct prov_dataplane {
	char			ibdev[IBV_SYSFS_NAME_MAX];
	_Atomic size_t		dm_used;	/* bytes of device memory allocated */
	char			ibdev_path[IBV_SYSFS_PATH_MAX];	/* its sysfs directory */
	unsigned		refs;		/* under prov_dataplanes_lock */
	pid_t			pid;		/* the process that opened it (not a child of fork) */
	struct dp_device	*dp;
	struct rc_engine	*eng;
	/*
	 * Serialises GID table syncs (ibv_open_device and IBV_EVENT_GID_CHANGE
	 * from the dataplane's thread); @ready is set once @dp and @eng are.
	 */
	pthread_mutex_t		gid_lock;
	bool			ready;
	/* Guards @contexts; taken inside engine callbacks, never held across an engine call. */
	pthread_mutex_t		ctx_lock;
	struct prov_context	*contexts;
	struct prov_dataplane	*next;
};

struct prov_context {
	struct verbs_context	vctx;
	struct prov_dataplane	*dpl;
	int			async_wfd;	/* write end of the pipe behind context.async_fd */
	struct prov_context	*next_ctx;	/* on dpl->contexts */
	/* Destroyed QPs kept while an event about them is unread or unacknowledged. */
	pthread_mutex_t		destroyed_lock;
	struct prov_qp		*destroyed;
};

/*
 * A protection domain, or a parent domain (ibv_alloc_parent_domain(3)) over
 * one: then @base is that PD, @rc is its engine PD, and the allocators (if
 * any) give QPs created on it their send and receive rings (resource types
 * RC_RING_SQ 1 and RC_RING_RQ 2).
 */
struct prov_pd {
	struct ibv_pd		ibv;
	struct rc_pd		*rc;
	struct prov_pd		*base;
	void			*(*alloc)(struct ibv_pd *pd, void *pd_context, size_t size,
					  size_t alignment, uint64_t resource_type);
	void			(*free)(struct ibv_pd *pd, void *pd_context, void *ptr,
					uint64_t resource_type);
	void			*pd_context;
	atomic_uint		users;		/* parent domains over it, QPs on it */
};

struct prov_mr {
	struct verbs_mr		vmr;
	struct rc_mr		*rc;
	struct prov_dm		*dm;		/* the device memory it covers, if any */
};

/*
 * Device memory (ibv_alloc_dm(3)): memory of this process that the device
 * hands out in 4-byte units, as a NIC's on-chip memory is; each open device
 * has PROV_MAX_DM_SIZE bytes of it in each process.
 */
struct prov_dm {
	struct ibv_dm		ibv;
	uint8_t			*buf;
	size_t			len;
	_Atomic unsigned	mrs;		/* MRs over it: it is freed only without any */
};

struct prov_channel;

struct prov_cq {
	struct verbs_cq		vcq;
	struct rc_cq		*rc;
	struct prov_channel	*chan;		/* NULL: no completion events */
	/* Events read by the application (ibv_get_cq_event / ibv_get_async_event). */
	atomic_uint		comp_reported;
	atomic_uint		async_reported;
	/* Extended poll: the completion start_poll/next_poll made current. */
	struct ibv_wc		cur;
	uint64_t		cur_stamp;	/* its completion time on the engine's clock */
	uint64_t		wc_flags;
	bool			single_threaded;
	pthread_mutex_t		poll_lock;	/* held from start_poll to end_poll */
};

/*
 * An XRC domain.  ibv_open_xrcd() of the same file (device and inode) in
 * one process gives the same domain again, counted in @opens; domains are
 * not shared between processes (each has its own engine).
 */
struct prov_xrcd {
	struct verbs_xrcd	vxrcd;
	struct rc_xrcd		*rc;
	bool			has_file;
	dev_t			dev;
	ino_t			ino;
	unsigned		opens;		/* under prov_xrcds_lock */
	struct prov_xrcd	*next;
};

struct prov_srq {
	struct verbs_srq	vsrq;
	struct rc_srq		*rc;
	atomic_uint		async_reported;
};

/* One work request built by the ibv_wr_* calls. */
struct prov_wr_slot {
	struct ibv_send_wr	wr;
	unsigned		sge_first;	/* index into prov_wr_batch.sge */
	bool			inline_copy;	/* its sges address prov_wr_batch.data offsets */
};

/*
 * Work requests gathered between ibv_wr_start() and ibv_wr_complete().
 * The arrays grow with realloc(), so pointers between them are made only
 * when the batch is posted.
 */
struct prov_wr_batch {
	struct prov_wr_slot	*slot;
	unsigned		n_slot, cap_slot;
	struct ibv_sge		*sge;
	unsigned		n_sge, cap_sge;
	uint8_t			*data;		/* copies of inline data */
	size_t			n_data, cap_data;
	int			err;		/* first error while building, positive errno */
};

struct prov_ind_table;

struct prov_qp {
	struct verbs_qp		vqp;
	struct rc_qp		*rc;
	atomic_uint		async_written;	/* events put in the context's async pipe */
	struct prov_ind_table	*ind_table;	/* an RSS QP's: held while it lives */
	atomic_uint		async_reported;
	struct prov_qp		*next_destroyed;	/* on prov_context.destroyed */
	uint64_t		send_ops;	/* IBV_QP_EX_WITH_* allowed by create_qp_ex */
	struct prov_wr_batch	batch;
	/*
	 * XRC target: a handle of ibv_open_qp() names the QP its creator owns
	 * (@owner); the creator counts those handles in @opened and is not
	 * destroyed while there are any.
	 */
	struct prov_qp		*owner;
	atomic_uint		opened;
};

static inline struct prov_context *to_pctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct prov_context, vctx.context);
}

static inline struct prov_pd *to_ppd(struct ibv_pd *pd)
{
	return container_of(pd, struct prov_pd, ibv);
}

static inline struct prov_mr *to_pmr(struct verbs_mr *vmr)
{
	return container_of(vmr, struct prov_mr, vmr);
}

static inline struct prov_cq *to_pcq(struct ibv_cq *cq)
{
	return container_of(cq, struct prov_cq, vcq.cq);
}

static inline struct prov_cq *to_pcq_ex(struct ibv_cq_ex *cq)
{
	return container_of(cq, struct prov_cq, vcq.cq_ex);
}

static inline struct prov_srq *to_psrq(struct ibv_srq *srq)
{
	return container_of(srq, struct prov_srq, vsrq.srq);
}

static inline struct prov_xrcd *to_pxrcd(struct ibv_xrcd *xrcd)
{
	return container_of(xrcd, struct prov_xrcd, vxrcd.xrcd);
}

static inline struct prov_qp *to_pqp(struct ibv_qp *qp)
{
	return container_of(qp, struct prov_qp, vqp.qp);
}

static inline struct prov_qp *to_pqp_ex(struct ibv_qp_ex *qp)
{
	return container_of(qp, struct prov_qp, vqp.qp_ex);
}

static inline struct dp_device *prov_dp(struct ibv_context *ctx)
{
	return to_pctx(ctx)->dpl->dp;
}

static inline struct rc_engine *prov_eng(struct ibv_context *ctx)
{
	return to_pctx(ctx)->dpl->eng;
}

/* Set errno from a negative errno and return NULL (create calls). */
static inline void *prov_null_errno(int neg)
{
	errno = -neg;
	return NULL;
}

/*
 * Wait until the application acknowledged every event it read for an
 * object, as ibv_destroy_qp/cq/srq document (the kernel does the same).
 */
void prov_wait_events_acked(pthread_mutex_t *mutex, pthread_cond_t *cond,
			    const uint32_t *completed, unsigned reported);
/*
 * prov_qp_release() - free a destroyed QP, or keep it while events about it
 * are still in the async pipe or read but not acknowledged.
 *
 * The kernel drops a destroyed QP's queued events; a pipe cannot, so the
 * application may still read one (UCX does, under Open MPI) and then
 * ibv_ack_async_event() locks the QP's mutex: its memory must outlive that.
 * Kept QPs are freed once done, when a later event is read or QP destroyed,
 * or with the context.
 */
void prov_qp_release(struct prov_qp *qp);

/* prov_dm.c */
#define PROV_MAX_DM_SIZE	(256 * 1024)
/* device_cap_flags_ex bit of IBA 1.5 ATOMIC WRITE (the kernel's IB_UVERBS_DEVICE_ATOMIC_WRITE). */
#define PROV_DEVICE_ATOMIC_WRITE	(1ULL << 40)
struct ibv_dm *prov_alloc_dm(struct ibv_context *ctx, struct ibv_alloc_dm_attr *attr);
int prov_free_dm(struct ibv_dm *dm);
struct ibv_mr *prov_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm, uint64_t dm_offset,
			      size_t length, unsigned int access);
void prov_dm_put(struct prov_dm *dm);

/* prov_verbs.c */
/* A handle for a new object (messages and pyverbs name objects by it); unique in the process. */
uint32_t prov_handle(void);
struct prov_mr *prov_mr_create(struct ibv_pd *pd, void *addr, size_t length, uint64_t iova,
			       int access);
struct ibv_pd *prov_alloc_pd(struct ibv_context *ctx);
int prov_dealloc_pd(struct ibv_pd *pd);
struct ibv_pd *prov_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr);
struct ibv_mr *prov_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			   uint64_t hca_va, int access);
int prov_rereg_mr(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
		  size_t length, int access);
int prov_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		   struct ibv_sge *sg_list, uint32_t num_sges);
int prov_dereg_mr(struct verbs_mr *vmr);
struct ibv_mw *prov_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int prov_dealloc_mw(struct ibv_mw *mw);
int prov_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
struct ibv_ah *prov_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr);
int prov_destroy_ah(struct ibv_ah *ah);
struct ibv_srq *prov_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *attr);
struct ibv_srq *prov_create_srq_ex(struct ibv_context *ctx, struct ibv_srq_init_attr_ex *attr);
int prov_modify_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr, int mask);
int prov_query_srq(struct ibv_srq *srq, struct ibv_srq_attr *attr);
int prov_destroy_srq(struct ibv_srq *srq);
int prov_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int prov_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
struct ibv_xrcd *prov_open_xrcd(struct ibv_context *ctx, struct ibv_xrcd_init_attr *attr);
int prov_close_xrcd(struct ibv_xrcd *xrcd);
struct ibv_qp *prov_open_qp(struct ibv_context *ctx, struct ibv_qp_open_attr *attr);
struct ibv_qp *prov_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
struct ibv_qp *prov_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *attr);
int prov_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask);
int prov_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int prov_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
int prov_query_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask,
		  struct ibv_qp_init_attr *init);
int prov_destroy_qp(struct ibv_qp *qp);
int prov_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int prov_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);

/* prov_raw.c */
/* CAP_NET_RAW in the effective set: what the kernel asks of a raw packet QP's creator. */
bool prov_may_create_raw_qp(void);
struct ibv_flow *prov_create_flow(struct ibv_qp *qp, struct ibv_flow_attr *attr);
int prov_destroy_flow(struct ibv_flow *flow);
struct ibv_wq *prov_create_wq(struct ibv_context *ctx, struct ibv_wq_init_attr *attr);
int prov_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr);
int prov_destroy_wq(struct ibv_wq *wq);
struct ibv_rwq_ind_table *prov_create_rwq_ind_table(struct ibv_context *ctx,
						    struct ibv_rwq_ind_table_init_attr *attr);
int prov_destroy_rwq_ind_table(struct ibv_rwq_ind_table *table);
/*
 * The RSS settings of an ibv_create_qp_ex() with IBV_QP_INIT_ATTR_RX_HASH and
 * _IND_TABLE, into @rss (its WQs into @wqs, 1 << RC_RSS_LOG_SIZE_MAX entries)
 * and the table into @table.  Return: 0, -EINVAL or -EOPNOTSUPP.
 */
int prov_rss_get(struct ibv_qp_init_attr_ex *attr, struct rc_qp_rss *rss, struct rc_qp **wqs,
		 struct prov_ind_table **table);
/* The CQ an RSS QP names to the engine, which has none of its own: its first WQ's. */
struct rc_cq *prov_ind_table_cq(struct prov_ind_table *table);
/* One RSS QP more (@delta 1) or fewer (-1) over @table, which cannot be destroyed while any is. */
void prov_ind_table_hold(struct prov_ind_table *table, int delta);

/* prov_cq.c */
struct ibv_cq *prov_create_cq(struct ibv_context *ctx, int cqe,
			      struct ibv_comp_channel *channel, int comp_vector);
struct ibv_cq_ex *prov_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *attr);
int prov_destroy_cq(struct ibv_cq *cq);
int prov_resize_cq(struct ibv_cq *cq, int cqe);
int prov_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int prov_query_rt_values(struct ibv_context *ctx, struct ibv_values_ex *values);
int prov_req_notify_cq(struct ibv_cq *cq, int solicited_only);
void prov_cq_event(struct ibv_cq *cq);
/* Engine callback: a completion entered an armed CQ. */
void prov_engine_cq_event(void *arg, struct rc_cq *cq, void *cq_user);

/* prov_ucma.c: the CM's counter names for dp_open_args.extra_names. */
const char *const *prov_ucma_counter_names(void);
/* prov_ucma.c: a child of fork() forgets the parent's rdma_cm state (pthread_atfork). */
void prov_ucma_atfork(void);

/* prov_qp_ex.c */
/* Check @send_ops_flags against what @type carries and install the ibv_wr_* functions; -EOPNOTSUPP for an op we lack. */
int prov_qp_ex_init(struct prov_qp *qp, enum ibv_qp_type type, uint64_t send_ops_flags);
void prov_qp_ex_fini(struct prov_qp *qp);

#endif
