// SPDX-License-Identifier: MIT
/* The host-wide QPN allocator: sharing between processes, quarantine, dead owners. */
#include <check.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uroce/host.h"
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

START_TEST(alloc_free_owned)
{
	struct host_qpn_map *m;
	uint32_t a, b;

	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	ck_assert_int_eq(host_qpn_alloc(m, &a), 0);
	ck_assert_int_eq(host_qpn_alloc(m, &b), 0);
	ck_assert_uint_ne(a, b);
	ck_assert_uint_ge(a, HOST_QPN_BASE);
	ck_assert(host_qpn_owned(m, a) && host_qpn_owned(m, b));
	ck_assert(!host_qpn_owned(m, a + 100));
	ck_assert(!host_qpn_owned(m, 1));
	ck_assert(!host_qpn_owned(m, 0xffffff));
	host_qpn_free(m, a);
	ck_assert(!host_qpn_owned(m, a));
	host_qpn_free(m, a);		/* twice: harmless */
	host_qpn_close(m);
}
END_TEST

START_TEST(freed_qpn_stays_mine_until_taken)
{
	struct host_qpn_map *m, *other;
	uint32_t a, q;

	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	ck_assert_int_eq(host_qpn_alloc(m, &a), 0);
	ck_assert(!host_qpn_was_mine(m, a));		/* owned, not freed */
	host_qpn_free(m, a);
	ck_assert(host_qpn_was_mine(m, a));		/* late frames for it are still counted here */
	ck_assert(!host_qpn_was_mine(m, a + 1));	/* never ours */
	ck_assert(!host_qpn_was_mine(m, 1));
	/* Another map (as another process) takes it: no longer ours to count. */
	ck_assert_int_eq(host_qpn_open("udvX", &other, err, sizeof(err)), 0);
	other->quarantine_ns = 0;
	do
		ck_assert_int_eq(host_qpn_alloc(other, &q), 0);
	while (q != a);
	ck_assert(!host_qpn_was_mine(m, a));
	host_qpn_close(other);
	/* Ours again, then freed again. */
	m->quarantine_ns = 0;
	do
		ck_assert_int_eq(host_qpn_alloc(m, &q), 0);
	while (q != a);
	ck_assert(host_qpn_owned(m, a) && !host_qpn_was_mine(m, a));
	host_qpn_close(m);
}
END_TEST

START_TEST(no_reuse_in_quarantine)
{
	struct host_qpn_map *m;
	uint32_t first, q;

	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	ck_assert_int_eq(host_qpn_alloc(m, &first), 0);
	host_qpn_free(m, first);
	/* Round robin: the whole range goes by before @first could come back... */
	for (uint32_t i = 1; i < HOST_QPN_SLOTS; i++) {
		ck_assert_int_eq(host_qpn_alloc(m, &q), 0);
		ck_assert_uint_ne(q, first);
		host_qpn_free(m, q);
	}
	/* ...and even then not while it is in quarantine: every slot is. */
	ck_assert_int_eq(host_qpn_alloc(m, &q), -ENOSPC);
	m->quarantine_ns = 0;
	ck_assert_int_eq(host_qpn_alloc(m, &q), 0);
	ck_assert_uint_eq(q, first);
	host_qpn_close(m);
}
END_TEST

/* A child process takes @n QPNs, reports them through a pipe, then exits or waits. */
static pid_t child_allocs(unsigned n, uint32_t *out, bool stay)
{
	int fds[2];
	pid_t pid;

	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct host_qpn_map *m;

		if (host_qpn_open("udvX", &m, err, sizeof(err)))
			_exit(1);
		for (unsigned i = 0; i < n; i++) {
			uint32_t q;

			if (host_qpn_alloc(m, &q) || write(fds[1], &q, 4) != 4)
				_exit(1);
		}
		if (stay)
			pause();
		_exit(0);	/* without host_qpn_close(): a crash, as far as the file knows */
	}
	close(fds[1]);
	for (unsigned i = 0; i < n; i++)
		ck_assert_int_eq(read(fds[0], &out[i], 4), 4);
	close(fds[0]);
	return pid;
}

