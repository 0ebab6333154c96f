/* SPDX-License-Identifier: MIT */
/* A simulated Ethernet link between two ports, with a clock it is given and seeded faults. */
#ifndef UROCE_PORT_SIM_H
#define UROCE_PORT_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "uroce/port.h"

struct port_sim;

/* Per direction; probabilities in [0, 1]. */
struct port_sim_faults {
	double		loss;		/* frame dropped */
	unsigned	burst;		/* a loss takes this many frames in a row (0, 1: one) */
	double		dup;		/* frame delivered twice */
	double		reorder;	/* frame held back by reorder_ns: later ones overtake it */
	double		corrupt;	/* one bit flipped after the UDP header: bad ICRC */
	double		ce_mark;	/* IP ECN field set to CE (congestion experienced) */
	uint64_t	delay_ns;	/* one-way latency */
	uint64_t	jitter_ns;	/* up to this much more, uniform, never overtaking */
	uint64_t	reorder_ns;
};

struct port_sim_cfg {
	uint64_t	seed;		/* same seed, same faults */
	uint32_t	mtu;		/* IP MTU of both ends; 0: 4200 (PMTU 4096) */
	unsigned	slots;		/* frame buffers of the link; 0: 4096 */
	/*
	 * Zero-copy transmit (port.tx_ext): a frame may refer to its payload in
	 * the sender's memory until delivered, as a NIC's DMA would read it.
	 * Faults that read or change a frame's bytes (filter, dup, corrupt,
	 * CE mark) or let later frames overtake it (reorder) copy the payload
	 * in first.
	 */
	bool		zero_copy;
	/* Time in ns; the link delivers a frame once now_ns() reaches its arrival time. */
	uint64_t	(*now_ns)(void *arg);
	void		*clock_arg;
};

struct port_sim_stats {
	uint64_t sent, delivered, lost, duplicated, reordered, corrupted, ce_marked;
	uint64_t filtered, no_buffer;
	uint64_t by_reference;	/* delivered with the payload in the sender's memory */
	uint64_t linearized;	/* payload copied in by the link for a fault */
};

/*
 * Sees every frame @from_end sends, before the random faults; returning
 * true drops it.  For tests that need one exact loss ("the third packet").
 */
typedef bool (*port_sim_filter)(void *arg, int from_end, const uint8_t *frame, uint32_t len);

struct port_sim *port_sim_create(const struct port_sim_cfg *cfg);
void port_sim_destroy(struct port_sim *s);

/* End 0 or 1, as a port for rc_engine_cfg.port.  MACs 02:00:00:00:00:01 / :02. */
struct port *port_sim_port(struct port_sim *s, int end);

void port_sim_set_faults(struct port_sim *s, int from_end, const struct port_sim_faults *f);
void port_sim_set_filter(struct port_sim *s, port_sim_filter filter, void *arg);
/* What resolve() answers at @end: 0 (the peer's MAC), -EAGAIN or -EHOSTUNREACH. */
void port_sim_set_resolve(struct port_sim *s, int end, int result);

/* Put a frame on the wire towards @to_end, arriving now.  Return: 0 or -ENOBUFS/-EMSGSIZE. */
int port_sim_inject(struct port_sim *s, int to_end, const void *frame, uint32_t len);

/* Arrival time of the earliest frame in flight, UINT64_MAX if none. */
uint64_t port_sim_next_arrival(struct port_sim *s);
void port_sim_get_stats(struct port_sim *s, int from_end, struct port_sim_stats *st);

#endif
