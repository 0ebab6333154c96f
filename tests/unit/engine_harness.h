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
};

struct h_opts {
	uint32_t	mtu;		/* port IP MTU, 0: 4200 */
	uint64_t	seed;
	int		cqe;		/* 0: 4096 */
	unsigned	slots;		/* link buffers, 0: default */
};

/* GIDs: side 0 has ::ffff:10.0.0.1 (index 0) and fd00::1 (index 1); side 1 .2 and ::2. */
void h_env_init(struct h_env *e, const struct h_opts *o);
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
	int		access;		/* 0: remote write|read|atomic */
	int		gid_index;	/* 0: IPv4, 1: IPv6 */
	uint32_t	qkey;
};

/* RESET -> INIT -> RTR -> RTS, @a on @sa to @b on @sb. */
void h_connect(struct h_env *e, struct rc_qp *a, int sa, struct rc_qp *b, int sb,
	       const struct h_conn *c);

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
