// SPDX-License-Identifier: MIT
/*
 * Go-Back-N and the error paths end to end: exact packets are dropped on the
 * simulated link and the requester must recover (sequence NAK, timeout, RNR,
 * partial read, atomic replay, PSN wrap) or end in the right error completion.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS		2000000000ull
#define TIMEOUT_10_NS	(4096ull << 10)		/* local ACK timeout 10 */
#define OP(x)		(WIRE_OPC_RC | WIRE_OP_##x)

static int write_to_peer(struct h_pair *p, uint64_t wr_id, size_t off, uint32_t len, int flags)
{
	struct ibv_sge s = h_sge(p, 0, off, len);

	return h_post_send(p->qp[0], IBV_WR_RDMA_WRITE, wr_id, &s, 1,
			   (uintptr_t)p->buf[1] + off, rc_mr_rkey(p->mr[1]), flags);
}

static void expect_wc(struct h_pair *p, int side, uint64_t wr_id, enum ibv_wc_status st)
{
	struct ibv_wc wc;

	ck_assert_int_eq(h_wait_cq(&p->e, p->e.cq[side], &wc, 1, RUN_NS), 1);
	ck_assert_msg(wc.wr_id == wr_id && wc.status == st,
		      "completion %llu status %d, expected %llu status %d",
		      (unsigned long long)wc.wr_id, wc.status, (unsigned long long)wr_id, st);
}

START_TEST(seq_nak_recovers)
{
	struct h_pair p;
	struct h_cap cap;

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 0, OP(WRITE_MIDDLE), 1, 1);
	h_fill(p.buf[0], 20000, 1);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 20000, IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 20000), 0);
	/* 18 packets arrived after the gap: still exactly one NAK. */
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).seq_naks_tx, 1);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).seq_naks_rx, 1);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, 0);
	ck_assert_uint_ge(h_qp_counters(p.qp[0]).retransmits, 18);
	h_pair_fini(&p);
}
END_TEST

START_TEST(tail_loss_timeout)
{
	struct h_pair p;
	struct h_cap cap;
	uint64_t t0;

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 0, OP(WRITE_ONLY), 1, 1);
	h_fill(p.buf[0], 100, 2);
	t0 = p.e.now;
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 100, IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	ck_assert_uint_ge(p.e.now - t0, TIMEOUT_10_NS);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, 1);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 100), 0);
	h_pair_fini(&p);
}
END_TEST

START_TEST(lost_ack_duplicate_not_reexecuted)
{
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s, r;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 1, OP(ACKNOWLEDGE), 1, 1);
	r = h_sge(&p, 1, 0, 1000);
	ck_assert_int_eq(h_post_recv(p.qp[1], 1, &r, 1), 0);
	ck_assert_int_eq(h_post_recv(p.qp[1], 2, &r, 1), 0);
	s = h_sge(&p, 0, 0, 500);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 9, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 9, IBV_WC_SUCCESS);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).duplicates, 1);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[1], 1, &wc), 0);	/* delivered once */
	h_pair_fini(&p);
}
END_TEST

/* Loop over retry_cnt 0 and 3: retry_cnt + 1 timeouts, then the error; the rest flushed. */
START_TEST(retry_exhausted)
{
	struct h_conn c = { .retry_set = true, .retry_cnt = _i ? 3 : 0, .rnr_retry = 7 };
	struct h_pair p;
	struct h_cap cap;
	uint64_t t0;

	h_pair_init(&p, NULL, &c, NULL);
	h_capture(&p.e, &cap);
	cap.drop_all[0] = true;
	t0 = p.e.now;
	for (uint64_t i = 1; i <= 3; i++)
		ck_assert_int_eq(write_to_peer(&p, i, 0, 64, i == 2 ? 0 : IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_RETRY_EXC_ERR);
	expect_wc(&p, 0, 2, IBV_WC_WR_FLUSH_ERR);	/* unsignaled, flushed all the same */
	expect_wc(&p, 0, 3, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, c.retry_cnt + 1u);
	ck_assert_uint_ge(p.e.now - t0, (c.retry_cnt + 1u) * TIMEOUT_10_NS);
	ck_assert_int_eq(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	h_pair_fini(&p);
}
END_TEST

START_TEST(timeout_zero_waits_forever)
{
	struct h_conn c = { .no_timeout = true };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, &c, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 0, OP(WRITE_ONLY), 1, 1);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 64, IBV_SEND_SIGNALED), 0);
	h_run(&p.e, 10ull * 1000 * 1000 * 1000);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 1, &wc), 0);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, 0);
	ck_assert_uint_eq(rc_engine_next_deadline(p.e.eng[0]), UINT64_MAX);
	h_pair_fini(&p);
}
END_TEST

