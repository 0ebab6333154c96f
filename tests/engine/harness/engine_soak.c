// SPDX-License-Identifier: MIT
/*
 * Randomized soak: many RC QP pairs run all six operations (send/recv, write,
 * write with immediate, read, compare-and-swap, fetch-and-add) of random sizes
 * over a lossy simulated link.  Every byte of every buffer and every
 * completion is checked against a model: nothing lost, corrupted or completed
 * twice, no hang, and the same digest for the same seed.
 */
#include <endian.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_soak.h"
#include "port_sim.h"
#include "uroce/rc.h"

#define MAX_INLINE	64
#define MAX_SGE		3
#define GUARD_REMOTE	0xa5
#define GUARD_LOCAL	0x5a

enum op_kind { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_READ, OP_CAS, OP_FAA, OP_ATOMIC_WRITE, OP_KINDS };

static const char *const op_names[OP_KINDS] = {
	"write", "write_imm", "send", "read", "cas", "faa", "atomic_write",
};

struct op {
	uint8_t		kind;
	bool		signaled;
	uint32_t	len;
	uint32_t	read_off;
	uint64_t	expect_orig;
};

struct expect_recv {
	uint64_t	seq;
	uint8_t		kind;
	uint32_t	len;
};

struct spair {
	unsigned		idx;
	struct rc_engine	*req_eng, *resp_eng;
	struct rc_cq		*req_cq, *resp_cq;
	struct rc_qp		*req_qp, *resp_qp;
	struct rc_xrcd		*xrcd;		/* XRC: the target's domain and its SRQ */
	struct rc_srq		*xsrq;
	uint8_t			*lmem, *rmem;
	struct rc_mr		*lmr, *rmr;
	uint32_t		slot;		/* bytes per slot */
	unsigned		nrecv;
	uint64_t		posted, completed;
	struct op		*ops;		/* [depth], by seq % depth */
	struct expect_recv	*exp;		/* [depth], FIFO of sends and write-imms */
	uint64_t		exp_head, exp_tail;
	uint64_t		recv_posted, recv_done;
	uint64_t		counter;	/* model of the remote 8 bytes */
	uint64_t		rng;
	bool			broken;		/* retries ran out: the rest is flushed */
};

struct soak {
	const struct soak_cfg	*cfg;
	struct soak_result	*res;
	uint64_t		now;
	struct port_sim		*link;
	struct rc_engine	*eng[2];
	struct rc_pd		*pd[2];
	struct spair		*pairs;
	unsigned		npairs;
	uint64_t		rng;
};

/* ---- Helpers ---- */

static uint64_t mix(uint64_t z)
{
	z += 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rnd(uint64_t *s)
{
	*s += 0x9e3779b97f4a7c15ull;
	return mix(*s);
}

static uint32_t rnd_below(uint64_t *s, uint32_t n)
{
	return n ? (uint32_t)(rnd(s) % n) : 0;
}

__attribute__((format(printf, 2, 3)))
static void fail(struct soak *k, const char *fmt, ...)
{
	va_list ap;

	if (!k->res->ok)
		return;
	k->res->ok = false;
	va_start(ap, fmt);
	vsnprintf(k->res->error, sizeof(k->res->error), fmt, ap);
	va_end(ap);
}

static void digest(struct soak *k, uint64_t a, uint64_t b, uint64_t c)
{
	k->res->digest = mix(k->res->digest ^ mix(a ^ mix(b ^ mix(c))));
}

static uint8_t pattern_byte(uint64_t key, uint32_t i)
{
	return (uint8_t)(mix(key + i / 8) >> (8 * (i % 8)));
}

static void pattern_fill(uint8_t *p, uint64_t key, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = pattern_byte(key, i);
}

/* Index of the first byte that differs from the pattern, or -1. */
static int64_t pattern_check(const uint8_t *p, uint64_t key, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != pattern_byte(key, i))
			return i;
	return -1;
}

static bool all_bytes(const uint8_t *p, uint8_t v, uint32_t len)
{
	for (uint32_t i = 0; i < len; i++)
		if (p[i] != v)
			return false;
	return true;
}

static uint64_t op_key(const struct spair *p, uint64_t seq)
{
	return (uint64_t)p->idx << 40 ^ seq * 0x100000001b3ull;
}

static uint64_t clock_now(void *arg)
{
	return ((struct soak *)arg)->now;
}

/* Layout of a pair's responder memory: write slots, receive slots, read source, counter. */
static uint8_t *write_slot(struct spair *p, unsigned depth, uint64_t seq)
{
	return p->rmem + (seq % depth) * p->slot;
}

static uint8_t *recv_slot(struct spair *p, unsigned depth, uint64_t r)
{
	return p->rmem + (size_t)depth * p->slot + (r % p->nrecv) * p->slot;
}

