// SPDX-License-Identifier: MIT
/* Building: every header field the builder computes, checked byte by byte. */
#include <check.h>
#include <string.h>

#include "uroce/wire.h"
#include "wire_testutil.h"

static uint8_t frame[TEST_MAX_FRAME];

static uint16_t be16_at(uint32_t off)
{
	return (uint16_t)(frame[off] << 8 | frame[off + 1]);
}

/* RFC 1071 sum over 16-bit words, written out here rather than reusing wire_ipv4_csum(). */
static uint32_t ones_sum(const uint8_t *p, uint32_t len, uint32_t sum)
{
	for (uint32_t i = 0; i < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | (i + 1 < len ? p[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return sum;
}

static void base_desc(struct wire_build_desc *d, uint8_t opcode, uint8_t ipver)
{
	static const uint8_t mac_a[6] = { 2, 0, 0, 0, 0, 1 }, mac_b[6] = { 2, 0, 0, 0, 0, 2 };

	memset(d, 0, sizeof(*d));
	memcpy(d->src_mac, mac_a, 6);
	memcpy(d->dst_mac, mac_b, 6);
	d->ip_version = ipver;
	if (ipver == 4) {
		d->src_gid[10] = d->src_gid[11] = d->dst_gid[10] = d->dst_gid[11] = 0xff;
		d->src_gid[12] = 10, d->src_gid[15] = 1;
		d->dst_gid[12] = 10, d->dst_gid[15] = 2;
	} else {
		d->src_gid[0] = 0xfd, d->src_gid[15] = 1;
		d->dst_gid[0] = 0xfd, d->dst_gid[15] = 2;
	}
	d->opcode = opcode;
	d->dest_qp = 0x123456;
	d->psn = 0xabcdef;
}

START_TEST(ipv4_headers)
{
	struct wire_build_desc d;
	uint8_t data[10] = "0123456789";
	uint32_t len;

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 4);
	d.tclass = 0x6a;		/* DSCP 26, ECT(0) */
	d.ip_id = 0xbeef;
	len = wire_build(frame, sizeof(frame), &d, data, sizeof(data));
	/* 14 Ethernet + 20 IPv4 + 8 UDP + 12 BTH + 10 data + 2 pad + 4 ICRC */
	ck_assert_uint_eq(len, 70);
	ck_assert_uint_eq(wire_frame_len(&d, sizeof(data)), 70);
	ck_assert_uint_eq(wire_headers_len(&d), 54);
	ck_assert_uint_eq(be16_at(12), 0x0800);
	ck_assert_uint_eq(frame[14], 0x45);
	ck_assert_uint_eq(frame[15], 0x6a);
	ck_assert_uint_eq(be16_at(16), 56);		/* total length */
	ck_assert_uint_eq(be16_at(18), 0xbeef);
	ck_assert_uint_eq(be16_at(20), 0x4000);		/* DF, offset 0 */
	ck_assert_uint_eq(frame[22], 64);		/* default TTL */
	ck_assert_uint_eq(frame[23], 17);
	ck_assert_uint_eq(ones_sum(frame + 14, 20, 0), 0xffff);	/* header checksum */
	ck_assert_uint_eq(wire_ipv4_csum(frame + 14, 20), 0);
	ck_assert_uint_eq(frame[26], 10);
	ck_assert_uint_eq(frame[33], 2);
	/* UDP: port from the QP hash, 4791, length, checksum 0 over IPv4 */
	ck_assert_uint_eq(be16_at(34), wire_udp_sport(0, 0x123456));
	ck_assert_uint_eq(be16_at(36), 4791);
	ck_assert_uint_eq(be16_at(38), 36);
	ck_assert_uint_eq(be16_at(40), 0);
	/* BTH */
	ck_assert_uint_eq(frame[42], 0x04);
	ck_assert_uint_eq(frame[43], 0x20);		/* PadCnt 2, TVer 0 */
	ck_assert_uint_eq(be16_at(44), 0xffff);		/* default P_Key */
	ck_assert_uint_eq(frame[46], 0);		/* resv8a */
	ck_assert_uint_eq(frame[47] << 16 | be16_at(48), 0x123456);
	ck_assert_uint_eq(frame[50], 0);		/* AckReq 0 */
	ck_assert_uint_eq(frame[51] << 16 | be16_at(52), 0xabcdef);
	ck_assert_mem_eq(frame + 54, data, 10);
	ck_assert_uint_eq(frame[64], 0);
	ck_assert_uint_eq(frame[65], 0);
	ck_assert_uint_eq(wire_icrc_load(frame + 66), wire_icrc(frame, 14, 66));
}
END_TEST

START_TEST(ipv6_headers)
{
	struct wire_build_desc d;
	uint8_t data[5] = { 1, 2, 3, 4, 5 };
	uint32_t len, sum, udp_len;

	base_desc(&d, WIRE_OPC_UD | WIRE_OP_SEND_ONLY_IMM, 6);
	d.tclass = 0xb9;
	d.flow_label = 0xabcde;
	d.hop_limit = 7;
	d.udp_sport = 50000;
	len = wire_build(frame, sizeof(frame), &d, data, sizeof(data));
	/* 14 + 40 + 8 + 12 BTH + 8 DETH + 4 ImmDt + 5 data + 3 pad + 4 ICRC */
	ck_assert_uint_eq(len, 98);
	ck_assert_uint_eq(be16_at(12), 0x86dd);
	ck_assert_uint_eq(frame[14], 0x6b);		/* version 6, TC high nibble */
	ck_assert_uint_eq(frame[15], 0x9a);		/* TC low nibble, flow label */
	ck_assert_uint_eq(be16_at(16), 0xbcde);
	ck_assert_uint_eq(be16_at(18), 98 - 54);	/* payload length */
	ck_assert_uint_eq(frame[20], 17);
	ck_assert_uint_eq(frame[21], 7);
	ck_assert_uint_eq(be16_at(54), 50000);
	udp_len = be16_at(58);
	ck_assert_uint_eq(udp_len, 98 - 54);
	/* RFC 8200 8.1: UDP checksum over the pseudo header must verify (sum 0xffff). */
	sum = ones_sum(frame + 22, 32, 0);
	sum = ones_sum(frame + 54, udp_len, sum + udp_len + 17);
	ck_assert_uint_eq(sum, 0xffff);
	ck_assert_uint_ne(be16_at(60), 0);
	ck_assert_uint_eq(frame[63], 0x30);		/* PadCnt 3 */
	ck_assert_uint_eq(wire_icrc_load(frame + 94), wire_icrc(frame, 14, 94));
}
END_TEST

START_TEST(vlan_tag)
{
	struct wire_build_desc d;
	uint32_t len;

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE, 4);
	d.has_vlan = true;
	d.vlan_tci = 0x6064;		/* PCP 3, VID 100 */
	d.aeth.syndrome = 0x1f;
	d.aeth.msn = 0x10203;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(len, 18 + 20 + 8 + 12 + 4 + 4);
	ck_assert_uint_eq(be16_at(12), 0x8100);
	ck_assert_uint_eq(be16_at(14), 0x6064);
	ck_assert_uint_eq(be16_at(16), 0x0800);
	ck_assert_uint_eq(frame[18], 0x45);
	ck_assert_uint_eq(frame[58], 0x1f);
	ck_assert_uint_eq(frame[59] << 16 | be16_at(60), 0x10203);
	ck_assert_uint_eq(wire_icrc_load(frame + len - 4), wire_icrc(frame, 18, len - 4));
}
END_TEST

/*
 * Selective repeat's two resv7 bits (BTH byte 8, after AckReq): where they
 * go, that the parser reads them back, and that the ICRC covers them (a
 * flipped one is a bad ICRC) where it does not cover resv8a (byte 4).
 */
START_TEST(selective_repeat_bits)
{
	struct wire_build_desc d;
	struct wire_pkt pkt;
	uint32_t len;

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE, 4);
	d.sr_cap = true;
	d.sr_nak = true;
	d.ackreq = true;
	d.aeth.syndrome = 0x60;
	d.aeth.msn = 5;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(frame[50], 0xe0);
	ck_assert_int_eq(wire_parse(frame, len, 0, &pkt), WIRE_DROP_NONE);
	ck_assert(pkt.sr_cap && pkt.sr_nak && pkt.ackreq);
	d.sr_nak = d.ackreq = false;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(frame[50], 0x40);
	ck_assert_int_eq(wire_parse(frame, len, 0, &pkt), WIRE_DROP_NONE);
	ck_assert(pkt.sr_cap && !pkt.sr_nak);
	frame[50] ^= 0x40;
	ck_assert_int_eq(wire_parse(frame, len, 0, &pkt), WIRE_DROP_BAD_ICRC);
	frame[50] ^= 0x40;
	frame[46] ^= 0x01;
	ck_assert_int_eq(wire_parse(frame, len, 0, &pkt), WIRE_DROP_NONE);
}
END_TEST

