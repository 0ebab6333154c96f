// SPDX-License-Identifier: MIT
/* Parsing: random build->parse round trips for every opcode, and every drop reason provoked. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/wire.h"
#include "wire_testutil.h"

#define ROUND_TRIPS 64

static uint8_t frame[TEST_MAX_FRAME];
static uint8_t payload[4200];

/*
 * Random packets of one opcode (@v1: RoCE v1, its GIDs IPv4-mapped or not),
 * built, parsed and compared with what was asked for.
 */
static void round_trips(unsigned opcode, bool v1)
{
	struct test_rng r;
	char msg[160];

	if (!wire_opcode_valid((uint8_t)opcode))
		return;
	test_rng_seed(&r, (v1 ? 0x5eed1000u : 0x5eed0000u) + opcode);
	for (int k = 0; k < ROUND_TRIPS; k++) {
		static const uint32_t pmtus[] = { 256, 512, 1024, 2048, 4096 };
		struct wire_build_desc d;
		struct wire_pkt p;
		uint32_t n, len;
		const char *bad;

		test_random_desc(&r, (uint8_t)opcode, &d);
		if (v1) {
			d.roce_v1 = true;
			d.ip_version = 6;
		}
		n = test_payload_len(&r, (uint8_t)opcode, pmtus[test_rng_below(&r, 5)]);
		test_rng_fill(&r, payload, n);
		len = wire_build(frame, sizeof(frame), &d, payload, n);
		ck_assert_uint_eq(len, wire_frame_len(&d, n));
		ck_assert_msg(wire_parse(frame, len, 0, &p) == WIRE_DROP_NONE, "0x%02x #%d: %s",
			      opcode, k, wire_drop_name(wire_parse(frame, len, 0, &p)));
		bad = test_pkt_matches_desc(&p, &d, payload, n, msg, sizeof(msg));
		ck_assert_msg(bad == NULL, "opcode 0x%02x packet %d: %s", opcode, k, bad);
		ck_assert_uint_eq(p.frame_len, len);
		ck_assert_uint_eq(p.payload_off + n + p.pad + 4, len);
		ck_assert_uint_eq(wire_icrc(frame, p.l3_off, len - 4), p.icrc);
		ck_assert_uint_eq(p.bth_off, p.l3_off + (v1 ? 40 : d.ip_version == 4 ? 28 : 48));
	}
}

/* Loop over all 256 opcodes, 64 random packets each, seeded by the opcode. */
START_TEST(round_trip)
{
	round_trips((unsigned)_i, false);
}
END_TEST

/* The same as RoCE v1 frames (Annex A16). */
START_TEST(round_trip_v1)
{
	round_trips((unsigned)_i, true);
}
END_TEST

/* ---- Every drop reason, provoked on purpose ---- */

static void fix_ipv4_csum(uint8_t *f, uint32_t l3)
{
	struct wire_ipv4_hdr *ip = (void *)(f + l3);

	memset(&ip->checksum, 0, 2);
	wire_set16(&ip->checksum, wire_ipv4_csum(ip, (ip->version_ihl & 0xfu) * 4));
}

static void set16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

/* A good IPv4 frame of @opcode with @n payload bytes; returns its length. */
static uint32_t good(uint8_t opcode, uint32_t n, uint8_t ipver)
{
	struct wire_build_desc d;
	struct test_rng r;

	test_rng_seed(&r, 42);
	test_random_desc(&r, opcode, &d);
	d.ip_version = ipver;
	d.has_vlan = false;
	memset(d.src_gid, 0, 10);
	memset(d.dst_gid, 0, 10);
	d.src_gid[10] = d.src_gid[11] = d.dst_gid[10] = d.dst_gid[11] = ipver == 4 ? 0xff : 0x11;
	memset(payload, 0x5a, n);
	return wire_build(frame, sizeof(frame), &d, payload, n);
}

#define L3 14
#define SEND_ONLY (WIRE_OPC_RC | WIRE_OP_SEND_ONLY)

/* Each returns the length of a frame that must be dropped for exactly that reason. */
static uint32_t make_truncated_eth(void) { good(SEND_ONLY, 10, 4); return 13; }

static uint32_t make_not_ip(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	set16(frame + 12, WIRE_ETHERTYPE_ARP);
	return len;
}

static uint32_t make_truncated_ip(void) { good(SEND_ONLY, 10, 4); return L3 + 19; }

static uint32_t make_bad_ip_version(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	frame[L3] = 0x65;
	return len;
}

static uint32_t make_bad_ihl(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	frame[L3] = 0x44;
	return len;
}

