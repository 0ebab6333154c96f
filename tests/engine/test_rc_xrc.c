// SPDX-License-Identifier: MIT
/* XRC on the simulated link: one initiator, one target QP, two SRQs of its domain, one of another. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS	100000000ull
#define BUF_LEN	(64 * 1024)
#define OP_XRC(x) (WIRE_OPC_XRC | WIRE_OP_##x)

/*
 * Side 0: an XRC initiator on the harness's PD and CQ.  Side 1: a domain with
 * a target QP and SRQs A (completing into the harness's CQ) and B (its own
 * CQ), and a second domain with SRQ X.  All SRQs are on side 1's PD, which
 * holds the registered buffer.
 */
struct xrc {
	struct h_env	e;
	struct rc_qp	*ini, *tgt;
	struct rc_xrcd	*xrcd, *other_xrcd;
	struct rc_srq	*srq_a, *srq_b, *srq_x;
	struct rc_cq	*cq_b, *cq_x;
	uint8_t		*buf[2];
	struct rc_mr	*mr[2];
};

static struct rc_srq *xrc_srq(struct xrc *x, struct rc_xrcd *d, struct rc_cq *cq)
{
	struct ibv_srq_init_attr a = { .attr = { .max_wr = 16, .max_sge = 2 } };
	struct rc_srq *srq = rc_srq_create_xrc(x->e.pd[1], d, cq, &a, NULL);

	ck_assert_ptr_nonnull(srq);
	return srq;
}

static void xrc_init(struct xrc *x)
{
	struct rc_qp_init ini = {
		.qp_type = IBV_QPT_XRC_SEND, .pd = NULL, .send_cq = NULL,
		.cap = { .max_send_wr = 32, .max_send_sge = 2 },
	};
	struct rc_qp_init tgt = { .qp_type = IBV_QPT_XRC_RECV };
	struct h_conn c = { .psn = { 0x100, 0x900 } };

	memset(x, 0, sizeof(*x));
	h_env_init(&x->e, NULL);
	for (int s = 0; s < 2; s++) {
		x->buf[s] = calloc(1, BUF_LEN);
		x->mr[s] = rc_mr_reg(x->e.pd[s], x->buf[s], BUF_LEN, (uintptr_t)x->buf[s],
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		ck_assert_ptr_nonnull(x->mr[s]);
	}
	x->xrcd = rc_xrcd_alloc(x->e.eng[1]);
	x->other_xrcd = rc_xrcd_alloc(x->e.eng[1]);
	x->cq_b = rc_cq_create(x->e.eng[1], 64, NULL);
	x->cq_x = rc_cq_create(x->e.eng[1], 64, NULL);
	ck_assert(x->xrcd && x->other_xrcd && x->cq_b && x->cq_x);
	x->srq_a = xrc_srq(x, x->xrcd, x->e.cq[1]);
	x->srq_b = xrc_srq(x, x->xrcd, x->cq_b);
	x->srq_x = xrc_srq(x, x->other_xrcd, x->cq_x);

	ini.pd = x->e.pd[0];
	ini.send_cq = x->e.cq[0];
	x->ini = rc_qp_create(x->e.eng[0], &ini);
	tgt.xrcd = x->xrcd;
	x->tgt = rc_qp_create(x->e.eng[1], &tgt);
	ck_assert(x->ini && x->tgt);
	h_connect_one(x->ini, 1, rc_qp_num(x->tgt), c.psn[1], c.psn[0], &c);
	h_connect_one(x->tgt, 0, rc_qp_num(x->ini), c.psn[0], c.psn[1], &c);
}

static void xrc_fini(struct xrc *x)
{
	ck_assert_int_eq(rc_qp_destroy(x->ini), 0);
	ck_assert_int_eq(rc_qp_destroy(x->tgt), 0);
	ck_assert_int_eq(rc_srq_destroy(x->srq_a), 0);
	ck_assert_int_eq(rc_srq_destroy(x->srq_b), 0);
	ck_assert_int_eq(rc_srq_destroy(x->srq_x), 0);
	ck_assert_int_eq(rc_cq_destroy(x->cq_b), 0);
	ck_assert_int_eq(rc_cq_destroy(x->cq_x), 0);
	ck_assert_int_eq(rc_xrcd_free(x->xrcd), 0);
	ck_assert_int_eq(rc_xrcd_free(x->other_xrcd), 0);
	for (int s = 0; s < 2; s++) {
		ck_assert_int_eq(rc_mr_dereg(x->mr[s]), 0);
		free(x->buf[s]);
	}
	h_env_fini(&x->e);
}

static struct ibv_sge sge(struct xrc *x, int side, size_t off, uint32_t len)
{
	return (struct ibv_sge){ (uintptr_t)x->buf[side] + off, len, rc_mr_lkey(x->mr[side]) };
}

static void srq_recv(struct xrc *x, struct rc_srq *srq, uint64_t wr_id, size_t off, uint32_t len)
{
	struct ibv_sge s = sge(x, 1, off, len);
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &s, .num_sge = 1 }, *bad;

	ck_assert_int_eq(rc_srq_post_recv(srq, &wr, &bad), 0);
}

