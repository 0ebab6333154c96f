// SPDX-License-Identifier: MIT
/* Same-host delivery between the processes of one netdev: shared-memory receive rings. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uroce/config.h"
#include "host_ring.h"
#include "host_qpn.h"

#define RING_MAGIC	0x474e49524f4f4c55ull	/* "ULOORING" */
#define RING_VERSION	4

struct loop_slot {
	uint32_t	len;
	uint8_t		data[HOST_RING_FRAME_MAX];
};

/*
 * The file: this header, then the slots.  Senders take @lock, check for
 * room against @head, copy, then publish with @tail; the owner reads
 * between @head and @tail and publishes its progress with @head.  A sender
 * dying with the lock leaves @tail unmoved, so the next one only marks the
 * robust mutex consistent.
 */
struct host_ring_ring {
	uint64_t		magic;
	uint32_t		version;
	int32_t			pid;
	uint32_t		start;		/* the owner's host_qpn_proc_start() */
	_Atomic uint32_t	live;		/* cleared when the owner closes */
	_Atomic uint32_t	sleeping;	/* the owner waits on its doorbell */
	pthread_mutex_t		lock;
	/*
	 * Held by the owner's progress thread while it runs: robust, so the
	 * kernel marks it as the process ends or execs, before its PID can go to
	 * another process.  Asking costs a load and no system call.
	 */
	pthread_mutex_t		running;
	alignas(64) _Atomic uint32_t tail;
	alignas(64) _Atomic uint32_t head;
	alignas(64) uint8_t	shared[HOST_RING_SHARED_BYTES];
	alignas(64) struct loop_slot slots[HOST_RING_SLOTS];
};

static int mkdir_sticky(const char *path)
{
	if (mkdir(path, 01777) == 0)
		return chmod(path, 01777) ? -errno : 0;	/* past the umask */
	return errno == EEXIST ? 0 : -errno;
}

/* Rings of processes that no longer exist. */
static void remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	if (!d)
		return;
	while ((e = readdir(d))) {
		char path[800], *end;
		long pid = strtol(e->d_name, &end, 10);

		if (pid <= 0 || (strcmp(end, ".ring") && strcmp(end, ".wake")))
			continue;
		if (host_proc_alive((int32_t)pid, 0))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		unlink(path);
	}
	closedir(d);
}

/*
 * Faulted in at once: each of its frame slots spans a page or two, so the
 * first pass round the ring faulted at every frame in both processes
 * (ib_send_lat between two processes took 18 us for its first 250 round
 * trips and 1.2 us after).
 */
static struct host_ring_ring *map_ring(int fd)
{
	void *p = mmap(NULL, sizeof(struct host_ring_ring), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return NULL;
	(void)madvise(p, sizeof(struct host_ring_ring), MADV_POPULATE_WRITE);
	return p;
}

static int create_ring(struct host_ring *l, char *err, size_t errlen)
{
	int32_t me = l->me = host_self_pid();
	pthread_mutexattr_t ma;
	struct host_ring_ring *r;
	char path[600], tmp[640] = "";
	int fd = -1, ret;

	/*
	 * The doorbell first: a sender that finds the ring finds it too.  Both
	 * are the owner's alone (root passes anyway): a ring holds the frames
	 * sent to its QPs, payloads included, so no other user may map it; a
	 * frame for another user's process is dropped as a full ring would be.
	 */
	snprintf(path, sizeof(path), "%s/%d.wake", l->dir, me);
	unlink(path);
	if (mkfifo(path, 0600) || chmod(path, 0600)) {
		ret = -errno;
		goto err;
	}
	/* Read and write: writers never find it without a reader, and it never reports EOF. */
	l->wake_fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (l->wake_fd < 0) {
		ret = -errno;
		goto err;
	}
	/* Built under a temporary name and renamed: a sender never sees a half-made ring. */
	snprintf(path, sizeof(path), "%s/%d.ring", l->dir, me);
	snprintf(tmp, sizeof(tmp), "%s.new", path);
	unlink(tmp);
	/* O_EXCL: never a file another user left under our PID in the sticky directory. */
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 || fchmod(fd, 0600) || ftruncate(fd, sizeof(*r))) {
		ret = -errno;
		goto err;
	}
	r = map_ring(fd);
	if (!r) {
		ret = -errno;
		goto err;
	}
	close(fd);
	fd = -1;
	r->magic = RING_MAGIC;
	r->version = RING_VERSION;
	r->pid = me;
	r->start = host_self_start();
	pthread_mutexattr_init(&ma);
	pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED);
	pthread_mutexattr_setrobust(&ma, PTHREAD_MUTEX_ROBUST);
	pthread_mutex_init(&r->lock, &ma);
	pthread_mutex_init(&r->running, &ma);
	pthread_mutexattr_destroy(&ma);
	atomic_store(&r->live, 1);
	if (rename(tmp, path)) {
		ret = -errno;
		munmap(r, sizeof(*r));
		goto err;
	}
	l->ring = r;
	return 0;

