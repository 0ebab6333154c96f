// SPDX-License-Identifier: MIT
/* UC and UD end to end, the GRH of UD receives (IPv4 and IPv6), same-host loopback, ECN/CNP. */
#include <arpa/inet.h>
#include <check.h>
#include <endian.h>
#include <string.h>
#include <sys/mman.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS	100000000ull
#define QKEY	0x11223344u
#define OP_UC(x) (WIRE_OPC_UC | WIRE_OP_##x)

struct ud {
	struct h_env	e;
	struct rc_qp	*qp[2];
	uint8_t		buf[2][8192];
	struct rc_mr	*mr[2];
	struct rc_ah	*ah;
};

static void ud_init(struct ud *u, int gid_index, const struct h_opts *eo)
{
	struct h_qp_opts qo = { .type = IBV_QPT_UD };
	struct h_conn c = { .qkey = QKEY };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };

	h_env_init(&u->e, eo);
	for (int s = 0; s < 2; s++) {
		memset(u->buf[s], 0, sizeof(u->buf[s]));
		u->mr[s] = rc_mr_reg(u->e.pd[s], u->buf[s], sizeof(u->buf[s]),
				     (uintptr_t)u->buf[s], IBV_ACCESS_LOCAL_WRITE);
		u->qp[s] = h_qp(&u->e, s, &qo);
		h_connect_one(u->qp[s], !s, 0, 0, 0x100, &c);
	}
	aa.grh.sgid_index = (uint8_t)gid_index;
	aa.grh.hop_limit = 64;
	h_gid(1, gid_index, aa.grh.dgid.raw);
	u->ah = rc_ah_create(u->e.pd[0], &aa);
	ck_assert_ptr_nonnull(u->ah);
}

static void ud_fini(struct ud *u)
{
	ck_assert_int_eq(rc_ah_destroy(u->ah), 0);
	for (int s = 0; s < 2; s++) {
		ck_assert_int_eq(rc_qp_destroy(u->qp[s]), 0);
		ck_assert_int_eq(rc_mr_dereg(u->mr[s]), 0);
	}
	h_env_fini(&u->e);
}

static int ud_send(struct ud *u, uint64_t wr_id, uint32_t len, uint32_t qkey, bool imm)
{
	struct ibv_sge s = { (uintptr_t)u->buf[0], len, rc_mr_lkey(u->mr[0]) };
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &s, .num_sge = 1,
		.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND,
		.send_flags = IBV_SEND_SIGNALED,
		.imm_data = htobe32(0xabcd),
	}, *bad;

	wr.wr.ud.ah = rc_ah_ibv(u->ah);
	wr.wr.ud.remote_qpn = rc_qp_num(u->qp[1]);
	wr.wr.ud.remote_qkey = qkey;
	return rc_post_send(u->qp[0], &wr, &bad);
}

static void ud_recv(struct ud *u, uint64_t wr_id, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)u->buf[1], len, rc_mr_lkey(u->mr[1]) };

	ck_assert_int_eq(h_post_recv(u->qp[1], wr_id, &s, 1), 0);
}

