// SPDX-License-Identifier: MIT
/* The opcode table (IBA table 38, Annex A17.9.3) and the wire's name tables. */
#include "uroce/wire.h"

#define BTH_LEN		12
#define RETH_LEN	16
#define AETH_LEN	4
#define ATOMIC_LEN	28
#define IMM_LEN		4
#define DETH_LEN	8
#define FETH_LEN	4
#define XRCETH_LEN	4

#define SEND		(WIRE_OPF_SEND | WIRE_OPF_REQUEST | WIRE_OPF_PAYLOAD)
#define WRITE		(WIRE_OPF_WRITE | WIRE_OPF_REQUEST | WIRE_OPF_PAYLOAD)
#define READ_RESP	(WIRE_OPF_READ | WIRE_OPF_RESPONSE | WIRE_OPF_PAYLOAD)

/*
 * Send and write opcodes are the same for RC, UC (0x20 apart) and XRC (0xa0),
 * whose requests have an XRCETH of @x bytes (0 or XRCETH_LEN) right after the BTH.
 */
#define XRC_HDR(x)	((x) ? WIRE_HDR_XRCETH : 0)
#define XRC_OFF(x)	[WIRE_EXT_XRCETH] = (x) ? BTH_LEN : 0
#define SEND_WRITE_OPS(base, T, tflag, x)						\
	[base | WIRE_OP_SEND_FIRST] = { T "_SEND_FIRST", XRC_HDR(x),			\
		SEND | WIRE_OPF_FIRST | tflag, BTH_LEN + x, { XRC_OFF(x) } },		\
	[base | WIRE_OP_SEND_MIDDLE] = { T "_SEND_MIDDLE", XRC_HDR(x),			\
		SEND | WIRE_OPF_MIDDLE | tflag, BTH_LEN + x, { XRC_OFF(x) } },		\
	[base | WIRE_OP_SEND_LAST] = { T "_SEND_LAST", XRC_HDR(x),			\
		SEND | WIRE_OPF_LAST | tflag, BTH_LEN + x, { XRC_OFF(x) } },		\
	[base | WIRE_OP_SEND_LAST_IMM] = { T "_SEND_LAST_WITH_IMMEDIATE",		\
		XRC_HDR(x) | WIRE_HDR_IMMDT, SEND | WIRE_OPF_LAST | WIRE_OPF_IMM | tflag,	\
		BTH_LEN + x + IMM_LEN, { XRC_OFF(x), [WIRE_EXT_IMMDT] = BTH_LEN + x } },	\
	[base | WIRE_OP_SEND_ONLY] = { T "_SEND_ONLY", XRC_HDR(x),			\
		SEND | WIRE_OPF_ONLY | tflag, BTH_LEN + x, { XRC_OFF(x) } },		\
	[base | WIRE_OP_SEND_ONLY_IMM] = { T "_SEND_ONLY_WITH_IMMEDIATE",		\
		XRC_HDR(x) | WIRE_HDR_IMMDT, SEND | WIRE_OPF_ONLY | WIRE_OPF_IMM | tflag,	\
		BTH_LEN + x + IMM_LEN, { XRC_OFF(x), [WIRE_EXT_IMMDT] = BTH_LEN + x } },	\
	[base | WIRE_OP_WRITE_FIRST] = { T "_RDMA_WRITE_FIRST",				\
		XRC_HDR(x) | WIRE_HDR_RETH, WRITE | WIRE_OPF_FIRST | tflag,		\
		BTH_LEN + x + RETH_LEN, { XRC_OFF(x), [WIRE_EXT_RETH] = BTH_LEN + x } },	\
	[base | WIRE_OP_WRITE_MIDDLE] = { T "_RDMA_WRITE_MIDDLE", XRC_HDR(x),		\
		WRITE | WIRE_OPF_MIDDLE | tflag, BTH_LEN + x, { XRC_OFF(x) } },		\
	[base | WIRE_OP_WRITE_LAST] = { T "_RDMA_WRITE_LAST", XRC_HDR(x),		\
		WRITE | WIRE_OPF_LAST | tflag, BTH_LEN + x, { XRC_OFF(x) } },		\
	[base | WIRE_OP_WRITE_LAST_IMM] = { T "_RDMA_WRITE_LAST_WITH_IMMEDIATE",	\
		XRC_HDR(x) | WIRE_HDR_IMMDT, WRITE | WIRE_OPF_LAST | WIRE_OPF_IMM | tflag,	\
		BTH_LEN + x + IMM_LEN, { XRC_OFF(x), [WIRE_EXT_IMMDT] = BTH_LEN + x } },	\
	[base | WIRE_OP_WRITE_ONLY] = { T "_RDMA_WRITE_ONLY",				\
		XRC_HDR(x) | WIRE_HDR_RETH, WRITE | WIRE_OPF_ONLY | tflag,		\
		BTH_LEN + x + RETH_LEN, { XRC_OFF(x), [WIRE_EXT_RETH] = BTH_LEN + x } },	\
	[base | WIRE_OP_WRITE_ONLY_IMM] = { T "_RDMA_WRITE_ONLY_WITH_IMMEDIATE",	\
		XRC_HDR(x) | WIRE_HDR_RETH | WIRE_HDR_IMMDT,				\
		WRITE | WIRE_OPF_ONLY | WIRE_OPF_IMM | tflag,				\
		BTH_LEN + x + RETH_LEN + IMM_LEN,					\
		{ XRC_OFF(x), [WIRE_EXT_RETH] = BTH_LEN + x,				\
		  [WIRE_EXT_IMMDT] = BTH_LEN + x + RETH_LEN } }

