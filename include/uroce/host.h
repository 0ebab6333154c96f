/* SPDX-License-Identifier: MIT */
/* The host around a device, without DPDK: its link, its GID table, the kernel's side of its netdev. */
#ifndef UROCE_HOST_H
#define UROCE_HOST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#include "uroce/config.h"
#include "uroce/wire.h"

struct host_link_info {
	char		netdev[IF_NAMESIZE];
	int		ifindex;
	uint8_t		mac[6];
	uint32_t	mtu;		/* IP MTU */
	bool		up;
	uint32_t	speed_mbps;	/* 0 if unknown */
};

/* ---- A configured device without opening it (`uroce link add`, sysfs) ---- */

/**
 * host_link_query() - the link of a configured device.
 *
 * af_packet/af_xdp: the netdev's index, MAC, MTU (the configured mtu when
 * smaller), state and speed.  PMDs that own the link (pci, memif, pcap,
 * tap): the configured MAC (else one derived from the device name), mtu
 * (else 1500), up.
 * Return: 0, or -errno with one line in @err (-ENODEV: no such netdev).
 */
int host_link_query(const struct host_link_cfg *cfg, struct host_link_info *info,
		  char *err, size_t errlen);

/**
 * host_gid_table() - the port's GID table, built as the kernel builds it for RoCE.
 *
 * Entries come in pairs, RoCE v1 then v2: first the IPv6 link-local
 * address made from the MAC (the default GID), then each IPv4 address
 * (IPv4-mapped), then each other IPv6 address; from the netdev, or from
 * the configuration where DPDK owns the link.  The rest of @tbl is zeroed.
 * Return: entries filled (at most @max), or -errno with one line in @err.
 */
int host_gid_table(const struct host_link_cfg *cfg, struct wire_gid_entry *tbl,
		 unsigned max, char *err, size_t errlen);

/* ---- Kernel side of af_packet links (`uroce link add` / `uroce link del`) ---- */

/**
 * host_kernel_filter_install() - stop the kernel answering RoCE with ICMP.
 *
 * With af_packet the kernel stack sees RoCE frames too and would answer
 * UDP 4791 with ICMP port unreachable.  This attaches a tc clsact ingress
 * BPF filter that drops UDP 4791 before the IP stack; packet sockets see
 * frames before tc ingress, so uroce still receives them.  Idempotent;
 * needs root (CAP_NET_ADMIN, CAP_BPF).
 * Return: 0, or -errno with one line in @err.
 */
int host_kernel_filter_install(const char *netdev, char *err, size_t errlen);
/* Remove it (leaves other tc filters and the clsact qdisc alone).  0 if it was not there. */
int host_kernel_filter_remove(const char *netdev, char *err, size_t errlen);

/*
 * host_qpn_protect() - make the QPN table of @key (a netdev) root's (0644),
 * as `uroce link add` does for a device with a broker: no user can then
 * write another's QPN into it and have the broker let that QPN's frames
 * into its socket.  A table that was not root's is replaced by a new, empty
 * one.
 */
int host_qpn_protect(const char *key, char *err, size_t errlen);

/*
 * The broker of a device (af_packet; docs/usage.md, "Shared machines"):
 * started by `uroce link add` as root, it listens on RUN_DIR/devices/NAME.sock
 * (mode 0666, or 0660 and @group) and answers each connection with a packet
 * socket (SCM_RIGHTS), so programs without CAP_NET_RAW open the device.  The
 * connection stays: on it the broker allocates the client's QPNs in the
 * netdev's QPN table, which is root's, and its socket's locked filter lets
 * in the RoCE frames of those QPNs only (and QP1's, multicast, ARP, ICMP).
 * For an af_xdp device the socket is the port's ARP/ND tap, and on the
 * connection the broker also sets up the XDP side (host_broker_xdp_call()).
 */
int host_broker_start(const struct host_link_cfg *cfg, const char *group, char *err,
		      size_t errlen);
/* Stop the device's broker and remove its socket; nothing if it has none. */
void host_broker_stop(const char *dev);

