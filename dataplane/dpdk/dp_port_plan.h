/* SPDX-License-Identifier: MIT */
/* How a DPDK port is to be opened: the PMD's vdev arguments, buffer and queue sizes, capabilities. */
#ifndef UROCE_DP_PORT_PLAN_H
#define UROCE_DP_PORT_PLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/config.h"

#define DP_ETH_OVERHEAD		(14 + 4)	/* Ethernet header + one VLAN tag */

struct dp_pmd_plan {
	const char	*driver;	/* vdev driver name, NULL for PCI */
	char		args[768];
	uint32_t	data_room;	/* mempool data room (incl. headroom) */
	unsigned	pool_size;
	unsigned	ring_descs;	/* receive and transmit queue */
	uint32_t	max_frame;
	bool		uses_netdev;
	int		xdp_prog_fd;	/* af_xdp: memfd holding the XDP object, the caller's to close; else -1 */
};

/**
 * dp_pmd_plan() - what opening @cfg's PMD takes, before anything is opened.
 * @mac_addr: the port's MAC (memif and tap are told it).
 * @mtu: the IP MTU asked for; frames carry DP_ETH_OVERHEAD more.
 *
 * Sizes buffers so one frame fits one mbuf (af_packet's ring frames, af_xdp's
 * UMEM chunks), removes a memif socket its dead server left behind, and for
 * af_xdp stages the XDP program in a memfd (@pl->xdp_prog_fd, set even when
 * a later step fails).
 * Return: 0, or -errno with one line in @err.
 */
int dp_pmd_plan(const struct host_link_cfg *cfg, const uint8_t mac_addr[6], uint32_t mtu,
		struct dp_pmd_plan *pl, char *err, size_t errlen);

/**
 * dp_pmd_check_caps() - the capabilities a PMD needs, checked up front.
 * @handover: set to a packet socket from the device's broker when the
 * process lacks CAP_NET_RAW for af_packet (dp_pmd_handover()), else -1.
 * @broker: with @handover, the connection it came on (host_qpn_use_broker()), else -1.
 * Return: 0, or -errno with one clear line in @err instead of a driver's guess.
 */
int dp_pmd_check_caps(const struct host_link_cfg *cfg, int *handover, int *broker, char *err,
		      size_t errlen);

/*
 * While @fd >= 0, the af_packet PMD runs without privilege on @fd: its
 * socket(AF_PACKET, ...) calls get duplicates of @fd instead of new
 * sockets, its MAP_LOCKED ring mmap is retried without MAP_LOCKED when
 * RLIMIT_MEMLOCK is too small for the rings (8 MiB by default: about 6 %
 * of ib_write_bw's bandwidth, tests/bench/bench_nonroot.sh),
 * and the flags and MAC ethdev start "restores" unchanged by SIOCSIFFLAGS
 * and SIOCSIFHWADDR (CAP_NET_ADMIN) are left alone.  -1 ends it.  Only
 * around a probe and start, under the port's probe lock.
 */
void dp_pmd_handover(int fd);

/* The linker's --wrap targets behind dp_pmd_handover() (dataplane/dpdk/meson.build). */
int __wrap_socket(int domain, int type, int protocol);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, long off);
int __wrap_ioctl(int fd, unsigned long req, void *arg);

/* What to try when a PMD refuses to start. */
const char *dp_pmd_fix(enum host_pmd pmd);

#endif