/*
 * The reliable operations besides sends and writes, for RC and XRC: requests
 * have an XRCETH of @x bytes first, responses and ACKs none.
 */
#define RELIABLE_OPS(base, T, tflag, x)							\
	[base | WIRE_OP_READ_REQUEST] = { T "_RDMA_READ_REQUEST",			\
		XRC_HDR(x) | WIRE_HDR_RETH,						\
		WIRE_OPF_READ | WIRE_OPF_REQUEST | WIRE_OPF_ONLY | tflag,		\
		BTH_LEN + x + RETH_LEN, { XRC_OFF(x), [WIRE_EXT_RETH] = BTH_LEN + x } },	\
	[base | WIRE_OP_READ_RESP_FIRST] = { T "_RDMA_READ_RESPONSE_FIRST",		\
		WIRE_HDR_AETH, READ_RESP | WIRE_OPF_FIRST | WIRE_OPF_ACK | tflag,	\
		BTH_LEN + AETH_LEN, { [WIRE_EXT_AETH] = BTH_LEN } },			\
	[base | WIRE_OP_READ_RESP_MIDDLE] = { T "_RDMA_READ_RESPONSE_MIDDLE", 0,	\
		READ_RESP | WIRE_OPF_MIDDLE | tflag, BTH_LEN, {0} },			\
	[base | WIRE_OP_READ_RESP_LAST] = { T "_RDMA_READ_RESPONSE_LAST",		\
		WIRE_HDR_AETH, READ_RESP | WIRE_OPF_LAST | WIRE_OPF_ACK | tflag,	\
		BTH_LEN + AETH_LEN, { [WIRE_EXT_AETH] = BTH_LEN } },			\
	[base | WIRE_OP_READ_RESP_ONLY] = { T "_RDMA_READ_RESPONSE_ONLY",		\
		WIRE_HDR_AETH, READ_RESP | WIRE_OPF_ONLY | WIRE_OPF_ACK | tflag,	\
		BTH_LEN + AETH_LEN, { [WIRE_EXT_AETH] = BTH_LEN } },			\
	[base | WIRE_OP_ACKNOWLEDGE] = { T "_ACKNOWLEDGE", WIRE_HDR_AETH,		\
		WIRE_OPF_RESPONSE | WIRE_OPF_ONLY | WIRE_OPF_ACK | tflag,		\
		BTH_LEN + AETH_LEN, { [WIRE_EXT_AETH] = BTH_LEN } },			\
	[base | WIRE_OP_ATOMIC_ACKNOWLEDGE] = { T "_ATOMIC_ACKNOWLEDGE",		\
		WIRE_HDR_AETH | WIRE_HDR_ATOMIC_ACK_ETH,				\
		WIRE_OPF_ATOMIC | WIRE_OPF_RESPONSE | WIRE_OPF_ONLY | WIRE_OPF_ACK | tflag,	\
		BTH_LEN + AETH_LEN + 8,							\
		{ [WIRE_EXT_AETH] = BTH_LEN, [WIRE_EXT_ATOMIC_ACK_ETH] = BTH_LEN + AETH_LEN } },	\
	[base | WIRE_OP_COMPARE_SWAP] = { T "_COMPARE_SWAP",				\
		XRC_HDR(x) | WIRE_HDR_ATOMIC_ETH,					\
		WIRE_OPF_ATOMIC | WIRE_OPF_REQUEST | WIRE_OPF_ONLY | tflag,		\
		BTH_LEN + x + ATOMIC_LEN, { XRC_OFF(x), [WIRE_EXT_ATOMIC_ETH] = BTH_LEN + x } },	\
	[base | WIRE_OP_FETCH_ADD] = { T "_FETCH_ADD",					\
		XRC_HDR(x) | WIRE_HDR_ATOMIC_ETH,					\
		WIRE_OPF_ATOMIC | WIRE_OPF_REQUEST | WIRE_OPF_ONLY | tflag,		\
		BTH_LEN + x + ATOMIC_LEN, { XRC_OFF(x), [WIRE_EXT_ATOMIC_ETH] = BTH_LEN + x } },	\
	[base | WIRE_OP_SEND_LAST_INV] = { T "_SEND_LAST_WITH_INVALIDATE",		\
		XRC_HDR(x) | WIRE_HDR_IETH, SEND | WIRE_OPF_LAST | WIRE_OPF_INV | tflag,	\
		BTH_LEN + x + 4, { XRC_OFF(x), [WIRE_EXT_IETH] = BTH_LEN + x } },	\
	[base | WIRE_OP_SEND_ONLY_INV] = { T "_SEND_ONLY_WITH_INVALIDATE",		\
		XRC_HDR(x) | WIRE_HDR_IETH, SEND | WIRE_OPF_ONLY | WIRE_OPF_INV | tflag,	\
		BTH_LEN + x + 4, { XRC_OFF(x), [WIRE_EXT_IETH] = BTH_LEN + x } }

