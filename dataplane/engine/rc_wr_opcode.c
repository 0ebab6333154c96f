// SPDX-License-Identifier: MIT
/* What each work-request opcode is: the QP types that take it, its kind, its completion. */
#include "uroce/rc.h"

#define RC RC_QPT_BIT(IBV_QPT_RC)
#define UC RC_QPT_BIT(IBV_QPT_UC)
#define UD RC_QPT_BIT(IBV_QPT_UD)
#define XRC RC_QPT_BIT(IBV_QPT_XRC_SEND)
#define RAW RC_QPT_BIT(IBV_QPT_RAW_PACKET)

/*
 * The operations of each transport service, as the BTH OpCode table (IBA 9.2) lists
 * them: UD only sends, UC adds writes; reads, atomics and send with invalidate are
 * RC's alone.  Binding a window and invalidating a key happen in the send queue
 * without a packet, on the connected services (IBA 10.6.7).  The IBA 1.5
 * atomic write is RC's.  A raw packet QP sends its frames as is.  As the kernel's
 * rxe_wr_opcode_info[] in rxe_opcode.c.  An XRC initiator posts what RC does,
 * but the atomic write (no XRC opcode) and window binds (a window serves the QP
 * requests arrive on: the target).
 */
const struct rc_wr_opcode_info rc_wr_opcode_info[RC_WR_OPCODE_COUNT] = {
	[IBV_WR_RDMA_WRITE] = {
		.name = "RDMA_WRITE", .qp_types = RC | UC | XRC, .kind = RC_WR_WRITE,
		.wc_opcode = IBV_WC_RDMA_WRITE, .qp_ex_flag = IBV_QP_EX_WITH_RDMA_WRITE,
	},
	[IBV_WR_RDMA_WRITE_WITH_IMM] = {
		.name = "RDMA_WRITE_WITH_IMM", .qp_types = RC | UC | XRC, .kind = RC_WR_WRITE,
		.flags = RC_WR_IMM, .wc_opcode = IBV_WC_RDMA_WRITE,
		.qp_ex_flag = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
	},
	[IBV_WR_SEND] = {
		.name = "SEND", .qp_types = RC | UC | UD | XRC | RAW, .kind = RC_WR_SEND,
		.wc_opcode = IBV_WC_SEND, .qp_ex_flag = IBV_QP_EX_WITH_SEND,
	},
	[IBV_WR_SEND_WITH_IMM] = {
		.name = "SEND_WITH_IMM", .qp_types = RC | UC | UD | XRC, .kind = RC_WR_SEND,
		.flags = RC_WR_IMM, .wc_opcode = IBV_WC_SEND,
		.qp_ex_flag = IBV_QP_EX_WITH_SEND_WITH_IMM,
	},
	[IBV_WR_RDMA_READ] = {
		.name = "RDMA_READ", .qp_types = RC | XRC, .kind = RC_WR_READ,
		.wc_opcode = IBV_WC_RDMA_READ, .qp_ex_flag = IBV_QP_EX_WITH_RDMA_READ,
	},
	[IBV_WR_ATOMIC_CMP_AND_SWP] = {
		.name = "ATOMIC_CMP_AND_SWP", .qp_types = RC | XRC, .kind = RC_WR_ATOMIC,
		.wc_opcode = IBV_WC_COMP_SWAP, .qp_ex_flag = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
	},
	[IBV_WR_ATOMIC_FETCH_AND_ADD] = {
		.name = "ATOMIC_FETCH_AND_ADD", .qp_types = RC | XRC, .kind = RC_WR_ATOMIC,
		.wc_opcode = IBV_WC_FETCH_ADD, .qp_ex_flag = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	},
	[IBV_WR_LOCAL_INV] = {
		.name = "LOCAL_INV", .qp_types = RC | UC | XRC, .kind = RC_WR_LOCAL, .flags = RC_WR_INV,
		.wc_opcode = IBV_WC_LOCAL_INV, .qp_ex_flag = IBV_QP_EX_WITH_LOCAL_INV,
	},
	[IBV_WR_BIND_MW] = {
		.name = "BIND_MW", .qp_types = RC | UC, .kind = RC_WR_LOCAL,
		.wc_opcode = IBV_WC_BIND_MW, .qp_ex_flag = IBV_QP_EX_WITH_BIND_MW,
	},
	[IBV_WR_SEND_WITH_INV] = {
		.name = "SEND_WITH_INV", .qp_types = RC | XRC, .kind = RC_WR_SEND, .flags = RC_WR_INV,
		.wc_opcode = IBV_WC_SEND, .qp_ex_flag = IBV_QP_EX_WITH_SEND_WITH_INV,
	},
	[IBV_WR_ATOMIC_WRITE] = {
		.name = "ATOMIC_WRITE", .qp_types = RC, .kind = RC_WR_ATOMIC_WRITE,
		.wc_opcode = IBV_WC_ATOMIC_WRITE, .qp_ex_flag = IBV_QP_EX_WITH_ATOMIC_WRITE,
	},
};

const char *rc_wr_opcode_name(enum ibv_wr_opcode op)
{
	if ((unsigned)op >= RC_WR_OPCODE_COUNT || !rc_wr_opcode_info[op].name)
		return "UNKNOWN";
	return rc_wr_opcode_info[op].name;
}
