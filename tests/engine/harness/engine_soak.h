/* SPDX-License-Identifier: MIT */
/* Randomized soak of the transport engine against a model, over the simulated link. */
#ifndef UROCE_ENGINE_SOAK_H
#define UROCE_ENGINE_SOAK_H

#include <stdbool.h>
#include <stdint.h>

struct soak_cfg {
	uint64_t	seed;
	unsigned	pairs;		/* connected RC QP pairs over the link */
	unsigned	loop_pairs;	/* more pairs inside engine 0 (same-host path) */
	unsigned	ops;		/* operations per pair */
	unsigned	depth;		/* operations in flight per pair */
	uint32_t	max_msg;	/* largest message, bytes */
	double		loss, dup, reorder, corrupt, ce_mark;
	unsigned	burst;		/* a loss takes this many frames in a row (0, 1: one) */
	uint64_t	delay_ns, jitter_ns;
	uint64_t	max_virtual_ns;	/* a run taking longer than this has hung */
	bool		zero_copy;	/* the link takes RC payloads by reference */
	bool		dcqcn;		/* CNPs slow the requesters (DCQCN defaults) */
	bool		selective_repeat;	/* both engines */
	uint32_t	inflight;	/* both engines' in-flight budget, PSNs (0: the default) */
	/* Each pair an XRC initiator and target, the receives from an XRC SRQ of its own domain. */
	bool		xrc;
	/* A third of the atomics are IBA 1.5 ATOMIC WRITEs of the counter (the model's new value). */
	bool		atomic_write;
	/* Both regions of every pair on-demand paging ones: every payload copy a system call. */
	bool		odp;
};

struct soak_result {
	bool		ok;
	char		error[512];
	uint64_t	ops_done;	/* completed and checked */
	uint64_t	ops_flushed;	/* ended by retry exhaustion (heavy loss only) */
	uint64_t	atomic_writes;	/* of ops_done */
	unsigned	pairs_retry_exhausted;
	uint64_t	bytes;
	uint64_t	digest;		/* over every completion: equal for equal seeds */
	uint64_t	virtual_ns;
	uint64_t	retransmits, timeouts, seq_naks, rnr_naks, duplicates, drops;
	uint64_t	lost, corrupted, duplicated, reordered, ce_marked;
	uint64_t	frames;		/* sent by both ends of the link */
	uint64_t	cnps_tx, cnps_rx;
	uint64_t	rate_cuts, rate_increases, rate_paced;
	uint64_t	rate_mbps_settled;	/* DCQCN: the slowest QP once idle, no timer left */
	uint64_t	settle_ns;		/* how long that took after the last completion */
	uint64_t	by_reference, linearized;	/* zero-copy frames: as sent, copied in */
	uint64_t	selective_naks, selective_resends, selective_placed;
	uint64_t	early_retransmits, tail_probes, stale_naks;
	uint64_t	inflight_waits;
};

/* Fills @cfg with the defaults for @seed (a mix of everything, 5 % loss). */
void soak_defaults(struct soak_cfg *cfg, uint64_t seed);
void soak_run(const struct soak_cfg *cfg, struct soak_result *res);
/* The fraction of frames lost: loss events times their burst length. */
double soak_loss_rate(const struct soak_cfg *cfg);

#endif
