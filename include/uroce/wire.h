/* SPDX-License-Identifier: MIT */
/* RoCE wire format: headers, opcode table, parse, build, ICRC (IBA ch. 9, Annexes A16, A17). */
#ifndef UROCE_WIRE_H
#define UROCE_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Big-endian fields.  Byte arrays, so every header has alignment 1 and can
 * sit at any offset of a frame; read and written only through the accessors.
 */
typedef struct { uint8_t b[2]; } wire_be16;
typedef struct { uint8_t b[4]; } wire_be32;
typedef struct { uint8_t b[8]; } wire_be64;

static inline uint16_t wire_get16(wire_be16 v)
{
	return (uint16_t)(v.b[0] << 8 | v.b[1]);
}

static inline uint32_t wire_get32(wire_be32 v)
{
	return (uint32_t)v.b[0] << 24 | (uint32_t)v.b[1] << 16 |
	       (uint32_t)v.b[2] << 8 | v.b[3];
}

static inline uint64_t wire_get64(wire_be64 v)
{
	uint64_t x = 0;

	for (int i = 0; i < 8; i++)
		x = x << 8 | v.b[i];
	return x;
}

static inline void wire_set16(wire_be16 *p, uint16_t x)
{
	p->b[0] = (uint8_t)(x >> 8);
	p->b[1] = (uint8_t)x;
}

static inline void wire_set32(wire_be32 *p, uint32_t x)
{
	p->b[0] = (uint8_t)(x >> 24);
	p->b[1] = (uint8_t)(x >> 16);
	p->b[2] = (uint8_t)(x >> 8);
	p->b[3] = (uint8_t)x;
}

static inline void wire_set64(wire_be64 *p, uint64_t x)
{
	for (int i = 7; i >= 0; i--, x >>= 8)
		p->b[i] = (uint8_t)x;
}

/* The same on raw bytes of a frame (p need not be aligned). */
static inline uint16_t wire_load16(const void *p)
{
	const uint8_t *b = p;

	return (uint16_t)(b[0] << 8 | b[1]);
}

static inline uint32_t wire_load24(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}

static inline uint32_t wire_load32(const void *p)
{
	const uint8_t *b = p;

	return (uint32_t)b[0] << 24 | wire_load24(b + 1);
}

static inline uint64_t wire_load64(const void *p)
{
	const uint8_t *b = p;

	return (uint64_t)wire_load32(b) << 32 | wire_load32(b + 4);
}

#define WIRE_24BIT_MASK 0x00ffffffu
/* The 24-bit fields of the transport headers (IBA 9.2, 9.3). */
#define WIRE_QPN_MASK	WIRE_24BIT_MASK
#define WIRE_PSN_MASK	WIRE_24BIT_MASK
#define WIRE_MSN_MASK	WIRE_24BIT_MASK

/* ---- PSN arithmetic: 24-bit serial numbers (IBA 9.7.1) ---- */

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & WIRE_PSN_MASK;
}

