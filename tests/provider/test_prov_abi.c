// SPDX-License-Identifier: MIT
/* The provider's operations table as rdma-core 34, 35 and 36..56 lay out struct verbs_context_ops. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "prov_abi.h"
#include "suites.h"

#define NA SIZE_MAX

/*
 * One row per operation, in the order of rdma-core 36..56's declaration,
 * with its byte offset in each layout (NA: the release has no such
 * operation), read off libibverbs/driver.h of v34.0, v35.0, v36.0 and
 * v56.0.  @decl is where verbs_abi.h puts it.
 */
static const struct op_row {
	const char	*name;
	size_t		decl;
	size_t		off[PROV_OPS_LAYOUT_COUNT];
} op_rows[] = {
#define OP(name, o34, o35, o36) \
	{ #name, offsetof(struct verbs_context_ops, name), { o34, o35, o36 } }
	OP(advise_mr,                    0,    0,    0),
	OP(alloc_dm,                     8,    8,    8),
	OP(alloc_mw,                    16,   16,   16),
	OP(alloc_null_mr,               24,   24,   24),
	OP(alloc_parent_domain,         32,   32,   32),
	OP(alloc_pd,                    40,   40,   40),
	OP(alloc_td,                    48,   48,   48),
	OP(async_event,                 56,   56,   56),
	OP(attach_counters_point_flow,  64,   64,   64),
	OP(attach_mcast,                72,   72,   72),
	OP(bind_mw,                     80,   80,   80),
	OP(close_xrcd,                  88,   88,   88),
	OP(cq_event,                    96,   96,   96),
	OP(create_ah,                  104,  104,  104),
	OP(create_counters,            112,  112,  112),
	OP(create_cq,                  120,  120,  120),
	OP(create_cq_ex,               128,  128,  128),
	OP(create_flow,                136,  136,  136),
	OP(create_flow_action_esp,     144,  144,  144),
	OP(create_qp,                  152,  152,  152),
	OP(create_qp_ex,               160,  160,  160),
	OP(create_rwq_ind_table,       168,  168,  168),
	OP(create_srq,                 176,  176,  176),
	OP(create_srq_ex,              184,  184,  184),
	OP(create_wq,                  192,  192,  192),
	OP(dealloc_mw,                 200,  200,  200),
	OP(dealloc_pd,                 208,  208,  208),
	OP(dealloc_td,                 216,  216,  216),
	OP(dereg_mr,                   224,  224,  224),
	OP(destroy_ah,                 232,  232,  232),
	OP(destroy_counters,           240,  240,  240),
	OP(destroy_cq,                 248,  248,  248),
	OP(destroy_flow,               256,  256,  256),
	OP(destroy_flow_action,        264,  264,  264),
	OP(destroy_qp,                 272,  272,  272),
	OP(destroy_rwq_ind_table,      280,  280,  280),
	OP(destroy_srq,                288,  288,  288),
	OP(destroy_wq,                 296,  296,  296),
	OP(detach_mcast,               304,  304,  304),
	OP(free_context,               312,  312,  312),
	OP(free_dm,                    320,  320,  320),
	OP(get_srq_num,                328,  328,  328),
	OP(import_dm,                   NA,  336,  336),
	OP(import_mr,                  336,  344,  344),
	OP(import_pd,                  344,  352,  352),
	OP(modify_cq,                  352,  360,  360),
	OP(modify_flow_action_esp,     360,  368,  368),
	OP(modify_qp,                  368,  376,  376),
	OP(modify_qp_rate_limit,       376,  384,  384),
	OP(modify_srq,                 384,  392,  392),
	OP(modify_wq,                  392,  400,  400),
	OP(open_qp,                    400,  408,  408),
	OP(open_xrcd,                  408,  416,  416),
	OP(poll_cq,                    416,  424,  424),
	OP(post_recv,                  424,  432,  432),
	OP(post_send,                  432,  440,  440),
	OP(post_srq_ops,               440,  448,  448),
	OP(post_srq_recv,              448,  456,  456),
	OP(query_device_ex,            456,  464,  464),
	OP(query_ece,                  464,  472,  472),
	OP(query_port,                 472,  480,  480),
	OP(query_qp,                   480,  488,  488),
	OP(query_qp_data_in_order,      NA,   NA,  496),
	OP(query_rt_values,            488,  496,  504),
	OP(query_srq,                  496,  504,  512),
	OP(read_counters,              504,  512,  520),
	OP(reg_dm_mr,                  512,  520,  528),
	OP(reg_dmabuf_mr,              520,  528,  536),
	OP(reg_mr,                     528,  536,  544),
	OP(req_notify_cq,              536,  544,  552),
	OP(rereg_mr,                   544,  552,  560),
	OP(resize_cq,                  552,  560,  568),
	OP(set_ece,                    560,  568,  576),
	OP(unimport_dm,                 NA,  576,  584),
	OP(unimport_mr,                568,  584,  592),
	OP(unimport_pd,                576,  592,  600),
#undef OP
};

#define N_ROWS (sizeof(op_rows) / sizeof(op_rows[0]))

static const unsigned layout_ops[PROV_OPS_LAYOUT_COUNT] = { 73, 75, 76 };

static const struct op_row *row_of(const char *name)
{
	for (size_t r = 0; r < N_ROWS; r++)
		if (!strcmp(op_rows[r].name, name))
			return &op_rows[r];
	ck_abort_msg("no operation %s", name);
	return NULL;
}

/* A value no real function has, distinct per row. */
static prov_op_fn sentinel(size_t row)
{
	return (prov_op_fn)(uintptr_t)(0x10000 + 16 * row);
}

/* A newest-layout table with every operation @layout has set to its sentinel. */
static void fill_for(enum prov_ops_layout layout, struct verbs_context_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	for (size_t r = 0; r < N_ROWS; r++) {
		prov_op_fn fn = sentinel(r);

		if (op_rows[r].off[layout] != NA)
			memcpy((unsigned char *)ops + op_rows[r].decl, &fn, sizeof(fn));
	}
}

START_TEST(declaration_is_rdma_core_36)
{
	ck_assert_uint_eq(N_ROWS, VERBS_OPS_COUNT);
	ck_assert_uint_eq(sizeof(struct verbs_context_ops), N_ROWS * sizeof(prov_op_fn));
	for (size_t r = 0; r < N_ROWS; r++) {
		ck_assert_msg(op_rows[r].decl == op_rows[r].off[PROV_OPS_RDMA_CORE_36],
			      "%s declared at %zu, rdma-core 36 has it at %zu", op_rows[r].name,
			      op_rows[r].decl, op_rows[r].off[PROV_OPS_RDMA_CORE_36]);
	}
}
END_TEST

START_TEST(layout_counts)
{
	for (int l = 0; l < PROV_OPS_LAYOUT_COUNT; l++) {
		unsigned present = 0;

		for (size_t r = 0; r < N_ROWS; r++)
			present += op_rows[r].off[l] != NA;
		ck_assert_uint_eq(present, layout_ops[l]);
		ck_assert_uint_eq(prov_ops_layout_count(l), layout_ops[l]);
	}
}
END_TEST

/* Every operation lands at the offset the release reads it from, and nothing else is set. */
START_TEST(convert_places_every_op)
{
	enum prov_ops_layout layout = _i;
	struct verbs_context_ops ops;
	struct prov_ops_table out;
	bool seen[VERBS_OPS_COUNT] = { false };

	fill_for(layout, &ops);
	memset(&out, 0xa5, sizeof(out));
	ck_assert_int_eq(prov_ops_convert(layout, &ops, &out), 0);
	ck_assert_uint_eq(out.count, layout_ops[layout]);
	for (size_t r = 0; r < N_ROWS; r++) {
		size_t off = op_rows[r].off[layout];

		if (off == NA)
			continue;
		ck_assert_msg(out.op[off / sizeof(prov_op_fn)] == sentinel(r),
			      "%s: %s is not at offset %zu", prov_ops_layout_name(layout),
			      op_rows[r].name, off);
		seen[off / sizeof(prov_op_fn)] = true;
	}
	for (unsigned i = 0; i < VERBS_OPS_COUNT; i++) {
		if (!seen[i])
			ck_assert_ptr_null(out.op[i]);
	}
}
END_TEST

/* A NULL operation stays NULL (libibverbs keeps its "not supported" stub). */
START_TEST(convert_keeps_null)
{
	enum prov_ops_layout layout = _i;
	struct verbs_context_ops ops = { 0 };
	struct prov_ops_table out;

	ops.poll_cq = (int (*)(struct ibv_cq *, int, struct ibv_wc *))sentinel(1);
	ck_assert_int_eq(prov_ops_convert(layout, &ops, &out), 0);
	for (unsigned i = 0; i < out.count; i++) {
		if (i == row_of("poll_cq")->off[layout] / sizeof(prov_op_fn))
			ck_assert(out.op[i] == sentinel(1));
		else
			ck_assert_ptr_null(out.op[i]);
	}
}
END_TEST

/* An operation the release has no slot for is refused, not dropped silently. */
START_TEST(convert_refuses_missing_slot)
{
	struct verbs_context_ops ops = { 0 };
	struct prov_ops_table out;

	ops.import_dm = (struct ibv_dm * (*)(struct ibv_context *, uint32_t))sentinel(2);
	ck_assert_int_eq(prov_ops_convert(PROV_OPS_RDMA_CORE_34, &ops, &out), -EOPNOTSUPP);
	ck_assert_int_eq(prov_ops_convert(PROV_OPS_RDMA_CORE_35, &ops, &out), 0);
	ck_assert(out.op[row_of("import_dm")->off[PROV_OPS_RDMA_CORE_35] / sizeof(prov_op_fn)] ==
		  sentinel(2));

	memset(&ops, 0, sizeof(ops));
	ops.query_qp_data_in_order =
		(int (*)(struct ibv_qp *, enum ibv_wr_opcode, uint32_t))sentinel(3);
	ck_assert_int_eq(prov_ops_convert(PROV_OPS_RDMA_CORE_35, &ops, &out), -EOPNOTSUPP);
	ck_assert_int_eq(prov_ops_convert(PROV_OPS_RDMA_CORE_36, &ops, &out), 0);
	ck_assert(out.op[row_of("query_qp_data_in_order")->off[PROV_OPS_RDMA_CORE_36] /
			 sizeof(prov_op_fn)] == sentinel(3));
	ck_assert_int_eq(prov_ops_convert(PROV_OPS_LAYOUT_COUNT, &ops, &out), -EINVAL);
}
END_TEST

/* verbs_qp's comp_mask candidates: after 20, 21 or 22 wr_* operations (rdma-core 34..43, 44, 45..56). */
START_TEST(qp_comp_mask_room)
{
	ck_assert_uint_eq(offsetof(struct ibv_qp_ex, wr_abort) + sizeof(prov_op_fn),
			  VERBS_QP_EX_SIZE_34);
	/* The largest candidate still has room for comp_mask and the xrcd pointer. */
	ck_assert_uint_ge(sizeof(struct verbs_qp),
			  VERBS_QP_EX_SIZE_34 + VERBS_QP_EX_LATE_OPS * sizeof(prov_op_fn) +
				  sizeof(uint64_t) + sizeof(void *));
	ck_assert_uint_ge(sizeof(struct verbs_qp), sizeof(struct ibv_qp_ex));
}
END_TEST

Suite *prov_abi_suite(void)
{
	Suite *s = suite_create("prov_abi");
	TCase *tc = tcase_create("layout");

	tcase_add_test(tc, declaration_is_rdma_core_36);
	tcase_add_test(tc, layout_counts);
	tcase_add_loop_test(tc, convert_places_every_op, 0, PROV_OPS_LAYOUT_COUNT);
	tcase_add_loop_test(tc, convert_keeps_null, 0, PROV_OPS_LAYOUT_COUNT);
	tcase_add_test(tc, convert_refuses_missing_slot);
	tcase_add_test(tc, qp_comp_mask_room);
	suite_add_tcase(s, tc);
	return s;
}
