/* SPDX-License-Identifier: MIT */
/* The pcap port: received frames come from a pcap file, sent frames go to one, on a virtual clock. */
#ifndef UROCE_PORT_PCAP_H
#define UROCE_PORT_PCAP_H

#include <stddef.h>
#include <stdint.h>

#include "uroce/port.h"

struct port_pcap_cfg {
	const char	*rx_path;	/* frames that arrive, in timestamp order */
	const char	*tx_path;	/* where sent frames are written; NULL: not written */
	uint8_t		mac[6];
	uint32_t	mtu;		/* IP MTU */
	const char	*name;		/* for messages; copied */
};

/**
 * port_pcap_open() - a port that replays a capture.
 *
 * A frame of the rx file becomes receivable once the clock set with
 * port_pcap_set_time() has reached its timestamp (files with microsecond or
 * nanosecond timestamps; the clock is in nanoseconds on the same epoch).
 * Sent frames are written with the clock's time.  resolve() answers from
 * the neighbours added with port_pcap_add_neighbour(), -EHOSTUNREACH for
 * others.
 * Return: the port, or NULL with one line in @err (unreadable file, not
 * Ethernet, out of memory).
 */
struct port *port_pcap_open(const struct port_pcap_cfg *cfg, char *err, size_t errlen);

void port_pcap_set_time(struct port *p, uint64_t now_ns);

/* Timestamp of the next frame not yet received; UINT64_MAX once the file is used up. */
uint64_t port_pcap_next_rx_ns(struct port *p);

/* Return: 0, or -ENOSPC when the table is full. */
int port_pcap_add_neighbour(struct port *p, const uint8_t gid[16], const uint8_t mac[6]);

struct port_pcap_stats {
	uint64_t	rx_frames;	/* handed to rx_burst() callers */
	uint64_t	tx_frames;	/* written */
	uint64_t	tx_too_big;	/* longer than the MTU allows: dropped */
	uint64_t	rx_truncated;	/* captured shorter than on the wire (delivered as captured) */
};

void port_pcap_stats(struct port *p, struct port_pcap_stats *out);

#endif
