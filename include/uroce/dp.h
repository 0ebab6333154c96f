/* SPDX-License-Identifier: MIT */
/* The dataplane as the provider sees it: a device = a DPDK port + a transport engine + progress. */
#ifndef UROCE_DP_H
#define UROCE_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/config.h"
#include "uroce/host.h"
#include "uroce/rc.h"

struct dp_device;

struct dp_open_args {
	/* Passed through to the engine (see struct rc_engine_cfg). */
	void	(*cq_event)(void *arg, struct rc_cq *cq, void *cq_user);
	void	(*async_event)(void *arg, enum ibv_event_type type, void *obj_user);
	void	*event_arg;
	/*
	 * Optional: names of more device counters for `uroce stat` (at most
	 * DP_EXTRA_COUNTERS_MAX, NULL-terminated, alive while the device is),
	 * their values given with dp_device_extra_counters(): the CM's.
	 */
	const char *const *extra_names;
};

#define DP_EXTRA_COUNTERS_MAX	32

/**
 * dp_device_open() - start a device's dataplane in this process.
 * @ibdev: device name ("uroce0"), its configuration is read from the run directory.
 *
 * Starts DPDK's EAL on first use in the process, opens the port, builds the
 * GID table from the netdev's addresses, creates the engine and the
 * background progress thread.
 * Return: 0, or -errno with one line in @err saying what failed, why and the fix.
 */
int dp_device_open(const char *ibdev, const struct dp_open_args *args,
		   struct dp_device **out, char *err, size_t errlen);
void dp_device_close(struct dp_device *dev);

struct rc_engine *dp_device_engine(struct dp_device *dev);
int dp_device_link(struct dp_device *dev, struct host_link_info *info);

/*
 * Progress from an application thread that polls (poll_cq): one engine
 * pass, and the background thread learns that the application is polling.
 * After a pass whose ACK completed the last send, it looks again for up to
 * 10 µs for the peer's request behind that ACK.
 */
unsigned dp_device_poll(struct dp_device *dev);
/*
 * Progress from post_send: one engine pass, so the work leaves from the
 * caller's thread at once, without telling the background thread that the
 * application polls (it may not call again; the background thread stays
 * ready to receive).
 */
unsigned dp_device_kick(struct dp_device *dev);
/*
 * The application is about to block (it armed a CQ for an event): the
 * background thread stops deferring to its polls and takes over at once.
 */
void dp_device_app_waits(struct dp_device *dev);

/*
 * Per-QP counters for `uroce stat`: the provider adds a QP after
 * rc_qp_create() and deletes it before rc_qp_destroy().  Optional.
 */
void dp_device_qp_add(struct dp_device *dev, struct rc_qp *qp);
void dp_device_qp_del(struct dp_device *dev, struct rc_qp *qp);
/* Values of dp_open_args.extra_names, in their order; copied, published with the device's. */
void dp_device_extra_counters(struct dp_device *dev, const uint64_t *values);

/*
 * Port events reach dp_open_args.async_event with obj_user NULL:
 * IBV_EVENT_PORT_ACTIVE / IBV_EVENT_PORT_ERR when the link goes up or down,
 * IBV_EVENT_GID_CHANGE when the netdev's addresses change (the engine's GID
 * table is already updated).  They come from the progress thread, without
 * the engine lock.
 */

#endif
