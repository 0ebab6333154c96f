// SPDX-License-Identifier: MIT
/* Ladder diagrams: PSN following (resends, losses, wraparound, read spans), labels, columns, drawing. */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/inspect_ladder.h"
#include "uroce/wire_mad.h"
#include "wire_testutil.h"

#define HOST_A	1	/* 10.0.0.1 */
#define HOST_B	2
#define HOST_C	3
#define HOST_D	4
#define QP_A	0x0011ab	/* the QP on host A */
#define QP_B	0x0022cd

static struct inspect_ladder lad;
static uint64_t number;
static char *text;

static void setup(void)
{
	inspect_ladder_init(&lad, 0);
	number = 0;
}

static void teardown(void)
{
	inspect_ladder_free(&lad);
	free(text);
	text = NULL;
}

static void gid_of(uint8_t gid[16], int host)
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = 10;
	gid[15] = (uint8_t)host;
}

/* A packet from @from to @to carrying @payload, the other fields from @proto (opcode, psn, headers). */
static void add_pkt_carrying(int from, int to, const struct wire_build_desc *proto,
			     const void *payload, uint32_t payload_len, bool shown)
{
	static uint8_t frame[TEST_MAX_FRAME];
	struct wire_build_desc d = *proto;
	struct inspect_decode_ts ts = { 0, (uint32_t)number * 1000 };
	struct wire_frame fr;
	uint32_t len;

	d.ip_version = 4;
	gid_of(d.src_gid, from);
	gid_of(d.dst_gid, to);
	d.src_mac[5] = (uint8_t)from;
	d.dst_mac[5] = (uint8_t)to;
	len = wire_build(frame, sizeof(frame), &d, payload, payload_len);
	ck_assert_uint_gt(len, 0);
	inspect_decode_frame(&fr, frame, len, len);
	ck_assert_int_eq(fr.drop, WIRE_DROP_NONE);
	ck_assert_int_eq(inspect_ladder_add(&lad, ++number, &ts, &fr, shown), 0);
}

/* The same with a zeroed payload. */
static void add_pkt(int from, int to, const struct wire_build_desc *proto, uint32_t payload_len,
		    bool shown)
{
	static const uint8_t zeros[4096];

	add_pkt_carrying(from, to, proto, zeros, payload_len, shown);
}

/* A SEND ONLY from A to B, broken by @mangle before it is decoded. */
static void add_broken(uint32_t psn, void (*mangle)(uint8_t *frame, uint32_t *len))
{
	static uint8_t frame[TEST_MAX_FRAME];
	struct inspect_decode_ts ts = { 0, 0 };
	struct wire_build_desc d;
	struct wire_frame fr;
	uint32_t len;

	memset(&d, 0, sizeof(d));
	d.opcode = WIRE_OPC_RC | WIRE_OP_SEND_ONLY;
	d.psn = psn;
	d.dest_qp = QP_B;
	d.ip_version = 4;
	gid_of(d.src_gid, HOST_A);
	gid_of(d.dst_gid, HOST_B);
	len = wire_build(frame, sizeof(frame), &d, frame + 2048, 8);
	ck_assert_uint_gt(len, 0);
	mangle(frame, &len);
	inspect_decode_frame(&fr, frame, len, len);
	ck_assert_int_ne(fr.drop, WIRE_DROP_NONE);
	ck_assert_int_eq(inspect_ladder_add(&lad, ++number, &ts, &fr, true), 0);
}

static void request(uint8_t opcode, uint32_t psn, uint32_t payload_len)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = opcode;
	d.psn = psn;
	d.dest_qp = QP_B;
	d.reth.len = payload_len;
	add_pkt(HOST_A, HOST_B, &d, payload_len, true);
}

static void read_request(uint32_t psn, uint32_t len)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = WIRE_OPC_RC | WIRE_OP_READ_REQUEST;
	d.psn = psn;
	d.dest_qp = QP_B;
	d.ackreq = true;
	d.reth.len = len;
	add_pkt(HOST_A, HOST_B, &d, 0, true);
}