/* Signed distance a - b in the 24-bit circle: < 0 before, 0 equal, > 0 after. */
static inline int32_t psn_cmp(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* ---- GIDs: RoCE v2 carries an IPv4 address as an IPv4-mapped GID (::ffff:a.b.c.d) ---- */

extern const uint8_t wire_v4mapped_prefix[12];

static inline bool wire_gid_is_v4mapped(const uint8_t gid[16])
{
	for (int i = 0; i < 12; i++)
		if (gid[i] != wire_v4mapped_prefix[i])
			return false;
	return true;
}

/*
 * A multicast GID (IBA 4.1.1): IPv6 ff00::/8, or IPv4-mapped 224.0.0.0/4,
 * as the kernel's rdma_is_multicast_addr() reads them.
 */
static inline bool wire_gid_is_multicast(const uint8_t gid[16])
{
	return gid[0] == 0xff || (wire_gid_is_v4mapped(gid) && (gid[12] & 0xf0) == 0xe0);
}

/* The Ethernet address of a multicast GID: 01:00:5e + 23 bits (RFC 1112), or 33:33 + 32 bits (RFC 2464). */
static inline void wire_gid_multicast_mac(const uint8_t gid[16], uint8_t mac[6])
{
	if (wire_gid_is_v4mapped(gid)) {
		mac[0] = 0x01, mac[1] = 0x00, mac[2] = 0x5e;
		mac[3] = gid[13] & 0x7f, mac[4] = gid[14], mac[5] = gid[15];
	} else {
		mac[0] = 0x33, mac[1] = 0x33;
		mac[2] = gid[12], mac[3] = gid[13], mac[4] = gid[14], mac[5] = gid[15];
	}
}

/* ---- Layer 2/3/4 ---- */

#define WIRE_ETH_ALEN		6
#define WIRE_ETHERTYPE_IPV4	0x0800
#define WIRE_ETHERTYPE_ARP	0x0806
#define WIRE_ETHERTYPE_VLAN	0x8100
#define WIRE_ETHERTYPE_IPV6	0x86dd
#define WIRE_ETHERTYPE_ROCEV1	0x8915	/* RoCE v1, IBA Annex A16: a GRH right after Ethernet */
#define WIRE_IPPROTO_UDP	17
#define WIRE_ROCEV2_PORT	4791	/* IBA Annex A17.2.1 */
#define WIRE_UDP_SPORT_MIN	49152	/* dynamic range: never a well-known port */

struct wire_eth_hdr {
	uint8_t		dst[WIRE_ETH_ALEN];
	uint8_t		src[WIRE_ETH_ALEN];
	wire_be16	ethertype;
};
_Static_assert(sizeof(struct wire_eth_hdr) == 14, "eth");

struct wire_vlan_hdr {
	wire_be16	tci;		/* PCP(3) DEI(1) VID(12) */
	wire_be16	ethertype;	/* of the encapsulated frame */
};
_Static_assert(sizeof(struct wire_vlan_hdr) == 4, "vlan");

struct wire_ipv4_hdr {
	uint8_t		version_ihl;
	uint8_t		tos;		/* DSCP(6) ECN(2) */
	wire_be16	total_len;
	wire_be16	id;
	wire_be16	frag_off;	/* flags(3) offset(13) */
	uint8_t		ttl;
	uint8_t		protocol;
	wire_be16	checksum;
	uint8_t		src[4];
	uint8_t		dst[4];
};
_Static_assert(sizeof(struct wire_ipv4_hdr) == 20, "ipv4");
#define WIRE_IPV4_DF		0x4000
#define WIRE_IPV4_MF		0x2000
#define WIRE_IPV4_OFFMASK	0x1fff

struct wire_ipv6_hdr {
	wire_be32	vtc_flow;	/* version(4) traffic class(8) flow label(20) */
	wire_be16	payload_len;
	uint8_t		next_header;
	uint8_t		hop_limit;
	uint8_t		src[16];
	uint8_t		dst[16];
};
_Static_assert(sizeof(struct wire_ipv6_hdr) == 40, "ipv6");
/*
 * RoCE v1 carries the InfiniBand GRH (IBA 8.3.1), which has IPv6's layout:
 * IPVer 6, TClass, FlowLabel, PayLen (BTH to ICRC), NxtHdr, HopLmt, SGID,
 * DGID.  NxtHdr 0x1B says an IBA transport header (the BTH) follows.
 */
#define WIRE_GRH_NXTHDR_IBA	0x1b

struct wire_udp_hdr {
	wire_be16	sport;
	wire_be16	dport;
	wire_be16	len;
	wire_be16	checksum;
};
_Static_assert(sizeof(struct wire_udp_hdr) == 8, "udp");

/* ECN codepoints in the low two bits of TOS / traffic class. */
#define WIRE_ECN_MASK	0x03
#define WIRE_ECN_ECT0	0x02
#define WIRE_ECN_ECT1	0x01
#define WIRE_ECN_CE	0x03

/* ---- GIDs (IBA 4.1.1) and the RoCE version a GID table entry speaks ---- */

/* Entries in a port's GID table (the pairs host_gid_table() fills, the engine's, sysfs). */
#define WIRE_GID_TABLE_LEN	16

enum wire_gid_type {
	WIRE_GID_ROCE_V1 = 0,	/* a GRH on EtherType 0x8915 (Annex A16) */
	WIRE_GID_ROCE_V2 = 1,
};

struct wire_gid_entry {
	bool		valid;
	uint8_t		gid[16];	/* IPv4-mapped or IPv6 */
	enum wire_gid_type type;
};

/* ---- InfiniBand transport headers (IBA 9.2, 9.3) ---- */

struct wire_bth {
	uint8_t		opcode;
	uint8_t		flags;		/* SE(1) MigReq(1) PadCnt(2) TVer(4) */
	wire_be16	pkey;
	wire_be32	qpn;		/* resv8a(8) DestQP(24) */
	wire_be32	apsn;		/* AckReq(1) resv7(7) PSN(24) */
};
_Static_assert(sizeof(struct wire_bth) == 12, "bth");
#define WIRE_BTH_SE		0x80
#define WIRE_BTH_MIG		0x40
#define WIRE_BTH_PAD_MASK	0x30
#define WIRE_BTH_PAD_SHIFT	4
#define WIRE_BTH_TVER_MASK	0x0f
#define WIRE_BTH_ACKREQ		0x80000000u
/*
 * uroce's selective repeat (docs/engine.md, "Selective repeat") in the two
 * high bits of resv7, which IBA 9.2 has senders clear and receivers ignore
 * and which the ICRC covers: SR_CAP says "this QP does selective repeat",
 * SR_NAK marks a PSN sequence NAK whose AETH MSN field holds the number of
 * PSNs missing from its PSN on.  Neither is set towards a peer that has not
 * set SR_CAP first.
 */
#define WIRE_BTH_SR_CAP		0x40000000u
#define WIRE_BTH_SR_NAK		0x20000000u
#define WIRE_BTH_TVER		0
#define WIRE_DEFAULT_PKEY	0xffff
/* QP1, the GSI, and its well-known Q_Key (IBA 13.5.1, 10.2.5): where CM MADs go. */
#define WIRE_GSI_QPN		1
#define WIRE_GSI_QKEY		0x80010000u
#define WIRE_MCAST_QPN		0xffffffu	/* a UD datagram to a multicast group (IBA 10.5.2.2) */

struct wire_reth {			/* RDMA extended transport header, 9.3.3 */
	wire_be64	va;
	wire_be32	rkey;
	wire_be32	dma_len;
};
_Static_assert(sizeof(struct wire_reth) == 16, "reth");

struct wire_aeth {			/* ACK extended transport header, 9.3.5 */
	wire_be32	syn_msn;	/* Syndrome(8) MSN(24) */
};
_Static_assert(sizeof(struct wire_aeth) == 4, "aeth");

struct wire_atomic_eth {		/* 9.3.4 */
	wire_be64	va;
	wire_be32	rkey;
	wire_be64	swap_add;
	wire_be64	compare;
};
_Static_assert(sizeof(struct wire_atomic_eth) == 28, "atomiceth");

struct wire_atomic_ack_eth {		/* 9.5.3 */
	wire_be64	orig;
};
_Static_assert(sizeof(struct wire_atomic_ack_eth) == 8, "atomicacketh");

struct wire_immdt {			/* 9.3.6 */
	wire_be32	imm;
};
_Static_assert(sizeof(struct wire_immdt) == 4, "immdt");

struct wire_ieth {			/* invalidate, 9.3.7 */
	wire_be32	rkey;
};
_Static_assert(sizeof(struct wire_ieth) == 4, "ieth");

/*
 * FLUSH extended transport header (IBA 1.5, as rxe_hdr.h): placement type in
 * bits 3-0, selectivity level in bits 5-4, the rest reserved.
 */
struct wire_feth {
	wire_be32	bits;
};
_Static_assert(sizeof(struct wire_feth) == 4, "feth");
#define WIRE_FETH_PLT_MASK	0x0000000fu
#define WIRE_FETH_SEL_MASK	0x00000030u
#define WIRE_FETH_SEL_SHIFT	4
/* Placement types, bits of the PLT field. */
#define WIRE_FLUSH_GLOBAL	0x1u	/* visible to every observer */
#define WIRE_FLUSH_PERSISTENT	0x2u	/* in persistent memory */
/* Selectivity levels. */
#define WIRE_FLUSH_RANGE	0u	/* the RETH's range */
#define WIRE_FLUSH_MR		1u	/* the whole region of the R_Key */

/*
 * XRC extended transport header (IBA 1.2.1, table 38 "XRCETH"): in every XRC
 * request, right after the BTH, the SRQ of the target QP's XRC domain the
 * message is for.  XRC responses and ACKs have none.
 */
struct wire_xrceth {
	wire_be32	srqn;		/* resv8(8) XRCSRQ(24) */
};
_Static_assert(sizeof(struct wire_xrceth) == 4, "xrceth");
#define WIRE_SRQN_MASK	WIRE_24BIT_MASK

struct wire_deth {			/* datagram, 9.3.2 */
	wire_be32	qkey;
	wire_be32	src_qp;		/* resv8(8) SrcQP(24) */
};
_Static_assert(sizeof(struct wire_deth) == 8, "deth");

struct wire_cnp {			/* Annex A17.9.3: 16 reserved bytes after the BTH */
	uint8_t		reserved[16];
};
_Static_assert(sizeof(struct wire_cnp) == 16, "cnp");

#define WIRE_ICRC_LEN	4

/* AETH syndrome (IBA 9.7.5.2.1, table 44). */
#define WIRE_AETH_TYPE_MASK	0x60
#define WIRE_AETH_ACK		0x00	/* low 5 bits: credit count */
#define WIRE_AETH_RNR_NAK	0x20	/* low 5 bits: RNR timer code */
#define WIRE_AETH_NAK		0x60	/* low 5 bits: NAK code */
#define WIRE_AETH_CODE_MASK	0x1f
enum wire_nak_code {
	WIRE_NAK_PSN_SEQ_ERR	= 0,
	WIRE_NAK_INVALID_REQ	= 1,
	WIRE_NAK_REM_ACCESS_ERR	= 2,
	WIRE_NAK_REM_OP_ERR	= 3,
	WIRE_NAK_INVALID_RD_REQ	= 4,
};
#define WIRE_AETH_CREDIT_INVALID 0x1f	/* "end-to-end credits not used" */

/* ---- Opcodes (IBA table 38; CNP from Annex A17.9.3) ---- */

#define WIRE_OPC_RC	0x00
#define WIRE_OPC_UC	0x20
#define WIRE_OPC_RD	0x40
#define WIRE_OPC_UD	0x60
#define WIRE_OPC_XRC	0xa0	/* the RC operations; requests carry an XRCETH */
#define WIRE_OPC_CNP	0x81
/* An opcode is its transport (the top 3 bits, WIRE_OPC_*) and its operation (the low 5, WIRE_OP_*). */
#define WIRE_OPC_TRANSPORT_MASK	0xe0
#define WIRE_OPC_LOW_MASK	0x1f

enum wire_opcode_low {
	WIRE_OP_SEND_FIRST		= 0x00,
	WIRE_OP_SEND_MIDDLE		= 0x01,
	WIRE_OP_SEND_LAST		= 0x02,
	WIRE_OP_SEND_LAST_IMM		= 0x03,
	WIRE_OP_SEND_ONLY		= 0x04,
	WIRE_OP_SEND_ONLY_IMM		= 0x05,
	WIRE_OP_WRITE_FIRST		= 0x06,
	WIRE_OP_WRITE_MIDDLE		= 0x07,
	WIRE_OP_WRITE_LAST		= 0x08,
	WIRE_OP_WRITE_LAST_IMM		= 0x09,
	WIRE_OP_WRITE_ONLY		= 0x0a,
	WIRE_OP_WRITE_ONLY_IMM		= 0x0b,
	WIRE_OP_READ_REQUEST		= 0x0c,
	WIRE_OP_READ_RESP_FIRST		= 0x0d,
	WIRE_OP_READ_RESP_MIDDLE	= 0x0e,
	WIRE_OP_READ_RESP_LAST		= 0x0f,
	WIRE_OP_READ_RESP_ONLY		= 0x10,
	WIRE_OP_ACKNOWLEDGE		= 0x11,
	WIRE_OP_ATOMIC_ACKNOWLEDGE	= 0x12,
	WIRE_OP_COMPARE_SWAP		= 0x13,
	WIRE_OP_FETCH_ADD		= 0x14,
	WIRE_OP_SEND_LAST_INV		= 0x16,
	WIRE_OP_SEND_ONLY_INV		= 0x17,
	WIRE_OP_FLUSH			= 0x1c,	/* IBA 1.5 (rxe's IB_OPCODE_FLUSH) */
	WIRE_OP_ATOMIC_WRITE		= 0x1d,	/* IBA 1.5 (rxe's IB_OPCODE_ATOMIC_WRITE) */
};

enum wire_ext {	/* index into wire_opcode_info.off[] */
	WIRE_EXT_RETH, WIRE_EXT_AETH, WIRE_EXT_ATOMIC_ETH, WIRE_EXT_ATOMIC_ACK_ETH,
	WIRE_EXT_IMMDT, WIRE_EXT_IETH, WIRE_EXT_DETH, WIRE_EXT_CNP, WIRE_EXT_FETH,
	WIRE_EXT_XRCETH, WIRE_EXT_COUNT
};

/* Which extension headers follow the BTH (a typed mask, kept apart from the flags). */
enum wire_hdr_bit {
	WIRE_HDR_RETH		= 1u << WIRE_EXT_RETH,
	WIRE_HDR_AETH		= 1u << WIRE_EXT_AETH,
	WIRE_HDR_ATOMIC_ETH	= 1u << WIRE_EXT_ATOMIC_ETH,
	WIRE_HDR_ATOMIC_ACK_ETH	= 1u << WIRE_EXT_ATOMIC_ACK_ETH,
	WIRE_HDR_IMMDT		= 1u << WIRE_EXT_IMMDT,
	WIRE_HDR_IETH		= 1u << WIRE_EXT_IETH,
	WIRE_HDR_DETH		= 1u << WIRE_EXT_DETH,
	WIRE_HDR_CNP		= 1u << WIRE_EXT_CNP,
	WIRE_HDR_FETH		= 1u << WIRE_EXT_FETH,
	WIRE_HDR_XRCETH		= 1u << WIRE_EXT_XRCETH,
};
typedef uint16_t wire_hdr_mask;

/* What a packet means (a typed mask of its own). */
enum wire_op_flag {
	WIRE_OPF_FIRST		= 1u << 0,
	WIRE_OPF_MIDDLE		= 1u << 1,
	WIRE_OPF_LAST		= 1u << 2,
	WIRE_OPF_ONLY		= 1u << 3,	/* FIRST and LAST in one packet */
	WIRE_OPF_PAYLOAD	= 1u << 4,	/* may carry payload */
	WIRE_OPF_REQUEST	= 1u << 5,	/* requester -> responder */
	WIRE_OPF_RESPONSE	= 1u << 6,	/* responder -> requester */
	WIRE_OPF_SEND		= 1u << 7,
	WIRE_OPF_WRITE		= 1u << 8,
	WIRE_OPF_READ		= 1u << 9,
	WIRE_OPF_ATOMIC		= 1u << 10,
	WIRE_OPF_IMM		= 1u << 11,
	WIRE_OPF_INV		= 1u << 12,
	WIRE_OPF_ACK		= 1u << 13,	/* carries an AETH */
	WIRE_OPF_CNP		= 1u << 14,
	WIRE_OPF_RC		= 1u << 15,
	WIRE_OPF_UC		= 1u << 16,
	WIRE_OPF_UD		= 1u << 17,
	WIRE_OPF_ATOMIC_WRITE	= 1u << 18,	/* 8 bytes placed at once, answered like a read */
	WIRE_OPF_FLUSH		= 1u << 19,	/* make earlier writes visible or persistent */
	WIRE_OPF_XRC		= 1u << 20,
};
typedef uint32_t wire_op_flags;

struct wire_opcode_info {
	const char	*name;		/* NULL: opcode not defined */
	wire_hdr_mask	hdrs;
	wire_op_flags	flags;
	uint8_t		hdr_len;	/* BTH + every extension header */
	uint8_t		off[WIRE_EXT_COUNT];	/* offset from the BTH; 0 if absent */
};

extern const struct wire_opcode_info wire_opcode[256];

static inline bool wire_opcode_valid(uint8_t opcode)
{
	return wire_opcode[opcode].name != NULL;
}

/* ---- Drop reasons ---- */

#define WIRE_DROP_REASONS(X)						\
	X(NONE,		"accepted")					\
	X(TRUNCATED_ETH,	"frame shorter than an Ethernet header")	\
	X(NOT_IP,		"EtherType is neither IPv4 nor IPv6")	\
	X(TRUNCATED_IP,	"frame shorter than the IP header")		\
	X(BAD_IP_VERSION,	"IP version does not match the EtherType")	\
	X(BAD_IHL,		"IPv4 header length below 20 bytes or past the frame") \
	X(BAD_IP_CSUM,	"IPv4 header checksum wrong")			\
	X(IP_LEN,		"IP length disagrees with the frame")		\
	X(IP_FRAGMENT,	"IP fragment (RoCE v2 is never fragmented)")	\
	X(NOT_UDP,		"IP protocol / next header is not UDP")	\
	X(TRUNCATED_UDP,	"frame shorter than the UDP header")		\
	X(UDP_LEN,		"UDP length disagrees with the IP length")	\
	X(NOT_ROCE_PORT,	"UDP destination port is not 4791")		\
	X(TRUNCATED_BTH,	"UDP payload shorter than BTH + ICRC")		\
	X(BAD_TVER,		"BTH transport version is not 0")		\
	X(UNKNOWN_OPCODE,	"BTH opcode not defined by IBA")		\
	X(TRUNCATED_EXT,	"packet shorter than its extension headers")	\
	X(BAD_PAD,		"pad where none is allowed, past the data, or data + pad not whole words") \
	X(BAD_PAYLOAD_LEN,	"payload length breaks the opcode's rule")	\
	X(BAD_ICRC,		"invariant CRC mismatch")			\
	X(BAD_GRH_NXTHDR,	"RoCE v1 GRH next header is not 0x1B (IBA transport)")

enum wire_drop {
#define WIRE_DROP_ENUM(n, d) WIRE_DROP_##n,
	WIRE_DROP_REASONS(WIRE_DROP_ENUM)
#undef WIRE_DROP_ENUM
	WIRE_DROP_COUNT
};

/* Short identifier ("BAD_ICRC") and one-phrase meaning of a drop reason. */
const char *wire_drop_name(enum wire_drop reason);
const char *wire_drop_desc(enum wire_drop reason);

/*
 * A drop reason's name and meaning.  The layers above keep vocabularies of
 * their own in the same X-macro form (RC_DROP_REASONS ...): the X
 * WIRE_DROP_INFO makes their table, in enum order, and wire_drop_info_at()
 * looks in it.
 */
struct wire_drop_info {
	const char	*name;
	const char	*desc;
};
#define WIRE_DROP_INFO(n, d) { #n, d },
/* &@tbl[@reason], or for a @reason past @count an entry "INVALID", "not a drop reason". */
const struct wire_drop_info *wire_drop_info_at(const struct wire_drop_info *tbl, unsigned count,
					       unsigned reason);

/* Counters, one per reason; the caller owns them (per port, per thread). */
struct wire_drop_stats {
	uint64_t count[WIRE_DROP_COUNT];
};

/* ---- Receive classification (DPDK's rte_net_get_ptype()) ---- */

#define WIRE_IPPROTO_ICMP	1
#define WIRE_IPPROTO_ICMPV6	58
/* l4_proto of a later IPv4 fragment, which carries no L4 header (255: reserved, RFC 5237). */
#define WIRE_IPPROTO_NONE	255

/*
 * What a received frame is, from one walk over its L2, L3 and L4 headers:
 * the question every receiver asks before it looks further (the DPDK
 * port's classifier, wire_parse(), the decoder).
 */
enum wire_frame_kind {
	WIRE_FRAME_ROCE,	/* UDP to port 4791 (RoCE v2, Annex A17.2) or a GRH on 0x8915
				   (RoCE v1, Annex A16): BTH at bth_off */
	WIRE_FRAME_ARP,
	WIRE_FRAME_IP,		/* any other IPv4/IPv6: TCP, UDP, ICMP... */
	WIRE_FRAME_OTHER,	/* another EtherType (LLDP...) */
	WIRE_FRAME_MALFORMED,	/* too short or broken before its protocol shows */
	WIRE_FRAME_ND,		/* ICMPv6 neighbour solicitation or advertisement (RFC 4861) */
	WIRE_FRAME_ICMP_ROCE,	/* ICMP / ICMPv6 port unreachable quoting UDP 4791 */
};

/*
 * Where the headers of a frame are, as far as wire_classify() found them.
 * Offsets are from the frame's start; 0 means not reached.
 */
struct wire_frame_offsets {
	uint16_t	ethertype;	/* after the VLAN tag */
	bool		has_vlan;	/* one 802.1Q tag */
	uint16_t	vlan_tci;
	uint8_t		ip_version;	/* 4 or 6 once the EtherType says IP; 6 for a GRH */
	bool		roce_v1;	/* EtherType 0x8915: a GRH at l3_off, no UDP */
	uint16_t	l3_off;		/* after Ethernet and the tag */
	uint16_t	l4_off;		/* once the IP header is whole (version, IHL) */
	uint8_t		l4_proto;	/* after IPv6 extension headers; WIRE_IPPROTO_NONE */
	uint32_t	ip_end;		/* end of the IP packet (GRH: PayLen) within the frame */
	uint16_t	bth_off;	/* WIRE_FRAME_ROCE: UDP payload or after the GRH (the BTH
					   may be cut short) */
	/*
	 * Why a RoCE receiver would refuse it, as far as the walk can tell:
	 * NONE for WIRE_FRAME_ROCE, else TRUNCATED_ETH, NOT_IP, TRUNCATED_IP,
	 * BAD_IP_VERSION, BAD_IHL, IP_LEN (IPv4 total length below its header),
	 * NOT_UDP, TRUNCATED_UDP or NOT_ROCE_PORT; for RoCE v1
	 * TRUNCATED_IP, BAD_IP_VERSION or BAD_GRH_NXTHDR (kind WIRE_FRAME_OTHER).
	 */
	enum wire_drop	drop;
};

/**
 * wire_classify() - what a received frame is, and where its headers are.
 * @frame: Ethernet frame (FCS stripped), not modified.
 * @len: its length.
 * @out: filled as far as the walk got, whatever the result.
 *
 * Walks Ethernet (one 802.1Q tag), IPv4 (options skipped by the IHL; a
 * later fragment has no L4 header) or IPv6 (hop-by-hop, routing and
 * destination options skipped, at most 8), then UDP, ICMP or ICMPv6, with
 * every length checked before it reads: L4 headers must lie within the IP
 * packet.  An ICMP error counts as WIRE_FRAME_ICMP_ROCE when the datagram
 * it quotes (RFC 792, RFC 4443 3.1) went to UDP 4791.  Validates only what
 * locating the headers needs; checksums, exact lengths and the BTH are
 * wire_parse()'s.  EtherType 0x8915 is RoCE v1: a GRH of IP version 6
 * whose next header is 0x1B, the BTH after it.
 * Return: the kind.
 */
enum wire_frame_kind wire_classify(const void *frame, uint32_t len, struct wire_frame_offsets *out);

/* ---- Parsed packet view ---- */

/*
 * Addresses are kept in GID form: IPv4 as the IPv4-mapped IPv6 address
 * ::ffff:a.b.c.d (RoCE v2 GID convention), IPv6 and the GRH's GIDs as is.
 */
struct wire_pkt {
	const uint8_t	*frame;		/* not owned */
	uint32_t	frame_len;
	uint16_t	l3_off;		/* IP header or GRH */
	uint16_t	l4_off;		/* UDP header; 0 for RoCE v1 */
	uint16_t	bth_off;
	uint8_t		ip_version;	/* 4 or 6; 6 for RoCE v1, whose GRH has IPv6's form */
	bool		roce_v1;	/* EtherType 0x8915 (Annex A16) */
	bool		has_vlan;
	uint16_t	vlan_tci;
	uint8_t		src_mac[WIRE_ETH_ALEN];
	uint8_t		dst_mac[WIRE_ETH_ALEN];
	uint8_t		src_gid[16];
	uint8_t		dst_gid[16];
	uint8_t		tclass;		/* IPv4 TOS / IPv6 traffic class (ECN in low 2 bits) */
	uint8_t		hop_limit;	/* TTL / hop limit */
	uint32_t	flow_label;	/* IPv6 only */
	uint16_t	udp_sport;	/* 0 for RoCE v1 */

	/* BTH */
	uint8_t		opcode;
	const struct wire_opcode_info *op;
	bool		se, mig, ackreq;
	bool		sr_cap, sr_nak;	/* WIRE_BTH_SR_CAP, WIRE_BTH_SR_NAK */
	uint8_t		pad;
	uint8_t		tver;
	uint16_t	pkey;
	uint32_t	dest_qp;	/* 24 bits */
	uint32_t	psn;		/* 24 bits */

	/* Payload: between the extension headers and pad + ICRC. */
	uint32_t	payload_off;	/* from frame start */
	uint32_t	payload_len;	/* without pad */
	/*
	 * frame + payload_off, or where a zero-copy frame's payload really is
	 * (port_frame.ext); the pad always follows in frame.
	 */
	const uint8_t	*payload;
	uint32_t	icrc;		/* as carried in the packet */
};

/* Extension header accessors: NULL when the opcode has no such header. */
static inline const void *wire_pkt_ext(const struct wire_pkt *p, enum wire_ext e)
{
	if (!(p->op->hdrs & (1u << e)))
		return NULL;
	return p->frame + p->bth_off + p->op->off[e];
}

static inline const struct wire_bth *wire_pkt_bth(const struct wire_pkt *p)
{
	return (const struct wire_bth *)(p->frame + p->bth_off);
}

static inline const uint8_t *wire_pkt_payload(const struct wire_pkt *p)
{
	return p->payload;
}

enum wire_parse_flag {
	WIRE_PARSE_SKIP_ICRC	= 1u << 0,	/* decoder: check ICRC separately */
	WIRE_PARSE_SKIP_IP_CSUM	= 1u << 1,	/* checksum already verified by the NIC */
	/*
	 * Leave the opcode's payload-length rules to the caller: an RC
	 * responder answers a length error with NAK Invalid Request (IBA
	 * C9-92) and checks against its QP's path MTU with wire_check_pmtu().
	 */
	WIRE_PARSE_SKIP_LEN_RULES = 1u << 2,
};

/**
 * wire_parse() - validate a frame and fill a packet view.
 * @frame: Ethernet frame (FCS stripped), not modified.
 * @len: its length.
 * @flags: enum wire_parse_flag.
 * @out: filled as far as parsing got, even on failure.
 *
 * Checks every length before it reads, in wire order: Ethernet (one 802.1Q
 * tag allowed), IPv4/IPv6 and UDP port 4791 or the RoCE v1 GRH, BTH, extension headers, payload
 * rules of the opcode (MIDDLE/FIRST payload a whole path MTU of 256..4096
 * with pad 0; ONLY/LAST at most 4096; no payload where none is allowed;
 * atomics none), and the ICRC.
 * Return: WIRE_DROP_NONE (0) or the reason the frame must be dropped.
 */
enum wire_drop wire_parse(const void *frame, uint32_t len, unsigned flags,
			  struct wire_pkt *out);

/**
 * wire_check_pmtu() - payload length of a parsed packet against a path MTU.
 * @p: a packet wire_parse() accepted.
 * @pmtu: the QP's path MTU in bytes (256..4096).
 *
 * FIRST and MIDDLE packets carry exactly @pmtu bytes, LAST packets 1..@pmtu,
 * ONLY packets 0..@pmtu, packets without payload none (IBA C9-92, the
 * checks rxe makes in its responder).
 * Return: WIRE_DROP_NONE or WIRE_DROP_BAD_PAYLOAD_LEN.
 */
enum wire_drop wire_check_pmtu(const struct wire_pkt *p, uint32_t pmtu);

/* ---- Build ---- */

struct wire_build_desc {
	uint8_t		src_mac[WIRE_ETH_ALEN];
	uint8_t		dst_mac[WIRE_ETH_ALEN];
	bool		has_vlan;
	uint16_t	vlan_tci;
	uint8_t		ip_version;	/* 4 or 6; 6 for RoCE v1 */
	/*
	 * RoCE v1 (Annex A16): EtherType 0x8915, a GRH from the fields below
	 * (the GIDs as they are, IPv4-mapped or not) and no UDP.
	 */
	bool		roce_v1;
	uint8_t		src_gid[16];	/* IPv4-mapped for IPv4 */
	uint8_t		dst_gid[16];
	uint8_t		tclass;		/* DSCP + ECN */
	uint8_t		hop_limit;	/* 0 means 64 */
	uint32_t	flow_label;	/* IPv6, 20 bits */
	uint16_t	ip_id;		/* IPv4 */
	uint16_t	udp_sport;	/* 0: derived from dest_qp (see wire_udp_sport()) */

	uint8_t		opcode;
	bool		se, mig, ackreq;
	bool		sr_cap, sr_nak;	/* WIRE_BTH_SR_CAP, WIRE_BTH_SR_NAK */
	uint16_t	pkey;		/* 0 means 0xffff */
	uint32_t	dest_qp;
	uint32_t	psn;

	/* Extension headers, used when the opcode has them. */
	struct { uint64_t va; uint32_t rkey, len; } reth;
	struct { uint8_t syndrome; uint32_t msn; } aeth;
	struct { uint64_t va; uint32_t rkey; uint64_t swap_add, compare; } atomic;
	uint64_t	atomic_orig;
	uint32_t	imm;		/* host order; written big-endian */
	uint32_t	ieth_rkey;
	struct { uint32_t qkey, src_qp; } deth;
	struct { uint8_t plt, sel; } feth;	/* WIRE_FLUSH_* */
	uint32_t	xrc_srqn;	/* XRCETH: 24 bits */
};

/* Header bytes before the payload for this description (Ethernet .. extension headers). */
uint32_t wire_headers_len(const struct wire_build_desc *d);

/* Frame length for a payload: headers + payload + pad to 4 + ICRC; 0 if it cannot be built. */
uint32_t wire_frame_len(const struct wire_build_desc *d, uint32_t payload_len);

/**
 * wire_build_headers() - write every header of a packet.
 * @buf: destination, at least wire_headers_len() bytes.
 * @d: what to build.
 * @payload_len: payload that will follow the headers (for lengths and pad).
 *
 * Computes IPv4 total length and header checksum (DF set), IPv6 payload
 * length (or the RoCE v1 GRH's PayLen), UDP length (checksum 0 over IPv4,
 * as hardware and rxe send it), BTH pad count.  The ICRC (and over IPv6 the UDP checksum, which IPv6
 * requires) is not written: call wire_seal() once the payload is in place.
 * Return: header length, or 0 if @d is invalid (unknown opcode, bad IP
 * version, RoCE v1 but not IP version 6) or the packet would not fit IP's and UDP's 16-bit lengths.
 */
uint32_t wire_build_headers(void *buf, const struct wire_build_desc *d,
			    uint32_t payload_len);

/**
 * wire_seal() - zero the pad bytes, append the ICRC (and fill the IPv6 UDP checksum).
 * @frame: frame with headers and payload in place; pad and ICRC follow.
 * @hdr_len: return value of wire_build_headers().
 * @payload_len: payload bytes after the headers.
 * Return: total frame length.
 */
uint32_t wire_seal(void *frame, uint32_t hdr_len, uint32_t payload_len);

/**
 * wire_build() - whole packet in one call: headers, payload copy, pad, ICRC.
 * @buf: destination of @cap bytes.
 * Return: frame length, or 0 if it does not fit or @d is invalid.
 */
uint32_t wire_build(void *buf, size_t cap, const struct wire_build_desc *d,
		    const void *payload, uint32_t payload_len);

/* UDP source port for a QP: a hash in 49152..65535 (A17.5.1: entropy per flow). */
uint16_t wire_udp_sport(uint32_t src_qp, uint32_t dest_qp);

/*
 * UDP source port of a path: from its flow label when it has one, folded into
 * 14 bits as Linux's rdma_flow_label_to_udp_sport() (and mlx5) do, so a flow
 * label chosen by rdma_cm spreads connections over ECMP paths the same way;
 * else wire_udp_sport().
 */
uint16_t wire_path_udp_sport(uint32_t flow_label, uint32_t src_qp, uint32_t dest_qp);

/* RFC 1071 checksum of an IPv4 header (returns the value to store). */
uint16_t wire_ipv4_csum(const void *hdr, uint32_t len);

/* ---- ICRC and CRC-32 ---- */

/*
 * CRC-32 (IEEE 802.3 polynomial, reflected, like zlib's crc32()).
 * @crc is the running value: start with 0, feed chunks, the result is final.
 */
uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len);
uint32_t wire_crc32_portable(uint32_t crc, const void *buf, size_t len);
/* Carry-less multiply path; equals wire_crc32_portable() where the CPU lacks PCLMULQDQ. */
uint32_t wire_crc32_fast(uint32_t crc, const void *buf, size_t len);
/*
 * CRC-32 of @src while copying it to @dst, in one pass: the same result as
 * memcpy() then wire_crc32(), for senders that build a payload and its ICRC.
 */
