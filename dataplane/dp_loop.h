/* SPDX-License-Identifier: MIT */
/* Same-host delivery between the processes of one netdev: a shared-memory receive ring each. */
#ifndef UROCE_DP_LOOP_H
#define UROCE_DP_LOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A frame one process addresses to its own GID but whose destination QP
 * another process on the same netdev owns (QPNs are host-wide, dp_qpn.c)
 * never touches the wire: it is copied into the owner's receive ring,
 * the shared file RUN_DIR/loop/KEY/PID.ring (many senders under a robust
 * process-shared mutex, one reader without a lock), and the owner's port
 * receives it with its own frames.  Checking for frames is one load of
 * the ring's tail: no syscall on the receive path.
 */
#define DP_LOOP_PEERS		8
#define DP_LOOP_SLOTS		512
#define DP_LOOP_FRAME_MAX	4320	/* a full RoCE v2 frame at IB MTU 4096 */

struct dp_loop_ring;

struct dp_loop_peer {
	int32_t			pid;		/* 0: free */
	struct dp_loop_ring	*ring;		/* the peer's ring, mapped */
	uint64_t		used;		/* for replacing the least recently used */
};

struct dp_loop {
	char			dir[384];
	struct dp_loop_ring	*ring;		/* ours */
	uint32_t		head;		/* next slot we read */
	uint64_t		clock;
	struct dp_loop_peer	peers[DP_LOOP_PEERS];
};

/**
 * dp_loop_open() - create this process's receive ring for one link.
 * @key: as for dp_qpn_open(): the netdev name, or the device name.
 *
 * Rings of processes that died are removed on the way.
 * Return: 0, or -errno with one line in @err.
 */
int dp_loop_open(const char *key, struct dp_loop **out, char *err, size_t errlen);
void dp_loop_close(struct dp_loop *l);

/**
 * dp_loop_send() - copy one frame into the ring of process @pid; never blocks.
 * @start: the process's start time as the QPN table holds it (0: unknown),
 *         so a ring of an earlier process with the same PID is never used.
 *
 * Return: 0, -ENOBUFS when the ring is full, -EMSGSIZE for a frame larger
 * than DP_LOOP_FRAME_MAX, -ENOENT when the process has no ring (gone).
 */
int dp_loop_send(struct dp_loop *l, int32_t pid, uint32_t start, const void *frame,
		 uint32_t len);

/* Whether a frame is waiting: one load. */
bool dp_loop_ready(const struct dp_loop *l);

/* The next frame into @buf (at most @cap bytes).  Return: its length, or 0 when none is left. */
uint32_t dp_loop_recv(struct dp_loop *l, void *buf, uint32_t cap);

#endif
