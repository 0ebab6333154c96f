// SPDX-License-Identifier: MIT
/* Test harness for the transport engine: two engines on a simulated link under a virtual clock. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "engine_harness.h"

#define RC_FRAME_MAX_TEST 4400

static uint64_t clock_now(void *arg)
{
	return ((struct h_env *)arg)->now;
}

static void on_async(void *arg, enum ibv_event_type type, void *user)
{
	struct h_env *e = arg;

	if (e->n_events < H_MAX_EVENTS)
		e->events[e->n_events++] = (struct h_event){ type, user };
}

static void on_tap0(void *arg, const void *frame, uint32_t len)
{
	(void)frame;
	(void)len;
	((struct h_env *)arg)->tapped[0]++;
}

static void on_tap1(void *arg, const void *frame, uint32_t len)
{
	(void)frame;
	(void)len;
	((struct h_env *)arg)->tapped[1]++;
}

static void on_cq(void *arg, struct rc_cq *cq, void *user)
{
	(void)cq;
	(void)user;
	((struct h_env *)arg)->cq_events++;
}

void h_gid(int side, int index, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (index == 0 || index == 2) {
		gid[10] = gid[11] = 0xff;
		gid[12] = 10;
		gid[15] = (uint8_t)(side + 1);
	} else if (index == 3) {
		/* fe80:: with the modified EUI-64 of port_sim's MAC 02:00:00:00:00:0N. */
		gid[0] = 0xfe;
		gid[1] = 0x80;
		gid[11] = 0xff;
		gid[12] = 0xfe;
		gid[15] = (uint8_t)(side + 1);
	} else {
		gid[0] = 0xfd;
		gid[15] = (uint8_t)(side + 1);
	}
}

/* shared_gids: side 0's QPNs from 0x100, side 1's from 0x8000, as a host-wide allocator would. */
static int qpn_alloc0(void *arg, uint32_t *qpn)
{
	*qpn = ((struct h_env *)arg)->next_qpn[0]++;
	return 0;
}

static int qpn_alloc1(void *arg, uint32_t *qpn)
{
	*qpn = ((struct h_env *)arg)->next_qpn[1]++;
	return 0;
}

static void qpn_free(void *arg, uint32_t qpn)
{
	(void)arg;
	(void)qpn;
}

/* The other engine receives it from its port, as from another process's ring. */
static int forward(struct h_env *e, int from, uint32_t dest_qp, uint32_t len, const void *frame)
{
	uint32_t base = from ? 0x100 : 0x8000;

	if (dest_qp < base || dest_qp >= e->next_qpn[1 - from])
		return -ENOENT;
	e->forwarded[from]++;
	return port_sim_inject(e->link, 1 - from, frame, len) ? -ENOBUFS : 0;
}

static int forward0(void *arg, uint32_t dest_qp, const void *frame, uint32_t len)
{
	return forward(arg, 0, dest_qp, len, frame);
}

static int forward1(void *arg, uint32_t dest_qp, const void *frame, uint32_t len)
{
	return forward(arg, 1, dest_qp, len, frame);
}

/* The other engine's table for its QPNs: both "processes" are this one. */
static struct rc_direct_table *direct_peer(struct h_env *e, int from, uint32_t qpn, int32_t *pid)
{
	uint32_t base = from ? 0x100 : 0x8000;

	if (qpn < base || qpn >= e->next_qpn[1 - from])
		return NULL;
	*pid = (int32_t)getpid();
	return e->direct[1 - from];
}

static struct rc_direct_table *direct_peer0(void *arg, uint32_t qpn, int32_t *pid)
{
	return direct_peer(arg, 0, qpn, pid);
}

static struct rc_direct_table *direct_peer1(void *arg, uint32_t qpn, int32_t *pid)
{
	return direct_peer(arg, 1, qpn, pid);
}

