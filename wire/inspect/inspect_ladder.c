// SPDX-License-Identifier: MIT
/* Ladder diagrams: frames to rows, each sender's PSNs followed for resends and losses, arrow labels. */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/inspect_ladder.h"
#include "uroce/wire_mad.h"
#include "inspect_text.h"

#define PERFTEST_PORT	18515
#define TCP_FIN		0x01
#define TCP_SYN		0x02
#define TCP_RST		0x04
#define TCP_ACK		0x10
/* A bigger jump is not a loss but a new flow reusing the QPN: start over. */
#define MAX_LOST_RUN	4096

void inspect_ladder_init(struct inspect_ladder *l, unsigned flags)
{
	memset(l, 0, sizeof(*l));
	l->flags = flags;
}

void inspect_ladder_free(struct inspect_ladder *l)
{
	for (size_t i = 0; i < l->n_rows; i++) {
		free(l->rows[i].line);
		free(l->rows[i].text);
	}
	free(l->rows);
	free(l->hosts);
	memset(l, 0, sizeof(*l));
}

/* ---- Hosts ---- */

static int host_find(struct inspect_ladder *l, const uint8_t addr[16], bool is_mac, bool add)
{
	struct inspect_ladder_host *h;

	for (unsigned i = 0; i < l->n_hosts; i++)
		if (l->hosts[i].is_mac == is_mac && !memcmp(l->hosts[i].addr, addr, 16))
			return (int)i;
	if (!add)
		return -1;
	if (l->n_hosts == INSPECT_LADDER_NO_HOST)
		return -ENOMEM;
	if (l->n_hosts == l->cap_hosts) {
		unsigned cap = l->cap_hosts ? 2 * l->cap_hosts : 8;

		h = realloc(l->hosts, cap * sizeof(*h));
		if (!h)
			return -ENOMEM;
		l->hosts = h;
		l->cap_hosts = cap;
	}
	h = &l->hosts[l->n_hosts];
	memset(h, 0, sizeof(*h));
	memcpy(h->addr, addr, 16);
	h->is_mac = is_mac;
	h->column = -1;
	return (int)l->n_hosts++;
}

int inspect_ladder_name_host(struct inspect_ladder *l, const uint8_t addr[16], const char *role)
{
	int h = host_find(l, addr, false, true);

	if (h < 0)
		return h;
	snprintf(l->hosts[h].role, sizeof(l->hosts[h].role), "%s", role);
	return 0;
}

static void name_if_unnamed(struct inspect_ladder *l, uint16_t h, const char *role)
{
	if (h != INSPECT_LADDER_NO_HOST && !l->hosts[h].role[0])
		snprintf(l->hosts[h].role, sizeof(l->hosts[h].role), "%s", role);
}

static void host_add_qp(struct inspect_ladder_host *h, uint32_t qpn)
{
	unsigned known = h->n_qpn < 4 ? h->n_qpn : 4;

	for (unsigned i = 0; i < known; i++)
		if (h->qpn[i] == qpn)
			return;
	if (h->n_qpn < 4)
		h->qpn[h->n_qpn] = qpn;
	h->n_qpn++;
}

size_t inspect_ladder_host_name(char *buf, size_t cap, const struct inspect_ladder_host *h)
{
	char addr[64];
	int n;

	if (h->is_mac)
		snprintf(addr, sizeof(addr), "%02x:%02x:%02x:%02x:%02x:%02x", h->addr[0],
			 h->addr[1], h->addr[2], h->addr[3], h->addr[4], h->addr[5]);
	else
		inspect_format_gid(addr, sizeof(addr), h->addr);
	n = h->role[0] ? snprintf(buf, cap, "%s (%s)", addr, h->role) :
			 snprintf(buf, cap, "%s", addr);
	return n < 0 ? 0 : (size_t)n;
}

/* ---- Adding frames ---- */

static const char *kind_names[INSPECT_LADDER_KIND_COUNT] = {
	[INSPECT_LADDER_REQUEST]	= "request",
	[INSPECT_LADDER_RESPONSE]	= "response",
	[INSPECT_LADDER_ACK]	= "ack",
	[INSPECT_LADDER_NAK]	= "nak",
	[INSPECT_LADDER_RNR]	= "rnr",
	[INSPECT_LADDER_CNP]	= "cnp",
	[INSPECT_LADDER_BAD]	= "bad",
	[INSPECT_LADDER_SETUP]	= "setup",
	[INSPECT_LADDER_OTHER]	= "other",
	[INSPECT_LADDER_LOST]	= "lost",
};

const char *inspect_ladder_kind_name(enum inspect_ladder_kind kind)
{
	return (unsigned)kind < INSPECT_LADDER_KIND_COUNT ? kind_names[kind] : "?";
}

static enum inspect_ladder_kind roce_kind(const struct wire_frame *fr, uint8_t syndrome)
{
	const struct wire_opcode_info *op = fr->pkt.op;

