// SPDX-License-Identifier: MIT
/* Host-wide QPN allocator: a flock()ed, mmap()ed table of slots under the run directory. */
#include <errno.h>
#include <stdatomic.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uroce/config.h"
#include "uroce/host.h"
#include "host_qpn.h"

#define QPN_MAGIC	0x4e5051454352550aull	/* "\nUROCEQPN" */
#define QPN_VERSION	1

struct qpn_slot {
	int32_t		pid;		/* owner, 0 when free */
	uint32_t	start;		/* owner's start time (low bits), tells PID reuse apart */
	uint64_t	freed_ns;	/* CLOCK_BOOTTIME of the last free, 0: never used */
};

struct qpn_file {
	uint64_t	magic;
	uint32_t	version;
	uint32_t	n_slots;
	uint32_t	cursor;		/* next slot to try */
	uint32_t	reserved;
	struct qpn_slot	slots[HOST_QPN_SLOTS];
};

static uint64_t boottime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t host_qpn_proc_start(int pid)
{
	char path[64], buf[1024], *p;
	unsigned long long start = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	/* The command name may hold spaces and ')': fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d "
			 "%*d %*d %*d %llu", &start) != 1)
		return 0;
	return (uint32_t)start | 1;	/* never 0, so 0 can mean "unknown" */
}

/* Set by host_self_set(): the run directory's PID for this process, and getpid() then. */
static _Atomic int32_t self_pid, self_local;
static _Atomic uint32_t self_start;

static bool pidns_foreign(void)
{
	int32_t local = atomic_load(&self_local);

	return local && local == (int32_t)getpid();
}

void host_self_set(int32_t pid, uint32_t start)
{
	atomic_store(&self_pid, pid);
	atomic_store(&self_start, start);
	atomic_store(&self_local, (int32_t)getpid());
}

int32_t host_self_pid(void)
{
	return pidns_foreign() ? atomic_load(&self_pid) : (int32_t)getpid();
}

uint32_t host_self_start(void)
{
	return pidns_foreign() ? atomic_load(&self_start) : host_qpn_proc_start(getpid());
}

bool host_proc_alive(int32_t pid, uint32_t start)
{
	if (pidns_foreign())
		return true;
	if (kill(pid, 0) && errno == ESRCH)
		return false;
	return start == 0 || host_qpn_proc_start(pid) == start;
}

static bool owner_alive(const struct qpn_slot *s)
{
	return host_proc_alive(s->pid, s->start);
}

int host_mkdir_sticky(const char *path)
{
	if (mkdir(path, 01777) == 0)
		return chmod(path, 01777) ? -errno : 0;	/* past the umask */
	return errno == EEXIST ? 0 : -errno;
}

static bool valid_file(const struct qpn_file *f)
{
	return f->magic == QPN_MAGIC && f->version == QPN_VERSION && f->n_slots == HOST_QPN_SLOTS;
}

static void init_file(struct qpn_file *f)
{
	memset(f, 0, sizeof(*f));
	f->magic = QPN_MAGIC;
	f->version = QPN_VERSION;
	f->n_slots = HOST_QPN_SLOTS;
}

static int table_path(const char *key, char *dir, size_t dlen, char *path, size_t plen,
		      char *err, size_t errlen)
{
	if (!*key || strchr(key, '/')) {
		snprintf(err, errlen, "invalid QPN allocator name '%s'", key);
		return -EINVAL;
	}
	snprintf(dir, dlen, "%s/qpn", host_run_dir());
	snprintf(path, plen, "%s/%s", dir, key);
	return 0;
}

