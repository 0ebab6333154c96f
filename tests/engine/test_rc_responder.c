// SPDX-License-Identifier: MIT
/*
 * The responder on its own: requests built here are injected into engine 1
 * and what it answers is read off the link.  Each NAK code, duplicates,
 * ACK coalescing, MSN, RNR, SEND_WITH_INV, UC gaps, CNPs, atomicity.
 */
#include <check.h>
#include <endian.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "engine_harness.h"
#include "suites.h"

#define PEER_QPN	0x999
#define EPSN		0xfffffd	/* close to the wrap on purpose */
#define MEM_LEN		65536
#define RUN_NS		100000000ull

#define SYN_ACK		0x1f
#define SYN_NAK(code)	(0x60 | (code))

struct rsp {
	struct h_env	e;
	struct h_cap	cap;
	struct rc_qp	*qp;
	uint8_t		*mem, *ro_mem, *other_mem;
	struct rc_mr	*mr, *ro_mr, *other_mr;
	struct rc_pd	*other_pd;
};

static void rsp_init_opts(struct rsp *r, enum ibv_qp_type t, const struct h_conn *c,
			  const struct h_opts *eo)
{
	struct h_qp_opts qo = { .type = t };

	h_env_init(&r->e, eo);
	r->mem = calloc(1, MEM_LEN);
	r->ro_mem = calloc(1, 4096);
	r->other_mem = calloc(1, 4096);
	r->mr = rc_mr_reg(r->e.pd[1], r->mem, MEM_LEN, (uintptr_t)r->mem,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	r->ro_mr = rc_mr_reg(r->e.pd[1], r->ro_mem, 4096, (uintptr_t)r->ro_mem,
			     IBV_ACCESS_REMOTE_READ);
	r->other_pd = rc_pd_alloc(r->e.eng[1]);
	r->other_mr = rc_mr_reg(r->other_pd, r->other_mem, 4096, (uintptr_t)r->other_mem,
				IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	ck_assert_ptr_nonnull(r->mr);
	ck_assert_ptr_nonnull(r->ro_mr);
	ck_assert_ptr_nonnull(r->other_mr);
	r->qp = h_qp(&r->e, 1, &qo);
	h_connect_one(r->qp, 0, PEER_QPN, EPSN, 0, c);
	h_capture(&r->e, &r->cap);
	r->cap.drop_all[1] = true;	/* no QP on side 0 answers; keep the link clean */
}

static void rsp_init_type(struct rsp *r, enum ibv_qp_type t, const struct h_conn *c)
{
	rsp_init_opts(r, t, c, NULL);
}

static void rsp_init(struct rsp *r)
{
	rsp_init_type(r, IBV_QPT_RC, NULL);
}

static void rsp_fini(struct rsp *r)
{
	ck_assert_int_eq(rc_qp_destroy(r->qp), 0);
	ck_assert_int_eq(rc_mr_dereg(r->mr), 0);
	ck_assert_int_eq(rc_mr_dereg(r->ro_mr), 0);
	ck_assert_int_eq(rc_mr_dereg(r->other_mr), 0);
	ck_assert_int_eq(rc_pd_free(r->other_pd), 0);
	h_env_fini(&r->e);
	free(r->mem);
	free(r->ro_mem);
	free(r->other_mem);
}

static struct wire_build_desc req(struct rsp *r, uint8_t opcode, uint32_t psn, bool ackreq)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = opcode;
	d.psn = psn & 0xffffff;
	d.ackreq = ackreq;
	d.dest_qp = rc_qp_num(r->qp);
	return d;
}

static void inject(struct rsp *r, struct wire_build_desc *d, const void *payload, uint32_t len)
{
	h_inject(&r->e, 1, d, payload, len);
	h_run(&r->e, RUN_NS);
}

static void write_only(struct rsp *r, uint32_t psn, bool ackreq, uint64_t va, uint32_t rkey,
		       const void *data, uint32_t len)
{
	struct wire_build_desc d = req(r, WIRE_OP_WRITE_ONLY, psn, ackreq);

	d.reth.va = va;
	d.reth.rkey = rkey;
	d.reth.len = len;
	inject(r, &d, data, len);
}

/* The @nth (0-based) acknowledgement the responder sent. */
static const struct h_frame *ack(struct rsp *r, unsigned nth)
{
	return h_cap_find(&r->cap, 1, WIRE_OP_ACKNOWLEDGE, nth);
}

static unsigned n_acks(struct rsp *r)
{
	return h_cap_count(&r->cap, 1, WIRE_OP_ACKNOWLEDGE);
}

static enum ibv_qp_state qp_state(struct rc_qp *qp)
{
	struct ibv_qp_attr a;

	rc_qp_query(qp, &a, IBV_QP_STATE, NULL);
	return a.qp_state;
}

static struct rc_counters qp_cnt(struct rc_qp *qp)
{
	struct rc_counters c;

	rc_qp_counters(qp, &c);
	return c;
}

static void post_recv(struct rsp *r, uint64_t wr_id, size_t off, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s = { (uintptr_t)r->mem + off, len, lkey };

	ck_assert_int_eq(h_post_recv(r->qp, wr_id, &s, 1), 0);
}

/* ---- ACK, MSN, coalescing, duplicates ---- */

START_TEST(write_acked_with_msn)
{
	struct rsp r;
	uint8_t data[3000];
	struct wire_build_desc d;
	const struct h_frame *a;

	rsp_init(&r);
	memset(data, 0x42, sizeof(data));
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 100);
	ck_assert_int_eq(memcmp(r.mem, data, 100), 0);
	ck_assert_uint_eq(n_acks(&r), 1);
	a = ack(&r, 0);
	ck_assert_uint_eq(a->psn, EPSN);
	ck_assert_uint_eq(a->syndrome, SYN_ACK);
	ck_assert_uint_eq(a->msn, 1);

	/* Three packets, AckReq on the last only: one ACK, for the last. */
	d = req(&r, WIRE_OP_WRITE_FIRST, EPSN + 1, false);
	d.reth.va = (uintptr_t)r.mem + 1000;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 2500;
	inject(&r, &d, data, 1024);
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 2, false);
	inject(&r, &d, data, 1024);
	ck_assert_uint_eq(n_acks(&r), 1);
	d = req(&r, WIRE_OP_WRITE_LAST, EPSN + 3, true);
	inject(&r, &d, data, 452);
	ck_assert_uint_eq(n_acks(&r), 2);
	a = ack(&r, 1);
	ck_assert_uint_eq(a->psn, (EPSN + 3) & 0xffffff);
	ck_assert_uint_eq(a->msn, 2);
	ck_assert_int_eq(memcmp(r.mem + 1000, data, 2500), 0);
	rsp_fini(&r);
}
END_TEST

START_TEST(acks_coalesced)
{
	struct rsp r;
	uint8_t data[64] = { 1 };

	rsp_init(&r);
	for (uint32_t i = 0; i < 5; i++)
		write_only(&r, EPSN + i, i == 4, (uintptr_t)r.mem + 64 * i, rc_mr_rkey(r.mr),
			   data, sizeof(data));
	ck_assert_uint_eq(n_acks(&r), 1);
	ck_assert_uint_eq(ack(&r, 0)->psn, (EPSN + 4) & 0xffffff);
	ck_assert_uint_eq(ack(&r, 0)->msn, 5);
	rsp_fini(&r);
}
END_TEST

START_TEST(duplicate_reacked_not_executed)
{
	struct rsp r;
	uint8_t data[64];

	rsp_init(&r);
	memset(data, 7, sizeof(data));
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, sizeof(data));
	memset(r.mem, 0, sizeof(data));
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, sizeof(data));
	ck_assert_uint_eq(n_acks(&r), 2);
	ck_assert_uint_eq(ack(&r, 1)->psn, EPSN);
	ck_assert_uint_eq(ack(&r, 1)->syndrome, SYN_ACK);
	ck_assert_uint_eq(r.mem[0], 0);		/* not written twice */
	ck_assert_uint_eq(qp_cnt(r.qp).duplicates, 1);
	rsp_fini(&r);
}
END_TEST

START_TEST(one_seq_nak_per_gap)
{
	struct rsp r;
	uint8_t data[16] = { 9 };

	rsp_init(&r);
	for (uint32_t i = 1; i <= 3; i++)
		write_only(&r, EPSN + i, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 16);
	ck_assert_uint_eq(n_acks(&r), 1);
	ck_assert_uint_eq(ack(&r, 0)->syndrome, SYN_NAK(WIRE_NAK_PSN_SEQ_ERR));
	ck_assert_uint_eq(ack(&r, 0)->psn, EPSN);
	ck_assert_uint_eq(qp_cnt(r.qp).out_of_sequence, 3);
	ck_assert_uint_eq(qp_cnt(r.qp).seq_naks_tx, 1);
	ck_assert_uint_eq(r.mem[0], 0);
	/* The expected PSN arrives: normal again, and a new gap gets a new NAK. */
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 16);
	ck_assert_uint_eq(ack(&r, 1)->syndrome, SYN_ACK);
	write_only(&r, EPSN + 2, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 16);
	ck_assert_uint_eq(ack(&r, 2)->syndrome, SYN_NAK(WIRE_NAK_PSN_SEQ_ERR));
	ck_assert_uint_eq(ack(&r, 2)->psn, (EPSN + 1) & 0xffffff);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
	rsp_fini(&r);
}
END_TEST

/* ---- Error NAKs: each code, the QP goes to ERR, nothing is written ---- */

