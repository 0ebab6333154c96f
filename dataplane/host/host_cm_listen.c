// SPDX-License-Identifier: MIT
/* Host-wide rdma_cm listen table: a flock()ed text file of service IDs and their processes. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uroce/config.h"
#include "host_cm_listen.h"
#include "host_qpn.h"

#define MAX_ENTRIES	4096
#define LINE_MAX_LEN	48

struct entry {
	uint64_t	sid;
	int32_t		pid;
	uint32_t	start;
	uint64_t	released_ms;	/* 0: listening; else when its listener closed (CLOCK_MONOTONIC) */
};

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

struct host_cm_listen {
	int		fd;
	int32_t		pid;
	uint32_t	start;
};

/* Read every live entry (the table is locked by the caller). */
static int load(struct host_cm_listen *t, struct entry *e, unsigned *n)
{
	static char buf[MAX_ENTRIES * LINE_MAX_LEN];
	ssize_t len = pread(t->fd, buf, sizeof(buf) - 1, 0);
	char *line, *save = NULL;

	if (len < 0)
		return -errno;
	buf[len] = '\0';
	*n = 0;
	for (line = strtok_r(buf, "\n", &save); line && *n < MAX_ENTRIES;
	     line = strtok_r(NULL, "\n", &save)) {
		struct entry x = { 0 };

		if (sscanf(line, "released %" SCNx64 " %" SCNu64, &x.sid, &x.released_ms) == 2) {
			if (mono_ms() - x.released_ms < HOST_CM_LISTEN_RELEASED_MS)
				e[(*n)++] = x;
		} else if (sscanf(line, "%" SCNx64 " %" SCNd32 " %" SCNu32, &x.sid, &x.pid,
				  &x.start) == 3 && host_proc_alive(x.pid, x.start)) {
			e[(*n)++] = x;
		}
	}
	return 0;
}

static int store(struct host_cm_listen *t, const struct entry *e, unsigned n)
{
	static char buf[MAX_ENTRIES * LINE_MAX_LEN];
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		len += e[i].released_ms ?
		       (size_t)snprintf(buf + len, sizeof(buf) - len, "released %016" PRIx64
					" %" PRIu64 "\n", e[i].sid, e[i].released_ms) :
		       (size_t)snprintf(buf + len, sizeof(buf) - len, "%016" PRIx64 " %" PRId32
					" %" PRIu32 "\n", e[i].sid, e[i].pid, e[i].start);
	if (ftruncate(t->fd, 0) || pwrite(t->fd, buf, len, 0) != (ssize_t)len)
		return -errno;
	return 0;
}

static struct entry entries[MAX_ENTRIES];

/* Under the file lock: @fn edits the live entries; they are written back when it returns 1. */
static int with_table(struct host_cm_listen *t, int (*fn)(struct host_cm_listen *t,
							   struct entry *e, unsigned *n,
							   uint64_t sid), uint64_t sid)
{
	unsigned n;
	int ret;

	if (flock(t->fd, LOCK_EX))
		return -errno;
	ret = load(t, entries, &n);
	if (!ret)
		ret = fn(t, entries, &n, sid);
	if (ret == 1)
		ret = store(t, entries, n);
	flock(t->fd, LOCK_UN);
	return ret;
}

static int do_add(struct host_cm_listen *t, struct entry *e, unsigned *n, uint64_t sid)
{
	unsigned k = 0;

	for (unsigned i = 0; i < *n; i++)
		if (e[i].sid == sid && !e[i].released_ms)
			return e[i].pid == t->pid ? 0 : -EADDRINUSE;
	/* Listened on again: no longer a released one. */
	for (unsigned i = 0; i < *n; i++)
		if (e[i].sid != sid)
			e[k++] = e[i];
	*n = k;
	if (*n >= MAX_ENTRIES)
		return -ENOSPC;
	e[(*n)++] = (struct entry){ sid, t->pid, t->start, 0 };
	return 1;
}

/* 2: a process listens on @sid; with @released, or it stopped HOST_CM_LISTEN_RELEASED_MS ago at most. */
static int find(struct entry *e, unsigned n, uint64_t sid, bool released)
{
	for (unsigned i = 0; i < n; i++)
		if (e[i].sid == sid && (released || !e[i].released_ms))
			return 2;
	return 0;
}

static int do_find(struct host_cm_listen *t, struct entry *e, unsigned *n, uint64_t sid)
{
	(void)t;
	return find(e, *n, sid, false);
}

static int do_find_claimed(struct host_cm_listen *t, struct entry *e, unsigned *n, uint64_t sid)
{
	(void)t;
	return find(e, *n, sid, true);
}

/*
 * Release @sid (all of this process's entries when @sid is UINT64_MAX): its
 * entry stays a while as released; the answerer's stays not at all.
 */
static int do_del(struct host_cm_listen *t, struct entry *e, unsigned *n, uint64_t sid)
{
	uint64_t now = mono_ms();
	unsigned k = 0;

	for (unsigned i = 0; i < *n; i++) {
		if (e[i].released_ms || e[i].pid != t->pid ||
		    (sid != UINT64_MAX && e[i].sid != sid)) {
			e[k++] = e[i];
		} else if (e[i].sid != HOST_CM_ANSWERER) {
			e[i].released_ms = now ? now : 1;
			e[k++] = e[i];
		}
	}
	*n = k;
	return 1;
}

int host_cm_listen_open(const char *key, struct host_cm_listen **out, char *err, size_t errlen)
{
	char dir[512], path[600];
	struct host_cm_listen *t;
	int ret;

	if (!*key || strchr(key, '/')) {
		snprintf(err, errlen, "invalid listen table name '%s'", key);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s/cm", host_run_dir());
	ret = host_mkdir_sticky(dir);
	if (ret) {
		snprintf(err, errlen, "cannot create %s: %s", dir, strerror(-ret));
		return ret;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, key);
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (t->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the listen table %s: %s", path, strerror(-ret));
		free(t);
		return ret;
	}
	fchmod(t->fd, 0666);
	t->pid = host_self_pid();
	t->start = host_self_start();
	*out = t;
	return 0;
}

void host_cm_listen_close(struct host_cm_listen *t)
{
	with_table(t, do_del, UINT64_MAX);
	close(t->fd);
	free(t);
}

int host_cm_listen_add(struct host_cm_listen *t, uint64_t service_id)
{
	return with_table(t, do_add, service_id);
}

void host_cm_listen_del(struct host_cm_listen *t, uint64_t service_id)
{
	with_table(t, do_del, service_id);
}

bool host_cm_listen_mine(struct host_cm_listen *t, uint64_t service_id)
{
	return host_cm_listen_add(t, service_id) == 0;
}

bool host_cm_listen_taken(struct host_cm_listen *t, uint64_t service_id)
{
	return with_table(t, do_find, service_id) == 2;
}

bool host_cm_listen_claimed(struct host_cm_listen *t, uint64_t service_id)
{
	return with_table(t, do_find_claimed, service_id) == 2;
}
