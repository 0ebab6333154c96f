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
	bool		packed_pool;	/* af_xdp: mbufs back to back, across pages (one UMEM span) */
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

/*
 * An af_xdp port without CAP_IPC_LOCK: its UMEM counts against
 * RLIMIT_MEMLOCK.  Where the whole pool (32 MiB) does not fit, @pl takes
 * 3072 chunks of 2.4 KiB (7.3 MiB, frames to 1920 bytes: IP MTU 1902).
 * Return: 0, or -ENOBUFS with one line in @err when not even that fits.
 */
int dp_pmd_plan_memlock(const struct host_link_cfg *cfg, struct dp_pmd_plan *pl, char *err,
			size_t errlen);

/* The bytes of @pl's mbufs: an af_xdp port's UMEM spans them all. */
uint64_t dp_pmd_umem_bytes(const struct dp_pmd_plan *pl);

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

/*
 * While @conn >= 0, the af_xdp port being set up on @ifindex runs through
 * its broker (host_broker_xdp_call()): its AF_XDP sockets come from the
 * broker, whose XDP program it uses and whose XSKMAP the broker fills, and
 * its program on @ifindex is left for the broker to detach.  -1 ends the
 * set-up.  Only around a probe and start, under the port's probe lock.
 * Return: when ending, -ENOBUFS if the kernel refused to lock the UMEM
 * (RLIMIT_MEMLOCK), else 0.
 */
int dp_pmd_xdp_broker(int conn, int ifindex);

/* The connection dp_pmd_xdp_broker() set, or -1. */
int dp_xsk_broker(void);

/* The linker's --wrap targets behind dp_pmd_handover() and dp_pmd_xdp_broker() (meson.build). */
struct bpf_object;
struct bpf_program;
struct bpf_xdp_attach_opts;
struct xsk_umem;
struct xsk_socket;
struct xsk_ring_prod;
struct xsk_ring_cons;
struct xsk_umem_config;
struct xsk_socket_config;
int __wrap_socket(int domain, int type, int protocol);
int __wrap_bpf_object__load(struct bpf_object *obj);
int __wrap_bpf_program__fd(const struct bpf_program *prog);
int __wrap_bpf_xdp_attach(int ifindex, int prog_fd, uint32_t flags,
			  const struct bpf_xdp_attach_opts *opts);
int __wrap_bpf_xdp_detach(int ifindex, uint32_t flags, const struct bpf_xdp_attach_opts *opts);
int __wrap_bpf_map_update_elem(int fd, const void *key, const void *value, uint64_t flags);
int __wrap_xsk_umem__create(struct xsk_umem **umem, void *area, uint64_t size,
			    struct xsk_ring_prod *fill, struct xsk_ring_cons *comp,
			    const struct xsk_umem_config *cfg);
int __wrap_xsk_socket__create(struct xsk_socket **xsk, const char *ifname, uint32_t queue,
			      struct xsk_umem *umem, struct xsk_ring_cons *rx,
			      struct xsk_ring_prod *tx, const struct xsk_socket_config *cfg);
int __wrap_xsk_socket__fd(const struct xsk_socket *xsk);
void __wrap_xsk_socket__delete(struct xsk_socket *xsk);
int __wrap_xsk_umem__delete(struct xsk_umem *umem);
void *__wrap_mmap64(void *addr, size_t len, int prot, int flags, int fd, long off);
int __wrap_ioctl(int fd, unsigned long req, void *arg);

/* What to try when a PMD refuses to start. */
const char *dp_pmd_fix(enum host_pmd pmd);

#endif