static uint8_t *read_src(struct spair *p, unsigned depth)
{
	return p->rmem + (size_t)(depth + p->nrecv) * p->slot;
}

static uint64_t *counter(struct spair *p, unsigned depth, uint32_t max_msg)
{
	return (uint64_t *)(void *)(read_src(p, depth) + 2 * (size_t)max_msg);
}

static uint8_t *local_slot(struct spair *p, unsigned depth, uint64_t seq)
{
	return p->lmem + (seq % depth) * p->slot;
}

/* ---- Setup ---- */

static void make_gid(int side, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = 10;
	gid[15] = (uint8_t)(side + 1);
}

/* @type: IBV_QPT_RC, or XRC's halves with the attributes each takes (the kernel's rules). */
static int connect_qp(struct rc_qp *qp, enum ibv_qp_type type, int peer_side, uint32_t peer_qpn,
		      uint32_t rq_psn, uint32_t sq_psn, enum ibv_mtu mtu, uint8_t max_rd_atomic)
{
	int rtr_resp = type == IBV_QPT_XRC_SEND ? 0 :
		       IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
	int rts_req = type == IBV_QPT_XRC_RECV ? 0 :
		      IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int ret;

	ret = rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.hop_limit = 64;
	make_gid(peer_side, a.ah_attr.grh.dgid.raw);
	ret = rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			   IBV_QP_RQ_PSN | rtr_resp);
	if (ret)
		return ret;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn;
	a.timeout = 8;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = max_rd_atomic;
	return rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | rts_req);
}

static struct rc_qp *make_qp(struct rc_engine *eng, struct rc_pd *pd, struct rc_cq *cq,
			     unsigned depth, unsigned nrecv)
{
	struct rc_qp_init init = {
		.qp_type = IBV_QPT_RC,
		.pd = pd,
		.send_cq = cq,
		.recv_cq = cq,
		.cap = { depth, nrecv, MAX_SGE, 1, MAX_INLINE },
	};

	return rc_qp_create(eng, &init);
}

/* XRC: the initiator on the requester's side, the target with its domain's SRQ on the other. */
static int make_xrc_qps(struct soak *k, struct spair *p, int rs, int ps)
{
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = p->nrecv, .max_sge = 1 } };
	struct rc_qp_init ini = {
		.qp_type = IBV_QPT_XRC_SEND, .pd = k->pd[rs], .send_cq = p->req_cq,
		.cap = { .max_send_wr = k->cfg->depth, .max_send_sge = MAX_SGE,
			 .max_inline_data = MAX_INLINE },
	};
	struct rc_qp_init tgt = { .qp_type = IBV_QPT_XRC_RECV };

	p->xrcd = rc_xrcd_alloc(p->resp_eng);
	if (!p->xrcd)
		return -1;
	p->xsrq = rc_srq_create_xrc(k->pd[ps], p->xrcd, p->resp_cq, &sa, NULL);
	tgt.xrcd = p->xrcd;
	p->req_qp = rc_qp_create(p->req_eng, &ini);
	p->resp_qp = rc_qp_create(p->resp_eng, &tgt);
	return p->xsrq && p->req_qp && p->resp_qp ? 0 : -1;
}

static int post_recv(struct soak *k, struct spair *p)
{
	unsigned depth = k->cfg->depth;
	struct ibv_sge s = {
		(uintptr_t)recv_slot(p, depth, p->recv_posted), p->slot, rc_mr_lkey(p->rmr)
	};
	struct ibv_recv_wr wr = { .wr_id = p->recv_posted, .sg_list = &s, .num_sge = 1 }, *bad;
	int ret = p->xsrq ? rc_srq_post_recv(p->xsrq, &wr, &bad) : rc_post_recv(p->resp_qp, &wr, &bad);

	if (!ret)
		p->recv_posted++;
	return ret;
}

