/* SPDX-License-Identifier: MIT */
/* Our own declarations of libibverbs' private provider ABI, IBVERBS_PRIVATE_34 (rdma-core 34..56). */
#ifndef UROCE_PROVIDER_VERBS_ABI_H
#define UROCE_PROVIDER_VERBS_ABI_H

/*
 * libibverbs does not install the header that describes how a provider
 * plugs in (rdma-core's libibverbs/driver.h): that interface is private and
 * versioned by the symbol version IBVERBS_PRIVATE_<N>.  rdma-core 34 to 56
 * all export IBVERBS_PRIVATE_34 and meson refuses to build against
 * anything else.  Within that range two things moved, and the provider
 * adapts to the library it runs in (prov_abi.h):
 * - struct verbs_context_ops: 73 operations in 34, 75 in 35 (import_dm,
 *   unimport_dm), 76 from 36 (query_qp_data_in_order).  The declaration
 *   below is the newest; prov_ops_convert() lays it out for older ones.
 * - struct verbs_qp: its comp_mask follows the public struct ibv_qp_ex,
 *   which grew in 44 (wr_atomic_write) and 45 (wr_flush).
 * Everything else declared here is the same in every release 34..56.
 *
 * Only what uroce uses is declared; the layouts were written from reading
 * rdma-core's headers and are pinned by the _Static_asserts at the end.
 */

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <infiniband/verbs.h>

/* The version string of the private ABI, for messages. */
#define VERBS_PRIVATE_ABI "IBVERBS_PRIVATE_34"

/* An rdma device found in sysfs; only handled through pointers. */
struct verbs_sysfs_dev;

/* Entry of a provider's match table (rdma-core enum: kind). */
enum {
	VERBS_MATCH_SENTINEL	= 0,
	VERBS_MATCH_PCI		= 1,
	VERBS_MATCH_MODALIAS	= 2,
	VERBS_MATCH_DRIVER_ID	= 3,
};

struct verbs_match_ent {
	void		*driver_data;
	union {
		const char	*modalias;	/* fnmatch() pattern */
		uint64_t	driver_id;
	} u;
	uint16_t	vendor;
	uint16_t	device;
	uint8_t		kind;
};

/* The list links libibverbs keeps its devices on (ccan/list). */
struct verbs_list_node {
	struct verbs_list_node	*next;
	struct verbs_list_node	*prev;
};

struct verbs_device;
struct verbs_context;

/* What a provider registers with verbs_register_driver_34(). */
struct verbs_device_ops {
	const char			*name;
	uint32_t			match_min_abi_version;
	uint32_t			match_max_abi_version;
	const struct verbs_match_ent	*match_table;
	const struct verbs_device_ops	**static_providers;
	bool				(*match_device)(struct verbs_sysfs_dev *sysfs_dev);
	struct verbs_context		*(*alloc_context)(struct ibv_device *device,
							  int cmd_fd, void *private_data);
	struct verbs_context		*(*import_context)(struct ibv_device *device,
							   int cmd_fd);
	struct verbs_device		*(*alloc_device)(struct verbs_sysfs_dev *sysfs_dev);
	void				(*uninit_device)(struct verbs_device *device);
};

/*
 * A device as libibverbs lists it.  The provider allocates it (embedded in
 * its own device object) in alloc_device; libibverbs fills every field.
 */
struct verbs_device {
	struct ibv_device		device;		/* must be first */
	const struct verbs_device_ops	*ops;
	atomic_int			refcount;
	struct verbs_list_node		entry;
	struct verbs_sysfs_dev		*sysfs;
	uint64_t			core_support;
};

/* Memory region wrapper: libibverbs reads mr_type and access in ibv_dereg_mr/ibv_rereg_mr. */
enum verbs_mr_type {
	VERBS_MR_TYPE_MR,
	VERBS_MR_TYPE_NULL_MR,
	VERBS_MR_TYPE_IMPORTED_MR,
	VERBS_MR_TYPE_DMABUF_MR,
};

struct verbs_mr {
	struct ibv_mr		ibv_mr;
	enum verbs_mr_type	mr_type;
	int			access;
};

struct verbs_xrcd {
	struct ibv_xrcd		xrcd;
	uint32_t		comp_mask;
	uint32_t		handle;
};

/* ibv_qp_to_qp_ex() returns &qp_ex only when comp_mask has VERBS_QP_EX. */
enum {
	VERBS_QP_XRCD	= 1 << 0,
	VERBS_QP_EX	= 1 << 1,
};

