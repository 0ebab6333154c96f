// SPDX-License-Identifier: MIT
/* From an Ethernet frame to a checked RoCE packet view (IBA 9.2, 9.3, Annexes A16, A17). */
#include <string.h>

#include "uroce/wire.h"
#include "wire_classify.h"

#define MAX_PMTU 4096

static bool is_pmtu(uint32_t len)
{
	return len >= 256 && len <= MAX_PMTU && (len & (len - 1)) == 0;
}

/* IPv4 checks past the ones wire_classify() made to find the L4 header. */
static enum wire_drop parse_ipv4(const uint8_t *f, uint32_t len, unsigned flags,
				 struct wire_pkt *p, uint32_t l4_off, uint32_t *ip_end)
{
	const struct wire_ipv4_hdr *ip = (const struct wire_ipv4_hdr *)(f + p->l3_off);
	uint32_t ihl = l4_off - p->l3_off, total;

	if (!(flags & WIRE_PARSE_SKIP_IP_CSUM) && wire_ipv4_csum(ip, ihl) != 0)
		return WIRE_DROP_BAD_IP_CSUM;
	total = wire_get16(ip->total_len);
	/* Frames may carry Ethernet padding after the IP packet, never less. */
	if (total < ihl || total > len - p->l3_off)
		return WIRE_DROP_IP_LEN;
	if (wire_get16(ip->frag_off) & (WIRE_IPV4_MF | WIRE_IPV4_OFFMASK))
		return WIRE_DROP_IP_FRAGMENT;
	if (ip->protocol != WIRE_IPPROTO_UDP)
		return WIRE_DROP_NOT_UDP;

	memcpy(p->src_gid, wire_v4mapped_prefix, 12);
	memcpy(p->src_gid + 12, ip->src, 4);
	memcpy(p->dst_gid, wire_v4mapped_prefix, 12);
	memcpy(p->dst_gid + 12, ip->dst, 4);
	p->tclass = ip->tos;
	p->hop_limit = ip->ttl;
	p->flow_label = 0;
	p->l4_off = (uint16_t)l4_off;
	*ip_end = p->l3_off + total;
	return WIRE_DROP_NONE;
}

/*
 * IPv6 checks past the ones wire_classify() made; the same for the GRH of
 * RoCE v1, which has IPv6's layout and the BTH where UDP would be.
 */
static enum wire_drop parse_ipv6(const uint8_t *f, uint32_t len, struct wire_pkt *p,
				 uint32_t *ip_end)
{
	const struct wire_ipv6_hdr *ip = (const struct wire_ipv6_hdr *)(f + p->l3_off);
	uint16_t next = (uint16_t)(p->l3_off + sizeof(*ip));
	uint32_t vtc, plen;

	vtc = wire_get32(ip->vtc_flow);
	plen = wire_get16(ip->payload_len);
	if (plen > len - p->l3_off - sizeof(*ip))
		return WIRE_DROP_IP_LEN;
	/* Extension headers are not used by RoCE v2 (nor v1, whose classifier checked 0x1B). */
	if (!p->roce_v1 && ip->next_header != WIRE_IPPROTO_UDP)
		return WIRE_DROP_NOT_UDP;

	memcpy(p->src_gid, ip->src, 16);
	memcpy(p->dst_gid, ip->dst, 16);
	p->tclass = (uint8_t)(vtc >> 20);
	p->flow_label = vtc & 0xfffff;
	p->hop_limit = ip->hop_limit;
	if (p->roce_v1)
		p->bth_off = next;
	else
		p->l4_off = next;
	*ip_end = next + plen;
	return WIRE_DROP_NONE;
}

/*
 * Pad and payload rules (IBA 9.2, C9-92): data plus pad fill whole 4-byte
 * words, only packets that carry data have pad, FIRST and MIDDLE packets are
 * a whole path MTU (a power of two in 256..4096, so no pad), ONLY and LAST
 * packets at most 4096 bytes and a LAST packet at least one byte.
 */
static enum wire_drop check_payload(const struct wire_pkt *p, uint32_t area,
				    unsigned flags)
{
	wire_op_flags fl = p->op->flags;

	if (!(fl & WIRE_OPF_PAYLOAD)) {
		if (p->pad)
			return WIRE_DROP_BAD_PAD;
		return p->payload_len ? WIRE_DROP_BAD_PAYLOAD_LEN : WIRE_DROP_NONE;
	}
	if (area & 3)
		return WIRE_DROP_BAD_PAD;
	if ((fl & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE)) && p->pad)
		return WIRE_DROP_BAD_PAD;
	if (flags & WIRE_PARSE_SKIP_LEN_RULES)
		return WIRE_DROP_NONE;
	if (fl & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE))
		return is_pmtu(p->payload_len) ? WIRE_DROP_NONE : WIRE_DROP_BAD_PAYLOAD_LEN;
	if (p->payload_len > MAX_PMTU)
		return WIRE_DROP_BAD_PAYLOAD_LEN;
	if ((fl & WIRE_OPF_LAST) && p->payload_len == 0)
		return WIRE_DROP_BAD_PAYLOAD_LEN;
	return WIRE_DROP_NONE;
}

enum wire_drop wire_check_pmtu(const struct wire_pkt *p, uint32_t pmtu)
{
	wire_op_flags fl = p->op->flags;
	uint32_t n = p->payload_len;
	bool ok;