static int pair_setup(struct soak *k, struct spair *p, unsigned idx, bool loop)
{
	const struct soak_cfg *c = k->cfg;
	int rs = loop ? 0 : (int)(idx & 1), ps = loop ? 0 : !rs;
	enum ibv_mtu mtu = (enum ibv_mtu)(IBV_MTU_256 + rnd_below(&k->rng, 5));
	uint32_t psn_a = 0xffffff - rnd_below(&k->rng, 400), psn_b = rnd_below(&k->rng, 1u << 24);
	size_t rlen;
	int ret;

	p->idx = idx;
	p->rng = mix(c->seed ^ (idx + 1) * 0x51ed27);
	p->slot = (c->max_msg + 64 + 63) & ~63u;
	p->nrecv = 1 + rnd_below(&k->rng, 2 * c->depth);
	p->req_eng = k->eng[rs];
	p->resp_eng = k->eng[ps];
	p->ops = calloc(c->depth, sizeof(*p->ops));
	p->exp = calloc(c->depth, sizeof(*p->exp));
	p->lmem = aligned_alloc(64, (size_t)c->depth * p->slot);
	rlen = (size_t)(c->depth + p->nrecv) * p->slot + 2 * (size_t)c->max_msg + 64;
	p->rmem = aligned_alloc(64, (rlen + 63) & ~(size_t)63);
	if (!p->ops || !p->exp || !p->lmem || !p->rmem)
		return -1;
	memset(p->lmem, GUARD_LOCAL, (size_t)c->depth * p->slot);
	memset(p->rmem, GUARD_REMOTE, rlen);
	pattern_fill(read_src(p, c->depth), mix(idx + 7), 2 * c->max_msg);
	p->counter = mix(idx);
	*counter(p, c->depth, c->max_msg) = p->counter;

	p->lmr = rc_mr_reg(k->pd[rs], p->lmem, (size_t)c->depth * p->slot, (uintptr_t)p->lmem,
			   IBV_ACCESS_LOCAL_WRITE | (c->odp ? IBV_ACCESS_ON_DEMAND : 0));
	p->rmr = rc_mr_reg(k->pd[ps], p->rmem, rlen, (uintptr_t)p->rmem,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			   (c->odp ? IBV_ACCESS_ON_DEMAND : 0));
	p->req_cq = rc_cq_create(p->req_eng, (int)c->depth, NULL);
	p->resp_cq = rc_cq_create(p->resp_eng, (int)p->nrecv, NULL);
	if (!p->lmr || !p->rmr || !p->req_cq || !p->resp_cq)
		return -1;
	if (c->xrc) {
		if (make_xrc_qps(k, p, rs, ps))
			return -1;
	} else {
		p->req_qp = make_qp(p->req_eng, k->pd[rs], p->req_cq, c->depth, 1);
		p->resp_qp = make_qp(p->resp_eng, k->pd[ps], p->resp_cq, 1, p->nrecv);
		if (!p->req_qp || !p->resp_qp)
			return -1;
	}
	ret = connect_qp(p->req_qp, c->xrc ? IBV_QPT_XRC_SEND : IBV_QPT_RC, ps,
			 rc_qp_num(p->resp_qp), psn_b, psn_a, mtu,
			 (uint8_t)(1 + rnd_below(&k->rng, 16)));
	if (!ret)
		ret = connect_qp(p->resp_qp, c->xrc ? IBV_QPT_XRC_RECV : IBV_QPT_RC, rs,
				 rc_qp_num(p->req_qp), psn_a, psn_b, mtu, 1);
	if (ret)
		return ret;
	while (p->recv_posted < p->nrecv)
		if (post_recv(k, p))
			return -1;
	return 0;
}

static void pair_free(struct spair *p)
{
	free(p->ops);
	free(p->exp);
	free(p->lmem);
	free(p->rmem);
}

/* ---- Posting ---- */

static uint32_t pick_len(struct soak *k, struct spair *p)
{
	uint32_t max = k->cfg->max_msg;

	switch (rnd_below(&p->rng, 3)) {
	case 0:
		return rnd_below(&p->rng, 65 < max ? 65 : max + 1);
	case 1: {
		/* Around multiples of the PMTUs, where segmentation changes. */
		uint32_t m = 256u << rnd_below(&p->rng, 5);
		uint32_t v = m * rnd_below(&p->rng, 5) + rnd_below(&p->rng, 3) - 1;

		return v > max ? max : v;
	}
	default:
		return rnd_below(&p->rng, max + 1);
	}
}

static unsigned split_sges(struct spair *p, uint8_t *base, uint32_t len, struct ibv_sge *s)
{
	unsigned n = 1 + rnd_below(&p->rng, MAX_SGE);
	uint32_t off = 0;

	for (unsigned i = 0; i < n; i++) {
		uint32_t part = i + 1 == n ? len - off : rnd_below(&p->rng, len - off + 1);

		s[i].addr = (uintptr_t)base + off;
		s[i].length = part;
		s[i].lkey = rc_mr_lkey(p->lmr);
		off += part;
	}
	return n;
}

