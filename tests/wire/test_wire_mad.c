// SPDX-License-Identifier: MIT
/* CM MAD layouts against IBA 12.6 tables 106-120, the header check, rdma_cm's private-data header. */
#include <check.h>
#include <stddef.h>
#include <string.h>

#include "suites.h"
#include "uroce/wire_mad.h"

/*
 * Byte offsets within the CM message (after the 24-byte MAD header),
 * transcribed by hand from IBA Vol 1 tables 106 (REQ), 107 (MRA), 108 (REJ),
 * 110 (REP), 112 (DREQ), 119 (SIDR_REQ) and 120 (SIDR_REP).
 */
static const struct {
	const char	*what;
	size_t		ours, spec;
} offsets[] = {
	{ "REQ service ID", offsetof(struct wire_cm_req, service_id), 8 },
	{ "REQ local CA GUID", offsetof(struct wire_cm_req, local_ca_guid), 16 },
	{ "REQ local Q_Key", offsetof(struct wire_cm_req, local_qkey), 28 },
	{ "REQ local QPN", offsetof(struct wire_cm_req, qpn_rres), 32 },
	{ "REQ starting PSN", offsetof(struct wire_cm_req, psn_misc), 44 },
	{ "REQ partition key", offsetof(struct wire_cm_req, pkey), 48 },
	{ "REQ path MTU", offsetof(struct wire_cm_req, mtu_misc), 50 },
	{ "REQ max CM retries", offsetof(struct wire_cm_req, retries_misc), 51 },
	{ "REQ primary local LID", offsetof(struct wire_cm_req, primary.local_lid), 52 },
	{ "REQ primary local GID", offsetof(struct wire_cm_req, primary.local_gid), 56 },
	{ "REQ primary remote GID", offsetof(struct wire_cm_req, primary.remote_gid), 72 },
	{ "REQ primary flow label", offsetof(struct wire_cm_req, primary.flow_rate), 88 },
	{ "REQ primary hop limit", offsetof(struct wire_cm_req, primary.hop_limit), 93 },
	{ "REQ primary ACK timeout", offsetof(struct wire_cm_req, primary.ack_timeout), 95 },
	{ "REQ alternate local LID", offsetof(struct wire_cm_req, alternate.local_lid), 96 },
	{ "REQ private data", offsetof(struct wire_cm_req, pdata), 140 },
	{ "MRA service timeout", offsetof(struct wire_cm_mra, service_timeout), 9 },
	{ "MRA private data", offsetof(struct wire_cm_mra, pdata), 10 },
	{ "REJ reason", offsetof(struct wire_cm_rej, reason), 10 },
	{ "REJ ARI", offsetof(struct wire_cm_rej, ari), 12 },
	{ "REJ private data", offsetof(struct wire_cm_rej, pdata), 84 },
	{ "REP local QPN", offsetof(struct wire_cm_rep, qpn_vendor), 12 },
	{ "REP starting PSN", offsetof(struct wire_cm_rep, psn_vendor), 20 },
	{ "REP responder resources", offsetof(struct wire_cm_rep, rres), 24 },
	{ "REP RNR retry count", offsetof(struct wire_cm_rep, rnr_misc), 27 },
	{ "REP local CA GUID", offsetof(struct wire_cm_rep, local_ca_guid), 28 },
	{ "REP private data", offsetof(struct wire_cm_rep, pdata), 36 },
	{ "RTU private data", offsetof(struct wire_cm_rtu, pdata), 8 },
	{ "DREQ remote QPN", offsetof(struct wire_cm_dreq, remote_qpn), 8 },
	{ "DREQ private data", offsetof(struct wire_cm_dreq, pdata), 12 },
	{ "SIDR_REQ service ID", offsetof(struct wire_cm_sidr_req, service_id), 8 },
	{ "SIDR_REQ private data", offsetof(struct wire_cm_sidr_req, pdata), 16 },
	{ "SIDR_REP QPN", offsetof(struct wire_cm_sidr_rep, qpn_vendor), 8 },
	{ "SIDR_REP service ID", offsetof(struct wire_cm_sidr_rep, service_id), 12 },
	{ "SIDR_REP Q_Key", offsetof(struct wire_cm_sidr_rep, qkey), 20 },
	{ "SIDR_REP private data", offsetof(struct wire_cm_sidr_rep, pdata), 96 },
};
#define N_OFFSETS (sizeof(offsets) / sizeof(offsets[0]))

START_TEST(test_offsets)
{
	ck_assert_msg(offsets[_i].ours == offsets[_i].spec, "%s at %zu, spec says %zu",
		      offsets[_i].what, offsets[_i].ours, offsets[_i].spec);
}
END_TEST

