// SPDX-License-Identifier: MIT
/* The DREQ frames of a process's established rdma_cm connections, posted by the broker once it is gone. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host_cm_exit.h"
#include "uroce/host.h"
#include "host_qpn.h"
#include "uroce/config.h"
#include "uroce/wire.h"
#include "uroce/wire_mad.h"

struct conn {
	uint32_t	comm_id;
	uint32_t	len;
	uint8_t		frame[HOST_CM_EXIT_FRAME_MAX];
};

struct host_cm_exit {
	char		path[600];
	struct conn	*conns;
	unsigned	n, cap;
};

static int exit_dir(const char *key, char *dir, size_t len)
{
	char cm[512];
	int ret;

	snprintf(cm, sizeof(cm), "%s/cm", host_run_dir());
	ret = host_mkdir_sticky(cm);
	if (ret)
		return ret;
	if ((size_t)snprintf(dir, len, "%s/%s.exit", cm, key) >= len)
		return -ENAMETOOLONG;
	return host_mkdir_sticky(dir);
}

int host_cm_exit_open(const char *key, struct host_cm_exit **out, char *err, size_t errlen)
{
	char dir[560];
	struct host_cm_exit *t;
	int32_t pid = host_self_pid();
	int ret;

	if (!*key || strchr(key, '/')) {
		snprintf(err, errlen, "invalid connection table name '%s'", key);
		return -EINVAL;
	}
	ret = exit_dir(key, dir, sizeof(dir));
	if (ret) {
		snprintf(err, errlen, "cannot create %s/cm/%s.exit: %s", host_run_dir(), key,
			 strerror(-ret));
		return ret;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	snprintf(t->path, sizeof(t->path), "%s/%" PRId32 ".%" PRIu32, dir, pid,
		 host_self_start());
	*out = t;
	return 0;
}

void host_cm_exit_close(struct host_cm_exit *t)
{
	free(t->conns);
	free(t);
}

/* The whole table, written anew and renamed over the old (a reader never sees half of it). */
static int store(struct host_cm_exit *t)
{
	char tmp[640];
	FILE *f;

	if (!t->n)
		return unlink(t->path) && errno != ENOENT ? -errno : 0;
	snprintf(tmp, sizeof(tmp), "%s.tmp", t->path);
	f = fopen(tmp, "we");
	if (!f)
		return -errno;
	for (unsigned i = 0; i < t->n; i++) {
		fprintf(f, "%08" PRIx32 " ", t->conns[i].comm_id);
		for (uint32_t b = 0; b < t->conns[i].len; b++)
			fprintf(f, "%02x", t->conns[i].frame[b]);
		fputc('\n', f);
	}
	if (fclose(f) || rename(tmp, t->path)) {
		int ret = -errno;

		unlink(tmp);
		return ret;
	}
	return 0;
}

int host_cm_exit_set(struct host_cm_exit *t, uint32_t comm_id, const uint8_t *frame, uint32_t len)
{
	unsigned i;

	if (len > HOST_CM_EXIT_FRAME_MAX)
		return -EMSGSIZE;
	for (i = 0; i < t->n && t->conns[i].comm_id != comm_id; i++)
		;
	if (!len) {
		if (i == t->n)
			return 0;
		t->conns[i] = t->conns[--t->n];
		return store(t);
	}
	if (i == t->n) {
		if (t->n == t->cap) {
			unsigned cap = t->cap ? 2 * t->cap : 16;
			struct conn *c = realloc(t->conns, cap * sizeof(*c));

			if (!c)
				return -ENOMEM;
			t->conns = c;
			t->cap = cap;
		}
		t->n++;
	}
	t->conns[i].comm_id = comm_id;
	t->conns[i].len = len;
	memcpy(t->conns[i].frame, frame, len);
	return store(t);
}

bool host_cm_exit_frame_ok(const uint8_t *frame, uint32_t len, const uint8_t src_mac[6])
{
	const struct wire_deth *deth;
	const struct wire_mad_hdr *mad;
	struct wire_pkt p;

	if (wire_parse(frame, len, 0, &p) != WIRE_DROP_NONE ||
	    p.opcode != (WIRE_OPC_UD | WIRE_OP_SEND_ONLY) || p.dest_qp != WIRE_GSI_QPN ||
	    memcmp(frame + WIRE_ETH_ALEN, src_mac, WIRE_ETH_ALEN) || p.payload_len != WIRE_MAD_LEN)
		return false;
	deth = wire_pkt_ext(&p, WIRE_EXT_DETH);
	mad = (const struct wire_mad_hdr *)wire_pkt_payload(&p);
	return deth && wire_get32(deth->qkey) == WIRE_GSI_QKEY &&
	       wire_cm_mad_check(mad, WIRE_MAD_LEN) == WIRE_MAD_DROP_NONE &&
	       wire_get16(mad->attr_id) == WIRE_CM_DREQ;
}

static int hex_nibble(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Post every frame of the claimed file @path; lines that are not "ID HEX" are skipped. */
static unsigned post_file(const char *path, int (*send)(void *, const uint8_t *, uint32_t),
			  void *arg)
{
	char line[16 + 2 * HOST_CM_EXIT_FRAME_MAX + 4];
	uint8_t frame[HOST_CM_EXIT_FRAME_MAX];
	unsigned posted = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *hex = strchr(line, ' ');
		uint32_t len = 0;

		if (!hex)
			continue;
		for (hex++; len < sizeof(frame); hex += 2, len++) {
			int hi = hex_nibble(hex[0]), lo = hi < 0 ? -1 : hex_nibble(hex[1]);

			if (hi < 0 || lo < 0)
				break;
			frame[len] = (uint8_t)(hi << 4 | lo);
		}
		if (len && send(arg, frame, len) == 0)
			posted++;
	}
	fclose(f);
	return posted;
}

unsigned host_cm_exit_reap(const char *key, int (*send)(void *arg, const uint8_t *frame,
							   uint32_t len), void *arg)
{
	char dir[560], path[900], claimed[920];
	unsigned posted = 0;
	struct dirent *e;
	DIR *d;

	if (exit_dir(key, dir, sizeof(dir)))
		return 0;
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		int32_t pid;
		uint32_t start;
		int end = 0;

		if (sscanf(e->d_name, "%" SCNd32 ".%" SCNu32 "%n", &pid, &start, &end) != 2 ||
		    e->d_name[end] || host_proc_alive(pid, start))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		snprintf(claimed, sizeof(claimed), "%s.posting", path);
		if (rename(path, claimed))
			continue;	/* another reaper was first */
		posted += post_file(claimed, send, arg);
		unlink(claimed);
	}
	closedir(d);
	return posted;
}
