// SPDX-License-Identifier: MIT
/* Multicast: UD QPs attached to a group receive its datagrams (DestQP 0xffffff), from the wire and from their own engine. */
#include <check.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS	100000000ull
#define QKEY	0x01234567u	/* rdma_cm's RDMA_UDP_QKEY */
#define MEMBERS	3		/* side 1 */

/* ::ffff:224.1.2.3 and ff0e::1234 */
static const uint8_t group4[16] = { [10] = 0xff, [11] = 0xff, [12] = 224, [13] = 1, [14] = 2, [15] = 3 };
static const uint8_t group6[16] = { 0xff, 0x0e, [14] = 0x12, [15] = 0x34 };

struct mc {
	struct h_env	e;
	struct rc_qp	*tx;			/* side 0 */
	struct rc_qp	*rx[MEMBERS];		/* side 1 */
	uint8_t		buf[2][4096];
	struct rc_mr	*mr[2];
};

static void mc_init(struct mc *m)
{
	struct h_qp_opts qo = { .type = IBV_QPT_UD };
	struct h_conn c = { .qkey = QKEY };

	h_env_init(&m->e, NULL);
	for (int s = 0; s < 2; s++) {
		memset(m->buf[s], 0, sizeof(m->buf[s]));
		m->mr[s] = rc_mr_reg(m->e.pd[s], m->buf[s], sizeof(m->buf[s]),
				     (uintptr_t)m->buf[s], IBV_ACCESS_LOCAL_WRITE);
	}
	m->tx = h_qp(&m->e, 0, &qo);
	h_connect_one(m->tx, 1, 0, 0, 0x100, &c);
	for (int i = 0; i < MEMBERS; i++) {
		m->rx[i] = h_qp(&m->e, 1, &qo);
		h_connect_one(m->rx[i], 0, 0, 0, 0x100, &c);
	}
}

static void mc_fini(struct mc *m)
{
	ck_assert_int_eq(rc_qp_destroy(m->tx), 0);
	for (int i = 0; i < MEMBERS; i++)
		if (m->rx[i])
			ck_assert_int_eq(rc_qp_destroy(m->rx[i]), 0);
	for (int s = 0; s < 2; s++)
		ck_assert_int_eq(rc_mr_dereg(m->mr[s]), 0);
	h_env_fini(&m->e);
}

