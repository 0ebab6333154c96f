/* SPDX-License-Identifier: MIT */
/* The CM's objects, shared by its MAD I/O (cm_io.c) and its state machines (cm_conn.c). */
#ifndef UROCE_CM_INTERNAL_H
#define UROCE_CM_INTERNAL_H

#include "uroce/cm.h"

/*
 * As deep as the kernel's MAD layer (ib_mad's 512 receive WQEs on QP1): a
 * hundred clients connecting at once must not overrun QP1, whose UD receive
 * queue drops what finds no WQE.  Sends: a REP and a DREP in flight for each.
 */
#define CM_RECV_SLOTS	512
#define CM_SEND_SLOTS	256
#define CM_GRH_LEN	40	/* the UD receive buffer's first bytes: the GRH (or the IPv4 header) */
#define CM_RECV_LEN	(CM_GRH_LEN + WIRE_MAD_LEN)

/* A MAD on its way out: the buffer and, for one-off answers, the AH made for it. */
struct cm_send_slot {
	struct wire_cm_mad	mad;
	struct rc_ah		*ah;		/* destroyed when the send completes */
	bool			busy;
};

struct cm_id {
	struct cm		*cm;
	void			*user;
	enum cm_state		state;
	uint32_t		local_comm_id;
	uint32_t		remote_comm_id;
	uint64_t		service_id;	/* LISTEN, and the REQ sent or taken */
	uint64_t		tid;		/* of the exchange under way */
	struct cm_path		path;
	bool			path_ok;
	uint32_t		remote_qpn;
	/* The message to repeat until answered (REQ, REP, DREQ, SIDR_REQ), and when. */
	struct wire_cm_mad	msg;
	bool			resend;
	unsigned		retries_left;
	uint32_t		timeout_ms;
	uint64_t		deadline;	/* 0: no timer */
	uint8_t			local_cm_timeout;	/* REQ: ours; the peer's timer for our REP */
	bool			exit_noted;	/* cfg.exit_dreq has its frame */
	struct cm_id		*next;
};

/*
 * A REQ or SIDR_REQ for a service ID nobody here listens on yet, kept a
 * moment for a listener that is about to come (a server that listens
 * again right after its previous connection, as perftest's -R does) before
 * it is answered as unclaimed.
 */
#define CM_PARKED_MAX	32

struct cm_parked {
	struct wire_cm_mad	mad;
	uint8_t			src[16];
	uint8_t			dst[16];
	uint64_t		deadline;
};

/*
 * The remote end of a connection whose ID was destroyed before its time-wait
 * ended (as rdma_destroy_id() right after rdma_disconnect() does): a REQ from
 * that QP is still stale until @deadline (IBA 12.9.8.3.1; the kernel's
 * timewait_info outlives its cm_id the same way).  Oldest overwritten.
 */
#define CM_TIMEWAIT_RECS	64

struct cm_timewait_rec {
	uint8_t			gid[16];
	uint32_t		qpn;
	uint64_t		deadline;	/* 0: free */
};

struct cm {
	struct cm_cfg		cfg;
	struct rc_pd		*pd;
	struct rc_cq		*cq;
	struct rc_qp		*qp;
	struct rc_mr		*mr;
	uint8_t			*recv_buf;	/* CM_RECV_SLOTS * CM_RECV_LEN */
	struct cm_send_slot	*send;		/* CM_SEND_SLOTS, in the same MR */
	uint8_t			*region;	/* both, one registration */
	struct cm_id		*ids;
	struct cm_parked	parked[CM_PARKED_MAX];
	unsigned		n_parked;
	struct cm_timewait_rec	timewait[CM_TIMEWAIT_RECS];
	unsigned		next_timewait;
	uint32_t		next_seq;
	struct cm_counters	cnt;
};

/* cm_io.c */
int cm_io_init(struct cm *cm);
void cm_io_fini(struct cm *cm);
/*
 * Send @mad to the peer of @path (QP1, GSI Q_Key).  Copied: the caller's
 * buffer is free at return.  Return: 0, or -ENOBUFS / -EHOSTUNREACH (the
 * message is lost; a retransmission timer recovers).
 */
int cm_io_send(struct cm *cm, const struct cm_path *path, const struct wire_cm_mad *mad);
/* The frame cm_io_send() would send now, built into @frame.  Return: its length or -errno. */
int cm_io_frame(struct cm *cm, const struct cm_path *path, const struct wire_cm_mad *mad,
		uint8_t *frame, uint32_t room);
/* The GID table index of @gid (RoCE v2 entry), or -ENOENT. */
int cm_io_gid_index(struct cm *cm, const uint8_t gid[16]);
/* Poll the CQ: each received MAD goes to cm_conn_rx() with the sender's GID. */
unsigned cm_io_poll(struct cm *cm);

/* cm_conn.c */
void cm_conn_rx(struct cm *cm, const uint8_t src_gid[16], const uint8_t dst_gid[16],
		const struct wire_cm_mad *mad);
uint64_t cm_now_ns(const struct cm *cm);

#endif
