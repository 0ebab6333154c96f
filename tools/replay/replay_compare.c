// SPDX-License-Identifier: MIT
/* The comparison rules of docs/conformance.md: fields that may differ, windows, ACK coalescing. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "replay.h"
#include "uroce/wire.h"

enum stream { ST_REQUEST, ST_RESPONSE, ST_CNP, ST_COUNT };
static const char *const stream_name[ST_COUNT] = { "requests", "responses", "CNPs" };

struct parsed {
	const struct rp_frame	*f;
	struct wire_pkt		pkt;
	enum wire_drop		drop;
	enum stream		st;
	bool			ack;	/* positive ACK: opcode Acknowledge, syndrome 000xxxxx */
	uint8_t			syndrome;
	uint32_t		msn;
};

/* ---- Field extraction ---- */

enum rule {
	R_EXACT,
	R_IGNORE,
	R_ECN,		/* expected anything, actual: not CE */
};

struct field {
	const char	*name;
	uint64_t	v;
	enum rule	rule;
};

#define MAX_FIELDS 48

struct fields {
	unsigned	n;
	struct field	f[MAX_FIELDS];
};

static void put(struct fields *fs, const char *name, uint64_t v, enum rule rule)
{
	if (fs->n < MAX_FIELDS)
		fs->f[fs->n++] = (struct field){ name, v, rule };
}

static uint64_t mac64(const uint8_t m[6])
{
	uint64_t v = 0;

	for (int i = 0; i < 6; i++)
		v = v << 8 | m[i];
	return v;
}

static uint64_t half(const uint8_t *b)
{
	uint64_t v = 0;

	for (int i = 0; i < 8; i++)
		v = v << 8 | b[i];
	return v;
}

/* Does this RC request end a SEND or RDMA WRITE message (the only place AckReq is compared)? */
static bool ackreq_compared(const struct wire_opcode_info *op)
{
	if (!(op->flags & WIRE_OPF_RC) || !(op->flags & WIRE_OPF_REQUEST))
		return true;
	return (op->flags & (WIRE_OPF_SEND | WIRE_OPF_WRITE)) &&
	       (op->flags & (WIRE_OPF_LAST | WIRE_OPF_ONLY));
}

