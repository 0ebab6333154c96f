/* SPDX-License-Identifier: MIT */
/* The dataplane as the provider sees it: a device = a DPDK port + a transport engine + progress. */
#ifndef UROCE_DP_H
#define UROCE_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#include "uroce/rc.h"

struct dp_device;

struct dp_open_args {
	/* Passed through to the engine (see struct rc_engine_cfg). */
	void	(*cq_event)(void *arg, struct rc_cq *cq, void *cq_user);
	void	(*async_event)(void *arg, enum ibv_event_type type, void *obj_user);
	void	*event_arg;
};

struct dp_link_info {
	char		netdev[IF_NAMESIZE];
	int		ifindex;
	uint8_t		mac[6];
	uint32_t	mtu;		/* IP MTU */
	bool		up;
	uint32_t	speed_mbps;	/* 0 if unknown */
};

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
int dp_device_link(struct dp_device *dev, struct dp_link_info *info);

/*
 * Progress from an application thread (poll_cq, post_send): one engine pass,
 * and the background thread learns that the application is polling.
 */
unsigned dp_device_poll(struct dp_device *dev);

#endif
