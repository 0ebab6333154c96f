/* SPDX-License-Identifier: MIT */
/* The receive classifier's walk, inline for wire_parse(); wire_classify() is the same, called. */
#ifndef UROCE_WIRE_CLASSIFY_H
#define UROCE_WIRE_CLASSIFY_H

#include <string.h>

#include "uroce/wire.h"

#define ICMP_HLEN		8	/* type, code, checksum and 4 bytes the message defines */
#define ICMP_DEST_UNREACH	3	/* RFC 792 */
#define ICMP_PORT_UNREACH	3
#define ICMPV6_DEST_UNREACH	1	/* RFC 4443 3.1 */
#define ICMPV6_PORT_UNREACH	4
#define ICMPV6_NS		135	/* RFC 4861 4.3, 4.4 */
#define ICMPV6_NA		136
#define MAX_IPV6_EXT		8

/* IPv6 extension headers that only chain to the next one (RFC 8200 4.1). */
static inline bool ipv6_ext_chains(uint8_t nh)
{
	return nh == 0 || nh == 43 || nh == 60;
}

/* The datagram an ICMP error quotes (its IP header and 8 bytes more): did it go to UDP 4791? */
static inline bool quotes_roce(const uint8_t *q, uint32_t room, uint8_t version)
{
	if (version == 4) {
		uint32_t ihl;

		if (room < sizeof(struct wire_ipv4_hdr))
			return false;
		ihl = (q[0] & 0xfu) * 4;
		return q[9] == WIRE_IPPROTO_UDP && ihl >= sizeof(struct wire_ipv4_hdr) &&
		       room >= ihl + 4 && wire_load16(q + ihl + 2) == WIRE_ROCEV2_PORT;
	}
	return room >= sizeof(struct wire_ipv6_hdr) + 4 && q[6] == WIRE_IPPROTO_UDP &&
	       wire_load16(q + sizeof(struct wire_ipv6_hdr) + 2) == WIRE_ROCEV2_PORT;
}

/* IPv4 header: whole (version, IHL), then where L4 is; false if it is not. */
static inline bool walk_ipv4(const uint8_t *f, uint32_t len, struct wire_frame_offsets *o)
{
	const uint8_t *ip = f + o->l3_off;
	uint32_t room = len - o->l3_off, ihl, total;

	o->drop = WIRE_DROP_TRUNCATED_IP;
	if (room < sizeof(struct wire_ipv4_hdr))
		return false;
	o->drop = WIRE_DROP_BAD_IP_VERSION;
	if (ip[0] >> 4 != 4)
		return false;
	ihl = (ip[0] & 0xfu) * 4;
	o->drop = WIRE_DROP_BAD_IHL;
	if (ihl < sizeof(struct wire_ipv4_hdr) || ihl > room)
		return false;
	o->l4_off = (uint16_t)(o->l3_off + ihl);
	/* A later fragment carries no L4 header; the first carries all of it. */
	o->l4_proto = wire_load16(ip + 6) & WIRE_IPV4_OFFMASK ? WIRE_IPPROTO_NONE : ip[9];
	total = wire_load16(ip + 2);
	o->drop = WIRE_DROP_IP_LEN;
	if (total < ihl)
		return false;
	o->ip_end = total < room ? o->l3_off + total : len;
	return true;
}

/* IPv6 header: whole (version), then past the extension headers that only chain. */
static inline bool walk_ipv6(const uint8_t *f, uint32_t len, struct wire_frame_offsets *o)
{
	const uint8_t *ip = f + o->l3_off;
	uint32_t off = o->l3_off + (uint32_t)sizeof(struct wire_ipv6_hdr), end;
	uint8_t nh;

	o->drop = WIRE_DROP_TRUNCATED_IP;
	if (len - o->l3_off < sizeof(struct wire_ipv6_hdr))
		return false;
	o->drop = WIRE_DROP_BAD_IP_VERSION;
	if (ip[0] >> 4 != 6)
		return false;
	end = off + wire_load16(ip + 4);
	o->ip_end = end < len ? end : len;
	nh = ip[6];
	for (int i = 0; i < MAX_IPV6_EXT && ipv6_ext_chains(nh); i++) {
		if (off + 2 > o->ip_end)
			break;
		nh = f[off];
		off += (f[off + 1] + 1u) * 8;
	}
	o->l4_off = (uint16_t)off;
	o->l4_proto = nh;
	return true;
}

/*
 * RoCE v1: a GRH (IPv6's layout, IBA 8.3.1) walk_ipv6() found whole, whose
 * next header must be the BTH; there is no L4 header.
 */
