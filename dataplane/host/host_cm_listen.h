/* SPDX-License-Identifier: MIT */
/* Host-wide rdma_cm listen table: which process takes the REQs of a service ID on a netdev. */
#ifndef UROCE_HOST_CM_LISTEN_H
#define UROCE_HOST_CM_LISTEN_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

/*
 * RUN_DIR/cm/KEY (KEY: the netdev, as for the QPN table), one line per
 * entry, "SERVICE_ID PID START" (service ID in hex, START the owner's
 * /proc start time), flock()ed while read and rewritten.  Entries of dead
 * processes are reclaimed by the next writer.  Service ID 0 is no service:
 * its owner is the one process that answers REQs nobody listens for.  A
 * listener that stops leaves "released SERVICE_ID MS" for
 * HOST_CM_LISTEN_RELEASED_MS: a REQ that came while it listened, and that
 * the answerer kept for a moment (cm_cfg.listen_grace_ms), may have been
 * taken, and must not be rejected by the answerer after the listener
 * closed (perftest -R's server closes its listener right after accepting).
 */
#define HOST_CM_ANSWERER		0ull
#define HOST_CM_LISTEN_RELEASED_MS	1000

struct host_cm_listen;

/* Return: 0, or -errno with one line in @err. */
int host_cm_listen_open(const char *key, struct host_cm_listen **out, char *err, size_t errlen);
/* Drops this process's entries. */
void host_cm_listen_close(struct host_cm_listen *t);

/* Claim @service_id for this process.  Return: 0, -EADDRINUSE (a live process has it), -errno. */
int host_cm_listen_add(struct host_cm_listen *t, uint64_t service_id);
void host_cm_listen_del(struct host_cm_listen *t, uint64_t service_id);
/* This process holds @service_id (claiming it first when its holder died or there is none). */
bool host_cm_listen_mine(struct host_cm_listen *t, uint64_t service_id);
/* A live process holds @service_id. */
bool host_cm_listen_taken(struct host_cm_listen *t, uint64_t service_id);
/* ... or released it HOST_CM_LISTEN_RELEASED_MS ago at most. */
bool host_cm_listen_claimed(struct host_cm_listen *t, uint64_t service_id);

#endif
