// SPDX-License-Identifier: MIT
/* The decoder: what each output mode says about RoCE, non-RoCE and broken frames. */
#include <check.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/inspect_decode.h"
#include "uroce/wire_mad.h"
#include "unit_capture.h"
#include "wire_testutil.h"

enum mode { LINE, VERBOSE, JSON };

static uint8_t frame[TEST_MAX_FRAME];
static char *text;

static void teardown(void)
{
	free(text);
	text = NULL;
}

/* Renders @fr in @mode into `text` (freed by the fixture). */
static const char *render(enum mode m, const struct wire_frame *fr)
{
	struct inspect_decode_ts ts = { 1, 500000 };
	size_t size;
	FILE *out;

	free(text);
	text = NULL;
	out = open_memstream(&text, &size);
	ck_assert_ptr_nonnull(out);
	if (m == LINE)
		inspect_decode_line(out, &ts, fr);
	else if (m == VERBOSE)
		inspect_decode_verbose(out, 7, &ts, fr);
	else
		inspect_decode_json(out, 7, &ts, fr);
	ck_assert_int_eq(fclose(out), 0);
	return text;
}

#define ck_assert_has(hay, needle) \
	ck_assert_msg(strstr(hay, needle) != NULL, "missing \"%s\" in:\n%.1500s", needle, hay)
#define ck_assert_lacks(hay, needle) \
	ck_assert_msg(strstr(hay, needle) == NULL, "unexpected \"%s\" in:\n%.1500s", needle, hay)

static uint32_t random_packet(int opcode, uint64_t seed, struct wire_build_desc *d)
{
	static uint8_t data[4096];
	struct test_rng r;
	uint32_t n;

	test_rng_seed(&r, seed);
	test_random_desc(&r, (uint8_t)opcode, d);
	n = test_payload_len(&r, (uint8_t)opcode, 1024);
	test_rng_fill(&r, data, n);
	return wire_build(frame, sizeof(frame), d, data, n);
}

static void expect_has(const char *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void expect_has(const char *s, const char *fmt, ...)
{
	char needle[128];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(needle, sizeof(needle), fmt, ap);
	va_end(ap);
	ck_assert_has(s, needle);
}

/* Loop over every defined opcode: the one-line form names what a reader needs. */
START_TEST(line_per_opcode)
{
	const struct wire_opcode_info *op = &wire_opcode[_i];
	struct wire_build_desc d;
	struct wire_frame fr;
	const char *s;
	uint32_t len;

	if (!wire_opcode_valid((uint8_t)_i))
		return;
	len = random_packet(_i, 100 + (uint64_t)_i, &d);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_ROCE);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_NONE);
	s = render(LINE, &fr);
	ck_assert_has(s, "1.000500 ");
	expect_has(s, "%s qp 0x%06" PRIx32 " psn %" PRIu32, op->name, d.dest_qp, d.psn);
	expect_has(s, ".4791: ");
	expect_has(s, "length %" PRIu32 "\n", len);
	ck_assert_has(s, "icrc ok");
	if (d.ackreq)
		ck_assert_has(s, " ackreq");
	else
		ck_assert_lacks(s, "ackreq");
	if (op->hdrs & WIRE_HDR_RETH)
		expect_has(s, "va 0x%" PRIx64 " rkey 0x%08" PRIx32 " dmalen %" PRIu32, d.reth.va,
			   d.reth.rkey, d.reth.len);
	if (op->hdrs & WIRE_HDR_AETH)
		expect_has(s, "%s", wire_aeth_name(d.aeth.syndrome));
	if (op->hdrs & WIRE_HDR_IMMDT)
		expect_has(s, "imm 0x%08" PRIx32, d.imm);
	if (op->hdrs & WIRE_HDR_IETH)
		expect_has(s, "inv-rkey 0x%08" PRIx32, d.ieth_rkey);
	if (op->hdrs & WIRE_HDR_DETH)
		expect_has(s, "qkey 0x%08" PRIx32 " src-qp 0x%06" PRIx32, d.deth.qkey, d.deth.src_qp);
	if (op->hdrs & WIRE_HDR_XRCETH)
		expect_has(s, "xrc-srq 0x%06" PRIx32, d.xrc_srqn);
	else
		ck_assert_lacks(s, "xrc-srq");
	if (op->hdrs & WIRE_HDR_ATOMIC_ACK_ETH)
		expect_has(s, "orig 0x%" PRIx64, d.atomic_orig);
	if (_i == (WIRE_OPC_RC | WIRE_OP_FETCH_ADD))
		expect_has(s, "add %" PRIu64, d.atomic.swap_add);
	if (_i == (WIRE_OPC_RC | WIRE_OP_COMPARE_SWAP))
		expect_has(s, "compare 0x%" PRIx64 " swap 0x%" PRIx64, d.atomic.compare,
			   d.atomic.swap_add);
	if (op->flags & WIRE_OPF_PAYLOAD)
		expect_has(s, "payload %" PRIu32, fr.pkt.payload_len);
}
END_TEST

