/* SPDX-License-Identifier: MIT */
/* MADs of the Communication Manager (IBA 13.4, 12.6) and rdma_cm's private-data header, on QP1. */
#ifndef UROCE_WIRE_MAD_H
#define UROCE_WIRE_MAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/wire.h"

/*
 * A MAD is the 256-byte payload of a UD SEND to QP1 (the GSI): the common
 * header (IBA 13.4.2) and 232 bytes of class data.  The CM's class data is
 * one message per attribute ID (IBA 12.6, tables 106-120).  Fields follow
 * the spec's bit order: a field that starts at bit 0 of a byte holds that
 * byte's most significant bits.  Sub-byte fields are read and written through
 * the accessors below, never by hand.
 */
#define WIRE_MAD_LEN		256
#define WIRE_MAD_HDR_LEN	24
#define WIRE_MAD_DATA_LEN	(WIRE_MAD_LEN - WIRE_MAD_HDR_LEN)

#define WIRE_MAD_BASE_VERSION	1
#define WIRE_MGMT_CLASS_CM	0x07	/* IBA 13.4.4 */
#define WIRE_CM_CLASS_VERSION	2	/* IBA 1.2 */
#define WIRE_MAD_METHOD_SEND	0x03

struct wire_mad_hdr {
	uint8_t		base_version;
	uint8_t		mgmt_class;
	uint8_t		class_version;
	uint8_t		method;		/* R(1) Method(7) */
	wire_be16	status;
	wire_be16	class_specific;
	wire_be64	tid;
	wire_be16	attr_id;
	wire_be16	resv;
	wire_be32	attr_mod;
};
_Static_assert(sizeof(struct wire_mad_hdr) == WIRE_MAD_HDR_LEN, "IBA 13.4.2");

/* CM attribute IDs (IBA 16.7.2 table 205). */
#define WIRE_CM_ATTRS(X)			\
	X(REQ,		0x0010, "ConnectRequest")	\
	X(MRA,		0x0011, "MsgRcptAck")		\
	X(REJ,		0x0012, "ConnectReject")	\
	X(REP,		0x0013, "ConnectReply")		\
	X(RTU,		0x0014, "ReadyToUse")		\
	X(DREQ,		0x0015, "DisconnectRequest")	\
	X(DREP,		0x0016, "DisconnectReply")	\
	X(SIDR_REQ,	0x0017, "ServiceIDResReq")	\
	X(SIDR_REP,	0x0018, "ServiceIDResReqResp")

enum wire_cm_attr {
#define WIRE_CM_ATTR_ENUM(n, v, d) WIRE_CM_##n = v,
	WIRE_CM_ATTRS(WIRE_CM_ATTR_ENUM)
#undef WIRE_CM_ATTR_ENUM
};

/* "REQ", or NULL for an attribute the CM does not handle. */
const char *wire_cm_attr_name(uint16_t attr_id);

#define WIRE_PERMISSIVE_LID	0xffff	/* IBA 4.1.3: "any port"; what RoCE REQs carry */

/* REQ (IBA 12.6.5, table 106).  The primary path alone: uroce offers no alternate path. */
struct wire_cm_path {
	wire_be16	local_lid;
	wire_be16	remote_lid;
	uint8_t		local_gid[16];
	uint8_t		remote_gid[16];
	wire_be32	flow_rate;	/* FlowLabel(20) resv(6) PacketRate(6) */
	uint8_t		tclass;
	uint8_t		hop_limit;
	uint8_t		sl_local;	/* SL(4) SubnetLocal(1) resv(3) */
	uint8_t		ack_timeout;	/* LocalAckTimeout(5) resv(3) */
};
_Static_assert(sizeof(struct wire_cm_path) == 44, "IBA 12.6.5 path");

#define WIRE_CM_REQ_PDATA	92
struct wire_cm_req {
	wire_be32	local_comm_id;
	wire_be32	vendor_id;	/* resv(8) VendorID(24) */
	wire_be64	service_id;
	wire_be64	local_ca_guid;
	wire_be32	resv28;
	wire_be32	local_qkey;
	wire_be32	qpn_rres;	/* LocalQPN(24) ResponderResources(8) */
	wire_be32	eecn_idepth;	/* LocalEECN(24) InitiatorDepth(8) */
	wire_be32	reecn_misc;	/* RemoteEECN(24) RemoteCMRespTimeout(5) TransportType(2) FlowCtl(1) */
	wire_be32	psn_misc;	/* StartingPSN(24) LocalCMRespTimeout(5) RetryCount(3) */
	wire_be16	pkey;
	uint8_t		mtu_misc;	/* PathMTU(4) RDCExists(1) RNRRetryCount(3) */
	uint8_t		retries_misc;	/* MaxCMRetries(4) SRQ(1) ExtTransportType(3) */
	struct wire_cm_path primary;
	struct wire_cm_path alternate;
	uint8_t		pdata[WIRE_CM_REQ_PDATA];
};
_Static_assert(sizeof(struct wire_cm_req) == WIRE_MAD_DATA_LEN, "IBA 12.6.5");

