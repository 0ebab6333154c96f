// SPDX-License-Identifier: MIT
/* RC operations end to end over the simulated link: send/recv, write, write with immediate, read, atomics. */
#include <check.h>
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
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

/*
 * First transmissions are not retransmissions, wherever the send PSN
 * starts (found against rxe: an initial PSN in the upper half of the
 * 24-bit space counted every packet as a retransmission).
 */
START_TEST(no_retransmits_without_loss)
{
	static const uint32_t start_psn[] = { 0, 0x7fffff, 0x800000, 0xfffff0 };
	struct h_conn c = { .psn = { start_psn[_i], start_psn[_i] } };
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, &c, NULL);
	s = h_sge(&p, 0, 0, 32 * 1024);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1,
				     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).tx_packets, 32);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).retransmits, 0);
	h_pair_fini(&p);
}
END_TEST

/*
 * Payloads by reference over a link of 8 frame buffers: the requester runs
 * out of them mid-message again and again, and each packet it could not
 * send then goes out later with the bytes it should carry.
 */
START_TEST(zero_copy_when_buffers_run_out)
{
	struct h_opts o = { .zero_copy = true, .slots = 8 };
	struct port_sim_stats st;
	struct h_pair p;
	struct ibv_sge s[2];
	struct ibv_wc wc;
	uint32_t len = 96 * 1024;

	h_pair_init(&p, &o, NULL, NULL);
	h_fill(p.buf[0], 2 * len, 9);
	/* Two SGEs, the first not a whole number of packets: one packet spans both. */
	s[0] = h_sge(&p, 0, 0, len / 2 + 100);
	s[1] = h_sge(&p, 0, len, len / 2 - 100);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, s, 2,
				     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[1], p.buf[0], len / 2 + 100), 0);
	ck_assert_int_eq(memcmp(p.buf[1] + len / 2 + 100, p.buf[0] + len, len / 2 - 100), 0);
	ck_assert_uint_gt(h_qp_counters(p.qp[0]).tx_no_buffer, 0);
	port_sim_get_stats(p.e.link, 0, &st);
	ck_assert_uint_gt(st.by_reference, 0);
	/* The packet spanning both SGEs (and the last, short one) was copied. */
	ck_assert_uint_lt(st.by_reference, st.delivered);
	ck_assert_uint_eq(st.linearized, 0);
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

/*
 * IBA 1.5 ATOMIC WRITE: the 8 bytes of the SGE (inline: taken when posted,
 * the source may change at once) land in one store and complete as
 * IBV_WC_ATOMIC_WRITE; to a region without remote write the requester gets
 * a remote access error and the memory stays.
 */
START_TEST(atomic_write_e2e)
{
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	uint64_t *target, *src, *ro;
	struct rc_mr *ro_mr;

	h_pair_init(&p, NULL, NULL, NULL);
	target = (uint64_t *)(void *)(p.buf[1] + 16);
	src = (uint64_t *)(void *)p.buf[0];
	*src = 0xa5a5a5a5deadbeefull;
	s = h_sge(&p, 0, 0, 8);
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.opcode = IBV_WR_ATOMIC_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)target;
	wr.wr.rdma.rkey = rc_mr_rkey(p.mr[1]);
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_ATOMIC_WRITE);
	ck_assert_uint_eq(*target, 0xa5a5a5a5deadbeefull);

	wr.send_flags |= IBV_SEND_INLINE;
	*src = 0x0102030405060708ull;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	*src = 0;
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(*target, 0x0102030405060708ull);
	wr.send_flags &= ~(unsigned)IBV_SEND_INLINE;

	/* Not 8 bytes: refused at post. */
	s.length = 4;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), -EINVAL);
	ck_assert_ptr_eq(bad, &wr);
	s.length = 8;

	/* Without the access right: a remote access error, nothing written. */
	ro = calloc(1, 4096);
	ro_mr = rc_mr_reg(p.e.pd[1], ro, 4096, (uintptr_t)ro,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	ck_assert_ptr_nonnull(ro_mr);
	*src = 77;
	wr.wr.rdma.remote_addr = (uintptr_t)ro;
	wr.wr.rdma.rkey = rc_mr_rkey(ro_mr);
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(*ro, 0);
	ck_assert_int_eq(rc_mr_dereg(ro_mr), 0);
	free(ro);
	h_pair_fini(&p);
}
END_TEST

