// SPDX-License-Identifier: MIT
/* Raw packet QPs on the simulated link: frames as sent, flow steering and its errors, RoCE, RSS. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <string.h>

#include "engine_harness.h"
#include "suites.h"

#define RUN_NS		10000000ull
#define FRAME_LEN	128
#define DPORT		5678
#define OTHER_DPORT	9999
#define IPPROTO_UDP_	17

static const uint8_t dst_mac[6] = { 0x01, 0x50, 0x56, 0x19, 0x20, 0xa7 };
static const uint8_t src_mac[6] = { 0x24, 0x8a, 0x07, 0xa5, 0x28, 0xc8 };

struct raw {
	struct h_env	e;
	uint8_t		buf[2][4096];
	struct rc_mr	*mr[2];
};

static void raw_init(struct raw *r)
{
	h_env_init(&r->e, NULL);
	for (int s = 0; s < 2; s++) {
		memset(r->buf[s], 0, sizeof(r->buf[s]));
		r->mr[s] = rc_mr_reg(r->e.pd[s], r->buf[s], sizeof(r->buf[s]),
				     (uintptr_t)r->buf[s], IBV_ACCESS_LOCAL_WRITE);
		ck_assert_ptr_nonnull(r->mr[s]);
	}
}

static void raw_fini(struct raw *r)
{
	for (int s = 0; s < 2; s++)
		ck_assert_int_eq(rc_mr_dereg(r->mr[s]), 0);
	h_env_fini(&r->e);
}

/* A raw QP in RTS: RESET -> INIT takes the port only, INIT -> RTR -> RTS nothing (as in Linux). */
static struct rc_qp *raw_qp(struct raw *r, int side)
{
	struct h_qp_opts o = { .type = IBV_QPT_RAW_PACKET, .max_inline = 64 };
	struct rc_qp *qp = h_qp(&r->e, side, &o);
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };

	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	ck_assert_int_eq(rc_qp_modify(qp, &a, IBV_QP_STATE), 0);
	return qp;
}

/* Ethernet, IPv4 1.1.1.1 -> 2.2.2.2, UDP 1234 -> @dport, a pattern: @len bytes at @f. */
static void udp_frame(uint8_t *f, uint32_t len, uint16_t dport, unsigned seed)
{
	struct wire_eth_hdr *eth = (struct wire_eth_hdr *)f;
	struct wire_ipv4_hdr *ip = (struct wire_ipv4_hdr *)(eth + 1);
	struct wire_udp_hdr *udp = (struct wire_udp_hdr *)(ip + 1);
	uint32_t l3_len = len - (uint32_t)sizeof(*eth);

	memset(f, 0, len);
	memcpy(eth->dst, dst_mac, 6);
	memcpy(eth->src, src_mac, 6);
	wire_set16(&eth->ethertype, WIRE_ETHERTYPE_IPV4);
	ip->version_ihl = 0x45;
	wire_set16(&ip->total_len, (uint16_t)l3_len);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP_;
	memcpy(ip->src, (const uint8_t[]){ 1, 1, 1, 1 }, 4);
	memcpy(ip->dst, (const uint8_t[]){ 2, 2, 2, 2 }, 4);
	wire_set16(&ip->checksum, wire_ipv4_csum(ip, sizeof(*ip)));
	wire_set16(&udp->sport, 1234);
	wire_set16(&udp->dport, dport);
	wire_set16(&udp->len, (uint16_t)(l3_len - sizeof(*ip)));
	h_fill((uint8_t *)(udp + 1), len - (uint32_t)((uint8_t *)(udp + 1) - f), seed);
}

/* A flow attribute and its specs as ibv_create_flow(3) reads them (each a multiple of 4: no padding). */
struct flow_eth_ip_udp {
	struct ibv_flow_attr		attr;
	struct ibv_flow_spec_eth	eth;
	struct ibv_flow_spec_ipv4_ext	ip;
	struct ibv_flow_spec_tcp_udp	udp;
};

