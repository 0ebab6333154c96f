/* SPDX-License-Identifier: MIT */
/* The dataplane as the provider sees it: a device = a DPDK port + a transport engine + progress. */
#ifndef UROCE_DP_H
#define UROCE_DP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <net/if.h>

#include "uroce/config.h"
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

/*
 * Port events reach dp_open_args.async_event with obj_user NULL:
 * IBV_EVENT_PORT_ACTIVE / IBV_EVENT_PORT_ERR when the link goes up or down,
 * IBV_EVENT_GID_CHANGE when the netdev's addresses change (the engine's GID
 * table is already updated).  They come from the progress thread, without
 * the engine lock.
 */

/* ---- A configured device without opening it (`uroce link add`, sysfs) ---- */

/**
 * dp_link_query() - the link of a configured device.
 *
 * af_packet/af_xdp: the netdev's index, MAC, MTU (the configured mtu when
 * smaller), state and speed.  PMDs that own the link (pci, memif, pcap,
 * tap): the configured MAC (else one derived from the device name), mtu
 * (else 1500), up.
 * Return: 0, or -errno with one line in @err (-ENODEV: no such netdev).
 */
int dp_link_query(const struct uroce_link_cfg *cfg, struct dp_link_info *info,
		  char *err, size_t errlen);

/**
 * dp_gid_table() - the port's GID table, built as the kernel builds it for RoCE.
 *
 * Entries come in pairs, RoCE v1 then v2: first the IPv6 link-local
 * address made from the MAC (the default GID), then each IPv4 address
 * (IPv4-mapped), then each other IPv6 address; from the netdev, or from
 * the configuration where DPDK owns the link.  The rest of @tbl is zeroed.
 * Return: entries filled (at most @max), or -errno with one line in @err.
 */
int dp_gid_table(const struct uroce_link_cfg *cfg, struct rc_gid_entry *tbl,
		 unsigned max, char *err, size_t errlen);

/* ---- Kernel side of af_packet links (`uroce link add` / `uroce link del`) ---- */

/**
 * dp_kernel_filter_install() - stop the kernel answering RoCE with ICMP.
 *
 * With af_packet the kernel stack sees RoCE frames too and would answer
 * UDP 4791 with ICMP port unreachable.  This attaches a tc clsact ingress
 * BPF filter that drops UDP 4791 before the IP stack; packet sockets see
 * frames before tc ingress, so uroce still receives them.  Idempotent;
 * needs root (CAP_NET_ADMIN, CAP_BPF).
 * Return: 0, or -errno with one line in @err.
 */
int dp_kernel_filter_install(const char *netdev, char *err, size_t errlen);
/* Remove it (leaves other tc filters and the clsact qdisc alone).  0 if it was not there. */
int dp_kernel_filter_remove(const char *netdev, char *err, size_t errlen);

/**
 * dp_loss_set() - drop a random fraction of the UDP 4791 frames a netdev receives.
 * @ppm: drop probability in parts per million (0 keeps the program, drops nothing).
 *
 * For tests and benchmarks (this kernel has no netem): an XDP program on
 * @netdev, so neither the kernel nor a packet socket on @netdev sees the
 * dropped frames.  A netdev where uroce runs af_xdp already has an XDP
 * program: start that device with pmd_args xdp_prog=dp_loss_xdp_path()
 * and set the rate here.
 * Return: 0, or -errno with one line in @err.
 */
int dp_loss_set(const char *netdev, uint32_t ppm, char *err, size_t errlen);
int dp_loss_clear(const char *netdev, char *err, size_t errlen);

#endif
