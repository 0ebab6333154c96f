/* SPDX-License-Identifier: MIT */
/* Test harness for the transport engine: two engines on a simulated link under a virtual clock. */
#ifndef UROCE_ENGINE_HARNESS_H
#define UROCE_ENGINE_HARNESS_H

#include <stdbool.h>
#include <stdint.h>

#include "port_sim.h"
#include "uroce/rc.h"

#define H_MAX_EVENTS 64

struct h_event {
	enum ibv_event_type	type;
	void			*user;
};

struct h_env {
	uint64_t		now;		/* the virtual clock, ns */
	struct port_sim		*link;
	struct rc_engine	*eng[2];
	struct rc_pd		*pd[2];
	struct rc_cq		*cq[2];		/* one CQ per side for sends and receives */
	struct h_event		events[H_MAX_EVENTS];
	unsigned		n_events;
	unsigned		cq_events;
	unsigned		tapped[2];	/* frames each engine delivered to itself */
	unsigned		forwarded[2];	/* frames each handed to the other (shared_gids) */
	struct rc_direct_table	*direct[2];	/* each side's published table (direct) */
	uint32_t		next_qpn[2];
};

struct h_opts {
	uint32_t	mtu;		/* port IP MTU, 0: 4200 */
	uint64_t	seed;
	int		cqe;		/* 0: 4096 */
	unsigned	slots;		/* link buffers, 0: default */
	uint64_t	delay_ns;	/* one-way latency of the link */
	bool		zero_copy;	/* the link takes RC payloads by reference */
	/*
	 * Two processes on one device: both engines hold side 0's GIDs, QPNs
	 * from disjoint ranges, and each hands frames for the other's QPs to
	 * it through local_forward (counted in h_env.forwarded).
	 */
	bool		shared_gids;
	/* With shared_gids: each engine publishes a direct table the other reaches (this process). */
	bool		direct;
	/* Loss recovery settings of both engines (rc_engine_cfg's; zero: the defaults). */
	uint32_t	rto_min_us, restart_window, inflight;
	bool		no_adaptive_rto, no_tail_probe;
	struct dcqcn_cfg dcqcn;	/* the reaction point of both engines */
	bool		selective_repeat[2];	/* each side's setting */
};

/*
 * GIDs: side 0 has ::ffff:10.0.0.1 (index 0) and fd00::1 (index 1); side 1 .2
 * and ::2; RoCE v1 entries at 2 (::ffff:10.0.0.N again) and 3 (fe80:: with the
 * EUI-64 of the side's MAC).
 */
void h_env_init(struct h_env *e, const struct h_opts *o);
/*
 * Destroys the side's PD and CQ made by h_env_init(), then fails the test
 * unless every other object of both engines was destroyed by the test: a
 * leak fails the plain run, not only the sanitizer one.
 */
void h_env_fini(struct h_env *e);

struct h_qp_opts {
	enum ibv_qp_type	type;
	uint32_t		max_send_wr, max_recv_wr, max_sge, max_inline;
	struct rc_srq		*srq;
	bool			sq_sig_all;
	struct rc_cq		*send_cq, *recv_cq;	/* NULL: the side's CQ */
};

struct rc_qp *h_qp(struct h_env *e, int side, const struct h_qp_opts *o);

struct h_conn {
	enum ibv_mtu	mtu;		/* 0: IBV_MTU_1024 */
	uint32_t	psn[2];		/* initial send PSN of each side */
	uint8_t		timeout;	/* 0 here means the default 10; use no_timeout for 0 */
	bool		no_timeout;
	uint8_t		retry_cnt, rnr_retry, min_rnr_timer;
	bool		retry_set;	/* use retry_cnt/rnr_retry as given (else 7/7) */
	uint8_t		max_rd_atomic;	/* 0: 16 */
	uint8_t		max_dest_rd_atomic;	/* 0: 16 */
	int		access;		/* 0: remote write|read|atomic */
	int		gid_index;	/* 0: IPv4, 1: IPv6, 2: RoCE v1 IPv4-mapped, 3: v1 fe80:: */
	uint32_t	qkey;
};

/* RESET -> INIT -> RTR -> RTS, @a on @sa to @b on @sb. */
void h_connect(struct h_env *e, struct rc_qp *a, int sa, struct rc_qp *b, int sb,
	       const struct h_conn *c);