static int post_op(struct soak *k, struct spair *p)
{
	const struct soak_cfg *c = k->cfg;
	uint64_t seq = p->posted;
	struct op *o = &p->ops[seq % c->depth];
	uint8_t *ls = local_slot(p, c->depth, seq);
	struct ibv_sge sge[MAX_SGE];
	struct ibv_send_wr wr = { .wr_id = seq, .sg_list = sge }, *bad;
	uint32_t r = rnd_below(&p->rng, 100);
	unsigned outstanding = (unsigned)(p->posted - p->completed);
	int ret;

	memset(o, 0, sizeof(*o));
	o->kind = r < 25 ? OP_WRITE : r < 35 ? OP_WRITE_IMM : r < 55 ? OP_SEND :
		  r < 75 ? OP_READ : r < 87 ? OP_CAS : OP_FAA;
	/* Drawn only when asked, so the default runs keep their digests. */
	if (c->atomic_write && r >= 75 && rnd_below(&p->rng, 3) == 0)
		o->kind = OP_ATOMIC_WRITE;
	/* A send or write-imm needs a slot in the receive model. */
	if ((o->kind == OP_SEND || o->kind == OP_WRITE_IMM) &&
	    p->exp_tail - p->exp_head >= c->depth)
		o->kind = OP_WRITE;
	o->len = o->kind >= OP_CAS ? 8 : pick_len(k, p);
	o->signaled = rnd_below(&p->rng, 4) != 0 || seq + 1 == c->ops ||
		      outstanding + 1 >= c->depth;
	wr.send_flags = o->signaled ? IBV_SEND_SIGNALED : 0;
	if (rnd_below(&p->rng, 10) == 0)
		wr.send_flags |= IBV_SEND_FENCE;

	switch (o->kind) {
	case OP_WRITE:
	case OP_WRITE_IMM:
	case OP_SEND:
		pattern_fill(ls, op_key(p, seq), o->len);
		wr.num_sge = (int)split_sges(p, ls, o->len, sge);
		if (o->len <= MAX_INLINE && rnd_below(&p->rng, 2))
			wr.send_flags |= IBV_SEND_INLINE;
		if (o->kind == OP_SEND) {
			wr.opcode = IBV_WR_SEND;
		} else {
			wr.opcode = o->kind == OP_WRITE ? IBV_WR_RDMA_WRITE :
				    IBV_WR_RDMA_WRITE_WITH_IMM;
			wr.wr.rdma.remote_addr = (uintptr_t)write_slot(p, c->depth, seq);
			wr.wr.rdma.rkey = rc_mr_rkey(p->rmr);
		}
		wr.imm_data = htobe32((uint32_t)seq);
		if (o->kind != OP_WRITE)
			p->exp[p->exp_tail++ % c->depth] = (struct expect_recv){ seq, o->kind, o->len };
		break;
	case OP_READ:
		memset(ls, GUARD_LOCAL, o->len + 8);
		o->read_off = rnd_below(&p->rng, c->max_msg);
		wr.opcode = IBV_WR_RDMA_READ;
		wr.num_sge = (int)split_sges(p, ls, o->len, sge);
		wr.wr.rdma.remote_addr = (uintptr_t)read_src(p, c->depth) + o->read_off;
		wr.wr.rdma.rkey = rc_mr_rkey(p->rmr);
		break;
	default: {
		uint64_t add = rnd(&p->rng), cmp = rnd_below(&p->rng, 2) ? p->counter : rnd(&p->rng);
		uint64_t swap = rnd(&p->rng);

		memset(ls, GUARD_LOCAL, 16);
		sge[0] = (struct ibv_sge){ (uintptr_t)ls, 8, rc_mr_lkey(p->lmr) };
		wr.num_sge = 1;
		o->expect_orig = p->counter;
		if (o->kind == OP_ATOMIC_WRITE) {
			/* The 8 bytes from the SGE (inline: taken at post); the next CAS or FAA sees them. */
			memcpy(ls, &swap, 8);
			wr.opcode = IBV_WR_ATOMIC_WRITE;
			wr.wr.rdma.remote_addr = (uintptr_t)counter(p, c->depth, c->max_msg);
			wr.wr.rdma.rkey = rc_mr_rkey(p->rmr);
			if (rnd_below(&p->rng, 2))
				wr.send_flags |= IBV_SEND_INLINE;
			p->counter = swap;
			break;
		}
		wr.wr.atomic.remote_addr = (uintptr_t)counter(p, c->depth, c->max_msg);
		wr.wr.atomic.rkey = rc_mr_rkey(p->rmr);
		if (o->kind == OP_CAS) {
			wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
			wr.wr.atomic.compare_add = cmp;
			wr.wr.atomic.swap = swap;
			if (cmp == p->counter)
				p->counter = swap;
		} else {
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.compare_add = add;
			p->counter += add;
		}
		break;
	}
	}
	if (p->xsrq)
		wr.qp_type.xrc.remote_srqn = rc_srq_num(p->xsrq);
	ret = rc_post_send(p->req_qp, &wr, &bad);
	if (ret) {
		fail(k, "pair %u: post of seq %llu (%s) failed: %d", p->idx,
		     (unsigned long long)seq, op_names[o->kind], ret);
		return ret;
	}
	p->posted++;
	return 0;
}

/* ---- Checking ---- */

