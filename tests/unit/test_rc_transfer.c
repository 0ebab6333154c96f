// SPDX-License-Identifier: MIT
/* RC operations end to end over the simulated link: send/recv, write, write with immediate, read, atomics. */
#include <check.h>
#include <endian.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS 1000000000ull

static const uint32_t sizes[] = { 0, 1, 3, 255, 1023, 1024, 1025, 4096, 9000, 65536, 65543 };
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

START_TEST(send_recv_sizes)
{
	struct h_pair p;
	uint32_t len = sizes[_i];
	struct ibv_sge rs, ss;
	struct ibv_wc wc[2];

	h_pair_init(&p, NULL, NULL, NULL);
	h_fill(p.buf[0], len, _i);
	rs = h_sge(&p, 1, 0, H_BUF_LEN);
	ss = h_sge(&p, 0, 0, len);
	ck_assert_int_eq(h_post_recv(p.qp[1], 77, &rs, 1), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 5, &ss, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc[0].wr_id, 77);
	ck_assert_uint_eq(wc[0].byte_len, len);
	ck_assert_uint_eq(wc[0].qp_num, rc_qp_num(p.qp[1]));
	ck_assert_uint_eq(wc[0].src_qp, rc_qp_num(p.qp[0]));
	ck_assert_int_eq(wc[0].wc_flags, 0);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], len), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc[0].wr_id, 5);
	h_pair_fini(&p);
}
END_TEST

START_TEST(write_read_sizes)
{
	struct h_pair p;
	uint32_t len = sizes[_i];
	struct ibv_sge s;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	h_fill(p.buf[0], len, _i + 1);
	s = h_sge(&p, 0, 0, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1,
				     (uintptr_t)p.buf[1] + 64, rc_mr_rkey(p.mr[1]),
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 64, len), 0);
	ck_assert_uint_eq(p.buf[1][64 + len], 0);

	/* Read it back into another place. */
	s = h_sge(&p, 0, 128 * 1024, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 2, &s, 1,
				     (uintptr_t)p.buf[1] + 64, rc_mr_rkey(p.mr[1]),
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(wc.byte_len, len);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[0] + 128 * 1024, len), 0);
	h_pair_fini(&p);
}
END_TEST

/* Every path MTU, for a message of several packets each way. */
START_TEST(every_mtu)
{
	struct h_conn c = { .mtu = (enum ibv_mtu)(IBV_MTU_256 + _i) };
	struct h_pair p;
	uint32_t len = 20000;
	struct ibv_sge s, r;
	struct ibv_wc wc[2];

	h_pair_init(&p, NULL, &c, NULL);
	h_fill(p.buf[0], len, 9);
	s = h_sge(&p, 0, 0, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	r = h_sge(&p, 1, 100000, len);
	ck_assert_int_eq(h_post_recv(p.qp[1], 3, &r, 1), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	s = h_sge(&p, 0, 50000, len);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 3, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], len), 0);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 100000, len), 0);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[0] + 50000, len), 0);
	h_pair_fini(&p);
}
END_TEST

START_TEST(write_with_imm)
{
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	h_fill(p.buf[0], 3000, 4);
	r = h_sge(&p, 1, 0, 0);
	ck_assert_int_eq(h_post_recv(p.qp[1], 9, &r, 0), 0);
	s = h_sge(&p, 0, 0, 3000);
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(0xdeadbeef);
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf[1] + 4096;
	wr.wr.rdma.rkey = rc_mr_rkey(p.mr[1]);
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 3000);
	ck_assert_uint_eq(wc.wr_id, 9);
	ck_assert(wc.wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(wc.imm_data), 0xdeadbeef);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 4096, 3000), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.opcode, IBV_WC_RDMA_WRITE);
	h_pair_fini(&p);
}
END_TEST

START_TEST(atomics)
{
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	uint64_t *target, *result;

	h_pair_init(&p, NULL, NULL, NULL);
	target = (uint64_t *)(void *)(p.buf[1] + 8);
	result = (uint64_t *)(void *)p.buf[0];
	*target = 100;
	s = h_sge(&p, 0, 0, 8);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rc_mr_rkey(p.mr[1]);

	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.compare_add = 23;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_FETCH_ADD);
	ck_assert_uint_eq(*result, 100);
	ck_assert_uint_eq(*target, 123);

	/* CAS that fails: the value stays, the original comes back. */
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.compare_add = 5;
	wr.wr.atomic.swap = 999;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.opcode, IBV_WC_COMP_SWAP);
	ck_assert_uint_eq(*result, 123);
	ck_assert_uint_eq(*target, 123);

	/* CAS that succeeds. */
	wr.wr.atomic.compare_add = 123;
	wr.wr.atomic.swap = 0x1122334455667788ull;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(*result, 123);
	ck_assert_uint_eq(*target, 0x1122334455667788ull);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_transfer_suite(void)
{
	Suite *s = suite_create("rc_transfer");
	TCase *tc = tcase_create("ops");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, send_recv_sizes, 0, N_SIZES);
	tcase_add_loop_test(tc, write_read_sizes, 0, N_SIZES);
	tcase_add_loop_test(tc, every_mtu, 0, 5);
	tcase_add_test(tc, write_with_imm);
	tcase_add_test(tc, atomics);
	suite_add_tcase(s, tc);
	return s;
}