int host_qpn_open(const char *key, struct host_qpn_map **out, char *err, size_t errlen)
{
	char dir[512], path[600];
	struct host_qpn_map *m;
	struct qpn_file *f;
	struct stat st;
	int ret;

	ret = table_path(key, dir, sizeof(dir), path, sizeof(path), err, errlen);
	if (ret)
		return ret;
	if (mkdir(host_run_dir(), 0755) && errno != EEXIST) {
		ret = -errno;
		snprintf(err, errlen, "cannot create %s: %s (run `uroce link add` as root first)",
			 host_run_dir(), strerror(-ret));
		return ret;
	}
	ret = host_mkdir_sticky(dir);
	if (ret) {
		snprintf(err, errlen, "cannot create %s: %s (run `uroce link add` as root first)",
			 dir, strerror(-ret));
		return ret;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->quarantine_ns = HOST_QPN_QUARANTINE_S * 1000000000ull;
	m->start = host_qpn_proc_start(getpid());
	m->broker = -1;
	pthread_mutex_init(&m->broker_lock, NULL);
	m->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (m->fd < 0 && errno == EACCES) {
		/* Root's (`uroce link add` made it so): allocations through the broker. */
		m->fd = open(path, O_RDONLY | O_CLOEXEC);
		m->read_only = m->fd >= 0;
	}
	if (m->fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open the QPN allocator %s: %s", path, strerror(-ret));
		goto err_free;
	}
	flock(m->fd, LOCK_EX);
	if (fstat(m->fd, &st)) {
		ret = -errno;
		goto err_unlock;
	}
	if (m->read_only && st.st_size < (off_t)sizeof(struct qpn_file)) {
		ret = -EPROTO;
		goto err_unlock;
	}
	if (st.st_size < (off_t)sizeof(struct qpn_file)) {
		/* New file (or one from an older layout): start over; nobody can hold QPNs in it. */
		fchmod(m->fd, 0666);
		if (ftruncate(m->fd, 0) || ftruncate(m->fd, sizeof(struct qpn_file))) {
			ret = -errno;
			goto err_unlock;
		}
	}
	f = mmap(NULL, sizeof(*f), m->read_only ? PROT_READ : PROT_READ | PROT_WRITE, MAP_SHARED,
		 m->fd, 0);
	if (f == MAP_FAILED) {
		ret = -errno;
		goto err_unlock;
	}
	if (!valid_file(f)) {
		if (m->read_only) {
			munmap(f, sizeof(*f));
			ret = -EPROTO;
			goto err_unlock;
		}
		init_file(f);
	}
	flock(m->fd, LOCK_UN);
	m->file = f;
	*out = m;
	return 0;

err_unlock:
	snprintf(err, errlen, "cannot set up the QPN allocator %s: %s", path, strerror(-ret));
	flock(m->fd, LOCK_UN);
	close(m->fd);
err_free:
	free(m);
	return ret;
}

/* A free slot past quarantine, now @pid's: its index, or -ENOSPC.  Under the file lock. */
static int take_slot(struct host_qpn_map *m, int32_t pid, uint32_t start)
{
	struct qpn_file *f = m->file;
	int32_t dead = 0, alive = 0;
	uint64_t now = boottime_ns();

	for (uint32_t i = 0; i < HOST_QPN_SLOTS; i++) {
		uint32_t slot = (f->cursor + i) % HOST_QPN_SLOTS;
		struct qpn_slot *s = &f->slots[slot];

		if (s->pid) {
			bool its = s->pid == pid && s->start == start;

			if (its || s->pid == alive)
				continue;
			if (s->pid != dead && owner_alive(s)) {
				alive = s->pid;
				continue;
			}
			/* Its owner died without freeing: quarantine from now on. */
			dead = s->pid;
			s->pid = 0;
			s->freed_ns = now;
			continue;
		}
		if (s->freed_ns && now - s->freed_ns < m->quarantine_ns)
			continue;
		s->pid = pid;
		s->start = start;
		f->cursor = (slot + 1) % HOST_QPN_SLOTS;
		return (int)slot;
	}
	return -ENOSPC;
}

/* One request to the broker and its answer; the answer's QPN in @qpn. */
static int broker_call(struct host_qpn_map *m, uint32_t op, uint32_t *qpn)
{
	struct host_qpn_request req = { .op = op, .qpn = *qpn };
	struct host_qpn_answer ans;
	int ret = -EPIPE;

	pthread_mutex_lock(&m->broker_lock);
	if (send(m->broker, &req, sizeof(req), MSG_NOSIGNAL) == sizeof(req) &&
	    recv(m->broker, &ans, sizeof(ans), MSG_WAITALL) == sizeof(ans)) {
		ret = ans.ret;
		*qpn = ans.qpn;
	}
	pthread_mutex_unlock(&m->broker_lock);
	return ret;
}

int host_qpn_alloc_for(struct host_qpn_map *m, int32_t pid, uint32_t start, uint32_t *qpn)
{
	int ret;

	flock(m->fd, LOCK_EX);
	ret = take_slot(m, pid, start);
	flock(m->fd, LOCK_UN);
	if (ret < 0)
		return ret;
	*qpn = HOST_QPN_BASE + (uint32_t)ret;
	return 0;
}

int host_qpn_alloc(void *arg, uint32_t *qpn)
{
	struct host_qpn_map *m = arg;
	_Atomic uint64_t *filter;
	uint32_t slot;
	int ret;

	if (m->broker >= 0) {
		ret = broker_call(m, HOST_QPN_OP_ALLOC, qpn);
		if (ret)
			return ret;
		if (*qpn - HOST_QPN_BASE >= HOST_QPN_SLOTS)
			return -EPROTO;
		slot = *qpn - HOST_QPN_BASE;
	} else {
		if (m->read_only)
			return -EACCES;
		ret = host_qpn_alloc_for(m, (int32_t)getpid(), m->start, qpn);
		if (ret)
			return ret;
		slot = *qpn - HOST_QPN_BASE;
	}
	atomic_fetch_or_explicit(&m->owned[slot / 64], 1ull << (slot % 64), memory_order_relaxed);
	atomic_fetch_and_explicit(&m->released[slot / 64], ~(1ull << (slot % 64)),
				  memory_order_relaxed);
	filter = atomic_load(&m->filter);
	if (filter)
		atomic_fetch_or(&filter[slot / 64], 1ull << (slot % 64));
	m->n_owned++;
	return 0;
}

void host_qpn_free_for(struct host_qpn_map *m, int32_t pid, uint32_t start, uint32_t qpn)
{
	struct qpn_file *f = m->file;
	uint32_t slot = qpn - HOST_QPN_BASE;

	if (slot >= HOST_QPN_SLOTS)
		return;
	flock(m->fd, LOCK_EX);
	if (f->slots[slot].pid == pid && f->slots[slot].start == start) {
		f->slots[slot].pid = 0;
		f->slots[slot].freed_ns = boottime_ns();
	}
	flock(m->fd, LOCK_UN);
}

void host_qpn_use_broker(struct host_qpn_map *m, int conn)
{
	m->broker = conn;
}

bool host_qpn_read_only(const struct host_qpn_map *m)
{
	return m->read_only;
}

int host_qpn_protect(const char *key, char *err, size_t errlen)
{
	char dir[512], path[600], tmp[640];
	struct qpn_file *f;
	struct stat st;
	int fd, ret;

	ret = table_path(key, dir, sizeof(dir), path, sizeof(path), err, errlen);
	if (ret)
		return ret;
	if (!stat(path, &st) && st.st_uid == 0 && (st.st_mode & 0777) == 0644)
		return 0;
	/*
	 * A new file, not a chmod: a mapping made while it was writable would
	 * stay writable.  Processes that still have the old one keep it.
	 */
	if (mkdir(host_run_dir(), 0755) && errno != EEXIST)
		goto fail;
	if (host_mkdir_sticky(dir))
		goto fail;
	snprintf(tmp, sizeof(tmp), "%s.%d", path, (int)getpid());
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		goto fail;
	f = ftruncate(fd, sizeof(*f)) || fchmod(fd, 0644) ? MAP_FAILED :
	    mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (f == MAP_FAILED) {
		ret = -errno;
		close(fd);
		unlink(tmp);
		goto fail_ret;
	}
	init_file(f);
	munmap(f, sizeof(*f));
	close(fd);
	if (!rename(tmp, path))
		return 0;
	unlink(tmp);
fail:
	ret = -errno;
fail_ret:
	snprintf(err, errlen, "cannot make the QPN table %s root's: %s", path, strerror(-ret));
	return ret;
}

int32_t host_qpn_owner(const struct host_qpn_map *m, uint32_t qpn, uint32_t *start)
{
	const struct qpn_file *f = m->file;
	uint32_t slot = qpn - HOST_QPN_BASE;

	if (slot >= HOST_QPN_SLOTS)
		return 0;
	/* Read without the lock: a QPN changing owner meanwhile is quarantined anyway. */
	*start = __atomic_load_n(&f->slots[slot].start, __ATOMIC_RELAXED);
	return __atomic_load_n(&f->slots[slot].pid, __ATOMIC_RELAXED);
}

void host_qpn_filter_bits(struct host_qpn_map *m, uint64_t *bits)
{
	_Atomic uint64_t *f = (_Atomic uint64_t *)bits;

	/* First published, so an allocation meanwhile sets its bit itself. */
	atomic_store(&m->filter, f);
	if (!f)
		return;
	for (uint32_t w = 0; w < HOST_QPN_SLOTS / 64; w++)
		atomic_fetch_or(&f[w], atomic_load(&m->owned[w]) | atomic_load(&m->released[w]));
}

bool host_qpn_was_mine(const struct host_qpn_map *m, uint32_t qpn)
{
	const struct qpn_file *f = m->file;
	uint32_t slot = qpn - HOST_QPN_BASE;

	if (!host_qpn_bit(m->released, qpn))
		return false;
	/* Free, and freed last by this process (not taken and freed by another since). */
	return __atomic_load_n(&f->slots[slot].pid, __ATOMIC_RELAXED) == 0 &&
	       __atomic_load_n(&f->slots[slot].start, __ATOMIC_RELAXED) == m->start;
}

/* @slot no longer this process's (its bits only). */
static void forget(struct host_qpn_map *m, uint32_t slot)
{
	atomic_fetch_and_explicit(&m->owned[slot / 64], ~(1ull << (slot % 64)),
				  memory_order_relaxed);
	atomic_fetch_or_explicit(&m->released[slot / 64], 1ull << (slot % 64),
				 memory_order_relaxed);
	m->n_owned--;
}

static void free_locked(struct host_qpn_map *m, uint32_t slot, uint64_t now)
{
	struct qpn_file *f = m->file;
	struct qpn_slot *s = &f->slots[slot];

	if (s->pid == (int32_t)getpid()) {
		s->pid = 0;
		s->freed_ns = now;
	}
	forget(m, slot);
}

void host_qpn_free(void *arg, uint32_t qpn)
{
	struct host_qpn_map *m = arg;

	if (!host_qpn_owned(m, qpn))
		return;
	if (m->broker >= 0) {
		uint32_t q = qpn;

		broker_call(m, HOST_QPN_OP_FREE, &q);
		forget(m, qpn - HOST_QPN_BASE);
		return;
	}
	flock(m->fd, LOCK_EX);
	free_locked(m, qpn - HOST_QPN_BASE, boottime_ns());
	flock(m->fd, LOCK_UN);
}

void host_qpn_close(struct host_qpn_map *m)
{
	uint64_t now = boottime_ns();

	if (!m)
		return;
	/* The broker frees a client's QPNs when its connection closes. */
	if (m->n_owned && m->broker < 0) {
		flock(m->fd, LOCK_EX);
		for (uint32_t slot = 0; slot < HOST_QPN_SLOTS; slot++)
			if (host_qpn_owned(m, HOST_QPN_BASE + slot))
				free_locked(m, slot, now);
		flock(m->fd, LOCK_UN);
	}
	if (m->broker >= 0)
		close(m->broker);
	pthread_mutex_destroy(&m->broker_lock);
	munmap(m->file, sizeof(struct qpn_file));
	close(m->fd);
	free(m);
}