/* struct ibv_qp_ex up to wr_abort, its last member in rdma-core 34..43. */
#define VERBS_QP_EX_SIZE_34	(offsetof(struct ibv_qp_ex, wr_abort) + sizeof(void (*)(void)))
/* wr_* operations appended since (wr_atomic_write in 44, wr_flush in 45). */
#define VERBS_QP_EX_LATE_OPS	2

/*
 * libibverbs' verbs_qp is { union { ibv_qp; ibv_qp_ex; }; uint32_t
 * comp_mask; struct verbs_xrcd *xrcd; }, so comp_mask sits at the running
 * library's sizeof(struct ibv_qp_ex).  The provider reserves room for the
 * largest and sets comp_mask through prov_abi_qp_set_ex(); it never sets
 * the late wr_* operations, whose slots are comp_mask in older releases.
 */
struct verbs_qp {
	union {
		struct ibv_qp		qp;
		struct ibv_qp_ex	qp_ex;
		unsigned char		room[VERBS_QP_EX_SIZE_34 +
					     VERBS_QP_EX_LATE_OPS * sizeof(void (*)(void)) +
					     sizeof(uint64_t) + sizeof(void *)];
	};
};

struct verbs_cq {
	union {
		struct ibv_cq		cq;
		struct ibv_cq_ex	cq_ex;
	};
};

struct verbs_srq {
	struct ibv_srq		srq;
	enum ibv_srq_type	srq_type;
	struct verbs_xrcd	*xrcd;
	struct ibv_cq		*cq;
	uint32_t		srq_num;
};

/*
 * Every operation a provider can implement, in libibverbs' order (sorted by
 * name).  NULL entries fall back to libibverbs' "not supported" stubs.
 */
