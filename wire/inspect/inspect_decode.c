// SPDX-License-Identifier: MIT
/* The decoder: frames as tcpdump-like lines, field-by-field explanations, or JSON lines. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "uroce/inspect_decode.h"
#include "uroce/wire_mad.h"
#include "inspect_text.h"

#define ETH_HLEN	14
#define VLAN_HLEN	4
#define ARP_LEN		28
#define IPV4_HLEN	20
#define IPV6_HLEN	40
#define UDP_HLEN	8
#define TCP_HLEN	20
#define BTH_LEN		12
#define IPPROTO_TCP4	6
#define PERFTEST_PORT	18515
#define PERFTEST_MSG_LEN 108	/* 107 characters and their NUL */
#define ETHERTYPE_LLDP	0x88cc

/* ---- Text ---- */

static void sb_mac(struct inspect_text *b, const uint8_t *m)
{
	inspect_text_printf(b, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

static void sb_ipv4(struct inspect_text *b, const uint8_t *a)
{
	inspect_text_printf(b, "%u.%u.%u.%u", a[0], a[1], a[2], a[3]);
}

size_t inspect_format_gid(char *buf, size_t cap, const uint8_t gid[16])
{
	struct inspect_text b = { buf, cap, 0 };
	char text[INET6_ADDRSTRLEN];

	if (cap)
		buf[0] = '\0';
	if (wire_gid_is_v4mapped(gid))
		sb_ipv4(&b, gid + 12);
	else if (inet_ntop(AF_INET6, gid, text, sizeof(text)))
		inspect_text_printf(&b, "%s", text);
	return b.len;
}

static void sb_gid(struct inspect_text *b, const uint8_t gid[16])
{
	char text[INET6_ADDRSTRLEN];

	inspect_format_gid(text, sizeof(text), gid);
	inspect_text_printf(b, "%s", text);
}

/* ---- Classification ---- */

static void decode_arp(struct wire_frame *fr)
{
	const uint8_t *a = fr->data + fr->l3_off;

	if (fr->len - fr->l3_off < ARP_LEN || wire_load16(a) != 1 || wire_load16(a + 2) != WIRE_ETHERTYPE_IPV4 ||
	    a[4] != 6 || a[5] != 4)
		return;
	fr->arp.valid = true;
	fr->arp.op = wire_load16(a + 6);
	memcpy(fr->arp.sha, a + 8, 6);
	memcpy(fr->arp.spa, a + 14, 4);
	memcpy(fr->arp.tha, a + 18, 6);
	memcpy(fr->arp.tpa, a + 24, 4);
}

/* Addresses of an IP header wire_classify() found whole, and where its L4 is. */
static void decode_ip(struct wire_frame *fr, const struct wire_frame_offsets *o)
{
	const uint8_t *ip = fr->data + fr->l3_off;

	fr->ip_version = o->ip_version;
	if (o->ip_version == 4) {
		memcpy(fr->src_ip, wire_v4mapped_prefix, 12);
		memcpy(fr->src_ip + 12, ip + 12, 4);
		memcpy(fr->dst_ip, wire_v4mapped_prefix, 12);
		memcpy(fr->dst_ip + 12, ip + 16, 4);
	} else {
		memcpy(fr->src_ip, ip + 8, 16);
		memcpy(fr->dst_ip, ip + 24, 16);
	}
	fr->l4.proto = o->l4_proto;
	fr->l4.off = o->l4_off;
	fr->ip_valid = true;
	fr->ip_end = o->ip_end;
}

static void decode_l4(struct wire_frame *fr)
{
	struct wire_frame_l4 *l4 = &fr->l4;
	const uint8_t *h = fr->data + l4->off;
	uint32_t room = l4->off < fr->ip_end ? fr->ip_end - l4->off : 0;

	switch (l4->proto) {
	case WIRE_IPPROTO_UDP:
		if (room < UDP_HLEN)
			return;
		l4->ports_valid = true;
		l4->sport = wire_load16(h);
		l4->dport = wire_load16(h + 2);
		l4->payload_len = room - UDP_HLEN;
		break;
	case IPPROTO_TCP4: {
		uint32_t doff;

		if (room < TCP_HLEN)
			return;
		l4->ports_valid = true;
		l4->sport = wire_load16(h);
		l4->dport = wire_load16(h + 2);
		l4->tcp_seq = wire_load32(h + 4);
		l4->tcp_ack = wire_load32(h + 8);
		l4->tcp_flags = h[13];
		doff = (h[12] >> 4) * 4u;
		l4->payload_len = doff >= TCP_HLEN && doff <= room ? room - doff : 0;
		break;
	}
	case WIRE_IPPROTO_ICMP:
	case WIRE_IPPROTO_ICMPV6:
		if (room >= 2) {
			l4->icmp_type = h[0];
			l4->icmp_code = h[1];
		}
		break;
	default:
		break;
	}
}

/* perftest's "LID:OUT:QPN:PSN:RKEY:VADDR:GID...:SRQN:" message (perftest 4.x, with GID). */
static void decode_perftest(struct wire_frame *fr)
{
	struct wire_frame_perftest *pt = &fr->perftest;
	unsigned g[16];
	char text[128];
	uint32_t doff, off, n;
	unsigned long long va;
	int used = -1;

	if (fr->l4.proto != IPPROTO_TCP4 || !fr->l4.ports_valid ||
	    fr->l4.payload_len != PERFTEST_MSG_LEN)
		return;
	doff = (fr->data[fr->l4.off + 12] >> 4) * 4u;
	off = fr->l4.off + doff;
	n = PERFTEST_MSG_LEN;
	if (off + n > fr->len || fr->data[off + n - 1] != '\0')
		return;
	memcpy(text, fr->data + off, n);
	text[n] = '\0';
	if (sscanf(text, "%4x:%4x:%6x:%6x:%8x:%16llx:"
		   "%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%2x:%8x:%n",
		   &pt->lid, &pt->out_reads, &pt->qpn, &pt->psn, &pt->rkey, &va,
		   &g[0], &g[1], &g[2], &g[3], &g[4], &g[5], &g[6], &g[7], &g[8], &g[9],
		   &g[10], &g[11], &g[12], &g[13], &g[14], &g[15], &pt->srqn, &used) != 23 ||
	    used != PERFTEST_MSG_LEN - 1)
		return;
	pt->va = va;
	for (int i = 0; i < 16; i++)
		pt->gid[i] = (uint8_t)g[i];
	pt->valid = true;
}

/*
 * End of a RoCE packet wire_parse() followed up to the BTH: by the UDP
 * length (v2), which it checked against the IP length and the frame, or by
 * the GRH's PayLen (v1), which it checked against the frame.
 */
static uint32_t roce_end(const struct wire_frame *fr)
{
	const struct wire_pkt *p = &fr->pkt;

	if (p->roce_v1)
		return p->bth_off + wire_load16(fr->data + p->l3_off + 4);
	return p->l4_off + wire_load16(fr->data + p->l4_off + 4);
}

/* The ICRC of a frame wire_parse() followed up to the BTH with room for an ICRC. */
static void check_icrc(struct wire_frame *fr)
{
	const struct wire_pkt *p = &fr->pkt;

	if (!p->bth_off || fr->drop == WIRE_DROP_TRUNCATED_BTH)
		return;
	fr->icrc_calc = wire_icrc(fr->data, p->l3_off, roce_end(fr) - WIRE_ICRC_LEN);
	fr->icrc_checked = true;
	if (fr->drop == WIRE_DROP_NONE && fr->icrc_calc != p->icrc)
		fr->drop = WIRE_DROP_BAD_ICRC;
}

void inspect_decode_frame(struct wire_frame *fr, const void *data, uint32_t len,
		       uint32_t orig_len)
{
	const uint8_t *f = data;
	struct wire_frame_offsets o;
	enum wire_frame_kind kind;

	memset(fr, 0, sizeof(*fr));
	fr->data = f;
	fr->len = len;
	fr->orig_len = orig_len > len ? orig_len : len;
	fr->drop = wire_parse(f, len, WIRE_PARSE_SKIP_ICRC, &fr->pkt);
	kind = wire_classify(f, len, &o);
	fr->ethertype = o.ethertype;
	fr->has_vlan = o.has_vlan;
	fr->vlan_tci = o.vlan_tci;
	fr->l3_off = o.l3_off;
	/* The printers tell ND and ICMP errors apart by their L4 fields, as any other IP. */
	fr->kind = kind == WIRE_FRAME_ND || kind == WIRE_FRAME_ICMP_ROCE ? WIRE_FRAME_IP : kind;
	switch (fr->kind) {
	case WIRE_FRAME_ARP:
		decode_arp(fr);
		return;
	case WIRE_FRAME_OTHER:
	case WIRE_FRAME_MALFORMED:
		return;
	default:
		break;
	}
	decode_ip(fr, &o);
	decode_l4(fr);
	if (fr->kind == WIRE_FRAME_ROCE)
		check_icrc(fr);
	else
		decode_perftest(fr);
}

/* ---- Shared wording ---- */

static const char *ethertype_name(uint16_t type)
{
	switch (type) {
	case WIRE_ETHERTYPE_IPV4:	return "IPv4";
	case WIRE_ETHERTYPE_IPV6:	return "IPv6";
	case WIRE_ETHERTYPE_ARP:	return "ARP";
	case WIRE_ETHERTYPE_VLAN:	return "802.1Q VLAN tag";
	case WIRE_ETHERTYPE_ROCEV1:		return "RoCE v1 (InfiniBand GRH over Ethernet)";
	case ETHERTYPE_LLDP:		return "LLDP";
	default:			return type < 0x0600 ? "802.3 length" : "unknown";
	}
}

static const char *ip_proto_name(uint8_t proto)
{
	switch (proto) {
	case WIRE_IPPROTO_ICMP:	return "ICMP";
	case IPPROTO_TCP4:	return "TCP";
	case WIRE_IPPROTO_UDP:	return "UDP";
	case WIRE_IPPROTO_ICMPV6:	return "ICMPv6";
	default:		return NULL;
	}
}

static const char *ecn_name(uint8_t tclass)
{
	static const char *const names[4] = {
		"Not-ECT", "ECT(1)", "ECT(0)", "CE (congestion experienced)",
	};

	return names[tclass & WIRE_ECN_MASK];
}

/* True when the extension headers of the opcode are in the frame. */
static bool ext_present(const struct wire_frame *fr)
{
	return fr->pkt.op && fr->drop != WIRE_DROP_TRUNCATED_EXT;
}

static const uint8_t *ext(const struct wire_frame *fr, enum wire_ext e)
{
	return ext_present(fr) ? wire_pkt_ext(&fr->pkt, e) : NULL;
}

static void sb_aeth(struct inspect_text *b, uint32_t syn_msn)
{
	uint8_t syn = (uint8_t)(syn_msn >> 24);
	unsigned code = syn & WIRE_AETH_CODE_MASK;

	inspect_text_printf(b, " %s", wire_aeth_name(syn));
	if ((syn & (WIRE_AETH_TYPE_MASK | 0x80)) == WIRE_AETH_ACK) {
		int credits = wire_aeth_credits(code);

		if (credits < 0)
			inspect_text_printf(b, " credits n/a");
		else
			inspect_text_printf(b, " credits %d", credits);
	} else if ((syn & (WIRE_AETH_TYPE_MASK | 0x80)) == WIRE_AETH_RNR_NAK) {
		inspect_text_printf(b, " timer %" PRIu32 "us", wire_rnr_timer_us(code));
	}
	inspect_text_printf(b, " msn %" PRIu32, syn_msn & WIRE_24BIT_MASK);
}

/* A UD SEND to QP1 with the GSI's Q_Key and the CM's class: a CM MAD (IBA 13.5.1, 13.4.4). */
static bool cm_mad(const struct wire_frame *fr)
{
	const struct wire_pkt *p = &fr->pkt;
	const uint8_t *deth = ext(fr, WIRE_EXT_DETH);
	uint32_t data_off;

	if (!deth || p->dest_qp != WIRE_GSI_QPN || wire_load32(deth) != WIRE_GSI_QKEY)
		return false;
	data_off = p->bth_off + p->op->hdr_len;
	return p->payload_len >= WIRE_MAD_HDR_LEN && data_off + WIRE_MAD_HDR_LEN <= fr->len &&
	       fr->data[data_off + 1] == WIRE_MGMT_CLASS_CM;
}

/* The FETH's placement type and selectivity level (IBA 1.5) by name. */
static const char *flush_plt_name(uint32_t feth)
{
	switch (feth & WIRE_FETH_PLT_MASK) {
	case WIRE_FLUSH_GLOBAL:					return "global";
	case WIRE_FLUSH_PERSISTENT:				return "persistent";
	case WIRE_FLUSH_GLOBAL | WIRE_FLUSH_PERSISTENT:		return "global+persistent";
	default:						return "reserved";
	}
}

static const char *flush_sel_name(uint32_t feth)
{
	switch ((feth & WIRE_FETH_SEL_MASK) >> WIRE_FETH_SEL_SHIFT) {
	case WIRE_FLUSH_RANGE:	return "range";
	case WIRE_FLUSH_MR:	return "region";
	default:		return "reserved";
	}
}

static void roce_summary(struct inspect_text *b, const struct wire_frame *fr)
{
	const struct wire_pkt *p = &fr->pkt;
	const uint8_t *h;

	if (p->roce_v1)
		inspect_text_printf(b, "RoCEv1 ");
	if (!p->op) {
		if (p->bth_off && fr->drop != WIRE_DROP_TRUNCATED_BTH)
			inspect_text_printf(b, "opcode 0x%02x qp 0x%06" PRIx32 " psn %" PRIu32 " ",
				  p->opcode, p->dest_qp, p->psn);
		else
			inspect_text_printf(b, "RoCEv2 ");
		inspect_text_printf(b, "DROP %s (%s)", wire_drop_name(fr->drop), wire_drop_desc(fr->drop));
		return;
	}
	inspect_text_printf(b, "%s qp 0x%06" PRIx32 " psn %" PRIu32, p->op->name, p->dest_qp, p->psn);
	if (p->ackreq)
		inspect_text_printf(b, " ackreq");
	if (p->sr_cap)
		inspect_text_printf(b, " sr");
	if (p->sr_nak)
		inspect_text_printf(b, " sr-nak");
	if (p->se)
		inspect_text_printf(b, " se");
	if ((h = ext(fr, WIRE_EXT_XRCETH)))
		inspect_text_printf(b, " xrc-srq 0x%06" PRIx32, wire_load24(h + 1));
	if ((h = ext(fr, WIRE_EXT_RETH)))
		inspect_text_printf(b, " va 0x%" PRIx64 " rkey 0x%08" PRIx32 " dmalen %" PRIu32,
			  wire_load64(h), wire_load32(h + 8), wire_load32(h + 12));
	if ((h = ext(fr, WIRE_EXT_AETH)))
		sb_aeth(b, wire_load32(h));
	if ((h = ext(fr, WIRE_EXT_ATOMIC_ETH))) {
		inspect_text_printf(b, " va 0x%" PRIx64 " rkey 0x%08" PRIx32, wire_load64(h), wire_load32(h + 8));
		if ((p->opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_FETCH_ADD)
			inspect_text_printf(b, " add %" PRIu64, wire_load64(h + 12));
		else
			inspect_text_printf(b, " compare 0x%" PRIx64 " swap 0x%" PRIx64, wire_load64(h + 20), wire_load64(h + 12));
	}
	if ((h = ext(fr, WIRE_EXT_ATOMIC_ACK_ETH)))
		inspect_text_printf(b, " orig 0x%" PRIx64, wire_load64(h));
	if ((h = ext(fr, WIRE_EXT_IMMDT)))
		inspect_text_printf(b, " imm 0x%08" PRIx32, wire_load32(h));
	if ((h = ext(fr, WIRE_EXT_IETH)))
		inspect_text_printf(b, " inv-rkey 0x%08" PRIx32, wire_load32(h));
	if ((h = ext(fr, WIRE_EXT_DETH)))
		inspect_text_printf(b, " qkey 0x%08" PRIx32 " src-qp 0x%06" PRIx32, wire_load32(h),
			  wire_load32(h + 4) & WIRE_24BIT_MASK);
	if ((h = ext(fr, WIRE_EXT_FETH)))
		inspect_text_printf(b, " placement %s selectivity %s", flush_plt_name(wire_load32(h)),
				    flush_sel_name(wire_load32(h)));
	if (p->op->flags & WIRE_OPF_CNP && (fr->data[p->bth_off + 4] & 0x40))
		inspect_text_printf(b, " becn");
	if (ext_present(fr) && fr->drop != WIRE_DROP_BAD_PAD &&
	    (p->payload_len || (p->op->flags & WIRE_OPF_PAYLOAD)))
		inspect_text_printf(b, " payload %" PRIu32, p->payload_len);
	if (cm_mad(fr)) {
		const uint8_t *m = fr->data + p->bth_off + p->op->hdr_len;
		const char *name = wire_cm_attr_name(wire_load16(m + 16));

		inspect_text_printf(b, " CM %s tid 0x%" PRIx64, name ? name : "(unknown attribute)",
				    wire_load64(m + 8));
	}
	if (fr->drop == WIRE_DROP_NONE)
		inspect_text_printf(b, " icrc ok");
	else if (fr->drop == WIRE_DROP_BAD_ICRC)
		inspect_text_printf(b, " DROP BAD_ICRC (carried 0x%08" PRIx32 ", computed 0x%08" PRIx32 ")",
			  p->icrc, fr->icrc_calc);
	else
		inspect_text_printf(b, " DROP %s (%s)", wire_drop_name(fr->drop), wire_drop_desc(fr->drop));
}

static void tcp_flags(struct inspect_text *b, uint8_t fl)
{
	static const char letters[] = "FSRP.UEW";	/* tcpdump's: FIN SYN RST PSH ACK URG ECE CWR */

	inspect_text_printf(b, "[");
	for (int i = 0; i < 8; i++)
		if (fl & (1u << i))
			inspect_text_printf(b, "%c", letters[i]);
	inspect_text_printf(b, "]");
}

static void ip_summary(struct inspect_text *b, const struct wire_frame *fr)
{
	const struct wire_frame_l4 *l4 = &fr->l4;
	const char *name = ip_proto_name(l4->proto);

	if (l4->proto == 0xff) {
		inspect_text_printf(b, "IPv4 fragment");
		return;
	}
	if (name)
		inspect_text_printf(b, "%s", name);
	else
		inspect_text_printf(b, "IP protocol %u", l4->proto);
	if (l4->proto == IPPROTO_TCP4 && l4->ports_valid) {
		inspect_text_printf(b, " ");
		tcp_flags(b, l4->tcp_flags);
		inspect_text_printf(b, " seq %" PRIu32 " ack %" PRIu32 " len %" PRIu32, l4->tcp_seq,
			  l4->tcp_ack, l4->payload_len);
	} else if (l4->proto == WIRE_IPPROTO_UDP && l4->ports_valid) {
		inspect_text_printf(b, " len %" PRIu32, l4->payload_len);
	} else if (l4->proto == WIRE_IPPROTO_ICMP || l4->proto == WIRE_IPPROTO_ICMPV6) {
		inspect_text_printf(b, " type %u code %u", l4->icmp_type, l4->icmp_code);
	} else if (name) {
		inspect_text_printf(b, " (truncated)");
	}
	if (fr->perftest.valid)
		inspect_text_printf(b, " perftest exchange: qpn 0x%06" PRIx32 " psn %" PRIu32 " rkey 0x%08"
			  PRIx32 " va 0x%" PRIx64, fr->perftest.qpn, fr->perftest.psn,
			  fr->perftest.rkey, fr->perftest.va);
	else if (l4->ports_valid && (l4->sport == PERFTEST_PORT || l4->dport == PERFTEST_PORT))
		inspect_text_printf(b, " (perftest connection)");
	/* wire_parse() drops every non-RoCE frame; say so when the reason is not just that. */
	if (fr->drop != WIRE_DROP_NOT_UDP && fr->drop != WIRE_DROP_NOT_ROCE_PORT)
		inspect_text_printf(b, " [%s]", wire_drop_desc(fr->drop));
}

static void arp_summary(struct inspect_text *b, const struct wire_frame *fr)
{
	const struct wire_frame_arp *a = &fr->arp;

	if (!a->valid) {
		inspect_text_printf(b, "ARP (not Ethernet/IPv4 or truncated)");
		return;
	}
	if (a->op == 1) {
		inspect_text_printf(b, "ARP who-has ");
		sb_ipv4(b, a->tpa);
		inspect_text_printf(b, " tell ");
		sb_ipv4(b, a->spa);
	} else if (a->op == 2) {
		inspect_text_printf(b, "ARP reply ");
		sb_ipv4(b, a->spa);
		inspect_text_printf(b, " is-at ");
		sb_mac(b, a->sha);
	} else {
		inspect_text_printf(b, "ARP operation %u", a->op);
	}
}

size_t inspect_decode_summary(char *buf, size_t cap, const struct wire_frame *fr)
{
	struct inspect_text b = { buf, cap, 0 };

	if (cap)
		buf[0] = '\0';
	switch (fr->kind) {
	case WIRE_FRAME_ROCE:
		roce_summary(&b, fr);
		break;
	case WIRE_FRAME_ARP:
		arp_summary(&b, fr);
		break;
	case WIRE_FRAME_IP:
	case WIRE_FRAME_ND:
	case WIRE_FRAME_ICMP_ROCE:
		ip_summary(&b, fr);
		break;
	case WIRE_FRAME_OTHER:
		inspect_text_printf(&b, "EtherType 0x%04x %s (not IP)", fr->ethertype,
			  ethertype_name(fr->ethertype));
		break;
	case WIRE_FRAME_MALFORMED:
		inspect_text_printf(&b, "malformed: DROP %s (%s)", wire_drop_name(fr->drop),
			  wire_drop_desc(fr->drop));
		break;
	}
	return b.len;
}

size_t inspect_decode_endpoint(char *buf, size_t cap, const struct wire_frame *fr, bool source)
{
	struct inspect_text b = { buf, cap, 0 };

	if (cap)
		buf[0] = '\0';
	if (fr->ip_valid) {
		sb_gid(&b, source ? fr->src_ip : fr->dst_ip);
		if (fr->l4.ports_valid)
			inspect_text_printf(&b, ".%u", source ? fr->l4.sport : fr->l4.dport);
	} else if (fr->len >= ETH_HLEN) {
		sb_mac(&b, fr->data + (source ? 6 : 0));
	} else {
		inspect_text_printf(&b, "?");
	}
	return b.len;
}

static void sb_ts(struct inspect_text *b, const struct inspect_decode_ts *ts)
{
	inspect_text_printf(b, "%" PRId64 ".%06" PRIu32, ts->sec, ts->nsec / 1000);
}

void inspect_decode_line(FILE *out, const struct inspect_decode_ts *ts, const struct wire_frame *fr)
{
	char line[640], sum[400], src[64], dst[64];
	struct inspect_text b = { line, sizeof(line), 0 };

	if (ts) {
		sb_ts(&b, ts);
		inspect_text_printf(&b, " ");
	}
	inspect_decode_endpoint(src, sizeof(src), fr, true);
	inspect_decode_endpoint(dst, sizeof(dst), fr, false);
	inspect_decode_summary(sum, sizeof(sum), fr);
	inspect_text_printf(&b, "%s > %s: %s", src, dst, sum);
	inspect_text_printf(&b, ", length %" PRIu32, fr->orig_len);
	if (fr->len < fr->orig_len)
		inspect_text_printf(&b, " (captured %" PRIu32 ")", fr->len);
	fprintf(out, "%s\n", line);
}

/* ---- Verbose: one line per field ---- */

struct vx {
	FILE			*out;
	const struct wire_frame	*fr;
	const uint8_t		*f;
	uint32_t		len;
};

#define RAW_PER_LINE 8

static void raw_bytes(char *dst, size_t cap, const uint8_t *p, uint32_t n)
{
	struct inspect_text b = { dst, cap, 0 };

	dst[0] = '\0';
	for (uint32_t i = 0; i < n; i++)
		inspect_text_printf(&b, i ? " %02x" : "%02x", p[i]);
}

/*
 * One field: offset, up to 8 raw bytes per line, name, value and what it is for.
 * Fields past the end of the captured frame are reported, never read.
 */
__attribute__((format(printf, 6, 7)))
static void vfield(struct vx *v, uint32_t off, uint32_t n, const char *name,
		   const char *meaning, const char *fmt, ...)
{
	char value[160], raw[3 * RAW_PER_LINE];
	uint32_t first = n < RAW_PER_LINE ? n : RAW_PER_LINE;
	va_list ap;

	if (off > v->len || n > v->len - off) {
		fprintf(v->out, "  %04" PRIx32 "  %-23s  %-14s (not captured)\n", off, "", name);
		return;
	}
	va_start(ap, fmt);
	vsnprintf(value, sizeof(value), fmt, ap);
	va_end(ap);
	raw_bytes(raw, sizeof(raw), v->f + off, first);
	fprintf(v->out, "  %04" PRIx32 "  %-23s  %-14s %-26s %s\n", off, raw, name, value, meaning);
	for (uint32_t i = first; i < n; i += RAW_PER_LINE) {
		uint32_t k = n - i < RAW_PER_LINE ? n - i : RAW_PER_LINE;

		raw_bytes(raw, sizeof(raw), v->f + off + i, k);
		fprintf(v->out, "  %04" PRIx32 "  %s\n", off + i, raw);
	}
}

/*
 * A field of a few bits inside a 1- or 2-byte word, drawn the way Wireshark
 * does ("01.. ...." = 1) so the reader sees where the bits sit.
 */
static void vbits(struct vx *v, uint32_t off, uint32_t n, uint32_t mask, const char *name,
		  const char *meaning, const char *suffix)
{
	char pat[24];
	struct inspect_text b = { pat, sizeof(pat), 0 };
	uint32_t word, bits = 8 * n;

	if (off > v->len || n > v->len - off) {
		vfield(v, off, n, name, meaning, "%s", "");
		return;
	}
	word = n == 1 ? v->f[off] : wire_load16(v->f + off);
	for (uint32_t i = bits; i-- > 0;) {
		if (i != bits - 1 && (i + 1) % 4 == 0)
			inspect_text_printf(&b, " ");
		inspect_text_printf(&b, "%c", !(mask >> i & 1) ? '.' : (word >> i & 1) ? '1' : '0');
	}
	vfield(v, off, n, name, meaning, "%s = %u%s%s", pat,
	       (word & mask) >> __builtin_ctz(mask), suffix ? " " : "", suffix ? suffix : "");
}

static void vlayer(struct vx *v, const char *name, uint32_t off, uint32_t n, const char *ref)
{
	fprintf(v->out, "%s, %" PRIu32 " bytes at 0x%04" PRIx32 " (%s)\n", name, n, off, ref);
}

static bool vhave(struct vx *v, uint32_t off, uint32_t n, const char *what)
{
	if (off <= v->len && n <= v->len - off)
		return true;
	fprintf(v->out, "%s: needs %" PRIu32 " bytes at 0x%04" PRIx32 ", the frame ends at 0x%04"
		PRIx32 "\n", what, n, off, v->len);
	return false;
}

/* Up to 16 bytes of data as hex, for payload lines. */
static const char *hex_preview(char *buf, size_t cap, const uint8_t *p, uint32_t n)
{
	struct inspect_text b = { buf, cap, 0 };
	uint32_t k = n < 16 ? n : 16;
	bool text = true;

	buf[0] = '\0';
	for (uint32_t i = 0; i < k; i++) {
		inspect_text_printf(&b, "%02x", p[i]);
		text &= p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"';
	}
	if (k < n)
		inspect_text_printf(&b, "...");
	if (text)
		inspect_text_printf(&b, " \"%.*s\"", (int)k, (const char *)p);
	return buf;
}

static void v_hexdump(struct vx *v, uint32_t off, uint32_t end, const char *what)
{
	if (off >= end)
		return;
	fprintf(v->out, "%s, %" PRIu32 " bytes at 0x%04" PRIx32 "\n", what, end - off, off);
	for (uint32_t i = off; i < end; i += 16) {
		char raw[3 * 16];
		uint32_t k = end - i < 16 ? end - i : 16;

		raw_bytes(raw, sizeof(raw), v->f + i, k);
		fprintf(v->out, "  %04" PRIx32 "  %s\n", i, raw);
	}
}

static void v_eth(struct vx *v)
{
	const uint8_t *f = v->f;
	const struct wire_frame *fr = v->fr;
	char m[3][20];

	if (!vhave(v, 0, ETH_HLEN, "Ethernet"))
		return;
	for (int i = 0; i < 2; i++) {
		struct inspect_text b = { m[i], sizeof(m[i]), 0 };

		sb_mac(&b, f + 6 * i);
	}
	vlayer(v, "Ethernet II", 0, fr->has_vlan ? ETH_HLEN + VLAN_HLEN : ETH_HLEN, "IEEE 802.3");
	vfield(v, 0, 6, "destination", "the next hop's NIC on this link (from ARP / neighbour discovery)",
	       "%s", m[0]);
	vfield(v, 6, 6, "source", "the sending NIC", "%s", m[1]);
	vfield(v, 12, 2, "EtherType", fr->has_vlan ? "an 802.1Q tag follows" : "what the frame carries",
	       "0x%04x %s", wire_load16(f + 12), ethertype_name(wire_load16(f + 12)));
	if (fr->has_vlan) {
		vbits(v, 14, 2, 0xe000, "PCP", "priority code point: the class PFC keeps lossless "
		      "for RoCE", NULL);
		vbits(v, 14, 2, 0x1000, "DEI", "drop eligible indicator", NULL);
		vbits(v, 14, 2, 0x0fff, "VLAN ID", "the virtual LAN the frame belongs to", NULL);
		vfield(v, 16, 2, "EtherType", "what the tagged frame carries", "0x%04x %s",
		       fr->ethertype, ethertype_name(fr->ethertype));
	}
}

static void v_ipv4(struct vx *v, bool roce)
{
	uint32_t o = v->fr->l3_off, ihl;
	const uint8_t *ip = v->f + o;
	uint16_t frag, csum;
	bool csum_ok;
	char a[2][16], sfx[16];

	if (!vhave(v, o, IPV4_HLEN, "IPv4"))
		return;
	ihl = (ip[0] & 0xfu) * 4;
	frag = wire_load16(ip + 6);
	csum = wire_load16(ip + 10);
	csum_ok = ihl >= IPV4_HLEN && ihl <= v->len - o && wire_ipv4_csum(ip, ihl) == 0;
	for (int i = 0; i < 2; i++) {
		struct inspect_text b = { a[i], sizeof(a[i]), 0 };

		sb_ipv4(&b, ip + 12 + 4 * i);
	}
	vlayer(v, "IPv4", o, ihl, "RFC 791; RoCE v2 runs over it, IBA Annex A17");
	snprintf(sfx, sizeof(sfx), "(%" PRIu32 " bytes)", ihl);
	vbits(v, o, 1, 0xf0, "version", "IP version 4", NULL);
	vbits(v, o, 1, 0x0f, "IHL", "header length in 32-bit words (5: no options)", sfx);
	vbits(v, o + 1, 1, 0xfc, "DSCP", roce ? "traffic class switches queue by (RoCE often "
	      "uses 26); masked in the ICRC" : "traffic class switches queue by", NULL);
	vbits(v, o + 1, 1, 0x03, "ECN", roce ? "congestion marking; CE makes the receiver send a "
	      "CNP (DCQCN); masked in the ICRC" : "explicit congestion notification",
	      ecn_name(ip[1]));
	vfield(v, o + 2, 2, "total length", "bytes of the IP packet: this header and all it carries",
	       "%u", wire_load16(ip + 2));
	vfield(v, o + 4, 2, "identification", "numbers fragments of one packet; RoCE never fragments",
	       "0x%04x", wire_load16(ip + 4));
	vbits(v, o + 6, 2, WIRE_IPV4_DF, "DF", frag & WIRE_IPV4_DF ? "don't fragment: RoCE sizes "
	      "packets to the path MTU itself" : "routers may fragment it", NULL);
	vbits(v, o + 6, 2, WIRE_IPV4_MF, "MF", "more fragments follow", NULL);
	vbits(v, o + 6, 2, WIRE_IPV4_OFFMASK, "fragment off", "position of this fragment in "
	      "8-byte units", NULL);
	vfield(v, o + 8, 1, "TTL", roce ? "hops left; every router lowers it, so the ICRC counts "
	       "it as 0xff" : "hops left before a router discards the packet", "%u", ip[8]);
	vfield(v, o + 9, 1, "protocol", "what the IP packet carries", "%u %s", ip[9],
	       ip_proto_name(ip[9]) ? ip_proto_name(ip[9]) : "");
	vfield(v, o + 10, 2, "checksum", roce ? "one's complement sum of this header; masked in "
	       "the ICRC because TTL changes it" : "one's complement sum of this header",
	       "0x%04x %s", csum, csum_ok ? "ok" : "BAD");
	vfield(v, o + 12, 4, "source", roce ? "sender; its RoCE GID is ::ffff:this address" :
	       "sender", "%s", a[0]);
	vfield(v, o + 16, 4, "destination", roce ? "receiver; its RoCE GID is ::ffff:this address" :
	       "receiver", "%s", a[1]);
	if (ihl > IPV4_HLEN && ihl <= v->len - o)
		vfield(v, o + IPV4_HLEN, ihl - IPV4_HLEN, "options", "IP options (unusual)", "%" PRIu32
		       " bytes", ihl - IPV4_HLEN);
}

static void v_ipv6(struct vx *v, bool roce)
{
	uint32_t o = v->fr->l3_off, vtc;
	const uint8_t *ip = v->f + o;
	char a[2][INET6_ADDRSTRLEN];

	if (!vhave(v, o, IPV6_HLEN, "IPv6"))
		return;
	vtc = wire_load32(ip);
	for (int i = 0; i < 2; i++)
		inet_ntop(AF_INET6, ip + 8 + 16 * i, a[i], sizeof(a[i]));
	vlayer(v, "IPv6", o, IPV6_HLEN, "RFC 8200; RoCE v2 runs over it, IBA Annex A17");
	vfield(v, o, 1, "version", "IP version 6", "%" PRIu32, vtc >> 28);
	vfield(v, o, 2, "DSCP", roce ? "traffic class switches queue by; masked in the ICRC" :
	       "traffic class switches queue by", "%" PRIu32, (vtc >> 22) & 0x3f);
	vfield(v, o + 1, 1, "ECN", roce ? "congestion marking; CE makes the receiver send a CNP "
	       "(DCQCN); masked in the ICRC" : "explicit congestion notification", "%" PRIu32 " %s",
	       (vtc >> 20) & 3, ecn_name((uint8_t)(vtc >> 20)));
	vfield(v, o + 1, 3, "flow label", roce ? "keeps one flow on one path (ECMP); masked in the "
	       "ICRC" : "keeps one flow on one path (ECMP)", "0x%05" PRIx32, vtc & 0xfffff);
	vfield(v, o + 4, 2, "payload len", "bytes after this 40-byte header", "%u", wire_load16(ip + 4));
	vfield(v, o + 6, 1, "next header", "what follows this header", "%u %s", ip[6],
	       ip_proto_name(ip[6]) ? ip_proto_name(ip[6]) : "");
	vfield(v, o + 7, 1, "hop limit", roce ? "hops left; routers lower it, so the ICRC counts it "
	       "as 0xff" : "hops left before a router discards the packet", "%u", ip[7]);
	vfield(v, o + 8, 16, "source", roce ? "sender; this address is its RoCE GID" : "sender",
	       "%s", a[0]);
	vfield(v, o + 24, 16, "destination", roce ? "receiver; this address is its RoCE GID" :
	       "receiver", "%s", a[1]);
}

static void v_ip(struct vx *v, bool roce)
{
	if (v->fr->ethertype == WIRE_ETHERTYPE_IPV4)
		v_ipv4(v, roce);
	else
		v_ipv6(v, roce);
	if (v->fr->ip_version == 6 && v->fr->l4.off > v->fr->l3_off + IPV6_HLEN)
		v_hexdump(v, v->fr->l3_off + IPV6_HLEN,
			  v->fr->l4.off < v->len ? v->fr->l4.off : v->len, "IPv6 extension headers");
}

static void v_udp(struct vx *v, bool roce)
{
	uint32_t o = v->fr->l4.off;
	const uint8_t *u = v->f + o;

	if (!vhave(v, o, UDP_HLEN, "UDP"))
		return;
	vlayer(v, "UDP", o, UDP_HLEN, "RFC 768");
	vfield(v, o, 2, "source port", roce ? "picked per QP by a hash so ECMP spreads flows; not "
	       "checked by the receiver" : "sender's port", "%u", wire_load16(u));
	vfield(v, o + 2, 2, "dest port", roce ? (wire_load16(u + 2) == WIRE_ROCEV2_PORT ?
	       "4791: RoCE v2 (IANA), a BTH follows" : "not 4791") : "receiver's port", "%u",
	       wire_load16(u + 2));
	vfield(v, o + 4, 2, "length", roce ? "UDP header + BTH .. ICRC" : "UDP header + data",
	       "%u", wire_load16(u + 4));
	vfield(v, o + 6, 2, "checksum", roce ? (wire_load16(u + 6) ? "set (the ICRC already protects the "
	       "packet); masked in the ICRC" : "0 = not used: the ICRC protects the packet") :
	       "covers the datagram; 0 = not used over IPv4", "0x%04x", wire_load16(u + 6));
}

static const char *opcode_meaning(uint8_t opcode)
{
	static const char *const low[32] = {
		[WIRE_OP_SEND_FIRST] = "first packet of a Send spanning several packets",
		[WIRE_OP_SEND_MIDDLE] = "middle packet of a Send: exactly one path MTU of data",
		[WIRE_OP_SEND_LAST] = "last packet of a Send: the receive WQE completes",
		[WIRE_OP_SEND_LAST_IMM] = "last packet of a Send, with immediate data for the "
			"receiver's completion",
		[WIRE_OP_SEND_ONLY] = "a whole Send in one packet: fills one receive WQE",
		[WIRE_OP_SEND_ONLY_IMM] = "a whole Send in one packet, with immediate data",
		[WIRE_OP_WRITE_FIRST] = "first packet of an RDMA Write; RETH says where it lands",
		[WIRE_OP_WRITE_MIDDLE] = "middle packet of an RDMA Write: one path MTU of data",
		[WIRE_OP_WRITE_LAST] = "last packet of an RDMA Write",
		[WIRE_OP_WRITE_LAST_IMM] = "last packet of an RDMA Write; the immediate data "
			"consumes a receive WQE",
		[WIRE_OP_WRITE_ONLY] = "a whole RDMA Write in one packet; RETH says where it lands",
		[WIRE_OP_WRITE_ONLY_IMM] = "a whole RDMA Write with immediate data in one packet",
		[WIRE_OP_READ_REQUEST] = "asks the responder to send back RETH's length of its memory",
		[WIRE_OP_READ_RESP_FIRST] = "first packet of the data an RDMA Read returns",
		[WIRE_OP_READ_RESP_MIDDLE] = "middle packet of RDMA Read data: one path MTU",
		[WIRE_OP_READ_RESP_LAST] = "last packet of RDMA Read data",
		[WIRE_OP_READ_RESP_ONLY] = "all the data of an RDMA Read in one packet",
		[WIRE_OP_ACKNOWLEDGE] = "acknowledges requests up to its PSN, or NAKs one",
		[WIRE_OP_ATOMIC_ACKNOWLEDGE] = "returns the value an atomic found in memory",
		[WIRE_OP_COMPARE_SWAP] = "atomic: if *va == compare then *va = swap",
		[WIRE_OP_FETCH_ADD] = "atomic: *va += add",
		[WIRE_OP_SEND_LAST_INV] = "last packet of a Send that also invalidates an rkey",
		[WIRE_OP_SEND_ONLY_INV] = "a whole Send that also invalidates an rkey",
		[WIRE_OP_FLUSH] = "makes earlier writes to RETH's range (or the whole region) "
			"visible or persistent; answered by an empty Read response",
		[WIRE_OP_ATOMIC_WRITE] = "writes its 8 bytes at once to an aligned va; answered "
			"by an empty Read response",
	};

	if (opcode == WIRE_OPC_CNP)
		return "congestion notification: the sender of the marked flow slows down (DCQCN)";
	if (!wire_opcode_valid(opcode))
		return "not an opcode IBA defines for RC, UC or UD";
	return low[opcode & WIRE_OPC_LOW_MASK];
}

static const char *transport_meaning(uint8_t opcode)
{
	switch (opcode & WIRE_OPC_TRANSPORT_MASK) {
	case WIRE_OPC_RC:	return "RC: reliable connected, acknowledged";
	case WIRE_OPC_UC:	return "UC: unreliable connected, never acknowledged";
	case WIRE_OPC_RD:	return "RD: reliable datagram";
	case WIRE_OPC_UD:	return "UD: unreliable datagram, one packet per message";
	case 0x80:		return "congestion notification (RoCE v2, Annex A17.9)";
	case 0xa0:		return "XRC: extended reliable connected";
	default:		return "manufacturer specific";
	}
}

static void v_bth(struct vx *v, uint32_t o)
{
	const uint8_t *b = v->f + o;
	const char *name = wire_opcode_valid(b[0]) ? wire_opcode[b[0]].name : "undefined";

	if (!vhave(v, o, BTH_LEN, "BTH"))
		return;
	vlayer(v, "BTH base transport header", o, BTH_LEN, "IBA 9.2");
	vfield(v, o, 1, "opcode", opcode_meaning(b[0]), "0x%02x %s", b[0], name);
	vfield(v, o, 1, "(transport)", transport_meaning(b[0]), "0x%02x", b[0] & WIRE_OPC_TRANSPORT_MASK);
	vbits(v, o + 1, 1, WIRE_BTH_SE, "SE", "solicited event: wakes a receiver waiting for "
	      "solicited completions", NULL);
	vbits(v, o + 1, 1, WIRE_BTH_MIG, "MigReq", "path migration state (APM); 1 = migrated", NULL);
	vbits(v, o + 1, 1, WIRE_BTH_PAD_MASK, "PadCnt", "pad bytes after the payload, so it fills "
	      "whole 4-byte words", NULL);
	vbits(v, o + 1, 1, WIRE_BTH_TVER_MASK, "TVer", "transport header version, always 0", NULL);
	vfield(v, o + 2, 2, "P_Key", "partition key: QPs talk only within a partition (0xffff: "
	       "default, full member)", "0x%04x", wire_load16(b + 2));
	vbits(v, o + 4, 1, 0x80, "FECN", "InfiniBand's forward congestion bit; RoCE marks ECN in "
	      "IP instead; masked in the ICRC", NULL);
	vbits(v, o + 4, 1, 0x40, "BECN", b[4] & 0x40 ? "backward congestion notification: a CNP "
	      "sets it; masked in the ICRC" : "backward congestion bit; masked in the ICRC", NULL);
	vbits(v, o + 4, 1, 0x3f, "resv6", "reserved; with FECN/BECN the byte the ICRC counts as "
	      "0xff (resv8a)", NULL);
	vfield(v, o + 5, 3, "DestQP", "queue pair at the receiver this packet is for", "0x%06" PRIx32,
	       wire_load24(b + 5));
	vbits(v, o + 8, 1, 0x80, "AckReq", b[8] & 0x80 ? "the responder must acknowledge this "
	      "packet now" : "acknowledgement may wait (coalesced)", NULL);
	vbits(v, o + 8, 1, 0x7f, "resv7", "reserved", NULL);
	vfield(v, o + 9, 3, "PSN", "packet sequence number (24 bits, wraps): orders packets, "
	       "exposes loss and duplicates", "%" PRIu32 " (0x%06" PRIx32 ")", wire_load24(b + 9),
	       wire_load24(b + 9));
}

static const char *nak_meaning(unsigned code)
{
	switch (code) {
	case WIRE_NAK_PSN_SEQ_ERR:
		return "a packet went missing: resend from this PSN on (Go-Back-N)";
	case WIRE_NAK_INVALID_REQ:
		return "the responder cannot accept the request (opcode, length or unsupported)";
	case WIRE_NAK_REM_ACCESS_ERR:
		return "rkey, address range or access rights were refused at the responder";
	case WIRE_NAK_REM_OP_ERR:
		return "the responder failed while carrying the request out";
	case WIRE_NAK_INVALID_RD_REQ:
		return "invalid reliable datagram request";
	default:
		return "reserved NAK code";
	}
}

static void v_aeth(struct vx *v, uint32_t o)
{
	uint8_t syn = v->f[o];
	unsigned code = syn & WIRE_AETH_CODE_MASK;
	char meaning[160];

	switch (syn & (WIRE_AETH_TYPE_MASK | 0x80)) {
	case WIRE_AETH_ACK:
		if (wire_aeth_credits(code) < 0)
			snprintf(meaning, sizeof(meaning), "ACK; credit code 31: end-to-end "
				 "credits not used");
		else
			snprintf(meaning, sizeof(meaning), "ACK; credit code %u: the responder has "
				 "%d receive WQEs free", code, wire_aeth_credits(code));
		break;
	case WIRE_AETH_RNR_NAK:
		snprintf(meaning, sizeof(meaning), "receiver not ready (no receive WQE): retry "
			 "after %" PRIu32 " us", wire_rnr_timer_us(code));
		break;
	case WIRE_AETH_NAK:
		snprintf(meaning, sizeof(meaning), "NAK: %s", nak_meaning(code));
		break;
	default:
		snprintf(meaning, sizeof(meaning), "reserved syndrome");
		break;
	}
	vlayer(v, "AETH ACK extended transport header", o, 4, "IBA 9.3.5");
	vfield(v, o, 1, "syndrome", meaning, "0x%02x %s", syn, wire_aeth_name(syn));
	vfield(v, o + 1, 3, "MSN", "message sequence number: messages the responder has "
	       "completed", "%" PRIu32, wire_load24(v->f + o + 1));
}

static void v_ext(struct vx *v)
{
	const struct wire_frame *fr = v->fr;
	const struct wire_opcode_info *op = fr->pkt.op;
	uint32_t bth = fr->pkt.bth_off;
	bool fadd = (fr->pkt.opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_FETCH_ADD;

	if (op->hdrs & WIRE_HDR_XRCETH) {
		uint32_t o = bth + op->off[WIRE_EXT_XRCETH];

		vlayer(v, "XRCETH XRC extended transport header", o, 4, "IBA 1.2.1 XRC");
		vfield(v, o, 1, "reserved", "reserved", "0x%02x", v->f[o]);
		vfield(v, o + 1, 3, "XRCSRQ", "the SRQ of the target QP's XRC domain that receives "
		       "the message (and whose PD checks its R_Key)", "0x%06" PRIx32,
		       wire_load24(v->f + o + 1));
	}
	if (op->hdrs & WIRE_HDR_RETH) {
		uint32_t o = bth + op->off[WIRE_EXT_RETH];

		vlayer(v, "RETH RDMA extended transport header", o, 16, "IBA 9.3.3");
		vfield(v, o, 8, "VA", "virtual address in the responder's memory where the data "
		       "goes or comes from", "0x%016" PRIx64, wire_load64(v->f + o));
		vfield(v, o + 8, 4, "R_Key", "remote key: grants this access to the memory region "
		       "it was registered for (range and rights checked)", "0x%08" PRIx32,
		       wire_load32(v->f + o + 8));
		vfield(v, o + 12, 4, "DMA length", "bytes of the whole Write or Read message", "%" PRIu32,
		       wire_load32(v->f + o + 12));
	}
	if (op->hdrs & WIRE_HDR_FETH) {
		uint32_t o = bth + op->off[WIRE_EXT_FETH], f = wire_load32(v->f + o);

		vlayer(v, "FETH flush extended transport header", o, 4, "IBA 1.5");
		vfield(v, o, 4, "placement/selectivity", "bits 3-0: placement type (1 global, "
		       "2 persistent); bits 5-4: selectivity (0 the RETH's range, 1 the region)",
		       "0x%08" PRIx32 " (%s, %s)", f, flush_plt_name(f), flush_sel_name(f));
	}
	if (op->hdrs & WIRE_HDR_AETH)
		v_aeth(v, bth + op->off[WIRE_EXT_AETH]);
	if (op->hdrs & WIRE_HDR_ATOMIC_ETH) {
		uint32_t o = bth + op->off[WIRE_EXT_ATOMIC_ETH];

		vlayer(v, "AtomicETH atomic extended transport header", o, 28, "IBA 9.3.4");
		vfield(v, o, 8, "VA", "8-byte aligned address of the 64-bit target", "0x%016" PRIx64,
		       wire_load64(v->f + o));
		vfield(v, o + 8, 4, "R_Key", "remote key: grants atomic access to the region",
		       "0x%08" PRIx32, wire_load32(v->f + o + 8));
		vfield(v, o + 12, 8, fadd ? "add data" : "swap data", fadd ? "added to the target" :
		       "written to the target if it equals compare", "0x%016" PRIx64,
		       wire_load64(v->f + o + 12));
		vfield(v, o + 20, 8, "compare data", fadd ? "unused by Fetch&Add" :
		       "compared with the target", "0x%016" PRIx64, wire_load64(v->f + o + 20));
	}
	if (op->hdrs & WIRE_HDR_ATOMIC_ACK_ETH) {
		uint32_t o = bth + op->off[WIRE_EXT_ATOMIC_ACK_ETH];

		vlayer(v, "AtomicAckETH", o, 8, "IBA 9.5.3");
		vfield(v, o, 8, "original", "the target's value before the atomic", "0x%016" PRIx64,
		       wire_load64(v->f + o));
	}
	if (op->hdrs & WIRE_HDR_DETH) {
		uint32_t o = bth + op->off[WIRE_EXT_DETH];

		vlayer(v, "DETH datagram extended transport header", o, 8, "IBA 9.3.2");
		vfield(v, o, 4, "Q_Key", "datagram key: the receiving UD QP accepts only its own",
		       "0x%08" PRIx32, wire_load32(v->f + o));
		vfield(v, o + 4, 1, "reserved", "reserved", "0x%02x", v->f[o + 4]);
		vfield(v, o + 5, 3, "SrcQP", "the sending UD QP, so the receiver can answer",
		       "0x%06" PRIx32, wire_load24(v->f + o + 5));
	}
	if (op->hdrs & WIRE_HDR_IMMDT) {
		uint32_t o = bth + op->off[WIRE_EXT_IMMDT];

		vlayer(v, "ImmDt immediate data", o, 4, "IBA 9.3.6");
		vfield(v, o, 4, "immediate", "handed to the receiver in its completion (imm_data)",
		       "0x%08" PRIx32, wire_load32(v->f + o));
	}
	if (op->hdrs & WIRE_HDR_IETH) {
		uint32_t o = bth + op->off[WIRE_EXT_IETH];

		vlayer(v, "IETH invalidate extended transport header", o, 4, "IBA 9.3.7");
		vfield(v, o, 4, "R_Key", "the receiver invalidates this rkey: no more remote access "
		       "through it", "0x%08" PRIx32, wire_load32(v->f + o));
	}
	if (op->hdrs & WIRE_HDR_CNP) {
		uint32_t o = bth + op->off[WIRE_EXT_CNP];

		vlayer(v, "CNP reserved", o, 16, "IBA Annex A17.9.3");
		vfield(v, o, 16, "reserved", "16 reserved bytes, zero", "%s", "");
	}
}

/* ---- Verbose: CM MADs on QP1 (IBA 13.4, 12.6; rdma_cm's header, Annex A11) ---- */

/* Offset of a field of a CM message from the start of the MAD. */
#define MADOFF(type, field) (WIRE_MAD_HDR_LEN + (uint32_t)offsetof(struct type, field))

/* CM timeouts and delays are 4.096 us * 2^t (IBA 12.7.34). */
static const char *cm_time(char *buf, size_t cap, unsigned t)
{
	double us = 4.096 * (double)(1ull << (t & 31));

	if (us >= 1e6)
		snprintf(buf, cap, "%u: %.1f s", t, us / 1e6);
	else if (us >= 1e3)
		snprintf(buf, cap, "%u: %.1f ms", t, us / 1e3);
	else
		snprintf(buf, cap, "%u: %.1f us", t, us);
	return buf;
}

static const char *ps_name(uint16_t ps)
{
	switch (ps) {
	case WIRE_RDMA_PS_TCP:		return "RDMA_PS_TCP";
	case WIRE_RDMA_PS_UDP:		return "RDMA_PS_UDP";
	case WIRE_RDMA_PS_IB:		return "RDMA_PS_IB";
	case WIRE_RDMA_PS_IPOIB:	return "RDMA_PS_IPOIB";
	default:			return NULL;
	}
}

static void v_service_id(struct vx *v, uint32_t o)
{
	uint64_t sid;
	const char *ps;

	if (o > v->len || 8 > v->len - o) {
		vfield(v, o, 8, "service ID", "", "%s", "");
		return;
	}
	sid = wire_load64(v->f + o);
	ps = sid >> 32 == 0 ? ps_name((uint16_t)(sid >> 16)) : NULL;
	if (ps)
		vfield(v, o, 8, "service ID", "what the REQ connects to: rdma_cm's port space << 16 | "
		       "port", "0x%016" PRIx64 " (%s port %u)", sid, ps, (unsigned)(sid & 0xffff));
	else
		vfield(v, o, 8, "service ID", "what the REQ connects to (not an rdma_cm IP port)",
		       "0x%016" PRIx64, sid);
}

static void v_comm_ids(struct vx *v, uint32_t o)
{
	vfield(v, o, 4, "local comm ID", "the sender's name for this connection", "0x%08" PRIx32,
	       wire_load32(v->f + o));
	vfield(v, o + 4, 4, "remote comm ID", "the receiver's name for it (0 before it chose one)",
	       "0x%08" PRIx32, wire_load32(v->f + o + 4));
}

/* rdma_cm's 36-byte header in front of a REQ's or SIDR_REQ's private data (Annex A11.6). */
static void v_cma_hdr(struct vx *v, uint32_t o, uint32_t pdata_len)
{
	unsigned family;
	uint8_t src[16], dst[16];
	uint16_t port;
	char a[2][INET6_ADDRSTRLEN], hex[64];

	if (o > v->len || pdata_len > v->len - o)
		return;
	if (wire_cma_hdr_parse(v->f + o, pdata_len, &family, src, dst, &port) !=
	    WIRE_MAD_DROP_NONE) {
		fprintf(v->out, "private data: no rdma_cm header (version %u, IP version %u)\n",
			v->f[o], v->f[o + 1] >> 4);
		return;
	}
	inspect_format_gid(a[0], sizeof(a[0]), src);
	inspect_format_gid(a[1], sizeof(a[1]), dst);
	vlayer(v, "rdma_cm private-data header", o, sizeof(struct wire_cma_hdr), "IBA Annex A11.6");
	vfield(v, o, 1, "CMA version", "rdma_cm's header version: 0", "%u", v->f[o]);
	vbits(v, o + 1, 1, 0xf0, "IP version", "family of the two addresses", NULL);
	vfield(v, o + 2, 2, "source port", "the active side's port (the service ID has the "
	       "destination's)", "%u", port);
	vfield(v, o + 4, 16, "source IP", "the active side's address", "%s", a[0]);
	vfield(v, o + 20, 16, "dest IP", "the address the client connected to", "%s", a[1]);
	vfield(v, o + 36, 16, "consumer data", "what the application passed to rdma_connect "
	       "(first 16 bytes)", "%s", hex_preview(hex, sizeof(hex), v->f + o + 36, 16));
}

static void v_cm_path(struct vx *v, uint32_t o)
{
	char g[2][INET6_ADDRSTRLEN], t[32];

	if (o > v->len || sizeof(struct wire_cm_path) > v->len - o)
		return;
	inspect_format_gid(g[0], sizeof(g[0]), v->f + o + 4);
	inspect_format_gid(g[1], sizeof(g[1]), v->f + o + 20);
	vlayer(v, "primary path", o, sizeof(struct wire_cm_path), "IBA 12.6.5 table 106");
	vfield(v, o, 2, "local LID", "unused on Ethernet", "0x%04x", wire_load16(v->f + o));
	vfield(v, o + 2, 2, "remote LID", "unused on Ethernet", "0x%04x", wire_load16(v->f + o + 2));
	vfield(v, o + 4, 16, "local GID", "the active side's GID (its IP address)", "%s", g[0]);
	vfield(v, o + 20, 16, "remote GID", "the passive side's GID", "%s", g[1]);
	vfield(v, o + 36, 3, "flow label", "IPv6 flow label (20 bits) the QPs will use",
	       "%" PRIu32, wire_load32(v->f + o + 36) >> 12);
	vbits(v, o + 39, 1, 0x3f, "packet rate", "static rate (0: port speed)", NULL);
	vfield(v, o + 40, 1, "traffic class", "DSCP and ECN of the data packets", "0x%02x",
	       v->f[o + 40]);
	vfield(v, o + 41, 1, "hop limit", "IP TTL / hop limit of the data packets", "%u",
	       v->f[o + 41]);
	vbits(v, o + 42, 1, 0xf0, "SL", "service level", NULL);
	vbits(v, o + 42, 1, 0x08, "subnet local", "1: both ends on one subnet", NULL);
	vfield(v, o + 43, 1, "local ACK timeout", "how long the requester waits for an ACK "
	       "(4.096 us * 2^t)", "%s", cm_time(t, sizeof(t), v->f[o + 43] >> 3));
}

static void v_cm_req(struct vx *v)
{
	const uint8_t *f = v->f;
	char t[32];
	static const char *const transport[] = { "RC", "UC", "RD", "XRC" };
	uint32_t pd = MADOFF(wire_cm_req, pdata);
	uint32_t o;

	vfield(v, WIRE_MAD_HDR_LEN, 4, "local comm ID", "the active side's name for this "
	       "connection", "0x%08" PRIx32, wire_load32(f + WIRE_MAD_HDR_LEN));
	o = MADOFF(wire_cm_req, vendor_id);
	vfield(v, o, 4, "vendor ID", "the active side's vendor (24 bits)", "0x%06" PRIx32,
	       wire_load32(f + o) & WIRE_24BIT_MASK);
	v_service_id(v, MADOFF(wire_cm_req, service_id));
	o = MADOFF(wire_cm_req, local_ca_guid);
	vfield(v, o, 8, "local CA GUID", "the active side's node GUID", "0x%016" PRIx64,
	       wire_load64(f + o));
	o = MADOFF(wire_cm_req, local_qkey);
	vfield(v, o, 4, "local Q_Key", "for UD and RD only", "0x%08" PRIx32, wire_load32(f + o));
	o = MADOFF(wire_cm_req, qpn_rres);
	vfield(v, o, 3, "local QPN", "the active side's QP: the passive side's BTH DestQP",
	       "0x%06" PRIx32, wire_load24(f + o));
	vfield(v, o + 3, 1, "resp resources", "RDMA Reads and atomics the active side accepts at "
	       "once (its max_dest_rd_atomic)", "%u", f[o + 3]);
	o = MADOFF(wire_cm_req, eecn_idepth);
	vfield(v, o, 3, "local EECN", "RD only", "0x%06" PRIx32, wire_load24(f + o));
	vfield(v, o + 3, 1, "initiator depth", "Reads and atomics the active side has in flight "
	       "at once (its max_rd_atomic)", "%u", f[o + 3]);
	o = MADOFF(wire_cm_req, reecn_misc);
	vfield(v, o, 3, "remote EECN", "RD only", "0x%06" PRIx32, wire_load24(f + o));
	vfield(v, o + 3, 1, "remote CM timeout", "how long the passive side's CM may take to "
	       "answer", "%s", cm_time(t, sizeof(t), f[o + 3] >> 3));
	vfield(v, o + 3, 1, "transport", "service type of the QPs", "%u %s", f[o + 3] >> 1 & 3,
	       transport[f[o + 3] >> 1 & 3]);
	vbits(v, o + 3, 1, 0x01, "end-to-end flow", "1: the active side sends credits", NULL);
	o = MADOFF(wire_cm_req, psn_misc);
	vfield(v, o, 3, "starting PSN", "the first PSN the active side expects: the passive side sends from it (random; Linux's cm.c)",
	       "%" PRIu32, wire_load24(f + o));
	vfield(v, o + 3, 1, "local CM timeout", "how long the active side's CM may take to "
	       "answer", "%s", cm_time(t, sizeof(t), f[o + 3] >> 3));
	vbits(v, o + 3, 1, 0x07, "retry count", "transport retries after an ACK timeout", NULL);
	o = MADOFF(wire_cm_req, pkey);
	vfield(v, o, 2, "P_Key", "partition of the connection", "0x%04x", wire_load16(f + o));
	o = MADOFF(wire_cm_req, mtu_misc);
	vfield(v, o, 1, "path MTU", "largest payload of one packet", "%u: %u bytes", f[o] >> 4,
	       (f[o] >> 4) >= 1 && (f[o] >> 4) <= 5 ? 128u << (f[o] >> 4) : 0);
	vbits(v, o, 1, 0x08, "RDC exists", "RD only", NULL);
	vbits(v, o, 1, 0x07, "RNR retry", "retries after a receiver-not-ready NAK (7: for ever)",
	      NULL);
	o = MADOFF(wire_cm_req, retries_misc);
	vbits(v, o, 1, 0xf0, "max CM retries", "times the CM repeats this REQ unanswered", NULL);
	vbits(v, o, 1, 0x08, "SRQ", "1: the active side's QP receives from a shared queue", NULL);
	vbits(v, o, 1, 0x07, "ext transport", "extended transport type (XRC)", NULL);
	v_cm_path(v, MADOFF(wire_cm_req, primary));
	o = MADOFF(wire_cm_req, alternate);
	vfield(v, o, sizeof(struct wire_cm_path), "alternate path", "for automatic path "
	       "migration; all zero: none", "%s", "");
	v_cma_hdr(v, pd, WIRE_CM_REQ_PDATA);
}

static void v_cm_rep(struct vx *v)
{
	const uint8_t *f = v->f;
	char t[32];
	uint32_t o;

	o = MADOFF(wire_cm_rep, local_qkey);
	vfield(v, o, 4, "local Q_Key", "for UD and RD only", "0x%08" PRIx32, wire_load32(f + o));
	o = MADOFF(wire_cm_rep, qpn_vendor);
	vfield(v, o, 3, "local QPN", "the passive side's QP: the active side's BTH DestQP",
	       "0x%06" PRIx32, wire_load24(f + o));
	o = MADOFF(wire_cm_rep, eecn_vendor);
	vfield(v, o, 3, "local EECN", "RD only", "0x%06" PRIx32, wire_load24(f + o));
	o = MADOFF(wire_cm_rep, psn_vendor);
	vfield(v, o, 3, "starting PSN", "the first PSN the passive side expects: the active side sends from it (random)",
	       "%" PRIu32, wire_load24(f + o));
	o = MADOFF(wire_cm_rep, rres);
	vfield(v, o, 1, "resp resources", "Reads and atomics the passive side accepts at once",
	       "%u", f[o]);
	o = MADOFF(wire_cm_rep, idepth);
	vfield(v, o, 1, "initiator depth", "Reads and atomics the passive side has in flight",
	       "%u", f[o]);
	o = MADOFF(wire_cm_rep, ack_misc);
	vfield(v, o, 1, "target ACK delay", "the passive side's own delay before it ACKs", "%s",
	       cm_time(t, sizeof(t), f[o] >> 3));
	vbits(v, o, 1, 0x06, "failover", "alternate path: 0 accepted, 1 not supported", NULL);
	vbits(v, o, 1, 0x01, "end-to-end flow", "1: the passive side sends credits", NULL);
	o = MADOFF(wire_cm_rep, rnr_misc);
	vbits(v, o, 1, 0xe0, "RNR retry", "retries after a receiver-not-ready NAK", NULL);
	vbits(v, o, 1, 0x10, "SRQ", "1: the passive side's QP receives from a shared queue", NULL);
	o = MADOFF(wire_cm_rep, local_ca_guid);
	vfield(v, o, 8, "local CA GUID", "the passive side's node GUID", "0x%016" PRIx64,
	       wire_load64(f + o));
}

static void v_cm_sidr(struct vx *v, bool rep)
{
	const uint8_t *f = v->f;
	uint32_t o;

	if (!rep) {
		vfield(v, WIRE_MAD_HDR_LEN, 4, "request ID", "matches the answer to the question",
		       "0x%08" PRIx32, wire_load32(f + WIRE_MAD_HDR_LEN));
		o = MADOFF(wire_cm_sidr_req, pkey);
		vfield(v, o, 2, "P_Key", "partition of the UD QPs", "0x%04x", wire_load16(f + o));
		v_service_id(v, MADOFF(wire_cm_sidr_req, service_id));
		v_cma_hdr(v, MADOFF(wire_cm_sidr_req, pdata), WIRE_CM_SIDR_REQ_PDATA);
		return;
	}
	vfield(v, WIRE_MAD_HDR_LEN, 4, "request ID", "the SIDR_REQ's", "0x%08" PRIx32,
	       wire_load32(f + WIRE_MAD_HDR_LEN));
	o = MADOFF(wire_cm_sidr_rep, status);
	vfield(v, o, 1, "status", "0 the QP below serves it, 1 unsupported service ID, 2 rejected",
	       "%u", f[o]);
	o = MADOFF(wire_cm_sidr_rep, qpn_vendor);
	vfield(v, o, 3, "QPN", "the UD QP that serves the service ID", "0x%06" PRIx32,
	       wire_load24(f + o));
	v_service_id(v, MADOFF(wire_cm_sidr_rep, service_id));
	o = MADOFF(wire_cm_sidr_rep, qkey);
	vfield(v, o, 4, "Q_Key", "what datagrams to that QP must carry", "0x%08" PRIx32,
	       wire_load32(f + o));
}

/* Each CM message's layer line; most start with both comm IDs (IBA 12.6). */
static const struct cm_layer {
	uint16_t	attr;
	bool		comm_ids;
	const char	*name, *ref;
} cm_layers[] = {
	{ WIRE_CM_REQ,		false, "REQ ConnectRequest",		"IBA 12.6.5 table 106" },
	{ WIRE_CM_MRA,		true,  "MRA MsgRcptAck",		"IBA 12.6.6 table 107" },
	{ WIRE_CM_REJ,		true,  "REJ ConnectReject",		"IBA 12.6.7 table 108" },
	{ WIRE_CM_REP,		true,  "REP ConnectReply",		"IBA 12.6.8 table 110" },
	{ WIRE_CM_RTU,		true,  "RTU ReadyToUse",		"IBA 12.6.9 table 111" },
	{ WIRE_CM_DREQ,		true,  "DREQ DisconnectRequest",	"IBA 12.6.10 table 112" },
	{ WIRE_CM_DREP,		true,  "DREP DisconnectReply",		"IBA 12.6.11 table 113" },
	{ WIRE_CM_SIDR_REQ,	false, "SIDR_REQ ServiceIDResReq",	"IBA 12.11.1 table 119" },
	{ WIRE_CM_SIDR_REP,	false, "SIDR_REP ServiceIDResReqResp",	"IBA 12.11.2 table 120" },
};

static void v_cm_body(struct vx *v, uint16_t attr)
{
	const struct cm_layer *l = NULL;
	const uint8_t *f = v->f;
	char t[32];
	uint32_t o;

	for (size_t i = 0; i < sizeof(cm_layers) / sizeof(cm_layers[0]); i++)
		if (cm_layers[i].attr == attr)
			l = &cm_layers[i];
	if (!l) {
		v_hexdump(v, WIRE_MAD_HDR_LEN, v->len, "CM data (attribute not decoded)");
		return;
	}
	vlayer(v, l->name, WIRE_MAD_HDR_LEN, WIRE_MAD_DATA_LEN, l->ref);
	if (l->comm_ids)
		v_comm_ids(v, WIRE_MAD_HDR_LEN);
	switch (attr) {
	case WIRE_CM_REQ:
		v_cm_req(v);
		break;
	case WIRE_CM_REP:
		v_cm_rep(v);
		break;
	case WIRE_CM_SIDR_REQ:
	case WIRE_CM_SIDR_REP:
		v_cm_sidr(v, attr == WIRE_CM_SIDR_REP);
		break;
	case WIRE_CM_DREQ:
		o = MADOFF(wire_cm_dreq, remote_qpn);
		vfield(v, o, 3, "remote QPN", "the receiver's QP being disconnected", "0x%06" PRIx32,
		       wire_load24(f + o));
		break;
	case WIRE_CM_REJ:
		o = MADOFF(wire_cm_rej, msg_rejected);
		vbits(v, o, 1, 0xc0, "msg rejected", "0 the REQ, 1 the REP, 2 another", NULL);
		o = MADOFF(wire_cm_rej, ari_len);
		vbits(v, o, 1, 0xfe, "ARI length", "bytes of additional reject information", NULL);
		o = MADOFF(wire_cm_rej, reason);
		vfield(v, o, 2, "reason", "why (IBA 12.6.7.2 table 109)", "%u %s",
		       wire_load16(f + o), wire_cm_rej_reason_name(wire_load16(f + o)));
		break;
	case WIRE_CM_MRA:
		o = MADOFF(wire_cm_mra, msg_mraed);
		vbits(v, o, 1, 0xc0, "msg MRAed", "0 the REQ, 1 the REP, 2 a LAP", NULL);
		o = MADOFF(wire_cm_mra, service_timeout);
		vfield(v, o, 1, "service timeout", "how much longer the sender needs: stop "
		       "repeating meanwhile", "%s", cm_time(t, sizeof(t), f[o] >> 3));
		break;
	default:
		break;	/* RTU, DREP: the comm IDs and private data alone */
	}
}

/*
 * A CM MAD in the payload of a UD SEND to QP1: the MAD header, then the
 * message's fields.  @v is re-based so offsets count from the MAD's first byte.
 */
static void v_cm_mad(struct vx *outer, uint32_t off, uint32_t n)
{
	uint32_t captured = outer->len > off ? outer->len - off : 0;
	struct vx v = { outer->out, outer->fr, outer->f + off, n < captured ? n : captured };
	const uint8_t *f = v.f;
	const char *name;
	uint16_t attr;

	if (!vhave(&v, 0, WIRE_MAD_HDR_LEN, "MAD header"))
		return;
	attr = wire_load16(f + 16);
	name = wire_cm_attr_name(attr);
	fprintf(v.out, "MAD, %" PRIu32 " bytes at 0x%04" PRIx32 " (offsets below count from "
		"its first byte)\n", n, off);
	vlayer(&v, "MAD common header", 0, WIRE_MAD_HDR_LEN, "IBA 13.4.2");
	vfield(&v, 0, 1, "base version", "MAD format version: 1", "%u", f[0]);
	vfield(&v, 1, 1, "mgmt class", "0x07: Communication Management (IBA 13.4.4)", "0x%02x",
	       f[1]);
	vfield(&v, 2, 1, "class version", "CM class version: 2", "%u", f[2]);
	vbits(&v, 3, 1, 0x80, "R", "1: a response method", NULL);
	vbits(&v, 3, 1, 0x7f, "method", (f[3] & 0x7f) == WIRE_MAD_METHOD_SEND ?
	      "Send: every CM message is one" : "not the CM's Send", NULL);
	vfield(&v, 4, 2, "status", "0 in every CM message", "0x%04x", wire_load16(f + 4));
	vfield(&v, 6, 2, "class specific", "reserved for the CM", "0x%04x", wire_load16(f + 6));
	vfield(&v, 8, 8, "TID", "transaction ID: a repeated message carries the same", "0x%016"
	       PRIx64, wire_load64(f + 8));
	vfield(&v, 16, 2, "attribute ID", "which CM message (IBA 16.7.2 table 205)", "0x%04x %s",
	       attr, name ? name : "(not a CM message uroce knows)");
	vfield(&v, 18, 2, "reserved", "reserved", "0x%04x", wire_load16(f + 18));
	vfield(&v, 20, 4, "attr modifier", "0 in CM messages", "0x%08" PRIx32, wire_load32(f + 20));
	if (f[1] != WIRE_MGMT_CLASS_CM) {
		v_hexdump(&v, WIRE_MAD_HDR_LEN, n, "MAD data (not the CM's class)");
		return;
	}
	v_cm_body(&v, attr);
}

static void v_roce_tail(struct vx *v)
{
	const struct wire_frame *fr = v->fr;
	const struct wire_pkt *p = &fr->pkt;
	uint32_t end = roce_end(fr), icrc_off = end - WIRE_ICRC_LEN;
	uint32_t data_off = p->bth_off + p->op->hdr_len;
	uint32_t pad = p->pad, n;
	char hex[64];

	if (data_off + pad <= icrc_off) {
		n = icrc_off - data_off - pad;
		if (cm_mad(fr)) {
			v_cm_mad(v, data_off, n);
		} else if (n) {
			vlayer(v, "payload", data_off, n, "message data");
			vfield(v, data_off, n < 16 ? n : 16, "data", "the message bytes (first 16)",
			       "%s", hex_preview(hex, sizeof(hex), v->f + data_off, n));
		}
		if (pad)
			vfield(v, icrc_off - pad, pad, "pad", "zero bytes filling the last 4-byte word",
			       "%" PRIu32 " byte%s", pad, pad == 1 ? "" : "s");
	}
	vlayer(v, "ICRC invariant CRC", icrc_off, WIRE_ICRC_LEN, p->roce_v1 ? "IBA Annex A16" :
	       "IBA Annex A17.3.3");
	if (p->roce_v1)
		fprintf(v->out, "  covers 8 bytes of ones for the LRH RoCE has not, the GRH with "
			"TClass, flow label and hop limit as ones, the BTH with resv8a as ones, "
			"and every byte after it\n");
	vfield(v, icrc_off, WIRE_ICRC_LEN, "ICRC", fr->icrc_calc == p->icrc ?
	       "CRC-32 over every field no router changes, sent least significant byte first: ok" :
	       "CRC-32 over every field no router changes: BAD", "0x%08" PRIx32 " (computed 0x%08"
	       PRIx32 ")", p->icrc, fr->icrc_calc);
	v_hexdump(v, end, v->len, p->roce_v1 ? "Ethernet padding (not part of the packet)" :
		  "Ethernet padding (not part of the IP packet)");
}

/* The InfiniBand GRH of RoCE v1: IPv6's layout, IBA's names and meanings. */
static void v_grh(struct vx *v)
{
	uint32_t o = v->fr->l3_off, vtc;
	const uint8_t *g = v->f + o;
	char a[2][INET6_ADDRSTRLEN];

	if (!vhave(v, o, IPV6_HLEN, "GRH"))
		return;
	vtc = wire_load32(g);
	for (int i = 0; i < 2; i++)
		inet_ntop(AF_INET6, g + 8 + 16 * i, a[i], sizeof(a[i]));
	vlayer(v, "GRH global route header", o, IPV6_HLEN, "IBA 8.3.1; RoCE v1 puts it right "
	       "after Ethernet, IBA Annex A16: no IP, no UDP, one broadcast domain");
	vfield(v, o, 1, "IPVer", "6: the GRH has IPv6's layout", "%" PRIu32, vtc >> 28);
	vfield(v, o, 2, "TClass", "traffic class (a service level's priority); masked in the ICRC",
	       "0x%02" PRIx32, (vtc >> 20) & 0xff);
	vfield(v, o + 1, 3, "FlowLabel", "packets of one flow keep their order across paths; "
	       "masked in the ICRC", "0x%05" PRIx32, vtc & 0xfffff);
	vfield(v, o + 4, 2, "PayLen", "bytes after the GRH: BTH .. ICRC", "%u", wire_load16(g + 4));
	vfield(v, o + 6, 1, "NxtHdr", g[6] == WIRE_GRH_NXTHDR_IBA ? "0x1B: an IBA transport "
	       "header (the BTH) follows" : "not 0x1B: no BTH follows", "0x%02x", g[6]);
	vfield(v, o + 7, 1, "HopLmt", "hops left; a router would lower it, so the ICRC counts it "
	       "as 0xff", "%u", g[7]);
	vfield(v, o + 8, 16, "SGID", "sender: a RoCE v1 GID of its table (link-local or "
	       "IPv4-mapped)", "%s", a[0]);
	vfield(v, o + 24, 16, "DGID", "receiver; its MAC comes from the GID (EUI-64) or ARP, "
	       "not from routing", "%s", a[1]);
}

static void v_roce(struct vx *v)
{
	const struct wire_frame *fr = v->fr;
	uint32_t bth = fr->pkt.roce_v1 ? fr->l3_off + IPV6_HLEN : fr->l4.off + UDP_HLEN;

	if (fr->pkt.roce_v1) {
		v_grh(v);
	} else {
		v_ip(v, true);
		v_udp(v, true);
	}
	if (!vhave(v, bth, BTH_LEN, "BTH"))
		return;
	v_bth(v, bth);
	if (fr->pkt.bth_off != bth || !ext_present(fr)) {
		v_hexdump(v, bth + BTH_LEN, fr->ip_end, "undecoded bytes");
		return;
	}
	v_ext(v);
	if (fr->icrc_checked)
		v_roce_tail(v);
}

static void v_tcp(struct vx *v)
{
	const struct wire_frame *fr = v->fr;
	uint32_t o = fr->l4.off, doff;
	const uint8_t *t = v->f + o;
	char fl[16];
	struct inspect_text b = { fl, sizeof(fl), 0 };

	if (!vhave(v, o, TCP_HLEN, "TCP"))
		return;
	doff = (t[12] >> 4) * 4u;
	tcp_flags(&b, t[13]);
	vlayer(v, "TCP", o, doff, "RFC 9293");
	vfield(v, o, 2, "source port", "sender's port", "%u", wire_load16(t));
	vfield(v, o + 2, 2, "dest port", wire_load16(t + 2) == PERFTEST_PORT || wire_load16(t) == PERFTEST_PORT ?
	       "18515: perftest's connection for exchanging QP numbers" : "receiver's port", "%u",
	       wire_load16(t + 2));
	vfield(v, o + 4, 4, "sequence", "byte number of the first data byte", "%" PRIu32, wire_load32(t + 4));
	vfield(v, o + 8, 4, "ack", "next byte expected from the other side", "%" PRIu32, wire_load32(t + 8));
	vfield(v, o + 12, 2, "offset/flags", "header length and control flags", "%u bytes %s", doff,
	       fl);
	vfield(v, o + 14, 2, "window", "receive window", "%u", wire_load16(t + 14));
	if (fr->perftest.valid) {
		const struct wire_frame_perftest *pt = &fr->perftest;
		char gid[INET6_ADDRSTRLEN];

		inspect_format_gid(gid, sizeof(gid), pt->gid);
		fprintf(v->out, "perftest connection data, %" PRIu32 " bytes of text at 0x%04" PRIx32
			" (what the RoCE packets that follow will carry)\n", fr->l4.payload_len,
			o + doff);
		fprintf(v->out, "  LID 0x%04" PRIx32 " (unused on Ethernet), outstanding reads %" PRIu32
			", QPN 0x%06" PRIx32 " (goes into the peer's BTH DestQP)\n", pt->lid,
			pt->out_reads, pt->qpn);
		fprintf(v->out, "  PSN %" PRIu32 " (first PSN this side sends), rkey 0x%08" PRIx32
			" and VA 0x%016" PRIx64 " (what the peer puts in RETH/AtomicETH)\n", pt->psn,
			pt->rkey, pt->va);
		fprintf(v->out, "  GID %s, SRQ number %" PRIu32 "\n", gid, pt->srqn);
	} else {
		v_hexdump(v, o + doff, fr->ip_end, "TCP data");
	}
}

static void v_ip_other(struct vx *v)
{
	const struct wire_frame *fr = v->fr;

	v_ip(v, false);
	if (fr->l4.proto == IPPROTO_TCP4) {
		v_tcp(v);
	} else if (fr->l4.proto == WIRE_IPPROTO_UDP) {
		v_udp(v, false);
		v_hexdump(v, fr->l4.off + UDP_HLEN, fr->ip_end, "UDP data");
	} else if (fr->l4.proto == WIRE_IPPROTO_ICMP || fr->l4.proto == WIRE_IPPROTO_ICMPV6) {
		if (vhave(v, fr->l4.off, 2, "ICMP") && fr->l4.off < fr->ip_end) {
			vlayer(v, fr->l4.proto == WIRE_IPPROTO_ICMP ? "ICMP" : "ICMPv6", fr->l4.off,
			       fr->ip_end - fr->l4.off, "RFC 792 / RFC 4443");
			vfield(v, fr->l4.off, 1, "type", "kind of control message", "%u",
			       fr->l4.icmp_type);
			vfield(v, fr->l4.off + 1, 1, "code", "detail of the type", "%u",
			       fr->l4.icmp_code);
		}
	}
	fprintf(v->out, "not RoCE: %s\n", wire_drop_desc(fr->drop));
}

static void v_arp(struct vx *v)
{
	const struct wire_frame_arp *a = &v->fr->arp;
	uint32_t o = v->fr->l3_off;
	char s[4][20];

	if (!a->valid) {
		v_hexdump(v, o, v->len, "ARP (not Ethernet/IPv4 or truncated)");
		return;
	}
	for (int i = 0; i < 4; i++) {
		struct inspect_text b = { s[i], sizeof(s[i]), 0 };

		if (i & 1)
			sb_ipv4(&b, i == 1 ? a->spa : a->tpa);
		else
			sb_mac(&b, i == 0 ? a->sha : a->tha);
	}
	vlayer(v, "ARP", o, ARP_LEN, "RFC 826: how a sender finds the MAC of an IPv4 address");
	vfield(v, o, 4, "hw/proto", "Ethernet hardware, IPv4 protocol", "1 / 0x0800");
	vfield(v, o + 4, 2, "lengths", "6-byte MACs, 4-byte addresses", "6 / 4");
	vfield(v, o + 6, 2, "operation", a->op == 1 ? "request: who has the target address?" :
	       "reply: the sender has it", "%u", a->op);
	vfield(v, o + 8, 6, "sender MAC", "", "%s", s[0]);
	vfield(v, o + 14, 4, "sender IP", "", "%s", s[1]);
	vfield(v, o + 18, 6, "target MAC", a->op == 1 ? "unknown yet" : "", "%s", s[2]);
	vfield(v, o + 24, 4, "target IP", "", "%s", s[3]);
}

void inspect_decode_verbose(FILE *out, uint64_t number, const struct inspect_decode_ts *ts,
			 const struct wire_frame *fr)
{
	struct vx v = { out, fr, fr->data, fr->len };
	char sum[384], line[64];
	struct inspect_text b = { line, sizeof(line), 0 };

	if (ts) {
		inspect_text_printf(&b, ", time ");
		sb_ts(&b, ts);
	}
	inspect_decode_summary(sum, sizeof(sum), fr);
	fprintf(out, "frame %" PRIu64 ": %" PRIu32 " bytes%s%s: %s\n", number, fr->orig_len,
		fr->len < fr->orig_len ? " (truncated capture)" : "", line, sum);
	if (fr->kind == WIRE_FRAME_ROCE || fr->kind == WIRE_FRAME_MALFORMED)
		fprintf(out, "verdict: %s\n", fr->drop ? wire_drop_name(fr->drop) :
			"accepted: every check passed, ICRC ok");
	if (fr->drop && fr->kind != WIRE_FRAME_IP)
		fprintf(out, "  dropped because: %s\n", wire_drop_desc(fr->drop));
	v_eth(&v);
	switch (fr->kind) {
	case WIRE_FRAME_ROCE:
		v_roce(&v);
		break;
	case WIRE_FRAME_IP:
	case WIRE_FRAME_ND:
	case WIRE_FRAME_ICMP_ROCE:
		v_ip_other(&v);
		break;
	case WIRE_FRAME_ARP:
		v_arp(&v);
		break;
	case WIRE_FRAME_OTHER:
		v_hexdump(&v, fr->l3_off, fr->len, "not IP, not decoded");
		break;
	case WIRE_FRAME_MALFORMED:
		v_hexdump(&v, fr->len < ETH_HLEN ? 0 : fr->l3_off, fr->len, "undecoded bytes");
		break;
	}
	fprintf(out, "\n");
}

/* ---- JSON lines ---- */

static const char *kind_name(enum wire_frame_kind k)
{
	switch (k) {
	case WIRE_FRAME_ROCE:	return "roce";
	case WIRE_FRAME_ARP:	return "arp";
	case WIRE_FRAME_IP:
	case WIRE_FRAME_ND:
	case WIRE_FRAME_ICMP_ROCE:	return "ip";
	case WIRE_FRAME_OTHER:	return "other";
	default:		return "malformed";
	}
}

static void sb_json_str(struct inspect_text *b, const char *key, const char *val)
{
	inspect_text_printf(b, ",\"%s\":\"%s\"", key, val);
}

static void j_bth(struct inspect_text *b, const struct wire_frame *fr)
{
	const struct wire_pkt *p = &fr->pkt;

	inspect_text_printf(b, ",\"bth\":{\"opcode\":%u", p->opcode);
	if (p->op)
		sb_json_str(b, "name", p->op->name);
	inspect_text_printf(b, ",\"se\":%s,\"mig\":%s,\"pad\":%u,\"tver\":%u,\"pkey\":%u,\"resv8a\":%u,"
		  "\"dest_qp\":%" PRIu32 ",\"ackreq\":%s,\"psn\":%" PRIu32 "}",
		  p->se ? "true" : "false", p->mig ? "true" : "false", p->pad, p->tver, p->pkey,
		  fr->data[p->bth_off + 4], p->dest_qp, p->ackreq ? "true" : "false", p->psn);
}

static void j_ext(struct inspect_text *b, const struct wire_frame *fr)
{
	const uint8_t *h;

	if ((h = ext(fr, WIRE_EXT_XRCETH)))
		inspect_text_printf(b, ",\"xrceth\":{\"srqn\":%" PRIu32 "}", wire_load24(h + 1));
	if ((h = ext(fr, WIRE_EXT_RETH)))
		inspect_text_printf(b, ",\"reth\":{\"va\":\"0x%016" PRIx64 "\",\"rkey\":%" PRIu32
			  ",\"dma_len\":%" PRIu32 "}", wire_load64(h), wire_load32(h + 8), wire_load32(h + 12));
	if ((h = ext(fr, WIRE_EXT_AETH)))
		inspect_text_printf(b, ",\"aeth\":{\"syndrome\":%u,\"name\":\"%s\",\"msn\":%" PRIu32 "}", h[0],
			  wire_aeth_name(h[0]), wire_load24(h + 1));
	if ((h = ext(fr, WIRE_EXT_ATOMIC_ETH)))
		inspect_text_printf(b, ",\"atomiceth\":{\"va\":\"0x%016" PRIx64 "\",\"rkey\":%" PRIu32
			  ",\"swap_add\":\"0x%016" PRIx64 "\",\"compare\":\"0x%016" PRIx64 "\"}",
			  wire_load64(h), wire_load32(h + 8), wire_load64(h + 12), wire_load64(h + 20));
	if ((h = ext(fr, WIRE_EXT_ATOMIC_ACK_ETH)))
		inspect_text_printf(b, ",\"atomicacketh\":{\"orig\":\"0x%016" PRIx64 "\"}", wire_load64(h));
	if ((h = ext(fr, WIRE_EXT_IMMDT)))
		inspect_text_printf(b, ",\"immdt\":%" PRIu32, wire_load32(h));
	if ((h = ext(fr, WIRE_EXT_IETH)))
		inspect_text_printf(b, ",\"ieth\":%" PRIu32, wire_load32(h));
	if ((h = ext(fr, WIRE_EXT_DETH)))
		inspect_text_printf(b, ",\"deth\":{\"qkey\":%" PRIu32 ",\"src_qp\":%" PRIu32 "}", wire_load32(h),
			  wire_load32(h + 4) & WIRE_24BIT_MASK);
	if ((h = ext(fr, WIRE_EXT_FETH)))
		inspect_text_printf(b, ",\"feth\":{\"placement\":%" PRIu32 ",\"selectivity\":%" PRIu32
			  "}", wire_load32(h) & WIRE_FETH_PLT_MASK,
			  (wire_load32(h) & WIRE_FETH_SEL_MASK) >> WIRE_FETH_SEL_SHIFT);
	if (ext(fr, WIRE_EXT_CNP))
		inspect_text_printf(b, ",\"cnp\":{}");
}

static void j_ip(struct inspect_text *b, const struct wire_frame *fr)
{
	const uint8_t *ip = fr->data + fr->l3_off;
	uint8_t tclass;

	inspect_text_printf(b, ",\"ip\":{\"version\":%u,\"src\":\"", fr->ip_version);
	sb_gid(b, fr->src_ip);
	inspect_text_printf(b, "\",\"dst\":\"");
	sb_gid(b, fr->dst_ip);
	inspect_text_printf(b, "\"");
	if (fr->ip_version == 4) {
		tclass = ip[1];
		inspect_text_printf(b, ",\"tclass\":%u,\"hop_limit\":%u,\"id\":%u,\"df\":%s", tclass, ip[8],
			  wire_load16(ip + 4), wire_load16(ip + 6) & WIRE_IPV4_DF ? "true" : "false");
	} else {
		uint32_t vtc = wire_load32(ip);

		tclass = (uint8_t)(vtc >> 20);
		inspect_text_printf(b, ",\"tclass\":%u,\"hop_limit\":%u,\"flow_label\":%" PRIu32, tclass, ip[7],
			  vtc & 0xfffff);
	}
	inspect_text_printf(b, ",\"proto\":%u}", fr->l4.proto);
}

void inspect_decode_json(FILE *out, uint64_t number, const struct inspect_decode_ts *ts,
		      const struct wire_frame *fr)
{
	char line[2048];
	struct inspect_text b = { line, sizeof(line), 0 };
	const struct wire_pkt *p = &fr->pkt;

	inspect_text_printf(&b, "{\"frame\":%" PRIu64, number);
	if (ts)
		inspect_text_printf(&b, ",\"time\":%" PRId64 ".%09" PRIu32, ts->sec, ts->nsec);
	inspect_text_printf(&b, ",\"len\":%" PRIu32 ",\"caplen\":%" PRIu32, fr->orig_len, fr->len);
	sb_json_str(&b, "kind", kind_name(fr->kind));
	if (p->roce_v1)
		inspect_text_printf(&b, ",\"roce_version\":1");
	sb_json_str(&b, "drop", wire_drop_name(fr->drop));
	if (fr->len >= ETH_HLEN) {
		inspect_text_printf(&b, ",\"eth\":{\"dst\":\"");
		sb_mac(&b, fr->data);
		inspect_text_printf(&b, "\",\"src\":\"");
		sb_mac(&b, fr->data + 6);
		inspect_text_printf(&b, "\",\"type\":%u", fr->ethertype);
		if (fr->has_vlan)
			inspect_text_printf(&b, ",\"vlan\":{\"pcp\":%u,\"dei\":%u,\"vid\":%u}",
				  fr->vlan_tci >> 13, (fr->vlan_tci >> 12) & 1, fr->vlan_tci & 0xfff);
		inspect_text_printf(&b, "}");
	}
	if (fr->ip_valid)
		j_ip(&b, fr);
	if (fr->l4.ports_valid) {
		const char *proto = fr->l4.proto == IPPROTO_TCP4 ? "tcp" : "udp";

		inspect_text_printf(&b, ",\"%s\":{\"sport\":%u,\"dport\":%u,\"payload_len\":%" PRIu32 "}", proto,
			  fr->l4.sport, fr->l4.dport, fr->l4.payload_len);
	}
	if (fr->arp.valid) {
		inspect_text_printf(&b, ",\"arp\":{\"op\":%u,\"sender\":\"", fr->arp.op);
		sb_ipv4(&b, fr->arp.spa);
		inspect_text_printf(&b, "\",\"target\":\"");
		sb_ipv4(&b, fr->arp.tpa);
		inspect_text_printf(&b, "\"}");
	}
	if (fr->perftest.valid)
		inspect_text_printf(&b, ",\"perftest\":{\"qpn\":%" PRIu32 ",\"psn\":%" PRIu32 ",\"rkey\":%" PRIu32
			  ",\"va\":\"0x%016" PRIx64 "\"}", fr->perftest.qpn, fr->perftest.psn,
			  fr->perftest.rkey, fr->perftest.va);
	if (fr->kind == WIRE_FRAME_ROCE && p->bth_off && fr->drop != WIRE_DROP_TRUNCATED_BTH) {
		j_bth(&b, fr);
		j_ext(&b, fr);
		if (ext_present(fr) && fr->drop != WIRE_DROP_BAD_PAD)
			inspect_text_printf(&b, ",\"payload_len\":%" PRIu32, p->payload_len);
		if (fr->icrc_checked)
			inspect_text_printf(&b, ",\"icrc\":\"0x%08" PRIx32 "\",\"icrc_calc\":\"0x%08" PRIx32
				  "\",\"icrc_ok\":%s", p->icrc, fr->icrc_calc,
				  p->icrc == fr->icrc_calc ? "true" : "false");
	}
	inspect_text_printf(&b, "}");
	fprintf(out, "%s\n", line);
}