static inline enum wire_frame_kind grh_bth(const uint8_t *f, struct wire_frame_offsets *o)
{
	o->l4_off = 0;
	o->l4_proto = 0;
	o->drop = WIRE_DROP_BAD_GRH_NXTHDR;
	if (f[o->l3_off + 6] != WIRE_GRH_NXTHDR_IBA)
		return WIRE_FRAME_OTHER;
	o->bth_off = (uint16_t)(o->l3_off + sizeof(struct wire_ipv6_hdr));
	o->drop = WIRE_DROP_NONE;
	return WIRE_FRAME_ROCE;
}

/* The L4 header within the IP packet. */
static inline enum wire_frame_kind walk_l4(const uint8_t *f, struct wire_frame_offsets *o)
{
	const uint8_t *h = f + o->l4_off;
	uint32_t room = o->l4_off < o->ip_end ? o->ip_end - o->l4_off : 0;

	o->drop = WIRE_DROP_NOT_UDP;
	switch (o->l4_proto) {
	case WIRE_IPPROTO_UDP:
		o->drop = WIRE_DROP_TRUNCATED_UDP;
		if (room < sizeof(struct wire_udp_hdr))
			return WIRE_FRAME_IP;
		o->drop = WIRE_DROP_NOT_ROCE_PORT;
		if (wire_load16(h + 2) != WIRE_ROCEV2_PORT)
			return WIRE_FRAME_IP;
		o->bth_off = (uint16_t)(o->l4_off + sizeof(struct wire_udp_hdr));
		/* RoCE v2 carries no IPv6 extension headers: a receiver finds no UDP after IP. */
		o->drop = o->ip_version == 6 &&
			  o->l4_off != o->l3_off + sizeof(struct wire_ipv6_hdr) ?
			  WIRE_DROP_NOT_UDP : WIRE_DROP_NONE;
		return WIRE_FRAME_ROCE;
	case WIRE_IPPROTO_ICMP:
		if (o->ip_version == 4 && room >= ICMP_HLEN && h[0] == ICMP_DEST_UNREACH &&
		    h[1] == ICMP_PORT_UNREACH && quotes_roce(h + ICMP_HLEN, room - ICMP_HLEN, 4))
			return WIRE_FRAME_ICMP_ROCE;
		return WIRE_FRAME_IP;
	case WIRE_IPPROTO_ICMPV6:
		if (o->ip_version != 6 || room < ICMP_HLEN)
			return WIRE_FRAME_IP;
		if (h[0] == ICMPV6_DEST_UNREACH && h[1] == ICMPV6_PORT_UNREACH &&
		    quotes_roce(h + ICMP_HLEN, room - ICMP_HLEN, 6))
			return WIRE_FRAME_ICMP_ROCE;
		if (h[0] == ICMPV6_NS || h[0] == ICMPV6_NA)
			return WIRE_FRAME_ND;
		return WIRE_FRAME_IP;
	default:
		return WIRE_FRAME_IP;
	}
}

/*
 * wire_classify() itself, inline: wire_parse() starts every received packet
 * with it, and as a call it cost 15% of a parse without the ICRC.
 */
static inline enum wire_frame_kind wire_classify_inline(const void *frame, uint32_t len,
							struct wire_frame_offsets *o)
{
	const uint8_t *f = frame;
	bool whole;

	memset(o, 0, sizeof(*o));
	o->drop = WIRE_DROP_TRUNCATED_ETH;
	if (len < sizeof(struct wire_eth_hdr))
		return WIRE_FRAME_MALFORMED;
	o->ethertype = wire_load16(f + 12);
	o->l3_off = sizeof(struct wire_eth_hdr);
	if (o->ethertype == WIRE_ETHERTYPE_VLAN) {
		if (len < sizeof(struct wire_eth_hdr) + sizeof(struct wire_vlan_hdr))
			return WIRE_FRAME_MALFORMED;
		o->has_vlan = true;
		o->vlan_tci = wire_load16(f + sizeof(struct wire_eth_hdr));
		o->ethertype = wire_load16(f + sizeof(struct wire_eth_hdr) + 2);
		o->l3_off += sizeof(struct wire_vlan_hdr);
	}
	o->drop = WIRE_DROP_NOT_IP;
	/* IP first: it is what a RoCE receiver gets nearly always. */
	if (o->ethertype == WIRE_ETHERTYPE_IPV4) {
		o->ip_version = 4;
		whole = walk_ipv4(f, len, o);
	} else if (o->ethertype == WIRE_ETHERTYPE_IPV6) {
		o->ip_version = 6;
		whole = walk_ipv6(f, len, o);
	} else if (o->ethertype == WIRE_ETHERTYPE_ROCEV1) {
		o->ip_version = 6;
		o->roce_v1 = true;
		return walk_ipv6(f, len, o) ? grh_bth(f, o) : WIRE_FRAME_MALFORMED;
	} else {
		return o->ethertype == WIRE_ETHERTYPE_ARP ? WIRE_FRAME_ARP : WIRE_FRAME_OTHER;
	}
	return whole ? walk_l4(f, o) : WIRE_FRAME_MALFORMED;
}

#endif
