// SPDX-License-Identifier: MIT
/* The replay runner's judges can fail: committed fixtures, each changed in one place, must FAIL. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"

static char tmpdir[64];

static void setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/uroce-replay-test-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f, "%s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = 0;
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static void spit(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	fclose(f);
}

/*
 * Copy fixture @name into the temporary directory with the first @from in
 * its text replaced by @to, run it, and return the runner's verdict (1
 * passed, 0 failed) with its report in @report.
 */
static int run_changed(const char *name, const char *from, const char *to, char *report, size_t cap)
{
	static const char *const suffix[] = { ".in.pcap", ".out.pcap" };
	char src[1024], dst[1024], *text, *at, *changed;
	struct rp_options o = { .backend = RP_PCAP_PORT };
	size_t len, n;
	FILE *out;
	int r;

	for (int i = 0; i < 2; i++) {
		char *data;

		snprintf(src, sizeof(src), "%s/spec/%s%s", UROCE_FIXTURES_DIR, name, suffix[i]);
		snprintf(dst, sizeof(dst), "%s/%s%s", tmpdir, name, suffix[i]);
		data = slurp(src, &len);
		spit(dst, data, len);
		free(data);
	}
	snprintf(src, sizeof(src), "%s/spec/%s.fixture", UROCE_FIXTURES_DIR, name);
	text = slurp(src, &len);
	at = strstr(text, from);
	ck_assert_msg(at, "'%s' is not in %s", from, src);
	changed = malloc(len + strlen(to) + 1);
	n = (size_t)(at - text);
	memcpy(changed, text, n);
	strcpy(changed + n, to);
	strcat(changed, at + strlen(from));
	snprintf(dst, sizeof(dst), "%s/%s.fixture", tmpdir, name);
	spit(dst, changed, strlen(changed));
	free(text);
	free(changed);

	out = fmemopen(report, cap, "w");
	o.out = out;
	r = replay_fixture(dst, &o);
	fclose(out);
	return r;
}

static const struct {
	const char	*fixture, *from, *to;
	int		verdict;
	const char	*report;
} cases[] = {
	/* Unchanged: passes. */
	{ "rc_send_only", "role", "role", 1, "PASS rc_send_only" },
	/* A completion field. */
	{ "rc_send_only", "byte_len=64", "byte_len=63", 0, "completions: qp q recv" },
	/* A completion that does not come. */
	{ "rc_send_only", "expect cqe", "expect cqe q recv wr_id=9 status=SUCCESS opcode=RECV byte_len=1\nexpect cqe",
	  0, "completions" },
	/* One byte of memory. */
	{ "rc_send_only", "expect mem buf 0x100 hex:", "expect mem buf 0x100 hex:00", 0, "memory: mr buf" },
	/* A counter, a state, an event. */
	{ "rc_send_only", "expect cqe", "expect counter rnr_naks_tx 1\nexpect cqe", 0, "counter rnr_naks_tx" },
	{ "rc_send_only", "expect cqe", "expect state q ERR\nexpect cqe", 0, "state RTS, expected ERR" },
	{ "rc_send_only", "expect cqe", "expect event q QP_FATAL\nexpect cqe", 0, "events" },
	/* No receive WQE: uroce answers with an RNR NAK instead of the ACK. */
	{ "rc_send_only", "post_recv q wr_id=1 sge=buf:256:256", "", 0, "packets:" },
	/* The rkey the packets use no longer names the MR: a remote access NAK instead of the ACK. */
	{ "rc_write_only", "rkey=0x1a2b3c4d", "rkey=0x1a2b3c4e", 0, "packets:" },
	/* A counter name that does not exist is the fixture's error, reported. */
	{ "rc_write_only", "role", "expect counter no_such_thing 0\nrole", 0, "no counter named no_such_thing" },
};

START_TEST(judges_fail)
{
	char report[1 << 16] = "";
	int r = run_changed(cases[_i].fixture, cases[_i].from, cases[_i].to, report, sizeof(report));

	ck_assert_msg(r == cases[_i].verdict, "case %d: verdict %d, report:\n%s", _i, r, report);
	ck_assert_msg(strstr(report, cases[_i].report), "case %d: '%s' not in:\n%s", _i,
		      cases[_i].report, report);
}
END_TEST

Suite *replay_run_suite(void);

Suite *replay_run_suite(void)
{
	Suite *s = suite_create("replay_run");
	TCase *tc = tcase_create("judges");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, judges_fail, 0, sizeof(cases) / sizeof(cases[0]));
	suite_add_tcase(s, tc);
	return s;
}