/* One datagram of @len bytes from side 0's QP to @group, through an AH of its own. */
static void mc_send(struct mc *m, const uint8_t group[16], uint32_t len, uint32_t qkey)
{
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_sge s = { (uintptr_t)m->buf[0], len, rc_mr_lkey(m->mr[0]) };
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &s, .num_sge = 1, .opcode = IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
	}, *bad;
	struct rc_ah *ah;
	struct ibv_wc wc;

	aa.grh.sgid_index = group == group6 ? 1 : 0;
	aa.grh.hop_limit = 1;
	memcpy(aa.grh.dgid.raw, group, 16);
	ah = rc_ah_create(m->e.pd[0], &aa);
	ck_assert_ptr_nonnull(ah);
	wr.wr.ud.ah = rc_ah_ibv(ah);
	wr.wr.ud.remote_qpn = WIRE_MCAST_QPN;
	wr.wr.ud.remote_qkey = qkey;
	ck_assert_int_eq(rc_post_send(m->tx, &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&m->e, m->e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	h_run(&m->e, RUN_NS / 10);
	ck_assert_int_eq(rc_ah_destroy(ah), 0);
}

/* A receive of up to 40 + 512 bytes on member @i, into its own part of side 1's buffer. */
static void mc_recv(struct mc *m, int i)
{
	struct ibv_sge s = { (uintptr_t)m->buf[1] + (uint32_t)i * 1024, 40 + 512, rc_mr_lkey(m->mr[1]) };

	ck_assert_int_eq(h_post_recv(m->rx[i], (uint64_t)i, &s, 1), 0);
}

/* Completions on side 1's CQ: which members got one (bit i), each checked. */
static unsigned mc_received(struct mc *m, uint32_t len)
{
	struct ibv_wc wc[MEMBERS + 1];
	unsigned got = 0;
	int n = rc_cq_poll(m->e.cq[1], MEMBERS + 1, wc);

	for (int k = 0; k < n; k++) {
		ck_assert_int_eq(wc[k].status, IBV_WC_SUCCESS);
		ck_assert_uint_eq(wc[k].byte_len, 40 + len);
		ck_assert_uint_eq(wc[k].src_qp, rc_qp_num(m->tx));
		ck_assert_uint_eq(wc[k].qp_num, rc_qp_num(m->rx[wc[k].wr_id]));
		ck_assert_int_eq(memcmp(m->buf[1] + wc[k].wr_id * 1024 + 40, m->buf[0], len), 0);
		got |= 1u << wc[k].wr_id;
	}
	return got;
}

/* IPv4 and IPv6 groups: every member gets the datagram, sent once to the group's MAC, DestQP 0xffffff. */
START_TEST(members_receive)
{
	const uint8_t *group = _i ? group6 : group4;
	static const uint8_t mac4[6] = { 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 };
	static const uint8_t mac6[6] = { 0x33, 0x33, 0x00, 0x00, 0x12, 0x34 };
	const struct h_frame *f;
	struct h_cap cap;
	struct mc m;

	mc_init(&m);
	h_capture(&m.e, &cap);
	for (int i = 0; i < MEMBERS - 1; i++) {
		ck_assert_int_eq(rc_mcast_attach(m.rx[i], group), 0);
		mc_recv(&m, i);
	}
	mc_recv(&m, MEMBERS - 1);	/* not a member: gets nothing */
	for (int i = 0; i < 100; i++)
		m.buf[0][i] = (uint8_t)(i * 7);
	mc_send(&m, group, 100, QKEY);
	ck_assert_uint_eq(mc_received(&m, 100), (1u << (MEMBERS - 1)) - 1);
	ck_assert_uint_eq(h_cap_count(&cap, 0, WIRE_OPC_UD | WIRE_OP_SEND_ONLY), 1);
	f = h_cap_find(&cap, 0, WIRE_OPC_UD | WIRE_OP_SEND_ONLY, 0);
	ck_assert_uint_eq(f->dest_qp, WIRE_MCAST_QPN);
	ck_assert_mem_eq(f->dst_mac, _i ? mac6 : mac4, 6);
	mc_fini(&m);
}
END_TEST

/* A member whose Q_Key differs drops it; the others still receive. */
START_TEST(member_qkey)
{
	struct ibv_qp_attr a = { .qkey = QKEY + 1 };
	struct mc m;

	mc_init(&m);
	ck_assert_int_eq(rc_qp_modify(m.rx[1], &a, IBV_QP_QKEY), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(rc_mcast_attach(m.rx[i], group4), 0);
		mc_recv(&m, i);
	}
	mc_send(&m, group4, 10, QKEY);
	ck_assert_uint_eq(mc_received(&m, 10), 1u);
	ck_assert_uint_eq(h_qp_counters(m.rx[1]).rc_drops.count[RC_DROP_BAD_QKEY], 1);
	mc_fini(&m);
}
END_TEST

/* Detached, destroyed, or never joined: nothing delivered, the drop counted. */
START_TEST(leave_and_unknown_group)
{
	struct rc_counters n;
	struct mc m;

	mc_init(&m);
	for (int i = 0; i < MEMBERS; i++) {
		ck_assert_int_eq(rc_mcast_attach(m.rx[i], group4), 0);
		mc_recv(&m, i);
	}
	ck_assert_int_eq(rc_mcast_detach(m.rx[0], group4), 0);
	ck_assert_int_eq(rc_mcast_detach(m.rx[0], group4), -EINVAL);
	ck_assert_int_eq(rc_qp_destroy(m.rx[2]), 0);	/* leaves its group */
	m.rx[2] = NULL;
	mc_send(&m, group4, 10, QKEY);
	ck_assert_uint_eq(mc_received(&m, 10), 1u << 1);
	ck_assert_int_eq(rc_mcast_detach(m.rx[1], group4), 0);
	mc_recv(&m, 1);
	mc_send(&m, group4, 10, QKEY);
	ck_assert_uint_eq(mc_received(&m, 10), 0);
	rc_engine_counters(m.e.eng[1], &n);
	ck_assert_uint_eq(n.rc_drops.count[RC_DROP_NO_MCAST_GROUP], 1);
	mc_fini(&m);
}
END_TEST

/* The sender's own QP, attached, receives its datagram too (from its own engine), once on the wire. */
START_TEST(sender_is_a_member)
{
	struct ibv_sge s = { 0, 40 + 512, 0 };
	struct ibv_wc wc[2];
	struct h_cap cap;
	struct mc m;
	int n;

	mc_init(&m);
	h_capture(&m.e, &cap);
	s.addr = (uintptr_t)m.buf[0] + 2048;
	s.lkey = rc_mr_lkey(m.mr[0]);
	ck_assert_int_eq(rc_mcast_attach(m.tx, group4), 0);
	ck_assert_int_eq(h_post_recv(m.tx, 9, &s, 1), 0);
	ck_assert_int_eq(rc_mcast_attach(m.rx[0], group4), 0);
	mc_recv(&m, 0);
	memset(m.buf[0], 0x5a, 64);
	mc_send(&m, group4, 64, QKEY);
	ck_assert_uint_eq(mc_received(&m, 64), 1u);
	/* side 0's CQ: the send's completion was taken by mc_send(); now the receive's */
	n = rc_cq_poll(m.e.cq[0], 2, wc);
	ck_assert_int_eq(n, 1);
	ck_assert_uint_eq(wc[0].wr_id, 9);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc[0].src_qp, rc_qp_num(m.tx));
	ck_assert_int_eq(memcmp(m.buf[0] + 2048 + 40, m.buf[0], 64), 0);
	ck_assert_uint_eq(h_cap_count(&cap, 0, 0xffff), 1);
	mc_fini(&m);
}
END_TEST