static void reply(uint8_t opcode, uint32_t psn, uint8_t syndrome, uint32_t payload_len)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = opcode;
	d.psn = psn;
	d.dest_qp = QP_A;
	d.aeth.syndrome = syndrome;
	add_pkt(HOST_B, HOST_A, &d, payload_len, true);
}

static void finish(void)
{
	ck_assert_int_eq(inspect_ladder_finish(&lad), 0);
}

/* The @i-th row (LOST rows count). */
static const struct inspect_ladder_row *row(size_t i)
{
	ck_assert_uint_lt(i, lad.n_rows);
	return &lad.rows[i];
}

static const char *label(size_t i)
{
	static char buf[512];

	inspect_ladder_label(buf, sizeof(buf), &lad, row(i));
	return buf;
}

#define ck_assert_has(hay, needle) \
	ck_assert_msg(strstr(hay, needle) != NULL, "missing \"%s\" in:\n%.3000s", needle, hay)
#define ck_assert_lacks(hay, needle) \
	ck_assert_msg(strstr(hay, needle) == NULL, "unexpected \"%s\" in:\n%.3000s", needle, hay)

#define SEND_ONLY	(WIRE_OPC_RC | WIRE_OP_SEND_ONLY)
#define WRITE_MIDDLE	(WIRE_OPC_RC | WIRE_OP_WRITE_MIDDLE)
#define ACK		(WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE)
#define NAK_SEQ		(WIRE_AETH_NAK | WIRE_NAK_PSN_SEQ_ERR)

START_TEST(in_sequence_then_gap_then_go_back)
{
	request(SEND_ONLY, 100, 8);
	request(SEND_ONLY, 101, 8);
	request(SEND_ONLY, 104, 8);		/* 102 and 103 never seen */
	reply(ACK, 102, NAK_SEQ, 0);
	request(SEND_ONLY, 102, 8);
	request(SEND_ONLY, 103, 8);
	request(SEND_ONLY, 104, 8);
	request(SEND_ONLY, 105, 8);
	finish();

	ck_assert_uint_eq(lad.n_rows, 9);
	ck_assert_int_eq(row(0)->marks, 0);
	ck_assert_int_eq(row(1)->marks, 0);
	ck_assert_int_eq(row(2)->kind, INSPECT_LADDER_LOST);
	ck_assert_uint_eq(row(2)->psn, 102);
	ck_assert_uint_eq(row(2)->lost_count, 2);
	ck_assert_str_eq(label(2), "psn 102-103 lost (2 packets not in capture)");
	ck_assert_int_eq(row(3)->marks, 0);
	ck_assert_int_eq(row(4)->kind, INSPECT_LADDER_NAK);
	ck_assert_int_eq(row(5)->marks, INSPECT_LADDER_RESEND | INSPECT_LADDER_GO_BACK |
			 INSPECT_LADDER_AFTER_NAK);
	ck_assert_str_eq(label(5), "SEND ONLY psn 102 8B (resent: NAK)");
	ck_assert_int_eq(row(6)->marks, INSPECT_LADDER_RESEND);
	ck_assert_int_eq(row(7)->marks, INSPECT_LADDER_RESEND);
	ck_assert_int_eq(row(8)->marks, 0);	/* 105 is new */
	ck_assert_uint_eq(lad.resends, 3);
	ck_assert_uint_eq(lad.lost_psns, 2);
	ck_assert_uint_eq(lad.count[INSPECT_LADDER_REQUEST], 7);
	ck_assert_uint_eq(lad.count[INSPECT_LADDER_NAK], 1);
}
END_TEST

/* IBA 9.7.2: PSNs are 24 bits; 0xffffff is followed by 0. */
START_TEST(psn_wraparound)
{
	request(SEND_ONLY, 0xfffffe, 8);
	request(SEND_ONLY, 0xffffff, 8);
	request(SEND_ONLY, 0, 8);
	request(SEND_ONLY, 2, 8);		/* 1 lost */
	request(SEND_ONLY, 0xffffff, 8);	/* back across the wrap */
	finish();

	ck_assert_uint_eq(lad.n_rows, 6);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(row((size_t)i)->marks, 0);
	ck_assert_int_eq(row(3)->kind, INSPECT_LADDER_LOST);
	ck_assert_uint_eq(row(3)->psn, 1);
	ck_assert_str_eq(label(3), "psn 1 lost (not in capture)");
	ck_assert_int_eq(row(5)->marks, INSPECT_LADDER_RESEND | INSPECT_LADDER_GO_BACK);
	ck_assert_str_eq(label(5), "SEND ONLY psn 16777215 8B (resent: no NAK)");
}
END_TEST