err:
	snprintf(err, errlen, "cannot create the same-host receive ring %s: %s", path,
		 strerror(-ret));
	if (fd >= 0)
		close(fd);
	if (tmp[0])
		unlink(tmp);
	if (l->wake_fd >= 0)
		close(l->wake_fd);
	snprintf(path, sizeof(path), "%s/%d.wake", l->dir, me);
	unlink(path);
	return ret;
}

/* Our handle on the rings of @key's directory, with a ring of our own unless @view. */
static int ring_open(const char *key, bool view, struct host_ring **out, char *err, size_t errlen)
{
	char base[256];
	struct host_ring *l;
	int ret;

	if (!*key || strchr(key, '/')) {
		snprintf(err, errlen, "invalid same-host delivery name '%s'", key);
		return -EINVAL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	l->wake_fd = -1;
	for (unsigned i = 0; i < HOST_RING_PEERS; i++)
		l->peers[i].wake_fd = -1;
	if ((size_t)snprintf(base, sizeof(base), "%s/loop", host_run_dir()) >= sizeof(base) ||
	    (size_t)snprintf(l->dir, sizeof(l->dir), "%s/%s", base, key) >= sizeof(l->dir)) {
		snprintf(err, errlen, "run directory path too long: %s", host_run_dir());
		ret = -ENAMETOOLONG;
		goto err_free;
	}
	ret = mkdir_sticky(base);
	if (!ret)
		ret = mkdir_sticky(l->dir);
	if (ret) {
		snprintf(err, errlen, "cannot create %s: %s (run `uroce link add` as root first)",
			 l->dir, strerror(-ret));
		goto err_free;
	}
	if (view) {
		l->me = host_self_pid();
	} else {
		remove_stale(l->dir);
		ret = create_ring(l, err, errlen);
		if (ret)
			goto err_free;
	}
	*out = l;
	return 0;

err_free:
	free(l);
	return ret;
}

int host_ring_open(const char *key, struct host_ring **out, char *err, size_t errlen)
{
	return ring_open(key, false, out, err, errlen);
}

int host_ring_open_view(const char *key, struct host_ring **out, char *err, size_t errlen)
{
	return ring_open(key, true, out, err, errlen);
}

static void drop_peer(struct host_ring_peer *p)
{
	if (!p->pid)
		return;
	munmap(p->ring, sizeof(*p->ring));
	if (p->wake_fd >= 0)
		close(p->wake_fd);
	p->wake_fd = -1;
	p->owner_checked = false;
	p->pid = 0;
	p->used = 0;
}

void host_ring_close(struct host_ring *l)
{
	char path[600];

	if (!l)
		return;
	for (unsigned i = 0; i < HOST_RING_PEERS; i++)
		drop_peer(&l->peers[i]);
	if (!l->ring) {		/* a view */
		free(l);
		return;
	}
	atomic_store(&l->ring->live, 0);
	snprintf(path, sizeof(path), "%s/%d.ring", l->dir, (int)l->me);
	unlink(path);
	snprintf(path, sizeof(path), "%s/%d.wake", l->dir, (int)l->me);
	unlink(path);
	close(l->wake_fd);
	munmap(l->ring, sizeof(*l->ring));
	free(l);
}

/* The live ring of process @pid started at @start, mapped on first use. */
static struct host_ring_peer *peer_of(struct host_ring *l, int32_t pid, uint32_t start)
{
	struct host_ring_peer *p = &l->peers[0];
	struct host_ring_ring *r;
	char path[600];
	struct stat st;
	int fd;

	errno = 0;	/* host_ring_send() tells EACCES (another user's ring) from the rest */
	for (unsigned i = 0; i < HOST_RING_PEERS; i++) {
		struct host_ring_peer *q = &l->peers[i];

		if (q->pid == pid) {
			if (atomic_load_explicit(&q->ring->live, memory_order_relaxed) &&
			    (!start || q->ring->start == start)) {
				q->used = ++l->clock;
				return q;
			}
			drop_peer(q);	/* closed, or an earlier process with this PID */
		}
		if (q->used < p->used)
			p = q;
	}
	snprintf(path, sizeof(path), "%s/%d.ring", l->dir, pid);
	/* Opened before a cached peer is let go: another user's ring (0600) is refused, EACCES. */
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	drop_peer(p);
	if (fstat(fd, &st) || st.st_size < (off_t)sizeof(*r)) {
		close(fd);
		return NULL;
	}
	r = map_ring(fd);
	close(fd);
	if (!r)
		return NULL;
	if (r->magic != RING_MAGIC || r->version != RING_VERSION || r->pid != pid ||
	    (start && r->start != start) || !atomic_load(&r->live)) {
		munmap(r, sizeof(*r));
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/%d.wake", l->dir, pid);
	p->wake_fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC);
	if (p->wake_fd < 0) {
		munmap(r, sizeof(*r));
		return NULL;
	}
	/* The PID names the ring's owner now; host_ring_peer_shared() asks whether it still does. */
	p->owner_checked = host_qpn_proc_start(pid) == r->start;
	p->pid = pid;
	p->ring = r;
	p->used = ++l->clock;
	return p;
}

int host_ring_send(struct host_ring *l, int32_t pid, uint32_t start, const void *frame,
		 uint32_t len)
{
	struct host_ring_peer *p;
	struct host_ring_ring *r;
	uint32_t tail;
	int ret = 0;

	if (len > HOST_RING_FRAME_MAX)
		return -EMSGSIZE;
	p = peer_of(l, pid, start);
	if (!p)
		return errno == EACCES ? -EACCES : -ENOENT;
	r = p->ring;
	if (pthread_mutex_lock(&r->lock) == EOWNERDEAD)
		pthread_mutex_consistent(&r->lock);
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	if (tail - atomic_load_explicit(&r->head, memory_order_acquire) >= HOST_RING_SLOTS) {
		ret = -ENOBUFS;
	} else {
		struct loop_slot *s = &r->slots[tail % HOST_RING_SLOTS];

		s->len = len;
		memcpy(s->data, frame, len);
		atomic_store(&r->tail, tail + 1);
	}
	pthread_mutex_unlock(&r->lock);
	/* Ordered after the tail (both sequentially consistent), as the owner's flag before its look. */
	if (!ret && atomic_load(&r->sleeping)) {
		char bell = 1;

		(void)!write(p->wake_fd, &bell, 1);	/* a full FIFO already rings */
	}
	return ret;
}

unsigned host_ring_broadcast(struct host_ring *l, const void *frame, uint32_t len, bool *denied)
{
	int32_t me = l->me;
	DIR *d = opendir(l->dir);
	unsigned n = 0;
	struct dirent *e;

	*denied = false;
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		int ret;

		if (pid <= 0 || pid == me || strcmp(end, ".ring"))
			continue;
		ret = host_ring_send(l, (int32_t)pid, 0, frame, len);
		n += ret == 0;
		*denied |= ret == -EACCES;
	}
	closedir(d);
	return n;
}