struct verbs_context_ops {
	int (*advise_mr)(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
			 uint32_t flags, struct ibv_sge *sg_list, uint32_t num_sges);
	struct ibv_dm *(*alloc_dm)(struct ibv_context *context,
				   struct ibv_alloc_dm_attr *attr);
	struct ibv_mw *(*alloc_mw)(struct ibv_pd *pd, enum ibv_mw_type type);
	struct ibv_mr *(*alloc_null_mr)(struct ibv_pd *pd);
	struct ibv_pd *(*alloc_parent_domain)(struct ibv_context *context,
					      struct ibv_parent_domain_init_attr *attr);
	struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
	struct ibv_td *(*alloc_td)(struct ibv_context *context,
				   struct ibv_td_init_attr *init_attr);
	void (*async_event)(struct ibv_context *context, struct ibv_async_event *event);
	int (*attach_counters_point_flow)(struct ibv_counters *counters,
					  struct ibv_counter_attach_attr *attr,
					  struct ibv_flow *flow);
	int (*attach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
	int (*bind_mw)(struct ibv_qp *qp, struct ibv_mw *mw, struct ibv_mw_bind *mw_bind);
	int (*close_xrcd)(struct ibv_xrcd *xrcd);
	void (*cq_event)(struct ibv_cq *cq);
	struct ibv_ah *(*create_ah)(struct ibv_pd *pd, struct ibv_ah_attr *attr);
	struct ibv_counters *(*create_counters)(struct ibv_context *context,
						struct ibv_counters_init_attr *init_attr);
	struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe,
				    struct ibv_comp_channel *channel, int comp_vector);
	struct ibv_cq_ex *(*create_cq_ex)(struct ibv_context *context,
					  struct ibv_cq_init_attr_ex *init_attr);
	struct ibv_flow *(*create_flow)(struct ibv_qp *qp, struct ibv_flow_attr *flow_attr);
	struct ibv_flow_action *(*create_flow_action_esp)(struct ibv_context *context,
							  struct ibv_flow_action_esp_attr *attr);
	struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
	struct ibv_qp *(*create_qp_ex)(struct ibv_context *context,
				       struct ibv_qp_init_attr_ex *qp_init_attr_ex);
	struct ibv_rwq_ind_table *(*create_rwq_ind_table)(struct ibv_context *context,
							  struct ibv_rwq_ind_table_init_attr *init_attr);
	struct ibv_srq *(*create_srq)(struct ibv_pd *pd,
				      struct ibv_srq_init_attr *srq_init_attr);
	struct ibv_srq *(*create_srq_ex)(struct ibv_context *context,
					 struct ibv_srq_init_attr_ex *srq_init_attr_ex);
	struct ibv_wq *(*create_wq)(struct ibv_context *context,
				    struct ibv_wq_init_attr *wq_init_attr);
	int (*dealloc_mw)(struct ibv_mw *mw);
	int (*dealloc_pd)(struct ibv_pd *pd);
	int (*dealloc_td)(struct ibv_td *td);
	int (*dereg_mr)(struct verbs_mr *vmr);
	int (*destroy_ah)(struct ibv_ah *ah);
	int (*destroy_counters)(struct ibv_counters *counters);
	int (*destroy_cq)(struct ibv_cq *cq);
	int (*destroy_flow)(struct ibv_flow *flow);
	int (*destroy_flow_action)(struct ibv_flow_action *action);
	int (*destroy_qp)(struct ibv_qp *qp);
	int (*destroy_rwq_ind_table)(struct ibv_rwq_ind_table *rwq_ind_table);
	int (*destroy_srq)(struct ibv_srq *srq);
	int (*destroy_wq)(struct ibv_wq *wq);
	int (*detach_mcast)(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid);
	void (*free_context)(struct ibv_context *context);
	int (*free_dm)(struct ibv_dm *dm);
	int (*get_srq_num)(struct ibv_srq *srq, uint32_t *srq_num);
	struct ibv_dm *(*import_dm)(struct ibv_context *context, uint32_t dm_handle);
	struct ibv_mr *(*import_mr)(struct ibv_pd *pd, uint32_t mr_handle);
	struct ibv_pd *(*import_pd)(struct ibv_context *context, uint32_t pd_handle);
	int (*modify_cq)(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
	int (*modify_flow_action_esp)(struct ibv_flow_action *action,
				      struct ibv_flow_action_esp_attr *attr);
	int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
	int (*modify_qp_rate_limit)(struct ibv_qp *qp, struct ibv_qp_rate_limit_attr *attr);
	int (*modify_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr,
			  int srq_attr_mask);
	int (*modify_wq)(struct ibv_wq *wq, struct ibv_wq_attr *wq_attr);
	struct ibv_qp *(*open_qp)(struct ibv_context *context, struct ibv_qp_open_attr *attr);
	struct ibv_xrcd *(*open_xrcd)(struct ibv_context *context,
				      struct ibv_xrcd_init_attr *xrcd_init_attr);
	int (*poll_cq)(struct ibv_cq *cq, int num_entries, struct ibv_wc *wc);
	int (*post_recv)(struct ibv_qp *qp, struct ibv_recv_wr *wr,
			 struct ibv_recv_wr **bad_wr);
	int (*post_send)(struct ibv_qp *qp, struct ibv_send_wr *wr,
			 struct ibv_send_wr **bad_wr);
	int (*post_srq_ops)(struct ibv_srq *srq, struct ibv_ops_wr *op,
			    struct ibv_ops_wr **bad_op);
	int (*post_srq_recv)(struct ibv_srq *srq, struct ibv_recv_wr *recv_wr,
			     struct ibv_recv_wr **bad_recv_wr);
	int (*query_device_ex)(struct ibv_context *context,
			       const struct ibv_query_device_ex_input *input,
			       struct ibv_device_attr_ex *attr, size_t attr_size);
	int (*query_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	int (*query_port)(struct ibv_context *context, uint8_t port_num,
			  struct ibv_port_attr *port_attr);
	int (*query_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask,
			struct ibv_qp_init_attr *init_attr);
	int (*query_qp_data_in_order)(struct ibv_qp *qp, enum ibv_wr_opcode op,
				      uint32_t flags);
	int (*query_rt_values)(struct ibv_context *context, struct ibv_values_ex *values);
	int (*query_srq)(struct ibv_srq *srq, struct ibv_srq_attr *srq_attr);
	int (*read_counters)(struct ibv_counters *counters, uint64_t *counters_value,
			     uint32_t ncounters, uint32_t flags);
	struct ibv_mr *(*reg_dm_mr)(struct ibv_pd *pd, struct ibv_dm *dm,
				    uint64_t dm_offset, size_t length, unsigned int access);
	struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length,
					uint64_t iova, int fd, int access);
	struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length,
				 uint64_t hca_va, int access);
	int (*req_notify_cq)(struct ibv_cq *cq, int solicited_only);
	int (*rereg_mr)(struct verbs_mr *vmr, int flags, struct ibv_pd *pd, void *addr,
			size_t length, int access);
	int (*resize_cq)(struct ibv_cq *cq, int cqe);
	int (*set_ece)(struct ibv_qp *qp, struct ibv_ece *ece);
	void (*unimport_dm)(struct ibv_dm *dm);
	void (*unimport_mr)(struct ibv_mr *mr);
	void (*unimport_pd)(struct ibv_pd *pd);
};

