// SPDX-License-Identifier: MIT
/* perftest client or server against the kernel's rxe, with RoCE v2 packets built and checked by wire/. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perftest_xchg.h"
#include "probe_link.h"
#include "uroce/wire.h"

#define MAX_FRAME	9216
#define RX_SLOTS	64
#define OUR_QPN		0x0001a5	/* any 24-bit value: rxe only learns it from the exchange */
#define OUR_OUT_READS	16
#define WAIT_MS		3000		/* first response under TCG comes within tens of ms */
#define GRACE_MS	300		/* how long to watch for responses that must not come */
/* perftest's fixed choices (perftest_resources.h) */
#define PT_MIN_RNR_TIMER	12	/* the server's min_rnr_timer (IBA table 45: 0.64 ms) */
#define PT_QKEY			0x11111111u
#define PT_SEND_MESSAGES	8	/* case "send": the server runs ib_send_bw -n 8 */
#define PT_UD_MESSAGES		6	/* case "ud": ib_send_bw -c UD -n 6 */

struct rx_frame {
	uint8_t buf[MAX_FRAME];
	uint32_t len;
	struct wire_pkt pkt;
};

/* Serving: the responder side of an RC QP, for rxe's requester (IBA 9.7.4, 9.7.5). */
#define SERVE_MR_LEN	(1u << 20)
#define SERVE_VA	0x7e5700000000ull	/* our memory as the client sees it */
#define SERVE_RKEY	0x00c0ffeeu
#define SERVE_RESOURCES	64			/* reads/atomics kept for duplicates */

struct serve_res {		/* an executed read or atomic (responder resources, 9.7.5.1) */
	bool used, atomic;
	uint32_t first_psn, last_psn;
	uint64_t orig;
};

struct responder {
	uint8_t *mr;
	uint32_t epsn;			/* the PSN expected next */
	bool nak_sent;			/* one NAK per sequence error */
	uint64_t wva;			/* the multi-packet WRITE in progress */
	uint32_t wresid;
	bool error;			/* after a NAK for a class C error: the QP is dead */
	struct serve_res res[SERVE_RESOURCES];
	unsigned res_next;
	unsigned drop_every, resp_frames;	/* drop every Nth response frame we would send */
	uint64_t writes, reads, atomics, sends, duplicates, seq_naks, other_naks, dropped;
	uint64_t not_rc_request;	/* frames to our QP that are not RC requests */
};

struct probe {
	struct probe_link link;
	struct probe_tap tap;
	uint8_t peer_mac[WIRE_ETH_ALEN];
	uint8_t peer_gid[16];
	uint16_t ip_id;

	struct pt_dest me, peer;	/* our requester QP and the server's QP */
	uint32_t psn;			/* next PSN we send */
	uint32_t msn;			/* messages the responder has completed */
	uint32_t pmtu;

	unsigned bad_icrc_sent, bad_udp_csum_sent;	/* frames broken on purpose */
	unsigned frames_tx, frames_rx;		/* RoCE v2 frames, for the capture check */
	uint64_t msgs, bytes;		/* for the report the server prints */

	struct rx_frame rx[RX_SLOTS];
	unsigned rx_n;
	uint8_t last_tx[MAX_FRAME];	/* the last request, for duplicates */
	uint32_t last_tx_len;

	struct responder srv;
};

/* One TAP line per check, counted in the probe. */
#define check(p, ...) probe_check(&(p)->tap, __VA_ARGS__)

/*
 * Read frames until @want responses to our QP are queued in p->rx, or @timeout_ms
 * passed; then watch @grace_ms longer for responses beyond @want.  Every RoCE v2 frame
 * from the peer must pass wire_parse() (lengths, pad, ICRC): a frame it rejects is a
 * disagreement between rxe and wire/ and counts as a failure.
 */
static unsigned rx_collect(struct probe *p, unsigned want, int timeout_ms, int grace_ms)
{
	double end = probe_now() + timeout_ms / 1e3;
	bool in_grace = false;

	p->rx_n = 0;
	for (;;) {
		struct pollfd pfd = { .fd = p->link.fd, .events = POLLIN };
		int left = (int)((end - probe_now()) * 1e3);
		struct rx_frame *r;
		enum wire_drop why;
		ssize_t n;

		if (!in_grace && p->rx_n >= want) {
			in_grace = true;
			end = probe_now() + grace_ms / 1e3;
			continue;
		}
		if (left <= 0)
			break;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		r = &p->rx[p->rx_n < RX_SLOTS ? p->rx_n : RX_SLOTS - 1];
		n = recv(p->link.fd, r->buf, sizeof(r->buf), 0);
		if (n <= 0 || !probe_looks_roce(r->buf, (uint32_t)n))
			continue;
		p->frames_rx++;
		r->len = (uint32_t)n;
		why = wire_parse(r->buf, r->len, 0, &r->pkt);
		if (why != WIRE_DROP_NONE) {
			check(p, false, "frame from the peer (%u bytes, opcode 0x%02x) accepted by wire_parse: %s (%s)",
			      r->len, r->pkt.opcode, wire_drop_name(why), wire_drop_desc(why));
			continue;
		}
		if (memcmp(r->pkt.src_gid, p->peer_gid, 16) || r->pkt.dest_qp != p->me.qpn)
			continue;
		if (p->rx_n < RX_SLOTS)
			p->rx_n++;
	}
	return p->rx_n;
}

static uint8_t aeth_syndrome(const struct wire_pkt *k)
{
	const struct wire_aeth *a = wire_pkt_ext(k, WIRE_EXT_AETH);

	return a ? (uint8_t)(wire_get32(a->syn_msn) >> 24) : 0xff;
}

static uint32_t aeth_msn(const struct wire_pkt *k)
{
	const struct wire_aeth *a = wire_pkt_ext(k, WIRE_EXT_AETH);

	return a ? wire_get32(a->syn_msn) & WIRE_24BIT_MASK : 0;
}

static const char *opname(uint8_t opcode)
{
	return wire_opcode_valid(opcode) ? wire_opcode[opcode].name : "?";
}

/* ---- requests ---- */

static void desc_init(struct probe *p, struct wire_build_desc *d, uint8_t opcode, uint32_t psn,
		      bool ackreq)
{
	memset(d, 0, sizeof(*d));
	memcpy(d->src_mac, p->link.mac, WIRE_ETH_ALEN);
	memcpy(d->dst_mac, p->peer_mac, WIRE_ETH_ALEN);
	d->ip_version = p->link.ip_version;
	memcpy(d->src_gid, p->link.gid, 16);
	memcpy(d->dst_gid, p->peer_gid, 16);
	d->ip_id = p->ip_id++;
	d->udp_sport = wire_udp_sport(p->me.qpn, p->peer.qpn);
	d->opcode = WIRE_OPC_RC | opcode;
	d->ackreq = ackreq;
	d->dest_qp = p->peer.qpn;
	d->psn = psn;
}

enum tx_flag {
	TX_BAD_ICRC = 1u << 0,		/* flip a bit of the ICRC (UDP checksum still right) */
	TX_BAD_UDP_CSUM = 1u << 1,	/* IPv6: a wrong UDP checksum (ICRC still right) */
	TX_VARY_MASKED = 1u << 2,	/* change the fields the ICRC masks, keep the ICRC */
};