const uint8_t wire_v4mapped_prefix[12] = { [10] = 0xff, [11] = 0xff };

const struct wire_opcode_info wire_opcode[256] = {
	SEND_WRITE_OPS(WIRE_OPC_RC, "RC", WIRE_OPF_RC, 0),
	SEND_WRITE_OPS(WIRE_OPC_UC, "UC", WIRE_OPF_UC, 0),
	SEND_WRITE_OPS(WIRE_OPC_XRC, "XRC", WIRE_OPF_XRC, XRCETH_LEN),
	RELIABLE_OPS(WIRE_OPC_RC, "RC", WIRE_OPF_RC, 0),
	RELIABLE_OPS(WIRE_OPC_XRC, "XRC", WIRE_OPF_XRC, XRCETH_LEN),
	/* IBA 1.5; header order and lengths as the kernel's rxe_opcode.c. */
	[WIRE_OPC_RC | WIRE_OP_FLUSH] = { "RC_FLUSH", WIRE_HDR_FETH | WIRE_HDR_RETH,
		WIRE_OPF_FLUSH | WIRE_OPF_REQUEST | WIRE_OPF_ONLY | WIRE_OPF_RC,
		BTH_LEN + FETH_LEN + RETH_LEN,
		{ [WIRE_EXT_FETH] = BTH_LEN, [WIRE_EXT_RETH] = BTH_LEN + FETH_LEN } },
	[WIRE_OPC_RC | WIRE_OP_ATOMIC_WRITE] = { "RC_ATOMIC_WRITE", WIRE_HDR_RETH,
		WIRE_OPF_ATOMIC_WRITE | WIRE_OPF_REQUEST | WIRE_OPF_PAYLOAD | WIRE_OPF_ONLY |
		WIRE_OPF_RC, BTH_LEN + RETH_LEN, { [WIRE_EXT_RETH] = BTH_LEN } },

	[WIRE_OPC_UD | WIRE_OP_SEND_ONLY] = { "UD_SEND_ONLY", WIRE_HDR_DETH,
		SEND | WIRE_OPF_ONLY | WIRE_OPF_UD, BTH_LEN + DETH_LEN,
		{ [WIRE_EXT_DETH] = BTH_LEN } },
	[WIRE_OPC_UD | WIRE_OP_SEND_ONLY_IMM] = { "UD_SEND_ONLY_WITH_IMMEDIATE",
		WIRE_HDR_DETH | WIRE_HDR_IMMDT,
		SEND | WIRE_OPF_ONLY | WIRE_OPF_IMM | WIRE_OPF_UD,
		BTH_LEN + DETH_LEN + IMM_LEN,
		{ [WIRE_EXT_DETH] = BTH_LEN, [WIRE_EXT_IMMDT] = BTH_LEN + DETH_LEN } },

	[WIRE_OPC_CNP] = { "CNP", WIRE_HDR_CNP, WIRE_OPF_CNP | WIRE_OPF_ONLY,
		BTH_LEN + 16, { [WIRE_EXT_CNP] = BTH_LEN } },
};