/* The pyverbs suite's UDP flow: destination MAC, IPv4 addresses and protocol, UDP ports. */
static struct rc_flow *udp_flow(struct rc_qp *qp, uint16_t dport, uint16_t priority, uint32_t flags)
{
	struct flow_eth_ip_udp f = {
		.attr = { .type = IBV_FLOW_ATTR_NORMAL, .size = sizeof(f), .priority = priority,
			  .num_of_specs = 3, .port = 1, .flags = flags },
		.eth = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(f.eth) },
		.ip = { .type = IBV_FLOW_SPEC_IPV4_EXT, .size = sizeof(f.ip) },
		.udp = { .type = IBV_FLOW_SPEC_UDP, .size = sizeof(f.udp) },
	};

	memcpy(f.eth.val.dst_mac, dst_mac, 6);
	memset(f.eth.mask.dst_mac, 0xff, 6);
	f.eth.val.ether_type = htons(WIRE_ETHERTYPE_IPV4);
	f.eth.mask.ether_type = 0xffff;
	f.ip.val.src_ip = htonl(0x01010101);
	f.ip.val.dst_ip = htonl(0x02020202);
	f.ip.mask.src_ip = f.ip.mask.dst_ip = 0xffffffff;
	f.ip.val.proto = IPPROTO_UDP_;
	f.ip.mask.proto = 0xff;
	f.udp.val.src_port = htons(1234);
	f.udp.val.dst_port = htons(dport);
	f.udp.mask.src_port = f.udp.mask.dst_port = 0xffff;
	return rc_flow_create(qp, &f.attr);
}

static int raw_post_send(struct raw *r, int side, struct rc_qp *qp, uint32_t len, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)r->buf[side], len, rc_mr_lkey(r->mr[side]) };

	return h_post_send(qp, IBV_WR_SEND, wr_id, &sge, 1, 0, 0, IBV_SEND_SIGNALED);
}

/* A receive of the whole buffer @off bytes into side @side's. */
static void raw_post_recv(struct raw *r, int side, struct rc_qp *qp, uint32_t off, uint64_t wr_id)
{
	struct ibv_sge sge = { (uintptr_t)r->buf[side] + off, 1024, rc_mr_lkey(r->mr[side]) };

	ck_assert_int_eq(h_post_recv(qp, wr_id, &sge, 1), 0);
}

/* Nothing more arrives on @cq while the engines run on. */
static void assert_cq_quiet(struct raw *r, struct rc_cq *cq)
{
	struct ibv_wc wc;

	h_run(&r->e, RUN_NS);
	ck_assert_int_eq(rc_cq_poll(cq, 1, &wc), 0);
}

static uint64_t engine_drops(struct raw *r, int side, enum wire_drop why)
{
	struct rc_counters c;

	rc_engine_counters(r->e.eng[side], &c);
	return c.drops.count[why];
}

