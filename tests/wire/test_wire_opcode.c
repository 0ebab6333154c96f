// SPDX-License-Identifier: MIT
/* Opcode table, drop reason and AETH tables against IBA table 38 and friends. */
#include <check.h>
#include <string.h>

#include "uroce/wire.h"

/*
 * IBA Vol 1 table 38 (RC, UC, UD, and XRC as IBA 1.2.1 adds it: the RC
 * operations at 0xa0, each request with an XRCETH first), the IBA 1.5 FLUSH
 * and ATOMIC WRITE (as the kernel's rxe_opcode.c) and Annex A17.9.3 (CNP),
 * transcribed here by hand: opcode, name, extension headers in wire order.
 */
static const struct {
	uint8_t		opcode;
	const char	*name;
	wire_hdr_mask	hdrs;
} iba_table38[] = {
	{ 0x00, "RC_SEND_FIRST", 0 },
	{ 0x01, "RC_SEND_MIDDLE", 0 },
	{ 0x02, "RC_SEND_LAST", 0 },
	{ 0x03, "RC_SEND_LAST_WITH_IMMEDIATE", WIRE_HDR_IMMDT },
	{ 0x04, "RC_SEND_ONLY", 0 },
	{ 0x05, "RC_SEND_ONLY_WITH_IMMEDIATE", WIRE_HDR_IMMDT },
	{ 0x06, "RC_RDMA_WRITE_FIRST", WIRE_HDR_RETH },
	{ 0x07, "RC_RDMA_WRITE_MIDDLE", 0 },
	{ 0x08, "RC_RDMA_WRITE_LAST", 0 },
	{ 0x09, "RC_RDMA_WRITE_LAST_WITH_IMMEDIATE", WIRE_HDR_IMMDT },
	{ 0x0a, "RC_RDMA_WRITE_ONLY", WIRE_HDR_RETH },
	{ 0x0b, "RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", WIRE_HDR_RETH | WIRE_HDR_IMMDT },
	{ 0x0c, "RC_RDMA_READ_REQUEST", WIRE_HDR_RETH },
	{ 0x0d, "RC_RDMA_READ_RESPONSE_FIRST", WIRE_HDR_AETH },
	{ 0x0e, "RC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	{ 0x0f, "RC_RDMA_READ_RESPONSE_LAST", WIRE_HDR_AETH },
	{ 0x10, "RC_RDMA_READ_RESPONSE_ONLY", WIRE_HDR_AETH },
	{ 0x11, "RC_ACKNOWLEDGE", WIRE_HDR_AETH },
	{ 0x12, "RC_ATOMIC_ACKNOWLEDGE", WIRE_HDR_AETH | WIRE_HDR_ATOMIC_ACK_ETH },
	{ 0x13, "RC_COMPARE_SWAP", WIRE_HDR_ATOMIC_ETH },
	{ 0x14, "RC_FETCH_ADD", WIRE_HDR_ATOMIC_ETH },
	{ 0x16, "RC_SEND_LAST_WITH_INVALIDATE", WIRE_HDR_IETH },
	{ 0x17, "RC_SEND_ONLY_WITH_INVALIDATE", WIRE_HDR_IETH },
	{ 0x1c, "RC_FLUSH", WIRE_HDR_FETH | WIRE_HDR_RETH },
	{ 0x1d, "RC_ATOMIC_WRITE", WIRE_HDR_RETH },
	{ 0x20, "UC_SEND_FIRST", 0 },
	{ 0x21, "UC_SEND_MIDDLE", 0 },
	{ 0x22, "UC_SEND_LAST", 0 },
	{ 0x23, "UC_SEND_LAST_WITH_IMMEDIATE", WIRE_HDR_IMMDT },
	{ 0x24, "UC_SEND_ONLY", 0 },
	{ 0x25, "UC_SEND_ONLY_WITH_IMMEDIATE", WIRE_HDR_IMMDT },
	{ 0x26, "UC_RDMA_WRITE_FIRST", WIRE_HDR_RETH },
	{ 0x27, "UC_RDMA_WRITE_MIDDLE", 0 },
	{ 0x28, "UC_RDMA_WRITE_LAST", 0 },
	{ 0x29, "UC_RDMA_WRITE_LAST_WITH_IMMEDIATE", WIRE_HDR_IMMDT },
	{ 0x2a, "UC_RDMA_WRITE_ONLY", WIRE_HDR_RETH },
	{ 0x2b, "UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", WIRE_HDR_RETH | WIRE_HDR_IMMDT },
	{ 0x64, "UD_SEND_ONLY", WIRE_HDR_DETH },
	{ 0x65, "UD_SEND_ONLY_WITH_IMMEDIATE", WIRE_HDR_DETH | WIRE_HDR_IMMDT },
	{ 0x81, "CNP", WIRE_HDR_CNP },
	{ 0xa0, "XRC_SEND_FIRST", WIRE_HDR_XRCETH },
	{ 0xa1, "XRC_SEND_MIDDLE", WIRE_HDR_XRCETH },
	{ 0xa2, "XRC_SEND_LAST", WIRE_HDR_XRCETH },
	{ 0xa3, "XRC_SEND_LAST_WITH_IMMEDIATE", WIRE_HDR_XRCETH | WIRE_HDR_IMMDT },
	{ 0xa4, "XRC_SEND_ONLY", WIRE_HDR_XRCETH },
	{ 0xa5, "XRC_SEND_ONLY_WITH_IMMEDIATE", WIRE_HDR_XRCETH | WIRE_HDR_IMMDT },
	{ 0xa6, "XRC_RDMA_WRITE_FIRST", WIRE_HDR_XRCETH | WIRE_HDR_RETH },
	{ 0xa7, "XRC_RDMA_WRITE_MIDDLE", WIRE_HDR_XRCETH },
	{ 0xa8, "XRC_RDMA_WRITE_LAST", WIRE_HDR_XRCETH },
	{ 0xa9, "XRC_RDMA_WRITE_LAST_WITH_IMMEDIATE", WIRE_HDR_XRCETH | WIRE_HDR_IMMDT },
	{ 0xaa, "XRC_RDMA_WRITE_ONLY", WIRE_HDR_XRCETH | WIRE_HDR_RETH },
	{ 0xab, "XRC_RDMA_WRITE_ONLY_WITH_IMMEDIATE", WIRE_HDR_XRCETH | WIRE_HDR_RETH | WIRE_HDR_IMMDT },
	{ 0xac, "XRC_RDMA_READ_REQUEST", WIRE_HDR_XRCETH | WIRE_HDR_RETH },
	{ 0xad, "XRC_RDMA_READ_RESPONSE_FIRST", WIRE_HDR_AETH },
	{ 0xae, "XRC_RDMA_READ_RESPONSE_MIDDLE", 0 },
	{ 0xaf, "XRC_RDMA_READ_RESPONSE_LAST", WIRE_HDR_AETH },
	{ 0xb0, "XRC_RDMA_READ_RESPONSE_ONLY", WIRE_HDR_AETH },
	{ 0xb1, "XRC_ACKNOWLEDGE", WIRE_HDR_AETH },
	{ 0xb2, "XRC_ATOMIC_ACKNOWLEDGE", WIRE_HDR_AETH | WIRE_HDR_ATOMIC_ACK_ETH },
	{ 0xb3, "XRC_COMPARE_SWAP", WIRE_HDR_XRCETH | WIRE_HDR_ATOMIC_ETH },
	{ 0xb4, "XRC_FETCH_ADD", WIRE_HDR_XRCETH | WIRE_HDR_ATOMIC_ETH },
	{ 0xb6, "XRC_SEND_LAST_WITH_INVALIDATE", WIRE_HDR_XRCETH | WIRE_HDR_IETH },
	{ 0xb7, "XRC_SEND_ONLY_WITH_INVALIDATE", WIRE_HDR_XRCETH | WIRE_HDR_IETH },
};
#define N_IBA (sizeof(iba_table38) / sizeof(iba_table38[0]))

/* Header sizes of IBA 9.3 / 9.5, in the order extension headers appear on the wire. */
static const struct {
	enum wire_ext	ext;
	uint8_t		len;
} ext_wire_order[] = {
	{ WIRE_EXT_XRCETH, 4 }, { WIRE_EXT_DETH, 8 }, { WIRE_EXT_FETH, 4 }, { WIRE_EXT_RETH, 16 }, { WIRE_EXT_ATOMIC_ETH, 28 },
	{ WIRE_EXT_AETH, 4 }, { WIRE_EXT_ATOMIC_ACK_ETH, 8 }, { WIRE_EXT_IMMDT, 4 },
	{ WIRE_EXT_IETH, 4 }, { WIRE_EXT_CNP, 16 },
};

static int iba_index(unsigned opcode)
{
	for (unsigned i = 0; i < N_IBA; i++)
		if (iba_table38[i].opcode == opcode)
			return (int)i;
	return -1;
}

static unsigned popcount(uint32_t x)
{
	return (unsigned)__builtin_popcount(x);
}

/* Loop test over all 256 opcodes: defined exactly where IBA defines one, consistent inside. */
START_TEST(opcode_entry)
{
	const struct wire_opcode_info *op = &wire_opcode[_i];
	int k = iba_index((unsigned)_i);
	uint32_t off = 12;

	if (k < 0) {
		ck_assert_msg(!wire_opcode_valid((uint8_t)_i), "opcode 0x%02x must be undefined", _i);
		ck_assert_uint_eq(op->hdrs, 0);
		ck_assert_uint_eq(op->flags, 0);
		return;
	}
	ck_assert_msg(wire_opcode_valid((uint8_t)_i), "opcode 0x%02x missing", _i);
	ck_assert_str_eq(op->name, iba_table38[k].name);
	ck_assert_uint_eq(op->hdrs, iba_table38[k].hdrs);

	/* Offsets: extension headers back to back after the BTH, in wire order. */
	for (unsigned e = 0; e < sizeof(ext_wire_order) / sizeof(ext_wire_order[0]); e++) {
		enum wire_ext x = ext_wire_order[e].ext;

		if (op->hdrs & (1u << x)) {
			ck_assert_msg(op->off[x] == off, "0x%02x ext %d at %u, expected %u", _i, x,
				      op->off[x], off);
			off += ext_wire_order[e].len;
		} else {
			ck_assert_uint_eq(op->off[x], 0);
		}
	}
	ck_assert_uint_eq(op->hdr_len, off);

	/* Exactly one position in the message. */
	ck_assert_uint_eq(popcount(op->flags & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE | WIRE_OPF_LAST |
						WIRE_OPF_ONLY)), 1);
	/* Transport flag from the opcode's top three bits; CNP has none. */
	ck_assert_uint_eq(popcount(op->flags & (WIRE_OPF_RC | WIRE_OPF_UC | WIRE_OPF_UD |
						WIRE_OPF_XRC)), _i == WIRE_OPC_CNP ? 0 : 1);
	if ((_i & 0xe0) == WIRE_OPC_RC && _i != WIRE_OPC_CNP)
		ck_assert(op->flags & WIRE_OPF_RC);
	if ((_i & 0xe0) == WIRE_OPC_UC)
		ck_assert(op->flags & WIRE_OPF_UC);
	if ((_i & 0xe0) == WIRE_OPC_UD)
		ck_assert(op->flags & WIRE_OPF_UD);
	if ((_i & 0xe0) == WIRE_OPC_XRC)
		ck_assert(op->flags & WIRE_OPF_XRC);
	/* XRC: every request names its SRQ, no response does. */
	if (op->flags & WIRE_OPF_XRC)
		ck_assert_uint_eq(!!(op->hdrs & WIRE_HDR_XRCETH), !!(op->flags & WIRE_OPF_REQUEST));
	else
		ck_assert(!(op->hdrs & WIRE_HDR_XRCETH));
	/* Direction: requests and responses, CNP neither. */
	ck_assert_uint_eq(popcount(op->flags & (WIRE_OPF_REQUEST | WIRE_OPF_RESPONSE)),
			  _i == WIRE_OPC_CNP ? 0 : 1);
	/* Meaning flags agree with the headers. */
	ck_assert_uint_eq(!!(op->flags & WIRE_OPF_ACK), !!(op->hdrs & WIRE_HDR_AETH));
	ck_assert_uint_eq(!!(op->flags & WIRE_OPF_IMM), !!(op->hdrs & WIRE_HDR_IMMDT));
	ck_assert_uint_eq(!!(op->flags & WIRE_OPF_INV), !!(op->hdrs & WIRE_HDR_IETH));
	ck_assert_uint_eq(!!(op->flags & WIRE_OPF_CNP), _i == WIRE_OPC_CNP);
	ck_assert_uint_eq(!!(op->flags & WIRE_OPF_FLUSH), !!(op->hdrs & WIRE_HDR_FETH));
	if (op->hdrs & WIRE_HDR_ATOMIC_ETH)
		ck_assert(op->flags & WIRE_OPF_ATOMIC && op->flags & WIRE_OPF_REQUEST);
	/* Payload: sends, writes, atomic writes and read responses carry data; nothing else does. */
	ck_assert_uint_eq(!!(op->flags & WIRE_OPF_PAYLOAD),
			  !!(op->flags & (WIRE_OPF_SEND | WIRE_OPF_WRITE | WIRE_OPF_ATOMIC_WRITE)) ||
			  (op->flags & (WIRE_OPF_READ | WIRE_OPF_RESPONSE)) ==
			  (WIRE_OPF_READ | WIRE_OPF_RESPONSE));
	/* A header starting the message says where the data goes (writes) or is a request. */
	if (op->flags & WIRE_OPF_WRITE)
		ck_assert_uint_eq(!!(op->hdrs & WIRE_HDR_RETH),
				  !!(op->flags & (WIRE_OPF_FIRST | WIRE_OPF_ONLY)));
}
END_TEST