/* MRA (IBA 12.6.6, table 107). */
#define WIRE_CM_MRA_PDATA	222
struct wire_cm_mra {
	wire_be32	local_comm_id;
	wire_be32	remote_comm_id;
	uint8_t		msg_mraed;	/* MessageMRAed(2) resv(6): 0 REQ, 1 REP, 2 LAP */
	uint8_t		service_timeout; /* ServiceTimeout(5) resv(3) */
	uint8_t		pdata[WIRE_CM_MRA_PDATA];
};
_Static_assert(sizeof(struct wire_cm_mra) == WIRE_MAD_DATA_LEN, "IBA 12.6.6");

/* REJ (IBA 12.6.7, table 108). */
#define WIRE_CM_REJ_ARI		72
#define WIRE_CM_REJ_PDATA	148
struct wire_cm_rej {
	wire_be32	local_comm_id;
	wire_be32	remote_comm_id;
	uint8_t		msg_rejected;	/* MessageRejected(2) resv(6): 0 REQ, 1 REP, 2 other */
	uint8_t		ari_len;	/* RejectedInfoLength(7) resv(1) */
	wire_be16	reason;
	uint8_t		ari[WIRE_CM_REJ_ARI];
	uint8_t		pdata[WIRE_CM_REJ_PDATA];
};
_Static_assert(sizeof(struct wire_cm_rej) == WIRE_MAD_DATA_LEN, "IBA 12.6.7");

/* Which message a REJ or MRA is about (MessageRejected, MessageMRAed). */
#define WIRE_CM_MSG_REQ		0
#define WIRE_CM_MSG_REP		1
#define WIRE_CM_MSG_OTHER	2

/* REJ reasons (IBA 12.6.7.2 table 109) that uroce sends or acts on. */
#define WIRE_CM_REJ_TIMEOUT		1
#define WIRE_CM_REJ_INVALID_COMM_ID	6
#define WIRE_CM_REJ_INVALID_SERVICE_ID	8
#define WIRE_CM_REJ_STALE_CONN		10
#define WIRE_CM_REJ_CONSUMER_DEFINED	28

/* "invalid service ID" for 8; "see IBA table 109" for a reason without a name here. */
const char *wire_cm_rej_reason_name(unsigned reason);

/* REP (IBA 12.6.8, table 110). */
#define WIRE_CM_REP_PDATA	196
struct wire_cm_rep {
	wire_be32	local_comm_id;
	wire_be32	remote_comm_id;
	wire_be32	local_qkey;
	wire_be32	qpn_vendor;	/* LocalQPN(24) VendorID[23:16](8) */
	wire_be32	eecn_vendor;	/* LocalEECN(24) VendorID[15:8](8) */
	wire_be32	psn_vendor;	/* StartingPSN(24) VendorID[7:0](8) */
	uint8_t		rres;
	uint8_t		idepth;
	uint8_t		ack_misc;	/* TargetACKDelay(5) FailoverAccepted(2) FlowCtl(1) */
	uint8_t		rnr_misc;	/* RNRRetryCount(3) SRQ(1) resv(4) */
	wire_be64	local_ca_guid;	/* at byte 28: not 8-byte aligned, as the spec has it */
	uint8_t		pdata[WIRE_CM_REP_PDATA];
};
_Static_assert(sizeof(struct wire_cm_rep) == WIRE_MAD_DATA_LEN, "IBA 12.6.8");

/* RTU and DREP (IBA 12.6.9, 12.6.11): the two comm IDs and private data. */
#define WIRE_CM_RTU_PDATA	224
struct wire_cm_rtu {
	wire_be32	local_comm_id;
	wire_be32	remote_comm_id;
	uint8_t		pdata[WIRE_CM_RTU_PDATA];
};
_Static_assert(sizeof(struct wire_cm_rtu) == WIRE_MAD_DATA_LEN, "IBA 12.6.9");

/* DREQ (IBA 12.6.10, table 112). */
#define WIRE_CM_DREQ_PDATA	220
struct wire_cm_dreq {
	wire_be32	local_comm_id;
	wire_be32	remote_comm_id;
	wire_be32	remote_qpn;	/* RemoteQPN/EECN(24) resv(8) */
	uint8_t		pdata[WIRE_CM_DREQ_PDATA];
};
_Static_assert(sizeof(struct wire_cm_dreq) == WIRE_MAD_DATA_LEN, "IBA 12.6.10");

