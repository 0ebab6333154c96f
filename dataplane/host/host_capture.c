// SPDX-License-Identifier: MIT
/* A pcap writer for UROCE_PCAP: one buffer, one lock, no syscall per frame. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host_capture.h"

#define PCAP_MAGIC_NS	0xa1b23c4du	/* nanosecond timestamps */
#define PCAP_LINKTYPE_ETHERNET 1
#define PCAP_SNAPLEN	65535u
#define PCAP_BUF_SIZE	(1u << 20)

struct pcap_file_hdr {
	uint32_t magic;
	uint16_t version_major, version_minor;
	int32_t  thiszone;
	uint32_t sigfigs, snaplen, linktype;
};
_Static_assert(sizeof(struct pcap_file_hdr) == 24, "pcap header");

struct pcap_rec_hdr {
	uint32_t ts_sec, ts_nsec, caplen, len;
};
_Static_assert(sizeof(struct pcap_rec_hdr) == 16, "pcap record");

struct host_capture {
	pthread_mutex_t	lock;
	int		fd;
	unsigned	refs;
	uint64_t	write_errors;
	size_t		used;
	uint8_t		buf[PCAP_BUF_SIZE];
};

static pthread_mutex_t process_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_capture *process_pcap;
static pid_t process_pcap_pid;		/* who opened it: a forked child writes none of its frames */
static pthread_once_t exit_flush_once = PTHREAD_ONCE_INIT;

static void flush_locked(struct host_capture *pc)
{
	size_t off = 0;

	while (off < pc->used) {
		ssize_t n = write(pc->fd, pc->buf + off, pc->used - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			pc->write_errors++;
			break;
		}
		off += (size_t)n;
	}
	pc->used = 0;
}

struct host_capture *host_capture_open(const char *path, char *err, size_t errlen)
{
	struct pcap_file_hdr hdr = {
		.magic = PCAP_MAGIC_NS, .version_major = 2, .version_minor = 4,
		.snaplen = PCAP_SNAPLEN, .linktype = PCAP_LINKTYPE_ETHERNET,
	};
	struct host_capture *pc = malloc(sizeof(*pc));

	if (!pc) {
		snprintf(err, errlen, "UROCE_PCAP: out of memory");
		return NULL;
	}
	pc->fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (pc->fd < 0) {
		snprintf(err, errlen, "UROCE_PCAP: cannot create %s: %s", path, strerror(errno));
		free(pc);
		return NULL;
	}
	pthread_mutex_init(&pc->lock, NULL);
	pc->refs = 1;
	pc->write_errors = 0;
	memcpy(pc->buf, &hdr, sizeof(hdr));
	pc->used = sizeof(hdr);
	return pc;
}

/* "%p" -> PID, "%%" -> "%". */
static int expand_path(const char *tmpl, char *out, size_t len)
{
	size_t o = 0;

	for (const char *p = tmpl; *p; p++) {
		int n;

		if (p[0] == '%' && p[1] == 'p') {
			n = snprintf(out + o, len - o, "%d", (int)getpid());
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			n = snprintf(out + o, len - o, "%%");
			p++;
		} else {
			n = snprintf(out + o, len - o, "%c", *p);
		}
		if (n < 0 || (size_t)n >= len - o)
			return -ENAMETOOLONG;
		o += (size_t)n;
	}
	return 0;
}

/*
 * librdmacm never closes the devices it opened, so rping and the like exit
 * with the capture still held: what is buffered goes out at exit.
 */
static void flush_at_exit(void)
{
	pthread_mutex_lock(&process_lock);
	if (process_pcap && process_pcap_pid == getpid())
		host_capture_flush(process_pcap);
	pthread_mutex_unlock(&process_lock);
}

static void register_exit_flush(void)
{
	atexit(flush_at_exit);
}

struct host_capture *host_capture_get(char *err, size_t errlen)
{
	const char *tmpl = getenv("UROCE_PCAP");
	char path[4096];
	struct host_capture *pc;

	if (errlen)
		err[0] = '\0';
	if (!tmpl || !*tmpl)
		return NULL;
	pthread_mutex_lock(&process_lock);
	if (process_pcap) {
		pc = process_pcap;
		pc->refs++;
	} else if (expand_path(tmpl, path, sizeof(path))) {
		snprintf(err, errlen, "UROCE_PCAP: file name too long");
		pc = NULL;
	} else {
		pc = process_pcap = host_capture_open(path, err, errlen);
		process_pcap_pid = getpid();
		pthread_once(&exit_flush_once, register_exit_flush);
	}
	pthread_mutex_unlock(&process_lock);
	return pc;
}

void host_capture_put(struct host_capture *pc)
{
	bool last;

	if (!pc)
		return;
	pthread_mutex_lock(&process_lock);
	pthread_mutex_lock(&pc->lock);
	last = --pc->refs == 0;
	flush_locked(pc);
	pthread_mutex_unlock(&pc->lock);
	if (last && process_pcap == pc)
		process_pcap = NULL;
	pthread_mutex_unlock(&process_lock);
	if (!last)
		return;
	close(pc->fd);
	pthread_mutex_destroy(&pc->lock);
	free(pc);
}

void host_capture_write(struct host_capture *pc, const void *const *frames, const uint32_t *lens,
		   unsigned n)
{
	struct pcap_rec_hdr rec;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	rec.ts_sec = (uint32_t)ts.tv_sec;
	rec.ts_nsec = (uint32_t)ts.tv_nsec;
	pthread_mutex_lock(&pc->lock);
	for (unsigned i = 0; i < n; i++) {
		uint32_t cap = lens[i] < PCAP_SNAPLEN ? lens[i] : PCAP_SNAPLEN;

		if (pc->used + sizeof(rec) + cap > sizeof(pc->buf))
			flush_locked(pc);
		rec.caplen = cap;
		rec.len = lens[i];
		memcpy(pc->buf + pc->used, &rec, sizeof(rec));
		memcpy(pc->buf + pc->used + sizeof(rec), frames[i], cap);
		pc->used += sizeof(rec) + cap;
	}
	pthread_mutex_unlock(&pc->lock);
}

void host_capture_flush(struct host_capture *pc)
{
	pthread_mutex_lock(&pc->lock);
	flush_locked(pc);
	pthread_mutex_unlock(&pc->lock);
}