static void expect_fatal(struct rsp *r, uint8_t code, enum ibv_event_type ev)
{
	ck_assert_uint_ge(n_acks(r), 1);
	ck_assert_uint_eq(ack(r, n_acks(r) - 1)->syndrome, SYN_NAK(code));
	ck_assert_int_eq(qp_state(r->qp), IBV_QPS_ERR);
	ck_assert_uint_eq(h_count_events(&r->e, ev), 1);
}

START_TEST(nak_invalid_middle_without_first)
{
	struct rsp r;
	uint8_t data[1024] = { 1 };
	struct wire_build_desc d;

	rsp_init(&r);
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN, true);
	inject(&r, &d, data, sizeof(data));
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	ck_assert_uint_eq(ack(&r, 0)->psn, EPSN);
	ck_assert_uint_eq(qp_cnt(r.qp).inv_req_naks_tx, 1);
	/* An ERR QP answers nothing. */
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 16);
	ck_assert_uint_eq(n_acks(&r), 1);
	ck_assert_uint_eq(r.mem[0], 0);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_invalid_send_then_write)
{
	struct rsp r;
	uint8_t data[1024] = { 1 };
	struct wire_build_desc d;

	rsp_init(&r);
	post_recv(&r, 1, 0, 4096, rc_mr_lkey(r.mr));
	d = req(&r, WIRE_OP_SEND_FIRST, EPSN, false);
	inject(&r, &d, data, sizeof(data));
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 1, true);
	inject(&r, &d, data, sizeof(data));
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_access_bad_rkey)
{
	struct rsp r;
	uint8_t data[64] = { 1 };

	rsp_init(&r);
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr) ^ 1, data, 64);
	expect_fatal(&r, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	ck_assert_uint_eq(r.mem[0], 0);
	ck_assert_uint_eq(qp_cnt(r.qp).rem_access_naks_tx, 1);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_access_bounds)
{
	struct rsp r;
	uint8_t data[100];

	rsp_init(&r);
	memset(data, 3, sizeof(data));
	write_only(&r, EPSN, true, (uintptr_t)r.mem + MEM_LEN - 10, rc_mr_rkey(r.mr), data, 100);
	expect_fatal(&r, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	for (int i = 0; i < MEM_LEN; i++)
		ck_assert_uint_eq(r.mem[i], 0);
	rsp_fini(&r);
}
END_TEST

/* Loop: write to a read-only MR, write to another PD's MR, read without REMOTE_READ,
 * atomic without REMOTE_ATOMIC, read past the end. */
START_TEST(nak_access_flags_and_pd)
{
	struct rsp r;
	uint8_t data[16] = { 5 };
	struct wire_build_desc d;

	rsp_init(&r);
	switch (_i) {
	case 0:
		write_only(&r, EPSN, true, (uintptr_t)r.ro_mem, rc_mr_rkey(r.ro_mr), data, 16);
		ck_assert_uint_eq(r.ro_mem[0], 0);
		break;
	case 1:
		write_only(&r, EPSN, true, (uintptr_t)r.other_mem, rc_mr_rkey(r.other_mr), data, 16);
		ck_assert_uint_eq(r.other_mem[0], 0);
		break;
	case 2:
		d = req(&r, WIRE_OP_READ_REQUEST, EPSN, true);
		d.reth.va = (uintptr_t)r.other_mem;
		d.reth.rkey = rc_mr_rkey(r.other_mr);
		d.reth.len = 16;
		inject(&r, &d, NULL, 0);
		break;
	case 3:
		d = req(&r, WIRE_OP_FETCH_ADD, EPSN, true);
		d.atomic.va = (uintptr_t)r.ro_mem;
		d.atomic.rkey = rc_mr_rkey(r.ro_mr);
		d.atomic.swap_add = 1;
		inject(&r, &d, NULL, 0);
		ck_assert_uint_eq(r.ro_mem[0], 0);
		break;
	default:
		d = req(&r, WIRE_OP_READ_REQUEST, EPSN, true);
		d.reth.va = (uintptr_t)r.mem + MEM_LEN - 8;
		d.reth.rkey = rc_mr_rkey(r.mr);
		d.reth.len = 16;
		inject(&r, &d, NULL, 0);
		break;
	}
	expect_fatal(&r, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OP_READ_RESP_ONLY), 0);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_invalid_misaligned_atomic)
{
	struct rsp r;
	struct wire_build_desc d;

	rsp_init(&r);
	d = req(&r, WIRE_OP_COMPARE_SWAP, EPSN, true);
	d.atomic.va = (uintptr_t)r.mem + 4;
	d.atomic.rkey = rc_mr_rkey(r.mr);
	d.atomic.compare = 0;
	d.atomic.swap_add = 0x55;
	inject(&r, &d, NULL, 0);
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	ck_assert_uint_eq(r.mem[4], 0);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_invalid_write_length)
{
	struct rsp r;
	uint8_t data[1024] = { 1 };
	struct wire_build_desc d;

	rsp_init(&r);
	if (_i == 0) {
		/* ONLY carrying less than its RETH says. */
		d = req(&r, WIRE_OP_WRITE_ONLY, EPSN, true);
		d.reth.len = 100;
		inject(&r, &d, data, 50);
	} else {
		/* FIRST carrying less than a PMTU. */
		d = req(&r, WIRE_OP_WRITE_FIRST, EPSN, true);
		d.reth.len = 4000;
		inject(&r, &d, data, 512);
	}
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	ck_assert_uint_eq(r.mem[0], 0);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_invalid_send_too_long)
{
	struct rsp r;
	uint8_t data[100] = { 1 };
	struct wire_build_desc d;
	struct ibv_wc wc;

	rsp_init(&r);
	post_recv(&r, 11, 0, 10, rc_mr_lkey(r.mr));
	d = req(&r, WIRE_OP_SEND_ONLY, EPSN, true);
	inject(&r, &d, data, sizeof(data));
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 11);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_remote_op_bad_recv_lkey)
{
	struct rsp r;
	uint8_t data[100] = { 1 };
	struct wire_build_desc d;
	struct ibv_wc wc;

	rsp_init(&r);
	post_recv(&r, 12, 0, 1000, rc_mr_lkey(r.mr) ^ 0x100);
	d = req(&r, WIRE_OP_SEND_ONLY, EPSN, true);
	inject(&r, &d, data, sizeof(data));
	expect_fatal(&r, WIRE_NAK_REM_OP_ERR, IBV_EVENT_QP_FATAL);
	ck_assert_uint_eq(qp_cnt(r.qp).rem_op_naks_tx, 1);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	rsp_fini(&r);
}
END_TEST

START_TEST(nak_invalid_qp_access)
{
	struct h_conn c = { .access = IBV_ACCESS_REMOTE_READ };
	struct rsp r;
	uint8_t data[16] = { 1 };

	rsp_init_type(&r, IBV_QPT_RC, &c);
	write_only(&r, EPSN, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 16);
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	ck_assert_uint_eq(r.mem[0], 0);
	rsp_fini(&r);
}
END_TEST

/* ---- IBA 1.5: ATOMIC WRITE and FLUSH, answered by an empty read response (as rxe) ---- */

static void atomic_write(struct rsp *r, uint32_t psn, uint64_t va, uint32_t rkey, uint64_t v,
			 uint32_t len)
{
	struct wire_build_desc d = req(r, WIRE_OP_ATOMIC_WRITE, psn, true);
	uint8_t data[16] = { 0 };

	memcpy(data, &v, 8);
	d.reth.va = va;
	d.reth.rkey = rkey;
	d.reth.len = len;
	inject(r, &d, data, len);
}

static void expect_empty_read_resp(struct rsp *r, unsigned nth, uint32_t psn)
{
	const struct h_frame *f = h_cap_find(&r->cap, 1, WIRE_OP_READ_RESP_ONLY, nth);

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->psn, psn);
	ck_assert_uint_eq(f->syndrome, SYN_ACK);
	ck_assert_uint_eq(f->payload_len, 0);
}

/* Placed once, answered twice: a duplicate is answered from its resource, not executed. */
START_TEST(atomic_write_placed_and_answered)
{
	struct rsp r;
	uint64_t *target;

	rsp_init(&r);
	target = (uint64_t *)(void *)(r.mem + 64);
	atomic_write(&r, EPSN, (uintptr_t)target, rc_mr_rkey(r.mr), 0x1122334455667788ull, 8);
	ck_assert_uint_eq(*target, 0x1122334455667788ull);
	expect_empty_read_resp(&r, 0, EPSN);
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OP_ACKNOWLEDGE), 0);
	*target = 7;
	atomic_write(&r, EPSN, (uintptr_t)target, rc_mr_rkey(r.mr), 0x1122334455667788ull, 8);
	ck_assert_uint_eq(*target, 7);
	expect_empty_read_resp(&r, 1, EPSN);
	/* The next one at the next PSN executes. */
	atomic_write(&r, EPSN + 1, (uintptr_t)target, rc_mr_rkey(r.mr), 42, 8);
	ck_assert_uint_eq(*target, 42);
	expect_empty_read_resp(&r, 2, (EPSN + 1) & 0xffffff);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
	rsp_fini(&r);
}
END_TEST

/*
 * Loop: no remote write right on the region (remote access error), the QP
 * not enabling remote writes, a misaligned va, a length other than 8
 * (invalid requests).  Memory stays as it was.
 */