/* SIDR_REQ and SIDR_REP (IBA 12.11.1, 12.11.2, tables 119, 120). */
#define WIRE_CM_SIDR_REQ_PDATA	216
struct wire_cm_sidr_req {
	wire_be32	request_id;
	wire_be16	pkey;
	wire_be16	resv6;
	wire_be64	service_id;
	uint8_t		pdata[WIRE_CM_SIDR_REQ_PDATA];
};
_Static_assert(sizeof(struct wire_cm_sidr_req) == WIRE_MAD_DATA_LEN, "IBA 12.11.1");

#define WIRE_CM_SIDR_INFO	72
#define WIRE_CM_SIDR_REP_PDATA	136
struct wire_cm_sidr_rep {
	wire_be32	request_id;
	uint8_t		status;
	uint8_t		info_len;
	wire_be16	vendor_hi;
	wire_be32	qpn_vendor;	/* QPN(24) VendorID[7:0](8) */
	wire_be64	service_id;	/* at byte 12 */
	wire_be32	qkey;
	uint8_t		info[WIRE_CM_SIDR_INFO];
	uint8_t		pdata[WIRE_CM_SIDR_REP_PDATA];
};
_Static_assert(sizeof(struct wire_cm_sidr_rep) == WIRE_MAD_DATA_LEN, "IBA 12.11.2");

/* SIDR_REP status (IBA 12.11.2 table 121). */
#define WIRE_SIDR_OK			0
#define WIRE_SIDR_UNSUPPORTED		1	/* service ID not supported */
#define WIRE_SIDR_REJECT		2	/* rejected by the service provider */

/* One CM MAD, as sent and received (the UD SEND's whole payload). */
struct wire_cm_mad {
	struct wire_mad_hdr hdr;
	union {
		struct wire_cm_req	req;
		struct wire_cm_mra	mra;
		struct wire_cm_rej	rej;
		struct wire_cm_rep	rep;
		struct wire_cm_rtu	rtu;	/* also DREP */
		struct wire_cm_dreq	dreq;
		struct wire_cm_sidr_req	sidr_req;
		struct wire_cm_sidr_rep	sidr_rep;
		uint8_t			data[WIRE_MAD_DATA_LEN];
	} u;
};
_Static_assert(sizeof(struct wire_cm_mad) == WIRE_MAD_LEN, "IBA 13.4.2");

/* ---- Sub-byte fields: a value in the top @width bits of a byte, word or 24-bit field ---- */

static inline uint8_t wire_bits8(uint8_t byte, unsigned shift, unsigned width)
{
	return (uint8_t)((byte >> shift) & ((1u << width) - 1));
}

static inline void wire_set_bits8(uint8_t *byte, unsigned shift, unsigned width, unsigned v)
{
	uint8_t m = (uint8_t)(((1u << width) - 1) << shift);

	*byte = (uint8_t)((*byte & ~m) | ((v << shift) & m));
}

/* A 24-bit field in the top three bytes of @w, and the byte below it. */
static inline uint32_t wire_hi24(wire_be32 w)
{
	return wire_get32(w) >> 8;
}

static inline uint8_t wire_lo8(wire_be32 w)
{
	return w.b[3];
}

static inline void wire_set_hi24_lo8(wire_be32 *w, uint32_t hi24, uint8_t lo8)
{
	wire_set32(w, (hi24 & WIRE_24BIT_MASK) << 8 | lo8);
}

/* REQ fields packed into words and bytes (table 106). */
static inline uint8_t wire_cm_req_remote_cm_timeout(const struct wire_cm_req *r)
{
	return wire_bits8(wire_lo8(r->reecn_misc), 3, 5);
}

static inline uint8_t wire_cm_req_transport(const struct wire_cm_req *r)
{
	return wire_bits8(wire_lo8(r->reecn_misc), 1, 2);	/* 0 RC, 1 UC, 3 XRC */
}

static inline uint8_t wire_cm_req_local_cm_timeout(const struct wire_cm_req *r)
{
	return wire_bits8(wire_lo8(r->psn_misc), 3, 5);
}

static inline uint8_t wire_cm_req_retry_count(const struct wire_cm_req *r)
{
	return wire_bits8(wire_lo8(r->psn_misc), 0, 3);
}

static inline uint8_t wire_cm_req_mtu(const struct wire_cm_req *r)
{
	return wire_bits8(r->mtu_misc, 4, 4);	/* enum ibv_mtu */
}

static inline uint8_t wire_cm_req_rnr_retry(const struct wire_cm_req *r)
{
	return wire_bits8(r->mtu_misc, 0, 3);
}

