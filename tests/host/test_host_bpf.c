// SPDX-License-Identifier: MIT
/* The embedded tc ingress program, run by the kernel on test frames: which it keeps from the stack. */
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <check.h>
#include <linux/pkt_cls.h>
#include <string.h>

#include "host_bpf.h"
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

/* The program's verdict on one frame (BPF_PROG_TEST_RUN). */
static int verdict(const uint8_t *frame, uint32_t len)
{
	uint8_t out[256];
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);

	ck_assert_int_eq(bpf_prog_test_run_opts(prog_fd, &o), 0);
	return (int)o.retval;
}

/* Loop: 0 RoCE v2 over IPv4, 1 over IPv6, 2 RoCE v1, 3 RoCE v1 with a VLAN tag. */
START_TEST(roce_frames_stop_at_tc)
{
	struct wire_build_desc d = {
		.src_mac = { 2, 0, 0, 0, 0, 1 }, .dst_mac = { 2, 0, 0, 0, 0, 2 },
		.ip_version = _i ? 6 : 4, .roce_v1 = _i >= 2, .has_vlan = _i == 3, .vlan_tci = 5,
		.src_gid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 },
		.dst_gid = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 },
		.opcode = WIRE_OPC_RC | WIRE_OP_SEND_ONLY, .dest_qp = 0x11,
	};
	uint8_t f[128];
	uint32_t len = wire_build(f, sizeof(f), &d, "hello", 5);

	ck_assert_uint_ne(len, 0);
	ck_assert_int_eq(verdict(f, len), TC_ACT_SHOT);
	if (d.roce_v1) {
		/* A GRH that says UDP follows carries no BTH: the kernel's to judge. */
		f[len - 5 - 3 - 4 - 12 - 40 + 6] = WIRE_IPPROTO_UDP;
		ck_assert_int_eq(verdict(f, len), TC_ACT_OK);
	} else {
		/* UDP to another port. */
		f[len - 5 - 3 - 4 - 12 - 6] ^= 1;
		ck_assert_int_eq(verdict(f, len), TC_ACT_OK);
	}
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
	return s;
}
