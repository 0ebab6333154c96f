// SPDX-License-Identifier: MIT
/* The receive classifier: hand-assembled frames of every kind, their offsets, and every truncation. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/wire.h"

#define MAX_FRAME 256

/*
 * Frames are assembled byte by byte here, not with wire_build(), so the
 * classifier is checked against the RFCs' layouts rather than our builder.
 */
struct asm_frame {
	uint8_t		b[MAX_FRAME];
	uint32_t	len;
};

static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static const uint8_t our_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };

static void put(struct asm_frame *f, const void *p, uint32_t n)
{
	ck_assert_uint_le(f->len + n, MAX_FRAME);
	memcpy(f->b + f->len, p, n);
	f->len += n;
}

static void put8(struct asm_frame *f, unsigned v)
{
	uint8_t b = (uint8_t)v;

	put(f, &b, 1);
}

static void put16(struct asm_frame *f, unsigned v)
{
	put8(f, v >> 8);
	put8(f, v);
}

static void set16(struct asm_frame *f, uint32_t off, unsigned v)
{
	f->b[off] = (uint8_t)(v >> 8);
	f->b[off + 1] = (uint8_t)v;
}

static void zeros(struct asm_frame *f, uint32_t n)
{
	static const uint8_t z[MAX_FRAME];

	put(f, z, n);
}

/* Ethernet, with one 802.1Q tag (TCI @tci) when @tci >= 0. */
static void eth(struct asm_frame *f, unsigned type, int tci)
{
	f->len = 0;
	put(f, our_mac, 6);
	put(f, peer_mac, 6);
	if (tci >= 0) {
		put16(f, WIRE_ETHERTYPE_VLAN);
		put16(f, (unsigned)tci);
	}
	put16(f, type);
}

/* IPv4 header with @opt_words 4-byte option words; total length patched by ipv4_end(). */
static uint32_t ipv4(struct asm_frame *f, unsigned proto, unsigned opt_words, unsigned frag)
{
	uint32_t l3 = f->len;

	put8(f, 0x40 | (5 + opt_words));
	put8(f, 0);
	put16(f, 0);			/* total length */
	put16(f, 0x1234);
	put16(f, frag);
	put8(f, 64);
	put8(f, proto);
	put16(f, 0);			/* checksum: not the classifier's business */
	put(f, (const uint8_t[]){ 192, 168, 1, 2 }, 4);
	put(f, (const uint8_t[]){ 192, 168, 1, 1 }, 4);
	for (unsigned i = 0; i < opt_words; i++)
		put(f, (const uint8_t[]){ 1, 1, 1, 0 }, 4);	/* NOP NOP NOP EOL */
	return l3;
}

static void ipv4_end(struct asm_frame *f, uint32_t l3)
{
	set16(f, l3 + 2, f->len - l3);
}

static uint32_t ipv6(struct asm_frame *f, unsigned next_header)
{
	uint32_t l3 = f->len;

	put(f, (const uint8_t[]){ 0x60, 0, 0, 0 }, 4);
	put16(f, 0);			/* payload length */
	put8(f, next_header);
	put8(f, 255);
	put(f, (const uint8_t[]){ 0xfe, 0x80, [15] = 2 }, 16);
	put(f, (const uint8_t[]){ 0xfe, 0x80, [15] = 1 }, 16);
	return l3;
}

static void ipv6_end(struct asm_frame *f, uint32_t l3)
{
	set16(f, l3 + 4, f->len - l3 - 40);
}

static void udp(struct asm_frame *f, unsigned dport, uint32_t payload)
{
	put16(f, 49152);
	put16(f, dport);
	put16(f, 8 + payload);
	put16(f, 0);
}

/* BTH of an RC SEND_ONLY to QP 0x000011, 16 bytes of payload, ICRC. */
static void bth_and_payload(struct asm_frame *f)
{
	put(f, (const uint8_t[]){ 0x04, 0x00, 0xff, 0xff, 0, 0, 0, 0x11, 0x80, 0, 0, 1 }, 12);
	zeros(f, 16 + 4);
}

#define ROCE_PAYLOAD (12 + 16 + 4)