static inline uint8_t wire_cm_req_max_retries(const struct wire_cm_req *r)
{
	return wire_bits8(r->retries_misc, 4, 4);
}

static inline bool wire_cm_req_srq(const struct wire_cm_req *r)
{
	return wire_bits8(r->retries_misc, 3, 1);
}

/* ---- rdma_cm's IP service IDs and private-data header ---- */

/* Port spaces (IBA Annex A11.2.1: service ID bytes 4 and 5); service ID = ps << 16 | port. */
#define WIRE_RDMA_PS_TCP	0x0106
#define WIRE_RDMA_PS_UDP	0x0111
#define WIRE_RDMA_PS_IB		0x013f
#define WIRE_RDMA_PS_IPOIB	0x0002

static inline uint64_t wire_ip_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/*
 * What rdma_cm puts in front of the consumer's private data of a REQ or
 * SIDR_REQ (Annex A11.6 "IP addressing CM private data format"): version 0,
 * the IP version in the high nibble, the active side's port, both addresses.
 * An IPv4 address sits in the last four bytes of its 16.
 */
#define WIRE_CMA_VERSION	0x00
struct wire_cma_hdr {
	uint8_t		cma_version;
	uint8_t		ip_version;	/* IPVer(4) resv(4) */
	wire_be16	port;		/* the source port */
	uint8_t		src_addr[16];
	uint8_t		dst_addr[16];
};
_Static_assert(sizeof(struct wire_cma_hdr) == 36, "Annex A11.6");

/* ---- Receive check ---- */

/* Why a MAD on QP1 was not given to the CM (counted per reason, shown by `uroce stat`). */
#define WIRE_MAD_DROP_REASONS(X)						\
	X(NONE,			"accepted")					\
	X(TRUNCATED,		"shorter than a 256-byte MAD")			\
	X(BAD_BASE_VERSION,	"MAD base version is not 1")			\
	X(NOT_CM,		"management class is not the CM's (0x07)")	\
	X(BAD_CLASS_VERSION,	"CM class version is not 2")			\
	X(BAD_METHOD,		"CM method is not Send")			\
	X(UNKNOWN_ATTR,		"CM attribute the CM does not handle")		\
	X(BAD_INFO_LEN,		"REJ or SIDR_REP info length over 72 bytes")	\
	X(BAD_MSG_REF,		"REJ or MRA names the reserved message 3")	\
	X(BAD_CMA_HDR,		"rdma_cm private-data header malformed")

enum wire_mad_drop {
#define WIRE_MAD_DROP_ENUM(n, d) WIRE_MAD_DROP_##n,
	WIRE_MAD_DROP_REASONS(WIRE_MAD_DROP_ENUM)
#undef WIRE_MAD_DROP_ENUM
	WIRE_MAD_DROP_COUNT
};

const char *wire_mad_drop_name(enum wire_mad_drop reason);
const char *wire_mad_drop_desc(enum wire_mad_drop reason);

/**
 * wire_cm_mad_check() - is @buf a CM MAD the CM handles?
 * @buf: the UD SEND's payload (after the DETH), @len bytes of it.
 *
 * Checks the length before anything is read, then the header: base and
 * class versions, class, method and attribute ID; then the class data's
 * length and message fields (REJ, MRA, SIDR_REP).
 * Return: WIRE_MAD_DROP_NONE, with @buf then readable as a struct wire_cm_mad,
 * or the reason.
 */
enum wire_mad_drop wire_cm_mad_check(const void *buf, size_t len);

/* Fill @mad's header for a CM Send of @attr with transaction ID @tid; the data is zeroed. */
void wire_cm_mad_init(struct wire_cm_mad *mad, enum wire_cm_attr attr, uint64_t tid);

/**
 * wire_cma_hdr_parse() - read rdma_cm's header at the front of a REQ's private data.
 * @pdata: the REQ's (or SIDR_REQ's) private data, @len bytes.
 * @family: out: 4 or 6.
 * @src, @dst: out: the addresses in GID form (IPv4-mapped for IPv4).
 * @port: out: the active side's port.
 * Return: WIRE_MAD_DROP_NONE or WIRE_MAD_DROP_BAD_CMA_HDR.
 */
enum wire_mad_drop wire_cma_hdr_parse(const uint8_t *pdata, size_t len, unsigned *family,
				      uint8_t src[16], uint8_t dst[16], uint16_t *port);
/* Write the header for addresses in GID form; @family 4 or 6. */
void wire_cma_hdr_build(struct wire_cma_hdr *h, unsigned family, const uint8_t src[16],
			const uint8_t dst[16], uint16_t port);

#endif