/* Loop over every defined opcode: -v shows each header present, and only those. */
START_TEST(verbose_per_opcode)
{
	static const struct { wire_hdr_mask bit; const char *title; } layers[] = {
		{ WIRE_HDR_RETH, "RETH RDMA extended transport header" },
		{ WIRE_HDR_AETH, "AETH ACK extended transport header" },
		{ WIRE_HDR_ATOMIC_ETH, "AtomicETH atomic extended transport header" },
		{ WIRE_HDR_ATOMIC_ACK_ETH, "AtomicAckETH" },
		{ WIRE_HDR_IMMDT, "ImmDt immediate data" },
		{ WIRE_HDR_IETH, "IETH invalidate extended transport header" },
		{ WIRE_HDR_DETH, "DETH datagram extended transport header" },
		{ WIRE_HDR_CNP, "CNP reserved" },
		{ WIRE_HDR_XRCETH, "XRCETH XRC extended transport header" },
	};
	const struct wire_opcode_info *op = &wire_opcode[_i];
	struct wire_build_desc d;
	struct wire_frame fr;
	const uint8_t *bth;
	const char *s;
	uint32_t len;

	if (!wire_opcode_valid((uint8_t)_i))
		return;
	len = random_packet(_i, 200 + (uint64_t)_i, &d);
	inspect_decode_frame(&fr, frame, len, 0);
	s = render(VERBOSE, &fr);
	expect_has(s, "frame 7: %" PRIu32 " bytes, time 1.000500: %s", len, op->name);
	ck_assert_has(s, "verdict: accepted");
	ck_assert_has(s, "Ethernet II, ");
	ck_assert_has(s, d.ip_version == 4 ? "IPv4, 20 bytes" : "IPv6, 40 bytes");
	ck_assert_has(s, "UDP, 8 bytes");
	if (d.has_vlan)
		ck_assert_has(s, "VLAN ID");
	for (unsigned k = 0; k < sizeof(layers) / sizeof(layers[0]); k++) {
		if (op->hdrs & layers[k].bit)
			ck_assert_has(s, layers[k].title);
		else
			ck_assert_lacks(s, layers[k].title);
	}
	/* The PSN line: its offset and raw bytes, straight from the frame. */
	bth = frame + fr.pkt.bth_off;
	expect_has(s, "  %04x  %02x %02x %02x                 PSN ", fr.pkt.bth_off + 9, bth[9],
		   bth[10], bth[11]);
	expect_has(s, "%" PRIu32 " (0x%06" PRIx32 ")", d.psn, d.psn);
	expect_has(s, "ICRC invariant CRC, 4 bytes at 0x%04" PRIx32, len - 4);
	if (fr.pkt.payload_len)
		expect_has(s, "payload, %" PRIu32 " bytes at 0x%04" PRIx32, fr.pkt.payload_len,
			   fr.pkt.payload_off);
	if (fr.pkt.pad)
		expect_has(s, "pad            %u byte", fr.pkt.pad);
}
END_TEST