void h_env_init(struct h_env *e, const struct h_opts *o)
{
	struct h_opts def = { 0 };
	struct port_sim_cfg sc;

	if (!o)
		o = &def;
	memset(e, 0, sizeof(*e));
	e->now = 1000;
	memset(&sc, 0, sizeof(sc));
	sc.seed = o->seed;
	sc.mtu = o->mtu;
	sc.slots = o->slots;
	sc.zero_copy = o->zero_copy;
	sc.now_ns = clock_now;
	sc.clock_arg = e;
	e->link = port_sim_create(&sc);
	ck_assert_ptr_nonnull(e->link);
	if (o->delay_ns) {
		struct port_sim_faults f = { .delay_ns = o->delay_ns };

		port_sim_set_faults(e->link, 0, &f);
		port_sim_set_faults(e->link, 1, &f);
	}
	for (int s = 0; s < 2; s++) {
		struct rc_engine_cfg cfg = {
			.port = port_sim_port(e->link, s),
			.now_ns = clock_now,
			.clock_arg = e,
			.cq_event = on_cq,
			.async_event = on_async,
			.event_arg = e,
			.seed = o->seed * 4 + (uint64_t)s + 1,
			.frame_tap = s ? on_tap1 : on_tap0,
			.frame_tap_arg = e,
			.rto_min_us = o->rto_min_us,
			.restart_window = o->restart_window,
			.inflight = o->inflight,
			.no_adaptive_rto = o->no_adaptive_rto,
			.no_tail_probe = o->no_tail_probe,
			.dcqcn = o->dcqcn,
			.selective_repeat = o->selective_repeat[s],
		};

		if (o->shared_gids) {
			e->next_qpn[s] = s ? 0x8000 : 0x100;
			cfg.qpn_alloc = s ? qpn_alloc1 : qpn_alloc0;
			cfg.qpn_free = qpn_free;
			cfg.qpn_arg = e;
			cfg.local_forward = s ? forward1 : forward0;
			cfg.local_forward_arg = e;
		}
		if (o->shared_gids && o->direct) {
			e->direct[s] = calloc(1, sizeof(*e->direct[s]));
			ck_assert_ptr_nonnull(e->direct[s]);
			cfg.direct_table = e->direct[s];
			cfg.direct_peer = s ? direct_peer1 : direct_peer0;
			cfg.direct_arg = e;
		}
		e->eng[s] = rc_engine_create(&cfg);
		ck_assert_ptr_nonnull(e->eng[s]);
		for (int i = 0; i < 4; i++) {
			struct wire_gid_entry g = {
				.valid = true, .type = i < 2 ? WIRE_GID_ROCE_V2 : WIRE_GID_ROCE_V1,
			};

			h_gid(o->shared_gids ? 0 : s, i, g.gid);
			ck_assert_int_eq(rc_engine_set_gid(e->eng[s], (unsigned)i, &g), 0);
		}
		e->pd[s] = rc_pd_alloc(e->eng[s]);
		ck_assert_ptr_nonnull(e->pd[s]);
		e->cq[s] = rc_cq_create(e->eng[s], o->cqe ? o->cqe : 4096, NULL);
		ck_assert_ptr_nonnull(e->cq[s]);
	}
}

