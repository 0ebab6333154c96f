// SPDX-License-Identifier: MIT
/* Invariant CRC of RoCE v2 packets (IBA Annex A17.3.3). */
#include <string.h>

#include "uroce/wire.h"

#define LRH_PLACEHOLDER_LEN 8

uint32_t wire_icrc(const void *frame, uint32_t l3_off, uint32_t end)
{
	const uint8_t *ip = (const uint8_t *)frame + l3_off;
	uint8_t pseudo[LRH_PLACEHOLDER_LEN + sizeof(struct wire_ipv6_hdr)];
	uint8_t udp_bth[sizeof(struct wire_udp_hdr) + sizeof(struct wire_bth)];
	uint32_t ip_len, fixed_len, crc;

	memset(pseudo, 0xff, LRH_PLACEHOLDER_LEN);
	if (ip[0] >> 4 == 4) {
		struct wire_ipv4_hdr *h = (struct wire_ipv4_hdr *)(pseudo + LRH_PLACEHOLDER_LEN);

		ip_len = (ip[0] & 0xf) * 4u;
		fixed_len = sizeof(*h);
		memcpy(h, ip, fixed_len);
		h->tos = 0xff;
		h->ttl = 0xff;
		memset(&h->checksum, 0xff, sizeof(h->checksum));
	} else {
		struct wire_ipv6_hdr *h = (struct wire_ipv6_hdr *)(pseudo + LRH_PLACEHOLDER_LEN);

		ip_len = fixed_len = sizeof(*h);
		memcpy(h, ip, fixed_len);
		/* Keep the version nibble; traffic class and flow label become ones. */
		h->vtc_flow.b[0] |= 0x0f;
		h->vtc_flow.b[1] = h->vtc_flow.b[2] = h->vtc_flow.b[3] = 0xff;
		h->hop_limit = 0xff;
	}
	crc = wire_crc32(0, pseudo, LRH_PLACEHOLDER_LEN + fixed_len);
	/* IPv4 options, if any, are covered as they are. */
	crc = wire_crc32(crc, ip + fixed_len, ip_len - fixed_len);

	memcpy(udp_bth, ip + ip_len, sizeof(udp_bth));
	udp_bth[6] = udp_bth[7] = 0xff;				/* UDP checksum */
	udp_bth[sizeof(struct wire_udp_hdr) + 4] = 0xff;	/* BTH resv8a */
	crc = wire_crc32(crc, udp_bth, sizeof(udp_bth));

	return wire_crc32(crc, ip + ip_len + sizeof(udp_bth),
			  end - (l3_off + ip_len + sizeof(udp_bth)));
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