uint32_t wire_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);
/*
 * memcpy() for payloads, which sit behind 54 to 90 bytes of headers and so
 * are never 64-byte aligned in a frame: 64-byte vector moves with the
 * destination aligned, in ascending address order (glibc's `rep movsb`
 * takes 1.7-2.8x as long as an aligned copy when either side is not
 * aligned, on the CPUs uroce was measured on).
 */
void wire_payload_copy(void *dst, const void *src, size_t len);
/* Name of the implementation wire_crc32() dispatches to ("vpclmulqdq", "pclmul" or "portable"). */
const char *wire_crc32_impl(void);

/**
 * wire_icrc() - ICRC of a RoCE frame as Annexes A17.3.3 (v2) and A16 (v1) define it.
 * @frame: Ethernet frame whose IP, UDP and BTH headers are in place and
 *	    were checked (by wire_parse() on receive, or built by wire_build*()).
 * @l3_off: offset of the IP header.
 * @end: offset where the ICRC starts (frame length - 4).
 *
 * 8 bytes of 0xFF stand for the absent LRH; IPv4 TOS, TTL and header
 * checksum, IPv6 traffic class, flow label and hop limit, the UDP checksum
 * and BTH resv8a are taken as all ones; then everything up to @end.  A
 * RoCE v1 GRH (next header 0x1B) is masked as IPv6 is, and no UDP follows.
 * Return: the CRC as a number; it is sent least significant byte first.
 */