/* Inline data is copied at post time: the source needs no key and may change right after. */
START_TEST(inline_send_and_write)
{
	struct h_pair p;
	uint8_t src[48];
	struct ibv_sge s = { 0 }, r;
	struct ibv_wc wc[2];

	h_pair_init(&p, NULL, NULL, NULL);
	memset(src, 0x3c, sizeof(src));
	s.addr = (uintptr_t)src;
	s.length = sizeof(src);
	s.lkey = 0;
	r = h_sge(&p, 1, 0, 100);
	ck_assert_int_eq(h_post_recv(p.qp[1], 1, &r, 1), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0,
				     IBV_SEND_INLINE | IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1,
				     (uintptr_t)p.buf[1] + 1000, rc_mr_rkey(p.mr[1]),
				     IBV_SEND_INLINE | IBV_SEND_SIGNALED), 0);
	memset(src, 0, sizeof(src));
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IBV_WC_SUCCESS);
	for (int i = 0; i < 48; i++) {
		ck_assert_uint_eq(p.buf[1][i], 0x3c);
		ck_assert_uint_eq(p.buf[1][1000 + i], 0x3c);
	}
	h_pair_fini(&p);
}
END_TEST

/* Gather from three SGEs, scatter into three, reads into three. */
START_TEST(sge_lists)
{
	struct h_qp_opts qo = { .type = IBV_QPT_RC, .max_sge = 3 };
	struct h_pair p;
	struct ibv_sge s[3], r[3];
	struct ibv_wc wc;
	uint8_t want[6000];

	h_pair_init(&p, NULL, NULL, &qo);
	h_fill(p.buf[0], 30000, 11);
	s[0] = h_sge(&p, 0, 0, 1000);
	s[1] = h_sge(&p, 0, 10000, 3000);
	s[2] = h_sge(&p, 0, 20000, 2000);
	memcpy(want, p.buf[0], 1000);
	memcpy(want + 1000, p.buf[0] + 10000, 3000);
	memcpy(want + 4000, p.buf[0] + 20000, 2000);
	r[0] = h_sge(&p, 1, 50000, 10);
	r[1] = h_sge(&p, 1, 60000, 0);
	r[2] = h_sge(&p, 1, 70000, 7000);
	ck_assert_int_eq(h_post_recv(p.qp[1], 1, r, 3), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, s, 3, 0, 0, 0), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.byte_len, 6000);
	ck_assert_int_eq(memcmp(p.buf[1] + 50000, want, 10), 0);
	ck_assert_int_eq(memcmp(p.buf[1] + 70000, want + 10, 5990), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, s, 3, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(memcmp(p.buf[1], want, 6000), 0);
	/* Read it back into three pieces of local memory. */
	s[0] = h_sge(&p, 0, 100000, 5);
	s[1] = h_sge(&p, 0, 110000, 4000);
	s[2] = h_sge(&p, 0, 120000, 1995);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 3, s, 3, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0] + 100000, want, 5), 0);
	ck_assert_int_eq(memcmp(p.buf[0] + 110000, want + 5, 4000), 0);
	ck_assert_int_eq(memcmp(p.buf[0] + 120000, want + 4005, 1995), 0);
	h_pair_fini(&p);
}
END_TEST

START_TEST(unsignaled_and_sig_all)
{
	struct h_qp_opts all = { .type = IBV_QPT_RC, .sq_sig_all = true };
	struct h_pair p;
	struct ibv_sge s;
	struct ibv_wc wc[8];

	h_pair_init(&p, NULL, NULL, _i ? &all : NULL);
	s = h_sge(&p, 0, 0, 100);
	for (uint64_t i = 1; i <= 4; i++)
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, i, &s, 1,
					     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
					     i == 4 ? IBV_SEND_SIGNALED : 0), 0);
	h_run(&p.e, RUN_NS);
	if (_i) {
		ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 4);
		for (int i = 0; i < 4; i++)
			ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 1);
	} else {
		ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 8, wc), 1);
		ck_assert_uint_eq(wc[0].wr_id, 4);
	}
	h_pair_fini(&p);
}
END_TEST

