// SPDX-License-Identifier: MIT
/* ICRC (IBA Annexes A17.3.3, A16): known answers, and exactly which bits it covers. */
#include <check.h>
#include <string.h>

#include "uroce/wire.h"
#include "wire_testutil.h"

/*
 * Known answer 1, from scapy's test/contrib/roce.uts ("RoCE layer"): an
 * UC SEND_ONLY built by scapy (MigReq 1, PadCnt 2, DestQP 211, PSN 13571856,
 * IP TOS 0x01, id 1144, DF) whose ICRC scapy asserts is 0x78f353f3 (the four
 * bytes as sent: 78 f3 53 f3).  Bytes as scapy 2.5 builds that packet.
 */
static const uint8_t scapy_uc_send_only[78] = {
	0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x24, 0x8a, 0x07, 0xa8, 0xfa, 0x22, 0x08, 0x00,
	0x45, 0x01, 0x00, 0x40, 0x04, 0x78, 0x40, 0x00, 0x40, 0x11, 0xb4, 0xd5,
	0xc0, 0xa8, 0x00, 0x07, 0xc0, 0xa8, 0x00, 0x07,
	0xc0, 0x00, 0x12, 0xb7, 0x00, 0x2c, 0xac, 0xa2,
	0x24, 0x60, 0xff, 0xff, 0x00, 0x00, 0x00, 0xd3, 0x00, 0xcf, 0x17, 0x10,
	0x46, 0x30, 0x81, 0x8b, 0xe2, 0x89, 0x35, 0xd9, 0x0e, 0x9a, 0x95, 0x50,
	0x54, 0x01, 0xbe, 0x88, 0x5e, 0x50, 0x00, 0x00,
	0x78, 0xf3, 0x53, 0xf3,
};

/*
 * Known answer 2, from the same file ("RoCE CNP captured on ConnectX-4 Lx"):
 * a CNP a Mellanox ConnectX-4 Lx sent (ECN CE in TOS 0xc2, BECN set, UDP
 * source port 0), ICRC 0x82fd002a as sent: 82 fd 00 2a.
 */
static const uint8_t scapy_cx4lx_cnp[74] = {
	0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00,
	0x45, 0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61,
	0x0a, 0x00, 0x11, 0x01, 0x0a, 0x00, 0x12, 0x01,
	0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00,
	0x81, 0x00, 0xff, 0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00,
	0x82, 0xfd, 0x00, 0x2a,
};

static void check_known_answer(const uint8_t *frame, uint32_t len, const uint8_t want[4])
{
	struct wire_pkt p;
	uint32_t icrc = wire_icrc(frame, 14, len - 4);
	uint8_t sent[4];

	wire_icrc_store(sent, icrc);
	ck_assert_msg(!memcmp(sent, want, 4), "ICRC bytes %02x %02x %02x %02x", sent[0], sent[1],
		      sent[2], sent[3]);
	ck_assert_uint_eq(wire_parse(frame, len, 0, &p), WIRE_DROP_NONE);
	ck_assert_uint_eq(p.icrc, icrc);
}

START_TEST(scapy_uc_send_only_icrc)
{
	static const uint8_t want[4] = { 0x78, 0xf3, 0x53, 0xf3 };
	struct wire_pkt p;

	check_known_answer(scapy_uc_send_only, sizeof(scapy_uc_send_only), want);
	wire_parse(scapy_uc_send_only, sizeof(scapy_uc_send_only), 0, &p);
	ck_assert_str_eq(p.op->name, "UC_SEND_ONLY");
	ck_assert_uint_eq(p.pad, 2);
	ck_assert_uint_eq(p.payload_len, 18);
	ck_assert_uint_eq(p.dest_qp, 211);
	ck_assert_uint_eq(p.psn, 13571856);
	ck_assert(p.mig);
}
END_TEST

START_TEST(scapy_cx4lx_cnp_icrc)
{
	static const uint8_t want[4] = { 0x82, 0xfd, 0x00, 0x2a };
	struct wire_pkt p;

	check_known_answer(scapy_cx4lx_cnp, sizeof(scapy_cx4lx_cnp), want);
	wire_parse(scapy_cx4lx_cnp, sizeof(scapy_cx4lx_cnp), 0, &p);
	ck_assert_str_eq(p.op->name, "CNP");
	ck_assert_uint_eq(p.dest_qp, 0x118);
	ck_assert_uint_eq(p.tclass & WIRE_ECN_MASK, WIRE_ECN_ECT0);
	ck_assert_uint_eq(p.payload_len, 0);
}
END_TEST

