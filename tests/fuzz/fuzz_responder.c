// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: sequences of requests (built from the input, so most get
 * past the ICRC) into an RC, a UC and a UD QP and an XRC target of one engine
 * (its domain's SRQ, and one of another domain, for the XRCETH to name).  Its memory is
 * laid out with guard zones around what the peer may write (one MR with
 * remote write, the receive buffers); after every packet the guards and a
 * read-only MR must be as they were.  ASan watches everything else.  The
 * engine has selective repeat on, and a request with bit 14 of its length
 * word set says the requester does it too (WIRE_BTH_SR_CAP): from then on
 * the RC QP places writes ahead of its expected PSN.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_sim.h"
#include "port_sim.h"
#include "uroce/rc.h"

#define GUARD		4096
#define A_LEN		8192	/* remote write, read, atomic */
#define B_LEN		4096	/* remote read only: never written */
#define R_LEN		8192	/* receive buffers: local write */
#define OFF_A		GUARD
#define OFF_B		(OFF_A + A_LEN + GUARD)
#define OFF_R		(OFF_B + B_LEN + GUARD)
#define MEM_LEN		(OFF_R + R_LEN + GUARD)
#define GUARD_BYTE	0xaa
#define PEER_QPN	0x999
#define QKEY		0x1234
#define START_PSN	0xfffff0

enum { Q_RC, Q_UC, Q_UD, NQ };

struct fz {
	uint64_t		now;
	struct port_sim		*link;
	struct rc_engine	*eng;
	struct rc_pd		*pd;
	struct rc_cq		*cq;
	struct rc_qp		*qp[NQ];
	struct rc_xrcd		*xrcd, *other_xrcd;
	struct rc_srq		*xsrq, *other_srq;	/* of xrcd, of other_xrcd */
	struct rc_qp		*xqp;			/* XRC target of xrcd */
	uint32_t		xrc_next_psn;
	struct rc_mr		*a, *b, *r;
	uint8_t			*mem;
	uint32_t		next_psn[NQ];
};

/* ---- The engine under test ---- */

static uint64_t clock_now(void *arg)
{
	return ((struct fz *)arg)->now;
}

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_responder: setup: %s\n", what);
		abort();
	}
}

static void qp_connect(struct fz *f, struct rc_qp *qp, enum ibv_qp_type t)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = QKEY,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	(void)f;
	mask |= t == IBV_QPT_UD ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS;
	must(!rc_qp_modify(qp, &a, mask), "INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	mask = IBV_QP_STATE;
	if (t != IBV_QPT_UD) {
		a.path_mtu = IBV_MTU_1024;
		a.dest_qp_num = PEER_QPN;
		a.rq_psn = START_PSN;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		fuzz_gid_of(0, a.ah_attr.grh.dgid.raw);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		if (t == IBV_QPT_RC || t == IBV_QPT_XRC_RECV)
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	}
	must(!rc_qp_modify(qp, &a, mask), "RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
	if (t == IBV_QPT_RC) {
		a.timeout = 10;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = 4;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	if (t == IBV_QPT_XRC_RECV) {
		a.timeout = 10;
		mask |= IBV_QP_TIMEOUT;
	}
	must(!rc_qp_modify(qp, &a, mask), "RTS");
}

static void setup_xrc(struct fz *f)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 64, .max_sge = 2 } };
	struct rc_qp_init init = { .qp_type = IBV_QPT_XRC_RECV };

	f->xrcd = rc_xrcd_alloc(f->eng);
	f->other_xrcd = rc_xrcd_alloc(f->eng);
	must(f->xrcd && f->other_xrcd, "XRC domains");
	f->xsrq = rc_srq_create_xrc(f->pd, f->xrcd, f->cq, &sa, NULL);
	f->other_srq = rc_srq_create_xrc(f->pd, f->other_xrcd, f->cq, &sa, NULL);
	must(f->xsrq && f->other_srq, "XRC SRQs");
	init.xrcd = f->xrcd;
	f->xqp = rc_qp_create(f->eng, &init);
	must(f->xqp, "XRC target");
	qp_connect(f, f->xqp, IBV_QPT_XRC_RECV);
	f->xrc_next_psn = START_PSN;
}