/* A fenced WR waits for the read before it; without the fence it does not. */
START_TEST(fence_waits_for_reads)
{
	struct h_opts eo = { .delay_ns = 10000 };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	struct ibv_wc wc[2];
	const struct h_frame *rd, *resp, *wr;
	int fence = _i ? IBV_SEND_FENCE : 0;

	h_pair_init(&p, &eo, NULL, NULL);
	h_capture(&p.e, &cap);
	s = h_sge(&p, 0, 0, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	s = h_sge(&p, 0, 1000, 64);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1,
				     (uintptr_t)p.buf[1] + 1000, rc_mr_rkey(p.mr[1]),
				     IBV_SEND_SIGNALED | fence), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 2, RUN_NS), 2);
	rd = h_cap_find(&cap, 0, WIRE_OPC_RC | WIRE_OP_READ_REQUEST, 0);
	resp = h_cap_find(&cap, 1, WIRE_OPC_RC | WIRE_OP_READ_RESP_ONLY, 0);
	wr = h_cap_find(&cap, 0, WIRE_OPC_RC | WIRE_OP_WRITE_ONLY, 0);
	if (fence)
		ck_assert_uint_ge(wr->t, resp->t + 10000);
	else
		ck_assert_uint_eq(wr->t, rd->t);
	h_pair_fini(&p);
}
END_TEST

/* max_rd_atomic 2: only two reads go out before the first response comes back. */
START_TEST(max_rd_atomic_limits_reads)
{
	struct h_opts eo = { .delay_ns = 10000 };
	struct h_conn c = { .max_rd_atomic = 2 };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	struct ibv_wc wc[5];
	const struct h_frame *first_resp;
	unsigned before = 0;

	h_pair_init(&p, &eo, &c, NULL);
	h_capture(&p.e, &cap);
	for (uint64_t i = 0; i < 5; i++) {
		s = h_sge(&p, 0, i * 100, 100);
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, i, &s, 1,
					     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
					     IBV_SEND_SIGNALED), 0);
	}
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 5, RUN_NS), 5);
	first_resp = h_cap_find(&cap, 1, WIRE_OPC_RC | WIRE_OP_READ_RESP_ONLY, 0);
	for (unsigned i = 0; i < cap.n; i++)
		before += cap.f[i].from == 0 && cap.f[i].t < first_resp->t + 10000 &&
			  cap.f[i].opcode == (WIRE_OPC_RC | WIRE_OP_READ_REQUEST);
	ck_assert_uint_eq(before, 2);
	ck_assert_uint_eq(h_cap_count(&cap, 0, WIRE_OPC_RC | WIRE_OP_READ_REQUEST), 5);
	h_pair_fini(&p);
}
END_TEST

/* AckReq on the last packet and every 32 packets inside a long message. */
START_TEST(ackreq_periodic)
{
	struct h_conn c = { .mtu = IBV_MTU_256 };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	struct ibv_wc wc;
	unsigned n = 0, with = 0;

	h_pair_init(&p, NULL, &c, NULL);
	h_capture(&p.e, &cap);
	s = h_sge(&p, 0, 0, 100 * 256);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	for (unsigned i = 0; i < cap.n; i++) {
		if (cap.f[i].from != 0)
			continue;
		n++;
		if (cap.f[i].ackreq) {
			with++;
			ck_assert(n % 32 == 0 || n == 100);
		}
	}
	ck_assert_uint_eq(n, 100);
	ck_assert_uint_eq(with, 4);
	h_pair_fini(&p);
}
END_TEST

/*
 * A multi-packet write and a read over other GIDs.  Loop: 0 IPv6, then RoCE
 * v1, 1 IPv4-mapped and 2 fe80:: with neighbour resolution failing on both
 * sides (so the MAC can only come from the GID's EUI-64); every frame both
 * ways v1 then.
 */
START_TEST(rc_over_other_gids)
{
	struct h_conn c = { .gid_index = 1 + _i };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, &c, NULL);
	if (_i == 2) {
		port_sim_set_resolve(p.e.link, 0, -EHOSTUNREACH);
		port_sim_set_resolve(p.e.link, 1, -EHOSTUNREACH);
	}
	h_capture(&p.e, &cap);
	h_fill(p.buf[0], 9000, 12);
	s = h_sge(&p, 0, 0, 9000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 9000), 0);
	s = h_sge(&p, 0, 20000, 3000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 2, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0] + 20000, p.buf[1], 3000), 0);
	ck_assert_uint_gt(cap.n, 10);
	ck_assert_uint_gt(h_cap_count(&cap, 1, WIRE_OPC_RC | WIRE_OP_READ_RESP_FIRST), 0);
	for (unsigned i = 0; i < cap.n; i++)
		ck_assert_msg(cap.f[i].roce_v1 == (_i > 0), "frame %u (opcode 0x%02x from side %d)",
			      i, cap.f[i].opcode, cap.f[i].from);
	h_pair_fini(&p);
}
END_TEST