/* A read request occupies one PSN per response packet (IBA 9.7.3.1.3): no false gaps. */
START_TEST(read_request_spans)
{
	read_request(100, 4096);		/* 100..103 at path MTU 1024 */
	reply(WIRE_OPC_RC | WIRE_OP_READ_RESP_FIRST, 100, 0x1f, 1024);
	request(SEND_ONLY, 104, 8);
	read_request(105, 5000);		/* 105..109 */
	read_request(110, 0);			/* a zero-length read takes one PSN */
	request(SEND_ONLY, 111, 8);
	request(SEND_ONLY, 113, 8);		/* 112 lost */
	finish();

	ck_assert_uint_eq(lad.pmtu, 1024);
	ck_assert_uint_eq(lad.n_rows, 8);
	for (int i = 0; i < 6; i++)
		ck_assert_msg(row((size_t)i)->kind != INSPECT_LADDER_LOST && !row((size_t)i)->marks,
			      "row %d: %s", i, label((size_t)i));
	ck_assert_int_eq(row(6)->kind, INSPECT_LADDER_LOST);
	ck_assert_uint_eq(row(6)->psn, 112);
}
END_TEST

/* Without a FIRST or MIDDLE packet the path MTU is unknown: no gap is claimed after a read. */
START_TEST(read_span_unknown)
{
	read_request(10, 4096);
	request(SEND_ONLY, 14, 8);
	request(SEND_ONLY, 16, 8);		/* but a gap after a send still shows */
	finish();

	ck_assert_uint_eq(lad.pmtu, 0);
	ck_assert_uint_eq(lad.n_rows, 4);
	ck_assert_int_eq(row(1)->kind, INSPECT_LADDER_REQUEST);
	ck_assert_int_eq(row(2)->kind, INSPECT_LADDER_LOST);
	ck_assert_uint_eq(row(2)->psn, 15);
}
END_TEST

START_TEST(resend_reasons)
{
	uint8_t rnr = WIRE_AETH_RNR_NAK | 14;	/* table 45: 1.28 ms */

	request(SEND_ONLY, 7, 8);
	reply(ACK, 7, rnr, 0);
	request(SEND_ONLY, 7, 8);
	reply(ACK, 7, 0x1f, 0);
	request(SEND_ONLY, 8, 8);
	request(SEND_ONLY, 8, 8);		/* no NAK came back: a timeout */
	finish();

	ck_assert_int_eq(row(1)->kind, INSPECT_LADDER_RNR);
	ck_assert_str_eq(label(1), "RNR NAK psn 7 wait 1.28ms msn 0");
	ck_assert_int_eq(row(2)->marks & INSPECT_LADDER_AFTER_RNR, INSPECT_LADDER_AFTER_RNR);
	ck_assert_str_eq(label(2), "SEND ONLY psn 7 8B (resent: RNR)");
	ck_assert_int_eq(row(5)->marks, INSPECT_LADDER_RESEND | INSPECT_LADDER_GO_BACK);
	ck_assert_has(label(5), "(resent: no NAK)");
}
END_TEST