START_TEST(atomic_write_refused)
{
	struct h_conn c = { .access = IBV_ACCESS_REMOTE_READ };
	struct rsp r;

	rsp_init_type(&r, IBV_QPT_RC, _i == 1 ? &c : NULL);
	switch (_i) {
	case 0:
		atomic_write(&r, EPSN, (uintptr_t)r.ro_mem, rc_mr_rkey(r.ro_mr), ~0ull, 8);
		expect_fatal(&r, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
		break;
	case 1:
		atomic_write(&r, EPSN, (uintptr_t)r.mem, rc_mr_rkey(r.mr), ~0ull, 8);
		expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
		break;
	case 2:
		atomic_write(&r, EPSN, (uintptr_t)r.mem + 4, rc_mr_rkey(r.mr), ~0ull, 8);
		expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
		break;
	default:
		atomic_write(&r, EPSN, (uintptr_t)r.mem, rc_mr_rkey(r.mr), ~0ull, 12);
		expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
		break;
	}
	for (int i = 0; i < 16; i++) {
		ck_assert_uint_eq(r.mem[i], 0);
		ck_assert_uint_eq(r.ro_mem[i], 0);
	}
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OP_READ_RESP_ONLY), 0);
	rsp_fini(&r);
}
END_TEST

static void flush(struct rsp *r, uint32_t psn, uint8_t plt, uint8_t sel, uint64_t va,
		  uint32_t rkey, uint32_t len)
{
	struct wire_build_desc d = req(r, WIRE_OP_FLUSH, psn, true);

	d.feth.plt = plt;
	d.feth.sel = sel;
	d.reth.va = va;
	d.reth.rkey = rkey;
	d.reth.len = len;
	inject(r, &d, NULL, 0);
}

/*
 * Loop: a global flush of a range and of the whole region, answered; then
 * refused: a region without the flush right (remote access error), a
 * placement the QP does not enable, no placement type, a reserved
 * selectivity level (invalid requests).
 */
START_TEST(flush_checked_and_answered)
{
	struct h_conn c = { .access = IBV_ACCESS_REMOTE_WRITE | RC_ACCESS_FLUSH_GLOBAL };
	struct rsp r;
	struct rc_mr *fmr;
	uint32_t fkey;
	uint64_t va;

	rsp_init_type(&r, IBV_QPT_RC, &c);
	fmr = rc_mr_reg(r.e.pd[1], r.mem + 4096, 4096, (uintptr_t)r.mem + 4096,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | RC_ACCESS_FLUSH_GLOBAL);
	ck_assert_ptr_nonnull(fmr);
	fkey = rc_mr_rkey(fmr);
	va = (uintptr_t)r.mem + 4096;
	switch (_i) {
	case 0:
		flush(&r, EPSN, WIRE_FLUSH_GLOBAL, WIRE_FLUSH_RANGE, va + 100, fkey, 200);
		flush(&r, EPSN + 1, WIRE_FLUSH_GLOBAL, WIRE_FLUSH_MR, va, fkey, 0);
		/* A duplicate is answered again. */
		flush(&r, EPSN + 1, WIRE_FLUSH_GLOBAL, WIRE_FLUSH_MR, va, fkey, 0);
		expect_empty_read_resp(&r, 0, EPSN);
		expect_empty_read_resp(&r, 1, (EPSN + 1) & 0xffffff);
		expect_empty_read_resp(&r, 2, (EPSN + 1) & 0xffffff);
		ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
		break;
	case 1:
		flush(&r, EPSN, WIRE_FLUSH_GLOBAL, WIRE_FLUSH_RANGE, (uintptr_t)r.mem,
		      rc_mr_rkey(r.mr), 64);
		expect_fatal(&r, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
		break;
	case 2:
		flush(&r, EPSN, WIRE_FLUSH_PERSISTENT, WIRE_FLUSH_RANGE, va, fkey, 64);
		expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
		break;
	case 3:
		flush(&r, EPSN, 0, WIRE_FLUSH_RANGE, va, fkey, 64);
		expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
		break;
	default:
		flush(&r, EPSN, WIRE_FLUSH_GLOBAL, 2, va, fkey, 64);
		expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
		break;
	}
	if (_i)
		ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OP_READ_RESP_ONLY), 0);
	ck_assert_int_eq(rc_mr_dereg(fmr), 0);
	rsp_fini(&r);
}
END_TEST

/* ---- RNR ---- */

START_TEST(rnr_nak_then_accept)
{
	struct h_conn c = { .min_rnr_timer = 14 };
	struct rsp r;
	uint8_t data[64] = { 8 };
	struct wire_build_desc d;
	struct ibv_wc wc;

	rsp_init_type(&r, IBV_QPT_RC, &c);
	d = req(&r, WIRE_OP_SEND_ONLY, EPSN, true);
	inject(&r, &d, data, sizeof(data));
	ck_assert_uint_eq(n_acks(&r), 1);
	ck_assert_uint_eq(ack(&r, 0)->syndrome, 0x20 | 14);
	ck_assert_uint_eq(ack(&r, 0)->psn, EPSN);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
	/* Later packets are dropped quietly until the refused one comes again. */
	d = req(&r, WIRE_OP_SEND_ONLY, EPSN + 1, true);
	inject(&r, &d, data, sizeof(data));
	ck_assert_uint_eq(n_acks(&r), 1);
	post_recv(&r, 21, 0, 100, rc_mr_lkey(r.mr));
	d = req(&r, WIRE_OP_SEND_ONLY, EPSN, true);
	inject(&r, &d, data, sizeof(data));
	ck_assert_uint_eq(n_acks(&r), 2);
	ck_assert_uint_eq(ack(&r, 1)->syndrome, SYN_ACK);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 64);
	ck_assert_uint_eq(qp_cnt(r.qp).rnr_naks_tx, 1);
	rsp_fini(&r);
}
END_TEST

START_TEST(rnr_on_write_imm_last)
{
	struct rsp r;
	uint8_t data[1024];
	struct wire_build_desc d;
	struct ibv_wc wc;

	rsp_init(&r);
	memset(data, 0x31, sizeof(data));
	d = req(&r, WIRE_OP_WRITE_FIRST, EPSN, false);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 1500;
	inject(&r, &d, data, 1024);
	d = req(&r, WIRE_OP_WRITE_LAST_IMM, EPSN + 1, true);
	d.imm = 0x1234;
	inject(&r, &d, data, 476);
	ck_assert_uint_eq(ack(&r, 0)->syndrome & 0xe0, 0x20);
	ck_assert_uint_eq(ack(&r, 0)->psn, (EPSN + 1) & 0xffffff);
	post_recv(&r, 5, 4096, 0, rc_mr_lkey(r.mr));
	inject(&r, &d, data, 476);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, 1500);
	ck_assert_uint_eq(be32toh(wc.imm_data), 0x1234);
	ck_assert_uint_eq(r.mem[1499], 0x31);
	rsp_fini(&r);
}
END_TEST

/* ---- Read and atomic replay ---- */

START_TEST(duplicate_atomic_replayed)
{
	struct rsp r;
	struct wire_build_desc d;
	uint64_t *target;
	const struct h_frame *f;

	rsp_init(&r);
	target = (uint64_t *)(void *)(r.mem + 64);
	*target = 10;
	d = req(&r, WIRE_OP_FETCH_ADD, EPSN, true);
	d.atomic.va = (uintptr_t)target;
	d.atomic.rkey = rc_mr_rkey(r.mr);
	d.atomic.swap_add = 5;
	inject(&r, &d, NULL, 0);
	ck_assert_uint_eq(*target, 15);
	inject(&r, &d, NULL, 0);
	ck_assert_uint_eq(*target, 15);	/* never twice */
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OP_ATOMIC_ACKNOWLEDGE), 2);
	for (unsigned i = 0; i < 2; i++) {
		f = h_cap_find(&r.cap, 1, WIRE_OP_ATOMIC_ACKNOWLEDGE, i);
		ck_assert_uint_eq(f->orig, 10);
		ck_assert_uint_eq(f->psn, EPSN);
		ck_assert_uint_eq(f->syndrome, SYN_ACK);
	}
	/* A CAS after it, then its duplicate, then the FAA's again: all from the cache. */
	d = req(&r, WIRE_OP_COMPARE_SWAP, EPSN + 1, true);
	d.atomic.va = (uintptr_t)target;
	d.atomic.rkey = rc_mr_rkey(r.mr);
	d.atomic.compare = 15;
	d.atomic.swap_add = 99;
	inject(&r, &d, NULL, 0);
	inject(&r, &d, NULL, 0);
	ck_assert_uint_eq(*target, 99);
	d = req(&r, WIRE_OP_FETCH_ADD, EPSN, true);
	d.atomic.va = (uintptr_t)target;
	d.atomic.rkey = rc_mr_rkey(r.mr);
	d.atomic.swap_add = 5;
	inject(&r, &d, NULL, 0);
	ck_assert_uint_eq(*target, 99);
	ck_assert_uint_eq(h_cap_find(&r.cap, 1, WIRE_OP_ATOMIC_ACKNOWLEDGE, 3)->orig, 15);
	ck_assert_uint_eq(h_cap_find(&r.cap, 1, WIRE_OP_ATOMIC_ACKNOWLEDGE, 4)->orig, 10);
	rsp_fini(&r);
}
END_TEST