void *host_ring_shared(struct host_ring *l)
{
	return l->ring->shared;
}

/*
 * Whether the ring's owner still runs its progress thread: a trylock that
 * finds the mutex held (no system call).  Taking it means the owner does not
 * hold it (not started yet, or stopped); EOWNERDEAD means the owner ended or
 * exec'd, and unlocking without marking it consistent leaves it
 * unrecoverable, so every later asker gets an answer at once.
 */
static bool owner_running(struct host_ring_ring *r)
{
	int ret = pthread_mutex_trylock(&r->running);

	if (ret == 0 || ret == EOWNERDEAD)
		pthread_mutex_unlock(&r->running);
	return ret == EBUSY;
}

void *host_ring_peer_shared(struct host_ring *l, int32_t pid, uint32_t start)
{
	struct host_ring_peer *p = peer_of(l, pid, start);

	if (!p || !p->owner_checked)
		return NULL;
	if (!owner_running(p->ring)) {
		drop_peer(p);	/* ended, stopped or not started yet: mapped again when next asked */
		return NULL;
	}
	return p->ring->shared;
}

void host_ring_hold_running(struct host_ring *l)
{
	/* A peer that died inside owner_running() left it so. */
	if (pthread_mutex_lock(&l->ring->running) == EOWNERDEAD)
		pthread_mutex_consistent(&l->ring->running);
}

void host_ring_release_running(struct host_ring *l)
{
	pthread_mutex_unlock(&l->ring->running);
}

bool host_ring_sleep_begin(struct host_ring *l)
{
	atomic_store(&l->ring->sleeping, 1);
	return atomic_load(&l->ring->tail) == l->head;
}

void host_ring_sleep_end(struct host_ring *l)
{
	char buf[64];

	atomic_store_explicit(&l->ring->sleeping, 0, memory_order_relaxed);
	while (read(l->wake_fd, buf, sizeof(buf)) == (ssize_t)sizeof(buf))
		;
}

int host_ring_wake_fd(const struct host_ring *l)
{
	return l->wake_fd;
}

bool host_ring_ready(const struct host_ring *l)
{
	return atomic_load_explicit(&l->ring->tail, memory_order_relaxed) != l->head;
}

uint32_t host_ring_recv(struct host_ring *l, void *buf, uint32_t cap)
{
	struct host_ring_ring *r = l->ring;

	while (atomic_load_explicit(&r->tail, memory_order_acquire) != l->head) {
		const struct loop_slot *s = &r->slots[l->head % HOST_RING_SLOTS];
		uint32_t len = s->len;

		if (len <= cap)
			memcpy(buf, s->data, len);
		atomic_store_explicit(&r->head, ++l->head, memory_order_release);
		/* Larger than our buffers (a peer with another MTU): dropped. */
		if (len <= cap)
			return len;
	}
	return 0;
}
