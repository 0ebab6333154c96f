/* SPDX-License-Identifier: MIT */
/* ARP and IPv6 neighbour discovery for the port: resolve a GID to a MAC, answer for our addresses. */
#ifndef UROCE_HOST_NEIGH_H
#define UROCE_HOST_NEIGH_H

#include <stdbool.h>
#include <stdint.h>

#include "uroce/config.h"

/* Timing, in nanoseconds of the port's monotonic clock. */
#define HOST_NEIGH_RETRY_NS	(200ull * 1000 * 1000)	/* request again after */
#define HOST_NEIGH_TIMEOUT_NS	(3000ull * 1000 * 1000)	/* give up (-EHOSTUNREACH) after */
#define HOST_NEIGH_HOLDDOWN_NS	(1000ull * 1000 * 1000)	/* failed entry answers -EHOSTUNREACH for */
#define HOST_NEIGH_REACHABLE_NS	(60000ull * 1000 * 1000)	/* then re-confirm while still used */
#define HOST_NEIGH_ENTRIES	256

#define HOST_NEIGH_COUNTERS(X)						\
	X(arp_req_tx)	X(arp_req_rx)	X(arp_reply_tx)	X(arp_reply_rx)	\
	X(ns_tx)	X(ns_rx)	X(na_tx)	X(na_rx)		\
	X(resolved)	X(unreachable)	X(malformed)	X(table_full)

struct host_neigh_counters {
#define HOST_NEIGH_FIELD(n) uint64_t n;
	HOST_NEIGH_COUNTERS(HOST_NEIGH_FIELD)
#undef HOST_NEIGH_FIELD
};

extern const char *const host_neigh_counter_names[];

struct host_neigh_cfg {
	uint8_t		mac[6];
	unsigned	n_addrs;
	uint8_t		addrs[HOST_MAX_ADDRS + 1][16];	/* GID form; + the link-local */
	/* true when no kernel answers for our addresses (DPDK owns the link). */
	bool		answer_requests;
	/*
	 * Send one frame (ARP or ICMPv6, at most 86 bytes, padded to 60).
	 * The callee copies it.  Return: 0 or -errno (counted, retried later).
	 */
	int		(*xmit)(void *arg, const void *frame, uint32_t len);
	void		*xmit_arg;
};

struct host_neigh;

struct host_neigh *host_neigh_create(const struct host_neigh_cfg *cfg);
void host_neigh_destroy(struct host_neigh *n);

/* Our addresses changed (netdev address added or removed). */
void host_neigh_set_addrs(struct host_neigh *n, const uint8_t (*addrs)[16], unsigned n_addrs);

/**
 * host_neigh_resolve() - MAC for a GID (IPv4-mapped or IPv6), as port_ops.resolve.
 * @now: monotonic time in ns.
 *
 * Sends a request on a miss and again every HOST_NEIGH_RETRY_NS while
 * called; a cached entry older than HOST_NEIGH_REACHABLE_NS is still returned
 * while a fresh request re-confirms it.
 * Return: 0 with @mac; -EAGAIN while resolving; -EHOSTUNREACH after
 * HOST_NEIGH_TIMEOUT_NS without an answer (for HOST_NEIGH_HOLDDOWN_NS, then a
 * new attempt starts); -EINVAL for a multicast or unspecified GID.
 */
int host_neigh_resolve(struct host_neigh *n, const uint8_t gid[16], uint8_t mac[6], uint64_t now);

/*
 * An ARP frame, or an IPv6 frame carrying ICMPv6 (the port's classifier
 * decided which): learn, and answer when answer_requests is set.
 * Return: true if it was neighbour traffic (consumed), false otherwise.
 */
bool host_neigh_input(struct host_neigh *n, const uint8_t *frame, uint32_t len, uint64_t now);

void host_neigh_counters(const struct host_neigh *n, struct host_neigh_counters *out);

/* fe80::/64 with the modified EUI-64 of @mac (RFC 4291 2.5.1), the default RoCE GID. */
void host_link_local_gid(const uint8_t mac[6], uint8_t gid[16]);

#endif