static uint32_t make_bad_ip_csum(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	frame[L3 + 10] ^= 1;
	return len;
}

static uint32_t make_ip_len(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	set16(frame + L3 + 2, (uint16_t)(len - L3 + 1));
	fix_ipv4_csum(frame, L3);
	return len;
}

static uint32_t make_ip_fragment(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	set16(frame + L3 + 6, WIRE_IPV4_MF);
	fix_ipv4_csum(frame, L3);
	return len;
}

static uint32_t make_not_udp(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	frame[L3 + 9] = 6;
	fix_ipv4_csum(frame, L3);
	return len;
}

static uint32_t make_truncated_udp(void)
{
	good(SEND_ONLY, 10, 4);
	set16(frame + L3 + 2, 20 + 7);
	fix_ipv4_csum(frame, L3);
	return L3 + 27;
}

static uint32_t make_udp_len(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	set16(frame + L3 + 24, (uint16_t)(len - L3 - 20 - 4));
	return len;
}

static uint32_t make_not_roce_port(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	set16(frame + L3 + 22, 4792);
	return len;
}

static uint32_t make_truncated_bth(void)
{
	good(SEND_ONLY, 0, 4);
	/* IP and UDP say: 12 bytes after UDP, a BTH without room for the ICRC. */
	set16(frame + L3 + 2, 20 + 8 + 12);
	set16(frame + L3 + 24, 8 + 12);
	fix_ipv4_csum(frame, L3);
	return L3 + 40;
}

static uint32_t make_bad_tver(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	frame[L3 + 29] |= 1;
	return len;
}

static uint32_t make_unknown_opcode(void)
{
	uint32_t len = good(SEND_ONLY, 12, 4);

	frame[L3 + 28] = 0x15;		/* reserved in RC (RESYNC is RD only) */
	return len;
}

static uint32_t make_truncated_ext(void)
{
	uint32_t len = good(SEND_ONLY, 12, 4);

	frame[L3 + 28] = WIRE_OPC_RC | WIRE_OP_WRITE_ONLY;	/* needs a 16-byte RETH */
	return len;
}

static uint32_t make_bad_pad(void)
{
	uint32_t len = good(WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE, 0, 4);

	frame[L3 + 29] |= 1 << WIRE_BTH_PAD_SHIFT;
	return len;
}

static uint32_t make_bad_payload_len(void)
{
	return good(WIRE_OPC_RC | WIRE_OP_SEND_MIDDLE, 300, 4);
}

static uint32_t make_bad_icrc(void)
{
	uint32_t len = good(SEND_ONLY, 10, 4);

	frame[len - 8] ^= 0x01;		/* a payload bit */
	return len;
}

/* A RoCE v1 frame whose GRH says UDP follows, not the BTH. */
static uint32_t make_bad_grh_nxthdr(void)
{
	uint32_t len = good(SEND_ONLY, 10, 6);

	set16(frame + 12, WIRE_ETHERTYPE_ROCEV1);
	frame[L3 + 6] = WIRE_IPPROTO_UDP;
	return len;
}

static uint32_t (*const make_drop[WIRE_DROP_COUNT])(void) = {
	[WIRE_DROP_TRUNCATED_ETH] = make_truncated_eth,
	[WIRE_DROP_NOT_IP] = make_not_ip,
	[WIRE_DROP_TRUNCATED_IP] = make_truncated_ip,
	[WIRE_DROP_BAD_IP_VERSION] = make_bad_ip_version,
	[WIRE_DROP_BAD_IHL] = make_bad_ihl,
	[WIRE_DROP_BAD_IP_CSUM] = make_bad_ip_csum,
	[WIRE_DROP_IP_LEN] = make_ip_len,
	[WIRE_DROP_IP_FRAGMENT] = make_ip_fragment,
	[WIRE_DROP_NOT_UDP] = make_not_udp,
	[WIRE_DROP_TRUNCATED_UDP] = make_truncated_udp,
	[WIRE_DROP_UDP_LEN] = make_udp_len,
	[WIRE_DROP_NOT_ROCE_PORT] = make_not_roce_port,
	[WIRE_DROP_TRUNCATED_BTH] = make_truncated_bth,
	[WIRE_DROP_BAD_TVER] = make_bad_tver,
	[WIRE_DROP_UNKNOWN_OPCODE] = make_unknown_opcode,
	[WIRE_DROP_TRUNCATED_EXT] = make_truncated_ext,
	[WIRE_DROP_BAD_PAD] = make_bad_pad,
	[WIRE_DROP_BAD_PAYLOAD_LEN] = make_bad_payload_len,
	[WIRE_DROP_BAD_ICRC] = make_bad_icrc,
	[WIRE_DROP_BAD_GRH_NXTHDR] = make_bad_grh_nxthdr,
};