void h_env_fini(struct h_env *e)
{
	for (int s = 0; s < 2; s++) {
		struct rc_objects o;

		/* First what the test made, so the message names the kinds it left. */
		rc_engine_objects(e->eng[s], &o);
		ck_assert_msg(!o.inflight, "side %d: %u PSNs still counted in flight with every QP gone",
			      s, o.inflight);
		ck_assert_msg(!o.qp && !o.qp_bytes && !o.srq && o.cq == 1 && !o.ah && !o.mw && !o.mr && o.pd == 1 &&
			      !o.xrcd && !o.flow,
			      "side %d: the test left alive %u QPs, %u SRQs, %u CQs, %u AHs, "
			      "%u MWs, %u MRs, %u PDs (besides the harness's CQ and PD), %u XRCDs, %u flows",
			      s, o.qp, o.srq, o.cq - 1, o.ah, o.mw, o.mr, o.pd - 1, o.xrcd, o.flow);
		ck_assert_int_eq(rc_cq_destroy(e->cq[s]), 0);
		ck_assert_int_eq(rc_pd_free(e->pd[s]), 0);
		rc_engine_objects(e->eng[s], &o);
		ck_assert_msg(!o.cq && !o.pd, "side %d: a CQ or PD counted after it was destroyed", s);
		rc_engine_destroy(e->eng[s]);
		free(e->direct[s]);
	}
	port_sim_destroy(e->link);
}

struct rc_qp *h_qp(struct h_env *e, int side, const struct h_qp_opts *o)
{
	struct rc_qp_init init = {
		.qp_type = o->type ? o->type : IBV_QPT_RC,
		.pd = e->pd[side],
		.send_cq = o->send_cq ? o->send_cq : e->cq[side],
		.recv_cq = o->recv_cq ? o->recv_cq : e->cq[side],
		.srq = o->srq,
		.cap = {
			.max_send_wr = o->max_send_wr ? o->max_send_wr : 64,
			.max_recv_wr = o->max_recv_wr ? o->max_recv_wr : 64,
			.max_send_sge = o->max_sge ? o->max_sge : 4,
			.max_recv_sge = o->max_sge ? o->max_sge : 4,
			.max_inline_data = o->max_inline,
		},
		.sq_sig_all = o->sq_sig_all,
	};
	struct rc_qp *qp = rc_qp_create(e->eng[side], &init);

	ck_assert_ptr_nonnull(qp);
	return qp;
}

static void to_init(struct rc_qp *qp, enum ibv_qp_type t, const struct h_conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	int mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;

	if (t == IBV_QPT_UD) {
		a.qkey = c->qkey;
		mask |= IBV_QP_QKEY;
	} else {
		a.qp_access_flags = c->access ? c->access : IBV_ACCESS_REMOTE_WRITE |
				    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		mask |= IBV_QP_ACCESS_FLAGS;
	}
	ck_assert_int_eq(rc_qp_modify(qp, &a, mask), 0);
}

static void to_rtr(struct rc_qp *qp, enum ibv_qp_type t, int peer_side, uint32_t peer_qpn,
		   uint32_t rq_psn, const struct h_conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	int mask = IBV_QP_STATE;

	if (t != IBV_QPT_UD) {
		a.path_mtu = c->mtu ? c->mtu : IBV_MTU_1024;
		a.dest_qp_num = peer_qpn;
		a.rq_psn = rq_psn;
		a.ah_attr.is_global = 1;
		a.ah_attr.port_num = 1;
		a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
		a.ah_attr.grh.hop_limit = 64;
		h_gid(peer_side, c->gid_index, a.ah_attr.grh.dgid.raw);
		mask |= IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		/* The XRC initiator has no responder: RC's resources are not its to set. */
		if (t == IBV_QPT_RC || t == IBV_QPT_XRC_RECV) {
			a.max_dest_rd_atomic = c->max_dest_rd_atomic ? c->max_dest_rd_atomic : 16;
			a.min_rnr_timer = c->min_rnr_timer ? c->min_rnr_timer : 1;
			mask |= IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		}
	}
	ck_assert_int_eq(rc_qp_modify(qp, &a, mask), 0);
}

