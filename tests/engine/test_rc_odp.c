// SPDX-License-Identifier: MIT
/* On-demand paging over the simulated link: ODP regions explicit and implicit, accesses to unmapped memory, prefetch. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine_harness.h"
#include "port_sim.h"
#include "suites.h"

#define RUN_NS 1000000000ull
#define ODP_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
		 IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ON_DEMAND)

/* The implicit region of @side, or an explicit one over its pair buffer. */
static struct rc_mr *odp_mr(struct h_pair *p, int side, bool implicit)
{
	struct rc_mr *mr = implicit ?
		rc_mr_reg(p->e.pd[side], NULL, SIZE_MAX, 0, ODP_ALL) :
		rc_mr_reg(p->e.pd[side], p->buf[side], H_BUF_LEN, (uintptr_t)p->buf[side], ODP_ALL);

	ck_assert_ptr_nonnull(mr);
	return mr;
}

static struct ibv_sge odp_sge(const struct h_pair *p, const struct rc_mr *mr, int side,
			      size_t off, uint32_t len)
{
	return (struct ibv_sge){ (uintptr_t)p->buf[side] + off, len, rc_mr_lkey(mr) };
}

/*
 * A page the process may not touch, with another before it: two pages
 * reserved PROT_NONE, which the process can neither read nor write, as a
 * hole, and which nobody else's mmap() (an allocator's, ASan's) can take the
 * way it could take an unmapped page.  A test may map either page over the
 * reservation with MAP_FIXED.  Returns the second page.
 */
static uint8_t *unmapped_page(void)
{
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *p = mmap(NULL, 2 * (size_t)page, PROT_NONE,
			  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);

	ck_assert_ptr_ne(p, MAP_FAILED);
	return p + page;
}

/*
 * Writes, reads and sends of several packets with both ends in ODP regions
 * (explicit for even _i, implicit for odd), over a link that takes pinned
 * payloads by reference: ODP payloads are always copied.
 */
START_TEST(odp_write_read_send)
{
	struct h_opts o = { .zero_copy = true };
	bool implicit = _i & 1;
	struct port_sim_stats st;
	struct rc_mr *mr[2];
	struct ibv_sge s, r;
	struct ibv_wc wc;
	struct h_pair p;
	uint32_t len = 9000;

	h_pair_init(&p, &o, NULL, NULL);
	mr[0] = odp_mr(&p, 0, implicit);
	mr[1] = odp_mr(&p, 1, implicit);
	h_fill(p.buf[0], len, 3);

	s = odp_sge(&p, mr[0], 0, 0, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1] + 8,
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 8, len), 0);
	ck_assert_uint_eq(p.buf[1][8 + len], 0);

	s = odp_sge(&p, mr[0], 0, 64 * 1024, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 2, &s, 1, (uintptr_t)p.buf[1] + 8,
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[0] + 64 * 1024, len), 0);

	h_fill(p.buf[0], len, 4);
	r = odp_sge(&p, mr[1], 1, 128 * 1024, len);
	s = odp_sge(&p, mr[0], 0, 0, len);
	ck_assert_int_eq(h_post_recv(p.qp[1], 7, &r, 1), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 3, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 128 * 1024, len), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);

	port_sim_get_stats(p.e.link, 0, &st);
	ck_assert_uint_eq(st.by_reference, 0);
	/* The same write from the pinned region goes by reference. */
	s = h_sge(&p, 0, 0, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 4, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	port_sim_get_stats(p.e.link, 0, &st);
	ck_assert_uint_gt(st.by_reference, 0);

	ck_assert_int_eq(rc_mr_dereg(mr[0]), 0);
	ck_assert_int_eq(rc_mr_dereg(mr[1]), 0);
	h_pair_fini(&p);
}
END_TEST

/* A pair with the implicit region on @side, and an address with nothing mapped at it. */
static struct rc_mr *pair_with_hole(struct h_pair *p, int side, uint8_t **hole)
{
	h_pair_init(p, NULL, NULL, NULL);
	*hole = unmapped_page();
	return odp_mr(p, side, true);
}