	if (!op || fr->drop != WIRE_DROP_NONE)
		return INSPECT_LADDER_BAD;
	if (op->flags & WIRE_OPF_CNP)
		return INSPECT_LADDER_CNP;
	if (op->flags & WIRE_OPF_REQUEST)
		return INSPECT_LADDER_REQUEST;
	if ((fr->pkt.opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_ACKNOWLEDGE) {
		switch (syndrome & (WIRE_AETH_TYPE_MASK | 0x80)) {
		case WIRE_AETH_ACK:	return INSPECT_LADDER_ACK;
		case WIRE_AETH_RNR_NAK:	return INSPECT_LADDER_RNR;
		default:		return INSPECT_LADDER_NAK;
		}
	}
	return INSPECT_LADDER_RESPONSE;
}

/* A UD SEND's payload to QP1 that wire_cm_mad_check() takes: its message's fields. */
static void copy_cm(struct inspect_ladder_row *r, const uint8_t *payload, uint32_t len)
{
	struct wire_cm_mad m;

	if (wire_cm_mad_check(payload, len) != WIRE_MAD_DROP_NONE)
		return;
	memcpy(&m, payload, sizeof(m));
	r->cm_attr = wire_get16(m.hdr.attr_id);
	r->cm_tid = wire_get64(m.hdr.tid);
	/* Every message but the SIDR pair starts with the sender's comm ID, then the peer's. */
	r->cm_local_id = wire_get32(m.u.rtu.local_comm_id);
	r->cm_remote_id = wire_get32(m.u.rtu.remote_comm_id);
	switch (r->cm_attr) {
	case WIRE_CM_REQ:
		r->cm_remote_id = 0;
		r->cm_sid = wire_get64(m.u.req.service_id);
		r->cm_qpn = wire_hi24(m.u.req.qpn_rres);
		r->cm_psn = wire_hi24(m.u.req.psn_misc);
		break;
	case WIRE_CM_REP:
		r->cm_qpn = wire_hi24(m.u.rep.qpn_vendor);
		r->cm_psn = wire_hi24(m.u.rep.psn_vendor);
		break;
	case WIRE_CM_DREQ:
		r->cm_qpn = wire_hi24(m.u.dreq.remote_qpn);
		break;
	case WIRE_CM_REJ:
		r->cm_reason = wire_get16(m.u.rej.reason);
		break;
	case WIRE_CM_SIDR_REQ:
		r->cm_remote_id = 0;
		r->cm_sid = wire_get64(m.u.sidr_req.service_id);
		break;
	case WIRE_CM_SIDR_REP:
		r->cm_remote_id = 0;
		r->cm_reason = m.u.sidr_rep.status;
		r->cm_qpn = wire_hi24(m.u.sidr_rep.qpn_vendor);
		r->cm_sid = wire_get64(m.u.sidr_rep.service_id);
		break;
	}
}

/* The BTH and extension header fields the labels use; nothing beyond what parsing checked. */
static void copy_roce(struct inspect_ladder_row *r, const struct wire_frame *fr)
{
	const struct wire_pkt *p = &fr->pkt;
	const uint8_t *h;

	r->drop = (uint8_t)fr->drop;
	/* As uroce decode: the BTH's fields once parsing got past it, even with an unknown opcode. */
	r->bth_read = p->op || (p->bth_off && fr->drop != WIRE_DROP_TRUNCATED_BTH);
	if (!r->bth_read)
		return;
	r->opcode = p->opcode;
	r->psn = p->psn;
	r->dest_qp = p->dest_qp;
	if (!p->op)
		return;
	r->ackreq = p->ackreq;
	r->se = p->se;
	r->sr_nak = p->sr_nak;
	if (fr->drop == WIRE_DROP_TRUNCATED_EXT)
		return;
	r->payload_len = p->payload_len;
	r->hdrs = p->op->hdrs;
	if ((h = wire_pkt_ext(p, WIRE_EXT_RETH))) {
		r->va = wire_load64(h);
		r->rkey = wire_load32(h + 8);
		r->dmalen = wire_load32(h + 12);
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_AETH))) {
		r->syndrome = h[0];
		r->msn = wire_load24(h + 1);
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_ATOMIC_ETH))) {
		r->va = wire_load64(h);
		r->rkey = wire_load32(h + 8);
		r->swap_add = wire_load64(h + 12);
		r->compare = wire_load64(h + 20);
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_ATOMIC_ACK_ETH)))
		r->orig = wire_load64(h);
	if ((h = wire_pkt_ext(p, WIRE_EXT_IMMDT)))
		r->imm = wire_load32(h);
	if ((h = wire_pkt_ext(p, WIRE_EXT_IETH)))
		r->inv_rkey = wire_load32(h);
	if ((h = wire_pkt_ext(p, WIRE_EXT_DETH))) {
		r->qkey = wire_load32(h);
		r->src_qp = wire_load24(h + 5);
		if (r->dest_qp == WIRE_GSI_QPN && r->qkey == WIRE_GSI_QKEY && fr->drop == WIRE_DROP_NONE)
			copy_cm(r, fr->data + p->payload_off, r->payload_len);
	}
}

/* Which frames are drawn, and as what; false: counted only. */
static bool classify(const struct inspect_ladder *l, const struct wire_frame *fr,
		     struct inspect_ladder_row *r)
{
	const struct wire_frame_l4 *l4 = &fr->l4;