/*
 * Known answer 3, RoCE v1 (Annex A16): an RC SEND_ONLY (SE, AckReq, DestQP
 * 0x123, PSN 0xabcd, "roce v1 hello" and 3 bytes of pad) in a GRH of TClass
 * 0x28, flow label 0x12345, hop limit 1 between fe80::1:2ff:fe00:1 and
 * fe80::1:2ff:fe00:2, laid out by scapy's Ether / GRH / BTH layers
 * (scapy.contrib.roce), its ICRC by Python's zlib.crc32 over 8 bytes of
 * ones, the GRH with TClass, flow label and hop limit as ones, the BTH
 * with resv8a as ones, and the rest: 0x744dbf8f, sent 8f bf 4d 74.  tshark
 * dissects it as InfiniBand GRH + BTH with those fields.
 */
static const uint8_t scapy_v1_send_only[86] = {
	0x02, 0x00, 0x00, 0x00, 0x00, 0x02, 0x02, 0x00, 0x00, 0x00, 0x00, 0x01, 0x89, 0x15,
	0x62, 0x81, 0x23, 0x45, 0x00, 0x20, 0x1b, 0x01, 0xfe, 0x80, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x01, 0x02, 0xff, 0xfe, 0x00, 0x00, 0x01, 0xfe, 0x80, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x02, 0xff, 0xfe, 0x00, 0x00, 0x02, 0x04, 0xb0,
	0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0x00, 0xab, 0xcd, 0x72, 0x6f, 0x63, 0x65,
	0x20, 0x76, 0x31, 0x20, 0x68, 0x65, 0x6c, 0x6c, 0x6f, 0x00, 0x00, 0x00, 0x8f, 0xbf,
	0x4d, 0x74,
};

/* The known answer, and wire_build() making the same bytes from a description. */
START_TEST(scapy_v1_send_only_icrc)
{
	static const uint8_t want[4] = { 0x8f, 0xbf, 0x4d, 0x74 };
	struct wire_build_desc d = {
		.src_mac = { 2, 0, 0, 0, 0, 1 }, .dst_mac = { 2, 0, 0, 0, 0, 2 },
		.ip_version = 6, .roce_v1 = true,
		.src_gid = { 0xfe, 0x80, [9] = 1, 2, 0xff, 0xfe, 0, 0, 1 },
		.dst_gid = { 0xfe, 0x80, [9] = 1, 2, 0xff, 0xfe, 0, 0, 2 },
		.tclass = 0x28, .flow_label = 0x12345, .hop_limit = 1,
		.opcode = WIRE_OPC_RC | WIRE_OP_SEND_ONLY, .se = true, .ackreq = true,
		.dest_qp = 0x123, .psn = 0xabcd,
	};
	uint8_t f[sizeof(scapy_v1_send_only)];
	struct wire_pkt p;

	check_known_answer(scapy_v1_send_only, sizeof(scapy_v1_send_only), want);
	ck_assert_uint_eq(wire_parse(scapy_v1_send_only, sizeof(scapy_v1_send_only), 0, &p),
			  WIRE_DROP_NONE);
	ck_assert(p.roce_v1);
	ck_assert_uint_eq(p.bth_off, 54);
	ck_assert_uint_eq(p.tclass, 0x28);
	ck_assert_uint_eq(p.flow_label, 0x12345);
	ck_assert_uint_eq(p.hop_limit, 1);
	ck_assert_uint_eq(p.payload_len, 13);
	ck_assert_uint_eq(wire_build(f, sizeof(f), &d, "roce v1 hello", 13), sizeof(f));
	ck_assert_mem_eq(f, scapy_v1_send_only, sizeof(f));
}
END_TEST

/* Masked bytes relative to the IP header, per IP version (Annex A17.3.3, A16 for v1). */
static bool masked(const struct wire_pkt *p, uint32_t off, uint8_t bit)
{
	uint32_t ip = off - p->l3_off, udp = off - p->l4_off;

	if (p->roce_v1)
		;	/* no UDP */
	else if (off >= p->l4_off + 8u && off < p->bth_off)
		return false;
	else if (off >= p->l4_off && off < p->l4_off + 8u)
		return udp == 6 || udp == 7;			/* UDP checksum */
	if (off == p->bth_off + 4u)
		return true;					/* BTH resv8a */
	if (off >= p->bth_off)
		return false;
	if (p->ip_version == 4)
		return ip == 1 || ip == 8 || ip == 10 || ip == 11;	/* TOS, TTL, checksum */
	if (ip == 0)
		return bit < 4;					/* traffic class, high half */
	return ip == 1 || ip == 2 || ip == 3 || ip == 7;	/* TC, flow label, hop limit */
}