/*
 * UDP checksum of an IPv6 frame without VLAN tag, computed here independently of wire/
 * (RFC 8200 8.1): for frames the probe changes after wire_build().
 */
static uint16_t udp6_checksum(const uint8_t *f)
{
	const uint8_t *ip = f + sizeof(struct wire_eth_hdr), *udp = ip + 40;
	uint32_t len = (uint32_t)(udp[4] << 8 | udp[5]), sum = len + WIRE_IPPROTO_UDP;

	for (int i = 8; i < 40; i += 2)		/* source and destination address */
		sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
	for (uint32_t i = 0; i < len; i += 2) {
		if (i == 6)			/* the checksum field itself */
			continue;
		sum += (uint32_t)udp[i] << 8 | (i + 1 < len ? udp[i + 1] : 0);
	}
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	return sum ? (uint16_t)sum : 0xffff;
}

/*
 * Annex A17.3.3: the ICRC treats IPv4 TOS, TTL and header checksum, IPv6 traffic class,
 * flow label and hop limit, the UDP checksum and BTH resv8a as all ones, so routers may
 * change them.  Change every one of them after wire_build() and leave the ICRC as it is:
 * the peer must still accept the packet.  Header checksums are redone (the IPv6 UDP
 * checksum by the caller).
 */
static void vary_masked_fields(uint8_t *f, uint8_t ip_version)
{
	uint8_t *l3 = f + sizeof(struct wire_eth_hdr);
	uint8_t *bth = l3 + (ip_version == 4 ? 20 : 40) + sizeof(struct wire_udp_hdr);
	uint16_t csum;

	bth[4] = 0xa5;				/* resv8a */
	if (ip_version == 4) {
		l3[1] = 0x68;			/* DSCP 26 (AF31), not ECN-capable */
		l3[8] = 3;			/* TTL */
		l3[10] = l3[11] = 0;
		csum = wire_ipv4_csum(l3, 20);
		l3[10] = (uint8_t)(csum >> 8);
		l3[11] = (uint8_t)csum;
	} else {
		/* version 6, traffic class 0x68, flow label 0x12345 */
		l3[0] = 0x66;
		l3[1] = 0x81;
		l3[2] = 0x23;
		l3[3] = 0x45;
		l3[7] = 3;			/* hop limit */
	}
}

static void tx(struct probe *p, const struct wire_build_desc *d, const void *payload,
	       uint32_t len, unsigned flags)
{
	uint32_t n = wire_build(p->last_tx, sizeof(p->last_tx), d, payload, len);

	if (!n) {
		check(p, false, "wire_build %s (%u bytes payload)", opname(d->opcode), len);
		return;
	}
	if (flags & TX_BAD_ICRC) {
		p->last_tx[n - 1] ^= 0x01;
		p->bad_icrc_sent++;
	}
	if (flags & TX_VARY_MASKED)
		vary_masked_fields(p->last_tx, p->link.ip_version);
	if (p->link.ip_version == 6 && (flags & (TX_BAD_ICRC | TX_BAD_UDP_CSUM | TX_VARY_MASKED))) {
		uint8_t *csum = p->last_tx + sizeof(struct wire_eth_hdr) + 40 + 6;
		uint16_t v = udp6_checksum(p->last_tx);

		if (flags & TX_BAD_UDP_CSUM) {
			v = v == 0x1234 ? 0x4321 : 0x1234;
			p->bad_udp_csum_sent++;
		}
		csum[0] = (uint8_t)(v >> 8);
		csum[1] = (uint8_t)v;
	}
	p->last_tx_len = n;
	if (probe_link_send(&p->link, p->peer_mac, p->last_tx, n))
		check(p, false, "send %s: %s", opname(d->opcode), strerror(errno));
	else
		p->frames_tx++;
}

static void tx_again(struct probe *p)
{
	if (probe_link_send(&p->link, p->peer_mac, p->last_tx, p->last_tx_len))
		check(p, false, "resend: %s", strerror(errno));
	else
		p->frames_tx++;
}

static void fill_pattern(uint8_t *buf, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7);
}

enum msg_kind { MSG_WRITE, MSG_WRITE_IMM, MSG_SEND, MSG_SEND_IMM };

/* Opcode of packet @i of a message of @npkt packets (IBA 9.4, table 38). */
static uint8_t msg_opcode(enum msg_kind kind, uint32_t i, uint32_t npkt)
{
	static const uint8_t op[4][5] = {	/* only, first, middle, last, only/last with imm */
		[MSG_WRITE] = { WIRE_OP_WRITE_ONLY, WIRE_OP_WRITE_FIRST, WIRE_OP_WRITE_MIDDLE,
				WIRE_OP_WRITE_LAST },
		[MSG_WRITE_IMM] = { WIRE_OP_WRITE_ONLY_IMM, WIRE_OP_WRITE_FIRST,
				    WIRE_OP_WRITE_MIDDLE, WIRE_OP_WRITE_LAST_IMM },
		[MSG_SEND] = { WIRE_OP_SEND_ONLY, WIRE_OP_SEND_FIRST, WIRE_OP_SEND_MIDDLE,
			       WIRE_OP_SEND_LAST },
		[MSG_SEND_IMM] = { WIRE_OP_SEND_ONLY_IMM, WIRE_OP_SEND_FIRST, WIRE_OP_SEND_MIDDLE,
				   WIRE_OP_SEND_LAST_IMM },
	};

	if (npkt == 1)
		return op[kind][0];
	return op[kind][i == 0 ? 1 : i == npkt - 1 ? 3 : 2];
}

/*
 * One RC message of @len bytes, cut into path-MTU packets (IBA 9.7.2: FIRST and MIDDLE
 * carry exactly one PMTU); RDMA WRITEs target the server's buffer with @rkey.  AckReq on
 * the last packet only when @ackreq.  Returns the PSN of the last packet; p->psn moves
 * past it.
 */
static uint32_t send_msg(struct probe *p, enum msg_kind kind, uint32_t len, uint32_t rkey,
			 bool ackreq, unsigned flags)
{
	static uint8_t data[65536];
	uint32_t off = 0, npkt = len <= p->pmtu ? 1 : (len + p->pmtu - 1) / p->pmtu;
	uint32_t psn = p->psn;
	struct wire_build_desc d;

	fill_pattern(data, len, p->psn);
	for (uint32_t i = 0; i < npkt; i++) {
		uint32_t chunk = len - off < p->pmtu ? len - off : p->pmtu;

		desc_init(p, &d, msg_opcode(kind, i, npkt), psn, ackreq && i == npkt - 1);
		/* the opcode decides which headers go out: RETH on a WRITE's first packet only */
		d.reth.va = p->peer.vaddr;
		d.reth.rkey = rkey;
		d.reth.len = len;
		d.imm = 0xc0de0000u | (uint32_t)p->msgs;
		tx(p, &d, data + off, chunk, flags);
		off += chunk;
		psn = psn_add(psn, 1);
	}
	p->psn = psn;
	p->msgs++;
	p->bytes += len;
	return psn_add(psn, WIRE_PSN_MASK);
}

static uint32_t send_write(struct probe *p, uint32_t len, uint32_t rkey, bool ackreq,
			   unsigned flags)
{
	return send_msg(p, MSG_WRITE, len, rkey, ackreq, flags);
}

