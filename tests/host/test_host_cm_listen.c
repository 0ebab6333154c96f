// SPDX-License-Identifier: MIT
/* The host-wide rdma_cm listen table: listeners, the answerer, released entries, dead processes. */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "host_cm_listen.h"
#include "run_dir.h"

#define NETDEV	"udcml0"
#define SID	0x0000000001061c1eull

static char err[512];

static void setup(void)
{
	test_run_dir();
}

static void teardown(void)
{
	test_run_dir_remove();
}

/* In a child: listen on @sid, release it when @release, exit without closing the table. */
static void child_listens(uint64_t sid, bool release)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct host_cm_listen *t;

		if (host_cm_listen_open(NETDEV, &t, err, sizeof(err)) || host_cm_listen_add(t, sid))
			_exit(1);
		if (release)
			host_cm_listen_del(t, sid);
		_exit(0);
	}
	waitpid(pid, &status, 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}

/* A released port stays claimed a second (the answerer leaves its REQs alone), and is free at once. */
START_TEST(released_listener_claimed_a_while)
{
	struct host_cm_listen *t;

	ck_assert_int_eq(host_cm_listen_open(NETDEV, &t, err, sizeof(err)), 0);
	ck_assert_int_eq(host_cm_listen_add(t, SID), 0);
	ck_assert(host_cm_listen_taken(t, SID));
	ck_assert(host_cm_listen_claimed(t, SID));
	host_cm_listen_del(t, SID);
	ck_assert(!host_cm_listen_taken(t, SID));
	ck_assert(host_cm_listen_claimed(t, SID));

	child_listens(SID, true);	/* free for another process at once */
	ck_assert(host_cm_listen_claimed(t, SID));
	usleep((HOST_CM_LISTEN_RELEASED_MS + 100) * 1000);
	ck_assert(!host_cm_listen_claimed(t, SID));
	host_cm_listen_close(t);
}
END_TEST

/* A listener that died: neither taken nor claimed, its port free; a live one's port is EADDRINUSE. */
START_TEST(dead_listener_neither)
{
	struct host_cm_listen *t;

	ck_assert_int_eq(host_cm_listen_open(NETDEV, &t, err, sizeof(err)), 0);
	child_listens(SID, false);
	ck_assert(!host_cm_listen_taken(t, SID));
	ck_assert(!host_cm_listen_claimed(t, SID));
	ck_assert_int_eq(host_cm_listen_add(t, SID), 0);
	ck_assert(host_cm_listen_mine(t, HOST_CM_ANSWERER));
	host_cm_listen_close(t);
	/* Closing released the port but not the answerer's entry, which is nobody's now. */
	ck_assert_int_eq(host_cm_listen_open(NETDEV, &t, err, sizeof(err)), 0);
	ck_assert(!host_cm_listen_taken(t, SID));
	ck_assert(host_cm_listen_claimed(t, SID));
	ck_assert(host_cm_listen_mine(t, HOST_CM_ANSWERER));
	host_cm_listen_close(t);
}
END_TEST

Suite *host_cm_listen_suite(void);

Suite *host_cm_listen_suite(void)
{
	Suite *s = suite_create("host_cm_listen");
	TCase *t = tcase_create("listen");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 10);
	tcase_add_test(t, released_listener_claimed_a_while);
	tcase_add_test(t, dead_listener_neither);
	suite_add_tcase(s, t);
	return s;
}