/* What a test expects of one frame. */
struct expect {
	enum wire_frame_kind kind;
	enum wire_drop	drop;
	uint16_t	l3_off, l4_off, bth_off;
	uint8_t		ip_version, l4_proto;
};

static void check(const struct asm_frame *f, const struct expect *e)
{
	struct wire_frame_offsets o;
	enum wire_frame_kind k;
	uint8_t *copy = malloc(f->len);

	/* An exact-size copy: a read past the end trips ASan. */
	memcpy(copy, f->b, f->len);
	k = wire_classify(copy, f->len, &o);
	free(copy);
	ck_assert_int_eq(k, e->kind);
	ck_assert_str_eq(wire_drop_name(o.drop), wire_drop_name(e->drop));
	ck_assert_uint_eq(o.l3_off, e->l3_off);
	ck_assert_uint_eq(o.l4_off, e->l4_off);
	ck_assert_uint_eq(o.bth_off, e->bth_off);
	ck_assert_uint_eq(o.ip_version, e->ip_version);
	if (e->l4_off)
		ck_assert_uint_eq(o.l4_proto, e->l4_proto);
	ck_assert_uint_le(o.ip_end, f->len);
}

static void roce_v4(struct asm_frame *f, int tci, unsigned opt_words)
{
	uint32_t l3;

	eth(f, WIRE_ETHERTYPE_IPV4, tci);
	l3 = ipv4(f, WIRE_IPPROTO_UDP, opt_words, WIRE_IPV4_DF);
	udp(f, WIRE_ROCEV2_PORT, ROCE_PAYLOAD);
	bth_and_payload(f);
	ipv4_end(f, l3);
}

static void roce_v6(struct asm_frame *f, int tci)
{
	uint32_t l3;

	eth(f, WIRE_ETHERTYPE_IPV6, tci);
	l3 = ipv6(f, WIRE_IPPROTO_UDP);
	udp(f, WIRE_ROCEV2_PORT, ROCE_PAYLOAD);
	bth_and_payload(f);
	ipv6_end(f, l3);
}

START_TEST(roce_ipv4)
{
	struct asm_frame f;

	roce_v4(&f, -1, 0);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 14, 34, 42, 4,
				    WIRE_IPPROTO_UDP });
}
END_TEST

START_TEST(roce_ipv4_vlan)
{
	struct wire_frame_offsets o;
	struct asm_frame f;

	roce_v4(&f, 0x6005, 0);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 18, 38, 46, 4,
				    WIRE_IPPROTO_UDP });
	wire_classify(f.b, f.len, &o);
	ck_assert(o.has_vlan);
	ck_assert_uint_eq(o.vlan_tci, 0x6005);
	ck_assert_uint_eq(o.ethertype, WIRE_ETHERTYPE_IPV4);
	ck_assert_uint_eq(o.ip_end, f.len);
}
END_TEST

/* IHL 8: 12 bytes of options move L4 and the BTH back. */
START_TEST(roce_ipv4_options)
{
	struct asm_frame f;

	roce_v4(&f, -1, 3);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 14, 46, 54, 4,
				    WIRE_IPPROTO_UDP });
	roce_v4(&f, 7, 10);		/* IHL 15, the largest */
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 18, 78, 86, 4,
				    WIRE_IPPROTO_UDP });
}
END_TEST

START_TEST(roce_ipv6)
{
	struct asm_frame f;

	roce_v6(&f, -1);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 14, 54, 62, 6,
				    WIRE_IPPROTO_UDP });
	roce_v6(&f, 0x0064);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 18, 58, 66, 6,
				    WIRE_IPPROTO_UDP });
}
END_TEST

/* A hop-by-hop header before UDP 4791: found, but no RoCE receiver takes it (NOT_UDP). */
START_TEST(roce_ipv6_ext_header)
{
	struct asm_frame f;
	uint32_t l3;

	eth(&f, WIRE_ETHERTYPE_IPV6, -1);
	l3 = ipv6(&f, 0);
	put(&f, (const uint8_t[]){ WIRE_IPPROTO_UDP, 0, 1, 4, 0, 0, 0, 0 }, 8);
	udp(&f, WIRE_ROCEV2_PORT, ROCE_PAYLOAD);
	bth_and_payload(&f);
	ipv6_end(&f, l3);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NOT_UDP, 14, 62, 70, 6,
				    WIRE_IPPROTO_UDP });
}
END_TEST

