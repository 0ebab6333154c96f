// SPDX-License-Identifier: MIT
/* Plays perftest's client against the kernel's rxe with RoCE v2 packets built and checked by wire/. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <pcap/pcap.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perftest_xchg.h"
#include "uroce/wire.h"

#define MAX_FRAME	9216
#define RX_SLOTS	64
#define OUR_QPN		0x0001a5	/* any 24-bit value: rxe only learns it from the exchange */
#define OUR_OUT_READS	16
#define WAIT_MS		3000		/* first response under TCG comes within tens of ms */
#define GRACE_MS	300		/* how long to watch for responses that must not come */

struct rx_frame {
	uint8_t buf[MAX_FRAME];
	uint32_t len;
	struct wire_pkt pkt;
};

struct probe {
	int fd;			/* AF_PACKET, bound to the interface */
	int sink_fd;		/* UDP 4791: keeps the host stack from answering ICMP unreachable */
	int ifindex;
	uint8_t mac[WIRE_ETH_ALEN], peer_mac[WIRE_ETH_ALEN];
	uint8_t gid[16], peer_gid[16];
	uint16_t ip_id;

	struct pt_dest me, peer;	/* our requester QP and the server's QP */
	uint32_t psn;			/* next PSN we send */
	uint32_t msn;			/* messages the responder has completed */
	uint32_t pmtu;

	unsigned checks, failures;
	uint64_t msgs, bytes;		/* for the report the server prints */
	struct timespec t_start;

	struct rx_frame rx[RX_SLOTS];
	unsigned rx_n;
	uint8_t last_tx[MAX_FRAME];	/* the last request, for duplicates */
	uint32_t last_tx_len;
};

static uint32_t psn_add(uint32_t psn, int32_t n)
{
	return (uint32_t)((int64_t)psn + n) & WIRE_24BIT_MASK;
}

static __attribute__((format(printf, 3, 4)))
bool check(struct probe *p, bool ok, const char *fmt, ...)
{
	va_list ap;

	p->checks++;
	if (!ok)
		p->failures++;
	printf("%s %u - ", ok ? "ok" : "not ok", p->checks);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
	return ok;
}