static void verify_op(struct soak *k, struct spair *p, uint64_t seq)
{
	const struct soak_cfg *c = k->cfg;
	struct op *o = &p->ops[seq % c->depth];
	uint8_t *ls = local_slot(p, c->depth, seq);
	int64_t bad;

	switch (o->kind) {
	case OP_WRITE:
	case OP_WRITE_IMM: {
		uint8_t *ws = write_slot(p, c->depth, seq);

		bad = pattern_check(ws, op_key(p, seq), o->len);
		if (bad >= 0 || !all_bytes(ws + o->len, GUARD_REMOTE, 8)) {
			fail(k, "pair %u seq %llu: %s of %u bytes wrong at the target (byte %lld)",
			     p->idx, (unsigned long long)seq, op_names[o->kind], o->len,
			     (long long)bad);
			return;
		}
		memset(ws, GUARD_REMOTE, o->len + 8);
		break;
	}
	case OP_READ:
		if (memcmp(ls, read_src(p, c->depth) + o->read_off, o->len) ||
		    !all_bytes(ls + o->len, GUARD_LOCAL, 8)) {
			fail(k, "pair %u seq %llu: read of %u bytes at %u landed wrong", p->idx,
			     (unsigned long long)seq, o->len, o->read_off);
			return;
		}
		break;
	case OP_CAS:
	case OP_FAA: {
		uint64_t got;

		memcpy(&got, ls, 8);
		if (got != o->expect_orig || !all_bytes(ls + 8, GUARD_LOCAL, 8)) {
			fail(k, "pair %u seq %llu: %s returned %#llx, model says %#llx", p->idx,
			     (unsigned long long)seq, op_names[o->kind], (unsigned long long)got,
			     (unsigned long long)o->expect_orig);
			return;
		}
		digest(k, p->idx, seq, got);
		break;
	}
	case OP_ATOMIC_WRITE:
		k->res->atomic_writes++;
		break;
	default:
		break;
	}
	k->res->ops_done++;
	k->res->bytes += o->len;
	digest(k, p->idx, seq, o->kind * 0x10000ull + o->len);
}

static const enum ibv_wc_opcode wc_of_kind[OP_KINDS] = {
	IBV_WC_RDMA_WRITE, IBV_WC_RDMA_WRITE, IBV_WC_SEND, IBV_WC_RDMA_READ,
	IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD, IBV_WC_ATOMIC_WRITE,
};

/*
 * After the retries of one WR ran out, every later WR completes flushed, in
 * order, signaled or not (ERR flushes the send queue).
 */
static void broken_completion(struct soak *k, struct spair *p, const struct ibv_wc *wc)
{
	if (wc->status != IBV_WC_WR_FLUSH_ERR || wc->wr_id != p->completed) {
		fail(k, "pair %u: after retry exhaustion, completion %llu status %d, expected "
		     "%llu flushed", p->idx, (unsigned long long)wc->wr_id, wc->status,
		     (unsigned long long)p->completed);
		return;
	}
	p->completed++;
	k->res->ops_flushed++;
}

static bool retry_exhausted(struct soak *k, struct spair *p, const struct ibv_wc *wc)
{
	uint64_t seq = wc->wr_id;

	/*
	 * retry_cnt allows at most 7 retries after a local ACK timeout.  At heavy
	 * loss a packet and its ACK can be lost that often in a row, and then
	 * IBV_WC_RETRY_EXC_ERR is the right answer: accepted there, checked.
	 */
	if (wc->status != IBV_WC_RETRY_EXC_ERR || soak_loss_rate(k->cfg) < 0.1 ||
	    seq < p->completed || seq >= p->posted)
		return false;
	for (uint64_t t = p->completed; t < seq; t++) {
		if (p->ops[t % k->cfg->depth].signaled)
			return false;
		verify_op(k, p, t);
	}
	p->completed = seq + 1;
	p->broken = true;
	k->res->pairs_retry_exhausted++;
	k->res->ops_flushed++;
	digest(k, p->idx, seq, 0xdead);
	return true;
}

static void req_completion(struct soak *k, struct spair *p, const struct ibv_wc *wc)
{
	const struct soak_cfg *c = k->cfg;
	uint64_t seq = wc->wr_id;
	struct op *o;

	if (p->broken) {
		broken_completion(k, p, wc);
		return;
	}
	if (retry_exhausted(k, p, wc))
		return;
	if (wc->status != IBV_WC_SUCCESS) {
		fail(k, "pair %u seq %llu: completion status %d", p->idx,
		     (unsigned long long)seq, wc->status);
		return;
	}
	if (seq < p->completed || seq >= p->posted) {
		fail(k, "pair %u: completion for seq %llu, expected %llu..%llu (twice or unknown)",
		     p->idx, (unsigned long long)seq, (unsigned long long)p->completed,
		     (unsigned long long)p->posted - 1);
		return;
	}
	for (uint64_t t = p->completed; t < seq; t++) {
		if (p->ops[t % c->depth].signaled) {
			fail(k, "pair %u: signaled seq %llu never completed before %llu", p->idx,
			     (unsigned long long)t, (unsigned long long)seq);
			return;
		}
		verify_op(k, p, t);
	}
	o = &p->ops[seq % c->depth];
	if (!o->signaled || wc->opcode != wc_of_kind[o->kind]) {
		fail(k, "pair %u seq %llu: unexpected completion (signaled %d, opcode %d)", p->idx,
		     (unsigned long long)seq, o->signaled, wc->opcode);
		return;
	}
	verify_op(k, p, seq);
	p->completed = seq + 1;
}

