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
};

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
		struct entry x;

		if (sscanf(line, "%" SCNx64 " %" SCNd32 " %" SCNu32, &x.sid, &x.pid, &x.start) == 3 &&
		    host_proc_alive(x.pid, x.start))
			e[(*n)++] = x;
	}
	return 0;
}

static int store(struct host_cm_listen *t, const struct entry *e, unsigned n)
{
	static char buf[MAX_ENTRIES * LINE_MAX_LEN];
	size_t len = 0;

	for (unsigned i = 0; i < n; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%016" PRIx64 " %" PRId32
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
	for (unsigned i = 0; i < *n; i++)
		if (e[i].sid == sid)
			return e[i].pid == t->pid ? 0 : -EADDRINUSE;
	if (*n >= MAX_ENTRIES)
		return -ENOSPC;
	e[(*n)++] = (struct entry){ sid, t->pid, t->start };
	return 1;
}

static int do_find(struct host_cm_listen *t, struct entry *e, unsigned *n, uint64_t sid)
{
	(void)t;
	for (unsigned i = 0; i < *n; i++)
		if (e[i].sid == sid)
			return 2;
	return 0;
}

/* Delete @sid (all of this process's entries when @sid is UINT64_MAX). */
static int do_del(struct host_cm_listen *t, struct entry *e, unsigned *n, uint64_t sid)
{
	unsigned k = 0;

	for (unsigned i = 0; i < *n; i++)
		if (!(e[i].pid == t->pid && (sid == UINT64_MAX || e[i].sid == sid)))
			e[k++] = e[i];
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
	t->pid = (int32_t)getpid();
	t->start = host_qpn_proc_start(t->pid);
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