/* A duplicate read is answered again, a duplicate request ACKed again (C9-105). */
START_TEST(repeated_responses)
{
	uint8_t first = WIRE_OPC_RC | WIRE_OP_READ_RESP_FIRST, last = WIRE_OPC_RC | WIRE_OP_READ_RESP_LAST;

	reply(first, 10, 0x1f, 1024);
	reply(last, 11, 0x1f, 100);
	reply(first, 10, 0x1f, 1024);
	reply(ACK, 12, 0x1f, 0);
	reply(ACK, 12, 0x1f, 0);
	reply(ACK, 13, NAK_SEQ, 0);		/* acknowledges 12: no repeat mark on a NAK */
	reply(ACK, 13, 0x1f, 0);
	finish();

	ck_assert_int_eq(row(0)->marks, 0);
	ck_assert_int_eq(row(1)->marks, 0);
	ck_assert_int_eq(row(2)->marks, INSPECT_LADDER_REPEAT);
	ck_assert_has(label(2), "(again)");
	ck_assert_int_eq(row(3)->marks, 0);
	ck_assert_int_eq(row(4)->marks, INSPECT_LADDER_REPEAT);
	ck_assert_int_eq(row(5)->marks, 0);
	ck_assert_int_eq(row(6)->marks, 0);
}
END_TEST

/* A UD QP numbers its packets across destinations (one PSN sequence per source QP). */
START_TEST(ud_sequence_per_source_qp)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
	d.deth.qkey = 0x11111111;
	d.deth.src_qp = 0x777;
	for (uint32_t i = 0; i < 4; i++) {
		d.psn = 50 + i;
		d.dest_qp = 0x100 + i % 2;
		add_pkt(HOST_A, i % 2 ? HOST_B : HOST_C, &d, 16, true);
	}
	finish();

	ck_assert_uint_eq(lad.n_rows, 4);
	ck_assert_uint_eq(lad.lost_psns, 0);
	ck_assert_str_eq(label(0), "UD SEND ONLY psn 50 qkey 0x11111111 src qp 0x777 16B");
	ck_assert_uint_eq(lad.n_columns, 3);
	ck_assert_uint_eq(lad.hosts[row(0)->src].n_qpn, 1);	/* the sender's QP from the DETH */
}
END_TEST

/* Frames before the range feed the bookkeeping but make no column and no count. */
START_TEST(hidden_rows)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = SEND_ONLY;
	d.dest_qp = QP_B;
	d.psn = 5;
	add_pkt(HOST_C, HOST_D, &d, 8, false);
	d.psn = 6;
	add_pkt(HOST_A, HOST_B, &d, 8, false);
	d.psn = 6;
	add_pkt(HOST_A, HOST_B, &d, 8, true);
	finish();

	ck_assert_uint_eq(lad.n_columns, 2);
	ck_assert_int_eq(lad.hosts[row(0)->src].column, -1);
	ck_assert_int_eq(lad.hosts[row(2)->src].column, 0);
	ck_assert_int_eq(lad.hosts[row(2)->dst].column, 1);
	ck_assert_uint_eq(lad.count[INSPECT_LADDER_REQUEST], 1);
	ck_assert_int_eq(row(2)->marks & INSPECT_LADDER_RESEND, INSPECT_LADDER_RESEND);
	ck_assert_uint_eq(lad.frames, 3);
	ck_assert_uint_eq(lad.shown_frames, 1);
}
END_TEST