static void resp_completion(struct soak *k, struct spair *p, const struct ibv_wc *wc)
{
	const struct soak_cfg *c = k->cfg;
	struct expect_recv *x;
	uint8_t *buf;

	if (p->broken) {
		/* What reached the responder before the break may still complete. */
		p->exp_head = p->exp_tail;
		p->recv_done++;
		if (post_recv(k, p))
			fail(k, "pair %u: repost of a receive failed", p->idx);
		return;
	}
	if (wc->status != IBV_WC_SUCCESS || wc->wr_id != p->recv_done) {
		fail(k, "pair %u: receive completion %llu status %d, expected %llu", p->idx,
		     (unsigned long long)wc->wr_id, wc->status, (unsigned long long)p->recv_done);
		return;
	}
	if (p->exp_head == p->exp_tail) {
		fail(k, "pair %u: receive completion with no send outstanding", p->idx);
		return;
	}
	x = &p->exp[p->exp_head % c->depth];
	buf = recv_slot(p, c->depth, p->recv_done);
	if (x->kind == OP_SEND) {
		if (wc->opcode != IBV_WC_RECV || wc->byte_len != x->len ||
		    (wc->wc_flags & IBV_WC_WITH_IMM) ||
		    pattern_check(buf, op_key(p, x->seq), x->len) >= 0) {
			fail(k, "pair %u: send seq %llu received wrong (len %u of %u)", p->idx,
			     (unsigned long long)x->seq, wc->byte_len, x->len);
			return;
		}
	} else if (wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM || wc->byte_len != x->len ||
		   !(wc->wc_flags & IBV_WC_WITH_IMM) || be32toh(wc->imm_data) != (uint32_t)x->seq) {
		fail(k, "pair %u: write-imm seq %llu received wrong", p->idx,
		     (unsigned long long)x->seq);
		return;
	}
	digest(k, p->idx, x->seq, 0xabcdef ^ wc->byte_len);
	memset(buf, GUARD_REMOTE, p->slot);
	p->exp_head++;
	p->recv_done++;
	if (post_recv(k, p))
		fail(k, "pair %u: repost of a receive failed", p->idx);
}

static bool poll_pair(struct soak *k, struct spair *p)
{
	struct ibv_wc wc[16];
	bool any = false;
	int n;

	while ((n = rc_cq_poll(p->req_cq, 16, wc)) > 0) {
		any = true;
		for (int i = 0; i < n && k->res->ok; i++)
			req_completion(k, p, &wc[i]);
	}
	if (n < 0)
		fail(k, "pair %u: requester CQ overflowed", p->idx);
	while ((n = rc_cq_poll(p->resp_cq, 16, wc)) > 0) {
		any = true;
		for (int i = 0; i < n && k->res->ok; i++)
			resp_completion(k, p, &wc[i]);
	}
	if (n < 0)
		fail(k, "pair %u: responder CQ overflowed", p->idx);
	return any;
}

/* ---- Driver ---- */

static int setup(struct soak *k)
{
	const struct soak_cfg *c = k->cfg;
	struct port_sim_cfg sc = {
		.seed = c->seed, .mtu = 4200, .slots = 8192, .now_ns = clock_now, .clock_arg = k,
		.zero_copy = c->zero_copy,
	};
	struct port_sim_faults f = {
		.loss = c->loss, .burst = c->burst, .dup = c->dup, .reorder = c->reorder,
		.corrupt = c->corrupt, .ce_mark = c->ce_mark,
		.delay_ns = c->delay_ns, .jitter_ns = c->jitter_ns,
		.reorder_ns = c->delay_ns + 20000,
	};

	k->now = 1;
	k->rng = mix(c->seed);
	k->link = port_sim_create(&sc);
	if (!k->link)
		return -1;
	port_sim_set_faults(k->link, 0, &f);
	port_sim_set_faults(k->link, 1, &f);
	for (int s = 0; s < 2; s++) {
		struct rc_engine_cfg ec = {
			.port = port_sim_port(k->link, s), .now_ns = clock_now, .clock_arg = k,
			.seed = mix(c->seed + (uint64_t)s),
			.dcqcn.on = c->dcqcn,
			.selective_repeat = c->selective_repeat,
			.inflight = c->inflight,
		};
		struct wire_gid_entry g = { .valid = true, .type = WIRE_GID_ROCE_V2 };

		k->eng[s] = rc_engine_create(&ec);
		if (!k->eng[s])
			return -1;
		make_gid(s, g.gid);
		rc_engine_set_gid(k->eng[s], 0, &g);
		k->pd[s] = rc_pd_alloc(k->eng[s]);
		if (!k->pd[s])
			return -1;
	}
	k->npairs = c->pairs + c->loop_pairs;
	k->pairs = calloc(k->npairs, sizeof(*k->pairs));
	if (!k->pairs)
		return -1;
	for (unsigned i = 0; i < k->npairs; i++)
		if (pair_setup(k, &k->pairs[i], i, i >= c->pairs))
			return -1;
	return 0;
}