/* Loop over every defined opcode: the JSON carries the parser's view. */
START_TEST(json_per_opcode)
{
	const struct wire_opcode_info *op = &wire_opcode[_i];
	struct wire_build_desc d;
	struct wire_frame fr;
	const char *s;
	uint32_t len;

	if (!wire_opcode_valid((uint8_t)_i))
		return;
	len = random_packet(_i, 300 + (uint64_t)_i, &d);
	inspect_decode_frame(&fr, frame, len, 0);
	s = render(JSON, &fr);
	ck_assert(s[0] == '{' && s[strlen(s) - 2] == '}' && s[strlen(s) - 1] == '\n');
	ck_assert_has(s, "\"frame\":7,\"time\":1.000500000,");
	ck_assert_has(s, "\"kind\":\"roce\",\"drop\":\"NONE\"");
	expect_has(s, "\"bth\":{\"opcode\":%d,\"name\":\"%s\"", _i, op->name);
	expect_has(s, "\"dest_qp\":%" PRIu32 ",\"ackreq\":%s,\"psn\":%" PRIu32 "}", d.dest_qp,
		   d.ackreq ? "true" : "false", d.psn);
	expect_has(s, "\"payload_len\":%" PRIu32 ",\"icrc\":\"0x%08" PRIx32 "\"", fr.pkt.payload_len,
		   fr.pkt.icrc);
	ck_assert_has(s, "\"icrc_ok\":true}");
	if (op->hdrs & WIRE_HDR_RETH)
		expect_has(s, "\"reth\":{\"va\":\"0x%016" PRIx64 "\",\"rkey\":%" PRIu32, d.reth.va,
			   d.reth.rkey);
	else
		ck_assert_lacks(s, "\"reth\"");
	if (op->hdrs & WIRE_HDR_DETH)
		expect_has(s, "\"deth\":{\"qkey\":%" PRIu32 ",\"src_qp\":%" PRIu32 "}", d.deth.qkey,
			   d.deth.src_qp);
	if (op->hdrs & WIRE_HDR_ATOMIC_ETH)
		expect_has(s, "\"swap_add\":\"0x%016" PRIx64 "\"", d.atomic.swap_add);
	if (op->hdrs & WIRE_HDR_XRCETH)
		expect_has(s, "\"xrceth\":{\"srqn\":%" PRIu32 "}", d.xrc_srqn);
	else
		ck_assert_lacks(s, "\"xrceth\"");
	if (d.ip_version == 6)
		expect_has(s, "\"flow_label\":%" PRIu32, d.flow_label);
}
END_TEST

static uint32_t ack_with(uint8_t syndrome, uint32_t msn)
{
	struct wire_build_desc d;

	random_packet(WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE, 1, &d);
	d.aeth.syndrome = syndrome;
	d.aeth.msn = msn;
	return wire_build(frame, sizeof(frame), &d, NULL, 0);
}

START_TEST(aeth_meanings)
{
	struct wire_frame fr;
	uint32_t len;

	len = ack_with(0x60, 77);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_has(render(LINE, &fr), "NAK PSN sequence error msn 77");
	ck_assert_has(render(VERBOSE, &fr), "a packet went missing: resend from this PSN on");
	len = ack_with(0x62, 1);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_has(render(VERBOSE, &fr), "rkey, address range or access rights were refused");
	len = ack_with(0x2e, 3);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_has(render(LINE, &fr), "RNR NAK timer 1280us msn 3");
	ck_assert_has(render(VERBOSE, &fr), "retry after 1280 us");
	len = ack_with(0x05, 9);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_has(render(LINE, &fr), "ACK credits 6 msn 9");
	ck_assert_has(render(VERBOSE, &fr), "the responder has 6 receive WQEs free");
	len = ack_with(0x1f, 9);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_has(render(LINE, &fr), "ACK credits n/a msn 9");
}
END_TEST

START_TEST(bad_icrc)
{
	struct wire_build_desc d;
	struct wire_frame fr;
	uint32_t len = random_packet(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 3, &d);

	frame[len - 1] ^= 0x80;
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_BAD_ICRC);
	ck_assert(fr.icrc_checked);
	ck_assert_uint_ne(fr.icrc_calc, fr.pkt.icrc);
	ck_assert_has(render(LINE, &fr), "DROP BAD_ICRC (carried 0x");
	ck_assert_has(render(VERBOSE, &fr), "verdict: BAD_ICRC");
	ck_assert_has(text, "no router changes: BAD");
	ck_assert_has(render(JSON, &fr), "\"drop\":\"BAD_ICRC\"");
	ck_assert_has(text, "\"icrc_ok\":false");
}
END_TEST