/* ---- Functions libibverbs exports with version IBVERBS_PRIVATE_34 ---- */

/* The symbol name carries the ABI number so a mismatched library cannot bind. */
void verbs_register_driver_34(const struct verbs_device_ops *ops);

/*
 * Allocate (calloc, released with free()) a provider context of
 * @alloc_size bytes whose struct verbs_context sits at the offset given by
 * the value of @context_offset, and initialise it: takes ownership of
 * @cmd_fd (closed on failure and by verbs_uninit_context()), sets async_fd
 * to -1 and installs libibverbs' "not supported" operations.
 * Return: the context, or NULL with errno set.
 */
void *_verbs_init_and_alloc_context(struct ibv_device *device, int cmd_fd, size_t alloc_size,
				    struct verbs_context *context_offset, uint32_t driver_id);
/* Closes cmd_fd and async_fd and drops the device reference. */
void verbs_uninit_context(struct verbs_context *context);
/*
 * Install the provider's operations; NULL entries are left as they are.
 * libibverbs reads @ops as its own struct verbs_context_ops, so it must be
 * a table in the running library's layout (prov_ops_convert()).
 */
void verbs_set_ops(struct verbs_context *vctx, const void *ops);

/* ---- Layout pins (x86-64 and every LP64 target) ---- */

#define VERBS_OPS_INDEX(member) \
	(offsetof(struct verbs_context_ops, member) / sizeof(void (*)(void)))
/* Operations in the newest layout (rdma-core 36..56). */
#define VERBS_OPS_COUNT 76

_Static_assert(sizeof(struct verbs_context_ops) == VERBS_OPS_COUNT * sizeof(void (*)(void)),
	       "verbs_context_ops must hold the 76 operations of rdma-core 36..56");
_Static_assert(VERBS_OPS_INDEX(cq_event) == 12, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(free_context) == 39, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(import_dm) == 42, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(poll_cq) == 53, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(query_device_ex) == 58, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(query_qp_data_in_order) == 62, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(reg_mr) == 68, "verbs_context_ops order");
_Static_assert(VERBS_OPS_INDEX(unimport_pd) == 75, "verbs_context_ops order");

#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(struct verbs_match_ent) == 24, "verbs_match_ent layout");
_Static_assert(offsetof(struct verbs_match_ent, kind) == 20, "verbs_match_ent layout");
_Static_assert(sizeof(struct verbs_device_ops) == 72, "verbs_device_ops layout");
_Static_assert(offsetof(struct verbs_device_ops, alloc_context) == 40, "verbs_device_ops layout");
_Static_assert(offsetof(struct verbs_device_ops, uninit_device) == 64, "verbs_device_ops layout");
_Static_assert(offsetof(struct verbs_device, ops) == sizeof(struct ibv_device),
	       "verbs_device layout");
_Static_assert(offsetof(struct verbs_device, entry) == sizeof(struct ibv_device) + 16,
	       "verbs_device layout");
_Static_assert(sizeof(struct verbs_device) == sizeof(struct ibv_device) + 48,
	       "verbs_device layout");
_Static_assert(offsetof(struct verbs_mr, mr_type) == sizeof(struct ibv_mr), "verbs_mr layout");
_Static_assert(sizeof(struct verbs_mr) == sizeof(struct ibv_mr) + 8, "verbs_mr layout");
_Static_assert(VERBS_QP_EX_SIZE_34 == 344, "ibv_qp_ex of rdma-core 34..43");
_Static_assert(sizeof(struct ibv_qp_ex) >= VERBS_QP_EX_SIZE_34 &&
	       sizeof(struct ibv_qp_ex) <= VERBS_QP_EX_SIZE_34 + VERBS_QP_EX_LATE_OPS * 8,
	       "ibv_qp_ex of rdma-core 34..56");
_Static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex embeds ibv_qp first");
_Static_assert(offsetof(struct verbs_cq, cq_ex) == 0 && offsetof(struct verbs_cq, cq) == 0,
	       "verbs_cq layout");
#endif

#endif
