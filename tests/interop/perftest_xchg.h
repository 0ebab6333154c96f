/* SPDX-License-Identifier: MIT */
/* perftest's out-of-band TCP exchange (port 18515), client side, as perftest 4.5 / 6.x speaks it. */
#ifndef UROCE_INTEROP_PERFTEST_XCHG_H
#define UROCE_INTEROP_PERFTEST_XCHG_H

#include <stdbool.h>
#include <stdint.h>

#define PT_PORT 18515

/* What each side tells the other about one QP (perftest's struct pingpong_dest). */
struct pt_dest {
	uint32_t lid;
	uint32_t out_reads;	/* outstanding RDMA reads / atomics it accepts */
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;
	uint8_t gid[16];
	uint32_t srqn;
};

/* The client's figures the server prints at the end (perftest's bw_report_data). */
struct pt_report {
	uint64_t size;
	uint64_t iters;
	double bw_peak;		/* MB/s */
	double bw_avg;		/* MB/s */
	double msg_rate;	/* Mpps */
};

/**
 * pt_connect() - open the TCP connection to a waiting perftest server.
 * @server: IPv4 address, dotted.
 * @timeout_s: how long to retry while the server is not listening yet.
 * Return: socket, or -1 with a message on stderr.
 */
int pt_connect(const char *server, int timeout_s);

/**
 * pt_client_setup() - the exchange up to the point where the server's QP is ready (RTS).
 * @fd: socket from pt_connect().
 * @mtu_enum: in: our path MTU as verbs' enum ibv_mtu (3 = 1024 .. 5 = 4096); out: the
 *            smaller of the server's and ours, which both sides then use.
 * @syncs: handshakes after the first one: 2 for ib_write_bw / ib_read_bw / ib_atomic_bw
 *         (keys printed, sync after RTR), 3 for ib_send_bw (one more once its receives
 *         are posted).
 * @mine: our QP, sent in every handshake.
 * @peer: filled with the server's QP.
 * Return: 0, or -1 with a message on stderr.
 */
int pt_client_setup(int fd, int *mtu_enum, int syncs, const struct pt_dest *mine,
		    struct pt_dest *peer);

/**
 * pt_client_finish() - the closing exchange.
 * @rep: our figures, for the servers that print the client's report (ib_write_bw,
 *       ib_read_bw, ib_atomic_bw: a sync, the report, then the closing sync); NULL for
 *       ib_send_bw, which measures and prints its own and only closes.
 * Ends with both sides writing "done"; the server then exits 0.
 * Return: 0, or -1 with a message on stderr.  Closes @fd in both cases.
 */
int pt_client_finish(int fd, const struct pt_dest *mine, const struct pt_report *rep);

/*
 * @n more handshakes, for a caller that passed syncs = 0 to pt_*_setup() so that it could
 * bring its QP to RTR between the keys and the syncs, as perftest itself does.
 */
int pt_syncs(int fd, bool server, const struct pt_dest *mine, int n);

/**
 * pt_accept() - wait for a perftest client on TCP 18515 (all addresses of this namespace).
 * @timeout_s: how long to wait.
 * Return: the connection, or -1 with a message on stderr.
 */
int pt_accept(int timeout_s);

/**
 * pt_server_setup() - the server's side of pt_client_setup(): it reads first, then answers.
 * @mtu_enum: as for pt_client_setup().
 * Return: 0, or -1 with a message on stderr.
 */
int pt_server_setup(int fd, int *mtu_enum, int syncs, const struct pt_dest *mine,
		    struct pt_dest *peer);

/**
 * pt_server_finish() - the server's side of pt_client_finish().
 * @client_rep: when not NULL, the report the client sends is stored here (ib_write_bw,
 *              ib_read_bw, ib_atomic_bw); NULL for ib_send_bw, whose client sends none.
 * Return: 0, or -1 with a message on stderr.  Closes @fd in both cases.
 */
int pt_server_finish(int fd, const struct pt_dest *mine, struct pt_report *client_rep);

#endif