START_TEST(malformed_frames)
{
	struct wire_build_desc d;
	struct wire_frame fr;
	uint32_t len;

	inspect_decode_frame(&fr, frame, 10, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_MALFORMED);
	ck_assert_has(render(LINE, &fr), "malformed: DROP TRUNCATED_ETH");
	ck_assert_has(render(VERBOSE, &fr), "dropped because: frame shorter than an Ethernet header");

	len = random_packet(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 4, &d);
	frame[d.has_vlan ? 18 : 14] = d.ip_version == 4 ? 0x43 : 0x55;
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_MALFORMED);
	ck_assert_has(render(LINE, &fr), d.ip_version == 4 ? "BAD_IHL" : "BAD_IP_VERSION");

	/* A RoCE packet cut short by the capture's snap length. */
	len = random_packet(WIRE_OPC_RC | WIRE_OP_WRITE_FIRST, 5, &d);
	inspect_decode_frame(&fr, frame, 100, len);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_ROCE);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_IP_LEN);
	expect_has(render(LINE, &fr), "length %" PRIu32 " (captured 100)", len);
	ck_assert_has(render(VERBOSE, &fr), "(truncated capture)");
}
END_TEST

static const uint8_t arp_request[42] = {
	0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1, 0x08, 0x06,
	0, 1, 0x08, 0x00, 6, 4, 0, 1, 0x02, 0, 0, 0, 0, 1, 10, 0, 0, 1,
	0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
};

START_TEST(not_roce)
{
	struct wire_build_desc d;
	struct wire_frame fr;
	uint8_t f[64];
	uint32_t len;

	inspect_decode_frame(&fr, arp_request, sizeof(arp_request), 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_ARP);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_NOT_IP);
	ck_assert_has(render(LINE, &fr), "02:00:00:00:00:01 > ff:ff:ff:ff:ff:ff: ARP who-has 10.0.0.2 "
		      "tell 10.0.0.1");
	ck_assert_has(render(VERBOSE, &fr), "request: who has the target address?");
	ck_assert_has(render(JSON, &fr), "\"arp\":{\"op\":1,\"sender\":\"10.0.0.1\"");
	memcpy(f, arp_request, sizeof(arp_request));
	f[21] = 2;
	inspect_decode_frame(&fr, f, sizeof(arp_request), 0);
	ck_assert_has(render(LINE, &fr), "ARP reply 10.0.0.1 is-at 02:00:00:00:00:01");

	memset(f, 0, sizeof(f));
	f[12] = 0x88, f[13] = 0xcc;
	inspect_decode_frame(&fr, f, 60, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_OTHER);
	ck_assert_has(render(LINE, &fr), "EtherType 0x88cc LLDP (not IP)");
	/* RoCE v1 whose GRH is not version 6: malformed, for the reason the parser gives. */
	f[12] = 0x89, f[13] = 0x15;
	inspect_decode_frame(&fr, f, 60, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_MALFORMED);
	ck_assert_has(render(LINE, &fr), "DROP BAD_IP_VERSION");
	ck_assert_has(render(VERBOSE, &fr), "RoCE v1 (InfiniBand GRH over Ethernet)");

	/* UDP to another port: shown as UDP, and wire_parse() says why it is not RoCE. */
	len = random_packet(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 6, &d);
	frame[(d.has_vlan ? 18 : 14) + (d.ip_version == 4 ? 20 : 40) + 3] = 53;
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_IP);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_NOT_ROCE_PORT);
	ck_assert_has(render(LINE, &fr), ": UDP len ");
	ck_assert_has(render(VERBOSE, &fr), "not RoCE: UDP destination port is not 4791");
}
END_TEST

/* Frame @i of a loaded capture, decoded into @fr. */
static void decode_nth(struct wire_frame *fr, const struct test_capture *c, size_t i)
{
	inspect_decode_frame(fr, c->frames[i].data, c->frames[i].len, c->frames[i].orig_len);
}

