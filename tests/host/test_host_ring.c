// SPDX-License-Identifier: MIT
/* Same-host delivery rings: order, a full ring, the wrong process, peers closing, dying, exec'ing. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "host_ring.h"
#include "host_qpn.h"
#include "run_dir.h"

static char err[512];

static void setup(void)
{
	test_run_dir();
}

static void teardown(void)
{
	test_run_dir_remove();
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
	uint32_t start = host_qpn_proc_start(me);
	uint8_t in[HOST_RING_FRAME_MAX], out[HOST_RING_FRAME_MAX];
	struct host_ring *l;

	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert(!host_ring_ready(l));
	ck_assert_uint_eq(host_ring_recv(l, out, sizeof(out)), 0);
	for (uint32_t i = 0; i < HOST_RING_SLOTS; i++) {
		fill(in, 60 + i, i);
		ck_assert_int_eq(host_ring_send(l, me, start, in, 60 + i), 0);
	}
	ck_assert_int_eq(host_ring_send(l, me, start, in, 60), -ENOBUFS);
	ck_assert(host_ring_ready(l));
	for (uint32_t i = 0; i < HOST_RING_SLOTS; i++) {
		fill(in, 60 + i, i);
		ck_assert_uint_eq(host_ring_recv(l, out, sizeof(out)), 60 + i);
		ck_assert_int_eq(memcmp(in, out, 60 + i), 0);
		if (i == 0)	/* one slot free again */
			ck_assert_int_eq(host_ring_send(l, me, start, in, 64), 0);
	}
	ck_assert_uint_eq(host_ring_recv(l, out, sizeof(out)), 64);
	ck_assert(!host_ring_ready(l));
	ck_assert_int_eq(host_ring_send(l, me, start, in, HOST_RING_FRAME_MAX + 1), -EMSGSIZE);
	/* A frame larger than the reader's buffer is dropped, the next one still comes. */
	ck_assert_int_eq(host_ring_send(l, me, start, in, 2000), 0);
	ck_assert_int_eq(host_ring_send(l, me, start, in, 100), 0);
	ck_assert_uint_eq(host_ring_recv(l, out, 1500), 100);
	host_ring_close(l);
}
END_TEST

/* Another process with the same PID (another start time), or no ring at all: -ENOENT. */
START_TEST(wrong_process_refused)
{
	int32_t me = (int32_t)getpid();
	uint32_t start = host_qpn_proc_start(me);
	uint8_t in[64] = { 0 };
	struct host_ring *l;

	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_int_eq(host_ring_send(l, me, start + 2, in, sizeof(in)), -ENOENT);
	ck_assert_int_eq(host_ring_send(l, 0x7ffffff0, 0, in, sizeof(in)), -ENOENT);
	ck_assert_int_eq(host_ring_send(l, me, start, in, sizeof(in)), 0);
	host_ring_close(l);
}
END_TEST

/* Frames reach another process; once it closed, sending to it fails. */
START_TEST(between_processes)
{
	int ready[2], go[2], status;
	uint8_t in[300];
	struct host_ring *l;
	char c = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	ck_assert_int_eq(pipe(go), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct host_ring *cl;
		uint8_t out[HOST_RING_FRAME_MAX], want[300];
		int got = 0;

		if (host_ring_open("lvA", &cl, err, sizeof(err)))
			_exit(2);
		if (write(ready[1], &c, 1) != 1)
			_exit(3);
		for (int spins = 0; got < 3 && spins < 5000; spins++) {
			uint32_t n;

			if (!host_ring_ready(cl)) {
				nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
				continue;
			}
			n = host_ring_recv(cl, out, sizeof(out));
			fill(want, sizeof(want), (uint32_t)got);
			if (n != sizeof(want) || memcmp(out, want, n))
				_exit(4);
			got++;
		}
		if (read(go[0], &c, 1) != 1)
			_exit(5);
		host_ring_close(cl);
		_exit(got == 3 ? 0 : 6);
	}
	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	for (uint32_t i = 0; i < 3; i++) {
		fill(in, sizeof(in), i);
		ck_assert_int_eq(host_ring_send(l, pid, host_qpn_proc_start(pid), in, sizeof(in)), 0);
	}
	ck_assert_int_eq(write(go[1], &c, 1), 1);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	/* Closed: the mapping we hold says so, and its file is gone. */
	ck_assert_int_eq(host_ring_send(l, pid, 0, in, sizeof(in)), -ENOENT);
	host_ring_close(l);
}
END_TEST