/* One signaled work request on the initiator, for the target's SRQ @srqn. */
static void xrc_post(struct xrc *x, enum ibv_wr_opcode op, uint64_t wr_id, uint32_t srqn,
		     size_t off, uint32_t len, uint64_t raddr)
{
	struct ibv_sge s = sge(x, 0, off, len);
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0xabcd0000u | (uint32_t)wr_id),
	}, *bad;

	wr.qp_type.xrc.remote_srqn = srqn;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rc_mr_rkey(x->mr[1]);
		wr.wr.atomic.compare_add = 5;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rc_mr_rkey(x->mr[1]);
	}
	ck_assert_int_eq(rc_post_send(x->ini, &wr, &bad), 0);
}

static uint64_t remote(struct xrc *x, size_t off)
{
	return (uintptr_t)x->buf[1] + off;
}

/*
 * Sends to SRQ A and B through one target QP: each lands in its SRQ's WQE and
 * completes on that SRQ's CQ; every request carries its XRCETH, the ACKs are
 * XRC ACKs without one.
 */
START_TEST(send_to_two_srqs)
{
	struct xrc x;
	struct h_cap cap;
	struct ibv_wc wc[3];

	xrc_init(&x);
	h_capture(&x.e, &cap);
	h_fill(x.buf[0], 8192, 1);
	srq_recv(&x, x.srq_a, 10, 0, 4096);
	srq_recv(&x, x.srq_b, 20, 8192, 4096);
	srq_recv(&x, x.srq_a, 11, 16384, 4096);
	xrc_post(&x, IBV_WR_SEND, 1, rc_srq_num(x.srq_a), 0, 3000, 0);
	xrc_post(&x, IBV_WR_SEND_WITH_IMM, 2, rc_srq_num(x.srq_b), 3000, 100, 0);
	xrc_post(&x, IBV_WR_SEND, 3, rc_srq_num(x.srq_a), 4000, 10, 0);

	ck_assert_int_eq(h_wait_cq(&x.e, x.e.cq[0], wc, 3, RUN_NS), 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		ck_assert_uint_eq(wc[i].wr_id, (uint64_t)i + 1);
	}
	ck_assert_int_eq(h_wait_cq(&x.e, x.e.cq[1], wc, 2, RUN_NS), 2);
	ck_assert_uint_eq(wc[0].wr_id, 10);
	ck_assert_uint_eq(wc[0].byte_len, 3000);
	ck_assert_uint_eq(wc[0].qp_num, rc_qp_num(x.tgt));
	ck_assert_uint_eq(wc[1].wr_id, 11);
	ck_assert_uint_eq(wc[1].byte_len, 10);
	ck_assert_int_eq(h_wait_cq(&x.e, x.cq_b, wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc[0].wr_id, 20);
	ck_assert_uint_eq(wc[0].byte_len, 100);
	ck_assert(wc[0].wc_flags & IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(wc[0].imm_data), 0xabcd0002u);
	ck_assert_mem_eq(x.buf[1], x.buf[0], 3000);
	ck_assert_mem_eq(x.buf[1] + 8192, x.buf[0] + 3000, 100);
	ck_assert_mem_eq(x.buf[1] + 16384, x.buf[0] + 4000, 10);
	ck_assert_int_eq(rc_cq_poll(x.cq_x, 1, wc), 0);

	/* 3000 bytes at PMTU 1024: FIRST, MIDDLE, LAST, each naming SRQ A. */
	ck_assert_uint_eq(h_cap_count(&cap, 0, OP_XRC(SEND_FIRST)), 1);
	ck_assert_uint_eq(h_cap_find(&cap, 0, OP_XRC(SEND_MIDDLE), 0)->xrc_srqn,
			  rc_srq_num(x.srq_a));
	ck_assert_uint_eq(h_cap_find(&cap, 0, OP_XRC(SEND_LAST), 0)->xrc_srqn,
			  rc_srq_num(x.srq_a));
	ck_assert_uint_eq(h_cap_find(&cap, 0, OP_XRC(SEND_ONLY_IMM), 0)->xrc_srqn,
			  rc_srq_num(x.srq_b));
	ck_assert_uint_ge(h_cap_count(&cap, 1, OP_XRC(ACKNOWLEDGE)), 1);
	ck_assert_uint_eq(h_cap_find(&cap, 1, OP_XRC(ACKNOWLEDGE), 0)->xrc_srqn, 0);
	ck_assert_uint_eq(h_cap_count(&cap, 1, WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE), 0);
	xrc_fini(&x);
}
END_TEST

/*
 * Writes, a write with immediate (a WQE of SRQ B), a read and an atomic
 * through the target QP: memory checked against the SRQ's PD, the answers
 * XRC read responses and an XRC atomic acknowledge.
 */
START_TEST(write_read_atomic)
{
	struct xrc x;
	struct h_cap cap;
	struct ibv_wc wc[4];
	uint64_t v = 37;

	xrc_init(&x);
	h_capture(&x.e, &cap);
	h_fill(x.buf[0], 8192, 2);
	h_fill(x.buf[1] + 32768, 5000, 3);
	memcpy(x.buf[1] + 48, &v, 8);
	srq_recv(&x, x.srq_b, 30, 60000, 16);
	xrc_post(&x, IBV_WR_RDMA_WRITE, 1, rc_srq_num(x.srq_a), 0, 2500, remote(&x, 4096));
	xrc_post(&x, IBV_WR_RDMA_WRITE_WITH_IMM, 2, rc_srq_num(x.srq_b), 2500, 64,
		 remote(&x, 8192));
	xrc_post(&x, IBV_WR_RDMA_READ, 3, rc_srq_num(x.srq_a), 16384, 5000, remote(&x, 32768));
	xrc_post(&x, IBV_WR_ATOMIC_FETCH_AND_ADD, 4, rc_srq_num(x.srq_b), 24576, 8,
		 remote(&x, 48));

	ck_assert_int_eq(h_wait_cq(&x.e, x.e.cq[0], wc, 4, RUN_NS), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(wc[i].status == IBV_WC_SUCCESS, "wr %d: status %d", i + 1,
			      wc[i].status);
	ck_assert_mem_eq(x.buf[1] + 4096, x.buf[0], 2500);
	ck_assert_mem_eq(x.buf[1] + 8192, x.buf[0] + 2500, 64);
	ck_assert_mem_eq(x.buf[0] + 16384, x.buf[1] + 32768, 5000);
	memcpy(&v, x.buf[0] + 24576, 8);
	ck_assert_uint_eq(v, 37);
	memcpy(&v, x.buf[1] + 48, 8);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(h_wait_cq(&x.e, x.cq_b, wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc[0].wr_id, 30);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc[0].byte_len, 64);
	ck_assert_int_eq(rc_cq_poll(x.e.cq[1], 1, wc), 0);

	ck_assert_uint_eq(h_cap_find(&cap, 0, OP_XRC(WRITE_FIRST), 0)->xrc_srqn,
			  rc_srq_num(x.srq_a));
	ck_assert_uint_eq(h_cap_find(&cap, 0, OP_XRC(READ_REQUEST), 0)->dma_len, 5000);
	ck_assert_uint_eq(h_cap_count(&cap, 1, OP_XRC(READ_RESP_FIRST)), 1);
	ck_assert_uint_eq(h_cap_count(&cap, 1, OP_XRC(READ_RESP_LAST)), 1);
	ck_assert_uint_eq(h_cap_find(&cap, 1, OP_XRC(ATOMIC_ACKNOWLEDGE), 0)->orig, 37);
	xrc_fini(&x);
}
END_TEST

/*
 * A message naming an SRQ of another domain (_i 0) or no SRQ at all (_i 1):
 * NAK invalid request, the initiator's WQE completes with
 * IBV_WC_REM_INV_REQ_ERR, the target QP goes to ERR, and no SRQ loses a WQE.
 */
START_TEST(srq_not_in_domain)
{
	struct xrc x;
	struct ibv_wc wc;
	uint32_t srqn;

	xrc_init(&x);
	srqn = _i == 0 ? rc_srq_num(x.srq_x) : 0xfffff0;
	srq_recv(&x, x.srq_x, 40, 0, 64);
	srq_recv(&x, x.srq_a, 41, 64, 64);
	xrc_post(&x, IBV_WR_SEND, 1, srqn, 0, 32, 0);

	ck_assert_int_eq(h_wait_cq(&x.e, x.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_INV_REQ_ERR);
	ck_assert_int_eq(h_qp_state(x.tgt), IBV_QPS_ERR);
	ck_assert_uint_eq(h_qp_counters(x.tgt).inv_req_naks_tx, 1);
	ck_assert_uint_eq(h_qp_counters(x.ini).inv_req_naks_rx, 1);
	ck_assert_uint_eq(h_count_events(&x.e, IBV_EVENT_QP_REQ_ERR), 1);
	ck_assert_int_eq(rc_cq_poll(x.cq_x, 1, &wc), 0);
	ck_assert_int_eq(rc_cq_poll(x.e.cq[1], 1, &wc), 0);
	xrc_fini(&x);
}
END_TEST

/*
 * The R_Key of a write is checked against the PD of the SRQ its XRCETH
 * names: through an SRQ of the same domain on another PD, side 1's region
 * is out of reach (NAK remote access error, IBV_WC_REM_ACCESS_ERR).
 */
START_TEST(rkey_checked_against_srq_pd)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct rc_pd *other_pd;
	struct rc_srq *srq_c;
	struct ibv_wc wc;
	struct xrc x;

	xrc_init(&x);
	other_pd = rc_pd_alloc(x.e.eng[1]);
	ck_assert_ptr_nonnull(other_pd);
	srq_c = rc_srq_create_xrc(other_pd, x.xrcd, x.e.cq[1], &sa, NULL);
	ck_assert_ptr_nonnull(srq_c);
	h_fill(x.buf[0], 64, 4);
	xrc_post(&x, IBV_WR_RDMA_WRITE, 1, rc_srq_num(srq_c), 0, 64, remote(&x, 0));

	ck_assert_int_eq(h_wait_cq(&x.e, x.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(h_qp_counters(x.tgt).rem_access_naks_tx, 1);
	ck_assert_int_eq(h_qp_state(x.tgt), IBV_QPS_ERR);
	for (int i = 0; i < 64; i++)
		ck_assert_uint_eq(x.buf[1][i], 0);
	ck_assert_int_eq(rc_srq_destroy(srq_c), 0);
	ck_assert_int_eq(rc_pd_free(other_pd), 0);
	xrc_fini(&x);
}
END_TEST

/*
 * The objects: SRQ numbers, references on the domain, ibv_open_qp's lookup,
 * and the verbs XRC QPs refuse.
 */
START_TEST(objects_and_refusals)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 4, .max_sge = 1 } };
	struct rc_qp_init bad = { .qp_type = IBV_QPT_XRC_RECV };
	struct ibv_recv_wr rwr = { 0 }, *rbad;
	struct ibv_send_wr swr = { .opcode = IBV_WR_SEND }, *sbad;
	struct rc_srq *basic;
	struct xrc x;

	xrc_init(&x);
	basic = rc_srq_create(x.e.pd[1], &sa, NULL);
	ck_assert_ptr_nonnull(basic);
	ck_assert_uint_eq(rc_srq_num(basic), 0);
	ck_assert_uint_ne(rc_srq_num(x.srq_a), 0);
	ck_assert_uint_ne(rc_srq_num(x.srq_a), rc_srq_num(x.srq_b));
	ck_assert_uint_eq(rc_srq_num(x.srq_a) & ~WIRE_SRQN_MASK, 0);
	ck_assert_int_eq(rc_srq_destroy(basic), 0);

	ck_assert_int_eq(rc_xrcd_free(x.xrcd), -EBUSY);
	ck_assert_ptr_eq(rc_qp_open_xrc(x.xrcd, rc_qp_num(x.tgt)), x.tgt);
	errno = 0;
	ck_assert_ptr_null(rc_qp_open_xrc(x.other_xrcd, rc_qp_num(x.tgt)));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(rc_qp_open_xrc(x.xrcd, rc_qp_num(x.tgt) + 1000));

	/* A target with a PD, an XRC SRQ without a CQ: refused. */
	bad.xrcd = x.xrcd;
	bad.pd = x.e.pd[1];
	errno = 0;
	ck_assert_ptr_null(rc_qp_create(x.e.eng[1], &bad));
	ck_assert_int_eq(errno, EINVAL);
	ck_assert_ptr_null(rc_srq_create_xrc(x.e.pd[1], x.xrcd, NULL, &sa, NULL));

	/* No receive queue on either half, no send queue on the target, no atomic write. */
	ck_assert_int_eq(rc_post_recv(x.ini, &rwr, &rbad), -EINVAL);
	ck_assert_int_eq(rc_post_recv(x.tgt, &rwr, &rbad), -EINVAL);
	ck_assert_int_eq(rc_post_send(x.tgt, &swr, &sbad), -EINVAL);
	swr.opcode = IBV_WR_ATOMIC_WRITE;
	ck_assert_int_eq(rc_post_send(x.ini, &swr, &sbad), -EINVAL);
	xrc_fini(&x);
}
END_TEST

Suite *rc_xrc_suite(void)
{
	Suite *s = suite_create("rc_xrc");
	TCase *t = tcase_create("xrc");

	tcase_add_test(t, send_to_two_srqs);
	tcase_add_test(t, write_read_atomic);
	tcase_add_loop_test(t, srq_not_in_domain, 0, 2);
	tcase_add_test(t, rkey_checked_against_srq_pd);
	tcase_add_test(t, objects_and_refusals);
	suite_add_tcase(s, t);
	return s;
}