/* perftest's TCP exchange in a real capture, decoded into the numbers it carries. */
START_TEST(perftest_exchange)
{
	struct test_capture c;
	struct wire_frame fr;

	test_capture_load("rxe_rc_atomic_fetch_add.pcap", &c);
	ck_assert_uint_ge(c.n, 14);
	decode_nth(&fr, &c, 13);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_IP);
	ck_assert(fr.perftest.valid);
	ck_assert_uint_eq(fr.perftest.qpn, 0x20);
	ck_assert_uint_eq(fr.perftest.psn, 0xe6450e);
	ck_assert_uint_eq(fr.perftest.rkey, 0x11a1);
	ck_assert_uint_eq(fr.perftest.va, 0x55d27e432000ull);
	ck_assert_uint_eq(fr.perftest.out_reads, 128);
	ck_assert_has(render(LINE, &fr), "192.168.77.3.44672 > 192.168.77.2.18515: TCP [P.] ");
	ck_assert_has(text, "perftest exchange: qpn 0x000020 psn 15090958 rkey 0x000011a1");
	ck_assert_has(render(VERBOSE, &fr), "GID 192.168.77.3, SRQ number 0");
	ck_assert_has(render(JSON, &fr), "\"perftest\":{\"qpn\":32,\"psn\":15090958");
	/* The SYN before it is perftest's connection but carries no exchange. */
	decode_nth(&fr, &c, 0);
	ck_assert(!fr.perftest.valid);
	ck_assert_has(render(LINE, &fr), "TCP [S] seq ");
	test_capture_free(&c);
}
END_TEST


/* A UD SEND to QP1 carrying @mad, as the CM sends it, in `frame`; its length. */
static uint32_t cm_frame(const struct wire_cm_mad *mad)
{
	struct wire_build_desc d = {
		.src_mac = { 2, 0, 0, 0, 0, 2 }, .dst_mac = { 2, 0, 0, 0, 0, 1 },
		.ip_version = 4,
		.src_gid = { [10] = 0xff, [11] = 0xff, 10, 70, 0, 2 },
		.dst_gid = { [10] = 0xff, [11] = 0xff, 10, 70, 0, 1 },
		.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY, .dest_qp = WIRE_GSI_QPN, .psn = 5,
		.deth = { WIRE_GSI_QKEY, WIRE_GSI_QPN },
	};

	return wire_build(frame, sizeof(frame), &d, mad, sizeof(*mad));
}

/* rdma_cm's REQ for 10.70.0.1 port 7174, as built by wire_mad's builders. */
static void cm_req(struct wire_cm_mad *m)
{
	struct wire_cm_req *r = &m->u.req;
	static const uint8_t src[16] = { [10] = 0xff, [11] = 0xff, 10, 70, 0, 2 };
	static const uint8_t dst[16] = { [10] = 0xff, [11] = 0xff, 10, 70, 0, 1 };

	wire_cm_mad_init(m, WIRE_CM_REQ, 0x0000123400000001ull);
	wire_set32(&r->local_comm_id, 0x3c001234);
	wire_set64(&r->service_id, wire_ip_service_id(WIRE_RDMA_PS_TCP, 7174));
	wire_set64(&r->local_ca_guid, 0x0200000000000002ull);
	wire_set_hi24_lo8(&r->qpn_rres, 0x000112, 16);
	wire_set_hi24_lo8(&r->eecn_idepth, 0, 8);
	wire_set_hi24_lo8(&r->reecn_misc, 0, 20 << 3);
	wire_set_hi24_lo8(&r->psn_misc, 0xabcdef, 20 << 3 | 7);
	wire_set16(&r->pkey, 0xffff);
	r->mtu_misc = 3 << 4 | 7;
	r->retries_misc = 15 << 4;
	memcpy(r->primary.local_gid, src, 16);
	memcpy(r->primary.remote_gid, dst, 16);
	r->primary.hop_limit = 64;
	r->primary.ack_timeout = 14 << 3;
	wire_cma_hdr_build((struct wire_cma_hdr *)r->pdata, 4, src, dst, 40001);
	memcpy(r->pdata + sizeof(struct wire_cma_hdr), "hello", 5);
}