/* Every opcode's label names what its headers carry, and nothing they do not. */
START_TEST(label_per_opcode)
{
	const struct wire_opcode_info *op = &wire_opcode[_i];
	struct wire_build_desc d;
	char psn[32];
	const char *s;

	if (!op->name)
		return;
	memset(&d, 0, sizeof(d));
	d.opcode = (uint8_t)_i;
	d.psn = 4242;
	d.dest_qp = QP_B;
	d.reth.len = 64;
	d.reth.rkey = 0xabcd;
	d.atomic.rkey = 0xabcd;
	d.imm = 0x1234;
	d.ieth_rkey = 0x5678;
	d.deth.qkey = 0x99;
	d.aeth.syndrome = 0x1f;
	/* 256: a whole path MTU, which FIRST and MIDDLE packets must carry. */
	add_pkt(HOST_A, HOST_B, &d, (op->flags & WIRE_OPF_PAYLOAD) ? 256 : 0, true);
	finish();
	s = label(0);
	snprintf(psn, sizeof(psn), " psn 4242");
	if (op->flags & WIRE_OPF_CNP) {
		ck_assert_str_eq(s, "CNP qp 0x22cd");
		ck_assert_int_eq(row(0)->kind, INSPECT_LADDER_CNP);
		return;
	}
	ck_assert_has(s, psn);
	ck_assert_int_eq(strncmp(s, "UC ", 3) == 0, !!(op->flags & WIRE_OPF_UC));
	ck_assert_int_eq(strncmp(s, "UD ", 3) == 0, !!(op->flags & WIRE_OPF_UD));
	ck_assert_int_eq(strstr(s, "imm 0x1234") != NULL, !!(op->hdrs & WIRE_HDR_IMMDT));
	ck_assert_int_eq(strstr(s, "inv rkey 0x5678") != NULL, !!(op->hdrs & WIRE_HDR_IETH));
	ck_assert_int_eq(strstr(s, "rkey 0xabcd") != NULL,
			 !!(op->hdrs & (WIRE_HDR_RETH | WIRE_HDR_ATOMIC_ETH)));
	ck_assert_int_eq(strstr(s, " len 64") != NULL, !!(op->hdrs & WIRE_HDR_RETH));
	ck_assert_int_eq(strstr(s, " msn ") != NULL, !!(op->hdrs & WIRE_HDR_AETH));
	ck_assert_int_eq(strstr(s, "qkey 0x99") != NULL, !!(op->hdrs & WIRE_HDR_DETH));
	ck_assert_int_eq(strstr(s, " 256B") != NULL, !!(op->flags & WIRE_OPF_PAYLOAD));
	ck_assert_int_eq(row(0)->kind, (op->flags & WIRE_OPF_REQUEST) ? INSPECT_LADDER_REQUEST :
			 (_i & 0x1f) == WIRE_OP_ACKNOWLEDGE ? INSPECT_LADDER_ACK : INSPECT_LADDER_RESPONSE);
}
END_TEST

START_TEST(nak_labels)
{
	static const struct { uint8_t code; const char *text; } naks[] = {
		{ WIRE_NAK_PSN_SEQ_ERR,		"NAK seq error psn 9 msn 3" },
		{ WIRE_NAK_INVALID_REQ,		"NAK invalid request psn 9 msn 3" },
		{ WIRE_NAK_REM_ACCESS_ERR,	"NAK remote access error psn 9 msn 3" },
		{ WIRE_NAK_REM_OP_ERR,		"NAK remote op error psn 9 msn 3" },
		{ WIRE_NAK_INVALID_RD_REQ,	"NAK invalid RD request psn 9 msn 3" },
	};
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = ACK;
	d.psn = 9;
	d.dest_qp = QP_A;
	d.aeth.msn = 3;
	for (size_t i = 0; i < sizeof(naks) / sizeof(naks[0]); i++) {
		d.aeth.syndrome = WIRE_AETH_NAK | naks[i].code;
		add_pkt(HOST_B, HOST_A, &d, 0, true);
	}
	finish();
	for (size_t i = 0; i < sizeof(naks) / sizeof(naks[0]); i++) {
		ck_assert_int_eq(row(i)->kind, INSPECT_LADDER_NAK);
		ck_assert_str_eq(label(i), naks[i].text);
	}
	ck_assert_uint_eq(lad.count[INSPECT_LADDER_NAK], 5);
}
END_TEST

/*
 * Selective repeat: the NAK names the hole and how many PSNs are missing; the
 * requester resends the hole alone and goes on where it left off, which is no loss.
 */
START_TEST(selective_nak_and_resume)
{
	struct wire_build_desc d;

	request(SEND_ONLY, 100, 8);
	request(SEND_ONLY, 101, 8);
	request(SEND_ONLY, 103, 8);		/* 102 never seen */
	request(SEND_ONLY, 104, 8);
	memset(&d, 0, sizeof(d));
	d.opcode = ACK;
	d.psn = 102;
	d.dest_qp = QP_A;
	d.aeth.syndrome = NAK_SEQ;
	d.aeth.msn = 1;
	d.sr_nak = true;
	add_pkt(HOST_B, HOST_A, &d, 0, true);
	request(SEND_ONLY, 102, 8);
	request(SEND_ONLY, 105, 8);
	finish();

	ck_assert_uint_eq(lad.n_rows, 8);
	ck_assert_int_eq(row(2)->kind, INSPECT_LADDER_LOST);
	ck_assert_str_eq(label(2), "psn 102 lost (not in capture)");
	ck_assert_str_eq(label(5), "NAK selective psn 102 missing 1");
	ck_assert_str_eq(label(6), "SEND ONLY psn 102 8B (resent: NAK)");
	ck_assert_int_eq(row(7)->marks, 0);
	ck_assert_str_eq(label(7), "SEND ONLY psn 105 8B");
	ck_assert_uint_eq(lad.lost_psns, 1);
	ck_assert_uint_eq(lad.resends, 1);
}
END_TEST