/* Field placement of every extension header, at the offsets IBA 9.3 gives. */
START_TEST(extension_fields)
{
	struct wire_build_desc d;
	uint32_t len;

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_COMPARE_SWAP, 4);
	d.ackreq = true;
	d.se = true;
	d.pkey = 0x8001;
	d.atomic.va = 0x1122334455667788ull;
	d.atomic.rkey = 0xa1b2c3d4;
	d.atomic.swap_add = 0x0102030405060708ull;
	d.atomic.compare = 0xf0e0d0c0b0a09080ull;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(len, 54 + 28 + 4);
	ck_assert_uint_eq(frame[43], 0x80);
	ck_assert_uint_eq(be16_at(44), 0x8001);
	ck_assert_uint_eq(frame[50], 0x80);
	ck_assert_uint_eq(be16_at(54), 0x1122);
	ck_assert_uint_eq(be16_at(60), 0x7788);
	ck_assert_uint_eq(be16_at(62), 0xa1b2);
	ck_assert_uint_eq(be16_at(66), 0x0102);
	ck_assert_uint_eq(be16_at(74), 0xf0e0);

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_WRITE_ONLY_IMM, 4);
	d.reth.va = 0xdeadbeefcafef00dull;
	d.reth.rkey = 0x11223344;
	d.reth.len = 4;
	d.imm = 0x55667788;
	len = wire_build(frame, sizeof(frame), &d, "abcd", 4);
	ck_assert_uint_eq(len, 54 + 16 + 4 + 4 + 4);
	ck_assert_uint_eq(be16_at(54), 0xdead);
	ck_assert_uint_eq(be16_at(62), 0x1122);
	ck_assert_uint_eq(be16_at(68), 0x0004);
	ck_assert_uint_eq(be16_at(70), 0x5566);
	ck_assert_mem_eq(frame + 74, "abcd", 4);

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_SEND_ONLY_INV, 4);
	d.ieth_rkey = 0x0badf00d;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(len, 54 + 4 + 4);
	ck_assert_uint_eq(be16_at(54), 0x0bad);

	base_desc(&d, WIRE_OPC_UD | WIRE_OP_SEND_ONLY, 4);
	d.deth.qkey = 0x80010002;
	d.deth.src_qp = 0xff000011;	/* only 24 bits go on the wire */
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(be16_at(54), 0x8001);
	ck_assert_uint_eq(frame[58], 0);
	ck_assert_uint_eq(frame[59] << 16 | be16_at(60), 0x000011);

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_ATOMIC_ACKNOWLEDGE, 4);
	d.aeth.syndrome = 0x62;
	d.atomic_orig = 0x0123456789abcdefull;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(len, 54 + 12 + 4);
	ck_assert_uint_eq(frame[54], 0x62);
	ck_assert_uint_eq(be16_at(58), 0x0123);

	/* XRC: the XRCETH's 24-bit SRQ number right after the BTH, then the RETH. */
	base_desc(&d, WIRE_OPC_XRC | WIRE_OP_WRITE_ONLY, 4);
	d.xrc_srqn = 0xff123456;	/* only 24 bits go on the wire */
	d.reth.va = 0xdeadbeefcafef00dull;
	d.reth.rkey = 0x11223344;
	d.reth.len = 4;
	len = wire_build(frame, sizeof(frame), &d, "abcd", 4);
	ck_assert_uint_eq(len, 54 + 4 + 16 + 4 + 4);
	ck_assert_uint_eq(frame[42], 0xaa);
	ck_assert_uint_eq(frame[54], 0);
	ck_assert_uint_eq(frame[55] << 16 | be16_at(56), 0x123456);
	ck_assert_uint_eq(be16_at(58), 0xdead);
	ck_assert_uint_eq(be16_at(66), 0x1122);
	ck_assert_mem_eq(frame + 74, "abcd", 4);

	/* An XRC ACK carries no XRCETH: the AETH follows the BTH. */
	base_desc(&d, WIRE_OPC_XRC | WIRE_OP_ACKNOWLEDGE, 4);
	d.xrc_srqn = 0x123456;
	d.aeth.syndrome = 0x1f;
	d.aeth.msn = 7;
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(len, 54 + 4 + 4);
	ck_assert_uint_eq(frame[54], 0x1f);
	ck_assert_uint_eq(frame[55] << 16 | be16_at(56), 7);

	base_desc(&d, WIRE_OPC_CNP, 4);
	memset(frame, 0xaa, sizeof(frame));
	len = wire_build(frame, sizeof(frame), &d, NULL, 0);
	ck_assert_uint_eq(len, 54 + 16 + 4);
	for (int i = 54; i < 70; i++)
		ck_assert_uint_eq(frame[i], 0);
}
END_TEST

