// SPDX-License-Identifier: MIT
/* Real captures (rxe, third-party NICs, uroce's XRC): every RoCE packet parses, opcode counts as recorded. */
#include <check.h>
#include <string.h>

#include "uroce/inspect_decode.h"
#include "uroce/wire.h"
#include "uroce/wire_mad.h"
#include "unit_capture.h"

#define MAX_OPS 6

/*
 * Expected contents: frame totals and per-opcode counts as tshark
 * (-d udp.port==4791,infiniband, plus ports 69 and 72 for the hardware
 * capture) and the captures' README report them.
 */
static const struct capture_expect {
	const char	*file;
	uint32_t	frames, roce, naks;
	uint32_t	pmtu;
	bool		perftest;	/* starts with perftest's exchange */
	struct { uint8_t opcode; uint32_t n; } ops[MAX_OPS];
} captures[] = {
	{ "hw_third_party_rc_send.pcap", 123, 105, 0, 1024, false,
	  { { 0x00, 33 }, { 0x03, 33 }, { 0x05, 2 }, { 0x11, 37 } } },
	{ "rxe_loss1pct_rc_write_first130.pcap", 130, 109, 2, 1024, true,
	  { { 0x06, 25 }, { 0x07, 48 }, { 0x08, 25 }, { 0x11, 11 } } },
	{ "rxe_rc_atomic_fetch_add.pcap", 1039, 1000, 0, 1024, true,
	  { { 0x14, 500 }, { 0x12, 500 } } },
	{ "rxe_rc_read_first80.pcap", 80, 61, 0, 1024, true,
	  { { 0x0c, 36 }, { 0x0d, 7 }, { 0x0e, 12 }, { 0x0f, 6 } } },
	{ "rxe_rc_read_lat.pcap", 631, 600, 0, 1024, true,
	  { { 0x0c, 300 }, { 0x10, 300 } } },
	{ "rxe_rc_send_first80.pcap", 80, 59, 0, 1024, true,
	  { { 0x00, 15 }, { 0x01, 29 }, { 0x02, 14 }, { 0x11, 1 } } },
	{ "rxe_rc_send_lat_inline.pcap", 1237, 1208, 0, 1024, true,
	  { { 0x04, 604 }, { 0x11, 604 } } },
	{ "rxe_rc_write_first80.pcap", 80, 59, 0, 1024, true,
	  { { 0x06, 14 }, { 0x07, 26 }, { 0x08, 13 }, { 0x11, 6 } } },
	{ "rxe_rc_write_lat.pcap", 1245, 1220, 0, 1024, true,
	  { { 0x0a, 610 }, { 0x11, 610 } } },
	{ "rxe_rc_write_mtu9000_first50.pcap", 50, 29, 0, 4096, true,
	  { { 0x06, 7 }, { 0x07, 12 }, { 0x08, 6 }, { 0x11, 4 } } },
	{ "rxe_ud_send.pcap", 333, 300, 0, 1024, true,
	  { { 0x64, 300 } } },
	{ "uroce_xsrq_pingpong.pcap", 46, 32, 0, 1024, false,
	  { { 0xa0, 11 }, { 0xa2, 11 }, { 0xb1, 10 } } },
	{ "rxe_rping_cm.pcap", 18, 17, 0, 1024, false,
	  { { 0x64, 5 }, { 0x04, 4 }, { 0x11, 5 }, { 0x0c, 1 }, { 0x10, 1 }, { 0x0a, 1 } } },
	{ "rxe_cm_replies.pcap", 12, 9, 0, 1024, false,
	  { { 0x64, 9 } } },
	{ "uroce_rc_pingpong_tail_probe.pcap", 13, 13, 0, 1024, false,
	  { { 0x04, 7 }, { 0x11, 6 } } },
	{ "uroce_selective_repeat_write.pcap", 16, 16, 2, 1024, false,
	  { { 0x06, 2 }, { 0x07, 9 }, { 0x08, 1 }, { 0x11, 4 } } },
	{ "uroce_dcqcn_rate_cut.pcap", 51, 51, 0, 1024, false,
	  { { 0x06, 2 }, { 0x07, 30 }, { 0x08, 2 }, { 0x11, 12 }, { 0x81, 5 } } },
};
#define N_CAPTURES (sizeof(captures) / sizeof(captures[0]))

