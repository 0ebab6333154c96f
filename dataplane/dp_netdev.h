/* SPDX-License-Identifier: MIT */
/* What the kernel knows about a netdev: index, MAC, MTU, state, addresses; and change events. */
#ifndef UROCE_DP_NETDEV_H
#define UROCE_DP_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/config.h"
#include "uroce/dp.h"

/* True when the link is a kernel netdev DPDK only taps (af_packet, af_xdp). */
bool dp_pmd_uses_netdev(enum uroce_pmd pmd);

/* Return: 0, or -errno with one line in @err (-ENODEV: no such interface). */
int dp_netdev_info(const char *ifname, struct dp_link_info *info, char *err, size_t errlen);

/*
 * The netdev's IPv4 (as IPv4-mapped GIDs) then IPv6 addresses, link-local
 * included, in the kernel's order.  Return: how many, or -errno.
 */
int dp_netdev_addrs(const char *ifname, uint8_t (*addrs)[16], unsigned max);

/* The MAC a device uses where DPDK owns the link: the configured one, else one derived from its name. */
void dp_cfg_mac(const struct uroce_link_cfg *cfg, uint8_t mac[6]);

/*
 * Link and address change notifications (rtnetlink), for the progress
 * thread.  dp_netdev_watch_open() returns a non-blocking socket or -errno;
 * dp_netdev_watch_poll() drains it and says whether anything concerned
 * @ifindex (0: any).
 */
int dp_netdev_watch_open(void);
bool dp_netdev_watch_poll(int fd, int ifindex);

#endif