/* The frame leaves as posted and lands byte for byte in the buffer of the QP its flow names. */
START_TEST(raw_frame_arrives_whole)
{
	struct raw r;
	struct rc_qp *tx, *rx;
	struct rc_flow *fl;
	struct ibv_wc wc;

	raw_init(&r);
	tx = raw_qp(&r, 0);
	rx = raw_qp(&r, 1);
	fl = udp_flow(rx, DPORT, 0, 0);
	ck_assert_ptr_nonnull(fl);
	raw_post_recv(&r, 1, rx, 0, 7);
	udp_frame(r.buf[0], FRAME_LEN, DPORT, 1);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 5), 0);

	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_SEND);
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(wc.opcode, IBV_WC_RECV);
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_uint_eq(wc.qp_num, rc_qp_num(rx));
	ck_assert_uint_eq(wc.byte_len, FRAME_LEN);
	ck_assert_mem_eq(r.buf[1], r.buf[0], FRAME_LEN);
	ck_assert_uint_eq(h_qp_counters(tx).raw_tx, 1);
	ck_assert_uint_eq(h_qp_counters(rx).raw_rx, 1);
	ck_assert_uint_eq(h_qp_counters(rx).raw_looped, 0);

	ck_assert_int_eq(rc_qp_destroy(rx), -EBUSY);
	ck_assert_int_eq(rc_flow_destroy(fl), 0);
	ck_assert_int_eq(rc_qp_destroy(rx), 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/*
 * A frame no flow matches reaches no QP and is counted as before (not RoCE:
 * its UDP port); a raw QP without a flow receives nothing, even a frame
 * another QP's flow takes.
 */
START_TEST(raw_no_matching_flow)
{
	struct raw r;
	struct rc_qp *tx, *with_flow, *without;
	struct rc_flow *fl;
	struct ibv_wc wc;
	uint64_t before;

	raw_init(&r);
	tx = raw_qp(&r, 0);
	with_flow = raw_qp(&r, 1);
	without = raw_qp(&r, 1);
	fl = udp_flow(with_flow, DPORT, 0, 0);
	ck_assert_ptr_nonnull(fl);
	raw_post_recv(&r, 1, with_flow, 0, 1);
	raw_post_recv(&r, 1, without, 1024, 2);

	before = engine_drops(&r, 1, WIRE_DROP_NOT_ROCE_PORT);
	udp_frame(r.buf[0], FRAME_LEN, OTHER_DPORT, 2);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 1), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	assert_cq_quiet(&r, r.e.cq[1]);
	ck_assert_uint_eq(engine_drops(&r, 1, WIRE_DROP_NOT_ROCE_PORT), before + 1);

	udp_frame(r.buf[0], FRAME_LEN, DPORT, 3);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 2), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.qp_num, rc_qp_num(with_flow));
	assert_cq_quiet(&r, r.e.cq[1]);
	ck_assert_uint_eq(h_qp_counters(without).raw_rx, 0);
	ck_assert_uint_eq(engine_drops(&r, 1, WIRE_DROP_NOT_ROCE_PORT), before + 1);

	ck_assert_int_eq(rc_flow_destroy(fl), 0);
	ck_assert_int_eq(rc_qp_destroy(without), 0);
	ck_assert_int_eq(rc_qp_destroy(with_flow), 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/*
 * Two QPs of one engine: a frame one sends reaches the other's flow, as a
 * NIC's switch loops it back, but never the sender's own; it still leaves on
 * the port (the other side counts it).
 */
START_TEST(raw_loopback_same_engine)
{
	struct raw r;
	struct rc_qp *a, *b;
	struct rc_flow *fa, *fb;
	struct ibv_wc wc[2];
	uint64_t before;

	raw_init(&r);
	before = engine_drops(&r, 1, WIRE_DROP_NOT_ROCE_PORT);
	a = raw_qp(&r, 0);
	b = raw_qp(&r, 0);
	fa = udp_flow(a, DPORT, 0, 0);
	fb = udp_flow(b, DPORT, 0, 0);
	ck_assert_ptr_nonnull(fa);
	ck_assert_ptr_nonnull(fb);
	raw_post_recv(&r, 0, a, 1024, 1);
	raw_post_recv(&r, 0, b, 2048, 2);
	udp_frame(r.buf[0], FRAME_LEN, DPORT, 4);
	ck_assert_int_eq(raw_post_send(&r, 0, a, FRAME_LEN, 3), 0);

	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[0], wc, 2, RUN_NS), 2);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].opcode == IBV_WC_RECV) {
			ck_assert_uint_eq(wc[i].qp_num, rc_qp_num(b));
			ck_assert_uint_eq(wc[i].byte_len, FRAME_LEN);
		}
	}
	ck_assert_mem_eq(r.buf[0] + 2048, r.buf[0], FRAME_LEN);
	assert_cq_quiet(&r, r.e.cq[0]);
	ck_assert_uint_eq(h_qp_counters(b).raw_looped, 1);
	ck_assert_uint_eq(h_qp_counters(a).raw_rx, 0);
	ck_assert_uint_eq(engine_drops(&r, 1, WIRE_DROP_NOT_ROCE_PORT), before + 1);

	ck_assert_int_eq(rc_flow_destroy(fa), 0);
	ck_assert_int_eq(rc_flow_destroy(fb), 0);
	ck_assert_int_eq(rc_qp_destroy(a), 0);
	ck_assert_int_eq(rc_qp_destroy(b), 0);
	raw_fini(&r);
}
END_TEST

