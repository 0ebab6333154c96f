// SPDX-License-Identifier: MIT
/* From a packet description to a RoCE v2 or v1 frame: every header, pad and ICRC. */
#include <string.h>

#include "uroce/wire.h"

#define DEFAULT_HOP_LIMIT 64

static uint32_t pad_of(uint32_t payload_len)
{
	return -payload_len & 3;
}

static uint32_t l3_len(const struct wire_build_desc *d)
{
	return d->ip_version == 6 ? sizeof(struct wire_ipv6_hdr) : sizeof(struct wire_ipv4_hdr);
}

static uint32_t l2_len(const struct wire_build_desc *d)
{
	return sizeof(struct wire_eth_hdr) + (d->has_vlan ? sizeof(struct wire_vlan_hdr) : 0);
}

/* UDP's 8 bytes, which RoCE v1 has not. */
static uint32_t l4_len(const struct wire_build_desc *d)
{
	return d->roce_v1 ? 0 : sizeof(struct wire_udp_hdr);
}

uint32_t wire_headers_len(const struct wire_build_desc *d)
{
	if (!wire_opcode_valid(d->opcode) || (d->ip_version != 4 && d->ip_version != 6) ||
	    (d->roce_v1 && d->ip_version != 6))
		return 0;
	return l2_len(d) + l3_len(d) + l4_len(d) + wire_opcode[d->opcode].hdr_len;
}

/* IPv4 total length, IPv6 (and GRH) payload length and UDP length are 16-bit fields. */
static bool ip_len_fits(const struct wire_build_desc *d, uint32_t payload_len)
{
	uint64_t ip_len = (d->ip_version == 4 ? sizeof(struct wire_ipv4_hdr) : 0) +
			  l4_len(d) + wire_opcode[d->opcode].hdr_len +
			  (uint64_t)payload_len + pad_of(payload_len) + WIRE_ICRC_LEN;

	return ip_len <= UINT16_MAX;
}

uint32_t wire_frame_len(const struct wire_build_desc *d, uint32_t payload_len)
{
	uint32_t hdr = wire_headers_len(d);

	if (!hdr || !ip_len_fits(d, payload_len))
		return 0;
	return hdr + payload_len + pad_of(payload_len) + WIRE_ICRC_LEN;
}