static uint32_t send_read(struct probe *p, uint64_t va, uint32_t len, uint32_t rkey)
{
	uint32_t npkt = len <= p->pmtu ? 1 : (len + p->pmtu - 1) / p->pmtu;
	uint32_t psn = p->psn;
	struct wire_build_desc d;

	desc_init(p, &d, WIRE_OP_READ_REQUEST, psn, true);
	d.reth.va = va;
	d.reth.rkey = rkey;
	d.reth.len = len;
	tx(p, &d, NULL, 0, 0);
	/* IBA 9.7.4.1.2: a read request takes one PSN per response packet */
	p->psn = psn_add(psn, (uint32_t)npkt);
	p->msgs++;
	p->bytes += len;
	return psn;
}

static uint32_t send_atomic(struct probe *p, uint8_t op, uint64_t va, uint64_t swap_add,
			    uint64_t compare)
{
	uint32_t psn = p->psn;
	struct wire_build_desc d;

	desc_init(p, &d, op, psn, true);
	d.atomic.va = va;
	d.atomic.rkey = p->peer.rkey;
	d.atomic.swap_add = swap_add;
	d.atomic.compare = compare;
	tx(p, &d, NULL, 0, 0);
	p->psn = psn_add(psn, 1);
	p->msgs++;
	p->bytes += 8;
	return psn;
}

/* ---- expectations ---- */

static bool expect_ack(struct probe *p, const struct rx_frame *r, uint32_t psn,
		       uint8_t syndrome, const char *what)
{
	const struct wire_pkt *k = &r->pkt;

	return check(p, k->opcode == (WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE) && k->psn == psn &&
			 aeth_syndrome(k) == syndrome && aeth_msn(k) == p->msn && !k->payload_len,
		     "%s: %s psn 0x%06x %s msn %u (want Acknowledge psn 0x%06x %s msn %u)", what,
		     opname(k->opcode), k->psn, wire_aeth_name(aeth_syndrome(k)), aeth_msn(k), psn,
		     wire_aeth_name(syndrome), p->msn);
}

/* Exactly one response within the wait, then none during the grace time. */
static const struct rx_frame *expect_one(struct probe *p, const char *what)
{
	unsigned n = rx_collect(p, 1, WAIT_MS, GRACE_MS);

	if (!check(p, n == 1, "%s: %u response(s), want 1", what, n) || n == 0)
		return NULL;
	return &p->rx[0];
}

static void expect_none(struct probe *p, const char *what)
{
	unsigned n = rx_collect(p, 1, GRACE_MS * 2, 0);

	check(p, n == 0, "%s: %u response(s), want none%s%s", what, n, n ? ", got " : "",
	      n ? opname(p->rx[0].pkt.opcode) : "");
}

/* What rxe puts in the fields IBA leaves to the sender: printed for the conformance notes. */
static void note_response_fields(const struct rx_frame *r)
{
	const struct wire_pkt *k = &r->pkt;
	const uint8_t *ip = r->buf + k->l3_off, *udp = r->buf + k->l4_off;
	const struct wire_bth *bth = wire_pkt_bth(k);
	char l3[96];

	if (k->ip_version == 4)
		snprintf(l3, sizeof(l3), "IPv4 DF %s, TTL %u, TOS 0x%02x, id 0x%04x",
			 (ip[6] & 0x40) ? "set" : "clear", k->hop_limit, k->tclass, ip[4] << 8 | ip[5]);
	else
		snprintf(l3, sizeof(l3), "IPv6 hop limit %u, traffic class 0x%02x, flow label 0x%05x",
			 k->hop_limit, k->tclass, k->flow_label);
	probe_note("rxe response fields: UDP sport %u, UDP checksum 0x%04x, %s, BTH MigReq %u "
	     "pkey 0x%04x resv8a 0x%02x, AETH credit code %u",
	     k->udp_sport, udp[6] << 8 | udp[7], l3, k->mig, k->pkey, bth->qpn.b[0],
	     aeth_syndrome(k) & WIRE_AETH_CODE_MASK);
}

/* ---- cases, one per perftest server kind ---- */

static void case_write(struct probe *p)
{
	const struct rx_frame *r;
	uint32_t psn, expected;
	unsigned n;

	/* single-packet write, ACK requested */
	psn = send_write(p, 64, p->peer.rkey, true, 0);
	p->msn++;
	if ((r = expect_one(p, "WRITE Only 64 B")))
		if (expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, "WRITE Only 64 B"))
			note_response_fields(r);

	/* payload that needs a pad (IBA 9.2: PadCnt) */
	psn = send_write(p, 61, p->peer.rkey, true, 0);
	p->msn++;
	if ((r = expect_one(p, "WRITE Only 61 B (pad 3)")))
		expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, "WRITE Only 61 B (pad 3)");

	/* the fields the ICRC leaves out, changed in flight: still accepted */
	psn = send_write(p, 64, p->peer.rkey, true, TX_VARY_MASKED);
	p->msn++;
	if ((r = expect_one(p, "WRITE with TOS/TTL/resv8a changed after the ICRC")))
		expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID,
			   "WRITE with TOS/TTL/resv8a changed after the ICRC");

	/* multi-packet message: FIRST, MIDDLE x2, LAST; one ACK for the LAST */
	psn = send_write(p, 3 * p->pmtu + 100, p->peer.rkey, true, 0);
	p->msn++;
	if ((r = expect_one(p, "WRITE First/Middle/Middle/Last")))
		expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID,
			   "WRITE First/Middle/Middle/Last");

	/* four messages, AckReq only on the last: the responder may coalesce ACKs (IBA 9.7.5) */
	for (int i = 0; i < 3; i++)
		send_write(p, 256, p->peer.rkey, false, 0);
	psn = send_write(p, 256, p->peer.rkey, true, 0);
	p->msn += 4;
	n = rx_collect(p, 1, WAIT_MS, GRACE_MS);
	check(p, n == 1, "4 WRITEs, AckReq on the last only: %u response(s), want 1 (coalesced)", n);
	if (n >= 1)
		expect_ack(p, &p->rx[n - 1], psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID,
			   "coalesced ACK");

	/* duplicate of the last packet: acknowledged again, not executed again (C9-105) */
	tx_again(p);
	if ((r = expect_one(p, "duplicate WRITE")))
		expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, "duplicate WRITE");

	/*
	 * WRITE with Immediate consumes a receive WQE and ib_write_bw posts none: RNR NAK with
	 * the server's min_rnr_timer; the PSN is not consumed (IBA 9.7.5.2.8, class B).
	 */
	psn = send_msg(p, MSG_WRITE_IMM, 64, p->peer.rkey, true, 0);
	if ((r = expect_one(p, "WRITE Only with Immediate, no receive posted")))
		expect_ack(p, r, psn, WIRE_AETH_RNR_NAK | PT_MIN_RNR_TIMER,
			   "WRITE Only with Immediate, no receive posted");
	p->psn = psn;

	/* bad ICRC: silently dropped (IBA Annex A17.3.3) */
	expected = p->psn;
	send_write(p, 64, p->peer.rkey, true, TX_BAD_ICRC);
	p->psn = expected;
	expect_none(p, "WRITE with a bad ICRC");

	/*
	 * Over IPv6 the UDP checksum is mandatory and the guest's UDP layer checks it before
	 * rxe sees the packet; the ICRC leaves that field out (A17.3.3), so a frame with a
	 * right ICRC and a wrong UDP checksum is dropped all the same.
	 */
	if (p->link.ip_version == 6) {
		send_write(p, 64, p->peer.rkey, true, TX_BAD_UDP_CSUM);
		p->psn = expected;
		expect_none(p, "WRITE with a wrong IPv6 UDP checksum");
	}

	/* PSN gap: one NAK PSN sequence error carrying the expected PSN (IBA 9.7.5.2.2) */
	p->psn = psn_add(expected, 5);
	send_write(p, 64, p->peer.rkey, true, 0);
	if ((r = expect_one(p, "WRITE 5 PSNs ahead")))
		expect_ack(p, r, expected, WIRE_AETH_NAK | WIRE_NAK_PSN_SEQ_ERR, "WRITE 5 PSNs ahead");
	send_write(p, 64, p->peer.rkey, true, 0);
	expect_none(p, "second out-of-sequence WRITE (one NAK per sequence error)");

	/* Go-Back-N: resume at the PSN the NAK named */
	p->psn = expected;
	psn = send_write(p, 1024, p->peer.rkey, true, 0);
	p->msn++;
	if ((r = expect_one(p, "WRITE at the NAK's PSN")))
		expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, "WRITE at the NAK's PSN");

	/* last, as it moves the server's QP to the error state: a wrong rkey, NAK remote
	 * access error (IBA 9.7.5.2.4, table 44) */
	psn = send_write(p, 64, p->peer.rkey ^ 0x100, true, 0);
	if ((r = expect_one(p, "WRITE with a wrong rkey")))
		expect_ack(p, r, psn, WIRE_AETH_NAK | WIRE_NAK_REM_ACCESS_ERR, "WRITE with a wrong rkey");
}