START_TEST(duplicate_read_reexecuted)
{
	struct rsp r;
	struct wire_build_desc d;
	const struct h_frame *f;

	rsp_init(&r);
	for (int i = 0; i < 3000; i++)
		r.mem[i] = (uint8_t)i;
	d = req(&r, WIRE_OP_READ_REQUEST, EPSN, true);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 3000;
	inject(&r, &d, NULL, 0);
	ck_assert_ptr_nonnull(h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_FIRST, 0));
	ck_assert_ptr_nonnull(h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_MIDDLE, 0));
	f = h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_LAST, 0);
	ck_assert_uint_eq(f->psn, (EPSN + 2) & 0xffffff);
	ck_assert_uint_eq(f->payload_len, 3000 - 2048);
	ck_assert_uint_eq(f->msn, 1);

	/* The requester lost the last two: it asks again from EPSN + 1. */
	d = req(&r, WIRE_OP_READ_REQUEST, EPSN + 1, true);
	d.reth.va = (uintptr_t)r.mem + 1024;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 3000 - 1024;
	inject(&r, &d, NULL, 0);
	f = h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_FIRST, 1);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->psn, (EPSN + 1) & 0xffffff);
	ck_assert_uint_eq(f->payload_len, 1024);
	f = h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_LAST, 1);
	ck_assert_uint_eq(f->psn, (EPSN + 2) & 0xffffff);
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, 0xffff), 5);
	ck_assert_uint_eq(qp_cnt(r.qp).duplicates, 1);
	rsp_fini(&r);
}
END_TEST

/*
 * UCX's registration cache keeps a region registered after the application
 * unmapped it (hardware has the pages pinned).  A duplicate of a read that
 * completed then finds no memory: it is dropped and counted, not a SIGSEGV,
 * and the QP goes on (no NAK, not in error).
 */
START_TEST(duplicate_read_of_unmapped_memory_dropped)
{
	const size_t page = (size_t)sysconf(_SC_PAGESIZE);
	struct wire_build_desc d;
	struct rc_mr *mr;
	struct rsp r;
	uint8_t *mem;

	rsp_init(&r);
	mem = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(mem, MAP_FAILED);
	memset(mem, 0x5a, page);
	mr = rc_mr_reg(r.e.pd[1], mem, page, (uintptr_t)mem, IBV_ACCESS_REMOTE_READ);
	ck_assert_ptr_nonnull(mr);
	d = req(&r, WIRE_OP_READ_REQUEST, EPSN, true);
	d.reth.va = (uintptr_t)mem;
	d.reth.rkey = rc_mr_rkey(mr);
	d.reth.len = 1024;
	inject(&r, &d, NULL, 0);
	ck_assert_ptr_nonnull(h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_ONLY, 0));

	ck_assert_int_eq(munmap(mem, page), 0);
	inject(&r, &d, NULL, 0);
	ck_assert_uint_eq(qp_cnt(r.qp).duplicates, 1);
	ck_assert_uint_eq(qp_cnt(r.qp).rc_drops.count[RC_DROP_DUP_NOT_HELD], 1);
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, 0xffff), 1);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);

	/* A write after it is taken and acknowledged as usual. */
	write_only(&r, EPSN + 1, true, (uintptr_t)r.mem, rc_mr_rkey(r.mr), "abcd", 4);
	ck_assert_uint_eq(n_acks(&r), 1);
	ck_assert_int_eq(memcmp(r.mem, "abcd", 4), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	rsp_fini(&r);
}
END_TEST

/*
 * A new read arriving while the oldest responder resource still has
 * responses queued takes that slot and is executed (the requester no longer
 * waits for the old one); found against rxe, which re-sends reads in bursts.
 */
START_TEST(new_read_takes_busy_oldest_slot)
{
	struct h_conn c = { .max_dest_rd_atomic = 1 };
	struct rsp r;
	struct wire_build_desc d;
	const struct h_frame *f;

	rsp_init_type(&r, IBV_QPT_RC, &c);
	d = req(&r, WIRE_OP_READ_REQUEST, EPSN, true);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 3000;
	h_inject(&r.e, 1, &d, NULL, 0);
	d = req(&r, WIRE_OP_READ_REQUEST, EPSN + 3, true);
	d.reth.va = (uintptr_t)r.mem + 4096;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 8;
	inject(&r, &d, NULL, 0);

	f = h_cap_find(&r.cap, 1, WIRE_OP_READ_RESP_ONLY, 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->psn, (EPSN + 3) & 0xffffff);
	ck_assert_uint_eq(n_acks(&r), 0);
	ck_assert_uint_eq(qp_cnt(r.qp).inv_req_naks_tx, 0);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
	rsp_fini(&r);
}
END_TEST

/* ---- Send with invalidate, zero length, in-order placement ---- */

START_TEST(send_with_invalidate)
{
	struct rsp r;
	uint8_t data[32] = { 4 };
	struct wire_build_desc d;
	struct ibv_wc wc;
	uint32_t rkey;

	rsp_init(&r);
	rkey = rc_mr_rkey(r.ro_mr);
	post_recv(&r, 31, 0, 100, rc_mr_lkey(r.mr));
	d = req(&r, WIRE_OP_SEND_ONLY_INV, EPSN, true);
	d.ieth_rkey = rkey;
	inject(&r, &d, data, sizeof(data));
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert(wc.wc_flags & IBV_WC_WITH_INV);
	ck_assert_uint_eq(wc.invalidated_rkey, rkey);
	ck_assert_uint_eq(ack(&r, 0)->syndrome, SYN_ACK);
	/* The key is dead now. */
	d = req(&r, WIRE_OP_READ_REQUEST, EPSN + 1, true);
	d.reth.va = (uintptr_t)r.ro_mem;
	d.reth.rkey = rkey;
	d.reth.len = 8;
	inject(&r, &d, NULL, 0);
	expect_fatal(&r, WIRE_NAK_REM_ACCESS_ERR, IBV_EVENT_QP_ACCESS_ERR);
	rsp_fini(&r);
}
END_TEST

START_TEST(send_with_invalidate_unknown_key)
{
	struct rsp r;
	uint8_t data[32] = { 4 };
	struct wire_build_desc d;

	rsp_init(&r);
	post_recv(&r, 31, 0, 100, rc_mr_lkey(r.mr));
	d = req(&r, WIRE_OP_SEND_ONLY_INV, EPSN, true);
	d.ieth_rkey = 0x12345678;
	inject(&r, &d, data, sizeof(data));
	expect_fatal(&r, WIRE_NAK_INVALID_REQ, IBV_EVENT_QP_REQ_ERR);
	rsp_fini(&r);
}
END_TEST

START_TEST(zero_length_write_skips_rkey)
{
	struct rsp r;

	rsp_init(&r);
	write_only(&r, EPSN, true, 0, 0xdeadbeef, NULL, 0);
	ck_assert_uint_eq(ack(&r, 0)->syndrome, SYN_ACK);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
	rsp_fini(&r);
}
END_TEST

START_TEST(data_lands_in_order)
{
	struct rsp r;
	uint8_t data[1024];
	struct wire_build_desc d;

	rsp_init(&r);
	memset(data, 0xee, sizeof(data));
	d = req(&r, WIRE_OP_WRITE_FIRST, EPSN, false);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 2100;
	inject(&r, &d, data, 1024);
	ck_assert_uint_eq(r.mem[1023], 0xee);
	ck_assert_uint_eq(r.mem[1024], 0);
	ck_assert_uint_eq(r.mem[2099], 0);
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 1, false);
	inject(&r, &d, data, 1024);
	ck_assert_uint_eq(r.mem[2047], 0xee);
	ck_assert_uint_eq(r.mem[2099], 0);
	d = req(&r, WIRE_OP_WRITE_LAST, EPSN + 2, true);
	inject(&r, &d, data, 52);
	ck_assert_uint_eq(r.mem[2099], 0xee);
	ck_assert_uint_eq(r.mem[2100], 0);
	rsp_fini(&r);
}
END_TEST

/* A request built here with one payload byte flipped after its ICRC was computed. */
static void inject_corrupted(struct rsp *r, struct wire_build_desc *d, const void *payload,
			     uint32_t len)
{
	uint8_t frame[4400];
	struct wire_pkt pkt;
	uint32_t n;

	d->src_mac[0] = d->dst_mac[0] = 0x02;
	d->src_mac[5] = 1;
	d->dst_mac[5] = 2;
	d->ip_version = 4;
	h_gid(0, 0, d->src_gid);
	h_gid(1, 0, d->dst_gid);
	n = wire_build(frame, sizeof(frame), d, payload, len);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(wire_parse(frame, n, 0, &pkt), WIRE_DROP_NONE);
	frame[pkt.payload_off + len / 2] ^= 0x10;
	ck_assert_int_eq(port_sim_inject(r->e.link, 1, frame, n), 0);
	h_run(&r->e, RUN_NS);
}

static uint64_t icrc_drops(struct rsp *r)
{
	struct rc_counters c;

	rc_engine_counters(r->e.eng[1], &c);
	return c.drops.count[WIRE_DROP_BAD_ICRC];
}

/*
 * A write's middle packet is checked while it is copied: a corrupted one is
 * dropped and counted, nothing answers it, the expected PSN stays, and the
 * retransmission completes the message with the right bytes.  A corrupted
 * packet out of sequence is dropped before it can cause a sequence NAK.
 */
