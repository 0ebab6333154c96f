// SPDX-License-Identifier: MIT
/* The provider's operations table laid out as each libibverbs release with IBVERBS_PRIVATE_34 reads it. */
#include <errno.h>
#include <string.h>

#include "prov_abi.h"

/*
 * Operations that not every layout has.  rdma-core keeps the table sorted
 * by name, so an operation added later sits among the older ones and moves
 * every later entry down by one; older layouts are the newest one with
 * these removed.
 */
static const struct {
	size_t			index;	/* in the newest layout (verbs_abi.h) */
	enum prov_ops_layout	since;
} prov_late_ops[] = {
	{ VERBS_OPS_INDEX(import_dm), PROV_OPS_RDMA_CORE_35 },
	{ VERBS_OPS_INDEX(query_qp_data_in_order), PROV_OPS_RDMA_CORE_36 },
	{ VERBS_OPS_INDEX(unimport_dm), PROV_OPS_RDMA_CORE_35 },
};

static const char *const prov_layout_names[PROV_OPS_LAYOUT_COUNT] = {
	[PROV_OPS_RDMA_CORE_34] = "rdma-core 34",
	[PROV_OPS_RDMA_CORE_35] = "rdma-core 35",
	[PROV_OPS_RDMA_CORE_36] = "rdma-core 36..56",
};

const char *prov_ops_layout_name(enum prov_ops_layout layout)
{
	return (unsigned)layout < PROV_OPS_LAYOUT_COUNT ? prov_layout_names[layout] : "unknown";
}

static bool prov_op_in_layout(size_t index, enum prov_ops_layout layout)
{
	for (size_t i = 0; i < sizeof(prov_late_ops) / sizeof(prov_late_ops[0]); i++)
		if (prov_late_ops[i].index == index)
			return layout >= prov_late_ops[i].since;
	return true;
}

unsigned prov_ops_layout_count(enum prov_ops_layout layout)
{
	unsigned n = 0;

	for (size_t i = 0; i < VERBS_OPS_COUNT; i++)
		n += prov_op_in_layout(i, layout);
	return n;
}

int prov_ops_convert(enum prov_ops_layout layout, const struct verbs_context_ops *ops,
		     struct prov_ops_table *out)
{
	prov_op_fn newest[VERBS_OPS_COUNT];

	if ((unsigned)layout >= PROV_OPS_LAYOUT_COUNT)
		return -EINVAL;
	/* Every member is a function pointer: the struct is an array of them. */
	memcpy(newest, ops, sizeof(newest));
	memset(out, 0, sizeof(*out));
	for (size_t i = 0; i < VERBS_OPS_COUNT; i++) {
		if (prov_op_in_layout(i, layout))
			out->op[out->count++] = newest[i];
		else if (newest[i])
			return -EOPNOTSUPP;
	}
	return 0;
}