/* Check the response packets of one read of @len bytes that was given PSN @psn. */
static void expect_read_responses(struct probe *p, unsigned from, uint32_t psn, uint32_t len,
				  const char *what)
{
	uint32_t npkt = len <= p->pmtu ? 1 : (len + p->pmtu - 1) / p->pmtu;

	for (uint32_t i = 0; i < npkt; i++) {
		const struct wire_pkt *k;
		uint32_t want_len = i < npkt - 1 ? p->pmtu : len - i * p->pmtu;
		uint8_t want_op;
		bool has_aeth;

		if (from + i >= p->rx_n) {
			check(p, false, "%s: response %u of %u missing", what, i + 1, npkt);
			return;
		}
		k = &p->rx[from + i].pkt;
		if (npkt == 1)
			want_op = WIRE_OP_READ_RESP_ONLY;
		else
			want_op = i == 0 ? WIRE_OP_READ_RESP_FIRST :
				  i == npkt - 1 ? WIRE_OP_READ_RESP_LAST : WIRE_OP_READ_RESP_MIDDLE;
		/* IBA 9.3.5: AETH on FIRST, LAST and ONLY, not on MIDDLE */
		has_aeth = want_op != WIRE_OP_READ_RESP_MIDDLE;
		check(p, k->opcode == (WIRE_OPC_RC | want_op) && k->psn == psn_add(psn, (uint32_t)i) &&
			 k->payload_len == want_len && k->pad == (-want_len & 3) &&
			 (!has_aeth || (aeth_syndrome(k) == (WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID) &&
					aeth_msn(k) == p->msn)),
		      "%s: %s psn 0x%06x %u B pad %u msn %u (want %s psn 0x%06x %u B msn %u)", what,
		      opname(k->opcode), k->psn, k->payload_len, k->pad,
		      has_aeth ? aeth_msn(k) : 0, opname(WIRE_OPC_RC | want_op),
		      psn_add(psn, (uint32_t)i), want_len, has_aeth ? p->msn : 0);
	}
}

static void case_read(struct probe *p)
{
	static const uint32_t sizes[] = { 64, 13, 0 };
	uint32_t multi = 3 * p->pmtu + 100, psn, psns[4];
	const struct rx_frame *r;
	unsigned n;

	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char what[64];

		snprintf(what, sizeof(what), "READ %u B", sizes[i]);
		psn = send_read(p, p->peer.vaddr, sizes[i], p->peer.rkey);
		p->msn++;
		n = rx_collect(p, 1, WAIT_MS, GRACE_MS);
		check(p, n == 1, "%s: %u response(s), want 1", what, n);
		expect_read_responses(p, 0, psn, sizes[i], what);
		if (i == 0 && n)
			note_response_fields(&p->rx[0]);
	}

	/* a read over several PMTUs: FIRST, MIDDLE..., LAST on consecutive PSNs */
	psn = send_read(p, p->peer.vaddr, multi, p->peer.rkey);
	p->msn++;
	n = rx_collect(p, 4, WAIT_MS, GRACE_MS);
	check(p, n == 4, "READ %u B: %u responses, want 4", multi, n);
	expect_read_responses(p, 0, psn, multi, "READ 3 PMTU + 100 B");

	/* four outstanding reads of 2 PMTUs: answered in order */
	for (int i = 0; i < 4; i++)
		psns[i] = send_read(p, p->peer.vaddr + (uint64_t)i * 64, 2 * p->pmtu, p->peer.rkey);
	n = rx_collect(p, 8, WAIT_MS, GRACE_MS);
	check(p, n == 8, "4 outstanding READs of 2 PMTU: %u responses, want 8", n);
	for (int i = 0; i < 4; i++) {
		p->msn++;
		expect_read_responses(p, (unsigned)i * 2, psns[i], 2 * p->pmtu, "outstanding READ");
	}

	/* a duplicate read is executed again and answered with its old PSNs (IBA 9.7.5.1) */
	tx_again(p);
	n = rx_collect(p, 2, WAIT_MS, GRACE_MS);
	check(p, n == 2, "duplicate READ: %u responses, want 2", n);
	expect_read_responses(p, 0, psns[3], 2 * p->pmtu, "duplicate READ");

	/* last: a WRITE on a QP without remote write access: NAK invalid request (class C error) */
	psn = send_write(p, 64, p->peer.rkey, true, 0);
	if ((r = expect_one(p, "WRITE to a read-only QP")))
		expect_ack(p, r, psn, WIRE_AETH_NAK | WIRE_NAK_INVALID_REQ, "WRITE to a read-only QP");
}

static bool expect_atomic_ack(struct probe *p, const struct rx_frame *r, uint32_t psn,
			      uint64_t orig, const char *what)
{
	const struct wire_pkt *k = &r->pkt;
	const struct wire_atomic_ack_eth *a = wire_pkt_ext(k, WIRE_EXT_ATOMIC_ACK_ETH);
	uint64_t got = a ? wire_get64(a->orig) : 0;

	return check(p, k->opcode == (WIRE_OPC_RC | WIRE_OP_ATOMIC_ACKNOWLEDGE) && k->psn == psn &&
			 aeth_syndrome(k) == (WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID) &&
			 aeth_msn(k) == p->msn && got == orig,
		     "%s: %s psn 0x%06x msn %u orig 0x%" PRIx64 " (want Atomic Acknowledge psn 0x%06x msn %u orig 0x%" PRIx64 ")",
		     what, opname(k->opcode), k->psn, aeth_msn(k), got, psn, p->msn, orig);
}