static bool rnr_seen(void *arg)
{
	return h_qp_counters(arg).rnr_naks_rx > 0;
}

START_TEST(rnr_waits_timer_then_succeeds)
{
	struct h_conn c = { .min_rnr_timer = 14 };	/* 1.28 ms */
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s, r;
	const struct h_frame *first, *retry;

	h_pair_init(&p, NULL, &c, NULL);
	h_capture(&p.e, &cap);
	s = h_sge(&p, 0, 0, 300);
	h_fill(p.buf[0], 300, 5);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert(h_run_until(&p.e, rnr_seen, p.qp[0], RUN_NS));
	r = h_sge(&p, 1, 4096, 1000);
	ck_assert_int_eq(h_post_recv(p.qp[1], 7, &r, 1), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	first = h_cap_find(&cap, 0, OP(SEND_ONLY), 0);
	retry = h_cap_find(&cap, 0, OP(SEND_ONLY), 1);
	ck_assert_ptr_nonnull(retry);
	ck_assert_uint_ge(retry->t - first->t, 1280000);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 4096, 300), 0);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).rnr_naks_tx, 1);
	h_pair_fini(&p);
}
END_TEST

START_TEST(rnr_retry_exhausted)
{
	struct h_conn c = { .retry_set = true, .retry_cnt = 7, .rnr_retry = 2 };
	struct h_pair p;
	struct ibv_sge s = { 0 };

	h_pair_init(&p, NULL, &c, NULL);
	s = h_sge(&p, 0, 0, 10);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_RNR_RETRY_EXC_ERR);
	expect_wc(&p, 0, 2, IBV_WC_WR_FLUSH_ERR);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).rnr_naks_rx, 3);
	h_pair_fini(&p);
}
END_TEST

static bool many_rnr(void *arg)
{
	return h_qp_counters(arg).rnr_naks_rx >= 40;
}

START_TEST(rnr_retry_7_is_infinite)
{
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	s = h_sge(&p, 0, 0, 10);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert(h_run_until(&p.e, many_rnr, p.qp[0], RUN_NS));
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 1, &wc), 0);
	r = h_sge(&p, 1, 0, 100);
	ck_assert_int_eq(h_post_recv(p.qp[1], 2, &r, 1), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	h_pair_fini(&p);
}
END_TEST

START_TEST(read_rerequests_missing_part)
{
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	const struct h_frame *first, *again;

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 1, OP(READ_RESP_MIDDLE), 3, 1);	/* the 4th of 8 responses */
	h_fill(p.buf[1], 8192, 3);
	s = h_sge(&p, 0, 0, 8192);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 8192), 0);
	first = h_cap_find(&cap, 0, OP(READ_REQUEST), 0);
	again = h_cap_find(&cap, 0, OP(READ_REQUEST), 1);
	ck_assert_ptr_nonnull(again);
	ck_assert_uint_eq(again->psn, (first->psn + 3) & 0xffffff);
	ck_assert_uint_eq(again->va, (uintptr_t)p.buf[1] + 3 * 1024);
	ck_assert_uint_eq(again->dma_len, 8192 - 3 * 1024);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, 0);
	h_pair_fini(&p);
}
END_TEST

/*
 * The earlier responses gave an RTT sample, so the lost tail is probed for
 * (loop 0); without probes or early retransmission (loop 1) the local ACK
 * timeout asks again.  Either way only the missing part is asked for.
 */
