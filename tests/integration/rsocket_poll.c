// SPDX-License-Identifier: MIT
/*
 * rsockets driven by rpoll(), as a poll-based server would: non-blocking
 * rsockets, every rsend/rrecv/raccept/rconnect after rpoll() said it may go.
 * The client sends BYTES of a pattern, the server checks them and sends BYTES of
 * another back, then closes; the client reads to the end, a hang-up with data
 * still readable is read first, as with TCP (rstream -T a's do_poll() stops at
 * the hang-up instead: issue 17's note).
 *
 *   rsocket_poll server ADDR PORT BYTES
 *   rsocket_poll client ADDR PORT BYTES
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <rdma/rsocket.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POLL_MS	10000

static unsigned long polls, hangups_with_data;

static uint8_t pattern(size_t i, unsigned seed)
{
	return (uint8_t)(i * 31 + seed);
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * rpoll() until @fd has @events, or a hang-up/error; 0, or -1 with a message.
 * rpoll() can return 0 long before its timeout (librdmacm 44 takes the whole
 * time elapsed off the remaining timeout at every wake-up without an event):
 * the deadline is kept here.
 */
static int wait_for(int fd, short events, short *revents)
{
	struct pollfd p = { .fd = fd, .events = events };
	int64_t deadline = now_ms() + POLL_MS, left;
	int n;

	polls++;
	while ((n = rpoll(&p, 1, (int)(deadline - now_ms()))) == 0) {
		left = deadline - now_ms();
		if (left <= 0) {
			fprintf(stderr, "rpoll: nothing within %d ms\n", POLL_MS);
			return -1;
		}
	}
	if (n < 0) {
		perror("rpoll");
		return -1;
	}
	*revents = p.revents;
	return 0;
}

static int send_all(int fd, size_t bytes, unsigned seed)
{
	uint8_t buf[65536];
	size_t off = 0;

	while (off < bytes) {
		size_t len = bytes - off < sizeof(buf) ? bytes - off : sizeof(buf);
		short rev;
		ssize_t n;

		for (size_t i = 0; i < len; i++)
			buf[i] = pattern(off + i, seed);
		if (wait_for(fd, POLLOUT, &rev))
			return -1;
		if (rev & (POLLERR | POLLHUP)) {
			fprintf(stderr, "send: revents %#x after %zu bytes\n", rev, off);
			return -1;
		}
		n = rsend(fd, buf, len, 0);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			perror("rsend");
			return -1;
		}
		if (n > 0)
			off += (size_t)n;
	}
	return 0;
}

/* Reads @bytes, checking the pattern; data readable at a hang-up is read first. */
static int recv_all(int fd, size_t bytes, unsigned seed)
{
	uint8_t buf[65536];
	size_t off = 0;

	while (off < bytes) {
		short rev;
		ssize_t n;

		if (wait_for(fd, POLLIN, &rev))
			return -1;
		if ((rev & POLLHUP) && (rev & POLLIN))
			hangups_with_data++;
		n = rrecv(fd, buf, sizeof(buf), 0);
		if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			perror("rrecv");
			return -1;
		}
		if (n == 0 || (n < 0 && (rev & (POLLERR | POLLHUP)) && !(rev & POLLIN))) {
			fprintf(stderr, "recv: connection ended after %zu of %zu bytes (revents %#x)\n",
				off, bytes, rev);
			return -1;
		}
		for (ssize_t i = 0; i < n; i++)
			if (buf[i] != pattern(off + (size_t)i, seed)) {
				fprintf(stderr, "recv: byte %zu wrong\n", off + (size_t)i);
				return -1;
			}
		if (n > 0)
			off += (size_t)n;
	}
	return 0;
}

static int nonblocking(int fd)
{
	if (rfcntl(fd, F_SETFL, O_NONBLOCK)) {
		perror("rfcntl");
		return -1;
	}
	return 0;
}

static int server(const struct sockaddr_in *sa, size_t bytes)
{
	int one = 1, lfd, fd;
	short rev;

	lfd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || rsetsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    rbind(lfd, (const struct sockaddr *)sa, sizeof(*sa)) || rlisten(lfd, 1) ||
	    nonblocking(lfd)) {
		perror("server: listen");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	if (wait_for(lfd, POLLIN, &rev))
		return 1;
	fd = raccept(lfd, NULL, NULL);
	if (fd < 0 || nonblocking(fd)) {
		perror("raccept");
		return 1;
	}
	if (recv_all(fd, bytes, 1) || send_all(fd, bytes, 2))
		return 1;
	printf("server: received %zu bytes verified, sent %zu, %lu polls\n", bytes, bytes, polls);
	rclose(fd);
	rclose(lfd);
	return 0;
}

static int client(const struct sockaddr_in *sa, size_t bytes)
{
	int err = 0, fd;
	socklen_t len = sizeof(err);
	short rev;

	fd = rsocket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || nonblocking(fd)) {
		perror("client: rsocket");
		return 1;
	}
	if (rconnect(fd, (const struct sockaddr *)sa, sizeof(*sa)) && errno != EINPROGRESS) {
		perror("rconnect");
		return 1;
	}
	if (wait_for(fd, POLLOUT, &rev))
		return 1;
	if (rgetsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
		fprintf(stderr, "rconnect: %s\n", strerror(err));
		return 1;
	}
	if (send_all(fd, bytes, 1) || recv_all(fd, bytes, 2))
		return 1;
	printf("client: sent %zu bytes, received %zu verified, %lu polls, "
	       "%lu hang-ups with data still readable\n", bytes, bytes, polls, hangups_with_data);
	rclose(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	size_t bytes;

	if (argc != 5 || inet_pton(AF_INET, argv[2], &sa.sin_addr) != 1) {
		fprintf(stderr, "usage: rsocket_poll server|client ADDR PORT BYTES\n");
		return 2;
	}
	sa.sin_port = htons((uint16_t)atoi(argv[3]));
	bytes = strtoul(argv[4], NULL, 0);
	if (!strcmp(argv[1], "server"))
		return server(&sa, bytes);
	if (!strcmp(argv[1], "client"))
		return client(&sa, bytes);
	fprintf(stderr, "usage: rsocket_poll server|client ADDR PORT BYTES\n");
	return 2;
}