static void setup(struct fz *f)
{
	struct port_sim_cfg sc = { .seed = 1, .slots = 128, .now_ns = clock_now, .clock_arg = f };
	struct wire_gid_entry g = { .valid = true, .type = WIRE_GID_ROCE_V2 };
	static const enum ibv_qp_type types[NQ] = { IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD };
	struct rc_engine_cfg ec = { .now_ns = clock_now, .clock_arg = f, .seed = 1,
				    .selective_repeat = true };

	memset(f, 0, sizeof(*f));
	f->now = 1;
	f->link = port_sim_create(&sc);
	must(f->link, "link");
	port_sim_set_filter(f->link, fuzz_drop_replies, NULL);
	ec.port = port_sim_port(f->link, 1);
	f->eng = rc_engine_create(&ec);
	must(f->eng, "engine");
	fuzz_gid_of(1, g.gid);
	rc_engine_set_gid(f->eng, 0, &g);
	f->pd = rc_pd_alloc(f->eng);
	f->cq = rc_cq_create(f->eng, 4096, NULL);
	f->mem = aligned_alloc(64, MEM_LEN);
	must(f->pd && f->cq && f->mem, "objects");
	memset(f->mem, GUARD_BYTE, MEM_LEN);
	memset(f->mem + OFF_A, 0, A_LEN);
	for (int i = 0; i < B_LEN; i++)
		f->mem[OFF_B + i] = (uint8_t)(i * 7);
	memset(f->mem + OFF_R, 0, R_LEN);
	f->a = rc_mr_reg(f->pd, f->mem + OFF_A, A_LEN, (uintptr_t)f->mem + OFF_A,
			 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	f->b = rc_mr_reg(f->pd, f->mem + OFF_B, B_LEN, (uintptr_t)f->mem + OFF_B,
			 IBV_ACCESS_REMOTE_READ);
	f->r = rc_mr_reg(f->pd, f->mem + OFF_R, R_LEN, (uintptr_t)f->mem + OFF_R,
			 IBV_ACCESS_LOCAL_WRITE);
	must(f->a && f->b && f->r, "MRs");
	for (int q = 0; q < NQ; q++) {
		struct rc_qp_init init = {
			.qp_type = types[q], .pd = f->pd, .send_cq = f->cq, .recv_cq = f->cq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 64, .max_send_sge = 1,
				 .max_recv_sge = 2 },
		};

		f->qp[q] = rc_qp_create(f->eng, &init);
		must(f->qp[q], "QP");
		qp_connect(f, f->qp[q], types[q]);
		f->next_psn[q] = START_PSN;
	}
	setup_xrc(f);
}

/* Everything destroyed through the API, after which the engine must hold no object. */
static void teardown(struct fz *f)
{
	struct rc_objects o;
	int ret = 0;

	for (int q = 0; q < NQ; q++)
		ret |= rc_qp_destroy(f->qp[q]);
	ret |= rc_qp_destroy(f->xqp) | rc_srq_destroy(f->xsrq) | rc_srq_destroy(f->other_srq);
	ret |= rc_xrcd_free(f->xrcd) | rc_xrcd_free(f->other_xrcd);
	ret |= rc_mr_dereg(f->a) | rc_mr_dereg(f->b) | rc_mr_dereg(f->r);
	ret |= rc_cq_destroy(f->cq);
	ret |= rc_pd_free(f->pd);
	rc_engine_objects(f->eng, &o);
	if (ret || o.qp || o.srq || o.cq || o.ah || o.mw || o.mr || o.pd || o.xrcd) {
		fprintf(stderr, "fuzz_responder: teardown: destroy returned %d; left alive: %u QPs, "
			"%u SRQs, %u CQs, %u AHs, %u MWs, %u MRs, %u PDs, %u XRCDs\n", ret, o.qp, o.srq,
			o.cq, o.ah, o.mw, o.mr, o.pd, o.xrcd);
		abort();
	}
	rc_engine_destroy(f->eng);
	port_sim_destroy(f->link);
	free(f->mem);
}