START_TEST(read_last_response_lost)
{
	struct h_opts o = { .no_tail_probe = _i, .no_adaptive_rto = _i };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;

	h_pair_init(&p, &o, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 1, OP(READ_RESP_LAST), 1, 1);
	h_fill(p.buf[1], 5000, 4);
	s = h_sge(&p, 0, 0, 5000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 5000), 0);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).timeouts, _i ? 1 : 0);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).tail_probes, _i ? 0 : 1);
	ck_assert_uint_eq(h_cap_find(&cap, 0, OP(READ_REQUEST), 1)->dma_len, 5000 - 4096);
	h_pair_fini(&p);
}
END_TEST

START_TEST(atomic_replayed_after_lost_ack)
{
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	struct ibv_send_wr wr = { 0 }, *bad;
	uint64_t *target, *result;

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 1, OP(ATOMIC_ACKNOWLEDGE), 1, 1);
	target = (uint64_t *)(void *)(p.buf[1] + 512);
	result = (uint64_t *)(void *)(p.buf[0] + 512);
	*target = 40;
	s = h_sge(&p, 0, 512, 8);
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.atomic.remote_addr = (uintptr_t)target;
	wr.wr.atomic.rkey = rc_mr_rkey(p.mr[1]);
	wr.wr.atomic.compare_add = 2;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	ck_assert_uint_eq(*target, 42);		/* executed once */
	ck_assert_uint_eq(*result, 40);
	ck_assert_uint_eq(h_cap_count(&cap, 0, OP(FETCH_ADD)), 2);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).duplicates, 1);
	h_pair_fini(&p);
}
END_TEST

/* PSNs cross 0xffffff -> 0 in a write, a read and a send, with a loss right at the wrap. */
START_TEST(psn_wraps)
{
	struct h_conn c = { .psn = { 0xfffff8, 0xfffffe } };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s, r;
	struct ibv_wc wc[3];
	unsigned seen = 0;

	h_pair_init(&p, NULL, &c, NULL);
	h_capture(&p.e, &cap);
	h_drop(&cap, 0, OP(WRITE_MIDDLE), 7, 1);
	h_fill(p.buf[0], 40000, 6);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 20000, IBV_SEND_SIGNALED), 0);
	s = h_sge(&p, 0, 60000, 20000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 2, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	r = h_sge(&p, 0, 100000, 20000);
	ck_assert_int_eq(h_post_recv(p.qp[0], 8, &r, 1), 0);
	h_fill(p.buf[1] + 200000, 20000, 9);
	s = h_sge(&p, 1, 200000, 20000);
	ck_assert_int_eq(h_post_send(p.qp[1], IBV_WR_SEND, 3, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 1, 3, IBV_WC_SUCCESS);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 3, RUN_NS), 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		seen |= 1u << wc[i].wr_id;
	}
	ck_assert_uint_eq(seen, 1u << 1 | 1u << 2 | 1u << 8);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 20000), 0);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[0] + 60000, 20000), 0);
	ck_assert_int_eq(memcmp(p.buf[1] + 200000, p.buf[0] + 100000, 20000), 0);
	ck_assert_uint_lt(h_cap_find(&cap, 0, OP(READ_REQUEST), 0)->psn, 0x100);
	h_pair_fini(&p);
}
END_TEST

static void connect_with_resolve(struct h_pair *p, int result)
{
	struct h_qp_opts qo = { .type = IBV_QPT_RC };

	h_env_init(&p->e, NULL);
	port_sim_set_resolve(p->e.link, 0, result);
	for (int s = 0; s < 2; s++) {
		p->buf[s] = calloc(1, H_BUF_LEN);
		p->mr[s] = rc_mr_reg(p->e.pd[s], p->buf[s], H_BUF_LEN, (uintptr_t)p->buf[s],
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
		p->qp[s] = h_qp(&p->e, s, &qo);
	}
	h_connect(&p->e, p->qp[0], 0, p->qp[1], 1, NULL);
}

START_TEST(no_route_ends_in_error)
{
	struct h_pair p;

	connect_with_resolve(&p, -EHOSTUNREACH);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 64, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(write_to_peer(&p, 2, 0, 64, IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_RETRY_EXC_ERR);
	expect_wc(&p, 0, 2, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	h_pair_fini(&p);
}
END_TEST

START_TEST(route_pending_then_sent)
{
	struct h_pair p;
	struct port_sim_stats st;
	struct ibv_wc wc;

	connect_with_resolve(&p, -EAGAIN);
	h_fill(p.buf[0], 64, 7);
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 64, IBV_SEND_SIGNALED), 0);
	for (int i = 0; i < 50; i++) {
		rc_engine_progress(p.e.eng[0], 0);
		p.e.now += 10000;
	}
	port_sim_get_stats(p.e.link, 0, &st);
	ck_assert_uint_eq(st.sent, 0);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 1, &wc), 0);
	port_sim_set_resolve(p.e.link, 0, 0);
	expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 64), 0);
	h_pair_fini(&p);
}
END_TEST

