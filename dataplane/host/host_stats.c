// SPDX-License-Identifier: MIT
/* Shared-memory counter files: written by the progress thread, read by `uroce stat`. */
#include <dirent.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "uroce/config.h"
#include "host_stats.h"
#include "host_qpn.h"

struct host_stats {
	struct host_stats_hdr	*hdr;
	size_t			size;
	char			path[768];
};

static uint64_t realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned count(const char *const *names)
{
	unsigned n = 0;

	while (names && names[n])
		n++;
	return n;
}

struct host_stats *host_stats_create(const char *ibdev, const char *netdev, const char *pmd,
				 const char *const *dev_names, const char *const *qp_names,
				 char *err, size_t errlen)
{
	unsigned n_dev = count(dev_names), n_qp = count(qp_names);
	size_t names_off = (sizeof(struct host_stats_hdr) + 63) & ~(size_t)63;
	size_t dev_off = names_off + (size_t)(n_dev + n_qp) * HOST_STATS_NAME_LEN;
	size_t slot = sizeof(struct host_stats_qp_slot) + (size_t)n_qp * sizeof(uint64_t);
	size_t qp_off = dev_off + (size_t)n_dev * sizeof(uint64_t);
	size_t size = qp_off + HOST_STATS_QP_SLOTS * slot;
	struct host_stats_hdr *h;
	struct host_stats *s;
	char dir[512];
	int fd;

	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	snprintf(dir, sizeof(dir), "%s/stats", host_run_dir());
	if (mkdir(dir, 01777) == 0)
		chmod(dir, 01777);
	if (snprintf(s->path, sizeof(s->path), "%s/%s.%d", dir, ibdev, (int)host_self_pid()) >=
	    (int)sizeof(s->path)) {
		snprintf(err, errlen, "run directory path too long: %s", dir);
		free(s);
		return NULL;
	}
	fd = open(s->path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s (counters for `uroce stat`)", s->path,
			 strerror(errno));
		free(s);
		return NULL;
	}
	if (ftruncate(fd, (off_t)size)) {
		snprintf(err, errlen, "cannot size %s: %s", s->path, strerror(errno));
		goto err_close;
	}
	h = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (h == MAP_FAILED) {
		snprintf(err, errlen, "cannot map %s: %s", s->path, strerror(errno));
		goto err_close;
	}
	close(fd);
	h->version = HOST_STATS_VERSION;
	h->hdr_size = sizeof(*h);
	h->file_size = size;
	h->pid = host_self_pid();
	h->n_dev = n_dev;
	h->n_qp = n_qp;
	h->n_qp_slots = 0;
	h->names_off = names_off;
	h->dev_off = dev_off;
	h->qp_off = qp_off;
	h->qp_slot_size = slot;
	h->started_ns = h->updated_ns = realtime_ns();
	snprintf(h->ibdev, sizeof(h->ibdev), "%s", ibdev);
	snprintf(h->netdev, sizeof(h->netdev), "%s", netdev);
	snprintf(h->pmd, sizeof(h->pmd), "%s", pmd);
	for (unsigned i = 0; i < n_dev + n_qp; i++)
		snprintf((char *)h + names_off + (size_t)i * HOST_STATS_NAME_LEN, HOST_STATS_NAME_LEN,
			 "%s", i < n_dev ? dev_names[i] : qp_names[i - n_dev]);
	/* Readers ignore the file until the magic is there. */
	atomic_thread_fence(memory_order_release);
	h->magic = HOST_STATS_MAGIC;
	s->hdr = h;
	s->size = size;
	return s;

err_close:
	close(fd);
	unlink(s->path);
	free(s);
	return NULL;
}

void host_stats_destroy(struct host_stats *s)
{
	if (!s)
		return;
	munmap(s->hdr, s->size);
	unlink(s->path);
	free(s);
}

void host_stats_begin(struct host_stats *s)
{
	atomic_store_explicit((_Atomic uint64_t *)&s->hdr->seq, s->hdr->seq + 1,
			      memory_order_relaxed);
	atomic_thread_fence(memory_order_release);
}

void host_stats_end(struct host_stats *s)
{
	s->hdr->updated_ns = realtime_ns();
	atomic_thread_fence(memory_order_release);
	atomic_store_explicit((_Atomic uint64_t *)&s->hdr->seq, s->hdr->seq + 1,
			      memory_order_relaxed);
}