/* Loop over every opcode: lengths, and what the builder refuses. */
START_TEST(lengths_per_opcode)
{
	struct wire_build_desc d;
	const struct wire_opcode_info *op = &wire_opcode[_i];
	uint8_t data[8] = { 0 };
	uint32_t max;

	base_desc(&d, (uint8_t)_i, 4);
	if (!wire_opcode_valid((uint8_t)_i)) {
		ck_assert_uint_eq(wire_headers_len(&d), 0);
		ck_assert_uint_eq(wire_frame_len(&d, 0), 0);
		ck_assert_uint_eq(wire_build(frame, sizeof(frame), &d, NULL, 0), 0);
		return;
	}
	ck_assert_uint_eq(wire_headers_len(&d), 14 + 20 + 8 + op->hdr_len);
	for (uint32_t n = 0; n <= 8; n++)
		ck_assert_uint_eq(wire_frame_len(&d, n), 14 + 20 + 8 + op->hdr_len + ((n + 3) & ~3u) + 4);
	d.ip_version = 6;
	ck_assert_uint_eq(wire_headers_len(&d), 14 + 40 + 8 + op->hdr_len);
	d.has_vlan = true;
	ck_assert_uint_eq(wire_headers_len(&d), 18 + 40 + 8 + op->hdr_len);
	d.ip_version = 5;
	ck_assert_uint_eq(wire_headers_len(&d), 0);
	ck_assert_uint_eq(wire_build(frame, sizeof(frame), &d, data, 8), 0);
	/* Too small a buffer: nothing built. */
	d.ip_version = 4;
	ck_assert_uint_eq(wire_build(frame, wire_frame_len(&d, 8) - 1, &d, data, 8), 0);
	ck_assert_uint_eq(wire_build(frame, wire_frame_len(&d, 8), &d, data, 8), wire_frame_len(&d, 8));
	/* Larger than IPv4's 16-bit total length can say: refused, not truncated. */
	max = (65535 - 20 - 8 - op->hdr_len - 4) & ~3u;
	ck_assert_uint_ne(wire_frame_len(&d, max), 0);
	ck_assert_uint_eq(wire_frame_len(&d, max + 4), 0);
	ck_assert_uint_eq(wire_frame_len(&d, 70000), 0);
	ck_assert_uint_eq(wire_build_headers(frame, &d, max + 4), 0);
}
END_TEST