static __attribute__((format(printf, 1, 2))) void note(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

/* ---- link: one AF_PACKET socket on the host end of the veth ---- */

static int link_open(struct probe *p, const char *ifname, const char *local_ip)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct sockaddr_in sink = { .sin_family = AF_INET, .sin_port = htons(WIRE_ROCEV2_PORT) };
	struct ifreq ifr = { 0 };
	int one = 1;

	p->fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (p->fd < 0) {
		perror("rxe-probe: AF_PACKET socket (needs root)");
		return -1;
	}
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(p->fd, SIOCGIFINDEX, &ifr) < 0) {
		fprintf(stderr, "rxe-probe: no interface %s in this network namespace\n", ifname);
		return -1;
	}
	p->ifindex = ifr.ifr_ifindex;
	if (ioctl(p->fd, SIOCGIFHWADDR, &ifr) < 0) {
		perror("rxe-probe: SIOCGIFHWADDR");
		return -1;
	}
	memcpy(p->mac, ifr.ifr_hwaddr.sa_data, WIRE_ETH_ALEN);
	sll.sll_ifindex = p->ifindex;
	if (bind(p->fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		perror("rxe-probe: bind AF_PACKET");
		return -1;
	}
	/* our own frames are not responses */
	if (setsockopt(p->fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0) {
		perror("rxe-probe: PACKET_IGNORE_OUTGOING");
		return -1;
	}

	if (inet_pton(AF_INET, local_ip, &sink.sin_addr) != 1) {
		fprintf(stderr, "rxe-probe: bad local address %s\n", local_ip);
		return -1;
	}
	memset(p->gid, 0, 10);
	p->gid[10] = p->gid[11] = 0xff;
	memcpy(p->gid + 12, &sink.sin_addr, 4);
	p->sink_fd = socket(AF_INET, SOCK_DGRAM, 0);
	if (p->sink_fd < 0 || bind(p->sink_fd, (struct sockaddr *)&sink, sizeof(sink)) < 0) {
		perror("rxe-probe: bind UDP 4791");
		return -1;
	}
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A frame sent to UDP port 4791, whatever else is in it. */
static bool looks_roce(const uint8_t *f, uint32_t len)
{
	uint32_t l4;

	if (len < 14 + 20 + 8)
		return false;
	if (f[12] == 0x08 && f[13] == 0x00) {
		if (f[14 + 9] != WIRE_IPPROTO_UDP)
			return false;
		l4 = 14 + (f[14] & 0xfu) * 4;
	} else if (f[12] == 0x86 && f[13] == 0xdd) {
		if (len < 14 + 40 + 8 || f[14 + 6] != WIRE_IPPROTO_UDP)
			return false;
		l4 = 14 + 40;
	} else {
		return false;
	}
	return l4 + 4 <= len && (f[l4 + 2] << 8 | f[l4 + 3]) == WIRE_ROCEV2_PORT;
}

/*
 * Read frames until @want responses to our QP are queued in p->rx, or @timeout_ms
 * passed; then watch @grace_ms longer for responses beyond @want.  Every RoCE v2 frame
 * from the peer must pass wire_parse() (lengths, pad, ICRC): a frame it rejects is a
 * disagreement between rxe and wire/ and counts as a failure.
 */
static unsigned rx_collect(struct probe *p, unsigned want, int timeout_ms, int grace_ms)
{
	double end = now_s() + timeout_ms / 1e3;
	bool in_grace = false;

	p->rx_n = 0;
	for (;;) {
		struct pollfd pfd = { .fd = p->fd, .events = POLLIN };
		int left = (int)((end - now_s()) * 1e3);
		struct rx_frame *r;
		enum wire_drop why;
		ssize_t n;

		if (!in_grace && p->rx_n >= want) {
			in_grace = true;
			end = now_s() + grace_ms / 1e3;
			continue;
		}
		if (left <= 0)
			break;
		if (poll(&pfd, 1, left) <= 0)
			continue;
		r = &p->rx[p->rx_n < RX_SLOTS ? p->rx_n : RX_SLOTS - 1];
		n = recv(p->fd, r->buf, sizeof(r->buf), 0);
		if (n <= 0 || !looks_roce(r->buf, (uint32_t)n))
			continue;
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
	memcpy(d->src_mac, p->mac, WIRE_ETH_ALEN);
	memcpy(d->dst_mac, p->peer_mac, WIRE_ETH_ALEN);
	d->ip_version = 4;
	memcpy(d->src_gid, p->gid, 16);
	memcpy(d->dst_gid, p->peer_gid, 16);
	d->ip_id = p->ip_id++;
	d->udp_sport = wire_udp_sport(p->me.qpn, p->peer.qpn);
	d->opcode = WIRE_OPC_RC | opcode;
	d->ackreq = ackreq;
	d->dest_qp = p->peer.qpn;
	d->psn = psn;
}

enum tx_flag {
	TX_BAD_ICRC = 1u << 0,	/* flip a bit of the ICRC */
};

static void tx(struct probe *p, const struct wire_build_desc *d, const void *payload,
	       uint32_t len, unsigned flags)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = p->ifindex,
				  .sll_halen = WIRE_ETH_ALEN };
	uint32_t n = wire_build(p->last_tx, sizeof(p->last_tx), d, payload, len);

	if (!n) {
		check(p, false, "wire_build %s (%u bytes payload)", opname(d->opcode), len);
		return;
	}
	if (flags & TX_BAD_ICRC)
		p->last_tx[n - 1] ^= 0x01;
	p->last_tx_len = n;
	memcpy(to.sll_addr, p->peer_mac, WIRE_ETH_ALEN);
	if (sendto(p->fd, p->last_tx, n, 0, (struct sockaddr *)&to, sizeof(to)) != (ssize_t)n)
		check(p, false, "send %s: %s", opname(d->opcode), strerror(errno));
}

static void tx_again(struct probe *p)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_ifindex = p->ifindex,
				  .sll_halen = WIRE_ETH_ALEN };

	memcpy(to.sll_addr, p->peer_mac, WIRE_ETH_ALEN);
	if (sendto(p->fd, p->last_tx, p->last_tx_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		check(p, false, "resend: %s", strerror(errno));
}

static void fill_pattern(uint8_t *buf, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i * 7);
}