/* Remote errors seen by the requester: status, then its QP and the rest flushed. */
START_TEST(remote_errors_complete_in_order)
{
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_send_wr wr = { 0 }, *bad;
	enum ibv_wc_status want[] = {
		IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_INV_REQ_ERR,
		IBV_WC_REM_OP_ERR,
	};
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	s = h_sge(&p, 0, 0, 8);
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	switch (_i) {
	case 0:		/* bad rkey */
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)p.buf[1];
		wr.wr.rdma.rkey = rc_mr_rkey(p.mr[1]) + 1;
		break;
	case 1:		/* misaligned atomic */
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)p.buf[1] + 3;
		wr.wr.atomic.rkey = rc_mr_rkey(p.mr[1]);
		break;
	case 2:		/* receive buffer too small */
		r = h_sge(&p, 1, 0, 4);
		ck_assert_int_eq(h_post_recv(p.qp[1], 50, &r, 1), 0);
		wr.opcode = IBV_WR_SEND;
		break;
	default:	/* receive buffer with a bad lkey */
		r = h_sge(&p, 1, 0, 100);
		r.lkey ^= 0x10;
		ck_assert_int_eq(h_post_recv(p.qp[1], 50, &r, 1), 0);
		wr.opcode = IBV_WR_SEND;
		break;
	}
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	wr.wr_id = 2;
	wr.opcode = IBV_WR_SEND;
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	expect_wc(&p, 0, 1, want[_i]);
	expect_wc(&p, 0, 2, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	ck_assert_int_eq(h_qp_state(p.qp[1]), IBV_QPS_ERR);
	ck_assert_uint_eq(p.buf[1][0], 0);
	if (_i >= 2) {
		ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
		ck_assert_int_eq(wc.status, _i == 2 ? IBV_WC_LOC_LEN_ERR : IBV_WC_LOC_PROT_ERR);
	}
	h_pair_fini(&p);
}
END_TEST

/* Local errors: nothing goes on the wire for the failing WR. */
START_TEST(local_errors)
{
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s;
	struct rc_mr *ro;
	uint8_t buf[64];

	h_pair_init(&p, NULL, NULL, NULL);
	h_capture(&p.e, &cap);
	ro = rc_mr_reg(p.e.pd[0], buf, sizeof(buf), (uintptr_t)buf, 0);
	ck_assert_ptr_nonnull(ro);
	if (_i == 0) {
		s = h_sge(&p, 0, 0, 64);
		s.lkey += 1;
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1,
					     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
					     IBV_SEND_SIGNALED), 0);
	} else {
		/* A read into memory without local write access. */
		s = (struct ibv_sge){ (uintptr_t)buf, 64, rc_mr_lkey(ro) };
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 1, &s, 1,
					     (uintptr_t)p.buf[1], rc_mr_rkey(p.mr[1]),
					     IBV_SEND_SIGNALED), 0);
	}
	expect_wc(&p, 0, 1, IBV_WC_LOC_PROT_ERR);
	ck_assert_uint_eq(h_cap_count(&cap, 0, 0xffff), 0);
	ck_assert_int_eq(h_qp_state(p.qp[0]), IBV_QPS_ERR);
	ck_assert_int_eq(rc_mr_dereg(ro), 0);
	h_pair_fini(&p);
}
END_TEST

/* A message of 2^22 packets or more would break 24-bit PSN distances: refused. */
START_TEST(too_many_packets)
{
	struct h_conn c = { .mtu = IBV_MTU_256 };
	struct h_pair p;
	struct ibv_sge s;

	h_pair_init(&p, NULL, &c, NULL);
	s = h_sge(&p, 0, 0, 256u << 22);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_READ, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	expect_wc(&p, 0, 1, IBV_WC_LOC_LEN_ERR);
	h_pair_fini(&p);
}
END_TEST