static void packet_fields(const struct parsed *p, struct fields *fs)
{
	const struct wire_pkt *k = &p->pkt;
	const uint8_t *fr = k->frame;
	const struct wire_bth *bth = wire_pkt_bth(k);
	const struct wire_udp_hdr *udp = (const void *)(fr + k->l4_off);
	const struct wire_opcode_info *op = k->op;
	bool cnp = op->flags & WIRE_OPF_CNP;
	const void *x;

	fs->n = 0;
	put(fs, "frame length", k->frame_len, R_EXACT);
	put(fs, "eth.dst", mac64(k->dst_mac), R_EXACT);
	put(fs, "eth.src", mac64(k->src_mac), R_EXACT);
	put(fs, "vlan present", k->has_vlan, R_EXACT);
	put(fs, "vlan.tci", k->vlan_tci, R_EXACT);
	put(fs, "ip.version", k->ip_version, R_EXACT);
	put(fs, "ip.src", half(k->src_gid), R_EXACT);
	put(fs, "ip.src (low)", half(k->src_gid + 8), R_EXACT);
	put(fs, "ip.dst", half(k->dst_gid), R_EXACT);
	put(fs, "ip.dst (low)", half(k->dst_gid + 8), R_EXACT);
	put(fs, "ip.dscp", k->tclass >> 2, cnp ? R_IGNORE : R_EXACT);
	put(fs, "ip.ecn", k->tclass & WIRE_ECN_MASK, R_ECN);
	put(fs, "ip.ttl/hop_limit", k->hop_limit, R_EXACT);
	if (k->ip_version == 4) {
		const struct wire_ipv4_hdr *ip = (const void *)(fr + k->l3_off);

		put(fs, "ip.header_length", ip->version_ihl & 0xf, R_EXACT);
		put(fs, "ip.total_length", wire_get16(ip->total_len), R_EXACT);
		put(fs, "ip.flags/fragment", wire_get16(ip->frag_off), R_EXACT);
	} else {
		const struct wire_ipv6_hdr *ip = (const void *)(fr + k->l3_off);

		put(fs, "ip6.payload_length", wire_get16(ip->payload_len), R_EXACT);
	}
	put(fs, "udp.dport", wire_get16(udp->dport), R_EXACT);
	put(fs, "udp.length", wire_get16(udp->len), R_EXACT);
	put(fs, "bth.opcode", k->opcode, R_EXACT);
	put(fs, "bth.se", k->se, R_EXACT);
	put(fs, "bth.migreq", k->mig, R_IGNORE);
	put(fs, "bth.padcnt", k->pad, R_EXACT);
	put(fs, "bth.tver", k->tver, R_EXACT);
	put(fs, "bth.pkey", k->pkey, R_EXACT);
	put(fs, "bth.resv8a (FECN/BECN)", wire_get32(bth->qpn) >> 24, R_EXACT);
	put(fs, "bth.destqp", k->dest_qp, R_EXACT);
	put(fs, "bth.ackreq", k->ackreq, ackreq_compared(op) ? R_EXACT : R_IGNORE);
	put(fs, "bth.resv7", (wire_get32(bth->apsn) >> 24) & 0x7f, R_EXACT);
	put(fs, "bth.psn", k->psn, R_EXACT);
	if ((x = wire_pkt_ext(k, WIRE_EXT_RETH))) {
		const struct wire_reth *h = x;

		put(fs, "reth.va", wire_get64(h->va), R_EXACT);
		put(fs, "reth.rkey", wire_get32(h->rkey), R_EXACT);
		put(fs, "reth.dma_len", wire_get32(h->dma_len), R_EXACT);
	}
	if ((x = wire_pkt_ext(k, WIRE_EXT_AETH))) {
		uint8_t syn = p->syndrome;

		put(fs, "aeth.syndrome type", syn & 0xe0, R_EXACT);
		put(fs, "aeth.syndrome value (credits / RNR timer / NAK code)", syn & 0x1f,
		    (syn & WIRE_AETH_TYPE_MASK) == WIRE_AETH_ACK ? R_IGNORE : R_EXACT);
		put(fs, "aeth.msn", p->msn, R_EXACT);
	}
	if ((x = wire_pkt_ext(k, WIRE_EXT_ATOMIC_ETH))) {
		const struct wire_atomic_eth *h = x;

		put(fs, "atomiceth.va", wire_get64(h->va), R_EXACT);
		put(fs, "atomiceth.rkey", wire_get32(h->rkey), R_EXACT);
		put(fs, "atomiceth.swap_add", wire_get64(h->swap_add), R_EXACT);
		put(fs, "atomiceth.compare", wire_get64(h->compare), R_EXACT);
	}
	if ((x = wire_pkt_ext(k, WIRE_EXT_ATOMIC_ACK_ETH)))
		put(fs, "atomicacketh.orig", wire_get64(((const struct wire_atomic_ack_eth *)x)->orig),
		    R_EXACT);
	if ((x = wire_pkt_ext(k, WIRE_EXT_IMMDT)))
		put(fs, "immdt", wire_get32(((const struct wire_immdt *)x)->imm), R_EXACT);
	if ((x = wire_pkt_ext(k, WIRE_EXT_IETH)))
		put(fs, "ieth.rkey", wire_get32(((const struct wire_ieth *)x)->rkey), R_EXACT);
	if ((x = wire_pkt_ext(k, WIRE_EXT_DETH))) {
		const struct wire_deth *h = x;

		put(fs, "deth.qkey", wire_get32(h->qkey), R_EXACT);
		put(fs, "deth.resv8", wire_get32(h->src_qp) >> 24, R_EXACT);
		put(fs, "deth.srcqp", wire_get32(h->src_qp) & WIRE_24BIT_MASK, R_EXACT);
	}
	if ((x = wire_pkt_ext(k, WIRE_EXT_FETH)))
		put(fs, "feth", wire_get32(((const struct wire_feth *)x)->bits), R_EXACT);
	if ((x = wire_pkt_ext(k, WIRE_EXT_CNP))) {
		const uint8_t *r = ((const struct wire_cnp *)x)->reserved;

		put(fs, "cnp.reserved", half(r), R_EXACT);
		put(fs, "cnp.reserved (low)", half(r + 8), R_EXACT);
	}
	put(fs, "payload length", k->payload_len, R_EXACT);
}