START_TEST(opcode_count)
{
	unsigned n = 0;

	for (unsigned i = 0; i < 256; i++)
		n += wire_opcode_valid((uint8_t)i);
	ck_assert_uint_eq(n, N_IBA);
	ck_assert_uint_eq(N_IBA, 63);
}
END_TEST

START_TEST(drop_reason_names)
{
	for (int r = 0; r < WIRE_DROP_COUNT; r++) {
		ck_assert_ptr_nonnull(wire_drop_name(r));
		ck_assert_ptr_nonnull(wire_drop_desc(r));
		ck_assert_uint_gt(strlen(wire_drop_name(r)), 0);
		ck_assert_uint_gt(strlen(wire_drop_desc(r)), 5);
		for (int s = 0; s < r; s++)
			ck_assert_str_ne(wire_drop_name(r), wire_drop_name(s));
	}
	ck_assert_str_eq(wire_drop_name(WIRE_DROP_NONE), "NONE");
	ck_assert_str_eq(wire_drop_name(WIRE_DROP_BAD_ICRC), "BAD_ICRC");
	ck_assert_str_eq(wire_drop_name(WIRE_DROP_COUNT), "INVALID");
	ck_assert_str_eq(wire_drop_name((enum wire_drop)-1), "INVALID");
}
END_TEST