/* A REQ written byte by byte as table 106 lays it out, read back through the accessors. */
START_TEST(test_req_fields)
{
	uint8_t b[WIRE_MAD_LEN] = { 0 };
	const struct wire_cm_mad *m = (const struct wire_cm_mad *)b;
	uint8_t *d = b + WIRE_MAD_HDR_LEN;

	b[0] = 1;
	b[1] = 0x07;
	b[2] = 2;
	b[3] = 0x03;
	b[16] = 0x00;
	b[17] = 0x10;		/* attribute ID: REQ */
	d[0] = 0x12; d[1] = 0x34; d[2] = 0x56; d[3] = 0x78;
	d[12] = 0x01; d[13] = 0x06; d[14] = 0x4a; d[15] = 0x00;	/* TCP port space, port 0x4a00 */
	d[32] = 0x00; d[33] = 0x01; d[34] = 0x23; d[35] = 16;	/* QPN 0x123, resp res 16 */
	d[39] = 8;						/* initiator depth */
	d[43] = (20 << 3) | (0 << 1);				/* remote CM timeout 20, RC */
	d[44] = 0xab; d[45] = 0xcd; d[46] = 0xef; d[47] = (18 << 3) | 7;
	d[48] = 0xff; d[49] = 0xff;
	d[50] = (3 << 4) | 6;					/* MTU 1024, RNR retry 6 */
	d[51] = (15 << 4) | (1 << 3);				/* 15 retries, SRQ */

	ck_assert_int_eq(wire_cm_mad_check(b, sizeof(b)), WIRE_MAD_DROP_NONE);
	ck_assert_uint_eq(wire_get32(m->u.req.local_comm_id), 0x12345678);
	ck_assert_uint_eq(wire_get64(m->u.req.service_id), 0x0000000001064a00ull);
	ck_assert_uint_eq(wire_hi24(m->u.req.qpn_rres), 0x123);
	ck_assert_uint_eq(wire_lo8(m->u.req.qpn_rres), 16);
	ck_assert_uint_eq(wire_lo8(m->u.req.eecn_idepth), 8);
	ck_assert_uint_eq(wire_cm_req_remote_cm_timeout(&m->u.req), 20);
	ck_assert_uint_eq(wire_cm_req_transport(&m->u.req), 0);
	ck_assert_uint_eq(wire_hi24(m->u.req.psn_misc), 0xabcdef);
	ck_assert_uint_eq(wire_cm_req_local_cm_timeout(&m->u.req), 18);
	ck_assert_uint_eq(wire_cm_req_retry_count(&m->u.req), 7);
	ck_assert_uint_eq(wire_get16(m->u.req.pkey), 0xffff);
	ck_assert_uint_eq(wire_cm_req_mtu(&m->u.req), 3);
	ck_assert_uint_eq(wire_cm_req_rnr_retry(&m->u.req), 6);
	ck_assert_uint_eq(wire_cm_req_max_retries(&m->u.req), 15);
	ck_assert(wire_cm_req_srq(&m->u.req));
	ck_assert_str_eq(wire_cm_attr_name(wire_get16(m->hdr.attr_id)), "REQ");
}
END_TEST

/* Each header rule alone turns a good MAD into its own drop reason. */
START_TEST(test_check_reasons)
{
	struct wire_cm_mad good, bad;

	wire_cm_mad_init(&good, WIRE_CM_DREQ, 0x1122334455667788ull);
	ck_assert_int_eq(wire_cm_mad_check(&good, sizeof(good)), WIRE_MAD_DROP_NONE);
	ck_assert_uint_eq(wire_get64(good.hdr.tid), 0x1122334455667788ull);
	ck_assert_int_eq(wire_cm_mad_check(&good, WIRE_MAD_LEN - 1), WIRE_MAD_DROP_TRUNCATED);
	ck_assert_int_eq(wire_cm_mad_check(&good, 0), WIRE_MAD_DROP_TRUNCATED);

	bad = good;
	bad.hdr.base_version = 2;
	ck_assert_int_eq(wire_cm_mad_check(&bad, sizeof(bad)), WIRE_MAD_DROP_BAD_BASE_VERSION);
	bad = good;
	bad.hdr.mgmt_class = 0x03;	/* subnet administration */
	ck_assert_int_eq(wire_cm_mad_check(&bad, sizeof(bad)), WIRE_MAD_DROP_NOT_CM);
	bad = good;
	bad.hdr.class_version = 1;
	ck_assert_int_eq(wire_cm_mad_check(&bad, sizeof(bad)), WIRE_MAD_DROP_BAD_CLASS_VERSION);
	bad = good;
	bad.hdr.method = 0x81;		/* GetResp */
	ck_assert_int_eq(wire_cm_mad_check(&bad, sizeof(bad)), WIRE_MAD_DROP_BAD_METHOD);
	bad = good;
	wire_set16(&bad.hdr.attr_id, 0x0019);	/* LAP: no alternate paths here */
	ck_assert_int_eq(wire_cm_mad_check(&bad, sizeof(bad)), WIRE_MAD_DROP_UNKNOWN_ATTR);
	for (unsigned r = 0; r < WIRE_MAD_DROP_COUNT; r++) {
		ck_assert_ptr_nonnull(wire_mad_drop_name(r));
		ck_assert_ptr_nonnull(wire_mad_drop_desc(r));
	}
	ck_assert_str_eq(wire_mad_drop_name(WIRE_MAD_DROP_COUNT), "INVALID");
}
END_TEST