/*
 * Flip every bit of IP, UDP and transport headers and payload, one at a
 * time: the ICRC must change exactly when the bit is not masked.  Loop: 0
 * IPv4, 1 IPv6, 2 IPv4 with a VLAN tag, 3 RoCE v1.
 */
START_TEST(covers_exactly_the_invariant_bits)
{
	static uint8_t f[TEST_MAX_FRAME];
	static const uint8_t data[37] = "every bit here is covered by the ICRC";
	struct wire_build_desc d;
	struct test_rng r;
	struct wire_pkt p;
	uint32_t len, icrc;

	test_rng_seed(&r, 5 + (uint64_t)_i);
	test_random_desc(&r, WIRE_OPC_RC | WIRE_OP_WRITE_ONLY_IMM, &d);
	d.ip_version = _i == 1 || _i == 3 ? 6 : 4;
	d.has_vlan = _i == 2;
	d.roce_v1 = _i == 3;
	len = wire_build(f, sizeof(f), &d, data, sizeof(data));
	ck_assert_uint_ne(len, 0);
	ck_assert_uint_eq(wire_parse(f, len, 0, &p), WIRE_DROP_NONE);
	icrc = wire_icrc(f, p.l3_off, len - 4);
	ck_assert_uint_eq(icrc, p.icrc);

	for (uint32_t off = 0; off < len - 4; off++) {
		for (uint8_t bit = 0; bit < 8; bit++) {
			bool changes;

			/* Version and IHL steer the computation itself (wire_parse() checks them). */
			if (off == p.l3_off && (bit >= 4 || p.ip_version == 4))
				continue;
			/* So does the GRH's next header, which says whether UDP follows. */
			if (p.roce_v1 && off == p.l3_off + 6u)
				continue;
			f[off] ^= (uint8_t)(1u << bit);
			changes = wire_icrc(f, p.l3_off, len - 4) != icrc;
			f[off] ^= (uint8_t)(1u << bit);
			if (off < p.l3_off)
				ck_assert_msg(!changes, "Ethernet byte %u bit %u is not covered", off, bit);
			else
				ck_assert_msg(changes == !masked(&p, off, bit),
					      "byte %u bit %u: ICRC %s", off, bit,
					      changes ? "changed" : "unchanged");
		}
	}
}
END_TEST

/*
 * Frames of every length class (headers only, short, past the 256-byte
 * vector threshold, jumbo) with random bytes: wire_icrc() equals the
 * Annex A17.3.3 recipe spelled out here (8 bytes of ones, then IPv4 onwards
 * with TOS, TTL, header checksum, UDP checksum and BTH resv8a as ones),
 * through the byte-wise reference CRC.
 */
START_TEST(icrc_matches_masked_reference)
{
	static uint8_t f[5000], m[8 + 5000];
	struct test_rng r;

	test_rng_seed(&r, 77);
	for (int iter = 0; iter < 3000; iter++) {
		uint32_t end = 14 + 40 + (iter < 600 ? (uint32_t)iter : test_rng_next(&r) % 4900);

		for (uint32_t i = 0; i < end; i++)
			f[i] = (uint8_t)test_rng_next(&r);
		f[14] = 0x45;
		memset(m, 0xff, 8);
		memcpy(m + 8, f + 14, end - 14);
		m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xff;
		m[8 + 26] = m[8 + 27] = 0xff;
		m[8 + 32] = 0xff;
		ck_assert_msg(wire_icrc(f, 14, end) == wire_crc32_portable(0, m, 8 + end - 14),
			      "frame of %u bytes", end);
	}
}
END_TEST

/* The 4 ICRC bytes go out least significant byte first. */
START_TEST(icrc_byte_order)
{
	uint8_t b[4];

	wire_icrc_store(b, 0x11223344);
	ck_assert_uint_eq(b[0], 0x44);
	ck_assert_uint_eq(b[3], 0x11);
	ck_assert_uint_eq(wire_icrc_load(b), 0x11223344);
}
END_TEST

/*
 * A zero-copy frame's payload is elsewhere (port_frame.ext): wire_pkt_icrc()
 * reads it through pkt.payload, the headers and pad from the frame, and
 * equals the ICRC of the whole frame; a flipped payload bit is caught.
 */
