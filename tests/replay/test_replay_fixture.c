// SPDX-License-Identifier: MIT
/* The fixture text format: every committed fixture parses, mistakes are named with their line. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"

/* ---- Every committed fixture ---- */

static const char *const dirs[] = { "spec", "rxe" };

START_TEST(committed_fixtures_parse)
{
	char dir[1024];
	struct dirent **list;
	int n, parsed = 0;

	snprintf(dir, sizeof(dir), "%s/%s", UROCE_FIXTURES_DIR, dirs[_i]);
	n = scandir(dir, &list, NULL, alphasort);
	ck_assert_int_gt(n, 0);
	for (int i = 0; i < n; i++) {
		size_t len = strlen(list[i]->d_name);
		char path[2048], err[2048];
		struct fixture fx;
		struct rp_frames in = { 0 }, out = { 0 };

		if (len > 8 && !strcmp(list[i]->d_name + len - 8, ".fixture")) {
			snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
			ck_assert_msg(!fixture_load(path, &fx, err, sizeof(err)), "%s", err);
			ck_assert_msg(!rp_frames_read(fx.in_pcap, &in, err, sizeof(err)), "%s", err);
			ck_assert_msg(!rp_frames_read(fx.out_pcap, &out, err, sizeof(err)), "%s", err);
			ck_assert_uint_gt(fx.n_qps, 0);
			ck_assert_uint_gt(in.n + out.n, 0);
			rp_frames_free(&in);
			rp_frames_free(&out);
			fixture_free(&fx);
			parsed++;
		}
		free(list[i]);
	}
	free(list);
	ck_assert_int_gt(parsed, 10);
}
END_TEST

/* ---- Parsing a text ---- */

static char tmpdir[64];

static int load_text(const char *name, const char *text, struct fixture *fx, char *err, size_t cap)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.fixture", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	return fixture_load(path, fx, err, cap);
}

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/uroce-fixture-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

#define HEAD "uroce-fixture 1\nname t\nlocal mac=02:00:00:00:00:01 ip=10.0.0.1\n" \
	     "peer p mac=02:00:00:00:00:02 ip=10.0.0.2\n"