START_TEST(corrupted_middle_dropped_then_rewritten)
{
	struct rsp r;
	uint8_t data[3 * 1024];
	struct wire_build_desc d;

	rsp_init(&r);
	for (size_t i = 0; i < sizeof(data); i++)
		data[i] = (uint8_t)(i * 7 + 3);
	d = req(&r, WIRE_OP_WRITE_FIRST, EPSN, false);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = sizeof(data);
	inject(&r, &d, data, 1024);
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 1, true);
	inject_corrupted(&r, &d, data + 1024, 1024);
	ck_assert_uint_eq(icrc_drops(&r), 1);
	ck_assert_uint_eq(n_acks(&r), 0);
	/* Out of sequence and corrupted: no NAK for it. */
	d = req(&r, WIRE_OP_WRITE_LAST, EPSN + 2, true);
	inject_corrupted(&r, &d, data + 2048, 1024);
	ck_assert_uint_eq(icrc_drops(&r), 2);
	ck_assert_uint_eq(n_acks(&r), 0);
	ck_assert_uint_eq(qp_cnt(r.qp).out_of_sequence, 0);
	/* The retransmission of the middle and the last packet. */
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 1, false);
	inject(&r, &d, data + 1024, 1024);
	d = req(&r, WIRE_OP_WRITE_LAST, EPSN + 2, true);
	inject(&r, &d, data + 2048, 1024);
	ck_assert_uint_eq(n_acks(&r), 1);
	ck_assert_uint_eq(ack(&r, 0)->syndrome, SYN_ACK);
	ck_assert_uint_eq(ack(&r, 0)->psn, (EPSN + 2) & 0xffffff);
	ck_assert_int_eq(memcmp(r.mem, data, sizeof(data)), 0);
	ck_assert_uint_eq(r.mem[sizeof(data)], 0);
	ck_assert_uint_eq(icrc_drops(&r), 2);
	rsp_fini(&r);
}
END_TEST

/* ---- Atomicity against the CPU ---- */

struct cpu_adder {
	uint64_t	*target;
	unsigned	n;
};

static void *cpu_add(void *arg)
{
	struct cpu_adder *a = arg;

	for (unsigned i = 0; i < a->n; i++)
		__atomic_fetch_add(a->target, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

START_TEST(atomics_atomic_against_cpu)
{
	struct rsp r;
	struct wire_build_desc d;
	struct cpu_adder a;
	pthread_t t;
	const unsigned n_remote = 400;

	rsp_init(&r);
	a.target = (uint64_t *)(void *)(r.mem + 128);
	a.n = 200000;
	*a.target = 1000;
	ck_assert_int_eq(pthread_create(&t, NULL, cpu_add, &a), 0);
	for (unsigned i = 0; i < n_remote; i++) {
		d = req(&r, WIRE_OP_FETCH_ADD, EPSN + i, false);
		d.atomic.va = (uintptr_t)a.target;
		d.atomic.rkey = rc_mr_rkey(r.mr);
		d.atomic.swap_add = 1;
		inject(&r, &d, NULL, 0);
	}
	pthread_join(t, NULL);
	ck_assert_uint_eq(__atomic_load_n(a.target, __ATOMIC_SEQ_CST), 1000 + a.n + n_remote);
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OP_ATOMIC_ACKNOWLEDGE), n_remote);
	rsp_fini(&r);
}
END_TEST

/* ---- Addressing ---- */

START_TEST(wrong_transport_or_source_dropped)
{
	struct rsp r;
	uint8_t data[16] = { 1 };
	struct wire_build_desc d;

	rsp_init(&r);
	/* A UC opcode to an RC QP. */
	d = req(&r, WIRE_OPC_UC | WIRE_OP_SEND_ONLY, EPSN, true);
	inject(&r, &d, data, sizeof(data));
	ck_assert_uint_eq(qp_cnt(r.qp).rc_drops.count[RC_DROP_WRONG_TRANSPORT], 1);
	/* Right QP, but from an address that is not its peer. */
	d = req(&r, WIRE_OP_WRITE_ONLY, EPSN, true);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 16;
	d.ip_version = 4;
	h_gid(0, 0, d.src_gid);
	d.src_gid[15] = 77;
	h_gid(1, 0, d.dst_gid);
	inject(&r, &d, data, sizeof(data));
	ck_assert_uint_eq(qp_cnt(r.qp).rc_drops.count[RC_DROP_WRONG_PEER], 1);
	ck_assert_uint_eq(n_acks(&r), 0);
	ck_assert_uint_eq(r.mem[0], 0);
	ck_assert_int_eq(qp_state(r.qp), IBV_QPS_RTS);
	rsp_fini(&r);
}
END_TEST

/* ---- UC ---- */

START_TEST(uc_gap_drops_message)
{
	struct rsp r;
	uint8_t data[1024];
	struct wire_build_desc d;
	struct ibv_wc wc;

	rsp_init_type(&r, IBV_QPT_UC, NULL);
	memset(data, 0x77, sizeof(data));
	post_recv(&r, 1, 0, 8192, rc_mr_lkey(r.mr));
	d = req(&r, WIRE_OPC_UC | WIRE_OP_SEND_FIRST, EPSN, false);
	inject(&r, &d, data, 1024);
	d = req(&r, WIRE_OPC_UC | WIRE_OP_SEND_LAST, EPSN + 2, false);
	inject(&r, &d, data, 100);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 0);
	/* The next message goes to the same receive WQE. */
	memset(data, 0x88, sizeof(data));
	d = req(&r, WIRE_OPC_UC | WIRE_OP_SEND_ONLY, EPSN + 3, false);
	inject(&r, &d, data, 50);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.byte_len, 50);
	ck_assert_uint_eq(r.mem[0], 0x88);
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, 0xffff), 0);	/* UC never answers */
	ck_assert_uint_ge(qp_cnt(r.qp).out_of_sequence, 1);
	rsp_fini(&r);
}
END_TEST

/* ---- ECN ---- */

/*
 * Three CE-marked writes, the third 60 us after the others: two CNPs with the
 * default interval (50 us), one with min_time_between_cnps 100.
 */
START_TEST(ce_mark_sends_cnp)
{
	struct h_opts o = { .dcqcn.min_time_between_cnps = _i ? 100 : 0 };
	struct rsp r;
	uint8_t data[16] = { 1 };
	struct wire_build_desc d;
	const struct h_frame *f;
	unsigned cnps = _i ? 1 : 2;

	rsp_init_opts(&r, IBV_QPT_RC, NULL, &o);
	for (uint32_t i = 0; i < 3; i++) {
		if (i == 2)
			r.e.now += 60000;
		d = req(&r, WIRE_OP_WRITE_ONLY, EPSN + i, true);
		d.reth.va = (uintptr_t)r.mem;
		d.reth.rkey = rc_mr_rkey(r.mr);
		d.reth.len = 16;
		d.tclass = WIRE_ECN_CE;
		inject(&r, &d, data, sizeof(data));
	}
	ck_assert_uint_eq(h_cap_count(&r.cap, 1, WIRE_OPC_CNP), cnps);
	f = h_cap_find(&r.cap, 1, WIRE_OPC_CNP, 0);
	ck_assert_uint_eq(f->dest_qp, PEER_QPN);
	ck_assert_uint_eq(qp_cnt(r.qp).ecn_ce_rx, 3);
	ck_assert_uint_eq(qp_cnt(r.qp).cnps_tx, cnps);
	rsp_fini(&r);
}
END_TEST

/* ---- Drop reasons: each frame the engine drops unanswered is counted once, by its reason ---- */

#define QKEY		0x1234

struct drop_case {
	struct rsp		r;
	struct rc_counters	before, qp_before;	/* side 1 just before the frame */
	bool			engine_level;	/* the frame has no QP to count it */
};

static void snap(struct drop_case *t)
{
	rc_engine_counters(t->r.e.eng[1], &t->before);
	t->qp_before = qp_cnt(t->r.qp);
}

/* The RC QP sends what it is asked to (dropped on the link), without a timer. */
static void drop_init_sender(struct drop_case *t)
{
	struct h_conn c = { .no_timeout = true };

	rsp_init_type(&t->r, IBV_QPT_RC, &c);
}

static void post_write(struct rsp *r, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)r->mem, len, rc_mr_lkey(r->mr) };

	ck_assert_int_eq(h_post_send(r->qp, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)r->mem,
				     rc_mr_rkey(r->mr), IBV_SEND_SIGNALED), 0);
	h_run(&r->e, RUN_NS);
}

static void inject_ack(struct rsp *r, uint8_t opcode, uint32_t psn)
{
	struct wire_build_desc d = req(r, opcode, psn, false);

	d.aeth.syndrome = SYN_ACK;
	inject(r, &d, NULL, 0);
}

static void write_at(struct rsp *r, uint32_t psn, uint32_t rkey)
{
	static const uint8_t data[16] = { 1 };

	write_only(r, psn, true, (uintptr_t)r->mem, rkey, data, sizeof(data));
}

static void make_unknown_qp(struct drop_case *t)
{
	struct wire_build_desc d;

	rsp_init(&t->r);
	t->engine_level = true;
	d = req(&t->r, WIRE_OP_SEND_ONLY, EPSN, true);
	d.dest_qp = 0x777;
	snap(t);
	inject(&t->r, &d, NULL, 0);
}

/* A UD send to an RC QP: its QP exists, its transport is not the QP's. */
static void make_wrong_transport(struct drop_case *t)
{
	struct wire_build_desc d;

	rsp_init(&t->r);
	d = req(&t->r, WIRE_OPC_UD | WIRE_OP_SEND_ONLY, EPSN, false);
	d.deth.qkey = QKEY;
	d.deth.src_qp = PEER_QPN;
	snap(t);
	inject(&t->r, &d, "ud", 2);
}

/* A send to the RC QP whose source or destination GID ends in another byte (0: as it should). */
static void send_between(struct drop_case *t, uint8_t src_last, uint8_t dst_last)
{
	struct wire_build_desc d;

	rsp_init(&t->r);
	d = req(&t->r, WIRE_OP_SEND_ONLY, EPSN, true);
	d.ip_version = 4;
	h_gid(0, 0, d.src_gid);
	h_gid(1, 0, d.dst_gid);
	if (src_last)
		d.src_gid[15] = src_last;
	if (dst_last)
		d.dst_gid[15] = dst_last;
	snap(t);
	inject(&t->r, &d, NULL, 0);
}