static const struct {
	enum ibv_wr_opcode	op;
	uint32_t		len;
	bool			read_only;	/* at a page mapped read-only, not a hole */
} remote_ops[] = {
	{ IBV_WR_RDMA_WRITE, 512, false },
	{ IBV_WR_RDMA_READ, 2000, false },
	{ IBV_WR_RDMA_WRITE, 512, true },
	/* Not announced in odp_caps, but no crash either. */
	{ IBV_WR_ATOMIC_FETCH_AND_ADD, 8, false },
	{ IBV_WR_ATOMIC_CMP_AND_SWP, 8, true },
};

/*
 * A write, read or atomic aimed at an unmapped page of an implicit region,
 * or a write or atomic at a read-only one: the responder answers with a
 * remote access error NAK (and its QP goes to ERR) instead of taking
 * SIGSEGV.
 */
START_TEST(odp_remote_unmapped)
{
	struct ibv_sge s;
	struct ibv_wc wc;
	struct h_pair p;
	uint8_t *hole;
	struct rc_mr *mr = pair_with_hole(&p, 1, &hole);
	long page = sysconf(_SC_PAGESIZE);

	if (remote_ops[_i].read_only)
		ck_assert_ptr_eq(mmap(hole, (size_t)page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS |
				      MAP_FIXED, -1, 0), hole);
	h_fill(p.buf[0], remote_ops[_i].len, 5);
	s = h_sge(&p, 0, 0, remote_ops[_i].len);
	ck_assert_int_eq(h_post_send(p.qp[0], remote_ops[_i].op, 1, &s, 1, (uintptr_t)hole,
				     rc_mr_rkey(mr), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).rem_access_naks_tx, 1);
	ck_assert_int_eq(h_qp_state(p.qp[1]), IBV_QPS_ERR);
	if (remote_ops[_i].read_only) {
		ck_assert_uint_eq(hole[0], 0);
		ck_assert_int_eq(munmap(hole, (size_t)page), 0);
	}
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
}
END_TEST