/*
 * host_broker_fetch() - a packet socket from the device's broker.
 * @keep: NULL, or where the connection goes, for host_qpn_use_broker().
 * Return: the socket (close-on-exec), -ENOENT when the device has no broker
 * (nothing in @err), or -errno with one line in @err (not in its group, ...).
 */
int host_broker_fetch(const struct host_link_cfg *cfg, int *keep, char *err, size_t errlen);

/*
 * host_broker_xdp_call() - one XDP request (HOST_QPN_OP_XDP_*, HOST_QPN_OP_XSK_*)
 * on a broker connection, sending @fd_in (or -1) and receiving a descriptor
 * into @fd_out (or NULL).  @arg: the request's argument, and the answer's.
 * Return: the broker's answer (0 or -errno).
 */
int host_broker_xdp_call(int conn, uint32_t op, uint32_t *arg, int fd_in, int *fd_out);

/* The loss injection on a netdev: its settings, and what it did since they were set. */
struct host_loss {
	uint32_t ppm;		/* drop probability, parts per million */
	bool requests_only;	/* never drop a responder's packet (ACK, NAK, read or atomic response) */
	bool pass;		/* attached with nothing to drop (host_loss_pass()) */
	uint64_t seen;		/* RoCE frames looked at */
	uint64_t dropped;
};

/**
 * host_loss_set() - drop a random fraction of the RoCE frames a netdev receives.
 * @ppm: drop probability in parts per million (0: as host_loss_clear()).
 * @requests_only: drop requests only, so that no responder's packet is lost:
 *	for programs that end as soon as their last request is answered (a lost
 *	last ACK is unrecoverable once the responder has gone, on any device).
 *
 * For tests and benchmarks (this kernel has no netem): an XDP program on
 * @netdev, so neither the kernel nor a packet socket on @netdev sees the
 * dropped frames.  A netdev where uroce runs af_xdp already has an XDP
 * program: start that device with pmd_args xdp_prog=host_loss_xdp_path()
 * and set the rate here.
 * Return: 0, or -errno with one line in @err.
 */
int host_loss_set(const char *netdev, uint32_t ppm, bool requests_only, char *err,
		  size_t errlen);
/* No loss; the program is detached when nothing else needs it (a bottleneck, an af_xdp port). */
int host_loss_clear(const char *netdev, char *err, size_t errlen);
/*
 * No loss, the program attached all the same: the lossless baseline of a loss
 * benchmark, paying what the injection itself costs (on a veth, the program
 * makes the kernel copy each frame a packet socket sent).
 */
int host_loss_pass(const char *netdev, char *err, size_t errlen);
/* The loss settings and counters of the XDP program on @netdev.  Return: 0, -ENOENT if none of ours. */
int host_loss_get(const char *netdev, struct host_loss *loss);

/*
 * A bottleneck on the frames a netdev receives (tests, benchmarks), as a switch
 * port with RED/WRED and ECN would be: RoCE frames fill a virtual queue drained
 * at rate_mbps, a frame that does not fit in buffer bytes is dropped, and past
 * kmin bytes a frame is marked CE with a probability rising to pmax_ppm at kmax,
 * certain beyond; a frame that is not ECN-capable is dropped instead.  The
 * frames are not delayed: the queue is virtual (a phantom queue).
 */
struct host_bottleneck {
	uint32_t rate_mbps;	/* 0: none */
	uint32_t buffer, kmin, kmax;	/* bytes */
	uint32_t pmax_ppm;
	/* counters since it was set, from host_bottleneck_get() */
	uint64_t queue, passed_bytes, marked, early_drops, queue_drops;
};

/* Set (rate_mbps 0: remove) the bottleneck of the XDP program on @netdev.  Return: 0 or -errno, @err. */
int host_bottleneck_set(const char *netdev, const struct host_bottleneck *b, char *err,
			size_t errlen);
/* Return: 0, -ENOENT (no bottleneck) or -errno. */
int host_bottleneck_get(const char *netdev, struct host_bottleneck *b);

#endif