static void make_not_our_addr(struct drop_case *t)
{
	send_between(t, 0, 88);
}

static void make_wrong_peer(struct drop_case *t)
{
	send_between(t, 77, 0);
}

static void make_qp_state(struct drop_case *t)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

	rsp_init(&t->r);
	ck_assert_int_eq(rc_qp_modify(t->r.qp, &a, IBV_QP_STATE), 0);
	h_run(&t->r.e, RUN_NS);
	snap(t);
	write_at(&t->r, EPSN, rc_mr_rkey(t->r.mr));
}

/* A request behind one that earned an error NAK, in the same burst (before the QP is in ERR). */
static void make_resp_in_error(struct drop_case *t)
{
	static const uint8_t data[16] = { 1 };
	struct wire_build_desc d;

	rsp_init(&t->r);
	snap(t);
	d = req(&t->r, WIRE_OP_WRITE_ONLY, EPSN, true);
	d.reth.va = (uintptr_t)t->r.mem;
	d.reth.rkey = rc_mr_rkey(t->r.mr) ^ 0x100;
	d.reth.len = sizeof(data);
	h_inject(&t->r.e, 1, &d, data, sizeof(data));
	d = req(&t->r, WIRE_OP_SEND_ONLY, EPSN + 1, true);
	inject(&t->r, &d, NULL, 0);
	ck_assert_uint_eq(n_acks(&t->r), 1);
	ck_assert_uint_eq(ack(&t->r, 0)->syndrome, SYN_NAK(WIRE_NAK_REM_ACCESS_ERR));
}

static void make_seq_after_nak(struct drop_case *t)
{
	rsp_init(&t->r);
	write_at(&t->r, EPSN + 1, rc_mr_rkey(t->r.mr));
	ck_assert_uint_eq(n_acks(&t->r), 1);
	snap(t);
	write_at(&t->r, EPSN + 2, rc_mr_rkey(t->r.mr));
	ck_assert_uint_eq(n_acks(&t->r), 1);
}

/* A selective-repeat responder whose requester has shown it does it too (one write at ePSN). */
static void sr_init(struct rsp *r)
{
	static const uint8_t data[16] = { 1 };
	struct h_opts o = { .selective_repeat = { false, true } };
	struct wire_build_desc d;

	rsp_init_opts(r, IBV_QPT_RC, NULL, &o);
	d = req(r, WIRE_OP_WRITE_ONLY, EPSN, true);
	d.sr_cap = true;
	d.reth.va = (uintptr_t)r->mem;
	d.reth.rkey = rc_mr_rkey(r->mr);
	d.reth.len = sizeof(data);
	inject(r, &d, data, sizeof(data));
}

/* Without AckReq: one past ePSN that asks for an ACK is answered with the hole's NAK again. */
static void sr_write_at(struct rsp *r, uint32_t psn)
{
	static const uint8_t data[16] = { 2 };
	struct wire_build_desc d = req(r, WIRE_OP_WRITE_ONLY, psn, false);

	d.sr_cap = true;
	d.reth.va = (uintptr_t)r->mem + 64;
	d.reth.rkey = rc_mr_rkey(r->mr);
	d.reth.len = sizeof(data);
	inject(r, &d, data, sizeof(data));
}

/* A send past ePSN (its receive WQE is not known yet), after the hole's selective NAK. */
static void make_sr_not_placed(struct drop_case *t)
{
	struct wire_build_desc d;

	sr_init(&t->r);
	d = req(&t->r, WIRE_OP_SEND_ONLY, EPSN + 2, false);
	d.sr_cap = true;
	inject(&t->r, &d, NULL, 0);
	ck_assert_uint_eq(qp_cnt(t->r.qp).selective_naks_tx, 1);
	snap(t);
	d.psn = EPSN + 3;
	inject(&t->r, &d, NULL, 0);
}

/* A write past ePSN placed once already. */
static void make_sr_duplicate(struct drop_case *t)
{
	sr_init(&t->r);
	sr_write_at(&t->r, EPSN + 2);
	ck_assert_uint_eq(qp_cnt(t->r.qp).selective_placed, 1);
	snap(t);
	sr_write_at(&t->r, EPSN + 2);
}

/* ---- Selective repeat: crafted requests from a requester that does it ---- */

static void sr_send(struct rsp *r, uint8_t opcode, uint32_t psn, bool ackreq, uint64_t va,
		    uint32_t dma_len, const void *data, uint32_t len)
{
	struct wire_build_desc d = req(r, opcode, psn, ackreq);

	d.sr_cap = true;
	d.reth.va = va;
	d.reth.rkey = rc_mr_rkey(r->mr);
	d.reth.len = dma_len;
	inject(r, &d, data, len);
}

/*
 * Write A (ONLY, PSN +1) lost, write B (three packets, +2..+4) arrives: B
 * is placed but for its last byte and one selective NAK names the one PSN
 * missing (MSN field 1).  A at ePSN then takes B in order: its last byte
 * stored, one ACK for +4 with the MSN counting A and B; B's middle again
 * is a duplicate, acknowledged again, not placed again.
 */
START_TEST(sr_write_placed_ahead_taken_in_order)
{
	struct rsp r;
	uint8_t b[3 * 1024 - 100], a[16];
	const struct h_frame *f;
	unsigned acks;
	uintptr_t va;

	memset(a, 0x11, sizeof(a));
	for (unsigned i = 0; i < sizeof(b); i++)
		b[i] = (uint8_t)(i * 13 + 1);
	sr_init(&r);
	va = (uintptr_t)r.mem;
	acks = n_acks(&r);
	sr_send(&r, WIRE_OP_WRITE_FIRST, EPSN + 2, false, va + 1024, sizeof(b), b, 1024);
	sr_send(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 3, false, 0, 0, b + 1024, 1024);
	sr_send(&r, WIRE_OP_WRITE_LAST, EPSN + 4, false, 0, 0, b + 2048, sizeof(b) - 2048);
	ck_assert_uint_eq(qp_cnt(r.qp).selective_placed, 3);
	ck_assert_uint_eq(n_acks(&r), acks + 1);
	f = ack(&r, acks);
	ck_assert_uint_eq(f->syndrome, SYN_NAK(WIRE_NAK_PSN_SEQ_ERR));
	ck_assert(f->sr_nak && f->sr_cap);
	ck_assert_uint_eq(f->psn, (EPSN + 1) & 0xffffff);
	ck_assert_uint_eq(f->msn, 1);
	ck_assert_int_eq(memcmp(r.mem + 1024, b, sizeof(b) - 1), 0);
	ck_assert_uint_eq(r.mem[1024 + sizeof(b) - 1], 0);
	sr_send(&r, WIRE_OP_WRITE_ONLY, EPSN + 1, true, va, sizeof(a), a, sizeof(a));
	ck_assert_int_eq(memcmp(r.mem, a, sizeof(a)), 0);
	ck_assert_int_eq(memcmp(r.mem + 1024, b, sizeof(b)), 0);
	ck_assert_uint_eq(n_acks(&r), acks + 2);
	f = ack(&r, acks + 1);
	ck_assert_uint_eq(f->syndrome, SYN_ACK);
	ck_assert(!f->sr_nak);
	ck_assert_uint_eq(f->psn, (EPSN + 4) & 0xffffff);
	ck_assert_uint_eq(f->msn, 3);
	memset(r.mem + 1024, 0, sizeof(b));
	sr_send(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 3, true, 0, 0, b + 1024, 1024);
	ck_assert_uint_eq(qp_cnt(r.qp).duplicates, 1);
	ck_assert_uint_eq(r.mem[2048], 0);
	ck_assert_uint_eq(n_acks(&r), acks + 3);
	ck_assert_uint_eq(qp_cnt(r.qp).selective_placed, 3);
	rsp_fini(&r);
}
END_TEST

static void sr_write_imm(struct rsp *r, uint32_t psn, const uint8_t *data, uint32_t len,
			 uint32_t imm)
{
	struct wire_build_desc d = req(r, WIRE_OP_WRITE_ONLY_IMM, psn, false);

	d.sr_cap = true;
	d.reth.va = (uintptr_t)r->mem + 4096;
	d.reth.rkey = rc_mr_rkey(r->mr);
	d.reth.len = len;
	d.imm = imm;
	inject(r, &d, data, len);
}

/*
 * A write with immediate placed ahead completes when ePSN reaches it, with
 * its immediate and the receive WQE that is next then; with no WQE then,
 * it is forgotten, named in the next selective NAK, and its resend at ePSN
 * draws an RNR NAK, then completes once a WQE is posted.
 */