START_TEST(processes_never_share)
{
	struct host_qpn_map *m;
	uint32_t theirs[64], mine[64];
	pid_t pid;

	pid = child_allocs(64, theirs, true);
	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	m->quarantine_ns = 0;
	for (int i = 0; i < 64; i++) {
		ck_assert_int_eq(host_qpn_alloc(m, &mine[i]), 0);
		for (int j = 0; j < 64; j++)
			ck_assert_uint_ne(mine[i], theirs[j]);
		ck_assert(!host_qpn_owned(m, theirs[i]));
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	host_qpn_close(m);
}
END_TEST

START_TEST(dead_owner_reclaimed_after_quarantine)
{
	struct host_qpn_map *m;
	uint32_t theirs[4], q;
	int status;
	pid_t pid;

	pid = child_allocs(4, theirs, false);
	waitpid(pid, &status, 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	/* Walk the whole range once: the dead child's slots enter quarantine, not reuse. */
	for (uint32_t i = 0; i < HOST_QPN_SLOTS - 4; i++) {
		ck_assert_int_eq(host_qpn_alloc(m, &q), 0);
		for (int j = 0; j < 4; j++)
			ck_assert_uint_ne(q, theirs[j]);
	}
	ck_assert_int_eq(host_qpn_alloc(m, &q), -ENOSPC);
	m->quarantine_ns = 0;
	ck_assert_int_eq(host_qpn_alloc(m, &q), 0);
	ck_assert_uint_eq(q, theirs[0]);
	host_qpn_close(m);
}
END_TEST

START_TEST(close_frees_everything)
{
	struct host_qpn_map *m;
	uint32_t q[10], r;

	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	for (int i = 0; i < 10; i++)
		ck_assert_int_eq(host_qpn_alloc(m, &q[i]), 0);
	host_qpn_close(m);
	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	m->quarantine_ns = 0;
	/* Freed, so a full pass of the range hands each out again. */
	for (uint32_t i = 0; i < HOST_QPN_SLOTS; i++)
		ck_assert_int_eq(host_qpn_alloc(m, &r), 0);
	ck_assert_int_eq(host_qpn_alloc(m, &r), -ENOSPC);
	host_qpn_close(m);
}
END_TEST

/*
 * A protected table (`uroce link add` for a device with a broker): root's,
 * 0644; one that was anyone's is replaced, not chmod()ed; a process that is
 * not root opens it read-only and cannot allocate without the broker.
 */
START_TEST(protected_table_is_roots)
{
	const char *dir = getenv("UROCE_RUN_DIR");
	char path[600];
	struct host_qpn_map *m;
	struct stat before, st;
	uint32_t q;
	pid_t child;
	int status;

	ck_assert_int_eq(host_qpn_open("udvP", &m, err, sizeof(err)), 0);
	host_qpn_close(m);
	snprintf(path, sizeof(path), "%s/qpn/udvP", dir);
	ck_assert_int_eq(stat(path, &before), 0);
	ck_assert_int_eq(before.st_mode & 0777, 0666);
	ck_assert_int_eq(host_qpn_protect("udvP", err, sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0644);
	ck_assert_int_eq(st.st_uid, 0);
	ck_assert_uint_ne(st.st_ino, before.st_ino);
	/* Already root's: kept. */
	ck_assert_int_eq(host_qpn_protect("udvP", err, sizeof(err)), 0);
	ck_assert_int_eq(stat(path, &before), 0);
	ck_assert_uint_eq(st.st_ino, before.st_ino);

	ck_assert_int_eq(chmod(dir, 0755), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		struct host_qpn_map *u;

		if (setgid(65534) || setuid(65534) || host_qpn_open("udvP", &u, err, sizeof(err)))
			_exit(1);
		if (!host_qpn_read_only(u) || host_qpn_alloc(u, &q) != -EACCES)
			_exit(2);
		host_qpn_close(u);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child: %d", status);
}
END_TEST

/* The broker's side: a QPN for another process, freed only as that process's. */
START_TEST(alloc_for_another_process)
{
	struct host_qpn_map *m;
	uint32_t q, start, me = host_qpn_proc_start(getpid());

	ck_assert_int_eq(host_qpn_open("udvX", &m, err, sizeof(err)), 0);
	ck_assert_int_eq(host_qpn_alloc_for(m, getppid(), host_qpn_proc_start(getppid()), &q), 0);
	ck_assert_int_eq(host_qpn_owner(m, q, &start), getppid());
	ck_assert(!host_qpn_owned(m, q));	/* not this process's */
	host_qpn_free_for(m, getpid(), me, q);
	ck_assert_int_eq(host_qpn_owner(m, q, &start), getppid());
	host_qpn_free_for(m, getppid(), host_qpn_proc_start(getppid()), q);
	ck_assert_int_eq(host_qpn_owner(m, q, &start), 0);
	host_qpn_close(m);
}
END_TEST

START_TEST(bad_key)
{
	struct host_qpn_map *m;

	ck_assert_int_eq(host_qpn_open("a/b", &m, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(host_qpn_open("", &m, err, sizeof(err)), -EINVAL);
}
END_TEST

Suite *host_qpn_suite(void);

Suite *host_qpn_suite(void)
{
	Suite *s = suite_create("host_qpn");
	TCase *t = tcase_create("qpn");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 60);
	tcase_add_test(t, alloc_free_owned);
	tcase_add_test(t, freed_qpn_stays_mine_until_taken);
	tcase_add_test(t, no_reuse_in_quarantine);
	tcase_add_test(t, processes_never_share);
	tcase_add_test(t, dead_owner_reclaimed_after_quarantine);
	tcase_add_test(t, close_frees_everything);
	tcase_add_test(t, protected_table_is_roots);
	tcase_add_test(t, alloc_for_another_process);
	tcase_add_test(t, bad_key);
	suite_add_tcase(s, t);
	return s;
}