/* Guards untouched and the read-only MR unchanged, or the engine wrote where it may not. */
static void check_memory(const struct fz *f)
{
	static const struct { uint32_t off, len; } guards[] = {
		{ 0, GUARD }, { OFF_A + A_LEN, GUARD }, { OFF_B + B_LEN, GUARD },
		{ OFF_R + R_LEN, GUARD },
	};

	for (unsigned g = 0; g < sizeof(guards) / sizeof(guards[0]); g++)
		for (uint32_t i = 0; i < guards[g].len; i++)
			if (f->mem[guards[g].off + i] != GUARD_BYTE) {
				fprintf(stderr, "guard byte written at offset %u\n", guards[g].off + i);
				abort();
			}
	for (int i = 0; i < B_LEN; i++)
		if (f->mem[OFF_B + i] != (uint8_t)(i * 7)) {
			fprintf(stderr, "read-only MR written at %d\n", i);
			abort();
		}
}

/* ---- Actions ---- */

static uint64_t pick_va(struct fz *f, struct fuzz_in *in)
{
	uint8_t sel = fuzz_u8(in);
	int32_t off = (int16_t)fuzz_u16(in);
	uintptr_t base = (uintptr_t)f->mem;

	switch (sel % 6) {
	case 0:
		return base + OFF_A + (uint32_t)off % A_LEN;
	case 1:
		return base + OFF_B + (uint32_t)off % B_LEN;
	case 2:
		return base + OFF_R + (uint32_t)off % R_LEN;
	case 3:
		return base + OFF_A + off;	/* around A's edges */
	case 4:
		return base + (uint32_t)off % MEM_LEN;
	default:
		return fuzz_u64(in);
	}
}

static uint32_t pick_rkey(struct fz *f, struct fuzz_in *in)
{
	switch (fuzz_u8(in) % 6) {
	case 0:
		return rc_mr_rkey(f->a);
	case 1:
		return rc_mr_rkey(f->b);
	case 2:
		return rc_mr_rkey(f->r);
	case 3:
		return rc_mr_lkey(f->a);
	case 4:
		return rc_mr_rkey(f->a) ^ (1u << (fuzz_u8(in) & 31));
	default:
		return fuzz_u32(in);
	}
}

static void post_recv(struct fz *f, struct fuzz_in *in)
{
	struct rc_qp *qp = f->qp[fuzz_u8(in) % NQ];
	uint16_t off = fuzz_u16(in), len = fuzz_u16(in);
	uint8_t sel = fuzz_u8(in);
	struct ibv_sge s[2];
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = s, .num_sge = 1 + (sel & 1) }, *bad;

	s[0].addr = (uintptr_t)f->mem + OFF_R + off % R_LEN;
	s[0].length = len % (R_LEN + 64);
	s[0].lkey = sel & 2 ? rc_mr_lkey(f->a) : sel & 4 ? fuzz_u32(in) : rc_mr_lkey(f->r);
	s[1].addr = (uintptr_t)f->mem + OFF_R + (off / 2) % R_LEN;
	s[1].length = (len / 3) % R_LEN;
	s[1].lkey = rc_mr_lkey(f->r);
	/* Bit 3: the XRC target's SRQ instead. */
	if (sel & 8)
		rc_srq_post_recv(f->xsrq, &wr, &bad);
	else
		rc_post_recv(qp, &wr, &bad);
}

/*
 * An XRC opcode taken as given goes to the XRC target, its XRCETH naming
 * (from the immediate's low bits, so no input byte more) the domain's SRQ,
 * the other domain's, or any number.
 */
static void xrc_address(struct fz *f, struct wire_build_desc *d, int8_t delta)
{
	d->dest_qp = rc_qp_num(f->xqp);
	d->psn = (f->xrc_next_psn + (uint32_t)(int32_t)delta) & 0xffffff;
	if (!delta)
		f->xrc_next_psn = (f->xrc_next_psn + 1) & 0xffffff;
	switch (d->imm & 3) {
	case 0:
	case 1:
		d->xrc_srqn = rc_srq_num(f->xsrq);
		break;
	case 2:
		d->xrc_srqn = rc_srq_num(f->other_srq);
		break;
	default:
		d->xrc_srqn = (d->imm >> 8) & WIRE_SRQN_MASK;
		break;
	}
}