/* The class data's length and message fields: the largest legal value passes, one more drops. */
START_TEST(test_check_data_fields)
{
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, WIRE_CM_REJ, 1);
	m.u.rej.ari_len = WIRE_CM_REJ_ARI << 1;
	m.u.rej.msg_rejected = WIRE_CM_MSG_OTHER << 6;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_NONE);
	m.u.rej.ari_len = (WIRE_CM_REJ_ARI + 1) << 1;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_BAD_INFO_LEN);
	m.u.rej.ari_len = 0;
	m.u.rej.msg_rejected = 3 << 6;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_BAD_MSG_REF);

	wire_cm_mad_init(&m, WIRE_CM_MRA, 1);
	m.u.mra.msg_mraed = WIRE_CM_MSG_OTHER << 6;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_NONE);
	m.u.mra.msg_mraed = 3 << 6;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_BAD_MSG_REF);

	wire_cm_mad_init(&m, WIRE_CM_SIDR_REP, 1);
	m.u.sidr_rep.info_len = WIRE_CM_SIDR_INFO;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_NONE);
	m.u.sidr_rep.info_len = WIRE_CM_SIDR_INFO + 1;
	ck_assert_int_eq(wire_cm_mad_check(&m, sizeof(m)), WIRE_MAD_DROP_BAD_INFO_LEN);
}
END_TEST

/* Annex A11.6: version 0, IPv4 in the high nibble and in the last 4 bytes of each address. */
START_TEST(test_cma_hdr)
{
	static const uint8_t v4[36] = {
		0x00, 0x40, 0xc3, 0x50,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 1,
	};
	uint8_t src[16], dst[16], again_src[16], again_dst[16];
	struct wire_cma_hdr h;
	unsigned family;
	uint16_t port;

	ck_assert_int_eq(wire_cma_hdr_parse(v4, sizeof(v4), &family, src, dst, &port),
			 WIRE_MAD_DROP_NONE);
	ck_assert_uint_eq(family, 4);
	ck_assert_uint_eq(port, 50000);
	ck_assert(wire_gid_is_v4mapped(src));
	ck_assert_uint_eq(src[15], 2);
	ck_assert_uint_eq(dst[15], 1);
	wire_cma_hdr_build(&h, family, src, dst, port);
	ck_assert_mem_eq(&h, v4, sizeof(v4));

	ck_assert_int_eq(wire_cma_hdr_parse(v4, sizeof(v4) - 1, &family, src, dst, &port),
			 WIRE_MAD_DROP_BAD_CMA_HDR);
	memcpy(&h, v4, sizeof(h));
	h.ip_version = 0x50;
	ck_assert_int_eq(wire_cma_hdr_parse((const uint8_t *)&h, sizeof(h), &family, src, dst,
					    &port), WIRE_MAD_DROP_BAD_CMA_HDR);
	memcpy(&h, v4, sizeof(h));
	h.cma_version = 1;
	ck_assert_int_eq(wire_cma_hdr_parse((const uint8_t *)&h, sizeof(h), &family, src, dst,
					    &port), WIRE_MAD_DROP_BAD_CMA_HDR);

	/* IPv6 addresses travel whole. */
	for (unsigned i = 0; i < 16; i++) {
		src[i] = (uint8_t)(0xfd + i);
		dst[i] = (uint8_t)(0x20 + i);
	}
	wire_cma_hdr_build(&h, 6, src, dst, 7174);
	ck_assert_uint_eq(h.ip_version, 0x60);
	ck_assert_int_eq(wire_cma_hdr_parse((const uint8_t *)&h, sizeof(h), &family, again_src,
					    again_dst, &port), WIRE_MAD_DROP_NONE);
	ck_assert_uint_eq(family, 6);
	ck_assert_uint_eq(port, 7174);
	ck_assert_mem_eq(again_src, src, 16);
	ck_assert_mem_eq(again_dst, dst, 16);
}
END_TEST

START_TEST(test_service_id)
{
	/* rdma_cm's TCP port space, port 7174 (rping's default). */
	ck_assert_uint_eq(wire_ip_service_id(WIRE_RDMA_PS_TCP, 7174), 0x0000000001061c06ull);
	ck_assert_uint_eq(wire_ip_service_id(WIRE_RDMA_PS_UDP, 7174), 0x0000000001111c06ull);
}
END_TEST

Suite *wire_mad_suite(void)
{
	Suite *s = suite_create("wire_mad");
	TCase *tc = tcase_create("mad");

	tcase_add_loop_test(tc, test_offsets, 0, N_OFFSETS);
	tcase_add_test(tc, test_req_fields);
	tcase_add_test(tc, test_check_reasons);
	tcase_add_test(tc, test_check_data_fields);
	tcase_add_test(tc, test_cma_hdr);
	tcase_add_test(tc, test_service_id);
	suite_add_tcase(s, tc);
	return s;
}
