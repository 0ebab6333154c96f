// SPDX-License-Identifier: MIT
/* liburoce-ucma.so: /dev/infiniband/rdma_cm for librdmacm without a kernel, preloaded by `uroce exec`. */
/* Define libc's names themselves: with 64-bit offsets asked for, the headers would rename them. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/types.h>
#include <unistd.h>

#include "prov_ucma.h"

/*
 * librdmacm opens /dev/infiniband/rdma_cm, checks with fstat() that it is a
 * character device, and then talks to "the kernel" only by write(): each
 * command, GET_EVENT included, and close().  This kernel has no CUSE, so the
 * device cannot be served as a real character device; instead these five
 * functions take the path and the descriptors it returned, and hand them to
 * the provider module (prov_ucma.c), which libibverbs has loaded by then
 * (librdmacm lists the verbs devices before it opens the channel).  Every
 * other path and descriptor goes straight to libc.  The descriptor is an
 * eventfd, so poll() and epoll see POLLIN exactly while events are queued.
 */
#define UCMA_PATH	"/dev/infiniband/rdma_cm"
#define UCMA_MAX_FD	65536

/* Which descriptors are channels: read by every write() and close(), so a bitmap without a lock. */
static _Atomic uint64_t ucma_fds[UCMA_MAX_FD / 64];

static bool is_ucma(int fd)
{
	return fd >= 0 && fd < UCMA_MAX_FD &&
	       (atomic_load_explicit(&ucma_fds[fd / 64], memory_order_relaxed) >> (fd % 64) & 1);
}

/* libc's function of @name, looked up once into *@slot. */
static void *next_fn(void **slot, const char *name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_RELAXED);

	if (!fn) {
		fn = dlsym(RTLD_NEXT, name);
		__atomic_store_n(slot, fn, __ATOMIC_RELAXED);
	}
	return fn;
}

static void *libc_open, *libc_open64, *libc_openat, *libc_write, *libc_close, *libc_fstat,
	    *libc_fstat64;

static const struct prov_ucma_ops *ucma_ops;

static int find_provider(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *name = info->dlpi_name;
	size_t n = strlen(name);
	static const char suffix[] = "liburoce-rdmav34.so";
	void *h, **out = arg;

	(void)size;
	if (n < sizeof(suffix) - 1 || strcmp(name + n - (sizeof(suffix) - 1), suffix))
		return 0;
	h = dlopen(name, RTLD_NOW | RTLD_NOLOAD);
	if (h)
		*out = dlsym(h, PROV_UCMA_OPS_SYMBOL);
	return *out != NULL;
}

/* The provider's command handler, once libibverbs has loaded the provider. */
static const struct prov_ucma_ops *ops(void)
{
	const struct prov_ucma_ops *o = __atomic_load_n(&ucma_ops, __ATOMIC_ACQUIRE);
	void *found = NULL;

	if (o)
		return o;
	dl_iterate_phdr(find_provider, &found);
	if (found)
		__atomic_store_n(&ucma_ops, (const struct prov_ucma_ops *)found, __ATOMIC_RELEASE);
	return found;
}

static int open_channel(int flags)
{
	const struct prov_ucma_ops *o = ops();
	int fd;

	if (!o) {
		errno = ENODEV;
		return -1;
	}
	fd = o->open(flags);
	if (fd < 0) {
		errno = -fd;
		return -1;
	}
	if (fd >= UCMA_MAX_FD) {
		o->close(fd, NULL);
		errno = EMFILE;
		return -1;
	}
	atomic_fetch_or(&ucma_fds[fd / 64], 1ull << (fd % 64));
	return fd;
}

int open(const char *path, int flags, ...);
int open64(const char *path, int flags, ...);
int openat(int dirfd, const char *path, int flags, ...);
ssize_t write(int fd, const void *buf, size_t len);
int close(int fd);
int fstat(int fd, struct stat *st);
int fstat64(int fd, struct stat64 *st);

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & O_CREAT) || (flags & O_TMPFILE) == O_TMPFILE ? (mode_t)va_arg(ap, int) : 0;
}

/* @path with the mode that follows @flags when they need one, to libc's @next, or the channel. */
#define OPEN_BODY(next, ...)						\
	do {								\
		va_list ap;						\
		mode_t mode;						\
									\
		if (!strcmp(path, UCMA_PATH))				\
			return open_channel(flags);			\
		va_start(ap, flags);					\
		mode = mode_arg(flags, ap);				\
		va_end(ap);						\
		return (next)(__VA_ARGS__, mode);			\
	} while (0)

int open(const char *path, int flags, ...)
{
	OPEN_BODY(((int (*)(const char *, int, ...))next_fn(&libc_open, "open")), path, flags);
}

int open64(const char *path, int flags, ...)
{
	OPEN_BODY(((int (*)(const char *, int, ...))next_fn(&libc_open64, "open64")), path, flags);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	OPEN_BODY(((int (*)(int, const char *, int, ...))next_fn(&libc_openat, "openat")), dirfd,
		  path, flags);
}

ssize_t write(int fd, const void *buf, size_t len)
{
	ssize_t (*next)(int, const void *, size_t);
	ssize_t ret;

	if (is_ucma(fd)) {
		ret = ops()->write(fd, buf, len);
		if (ret < 0) {
			errno = (int)-ret;
			return -1;
		}
		return ret;
	}
	next = (ssize_t (*)(int, const void *, size_t))next_fn(&libc_write, "write");
	return next(fd, buf, len);
}

/* The provider closed @fd for real: the number may now be anything's. */
static void channel_released(int fd)
{
	atomic_fetch_and(&ucma_fds[fd / 64], ~(1ull << (fd % 64)));
}

int close(int fd)
{
	int (*next)(int) = (int (*)(int))next_fn(&libc_close, "close");

	if (is_ucma(fd)) {
		ops()->close(fd, channel_released);
		return 0;
	}
	return next(fd);
}

/* A character device, as the kernel's misc device rdma_cm is (major 10). */
static void as_chardev(struct stat *st)
{
	st->st_mode = S_IFCHR | 0666;
	st->st_rdev = makedev(10, 58);
}

int fstat(int fd, struct stat *st)
{
	int (*next)(int, struct stat *) = (int (*)(int, struct stat *))next_fn(&libc_fstat, "fstat");
	int ret = next(fd, st);

	if (!ret && is_ucma(fd))
		as_chardev(st);
	return ret;
}

int fstat64(int fd, struct stat64 *st)
{
	int (*next)(int, struct stat64 *) = (int (*)(int, struct stat64 *))next_fn(&libc_fstat64, "fstat64");
	int ret = next(fd, st);

	if (!ret && is_ucma(fd)) {
		st->st_mode = S_IFCHR | 0666;
		st->st_rdev = makedev(10, 58);
	}
	return ret;
}