static void collect(struct soak *k)
{
	struct soak_result *r = k->res;
	struct port_sim_stats st;

	for (int s = 0; s < 2; s++) {
		struct rc_counters c;
		uint64_t drops = 0;

		rc_engine_counters(k->eng[s], &c);
		for (unsigned i = 0; i < WIRE_DROP_COUNT; i++)
			drops += c.drops.count[i];
		r->retransmits += c.retransmits;
		r->timeouts += c.timeouts;
		r->seq_naks += c.seq_naks_rx;
		r->rnr_naks += c.rnr_naks_rx;
		r->duplicates += c.duplicates;
		r->drops += drops;
		port_sim_get_stats(k->link, s, &st);
		r->lost += st.lost;
		r->corrupted += st.corrupted;
		r->duplicated += st.duplicated;
		r->reordered += st.reordered;
		r->ce_marked += st.ce_marked;
		r->frames += st.sent;
		r->cnps_tx += c.cnps_tx;
		r->cnps_rx += c.cnps_rx;
		r->rate_cuts += c.rate_cuts;
		r->rate_increases += c.rate_fast_recovery + c.rate_additive + c.rate_hyper;
		r->rate_paced += c.rate_paced;
		r->by_reference += st.by_reference;
		r->linearized += st.linearized;
		r->selective_naks += c.selective_naks_rx;
		r->selective_resends += c.selective_resends;
		r->selective_placed += c.selective_placed;
		r->early_retransmits += c.early_retransmits;
		r->tail_probes += c.tail_probes;
		r->stale_naks += c.stale_naks;
		r->inflight_waits += c.inflight_waits;
	}
}

static bool all_done(struct soak *k)
{
	for (unsigned i = 0; i < k->npairs; i++) {
		struct spair *p = &k->pairs[i];

		if (p->broken ? p->completed < p->posted :
		    p->completed < k->cfg->ops || p->exp_head != p->exp_tail)
			return false;
	}
	return true;
}

static void final_check(struct soak *k)
{
	const struct soak_cfg *c = k->cfg;

	for (unsigned i = 0; i < k->npairs && k->res->ok; i++) {
		struct spair *p = &k->pairs[i];
		struct ibv_wc wc;

		if (p->broken)
			continue;
		if (*counter(p, c->depth, c->max_msg) != p->counter)
			fail(k, "pair %u: remote atomic value %#llx, model %#llx", p->idx,
			     (unsigned long long)*counter(p, c->depth, c->max_msg),
			     (unsigned long long)p->counter);
		if (rc_cq_poll(p->req_cq, 1, &wc) || rc_cq_poll(p->resp_cq, 1, &wc))
			fail(k, "pair %u: a completion after the last one", p->idx);
	}
}

static void drive(struct soak *k)
{
	const struct soak_cfg *c = k->cfg;

	while (k->res->ok && !all_done(k)) {
		unsigned work = 0;
		bool polled = false;
		uint64_t t;

		for (unsigned i = 0; i < k->npairs && k->res->ok; i++) {
			struct spair *p = &k->pairs[i];

			while (!p->broken && p->posted < c->ops &&
			       p->posted - p->completed < c->depth && k->res->ok)
				post_op(k, p);
		}
		work += rc_engine_progress(k->eng[0], 0);
		work += rc_engine_progress(k->eng[1], 0);
		for (unsigned i = 0; i < k->npairs && k->res->ok; i++)
			polled |= poll_pair(k, &k->pairs[i]);
		if (work || polled)
			continue;
		t = port_sim_next_arrival(k->link);
		for (int s = 0; s < 2; s++)
			if (rc_engine_next_deadline(k->eng[s]) < t)
				t = rc_engine_next_deadline(k->eng[s]);
		if (t == UINT64_MAX) {
			fail(k, "hang: operations outstanding, nothing in flight, no timer armed");
			return;
		}
		if (t > c->max_virtual_ns) {
			fail(k, "hang: not done after %llu ns of virtual time",
			     (unsigned long long)c->max_virtual_ns);
			return;
		}
		k->now = t > k->now ? t : k->now + 1;
	}
	if (k->res->ok)
		final_check(k);
}