/* One QP to RTS towards QPN @peer_qpn on side @peer_side (which need not exist). */
void h_connect_one(struct rc_qp *qp, int peer_side, uint32_t peer_qpn, uint32_t rq_psn,
		   uint32_t sq_psn, const struct h_conn *c);

/* ---- A connected pair with a registered buffer on each side ---- */

#define H_BUF_LEN (256 * 1024)

struct h_pair {
	struct h_env	e;
	struct rc_qp	*qp[2];
	uint8_t		*buf[2];
	struct rc_mr	*mr[2];		/* all access rights */
};

/* Any of the option pointers may be NULL (defaults: RC, MTU 1024, everything allowed). */
void h_pair_init(struct h_pair *p, const struct h_opts *eo, const struct h_conn *c,
		 const struct h_qp_opts *qo);
/* Destroys the pair's QPs (those the test has not: set to NULL) and MRs, then h_env_fini(). */
void h_pair_fini(struct h_pair *p);
struct ibv_sge h_sge(const struct h_pair *p, int side, size_t off, uint32_t len);
/* A byte pattern that differs with @seed. */
void h_fill(uint8_t *buf, size_t len, unsigned seed);
enum ibv_qp_state h_qp_state(struct rc_qp *qp);
struct rc_counters h_qp_counters(struct rc_qp *qp);

/* ---- Watching and shaping the link ---- */

#define H_CAP_MAX 1024

struct h_frame {
	int		from;		/* side that sent it */
	uint64_t	t;		/* virtual time it was sent */
	uint8_t		dst_mac[6];
	uint8_t		opcode;
	uint32_t	psn, dest_qp;
	bool		ackreq, se;
	bool		sr_cap, sr_nak;	/* selective repeat's BTH bits */
	uint8_t		syndrome;	/* AETH, when present */
	uint32_t	msn;
	uint64_t	va;		/* RETH or AtomicETH */
	uint32_t	rkey, dma_len;
	uint64_t	orig;		/* AtomicAckETH */
	uint32_t	xrc_srqn;	/* XRCETH */
	uint32_t	payload_len;
	uint8_t		payload_head[64];	/* a MAD's header and the start of its data */
	uint8_t		tclass;
	bool		roce_v1;	/* EtherType 0x8915 */
	bool		dropped;
};

struct h_cap {
	struct h_env	*e;
	unsigned	n;
	struct h_frame	f[H_CAP_MAX];
	/* Drop rule: frames from @drop_from with @drop_opcode (or any when 0xffff); the
	 * drop_nth-th match (1-based) and the drop_count - 1 after it. */
	int		drop_from;
	unsigned	drop_opcode;
	unsigned	drop_nth, drop_count, matched;
	bool		drop_all[2];	/* everything a side sends */
};

/* Start watching every frame on the link (no drops until a rule is set). */
void h_capture(struct h_env *e, struct h_cap *c);
void h_drop(struct h_cap *c, int from, unsigned opcode, unsigned nth, unsigned count);
/* Frames from @from with @opcode (0xffff: any) seen so far. */
unsigned h_cap_count(const struct h_cap *c, int from, unsigned opcode);
const struct h_frame *h_cap_find(const struct h_cap *c, int from, unsigned opcode, unsigned nth);

/* A request from a peer that does not exist: built here, delivered to @to_side now. */
void h_inject(struct h_env *e, int to_side, struct wire_build_desc *d, const void *payload,
	      uint32_t len);

/* Run both engines until @cond holds (or, with NULL, until nothing moves). */
bool h_run_until(struct h_env *e, bool (*cond)(void *), void *arg, uint64_t max_ns);
void h_run(struct h_env *e, uint64_t max_ns);

/* Wait for @n completions on @cq (running the engines); return how many came. */
int h_wait_cq(struct h_env *e, struct rc_cq *cq, struct ibv_wc *wc, int n, uint64_t max_ns);

/* Post helpers. */
int h_post_send(struct rc_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id, struct ibv_sge *sge,
		int nsge, uint64_t raddr, uint32_t rkey, int flags);
int h_post_recv(struct rc_qp *qp, uint64_t wr_id, struct ibv_sge *sge, int nsge);

/* The GID of @side at @index. */
void h_gid(int side, int index, uint8_t gid[16]);
/* How many async events of @type arrived. */
unsigned h_count_events(const struct h_env *e, enum ibv_event_type type);

#endif