/* wire_seal() zeroes the pad whatever the buffer held (the ICRC covers it). */
START_TEST(seal_zeroes_pad)
{
	struct wire_build_desc d;
	uint32_t hdr, len;

	base_desc(&d, WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 4);
	memset(frame, 0xee, sizeof(frame));
	hdr = wire_build_headers(frame, &d, 5);
	ck_assert_uint_eq(hdr, 54);
	memcpy(frame + hdr, "hello", 5);
	len = wire_seal(frame, hdr, 5);
	ck_assert_uint_eq(len, 54 + 8 + 4);
	ck_assert_uint_eq(frame[59], 0);
	ck_assert_uint_eq(frame[60], 0);
	ck_assert_uint_eq(frame[61], 0);
	ck_assert_uint_eq(frame[43] >> 4 & 3, 3);
}
END_TEST

/* A17.5.1: source ports from the dynamic range, stable per QP pair, spread over it. */
START_TEST(udp_source_port)
{
	uint8_t seen[16384 / 8] = { 0 };
	unsigned distinct = 0;

	for (uint32_t qp = 0; qp < 20000; qp++) {
		uint16_t port = wire_udp_sport(qp * 7, qp);

		ck_assert_uint_ge(port, 49152);
		ck_assert_uint_eq(port, wire_udp_sport(qp * 7, qp));
		if (!(seen[(port - 49152) / 8] & (1u << (port % 8)))) {
			seen[(port - 49152) / 8] |= (uint8_t)(1u << (port % 8));
			distinct++;
		}
	}
	/* 20000 draws over 16384 ports: a good hash covers well over half of them. */
	ck_assert_uint_gt(distinct, 9000);
	ck_assert_uint_ne(wire_udp_sport(0, 1), wire_udp_sport(0, 2));
}
END_TEST