/* Every field of a CM REQ is named and explained, with the values rdma_cm put there. */
START_TEST(cm_mad_req)
{
	struct wire_cm_mad m;
	struct wire_frame fr;

	cm_req(&m);
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_NONE);
	ck_assert_has(render(LINE, &fr), "CM REQ tid 0x123400000001");
	render(VERBOSE, &fr);
	ck_assert_has(text, "MAD common header, 24 bytes at 0x0000 (IBA 13.4.2)");
	ck_assert_has(text, "base version   1 ");
	ck_assert_has(text, "mgmt class     0x07 ");
	ck_assert_has(text, "class version  2 ");
	ck_assert_has(text, "method         .000 0011 = 3 ");
	ck_assert_has(text, "TID            0x0000123400000001");
	ck_assert_has(text, "attribute ID   0x0010 REQ");
	ck_assert_has(text, "REQ ConnectRequest, 232 bytes at 0x0018 (IBA 12.6.5 table 106)");
	ck_assert_has(text, "local comm ID  0x3c001234");
	ck_assert_has(text, "service ID     0x0000000001061c06 (RDMA_PS_TCP port 7174)");
	ck_assert_has(text, "local QPN      0x000112");
	ck_assert_has(text, "resp resources 16 ");
	ck_assert_has(text, "initiator depth 8 ");
	ck_assert_has(text, "starting PSN   11259375 ");
	ck_assert_has(text, "remote CM timeout 20: 4.3 s");
	ck_assert_has(text, "transport      0 RC");
	ck_assert_has(text, "path MTU       3: 1024 bytes");
	ck_assert_has(text, "max CM retries 1111 .... = 15");
	ck_assert_has(text, "local GID      10.70.0.2");
	ck_assert_has(text, "local ACK timeout 14: 67.1 ms");
	ck_assert_has(text, "rdma_cm private-data header, 36 bytes at 0x00a4 (IBA Annex A11.6)");
	ck_assert_has(text, "IP version     0100 .... = 4");
	ck_assert_has(text, "source port    40001 ");
	ck_assert_has(text, "source IP      10.70.0.2 ");
	ck_assert_has(text, "dest IP        10.70.0.1 ");
	ck_assert_has(text, "68656c6c6f");
	ck_assert_has(text, "ICRC");
}
END_TEST

/* The other messages: each has its own layer and its own fields. */
START_TEST(cm_mad_others)
{
	struct wire_cm_mad m;
	struct wire_frame fr;

	wire_cm_mad_init(&m, WIRE_CM_REP, 7);
	wire_set32(&m.u.rep.local_comm_id, 0x11);
	wire_set32(&m.u.rep.remote_comm_id, 0x3c001234);
	wire_set_hi24_lo8(&m.u.rep.qpn_vendor, 0x000113, 0);
	wire_set_hi24_lo8(&m.u.rep.psn_vendor, 4242, 0);
	m.u.rep.rres = 8;
	m.u.rep.idepth = 16;
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_has(render(VERBOSE, &fr), "REP ConnectReply");
	ck_assert_has(text, "remote comm ID 0x3c001234");
	ck_assert_has(text, "local QPN      0x000113");
	ck_assert_has(text, "starting PSN   4242 ");

	wire_cm_mad_init(&m, WIRE_CM_REJ, 8);
	wire_set16(&m.u.rej.reason, WIRE_CM_REJ_INVALID_SERVICE_ID);
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_has(render(LINE, &fr), "CM REJ tid 0x8");
	ck_assert_has(render(VERBOSE, &fr), "reason         8 invalid service ID");

	wire_cm_mad_init(&m, WIRE_CM_DREQ, 9);
	wire_set_hi24_lo8(&m.u.dreq.remote_qpn, 0x000113, 0);
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_has(render(VERBOSE, &fr), "DREQ DisconnectRequest");
	ck_assert_has(text, "remote QPN     0x000113");

	wire_cm_mad_init(&m, WIRE_CM_RTU, 10);
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_has(render(VERBOSE, &fr), "RTU ReadyToUse");

	wire_cm_mad_init(&m, WIRE_CM_MRA, 11);
	m.u.mra.service_timeout = 20 << 3;
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_has(render(VERBOSE, &fr), "service timeout 20: 4.3 s");

	wire_cm_mad_init(&m, WIRE_CM_SIDR_REQ, 12);
	wire_set64(&m.u.sidr_req.service_id, wire_ip_service_id(WIRE_RDMA_PS_UDP, 7174));
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_has(render(VERBOSE, &fr), "SIDR_REQ ServiceIDResReq");
	ck_assert_has(text, "(RDMA_PS_UDP port 7174)");
	/* No rdma_cm header in its private data: said so, not decoded as one. */
	ck_assert_has(text, "private data: no rdma_cm header");

	/* Another class on QP1 is a MAD but not the CM's: no CM fields. */
	wire_cm_mad_init(&m, WIRE_CM_RTU, 13);
	m.hdr.mgmt_class = 0x04;
	inspect_decode_frame(&fr, frame, cm_frame(&m), 0);
	ck_assert_lacks(render(LINE, &fr), "CM RTU");
	ck_assert_lacks(render(VERBOSE, &fr), "RTU ReadyToUse");
}
END_TEST