START_TEST(sr_write_imm_completes_in_order)
{
	uint8_t data[16];
	struct rsp r;
	struct ibv_wc wc;
	const struct h_frame *f;

	memset(data, 0x3c, sizeof(data));
	sr_init(&r);
	post_recv(&r, 77, 8192, 64, rc_mr_lkey(r.mr));
	sr_write_imm(&r, EPSN + 2, data, sizeof(data), 0xabcd);
	ck_assert_uint_eq(qp_cnt(r.qp).selective_placed, 1);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 0);
	ck_assert_uint_eq(r.mem[4096 + sizeof(data) - 1], 0);
	write_only(&r, EPSN + 1, false, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 8);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 77);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(wc.byte_len, sizeof(data));
	ck_assert_uint_eq(be32toh(wc.imm_data), 0xabcd);
	ck_assert_int_eq(memcmp(r.mem + 4096, data, sizeof(data)), 0);

	/* No WQE when ePSN gets there. */
	sr_write_imm(&r, EPSN + 4, data, sizeof(data), 0x1234);
	write_only(&r, EPSN + 3, false, (uintptr_t)r.mem, rc_mr_rkey(r.mr), data, 8);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 0);
	f = ack(&r, n_acks(&r) - 1);
	ck_assert(f->sr_nak);
	ck_assert_uint_eq(f->psn, (EPSN + 4) & 0xffffff);
	ck_assert_uint_eq(f->msn, 1);
	sr_write_imm(&r, EPSN + 4, data, sizeof(data), 0x1234);
	f = ack(&r, n_acks(&r) - 1);
	ck_assert_uint_eq(f->syndrome & 0xe0, 0x20);
	ck_assert_uint_eq(f->psn, (EPSN + 4) & 0xffffff);
	post_recv(&r, 78, 8192, 64, rc_mr_lkey(r.mr));
	sr_write_imm(&r, EPSN + 4, data, sizeof(data), 0x1234);
	ck_assert_int_eq(rc_cq_poll(r.e.cq[1], 1, &wc), 1);
	ck_assert_uint_eq(wc.wr_id, 78);
	ck_assert_uint_eq(be32toh(wc.imm_data), 0x1234);
	rsp_fini(&r);
}
END_TEST

/*
 * What waits for ePSN: a send, an empty write with immediate, a read, a
 * middle without its first packet.  Each is dropped (after the hole's one NAK), and
 * one that asks for an ACK gets the hole's NAK again.
 */
START_TEST(sr_unplaceable_wait_for_epsn)
{
	static const uint8_t data[64] = { 7 };
	struct rsp r;
	unsigned acks;
	const struct h_frame *f;

	sr_init(&r);
	acks = n_acks(&r);
	sr_send(&r, WIRE_OP_SEND_ONLY, EPSN + 2, false, 0, 0, data, sizeof(data));
	sr_send(&r, WIRE_OP_WRITE_ONLY_IMM, EPSN + 3, false, (uintptr_t)r.mem + 4096, 0, NULL, 0);
	sr_send(&r, WIRE_OP_READ_REQUEST, EPSN + 4, false, (uintptr_t)r.mem, 64, NULL, 0);
	sr_send(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 5, false, 0, 0, r.mem, 1024);
	ck_assert_uint_eq(qp_cnt(r.qp).selective_placed, 0);
	ck_assert_uint_eq(qp_cnt(r.qp).rc_drops.count[RC_DROP_SR_NOT_PLACED], 3);
	ck_assert_uint_eq(n_acks(&r), acks + 1);
	ck_assert_uint_eq(ack(&r, acks)->msn, 2);	/* +1 and +2: nothing placed */
	ck_assert_uint_eq(r.mem[4096], 0);
	sr_send(&r, WIRE_OP_SEND_ONLY, EPSN + 6, true, 0, 0, data, sizeof(data));
	ck_assert_uint_eq(n_acks(&r), acks + 2);
	f = ack(&r, acks + 1);
	ck_assert(f->sr_nak);
	ck_assert_uint_eq(f->psn, (EPSN + 1) & 0xffffff);
	ck_assert_uint_eq(f->msn, 6);
	rsp_fini(&r);
}
END_TEST

/*
 * A requester that lies cannot make a write land outside what its RETH
 * was checked for: a write's range overlapping a known one, a middle at a
 * first packet's PSN, a length the RETH does not allow, a region it may
 * not write are all left for ePSN; memory outside the first write's range
 * keeps its bytes.
 */
START_TEST(sr_lies_placed_nowhere)
{
	uint8_t data[1024];
	struct rsp r;
	struct wire_build_desc d;

	memset(data, 0x5c, sizeof(data));
	sr_init(&r);
	memset(r.mem, 0, MEM_LEN);
	/* A write of two packets at +2..+3, its first packet ahead. */
	sr_send(&r, WIRE_OP_WRITE_FIRST, EPSN + 2, false, (uintptr_t)r.mem, 2048, data, 1024);
	ck_assert_uint_eq(qp_cnt(r.qp).selective_placed, 1);
	/* Overlapping first packet at +3, claiming other memory. */
	sr_send(&r, WIRE_OP_WRITE_FIRST, EPSN + 3, false, (uintptr_t)r.mem + 8192, 4096, data, 1024);
	/* A last packet at +3 longer than the write's rest. */
	sr_send(&r, WIRE_OP_WRITE_LAST, EPSN + 3, false, 0, 0, data, 1000);
	/* A middle at +4, past the write's last PSN, with no write of its own. */
	sr_send(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 4, false, 0, 0, data, 1024);
	/* An ONLY into the read-only region. */
	d = req(&r, WIRE_OP_WRITE_ONLY, EPSN + 5, false);
	d.sr_cap = true;
	d.reth.va = (uintptr_t)r.ro_mem;
	d.reth.rkey = rc_mr_rkey(r.ro_mr);
	d.reth.len = 16;
	inject(&r, &d, data, 16);
	ck_assert_uint_eq(qp_cnt(r.qp).selective_placed, 1);
	for (unsigned i = 1024; i < MEM_LEN; i++)
		ck_assert_msg(r.mem[i] == 0, "byte %u written", i);
	for (unsigned i = 0; i < 16; i++)
		ck_assert_uint_eq(r.ro_mem[i], 0);
	rsp_fini(&r);
}
END_TEST

/* A duplicate atomic the responder never executed: nothing to answer it from. */
static void make_dup_not_held(struct drop_case *t)
{
	struct wire_build_desc d;

	rsp_init(&t->r);
	d = req(&t->r, WIRE_OP_FETCH_ADD, EPSN - 1, false);
	d.atomic.va = (uintptr_t)t->r.mem;
	d.atomic.rkey = rc_mr_rkey(t->r.mr);
	d.atomic.swap_add = 1;
	snap(t);
	inject(&t->r, &d, NULL, 0);
}

static void make_uc_gap(struct drop_case *t)
{
	struct wire_build_desc d;

	rsp_init_type(&t->r, IBV_QPT_UC, NULL);
	d = req(&t->r, WIRE_OPC_UC | WIRE_OP_SEND_LAST, EPSN + 2, false);
	snap(t);
	inject(&t->r, &d, "gap", 3);
}

static void make_uc_error(struct drop_case *t)
{
	static const uint8_t data[16] = { 1 };
	struct wire_build_desc d;

	rsp_init_type(&t->r, IBV_QPT_UC, NULL);
	d = req(&t->r, WIRE_OPC_UC | WIRE_OP_WRITE_ONLY, EPSN, false);
	d.reth.va = (uintptr_t)t->r.mem;
	d.reth.rkey = rc_mr_rkey(t->r.mr) ^ 0x100;
	d.reth.len = sizeof(data);
	snap(t);
	inject(&t->r, &d, data, sizeof(data));
}

static void make_no_recv_wqe(struct drop_case *t)
{
	struct wire_build_desc d;

	rsp_init_type(&t->r, IBV_QPT_UC, NULL);
	d = req(&t->r, WIRE_OPC_UC | WIRE_OP_SEND_ONLY, EPSN, false);
	snap(t);
	inject(&t->r, &d, "no wqe", 6);
}

static void make_bad_qkey(struct drop_case *t)
{
	struct h_conn c = { .qkey = QKEY };
	struct wire_build_desc d;

	rsp_init_type(&t->r, IBV_QPT_UD, &c);
	post_recv(&t->r, 1, 0, 4096, rc_mr_lkey(t->r.mr));
	d = req(&t->r, WIRE_OPC_UD | WIRE_OP_SEND_ONLY, 0, false);
	d.deth.qkey = QKEY + 1;
	d.deth.src_qp = PEER_QPN;
	snap(t);
	inject(&t->r, &d, "qkey", 4);
}

/* A UD datagram to the multicast QPN for a group no QP here has joined. */
static void make_no_mcast_group(struct drop_case *t)
{
	struct h_conn c = { .qkey = QKEY };
	struct wire_build_desc d;

	rsp_init_type(&t->r, IBV_QPT_UD, &c);
	t->engine_level = true;
	d = req(&t->r, WIRE_OPC_UD | WIRE_OP_SEND_ONLY, 0, false);
	d.dest_qp = WIRE_MCAST_QPN;
	d.deth.qkey = QKEY;
	d.deth.src_qp = PEER_QPN;
	snap(t);
	inject(&t->r, &d, "mcast", 5);
}

/* An ACK for PSN 5 from a QP that has sent nothing. */
static void make_ghost_response(struct drop_case *t)
{
	rsp_init(&t->r);
	snap(t);
	inject_ack(&t->r, WIRE_OP_ACKNOWLEDGE, 5);
}