/* ---- Checks of a frame uroce sent that hold whatever the fixture expects ---- */

static uint32_t sum16(const uint8_t *b, uint32_t len, uint32_t s)
{
	for (uint32_t i = 0; i + 1 < len; i += 2)
		s += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		s += (uint32_t)b[len - 1] << 8;
	return s;
}

/* Return: NULL, or what is wrong with the UDP checksum. */
static const char *udp_checksum_problem(const struct wire_pkt *k)
{
	const uint8_t *fr = k->frame;
	const struct wire_udp_hdr *udp = (const void *)(fr + k->l4_off);
	uint32_t ulen = wire_get16(udp->len), s;
	uint16_t carried = wire_get16(udp->checksum);

	if (k->ip_version == 4) {
		const struct wire_ipv4_hdr *ip = (const void *)(fr + k->l3_off);

		if (!carried)
			return NULL;	/* allowed over IPv4 (RFC 768), as rxe and NICs send RoCE */
		s = sum16(ip->src, 4, 0);
		s = sum16(ip->dst, 4, s);
	} else {
		const struct wire_ipv6_hdr *ip = (const void *)(fr + k->l3_off);

		if (!carried)
			return "UDP checksum 0 over IPv6 (RFC 8200 requires one)";
		s = sum16(ip->src, 16, 0);
		s = sum16(ip->dst, 16, s);
	}
	s += WIRE_IPPROTO_UDP + ulen;
	s = sum16(fr + k->l4_off, ulen, s);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff ? NULL : "UDP checksum wrong";
}

/* ---- Reporting ---- */

struct ctx {
	struct rp_mismatch	*mm;
	enum fx_timing		timing;
	/* Per destination QP: the last ACK uroce sent and the last one expected so far. */
	unsigned		n_qps;
	struct ack_state {
		uint32_t	qpn;
		bool		sent;
		uint32_t	sent_psn, sent_msn;
		const struct parsed *exp_last;
	} q[16];
};

static void fmt_time(char *buf, size_t cap, uint64_t ns)
{
	snprintf(buf, cap, "%" PRIu64 ".%06" PRIu64 " ms", ns / 1000000, ns % 1000000);
}

__attribute__((format(printf, 5, 6)))
static bool mismatch(struct ctx *c, const struct parsed *e, const struct parsed *a,
		     unsigned window, const char *fmt, ...)
{
	char msg[400];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->mm->found = true;
	c->mm->expected = e ? e->f : NULL;
	c->mm->actual = a ? a->f : NULL;
	if (c->timing == FX_TIMING_WINDOW)
		snprintf(c->mm->what, sizeof(c->mm->what), "window %u (after input frame %u): %s",
			 window, window, msg);
	else
		snprintf(c->mm->what, sizeof(c->mm->what), "%s", msg);
	return false;
}

static struct ack_state *ack_state(struct ctx *c, uint32_t qpn)
{
	for (unsigned i = 0; i < c->n_qps; i++)
		if (c->q[i].qpn == qpn)
			return &c->q[i];
	if (c->n_qps == sizeof(c->q) / sizeof(c->q[0]))
		return &c->q[c->n_qps - 1];
	c->q[c->n_qps].qpn = qpn;
	return &c->q[c->n_qps++];
}