static void flip_icrc(uint8_t *frame, uint32_t *len)
{
	frame[*len - 1] ^= 1;
}

/* Cut inside the BTH: the UDP header says more than the frame holds. */
static void cut_in_bth(uint8_t *frame, uint32_t *len)
{
	(void)frame;
	*len = 14 + 20 + 8 + 6;
}

/* A frame a receiver drops is drawn with its reason and takes no part in the PSN bookkeeping. */
START_TEST(bad_frames)
{
	request(SEND_ONLY, 5, 8);
	add_broken(6, flip_icrc);
	add_broken(7, cut_in_bth);
	request(SEND_ONLY, 6, 8);
	finish();

	ck_assert_uint_eq(lad.n_rows, 4);
	ck_assert_int_eq(row(1)->kind, INSPECT_LADDER_BAD);
	ck_assert_str_eq(label(1), "SEND ONLY psn 6 DROP BAD_ICRC");
	ck_assert_int_eq(row(2)->kind, INSPECT_LADDER_BAD);
	ck_assert_msg(!strncmp(label(2), "RoCE v2 DROP ", 13), "%s", label(2));
	ck_assert_int_eq(row(3)->marks, 0);		/* 6 is new: the bad copy did not count */
	ck_assert_uint_eq(lad.count[INSPECT_LADDER_BAD], 2);
}
END_TEST

static const char *render_text(unsigned width)
{
	size_t size;
	FILE *out;

	free(text);
	text = NULL;
	out = open_memstream(&text, &size);
	ck_assert_ptr_nonnull(out);
	inspect_ladder_print_text(out, &lad, width, "title", "a note");
	ck_assert_int_eq(fclose(out), 0);
	return text;
}

/* Lines never exceed the width; arrows point the right way and stop at the lifelines. */
START_TEST(text_drawing)
{
	static const unsigned widths[] = { 60, 80, 100, 160 };
	const char *t;

	request(WIRE_OPC_RC | WIRE_OP_WRITE_FIRST, 1, 1024);
	request(WRITE_MIDDLE, 2, 1024);
	request(WIRE_OPC_RC | WIRE_OP_WRITE_LAST, 4, 10);
	reply(ACK, 3, NAK_SEQ, 0);
	request(WIRE_OPC_RC | WIRE_OP_WRITE_LAST, 3, 10);
	finish();
	for (size_t w = 0; w < sizeof(widths) / sizeof(widths[0]); w++) {
		const char *line;

		t = render_text(widths[w]);
		for (line = t; *line;) {
			const char *nl = strchr(line, '\n');

			ck_assert_ptr_nonnull(nl);
			ck_assert_msg((unsigned)(nl - line) <= widths[w], "line longer than %u: %.*s",
				      widths[w], (int)(nl - line), line);
			line = nl + 1;
		}
	}
	t = render_text(100);
	ck_assert_has(t, "title\n");
	ck_assert_has(t, "10.0.0.1");
	ck_assert_has(t, "qp 0x0022cd");
	ck_assert_has(t, "|-- WRITE FIRST psn 1 rkey 0x0 len 1024 1024B ---");
	ck_assert_has(t, "|-- psn 3 lost (not in capture) --");
	ck_assert_has(t, "--X          ");	/* half way, not up to the receiver */
	ck_assert_has(t, "|<~ NAK seq error psn 3 msn 0 ~~~");
	ck_assert_has(t, "|== WRITE LAST psn 3 10B (resent: NAK) ===");
	ck_assert_has(t, "=>|\n");
	ck_assert_has(t, "5 arrows: 4 requests (1 resent), 1 NAK; 1 PSN lost before the capture point\n");
	ck_assert_has(t, "a note\n");
}
END_TEST

