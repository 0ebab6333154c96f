// SPDX-License-Identifier: MIT
/* Runs one conformance fixture through the transport engine on a virtual clock and judges it. */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"
#include "replay_port.h"
#include "uroce/port_pcap.h"

#define RUN_PROGRESS_LIMIT	100000u	/* progress calls before "the engine never idles" */
#define RUN_STUCK_LIMIT		8u	/* passes with a due timer that does nothing */
#define RUN_MAX_EVENTS		64u

struct run_wc {
	unsigned	qp;
	bool		recv;
	struct ibv_wc	wc;
};

struct run {
	const struct fixture	*fx;
	const struct rp_options	*o;
	FILE			*out;
	char			tmpdir[256];
	char			in_path[4096], sent_path[4096];

	struct rc_engine	*eng;
	struct rc_pd		*pd;
	struct rc_mr		**mr;		/* NULL once deregistered */
	uint32_t		*rkey;		/* the key uroce issued, per MR */
	uint8_t			**buf;
	struct rc_cq		**scq, **rcq;
	struct rc_qp		**qp;
	struct rc_srq		**xsrq;		/* per XRC_RECV QP: the SRQ its receives go to */
	struct rc_xrcd		*xrcd;		/* the run's XRC domain, made for the first XRC_RECV */
	struct rc_ah		**ah;		/* per peer, made on first use */
	uint32_t		next_qpn;

	struct rp_port		port;
	struct rp_lower		lower;
	uint64_t		now;
	struct rp_frames	input;		/* as the fixture has it */
	struct rp_frames	bound;		/* rkeys bound: what the port reads */

	struct run_wc		*wcs;
	unsigned		n_wcs, cap_wcs;
	int			cq_overflow;	/* QP index + 1 of a CQ that overflowed */
	struct fx_event		events[RUN_MAX_EVENTS];
	unsigned		n_events;
	unsigned		failures;
};

__attribute__((format(printf, 2, 3)))
static void problem(struct run *r, const char *fmt, ...)
{
	va_list ap;

	if (r->failures++ == 0)
		fprintf(r->out, "FAIL %s\n", r->fx->name);
	fprintf(r->out, "  ");
	va_start(ap, fmt);
	vfprintf(r->out, fmt, ap);
	va_end(ap);
	fprintf(r->out, "\n");
}

/* ---- Engine callbacks ---- */

static uint64_t run_clock(void *arg)
{
	return ((struct run *)arg)->now;
}

static int run_qpn_alloc(void *arg, uint32_t *qpn)
{
	*qpn = ((struct run *)arg)->next_qpn;
	return 0;
}

static void run_qpn_free(void *arg, uint32_t qpn)
{
	(void)arg;
	(void)qpn;
}

static void run_async_event(void *arg, enum ibv_event_type type, void *obj_user)
{
	struct run *r = arg;

	/* QP events carry the QP's index + 1; port and CQ events are not compared. */
	if (!obj_user || type == IBV_EVENT_CQ_ERR || r->n_events == RUN_MAX_EVENTS)
		return;
	r->events[r->n_events].qp = (unsigned)((uintptr_t)obj_user - 1);
	r->events[r->n_events].type = type;
	r->n_events++;
}

/* ---- Keys: the fixture's rkeys in the input become uroce's (docs/conformance.md "Keys") ---- */

static bool map_key(const struct run *r, uint32_t *key)
{
	for (unsigned i = 0; i < r->fx->n_mrs; i++)
		if (r->fx->mrs[i].has_rkey && r->fx->mrs[i].rkey == *key) {
			*key = r->rkey[i];
			return true;
		}
	return false;
}

/* uroce's key back to the fixture's, for completions. */
static uint32_t unmap_key(const struct run *r, uint32_t key)
{
	for (unsigned i = 0; i < r->fx->n_mrs; i++)
		if (r->fx->mrs[i].has_rkey && r->rkey[i] == key)
			return r->fx->mrs[i].rkey;
	return key;
}