/* A deregistered MR's rkey fails at once. */
START_TEST(dereg_kills_rkey)
{
	struct h_pair p;
	struct rc_mr *mr;
	uint32_t rkey;
	uint8_t *mem = calloc(1, 4096);

	h_pair_init(&p, NULL, NULL, NULL);
	mr = rc_mr_reg(p.e.pd[1], mem, 4096, (uintptr_t)mem,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	rkey = rc_mr_rkey(mr);
	h_fill(p.buf[0], 64, 8);
	{
		struct ibv_sge s = h_sge(&p, 0, 0, 64);

		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem,
					     rkey, IBV_SEND_SIGNALED), 0);
		expect_wc(&p, 0, 1, IBV_WC_SUCCESS);
		ck_assert_int_eq(memcmp(mem, p.buf[0], 64), 0);
		memset(mem, 0, 64);
		ck_assert_int_eq(rc_mr_dereg(mr), 0);
		ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 2, &s, 1, (uintptr_t)mem,
					     rkey, IBV_SEND_SIGNALED), 0);
		expect_wc(&p, 0, 2, IBV_WC_REM_ACCESS_ERR);
		ck_assert_uint_eq(mem[0], 0);
	}
	h_pair_fini(&p);
	free(mem);
}
END_TEST

/* An ACK for PSNs never sent, or from a stranger, completes nothing. */
START_TEST(bogus_acks_ignored)
{
	struct h_conn c = { .psn = { 100, 200 } };
	struct h_pair p;
	struct h_cap cap;
	struct wire_build_desc d = { 0 };
	struct ibv_wc wc;

	h_pair_init(&p, NULL, &c, NULL);
	h_capture(&p.e, &cap);
	cap.drop_all[0] = true;
	ck_assert_int_eq(write_to_peer(&p, 1, 0, 5000, IBV_SEND_SIGNALED), 0);
	h_run(&p.e, 1000);
	d.opcode = OP(ACKNOWLEDGE);
	d.dest_qp = rc_qp_num(p.qp[0]);
	d.psn = 100 + 1000;
	d.aeth.syndrome = 0x1f;
	h_inject(&p.e, 0, &d, NULL, 0);
	d.psn = 104;
	d.ip_version = 4;
	h_gid(1, 0, d.src_gid);
	d.src_gid[15] = 99;		/* not the peer */
	h_gid(0, 0, d.dst_gid);
	h_inject(&p.e, 0, &d, NULL, 0);
	h_run(&p.e, 1000);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[0], 1, &wc), 0);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).rc_drops.count[RC_DROP_WRONG_PEER], 1);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).rc_drops.count[RC_DROP_GHOST_RESPONSE], 1);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_recovery_suite(void)
{
	Suite *s = suite_create("rc_recovery");
	TCase *tc = tcase_create("recovery");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, seq_nak_recovers);
	tcase_add_test(tc, tail_loss_timeout);
	tcase_add_test(tc, lost_ack_duplicate_not_reexecuted);
	tcase_add_loop_test(tc, retry_exhausted, 0, 2);
	tcase_add_test(tc, timeout_zero_waits_forever);
	tcase_add_test(tc, rnr_waits_timer_then_succeeds);
	tcase_add_test(tc, rnr_retry_exhausted);
	tcase_add_test(tc, rnr_retry_7_is_infinite);
	tcase_add_test(tc, read_rerequests_missing_part);
	tcase_add_loop_test(tc, read_last_response_lost, 0, 2);
	tcase_add_test(tc, atomic_replayed_after_lost_ack);
	tcase_add_test(tc, psn_wraps);
	tcase_add_test(tc, no_route_ends_in_error);
	tcase_add_test(tc, route_pending_then_sent);
	tcase_add_loop_test(tc, remote_errors_complete_in_order, 0, 4);
	tcase_add_loop_test(tc, local_errors, 0, 2);
	tcase_add_test(tc, dereg_kills_rkey);
	tcase_add_test(tc, bogus_acks_ignored);
	tcase_add_test(tc, too_many_packets);
	suite_add_tcase(s, tc);
	return s;
}