/* IPv4: 20 zero bytes, then the IPv4 header in the last 20 of the 40 (as rxe/mlx5 do). */
START_TEST(ud_grh_ipv4)
{
	struct ud u;
	struct ibv_wc wc;

	ud_init(&u, 0, NULL);
	for (int i = 0; i < 100; i++)
		u.buf[0][i] = (uint8_t)(i + 1);
	ud_recv(&u, 7, 40 + 100);
	ck_assert_int_eq(ud_send(&u, 1, 100, QKEY, true), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_uint_eq(wc.byte_len, 140);
	ck_assert_uint_eq(wc.src_qp, rc_qp_num(u.qp[0]));
	ck_assert_int_eq(wc.wc_flags & (IBV_WC_GRH | IBV_WC_WITH_IMM), IBV_WC_GRH | IBV_WC_WITH_IMM);
	ck_assert_uint_eq(be32toh(wc.imm_data), 0xabcd);
	ck_assert_uint_eq(wc.sl, 0x8 | 0x2);	/* mlx5's packet type: UDP, IPv4 (UCX reads it) */
	for (int i = 0; i < 20; i++)
		ck_assert_uint_eq(u.buf[1][i], 0);
	ck_assert_uint_eq(u.buf[1][20], 0x45);
	ck_assert_uint_eq(u.buf[1][20 + 9], 17);		/* UDP */
	ck_assert_uint_eq(u.buf[1][32], 10);			/* source 10.0.0.1 */
	ck_assert_uint_eq(u.buf[1][35], 1);
	ck_assert_uint_eq(u.buf[1][39], 2);			/* destination 10.0.0.2 */
	ck_assert_int_eq(memcmp(u.buf[1] + 40, u.buf[0], 100), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ud_fini(&u);
}
END_TEST

/* UD sends from and receives into ODP regions: side 0's explicit, side 1's the implicit one. */
START_TEST(ud_odp)
{
	struct ud u;
	struct ibv_wc wc;

	ud_init(&u, 0, NULL);
	for (int s = 0; s < 2; s++) {
		ck_assert_int_eq(rc_mr_dereg(u.mr[s]), 0);
		u.mr[s] = s ? rc_mr_reg(u.e.pd[s], NULL, SIZE_MAX, 0,
					IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_ON_DEMAND) :
			      rc_mr_reg(u.e.pd[s], u.buf[s], sizeof(u.buf[s]), (uintptr_t)u.buf[s],
					IBV_ACCESS_ON_DEMAND);
		ck_assert_ptr_nonnull(u.mr[s]);
	}
	for (int i = 0; i < 1000; i++)
		u.buf[0][i] = (uint8_t)(i * 3 + 1);
	ud_recv(&u, 7, 40 + 1000);
	ck_assert_int_eq(ud_send(&u, 1, 1000, QKEY, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 1040);
	ck_assert_int_eq(memcmp(u.buf[1] + 40, u.buf[0], 1000), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ud_fini(&u);
}
END_TEST

/*
 * A receive posted into memory the program then unmapped, the region still
 * registered (UCX's registration cache at exit): a UD send arriving fails
 * that receive, never the process.
 */
START_TEST(ud_receive_into_unmapped_memory)
{
	struct ud u;
	struct ibv_wc wc;
	struct rc_mr *mr;
	struct ibv_sge s;
	uint8_t *page;

	ud_init(&u, 0, NULL);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(page, MAP_FAILED);
	mr = rc_mr_reg(u.e.pd[1], page, 4096, (uintptr_t)page, IBV_ACCESS_LOCAL_WRITE);
	ck_assert_ptr_nonnull(mr);
	s = (struct ibv_sge){ (uintptr_t)page, 4096, rc_mr_lkey(mr) };
	ck_assert_int_eq(h_post_recv(u.qp[1], 7, &s, 1), 0);
	ck_assert_int_eq(munmap(page, 4096), 0);
	ck_assert_int_eq(ud_send(&u, 1, 100, QKEY, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_PROT_ERR);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	ud_fini(&u);
}
END_TEST

/*
 * GRHs of IPv6's form.  Loop: 0 an IPv6 RoCE v2 GID, then RoCE v1 GIDs, 1 the
 * IPv4-mapped one and 2 the fe80:: one: GRH frames on 0x8915 whose 40 bytes
 * land in the receive buffer as they were sent (next header 0x1B).
 */
START_TEST(ud_grh_ipv6)
{
	struct h_cap cap;
	struct ud u;
	struct ibv_wc wc;
	uint8_t g[16];
	int gi = 1 + _i;

	ud_init(&u, gi, NULL);
	h_capture(&u.e, &cap);
	ud_recv(&u, 7, 40 + 10);
	ck_assert_int_eq(ud_send(&u, 1, 10, QKEY, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 50);
	ck_assert_int_eq(wc.wc_flags, IBV_WC_GRH);
	ck_assert_uint_eq(wc.sl, _i ? 0x0 : 0x8 | 0x1);	/* packet type: GRH, or UDP over IPv6 */
	ck_assert_uint_eq(u.buf[1][0] >> 4, 6);
	ck_assert_uint_eq(u.buf[1][6], _i ? WIRE_GRH_NXTHDR_IBA : WIRE_IPPROTO_UDP);
	h_gid(0, gi, g);
	ck_assert_int_eq(memcmp(u.buf[1] + 8, g, 16), 0);
	h_gid(1, gi, g);
	ck_assert_int_eq(memcmp(u.buf[1] + 24, g, 16), 0);
	ck_assert_uint_eq(cap.n, 1);
	ck_assert_int_eq(cap.f[0].roce_v1, _i > 0);
	ud_fini(&u);
}
END_TEST

START_TEST(ud_qkey)
{
	struct ud u;
	struct ibv_wc wc;

	ud_init(&u, 0, NULL);
	ud_recv(&u, 7, 100);
	ck_assert_int_eq(ud_send(&u, 1, 10, QKEY + 1, false), 0);
	h_run(&u.e, RUN_NS);
	ck_assert_int_eq(rc_cq_poll(u.e.cq[1], 1, &wc), 0);
	ck_assert_uint_eq(h_qp_counters(u.qp[1]).rc_drops.count[RC_DROP_BAD_QKEY], 1);
	/* High bit set: the sender's own Q_Key goes out (both QPs have QKEY). */
	ck_assert_int_eq(ud_send(&u, 2, 10, 0x80000000u, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ud_fini(&u);
}
END_TEST

START_TEST(ud_length_limits)
{
	struct h_opts eo = { .mtu = 1500 };	/* UD messages up to 1024 bytes */
	struct ud u;
	struct ibv_wc wc;

	ud_init(&u, 0, &eo);
	ck_assert_int_eq(ud_send(&u, 1, 1025, QKEY, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	ud_fini(&u);

	/* A receive buffer too small for GRH + payload completes in error, nothing else breaks. */
	ud_init(&u, 0, NULL);
	ud_recv(&u, 7, 60);
	ud_recv(&u, 8, 200);
	ck_assert_int_eq(ud_send(&u, 1, 100, QKEY, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	ck_assert_int_eq(ud_send(&u, 2, 100, QKEY, false), 0);
	ck_assert_int_eq(h_wait_cq(&u.e, u.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.wr_id, 8);
	/* No receive posted: dropped and counted. */
	ck_assert_int_eq(ud_send(&u, 3, 100, QKEY, false), 0);
	h_run(&u.e, RUN_NS);
	ck_assert_uint_eq(h_qp_counters(u.qp[1]).rc_drops.count[RC_DROP_NO_RECV_WQE], 1);
	ud_fini(&u);
}
END_TEST

START_TEST(uc_operations_without_acks)
{
	struct h_qp_opts qo = { .type = IBV_QPT_UC };
	struct h_pair p;
	struct ibv_sge s, r;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc[2];
	struct rc_counters c;

	h_pair_init(&p, NULL, NULL, &qo);
	h_fill(p.buf[0], 5000, 1);
	s = h_sge(&p, 0, 0, 5000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	r = h_sge(&p, 1, 10000, 5000);
	ck_assert_int_eq(h_post_recv(p.qp[1], 2, &r, 1), 0);
	ck_assert_int_eq(h_post_recv(p.qp[1], 3, &r, 1), 0);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 4, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	wr.wr_id = 5;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32(77);
	wr.wr.rdma.remote_addr = (uintptr_t)p.buf[1] + 20000;
	wr.wr.rdma.rkey = rc_mr_rkey(p.mr[1]);
	ck_assert_int_eq(rc_post_send(p.qp[0], &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc[0].byte_len, 5000);
	ck_assert_int_eq(wc[1].opcode, IBV_WC_RECV_RDMA_WITH_IMM);
	ck_assert_uint_eq(be32toh(wc[1].imm_data), 77);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1], 5000), 0);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 10000, 5000), 0);
	ck_assert_int_eq(memcmp(p.buf[0], p.buf[1] + 20000, 5000), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 1, RUN_NS), 1);
	rc_engine_counters(p.e.eng[1], &c);
	ck_assert_uint_eq(c.tx_packets, 0);		/* UC never answers */
	h_pair_fini(&p);
}
END_TEST

START_TEST(uc_lost_packet_drops_message)
{
	struct h_qp_opts qo = { .type = IBV_QPT_UC };
	struct h_pair p;
	struct h_cap cap;
	struct ibv_sge s, r;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, &qo);
	h_capture(&p.e, &cap);
	h_drop(&cap, 0, OP_UC(SEND_MIDDLE), 1, 1);
	r = h_sge(&p, 1, 0, 8000);
	ck_assert_int_eq(h_post_recv(p.qp[1], 1, &r, 1), 0);
	h_fill(p.buf[0], 4000, 2);
	s = h_sge(&p, 0, 0, 4000);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 1, &s, 1, 0, 0, 0), 0);
	h_run(&p.e, RUN_NS);
	ck_assert_int_eq(rc_cq_poll(p.e.cq[1], 1, &wc), 0);
	s = h_sge(&p, 0, 100, 300);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_SEND, 2, &s, 1, 0, 0, 0), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.byte_len, 300);
	ck_assert_int_eq(memcmp(p.buf[0] + 100, p.buf[1], 300), 0);
	h_pair_fini(&p);
}
END_TEST

/* Two RC QPs of one engine talk through the same-host path: nothing on the link. */
START_TEST(loopback_rc)
{
	struct h_env e;
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	struct rc_qp *a, *b;
	static uint8_t mem[65536];
	struct rc_mr *mr;
	struct ibv_sge s, r;
	struct ibv_wc wc[3];
	unsigned seen = 0;
	struct port_sim_stats st;
	struct rc_counters c;

	h_env_init(&e, NULL);
	memset(mem, 0, sizeof(mem));
	mr = rc_mr_reg(e.pd[0], mem, sizeof(mem), (uintptr_t)mem,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
		       IBV_ACCESS_REMOTE_ATOMIC);
	a = h_qp(&e, 0, &qo);
	b = h_qp(&e, 0, &qo);
	h_connect(&e, a, 0, b, 0, NULL);
	for (int i = 0; i < 10000; i++)
		mem[i] = (uint8_t)(i * 3);
	s = (struct ibv_sge){ (uintptr_t)mem, 10000, rc_mr_lkey(mr) };
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem + 20000,
				     rc_mr_rkey(mr), IBV_SEND_SIGNALED), 0);
	r = (struct ibv_sge){ (uintptr_t)mem + 40000, 10000, rc_mr_lkey(mr) };
	ck_assert_int_eq(h_post_recv(b, 9, &r, 1), 0);
	ck_assert_int_eq(h_post_send(a, IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 3, RUN_NS), 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		seen |= 1u << wc[i].wr_id;
	}
	ck_assert_uint_eq(seen, 1u << 1 | 1u << 2 | 1u << 9);
	ck_assert_int_eq(memcmp(mem, mem + 20000, 10000), 0);
	ck_assert_int_eq(memcmp(mem, mem + 40000, 10000), 0);
	port_sim_get_stats(e.link, 0, &st);
	ck_assert_uint_eq(st.sent, 0);
	ck_assert_uint_gt(e.tapped[0], 0);
	rc_engine_counters(e.eng[0], &c);
	ck_assert_uint_eq(c.tx_packets, c.rx_packets);
	ck_assert_uint_eq(c.tx_packets, e.tapped[0]);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_env_fini(&e);
}
END_TEST

START_TEST(loopback_ud)
{
	struct h_env e;
	struct h_qp_opts qo = { .type = IBV_QPT_UD };
	struct h_conn c = { .qkey = QKEY };
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	static uint8_t mem[4096];
	struct rc_mr *mr;
	struct rc_qp *a, *b;
	struct rc_ah *ah;
	struct ibv_sge s, r;
	struct ibv_send_wr wr = { 0 }, *bad;
	struct ibv_wc wc;

	h_env_init(&e, NULL);
	mr = rc_mr_reg(e.pd[0], mem, sizeof(mem), (uintptr_t)mem, IBV_ACCESS_LOCAL_WRITE);
	a = h_qp(&e, 0, &qo);
	b = h_qp(&e, 0, &qo);
	h_connect_one(a, 0, 0, 0, 0, &c);
	h_connect_one(b, 0, 0, 0, 0, &c);
	h_gid(0, 0, aa.grh.dgid.raw);
	ah = rc_ah_create(e.pd[0], &aa);
	r = (struct ibv_sge){ (uintptr_t)mem + 1024, 1024, rc_mr_lkey(mr) };
	ck_assert_int_eq(h_post_recv(b, 3, &r, 1), 0);
	memcpy(mem, "same host", 9);
	s = (struct ibv_sge){ (uintptr_t)mem, 9, rc_mr_lkey(mr) };
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.wr.ud.ah = rc_ah_ibv(ah);
	wr.wr.ud.remote_qpn = rc_qp_num(b);
	wr.wr.ud.remote_qkey = QKEY;
	ck_assert_int_eq(rc_post_send(a, &wr, &bad), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], &wc, 1, RUN_NS), 1);
	if (wc.wr_id != 3)
		ck_assert_int_eq(h_wait_cq(&e, e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_uint_eq(wc.byte_len, 49);
	ck_assert_int_eq(memcmp(mem + 1024 + 40, "same host", 9), 0);
	ck_assert_int_eq(rc_ah_destroy(ah), 0);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	ck_assert_int_eq(rc_mr_dereg(mr), 0);
	h_env_fini(&e);
}
END_TEST

/*
 * Two engines holding the same GID (two processes on one device): frames for
 * the other's QP go to local_forward, never to the link, and the other engine
 * receives them (ICRC checked) with full RC semantics; a frame for a QP
 * nobody holds counts as for an unknown QP.
 */
START_TEST(loopback_between_engines)
{
	struct h_env e;
	struct h_opts o = { .shared_gids = true };
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	static uint8_t mem[2][16384];
	struct rc_mr *mr[2];
	struct rc_qp *a, *b, *lost;
	struct ibv_sge s, r;
	struct ibv_wc wc[3];
	struct port_sim_stats st;
	struct rc_counters c0, c1;
	uint64_t unknown;
	unsigned seen = 0;

	h_env_init(&e, &o);
	for (int i = 0; i < 2; i++) {
		memset(mem[i], 0, sizeof(mem[i]));
		mr[i] = rc_mr_reg(e.pd[i], mem[i], sizeof(mem[i]), (uintptr_t)mem[i],
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	}
	a = h_qp(&e, 0, &qo);
	b = h_qp(&e, 1, &qo);
	/* Both ends address side 0's GID, the one both engines hold. */
	h_connect_one(a, 0, rc_qp_num(b), 0, 0, NULL);
	h_connect_one(b, 0, rc_qp_num(a), 0, 0, NULL);
	for (int i = 0; i < 6000; i++)
		mem[0][i] = (uint8_t)(i * 7);
	s = (struct ibv_sge){ (uintptr_t)mem[0], 6000, rc_mr_lkey(mr[0]) };
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem[1],
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	r = (struct ibv_sge){ (uintptr_t)mem[1] + 8000, 6000, rc_mr_lkey(mr[1]) };
	ck_assert_int_eq(h_post_recv(b, 9, &r, 1), 0);
	ck_assert_int_eq(h_post_send(a, IBV_WR_SEND, 2, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[1], &wc[2], 1, RUN_NS), 1);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		seen |= 1u << wc[i].wr_id;
	}
	ck_assert_uint_eq(seen, 1u << 1 | 1u << 2 | 1u << 9);
	ck_assert_uint_eq(wc[2].byte_len, 6000);
	ck_assert_int_eq(memcmp(mem[0], mem[1], 6000), 0);
	ck_assert_int_eq(memcmp(mem[0], mem[1] + 8000, 6000), 0);
	/* A read back from b's memory into a's. */
	r = (struct ibv_sge){ (uintptr_t)mem[0] + 8000, 6000, rc_mr_lkey(mr[0]) };
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_READ, 3, &r, 1, (uintptr_t)mem[1],
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(memcmp(mem[0], mem[0] + 8000, 6000), 0);

	port_sim_get_stats(e.link, 0, &st);
	ck_assert_uint_eq(st.sent, 0);
	port_sim_get_stats(e.link, 1, &st);
	ck_assert_uint_eq(st.sent, 0);
	ck_assert_uint_gt(e.forwarded[0], 0);
	ck_assert_uint_gt(e.forwarded[1], 0);
	rc_engine_counters(e.eng[0], &c0);
	rc_engine_counters(e.eng[1], &c1);
	ck_assert_uint_eq(e.forwarded[0], e.tapped[0]);
	ck_assert_uint_eq(c1.drops.count[WIRE_DROP_BAD_ICRC], 0);

	/* Connected to a QPN neither engine holds: nothing forwarded, counted as unknown. */
	lost = h_qp(&e, 0, &qo);
	h_connect_one(lost, 0, 0x7000, 0, 0, NULL);
	ck_assert_int_eq(h_post_send(lost, IBV_WR_RDMA_WRITE, 4, &s, 1, (uintptr_t)mem[1],
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	h_run(&e, 1000000);
	rc_engine_counters(e.eng[0], &c1);
	unknown = c1.rc_drops.count[RC_DROP_UNKNOWN_QP] - c0.rc_drops.count[RC_DROP_UNKNOWN_QP];
	ck_assert_uint_gt(unknown, 0);
	ck_assert_uint_eq(e.forwarded[0], e.tapped[0] - unknown);
	ck_assert_int_eq(rc_qp_destroy(lost), 0);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(rc_mr_dereg(mr[i]), 0);
	h_env_fini(&e);
}
END_TEST

/* Frames either engine put on the link or handed to the other. */
static unsigned frames_moved(struct h_env *e)
{
	struct port_sim_stats st0, st1;

	port_sim_get_stats(e->link, 0, &st0);
	port_sim_get_stats(e->link, 1, &st1);
	return (unsigned)(st0.sent + st1.sent) + e->forwarded[0] + e->forwarded[1];
}

/*
 * Direct placement (rc_direct.c): a write or read to the other engine's QP is
 * copied between the two memories, no frame; what the published tables do not
 * allow, or what must stay in order behind a request in flight, goes by frames
 * and the other engine's responder answers it.
 */
START_TEST(direct_between_engines)
{
	struct h_env e;
	struct h_opts o = { .shared_gids = true, .direct = true };
	struct h_qp_opts qo = { .type = IBV_QPT_RC };
	static uint8_t mem[2][16384], ro[4096];
	struct rc_mr *mr[2], *ro_mr, *gone;
	struct rc_qp *a, *b;
	struct ibv_sge s, r;
	struct ibv_wc wc[2];
	uint32_t gone_rkey;
	unsigned moved;

	h_env_init(&e, &o);
	for (int i = 0; i < 2; i++) {
		memset(mem[i], 0, sizeof(mem[i]));
		mr[i] = rc_mr_reg(e.pd[i], mem[i], sizeof(mem[i]), (uintptr_t)mem[i],
				  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				  IBV_ACCESS_REMOTE_READ);
	}
	ro_mr = rc_mr_reg(e.pd[1], ro, sizeof(ro), (uintptr_t)ro, IBV_ACCESS_REMOTE_READ);
	a = h_qp(&e, 0, &qo);
	b = h_qp(&e, 1, &qo);
	h_connect_one(a, 0, rc_qp_num(b), 0, 0, NULL);
	h_connect_one(b, 0, rc_qp_num(a), 0, 0, NULL);
	for (int i = 0; i < 6000; i++)
		mem[0][i] = (uint8_t)(i * 7);

	/* A write, then a read back: no frame at all. */
	s = (struct ibv_sge){ (uintptr_t)mem[0], 6000, rc_mr_lkey(mr[0]) };
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)mem[1] + 100,
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RDMA_WRITE);
	ck_assert_int_eq(memcmp(mem[0], mem[1] + 100, 6000), 0);
	r = (struct ibv_sge){ (uintptr_t)mem[0] + 8000, 6000, rc_mr_lkey(mr[0]) };
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_READ, 2, &r, 1, (uintptr_t)mem[1] + 100,
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc[0].opcode, IBV_WC_RDMA_READ);
	ck_assert_uint_eq(wc[0].byte_len, 6000);
	ck_assert_int_eq(memcmp(mem[0], mem[0] + 8000, 6000), 0);
	ck_assert_uint_eq(frames_moved(&e), 0);
	ck_assert_uint_eq(h_qp_counters(a).direct_writes, 1);
	ck_assert_uint_eq(h_qp_counters(a).direct_reads, 1);

	/* Behind a send in flight, a write keeps its place: by frames, completed in order. */
	r = (struct ibv_sge){ (uintptr_t)mem[1] + 8000, 6000, rc_mr_lkey(mr[1]) };
	ck_assert_int_eq(h_post_recv(b, 9, &r, 1), 0);
	ck_assert_int_eq(h_post_send(a, IBV_WR_SEND, 3, &s, 1, 0, 0, IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 4, &s, 1, (uintptr_t)mem[1],
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_uint_eq(wc[0].wr_id, 3);
	ck_assert_uint_eq(wc[1].wr_id, 4);
	ck_assert_int_eq(wc[1].status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(h_qp_counters(a).direct_writes, 1);
	ck_assert_uint_gt(frames_moved(&e), 0);
	ck_assert_int_eq(memcmp(mem[0], mem[1], 6000), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[1], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(memcmp(mem[0], mem[1] + 8000, 6000), 0);

	/* A region deregistered is withdrawn: its old rkey goes by frames and the responder refuses it. */
	gone = rc_mr_reg(e.pd[1], mem[1], 4096, (uintptr_t)mem[1], IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_WRITE);
	gone_rkey = rc_mr_rkey(gone);
	ck_assert_int_eq(rc_mr_dereg(gone), 0);
	moved = frames_moved(&e);
	s.length = 64;
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 5, &s, 1, (uintptr_t)mem[1], gone_rkey,
				     IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_gt(frames_moved(&e), moved);
	ck_assert_uint_eq(h_qp_counters(a).direct_writes, 1);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);

	/* A region without remote write: the write goes by frames and fails there. */
	a = h_qp(&e, 0, &qo);
	b = h_qp(&e, 1, &qo);
	h_connect_one(a, 0, rc_qp_num(b), 0, 0, NULL);
	h_connect_one(b, 0, rc_qp_num(a), 0, 0, NULL);
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 6, &s, 1, (uintptr_t)ro,
				     rc_mr_rkey(ro_mr), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&e, e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	ck_assert_uint_eq(h_qp_counters(a).direct_writes, 0);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);

	/* A responder QP in ERR is withdrawn: nothing is placed in its memory. */
	a = h_qp(&e, 0, &qo);
	b = h_qp(&e, 1, &qo);
	h_connect_one(a, 0, rc_qp_num(b), 0, 0, NULL);
	h_connect_one(b, 0, rc_qp_num(a), 0, 0, NULL);
	ck_assert_int_eq(rc_qp_modify(b, &(struct ibv_qp_attr){ .qp_state = IBV_QPS_ERR },
				      IBV_QP_STATE), 0);
	memset(mem[1], 0, 64);
	ck_assert_int_eq(h_post_send(a, IBV_WR_RDMA_WRITE, 7, &s, 1, (uintptr_t)mem[1],
				     rc_mr_rkey(mr[1]), IBV_SEND_SIGNALED), 0);
	h_run(&e, 1000000);
	ck_assert_uint_eq(h_qp_counters(a).direct_writes, 0);
	ck_assert_uint_eq(mem[1][0], 0);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(rc_mr_dereg(mr[i]), 0);
	ck_assert_int_eq(rc_mr_dereg(ro_mr), 0);
	h_env_fini(&e);
}
END_TEST

/* Every request CE-marked on the way: the responder sends CNPs, the requester counts them. */
START_TEST(cnp_end_to_end)
{
	struct h_pair p;
	struct port_sim_faults f = { .ce_mark = 1.0 };
	struct ibv_sge s;
	struct ibv_wc wc;

	h_pair_init(&p, NULL, NULL, NULL);
	port_sim_set_faults(p.e.link, 0, &f);
	s = h_sge(&p, 0, 0, 100);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &s, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	h_run(&p.e, RUN_NS);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).ecn_ce_rx, 1);
	ck_assert_uint_eq(h_qp_counters(p.qp[1]).cnps_tx, 1);
	ck_assert_uint_eq(h_qp_counters(p.qp[0]).cnps_rx, 1);
	h_pair_fini(&p);
}
END_TEST

Suite *rc_ucud_suite(void)
{
	Suite *s = suite_create("rc_ucud");
	TCase *tc = tcase_create("ucud");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, ud_grh_ipv4);
	tcase_add_test(tc, ud_odp);
	tcase_add_test(tc, ud_receive_into_unmapped_memory);
	tcase_add_loop_test(tc, ud_grh_ipv6, 0, 3);
	tcase_add_test(tc, ud_qkey);
	tcase_add_test(tc, ud_length_limits);
	tcase_add_test(tc, uc_operations_without_acks);
	tcase_add_test(tc, uc_lost_packet_drops_message);
	tcase_add_test(tc, loopback_rc);
	tcase_add_test(tc, loopback_ud);
	tcase_add_test(tc, loopback_between_engines);
	tcase_add_test(tc, direct_between_engines);
	tcase_add_test(tc, cnp_end_to_end);
	suite_add_tcase(s, tc);
	return s;
}