	if (fr->kind == WIRE_FRAME_ROCE) {
		copy_roce(r, fr);
		r->kind = (uint8_t)roce_kind(fr, r->syndrome);
		return true;
	}
	if (fr->kind == WIRE_FRAME_IP && l4->proto == 6 && l4->ports_valid &&
	    (l4->sport == PERFTEST_PORT || l4->dport == PERFTEST_PORT)) {
		r->kind = INSPECT_LADDER_SETUP;
		r->tcp_flags = l4->tcp_flags;
		r->payload_len = l4->payload_len;
		if (fr->perftest.valid) {
			r->perftest = true;
			r->dest_qp = fr->perftest.qpn;
			r->psn = fr->perftest.psn;
			r->rkey = fr->perftest.rkey;
			r->va = fr->perftest.va;
		}
		/* The connection opening and the messages; the bare ACKs are TCP's business. */
		if (l4->payload_len || (l4->tcp_flags & (TCP_SYN | TCP_FIN | TCP_RST)))
			return true;
		if (l->flags & INSPECT_LADDER_ALL_FRAMES) {
			r->kind = INSPECT_LADDER_OTHER;
			return true;
		}
		return false;
	}
	r->kind = INSPECT_LADDER_OTHER;
	return l->flags & INSPECT_LADDER_ALL_FRAMES;
}

/* Source and destination hosts of a frame; a broadcast or unknown destination is NO_HOST. */
static int frame_hosts(struct inspect_ladder *l, const struct wire_frame *fr, uint16_t *src,
		       uint16_t *dst)
{
	uint8_t a[16], b[16];
	bool mac = false;
	int s, d = INSPECT_LADDER_NO_HOST;

	if (fr->ip_valid) {
		memcpy(a, fr->src_ip, 16);
		memcpy(b, fr->dst_ip, 16);
	} else if (fr->kind == WIRE_FRAME_ARP && fr->arp.valid) {
		memcpy(a, wire_v4mapped_prefix, 12);
		memcpy(a + 12, fr->arp.spa, 4);
		memcpy(b, wire_v4mapped_prefix, 12);
		memcpy(b + 12, fr->arp.tpa, 4);
	} else {
		memset(a, 0, 16);
		memset(b, 0, 16);
		if (fr->len >= 12) {
			memcpy(a, fr->data + 6, 6);
			memcpy(b, fr->data, 6);
		}
		mac = true;
	}
	s = host_find(l, a, mac, true);
	if (s < 0)
		return s;
	/* Group (multicast/broadcast) MAC: no single destination. */
	if (!(mac && (b[0] & 1))) {
		d = host_find(l, b, mac, true);
		if (d < 0)
			return d;
	}
	*src = (uint16_t)s;
	*dst = (uint16_t)d;
	return 0;
}

static char *frame_line(const struct wire_frame *fr)
{
	char src[64], dst[64], sum[400], *line;
	size_t n;

	inspect_decode_endpoint(src, sizeof(src), fr, true);
	inspect_decode_endpoint(dst, sizeof(dst), fr, false);
	inspect_decode_summary(sum, sizeof(sum), fr);
	n = strlen(src) + strlen(dst) + strlen(sum) + 6;
	line = malloc(n);
	if (line)
		snprintf(line, n, "%s > %s: %s", src, dst, sum);
	return line;
}

static int rows_reserve(struct inspect_ladder *l, size_t n)
{
	struct inspect_ladder_row *rows;
	size_t cap;

	if (l->n_rows + n <= l->cap_rows)
		return 0;
	cap = l->cap_rows ? l->cap_rows : 256;
	while (cap < l->n_rows + n)
		cap *= 2;
	rows = realloc(l->rows, cap * sizeof(*rows));
	if (!rows)
		return -ENOMEM;
	l->rows = rows;
	l->cap_rows = cap;
	return 0;
}