/* In enum order: the enum is made from the same list. */
static const struct wire_drop_info drop_info[WIRE_DROP_COUNT] = {
	WIRE_DROP_REASONS(WIRE_DROP_INFO)
};

const struct wire_drop_info *wire_drop_info_at(const struct wire_drop_info *tbl, unsigned count,
					       unsigned reason)
{
	static const struct wire_drop_info none = { "INVALID", "not a drop reason" };

	return reason < count ? &tbl[reason] : &none;
}

const char *wire_drop_name(enum wire_drop reason)
{
	return wire_drop_info_at(drop_info, WIRE_DROP_COUNT, reason)->name;
}

const char *wire_drop_desc(enum wire_drop reason)
{
	return wire_drop_info_at(drop_info, WIRE_DROP_COUNT, reason)->desc;
}

uint32_t wire_mtu_bytes(unsigned mtu_enum)
{
	return mtu_enum >= 1 && mtu_enum <= 5 ? 128u << mtu_enum : 0;
}

/* IBA 9.7.5.2.8 table 45: RNR NAK timer field in microseconds (code 0 = 655.36 ms). */
uint32_t wire_rnr_timer_us(unsigned code)
{
	static const uint32_t us[32] = {
		655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640,
		960, 1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480,
		30720, 40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
	};

	return us[code & 31];
}

int wire_aeth_credits(unsigned code)
{
	/* Codes 0..4 count one by one, then each step is x1.5 or x4/3 up to 32768. */
	static const uint16_t credits[31] = {
		0, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256,
		384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
		16384, 24576, 32768,
	};

	code &= WIRE_AETH_CODE_MASK;
	return code < 31 ? credits[code] : -1;
}

const char *wire_aeth_name(uint8_t syndrome)
{
	if (syndrome & 0x80)
		return "reserved syndrome";
	switch (syndrome & WIRE_AETH_TYPE_MASK) {
	case WIRE_AETH_ACK:
		return "ACK";
	case WIRE_AETH_RNR_NAK:
		return "RNR NAK";
	case WIRE_AETH_NAK:
		switch (syndrome & WIRE_AETH_CODE_MASK) {
		case WIRE_NAK_PSN_SEQ_ERR:	return "NAK PSN sequence error";
		case WIRE_NAK_INVALID_REQ:	return "NAK invalid request";
		case WIRE_NAK_REM_ACCESS_ERR:	return "NAK remote access error";
		case WIRE_NAK_REM_OP_ERR:	return "NAK remote operational error";
		case WIRE_NAK_INVALID_RD_REQ:	return "NAK invalid RD request";
		default:			return "NAK reserved code";
		}
	default:
		return "reserved syndrome";
	}
}