static uint64_t atomic_orig(const struct rx_frame *r)
{
	const struct wire_atomic_ack_eth *a = wire_pkt_ext(&r->pkt, WIRE_EXT_ATOMIC_ACK_ETH);

	return a ? wire_get64(a->orig) : 0;
}

static void case_atomic(struct probe *p)
{
	const uint64_t swap = 0x1122334455667788ull;
	uint64_t va = p->peer.vaddr, v;
	const struct rx_frame *r;
	uint32_t psn, psns[4];
	unsigned n;

	/* learn the current value: Fetch&Add 0 */
	psn = send_atomic(p, WIRE_OP_FETCH_ADD, va, 0, 0);
	p->msn++;
	if (!(r = expect_one(p, "FETCH_ADD 0")))
		return;
	v = atomic_orig(r);
	expect_atomic_ack(p, r, psn, v, "FETCH_ADD 0");
	note_response_fields(r);

	/* four Fetch&Add 1 in flight: each returns the value before it (IBA 9.4.5) */
	for (int i = 0; i < 4; i++)
		psns[i] = send_atomic(p, WIRE_OP_FETCH_ADD, va, 1, 0);
	n = rx_collect(p, 4, WAIT_MS, GRACE_MS);
	check(p, n == 4, "4 FETCH_ADD 1: %u responses, want 4", n);
	for (unsigned i = 0; i < n && i < 4; i++) {
		p->msn++;
		expect_atomic_ack(p, &p->rx[i], psns[i], v + i, "FETCH_ADD 1");
	}
	v += 4;

	/* a duplicate atomic is not executed again: the saved result is replayed (IBA 9.7.5.1) */
	tx_again(p);
	if ((r = expect_one(p, "duplicate FETCH_ADD")))
		expect_atomic_ack(p, r, psns[3], v - 1, "duplicate FETCH_ADD (replayed)");

	/* Compare&Swap that matches, then one that does not */
	psn = send_atomic(p, WIRE_OP_COMPARE_SWAP, va, swap, v);
	p->msn++;
	if ((r = expect_one(p, "COMPARE_SWAP (equal)")))
		expect_atomic_ack(p, r, psn, v, "COMPARE_SWAP (equal)");
	psn = send_atomic(p, WIRE_OP_COMPARE_SWAP, va, 7, v);
	p->msn++;
	if ((r = expect_one(p, "COMPARE_SWAP (not equal)")))
		expect_atomic_ack(p, r, psn, swap, "COMPARE_SWAP (not equal)");
	psn = send_atomic(p, WIRE_OP_FETCH_ADD, va, 0, 0);
	p->msn++;
	if ((r = expect_one(p, "FETCH_ADD 0 after the swaps")))
		expect_atomic_ack(p, r, psn, swap, "FETCH_ADD 0 after the swaps");

	/* last: an atomic on an address that is not 8-byte aligned: NAK invalid request (IBA 9.4.5) */
	psn = send_atomic(p, WIRE_OP_FETCH_ADD, va + 4, 1, 0);
	if ((r = expect_one(p, "FETCH_ADD misaligned")))
		expect_ack(p, r, psn, WIRE_AETH_NAK | WIRE_NAK_INVALID_REQ, "FETCH_ADD misaligned");
}

/* Against ib_send_bw -s 16384 -n 8, which posts exactly 8 receives and waits for 8 completions. */
static void case_send(struct probe *p)
{
	static const struct {
		enum msg_kind kind;
		uint32_t len;	/* in PMTUs when >= 100000: (len - 100000) * pmtu + 100 */
		const char *what;
	} msgs[] = {
		{ MSG_SEND, 64, "SEND Only 64 B" },
		{ MSG_SEND, 61, "SEND Only 61 B (pad 3)" },
		{ MSG_SEND_IMM, 64, "SEND Only with Immediate" },
		{ MSG_SEND, 100003, "SEND First/Middle/Middle/Last" },
		{ MSG_SEND_IMM, 100001, "SEND First/Last with Immediate" },
	};
	const struct rx_frame *r;
	uint32_t psn;
	unsigned n;

	for (unsigned i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		uint32_t len = msgs[i].len >= 100000 ? (msgs[i].len - 100000) * p->pmtu + 100 :
						       msgs[i].len;

		psn = send_msg(p, msgs[i].kind, len, 0, true, 0);
		p->msn++;
		if ((r = expect_one(p, msgs[i].what)))
			expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, msgs[i].what);
	}
	for (int i = 0; i < 2; i++)
		send_msg(p, MSG_SEND, 256, 0, false, 0);
	psn = send_msg(p, MSG_SEND, 256, 0, true, 0);
	p->msn += 3;
	n = rx_collect(p, 1, WAIT_MS, GRACE_MS);
	check(p, n == 1, "3 SENDs, AckReq on the last only: %u response(s), want 1 (coalesced)", n);
	if (n >= 1)
		expect_ack(p, &p->rx[n - 1], psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID,
			   "coalesced ACK");
	check(p, p->msgs == PT_SEND_MESSAGES, "%" PRIu64 " messages sent, the server waits for %d",
	      p->msgs, PT_SEND_MESSAGES);

	/* a duplicate SEND is acknowledged again, not delivered again (C9-105) */
	tx_again(p);
	if ((r = expect_one(p, "duplicate SEND")))
		expect_ack(p, r, psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, "duplicate SEND");

	/* all receives consumed: RNR NAK, PSN not consumed (IBA 9.7.5.2.8) */
	psn = send_msg(p, MSG_SEND, 64, 0, true, 0);
	if ((r = expect_one(p, "SEND with no receive left")))
		expect_ack(p, r, psn, WIRE_AETH_RNR_NAK | PT_MIN_RNR_TIMER, "SEND with no receive left");
	p->psn = psn;
}

static void send_ud(struct probe *p, uint8_t op, uint32_t len, uint32_t qkey)
{
	static uint8_t data[4096];
	struct wire_build_desc d;

	fill_pattern(data, len, p->psn);
	desc_init(p, &d, op, p->psn, false);
	d.opcode = WIRE_OPC_UD | op;
	d.deth.qkey = qkey;
	d.deth.src_qp = p->me.qpn;
	d.imm = 0xc0de0000u | (uint32_t)p->msgs;
	tx(p, &d, data, len, 0);
	p->psn = psn_add(p->psn, 1);
	p->msgs++;
	p->bytes += len;
}

/*
 * Against ib_send_bw -c UD -n 6, which waits for 6 receives.  UD is never acknowledged:
 * the server's completion count and rxe's rcvd_pkts counter (checked by run.sh) show what
 * was delivered.
 */
