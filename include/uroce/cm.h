/* SPDX-License-Identifier: MIT */
/* The Communication Manager (IBA 12): connections set up and torn down by MADs on the engine's QP1. */
#ifndef UROCE_CM_H
#define UROCE_CM_H

#include <stdbool.h>
#include <stdint.h>

#include "uroce/rc.h"
#include "uroce/wire_mad.h"

/*
 * One CM per engine per process, as the kernel has one ib_cm per port.  It
 * owns the engine's GSI QP (QPN 1), sends every message as a UD SEND to the
 * peer's QP1 with the GSI Q_Key, retransmits REQ, REP and DREQ until they
 * are answered (IBA 12.7.22) and keeps one state machine per comm ID.
 * Several processes share a netdev, each with its own QP1; every one of them
 * sees every MAD, and each keeps only what is its own: messages naming one
 * of its comm IDs, REQs for a service ID it listens on.
 *
 * Locking: none inside.  The caller serialises every call, cm_process()
 * included, with one lock of its own; events are delivered from inside
 * cm_process() with that lock held.  The engine's lock is taken inside
 * (rc_* calls), so the caller's lock comes first.
 */
struct cm;
struct cm_id;

/* IBA 12.9.6 figure 171 (the states the RC/UC and SIDR connections of uroce go through). */
#define CM_STATES(X)						\
	X(IDLE)		X(LISTEN)	X(REQ_SENT)	X(MRA_REQ_RCVD)	\
	X(REQ_RCVD)	X(REP_SENT)	X(REP_RCVD)	X(ESTABLISHED)	\
	X(DREQ_SENT)							\
	X(DREQ_RCVD)	X(TIMEWAIT)	X(SIDR_REQ_SENT)	X(SIDR_REQ_RCVD)

enum cm_state {
#define CM_STATE_ENUM(n) CM_##n,
	CM_STATES(CM_STATE_ENUM)
#undef CM_STATE_ENUM
	CM_STATE_COUNT
};

const char *cm_state_name(enum cm_state s);

enum cm_event_type {
	CM_EV_REQ,		/* on a new ID (REQ_RCVD); ev.listen is the listener */
	CM_EV_REP,		/* our REQ was answered: send RTU or REJ */
	CM_EV_RTU,		/* our REP was answered: established */
	CM_EV_REJ,		/* ev.reason; the ID is IDLE again */
	CM_EV_DREQ,		/* the peer disconnects; DREP already sent, in TIMEWAIT */
	CM_EV_DREP,		/* our DREQ was answered, in TIMEWAIT */
	CM_EV_TIMEOUT,		/* REQ, REP or DREQ unanswered after every retry (ev.msg) */
	CM_EV_TIMEWAIT_EXIT,	/* IDLE again */
	CM_EV_SIDR_REQ,		/* on a new ID (SIDR_REQ_RCVD); ev.listen is the listener */
	CM_EV_SIDR_REP,		/* ev.sidr_status, ev.conn.qpn and .qkey; the ID is IDLE again */
};

/* Where the peer is, as this side sees it. */
struct cm_path {
	uint8_t		sgid[16];	/* ours */
	uint8_t		dgid[16];
	unsigned	sgid_index;
	uint8_t		hop_limit;
	uint8_t		tclass;
	uint32_t	flow_label;
	uint8_t		mtu;		/* enum ibv_mtu */
};

/* What a REQ or REP carries about the QP it connects (IBA 12.6.5, 12.6.8). */
struct cm_conn {
	uint64_t	service_id;	/* REQ */
	uint32_t	qpn;
	uint32_t	psn;
	uint32_t	qkey;		/* UD and SIDR */
	uint8_t		rres;		/* responder resources */
	uint8_t		idepth;		/* initiator depth */
	uint8_t		retry_count;
	uint8_t		rnr_retry;
	uint8_t		ack_timeout;	/* REQ: local ACK timeout; REP: target ACK delay */
	bool		srq;
	bool		flow_control;
	enum ibv_qp_type qp_type;	/* REQ: RC or UC */
	uint8_t		pdata_len;
	uint8_t		pdata[WIRE_CM_RTU_PDATA];
};

struct cm_event {
	enum cm_event_type	type;
	struct cm_id		*listen;	/* REQ, SIDR_REQ */
	struct cm_conn		conn;		/* REQ, REP (and pdata of every message) */
	struct cm_path		path;		/* REQ, SIDR_REQ */
	uint16_t		reason;		/* REJ */
	uint8_t			sidr_status;	/* SIDR_REP */
	enum wire_cm_attr	msg;		/* TIMEOUT: what went unanswered */
};

/*
 * Counters, shown with the engine's by `uroce stat`.  Every MAD received
 * that passed wire_cm_mad_check() is a new message for an ID, a duplicate,
 * not ours, or unclaimed: for no ID and no listener of any process, answered
 * here as the netdev's answerer (REJ "invalid service ID", SIDR_REP, DREP).
 * Parked: REQs and SIDR_REQs that came before their listener and waited
 * for it (each is also counted once under what became of it).
 */
#define CM_LISTEN_GRACE_MS	50
#define CM_COUNTERS(X)							\
	X(mads_rx)	X(mads_tx)	X(retransmits)	X(timeouts)	\
	X(not_ours)	X(duplicates)	X(unclaimed)	X(tx_no_slot)	\
	X(rej_tx)	X(parked)	X(stale)