uint32_t wire_icrc(const void *frame, uint32_t l3_off, uint32_t end);

/*
 * wire_icrc_split() - wire_icrc() of headers [@l3_off, @hdr_end) of @frame
 * followed by @len payload bytes at @payload (kept elsewhere: zero-copy),
 * to be continued over the pad.  Same value as over one contiguous frame.
 */
uint32_t wire_icrc_split(const void *frame, uint32_t l3_off, uint32_t hdr_end,
			 const void *payload, uint32_t len);

/*
 * wire_pkt_icrc() - ICRC of a parsed packet, its payload read through
 * p->payload (so also for a zero-copy frame whose payload is elsewhere).
 */
uint32_t wire_pkt_icrc(const struct wire_pkt *p);

/*
 * wire_pkt_icrc_copy() - wire_pkt_icrc() computed while the payload is
 * copied to @dst, in one pass over it (a receiver checking what it places).
 * The bytes are copied whatever the result.
 */
uint32_t wire_pkt_icrc_copy(const struct wire_pkt *p, void *dst);

/* Read/write the 4 ICRC bytes (least significant byte first on the wire). */
uint32_t wire_icrc_load(const void *p);
void wire_icrc_store(void *p, uint32_t icrc);

/* ---- Text ---- */

/* Path MTU enum as verbs uses it (1 = 256 .. 5 = 4096) to bytes; 0 if invalid. */
uint32_t wire_mtu_bytes(unsigned mtu_enum);

/* RNR timer code of an AETH (IBA table 45) in microseconds. */
uint32_t wire_rnr_timer_us(unsigned code);

/* Name of a NAK code / AETH syndrome, e.g. "NAK remote access error". */
const char *wire_aeth_name(uint8_t syndrome);

/*
 * End-to-end credits an ACK's 5-bit credit code stands for (IBA end-to-end flow control,
 * 0 1 2 3 4 6 8 12 ... 32768); -1 for code 31, "credits not used".
 */
int wire_aeth_credits(unsigned code);

#endif
