/* SPDX-License-Identifier: MIT */
/* Which rdma-core 34..56 the provider runs in, and its operations table in that release's layout. */
#ifndef UROCE_PROVIDER_PROV_ABI_H
#define UROCE_PROVIDER_PROV_ABI_H

#include <stddef.h>

#include "verbs_abi.h"

/*
 * Layouts of struct verbs_context_ops among the libibverbs releases that
 * export IBVERBS_PRIVATE_34.  libibverbs' verbs_set_ops() reads the table a
 * provider hands it with its own declaration, so the provider must hand
 * over the layout of the library it runs in, not the one it was built with.
 */
enum prov_ops_layout {
	PROV_OPS_RDMA_CORE_34,	/* 73 operations (rdma-core 34) */
	PROV_OPS_RDMA_CORE_35,	/* 75: + import_dm, unimport_dm (rdma-core 35) */
	PROV_OPS_RDMA_CORE_36,	/* 76: + query_qp_data_in_order (rdma-core 36..56) */
	PROV_OPS_LAYOUT_COUNT
};

typedef void (*prov_op_fn)(void);

/* An operations table in some libibverbs' layout: op[0..count-1] are used. */
struct prov_ops_table {
	prov_op_fn	op[VERBS_OPS_COUNT];
	unsigned	count;
};

/* "rdma-core 34", ... */
const char *prov_ops_layout_name(enum prov_ops_layout layout);

/* Number of operations in @layout's verbs_context_ops. */
unsigned prov_ops_layout_count(enum prov_ops_layout layout);

/**
 * prov_ops_convert() - lay out an operations table for a libibverbs release
 * @layout: the layout of the libibverbs the table is for
 * @ops: the table as verbs_abi.h declares it (the newest layout)
 * @out: receives @ops' entries at the positions @layout has for them
 *
 * Return: 0, or -EOPNOTSUPP when @ops sets an operation @layout does not
 * have (libibverbs would have no slot for it and the caller must not
 * pretend it is installed).
 */
int prov_ops_convert(enum prov_ops_layout layout, const struct verbs_context_ops *ops,
		     struct prov_ops_table *out);

/* What the running libibverbs is, found once when the provider loads. */
struct prov_abi {
	enum prov_ops_layout	ops_layout;
	/* Where libibverbs' ibv_qp_to_qp_ex() reads verbs_qp's comp_mask. */
	size_t			qp_comp_mask_offset;
	char			library[256];	/* file libibverbs was loaded from */
};

/**
 * prov_abi_detect() - find the running libibverbs' provider ABI layout
 * @abi: filled on success
 * @err: on failure, one line saying why
 * @errlen: size of @err
 *
 * The operations table: rdma-core 35 added ibv_import_dm@IBVERBS_1.13 with
 * the import_dm/unimport_dm operations and 36 added
 * ibv_query_qp_data_in_order@IBVERBS_1.14 with its operation, so the
 * versioned symbols libibverbs exports (dlvsym) name the layout.  The
 * comp_mask offset is asked of libibverbs itself: ibv_qp_to_qp_ex() is
 * given a probe whose only set word is at one candidate offset.
 *
 * Return: 0, or -ENOTSUP with @err set.
 */
int prov_abi_detect(struct prov_abi *abi, char *err, size_t errlen);

/* The provider's view, set by its constructor. */
extern struct prov_abi prov_abi;

/* Mark @vqp as an extended QP where the running libibverbs looks for it. */
void prov_abi_qp_set_ex(struct verbs_qp *vqp);

#endif