/*
 * One engine serves RoCE v1 and v2 at once: a second QP pair on the fe80::
 * v1 GID beside the pair on the IPv4 v2 GID, their writes in flight together;
 * each pair's frames carry its own version and land in its own memory.
 */
START_TEST(rc_v1_and_v2_at_once)
{
	struct h_conn v1 = { .gid_index = 3 };
	struct rc_qp *q[2];
	struct ibv_sge s0, s1;
	struct ibv_wc wc[2];
	struct h_pair p;
	struct h_cap cap;
	unsigned v1_frames = 0, v2_frames = 0;

	h_pair_init(&p, NULL, NULL, NULL);
	for (int side = 0; side < 2; side++)
		q[side] = h_qp(&p.e, side, &(struct h_qp_opts){ 0 });
	h_connect(&p.e, q[0], 0, q[1], 1, &v1);
	h_capture(&p.e, &cap);
	h_fill(p.buf[0], 20000, 21);
	s0 = h_sge(&p, 0, 0, 8000);
	s1 = h_sge(&p, 0, 8000, 8000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s0, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_post_send(q[0], IBV_WR_RDMA_WRITE, 2, &s1, 1,
				     (uintptr_t)p.buf[1] + 8000, rc_mr_rkey(p.mr[1]),
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[1].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 16000), 0);
	for (unsigned i = 0; i < cap.n; i++) {
		uint32_t qpn = cap.f[i].dest_qp;
		bool to_v1 = qpn == rc_qp_num(q[0]) || qpn == rc_qp_num(q[1]);

		ck_assert_msg(cap.f[i].roce_v1 == to_v1, "frame %u to QP 0x%x", i, qpn);
		if (to_v1)
			v1_frames++;
		else
			v2_frames++;
	}
	ck_assert_uint_gt(v1_frames, 8);
	ck_assert_uint_gt(v2_frames, 8);
	for (int side = 0; side < 2; side++)
		ck_assert_int_eq(rc_qp_destroy(q[side]), 0);
	h_pair_fini(&p);
}
END_TEST

/* Send with invalidate from a real requester: the responder's MR keys die. */
START_TEST(send_with_invalidate_e2e)
{
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;
	uint8_t *mem = calloc(1, 4096);
	struct rc_mr *mr;

	h_pair_init(&p, NULL, NULL, NULL);
	mr = rc_mr_reg(p.e.pd[1], mem, 4096, (uintptr_t)mem,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	r = h_sge(&p, 1, 0, 100);
	ck_assert_int_eq(h_post_recv(p.qp[1], 1, &r, 1), 0);
	s = h_sge(&p, 0, 0, 10);
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_INV;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.invalidate_rkey = rc_mr_rkey(mr);
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.wc_flags, IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, rc_mr_rkey(mr));
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)mem,
				     rc_mr_rkey(mr), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(mem[0], 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_pair_fini(&p);
	free(mem);
}
END_TEST

Suite *rc_transfer_suite(void)
{
	Suite *s = suite_create("rc_transfer");
	TCase *tc = tcase_create("ops");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, send_recv_sizes, 0, N_SIZES);
	tcase_add_loop_test(tc, write_read_sizes, 0, N_SIZES);
	tcase_add_test(tc, zero_copy_when_buffers_run_out);
	tcase_add_loop_test(tc, every_mtu, 0, 5);
	tcase_add_loop_test(tc, no_retransmits_without_loss, 0, 4);
	tcase_add_test(tc, write_with_imm);
	tcase_add_test(tc, atomics);
	tcase_add_test(tc, atomic_write_e2e);
	tcase_add_test(tc, inline_send_and_write);
	tcase_add_test(tc, sge_lists);
	tcase_add_loop_test(tc, unsignaled_and_sig_all, 0, 2);
	tcase_add_loop_test(tc, fence_waits_for_reads, 0, 2);
	tcase_add_test(tc, max_rd_atomic_limits_reads);
	tcase_add_test(tc, ackreq_periodic);
	tcase_add_loop_test(tc, rc_over_other_gids, 0, 3);
	tcase_add_test(tc, rc_v1_and_v2_at_once);
	tcase_add_test(tc, send_with_invalidate_e2e);
	suite_add_tcase(s, tc);
	return s;
}
