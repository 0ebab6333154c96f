// SPDX-License-Identifier: MIT
/* perftest's out-of-band TCP exchange, client side (see perftest_communication.c upstream). */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "perftest_xchg.h"

/* perftest >= 5.70 refuses older peers; 6.06 is what Debian's perftest 4.5+0.17 reports. */
#define PT_VERSION "6.06"
#define PT_VERSION_LEN 16
#define PT_CYCLE_BUFFER 4096
#define PT_CACHE_LINE 64
/* "%04x:%04x:%06x:%06x:%08x:%016llx:" + 16 x "%02x:" + "%08x:" + NUL */
#define PT_KEY_MSG_LEN 108

int pt_connect(const char *server, int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PT_PORT) };
	time_t end = time(NULL) + timeout_s;

	if (inet_pton(AF_INET, server, &sa.sin_addr) != 1) {
		fprintf(stderr, "perftest exchange: bad server address %s\n", server);
		return -1;
	}
	for (;;) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		if (fd < 0) {
			perror("perftest exchange: socket");
			return -1;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return fd;
		close(fd);
		if (errno != ECONNREFUSED || time(NULL) >= end) {
			fprintf(stderr, "perftest exchange: connect %s:%d: %s\n", server, PT_PORT,
				strerror(errno));
			return -1;
		}
		usleep(200000);
	}
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int read_all(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n <= 0) {
			if (n < 0 && errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* One message each way: the client writes first, the server reads first. */
static int xchg_as(bool server, int fd, const void *mine, void *theirs, size_t len,
		   const char *what)
{
	int err = server ? read_all(fd, theirs, len) || write_all(fd, mine, len) :
			   write_all(fd, mine, len) || read_all(fd, theirs, len);

	if (err) {
		fprintf(stderr, "perftest exchange: %s: connection lost\n", what);
		return -1;
	}
	return 0;
}

static void key_format(const struct pt_dest *d, char out[PT_KEY_MSG_LEN])
{
	int n = snprintf(out, PT_KEY_MSG_LEN, "%04x:%04x:%06x:%06x:%08x:%016" PRIx64 ":",
			 d->lid, d->out_reads, d->qpn, d->psn, d->rkey, d->vaddr);

	for (int i = 0; i < 16; i++)
		n += snprintf(out + n, (size_t)(PT_KEY_MSG_LEN - n), "%02x:", d->gid[i]);
	snprintf(out + n, (size_t)(PT_KEY_MSG_LEN - n), "%08x:", d->srqn);
}

static int key_parse(const char msg[PT_KEY_MSG_LEN], struct pt_dest *d)
{
	char buf[PT_KEY_MSG_LEN + 1], *save = NULL, *tok;
	uint64_t f[23];
	int n = 0;

	memcpy(buf, msg, PT_KEY_MSG_LEN);
	buf[PT_KEY_MSG_LEN] = '\0';
	for (tok = strtok_r(buf, ":", &save); tok && n < 23; tok = strtok_r(NULL, ":", &save)) {
		char *end;

		f[n++] = strtoull(tok, &end, 16);
		if (*end)
			break;
	}
	if (n != 23) {
		fprintf(stderr, "perftest exchange: cannot parse the server's keys <%.*s>\n",
			PT_KEY_MSG_LEN, msg);
		return -1;
	}
	d->lid = (uint32_t)f[0];
	d->out_reads = (uint32_t)f[1];
	d->qpn = (uint32_t)f[2];
	d->psn = (uint32_t)f[3];
	d->rkey = (uint32_t)f[4];
	d->vaddr = f[5];
	for (int i = 0; i < 16; i++)
		d->gid[i] = (uint8_t)f[6 + i];
	d->srqn = (uint32_t)f[22];
	return 0;
}

static int hand_shake(bool server, int fd, const struct pt_dest *mine, struct pt_dest *peer,
		      const char *what)
{
	char out[PT_KEY_MSG_LEN], in[PT_KEY_MSG_LEN];

	key_format(mine, out);
	if (xchg_as(server, fd, out, in, sizeof(out), what))
		return -1;
	return peer ? key_parse(in, peer) : 0;
}

static int setup(bool server, int fd, int *mtu_enum, int syncs, const struct pt_dest *mine,
		 struct pt_dest *peer)
{
	char ver[PT_VERSION_LEN] = PT_VERSION, rver[PT_VERSION_LEN];
	uint32_t sys[2] = { htonl(PT_CYCLE_BUFFER), htonl(PT_CACHE_LINE) }, rsys;
	char mtu[2] = { (char)('0' + *mtu_enum), 0 }, rmtu[2];

	if (xchg_as(server, fd, ver, rver, sizeof(ver), "version"))
		return -1;
	rver[PT_VERSION_LEN - 1] = '\0';
	if (strtod(rver, NULL) < 5.70) {
		fprintf(stderr, "perftest exchange: peer version %s older than 5.70\n", rver);
		return -1;
	}
	/* page size and cache line size (versions >= 5.32), then MTU as text (>= 5.31: 2 bytes) */
	if (xchg_as(server, fd, &sys[0], &rsys, 4, "cycle buffer") ||
	    xchg_as(server, fd, &sys[1], &rsys, 4, "cache line") ||
	    xchg_as(server, fd, mtu, rmtu, sizeof(mtu), "mtu"))
		return -1;
	/* both use the smaller path MTU (perftest's check_mtu()) */
	if (rmtu[0] >= '1' && rmtu[0] <= '5' && rmtu[0] - '0' < *mtu_enum)
		*mtu_enum = rmtu[0] - '0';
	if (hand_shake(server, fd, mine, peer, "keys"))
		return -1;
	for (int i = 0; i < syncs; i++)
		if (hand_shake(server, fd, mine, NULL, "sync"))
			return -1;
	return 0;
}

int pt_client_setup(int fd, int *mtu_enum, int syncs, const struct pt_dest *mine,
		    struct pt_dest *peer)
{
	return setup(false, fd, mtu_enum, syncs, mine, peer);
}

int pt_server_setup(int fd, int *mtu_enum, int syncs, const struct pt_dest *mine,
		    struct pt_dest *peer)
{
	return setup(true, fd, mtu_enum, syncs, mine, peer);
}

int pt_syncs(int fd, bool server, const struct pt_dest *mine, int n)
{
	for (int i = 0; i < n; i++)
		if (hand_shake(server, fd, mine, NULL, "sync"))
			return -1;
	return 0;
}

int pt_accept(int timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(PT_PORT) };
	struct pollfd pfd = { .events = POLLIN };
	int one = 1, fd;

	pfd.fd = socket(AF_INET, SOCK_STREAM, 0);
	if (pfd.fd < 0 || setsockopt(pfd.fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(pfd.fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(pfd.fd, 1)) {
		fprintf(stderr, "perftest exchange: listen on port %d: %s\n", PT_PORT, strerror(errno));
		return -1;
	}
	printf("# waiting for a perftest client on port %d\n", PT_PORT);
	fflush(stdout);
	if (poll(&pfd, 1, timeout_s * 1000) != 1) {
		fprintf(stderr, "perftest exchange: no client within %d s\n", timeout_s);
		close(pfd.fd);
		return -1;
	}
	fd = accept(pfd.fd, NULL, NULL);
	close(pfd.fd);
	if (fd < 0)
		fprintf(stderr, "perftest exchange: accept: %s\n", strerror(errno));
	return fd;
}

/* perftest sends its 64-bit integers and doubles big-endian. */
static uint64_t double_bits(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return htobe64(v);
}

static int finish(bool server, int fd, const struct pt_dest *mine, const struct pt_report *rep,
		  struct pt_report *rrep, bool with_report)
{
	uint64_t out[5] = { 0 }, in[5] = { 0 };
	char done[5];
	int rc = -1;

	if (rep) {
		out[0] = htobe64(rep->size);
		out[1] = htobe64(rep->iters);
		out[2] = double_bits(rep->bw_peak);
		out[3] = double_bits(rep->bw_avg);
		out[4] = double_bits(rep->msg_rate);
	}
	if (with_report && hand_shake(server, fd, mine, NULL, "sync before the report"))
		goto out_close;
	for (int i = 0; with_report && i < 5; i++)
		if (xchg_as(server, fd, &out[i], &in[i], sizeof(in[i]), "report"))
			goto out_close;
	if (with_report && rrep) {
		rrep->size = be64toh(in[0]);
		rrep->iters = be64toh(in[1]);
		memcpy(&rrep->bw_peak, &(uint64_t){ be64toh(in[2]) }, sizeof(double));
		memcpy(&rrep->bw_avg, &(uint64_t){ be64toh(in[3]) }, sizeof(double));
		memcpy(&rrep->msg_rate, &(uint64_t){ be64toh(in[4]) }, sizeof(double));
	}
	if (hand_shake(server, fd, mine, NULL, "closing sync"))
		goto out_close;
	/*
	 * Both sides write "done" with its NUL.  perftest writes its own and
	 * closes without reading ours, so ours would be unread data there and
	 * its close a reset, which could discard its "done" here before we read
	 * it: read first, then write (a failure of that write is no error).
	 */
	if (read_all(fd, done, 5) || memcmp(done, "done", 5)) {
		fprintf(stderr, "perftest exchange: no \"done\" from the peer\n");
		goto out_close;
	}
	(void)write_all(fd, "done", 5);
	rc = 0;
out_close:
	close(fd);
	return rc;
}

int pt_client_finish(int fd, const struct pt_dest *mine, const struct pt_report *rep)
{
	return finish(false, fd, mine, rep, NULL, rep != NULL);
}

int pt_server_finish(int fd, const struct pt_dest *mine, struct pt_report *client_rep)
{
	static const struct pt_report none;

	return finish(true, fd, mine, &none, client_rep, client_rep != NULL);
}