static void bind_keys(const struct run *r, uint8_t *frame, uint32_t len)
{
	static const enum wire_ext key_ext[] = { WIRE_EXT_RETH, WIRE_EXT_ATOMIC_ETH, WIRE_EXT_IETH };
	struct wire_pkt pkt;
	uint32_t end, carried, before, after;
	bool changed = false;

	if (wire_parse(frame, len, WIRE_PARSE_SKIP_ICRC, &pkt) != WIRE_DROP_NONE)
		return;
	end = pkt.payload_off + pkt.payload_len + pkt.pad;
	before = wire_icrc(frame, pkt.l3_off, end);
	for (size_t i = 0; i < sizeof(key_ext) / sizeof(key_ext[0]); i++) {
		const uint8_t *ext = wire_pkt_ext(&pkt, key_ext[i]);
		wire_be32 *field;
		uint32_t key;

		if (!ext)
			continue;
		/* The R_Key sits after the 8-byte VA in the RETH and AtomicETH, first in the IETH. */
		field = (wire_be32 *)(frame + (ext - frame) + (key_ext[i] == WIRE_EXT_IETH ? 0 : 8));
		key = wire_get32(*field);
		if (map_key(r, &key)) {
			wire_set32(field, key);
			changed = true;
		}
	}
	if (!changed)
		return;
	/* Keep the ICRC exactly as right or as wrong as it was. */
	carried = wire_icrc_load(frame + end);
	after = wire_icrc(frame, pkt.l3_off, end);
	wire_icrc_store(frame + end, after ^ (before ^ carried));
}

/* ---- Set-up ---- */

static int setup_mrs(struct run *r)
{
	const struct fixture *fx = r->fx;

	for (unsigned i = 0; i < fx->n_mrs; i++) {
		const struct fx_mr *m = &fx->mrs[i];
		size_t cap = (m->len + 4095) & ~(size_t)4095;

		r->buf[i] = aligned_alloc(4096, cap);
		if (!r->buf[i])
			return -ENOMEM;
		memcpy(r->buf[i], m->init, m->len);
		r->mr[i] = rc_mr_reg(r->pd, r->buf[i], m->len, m->iova, m->access);
		if (!r->mr[i]) {
			problem(r, "rc_mr_reg(%s, len %" PRIu64 ", access %#x) failed: %s", m->name,
				m->len, m->access, strerror(errno));
			return -EINVAL;
		}
		r->rkey[i] = rc_mr_rkey(r->mr[i]);
	}
	return 0;
}

static int cq_size(const struct fixture *fx, unsigned qp, bool recv)
{
	int n = 256;

	for (unsigned i = 0; i < fx->n_cqes; i++)
		n += fx->cqes[i].qp == qp && fx->cqes[i].recv == recv;
	return n;
}

static void ah_attr_for(const struct run *r, const struct fx_qp *q, unsigned peer,
			struct ibv_ah_attr *ah)
{
	memset(ah, 0, sizeof(*ah));
	ah->is_global = 1;
	ah->port_num = 1;
	memcpy(ah->grh.dgid.raw, r->fx->peers[peer].gid, 16);
	ah->grh.sgid_index = 0;
	ah->grh.hop_limit = q->hop_limit;
	ah->grh.traffic_class = q->tclass;
}

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256:	return IBV_MTU_256;
	case 512:	return IBV_MTU_512;
	case 2048:	return IBV_MTU_2048;
	case 4096:	return IBV_MTU_4096;
	default:	return IBV_MTU_1024;
	}
}

/* XRC_RECV QP @i: the run's domain (made once) and an SRQ of it numbered q->srqn, completing into rcq[i]. */
static int setup_xrc_srq(struct run *r, unsigned i)
{
	const struct fx_qp *q = &r->fx->qps[i];
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = q->rq_depth, .max_sge = FX_MAX_SGE } };

	if (!r->xrcd)
		r->xrcd = rc_xrcd_alloc(r->eng);
	if (r->xrcd)
		r->xsrq[i] = rc_srq_create_xrc(r->pd, r->xrcd, r->rcq[i], &sa, NULL);
	if (!r->xsrq[i]) {
		problem(r, "qp %s: its XRC SRQ: %s", q->name, strerror(errno));
		return -EINVAL;
	}
	if (rc_srq_num(r->xsrq[i]) != q->srqn) {
		problem(r, "qp %s: the engine numbered its XRC SRQ %#x, not srqn=%#x", q->name,
			rc_srq_num(r->xsrq[i]), q->srqn);
		return -EINVAL;
	}
	return 0;
}