/* The ACK of a write, again once the write is complete. */
static void make_stale_response(struct drop_case *t)
{
	struct ibv_wc wc;

	drop_init_sender(t);
	post_write(&t->r, 64);
	inject_ack(&t->r, WIRE_OP_ACKNOWLEDGE, 0);
	ck_assert_int_eq(rc_cq_poll(t->r.e.cq[1], 1, &wc), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	snap(t);
	inject_ack(&t->r, WIRE_OP_ACKNOWLEDGE, 0);
}

/* A read response to a write. */
static void make_unexpected_response(struct drop_case *t)
{
	drop_init_sender(t);
	post_write(&t->r, 64);
	snap(t);
	inject_ack(&t->r, WIRE_OP_READ_RESP_ONLY, 0);
}

static void (*const make_drop[RC_DROP_COUNT])(struct drop_case *) = {
	[RC_DROP_UNKNOWN_QP]		= make_unknown_qp,
	[RC_DROP_WRONG_TRANSPORT]	= make_wrong_transport,
	[RC_DROP_NOT_OUR_ADDR]		= make_not_our_addr,
	[RC_DROP_WRONG_PEER]		= make_wrong_peer,
	[RC_DROP_QP_STATE]		= make_qp_state,
	[RC_DROP_RESP_IN_ERROR]		= make_resp_in_error,
	[RC_DROP_SEQ_AFTER_NAK]		= make_seq_after_nak,
	[RC_DROP_DUP_NOT_HELD]		= make_dup_not_held,
	[RC_DROP_UC_GAP]		= make_uc_gap,
	[RC_DROP_UC_ERROR]		= make_uc_error,
	[RC_DROP_NO_RECV_WQE]		= make_no_recv_wqe,
	[RC_DROP_BAD_QKEY]		= make_bad_qkey,
	[RC_DROP_GHOST_RESPONSE]	= make_ghost_response,
	[RC_DROP_STALE_RESPONSE]	= make_stale_response,
	[RC_DROP_UNEXPECTED_RESPONSE]	= make_unexpected_response,
	[RC_DROP_SR_NOT_PLACED]		= make_sr_not_placed,
	[RC_DROP_SR_DUPLICATE]		= make_sr_duplicate,
	[RC_DROP_NO_MCAST_GROUP]	= make_no_mcast_group,
};

/* The frame made for reason _i moves that reason's counter by one, and no other drop counter. */
START_TEST(each_drop_reason_counted)
{
	enum rc_drop why = (enum rc_drop)_i;
	struct drop_case t = { 0 };
	struct rc_counters after, qp_after;

	ck_assert_msg(make_drop[why], "no frame for %s", rc_drop_info(why)->name);
	make_drop[why](&t);
	rc_engine_counters(t.r.e.eng[1], &after);
	qp_after = qp_cnt(t.r.qp);
	for (unsigned i = 0; i < RC_DROP_COUNT; i++) {
		uint64_t moved = after.rc_drops.count[i] - t.before.rc_drops.count[i];
		uint64_t qp_moved = qp_after.rc_drops.count[i] - t.qp_before.rc_drops.count[i];

		ck_assert_msg(moved == (i == why), "for %s, %s moved by %" PRIu64,
			      rc_drop_info(why)->name, rc_drop_info((enum rc_drop)i)->name, moved);
		/* Counted against the QP the frame was for, when it has one. */
		ck_assert_uint_eq(qp_moved, i == why && !t.engine_level);
	}
	for (unsigned i = 0; i < WIRE_DROP_COUNT; i++)
		ck_assert_uint_eq(after.drops.count[i], t.before.drops.count[i]);
	rsp_fini(&t.r);
}
END_TEST

/*
 * Every reason has a name and a description; the names differ from each
 * other and from the parser's, as drops.NAME in fixtures and drop_name in
 * `uroce stat` name one counter.
 */
START_TEST(drop_names_and_descriptions)
{
	const struct wire_drop_info *none = rc_drop_info(RC_DROP_COUNT);

	for (unsigned r = 1; r < RC_DROP_COUNT; r++) {
		const struct wire_drop_info *in = rc_drop_info((enum rc_drop)r);

		ck_assert_ptr_ne(in, none);
		ck_assert_ptr_nonnull(in->name);
		ck_assert_ptr_nonnull(in->desc);
		ck_assert_uint_gt(strlen(in->name), 0);
		ck_assert_uint_gt(strlen(in->desc), 5);
		for (unsigned s = 0; s < r; s++)
			ck_assert_str_ne(in->name, rc_drop_info((enum rc_drop)s)->name);
		for (unsigned w = 1; w < WIRE_DROP_COUNT; w++)
			ck_assert_str_ne(in->name, wire_drop_name((enum wire_drop)w));
	}
	ck_assert_str_eq(rc_drop_info(RC_DROP_WRONG_TRANSPORT)->name, "WRONG_TRANSPORT");
	ck_assert_str_eq(none->name, "INVALID");
	ck_assert_ptr_eq(rc_drop_info((enum rc_drop)-1), none);
}
END_TEST

/* execute() takes a request that is no send, write, read, atomic write or flush for an atomic. */
START_TEST(request_opcodes_are_send_write_read_or_atomic)
{
	const wire_op_flags kinds = WIRE_OPF_SEND | WIRE_OPF_WRITE | WIRE_OPF_READ |
				    WIRE_OPF_ATOMIC | WIRE_OPF_ATOMIC_WRITE | WIRE_OPF_FLUSH;

	for (unsigned op = 0; op < 256; op++) {
		wire_op_flags fl = wire_opcode[op].flags;

		if (wire_opcode_valid((uint8_t)op) && (fl & WIRE_OPF_REQUEST))
			ck_assert_msg(__builtin_popcount(fl & kinds) == 1, "opcode %#x", op);
	}
}
END_TEST

/*
 * A write's middle packet whose ICRC is left to the copy, to a QP that no
 * longer receives: a corrupted one counts as BAD_ICRC, not as QP_STATE.
 */
START_TEST(deferred_icrc_drop_counted_once)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	uint8_t data[2 * 1024] = { 0 };
	struct wire_build_desc d;
	struct rsp r;

	rsp_init(&r);
	d = req(&r, WIRE_OP_WRITE_FIRST, EPSN, false);
	d.reth.va = (uintptr_t)r.mem;
	d.reth.rkey = rc_mr_rkey(r.mr);
	d.reth.len = 3 * 1024;
	inject(&r, &d, data, 1024);
	ck_assert_int_eq(rc_qp_modify(r.qp, &a, IBV_QP_STATE), 0);
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 1, false);
	inject_corrupted(&r, &d, data + 1024, 1024);
	ck_assert_uint_eq(icrc_drops(&r), 1);
	ck_assert_uint_eq(qp_cnt(r.qp).rc_drops.count[RC_DROP_QP_STATE], 0);
	d = req(&r, WIRE_OP_WRITE_MIDDLE, EPSN + 1, false);
	inject(&r, &d, data + 1024, 1024);
	ck_assert_uint_eq(icrc_drops(&r), 1);
	ck_assert_uint_eq(qp_cnt(r.qp).rc_drops.count[RC_DROP_QP_STATE], 1);
	rsp_fini(&r);
}
END_TEST

Suite *rc_responder_suite(void)
{
	Suite *s = suite_create("rc_responder");
	TCase *tc = tcase_create("responder");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, write_acked_with_msn);
	tcase_add_test(tc, acks_coalesced);
	tcase_add_test(tc, duplicate_reacked_not_executed);
	tcase_add_test(tc, one_seq_nak_per_gap);
	tcase_add_test(tc, nak_invalid_middle_without_first);
	tcase_add_test(tc, nak_invalid_send_then_write);
	tcase_add_test(tc, nak_access_bad_rkey);
	tcase_add_test(tc, nak_access_bounds);
	tcase_add_loop_test(tc, nak_access_flags_and_pd, 0, 5);
	tcase_add_test(tc, nak_invalid_misaligned_atomic);
	tcase_add_loop_test(tc, nak_invalid_write_length, 0, 2);
	tcase_add_test(tc, nak_invalid_send_too_long);
	tcase_add_test(tc, nak_remote_op_bad_recv_lkey);
	tcase_add_test(tc, nak_invalid_qp_access);
	tcase_add_test(tc, atomic_write_placed_and_answered);
	tcase_add_loop_test(tc, atomic_write_refused, 0, 4);
	tcase_add_loop_test(tc, flush_checked_and_answered, 0, 5);
	tcase_add_test(tc, rnr_nak_then_accept);
	tcase_add_test(tc, rnr_on_write_imm_last);
	tcase_add_test(tc, duplicate_atomic_replayed);
	tcase_add_test(tc, duplicate_read_reexecuted);
	tcase_add_test(tc, duplicate_read_of_unmapped_memory_dropped);
	tcase_add_test(tc, send_with_invalidate);
	tcase_add_test(tc, send_with_invalidate_unknown_key);
	tcase_add_test(tc, zero_length_write_skips_rkey);
	tcase_add_test(tc, data_lands_in_order);
	tcase_add_test(tc, corrupted_middle_dropped_then_rewritten);
	tcase_add_test(tc, atomics_atomic_against_cpu);
	tcase_add_test(tc, wrong_transport_or_source_dropped);
	tcase_add_test(tc, uc_gap_drops_message);
	tcase_add_loop_test(tc, ce_mark_sends_cnp, 0, 2);
	tcase_add_test(tc, new_read_takes_busy_oldest_slot);
	suite_add_tcase(s, tc);
	tc = tcase_create("selective repeat");
	tcase_add_test(tc, sr_write_placed_ahead_taken_in_order);
	tcase_add_test(tc, sr_write_imm_completes_in_order);
	tcase_add_test(tc, sr_unplaceable_wait_for_epsn);
	tcase_add_test(tc, sr_lies_placed_nowhere);
	suite_add_tcase(s, tc);
	tc = tcase_create("drops");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, each_drop_reason_counted, 1, RC_DROP_COUNT);
	tcase_add_test(tc, drop_names_and_descriptions);
	tcase_add_test(tc, request_opcodes_are_send_write_read_or_atomic);
	tcase_add_test(tc, deferred_icrc_drop_counted_once);
	suite_add_tcase(s, tc);
	return s;
}