START_TEST(svg_document)
{
	size_t size, groups = 0;
	const char *p;
	FILE *out;

	request(SEND_ONLY, 1, 8);
	reply(ACK, 1, 0x1f, 0);
	finish();
	out = open_memstream(&text, &size);
	ck_assert_ptr_nonnull(out);
	inspect_ladder_print_svg(out, &lad, "a <title> & more", NULL);
	ck_assert_int_eq(fclose(out), 0);
	ck_assert_has(text, "<?xml version=\"1.0\"");
	ck_assert_has(text, "a &lt;title&gt; &amp; more");
	ck_assert_has(text, "<g class=\"pkt request\" data-frame=\"1\"><title>frame 1: 10.0.0.1.");
	ck_assert_has(text, "&gt; 10.0.0.2.4791: RC_SEND_ONLY qp 0x0022cd psn 1");
	ck_assert_has(text, "<g class=\"pkt ack\" data-frame=\"2\">");
	for (p = text; (p = strstr(p, "<g class=\"pkt ")); p++)
		groups++;
	ck_assert_uint_eq(groups, 2);
	ck_assert_has(text, "</svg>\n");
}
END_TEST

/* A CM MAD from @from to the other host's QP1 with @psn, in a UD SEND with @qkey. */
static void cm_mad_sent(int from, const struct wire_cm_mad *m, uint32_t qkey, uint32_t psn)
{
	struct wire_build_desc d;

	memset(&d, 0, sizeof(d));
	d.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
	d.psn = psn;
	d.dest_qp = WIRE_GSI_QPN;
	d.deth.qkey = qkey;
	d.deth.src_qp = WIRE_GSI_QPN;
	add_pkt_carrying(from, from == HOST_A ? HOST_B : HOST_A, &d, m, sizeof(*m), true);
}

static uint32_t cm_psn[HOST_D + 1];	/* each host's QP1 numbers its own */

/* The same in sequence, with the GSI's Q_Key or @qkey. */
static void cm_mad(int from, const struct wire_cm_mad *m, uint32_t qkey)
{
	cm_mad_sent(from, m, qkey, cm_psn[from]++);
}

static void cm_mad_psn(int from, const struct wire_cm_mad *m, uint32_t psn)
{
	cm_mad_sent(from, m, WIRE_GSI_QKEY, psn);
}

static struct wire_cm_mad cm_msg(enum wire_cm_attr attr, uint64_t tid, uint32_t local_id,
				 uint32_t remote_id)
{
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, attr, tid);
	wire_set32(&m.u.rtu.local_comm_id, local_id);
	wire_set32(&m.u.rtu.remote_comm_id, remote_id);
	return m;
}