/* A real REQ (rping's client through uroce's rdma_cm): its fields agree with the traffic after it. */
START_TEST(cm_mad_capture)
{
	struct test_capture c;
	struct wire_frame fr;
	uint32_t psn;

	test_capture_load("uroce_rping_cm_rx.pcap", &c);
	ck_assert_uint_eq(c.n, 21);
	decode_nth(&fr, &c, 2);
	ck_assert_uint_eq(fr.pkt.opcode, WIRE_OPC_RC | WIRE_OP_SEND_ONLY);
	psn = fr.pkt.psn;
	decode_nth(&fr, &c, 0);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_NONE);
	ck_assert_has(render(LINE, &fr), "CM REQ tid ");
	render(VERBOSE, &fr);
	ck_assert_has(text, "(RDMA_PS_TCP port 7600)");
	expect_has(text, "starting PSN   %" PRIu32 " ", psn);
	ck_assert_has(text, "remote CM timeout 20: 4.3 s");
	ck_assert_has(text, "path MTU       3: 1024 bytes");
	ck_assert_has(text, "IP version     0100 .... = 4");
	ck_assert_has(text, "source IP      10.70.0.2 ");
	ck_assert_has(text, "dest IP        10.70.0.1 ");
	decode_nth(&fr, &c, 1);
	ck_assert_has(render(VERBOSE, &fr), "RTU ReadyToUse");
	decode_nth(&fr, &c, 20);
	ck_assert_has(render(VERBOSE, &fr), "DREQ DisconnectRequest");
	test_capture_free(&c);
}
END_TEST

/*
 * Every prefix of several frames, in every mode, from a buffer of exactly
 * that size: the decoder reads nothing past the end (ASan) and never crashes.
 */
START_TEST(every_truncation)
{
	struct wire_build_desc d;
	struct test_capture c;
	const uint8_t *src;
	uint32_t len;

	test_capture_load("rxe_rc_atomic_fetch_add.pcap", &c);
	if (_i < 4) {
		static const uint8_t ops[4] = { 0x0b, 0x12, 0x65, 0x81 };

		len = random_packet(ops[_i], 400 + (uint64_t)_i, &d);
		src = frame;
	} else if (_i == 4) {
		src = c.frames[13].data;	/* perftest exchange */
		len = c.frames[13].len;
	} else if (_i == 5) {
		struct wire_cm_mad m;

		cm_req(&m);
		len = cm_frame(&m);
		src = frame;
	} else {
		src = arp_request;
		len = sizeof(arp_request);
	}
	for (uint32_t n = 0; n <= len; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		struct wire_frame fr;
		char sum[64];

		memcpy(cut, src, n);
		inspect_decode_frame(&fr, cut, n, len);
		for (int m = LINE; m <= JSON; m++)
			render((enum mode)m, &fr);
		inspect_decode_summary(sum, sizeof(sum), &fr);
		if (n < len)
			ck_assert_uint_ne(fr.drop, WIRE_DROP_NONE);
		free(cut);
	}
	test_capture_free(&c);
}
END_TEST