/* A write of three packets whose first two land on a mapped page and the last one past it. */
START_TEST(odp_write_runs_into_hole)
{
	long page = sysconf(_SC_PAGESIZE);
	struct ibv_sge s;
	struct ibv_wc wc;
	struct h_pair p;
	uint8_t *hole, *target;
	struct rc_mr *mr = pair_with_hole(&p, 1, &hole);

	target = mmap(hole - page, (size_t)page, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	ck_assert_ptr_eq(target, hole - page);
	target += page - 2048;
	h_fill(p.buf[0], 3000, 6);
	s = h_sge(&p, 0, 0, 3000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)target,
				     rc_mr_rkey(mr), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(memcmp(target, p.buf[0], 2048), 0);
	ck_assert_int_eq(munmap(hole - page, (size_t)page), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
}
END_TEST

/*
 * Unmapped ODP memory on either side of a send or read: _i 0, a send from
 * it, and 1, a read whose response would land there, end in a local
 * protection error at the requester; 2, a receive into it, in one at the
 * responder (and an error for the send).
 */
START_TEST(odp_local_unmapped)
{
	int side = _i == 2;
	struct ibv_sge s, r;
	struct ibv_wc wc;
	struct h_pair p;
	uint8_t *hole;
	struct rc_mr *mr = pair_with_hole(&p, side, &hole);
	struct ibv_sge at_hole = { (uintptr_t)hole, 1000, rc_mr_lkey(mr) };

	r = side ? at_hole : h_sge(&p, 1, 0, 4096);
	s = side ? h_sge(&p, 0, 0, 100) : at_hole;
	ck_assert_int_eq(h_post_recv(p.qp[1], 9, &r, 1), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], _i == 1 ? IBV_WR_RDMA_READ : IBV_WR_SEND, 1, &s, 1,
				     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED),
			 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[side], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	ck_assert_uint_eq(wc.wr_id, side ? 9 : 1);
	ck_assert_int_eq(h_qp_state(p.qp[side]), IBV_QPS_ERR);
	if (side) {
		ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
		ck_assert_int_ne(wc.status, IBV_WC_SUCCESS);
	}
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
}
END_TEST

/* Registration: implicit only at iova 0, and rereg keeps a region pinned or ODP. */
START_TEST(odp_registration)
{
	struct h_pair p;
	struct rc_mr *mr;

	h_pair_init(&p, NULL, NULL, NULL);
	errno = 0;
	ck_assert_ptr_null(rc_mr_reg(p.e.pd[0], NULL, SIZE_MAX, 4096, ODP_ALL));
	ck_assert_int_eq(errno, EINVAL);
	/* Without ON_DEMAND the whole address space is far too long. */
	ck_assert_ptr_null(rc_mr_reg(p.e.pd[0], NULL, SIZE_MAX, 0, IBV_ACCESS_LOCAL_WRITE));
	/* An explicit ODP region need not be mapped when it is registered. */
	mr = rc_mr_reg(p.e.pd[0], unmapped_page(), 4096, 0, ODP_ALL);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(rc_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				     IBV_ACCESS_LOCAL_WRITE), -EINVAL);
	ck_assert_int_eq(rc_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	ck_assert_int_eq(rc_mr_rereg(p.mr[0], IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0, ODP_ALL),
			 -EINVAL);
	h_pair_fini(&p);
}
END_TEST

/* ibv_advise_mr(3): prefetches of ODP ranges and the documented errors. */
START_TEST(odp_advise)
{
	struct ibv_sge s[2];
	struct rc_mr *mr, *ro;
	struct h_pair p;
	uint8_t *hole = unmapped_page();

	h_pair_init(&p, NULL, NULL, NULL);
	mr = odp_mr(&p, 0, true);
	ro = rc_mr_reg(p.e.pd[0], p.buf[0], H_BUF_LEN, (uintptr_t)p.buf[0],
		       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_ON_DEMAND);
	ck_assert_ptr_nonnull(ro);
	s[0] = odp_sge(&p, mr, 0, 100, 10000);
	s[1] = odp_sge(&p, mr, 0, 200 * 1024, 4096);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH, 0, s, 2), 0);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				      IBV_ADVISE_MR_FLAG_FLUSH, s, 2), 0);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, s, 2),
			 0);
	/* The prefetch wrote nothing. */
	for (size_t i = 0; i < H_BUF_LEN; i++)
		ck_assert_uint_eq(p.buf[0][i], 0);

	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH, 2, s, 1), -EINVAL);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH, 0, s, 0), -EINVAL);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], (enum ibv_advise_mr_advice)7, 0, s, 1),
			 -EOPNOTSUPP);
	/* Not mapped, a pinned region's lkey, the other PD's, write to a region without local write. */
	s[1] = (struct ibv_sge){ (uintptr_t)hole, 64, rc_mr_lkey(mr) };
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH, 0, s, 2), -EFAULT);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH_NO_FAULT, 0, s, 2),
			 0);
	s[1] = h_sge(&p, 0, 0, 64);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH, 0, s, 2), -EFAULT);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[1], IBV_ADVISE_MR_ADVICE_PREFETCH, 0, s, 1), -EFAULT);
	s[1] = odp_sge(&p, ro, 0, 0, 64);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH, 0, &s[1], 1), 0);
	ck_assert_int_eq(rc_mr_advise(p.e.pd[0], IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE, 0, &s[1], 1),
			 -EFAULT);
	ck_assert_int_eq(rc_mr_dereg(ro), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_odp_suite(void)
{
	Suite *s = suite_create("rc_odp");
	TCase *tc = tcase_create("odp");

	tcase_add_loop_test(tc, odp_write_read_send, 0, 2);
	tcase_add_loop_test(tc, odp_remote_unmapped, 0, sizeof(remote_ops) / sizeof(remote_ops[0]));
	tcase_add_test(tc, odp_write_runs_into_hole);
	tcase_add_loop_test(tc, odp_local_unmapped, 0, 3);
	tcase_add_test(tc, odp_registration);
	tcase_add_test(tc, odp_advise);
	suite_add_tcase(s, tc);
	return s;
}