/* rdma_cm's messages are named with what they say of the connection; a repeated one is marked. */
START_TEST(cm_messages)
{
	struct wire_cm_mad req = cm_msg(WIRE_CM_REQ, 0x77, 0xa1, 0);
	struct wire_cm_mad rep = cm_msg(WIRE_CM_REP, 0x88, 0xb2, 0xa1);
	struct wire_cm_mad rej = cm_msg(WIRE_CM_REJ, 0x99, 0xb3, 0xa4);
	struct wire_cm_mad dreq = cm_msg(WIRE_CM_DREQ, 0x78, 0xa1, 0xb2);
	struct wire_cm_mad sreq, srep, bad;

	wire_set64(&req.u.req.service_id, wire_ip_service_id(WIRE_RDMA_PS_TCP, 7174));
	wire_set_hi24_lo8(&req.u.req.qpn_rres, 0x11, 1);
	wire_set_hi24_lo8(&req.u.req.psn_misc, 1000, 0);
	wire_set_hi24_lo8(&rep.u.rep.qpn_vendor, 0x22, 0);
	wire_set_hi24_lo8(&rep.u.rep.psn_vendor, 2000, 0);
	wire_set16(&rej.u.rej.reason, WIRE_CM_REJ_INVALID_SERVICE_ID);
	wire_set_hi24_lo8(&dreq.u.dreq.remote_qpn, 0x22, 0);
	wire_cm_mad_init(&sreq, WIRE_CM_SIDR_REQ, 0x55);
	wire_set32(&sreq.u.sidr_req.request_id, 0xc5);
	wire_set64(&sreq.u.sidr_req.service_id, wire_ip_service_id(WIRE_RDMA_PS_UDP, 7174));
	wire_cm_mad_init(&srep, WIRE_CM_SIDR_REP, 0x55);
	wire_set32(&srep.u.sidr_rep.request_id, 0xc5);
	srep.u.sidr_rep.status = WIRE_SIDR_UNSUPPORTED;
	wire_set64(&srep.u.sidr_rep.service_id, 0x1234);
	bad = req;
	bad.hdr.base_version = 2;

	cm_mad(HOST_A, &req, WIRE_GSI_QKEY);
	cm_mad(HOST_A, &req, WIRE_GSI_QKEY);			/* the CM's retransmission */
	cm_mad(HOST_B, &rep, WIRE_GSI_QKEY);
	cm_mad(HOST_B, &rej, WIRE_GSI_QKEY);
	cm_mad(HOST_A, &dreq, WIRE_GSI_QKEY);
	cm_mad(HOST_A, &sreq, WIRE_GSI_QKEY);
	cm_mad(HOST_B, &srep, WIRE_GSI_QKEY);
	cm_mad(HOST_A, &req, 0x1234);				/* not the GSI's Q_Key */
	cm_mad(HOST_A, &bad, WIRE_GSI_QKEY);			/* not a MAD the CM takes */
	cm_mad_psn(HOST_A, &dreq, 1000);	/* another process's QP1: its own PSNs */
	finish();

	ck_assert_str_eq(label(0), "CM REQ comm 0xa1 tcp port 7174 qpn 0x11 psn 1000");
	ck_assert_str_eq(label(1), "CM REQ comm 0xa1 tcp port 7174 qpn 0x11 psn 1000 (again)");
	ck_assert_str_eq(label(2), "CM REP comm 0xb2 to 0xa1 qpn 0x22 psn 2000");
	ck_assert_str_eq(label(3), "CM REJ comm 0xb3 to 0xa4 reason 8 (invalid service ID)");
	ck_assert_str_eq(label(4), "CM DREQ comm 0xa1 to 0xb2 qpn 0x22");
	ck_assert_str_eq(label(5), "CM SIDR_REQ id 0xc5 udp port 7174");
	ck_assert_str_eq(label(6), "CM SIDR_REP id 0xc5 sid 0x1234 status 1");
	ck_assert_has(label(7), "UD SEND ONLY");
	ck_assert_has(label(8), "UD SEND ONLY");
	ck_assert_str_eq(label(9), "CM DREQ comm 0xa1 to 0xb2 qpn 0x22 (again)");
	ck_assert_uint_eq(lad.cm_msgs, 8);
	ck_assert_uint_eq(lad.lost_psns, 0);
	ck_assert_uint_eq(lad.resends, 0);
}
END_TEST

Suite *inspect_ladder_suite(void);

Suite *inspect_ladder_suite(void)
{
	Suite *s = suite_create("inspect_ladder");
	TCase *t = tcase_create("ladder");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, in_sequence_then_gap_then_go_back);
	tcase_add_test(t, psn_wraparound);
	tcase_add_test(t, read_request_spans);
	tcase_add_test(t, read_span_unknown);
	tcase_add_test(t, resend_reasons);
	tcase_add_test(t, repeated_responses);
	tcase_add_test(t, ud_sequence_per_source_qp);
	tcase_add_test(t, hidden_rows);
	tcase_add_loop_test(t, label_per_opcode, 0, 256);
	tcase_add_test(t, nak_labels);
	tcase_add_test(t, selective_nak_and_resume);
	tcase_add_test(t, bad_frames);
	tcase_add_test(t, text_drawing);
	tcase_add_test(t, svg_document);
	tcase_add_test(t, cm_messages);
	suite_add_tcase(s, t);
	return s;
}