static void case_ud(struct probe *p)
{
	/* a wrong Q_Key is dropped silently (IBA 10.2.5); not counted as a message */
	send_ud(p, WIRE_OP_SEND_ONLY, 64, PT_QKEY ^ 0x1);
	p->msgs--;
	send_ud(p, WIRE_OP_SEND_ONLY, 64, PT_QKEY);
	send_ud(p, WIRE_OP_SEND_ONLY, 61, PT_QKEY);
	send_ud(p, WIRE_OP_SEND_ONLY_IMM, 64, PT_QKEY);
	send_ud(p, WIRE_OP_SEND_ONLY_IMM, 3, PT_QKEY);
	send_ud(p, WIRE_OP_SEND_ONLY, 0, PT_QKEY);
	send_ud(p, WIRE_OP_SEND_ONLY, p->pmtu, PT_QKEY);
	check(p, p->msgs == PT_UD_MESSAGES, "%" PRIu64 " datagrams sent, the server waits for %d",
	      p->msgs, PT_UD_MESSAGES);
	expect_none(p, "UD SENDs (unacknowledged)");
}

/* ---- serving: rxe is the requester (a perftest client in the guest), wire/ answers ---- */

static void serve_tx(struct probe *p, struct wire_build_desc *d, const void *payload,
		     uint32_t len)
{
	struct responder *s = &p->srv;

	if (s->drop_every && ++s->resp_frames % s->drop_every == 0) {
		s->dropped++;
		return;
	}
	tx(p, d, payload, len, 0);
}

static void serve_ack(struct probe *p, uint8_t opcode, uint32_t psn, uint8_t syndrome,
		      uint64_t orig)
{
	struct wire_build_desc d;

	desc_init(p, &d, opcode, psn, false);
	d.aeth.syndrome = syndrome;
	d.aeth.msn = p->msn;
	d.atomic_orig = orig;
	serve_tx(p, &d, NULL, 0);
}

/* A class C error (IBA 9.9.3.1.2): NAK, then the QP is in the error state. */
static void serve_fatal(struct probe *p, uint32_t psn, uint8_t nak, const char *why)
{
	serve_ack(p, WIRE_OP_ACKNOWLEDGE, psn, WIRE_AETH_NAK | nak, 0);
	p->srv.other_naks++;
	p->srv.error = true;
	check(p, false, "request psn 0x%06x from rxe: %s", psn, why);
}

static bool mr_range(uint64_t va, uint64_t len)
{
	return va >= SERVE_VA && len <= SERVE_MR_LEN && va - SERVE_VA <= SERVE_MR_LEN - len;
}

/* Read responses for @len bytes at @va, PSNs from @psn (IBA 9.7.4.1.4: one per PMTU). */
static void serve_read_responses(struct probe *p, uint32_t psn, uint64_t va, uint32_t len)
{
	uint32_t npkt = len <= p->pmtu ? 1 : (len + p->pmtu - 1) / p->pmtu;
	const uint8_t *data = p->srv.mr + (va - SERVE_VA);

	for (uint32_t i = 0; i < npkt; i++) {
		uint32_t chunk = i < npkt - 1 ? p->pmtu : len - i * p->pmtu;
		struct wire_build_desc d;
		uint8_t op;

		if (npkt == 1)
			op = WIRE_OP_READ_RESP_ONLY;
		else
			op = i == 0 ? WIRE_OP_READ_RESP_FIRST :
			     i == npkt - 1 ? WIRE_OP_READ_RESP_LAST : WIRE_OP_READ_RESP_MIDDLE;
		desc_init(p, &d, op, psn_add(psn, (uint32_t)i), false);
		d.aeth.syndrome = WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID;
		d.aeth.msn = p->msn;
		serve_tx(p, &d, data + (uint64_t)i * p->pmtu, chunk);
	}
}

static struct serve_res *serve_res_find(struct probe *p, uint32_t psn)
{
	for (unsigned i = 0; i < SERVE_RESOURCES; i++) {
		struct serve_res *r = &p->srv.res[i];

		if (r->used && psn_cmp(psn, r->first_psn) >= 0 && psn_cmp(psn, r->last_psn) <= 0)
			return r;
	}
	return NULL;
}

static void serve_res_add(struct probe *p, bool atomic, uint32_t first, uint32_t last,
			  uint64_t orig)
{
	struct serve_res *r = &p->srv.res[p->srv.res_next++ % SERVE_RESOURCES];

	*r = (struct serve_res){ .used = true, .atomic = atomic, .first_psn = first,
				 .last_psn = last, .orig = orig };
}

/*
 * A request with a PSN already executed (IBA 9.7.5.1): WRITE and SEND are acknowledged
 * again, not executed; a READ is executed again from the PSN it names (the requester may
 * ask for the rest of a read whose responses it lost); an atomic gets its saved result.
 */
static void serve_duplicate(struct probe *p, const struct wire_pkt *k)
{
	wire_op_flags fl = k->op->flags;
	struct serve_res *r;

	p->srv.duplicates++;
	if (fl & (WIRE_OPF_WRITE | WIRE_OPF_SEND)) {
		if (k->ackreq)
			serve_ack(p, WIRE_OP_ACKNOWLEDGE, psn_add(p->srv.epsn, WIRE_PSN_MASK),
				  WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, 0);
		return;
	}
	r = serve_res_find(p, k->psn);
	if (!r)
		return;		/* too old: dropped (class D) */
	if (fl & WIRE_OPF_READ) {
		const struct wire_reth *h = wire_pkt_ext(k, WIRE_EXT_RETH);
		uint64_t va = wire_get64(h->va);
		uint32_t len = wire_get32(h->dma_len);

		if (!r->atomic && wire_get32(h->rkey) == SERVE_RKEY && mr_range(va, len))
			serve_read_responses(p, k->psn, va, len);
	} else if (r->atomic && r->first_psn == k->psn) {
		serve_ack(p, WIRE_OP_ATOMIC_ACKNOWLEDGE, k->psn,
			  WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, r->orig);
	}
}

