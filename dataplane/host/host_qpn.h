/* SPDX-License-Identifier: MIT */
/* Host-wide QPN allocator: the processes sharing one netdev never hand out the same QPN. */
#ifndef UROCE_HOST_QPN_H
#define UROCE_HOST_QPN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * QPNs HOST_QPN_BASE .. HOST_QPN_BASE + HOST_QPN_SLOTS - 1, handed out round
 * robin, so a QPN comes back only after the whole range went by and at
 * least HOST_QPN_QUARANTINE_S after it was freed: a peer still retrying
 * towards an old QP does not reach a new one.
 */
#define HOST_QPN_BASE		0x100u
#define HOST_QPN_SLOTS		65536u
#define HOST_QPN_QUARANTINE_S	20

struct host_qpn_map {
	int		fd;		/* the shared file, flock()ed while changed */
	bool		read_only;	/* root's (host_qpn_protect()): allocations through @broker */
	int		broker;		/* the broker connection that allocates, -1: the file itself */
	pthread_mutex_t	broker_lock;	/* one request at a time on @broker */
	void		*file;		/* mmap of it */
	uint64_t	quarantine_ns;
	uint32_t	start;		/* this process's start time, beside its PID in the file */
	/* QPNs this process holds, read by the receive path without a lock. */
	_Atomic uint64_t owned[HOST_QPN_SLOTS / 64];
	/* QPNs this process freed: late frames for them are still its to count. */
	_Atomic uint64_t released[HOST_QPN_SLOTS / 64];
	/* The socket filter's bitmap (host_qpn_filter_bits()), NULL without one. */
	_Atomic(_Atomic uint64_t *) filter;
	_Atomic unsigned n_owned;	/* read by `uroce stat` publishing without the lock */
};

/**
 * host_qpn_open() - attach to the allocator of one link.
 * @key: what processes must share to collide: the netdev name (or the
 *       device name for links DPDK owns).
 *
 * The file is RUN_DIR/qpn/KEY, created world-writable (mode 0666 in a
 * sticky 01777 directory) so unprivileged verbs processes can share it.
 * Return: 0, or -errno with one line in @err.
 */
int host_qpn_open(const char *key, struct host_qpn_map **out, char *err, size_t errlen);

/* The table is root's and this process is not: it allocates through a broker. */
bool host_qpn_read_only(const struct host_qpn_map *m);

/*
 * From now on allocate and free through @conn, a connection to the device's
 * broker (host_broker_fetch()), which host_qpn_close() closes: the broker
 * writes the table and lets each QPN's frames into this process's socket.
 */
void host_qpn_use_broker(struct host_qpn_map *m, int conn);

/*
 * What a client asks its broker on its connection, and the answer.  The
 * XDP ones are an af_xdp port's without privilege (host_broker_xdp_call()):
 * the broker attaches uroce's XDP program for it, makes its AF_XDP sockets
 * (the answer carries the socket) and puts them in the program's XSKMAP
 * (the request carries the socket, @qpn is the queue).
 */
enum {
	HOST_QPN_OP_ALLOC = 1,
	HOST_QPN_OP_FREE = 2,
	HOST_QPN_OP_XDP_ATTACH = 3,
	HOST_QPN_OP_XSK_SOCKET = 4,
	HOST_QPN_OP_XSK_INSERT = 5,
};
struct host_qpn_request {
	uint32_t	op;
	uint32_t	qpn;	/* HOST_QPN_OP_FREE; the queue for HOST_QPN_OP_XSK_INSERT */
};
struct host_qpn_answer {
	int32_t		ret;	/* 0 or -errno */
	uint32_t	qpn;	/* HOST_QPN_OP_ALLOC; the holder for HOST_QPN_OP_XDP_ATTACH's -EBUSY */
};

/* The broker's side: a QPN for process @pid (started at @start), and back. */
int host_qpn_alloc_for(struct host_qpn_map *m, int32_t pid, uint32_t start, uint32_t *qpn);
/* Nothing unless @qpn is @pid's in the table. */
void host_qpn_free_for(struct host_qpn_map *m, int32_t pid, uint32_t start, uint32_t qpn);

/* Frees this process's QPNs (into quarantine) and detaches. */
void host_qpn_close(struct host_qpn_map *m);

/*
 * rc_engine_cfg.qpn_alloc / qpn_free.  Return: 0 or -ENOSPC / -errno
 * (-EACCES: a read-only table and no broker).
 */
int host_qpn_alloc(void *map, uint32_t *qpn);
void host_qpn_free(void *map, uint32_t qpn);

/*
 * @qpn was this process's QP and nobody has taken it since: a frame for it
 * (a peer's late retransmission) is counted by this process as one for an
 * unknown QP, not dropped by every process as another's.
 */
bool host_qpn_was_mine(const struct host_qpn_map *m, uint32_t qpn);

/*
 * From now on keep @bits (HOST_QPN_SLOTS bits: a socket filter's, see
 * host_bpf.h) set for every QPN this process holds or held: its own and
 * released ones now, each new one before host_qpn_alloc() returns it.  A
 * bit is never cleared: a QPN freed and taken by another process later lets
 * that one's frames in, and the receive path drops them as before.
 * NULL: no bitmap any more.
 */
void host_qpn_filter_bits(struct host_qpn_map *m, uint64_t *bits);

/* The PID holding @qpn in the shared table (any process), 0 when none; its start time in @start. */
int32_t host_qpn_owner(const struct host_qpn_map *m, uint32_t qpn, uint32_t *start);

/*
 * @pid still runs and is the process that started at @start (0: any).
 * Always true in a process in another PID namespace than the run
 * directory's (host_self_set()): the PIDs there are not its own, it cannot
 * tell, and it leaves others' entries alone.
 */
bool host_proc_alive(int32_t pid, uint32_t start);

/*
 * This process's PID and start time as the run directory names processes
 * (the QPN table, rings, stats, rdma_cm tables): getpid()'s unless
 * host_self_set() said otherwise.
 */
int32_t host_self_pid(void);
uint32_t host_self_start(void);
/*
 * The broker saw this process as @pid, started at @start: in a PID namespace
 * of its own (a container) getpid() differs, and from now on the run
 * directory hears @pid.  A child after fork() is itself again.
 */
void host_self_set(int32_t pid, uint32_t start);
/* mkdir @path as a shared directory: 01777, past the umask.  0 if it exists. */
int host_mkdir_sticky(const char *path);

/* Field 22 of /proc/PID/stat (start time in clock ticks after boot), never 0; 0 if unknown. */
uint32_t host_qpn_proc_start(int pid);

/* @qpn's bit in @bits (owned, released): false outside the table. */
static inline bool host_qpn_bit(const _Atomic uint64_t *bits, uint32_t qpn)
{
	uint32_t slot = qpn - HOST_QPN_BASE;

	if (slot >= HOST_QPN_SLOTS)
		return false;
	return atomic_load_explicit(&bits[slot / 64], memory_order_relaxed) >> (slot % 64) & 1;
}

static inline bool host_qpn_owned(const struct host_qpn_map *m, uint32_t qpn)
{
	return host_qpn_bit(m->owned, qpn);
}

#endif