static void to_rts(struct rc_qp *qp, enum ibv_qp_type t, uint32_t sq_psn, const struct h_conn *c)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .sq_psn = sq_psn };
	int mask = IBV_QP_STATE | IBV_QP_SQ_PSN;

	/* The XRC target sends only answers: a timeout, nothing to retry. */
	if (t == IBV_QPT_XRC_RECV) {
		a.timeout = 10;
		mask |= IBV_QP_TIMEOUT;
	}
	if (t == IBV_QPT_RC || t == IBV_QPT_XRC_SEND) {
		a.timeout = c->no_timeout ? 0 : c->timeout ? c->timeout : 10;
		a.retry_cnt = c->retry_set ? c->retry_cnt : 7;
		a.rnr_retry = c->retry_set ? c->rnr_retry : 7;
		a.max_rd_atomic = c->max_rd_atomic ? c->max_rd_atomic : 16;
		mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			IBV_QP_MAX_QP_RD_ATOMIC;
	}
	ck_assert_int_eq(rc_qp_modify(qp, &a, mask), 0);
}

static enum ibv_qp_type qp_type_of(struct rc_qp *qp)
{
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;

	rc_qp_query(qp, &qa, 0, &qi);
	return qi.qp_type;
}

void h_connect_one(struct rc_qp *qp, int peer_side, uint32_t peer_qpn, uint32_t rq_psn,
		   uint32_t sq_psn, const struct h_conn *c)
{
	struct h_conn def = { 0 };
	enum ibv_qp_type t = qp_type_of(qp);

	if (!c)
		c = &def;
	to_init(qp, t, c);
	to_rtr(qp, t, peer_side, peer_qpn, rq_psn, c);
	to_rts(qp, t, sq_psn, c);
}

void h_connect(struct h_env *e, struct rc_qp *a, int sa, struct rc_qp *b, int sb,
	       const struct h_conn *c)
{
	struct h_conn def = { 0 };
	enum ibv_qp_type t = qp_type_of(a);

	(void)e;
	if (!c)
		c = &def;
	to_init(a, t, c);
	to_init(b, t, c);
	to_rtr(a, t, sb, rc_qp_num(b), c->psn[1], c);
	to_rtr(b, t, sa, rc_qp_num(a), c->psn[0], c);
	to_rts(a, t, c->psn[0], c);
	to_rts(b, t, c->psn[1], c);
}

bool h_run_until(struct h_env *e, bool (*cond)(void *), void *arg, uint64_t max_ns)
{
	uint64_t deadline = e->now + max_ns;

	for (;;) {
		unsigned w = rc_engine_progress(e->eng[0], 0) + rc_engine_progress(e->eng[1], 0);
		uint64_t t;

		if (cond && cond(arg))
			return true;
		if (w)
			continue;
		t = port_sim_next_arrival(e->link);
		if (rc_engine_next_deadline(e->eng[0]) < t)
			t = rc_engine_next_deadline(e->eng[0]);
		if (rc_engine_next_deadline(e->eng[1]) < t)
			t = rc_engine_next_deadline(e->eng[1]);
		if (t == UINT64_MAX)
			return !cond;
		if (t > deadline)
			return false;
		e->now = t > e->now ? t : e->now + 1;
	}
}

void h_run(struct h_env *e, uint64_t max_ns)
{
	h_run_until(e, NULL, NULL, max_ns);
}

struct wait_arg {
	struct rc_cq	*cq;
	struct ibv_wc	*wc;
	int		want, got;
};

static bool cq_has(void *p)
{
	struct wait_arg *w = p;
	int n = rc_cq_poll(w->cq, w->want - w->got, w->wc + w->got);

	if (n > 0)
		w->got += n;
	return w->got >= w->want || n < 0;
}

int h_wait_cq(struct h_env *e, struct rc_cq *cq, struct ibv_wc *wc, int n, uint64_t max_ns)
{
	struct wait_arg w = { cq, wc, n, 0 };

	if (!cq_has(&w))
		h_run_until(e, cq_has, &w, max_ns);
	return w.got;
}

int h_post_send(struct rc_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		int nsge, uint64_t raddr, uint32_t rkey, int flags)
{
	struct ibv_send_wr wr = {
		.wr_id = wr_id,
		.sg_list = sge,
		.num_sge = nsge,
		.opcode = op,
		.send_flags = (unsigned)flags,
	}, *bad = NULL;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return rc_post_send(qp, &wr, &bad);
}

