// SPDX-License-Identifier: MIT
/* Engine objects: memory keys, access flags, memory windows, CQ ring/overflow/notification, SRQ limit, AHs, counters. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS 100000000ull

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* Keys are distinct, never 0, and show no arithmetic relation to each other. */
START_TEST(keys_random_and_unique)
{
	enum { N = 500 };
	struct h_env e;
	static uint8_t buf[64];
	struct rc_mr *mr[N];
	uint32_t keys[2 * N];
	unsigned same_delta = 0;

	h_env_init(&e, NULL);
	for (int i = 0; i < N; i++) {
		mr[i] = rc_mr_reg(e.pd[0], buf, sizeof(buf), (uintptr_t)buf, IBV_ACCESS_LOCAL_WRITE);
		ck_assert_ptr_nonnull(mr[i]);
		keys[2 * i] = rc_mr_lkey(mr[i]);
		keys[2 * i + 1] = rc_mr_rkey(mr[i]);
		ck_assert_uint_ne(keys[2 * i], 0);
		ck_assert_uint_ne(keys[2 * i], keys[2 * i + 1]);
	}
	for (int i = 2; i < 2 * N; i++)
		same_delta += keys[i] - keys[i - 1] == keys[i - 1] - keys[i - 2];
	ck_assert_uint_lt(same_delta, 3);
	qsort(keys, 2 * N, sizeof(keys[0]), cmp_u32);
	for (int i = 1; i < 2 * N; i++)
		ck_assert_uint_ne(keys[i], keys[i - 1]);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(rc_mr_dereg(mr[i]), 0);
	h_env_fini(&e);
}
END_TEST