/* The lowest priority value takes the frame alone; with DONT_TRAP the next priority gets it too. */
START_TEST(raw_flow_priority)
{
	struct raw r;
	struct rc_qp *tx, *first, *second;
	struct rc_flow *f1, *f2;
	struct ibv_wc wc[2];
	bool dont_trap = _i;

	raw_init(&r);
	tx = raw_qp(&r, 0);
	first = raw_qp(&r, 1);
	second = raw_qp(&r, 1);
	/* Created in the reverse order of their priorities: the list is kept sorted. */
	f2 = udp_flow(second, DPORT, 5, 0);
	f1 = udp_flow(first, DPORT, 1, dont_trap ? IBV_FLOW_ATTR_FLAGS_DONT_TRAP : 0);
	ck_assert_ptr_nonnull(f1);
	ck_assert_ptr_nonnull(f2);
	raw_post_recv(&r, 1, first, 0, 1);
	raw_post_recv(&r, 1, second, 1024, 2);
	udp_frame(r.buf[0], FRAME_LEN, DPORT, 5);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 1), 0);

	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc[0].qp_num, rc_qp_num(first));
	if (dont_trap) {
		ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], wc + 1, 1, RUN_NS), 1);
		ck_assert_uint_eq(wc[1].qp_num, rc_qp_num(second));
	}
	assert_cq_quiet(&r, r.e.cq[1]);

	ck_assert_int_eq(rc_flow_destroy(f1), 0);
	ck_assert_int_eq(rc_flow_destroy(f2), 0);
	ck_assert_int_eq(rc_qp_destroy(first), 0);
	ck_assert_int_eq(rc_qp_destroy(second), 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/* IPv6 and TCP specs, and a flow without specs (every frame that is not RoCE). */
START_TEST(raw_flow_ipv6_tcp_and_empty)
{
	struct {
		struct ibv_flow_attr		attr;
		struct ibv_flow_spec_ipv6	ip6;
		struct ibv_flow_spec_tcp_udp	tcp;
	} f6 = {
		.attr = { .size = sizeof(f6), .num_of_specs = 2, .port = 1 },
		.ip6 = { .type = IBV_FLOW_SPEC_IPV6, .size = sizeof(f6.ip6) },
		.tcp = { .type = IBV_FLOW_SPEC_TCP, .size = sizeof(f6.tcp) },
	};
	struct ibv_flow_attr empty = { .size = sizeof(empty), .port = 1, .priority = 9 };
	struct raw r;
	struct rc_qp *tx, *rx6, *any;
	struct rc_flow *fl6, *fany;
	struct ibv_wc wc;
	uint8_t *f;

	raw_init(&r);
	tx = raw_qp(&r, 0);
	rx6 = raw_qp(&r, 1);
	any = raw_qp(&r, 1);
	f6.tcp.val.dst_port = htons(80);
	f6.tcp.mask.dst_port = 0xffff;
	fl6 = rc_flow_create(rx6, &f6.attr);
	fany = rc_flow_create(any, &empty);
	ck_assert_ptr_nonnull(fl6);
	ck_assert_ptr_nonnull(fany);
	raw_post_recv(&r, 1, rx6, 0, 1);
	raw_post_recv(&r, 1, any, 1024, 2);

	/* Ethernet, IPv6 (next header TCP), TCP to port 80. */
	f = r.buf[0];
	memset(f, 0, FRAME_LEN);
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	f[12] = 0x86;
	f[13] = 0xdd;
	f[14] = 0x60;
	f[14 + 5] = FRAME_LEN - 14 - 40;
	f[14 + 6] = 6;
	f[14 + 7] = 64;
	f[14 + 40 + 3] = 80;
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 1), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.qp_num, rc_qp_num(rx6));
	assert_cq_quiet(&r, r.e.cq[1]);

	/* The same frame to port 81: only the flow without specs wants it. */
	f[14 + 40 + 3] = 81;
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 2), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_uint_eq(wc.qp_num, rc_qp_num(any));
	ck_assert_uint_eq(wc.byte_len, FRAME_LEN);

	ck_assert_int_eq(rc_flow_destroy(fl6), 0);
	ck_assert_int_eq(rc_flow_destroy(fany), 0);
	ck_assert_int_eq(rc_qp_destroy(rx6), 0);
	ck_assert_int_eq(rc_qp_destroy(any), 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/*
 * RC traffic between the same engines while raw QPs have flows, one of them
 * on UDP port 4791 itself: every RoCE frame still goes to the transport and
 * none matches a flow.
 */
START_TEST(raw_roce_unaffected)
{
	struct h_pair p;
	struct rc_qp *raw[2];
	struct rc_flow *fl[2];
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct {
		struct ibv_flow_attr		attr;
		struct ibv_flow_spec_tcp_udp	udp;
	} roce_port = {
		.attr = { .size = sizeof(roce_port), .num_of_specs = 1, .port = 1 },
		.udp = { .type = IBV_FLOW_SPEC_UDP, .size = sizeof(roce_port.udp) },
	};
	struct h_qp_opts ro = { .type = IBV_QPT_RAW_PACKET };
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct ibv_recv_wr rwr = { .num_sge = 1, .sg_list = &sge }, *bad;

	h_pair_init(&p, NULL, NULL, NULL);
	roce_port.udp.val.dst_port = htons(WIRE_ROCEV2_PORT);
	roce_port.udp.mask.dst_port = 0xffff;
	for (int s = 0; s < 2; s++) {
		raw[s] = h_qp(&p.e, s, &ro);
		ck_assert_int_eq(rc_qp_modify(raw[s], &a, IBV_QP_STATE | IBV_QP_PORT), 0);
		a.qp_state = IBV_QPS_RTR;
		ck_assert_int_eq(rc_qp_modify(raw[s], &a, IBV_QP_STATE), 0);
		a.qp_state = IBV_QPS_INIT;
		fl[s] = rc_flow_create(raw[s], &roce_port.attr);
		ck_assert_ptr_nonnull(fl[s]);
		sge = h_sge(&p, s, 128 * 1024, 4096);
		ck_assert_int_eq(rc_post_recv(raw[s], &rwr, &bad), 0);
	}

	h_fill(p.buf[0], 64 * 1024, 6);
	sge = h_sge(&p, 0, 0, 64 * 1024);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &sge, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_mem_eq(p.buf[1], p.buf[0], 64 * 1024);
	h_run(&p.e, RUN_NS);
	for (int s = 0; s < 2; s++) {
		ck_assert_int_eq(rc_cq_poll(p.e.cq[s], 1, &wc), 0);
		ck_assert_uint_eq(h_qp_counters(raw[s]).raw_rx, 0);
		ck_assert_uint_eq(h_qp_counters(raw[s]).rx_packets, 0);
		ck_assert_int_eq(rc_flow_destroy(fl[s]), 0);
		ck_assert_int_eq(rc_qp_destroy(raw[s]), 0);
	}
	h_pair_fini(&p);
}
END_TEST

/*
 * A matching frame a raw QP cannot take: before RTR (counted QP_STATE), with
 * no receive posted (NO_RECV_WQE), into a buffer too short (IBV_WC_LOC_LEN_ERR).
 */
START_TEST(raw_recv_errors)
{
	struct raw r;
	struct rc_qp *tx, *rx;
	struct h_qp_opts o = { .type = IBV_QPT_RAW_PACKET };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_sge short_sge;
	struct rc_flow *fl;
	struct ibv_wc wc, sent[4];

	raw_init(&r);
	tx = raw_qp(&r, 0);
	rx = h_qp(&r.e, 1, &o);
	ck_assert_int_eq(rc_qp_modify(rx, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	fl = udp_flow(rx, DPORT, 0, 0);
	ck_assert_ptr_nonnull(fl);
	raw_post_recv(&r, 1, rx, 0, 1);
	udp_frame(r.buf[0], FRAME_LEN, DPORT, 8);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 1), 0);
	assert_cq_quiet(&r, r.e.cq[1]);
	ck_assert_uint_eq(h_qp_counters(rx).rc_drops.count[RC_DROP_QP_STATE], 1);

	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(rc_qp_modify(rx, &a, IBV_QP_STATE), 0);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 2), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 3), 0);
	assert_cq_quiet(&r, r.e.cq[1]);
	ck_assert_uint_eq(h_qp_counters(rx).rc_drops.count[RC_DROP_NO_RECV_WQE], 1);

	short_sge = (struct ibv_sge){ (uintptr_t)r.buf[1], FRAME_LEN - 1, rc_mr_lkey(r.mr[1]) };
	ck_assert_int_eq(h_post_recv(rx, 4, &short_sge, 1), 0);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 4), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_LOC_LEN_ERR);
	ck_assert_uint_eq(wc.wr_id, 4);

	/* The sender knows none of it: each of its four sends completed. */
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[0], sent, 4, RUN_NS), 4);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(sent[i].status, IBV_WC_SUCCESS);
	ck_assert_int_eq(rc_flow_destroy(fl), 0);
	ck_assert_int_eq(rc_qp_destroy(rx), 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/* Frames a raw QP cannot send: shorter than an Ethernet header, longer than the port takes. */
START_TEST(raw_send_bad_length)
{
	static const uint32_t lens[] = { 13, 4200 + 18 + 1 };
	struct raw r;
	struct rc_qp *tx;
	struct ibv_wc wc[2];

	raw_init(&r);
	tx = raw_qp(&r, 0);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, lens[_i], 1), 0);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 2), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[0], wc, 2, RUN_NS), 2);
	ck_assert_int_eq(wc[0].status, IBV_WC_LOC_LEN_ERR);
	ck_assert_int_eq(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	ck_assert_int_eq(h_qp_state(tx), IBV_QPS_SQE);
	ck_assert_uint_eq(h_qp_counters(tx).raw_tx, 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/* Microsoft's RSS verification suite, first row: 66.9.149.187:2794 -> 161.142.100.80:1766. */
static const uint8_t rss_key[40] = {
	0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
	0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
	0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa,
};
#define RSS_HASH_IPV4		0x323e8fc2u
#define RSS_HASH_IPV4_PORTS	0x51ccc178u
#define RSS_LOG_SIZE		4

/*
 * An RSS QP over 16 work queues (raw QPs with receive queues): the frame
 * goes to the one the Toeplitz hash of its addresses (and ports) names, as
 * the specification's verification values say.
 */
START_TEST(raw_rss_toeplitz)
{
	bool ports = _i;
	struct rc_qp *wq[1 << RSS_LOG_SIZE], *rss_qp, *tx;
	struct rc_qp_rss rss = {
		.wqs = wq, .log_size = RSS_LOG_SIZE, .key_len = sizeof(rss_key),
		.fields = IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 |
			  (ports ? IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP : 0),
	};
	struct rc_qp_init init = { .qp_type = IBV_QPT_RAW_PACKET, .rss = &rss };
	struct ibv_flow_attr all = { .size = sizeof(all), .port = 1 };
	unsigned want = (ports ? RSS_HASH_IPV4_PORTS : RSS_HASH_IPV4) & ((1u << RSS_LOG_SIZE) - 1);
	struct raw r;
	struct rc_flow *fl;
	struct ibv_wc wc;
	uint8_t *f;

	raw_init(&r);
	memcpy(rss.key, rss_key, sizeof(rss_key));
	tx = raw_qp(&r, 0);
	for (unsigned i = 0; i < 1u << RSS_LOG_SIZE; i++) {
		wq[i] = raw_qp(&r, 1);
		raw_post_recv(&r, 1, wq[i], 0, i);
	}
	init.pd = r.e.pd[1];
	init.send_cq = init.recv_cq = r.e.cq[1];
	rss_qp = rc_qp_create(r.e.eng[1], &init);
	ck_assert_ptr_nonnull(rss_qp);
	fl = rc_flow_create(rss_qp, &all);
	ck_assert_ptr_nonnull(fl);

	f = r.buf[0];
	udp_frame(f, FRAME_LEN, 1766, 7);
	memcpy(f + 14 + 12, (const uint8_t[]){ 66, 9, 149, 187, 161, 142, 100, 80 }, 8);
	wire_set16((wire_be16 *)(f + 14 + 20), 2794);
	ck_assert_int_eq(raw_post_send(&r, 0, tx, FRAME_LEN, 1), 0);
	ck_assert_int_eq(h_wait_cq(&r.e, r.e.cq[1], &wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc.status, IBV_WC_SUCCESS);
	ck_assert_uint_eq(wc.qp_num, rc_qp_num(wq[want]));
	ck_assert_uint_eq(wc.wr_id, want);
	assert_cq_quiet(&r, r.e.cq[1]);

	ck_assert_int_eq(rc_flow_destroy(fl), 0);
	ck_assert_int_eq(rc_qp_destroy(rss_qp), 0);
	for (unsigned i = 0; i < 1u << RSS_LOG_SIZE; i++)
		ck_assert_int_eq(rc_qp_destroy(wq[i]), 0);
	ck_assert_int_eq(rc_qp_destroy(tx), 0);
	raw_fini(&r);
}
END_TEST

/*
 * A sniffer flow sees every frame through the port, both ways, RoCE ones
 * too, whole (the zero-copy link's payloads included); the RC write it
 * watches completes as without it.
 */
START_TEST(raw_sniffer_sees_all)
{
	struct h_opts eo = { .zero_copy = _i };
	struct h_pair p;
	struct h_cap cap;
	struct rc_qp *sniff;
	struct rc_flow *fl;
	struct ibv_flow_attr all = { .type = IBV_FLOW_ATTR_SNIFFER, .size = sizeof(all), .port = 1 };
	struct h_qp_opts ro = { .type = IBV_QPT_RAW_PACKET, .max_recv_wr = 64, .max_sge = 1 };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1 };
	struct ibv_wc wc[64];
	struct ibv_sge sge;
	const uint32_t slot = 4224, len = 64 * 1024;
	unsigned frames, seen = 0;
	uint32_t first_len = 0;
	struct wire_pkt pkt;

	h_pair_init(&p, &eo, NULL, NULL);
	h_capture(&p.e, &cap);
	sniff = h_qp(&p.e, 1, &ro);
	ck_assert_int_eq(rc_qp_modify(sniff, &a, IBV_QP_STATE | IBV_QP_PORT), 0);
	a.qp_state = IBV_QPS_RTR;
	ck_assert_int_eq(rc_qp_modify(sniff, &a, IBV_QP_STATE), 0);
	fl = rc_flow_create(sniff, &all);
	ck_assert_ptr_nonnull(fl);
	for (unsigned i = 0; i < 32; i++) {
		struct ibv_sge s = h_sge(&p, 1, len + i * slot, slot);

		ck_assert_int_eq(h_post_recv(sniff, i, &s, 1), 0);
	}

	h_fill(p.buf[0], 16 * 1024, 9);
	sge = h_sge(&p, 0, 0, 16 * 1024);
	ck_assert_int_eq(h_post_send(p.qp[0], IBV_WR_RDMA_WRITE, 1, &sge, 1, (uintptr_t)p.buf[1],
				     rc_mr_rkey(p.mr[1]), IBV_SEND_SIGNALED), 0);
	ck_assert_int_eq(h_wait_cq(&p.e, p.e.cq[0], wc, 1, RUN_NS), 1);
	ck_assert_int_eq(wc[0].status, IBV_WC_SUCCESS);
	ck_assert_mem_eq(p.buf[1], p.buf[0], 16 * 1024);
	h_run(&p.e, RUN_NS);
	frames = h_cap_count(&cap, 0, 0xffff) + h_cap_count(&cap, 1, 0xffff);
	ck_assert_uint_ge(frames, 17);	/* 16 writes of 1024 bytes and at least one ACK */
	for (int n; (n = rc_cq_poll(p.e.cq[1], 64, wc)) > 0;)
		for (int i = 0; i < n; i++) {
			ck_assert_int_eq(wc[i].status, IBV_WC_SUCCESS);
			ck_assert_uint_eq(wc[i].qp_num, rc_qp_num(sniff));
			if (wc[i].wr_id == 0)
				first_len = wc[i].byte_len;
			seen++;
		}
	ck_assert_uint_eq(seen, frames);
	/* The first is the write's first packet, ICRC included: what the parser takes whole. */
	ck_assert_int_eq(wire_parse(p.buf[1] + len, first_len, 0, &pkt), 0);
	ck_assert_uint_eq(pkt.opcode, WIRE_OPC_RC | WIRE_OP_WRITE_FIRST);

	ck_assert_int_eq(rc_flow_destroy(fl), 0);
	ck_assert_int_eq(rc_qp_destroy(sniff), 0);
	h_pair_fini(&p);
}
END_TEST

/* A flow attribute with one spec, as the bad cases below change it. */
struct flow_one {
	struct ibv_flow_attr	attr;
	union {
		struct ibv_flow_spec_eth		eth;
		struct ibv_flow_spec_tunnel		vxlan;
		struct ibv_flow_spec_action_drop	drop;
		uint8_t					bytes[64];
	} spec;
};

static void flow_one_eth(struct flow_one *f)
{
	memset(f, 0, sizeof(*f));
	f->attr = (struct ibv_flow_attr){ .size = sizeof(*f), .num_of_specs = 1, .port = 1 };
	f->spec.eth.type = IBV_FLOW_SPEC_ETH;
	f->spec.eth.size = sizeof(f->spec.eth);
}

/*
 * ibv_create_flow(3)'s errors: EINVAL for what is malformed (QP type, port,
 * spec size, contradicting specs, a sniffer with specs), EOPNOTSUPP for what
 * uroce lacks (default rules, egress, tunnels, actions, inner headers).
 */
START_TEST(raw_flow_errors)
{
	struct raw r;
	struct rc_qp *raw, *rc, *ud;
	struct h_qp_opts rco = { .type = IBV_QPT_RC }, udo = { .type = IBV_QPT_UD };
	struct flow_one f;
	struct {
		struct ibv_flow_attr		attr;
		struct ibv_flow_spec_eth	a, b;
	} two = {
		.attr = { .size = sizeof(two), .num_of_specs = 2, .port = 1 },
		.a = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(two.a) },
		.b = { .type = IBV_FLOW_SPEC_ETH, .size = sizeof(two.b) },
	};
	struct rc_objects o;

	raw_init(&r);
	raw = raw_qp(&r, 1);
	rc = h_qp(&r.e, 1, &rco);
	ud = h_qp(&r.e, 1, &udo);

#define EXPECT_FLOW_ERR(qp, attr, err)						\
	do {									\
		errno = 0;							\
		ck_assert_ptr_null(rc_flow_create(qp, attr));			\
		ck_assert_int_eq(errno, err);					\
	} while (0)

	flow_one_eth(&f);
	EXPECT_FLOW_ERR(rc, &f.attr, EINVAL);
	EXPECT_FLOW_ERR(ud, &f.attr, EOPNOTSUPP);
	f.attr.port = 2;
	EXPECT_FLOW_ERR(raw, &f.attr, EINVAL);
	flow_one_eth(&f);
	f.spec.eth.size = sizeof(f.spec.eth) - 2;
	EXPECT_FLOW_ERR(raw, &f.attr, EINVAL);
	flow_one_eth(&f);
	f.spec.eth.size = 0;
	EXPECT_FLOW_ERR(raw, &f.attr, EINVAL);
	flow_one_eth(&f);
	f.spec.eth.type = (enum ibv_flow_spec_type)0x77;
	EXPECT_FLOW_ERR(raw, &f.attr, EINVAL);
	/* A sniffer takes no specs (ibv_create_flow(3), note 5). */
	flow_one_eth(&f);
	f.attr.type = IBV_FLOW_ATTR_SNIFFER;
	EXPECT_FLOW_ERR(raw, &f.attr, EINVAL);
	flow_one_eth(&f);
	f.attr.type = IBV_FLOW_ATTR_ALL_DEFAULT;
	EXPECT_FLOW_ERR(raw, &f.attr, EOPNOTSUPP);
	flow_one_eth(&f);
	f.attr.flags = IBV_FLOW_ATTR_FLAGS_EGRESS;
	EXPECT_FLOW_ERR(raw, &f.attr, EOPNOTSUPP);
	flow_one_eth(&f);
	f.spec.eth.type = IBV_FLOW_SPEC_ETH | IBV_FLOW_SPEC_INNER;
	EXPECT_FLOW_ERR(raw, &f.attr, EOPNOTSUPP);
	flow_one_eth(&f);
	f.spec.vxlan.type = IBV_FLOW_SPEC_VXLAN_TUNNEL;
	f.spec.vxlan.size = sizeof(f.spec.vxlan);
	EXPECT_FLOW_ERR(raw, &f.attr, EOPNOTSUPP);
	flow_one_eth(&f);
	f.spec.drop.type = IBV_FLOW_SPEC_ACTION_DROP;
	f.spec.drop.size = sizeof(f.spec.drop);
	EXPECT_FLOW_ERR(raw, &f.attr, EOPNOTSUPP);
	/* Two Ethernet specs naming different destination MACs: no frame could match. */
	two.a.val.dst_mac[5] = 1;
	two.b.val.dst_mac[5] = 2;
	memset(two.a.mask.dst_mac, 0xff, 6);
	memset(two.b.mask.dst_mac, 0xff, 6);
	EXPECT_FLOW_ERR(raw, &two.attr, EINVAL);
#undef EXPECT_FLOW_ERR

	rc_engine_objects(r.e.eng[1], &o);
	ck_assert_uint_eq(o.flow, 0);
	ck_assert_int_eq(rc_qp_destroy(raw), 0);
	ck_assert_int_eq(rc_qp_destroy(rc), 0);
	ck_assert_int_eq(rc_qp_destroy(ud), 0);
	raw_fini(&r);
}
END_TEST

Suite *rc_raw_suite(void)
{
	Suite *s = suite_create("rc_raw");
	TCase *tc = tcase_create("raw");

	tcase_add_test(tc, raw_frame_arrives_whole);
	tcase_add_test(tc, raw_no_matching_flow);
	tcase_add_test(tc, raw_loopback_same_engine);
	tcase_add_loop_test(tc, raw_flow_priority, 0, 2);
	tcase_add_test(tc, raw_flow_ipv6_tcp_and_empty);
	tcase_add_test(tc, raw_roce_unaffected);
	tcase_add_test(tc, raw_recv_errors);
	tcase_add_loop_test(tc, raw_send_bad_length, 0, 2);
	tcase_add_test(tc, raw_flow_errors);
	tcase_add_loop_test(tc, raw_rss_toeplitz, 0, 2);
	tcase_add_loop_test(tc, raw_sniffer_sees_all, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}
