// SPDX-License-Identifier: MIT
/* The embedded tc ingress program, run by the kernel on test frames: which it keeps from the stack. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <arpa/inet.h>
#include <check.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "host_bpf.h"
#include "host_qpn.h"
#include "uroce/wire.h"

static struct bpf_object *obj;
static int prog_fd = -1;

static void setup(void)
{
	struct bpf_program *prog;

	obj = bpf_object__open_mem(host_bpf_tc_ingress_obj, host_bpf_tc_ingress_obj_len, NULL);
	ck_assert_ptr_nonnull(obj);
	ck_assert_int_eq(bpf_object__load(obj), 0);
	prog = bpf_object__find_program_by_name(obj, "uroce_tc_ingress");
	ck_assert_ptr_nonnull(prog);
	prog_fd = bpf_program__fd(prog);
	ck_assert_int_ge(prog_fd, 0);
}

static void teardown(void)
{
	bpf_object__close(obj);
	prog_fd = -1;
}

/* The tc program's verdict on one frame (BPF_PROG_TEST_RUN). */
static int verdict(const uint8_t *frame, uint32_t len)
{
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	ck_assert_int_eq(bpf_prog_test_run_opts(prog_fd, &o), 0);
	return (int)o.retval;
}

/* Frame kind @kind: 0 RoCE v2 over IPv4, 1 over IPv6, 2 RoCE v1, 3 RoCE v1 with a VLAN tag. */
static struct wire_build_desc roce_send(int kind, uint32_t dest_qp)
{
	return (struct wire_build_desc){
		.src_mac = { 2, 0, 0, 0, 0, 1 }, .dst_mac = { 2, 0, 0, 0, 0, 2 },
		.ip_version = kind ? 6 : 4, .roce_v1 = kind >= 2, .has_vlan = kind == 3, .vlan_tci = 5,
		.src_gid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 },
		.dst_gid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 },
		.opcode = WIRE_OPC_RC | WIRE_OP_SEND_ONLY, .dest_qp = dest_qp,
	};
}

/*
 * Frame @f (@len bytes, a SEND of "hello" as roce_send() builds it) made
 * not RoCE: a RoCE v1 GRH that says UDP follows, which carries no BTH; else
 * UDP to another port.
 */
static void unmake_roce(uint8_t *f, uint32_t len, const struct wire_build_desc *d)
{
	if (d->roce_v1)
		f[len - 5 - 3 - 4 - 12 - 40 + 6] = WIRE_IPPROTO_UDP;
	else
		f[len - 5 - 3 - 4 - 12 - 6] ^= 1;
}

/* Loop: roce_send()'s four kinds. */
START_TEST(roce_frames_stop_at_tc)
{
	struct wire_build_desc d = roce_send(_i, 0x11);
	uint8_t f[128];
	uint32_t len = wire_build(f, sizeof(f), &d, "hello", 5);

	ck_assert_uint_ne(len, 0);
	ck_assert_int_eq(verdict(f, len), TC_ACT_SHOT);
	/* Not RoCE: the kernel's to judge. */
	unmake_roce(f, len, &d);
	ck_assert_int_eq(verdict(f, len), TC_ACT_OK);
}
END_TEST

/* ---- The QPN socket filter, on a real packet socket in a network namespace of its own ---- */

static int lo_index(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ioctl(fd, SIOCGIFFLAGS, &ifr), 0);
	ifr.ifr_flags |= IFF_UP;
	ck_assert_int_eq(ioctl(fd, SIOCSIFFLAGS, &ifr), 0);
	close(fd);
	return (int)if_nametoindex("lo");
}

/* What one frame built from @d with DestQP @qpn does at socket @rx: copies of it received. */
static unsigned copies_in(int rx, int tx, const struct sockaddr_ll *at, struct wire_build_desc d,
			  uint32_t qpn, bool not_roce)
{
	uint8_t fr[128], got[2048];
	unsigned n = 0;
	uint32_t len;
	ssize_t r;

	d.dest_qp = qpn;
	len = wire_build(fr, sizeof(fr), &d, "hello", 5);
	ck_assert_uint_ne(len, 0);
	if (not_roce)
		unmake_roce(fr, len, &d);
	ck_assert_int_eq(sendto(tx, fr, len, 0, (const struct sockaddr *)at, sizeof(*at)), (int)len);
	usleep(20000);
	/*
	 * lo hands each frame to the socket twice: as it leaves and as it
	 * arrives (a VLAN tag then taken out of the bytes): same BTH onwards.
	 */
	while ((r = recv(rx, got, sizeof(got), MSG_DONTWAIT)) > 0)
		n += (r == (ssize_t)len || r == (ssize_t)len - 4) &&
		     !memcmp(got + r - 24, fr + len - 24, 24);
	return n;
}