/* A path's flow label picks its port as Linux folds it (rdma_flow_label_to_udp_sport()). */
START_TEST(udp_source_port_of_flow_label)
{
	/* rdma_cm's label for ports 44239 -> 18702 (44239 * 31 + 18702, 20 bits), seen from the kernel */
	ck_assert_uint_eq(wire_path_udp_sport(341535, 1, 2), 0xf60b);
	ck_assert_uint_eq(wire_path_udp_sport(0xfffff, 1, 2), 0xc000 | (0x3fff ^ 0x3f));
	ck_assert_uint_eq(wire_path_udp_sport(1, 1, 2), 0xc001);
	/* no label: the QPs' hash */
	ck_assert_uint_eq(wire_path_udp_sport(0, 0x11, 0x22), wire_udp_sport(0x11, 0x22));
	ck_assert_uint_eq(wire_path_udp_sport(0x100000, 0x11, 0x22), wire_udp_sport(0x11, 0x22));
}
END_TEST

Suite *wire_build_suite(void);

Suite *wire_build_suite(void)
{
	Suite *s = suite_create("wire_build");
	TCase *t = tcase_create("build");

	tcase_add_test(t, ipv4_headers);
	tcase_add_test(t, ipv6_headers);
	tcase_add_test(t, vlan_tag);
	tcase_add_test(t, extension_fields);
	tcase_add_test(t, selective_repeat_bits);
	tcase_add_loop_test(t, lengths_per_opcode, 0, 256);
	tcase_add_test(t, seal_zeroes_pad);
	tcase_add_test(t, udp_source_port);
	tcase_add_test(t, udp_source_port_of_flow_label);
	suite_add_tcase(s, t);
	return s;
}