/*
 * Compare two frames field by field.  @skip_psn_msn: for the ACKs of a
 * coalesced run other than its last.
 */
static bool same_frame(struct ctx *c, const struct parsed *e, const struct parsed *a,
		       unsigned window, const char *stream, bool skip_psn_msn)
{
	struct fields fe, fa;
	char te[32], ta[32];

	if (e->pkt.opcode != a->pkt.opcode)
		return mismatch(c, e, a, window, "%s: expected %s, uroce sent %s", stream,
				e->pkt.op->name, a->pkt.op->name);
	packet_fields(e, &fe);
	packet_fields(a, &fa);
	for (unsigned i = 0; i < fe.n && i < fa.n; i++) {
		const struct field *x = &fe.f[i], *y = &fa.f[i];

		if (skip_psn_msn && (!strcmp(x->name, "bth.psn") || !strcmp(x->name, "aeth.msn")))
			continue;
		if (x->rule == R_IGNORE)
			continue;
		if (x->rule == R_ECN) {
			if (y->v == WIRE_ECN_CE)
				return mismatch(c, e, a, window, "%s: %s: uroce sent CE (a sender never marks CE)",
						stream, e->pkt.op->name);
			continue;
		}
		if (x->v != y->v)
			return mismatch(c, e, a, window,
					"%s: %s psn %#x: field %s: expected %#" PRIx64 ", uroce sent %#" PRIx64,
					stream, e->pkt.op->name, e->pkt.psn, x->name, x->v, y->v);
	}
	if (e->pkt.payload_len && memcmp(wire_pkt_payload(&e->pkt), wire_pkt_payload(&a->pkt),
					 e->pkt.payload_len)) {
		uint32_t i = 0;

		while (wire_pkt_payload(&e->pkt)[i] == wire_pkt_payload(&a->pkt)[i])
			i++;
		return mismatch(c, e, a, window, "%s: %s psn %#x: payload byte %u: expected %#04x, uroce sent %#04x",
				stream, e->pkt.op->name, e->pkt.psn, i, wire_pkt_payload(&e->pkt)[i],
				wire_pkt_payload(&a->pkt)[i]);
	}
	if (c->timing == FX_TIMING_WINDOW && a->f->t_ns < e->f->t_ns) {
		fmt_time(te, sizeof(te), e->f->t_ns);
		fmt_time(ta, sizeof(ta), a->f->t_ns);
		return mismatch(c, e, a, window, "%s: %s psn %#x sent at %s, earlier than allowed (%s)",
				stream, e->pkt.op->name, e->pkt.psn, ta, te);
	}
	return true;
}

/* ---- The three streams of one window ---- */

struct list {
	unsigned	n;
	struct parsed	**p;
};

static bool compare_in_order(struct ctx *c, const struct list *e, const struct list *a,
			     unsigned window, enum stream st)
{
	for (unsigned i = 0; i < e->n || i < a->n; i++) {
		if (i == a->n)
			return mismatch(c, e->p[i], NULL, window, "%s: uroce did not send the expected %s psn %#x",
					stream_name[st], e->p[i]->pkt.op->name, e->p[i]->pkt.psn);
		if (i == e->n)
			return mismatch(c, NULL, a->p[i], window, "%s: uroce sent %s psn %#x, none expected here",
					stream_name[st], a->p[i]->pkt.op->name, a->p[i]->pkt.psn);
		if (!same_frame(c, e->p[i], a->p[i], window, stream_name[st], false))
			return false;
	}
	return true;
}

