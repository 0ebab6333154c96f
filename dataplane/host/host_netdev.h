/* SPDX-License-Identifier: MIT */
/* What the kernel knows about a netdev: index, MAC, MTU, state, addresses; and change events. */
#ifndef UROCE_HOST_NETDEV_H
#define UROCE_HOST_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/config.h"
#include "uroce/host.h"

/* True when the link is a kernel netdev DPDK only taps (af_packet, af_xdp). */
bool host_pmd_uses_netdev(enum host_pmd pmd);

/* Return: 0, or -errno with one line in @err (-ENODEV: no such interface). */
int host_netdev_info(const char *ifname, struct host_link_info *info, char *err, size_t errlen);

/*
 * The netdev's IPv4 (as IPv4-mapped GIDs) then IPv6 addresses, link-local
 * included, in the kernel's order.  Return: how many, or -errno.
 */
int host_netdev_addrs(const char *ifname, uint8_t (*addrs)[16], unsigned max);

/* The MAC a device uses where DPDK owns the link: the configured one, else one derived from its name. */
void host_cfg_mac(const struct host_link_cfg *cfg, uint8_t mac[6]);

/*
 * Link and address change notifications (rtnetlink), for the progress
 * thread.  host_netdev_watch_open() returns a non-blocking socket or -errno;
 * host_netdev_watch_poll() drains it and says whether anything concerned
 * @ifindex (0: any).
 */
int host_netdev_watch_open(void);
bool host_netdev_watch_poll(int fd, int ifindex);

struct host_neigh;

/**
 * host_netdev_neigh_tap_open() - a packet socket that reads copies of the
 * ARP and ICMPv6 neighbour solicitations/advertisements @ifindex receives.
 *
 * For a port whose netdev the kernel keeps owning (af_xdp with uroce's XDP
 * program passes these frames to the kernel): the kernel answers for its
 * addresses, and the port learns its peers' MACs from the copies.  Untagged
 * frames only; frames the host sends are not copied.
 * Return: a non-blocking socket, or -errno.
 */
int host_netdev_neigh_tap_open(int ifindex);

/**
 * host_netdev_neigh_tap_drain() - feed the frames waiting on @fd to @n.
 * @mac: the netdev's MAC; frames from it are skipped.
 * @now: monotonic time in ns.
 * Return: how many frames were read.
 */
unsigned host_netdev_neigh_tap_drain(int fd, struct host_neigh *n, const uint8_t mac[6], uint64_t now);

#endif