/* Loop over every drop reason: a frame built to break one rule gets exactly that reason. */
START_TEST(drop_reason)
{
	struct wire_drop_stats st = { { 0 } };
	struct wire_pkt p;
	uint8_t *exact;
	uint32_t len;
	enum wire_drop got;

	ck_assert_msg(make_drop[_i] != NULL, "no negative test for drop reason %s",
		      wire_drop_name(_i));
	len = make_drop[_i]();
	/* An exact-size copy, so a read past the end trips ASan. */
	exact = malloc(len);
	ck_assert_ptr_nonnull(exact);
	memcpy(exact, frame, len);
	got = wire_parse(exact, len, 0, &p);
	free(exact);
	ck_assert_msg(got == (enum wire_drop)_i, "wanted %s, got %s", wire_drop_name(_i),
		      wire_drop_name(got));
	st.count[got]++;
	ck_assert_uint_eq(st.count[_i], 1);
}
END_TEST

/* IPv6 variants of the IP-level reasons. */
START_TEST(drop_reason_ipv6)
{
	struct wire_pkt p;
	uint32_t len;

	len = good(SEND_ONLY, 10, 6);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_parse(frame, L3 + 39, 0, &p), WIRE_DROP_TRUNCATED_IP);
	frame[L3] = 0x45;
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_IP_VERSION);
	len = good(SEND_ONLY, 10, 6);
	set16(frame + L3 + 4, (uint16_t)(len - L3 - 40 + 1));
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_IP_LEN);
	len = good(SEND_ONLY, 10, 6);
	frame[L3 + 6] = 0;		/* hop-by-hop options: RoCE v2 uses none */
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NOT_UDP);
	len = good(SEND_ONLY, 10, 6);
	frame[L3 + 1] ^= 0x10;		/* traffic class is masked: still good */
	frame[L3 + 7] ^= 0xff;		/* hop limit too */
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	frame[L3 + 8] ^= 1;		/* the source address is not */
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_ICRC);
}
END_TEST

/* More payload rules (IBA C9-92 and 9.2 pad count). */
START_TEST(payload_rules)
{
	struct wire_pkt p;
	uint32_t len;

	len = good(WIRE_OPC_RC | WIRE_OP_SEND_MIDDLE, 1024, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	len = good(WIRE_OPC_RC | WIRE_OP_WRITE_FIRST, 4096, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	len = good(WIRE_OPC_RC | WIRE_OP_READ_RESP_MIDDLE, 8, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_PAYLOAD_LEN);
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_FIRST, 1022, 4);	/* not a PMTU: pad 2 */
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_PAD);
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_LAST, 0, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_PAYLOAD_LEN);
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 0, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 4096, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 4100, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_PAYLOAD_LEN);
	len = good(WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE, 4, 4);	/* data where none is allowed */
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_PAYLOAD_LEN);
	len = good(WIRE_OPC_RC | WIRE_OP_FETCH_ADD, 8, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_BAD_PAYLOAD_LEN);
	/* Pad larger than the bytes after the headers. */
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 0, 4);
	frame[L3 + 29] |= 3 << WIRE_BTH_PAD_SHIFT;
	ck_assert_uint_eq(wire_parse(frame, len, WIRE_PARSE_SKIP_ICRC, &p), WIRE_DROP_BAD_PAD);
	/* Payload plus pad not a multiple of 4: 7 bytes between headers and ICRC, pad 0. */
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 8, 4) - 1;
	set16(frame + L3 + 2, (uint16_t)(len - L3));
	set16(frame + L3 + 24, (uint16_t)(len - L3 - 20));
	fix_ipv4_csum(frame, L3);
	ck_assert_uint_eq(wire_parse(frame, len, WIRE_PARSE_SKIP_ICRC, &p), WIRE_DROP_BAD_PAD);
	/* ...while 7 bytes of data and 1 of pad is legal. */
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 7, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(p.pad, 1);
}
END_TEST