struct cm_counters {
#define CM_COUNTER_FIELD(n) uint64_t n;
	CM_COUNTERS(CM_COUNTER_FIELD)
#undef CM_COUNTER_FIELD
	uint64_t	drops[WIRE_MAD_DROP_COUNT];
};

struct cm_cfg {
	struct rc_engine	*eng;
	uint64_t		node_guid;	/* the CA GUID REQ and REP carry */
	uint64_t		(*now_ns)(void *arg);	/* monotonic */
	/*
	 * Each event, from inside cm_process().  For CM_EV_REQ and
	 * CM_EV_SIDR_REQ, a non-zero return refuses the new ID: the CM answers
	 * REJ (SIDR_REP "rejected") and frees it.
	 */
	int			(*event)(void *arg, struct cm_id *id, const struct cm_event *ev);
	/*
	 * Optional: true when this process answers REQs for service IDs no
	 * process listens on (REJ "invalid service ID", IBA 12.6.7.2); one
	 * process per netdev should.
	 */
	bool			(*answers_unclaimed)(void *arg, uint64_t service_id);
	void			*arg;
	/*
	 * Retransmission interval in ms for every message; 0: from the CM
	 * response timeouts the messages carry (IBA 12.7.22), as on the wire.
	 * Tests shorten it (UROCE_CM_TIMEOUT_MS).
	 */
	uint32_t		timeout_ms;
	/* The process's PID as the host names it (comm IDs hold it); 0: getpid(). */
	int32_t			pid;
	/*
	 * How long a REQ or SIDR_REQ for a service ID without a listener in
	 * this process waits for one before it is answered (or left to its
	 * listener elsewhere); 0: CM_LISTEN_GRACE_MS.
	 */
	uint32_t		listen_grace_ms;
	/*
	 * Optional: a connection of comm ID @comm_id became established, and
	 * @frame (@len bytes, ICRC included) is the DREQ to post for it should
	 * this process die (the kernel sends it when the file closes); @len 0:
	 * it is over, nothing to post.
	 */
	void			(*exit_dreq)(void *arg, uint32_t comm_id, const uint8_t *frame,
					     uint32_t len);
	uint32_t		seed;		/* first comm ID sequence; 0: from the clock */
};

/* Creates the GSI QP and its buffers.  Return: NULL with errno set. */
struct cm *cm_create(const struct cm_cfg *cfg);
/* Frees every ID without sending anything (the process is going away). */
void cm_destroy(struct cm *cm);

/**
 * cm_process() - receive MADs, fire the retransmission and time-wait timers.
 * Return: MADs received + timers fired; 0 when idle.
 */
unsigned cm_process(struct cm *cm);
/* MADs posted on QP1 whose send has not completed yet (seen by cm_process()). */
unsigned cm_sends_in_flight(const struct cm *cm);
/* When cm_process() has a timer due, ns on cfg.now_ns's clock; UINT64_MAX if none. */
uint64_t cm_next_deadline(const struct cm *cm);

void cm_counters(const struct cm *cm, struct cm_counters *out);

/* A new ID, IDLE, with a comm ID unique on the host (the PID in its low 22 bits). */
struct cm_id *cm_id_create(struct cm *cm, void *user);
/*
 * Frees @id.  A connection under way or up is ended as IBA 12.9.6 says:
 * a REQ or REP unanswered is rejected (REJ "timeout"), an established
 * connection gets a DREQ (sent once, not retried).
 */
void cm_id_destroy(struct cm_id *id);
void *cm_id_user(const struct cm_id *id);
void cm_id_set_user(struct cm_id *id, void *user);
enum cm_state cm_id_state(const struct cm_id *id);
uint32_t cm_id_comm_id(const struct cm_id *id);
/* The peer's QPN (REQ, REP received) and path, for the QP's RTR attributes. */
const struct cm_path *cm_id_path(const struct cm_id *id);

/* The GID table index of @gid (a RoCE v2 entry of the engine), or -ENOENT. */
int cm_gid_index(struct cm *cm, const uint8_t gid[16]);

/* Take REQs (and SIDR_REQs) for @service_id.  -EBUSY when this CM has a listener for it. */
int cm_listen(struct cm_id *id, uint64_t service_id);

/* Each returns 0, -EINVAL in the wrong state, -ENOMEM/-EHOSTUNREACH when nothing could be sent. */
int cm_send_req(struct cm_id *id, const struct cm_path *path, const struct cm_conn *conn,
		uint8_t max_retries);
int cm_send_rep(struct cm_id *id, const struct cm_conn *conn);
int cm_send_rtu(struct cm_id *id, const void *pdata, uint8_t len);
int cm_send_rej(struct cm_id *id, uint16_t reason, const void *pdata, uint8_t len);
int cm_send_dreq(struct cm_id *id, const void *pdata, uint8_t len);
int cm_send_sidr_req(struct cm_id *id, const struct cm_path *path, uint64_t service_id,
		     const void *pdata, uint8_t len);
int cm_send_sidr_rep(struct cm_id *id, uint8_t status, uint32_t qpn, uint32_t qkey,
		     const void *pdata, uint8_t len);

#endif