static const uint8_t rxe_client_ip[4] = { 192, 168, 77, 3 };

/* Loop over the captures. */
START_TEST(capture_parses)
{
	const struct capture_expect *e = &captures[_i];
	uint32_t per_op[256] = { 0 }, roce = 0, naks = 0;
	struct test_capture c;

	test_capture_load(e->file, &c);
	ck_assert_uint_eq(c.n, e->frames);
	for (size_t i = 0; i < c.n; i++) {
		struct wire_frame fr;
		const struct wire_pkt *p = &fr.pkt;
		const uint8_t *aeth;

		inspect_decode_frame(&fr, c.frames[i].data, c.frames[i].len, c.frames[i].orig_len);
		if (fr.kind != WIRE_FRAME_ROCE) {
			ck_assert_msg(fr.kind == WIRE_FRAME_IP || fr.kind == WIRE_FRAME_ARP,
				      "%s frame %zu: kind %d", e->file, i + 1, fr.kind);
			ck_assert_uint_ne(fr.drop, WIRE_DROP_NONE);
			continue;
		}
		roce++;
		ck_assert_msg(fr.drop == WIRE_DROP_NONE, "%s frame %zu dropped: %s", e->file, i + 1,
			      wire_drop_name(fr.drop));
		ck_assert_uint_eq(fr.icrc_calc, p->icrc);
		ck_assert_msg(wire_check_pmtu(p, e->pmtu) == WIRE_DROP_NONE,
			      "%s frame %zu: %u bytes of %s on path MTU %u", e->file, i + 1,
			      p->payload_len, p->op->name, e->pmtu);
		per_op[p->opcode]++;
		aeth = wire_pkt_ext(p, WIRE_EXT_AETH);
		if (aeth && (aeth[0] & WIRE_AETH_TYPE_MASK) == WIRE_AETH_NAK) {
			ck_assert_uint_eq(aeth[0] & WIRE_AETH_CODE_MASK, WIRE_NAK_PSN_SEQ_ERR);
			naks++;
		}
	}
	ck_assert_uint_eq(roce, e->roce);
	ck_assert_uint_eq(naks, e->naks);
	for (int k = 0; k < MAX_OPS && e->ops[k].n; k++) {
		ck_assert_msg(per_op[e->ops[k].opcode] == e->ops[k].n, "%s: %u x %s, expected %u",
			      e->file, per_op[e->ops[k].opcode], wire_opcode[e->ops[k].opcode].name,
			      e->ops[k].n);
		roce -= e->ops[k].n;
	}
	ck_assert_msg(roce == 0, "%s: %u packets of opcodes not expected", e->file, roce);
	test_capture_free(&c);
}
END_TEST

/*
 * Across layers: the numbers perftest exchanged over TCP are the ones the
 * client's first request carries (its PSN, the server's QPN and rkey).
 */
START_TEST(perftest_exchange_matches_packets)
{
	const struct capture_expect *e = &captures[_i];
	struct wire_frame_perftest client = { 0 }, server = { 0 };
	struct test_capture c;
	bool checked = false;

	if (!e->perftest)
		return;
	test_capture_load(e->file, &c);
	for (size_t i = 0; i < c.n && !checked; i++) {
		struct wire_frame fr;
		const uint8_t *h;

		inspect_decode_frame(&fr, c.frames[i].data, c.frames[i].len, c.frames[i].orig_len);
		if (fr.perftest.valid) {
			if (!memcmp(fr.src_ip + 12, rxe_client_ip, 4))
				client = fr.perftest;
			else
				server = fr.perftest;
			continue;
		}
		/* Latency tests write both ways: skip the client's ACKs of the server's writes. */
		if (fr.kind != WIRE_FRAME_ROCE || memcmp(fr.src_ip + 12, rxe_client_ip, 4) ||
		    !(fr.pkt.op->flags & WIRE_OPF_REQUEST))
			continue;
		ck_assert(client.valid && server.valid);
		ck_assert_uint_eq(fr.pkt.psn, client.psn);
		ck_assert_uint_eq(fr.pkt.dest_qp, server.qpn);
		if ((h = wire_pkt_ext(&fr.pkt, WIRE_EXT_RETH)))
			ck_assert_uint_eq(wire_get32(((const struct wire_reth *)(const void *)h)->rkey),
					  server.rkey);
		if ((h = wire_pkt_ext(&fr.pkt, WIRE_EXT_ATOMIC_ETH)))
			ck_assert_uint_eq(wire_get32(((const struct wire_atomic_eth *)(const void *)h)
						     ->rkey), server.rkey);
		checked = true;
	}
	ck_assert_msg(checked, "%s: no request from the client", e->file);
	test_capture_free(&c);
}
END_TEST