static int setup_qp(struct run *r, unsigned i)
{
	const struct fx_qp *q = &r->fx->qps[i];
	struct rc_qp_init init = {
		.qp_type = q->type,
		.pd = r->pd,
		.cap = {
			.max_send_wr = q->sq_depth,
			.max_recv_wr = q->rq_depth,
			.max_send_sge = FX_MAX_SGE,
			.max_recv_sge = FX_MAX_SGE,
			.max_inline_data = RC_MAX_INLINE,
		},
		.user = (void *)(uintptr_t)(i + 1),
	};
	struct ibv_qp_attr a;
	int ret;

	r->scq[i] = rc_cq_create(r->eng, cq_size(r->fx, i, false), NULL);
	r->rcq[i] = rc_cq_create(r->eng, cq_size(r->fx, i, true), NULL);
	if (!r->scq[i] || !r->rcq[i]) {
		problem(r, "qp %s: rc_cq_create failed: %s", q->name, strerror(errno));
		return -EINVAL;
	}
	if (q->type == IBV_QPT_XRC_RECV) {
		ret = setup_xrc_srq(r, i);
		if (ret)
			return ret;
		init.pd = NULL;
		init.xrcd = r->xrcd;
	} else {
		init.send_cq = r->scq[i];
		init.recv_cq = r->rcq[i];
	}
	r->next_qpn = q->qpn;
	r->qp[i] = rc_qp_create(r->eng, &init);
	if (!r->qp[i]) {
		problem(r, "qp %s: rc_qp_create failed: %s", q->name, strerror(errno));
		return -EINVAL;
	}
	if (rc_qp_num(r->qp[i]) != q->qpn) {
		problem(r, "qp %s: the engine gave QPN %#x, not the %#x its allocator returned",
			q->name, rc_qp_num(r->qp[i]), q->qpn);
		return -EINVAL;
	}

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	if (q->type == IBV_QPT_UD) {
		a.qkey = q->qkey;
		ret = rc_qp_modify(r->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_QKEY);
	} else {
		a.qp_access_flags = (unsigned)q->access;
		ret = rc_qp_modify(r->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				   IBV_QP_ACCESS_FLAGS);
	}
	if (ret)
		goto err_modify;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	if (q->type == IBV_QPT_UD) {
		ret = rc_qp_modify(r->qp[i], &a, IBV_QP_STATE);
	} else {
		int mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;

		ah_attr_for(r, q, q->peer, &a.ah_attr);
		a.path_mtu = mtu_enum(q->mtu);
		a.dest_qp_num = q->dest_qp;
		a.rq_psn = q->rq_psn;
		if (q->type == IBV_QPT_RC || q->type == IBV_QPT_XRC_RECV) {
			a.max_dest_rd_atomic = q->max_dest_rd_atomic;
			a.min_rnr_timer = q->min_rnr_timer;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
		ret = rc_qp_modify(r->qp[i], &a, mask);
	}
	if (ret)
		goto err_modify;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = q->sq_psn;
	if (q->type == IBV_QPT_RC) {
		a.timeout = q->timeout;
		a.retry_cnt = q->retry_cnt;
		a.rnr_retry = q->rnr_retry;
		a.max_rd_atomic = q->max_rd_atomic;
		ret = rc_qp_modify(r->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	} else if (q->type == IBV_QPT_XRC_RECV) {
		/* An XRC target only answers: the kernel's RTS attributes for it. */
		a.timeout = q->timeout;
		ret = rc_qp_modify(r->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT);
	} else {
		ret = rc_qp_modify(r->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
	}
	if (ret)
		goto err_modify;
	return 0;

err_modify:
	problem(r, "qp %s: rc_qp_modify to %s failed: %s", q->name, rc_qp_state_name(a.qp_state),
		strerror(-ret));
	return -EINVAL;
}

/* ---- Actions ---- */

static void fill_sges(const struct run *r, const struct fx_action *a, struct ibv_sge *sg)
{
	bool inline_data = a->kind == FX_POST_SEND && (a->send_flags & IBV_SEND_INLINE);

	for (unsigned i = 0; i < a->nsge; i++) {
		const struct fx_sge *s = &a->sge[i];

		/*
		 * Addresses under an lkey are in the MR's I/O virtual address
		 * space (ibv_reg_mr_iova); inline data is read from the process.
		 */
		sg[i].addr = inline_data ? (uintptr_t)(r->buf[s->mr] + s->off) :
			     r->fx->mrs[s->mr].iova + s->off;
		sg[i].length = s->len;
		/* A deregistered MR's lkey: the engine must refuse it, as verbs do. */
		sg[i].lkey = r->mr[s->mr] ? rc_mr_lkey(r->mr[s->mr]) : 0;
	}
}

static struct rc_ah *ah_for(struct run *r, unsigned qp, unsigned peer)
{
	struct ibv_ah_attr attr;

	if (!r->ah[peer]) {
		ah_attr_for(r, &r->fx->qps[qp], peer, &attr);
		r->ah[peer] = rc_ah_create(r->pd, &attr);
		if (!r->ah[peer])
			problem(r, "rc_ah_create for peer %s failed: %s", r->fx->peers[peer].name,
				strerror(errno));
	}
	return r->ah[peer];
}

static int do_action(struct run *r, const struct fx_action *a)
{
	struct ibv_sge sg[FX_MAX_SGE];
	int ret = 0;

	switch (a->kind) {
	case FX_POST_RECV: {
		struct ibv_recv_wr wr = { .wr_id = a->wr_id, .sg_list = sg, .num_sge = (int)a->nsge };
		struct ibv_recv_wr *bad;

		fill_sges(r, a, sg);
		ret = r->xsrq[a->qp] ? rc_srq_post_recv(r->xsrq[a->qp], &wr, &bad) :
				       rc_post_recv(r->qp[a->qp], &wr, &bad);
		break;
	}
	case FX_POST_SEND: {
		struct ibv_send_wr wr = {
			.wr_id = a->wr_id, .sg_list = sg, .num_sge = (int)a->nsge,
			.opcode = a->opcode, .send_flags = a->send_flags,
		};
		/* The fixture parser knows no opcode outside the table. */
		const struct rc_wr_opcode_info *op = &rc_wr_opcode_info[a->opcode];
		struct ibv_send_wr *bad;

		fill_sges(r, a, sg);
		if (op->flags & RC_WR_IMM)
			wr.imm_data = htonl(a->imm);
		else if (op->flags & RC_WR_INV)
			wr.invalidate_rkey = a->invalidate;
		if (op->kind & RC_WR_ATOMIC) {
			wr.wr.atomic.remote_addr = a->remote_addr;
			wr.wr.atomic.rkey = a->rkey;
			wr.wr.atomic.compare_add = a->opcode == IBV_WR_ATOMIC_CMP_AND_SWP ?
						   a->compare : a->swap_add;
			wr.wr.atomic.swap = a->swap_add;
		} else if (r->fx->qps[a->qp].type == IBV_QPT_UD) {
			struct rc_ah *ah = ah_for(r, a->qp, a->ah_peer);

			if (!ah)
				return -EINVAL;
			wr.wr.ud.ah = rc_ah_ibv(ah);
			wr.wr.ud.remote_qpn = a->remote_qpn;
			wr.wr.ud.remote_qkey = a->remote_qkey;
		} else {
			wr.wr.rdma.remote_addr = a->remote_addr;
			wr.wr.rdma.rkey = a->rkey;
		}
		ret = rc_post_send(r->qp[a->qp], &wr, &bad);
		break;
	}
	case FX_DEREG:
		if (r->mr[a->mr]) {
			ret = rc_mr_dereg(r->mr[a->mr]);
			r->mr[a->mr] = NULL;
		}
		break;
	case FX_POKE:
		memcpy(r->buf[a->mr] + a->poke_off, a->poke_data, a->poke_len);
		break;
	}
	if (ret) {
		problem(r, "%s:%d: the engine refused the action: %s", r->fx->path, a->line,
			strerror(ret < 0 ? -ret : ret));
		return -EINVAL;
	}
	return 0;
}

/* ---- The clock loop ---- */

static void poll_cqs(struct run *r)
{
	for (unsigned i = 0; i < r->fx->n_qps; i++)
		for (int side = 0; side < 2; side++) {
			struct rc_cq *cq = side ? r->rcq[i] : r->scq[i];
			struct ibv_wc wc[16];
			int n;

			while ((n = rc_cq_poll(cq, 16, wc)) > 0)
				for (int k = 0; k < n; k++) {
					if (r->n_wcs == r->cap_wcs) {
						unsigned cap = r->cap_wcs ? 2 * r->cap_wcs : 64;
						struct run_wc *p = realloc(r->wcs, cap * sizeof(*p));

						if (!p)
							return;
						r->wcs = p;
						r->cap_wcs = cap;
					}
					r->wcs[r->n_wcs++] = (struct run_wc){ i, side == 1, wc[k] };
				}
			if (n == -EOVERFLOW && !r->cq_overflow)
				r->cq_overflow = (int)i + 1;
		}
}

/* Progress until the engine has nothing more to do now.  Return: work done, or -1. */
static long progress_idle(struct run *r)
{
	long work = 0;

	for (unsigned i = 0; i < RUN_PROGRESS_LIMIT; i++) {
		unsigned w = rc_engine_progress(r->eng, 0);

		poll_cqs(r);
		if (!w)
			return work;
		work += w;
	}
	problem(r, "the engine never went idle at %" PRIu64 " ns (%u progress calls)", r->now,
		RUN_PROGRESS_LIMIT);
	return -1;
}

static int run_clock_loop(struct run *r)
{
	const struct fixture *fx = r->fx;
	uint64_t end = fx->has_end ? fx->end_ns :
		(r->input.n ? r->input.f[r->input.n - 1].t_ns : 0) + 1000000000u;
	unsigned next_action = 0, stuck = 0;
	const struct fx_action **timed;
	unsigned n_timed = 0;
	int ret = 0;

	/* Timed actions in time order, file order among equal times. */
	timed = calloc(fx->n_actions + 1, sizeof(*timed));
	if (!timed)
		return -ENOMEM;
	for (unsigned i = 0; i < fx->n_actions; i++)
		if (fx->actions[i].timed) {
			unsigned k = n_timed++;

			while (k > 0 && timed[k - 1]->t_ns > fx->actions[i].t_ns) {
				timed[k] = timed[k - 1];
				k--;
			}
			timed[k] = &fx->actions[i];
		}

	for (;;) {
		uint64_t t_rx = r->port.due < r->input.n ? r->input.f[r->port.due].t_ns : UINT64_MAX;
		uint64_t t_act = next_action < n_timed ? timed[next_action]->t_ns : UINT64_MAX;
		uint64_t t_timer = rc_engine_next_deadline(r->eng);
		uint64_t t = t_rx < t_act ? t_rx : t_act;
		long work;

		if (t_timer < t)
			t = t_timer;
		if (t == UINT64_MAX || t > end)
			break;
		if (t <= r->now) {
			/* A timer already due: progress must fire it. */
			if (++stuck > RUN_STUCK_LIMIT) {
				problem(r, "the engine reports a timer due at %" PRIu64 " ns that progress never fires",
					t_timer);
				ret = -EINVAL;
				break;
			}
			t = r->now;
		} else {
			stuck = 0;
		}
		r->now = t;
		while (next_action < n_timed && timed[next_action]->t_ns <= r->now) {
			ret = do_action(r, timed[next_action++]);
			if (ret)
				goto out;
		}
		rp_port_set_time(&r->port, r->now, &r->input);
		work = progress_idle(r);
		if (work < 0) {
			ret = -EINVAL;
			break;
		}
		if (work)
			stuck = 0;
	}
out:
	free(timed);
	return ret;
}

/* ---- Judging ---- */

static void judge_packets(struct run *r)
{
	struct rp_frames expected = { 0 }, written = { 0 };
	struct rp_mismatch mm;
	char err[2048];

	if (rp_frames_read(r->fx->out_pcap, &expected, err, sizeof(err))) {
		problem(r, "%s", err);
		return;
	}
	rp_frames_set_windows(&expected, &r->input);
	/* The port must have written exactly what the engine handed it. */
	if (rp_frames_read(r->sent_path, &written, err, sizeof(err))) {
		problem(r, "%s", err);
	} else if (written.n != r->port.sent.n) {
		problem(r, "the %s port wrote %u frames, the engine sent %u", rp_lower_name(&r->lower),
			written.n, r->port.sent.n);
	} else {
		for (unsigned i = 0; i < written.n; i++)
			if (written.f[i].len != r->port.sent.f[i].len ||
			    memcmp(written.f[i].data, r->port.sent.f[i].data, written.f[i].len)) {
				problem(r, "the %s port wrote frame %u differently from what the engine sent",
					rp_lower_name(&r->lower), i + 1);
				break;
			}
	}
	if (!rp_compare_frames(&expected, &r->port.sent, r->fx->timing, &mm)) {
		problem(r, "packets: %s", mm.what);
		if (mm.expected)
			rp_print_frame(r->out, "expected", mm.expected);
		if (mm.actual)
			rp_print_frame(r->out, "uroce sent", mm.actual);
	}
	rp_frames_free(&expected);
	rp_frames_free(&written);
}

static bool wc_matches(const struct run *r, const struct fx_cqe *e, const struct run_wc *a,
		       char *why, size_t cap)
{
	const struct ibv_wc *wc = &a->wc;
	const struct fx_qp *q = &r->fx->qps[e->qp];
	unsigned flags_mask = IBV_WC_WITH_IMM | IBV_WC_WITH_INV |
			      (q->type == IBV_QPT_UD ? IBV_WC_GRH : 0);

	if (wc->wr_id != e->wr_id)
		return snprintf(why, cap, "wr_id %" PRIu64, (uint64_t)wc->wr_id), false;
	if (wc->status != e->status)
		return snprintf(why, cap, "status %s", fx_wc_status_name(wc->status)), false;
	if (wc->qp_num != q->qpn)
		return snprintf(why, cap, "qp_num %#x", wc->qp_num), false;
	if (e->status != IBV_WC_SUCCESS)
		return true;
	if (wc->opcode != e->opcode)
		return snprintf(why, cap, "opcode %s", fx_wc_opcode_name(wc->opcode)), false;
	if (!e->recv)
		return true;
	if (wc->byte_len != e->byte_len)
		return snprintf(why, cap, "byte_len %u", wc->byte_len), false;
	if ((wc->wc_flags & flags_mask) != (e->flags & flags_mask))
		return snprintf(why, cap, "wc_flags %#x", wc->wc_flags & flags_mask), false;
	if ((e->flags & IBV_WC_WITH_IMM) && ntohl(wc->imm_data) != e->imm)
		return snprintf(why, cap, "imm %#x", ntohl(wc->imm_data)), false;
	if ((e->flags & IBV_WC_WITH_INV) && unmap_key(r, wc->invalidated_rkey) != e->invalidated_rkey)
		return snprintf(why, cap, "invalidated_rkey %#x", unmap_key(r, wc->invalidated_rkey)), false;
	if (q->type == IBV_QPT_UD && wc->src_qp != e->src_qp)
		return snprintf(why, cap, "src_qp %#x", wc->src_qp), false;
	return true;
}

static void judge_completions(struct run *r)
{
	const struct fixture *fx = r->fx;

	if (r->cq_overflow)
		problem(r, "a CQ of qp %s overflowed", fx->qps[r->cq_overflow - 1].name);
	for (unsigned q = 0; q < fx->n_qps; q++)
		for (int recv = 0; recv < 2; recv++) {
			unsigned ie = 0, ia = 0;
			const char *side = recv ? "recv" : "send";

			for (;;) {
				while (ie < fx->n_cqes && (fx->cqes[ie].qp != q || fx->cqes[ie].recv != recv))
					ie++;
				while (ia < r->n_wcs && (r->wcs[ia].qp != q || r->wcs[ia].recv != recv))
					ia++;
				if (ie == fx->n_cqes && ia == r->n_wcs)
					break;
				if (ie == fx->n_cqes) {
					problem(r, "completions: qp %s %s: unexpected wr_id %" PRIu64 " status %s",
						fx->qps[q].name, side, (uint64_t)r->wcs[ia].wc.wr_id,
						fx_wc_status_name(r->wcs[ia].wc.status));
					break;
				}
				if (ia == r->n_wcs) {
					problem(r, "completions: qp %s %s: missing wr_id %" PRIu64 " status %s (line %d)",
						fx->qps[q].name, side, fx->cqes[ie].wr_id,
						fx_wc_status_name(fx->cqes[ie].status), fx->cqes[ie].line);
					break;
				}
				{
					char why[128];

					if (!wc_matches(r, &fx->cqes[ie], &r->wcs[ia], why, sizeof(why))) {
						problem(r, "completions: qp %s %s: line %d expects wr_id %" PRIu64
							" status %s, uroce completed with %s",
							fx->qps[q].name, side, fx->cqes[ie].line, fx->cqes[ie].wr_id,
							fx_wc_status_name(fx->cqes[ie].status), why);
						break;
					}
				}
				ie++;
				ia++;
			}
		}
}

static void judge_memory(struct run *r)
{
	for (unsigned i = 0; i < r->fx->n_mrs; i++) {
		const struct fx_mr *m = &r->fx->mrs[i];
		uint64_t first = UINT64_MAX, count = 0;

		if (m->ignore)
			continue;
		for (uint64_t k = 0; k < m->len; k++)
			if (r->buf[i][k] != m->expect[k]) {
				if (first == UINT64_MAX)
					first = k;
				count++;
			}
		if (!count)
			continue;
		problem(r, "memory: mr %s: %" PRIu64 " bytes differ, the first at offset %#" PRIx64,
			m->name, count, first);
		fprintf(r->out, "    offset    expected                                         uroce\n");
		for (uint64_t row = first & ~(uint64_t)15, n = 0; row < m->len && n < 4; row += 16) {
			bool any = false;

			for (uint64_t k = row; k < row + 16 && k < m->len; k++)
				any |= r->buf[i][k] != m->expect[k];
			if (!any)
				continue;
			n++;
			fprintf(r->out, "    %#8" PRIx64 "  ", row);
			for (uint64_t k = row; k < row + 16; k++)
				fprintf(r->out, k < m->len ? "%02x " : "   ", k < m->len ? m->expect[k] : 0);
			fprintf(r->out, " ");
			for (uint64_t k = row; k < row + 16 && k < m->len; k++)
				fprintf(r->out, r->buf[i][k] != m->expect[k] ? "%02x*" : "%02x ", r->buf[i][k]);
			fprintf(r->out, "\n");
		}
	}
}

static bool counter_value(const struct rc_counters *c, const char *name, uint64_t *v)
{
	/* drops.NAME: a reason of the parser's vocabulary or of the engine's (the names differ). */
	if (!strncmp(name, "drops.", 6)) {
		for (unsigned i = 0; i < WIRE_DROP_COUNT; i++)
			if (!strcmp(name + 6, wire_drop_name((enum wire_drop)i))) {
				*v = c->drops.count[i];
				return true;
			}
		for (unsigned i = 0; i < RC_DROP_COUNT; i++)
			if (!strcmp(name + 6, rc_drop_info((enum rc_drop)i)->name)) {
				*v = c->rc_drops.count[i];
				return true;
			}
		return false;
	}
	for (unsigned i = 0; rc_counter_names[i]; i++)
		if (!strcmp(name, rc_counter_names[i])) {
			*v = ((const uint64_t *)c)[i];
			return true;
		}
	return false;
}

static void judge_state(struct run *r)
{
	const struct fixture *fx = r->fx;
	struct rc_counters c;

	rc_engine_counters(r->eng, &c);
	rp_lower_adjust_counters(&r->lower, &c);
	for (unsigned i = 0; i < fx->n_counters; i++) {
		uint64_t v;

		if (!counter_value(&c, fx->counters[i].name, &v))
			problem(r, "%s:%d: no counter named %s", fx->path, fx->counters[i].line,
				fx->counters[i].name);
		else if (v != fx->counters[i].value)
			problem(r, "counter %s: expected %" PRIu64 ", uroce counted %" PRIu64,
				fx->counters[i].name, fx->counters[i].value, v);
	}
	for (unsigned i = 0; i < fx->n_qps; i++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr init;

		if (rc_qp_query(r->qp[i], &a, IBV_QP_STATE, &init))
			problem(r, "rc_qp_query(%s) failed", fx->qps[i].name);
		else if (a.qp_state != fx->qps[i].expect_state)
			problem(r, "qp %s: state %s, expected %s", fx->qps[i].name,
				rc_qp_state_name(a.qp_state), rc_qp_state_name(fx->qps[i].expect_state));
	}
	if (fx->n_events) {
		bool same = r->n_events == fx->n_events;

		for (unsigned i = 0; same && i < fx->n_events; i++)
			same = r->events[i].qp == fx->events[i].qp && r->events[i].type == fx->events[i].type;
		if (!same) {
			problem(r, "events: expected %u, uroce raised %u:", fx->n_events, r->n_events);
			for (unsigned i = 0; i < fx->n_events || i < r->n_events; i++)
				fprintf(r->out, "    %-24s %s\n",
					i < fx->n_events ? fx_event_name(fx->events[i].type) : "-",
					i < r->n_events ? fx_event_name(r->events[i].type) : "-");
		}
	}
}

/* ---- One fixture ---- */

static int prepare_input(struct run *r, char *err, size_t errlen)
{
	int ret = rp_frames_read(r->fx->in_pcap, &r->input, err, errlen);

	if (ret)
		return ret;
	for (unsigned i = 0; i < r->input.n; i++) {
		if (i && r->input.f[i].t_ns < r->input.f[i - 1].t_ns) {
			snprintf(err, errlen, "%s: frame %u is earlier than frame %u", r->fx->in_pcap,
				 i + 1, i);
			return -EINVAL;
		}
		ret = rp_frames_add(&r->bound, r->input.f[i].t_ns, r->input.f[i].data, r->input.f[i].len);
		if (ret)
			return ret;
		bind_keys(r, r->bound.f[i].data, r->bound.f[i].len);
	}
	return rp_frames_write(r->in_path, &r->bound, err, errlen);
}

static void run_free(struct run *r)
{
	const struct fixture *fx = r->fx;

	if (r->eng)
		rc_engine_destroy(r->eng);
	rp_lower_close(&r->lower);
	for (unsigned i = 0; r->buf && i < fx->n_mrs; i++)
		free(r->buf[i]);
	free(r->buf);
	free(r->mr);
	free(r->rkey);
	free(r->scq);
	free(r->rcq);
	free(r->qp);
	free(r->xsrq);
	free(r->ah);
	free(r->wcs);
	rp_frames_free(&r->input);
	rp_frames_free(&r->bound);
	rp_port_free(&r->port);
	if (r->tmpdir[0]) {
		if (!r->o->keep_dir)
			unlink(r->sent_path);
		unlink(r->in_path);
		rmdir(r->tmpdir);
	}
}

static int run_fixture(struct run *r)
{
	const struct fixture *fx = r->fx;
	struct rc_engine_cfg cfg = {
		.port = &r->port.base,
		.now_ns = run_clock,
		.clock_arg = r,
		.qpn_alloc = run_qpn_alloc,
		.qpn_free = run_qpn_free,
		.qpn_arg = r,
		.async_event = run_async_event,
		.event_arg = r,
		.seed = 0x5eedf1c5u,
		/*
		 * A fixture is the spec's Go-Back-N against a recorded peer, whose answers
		 * come when they came: uroce's early retransmission and tail-loss probes
		 * (legal, but not in the recording) have tests of their own (rc_loss).
		 */
		.no_adaptive_rto = true,
		.no_tail_probe = true,
	};
	struct wire_gid_entry gid = { .valid = true, .type = WIRE_GID_ROCE_V2 };
	char err[2048];
	int ret;

	snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/uroce-replay-XXXXXX",
		 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(r->tmpdir)) {
		r->tmpdir[0] = 0;
		fprintf(r->out, "ERROR %s: cannot make a temporary directory: %s\n", fx->name, strerror(errno));
		return -errno;
	}
	snprintf(r->in_path, sizeof(r->in_path), "%s/in.pcap", r->tmpdir);
	if ((size_t)snprintf(r->sent_path, sizeof(r->sent_path), "%s/%s.sent.pcap",
			     r->o->keep_dir ? r->o->keep_dir : r->tmpdir, fx->name) >= sizeof(r->sent_path)) {
		fprintf(r->out, "ERROR %s: --keep directory name too long\n", fx->name);
		return -ENAMETOOLONG;
	}

	r->mr = calloc(fx->n_mrs + 1, sizeof(*r->mr));
	r->rkey = calloc(fx->n_mrs + 1, sizeof(*r->rkey));
	r->buf = calloc(fx->n_mrs + 1, sizeof(*r->buf));
	r->scq = calloc(fx->n_qps + 1, sizeof(*r->scq));
	r->rcq = calloc(fx->n_qps + 1, sizeof(*r->rcq));
	r->qp = calloc(fx->n_qps + 1, sizeof(*r->qp));
	r->xsrq = calloc(fx->n_qps + 1, sizeof(*r->xsrq));
	r->ah = calloc(fx->n_peers + 1, sizeof(*r->ah));
	if (!r->mr || !r->rkey || !r->buf || !r->scq || !r->rcq || !r->qp || !r->xsrq || !r->ah)
		return -ENOMEM;

	rp_port_init(&r->port, fx);
	r->eng = rc_engine_create(&cfg);
	if (!r->eng) {
		fprintf(r->out, "ERROR %s: rc_engine_create failed: %s\n", fx->name, strerror(errno));
		return -EINVAL;
	}
	memcpy(gid.gid, fx->local_gid, 16);
	ret = rc_engine_set_gid(r->eng, 0, &gid);
	if (ret) {
		fprintf(r->out, "ERROR %s: rc_engine_set_gid failed: %s\n", fx->name, strerror(-ret));
		return ret;
	}
	r->pd = rc_pd_alloc(r->eng);
	if (!r->pd)
		return -ENOMEM;

	/* MRs first: their keys are bound into the input the port will read. */
	ret = setup_mrs(r);
	if (!ret)
		ret = prepare_input(r, err, sizeof(err));
	if (!ret)
		ret = rp_lower_open(&r->lower, r->o->backend, fx, r->in_path, r->sent_path, err,
				    sizeof(err));
	if (ret) {
		if (!r->failures)
			fprintf(r->out, "ERROR %s: %s\n", fx->name, err);
		return ret;
	}
	rp_port_attach(&r->port, &r->lower);
	rp_port_set_time(&r->port, 0, &r->input);

	for (unsigned i = 0; i < fx->n_qps && !ret; i++)
		ret = setup_qp(r, i);
	for (unsigned i = 0; i < fx->n_actions && !ret; i++)
		if (!fx->actions[i].timed)
			ret = do_action(r, &fx->actions[i]);
	if (!ret && progress_idle(r) < 0)
		ret = -EINVAL;
	if (!ret)
		ret = run_clock_loop(r);
	if (ret)
		return 0;	/* reported as a failure */

	rp_lower_finish(&r->lower);
	judge_packets(r);
	judge_completions(r);
	judge_memory(r);
	judge_state(r);
	return 0;
}

int replay_fixture(const char *path, const struct rp_options *o)
{
	struct fixture fx;
	struct run r = { .o = o, .out = o->out };
	char err[2048];
	int ret;

	ret = fixture_load(path, &fx, err, sizeof(err));
	if (ret) {
		fprintf(o->out, "ERROR %s\n", err);
		return ret;
	}
	r.fx = &fx;
	ret = run_fixture(&r);
	if (!ret && !r.failures)
		fprintf(o->out, "PASS %s\n", fx.name);
	run_free(&r);
	fixture_free(&fx);
	if (ret < 0)
		return ret;
	return r.failures ? 0 : 1;
}