START_TEST(mr_registration_checks)
{
	struct h_env e;
	static uint8_t buf[64];
	struct rc_mr *mr;

	h_env_init(&e, NULL);
	ck_assert_ptr_null(rc_mr_reg(e.pd[0], buf, 64, (uintptr_t)buf, IBV_ACCESS_REMOTE_WRITE));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(rc_mr_reg(e.pd[0], buf, 64, (uintptr_t)buf, IBV_ACCESS_REMOTE_ATOMIC));
	/* Zero-based regions are device memory's (ibv_reg_dm_mr(3)), not ibv_reg_mr()'s. */
	ck_assert_ptr_null(rc_mr_reg(e.pd[0], buf, 64, (uintptr_t)buf, IBV_ACCESS_ZERO_BASED));
	ck_assert_ptr_null(rc_mr_reg(e.pd[0], buf, 64, UINT64_MAX - 10, 0));
	mr = rc_mr_reg(e.pd[0], buf, 64, (uintptr_t)buf, IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(mr);
	ck_assert_int_eq(rc_pd_free(e.pd[0]), -EBUSY);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_env_fini(&e);
}
END_TEST

/*
 * rereg keeps both keys (peers already hold the rkey) and the new
 * translation applies at once: the same rkey now reaches the new range only.
 */
START_TEST(rereg_keeps_keys)
{
	struct h_pair p;
	uint8_t *mem = calloc(1, 8192);
	struct rc_mr *mr;
	uint32_t rkey, lkey;
	struct ibv_sge s;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	mr = rc_mr_reg(p.e.pd[1], mem, 4096, (uintptr_t)mem,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rkey = rc_mr_rkey(mr);
	lkey = rc_mr_lkey(mr);
	ck_assert_int_eq(rc_mr_rereg(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, mem + 4096, 4096,
				     0), 0);
	ck_assert_uint_eq(rc_mr_rkey(mr), rkey);
	ck_assert_uint_eq(rc_mr_lkey(mr), lkey);
	h_fill(p.buf[0], 64, 1);
	s = h_sge(&p, 0, 0, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem + 4096,
				     rkey, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(mem + 4096, p.buf[0], 64), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)mem,
				     rkey, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(mem[i], 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
	free(mem);
}
END_TEST

/* rereg of the access flags with the same rkey: remote write refused once it is taken away. */
START_TEST(rereg_access_same_rkey)
{
	struct h_pair p;
	uint8_t *mem = calloc(1, 4096);
	struct rc_mr *mr;
	uint32_t rkey;
	struct ibv_sge s;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	mr = rc_mr_reg(p.e.pd[1], mem, 4096, (uintptr_t)mem, IBV_ACCESS_LOCAL_WRITE);
	rkey = rc_mr_rkey(mr);
	ck_assert_int_eq(rc_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE), 0);
	ck_assert_uint_eq(rc_mr_rkey(mr), rkey);
	h_fill(p.buf[0], 64, 3);
	s = h_sge(&p, 0, 0, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem,
				     rkey, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(mem, p.buf[0], 64), 0);
	ck_assert_int_eq(rc_mr_rereg(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
				     IBV_ACCESS_LOCAL_WRITE), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)mem,
				     rkey, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
	free(mem);
}
END_TEST

/* A BIND_MW work request on @qp: window @mw over [@addr, @addr + @len) of @mr with @access. */
static int post_bind(struct rc_qp *qp, struct rc_mw *mw, uint32_t rkey, struct rc_mr *mr,
		     uint8_t *addr, uint64_t len, unsigned access, uint64_t wr_id)
{
	static struct ibv_mr ib_mr;
	struct ibv_send_wr wr = { 0 }, *bad;

	ib_mr.lkey = rc_mr_lkey(mr);
	wr.wr_id = wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.bind_mw.mw = rc_mw_ibv(mw);
	wr.bind_mw.rkey = rkey;
	wr.bind_mw.bind_info.mr = &ib_mr;
	wr.bind_mw.bind_info.addr = (uintptr_t)addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = access;
	return rc_post_send(qp, &wr, &bad);
}

/*
 * A window over an ODP region reaches it the ODP way: a write through it to a
 * page the process may not touch is a remote access error, not a SIGSEGV.
 */
START_TEST(mw_over_odp_region)
{
	long page = sysconf(_SC_PAGESIZE);
	/* PROT_NONE: nothing may touch it, and no later mmap() can take it as an unmapped page. */
	uint8_t *hole = mmap(NULL, (size_t)page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct h_pair p;
	struct rc_mr *mr;
	struct rc_mw *mw;
	struct ibv_sge s;
	struct ibv_wc wc;
	uint32_t rkey;

	ck_assert_ptr_ne(hole, MAP_FAILED);
	h_pair_init(&p, NULL, NULL, NULL);
	mr = rc_mr_reg(p.e.pd[1], NULL, SIZE_MAX, 0, IBV_ACCESS_LOCAL_WRITE |
		       IBV_ACCESS_MW_BIND | IBV_ACCESS_ON_DEMAND);
	ck_assert_ptr_nonnull(mr);
	mw = rc_mw_alloc(p.e.pd[1], IBV_MW_TYPE_2);
	ck_assert_ptr_nonnull(mw);
	rkey = ibv_inc_rkey(rc_mw_ibv(mw)->rkey);
	ck_assert_int_eq(post_bind(p.qp[1], mw, rkey, mr, hole, (uint64_t)page,
				   IBV_ACCESS_REMOTE_WRITE, 7), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	s = h_sge(&p, 0, 0, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)hole, rkey,
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_int_eq(rc_mw_dealloc(mw), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
	ck_assert_int_eq(munmap(hole, (size_t)page), 0);
}
END_TEST

/*
 * A type 2 window (IBA 10.6.7): bound by a work request with a new rkey of the
 * same upper 24 bits, it opens its own range with its own rights over a region
 * that has none remotely; the region cannot go while it is bound; LOCAL_INV
 * closes it, and the rkey fails at once.
 */
START_TEST(mw_type2_bind_access_invalidate)
{
	struct h_pair p;
	static uint8_t mem[8192];
	struct rc_mr *mr;
	struct rc_mw *mw;
	uint32_t rkey;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct ibv_send_wr inv = { 0 }, *bad;

	h_pair_init(&p, NULL, NULL, NULL);
	memset(mem, 0, sizeof(mem));
	mr = rc_mr_reg(p.e.pd[1], mem, sizeof(mem), (uintptr_t)mem,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
	ck_assert_ptr_nonnull(mr);
	ck_assert_ptr_null(rc_mw_alloc(p.e.pd[1], (enum ibv_mw_type)3));
	ck_assert_int_eq(errno, EINVAL);
	mw = rc_mw_alloc(p.e.pd[1], IBV_MW_TYPE_2);
	ck_assert_ptr_nonnull(mw);
	rkey = ibv_inc_rkey(rc_mw_ibv(mw)->rkey);
	ck_assert_int_eq(post_bind(p.qp[1], mw, rkey, mr, mem + 1024, 2048,
				   IBV_ACCESS_REMOTE_WRITE, 7), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_BIND_MW);
	ck_assert_uint_eq(wc.wr_id, 7);

	h_fill(p.buf[0], 64, 5);
	s = h_sge(&p, 0, 0, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem + 1024,
				     rkey, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(mem + 1024, p.buf[0], 64), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), -EBUSY);

	inv.wr_id = 8;
	inv.opcode = IBV_WR_LOCAL_INV;
	inv.send_flags = IBV_SEND_SIGNALED;
	inv.invalidate_rkey = rkey;
	ck_assert_int_eq(rc_post_send(p.qp[1], &inv, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_LOCAL_INV);

	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)mem + 2048,
				     rkey, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(mem[2048], 0);
	ck_assert_int_eq(rc_mw_dealloc(mw), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
}
END_TEST

/* Outside the window's range, or beyond its rights: remote access error, nothing written. */
START_TEST(mw_range_and_rights)
{
	static uint8_t mem[8192];
	struct h_pair p;
	struct rc_mr *mr;
	struct rc_mw *mw;
	uint32_t rkey;
	struct ibv_sge s;
	struct ibv_wc wc;

	for (int round = 0; round < 2; round++) {
		h_pair_init(&p, NULL, NULL, NULL);
		memset(mem, 0, sizeof(mem));
		mr = rc_mr_reg(p.e.pd[1], mem, sizeof(mem), (uintptr_t)mem,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND | IBV_ACCESS_REMOTE_WRITE);
		mw = rc_mw_alloc(p.e.pd[1], IBV_MW_TYPE_2);
		rkey = ibv_inc_rkey(rc_mw_ibv(mw)->rkey);
		/* Round 0: read rights only; round 1: write rights over 1024..2047 only. */
		ck_assert_int_eq(post_bind(p.qp[1], mw, rkey, mr, mem + 1024, 1024,
					   round ? IBV_ACCESS_REMOTE_WRITE : IBV_ACCESS_REMOTE_READ,
					   1), 0);
		ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
		ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
		h_fill(p.buf[0], 64, 9);
		s = h_sge(&p, 0, 0, 64);
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1,
					     (uintptr_t)mem + (round ? 2040 : 1024), rkey,
					     IBV_SEND_SIGNALED), 0);
		ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
		ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
		for (int i = 0; i < (int)sizeof(mem); i++)
			ck_assert_uint_eq(mem[i], 0);
		ck_assert_int_eq(rc_mw_dealloc(mw), 0);
		ck_assert_int_eq(rc_mr_dereg(mr), 0);
		h_pair_fini(&p);
	}
}
END_TEST

/*
 * Bind errors (IBV_WC_MW_BIND_ERR): another rkey index, a region without
 * MW_BIND access, a type 2 window bound again before it is invalidated.
 */
START_TEST(mw_bind_errors)
{
	static uint8_t mem[4096];
	struct h_pair p;
	struct rc_mr *mr, *plain;
	struct rc_mw *mw;
	uint32_t rkey;
	struct ibv_wc wc;

	for (int round = 0; round < 3; round++) {
		h_pair_init(&p, NULL, NULL, NULL);
		mr = rc_mr_reg(p.e.pd[1], mem, sizeof(mem), (uintptr_t)mem,
			       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND);
		plain = rc_mr_reg(p.e.pd[1], mem, sizeof(mem), (uintptr_t)mem,
				  IBV_ACCESS_LOCAL_WRITE);
		mw = rc_mw_alloc(p.e.pd[1], IBV_MW_TYPE_2);
		rkey = ibv_inc_rkey(rc_mw_ibv(mw)->rkey);
		if (round == 0) {
			ck_assert_int_eq(post_bind(p.qp[1], mw, rkey ^ 0x100, mr, mem, 64,
						   IBV_ACCESS_REMOTE_READ, 1), 0);
		} else if (round == 1) {
			ck_assert_int_eq(post_bind(p.qp[1], mw, rkey, plain, mem, 64,
						   IBV_ACCESS_REMOTE_READ, 1), 0);
		} else {
			ck_assert_int_eq(post_bind(p.qp[1], mw, rkey, mr, mem, 64,
						   IBV_ACCESS_REMOTE_READ, 1), 0);
			ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
			ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
			ck_assert_int_eq(post_bind(p.qp[1], mw, ibv_inc_rkey(rkey), mr, mem, 64,
						   IBV_ACCESS_REMOTE_READ, 1), 0);
		}
		ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
		ck_assert_int_eq(wc.status, IBV_WC_MW_BIND_ERR);
		ck_assert_int_eq(rc_mw_dealloc(mw), 0);
		ck_assert_int_eq(rc_mr_dereg(mr), 0);
		ck_assert_int_eq(rc_mr_dereg(plain), 0);
		h_pair_fini(&p);
	}
}
END_TEST

struct ring_log {
	unsigned	allocs[3], frees[3];
	void		*given[3];
	size_t		align;
	int		mode;		/* 0: memory, 1: RC_RING_DEFAULT, 2: NULL */
};

static void *ring_alloc(void *arg, enum rc_ring_kind kind, size_t size, size_t align)
{
	struct ring_log *l = arg;
	void *p;

	l->allocs[kind]++;
	l->align = align;
	if (l->mode)
		return l->mode == 1 ? RC_RING_DEFAULT : NULL;
	if (posix_memalign(&p, align, size))
		return NULL;
	memset(p, 0xa5, size);		/* the engine must clear it */
	l->given[kind] = p;
	return p;
}

static void ring_free(void *arg, enum rc_ring_kind kind, void *ptr)
{
	struct ring_log *l = arg;

	ck_assert_ptr_eq(ptr, l->given[kind]);
	l->frees[kind]++;
	free(ptr);
}

/*
 * A parent domain's allocators give a QP its send and receive rings (zeroed by
 * the engine, given back at destroy); RC_RING_DEFAULT falls back to the
 * engine's own, NULL fails the creation; traffic runs over such rings.
 */
START_TEST(qp_rings_from_allocator)
{
	struct h_env e;
	struct ring_log log = { 0 };
	struct rc_qp_init init = { 0 };
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	struct rc_qp *a, *b;
	static uint8_t mem[4096];
	struct rc_mr *mr;
	struct ibv_sge s, r;
	struct ibv_wc wc[2];

	h_env_init(&e, NULL);
	init.qp_type = IBV_QPT_RC;
	init.pd = e.pd[0];
	init.send_cq = init.recv_cq = e.cq[0];
	init.cap = (struct ibv_qp_cap){ .max_send_wr = 16, .max_recv_wr = 16,
					.max_send_sge = 1, .max_recv_sge = 1 };
	init.ring_alloc = (struct rc_ring_alloc){ ring_alloc, ring_free, &log };
	a = rc_qp_create(e.eng[0], &init);
	ck_assert_ptr_nonnull(a);
	ck_assert_uint_eq(log.allocs[RC_RING_SQ], 1);
	ck_assert_uint_eq(log.allocs[RC_RING_RQ], 1);
	ck_assert_uint_eq(log.align, RC_RING_ALIGN);

	b = h_qp(&e, 0, &qo);
	h_connect(&e, a, 0, b, 0, NULL);
	mr = rc_mr_reg(e.pd[0], mem, sizeof(mem), (uintptr_t)mem, IBV_ACCESS_LOCAL_WRITE);
	memcpy(mem, "parent domain", 13);
	r = (struct ibv_sge){ (uintptr_t)mem + 100, 100, rc_mr_lkey(mr) };
	ck_assert_int_eq(h_post_recv(a, 2, &r, 1), 0);
	s = (struct ibv_sge){ (uintptr_t)mem, 13, rc_mr_lkey(mr) };
	ck_assert_int_eq(h_post_send(b, IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(mem + 100, "parent domain", 13), 0);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_uint_eq(log.frees[RC_RING_SQ], 1);
	ck_assert_uint_eq(log.frees[RC_RING_RQ], 1);

	log.mode = 1;
	a = rc_qp_create(e.eng[0], &init);
	ck_assert_ptr_nonnull(a);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_uint_eq(log.frees[RC_RING_SQ], 1);
	log.mode = 2;
	ck_assert_ptr_null(rc_qp_create(e.eng[0], &init));
	ck_assert_int_eq(errno, ENOMEM);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_env_fini(&e);
}
END_TEST

START_TEST(cq_overflow_raises_event)
{
	struct h_pair p;
	struct rc_cq *small;
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	struct rc_qp *a, *b;
	struct ibv_sge s;
	struct ibv_wc wc[8];
	struct rc_counters c;

	h_pair_init(&p, NULL, NULL, NULL);
	small = rc_cq_create(p.e.eng[0], 3, NULL);
	ck_assert_ptr_nonnull(small);
	ck_assert_int_eq(rc_cq_size(small), 4);
	qo.send_cq = small;
	a = h_qp(&p.e, 0, &qo);
	qo.send_cq = NULL;
	b = h_qp(&p.e, 1, &qo);
	h_connect(&p.e, a, 0, b, 1, NULL);
	s = h_sge(&p, 0, 0, 8);
	for (uint64_t i = 0; i < 6; i++)
		ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, i, &s, 1, (uintptr_t)p.buf[1],
					     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	h_run(&p.e, RUN_NS);
	ck_assert_int_eq(rc_cq_poll(small, 8, wc), -EOVERFLOW);
	ck_assert_uint_eq(h_count_events(&p.e, IBV_EVENT_CQ_ERR), 1);
	rc_engine_counters(p.e.eng[0], &c);
	ck_assert_uint_eq(c.cq_overflows, 1);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	ck_assert_int_eq(rc_cq_destroy(small), 0);
	h_pair_fini(&p);
}
END_TEST

START_TEST(cq_resize_keeps_entries)
{
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_wc wc[8];

	h_pair_init(&p, NULL, NULL, NULL);
	s = h_sge(&p, 0, 0, 8);
	for (uint64_t i = 0; i < 5; i++)
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, i, &s, 1,
					     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
					     IBV_SEND_SIGNALED), 0);
	h_run(&p.e, RUN_NS);
	ck_assert_int_eq(rc_cq_resize(p.e.cq[0], 4), -EINVAL);
	ck_assert_int_eq(rc_cq_resize(p.e.cq[0], 8), 0);
	ck_assert_int_eq(rc_cq_size(p.e.cq[0]), 8);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 5);
	for (int i = 0; i < 5; i++)
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i);
	ck_assert_ptr_null(rc_cq_create(p.e.eng[0], 0, NULL));
	ck_assert_ptr_null(rc_cq_create(p.e.eng[0], RC_MAX_CQE + 1, NULL));
	h_pair_fini(&p);
}
END_TEST

/* Armed for solicited only: a plain send does not fire, an SE one does; arming is one-shot. */
START_TEST(cq_notification)
{
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	r = h_sge(&p, 1, 0, 100);
	for (uint64_t i = 0; i < 3; i++)
		ck_assert_int_eq(h_post_recv(p.qp[1], i, &r, 1), 0);
	s = h_sge(&p, 0, 0, 10);
	ck_assert_int_eq(rc_cq_req_notify(p.e.cq[1], true), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(p.e.cq_events, 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SOLICITED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(p.e.cq_events, 1);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 3, &s, 1, 0, 0, IBV_SEND_SOLICITED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(p.e.cq_events, 1);	/* not re-armed */
	h_pair_fini(&p);
}
END_TEST

/* Two QPs share an SRQ; dropping below the limit raises the event once and disarms it. */
START_TEST(srq_shared_and_limit)
{
	struct h_pair p;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 8, .max_sge = 2 } };
	struct ibv_srq_attr q = { 0 };
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	struct rc_srq *srq;
	struct rc_qp *s1, *s2, *c1, *c2;
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_sge r, s;
	struct ibv_wc wc[8];
	int got = 0;

	h_pair_init(&p, NULL, NULL, NULL);
	srq = rc_srq_create(p.e.pd[1], &sa, (void *)0x5);
	ck_assert_ptr_nonnull(srq);
	qo.srq = srq;
	s1 = h_qp(&p.e, 1, &qo);
	s2 = h_qp(&p.e, 1, &qo);
	qo.srq = NULL;
	c1 = h_qp(&p.e, 0, &qo);
	c2 = h_qp(&p.e, 0, &qo);
	h_connect(&p.e, c1, 0, s1, 1, NULL);
	h_connect(&p.e, c2, 0, s2, 1, NULL);
	ck_assert_int_eq(h_post_recv(s1, 1, &r, 1), -EINVAL);	/* QPs on an SRQ take none */
	for (uint64_t i = 0; i < 6; i++) {
		r = h_sge(&p, 1, i * 100, 100);
		wr.wr_id = 100 + i;
		wr.sg_list = &r;
		wr.num_sge = 1;
		ck_assert_int_eq(rc_srq_post_recv(srq, &wr, &bad), 0);
	}
	q.srq_limit = 9;
	ck_assert_int_eq(rc_srq_modify(srq, &q, IBV_SRQ_LIMIT), -EINVAL);
	q.srq_limit = 3;
	ck_assert_int_eq(rc_srq_modify(srq, &q, IBV_SRQ_LIMIT), 0);
	s = h_sge(&p, 0, 0, 10);
	ck_assert_int_eq(h_post_send(c1, IBV_WR_SEND, 1, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_post_send(c2, IBV_WR_SEND, 2, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_post_send(c1, IBV_WR_SEND, 3, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_post_send(c2, IBV_WR_SEND, 4, &s, 1, 0, 0, 0), 0);
	got = h_wait_cq(&p.e, p.e.cq[1], wc, 4, RUN_NS);
	ck_assert_int_eq(got, 4);
	for (int i = 0; i < 4; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		ck_assert(wc[i].qp_num == rc_qp_num(s1) || wc[i].qp_num == rc_qp_num(s2));
	}
	ck_assert_uint_eq(h_count_events(&p.e, IBV_EVENT_SRQ_LIMIT_REACHED), 1);
	ck_assert_ptr_eq(p.e.events[0].user, (void *)0x5);
	ck_assert_int_eq(rc_srq_query(srq, &q), 0);
	ck_assert_uint_eq(q.srq_limit, 0);
	ck_assert_uint_eq(q.max_wr, 8);
	ck_assert_int_eq(rc_srq_destroy(srq), -EBUSY);
	/* A QP on an SRQ going to ERR says it takes no more WQEs. */
	{
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ck_assert_int_eq(rc_qp_modify(s1, &a, IBV_QP_STATE), 0);
		ck_assert_uint_eq(h_count_events(&p.e, IBV_EVENT_QP_LAST_WQE_REACHED), 1);
	}
	ck_assert_int_eq(rc_qp_destroy(c1), 0);
	ck_assert_int_eq(rc_qp_destroy(c2), 0);
	ck_assert_int_eq(rc_qp_destroy(s1), 0);
	ck_assert_int_eq(rc_qp_destroy(s2), 0);
	ck_assert_int_eq(rc_srq_destroy(srq), 0);
	h_pair_fini(&p);
}
END_TEST

START_TEST(ah_checks)
{
	struct h_env e;
	struct ibv_ah_attr a = { .is_global = 1, .port_num = 1 };
	struct rc_ah *ah;

	h_env_init(&e, NULL);
	h_gid(1, 0, a.grh.dgid.raw);
	a.is_global = 0;
	ck_assert_ptr_null(rc_ah_create(e.pd[0], &a));
	ck_assert_int_eq(errno, EINVAL);
	a.is_global = 1;
	a.grh.sgid_index = 5;		/* empty entry */
	ck_assert_ptr_null(rc_ah_create(e.pd[0], &a));
	a.grh.sgid_index = 1;		/* IPv6 source to an IPv4 destination */
	ck_assert_ptr_null(rc_ah_create(e.pd[0], &a));
	a.grh.sgid_index = 0;
	ah = rc_ah_create(e.pd[0], &a);
	ck_assert_ptr_nonnull(ah);
	ck_assert_ptr_eq(rc_ah_from_ibv(rc_ah_ibv(ah)), ah);
	ck_assert_int_eq(rc_pd_free(e.pd[0]), -EBUSY);
	ck_assert_int_eq(rc_ah_destroy(ah), 0);
	h_env_fini(&e);
}
END_TEST

START_TEST(counters_and_names)
{
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_wc wc;
	struct rc_counters c0, c1, q0;
	unsigned n = 0;

	h_pair_init(&p, NULL, NULL, NULL);
	while (rc_counter_names[n])
		n++;
	ck_assert_uint_eq(n, (sizeof(struct rc_counters) - sizeof(struct wire_drop_stats) -
			      sizeof(struct rc_drop_stats)) / sizeof(uint64_t));
	s = h_sge(&p, 0, 0, 3000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	rc_engine_counters(p.e.eng[0], &c0);
	rc_engine_counters(p.e.eng[1], &c1);
	rc_qp_counters(p.qp[0], &q0);
	ck_assert_uint_eq(q0.tx_packets, 3);
	ck_assert_uint_eq(c0.tx_packets, 3);
	ck_assert_uint_eq(c1.rx_packets, 3);
	ck_assert_uint_eq(c1.acks_tx, 1);
	ck_assert_uint_eq(c0.acks_rx, 1);
	ck_assert_uint_eq(c0.completions, 1);
	/* A destroyed QP's counts stay in the engine total. */
	ck_assert_int_eq(rc_qp_destroy(p.qp[0]), 0);
	p.qp[0] = NULL;
	rc_engine_counters(p.e.eng[0], &c0);
	ck_assert_uint_eq(c0.tx_packets, 3);
	h_pair_fini(&p);
}
END_TEST

/* A corrupted frame is dropped and counted by reason; frames for no QP are counted. */
START_TEST(drops_counted)
{
	struct h_env e;
	struct port_sim_faults f = { .corrupt = 1.0 };
	struct wire_build_desc d = { .opcode = WIRE_OP_SEND_ONLY, .dest_qp = 0x777 };
	uint8_t payload[64] = { 0 };
	struct rc_counters c;

	h_env_init(&e, NULL);
	h_inject(&e, 1, &d, payload, sizeof(payload));
	h_run(&e, RUN_NS);
	rc_engine_counters(e.eng[1], &c);
	ck_assert_uint_eq(c.rc_drops.count[RC_DROP_UNKNOWN_QP], 1);
	port_sim_set_faults(e.link, 0, &f);
	{
		struct h_qp_opts qo = { .type = IBV_QPT_UD };
		struct rc_qp *qp = h_qp(&e, 0, &qo);
		struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
		struct rc_ah *ah;
		struct ibv_send_wr wr = { 0 }, *bad;
		struct h_conn cn = { .qkey = 1 };

		h_connect_one(qp, 1, 0, 0, 0, &cn);
		h_gid(1, 0, aa.grh.dgid.raw);
		ah = rc_ah_create(e.pd[0], &aa);
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = rc_ah_ibv(ah);
		wr.wr.ud.remote_qpn = 0x777;
		ck_assert_int_eq(rc_post_send(qp, &wr, &bad), 0);
		h_run(&e, RUN_NS);
		ck_assert_int_eq(rc_qp_destroy(qp), 0);
		ck_assert_int_eq(rc_ah_destroy(ah), 0);
	}
	rc_engine_counters(e.eng[1], &c);
	ck_assert_uint_eq(c.drops.count[WIRE_DROP_BAD_ICRC], 1);
	h_env_fini(&e);
}
END_TEST

Suite *rc_objects_suite(void)
{
	Suite *s = suite_create("rc_objects");
	TCase *tc = tcase_create("objects");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, keys_random_and_unique);
	tcase_add_test(tc, mr_registration_checks);
	tcase_add_test(tc, rereg_keeps_keys);
	tcase_add_test(tc, rereg_access_same_rkey);
	tcase_add_test(tc, mw_type2_bind_access_invalidate);
	tcase_add_test(tc, mw_over_odp_region);
	tcase_add_test(tc, mw_range_and_rights);
	tcase_add_test(tc, mw_bind_errors);
	tcase_add_test(tc, qp_rings_from_allocator);
	tcase_add_test(tc, cq_overflow_raises_event);
	tcase_add_test(tc, cq_resize_keeps_entries);
	tcase_add_test(tc, cq_notification);
	tcase_add_test(tc, srq_shared_and_limit);
	tcase_add_test(tc, ah_checks);
	tcase_add_test(tc, counters_and_names);
	tcase_add_test(tc, drops_counted);
	suite_add_tcase(s, tc);
	return s;
}