	if (!(fl & WIRE_OPF_PAYLOAD))
		ok = n == 0;
	else if (fl & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE))
		ok = n == pmtu;
	else if (fl & WIRE_OPF_LAST)
		ok = n >= 1 && n <= pmtu;
	else
		ok = n <= pmtu;
	return ok ? WIRE_DROP_NONE : WIRE_DROP_BAD_PAYLOAD_LEN;
}

/* UDP (RoCE v2) after the IP header, to where the BTH starts. */
static enum wire_drop parse_udp(const uint8_t *f, struct wire_pkt *p, enum wire_frame_kind kind,
				uint32_t ip_end)
{
	const struct wire_udp_hdr *udp;

	if (ip_end - p->l4_off < sizeof(*udp))
		return WIRE_DROP_TRUNCATED_UDP;
	udp = (const struct wire_udp_hdr *)(f + p->l4_off);
	if (wire_get16(udp->len) != ip_end - p->l4_off)
		return WIRE_DROP_UDP_LEN;
	p->udp_sport = wire_get16(udp->sport);
	/* The UDP header lies within the IP packet here, as the classifier saw it. */
	if (kind != WIRE_FRAME_ROCE)
		return WIRE_DROP_NOT_ROCE_PORT;
	p->bth_off = (uint16_t)(p->l4_off + sizeof(*udp));
	return WIRE_DROP_NONE;
}

/* The BTH at p->bth_off, the extension headers, payload rules and the ICRC, to @ip_end. */
static enum wire_drop parse_transport(const uint8_t *f, unsigned flags, struct wire_pkt *p,
				      uint32_t ip_end)
{
	const struct wire_bth *bth;
	uint32_t area, qpn, apsn;
	enum wire_drop r;

	if (ip_end - p->bth_off < sizeof(*bth) + WIRE_ICRC_LEN)
		return WIRE_DROP_TRUNCATED_BTH;
	bth = (const struct wire_bth *)(f + p->bth_off);
	p->opcode = bth->opcode;
	p->se = bth->flags & WIRE_BTH_SE;
	p->mig = bth->flags & WIRE_BTH_MIG;
	p->pad = (bth->flags & WIRE_BTH_PAD_MASK) >> WIRE_BTH_PAD_SHIFT;
	p->tver = bth->flags & WIRE_BTH_TVER_MASK;
	p->pkey = wire_get16(bth->pkey);
	qpn = wire_get32(bth->qpn);
	apsn = wire_get32(bth->apsn);
	p->dest_qp = qpn & WIRE_24BIT_MASK;
	p->ackreq = apsn & WIRE_BTH_ACKREQ;
	p->sr_cap = apsn & WIRE_BTH_SR_CAP;
	p->sr_nak = apsn & WIRE_BTH_SR_NAK;
	p->psn = apsn & WIRE_24BIT_MASK;
	p->icrc = wire_icrc_load(f + ip_end - WIRE_ICRC_LEN);
	if (p->tver != WIRE_BTH_TVER)
		return WIRE_DROP_BAD_TVER;
	if (!wire_opcode_valid(p->opcode))
		return WIRE_DROP_UNKNOWN_OPCODE;
	p->op = &wire_opcode[p->opcode];

	if (ip_end - p->bth_off < p->op->hdr_len + (uint32_t)WIRE_ICRC_LEN)
		return WIRE_DROP_TRUNCATED_EXT;
	p->payload_off = p->bth_off + p->op->hdr_len;
	p->payload = f + p->payload_off;
	area = ip_end - WIRE_ICRC_LEN - p->payload_off;
	if (p->pad > area)
		return WIRE_DROP_BAD_PAD;
	p->payload_len = area - p->pad;
	r = check_payload(p, area, flags);
	if (r)
		return r;

	if (!(flags & WIRE_PARSE_SKIP_ICRC) &&
	    wire_icrc(f, p->l3_off, ip_end - WIRE_ICRC_LEN) != p->icrc)
		return WIRE_DROP_BAD_ICRC;
	return WIRE_DROP_NONE;
}

enum wire_drop wire_parse(const void *frame, uint32_t len, unsigned flags,
			  struct wire_pkt *p)
{
	const uint8_t *f = frame;
	const struct wire_eth_hdr *eth = frame;
	struct wire_frame_offsets o;
	enum wire_frame_kind kind;
	uint32_t ip_end;
	enum wire_drop r;

	memset(p, 0, sizeof(*p));
	p->frame = f;
	p->frame_len = len;

	kind = wire_classify_inline(f, len, &o);
	if (!o.l3_off)
		return o.drop;		/* shorter than an Ethernet header */
	memcpy(p->dst_mac, eth->dst, WIRE_ETH_ALEN);
	memcpy(p->src_mac, eth->src, WIRE_ETH_ALEN);
	p->l3_off = o.l3_off;
	p->has_vlan = o.has_vlan;
	p->vlan_tci = o.vlan_tci;
	p->ip_version = o.ip_version;
	p->roce_v1 = o.roce_v1;
	if (o.roce_v1) {
		if (kind != WIRE_FRAME_ROCE)
			return o.drop;
		r = parse_ipv6(f, len, p, &ip_end);
		return r ? r : parse_transport(f, flags, p, ip_end);
	}
	/* Not IP, or an IP header that does not hold together (version, length, IHL). */
	if (!o.l4_off)
		return o.drop;
	if (o.ip_version == 4)
		r = parse_ipv4(f, len, flags, p, o.l4_off, &ip_end);
	else
		r = parse_ipv6(f, len, p, &ip_end);
	if (r)
		return r;
	r = parse_udp(f, p, kind, ip_end);
	return r ? r : parse_transport(f, flags, p, ip_end);
}