static void serve_request(struct probe *p, const struct wire_pkt *k)
{
	struct responder *s = &p->srv;
	wire_op_flags fl = k->op->flags;
	int32_t ahead = psn_cmp(k->psn, s->epsn);

	if (ahead > 0) {	/* IBA 9.7.5.2.2: NAK PSN sequence error with the expected PSN */
		if (!s->nak_sent) {
			serve_ack(p, WIRE_OP_ACKNOWLEDGE, s->epsn, WIRE_AETH_NAK | WIRE_NAK_PSN_SEQ_ERR, 0);
			s->nak_sent = true;
			s->seq_naks++;
		}
		return;
	}
	if (ahead < 0) {
		serve_duplicate(p, k);
		return;
	}
	s->nak_sent = false;

	if (fl & WIRE_OPF_WRITE) {
		if (fl & (WIRE_OPF_FIRST | WIRE_OPF_ONLY)) {
			const struct wire_reth *h = wire_pkt_ext(k, WIRE_EXT_RETH);

			s->wva = wire_get64(h->va);
			s->wresid = wire_get32(h->dma_len);
			if (wire_get32(h->rkey) != SERVE_RKEY || !mr_range(s->wva, s->wresid)) {
				serve_fatal(p, k->psn, WIRE_NAK_REM_ACCESS_ERR, "WRITE outside our memory");
				return;
			}
		}
		if (k->payload_len > s->wresid) {
			serve_fatal(p, k->psn, WIRE_NAK_INVALID_REQ, "WRITE longer than its RETH");
			return;
		}
		memcpy(s->mr + (s->wva - SERVE_VA), wire_pkt_payload(k), k->payload_len);
		s->wva += k->payload_len;
		s->wresid -= k->payload_len;
		if (fl & (WIRE_OPF_LAST | WIRE_OPF_ONLY)) {
			p->msn++;
			s->writes++;
		}
	} else if (fl & WIRE_OPF_SEND) {
		if (fl & (WIRE_OPF_LAST | WIRE_OPF_ONLY)) {
			p->msn++;
			s->sends++;
		}
	} else if (fl & WIRE_OPF_READ) {
		const struct wire_reth *h = wire_pkt_ext(k, WIRE_EXT_RETH);
		uint64_t va = wire_get64(h->va);
		uint32_t len = wire_get32(h->dma_len);
		uint32_t npkt = len <= p->pmtu ? 1 : (len + p->pmtu - 1) / p->pmtu;

		if (wire_get32(h->rkey) != SERVE_RKEY || !mr_range(va, len)) {
			serve_fatal(p, k->psn, WIRE_NAK_REM_ACCESS_ERR, "READ outside our memory");
			return;
		}
		p->msn++;	/* counted when executed (C9-148) */
		s->reads++;
		serve_res_add(p, false, k->psn, psn_add(k->psn, (uint32_t)npkt - 1), 0);
		serve_read_responses(p, k->psn, va, len);
		s->epsn = psn_add(k->psn, (uint32_t)npkt);
		return;
	} else if (fl & WIRE_OPF_ATOMIC) {
		const struct wire_atomic_eth *h = wire_pkt_ext(k, WIRE_EXT_ATOMIC_ETH);
		uint64_t va = wire_get64(h->va), orig, v;
		uint8_t *at = s->mr + (va - SERVE_VA);

		if (wire_get32(h->rkey) != SERVE_RKEY || !mr_range(va, 8)) {
			serve_fatal(p, k->psn, WIRE_NAK_REM_ACCESS_ERR, "atomic outside our memory");
			return;
		}
		if (va & 7) {
			serve_fatal(p, k->psn, WIRE_NAK_INVALID_REQ, "atomic not 8-byte aligned");
			return;
		}
		memcpy(&orig, at, 8);
		if ((k->opcode & 0x1f) == WIRE_OP_FETCH_ADD)
			v = orig + wire_get64(h->swap_add);
		else
			v = orig == wire_get64(h->compare) ? wire_get64(h->swap_add) : orig;
		memcpy(at, &v, 8);
		p->msn++;
		s->atomics++;
		serve_res_add(p, true, k->psn, k->psn, orig);
		s->epsn = psn_add(k->psn, 1);
		serve_ack(p, WIRE_OP_ATOMIC_ACKNOWLEDGE, k->psn,
			  WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, orig);
		return;
	} else {
		serve_fatal(p, k->psn, WIRE_NAK_INVALID_REQ, "opcode this responder does not serve");
		return;
	}
	s->epsn = psn_add(k->psn, 1);
	if (k->ackreq)
		serve_ack(p, WIRE_OP_ACKNOWLEDGE, k->psn, WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID, 0);
}

/*
 * Answer rxe's requests until perftest's client speaks again on TCP (it finished, or gave
 * up) or @timeout_s passed.  Every frame rxe sends must pass wire_parse().
 */
static void serve_loop(struct probe *p, int tcp_fd, int timeout_s)
{
	double end = probe_now() + timeout_s;
	static struct rx_frame r;

	for (;;) {
		struct pollfd pfd[2] = { { .fd = p->link.fd, .events = POLLIN },
					 { .fd = tcp_fd, .events = POLLIN } };
		enum wire_drop why;
		ssize_t n;

		if (probe_now() > end) {
			check(p, false, "perftest client done within %d s", timeout_s);
			return;
		}
		if (poll(pfd, 2, 1000) <= 0)
			continue;
		if (pfd[1].revents)
			return;
		n = recv(p->link.fd, r.buf, sizeof(r.buf), 0);
		if (n <= 0 || !probe_looks_roce(r.buf, (uint32_t)n))
			continue;
		p->frames_rx++;
		why = wire_parse(r.buf, (uint32_t)n, 0, &r.pkt);
		if (why != WIRE_DROP_NONE) {
			check(p, false, "frame from rxe (%zd bytes, opcode 0x%02x) accepted by wire_parse: %s (%s)",
			      n, r.pkt.opcode, wire_drop_name(why), wire_drop_desc(why));
			continue;
		}
		if (memcmp(r.pkt.src_gid, p->peer_gid, 16) || r.pkt.dest_qp != p->me.qpn ||
		    p->srv.error)
			continue;
		if (!(r.pkt.op->flags & WIRE_OPF_REQUEST) || !(r.pkt.op->flags & WIRE_OPF_RC)) {
			p->srv.not_rc_request++;
			continue;
		}
		serve_request(p, &r.pkt);
	}
}

static void serve_summary(struct probe *p, const struct pt_report *client)
{
	const struct responder *s = &p->srv;

	probe_note("served %" PRIu64 " WRITEs, %" PRIu64 " SENDs, %" PRIu64 " READs, %" PRIu64
	     " atomics; %" PRIu64 " duplicates, %" PRIu64 " PSN sequence NAKs, %" PRIu64
	     " responses dropped on purpose",
	     s->writes, s->sends, s->reads, s->atomics, s->duplicates, s->seq_naks, s->dropped);
	probe_note("rxe's perftest client reported: %" PRIu64 " bytes x %" PRIu64 " iterations, "
	     "%.2f MB/s average", client->size, client->iters, client->bw_avg);
}

/* What must hold once a perftest client in the guest ran against us. */
static void serve_checks(struct probe *p, const char *verb, const struct pt_report *client)
{
	const struct responder *s = &p->srv;
	uint64_t done = s->writes + s->sends + s->reads + s->atomics, sum = 0;

	check(p, !s->error && s->other_naks == 0, "no request refused");
	check(p, s->not_rc_request == 0, "%" PRIu64 " frames to our QP were not RC requests",
	      s->not_rc_request);
	check(p, done > 0 && done >= client->iters,
	      "%" PRIu64 " requests executed, the client counted %" PRIu64, done, client->iters);
	if (!strcmp(verb, "atomic")) {
		/* perftest's Fetch&Add adds 1: the memory holds one per executed atomic, no more */
		for (uint32_t off = 0; off < SERVE_MR_LEN; off += 8) {
			uint64_t v;

			memcpy(&v, s->mr + off, 8);
			sum += v;
		}
		check(p, sum == s->atomics,
		      "sum of our memory %" PRIu64 " = atomics executed %" PRIu64
		      " (duplicates answered from the saved result)", sum, s->atomics);
	}
}

/* ---- main ---- */