/* A process that died without closing leaves a ring; the next open removes it. */
START_TEST(dead_process_ring_removed)
{
	uint8_t in[64] = { 0 };
	struct host_ring *l;
	int status;
	pid_t pid;

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct host_ring *cl;

		_exit(host_ring_open("lvA", &cl, err, sizeof(err)) ? 2 : 0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_int_eq(host_ring_send(l, pid, 0, in, sizeof(in)), -ENOENT);
	host_ring_close(l);
}
END_TEST

/*
 * The published area: ours is the peer's view of it; a peer that ended
 * without closing (its ring still says live) gives none any more.
 */
/* @pid's comm (its program's name) is @name: it has exec'd. */
static bool runs_program(pid_t pid, const char *name)
{
	char path[64], comm[32] = "";
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return false;
	if (!fgets(comm, sizeof(comm), f))
		comm[0] = '\0';
	fclose(f);
	comm[strcspn(comm, "\n")] = '\0';
	return !strcmp(comm, name);
}

enum peer_end {
	PEER_EXIT,	/* exit without closing: the ring stays live */
	PEER_EXEC,	/* exec sleep */
	PEER_STOP,	/* stop running, say so, wait for another byte, exit */
};

/* A child process with a ring, and the two pipes between it and the test. */
struct peer {
	int	ready[2];	/* child to test */
	int	go[2];		/* test to child */
	pid_t	pid;
};

static void peer_wait(struct peer *p)
{
	char c;

	ck_assert_int_eq(read(p->ready[0], &c, 1), 1);
}

static void peer_go(struct peer *p)
{
	char c = 0;

	ck_assert_int_eq(write(p->go[1], &c, 1), 1);
}

/* Its exit status once it ended (-1: killed). */
static int peer_reap(struct peer *p)
{
	int status;

	ck_assert_int_eq(waitpid(p->pid, &status, 0), p->pid);
	for (int i = 0; i < 2; i++) {
		close(p->ready[i]);
		close(p->go[i]);
	}
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static uint32_t peer_start_time(const struct peer *p)
{
	return host_qpn_proc_start(p->pid);
}

/*
 * A child opens a ring and publishes a byte; it runs (holds its ring's running
 * mutex) if @hold.  Returns once it is ready; after peer_go() it does @end.
 */
static void peer_start(struct peer *p, bool hold, enum peer_end end)
{
	struct host_ring *cl;
	char c = 0;

	ck_assert_int_eq(pipe(p->ready), 0);
	ck_assert_int_eq(pipe(p->go), 0);
	p->pid = fork();
	ck_assert_int_ge(p->pid, 0);
	if (p->pid) {
		peer_wait(p);
		return;
	}
	if (host_ring_open("lvA", &cl, err, sizeof(err)))
		_exit(2);
	((uint8_t *)host_ring_shared(cl))[HOST_RING_SHARED_BYTES - 1] = 0x5a;
	if (hold)
		host_ring_hold_running(cl);
	if (write(p->ready[1], &c, 1) != 1 || read(p->go[0], &c, 1) != 1)
		_exit(3);
	if (end == PEER_EXEC)
		execl("/bin/sleep", "sleep", "30", (char *)NULL);
	if (end == PEER_STOP) {
		host_ring_release_running(cl);
		if (write(p->ready[1], &c, 1) != 1 || read(p->go[0], &c, 1) != 1)
			_exit(3);
	}
	_exit(0);	/* no close: the ring stays live */
}

/* The published area is reached while the peer's progress runs, and never once it ended. */
START_TEST(shared_area_until_the_peer_ends)
{
	struct host_ring *l;
	struct peer p;
	uint8_t *area;

	peer_start(&p, true, PEER_EXIT);
	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_uint_eq(((uint8_t *)host_ring_shared(l))[0], 0);
	ck_assert_ptr_null(host_ring_peer_shared(l, p.pid, peer_start_time(&p) + 1));
	area = host_ring_peer_shared(l, p.pid, peer_start_time(&p));
	ck_assert_ptr_nonnull(area);
	ck_assert_uint_eq(area[HOST_RING_SHARED_BYTES - 1], 0x5a);
	/* Mapped and held from here: only the running mutex can tell that the process ended. */
	peer_go(&p);
	ck_assert_int_eq(peer_reap(&p), 0);
	ck_assert_ptr_null(host_ring_peer_shared(l, p.pid, 0));
	host_ring_close(l);
}
END_TEST

/* A process that exec'd keeps its PID and start time, but is another program: never reached. */
START_TEST(shared_area_not_after_exec)
{
	struct host_ring *l;
	struct peer p;

	peer_start(&p, true, PEER_EXEC);
	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_ptr_nonnull(host_ring_peer_shared(l, p.pid, peer_start_time(&p)));
	peer_go(&p);
	/* The kernel lets go of the old program's robust mutexes before it renames the process. */
	for (int i = 0; i < 5000 && !runs_program(p.pid, "sleep"); i++)
		usleep(1000);
	ck_assert(runs_program(p.pid, "sleep"));
	ck_assert_ptr_null(host_ring_peer_shared(l, p.pid, peer_start_time(&p)));
	kill(p.pid, SIGKILL);
	peer_reap(&p);
	host_ring_close(l);
}
END_TEST

/* Only while the peer's progress runs: not before it starts, not after it stops. */
START_TEST(shared_area_only_while_running)
{
	struct host_ring *l;
	struct peer p;

	peer_start(&p, false, PEER_EXIT);
	ck_assert_int_eq(host_ring_open("lvA", &l, err, sizeof(err)), 0);
	ck_assert_ptr_null(host_ring_peer_shared(l, p.pid, peer_start_time(&p)));
	peer_go(&p);
	peer_reap(&p);

	peer_start(&p, true, PEER_STOP);
	ck_assert_ptr_nonnull(host_ring_peer_shared(l, p.pid, peer_start_time(&p)));
	peer_go(&p);
	peer_wait(&p);		/* stopped running, still alive */
	ck_assert_ptr_null(host_ring_peer_shared(l, p.pid, peer_start_time(&p)));
	peer_go(&p);
	ck_assert_int_eq(peer_reap(&p), 0);
	host_ring_close(l);
}
END_TEST

START_TEST(bad_key)
{
	struct host_ring *l;

	ck_assert_int_eq(host_ring_open("a/b", &l, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(host_ring_open("", &l, err, sizeof(err)), -EINVAL);
}
END_TEST

Suite *host_ring_suite(void);

Suite *host_ring_suite(void)
{
	Suite *s = suite_create("host_ring");
	TCase *t = tcase_create("loop");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, order_and_full_ring);
	tcase_add_test(t, wrong_process_refused);
	tcase_add_test(t, between_processes);
	tcase_add_test(t, dead_process_ring_removed);
	tcase_add_test(t, shared_area_until_the_peer_ends);
	tcase_add_test(t, shared_area_not_after_exec);
	tcase_add_test(t, shared_area_only_while_running);
	tcase_add_test(t, bad_key);
	suite_add_tcase(s, t);
	return s;
}