/*
 * The CM MADs of capture @file, in order, into @out and their senders' IPv4
 * addresses into @src: exactly @n of them, of the attributes @want, each one
 * uroce's CM takes (wire_cm_mad_check()).
 */
static void load_cm_mads(const char *file, struct test_capture *c, const uint16_t *want,
			 unsigned n, struct wire_cm_mad *out, uint8_t (*src)[4])
{
	unsigned k = 0;

	test_capture_load(file, c);
	for (size_t i = 0; i < c->n; i++) {
		struct wire_frame fr;
		const struct wire_pkt *p = &fr.pkt;
		enum wire_mad_drop why;
		const uint8_t *mad;

		inspect_decode_frame(&fr, c->frames[i].data, c->frames[i].len, c->frames[i].orig_len);
		if (fr.kind != WIRE_FRAME_ROCE || p->dest_qp != WIRE_GSI_QPN)
			continue;
		mad = c->frames[i].data + p->payload_off;
		why = wire_cm_mad_check(mad, p->payload_len);
		ck_assert_msg(why == WIRE_MAD_DROP_NONE, "%s frame %zu: %s", file, i + 1,
			      wire_mad_drop_name(why));
		ck_assert_msg(k < n, "%s: more than %u CM MADs", file, n);
		memcpy(&out[k], mad, sizeof(out[k]));
		memcpy(src[k], fr.src_ip + 12, 4);
		ck_assert_uint_eq(wire_get16(out[k].hdr.attr_id), want[k]);
		k++;
	}
	ck_assert_uint_eq(k, n);
}

/*
 * The kernel's rdma_cm (rping on rxe) connecting to uroce: the kernel's REQ,
 * RTU and DREQ are MADs uroce's CM takes, and each side sends from the PSN
 * the other side's REQ or REP named (the kernel's reading, cm.c), to the QPN
 * it named.
 */
START_TEST(kernel_cm_psns_and_qpns)
{
	static const uint16_t want[] = { WIRE_CM_REQ, WIRE_CM_REP, WIRE_CM_RTU, WIRE_CM_DREQ,
					 WIRE_CM_DREP };
	struct wire_cm_mad m[5];
	uint8_t src[5][4];
	uint32_t req_psn, req_qpn, rep_psn, rep_qpn;
	bool active_seen = false, passive_seen = false;
	struct test_capture c;

	load_cm_mads("rxe_rping_cm.pcap", &c, want, 5, m, src);
	req_psn = wire_hi24(m[0].u.req.psn_misc);
	req_qpn = wire_hi24(m[0].u.req.qpn_rres);
	rep_psn = wire_hi24(m[1].u.rep.psn_vendor);
	rep_qpn = wire_hi24(m[1].u.rep.qpn_vendor);
	for (size_t i = 0; i < c.n; i++) {
		struct wire_frame fr;
		bool from_active;

		inspect_decode_frame(&fr, c.frames[i].data, c.frames[i].len, c.frames[i].orig_len);
		if (fr.kind != WIRE_FRAME_ROCE || fr.pkt.dest_qp == WIRE_GSI_QPN ||
		    !(fr.pkt.op->flags & WIRE_OPF_REQUEST))
			continue;
		from_active = !memcmp(fr.src_ip + 12, src[0], 4);
		if (from_active && !active_seen) {
			ck_assert_uint_eq(fr.pkt.psn, rep_psn);
			active_seen = true;
		} else if (!from_active && !passive_seen) {
			ck_assert_uint_eq(fr.pkt.psn, req_psn);
			passive_seen = true;
		}
		ck_assert_uint_eq(fr.pkt.dest_qp, from_active ? rep_qpn : req_qpn);
	}
	ck_assert(active_seen && passive_seen);
	/* The kernel's REQ on RoCE: permissive LIDs, a flow label from the ports. */
	ck_assert_uint_eq(wire_get16(m[0].u.req.primary.local_lid), WIRE_PERMISSIVE_LID);
	ck_assert_uint_eq(wire_get16(m[0].u.req.primary.remote_lid), WIRE_PERMISSIVE_LID);
	ck_assert_uint_ne(wire_get32(m[0].u.req.primary.flow_rate) >> 12, 0);
	test_capture_free(&c);
}
END_TEST

