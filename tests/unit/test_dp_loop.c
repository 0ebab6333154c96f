// SPDX-License-Identifier: MIT
/* Same-host delivery rings: order, a full ring, the wrong process, peers closing and dying. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "dp_loop.h"
#include "dp_qpn.h"
#include "dp_testutil.h"

static char err[512];

static void setup(void)
{
	dp_test_run_dir();
}

static void teardown(void)
{
	dp_test_run_dir_remove();
}

static void fill(uint8_t *buf, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		buf[i] = (uint8_t)(seed * 31 + i);
}

/* Frames come out whole and in order; a full ring refuses, and takes again once read. */
START_TEST(order_and_full_ring)
{
	int32_t me = (int32_t)getpid();
	uint32_t start = dp_qpn_proc_start(me);
	uint8_t in[DP_LOOP_FRAME_MAX], out[DP_LOOP_FRAME_MAX];
	struct dp_loop *l;

	ck_assert_int_eq(dp_loop_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert(!dp_loop_ready(l));
	ck_assert_uint_eq(dp_loop_recv(l, out, sizeof(out)), 0);
	for (uint32_t i = 0; i < DP_LOOP_SLOTS; i++) {
		fill(in, 60 + i, i);
		ck_assert_int_eq(dp_loop_send(l, me, start, in, 60 + i), 0);
	}
	ck_assert_int_eq(dp_loop_send(l, me, start, in, 60), -ENOBUFS);
	ck_assert(dp_loop_ready(l));
	for (uint32_t i = 0; i < DP_LOOP_SLOTS; i++) {
		fill(in, 60 + i, i);
		ck_assert_uint_eq(dp_loop_recv(l, out, sizeof(out)), 60 + i);
		ck_assert_int_eq(memcmp(in, out, 60 + i), 0);
		if (i == 0)	/* one slot free again */
			ck_assert_int_eq(dp_loop_send(l, me, start, in, 64), 0);
	}
	ck_assert_uint_eq(dp_loop_recv(l, out, sizeof(out)), 64);
	ck_assert(!dp_loop_ready(l));
	ck_assert_int_eq(dp_loop_send(l, me, start, in, DP_LOOP_FRAME_MAX + 1), -EMSGSIZE);
	/* A frame larger than the reader's buffer is dropped, the next one still comes. */
	ck_assert_int_eq(dp_loop_send(l, me, start, in, 2000), 0);
	ck_assert_int_eq(dp_loop_send(l, me, start, in, 100), 0);
	ck_assert_uint_eq(dp_loop_recv(l, out, 1500), 100);
	dp_loop_close(l);
}
END_TEST

/* Another process with the same PID (another start time), or no ring at all: -ENOENT. */
START_TEST(wrong_process_refused)
{
	int32_t me = (int32_t)getpid();
	uint32_t start = dp_qpn_proc_start(me);
	uint8_t in[64] = { 0 };
	struct dp_loop *l;

	ck_assert_int_eq(dp_loop_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_int_eq(dp_loop_send(l, me, start + 2, in, sizeof(in)), -ENOENT);
	ck_assert_int_eq(dp_loop_send(l, 0x7ffffff0, 0, in, sizeof(in)), -ENOENT);
	ck_assert_int_eq(dp_loop_send(l, me, start, in, sizeof(in)), 0);
	dp_loop_close(l);
}
END_TEST

/* Frames reach another process; once it closed, sending to it fails. */
START_TEST(between_processes)
{
	int ready[2], go[2], status;
	uint8_t in[300];
	struct dp_loop *l;
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct dp_loop *cl;
		uint8_t out[DP_LOOP_FRAME_MAX], want[300];
		int got = 0;

		if (dp_loop_open("lvA", &cl, err, sizeof(err)))
			_exit(2);
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		for (int spins = 0; got < 3 && spins < 5000; spins++) {
			uint32_t n;

			if (!dp_loop_ready(cl)) {
				nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
				continue;
			}
			n = dp_loop_recv(cl, out, sizeof(out));
			fill(want, sizeof(want), (uint32_t)got);
			if (n != sizeof(want) || memcmp(out, want, n))
				_exit(4);
			got++;
		}
		if (read(go[0], &c, 1) != 1)
			_exit(5);
		dp_loop_close(cl);
		_exit(got == 3 ? 0 : 6);
	}
	ck_assert_int_eq(dp_loop_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	for (uint32_t i = 0; i < 3; i++) {
		fill(in, sizeof(in), i);
		ck_assert_int_eq(dp_loop_send(l, pid, dp_qpn_proc_start(pid), in, sizeof(in)), 0);
	}
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* Closed: the mapping we hold says so, and its file is gone. */
	ck_assert_int_eq(dp_loop_send(l, pid, 0, in, sizeof(in)), -ENOENT);
	dp_loop_close(l);
}
END_TEST

/* A process that died without closing leaves a ring; the next open removes it. */
START_TEST(dead_process_ring_removed)
{
	uint8_t in[64] = { 0 };
	struct dp_loop *l;
	int status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct dp_loop *cl;

		_exit(dp_loop_open("lvA", &cl, err, sizeof(err)) ? 2 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(dp_loop_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_int_eq(dp_loop_send(l, pid, 0, in, sizeof(in)), -ENOENT);
	dp_loop_close(l);
}
END_TEST

START_TEST(bad_key)
{
	struct dp_loop *l;

	ck_assert_int_eq(dp_loop_open("a/b", &l, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(dp_loop_open("", &l, err, sizeof(err)), -EINVAL);
}
END_TEST

Suite *dp_loop_suite(void);

Suite *dp_loop_suite(void)
{
	Suite *s = suite_create("dp_loop");
	TCase *t = tcase_create("loop");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, order_and_full_ring);
	tcase_add_test(t, wrong_process_refused);
	tcase_add_test(t, between_processes);
	tcase_add_test(t, dead_process_ring_removed);
	tcase_add_test(t, bad_key);
	suite_add_tcase(s, t);
	return s;
}