/*
 * A RoCE frame for a QPN of the table whose bit is clear stays out; its own
 * QPN's, QP1's, a multicast group's, one outside the table and anything not
 * RoCE come in.  Loop: roce_send()'s four kinds, then the same four on the
 * broker's (strict) filter, where what is not RoCE stays out too, and so
 * does a frame to another MAC.  These frames are linear; it-parallel has the
 * af_packet PMD's, sent from a TX ring, whose headers are in pages.
 */
START_TEST(qpn_filter_keeps_out_other_qpns)
{
	bool strict = _i >= 4;
	struct wire_build_desc d = roce_send(_i % 4, 0);
	static const struct {
		uint32_t	qpn;
		bool		in, not_roce;
	} cases[] = {
		{ HOST_QPN_BASE + 0x123, true, false },	/* ours */
		{ HOST_QPN_BASE + 0x124, false, false },	/* another process's */
		{ HOST_QPN_BASE, false, false },
		{ HOST_QPN_BASE + HOST_QPN_SLOTS - 1, true, false },	/* ours, the last slot */
		{ WIRE_GSI_QPN, true, false },
		{ WIRE_MCAST_QPN, true, false },
		{ HOST_QPN_BASE + HOST_QPN_SLOTS, true, false },	/* outside the table: ours to judge */
		{ HOST_QPN_BASE + 0x124, true, true },	/* not RoCE (unmake_roce()): out if strict */
	};
	struct sockaddr_ll at = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL) };
	struct host_qpn_filter f;
	char err[256];
	int rx, tx;

	ck_assert_int_eq(unshare(CLONE_NEWNET), 0);
	at.sll_ifindex = lo_index();
	rx = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ALL));
	ck_assert_int_ge(rx, 0);
	ck_assert_int_eq(bind(rx, (struct sockaddr *)&at, sizeof(at)), 0);
	ck_assert_int_eq(host_qpn_filter_load(&f, err, sizeof(err)), 0);
	f.bits[0x123 / 64] |= 1ull << (0x123 % 64);
	f.bits[(HOST_QPN_SLOTS - 1) / 64] |= 1ull << ((HOST_QPN_SLOTS - 1) % 64);
	if (strict)
		host_qpn_filter_strict(&f, at.sll_ifindex, d.dst_mac);
	ck_assert_int_eq(host_qpn_filter_attach(&f, rx, err, sizeof(err)), 0);
	tx = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(tx, 0);
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		bool in = cases[k].in && !(strict && cases[k].not_roce);
		unsigned n = copies_in(rx, tx, &at, d, cases[k].qpn, cases[k].not_roce);

		ck_assert_msg(in ? n == 2 : n == 0, "case %zu, QPN 0x%x: %u of 2 copies in",
			      k, cases[k].qpn, n);
	}
	if (strict) {
		/* Our QPN, but to another MAC: another host's (promiscuous, or as it leaves). */
		d.dst_mac[5] ^= 0x10;
		ck_assert_uint_eq(copies_in(rx, tx, &at, d, HOST_QPN_BASE + 0x123, false), 0);
		/* A multicast MAC (the group's QPN): anyone may join a group. */
		memcpy(d.dst_mac, (uint8_t[]){ 0x01, 0x00, 0x5e, 0x01, 0x02, 0x03 }, 6);
		ck_assert_uint_eq(copies_in(rx, tx, &at, d, WIRE_MCAST_QPN, false), 2);
	}
	host_qpn_filter_close(&f);
	close(tx);
	close(rx);
}
END_TEST

Suite *host_bpf_suite(void);

Suite *host_bpf_suite(void)
{
	Suite *s = suite_create("host_bpf");
	TCase *t = tcase_create("tc_ingress");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_loop_test(t, roce_frames_stop_at_tc, 0, 4);
	suite_add_tcase(s, t);
	t = tcase_create("qpn_filter");
	tcase_add_loop_test(t, qpn_filter_keeps_out_other_qpns, 0, 8);
	suite_add_tcase(s, t);
	return s;
}