/* One run of positive ACKs (rules 1 to 3 of "ACK coalescing"). */
static bool ack_run(struct ctx *c, struct parsed **e, unsigned ne, struct parsed **a, unsigned na,
		    unsigned window)
{
	const struct parsed *last_e = ne ? e[ne - 1] : NULL;

	if (ne && !na)
		return mismatch(c, last_e, NULL, window, "responses: uroce did not send the expected ACK psn %#x msn %u",
				last_e->pkt.psn, last_e->msn);
	for (unsigned i = 0; i < na; i++) {
		struct ack_state *s = ack_state(c, a[i]->pkt.dest_qp);
		uint32_t bound_psn, bound_msn;

		if (last_e) {
			bound_psn = last_e->pkt.psn;
			bound_msn = last_e->msn;
		} else if (s->exp_last) {
			bound_psn = s->exp_last->pkt.psn;
			bound_msn = s->exp_last->msn;
		} else {
			return mismatch(c, NULL, a[i], window,
					"responses: uroce sent ACK psn %#x msn %u where no acknowledgement is due",
					a[i]->pkt.psn, a[i]->msn);
		}
		if (s->sent && (psn_cmp(a[i]->pkt.psn, s->sent_psn) < 0 ||
				((a[i]->msn - s->sent_msn) & WIRE_24BIT_MASK) >= 0x800000))
			return mismatch(c, last_e, a[i], window,
					"responses: ACK psn %#x msn %u goes back behind the earlier ACK psn %#x msn %u",
					a[i]->pkt.psn, a[i]->msn, s->sent_psn, s->sent_msn);
		if (psn_cmp(a[i]->pkt.psn, bound_psn) > 0 ||
		    ((bound_msn - a[i]->msn) & WIRE_24BIT_MASK) >= 0x800000)
			return mismatch(c, last_e, a[i], window,
					"responses: ACK psn %#x msn %u acknowledges more than due here (psn %#x msn %u)",
					a[i]->pkt.psn, a[i]->msn, bound_psn, bound_msn);
		/* A repeated ACK has every field but PSN and MSN of the last expected one. */
		if (!same_frame(c, last_e ? last_e : s->exp_last, a[i], window, "responses",
				!last_e || i + 1 < na))
			return false;
		s->sent = true;
		s->sent_psn = a[i]->pkt.psn;
		s->sent_msn = a[i]->msn;
	}
	if (last_e) {
		struct ack_state *s = ack_state(c, last_e->pkt.dest_qp);

		s->exp_last = last_e;
	}
	return true;
}

static bool compare_responses(struct ctx *c, const struct list *e, const struct list *a,
			      unsigned window)
{
	unsigned ei = 0, ai = 0;

	for (;;) {
		unsigned e0 = ei, a0 = ai;

		while (ei < e->n && e->p[ei]->ack)
			ei++;
		while (ai < a->n && a->p[ai]->ack)
			ai++;
		if (!ack_run(c, e->p + e0, ei - e0, a->p + a0, ai - a0, window))
			return false;
		if (ei == e->n && ai == a->n)
			return true;
		if (ai == a->n)
			return mismatch(c, e->p[ei], NULL, window, "responses: uroce did not send the expected %s psn %#x",
					e->p[ei]->pkt.op->name, e->p[ei]->pkt.psn);
		if (ei == e->n)
			return mismatch(c, NULL, a->p[ai], window, "responses: uroce sent %s psn %#x, none expected here",
					a->p[ai]->pkt.op->name, a->p[ai]->pkt.psn);
		if (!same_frame(c, e->p[ei], a->p[ai], window, "responses", false))
			return false;
		ei++;
		ai++;
	}
}

/* ---- Entry ---- */