START_TEST(udp_other_port)
{
	struct asm_frame f;
	uint32_t l3;

	eth(&f, WIRE_ETHERTYPE_IPV4, -1);
	l3 = ipv4(&f, WIRE_IPPROTO_UDP, 0, 0);
	udp(&f, 4790, 20);
	zeros(&f, 20);
	ipv4_end(&f, l3);
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_ROCE_PORT, 14, 34, 0, 4,
				    WIRE_IPPROTO_UDP });
	eth(&f, WIRE_ETHERTYPE_IPV6, -1);
	l3 = ipv6(&f, WIRE_IPPROTO_UDP);
	udp(&f, 53, 20);
	zeros(&f, 20);
	ipv6_end(&f, l3);
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_ROCE_PORT, 14, 54, 0, 6,
				    WIRE_IPPROTO_UDP });
}
END_TEST

START_TEST(tcp)
{
	struct asm_frame f;
	uint32_t l3;

	eth(&f, WIRE_ETHERTYPE_IPV4, -1);
	l3 = ipv4(&f, 6, 0, 0);
	zeros(&f, 20);
	ipv4_end(&f, l3);
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_UDP, 14, 34, 0, 4, 6 });
}
END_TEST

/* The IP length, not the frame, bounds L4: Ethernet padding is no UDP header. */
START_TEST(udp_past_ip_length)
{
	struct asm_frame f;
	uint32_t l3;

	eth(&f, WIRE_ETHERTYPE_IPV4, -1);
	l3 = ipv4(&f, WIRE_IPPROTO_UDP, 0, 0);
	ipv4_end(&f, l3);
	udp(&f, WIRE_ROCEV2_PORT, 0);	/* after the 20-byte IP packet: padding */
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_TRUNCATED_UDP, 14, 34, 0, 4,
				    WIRE_IPPROTO_UDP });
}
END_TEST

/* A first fragment holds the UDP header; a later one holds none. */
START_TEST(fragments)
{
	struct asm_frame f;
	uint32_t l3;

	eth(&f, WIRE_ETHERTYPE_IPV4, -1);
	l3 = ipv4(&f, WIRE_IPPROTO_UDP, 0, WIRE_IPV4_MF);
	udp(&f, WIRE_ROCEV2_PORT, ROCE_PAYLOAD);
	bth_and_payload(&f);
	ipv4_end(&f, l3);
	check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, 14, 34, 42, 4,
				    WIRE_IPPROTO_UDP });
	set16(&f, l3 + 6, 185);		/* offset 1480: bytes of a datagram's middle */
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_UDP, 14, 34, 0, 4,
				    WIRE_IPPROTO_NONE });
}
END_TEST

START_TEST(arp)
{
	struct asm_frame f;

	eth(&f, WIRE_ETHERTYPE_ARP, -1);
	put(&f, (const uint8_t[]){ 0, 1, 8, 0, 6, 4, 0, 1 }, 8);
	zeros(&f, 20);
	check(&f, &(struct expect){ WIRE_FRAME_ARP, WIRE_DROP_NOT_IP, 14, 0, 0, 0, 0 });
	eth(&f, WIRE_ETHERTYPE_ARP, 5);
	zeros(&f, 28);
	check(&f, &(struct expect){ WIRE_FRAME_ARP, WIRE_DROP_NOT_IP, 18, 0, 0, 0, 0 });
}
END_TEST

static void nd_msg(struct asm_frame *f, unsigned type)
{
	uint32_t l3;

	eth(f, WIRE_ETHERTYPE_IPV6, -1);
	l3 = ipv6(f, WIRE_IPPROTO_ICMPV6);
	put8(f, type);
	zeros(f, 3 + 4 + 16);
	put(f, (const uint8_t[]){ 1, 1, 2, 0, 0, 0, 0, 2 }, 8);
	ipv6_end(f, l3);
}