/*
 * One RDMA WRITE message of @len bytes at the server's buffer, cut into path-MTU packets
 * (IBA 9.7.2: FIRST/MIDDLE carry exactly one PMTU).  AckReq on the last packet only when
 * @ackreq.  Returns the PSN of the last packet; p->psn moves past it.
 */
static uint32_t send_write(struct probe *p, uint32_t len, uint32_t rkey, bool ackreq,
			   unsigned flags)
{
	static uint8_t data[65536];
	uint32_t off = 0, npkt = len <= p->pmtu ? 1 : (len + p->pmtu - 1) / p->pmtu;
	uint32_t psn = p->psn;
	struct wire_build_desc d;

	fill_pattern(data, len, p->psn);
	for (uint32_t i = 0; i < npkt; i++) {
		uint32_t chunk = len - off < p->pmtu ? len - off : p->pmtu;
		uint8_t op;

		if (npkt == 1)
			op = WIRE_OP_WRITE_ONLY;
		else
			op = i == 0 ? WIRE_OP_WRITE_FIRST :
			     i == npkt - 1 ? WIRE_OP_WRITE_LAST : WIRE_OP_WRITE_MIDDLE;
		desc_init(p, &d, op, psn, ackreq && i == npkt - 1);
		/* IBA 9.3.3: the RETH (whole message) rides on the first packet only */
		d.reth.va = p->peer.vaddr;
		d.reth.rkey = rkey;
		d.reth.len = len;
		tx(p, &d, data + off, chunk, flags);
		off += chunk;
		psn = psn_add(psn, 1);
	}
	p->psn = psn;
	p->msgs++;
	p->bytes += len;
	return psn_add(psn, -1);
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
	p->psn = psn_add(psn, (int32_t)npkt);
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

/* What rxe puts in the fields IBA leaves to the sender: printed for docs/conformance.md. */
static void note_response_fields(const struct rx_frame *r)
{
	const struct wire_pkt *k = &r->pkt;
	const uint8_t *ip = r->buf + k->l3_off, *udp = r->buf + k->l4_off;
	const struct wire_bth *bth = wire_pkt_bth(k);

	note("rxe response fields: UDP sport %u, UDP checksum 0x%04x, IPv4 DF %s, TTL %u, "
	     "TOS 0x%02x, IP id 0x%04x, BTH MigReq %u pkey 0x%04x resv8a 0x%02x, AETH credit code %u",
	     k->udp_sport, udp[6] << 8 | udp[7], (ip[6] & 0x40) ? "set" : "clear", k->hop_limit,
	     k->tclass, ip[4] << 8 | ip[5], k->mig, k->pkey, bth->qpn.b[0],
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

	/* bad ICRC: silently dropped (IBA Annex A17.3.3) */
	expected = p->psn;
	send_write(p, 64, p->peer.rkey, true, TX_BAD_ICRC);
	p->psn = expected;
	expect_none(p, "WRITE with a bad ICRC");

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
		check(p, k->opcode == (WIRE_OPC_RC | want_op) && k->psn == psn_add(psn, (int32_t)i) &&
			 k->payload_len == want_len && k->pad == (-want_len & 3) &&
			 (!has_aeth || (aeth_syndrome(k) == (WIRE_AETH_ACK | WIRE_AETH_CREDIT_INVALID) &&
					aeth_msn(k) == p->msn)),
		      "%s: %s psn 0x%06x %u B pad %u msn %u (want %s psn 0x%06x %u B msn %u)", what,
		      opname(k->opcode), k->psn, k->payload_len, k->pad,
		      has_aeth ? aeth_msn(k) : 0, opname(WIRE_OPC_RC | want_op),
		      psn_add(psn, (int32_t)i), want_len, has_aeth ? p->msn : 0);
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

/* ---- captures ---- */

/*
 * Every RoCE v2 frame of a capture through wire_parse().  @allow_bad_icrc frames may fail
 * the ICRC check (the probe sends that many on purpose); any other rejection is an error.
 */
static int check_pcap(const char *path, unsigned allow_bad_icrc)
{
	unsigned per_op[256] = { 0 }, frames = 0, rejected = 0, bad_icrc = 0;
	char err[PCAP_ERRBUF_SIZE];
	const unsigned char *data;
	struct pcap_pkthdr *h;
	pcap_t *pc;
	int rc;

	pc = pcap_open_offline(path, err);
	if (!pc) {
		fprintf(stderr, "check-pcap: %s\n", err);
		return 1;
	}
	if (pcap_datalink(pc) != DLT_EN10MB) {
		fprintf(stderr, "check-pcap: %s is not an Ethernet capture\n", path);
		pcap_close(pc);
		return 1;
	}
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
		struct wire_pkt k;
		enum wire_drop why;

		if (!looks_roce(data, h->caplen))
			continue;
		frames++;
		why = h->caplen == h->len ? wire_parse(data, h->caplen, 0, &k) : WIRE_DROP_TRUNCATED_ETH;
		if (why == WIRE_DROP_NONE) {
			per_op[k.opcode]++;
		} else if (why == WIRE_DROP_BAD_ICRC && bad_icrc < allow_bad_icrc) {
			bad_icrc++;
		} else {
			rejected++;
			printf("check-pcap: frame %u (opcode 0x%02x psn 0x%06x, %u bytes): %s (%s)\n",
			       frames, k.opcode, k.psn, h->caplen, wire_drop_name(why), wire_drop_desc(why));
		}
	}
	pcap_close(pc);
	printf("check-pcap: %s: %u RoCE v2 frames, %u with the expected bad ICRC, %u rejected;",
	       path, frames, bad_icrc, rejected);
	for (int op = 0; op < 256; op++)
		if (per_op[op])
			printf(" %s %u;", opname((uint8_t)op), per_op[op]);
	putchar('\n');
	return rejected || bad_icrc != allow_bad_icrc || !frames;
}

/* ---- main ---- */

static int parse_mac(const char *s, uint8_t mac[WIRE_ETH_ALEN])
{
	unsigned m[6];

	if (sscanf(s, "%x:%x:%x:%x:%x:%x", &m[0], &m[1], &m[2], &m[3], &m[4], &m[5]) != 6)
		return -1;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)m[i];
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: rxe-probe --case write|read|atomic --ifname IF --local IP --peer IP\n"
		"                 --peer-mac MAC [--pmtu 1024|4096]\n"
		"       rxe-probe --check-pcap FILE [--allow-bad-icrc N]\n"
		"Connects to a perftest server (ib_write_bw / ib_read_bw / ib_atomic_bw with -x\n"
		"<RoCE v2 IPv4 GID index>) at PEER, then speaks RoCE v2 to it from interface IF\n"
		"with packets built by wire/, checking every response.  Prints one TAP line per\n"
		"check; exit status 0 when all pass.  --check-pcap runs every RoCE v2 frame of a\n"
		"capture through wire_parse (N frames may have a bad ICRC: the probe sends them).\n");
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
		{ "check-pcap", required_argument, NULL, 'C' },
		{ "allow-bad-icrc", required_argument, NULL, 'B' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *kase = NULL, *ifname = NULL, *local = NULL, *peer = NULL, *peer_mac = NULL;
	const char *pcap_path = NULL;
	unsigned allow_bad_icrc = 0;
	static struct probe p;
	struct pt_report rep = { 0 };
	double secs;
	int c, fd, mtu_enum;

	p.pmtu = 1024;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': kase = optarg; break;
		case 'i': ifname = optarg; break;
		case 'l': local = optarg; break;
		case 'p': peer = optarg; break;
		case 'm': peer_mac = optarg; break;
		case 'M': p.pmtu = (uint32_t)atoi(optarg); break;
		case 'C': pcap_path = optarg; break;
		case 'B': allow_bad_icrc = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (pcap_path)
		return check_pcap(pcap_path, allow_bad_icrc);
	if (!kase || !ifname || !local || !peer || !peer_mac ||
	    (strcmp(kase, "write") && strcmp(kase, "read") && strcmp(kase, "atomic"))) {
		usage(stderr);
		return 2;
	}
	if (parse_mac(peer_mac, p.peer_mac)) {
		fprintf(stderr, "rxe-probe: bad MAC %s\n", peer_mac);
		return 2;
	}
	for (mtu_enum = 1; mtu_enum <= 5 && wire_mtu_bytes((unsigned)mtu_enum) != p.pmtu; mtu_enum++)
		;
	if (mtu_enum > 5) {
		fprintf(stderr, "rxe-probe: --pmtu must be 256, 512, 1024, 2048 or 4096\n");
		return 2;
	}
	if (link_open(&p, ifname, local))
		return 1;

	srand48(time(NULL) ^ getpid());
	p.me.qpn = OUR_QPN;
	p.me.psn = (uint32_t)lrand48() & WIRE_24BIT_MASK;
	p.me.out_reads = OUR_OUT_READS;
	memcpy(p.me.gid, p.gid, 16);
	fd = pt_connect(peer, 30);
	if (fd < 0 || pt_client_setup(fd, mtu_enum, &p.me, &p.peer))
		return 1;
	memcpy(p.peer_gid, p.peer.gid, 16);
	p.psn = p.me.psn;
	note("server QPN 0x%06x PSN 0x%06x rkey 0x%08x VA 0x%" PRIx64 " out_reads %u; "
	     "ours QPN 0x%06x PSN 0x%06x, path MTU %u",
	     p.peer.qpn, p.peer.psn, p.peer.rkey, p.peer.vaddr, p.peer.out_reads, p.me.qpn,
	     p.me.psn, p.pmtu);
	check(&p, !memcmp(p.peer.gid, (const uint8_t[12]){ [10] = 0xff, [11] = 0xff }, 12) &&
		     !memcmp(p.peer.gid + 12, p.peer_gid + 12, 4),
	      "server GID is the IPv4-mapped address of %s", peer);

	clock_gettime(CLOCK_MONOTONIC, &p.t_start);
	secs = now_s();
	if (!strcmp(kase, "write"))
		case_write(&p);
	else if (!strcmp(kase, "read"))
		case_read(&p);
	else
		case_atomic(&p);
	secs = now_s() - secs;

	rep.size = p.msgs ? p.bytes / p.msgs : 0;
	rep.iters = p.msgs;
	rep.bw_avg = rep.bw_peak = (double)p.bytes / secs / 1e6;
	rep.msg_rate = (double)p.msgs / secs / 1e6;
	check(&p, pt_client_finish(fd, &p.me, &rep) == 0, "perftest closing exchange");
	printf("# probe %s: %" PRIu64 " messages, %" PRIu64 " bytes\n", kase, p.msgs, p.bytes);
	printf("1..%u\n", p.checks);
	printf("# %u passed, %u failed\n", p.checks - p.failures, p.failures);
	return p.failures ? 1 : 0;
}