/* What may join: UD QPs, multicast GIDs; a second attach is the same one; the table has a size. */
START_TEST(attach_rules)
{
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	uint8_t unicast[16] = { [10] = 0xff, [11] = 0xff, [12] = 10, [15] = 1 }, g[16];
	struct rc_qp *rc;
	struct mc m;

	mc_init(&m);
	rc = h_qp(&m.e, 1, &qo);
	ck_assert_int_eq(rc_mcast_attach(rc, group4), -EINVAL);
	ck_assert_int_eq(rc_mcast_attach(m.rx[0], unicast), -EINVAL);
	ck_assert_int_eq(rc_mcast_attach(m.rx[0], group4), 0);
	ck_assert_int_eq(rc_mcast_attach(m.rx[0], group4), 1);
	ck_assert_int_eq(rc_mcast_detach(m.rx[0], group4), 0);
	ck_assert_int_eq(rc_mcast_detach(m.rx[0], group4), -EINVAL);
	memcpy(g, group6, 16);
	for (int i = 0; i < RC_MAX_MCAST_GROUPS; i++) {
		g[15] = (uint8_t)i;
		ck_assert_int_eq(rc_mcast_attach(m.rx[i % MEMBERS], g), 0);
	}
	g[15] = 0xff;
	ck_assert_int_eq(rc_mcast_attach(m.rx[0], g), -ENOMEM);
	ck_assert_int_eq(rc_qp_destroy(rc), 0);
	mc_fini(&m);
}
END_TEST

Suite *rc_mcast_suite(void);

Suite *rc_mcast_suite(void)
{
	Suite *s = suite_create("rc_mcast");
	TCase *tc = tcase_create("mcast");

	tcase_add_loop_test(tc, members_receive, 0, 2);
	tcase_add_test(tc, member_qkey);
	tcase_add_test(tc, leave_and_unknown_group);
	tcase_add_test(tc, sender_is_a_member);
	tcase_add_test(tc, attach_rules);
	suite_add_tcase(s, tc);
	return s;
}
