// SPDX-License-Identifier: MIT
/* Host-wide QPN allocator: a flock()ed, mmap()ed table of slots under the run directory. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uroce/config.h"
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

bool host_proc_alive(int32_t pid, uint32_t start)
{
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

int host_qpn_open(const char *key, struct host_qpn_map **out, char *err, size_t errlen)
{
	char dir[512], path[600];
	struct host_qpn_map *m;
	struct qpn_file *f;
	struct stat st;
	int ret;

	if (!*key || strchr(key, '/')) {
		snprintf(err, errlen, "invalid QPN allocator name '%s'", key);
		return -EINVAL;
	}
	snprintf(dir, sizeof(dir), "%s/qpn", host_run_dir());
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
	snprintf(path, sizeof(path), "%s/%s", dir, key);
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	m->quarantine_ns = HOST_QPN_QUARANTINE_S * 1000000000ull;
	m->start = host_qpn_proc_start(getpid());
	m->fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
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
	if (st.st_size < (off_t)sizeof(struct qpn_file)) {
		/* New file (or one from an older layout): start over; nobody can hold QPNs in it. */
		fchmod(m->fd, 0666);
		if (ftruncate(m->fd, 0) || ftruncate(m->fd, sizeof(struct qpn_file))) {
			ret = -errno;
			goto err_unlock;
		}
	}
	f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, 0);
	if (f == MAP_FAILED) {
		ret = -errno;
		goto err_unlock;
	}
	if (f->magic != QPN_MAGIC || f->version != QPN_VERSION || f->n_slots != HOST_QPN_SLOTS) {
		memset(f, 0, sizeof(*f));
		f->magic = QPN_MAGIC;
		f->version = QPN_VERSION;
		f->n_slots = HOST_QPN_SLOTS;
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

int host_qpn_alloc(void *arg, uint32_t *qpn)
{
	struct host_qpn_map *m = arg;
	struct qpn_file *f = m->file;
	int32_t me = (int32_t)getpid(), dead = 0, alive = 0;
	_Atomic uint64_t *filter;
	uint64_t now = boottime_ns();
	int ret = -ENOSPC;

	flock(m->fd, LOCK_EX);
	for (uint32_t i = 0; i < HOST_QPN_SLOTS; i++) {
		uint32_t slot = (f->cursor + i) % HOST_QPN_SLOTS;
		struct qpn_slot *s = &f->slots[slot];

		if (s->pid) {
			bool mine = s->pid == me && s->start == m->start;

			if (mine || s->pid == alive)
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
		s->pid = me;
		s->start = m->start;
		f->cursor = (slot + 1) % HOST_QPN_SLOTS;
		atomic_fetch_or_explicit(&m->owned[slot / 64], 1ull << (slot % 64),
					 memory_order_relaxed);
		atomic_fetch_and_explicit(&m->released[slot / 64], ~(1ull << (slot % 64)),
					  memory_order_relaxed);
		filter = atomic_load(&m->filter);
		if (filter)
			atomic_fetch_or(&filter[slot / 64], 1ull << (slot % 64));
		m->n_owned++;
		*qpn = HOST_QPN_BASE + slot;
		ret = 0;
		break;
	}
	flock(m->fd, LOCK_UN);
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

static void free_locked(struct host_qpn_map *m, uint32_t slot, uint64_t now)
{
	struct qpn_file *f = m->file;
	struct qpn_slot *s = &f->slots[slot];

	if (s->pid == (int32_t)getpid()) {
		s->pid = 0;
		s->freed_ns = now;
	}
	atomic_fetch_and_explicit(&m->owned[slot / 64], ~(1ull << (slot % 64)),
				  memory_order_relaxed);
	atomic_fetch_or_explicit(&m->released[slot / 64], 1ull << (slot % 64),
				 memory_order_relaxed);
	m->n_owned--;
}

void host_qpn_free(void *arg, uint32_t qpn)
{
	struct host_qpn_map *m = arg;

	if (!host_qpn_owned(m, qpn))
		return;
	flock(m->fd, LOCK_EX);
	free_locked(m, qpn - HOST_QPN_BASE, boottime_ns());
	flock(m->fd, LOCK_UN);
}

void host_qpn_close(struct host_qpn_map *m)
{
	uint64_t now = boottime_ns();

	if (!m)
		return;
	if (m->n_owned) {
		flock(m->fd, LOCK_EX);
		for (uint32_t slot = 0; slot < HOST_QPN_SLOTS; slot++)
			if (host_qpn_owned(m, HOST_QPN_BASE + slot))
				free_locked(m, slot, now);
		flock(m->fd, LOCK_UN);
	}
	munmap(m->file, sizeof(struct qpn_file));
	close(m->fd);
	free(m);
}
