/* SPDX-License-Identifier: MIT */
/* The port `uroce replay` gives the engine: paces a pcap port or a DPDK pcap PMD by the virtual clock. */
#ifndef UROCE_REPLAY_PORT_H
#define UROCE_REPLAY_PORT_H

#include "replay.h"

/* The port that really reads and writes the files: the pcap port or DPDK's pcap PMD. */
struct rp_lower {
	enum rp_backend	backend;
	struct port	*port;		/* NULL until opened and after rp_lower_finish() */
	void		*dpdk;		/* the DPDK port */
	uint64_t	not_roce;	/* frames the DPDK port dropped before the engine saw them */
};

int rp_lower_open(struct rp_lower *l, enum rp_backend backend, const struct fixture *fx,
		  const char *rx_path, const char *tx_path, char *err, size_t errlen);
/* Stop the port so that its transmit file is complete on disk. */
void rp_lower_finish(struct rp_lower *l);
void rp_lower_close(struct rp_lower *l);
const char *rp_lower_name(const struct rp_lower *l);
/*
 * The DPDK port classifies frames before the engine and counts those that
 * are not RoCE itself; the engine would have counted them by drop reason.
 */
void rp_lower_adjust_counters(const struct rp_lower *l, struct rc_counters *c);

/*
 * What the engine talks to.  Receive: the lower port's frames, but only as
 * many as the virtual clock has reached (DPDK's pcap PMD reads its file as
 * fast as it is asked).  Send: recorded with the virtual time and window,
 * then handed down.  resolve(): the fixture's peers.
 */
struct rp_port {
	struct port		base;
	const struct fixture	*fx;
	struct rp_lower		*lower;
	unsigned		due;		/* input frames whose time has come */
	unsigned		delivered;
	uint64_t		now;
	struct rp_frames	sent;
};

void rp_port_init(struct rp_port *p, const struct fixture *fx);
void rp_port_attach(struct rp_port *p, struct rp_lower *l);
void rp_port_set_time(struct rp_port *p, uint64_t now, const struct rp_frames *input);
void rp_port_free(struct rp_port *p);

#ifdef UROCE_REPLAY_DPDK
/* replay_dpdk.c: a DPDK port on the pcap PMD (rx_pcap=@rx_path, tx_pcap=@tx_path). */
int rp_dpdk_open(const struct fixture *fx, const char *rx_path, const char *tx_path,
		 struct port **port, void **handle, char *err, size_t errlen);
/* Close it; @not_roce gets the frames its classifier dropped as not RoCE. */
void rp_dpdk_close(void *handle, uint64_t *not_roce);
#endif

#endif
