/* SPDX-License-Identifier: MIT */
/* Helpers shared by the wire unit tests, the fuzz targets and the oracle packet generator. */
#ifndef UROCE_TESTS_WIRE_TESTUTIL_H
#define UROCE_TESTS_WIRE_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>

#include "uroce/wire.h"

/* Largest frame the helpers build: VLAN + IPv6 + every header + 4096 payload + pad + ICRC. */
#define TEST_MAX_FRAME 4400

/* xorshift64*: a seeded, reproducible stream, the same on every machine. */
struct test_rng {
	uint64_t s;
};

void test_rng_seed(struct test_rng *r, uint64_t seed);
uint64_t test_rng_next(struct test_rng *r);
uint32_t test_rng_below(struct test_rng *r, uint32_t n);
void test_rng_fill(struct test_rng *r, void *buf, size_t len);

/* A payload length that @opcode allows on a path MTU of @pmtu (IBA C9-92). */
uint32_t test_payload_len(struct test_rng *r, uint8_t opcode, uint32_t pmtu);

/*
 * A description of @opcode with every field random: IPv4 or IPv6, VLAN or
 * not, random addresses, traffic class, flow label, keys, PSN, QPN...
 */
void test_random_desc(struct test_rng *r, uint8_t opcode, struct wire_build_desc *d);

/* The description that rebuilds the packet a view came from (IPv4 id read from the frame). */
void test_desc_from_pkt(const struct wire_pkt *p, struct wire_build_desc *d);

/*
 * Does a parsed view show what @d and @payload described?  Applies the
 * builder's documented defaults (P_Key 0 -> 0xffff, hop limit 0 -> 64,
 * UDP source port 0 -> wire_udp_sport()).
 * Return: NULL, or a message naming the first field that differs (in @msg).
 */
const char *test_pkt_matches_desc(const struct wire_pkt *p, const struct wire_build_desc *d,
				  const uint8_t *payload, uint32_t payload_len,
				  char *msg, size_t cap);

#endif