/*
 * DCQCN: with every operation done, the clock runs on until no timer is
 * armed: each QP's rate must climb back to the line rate on its own.
 */
static void settle(struct soak *k)
{
	uint64_t limit = k->now + k->cfg->max_virtual_ns;

	for (;;) {
		uint64_t t = UINT64_MAX;

		rc_engine_progress(k->eng[0], 0);
		rc_engine_progress(k->eng[1], 0);
		for (int s = 0; s < 2; s++)
			if (rc_engine_next_deadline(k->eng[s]) < t)
				t = rc_engine_next_deadline(k->eng[s]);
		if (t == UINT64_MAX)
			break;
		if (t > limit) {
			fail(k, "DCQCN: rates not back at the line rate after %llu ns idle",
			     (unsigned long long)k->cfg->max_virtual_ns);
			return;
		}
		k->now = t > k->now ? t : k->now + 1;
	}
	k->res->settle_ns = k->now - k->res->virtual_ns;
	for (int s = 0; s < 2; s++) {
		struct rc_counters c;

		rc_engine_counters(k->eng[s], &c);
		if (!k->res->rate_mbps_settled || c.rate_mbps < k->res->rate_mbps_settled)
			k->res->rate_mbps_settled = c.rate_mbps;
	}
}

/*
 * Every object the run made, destroyed through the API: the engines must
 * then hold none, so a leak fails the run without a sanitizer.
 */
static void teardown(struct soak *k)
{
	for (int s = 0; s < 2; s++) {
		struct rc_objects o;

		rc_engine_objects(k->eng[s], &o);
		if (o.inflight)
			fail(k, "engine %d: %u PSNs counted in flight with every operation ended", s,
			     o.inflight);
	}
	for (unsigned i = 0; i < k->npairs; i++) {
		struct spair *p = &k->pairs[i];

		if (rc_qp_destroy(p->req_qp) || rc_qp_destroy(p->resp_qp) ||
		    (p->xsrq && (rc_srq_destroy(p->xsrq) || rc_xrcd_free(p->xrcd))) ||
		    rc_cq_destroy(p->req_cq) || rc_cq_destroy(p->resp_cq) ||
		    rc_mr_dereg(p->lmr) || rc_mr_dereg(p->rmr))
			fail(k, "pair %u: an object would not be destroyed", p->idx);
	}
	for (int s = 0; s < 2; s++) {
		struct rc_objects o;

		rc_engine_objects(k->eng[s], &o);
		if (o.qp || o.srq || o.cq || o.ah || o.mw || o.mr || o.pd != 1 || o.xrcd || o.inflight)
			fail(k, "engine %d: left alive after teardown: %u QPs, %u SRQs, %u CQs, "
			     "%u AHs, %u MWs, %u MRs, %u PDs (the run's own included), %u XRCDs", s,
			     o.qp, o.srq, o.cq, o.ah, o.mw, o.mr, o.pd, o.xrcd);
		if (rc_pd_free(k->pd[s]))
			fail(k, "engine %d: the PD would not be freed", s);
		rc_engine_objects(k->eng[s], &o);
		if (o.pd)
			fail(k, "engine %d: a PD counted after it was freed", s);
	}
}

void soak_defaults(struct soak_cfg *cfg, uint64_t seed)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->seed = seed;
	cfg->pairs = 8;
	cfg->loop_pairs = 1;
	cfg->ops = 600;
	cfg->depth = 8;
	cfg->max_msg = 12000;
	cfg->loss = 0.05;
	cfg->dup = 0.02;
	cfg->reorder = 0.02;
	cfg->corrupt = 0.01;
	cfg->delay_ns = 2000;
	cfg->jitter_ns = 1000;
	cfg->max_virtual_ns = 60ull * 1000 * 1000 * 1000;
}

double soak_loss_rate(const struct soak_cfg *cfg)
{
	return cfg->loss * (cfg->burst > 1 ? cfg->burst : 1);
}

void soak_run(const struct soak_cfg *cfg, struct soak_result *res)
{
	struct soak k = { .cfg = cfg, .res = res };

	memset(res, 0, sizeof(*res));
	res->ok = true;
	if (setup(&k))
		fail(&k, "setup failed");
	else
		drive(&k);
	res->virtual_ns = k.now;
	if (k.eng[0] && k.eng[1])
		collect(&k);
	if (res->ok && cfg->dcqcn)
		settle(&k);
	if (res->ok)
		teardown(&k);
	for (int s = 0; s < 2; s++)
		rc_engine_destroy(k.eng[s]);
	for (unsigned i = 0; k.pairs && i < k.npairs; i++)
		pair_free(&k.pairs[i]);
	free(k.pairs);
	port_sim_destroy(k.link);
}