static void send_packet(struct fz *f, struct fuzz_in *in)
{
	static const uint8_t base[NQ] = { WIRE_OPC_RC, WIRE_OPC_UC, WIRE_OPC_UD };
	uint8_t qsel = fuzz_u8(in) % NQ, op = fuzz_u8(in), flags = fuzz_u8(in);
	int8_t delta = (int8_t)fuzz_u8(in);
	struct wire_build_desc d = { 0 };
	uint8_t frame[4400], payload[4096];
	uint32_t len = fuzz_u16(in), n;

	d.opcode = flags & 0x80 ? op : (uint8_t)(base[qsel] | (op & 0x1f));
	if (!wire_opcode_valid(d.opcode))
		d.opcode = (uint8_t)(base[qsel] | WIRE_OP_SEND_ONLY);
	d.dest_qp = flags & 0x40 ? fuzz_u32(in) & 0xffffff : rc_qp_num(f->qp[qsel]);
	d.psn = (f->next_psn[qsel] + (uint32_t)(int32_t)delta) & 0xffffff;
	if (!delta)
		f->next_psn[qsel] = (f->next_psn[qsel] + 1) & 0xffffff;
	d.ackreq = flags & 1;
	d.sr_cap = len & 0x4000;
	d.se = flags & 2;
	d.tclass = flags & 4 ? WIRE_ECN_CE : 0;
	d.ip_version = 4;
	d.src_mac[0] = d.dst_mac[0] = 0x02;
	d.src_mac[5] = 1;
	d.dst_mac[5] = 2;
	fuzz_gid_of(0, d.src_gid);
	fuzz_gid_of(1, d.dst_gid);
	d.reth.va = pick_va(f, in);
	d.reth.rkey = pick_rkey(f, in);
	d.reth.len = flags & 8 ? fuzz_u32(in) : fuzz_u16(in);
	d.atomic.va = d.reth.va;
	d.atomic.rkey = d.reth.rkey;
	d.atomic.swap_add = fuzz_u64(in);
	d.atomic.compare = fuzz_u64(in);
	d.imm = fuzz_u32(in);
	d.ieth_rkey = flags & 16 ? rc_mr_rkey(f->a) : pick_rkey(f, in);
	d.deth.qkey = flags & 32 ? fuzz_u32(in) : QKEY;
	d.deth.src_qp = PEER_QPN;
	if ((flags & 0x80) && !(flags & 0x40) && (d.opcode & WIRE_OPC_TRANSPORT_MASK) == WIRE_OPC_XRC)
		xrc_address(f, &d, delta);
	/* Payload: a PMTU for FIRST/MIDDLE, else what the input says. */
	if (wire_opcode[d.opcode].flags & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE) && !(len & 0x8000))
		len = 1024;
	len %= sizeof(payload) + 1;
	if (!(wire_opcode[d.opcode].flags & WIRE_OPF_PAYLOAD))
		len = 0;
	memset(payload, fuzz_u8(in), len);
	n = wire_build(frame, sizeof(frame), &d, payload, len);
	if (n && port_sim_inject(f->link, 1, frame, n) == 0)
		rc_engine_progress(f->eng, 0);
}

static void raw_frame(struct fz *f, struct fuzz_in *in)
{
	uint8_t frame[512];
	uint32_t n = fuzz_u16(in) % sizeof(frame);

	for (uint32_t i = 0; i < n; i++)
		frame[i] = fuzz_u8(in);
	if (port_sim_inject(f->link, 1, frame, n) == 0)
		rc_engine_progress(f->eng, 0);
}

/* One input; aborts when the engine wrote where it may not.  Also run by the unit suite. */
int fuzz_responder_one(const uint8_t *data, size_t size);

int fuzz_responder_one(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	struct ibv_wc wc[64];
	struct fz f;

	setup(&f);
	while (in.n) {
		uint8_t kind = fuzz_u8(&in);

		switch (kind % 8) {
		case 5:
			post_recv(&f, &in);
			break;
		case 6:
			f.now += (uint64_t)fuzz_u16(&in) * 1000;
			rc_engine_progress(f.eng, 0);
			break;
		case 7:
			raw_frame(&f, &in);
			break;
		default:
			send_packet(&f, &in);
			break;
		}
		while (rc_cq_poll(f.cq, 64, wc) > 0)
			;
		check_memory(&f);
	}
	for (int i = 0; i < 4; i++) {
		f.now += 100000000;
		rc_engine_progress(f.eng, 0);
	}
	check_memory(&f);
	teardown(&f);
	return 0;
}

#ifdef UROCE_FUZZ_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_responder_one(data, size);
}
#endif