START_TEST(nd)
{
	struct asm_frame f;

	nd_msg(&f, 135);
	check(&f, &(struct expect){ WIRE_FRAME_ND, WIRE_DROP_NOT_UDP, 14, 54, 0, 6,
				    WIRE_IPPROTO_ICMPV6 });
	nd_msg(&f, 136);
	check(&f, &(struct expect){ WIRE_FRAME_ND, WIRE_DROP_NOT_UDP, 14, 54, 0, 6,
				    WIRE_IPPROTO_ICMPV6 });
	nd_msg(&f, 128);		/* echo request */
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_UDP, 14, 54, 0, 6,
				    WIRE_IPPROTO_ICMPV6 });
}
END_TEST

/* ICMP destination unreachable, port unreachable, quoting a datagram to @dport. */
static void icmp4_unreach(struct asm_frame *f, unsigned type, unsigned dport)
{
	struct asm_frame quoted;
	uint32_t l3, q3;

	eth(&quoted, WIRE_ETHERTYPE_IPV4, -1);
	q3 = ipv4(&quoted, WIRE_IPPROTO_UDP, 1, WIRE_IPV4_DF);
	udp(&quoted, dport, ROCE_PAYLOAD);
	bth_and_payload(&quoted);
	ipv4_end(&quoted, q3);

	eth(f, WIRE_ETHERTYPE_IPV4, -1);
	l3 = ipv4(f, WIRE_IPPROTO_ICMP, 0, 0);
	put(f, (const uint8_t[]){ (uint8_t)type, 3, 0, 0, 0, 0, 0, 0 }, 8);
	put(f, quoted.b + q3, 24 + 8);	/* RFC 792: the IP header and 64 bits of data */
	ipv4_end(f, l3);
}

static void icmp6_unreach(struct asm_frame *f, unsigned dport)
{
	struct asm_frame quoted;
	uint32_t l3, q3;

	eth(&quoted, WIRE_ETHERTYPE_IPV6, -1);
	q3 = ipv6(&quoted, WIRE_IPPROTO_UDP);
	udp(&quoted, dport, ROCE_PAYLOAD);
	bth_and_payload(&quoted);
	ipv6_end(&quoted, q3);

	eth(f, WIRE_ETHERTYPE_IPV6, -1);
	l3 = ipv6(f, WIRE_IPPROTO_ICMPV6);
	put(f, (const uint8_t[]){ 1, 4, 0, 0, 0, 0, 0, 0 }, 8);
	put(f, quoted.b + q3, quoted.len - q3);	/* RFC 4443 3.1: as much as fits */
	ipv6_end(f, l3);
}

START_TEST(icmp_port_unreachable)
{
	struct asm_frame f;

	icmp4_unreach(&f, 3, WIRE_ROCEV2_PORT);
	check(&f, &(struct expect){ WIRE_FRAME_ICMP_ROCE, WIRE_DROP_NOT_UDP, 14, 34, 0, 4,
				    WIRE_IPPROTO_ICMP });
	icmp4_unreach(&f, 3, 53);
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_UDP, 14, 34, 0, 4,
				    WIRE_IPPROTO_ICMP });
	icmp4_unreach(&f, 11, WIRE_ROCEV2_PORT);	/* time exceeded */
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_UDP, 14, 34, 0, 4,
				    WIRE_IPPROTO_ICMP });
	icmp6_unreach(&f, WIRE_ROCEV2_PORT);
	check(&f, &(struct expect){ WIRE_FRAME_ICMP_ROCE, WIRE_DROP_NOT_UDP, 14, 54, 0, 6,
				    WIRE_IPPROTO_ICMPV6 });
	icmp6_unreach(&f, 4792);
	check(&f, &(struct expect){ WIRE_FRAME_IP, WIRE_DROP_NOT_UDP, 14, 54, 0, 6,
				    WIRE_IPPROTO_ICMPV6 });
}
END_TEST