int h_post_recv(struct rc_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int nsge)
{
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = sge, .num_sge = nsge }, *bad = NULL;

	return rc_post_recv(qp, &wr, &bad);
}

unsigned h_count_events(const struct h_env *e, enum ibv_event_type type)
{
	unsigned n = 0;

	for (unsigned i = 0; i < e->n_events; i++)
		n += e->events[i].type == type;
	return n;
}

/* ---- Capture ---- */

static bool cap_filter(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	struct h_cap *c = arg;
	struct h_frame *f;
	struct wire_pkt pkt;
	bool drop = c->drop_all[from];

	if (wire_parse(frame, len, 0, &pkt))
		return false;
	if (c->drop_from == from && (c->drop_opcode == 0xffff || c->drop_opcode == pkt.opcode)) {
		c->matched++;
		if (c->drop_nth && c->matched >= c->drop_nth &&
		    c->matched < c->drop_nth + (c->drop_count ? c->drop_count : 1))
			drop = true;
	}
	if (c->n >= H_CAP_MAX)
		return drop;
	f = &c->f[c->n++];
	memset(f, 0, sizeof(*f));
	f->from = from;
	f->t = c->e->now;
	memcpy(f->dst_mac, frame, 6);
	f->opcode = pkt.opcode;
	f->psn = pkt.psn;
	f->dest_qp = pkt.dest_qp;
	f->ackreq = pkt.ackreq;
	f->se = pkt.se;
	f->sr_cap = pkt.sr_cap;
	f->sr_nak = pkt.sr_nak;
	f->payload_len = pkt.payload_len;
	memcpy(f->payload_head, wire_pkt_payload(&pkt),
	       pkt.payload_len < sizeof(f->payload_head) ? pkt.payload_len : sizeof(f->payload_head));
	f->tclass = pkt.tclass;
	f->roce_v1 = pkt.roce_v1;
	f->dropped = drop;
	if (pkt.op->hdrs & WIRE_HDR_AETH) {
		const struct wire_aeth *a = wire_pkt_ext(&pkt, WIRE_EXT_AETH);

		f->syndrome = (uint8_t)(wire_get32(a->syn_msn) >> 24);
		f->msn = wire_get32(a->syn_msn) & 0xffffff;
	}
	if (pkt.op->hdrs & WIRE_HDR_RETH) {
		const struct wire_reth *r = wire_pkt_ext(&pkt, WIRE_EXT_RETH);

		f->va = wire_get64(r->va);
		f->rkey = wire_get32(r->rkey);
		f->dma_len = wire_get32(r->dma_len);
	}
	if (pkt.op->hdrs & WIRE_HDR_XRCETH) {
		const struct wire_xrceth *x = wire_pkt_ext(&pkt, WIRE_EXT_XRCETH);

		f->xrc_srqn = wire_get32(x->srqn) & WIRE_SRQN_MASK;
	}
	if (pkt.op->hdrs & WIRE_HDR_ATOMIC_ETH) {
		const struct wire_atomic_eth *a = wire_pkt_ext(&pkt, WIRE_EXT_ATOMIC_ETH);

		f->va = wire_get64(a->va);
		f->rkey = wire_get32(a->rkey);
	}
	if (pkt.op->hdrs & WIRE_HDR_ATOMIC_ACK_ETH) {
		const struct wire_atomic_ack_eth *a = wire_pkt_ext(&pkt, WIRE_EXT_ATOMIC_ACK_ETH);

		f->orig = wire_get64(a->orig);
	}
	return drop;
}

void h_capture(struct h_env *e, struct h_cap *c)
{
	memset(c, 0, sizeof(*c));
	c->e = e;
	c->drop_from = -1;
	port_sim_set_filter(e->link, cap_filter, c);
}