uint64_t *host_stats_dev(struct host_stats *s)
{
	return (uint64_t *)((char *)s->hdr + s->hdr->dev_off);
}

uint64_t *host_stats_qp(struct host_stats *s, unsigned i, uint32_t qpn, bool live)
{
	struct host_stats_qp_slot *slot =
		(struct host_stats_qp_slot *)((char *)s->hdr + s->hdr->qp_off +
					    i * s->hdr->qp_slot_size);

	if (i >= s->hdr->n_qp_slots)
		s->hdr->n_qp_slots = i + 1;
	slot->qpn = qpn;
	slot->live = live;
	return slot->v;
}

/* @h, of a file of @size bytes, @len of them at hand, describes itself truthfully. */
static bool valid_layout(const struct host_stats_hdr *h, size_t size, size_t len)
{
	return h->magic == HOST_STATS_MAGIC && h->version == HOST_STATS_VERSION &&
	       h->file_size == size && h->names_off >= sizeof(*h) &&
	       h->dev_off >= h->names_off + (uint64_t)(h->n_dev + h->n_qp) * HOST_STATS_NAME_LEN &&
	       h->qp_off >= h->dev_off + (uint64_t)h->n_dev * 8 &&
	       h->qp_slot_size >= sizeof(struct host_stats_qp_slot) + (uint64_t)h->n_qp * 8 &&
	       h->qp_off + (uint64_t)h->n_qp_slots * h->qp_slot_size <= len;
}

/*
 * A consistent private copy of a mapped file of @size bytes, up to its last
 * used QP slot (*@len bytes); retries while the writer is mid-update.
 */
static void *snapshot(const struct host_stats_hdr *h, size_t size, size_t *len)
{
	void *copy = NULL;

	for (int tries = 0; tries < 1000; tries++) {
		uint64_t seq = atomic_load_explicit((_Atomic uint64_t *)&h->seq,
						    memory_order_acquire);
		size_t want;

		if (seq & 1) {
			usleep(10);
			continue;
		}
		want = h->qp_off + (size_t)h->n_qp_slots * h->qp_slot_size;
		if (want > size)
			break;
		free(copy);
		copy = malloc(want);
		if (!copy)
			return NULL;
		memcpy(copy, h, want);
		atomic_thread_fence(memory_order_acquire);
		if (atomic_load_explicit((_Atomic uint64_t *)&h->seq, memory_order_relaxed) == seq) {
			*len = want;
			return copy;
		}
	}
	free(copy);
	return NULL;
}

int host_stats_read_all(int (*cb)(void *arg, const struct host_stats_view *v), void *arg,
		      bool remove_stale)
{
	char dir[512];
	struct dirent *de;
	int visited = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/stats", host_run_dir());
	d = opendir(dir);
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		struct host_stats_view v;
		struct stat st;
		size_t len = 0;
		void *map;
		int fd, stop;

		if (de->d_name[0] == '.')
			continue;
		memset(&v, 0, sizeof(v));
		if (snprintf(v.path, sizeof(v.path), "%s/%s", dir, de->d_name) >=
		    (int)sizeof(v.path))
			continue;
		fd = open(v.path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &st) || st.st_size < (off_t)sizeof(struct host_stats_hdr)) {
			close(fd);
			continue;
		}
		v.size = (size_t)st.st_size;
		map = mmap(NULL, v.size, PROT_READ, MAP_SHARED, fd, 0);
		close(fd);
		if (map == MAP_FAILED)
			continue;
		v.hdr = valid_layout(map, v.size, v.size) ? snapshot(map, v.size, &len) : NULL;
		munmap(map, v.size);
		if (!v.hdr || !valid_layout(v.hdr, v.size, len)) {
			free((void *)v.hdr);
			continue;
		}
		v.alive = !(kill(v.hdr->pid, 0) && errno == ESRCH);
		if (!v.alive && remove_stale) {
			unlink(v.path);
			free((void *)v.hdr);
			continue;
		}
		visited++;
		stop = cb(arg, &v);
		free((void *)v.hdr);
		if (stop)
			break;
	}
	closedir(d);
	return visited;
}

const char *host_stats_drop_name(char *buf, size_t len, const char *prefix, const char *reason)
{
	snprintf(buf, len, "%s%s", prefix, reason);
	for (char *p = buf + strlen(prefix); *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return buf;
}