START_TEST(full_statements)
{
	static const char text[] =
		HEAD
		"timing stream  # a comment\n"
		"end 1500us\n"
		"mr buf len=300 iova=0x1000 access=LOCAL_WRITE,REMOTE_READ rkey=0xabc init=pattern:1\n"
		"mr two len=16 iova=0x2000 access=none init=hex:00ff\n"
		"qp q type=RC qpn=0x11 dest_qp=0x22 rq_psn=0xfffffe mtu=4096 timeout=3 retry_cnt=2\n"
		"qp u type=UD qpn=0x12 qkey=0x11111111\n"
		"post_recv q wr_id=5 sge=buf:0:100 sge=buf:200:50\n"
		"at 2ms post_send q wr_id=6 op=RDMA_WRITE_WITH_IMM sge=two:0:8 remote=0x55 rkey=0x66 imm=0x77 flags=SIGNALED,SOLICITED\n"
		"at 1s poke two 4 hex:aabb\n"
		"dereg two\n"
		"expect cqe q recv wr_id=5 status=SUCCESS opcode=RECV byte_len=10 flags=IMM,INV imm=0x1 invalidated_rkey=0xabc\n"
		"expect cqe q send wr_id=6 status=RETRY_EXC_ERR\n"
		"expect mem buf 0x10 fill:0x55:4\n"
		"expect counter drops.BAD_ICRC 3\n"
		"expect state q ERR\n"
		"expect event q QP_ACCESS_ERR\n"
		"ignore mem.two\n";
	struct fixture fx;
	char err[512];

	ck_assert_msg(!load_text("t", text, &fx, err, sizeof(err)), "%s", err);
	ck_assert_int_eq(fx.timing, FX_TIMING_STREAM);
	ck_assert_uint_eq(fx.end_ns, 1500000);
	ck_assert_uint_eq(fx.n_mrs, 2);
	/* pattern:1 as pcap-fixtures/gen/roce.py computes it (bytes 0..7 and 256..259). */
	ck_assert_mem_eq(fx.mrs[0].init, "\x1f\x26\x2d\x34\x3b\x42\x49\x50", 8);
	ck_assert_mem_eq(fx.mrs[0].init + 256, "\x2c\x33\x3a\x41", 4);
	ck_assert_mem_eq(fx.mrs[0].expect + 0x10, "\x55\x55\x55\x55", 4);
	ck_assert_uint_eq(fx.mrs[0].expect[0x14], fx.mrs[0].init[0x14]);
	ck_assert_mem_eq(fx.mrs[1].init, "\x00\xff\x00", 3);
	ck_assert_mem_eq(fx.mrs[1].expect + 4, "\xaa\xbb", 2);	/* pokes change the expectation */
	ck_assert(fx.mrs[1].ignore);
	ck_assert_uint_eq(fx.mrs[0].rkey, 0xabc);
	ck_assert(!fx.mrs[1].has_rkey);
	ck_assert_uint_eq(fx.n_qps, 2);
	ck_assert_uint_eq(fx.qps[0].rq_psn, 0xfffffe);
	ck_assert_uint_eq(fx.qps[0].mtu, 4096);
	ck_assert_uint_eq(fx.qps[0].expect_state, IBV_QPS_ERR);
	ck_assert_uint_eq(fx.qps[1].expect_state, IBV_QPS_RTS);
	ck_assert_int_eq(fx.qps[1].type, IBV_QPT_UD);
	ck_assert_uint_eq(fx.n_actions, 4);
	ck_assert_uint_eq(fx.actions[0].nsge, 2);
	ck_assert(!fx.actions[0].timed);
	ck_assert(fx.actions[1].timed);
	ck_assert_uint_eq(fx.actions[1].t_ns, 2000000);
	ck_assert_uint_eq(fx.actions[1].send_flags, IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	ck_assert_uint_eq(fx.actions[1].imm, 0x77);
	ck_assert_uint_eq(fx.n_cqes, 2);
	ck_assert_uint_eq(fx.cqes[0].flags, IBV_WC_WITH_IMM | IBV_WC_WITH_INV);
	ck_assert_uint_eq(fx.cqes[1].status, IBV_WC_RETRY_EXC_ERR);
	ck_assert_uint_eq(fx.n_counters, 1);
	ck_assert_uint_eq(fx.counters[0].value, 3);
	ck_assert_uint_eq(fx.n_events, 1);
	ck_assert_int_eq(fx.events[0].type, IBV_EVENT_QP_ACCESS_ERR);
	fixture_free(&fx);
}
END_TEST

/* One broken line each; the message must name the line and what is wrong. */
static const struct {
	const char	*text;
	const char	*msg;
} broken[] = {
	{ "name t\n", "t.fixture:1: the first statement must be 'uroce-fixture 1'" },
	{ "uroce-fixture 2\n", ":1: format version 2" },
	{ HEAD "mr b len=10 iova=0 access=LOCAL_WRITE init=hex:0\n", ":5: hex: needs an even" },
	{ HEAD "mr b len=10 iova=0 access=LOCAL_SMURF\n", ":5: unknown access flag 'LOCAL_SMURF'" },
	{ HEAD "mr b len=2 iova=0 access=none init=hex:001122\n", ":5: hex: 3 bytes do not fit in 2" },
	{ HEAD "qp q type=XX qpn=1\n", ":5: qp type 'XX'" },
	{ HEAD "qp q type=RC qpn=1 mtu=1000\n", ":5: mtu=1000: path MTU is" },
	{ HEAD "qp q type=RC qpn=0x1000000\n", ":5: qpn=0x1000000: larger than" },
	{ HEAD "qp q type=RC qpn=1\nqp r type=RC qpn=1\n", ":6: QPN 0x1 used twice" },
	{ HEAD "post_recv nope wr_id=1\n", ":5: no QP named 'nope'" },
	{ HEAD "mr b len=8 iova=0 access=none\nqp q type=RC qpn=1\npost_recv q wr_id=1 sge=b:4:8\n",
	  ":7: sge b:4:8 is outside the MR" },
	{ HEAD "qp q type=RC qpn=1\npost_send q wr_id=1\n", ":6: op= missing" },
	{ HEAD "qp q type=RC qpn=1\nat 5 post_recv q wr_id=1\n", ":6: '5': the time needs a unit" },
	{ HEAD "qp q type=RC qpn=1\nexpect cqe q recv wr_id=1 status=SUCCESS opcode=RECV\n",
	  ":6: a successful receive completion needs byte_len=" },
	{ HEAD "qp q type=RC qpn=1\nexpect cqe q send wr_id=1 status=NICE\n", ":6: unknown completion status 'NICE'" },
	{ HEAD "qp q type=RC qpn=1\nfrobnicate q\n", ":6: 'frobnicate' is not an action" },
	{ "uroce-fixture 1\nname other\nlocal mac=02:00:00:00:00:01 ip=10.0.0.1\n",
	  "the name statement must match the file name" },
	{ "uroce-fixture 1\nname t\nlocal mac=02:00:00:00:00:01 ip=300.0.0.1\n", ":3: '300.0.0.1' is not an IPv4" },
};

START_TEST(broken_lines)
{
	struct fixture fx;
	char err[512] = "";

	ck_assert_int_ne(load_text("t", broken[_i].text, &fx, err, sizeof(err)), 0);
	ck_assert_msg(strstr(err, broken[_i].msg), "case %d: got '%s', want '%s'", _i, err, broken[_i].msg);
}
END_TEST

START_TEST(missing_file)
{
	struct fixture fx;
	char err[512];

	ck_assert_int_lt(fixture_load("/nonexistent/x.fixture", &fx, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent/x.fixture: No such file"));
}
END_TEST

Suite *replay_fixture_suite(void);

Suite *replay_fixture_suite(void)
{
	Suite *s = suite_create("replay_fixture");
	TCase *committed = tcase_create("committed");
	TCase *text = tcase_create("text");

	tcase_set_timeout(committed, 60);
	tcase_add_loop_test(committed, committed_fixtures_parse, 0, sizeof(dirs) / sizeof(dirs[0]));
	suite_add_tcase(s, committed);
	tcase_add_checked_fixture(text, setup, teardown);
	tcase_add_test(text, full_statements);
	tcase_add_loop_test(text, broken_lines, 0, sizeof(broken) / sizeof(broken[0]));
	tcase_add_test(text, missing_file);
	suite_add_tcase(s, text);
	return s;
}