static const struct probe_case {
	const char *name;
	void (*run)(struct probe *p);	/* NULL: serve the guest's client */
	int syncs;		/* perftest handshakes after the keys (pt_client_setup()) */
	bool report;		/* the client's report goes to the server */
	const char *guest;	/* what the guest runs */
} probe_cases[] = {
	{ "write", case_write, 2, true, "ib_write_bw -s 16384" },
	{ "read", case_read, 2, true, "ib_read_bw -s 16384" },
	{ "atomic", case_atomic, 2, true, "ib_atomic_bw" },
	{ "send", case_send, 3, false, "ib_send_bw -s 16384 -n 8" },
	{ "ud", case_ud, 3, false, "ib_send_bw -c UD -s <pmtu> -n 6" },
	{ "serve-write", NULL, 2, true, "ib_write_bw ... HOST (the client)" },
	{ "serve-read", NULL, 2, true, "ib_read_bw ... HOST" },
	{ "serve-atomic", NULL, 2, true, "ib_atomic_bw ... HOST" },
	{ "serve-send", NULL, 3, false, "ib_send_bw ... HOST" },
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxe-probe --case CASE --ifname IF --local IP --peer IP --peer-mac MAC\n"
		"                 [--pmtu 1024|4096] [--ipv6] [--drop-every N]\n"
		"Connects to a perftest server waiting at PEER, then speaks RoCE v2 to it from\n"
		"interface IF with packets built by wire/, checking every response.  The serve-*\n"
		"cases are the other way round: the probe is the perftest server (TCP 18515) and\n"
		"answers the requests of the perftest client at PEER as an RC responder, dropping\n"
		"every Nth response frame with --drop-every.  Prints one TAP line per check; exit\n"
		"status 0 when all pass.  The guest runs, with -d rxe0 -x <GID index> (the\n"
		"IPv4-mapped GID, or the link-local one with --ipv6):\n");
	for (size_t i = 0; i < sizeof(probe_cases) / sizeof(probe_cases[0]); i++)
		fprintf(f, "  --case %-13s %s\n", probe_cases[i].name, probe_cases[i].guest);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "case", required_argument, NULL, 'c' },
		{ "ifname", required_argument, NULL, 'i' },
		{ "local", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'p' },
		{ "peer-mac", required_argument, NULL, 'm' },
		{ "pmtu", required_argument, NULL, 'M' },
		{ "ipv6", no_argument, NULL, '6' },
		{ "drop-every", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *kase = NULL, *ifname = NULL, *local = NULL, *peer = NULL, *peer_mac = NULL;
	const struct probe_case *pc = NULL;
	static struct probe p;
	struct pt_report rep = { 0 }, client_rep = { 0 };
	struct in_addr peer4;
	double secs;
	int c, fd, mtu_enum;

	p.pmtu = 1024;
	p.link.ip_version = 4;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': kase = optarg; break;
		case 'i': ifname = optarg; break;
		case 'l': local = optarg; break;
		case 'p': peer = optarg; break;
		case 'm': peer_mac = optarg; break;
		case 'M': p.pmtu = (uint32_t)atoi(optarg); break;
		case '6': p.link.ip_version = 6; break;
		case 'D': p.srv.drop_every = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	for (size_t i = 0; kase && i < sizeof(probe_cases) / sizeof(probe_cases[0]); i++)
		if (!strcmp(kase, probe_cases[i].name))
			pc = &probe_cases[i];
	if (!pc || !ifname || !local || !peer || !peer_mac) {
		usage(stderr);
		return 2;
	}
	if (probe_parse_mac(peer_mac, p.peer_mac) || inet_pton(AF_INET, peer, &peer4) != 1) {
		fprintf(stderr, "rxe-probe: bad --peer-mac %s or --peer %s\n", peer_mac, peer);
		return 2;
	}
	for (mtu_enum = 1; mtu_enum <= 5 && wire_mtu_bytes((unsigned)mtu_enum) != p.pmtu; mtu_enum++)
		;
	if (mtu_enum > 5) {
		fprintf(stderr, "rxe-probe: --pmtu must be 256, 512, 1024, 2048 or 4096\n");
		return 2;
	}
	if (probe_link_open(&p.link, ifname, local, p.link.ip_version))
		return 1;

	srand48(time(NULL) ^ getpid());
	p.me.qpn = OUR_QPN;
	p.me.psn = (uint32_t)lrand48() & WIRE_24BIT_MASK;
	p.me.out_reads = OUR_OUT_READS;
	memcpy(p.me.gid, p.link.gid, 16);
	if (pc->run) {
		fd = pt_connect(peer, 30);
		if (fd < 0 || pt_client_setup(fd, &mtu_enum, pc->syncs, &p.me, &p.peer))
			return 1;
	} else {
		p.srv.mr = calloc(1, SERVE_MR_LEN);
		p.me.rkey = SERVE_RKEY;
		p.me.vaddr = SERVE_VA;
		fd = pt_accept(120);
		if (!p.srv.mr || fd < 0 ||
		    pt_server_setup(fd, &mtu_enum, pc->syncs, &p.me, &p.peer))
			return 1;
		p.srv.epsn = p.peer.psn;	/* the client's first request */
	}
	p.pmtu = wire_mtu_bytes((unsigned)mtu_enum);
	memcpy(p.peer_gid, p.peer.gid, 16);
	p.psn = p.me.psn;
	probe_note("peer QPN 0x%06x PSN 0x%06x rkey 0x%08x VA 0x%" PRIx64 " out_reads %u; "
	     "ours QPN 0x%06x PSN 0x%06x, path MTU %u, IPv%u",
	     p.peer.qpn, p.peer.psn, p.peer.rkey, p.peer.vaddr, p.peer.out_reads, p.me.qpn,
	     p.me.psn, p.pmtu, p.link.ip_version);
	if (p.link.ip_version == 4)
		check(&p, !memcmp(p.peer.gid, (const uint8_t[12]){ [10] = 0xff, [11] = 0xff }, 12) &&
			     !memcmp(p.peer.gid + 12, &peer4, 4),
		      "the peer's GID is the IPv4-mapped address of %s", peer);
	else
		check(&p, p.peer.gid[0] == 0xfe && (p.peer.gid[1] & 0xc0) == 0x80,
		      "the peer's GID is an IPv6 link-local address");

	if (!pc->run) {
		serve_loop(&p, fd, 120);
		check(&p, pt_server_finish(fd, &p.me, pc->report ? &client_rep : NULL) == 0,
		      "perftest closing exchange");
		serve_summary(&p, &client_rep);
		serve_checks(&p, kase + strlen("serve-"), &client_rep);
		goto out;
	}
	secs = probe_now();
	pc->run(&p);
	secs = probe_now() - secs;
	expect_none(&p, "nothing more from the peer after the case");

	rep.size = p.msgs ? p.bytes / p.msgs : 0;
	rep.iters = p.msgs;
	rep.bw_avg = rep.bw_peak = (double)p.bytes / secs / 1e6;
	rep.msg_rate = (double)p.msgs / secs / 1e6;
	check(&p, pt_client_finish(fd, &p.me, pc->report ? &rep : NULL) == 0,
	      "perftest closing exchange");
out:
	check(&p, probe_link_drops(&p.link) == 0, "the probe's socket lost %ld frames",
	      probe_link_drops(&p.link));
	printf("# probe %s: %" PRIu64 " messages, %" PRIu64 " bytes\n", kase, p.msgs, p.bytes);
	printf("# broken on purpose: bad_icrc=%u bad_udp_csum=%u\n", p.bad_icrc_sent,
	       p.bad_udp_csum_sent);
	printf("# RoCE v2 frames: sent=%u received=%u\n", p.frames_tx, p.frames_rx);
	return probe_tap_end(&p.tap);
}