START_TEST(other_ethertype)
{
	struct asm_frame f;

	eth(&f, 0x88cc, -1);		/* LLDP */
	zeros(&f, 46);
	check(&f, &(struct expect){ WIRE_FRAME_OTHER, WIRE_DROP_NOT_IP, 14, 0, 0, 0, 0 });
	eth(&f, WIRE_ETHERTYPE_VLAN, 3);	/* a second tag: one is all RoCE uses */
	zeros(&f, 46);
	check(&f, &(struct expect){ WIRE_FRAME_OTHER, WIRE_DROP_NOT_IP, 18, 0, 0, 0, 0 });
}
END_TEST

/* RoCE v1: EtherType 0x8915, a GRH whose next header is 0x1B, the BTH right after it. */
START_TEST(roce_v1_grh)
{
	struct wire_frame_offsets o;
	struct asm_frame f;
	uint32_t l3;

	for (int tci = -1; tci <= 5; tci += 6) {
		uint16_t at = tci < 0 ? 14 : 18;

		eth(&f, WIRE_ETHERTYPE_ROCEV1, tci);
		l3 = ipv6(&f, WIRE_GRH_NXTHDR_IBA);
		bth_and_payload(&f);
		ipv6_end(&f, l3);
		check(&f, &(struct expect){ WIRE_FRAME_ROCE, WIRE_DROP_NONE, at, 0, at + 40, 6, 0 });
		wire_classify(f.b, f.len, &o);
		ck_assert(o.roce_v1);
		ck_assert_uint_eq(o.ip_end, f.len);
	}
	/* Next header UDP: a GRH that carries no BTH. */
	eth(&f, WIRE_ETHERTYPE_ROCEV1, -1);
	l3 = ipv6(&f, WIRE_IPPROTO_UDP);
	bth_and_payload(&f);
	ipv6_end(&f, l3);
	check(&f, &(struct expect){ WIRE_FRAME_OTHER, WIRE_DROP_BAD_GRH_NXTHDR, 14, 0, 0, 6, 0 });
	/* IPVer 4, and a GRH cut short. */
	f.b[14] = 0x40;
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_BAD_IP_VERSION, 14, 0, 0, 6, 0 });
	f.len = 14 + 39;
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_TRUNCATED_IP, 14, 0, 0, 6, 0 });
	/* An IPv4 frame is never taken for v1. */
	roce_v4(&f, -1, 0);
	wire_classify(f.b, f.len, &o);
	ck_assert(!o.roce_v1);
}
END_TEST

START_TEST(broken_ip_headers)
{
	struct asm_frame f;

	roce_v4(&f, -1, 0);
	f.b[14] = 0x65;			/* version 6 under the IPv4 EtherType */
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_BAD_IP_VERSION, 14, 0, 0, 4,
				    0 });
	f.b[14] = 0x44;			/* IHL 16 bytes */
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_BAD_IHL, 14, 0, 0, 4, 0 });
	roce_v4(&f, -1, 0);
	set16(&f, 16, 19);		/* total length below the header */
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_IP_LEN, 14, 34, 0, 4,
				    WIRE_IPPROTO_UDP });
	roce_v6(&f, -1);
	f.b[14] = 0x40;
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_BAD_IP_VERSION, 14, 0, 0, 6,
				    0 });
}
END_TEST

/* IHL 15 in a frame that ends inside the options. */
START_TEST(ihl_past_frame)
{
	struct asm_frame f;

	roce_v4(&f, -1, 10);
	f.len = 14 + 40;
	check(&f, &(struct expect){ WIRE_FRAME_MALFORMED, WIRE_DROP_BAD_IHL, 14, 0, 0, 4, 0 });
}
END_TEST

/*
 * Every frame cut at every length: never a read past the end (ASan), never
 * an offset past it, and the kind only once the headers that decide it are
 * whole.  @full is the kind of the whole frame, @need the bytes it takes.
 */