void h_drop(struct h_cap *c, int from, unsigned opcode, unsigned nth, unsigned count)
{
	c->drop_from = from;
	c->drop_opcode = opcode;
	c->drop_nth = nth;
	c->drop_count = count;
	c->matched = 0;
}

unsigned h_cap_count(const struct h_cap *c, int from, unsigned opcode)
{
	unsigned n = 0;

	for (unsigned i = 0; i < c->n; i++)
		n += c->f[i].from == from && (opcode == 0xffff || c->f[i].opcode == opcode);
	return n;
}

const struct h_frame *h_cap_find(const struct h_cap *c, int from, unsigned opcode, unsigned nth)
{
	for (unsigned i = 0; i < c->n; i++)
		if (c->f[i].from == from && (opcode == 0xffff || c->f[i].opcode == opcode) &&
		    !nth--)
			return &c->f[i];
	return NULL;
}

void h_inject(struct h_env *e, int to_side, struct wire_build_desc *d, const void *payload,
	      uint32_t len)
{
	uint8_t frame[RC_FRAME_MAX_TEST];
	uint32_t n;

	d->src_mac[0] = 0x02;
	d->src_mac[5] = (uint8_t)(!to_side + 1);
	d->dst_mac[0] = 0x02;
	d->dst_mac[5] = (uint8_t)(to_side + 1);
	if (!d->ip_version) {
		d->ip_version = 4;
		h_gid(!to_side, 0, d->src_gid);
		h_gid(to_side, 0, d->dst_gid);
	}
	n = wire_build(frame, sizeof(frame), d, payload, len);
	ck_assert_uint_gt(n, 0);
	ck_assert_int_eq(port_sim_inject(e->link, to_side, frame, n), 0);
}

/* ---- Pairs ---- */

void h_pair_init(struct h_pair *p, const struct h_opts *eo, const struct h_conn *c,
		 const struct h_qp_opts *qo)
{
	struct h_qp_opts def = { .type = IBV_QPT_RC, .max_inline = 64 };

	h_env_init(&p->e, eo);
	for (int s = 0; s < 2; s++) {
		p->buf[s] = aligned_alloc(64, H_BUF_LEN);
		ck_assert_ptr_nonnull(p->buf[s]);
		memset(p->buf[s], 0, H_BUF_LEN);
		p->mr[s] = rc_mr_reg(p->e.pd[s], p->buf[s], H_BUF_LEN, (uintptr_t)p->buf[s],
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
		ck_assert_ptr_nonnull(p->mr[s]);
		p->qp[s] = h_qp(&p->e, s, qo ? qo : &def);
	}
	h_connect(&p->e, p->qp[0], 0, p->qp[1], 1, c);
}

void h_pair_fini(struct h_pair *p)
{
	for (int s = 0; s < 2; s++) {
		if (p->qp[s])
			ck_assert_int_eq(rc_qp_destroy(p->qp[s]), 0);
		ck_assert_int_eq(rc_mr_dereg(p->mr[s]), 0);
	}
	h_env_fini(&p->e);
	free(p->buf[0]);
	free(p->buf[1]);
}

struct ibv_sge h_sge(const struct h_pair *p, int side, size_t off, uint32_t len)
{
	return (struct ibv_sge){ (uintptr_t)p->buf[side] + off, len, rc_mr_lkey(p->mr[side]) };
}

void h_fill(uint8_t *buf, size_t len, unsigned seed)
{
	for (size_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8) + 1);
}

enum ibv_qp_state h_qp_state(struct rc_qp *qp)
{
	struct ibv_qp_attr a;

	rc_qp_query(qp, &a, IBV_QP_STATE, NULL);
	return a.qp_state;
}

struct rc_counters h_qp_counters(struct rc_qp *qp)
{
	struct rc_counters c;

	rc_qp_counters(qp, &c);
	return c;
}