static int parse_all(const struct rp_frames *fs, struct parsed *out)
{
	for (unsigned i = 0; i < fs->n; i++) {
		struct parsed *p = &out[i];
		const struct wire_opcode_info *op;

		p->f = &fs->f[i];
		p->drop = wire_parse(p->f->data, p->f->len, 0, &p->pkt);
		if (p->drop)
			return (int)i;
		op = p->pkt.op;
		p->st = op->flags & WIRE_OPF_CNP ? ST_CNP :
			op->flags & WIRE_OPF_RESPONSE ? ST_RESPONSE : ST_REQUEST;
		if (op->hdrs & WIRE_HDR_AETH) {
			const struct wire_aeth *h = wire_pkt_ext(&p->pkt, WIRE_EXT_AETH);
			uint32_t w = wire_get32(h->syn_msn);

			p->syndrome = (uint8_t)(w >> 24);
			p->msn = w & WIRE_24BIT_MASK;
		}
		p->ack = p->pkt.opcode == (WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE) &&
			 (p->syndrome & WIRE_AETH_TYPE_MASK) == WIRE_AETH_ACK;
	}
	return -1;
}

bool rp_compare_frames(const struct rp_frames *expected, const struct rp_frames *actual,
		       enum fx_timing timing, struct rp_mismatch *mm)
{
	struct parsed *pe = calloc(expected->n + 1, sizeof(*pe));
	struct parsed *pa = calloc(actual->n + 1, sizeof(*pa));
	struct parsed **le = calloc(expected->n + 1, sizeof(*le));
	struct parsed **la = calloc(actual->n + 1, sizeof(*la));
	struct ctx c = { .mm = mm, .timing = timing };
	unsigned ie = 0, ia = 0;
	bool ok = true;
	int bad;

	memset(mm, 0, sizeof(*mm));
	if (!pe || !pa || !le || !la) {
		snprintf(mm->what, sizeof(mm->what), "out of memory");
		mm->found = true;
		ok = false;
		goto out;
	}
	bad = parse_all(expected, pe);
	if (bad >= 0) {
		ok = mismatch(&c, NULL, NULL, 0, "the fixture's expected frame %d does not parse: %s",
			      bad + 1, wire_drop_desc(pe[bad].drop));
		mm->expected = &expected->f[bad];
		goto out;
	}
	bad = parse_all(actual, pa);
	if (bad >= 0) {
		ok = mismatch(&c, NULL, &pa[bad], pa[bad].f->window, "uroce sent frame %d that a receiver must drop: %s",
			      bad + 1, wire_drop_desc(pa[bad].drop));
		goto out;
	}
	for (unsigned i = 0; i < actual->n; i++) {
		const char *why = udp_checksum_problem(&pa[i].pkt);

		if (why) {
			ok = mismatch(&c, NULL, &pa[i], pa[i].f->window, "uroce sent frame %u: %s", i + 1, why);
			goto out;
		}
	}

	/* Walk window by window (one window holding everything in stream mode). */
	while (ok && (ie < expected->n || ia < actual->n)) {
		unsigned w;
		unsigned je = ie, ja = ia;

		if (timing == FX_TIMING_STREAM) {
			w = 0;
			je = expected->n;
			ja = actual->n;
		} else {
			w = UINT32_MAX;
			if (ie < expected->n)
				w = pe[ie].f->window;
			if (ia < actual->n && pa[ia].f->window < w)
				w = pa[ia].f->window;
			while (je < expected->n && pe[je].f->window == w)
				je++;
			while (ja < actual->n && pa[ja].f->window == w)
				ja++;
		}
		for (int st = 0; st < ST_COUNT && ok; st++) {
			struct list e = { 0, le }, a = { 0, la };

			for (unsigned i = ie; i < je; i++)
				if (pe[i].st == (enum stream)st)
					e.p[e.n++] = &pe[i];
			for (unsigned i = ia; i < ja; i++)
				if (pa[i].st == (enum stream)st)
					a.p[a.n++] = &pa[i];
			if (st == ST_RESPONSE)
				ok = compare_responses(&c, &e, &a, w);
			else
				ok = compare_in_order(&c, &e, &a, w, (enum stream)st);
		}
		ie = je;
		ia = ja;
	}
out:
	free(pe);
	free(pa);
	free(le);
	free(la);
	return ok;
}