START_TEST(aeth_names)
{
	ck_assert_str_eq(wire_aeth_name(0x1f), "ACK");
	ck_assert_str_eq(wire_aeth_name(0x00), "ACK");
	ck_assert_str_eq(wire_aeth_name(0x2e), "RNR NAK");
	ck_assert_str_eq(wire_aeth_name(0x60), "NAK PSN sequence error");
	ck_assert_str_eq(wire_aeth_name(0x61), "NAK invalid request");
	ck_assert_str_eq(wire_aeth_name(0x62), "NAK remote access error");
	ck_assert_str_eq(wire_aeth_name(0x63), "NAK remote operational error");
	ck_assert_str_eq(wire_aeth_name(0x64), "NAK invalid RD request");
	ck_assert_str_eq(wire_aeth_name(0x65), "NAK reserved code");
	ck_assert_str_eq(wire_aeth_name(0x40), "reserved syndrome");
	ck_assert_str_eq(wire_aeth_name(0x80), "reserved syndrome");
}
END_TEST

/* The AETH credit encoding of end-to-end flow control: spot values and its shape. */
START_TEST(aeth_credits)
{
	ck_assert_int_eq(wire_aeth_credits(0), 0);
	ck_assert_int_eq(wire_aeth_credits(4), 4);
	ck_assert_int_eq(wire_aeth_credits(5), 6);
	ck_assert_int_eq(wire_aeth_credits(6), 8);
	ck_assert_int_eq(wire_aeth_credits(16), 256);
	ck_assert_int_eq(wire_aeth_credits(30), 32768);
	ck_assert_int_eq(wire_aeth_credits(31), -1);
	for (unsigned c = 5; c < 31; c++) {
		ck_assert_int_gt(wire_aeth_credits(c), wire_aeth_credits(c - 1));
		if (c >= 6)
			ck_assert_int_eq(wire_aeth_credits(c), 2 * wire_aeth_credits(c - 2));
	}
}
END_TEST

