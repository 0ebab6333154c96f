// SPDX-License-Identifier: MIT
/* Invariant CRC of RoCE packets (IBA Annex A17.3.3 for v2, Annex A16 for v1). */
#include <string.h>

#include "uroce/wire.h"
#include "wire_crc32_vec.h"

#define LRH_PLACEHOLDER_LEN 8

/*
 * The masked fields are rewritten in a scratch copy that also takes the
 * next few bytes, up to a multiple of 16 of at least 64: then the CRC runs
 * over that and over the rest of the frame, two calls that take the
 * carry-less multiply paths instead of short byte-wise pieces.
 */
#define ICRC_SCRATCH 128

/*
 * IPv4 without options: the 8 placeholder bytes (whatever precedes the IP
 * header in the frame, read as ones), IPv4, UDP and BTH are 48 bytes that
 * the CRC reads straight from the frame, the masked fields ORed to ones.
 */
#define ICRC_V4_SPAN	48
static const uint8_t icrc_v4_mask[ICRC_V4_SPAN] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,		/* LRH placeholder */
	[8 + 1] = 0xff,						/* IPv4 TOS */
	[8 + 8] = 0xff,						/* TTL */
	[8 + 10] = 0xff, [8 + 11] = 0xff,			/* header checksum */
	[8 + 20 + 6] = 0xff, [8 + 20 + 7] = 0xff,		/* UDP checksum */
	[8 + 20 + 8 + 4] = 0xff,				/* BTH resv8a */
};

/* Where the 48-byte IPv4 span ends (BTH's end) when the packet has one; 0 otherwise. */
static uint32_t v4_span_end(const uint8_t *ip, uint32_t l3_off)
{
	if (ip[0] != 0x45 || l3_off < LRH_PLACEHOLDER_LEN)
		return 0;
	return l3_off + ICRC_V4_SPAN - LRH_PLACEHOLDER_LEN;
}

uint32_t wire_icrc(const void *frame, uint32_t l3_off, uint32_t end)
{
	const uint8_t *ip = (const uint8_t *)frame + l3_off;
	uint8_t buf[ICRC_SCRATCH];
	uint32_t ip_len, l4_len = sizeof(struct wire_udp_hdr), udp_at, covered, extra, n;

	covered = v4_span_end(ip, l3_off);
	if (covered && end >= covered) {
		const uint8_t *rest;
		uint32_t crc;
		size_t used;

		rest = (const uint8_t *)frame + covered;
		crc = wire_crc32_vec_head(0, ip - LRH_PLACEHOLDER_LEN, icrc_v4_mask, ICRC_V4_SPAN,
					  rest, NULL, end - covered, &used);
		if (!used)
			crc = wire_crc32_or_mask(0, ip - LRH_PLACEHOLDER_LEN, icrc_v4_mask,
						 ICRC_V4_SPAN);
		return wire_crc32(crc, rest + used, end - covered - used);
	}

	memset(buf, 0xff, LRH_PLACEHOLDER_LEN);
	if (ip[0] >> 4 == 4) {
		struct wire_ipv4_hdr *h = (struct wire_ipv4_hdr *)(buf + LRH_PLACEHOLDER_LEN);

		ip_len = (ip[0] & 0xf) * 4u;
		/* IPv4 options, if any, are covered as they are. */
		memcpy(h, ip, ip_len);
		h->tos = 0xff;
		h->ttl = 0xff;
		memset(&h->checksum, 0xff, sizeof(h->checksum));
	} else {
		struct wire_ipv6_hdr *h = (struct wire_ipv6_hdr *)(buf + LRH_PLACEHOLDER_LEN);

		ip_len = sizeof(*h);
		memcpy(h, ip, ip_len);
		/* Keep the version nibble; traffic class and flow label become ones. */
		h->vtc_flow.b[0] |= 0x0f;
		h->vtc_flow.b[1] = h->vtc_flow.b[2] = h->vtc_flow.b[3] = 0xff;
		h->hop_limit = 0xff;
		/* A RoCE v1 GRH, masked the same way: the BTH follows it, no UDP. */
		if (h->next_header == WIRE_GRH_NXTHDR_IBA)
			l4_len = 0;
	}
	udp_at = LRH_PLACEHOLDER_LEN + ip_len;
	memcpy(buf + udp_at, ip + ip_len, l4_len + sizeof(struct wire_bth));
	if (l4_len)
		buf[udp_at + 6] = buf[udp_at + 7] = 0xff;		/* UDP checksum */
	buf[udp_at + l4_len + 4] = 0xff;				/* BTH resv8a */

	n = udp_at + l4_len + sizeof(struct wire_bth);
	covered = l3_off + ip_len + l4_len + sizeof(struct wire_bth);
	extra = n < 64 ? 64 - n : (16 - n % 16) % 16;
	if (extra > end - covered)
		extra = end - covered;
	memcpy(buf + n, (const uint8_t *)frame + covered, extra);
	return wire_crc32(wire_crc32(0, buf, n + extra), (const uint8_t *)frame + covered + extra,
			  end - covered - extra);
}

/* wire_icrc_split(), copying the payload to @dst on the way when @dst is set. */
static uint32_t icrc_split(const void *frame, uint32_t l3_off, uint32_t hdr_end,
			   const void *payload, void *dst, uint32_t len)
{
	const uint8_t *ip = (const uint8_t *)frame + l3_off;
	uint32_t crc;
	size_t used = 0;

	/* Nothing between BTH and payload (a middle packet): one carry-less chain over both. */
	if (hdr_end == v4_span_end(ip, l3_off))
		crc = wire_crc32_vec_head(0, ip - LRH_PLACEHOLDER_LEN, icrc_v4_mask, ICRC_V4_SPAN,
					  payload, dst, len, &used);
	if (!used)
		crc = wire_icrc(frame, l3_off, hdr_end);
	if (!dst)
		return wire_crc32(crc, (const uint8_t *)payload + used, len - used);
	return wire_crc32_copy(crc, (uint8_t *)dst + used, (const uint8_t *)payload + used,
			       len - used);
}

uint32_t wire_icrc_split(const void *frame, uint32_t l3_off, uint32_t hdr_end,
			 const void *payload, uint32_t len)
{
	return icrc_split(frame, l3_off, hdr_end, payload, NULL, len);
}

uint32_t wire_pkt_icrc(const struct wire_pkt *p)
{
	uint32_t crc;

	if (p->payload == p->frame + p->payload_off)
		return wire_icrc(p->frame, p->l3_off,
				 p->payload_off + p->payload_len + p->pad);
	crc = icrc_split(p->frame, p->l3_off, p->payload_off, p->payload, NULL, p->payload_len);
	return wire_crc32(crc, p->frame + p->payload_off + p->payload_len, p->pad);
}

uint32_t wire_pkt_icrc_copy(const struct wire_pkt *p, void *dst)
{
	uint32_t crc = icrc_split(p->frame, p->l3_off, p->payload_off, p->payload, dst,
				  p->payload_len);

	return wire_crc32(crc, p->frame + p->payload_off + p->payload_len, p->pad);
}

uint32_t wire_icrc_load(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
	       (uint32_t)b[3] << 24;
}

void wire_icrc_store(void *p, uint32_t icrc)
{
	uint8_t *b = p;

	b[0] = (uint8_t)icrc;
	b[1] = (uint8_t)(icrc >> 8);
	b[2] = (uint8_t)(icrc >> 16);
	b[3] = (uint8_t)(icrc >> 24);
}