static void truncations(const struct asm_frame *f, enum wire_frame_kind full, uint32_t need)
{
	for (uint32_t len = 0; len <= f->len; len++) {
		struct wire_frame_offsets o;
		enum wire_frame_kind k;
		uint8_t *copy = malloc(len ? len : 1);

		memcpy(copy, f->b, len);
		k = wire_classify(copy, len, &o);
		free(copy);
		ck_assert_msg(len >= need ? k == full : k != full,
			      "cut at %u of %u: kind %d, need %u bytes for %d", len, f->len, k, need,
			      full);
		ck_assert_uint_le(o.l3_off, len);
		ck_assert_uint_le(o.ip_end, len);
		if (k == WIRE_FRAME_ROCE)
			ck_assert_uint_le(o.bth_off, len);
		if (len < 14)
			ck_assert_int_eq(o.drop, WIRE_DROP_TRUNCATED_ETH);
	}
}

/* Loop: the frame kinds above, each cut at every byte. */
START_TEST(truncated_at_every_byte)
{
	struct asm_frame f;

	switch (_i) {
	case 0:
		roce_v4(&f, -1, 0);
		truncations(&f, WIRE_FRAME_ROCE, 42);
		break;
	case 1:
		roce_v4(&f, 9, 2);
		truncations(&f, WIRE_FRAME_ROCE, 18 + 28 + 8);
		break;
	case 2:
		roce_v6(&f, -1);
		truncations(&f, WIRE_FRAME_ROCE, 62);
		break;
	case 3:
		roce_v6(&f, 9);
		truncations(&f, WIRE_FRAME_ROCE, 66);
		break;
	case 4:
		nd_msg(&f, 135);
		truncations(&f, WIRE_FRAME_ND, 54 + 8);
		break;
	case 5:
		icmp4_unreach(&f, 3, WIRE_ROCEV2_PORT);
		/* The quoted header (IHL 6) and the UDP destination port. */
		truncations(&f, WIRE_FRAME_ICMP_ROCE, 34 + 8 + 24 + 4);
		break;
	case 6:
		icmp6_unreach(&f, WIRE_ROCEV2_PORT);
		truncations(&f, WIRE_FRAME_ICMP_ROCE, 54 + 8 + 40 + 4);
		break;
	case 7:
		eth(&f, WIRE_ETHERTYPE_ARP, -1);
		zeros(&f, 28);
		truncations(&f, WIRE_FRAME_ARP, 14);
		break;
	}
}
END_TEST

/* A truncated IPv4 RoCE frame gives the reasons in wire order as it grows. */
START_TEST(truncation_reasons)
{
	struct wire_frame_offsets o;
	struct asm_frame f;

	roce_v4(&f, 1, 0);
	for (uint32_t len = 0; len < 18 + 20 + 8; len++) {
		enum wire_drop want = len < 18 ? WIRE_DROP_TRUNCATED_ETH :
				      len < 38 ? WIRE_DROP_TRUNCATED_IP : WIRE_DROP_TRUNCATED_UDP;

		wire_classify(f.b, len, &o);
		ck_assert_msg(o.drop == want, "cut at %u: %s, want %s", len, wire_drop_name(o.drop),
			      wire_drop_name(want));
	}
}
END_TEST

Suite *wire_classify_suite(void);

Suite *wire_classify_suite(void)
{
	Suite *s = suite_create("wire_classify");
	TCase *t = tcase_create("kinds");

	tcase_add_test(t, roce_ipv4);
	tcase_add_test(t, roce_ipv4_vlan);
	tcase_add_test(t, roce_ipv4_options);
	tcase_add_test(t, roce_ipv6);
	tcase_add_test(t, roce_ipv6_ext_header);
	tcase_add_test(t, udp_other_port);
	tcase_add_test(t, tcp);
	tcase_add_test(t, udp_past_ip_length);
	tcase_add_test(t, fragments);
	tcase_add_test(t, arp);
	tcase_add_test(t, nd);
	tcase_add_test(t, icmp_port_unreachable);
	tcase_add_test(t, other_ethertype);
	tcase_add_test(t, roce_v1_grh);
	tcase_add_test(t, broken_ip_headers);
	tcase_add_test(t, ihl_past_frame);
	tcase_add_loop_test(t, truncated_at_every_byte, 0, 8);
	tcase_add_test(t, truncation_reasons);
	suite_add_tcase(s, t);
	return s;
}