/* IBA table 45 spot values (milliseconds in the spec, microseconds here). */
START_TEST(rnr_timer)
{
	ck_assert_uint_eq(wire_rnr_timer_us(0), 655360);
	ck_assert_uint_eq(wire_rnr_timer_us(1), 10);
	ck_assert_uint_eq(wire_rnr_timer_us(12), 640);
	ck_assert_uint_eq(wire_rnr_timer_us(14), 1280);
	ck_assert_uint_eq(wire_rnr_timer_us(31), 491520);
	for (unsigned c = 2; c < 32; c++)
		ck_assert_uint_gt(wire_rnr_timer_us(c), wire_rnr_timer_us(c - 1));
}
END_TEST

START_TEST(mtu_bytes)
{
	ck_assert_uint_eq(wire_mtu_bytes(0), 0);
	ck_assert_uint_eq(wire_mtu_bytes(1), 256);
	ck_assert_uint_eq(wire_mtu_bytes(3), 1024);
	ck_assert_uint_eq(wire_mtu_bytes(5), 4096);
	ck_assert_uint_eq(wire_mtu_bytes(6), 0);
}
END_TEST

START_TEST(be_accessors)
{
	wire_be16 a;
	wire_be32 b;
	wire_be64 c;

	wire_set16(&a, 0x1234);
	wire_set32(&b, 0x89abcdef);
	wire_set64(&c, 0x0102030405060708ull);
	ck_assert_uint_eq(a.b[0], 0x12);
	ck_assert_uint_eq(b.b[0], 0x89);
	ck_assert_uint_eq(b.b[3], 0xef);
	ck_assert_uint_eq(c.b[0], 0x01);
	ck_assert_uint_eq(c.b[7], 0x08);
	ck_assert_uint_eq(wire_get16(a), 0x1234);
	ck_assert_uint_eq(wire_get32(b), 0x89abcdef);
	ck_assert_uint_eq(wire_get64(c), 0x0102030405060708ull);
}
END_TEST

Suite *wire_opcode_suite(void);

Suite *wire_opcode_suite(void)
{
	Suite *s = suite_create("wire_opcode");
	TCase *t = tcase_create("table");

	tcase_add_loop_test(t, opcode_entry, 0, 256);
	tcase_add_test(t, opcode_count);
	tcase_add_test(t, drop_reason_names);
	tcase_add_test(t, aeth_names);
	tcase_add_test(t, aeth_credits);
	tcase_add_test(t, rnr_timer);
	tcase_add_test(t, mtu_bytes);
	tcase_add_test(t, be_accessors);
	suite_add_tcase(s, t);
	return s;
}
