/* SPDX-License-Identifier: MIT */
/* One CM on side 1 of the simulated link, MADs injected to its QP1 from side 0 (tests/cm suites). */
#ifndef UROCE_TESTS_CM_ENV_H
#define UROCE_TESTS_CM_ENV_H

#include <stdbool.h>

#include "engine_harness.h"
#include "uroce/cm.h"

#define CM_ENV_SERVICE_ID	wire_ip_service_id(WIRE_RDMA_PS_TCP, 7174)
#define CM_ENV_RUN_NS		1000000ull

struct cm_env {
	struct h_env		e;
	struct cm		*cm;
	struct cm_id		*listen;	/* on CM_ENV_SERVICE_ID, or NULL */
	bool			answerer;	/* answers REQs nobody listens for */
	unsigned		reqs;		/* CM_EV_REQ and CM_EV_SIDR_REQ of the listener */
	unsigned		others;		/* any other event */
	struct cm_id		*req_id;	/* the newest ID a REQ made */
	/* cfg.exit_dreq: calls, and the last one's comm ID and frame (length 0: cleared). */
	unsigned		exit_calls;
	uint32_t		exit_comm_id;
	uint32_t		exit_len;
	uint8_t			exit_frame[512];
};

/* The CM, listening on CM_ENV_SERVICE_ID when @listen; the netdev's answerer when @answerer. */
void cm_env_init(struct cm_env *c, bool listen, bool answerer);
void cm_env_fini(struct cm_env *c);
/* Listen on CM_ENV_SERVICE_ID now. */
void cm_env_listen(struct cm_env *c);
/* @len bytes of @mad as a UD SEND from side 0's QP1 to side 1's, then one CM pass. */
void cm_env_inject(struct cm_env *c, const void *mad, uint32_t len);
/* Advance the clock by @ns and make one CM pass. */
void cm_env_advance(struct cm_env *c, uint64_t ns);
struct cm_counters cm_env_counters(const struct cm_env *c);
/*
 * The listener takes a REQ from @peer_comm_id (QPN cm_env_req()'s), answers
 * REP, gets the RTU: established.  No exit frame is kept before the RTU.
 */
struct cm_id *cm_env_establish(struct cm_env *c, uint32_t peer_comm_id);
/* The peer of @id (comm ID @peer_comm_id) disconnects: its DREQ injected. */
void cm_env_peer_dreq(struct cm_env *c, struct cm_id *id, uint32_t peer_comm_id);
/* A well-formed REQ for CM_ENV_SERVICE_ID from @comm_id; a SIDR_REQ with the same ID. */
void cm_env_req(struct wire_cm_mad *m, uint32_t comm_id);
void cm_env_sidr_req(struct wire_cm_mad *m, uint32_t request_id);

#endif