/* The kernel answering uroce: REP, DREP, SIDR_REP and REJ (reason 8) are MADs uroce's CM takes. */
START_TEST(kernel_cm_replies)
{
	static const uint16_t want[] = { WIRE_CM_REQ, WIRE_CM_REP, WIRE_CM_RTU, WIRE_CM_DREQ,
					 WIRE_CM_DREP, WIRE_CM_SIDR_REQ, WIRE_CM_SIDR_REP,
					 WIRE_CM_REQ, WIRE_CM_REJ };
	struct wire_cm_mad m[9];
	uint8_t src[9][4];
	struct test_capture c;

	load_cm_mads("rxe_cm_replies.pcap", &c, want, 9, m, src);
	/* Each reply names what it answers. */
	ck_assert_uint_eq(wire_get32(m[1].u.rep.remote_comm_id), wire_get32(m[0].u.req.local_comm_id));
	ck_assert_uint_eq(wire_get32(m[4].u.rtu.remote_comm_id), wire_get32(m[3].u.dreq.local_comm_id));
	ck_assert_uint_eq(wire_get32(m[6].u.sidr_rep.request_id),
			  wire_get32(m[5].u.sidr_req.request_id));
	ck_assert_uint_eq(m[6].u.sidr_rep.status, WIRE_SIDR_OK);
	ck_assert_uint_eq(wire_get64(m[6].u.sidr_rep.service_id),
			  wire_get64(m[5].u.sidr_req.service_id));
	ck_assert_uint_eq(wire_get32(m[8].u.rej.remote_comm_id), wire_get32(m[7].u.req.local_comm_id));
	ck_assert_uint_eq(wire_get16(m[8].u.rej.reason), WIRE_CM_REJ_INVALID_SERVICE_ID);
	/* the kernel's MADs carry the TID of the message they answer */
	ck_assert_uint_eq(wire_get64(m[6].hdr.tid), wire_get64(m[5].hdr.tid));
	test_capture_free(&c);
}
END_TEST

/*
 * ibv_xsrq_pingpong's XRC: every request names the SRQ both sides announced
 * ("SRQN 000001" in the exchange), no ACK carries an XRCETH.
 */
START_TEST(xrc_requests_name_the_srq)
{
	struct test_capture c;
	unsigned requests = 0, acks = 0;

	test_capture_load("uroce_xsrq_pingpong.pcap", &c);
	for (size_t i = 0; i < c.n; i++) {
		struct wire_frame fr;
		const uint8_t *x;

		inspect_decode_frame(&fr, c.frames[i].data, c.frames[i].len, c.frames[i].orig_len);
		if (fr.kind != WIRE_FRAME_ROCE)
			continue;
		ck_assert(fr.pkt.op->flags & WIRE_OPF_XRC);
		x = wire_pkt_ext(&fr.pkt, WIRE_EXT_XRCETH);
		if (fr.pkt.op->flags & WIRE_OPF_REQUEST) {
			ck_assert_ptr_nonnull(x);
			ck_assert_uint_eq(wire_load32(x), 1);
			requests++;
		} else {
			ck_assert_ptr_null(x);
			acks++;
		}
	}
	ck_assert_uint_eq(requests, 22);
	ck_assert_uint_eq(acks, 10);
	test_capture_free(&c);
}
END_TEST

Suite *inspect_captures_suite(void);

Suite *inspect_captures_suite(void)
{
	Suite *s = suite_create("inspect_captures");
	TCase *t = tcase_create("captures");

	tcase_set_timeout(t, 60);
	tcase_add_loop_test(t, capture_parses, 0, N_CAPTURES);
	tcase_add_loop_test(t, perftest_exchange_matches_packets, 0, N_CAPTURES);
	tcase_add_test(t, xrc_requests_name_the_srq);
	tcase_add_test(t, kernel_cm_psns_and_qpns);
	tcase_add_test(t, kernel_cm_replies);
	suite_add_tcase(s, t);
	return s;
}