/* A RoCE v1 frame: every GRH field explained, the v1 ICRC checked and its masks told. */
START_TEST(roce_v1_frame)
{
	struct wire_build_desc d;
	struct wire_frame fr;
	struct test_rng r;
	const char *v;
	uint32_t len;

	test_rng_seed(&r, 11);
	test_random_desc(&r, WIRE_OPC_RC | WIRE_OP_SEND_ONLY, &d);
	d.roce_v1 = true;
	d.ip_version = 6;
	d.has_vlan = false;
	d.tclass = 0x28;
	d.flow_label = 0x12345;
	d.hop_limit = 1;
	len = wire_build(frame, sizeof(frame), &d, "roce v1 hello", 13);
	ck_assert_uint_ne(len, 0);
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_ROCE);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_NONE);
	ck_assert_has(render(LINE, &fr), ": RoCEv1 RC_SEND_ONLY qp ");
	ck_assert_has(render(LINE, &fr), "payload 13 icrc ok");
	v = render(VERBOSE, &fr);
	ck_assert_has(v, "0x8915 RoCE v1 (InfiniBand GRH over Ethernet)");
	ck_assert_has(v, "GRH global route header, 40 bytes at 0x000e");
	ck_assert_has(v, "TClass         0x28");
	ck_assert_has(v, "FlowLabel      0x12345");
	ck_assert_has(v, "PayLen         32 ");
	ck_assert_has(v, "NxtHdr         0x1b                       0x1B: an IBA transport header");
	ck_assert_has(v, "HopLmt         1 ");
	ck_assert_has(v, "BTH base transport header, 12 bytes at 0x0036");
	ck_assert_has(v, "ICRC invariant CRC, 4 bytes at 0x0052 (IBA Annex A16)");
	ck_assert_has(v, "8 bytes of ones for the LRH");
	ck_assert_lacks(v, "UDP, 8 bytes");
	ck_assert_has(render(JSON, &fr), "\"roce_version\":1");
	ck_assert_has(render(JSON, &fr), "\"icrc_ok\":true");

	/* One flipped payload bit: the v1 ICRC catches it. */
	frame[len - 6] ^= 1;
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_BAD_ICRC);
	/* The GRH says UDP follows: not RoCE, for that reason. */
	frame[len - 6] ^= 1;
	frame[14 + 6] = WIRE_IPPROTO_UDP;
	inspect_decode_frame(&fr, frame, len, 0);
	ck_assert_uint_eq(fr.kind, WIRE_FRAME_OTHER);
	ck_assert_uint_eq(fr.drop, WIRE_DROP_BAD_GRH_NXTHDR);
}
END_TEST

START_TEST(text_helpers)
{
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, 192, 168, 1, 20 };
	static const uint8_t v6[16] = { 0xfd, 0, [15] = 1 };
	struct wire_build_desc d;
	struct wire_frame fr;
	char buf[256], tiny[8];
	size_t full;

	ck_assert_uint_eq(inspect_format_gid(buf, sizeof(buf), v4), strlen("192.168.1.20"));
	ck_assert_str_eq(buf, "192.168.1.20");
	inspect_format_gid(buf, sizeof(buf), v6);
	ck_assert_str_eq(buf, "fd00::1");

	inspect_decode_frame(&fr, frame, random_packet(WIRE_OPC_RC | WIRE_OP_SEND_ONLY, 8, &d), 0);
	full = inspect_decode_summary(buf, sizeof(buf), &fr);
	ck_assert_uint_eq(full, strlen(buf));
	ck_assert_uint_eq(inspect_decode_summary(tiny, sizeof(tiny), &fr), full);
	ck_assert_uint_eq(strlen(tiny), sizeof(tiny) - 1);
	ck_assert(!strncmp(tiny, buf, sizeof(tiny) - 1));
	ck_assert_uint_eq(inspect_decode_summary(NULL, 0, &fr), full);
	inspect_decode_endpoint(buf, sizeof(buf), &fr, false);
	ck_assert_str_eq(buf + strlen(buf) - 5, ".4791");
	inspect_decode_frame(&fr, arp_request, sizeof(arp_request), 0);
	inspect_decode_endpoint(buf, sizeof(buf), &fr, true);
	ck_assert_str_eq(buf, "02:00:00:00:00:01");
}
END_TEST

Suite *inspect_decode_suite(void);

Suite *inspect_decode_suite(void)
{
	Suite *s = suite_create("inspect_decode");
	TCase *t = tcase_create("decode");

	tcase_add_checked_fixture(t, NULL, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_loop_test(t, line_per_opcode, 0, 256);
	tcase_add_loop_test(t, verbose_per_opcode, 0, 256);
	tcase_add_loop_test(t, json_per_opcode, 0, 256);
	tcase_add_test(t, aeth_meanings);
	tcase_add_test(t, bad_icrc);
	tcase_add_test(t, malformed_frames);
	tcase_add_test(t, not_roce);
	tcase_add_test(t, roce_v1_frame);
	tcase_add_test(t, perftest_exchange);
	tcase_add_test(t, cm_mad_req);
	tcase_add_test(t, cm_mad_others);
	tcase_add_test(t, cm_mad_capture);
	tcase_add_loop_test(t, every_truncation, 0, 7);
	tcase_add_test(t, text_helpers);
	suite_add_tcase(s, t);
	return s;
}