START_TEST(icrc_of_payload_elsewhere)
{
	static const uint32_t lens[] = { 256, 1001, 4096 };
	static uint8_t frame[5000], payload[4096], elsewhere[4096];
	uint8_t op = _i ? WIRE_OPC_RC | WIRE_OP_SEND_LAST : WIRE_OPC_RC | WIRE_OP_WRITE_MIDDLE;
	uint32_t len = lens[_i], flen;
	struct wire_build_desc d;
	struct wire_pkt pkt;
	struct test_rng r;

	test_rng_seed(&r, 5 + (uint64_t)_i);
	test_random_desc(&r, op, &d);
	d.ip_version = 4;
	test_rng_fill(&r, payload, len);
	flen = wire_build(frame, sizeof(frame), &d, payload, len);
	ck_assert_uint_gt(flen, 0);
	ck_assert_int_eq(wire_parse(frame, flen, WIRE_PARSE_SKIP_LEN_RULES, &pkt),
			 WIRE_DROP_NONE);
	ck_assert_uint_eq(wire_pkt_icrc(&pkt), pkt.icrc);

	memcpy(elsewhere, payload, len);
	memset(frame + pkt.payload_off, 0xa5, len);
	ck_assert_uint_ne(wire_pkt_icrc(&pkt), pkt.icrc);
	pkt.payload = elsewhere;
	ck_assert_uint_eq(wire_pkt_icrc(&pkt), pkt.icrc);
	elsewhere[len / 2] ^= 0x10;
	ck_assert_uint_ne(wire_pkt_icrc(&pkt), pkt.icrc);
}
END_TEST

/*
 * wire_pkt_icrc_copy() equals wire_pkt_icrc() and leaves exactly the payload
 * at the destination: middle packets (headers and payload in one chain),
 * packets with RETH, with pad, over IPv6, payload in the frame or elsewhere.
 */
START_TEST(icrc_while_copying)
{
	static const uint8_t ops[] = { WIRE_OPC_RC | WIRE_OP_WRITE_MIDDLE,
				       WIRE_OPC_RC | WIRE_OP_WRITE_FIRST,
				       WIRE_OPC_RC | WIRE_OP_SEND_LAST };
	static const uint32_t lens[] = { 0, 17, 255, 256, 1001, 4096 };
	enum { GUARD = 64 };
	static uint8_t frame[5000], payload[4096], dst[4096 + 2 * GUARD];
	struct test_rng r;

	test_rng_seed(&r, 11 + (uint64_t)_i);
	for (unsigned o = 0; o < sizeof(ops); o++)
		for (unsigned k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
			/* Only a LAST packet may have pad. */
			uint32_t len = o == 2 ? lens[k] : lens[k] & ~3u, flen;
			struct wire_build_desc d;
			struct wire_pkt pkt;

			test_random_desc(&r, ops[o], &d);
			d.ip_version = _i ? 6 : 4;
			test_rng_fill(&r, payload, len);
			flen = wire_build(frame, sizeof(frame), &d, payload, len);
			ck_assert_uint_gt(flen, 0);
			ck_assert_int_eq(wire_parse(frame, flen, WIRE_PARSE_SKIP_LEN_RULES, &pkt),
					 WIRE_DROP_NONE);
			for (int elsewhere = 0; elsewhere < 2; elsewhere++) {
				if (elsewhere)
					pkt.payload = payload;
				memset(dst, 0xa5, sizeof(dst));
				ck_assert_uint_eq(wire_pkt_icrc_copy(&pkt, dst + GUARD), pkt.icrc);
				ck_assert_int_eq(memcmp(dst + GUARD, payload, len), 0);
				ck_assert_uint_eq(dst[GUARD - 1], 0xa5);
				ck_assert_uint_eq(dst[GUARD + len], 0xa5);
			}
			if (len) {
				payload[len - 1] ^= 0x01;
				ck_assert_uint_ne(wire_pkt_icrc_copy(&pkt, dst + GUARD), pkt.icrc);
				ck_assert_uint_eq(dst[GUARD + len - 1], payload[len - 1]);
			}
		}
}
END_TEST

Suite *wire_icrc_suite(void);

Suite *wire_icrc_suite(void)
{
	Suite *s = suite_create("wire_icrc");
	TCase *t = tcase_create("icrc");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, scapy_uc_send_only_icrc);
	tcase_add_test(t, scapy_cx4lx_cnp_icrc);
	tcase_add_test(t, scapy_v1_send_only_icrc);
	tcase_add_loop_test(t, covers_exactly_the_invariant_bits, 0, 4);
	tcase_add_test(t, icrc_matches_masked_reference);
	tcase_add_test(t, icrc_byte_order);
	tcase_add_loop_test(t, icrc_of_payload_elsewhere, 0, 3);
	tcase_add_loop_test(t, icrc_while_copying, 0, 2);
	suite_add_tcase(s, t);
	return s;
}