int inspect_ladder_add(struct inspect_ladder *l, uint64_t number, const struct inspect_decode_ts *ts,
		    const struct wire_frame *fr, bool shown)
{
	struct inspect_ladder_row r;
	unsigned n_hosts = l->n_hosts;
	int err;

	memset(&r, 0, sizeof(r));
	r.number = number;
	r.ts = *ts;
	r.shown = shown;
	l->frames++;
	l->shown_frames += shown;
	if (!classify(l, fr, &r)) {
		l->not_drawn += shown;
		return 0;
	}
	err = rows_reserve(l, 1);
	if (!err)
		err = frame_hosts(l, fr, &r.src, &r.dst);
	if (!err && shown) {
		r.line = frame_line(fr);
		if (r.kind == INSPECT_LADDER_OTHER) {
			size_t n = inspect_decode_summary(NULL, 0, fr) + 1;

			r.text = malloc(n);
			if (r.text)
				inspect_decode_summary(r.text, n, fr);
		}
		if (!r.line || (r.kind == INSPECT_LADDER_OTHER && !r.text))
			err = -ENOMEM;
	}
	if (err) {
		free(r.line);
		free(r.text);
		l->n_hosts = n_hosts;
		l->frames--;
		l->shown_frames -= shown;
		return err;
	}
	/* perftest's client connects to the server's port 18515. */
	if (r.kind == INSPECT_LADDER_SETUP && (r.tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN &&
	    fr->l4.dport == PERFTEST_PORT) {
		name_if_unnamed(l, r.src, "perftest client");
		name_if_unnamed(l, r.dst, "perftest server");
	}
	l->rows[l->n_rows++] = r;
	return 0;
}

/* ---- Following the PSNs ---- */

enum stream_type { STREAM_REQUEST, STREAM_RESPONSE, STREAM_ACK, STREAM_NAK };

/* What one sender sent one receiver's QP so far. */
struct stream {
	uint16_t	src, dst;
	uint32_t	qp;
	uint8_t		type;
	bool		resync;		/* the last request's PSN span is unknown */
	uint32_t	next;		/* PSN after the last packet */
	uint32_t	highest;	/* PSN after the highest packet */
	bool		selective;	/* resending after a selective NAK: it returns to highest */
	uint8_t		nak_kind;	/* STREAM_NAK: the last NAK or RNR NAK not yet answered */
	bool		nak_selective;
	uint32_t	nak_psn;
};

struct streams {
	struct stream	*s;
	size_t		n, cap;
};

static struct stream *stream_find(struct streams *ss, uint16_t src, uint16_t dst, uint32_t qp,
				  uint8_t type)
{
	for (size_t i = ss->n; i-- > 0;) {
		struct stream *s = &ss->s[i];

		if (s->src == src && s->dst == dst && s->qp == qp && s->type == type)
			return s;
	}
	return NULL;
}

static struct stream *stream_get(struct streams *ss, uint16_t src, uint16_t dst, uint32_t qp,
				 uint8_t type, bool *fresh)
{
	struct stream *s = stream_find(ss, src, dst, qp, type);

	*fresh = !s;
	if (s)
		return s;
	if (ss->n == ss->cap) {
		size_t cap = ss->cap ? 2 * ss->cap : 16;

		s = realloc(ss->s, cap * sizeof(*s));
		if (!s)
			return NULL;
		ss->s = s;
		ss->cap = cap;
	}
	s = &ss->s[ss->n++];
	memset(s, 0, sizeof(*s));
	s->src = src;
	s->dst = dst;
	s->qp = qp;
	s->type = type;
	return s;
}

/* PSNs a request occupies: a read request one per response packet (IBA 9.7.3.1.3); 0 unknown. */
static uint32_t request_span(const struct inspect_ladder *l, const struct inspect_ladder_row *r)
{
	if ((r->opcode & WIRE_OPC_LOW_MASK) != WIRE_OP_READ_REQUEST || (r->opcode & WIRE_OPC_TRANSPORT_MASK) != WIRE_OPC_RC)
		return 1;
	if (r->dmalen == 0)
		return 1;
	if (!l->pmtu)
		return 0;
	return (r->dmalen + l->pmtu - 1) / l->pmtu;
}

/*
 * A NAK or RNR NAK for exactly this PSN from the responder's host, not yet
 * followed by a resend: it caused the resend (IBA 9.7.5.2.1, 9.7.5.2.8).
 * Hosts, not QPs, because a request names only the responder's QP.
 */
static uint8_t go_back_reason(struct streams *ss, const struct inspect_ladder_row *r,
			      bool *selective)
{
	struct stream *n = stream_find(ss, r->dst, r->src, 0, STREAM_NAK);
	uint8_t kind;

	if (!n || !n->nak_kind || n->nak_psn != r->psn)
		return 0;
	kind = n->nak_kind;
	n->nak_kind = 0;
	*selective = n->nak_selective;
	return kind == INSPECT_LADDER_RNR ? INSPECT_LADDER_AFTER_RNR : INSPECT_LADDER_AFTER_NAK;
}

/*
 * A request: in sequence, resent (at or below a PSN sent before), or
 * after a gap.  Return: how many PSNs before it were never seen.
 */
static uint32_t follow_request(const struct inspect_ladder *l, struct streams *ss,
			       struct inspect_ladder_row *r, int *err)
{
	uint32_t span = request_span(l, r), lost = 0, qp = r->dest_qp;
	uint16_t dst = r->dst;
	struct stream *s;
	bool fresh;
	int32_t d;

	/* A UD QP numbers its packets across all destinations. */
	if (r->hdrs & WIRE_HDR_DETH) {
		qp = r->src_qp | 1u << 24;
		dst = INSPECT_LADDER_NO_HOST;
	}
	s = stream_get(ss, r->src, dst, qp, STREAM_REQUEST, &fresh);
	if (!s) {
		*err = -ENOMEM;
		return 0;
	}
	if (!fresh) {
		d = psn_cmp(r->psn, s->next);
		if (d > MAX_LOST_RUN || d < -MAX_LOST_RUN) {
			fresh = true;
		} else if (d < 0) {
			r->marks |= INSPECT_LADDER_RESEND | INSPECT_LADDER_GO_BACK;
			r->marks |= go_back_reason(ss, r, &s->selective);
		} else {
			/* After a selective resend the requester goes on where it left off. */
			if (d > 0 && s->selective && psn_cmp(r->psn, s->highest) >= 0)
				d = psn_cmp(r->psn, s->highest);
			if (d > 0)
				s->selective = false;
			if (d > 0 && !s->resync)
				lost = (uint32_t)d;
			if (psn_cmp(r->psn, s->highest) < 0)
				r->marks |= INSPECT_LADDER_RESEND;
		}
	}
	s->resync = span == 0;
	s->next = psn_add(r->psn, span ? span : 1);
	if (fresh || psn_cmp(s->next, s->highest) > 0)
		s->highest = s->next;
	return lost;
}

/* Responses and ACKs: a PSN at or below one answered before is a repeat. */
static int follow_response(struct streams *ss, struct inspect_ladder_row *r)
{
	bool ack = r->kind != INSPECT_LADDER_RESPONSE, fresh;
	struct stream *s;
	uint32_t point;

	/* First, as stream_get() may move the streams. */
	if (r->kind == INSPECT_LADDER_NAK || r->kind == INSPECT_LADDER_RNR) {
		s = stream_get(ss, r->src, r->dst, 0, STREAM_NAK, &fresh);
		if (!s)
			return -ENOMEM;
		s->nak_kind = r->kind;
		s->nak_selective = r->sr_nak;
		s->nak_psn = r->psn;
	}
	s = stream_get(ss, r->src, r->dst, r->dest_qp, ack ? STREAM_ACK : STREAM_RESPONSE, &fresh);
	if (!s)
		return -ENOMEM;
	if (!ack) {
		if (!fresh && psn_cmp(r->psn, s->highest) < 0)
			r->marks |= INSPECT_LADDER_REPEAT;
		if (fresh || psn_cmp(psn_add(r->psn, 1), s->highest) > 0)
			s->highest = psn_add(r->psn, 1);
		return 0;
	}
	/* The acknowledged PSN: an ACK's own, a sequence error NAK's minus one (9.7.5.1.1). */
	if (r->kind == INSPECT_LADDER_ACK)
		point = r->psn;
	else if (r->kind == INSPECT_LADDER_NAK &&
		 (r->syndrome & WIRE_AETH_CODE_MASK) == WIRE_NAK_PSN_SEQ_ERR)
		point = psn_add(r->psn, WIRE_24BIT_MASK);
	else
		return 0;
	if (!fresh && r->kind == INSPECT_LADDER_ACK && psn_cmp(point, s->highest) <= 0)
		r->marks |= INSPECT_LADDER_REPEAT;
	if (fresh || psn_cmp(point, s->highest) > 0)
		s->highest = point;
	return 0;
}

/*
 * A column for every host of a shown row, in the order hosts first
 * appear in the capture (shown or not), so that -n does not reorder them.
 */
static void place_columns(struct inspect_ladder *l)
{
	unsigned col = 0;

	for (unsigned i = 0; i < l->n_hosts; i++) {
		l->hosts[i].column = -1;
		l->hosts[i].n_qpn = 0;
	}
	for (size_t i = 0; i < l->n_rows; i++) {
		struct inspect_ladder_row *r = &l->rows[i];

		if (r->kind <= INSPECT_LADDER_CNP && r->dst != INSPECT_LADDER_NO_HOST)
			host_add_qp(&l->hosts[r->dst], r->dest_qp);
		if (r->kind == INSPECT_LADDER_REQUEST && (r->hdrs & WIRE_HDR_DETH))
			host_add_qp(&l->hosts[r->src], r->src_qp);
		/* Column -2: drawn, place not yet known. */
		if (r->shown) {
			l->hosts[r->src].column = -2;
			if (r->dst != INSPECT_LADDER_NO_HOST)
				l->hosts[r->dst].column = -2;
		}
	}
	for (size_t i = 0; i < l->n_rows; i++) {
		const struct inspect_ladder_row *r = &l->rows[i];
		uint16_t ends[2] = { r->src, r->dst };

		for (int e = 0; e < 2; e++)
			if (ends[e] != INSPECT_LADDER_NO_HOST && l->hosts[ends[e]].column == -2)
				l->hosts[ends[e]].column = (int)col++;
	}
	l->n_columns = col;
}

/* A CM MAD its sender sent before (same attribute and TID): the CM's retransmission. */
static void mark_cm_repeats(struct inspect_ladder *l)
{
	for (size_t i = 0; i < l->n_rows; i++) {
		struct inspect_ladder_row *r = &l->rows[i];

		if (!r->cm_attr)
			continue;
		for (size_t j = i; j-- > 0;) {
			const struct inspect_ladder_row *e = &l->rows[j];

			if (e->cm_attr == r->cm_attr && e->cm_tid == r->cm_tid && e->src == r->src) {
				r->marks |= INSPECT_LADDER_REPEAT;
				break;
			}
		}
	}
}

int inspect_ladder_finish(struct inspect_ladder *l)
{
	struct streams ss = { NULL, 0, 0 };
	struct inspect_ladder_row *out;
	size_t n = 0, cap = l->n_rows + 16;
	int err = 0;

	if (l->finished)
		return 0;
	l->pmtu = 0;
	for (size_t i = 0; i < l->n_rows; i++) {
		const struct inspect_ladder_row *r = &l->rows[i];
		const struct wire_opcode_info *op = &wire_opcode[r->opcode];

		if (r->kind <= INSPECT_LADDER_RESPONSE && op->name &&
		    (op->flags & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE)) && r->payload_len > l->pmtu)
			l->pmtu = r->payload_len;
	}
	out = malloc(cap * sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (size_t i = 0; i < l->n_rows && !err; i++) {
		struct inspect_ladder_row *r = &l->rows[i];
		uint32_t lost = 0;

		/*
		 * Not a CM MAD's PSN: every uroce process on a host sends from a QP1 of
		 * its own, with PSNs of its own; a repeated MAD is marked by its TID.
		 */
		if (r->kind == INSPECT_LADDER_REQUEST && !r->cm_attr)
			lost = follow_request(l, &ss, r, &err);
		else if (r->kind >= INSPECT_LADDER_RESPONSE && r->kind <= INSPECT_LADDER_RNR)
			err = follow_response(&ss, r);
		if (err)
			break;
		if (n + 2 > cap) {
			struct inspect_ladder_row *grown = realloc(out, 2 * cap * sizeof(*out));

			if (!grown) {
				err = -ENOMEM;
				break;
			}
			out = grown;
			cap *= 2;
		}
		if (lost) {
			struct inspect_ladder_row *g = &out[n++];

			memset(g, 0, sizeof(*g));
			g->kind = INSPECT_LADDER_LOST;
			g->ts = r->ts;
			g->src = r->src;
			g->dst = r->dst;
			g->shown = r->shown;
			g->opcode = r->opcode;
			g->dest_qp = r->dest_qp;
			g->psn = psn_add(r->psn, (uint32_t)-lost & WIRE_24BIT_MASK);
			g->lost_count = lost;
		}
		out[n++] = *r;
	}
	free(ss.s);
	if (err) {
		/* The rows' strings stay owned by l->rows. */
		free(out);
		return err;
	}
	free(l->rows);
	l->rows = out;
	l->n_rows = n;
	l->cap_rows = cap;

	place_columns(l);
	memset(l->count, 0, sizeof(l->count));
	l->resends = l->lost_psns = l->cm_msgs = 0;
	for (size_t i = 0; i < l->n_rows; i++) {
		const struct inspect_ladder_row *r = &l->rows[i];

		if (!r->shown)
			continue;
		l->count[r->kind]++;
		l->resends += !!(r->marks & INSPECT_LADDER_RESEND);
		l->lost_psns += r->lost_count;
		l->cm_msgs += r->cm_attr != 0;
	}
	mark_cm_repeats(l);
	l->finished = true;
	return 0;
}

/* ---- Labels ---- */

/* Opcode names short enough for an arrow; RC is implied, UC and UD are named. */
static const char *const op_short[32] = {
	[WIRE_OP_SEND_FIRST]		= "SEND FIRST",
	[WIRE_OP_SEND_MIDDLE]		= "SEND MIDDLE",
	[WIRE_OP_SEND_LAST]		= "SEND LAST",
	[WIRE_OP_SEND_LAST_IMM]		= "SEND LAST+IMM",
	[WIRE_OP_SEND_ONLY]		= "SEND ONLY",
	[WIRE_OP_SEND_ONLY_IMM]		= "SEND ONLY+IMM",
	[WIRE_OP_WRITE_FIRST]		= "WRITE FIRST",
	[WIRE_OP_WRITE_MIDDLE]		= "WRITE MIDDLE",
	[WIRE_OP_WRITE_LAST]		= "WRITE LAST",
	[WIRE_OP_WRITE_LAST_IMM]	= "WRITE LAST+IMM",
	[WIRE_OP_WRITE_ONLY]		= "WRITE ONLY",
	[WIRE_OP_WRITE_ONLY_IMM]	= "WRITE ONLY+IMM",
	[WIRE_OP_READ_REQUEST]		= "READ REQUEST",
	[WIRE_OP_READ_RESP_FIRST]	= "READ RESP FIRST",
	[WIRE_OP_READ_RESP_MIDDLE]	= "READ RESP MIDDLE",
	[WIRE_OP_READ_RESP_LAST]	= "READ RESP LAST",
	[WIRE_OP_READ_RESP_ONLY]	= "READ RESP ONLY",
	[WIRE_OP_ACKNOWLEDGE]		= "ACK",
	[WIRE_OP_ATOMIC_ACKNOWLEDGE]	= "ATOMIC ACK",
	[WIRE_OP_COMPARE_SWAP]		= "CMP&SWAP",
	[WIRE_OP_FETCH_ADD]		= "FETCH&ADD",
	[WIRE_OP_SEND_LAST_INV]		= "SEND LAST+INV",
	[WIRE_OP_SEND_ONLY_INV]		= "SEND ONLY+INV",
};

static void sb_opname(struct inspect_text *b, uint8_t opcode)
{
	const struct wire_opcode_info *op = &wire_opcode[opcode];
	const char *name = op_short[opcode & WIRE_OPC_LOW_MASK];

	if (!op->name) {
		inspect_text_printf(b, "opcode 0x%02x", opcode);
		return;
	}
	if (op->flags & WIRE_OPF_CNP) {
		inspect_text_printf(b, "CNP");
		return;
	}
	if (op->flags & WIRE_OPF_UC)
		inspect_text_printf(b, "UC ");
	else if (op->flags & WIRE_OPF_UD)
		inspect_text_printf(b, "UD ");
	inspect_text_printf(b, "%s", name ? name : op->name);
}

static const char *nak_short(uint8_t syndrome)
{
	switch (syndrome & WIRE_AETH_CODE_MASK) {
	case WIRE_NAK_PSN_SEQ_ERR:	return "seq error";
	case WIRE_NAK_INVALID_REQ:	return "invalid request";
	case WIRE_NAK_REM_ACCESS_ERR:	return "remote access error";
	case WIRE_NAK_REM_OP_ERR:	return "remote op error";
	case WIRE_NAK_INVALID_RD_REQ:	return "invalid RD request";
	default:			return "reserved code";
	}
}

static void sb_time_us(struct inspect_text *b, uint32_t us)
{
	if (us >= 1000)
		inspect_text_printf(b, "%" PRIu32 ".%02" PRIu32 "ms", us / 1000, us % 1000 / 10);
	else
		inspect_text_printf(b, "%" PRIu32 "us", us);
}

static void label_setup(struct inspect_text *b, const struct inspect_ladder_row *r)
{
	if (r->perftest) {
		inspect_text_printf(b, "perftest: qpn 0x%" PRIx32 " psn %" PRIu32 " rkey 0x%" PRIx32
		       " va 0x%" PRIx64, r->dest_qp, r->psn, r->rkey, r->va);
		return;
	}
	inspect_text_printf(b, "TCP");
	if (r->tcp_flags & TCP_SYN)
		inspect_text_printf(b, (r->tcp_flags & TCP_ACK) ? " SYN-ACK" : " SYN");
	if (r->tcp_flags & TCP_FIN)
		inspect_text_printf(b, " FIN");
	if (r->tcp_flags & TCP_RST)
		inspect_text_printf(b, " RST");
	if (r->payload_len)
		inspect_text_printf(b, " %" PRIu32 "B", r->payload_len);
	inspect_text_printf(b, " (perftest %s)", (r->tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN ?
	       "connects" : "connection");
}

/* rdma_cm's service IDs as "tcp port 7174"; others in hex. */
static void sb_service_id(struct inspect_text *b, uint64_t sid)
{
	uint16_t ps = (uint16_t)(sid >> 16);

	if (sid >> 32 == 0 && (ps == WIRE_RDMA_PS_TCP || ps == WIRE_RDMA_PS_UDP))
		inspect_text_printf(b, " %s port %u", ps == WIRE_RDMA_PS_TCP ? "tcp" : "udp",
				    (unsigned)(sid & 0xffff));
	else
		inspect_text_printf(b, " sid 0x%" PRIx64, sid);
}

/* "CM REQ comm 0x.. tcp port 7174 qpn 0x.. psn N": what a CM message says of the connection. */
static void label_cm(struct inspect_text *b, const struct inspect_ladder_row *r)
{
	const char *name = wire_cm_attr_name(r->cm_attr);
	bool sidr = r->cm_attr == WIRE_CM_SIDR_REQ || r->cm_attr == WIRE_CM_SIDR_REP;

	inspect_text_printf(b, "CM %s %s 0x%" PRIx32, name, sidr ? "id" : "comm", r->cm_local_id);
	if (r->cm_remote_id)
		inspect_text_printf(b, " to 0x%" PRIx32, r->cm_remote_id);
	switch (r->cm_attr) {
	case WIRE_CM_REQ:
	case WIRE_CM_REP:
		if (r->cm_attr == WIRE_CM_REQ)
			sb_service_id(b, r->cm_sid);
		inspect_text_printf(b, " qpn 0x%" PRIx32 " psn %" PRIu32, r->cm_qpn, r->cm_psn);
		break;
	case WIRE_CM_DREQ:
		inspect_text_printf(b, " qpn 0x%" PRIx32, r->cm_qpn);
		break;
	case WIRE_CM_REJ:
		inspect_text_printf(b, " reason %u (%s)", r->cm_reason,
				    wire_cm_rej_reason_name(r->cm_reason));
		break;
	case WIRE_CM_SIDR_REQ:
		sb_service_id(b, r->cm_sid);
		break;
	case WIRE_CM_SIDR_REP:
		sb_service_id(b, r->cm_sid);
		if (r->cm_reason == WIRE_SIDR_OK)
			inspect_text_printf(b, " qpn 0x%" PRIx32, r->cm_qpn);
		else
			inspect_text_printf(b, " status %u", r->cm_reason);
		break;
	}
	if (r->marks & INSPECT_LADDER_REPEAT)
		inspect_text_printf(b, " (again)");
}

size_t inspect_ladder_label(char *buf, size_t cap, const struct inspect_ladder *l,
			 const struct inspect_ladder_row *r)
{
	struct inspect_text b = { buf, cap, 0 };
	const struct wire_opcode_info *op = &wire_opcode[r->opcode];
	bool name_qp = r->dst != INSPECT_LADDER_NO_HOST && l->hosts[r->dst].n_qpn > 1;

	if (cap)
		buf[0] = '\0';
	switch (r->kind) {
	case INSPECT_LADDER_SETUP:
		label_setup(&b, r);
		return b.len;
	case INSPECT_LADDER_OTHER:
		inspect_text_printf(&b, "%s", r->text ? r->text : "frame");
		return b.len;
	case INSPECT_LADDER_LOST:
		if (r->lost_count == 1)
			inspect_text_printf(&b, "psn %" PRIu32 " lost (not in capture)", r->psn);
		else
			inspect_text_printf(&b, "psn %" PRIu32 "-%" PRIu32 " lost (%" PRIu32
			       " packets not in capture)", r->psn,
			       psn_add(r->psn, r->lost_count - 1), r->lost_count);
		return b.len;
	case INSPECT_LADDER_ACK:
		inspect_text_printf(&b, "ACK");
		break;
	case INSPECT_LADDER_NAK:
		inspect_text_printf(&b, "NAK %s", r->sr_nak ? "selective" : nak_short(r->syndrome));
		break;
	case INSPECT_LADDER_RNR:
		inspect_text_printf(&b, "RNR NAK");
		break;
	case INSPECT_LADDER_BAD:
		if (!r->bth_read) {
			inspect_text_printf(&b, "RoCE v2 DROP %s", wire_drop_name(r->drop));
			return b.len;
		}
		sb_opname(&b, r->opcode);
		break;
	default:
		if (r->cm_attr) {
			label_cm(&b, r);
			return b.len;
		}
		sb_opname(&b, r->opcode);
		break;
	}
	if (r->kind == INSPECT_LADDER_CNP || name_qp)
		inspect_text_printf(&b, " qp 0x%" PRIx32, r->dest_qp);
	if (r->kind == INSPECT_LADDER_CNP)
		return b.len;
	inspect_text_printf(&b, " psn %" PRIu32, r->psn);
	if (r->kind == INSPECT_LADDER_BAD && !op->name) {
		inspect_text_printf(&b, " DROP %s", wire_drop_name(r->drop));
		return b.len;
	}
	if (r->ackreq)
		inspect_text_printf(&b, " ackreq");
	if (r->se)
		inspect_text_printf(&b, " se");
	if (r->hdrs & WIRE_HDR_RETH)
		inspect_text_printf(&b, " rkey 0x%" PRIx32 " len %" PRIu32, r->rkey, r->dmalen);
	if (r->hdrs & WIRE_HDR_ATOMIC_ETH) {
		inspect_text_printf(&b, " rkey 0x%" PRIx32, r->rkey);
		if ((r->opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_FETCH_ADD)
			inspect_text_printf(&b, " add %" PRIu64, r->swap_add);
		else
			inspect_text_printf(&b, " cmp 0x%" PRIx64 " swap 0x%" PRIx64, r->compare, r->swap_add);
	}
	if (r->hdrs & WIRE_HDR_IMMDT)
		inspect_text_printf(&b, " imm 0x%" PRIx32, r->imm);
	if (r->hdrs & WIRE_HDR_IETH)
		inspect_text_printf(&b, " inv rkey 0x%" PRIx32, r->inv_rkey);
	if (r->hdrs & WIRE_HDR_DETH)
		inspect_text_printf(&b, " qkey 0x%" PRIx32 " src qp 0x%" PRIx32, r->qkey, r->src_qp);
	if (r->kind == INSPECT_LADDER_RNR) {
		inspect_text_printf(&b, " wait ");
		sb_time_us(&b, wire_rnr_timer_us(r->syndrome & WIRE_AETH_CODE_MASK));
	}
	/* A selective NAK's MSN field counts the PSNs missing from its PSN on. */
	if ((r->hdrs & WIRE_HDR_AETH) && r->sr_nak)
		inspect_text_printf(&b, " missing %" PRIu32, r->msn);
	else if (r->hdrs & WIRE_HDR_AETH)
		inspect_text_printf(&b, " msn %" PRIu32, r->msn);
	if (r->hdrs & WIRE_HDR_ATOMIC_ACK_ETH)
		inspect_text_printf(&b, " orig 0x%" PRIx64, r->orig);
	if (op->name && (op->flags & WIRE_OPF_PAYLOAD) && r->kind != INSPECT_LADDER_BAD)
		inspect_text_printf(&b, " %" PRIu32 "B", r->payload_len);
	if (r->kind == INSPECT_LADDER_BAD)
		inspect_text_printf(&b, " DROP %s", wire_drop_name(r->drop));
	if (r->marks & INSPECT_LADDER_AFTER_NAK)
		inspect_text_printf(&b, " (resent: NAK)");
	else if (r->marks & INSPECT_LADDER_AFTER_RNR)
		inspect_text_printf(&b, " (resent: RNR)");
	else if (r->marks & INSPECT_LADDER_GO_BACK)
		inspect_text_printf(&b, " (resent: no NAK)");
	else if (r->marks & INSPECT_LADDER_RESEND)
		inspect_text_printf(&b, " (resent)");
	if (r->marks & INSPECT_LADDER_REPEAT)
		inspect_text_printf(&b, " (again)");
	return b.len;
}

size_t inspect_ladder_totals(char *buf, size_t cap, const struct inspect_ladder *l)
{
	static const struct {
		enum inspect_ladder_kind kind;
		const char *one, *many;
	} parts[] = {
		{ INSPECT_LADDER_REQUEST,	"request",		"requests" },
		{ INSPECT_LADDER_RESPONSE,	"response",		"responses" },
		{ INSPECT_LADDER_ACK,	"ACK",			"ACKs" },
		{ INSPECT_LADDER_NAK,	"NAK",			"NAKs" },
		{ INSPECT_LADDER_RNR,	"RNR NAK",		"RNR NAKs" },
		{ INSPECT_LADDER_CNP,	"CNP",			"CNPs" },
		{ INSPECT_LADDER_BAD,	"dropped frame",	"dropped frames" },
		{ INSPECT_LADDER_SETUP,	"perftest TCP segment",	"perftest TCP segments" },
		{ INSPECT_LADDER_OTHER,	"other frame",		"other frames" },
	};
	struct inspect_text b = { buf, cap, 0 };
	uint64_t arrows = 0;
	const char *sep = ": ";

	if (cap)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++)
		arrows += l->count[parts[i].kind];
	inspect_text_printf(&b, "%" PRIu64 " arrow%s", arrows, arrows == 1 ? "" : "s");
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		uint64_t c = l->count[parts[i].kind];

		if (!c)
			continue;
		inspect_text_printf(&b, "%s%" PRIu64 " %s", sep, c, c == 1 ? parts[i].one : parts[i].many);
		if (parts[i].kind == INSPECT_LADDER_REQUEST && l->cm_msgs)
			inspect_text_printf(&b, " (%" PRIu64 " CM message%s)", l->cm_msgs,
					    l->cm_msgs == 1 ? "" : "s");
		if (parts[i].kind == INSPECT_LADDER_REQUEST && l->resends)
			inspect_text_printf(&b, " (%" PRIu64 " resent)", l->resends);
		sep = ", ";
	}
	if (l->lost_psns)
		inspect_text_printf(&b, "; %" PRIu64 " PSN%s lost before the capture point", l->lost_psns,
		       l->lost_psns == 1 ? "" : "s");
	if (l->not_drawn)
		inspect_text_printf(&b, "; %" PRIu64 " other frame%s not drawn (TCP ACKs, ARP...)",
		       l->not_drawn, l->not_drawn == 1 ? "" : "s");
	return b.len;
}