uint16_t wire_ipv4_csum(const void *hdr, uint32_t len)
{
	const uint8_t *b = hdr;
	uint64_t sum = 0;
	uint32_t i = 0;

	/*
	 * RFC 1071 one's complement sum, 32 bits at a time in host order: the
	 * folded sum is the byte-swapped big-endian one (RFC 1071 2(B)).
	 */
	for (; i + 4 <= len; i += 4) {
		uint32_t w;

		memcpy(&w, b + i, 4);
		sum += w;
	}
	for (; i + 1 < len; i += 2) {
		uint16_t w;

		memcpy(&w, b + i, 2);
		sum += w;
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	sum = (uint16_t)(sum >> 8 | sum << 8);
#endif
	if (len & 1) {
		sum += (uint32_t)b[len - 1] << 8;
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
	}
	return (uint16_t)~sum;
}

uint16_t wire_udp_sport(uint32_t src_qp, uint32_t dest_qp)
{
	/* Fibonacci hashing of both QPNs: stable per flow, spread over 16384 ports. */
	uint64_t h = ((uint64_t)src_qp << 24 | dest_qp) * 0x9e3779b97f4a7c15ull;

	return (uint16_t)(WIRE_UDP_SPORT_MIN | (h >> 50));
}

uint16_t wire_path_udp_sport(uint32_t flow_label, uint32_t src_qp, uint32_t dest_qp)
{
	uint32_t fl = flow_label & 0xfffff;

	if (!fl)
		return wire_udp_sport(src_qp, dest_qp);
	return (uint16_t)(WIRE_UDP_SPORT_MIN | ((fl & 0x3fff) ^ (fl >> 14)));
}

/*
 * The IPv4 header checksum from the values written, not from the header
 * just stored: reading those narrow stores back as words stalls the load.
 */
static uint16_t ipv4_csum_of(const struct wire_build_desc *d, uint8_t ttl, uint16_t total_len)
{
	const uint8_t *s = d->src_gid + 12, *t = d->dst_gid + 12;
	uint32_t sum = (0x45u << 8 | d->tclass) + total_len + d->ip_id + WIRE_IPV4_DF +
		       ((uint32_t)ttl << 8 | WIRE_IPPROTO_UDP) +
		       (uint32_t)(s[0] << 8 | s[1]) + (uint32_t)(s[2] << 8 | s[3]) +
		       (uint32_t)(t[0] << 8 | t[1]) + (uint32_t)(t[2] << 8 | t[3]);

	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static void build_ext(uint8_t *bth, const struct wire_opcode_info *op,
		      const struct wire_build_desc *d)
{
	if (op->hdrs & WIRE_HDR_RETH) {
		struct wire_reth *h = (void *)(bth + op->off[WIRE_EXT_RETH]);

		wire_set64(&h->va, d->reth.va);
		wire_set32(&h->rkey, d->reth.rkey);
		wire_set32(&h->dma_len, d->reth.len);
	}
	if (op->hdrs & WIRE_HDR_AETH) {
		struct wire_aeth *h = (void *)(bth + op->off[WIRE_EXT_AETH]);

		wire_set32(&h->syn_msn, (uint32_t)d->aeth.syndrome << 24 |
					(d->aeth.msn & WIRE_24BIT_MASK));
	}
	if (op->hdrs & WIRE_HDR_ATOMIC_ETH) {
		struct wire_atomic_eth *h = (void *)(bth + op->off[WIRE_EXT_ATOMIC_ETH]);

		wire_set64(&h->va, d->atomic.va);
		wire_set32(&h->rkey, d->atomic.rkey);
		wire_set64(&h->swap_add, d->atomic.swap_add);
		wire_set64(&h->compare, d->atomic.compare);
	}
	if (op->hdrs & WIRE_HDR_ATOMIC_ACK_ETH) {
		struct wire_atomic_ack_eth *h = (void *)(bth + op->off[WIRE_EXT_ATOMIC_ACK_ETH]);

		wire_set64(&h->orig, d->atomic_orig);
	}
	if (op->hdrs & WIRE_HDR_IMMDT) {
		struct wire_immdt *h = (void *)(bth + op->off[WIRE_EXT_IMMDT]);

		wire_set32(&h->imm, d->imm);
	}
	if (op->hdrs & WIRE_HDR_IETH) {
		struct wire_ieth *h = (void *)(bth + op->off[WIRE_EXT_IETH]);

		wire_set32(&h->rkey, d->ieth_rkey);
	}
	if (op->hdrs & WIRE_HDR_DETH) {
		struct wire_deth *h = (void *)(bth + op->off[WIRE_EXT_DETH]);

		wire_set32(&h->qkey, d->deth.qkey);
		wire_set32(&h->src_qp, d->deth.src_qp & WIRE_24BIT_MASK);
	}
	if (op->hdrs & WIRE_HDR_FETH) {
		struct wire_feth *h = (void *)(bth + op->off[WIRE_EXT_FETH]);

		wire_set32(&h->bits, ((uint32_t)d->feth.sel << WIRE_FETH_SEL_SHIFT &
				      WIRE_FETH_SEL_MASK) | (d->feth.plt & WIRE_FETH_PLT_MASK));
	}
	if (op->hdrs & WIRE_HDR_XRCETH) {
		struct wire_xrceth *h = (void *)(bth + op->off[WIRE_EXT_XRCETH]);

		wire_set32(&h->srqn, d->xrc_srqn & WIRE_SRQN_MASK);
	}
	if (op->hdrs & WIRE_HDR_CNP)
		memset(bth + op->off[WIRE_EXT_CNP], 0, sizeof(struct wire_cnp));
}

uint32_t wire_build_headers(void *buf, const struct wire_build_desc *d,
			    uint32_t payload_len)
{
	const struct wire_opcode_info *op = &wire_opcode[d->opcode];
	uint32_t hdr_len = wire_headers_len(d);
	uint32_t pad = pad_of(payload_len);
	uint32_t ip_payload, off;
	uint16_t type;
	uint8_t *f = buf;
	struct wire_eth_hdr *eth = buf;
	struct wire_udp_hdr *udp;
	struct wire_bth *bth;

	if (!hdr_len || !ip_len_fits(d, payload_len))
		return 0;
	ip_payload = l4_len(d) + op->hdr_len + payload_len + pad + WIRE_ICRC_LEN;
	type = d->roce_v1 ? WIRE_ETHERTYPE_ROCEV1 :
	       d->ip_version == 6 ? WIRE_ETHERTYPE_IPV6 : WIRE_ETHERTYPE_IPV4;

	memcpy(eth->dst, d->dst_mac, WIRE_ETH_ALEN);
	memcpy(eth->src, d->src_mac, WIRE_ETH_ALEN);
	off = sizeof(*eth);
	if (d->has_vlan) {
		struct wire_vlan_hdr *vlan = (void *)(f + off);

		wire_set16(&eth->ethertype, WIRE_ETHERTYPE_VLAN);
		wire_set16(&vlan->tci, d->vlan_tci);
		wire_set16(&vlan->ethertype, type);
		off += sizeof(*vlan);
	} else {
		wire_set16(&eth->ethertype, type);
	}

	if (d->ip_version == 4) {
		struct wire_ipv4_hdr *ip = (void *)(f + off);

		ip->version_ihl = 0x45;
		ip->tos = d->tclass;
		wire_set16(&ip->total_len, (uint16_t)(sizeof(*ip) + ip_payload));
		wire_set16(&ip->id, d->ip_id);
		wire_set16(&ip->frag_off, WIRE_IPV4_DF);
		ip->ttl = d->hop_limit ? d->hop_limit : DEFAULT_HOP_LIMIT;
		ip->protocol = WIRE_IPPROTO_UDP;
		memcpy(ip->src, d->src_gid + 12, 4);
		memcpy(ip->dst, d->dst_gid + 12, 4);
		wire_set16(&ip->checksum, ipv4_csum_of(d, ip->ttl, (uint16_t)(sizeof(*ip) + ip_payload)));
		off += sizeof(*ip);
	} else {
		/* IPv6, or the GRH of RoCE v1 (IBA 8.3.1), which has its layout. */
		struct wire_ipv6_hdr *ip = (void *)(f + off);

		wire_set32(&ip->vtc_flow, 6u << 28 | (uint32_t)d->tclass << 20 |
					  (d->flow_label & 0xfffff));
		wire_set16(&ip->payload_len, (uint16_t)ip_payload);
		ip->next_header = d->roce_v1 ? WIRE_GRH_NXTHDR_IBA : WIRE_IPPROTO_UDP;
		ip->hop_limit = d->hop_limit ? d->hop_limit : DEFAULT_HOP_LIMIT;
		memcpy(ip->src, d->src_gid, 16);
		memcpy(ip->dst, d->dst_gid, 16);
		off += sizeof(*ip);
	}

	if (!d->roce_v1) {
		udp = (void *)(f + off);
		wire_set16(&udp->sport, d->udp_sport ? d->udp_sport :
						       wire_udp_sport(0, d->dest_qp));
		wire_set16(&udp->dport, WIRE_ROCEV2_PORT);
		wire_set16(&udp->len, (uint16_t)ip_payload);
		memset(&udp->checksum, 0, sizeof(udp->checksum));
		off += sizeof(*udp);
	}

	bth = (void *)(f + off);
	bth->opcode = d->opcode;
	bth->flags = (uint8_t)((d->se ? WIRE_BTH_SE : 0) | (d->mig ? WIRE_BTH_MIG : 0) |
			       pad << WIRE_BTH_PAD_SHIFT | WIRE_BTH_TVER);
	wire_set16(&bth->pkey, d->pkey ? d->pkey : WIRE_DEFAULT_PKEY);
	/* Annex A17.9.3: a CNP sets BECN, bit 6 of the byte before DestQP. */
	wire_set32(&bth->qpn, (op->flags & WIRE_OPF_CNP ? 0x40000000u : 0) |
			      (d->dest_qp & WIRE_24BIT_MASK));
	wire_set32(&bth->apsn, (d->ackreq ? WIRE_BTH_ACKREQ : 0) | (d->sr_cap ? WIRE_BTH_SR_CAP : 0) |
			       (d->sr_nak ? WIRE_BTH_SR_NAK : 0) | (d->psn & WIRE_24BIT_MASK));
	build_ext(f + off, op, d);
	return hdr_len;
}

/* RFC 8200 8.1: the UDP checksum is mandatory over IPv6. */
static void udp6_checksum(uint8_t *f, uint32_t l3_off)
{
	struct wire_ipv6_hdr *ip = (void *)(f + l3_off);
	struct wire_udp_hdr *udp = (void *)(f + l3_off + sizeof(*ip));
	uint32_t len = wire_get16(udp->len), sum = 0;
	const uint8_t *b = (const uint8_t *)udp;
	uint16_t csum;

	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)(ip->src[i] << 8 | ip->src[i + 1]) +
		       (uint32_t)(ip->dst[i] << 8 | ip->dst[i + 1]);
	sum += len + WIRE_IPPROTO_UDP;
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)b[i] << 8 | b[i + 1];
	if (len & 1)
		sum += (uint32_t)b[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	csum = (uint16_t)~sum;
	wire_set16(&udp->checksum, csum ? csum : 0xffff);
}

uint32_t wire_seal(void *frame, uint32_t hdr_len, uint32_t payload_len)
{
	uint8_t *f = frame;
	uint32_t pad = pad_of(payload_len);
	uint32_t end = hdr_len + payload_len + pad;
	uint32_t l3_off = sizeof(struct wire_eth_hdr);
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

	if (type == WIRE_ETHERTYPE_VLAN) {
		l3_off += sizeof(struct wire_vlan_hdr);
		type = (uint16_t)(f[16] << 8 | f[17]);
	}
	memset(f + hdr_len + payload_len, 0, pad);
	wire_icrc_store(f + end, wire_icrc(f, l3_off, end));
	if (type == WIRE_ETHERTYPE_IPV6)
		udp6_checksum(f, l3_off);
	return end + WIRE_ICRC_LEN;
}

uint32_t wire_build(void *buf, size_t cap, const struct wire_build_desc *d,
		    const void *payload, uint32_t payload_len)
{
	uint32_t total = wire_frame_len(d, payload_len);
	uint32_t hdr;

	if (!total || total > cap)
		return 0;
	hdr = wire_build_headers(buf, d, payload_len);
	if (payload_len)
		memcpy((uint8_t *)buf + hdr, payload, payload_len);
	return wire_seal(buf, hdr, payload_len);
}
