/* SPDX-License-Identifier: MIT */
/* Same-host delivery between the processes of one netdev: a shared-memory receive ring each. */
#ifndef UROCE_HOST_RING_H
#define UROCE_HOST_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A frame one process addresses to its own GID but whose destination QP
 * another process on the same netdev owns (QPNs are host-wide, host_qpn.c)
 * never touches the wire: it is copied into the owner's receive ring,
 * the shared file RUN_DIR/loop/KEY/PID.ring (many senders under a robust
 * process-shared mutex, one reader without a lock), and the owner's port
 * receives it with its own frames.  Checking for frames is one load of
 * the ring's tail: no syscall on the receive path.  An owner about to
 * sleep says so in its ring, and a sender then also writes one byte to the
 * owner's doorbell, the FIFO RUN_DIR/loop/KEY/PID.wake.
 */
#define HOST_RING_PEERS		8
#define HOST_RING_SLOTS		512
#define HOST_RING_FRAME_MAX	4320	/* a full RoCE v2 frame at IB MTU 4096 */
/* Bytes of each ring its owner publishes to the other processes (the engine's direct table). */
#define HOST_RING_SHARED_BYTES	(128 * 1024)

struct host_ring_ring;

struct host_ring_peer {
	int32_t			pid;		/* 0: free */
	struct host_ring_ring	*ring;		/* the peer's ring, mapped */
	int			wake_fd;	/* the peer's doorbell, written when it sleeps */
	bool			owner_checked;	/* its PID named the ring's owner when mapped */
	uint64_t		used;		/* for replacing the least recently used */
};

struct host_ring {
	char			dir[384];
	int32_t			me;		/* our PID as the run directory has it */
	struct host_ring_ring	*ring;		/* ours (NULL: a view) */
	int			wake_fd;	/* our doorbell (read end) */
	uint32_t		head;		/* next slot we read */
	uint64_t		clock;
	struct host_ring_peer	peers[HOST_RING_PEERS];
};

/**
 * host_ring_open() - create this process's receive ring for one link.
 * @key: as for host_qpn_open(): the netdev name, or the device name.
 *
 * Rings of processes that died are removed on the way.
 * Return: 0, or -errno with one line in @err.
 */
int host_ring_open(const char *key, struct host_ring **out, char *err, size_t errlen);
/*
 * host_ring_open_view() - the rings of another link's processes, without a
 * ring of our own: only host_ring_peer_shared() and host_ring_close() apply.
 */
int host_ring_open_view(const char *key, struct host_ring **out, char *err, size_t errlen);
void host_ring_close(struct host_ring *l);

/**
 * host_ring_send() - copy one frame into the ring of process @pid; never blocks.
 * @start: the process's start time as the QPN table holds it (0: unknown),
 *         so a ring of an earlier process with the same PID is never used.
 *
 * Return: 0, -ENOBUFS when the ring is full, -EMSGSIZE for a frame larger
 * than HOST_RING_FRAME_MAX, -ENOENT when the process has no ring (gone),
 * -EACCES when its ring is another user's (rings are 0600).
 */
int host_ring_send(struct host_ring *l, int32_t pid, uint32_t start, const void *frame,
		 uint32_t len);

/*
 * host_ring_broadcast() - host_ring_send() to every other process with a
 * ring on this link (a MAD to QP1, which each process has).
 * @denied: set when a ring was another user's.
 * Return: into how many rings it went.
 */
unsigned host_ring_broadcast(struct host_ring *l, const void *frame, uint32_t len, bool *denied);

/* Whether a frame is waiting: one load. */
bool host_ring_ready(const struct host_ring *l);

/*
 * Sleeping with the doorbell: host_ring_sleep_begin() tells senders to ring
 * (Return: false when a frame is already waiting: do not sleep), the caller
 * then polls host_ring_wake_fd() for POLLIN with its other descriptors, and
 * host_ring_sleep_end() stops the ringing and empties the doorbell.
 */
bool host_ring_sleep_begin(struct host_ring *l);
void host_ring_sleep_end(struct host_ring *l);
int host_ring_wake_fd(const struct host_ring *l);

/* Our ring's published area (HOST_RING_SHARED_BYTES, zeroed at open). */
void *host_ring_shared(struct host_ring *l);
/*
 * The published area of process @pid's ring (@start as for host_ring_send()),
 * or NULL.  NULL unless that process's progress thread runs (it holds the
 * ring's running mutex): so NULL once the process has ended or exec'd, even
 * if it never closed its ring, and whoever reaches into the process by its PID
 * (process_vm_writev) never reaches a later process that got the PID, nor a new
 * program in the same one.
 */
void *host_ring_peer_shared(struct host_ring *l, int32_t pid, uint32_t start);
/* Held by the thread that runs the ring owner's engine, from its start to its end. */
void host_ring_hold_running(struct host_ring *l);
void host_ring_release_running(struct host_ring *l);

/* The next frame into @buf (at most @cap bytes).  Return: its length, or 0 when none is left. */
uint32_t host_ring_recv(struct host_ring *l, void *buf, uint32_t cap);

#endif