/* The parse flags skip exactly what they name. */
START_TEST(parse_flags)
{
	struct wire_pkt p;
	uint32_t len;

	len = make_bad_icrc();
	ck_assert_uint_eq(wire_parse(frame, len, WIRE_PARSE_SKIP_ICRC, &p), WIRE_DROP_NONE);
	len = make_bad_ip_csum();
	ck_assert_uint_eq(wire_parse(frame, len, WIRE_PARSE_SKIP_IP_CSUM, &p), WIRE_DROP_NONE);
	len = make_bad_payload_len();
	ck_assert_uint_eq(wire_parse(frame, len, WIRE_PARSE_SKIP_LEN_RULES, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(p.payload_len, 300);
	ck_assert_uint_eq(wire_check_pmtu(&p, 1024), WIRE_DROP_BAD_PAYLOAD_LEN);
	/* Pad rules stay: a pad on an ACK is never right. */
	len = make_bad_pad();
	ck_assert_uint_eq(wire_parse(frame, len, WIRE_PARSE_SKIP_LEN_RULES, &p), WIRE_DROP_BAD_PAD);
}
END_TEST

/* wire_check_pmtu(): the responder's check against its own path MTU. */
START_TEST(check_pmtu)
{
	struct wire_pkt p;
	uint32_t len;

	len = good(WIRE_OPC_RC | WIRE_OP_WRITE_MIDDLE, 1024, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 1024), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 2048), WIRE_DROP_BAD_PAYLOAD_LEN);
	ck_assert_uint_eq(wire_check_pmtu(&p, 512), WIRE_DROP_BAD_PAYLOAD_LEN);
	len = good(WIRE_OPC_RC | WIRE_OP_WRITE_LAST, 1024, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 1024), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 512), WIRE_DROP_BAD_PAYLOAD_LEN);
	len = good(WIRE_OPC_UD | WIRE_OP_SEND_ONLY, 0, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 256), WIRE_DROP_NONE);
	len = good(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 600, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 512), WIRE_DROP_BAD_PAYLOAD_LEN);
	ck_assert_uint_eq(wire_check_pmtu(&p, 1024), WIRE_DROP_NONE);
	len = good(WIRE_OPC_RC | WIRE_OP_READ_REQUEST, 0, 4);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_check_pmtu(&p, 256), WIRE_DROP_NONE);
}
END_TEST

/* Ethernet padding after the IP packet is fine; the IP length decides. */
START_TEST(ethernet_padding)
{
	struct wire_pkt p;
	uint32_t len = good(WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE, 0, 4);

	ck_assert_uint_eq(len, 62);
	memset(frame + len, 0, 8);
	ck_assert_uint_eq(wire_parse(frame, len + 8, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(p.frame_len, len + 8);
	ck_assert_uint_eq(p.payload_len, 0);
}
END_TEST

/*
 * Every prefix of a good frame is rejected, and read only within itself
 * (each prefix is copied into a buffer of exactly its size for ASan).
 * Loop: 0 IPv4, 1 IPv6, 2 VLAN-tagged IPv4, 3 RoCE v1.
 */
START_TEST(every_truncation)
{
	struct wire_build_desc d;
	struct test_rng r;
	uint32_t len;

	test_rng_seed(&r, 9);
	test_random_desc(&r, WIRE_OPC_RC | WIRE_OP_WRITE_ONLY_IMM, &d);
	d.ip_version = _i == 1 || _i == 3 ? 6 : 4;
	d.has_vlan = _i == 2;
	d.roce_v1 = _i == 3;
	len = wire_build(frame, sizeof(frame), &d, "truncate me", 11);
	for (uint32_t n = 0; n < len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		struct wire_pkt p;

		memcpy(cut, frame, n);
		ck_assert_msg(wire_parse(cut, n, 0, &p) != WIRE_DROP_NONE, "prefix %u accepted", n);
		ck_assert_msg(wire_parse(cut, n, WIRE_PARSE_SKIP_ICRC | WIRE_PARSE_SKIP_IP_CSUM |
					 WIRE_PARSE_SKIP_LEN_RULES, &p) != WIRE_DROP_NONE,
			      "prefix %u accepted with checks skipped", n);
		free(cut);
	}
}
END_TEST

Suite *wire_parse_suite(void);

Suite *wire_parse_suite(void)
{
	Suite *s = suite_create("wire_parse");
	TCase *t = tcase_create("round_trip");
	TCase *neg = tcase_create("drop_reasons");

	tcase_set_timeout(t, 60);
	tcase_add_loop_test(t, round_trip, 0, 256);
	tcase_add_loop_test(t, round_trip_v1, 0, 256);
	suite_add_tcase(s, t);

	tcase_add_loop_test(neg, drop_reason, 1, WIRE_DROP_COUNT);
	tcase_add_test(neg, drop_reason_ipv6);
	tcase_add_test(neg, payload_rules);
	tcase_add_test(neg, parse_flags);
	tcase_add_test(neg, check_pmtu);
	tcase_add_test(neg, ethernet_padding);
	tcase_add_loop_test(neg, every_truncation, 0, 4);
	suite_add_tcase(s, neg);
	return s;
}
