/* SPDX-License-Identifier: MIT */
/* The XDP program's one map entry (uroce_loss_cfg): settings and counters, shared by
 * uroce_xdp.bpf.c and host_bpf.c. */
#ifndef UROCE_BPF_XDP_CFG_H
#define UROCE_BPF_XDP_CFG_H

#include <linux/types.h>

struct uroce_xdp_cfg {
	__u32 ppm;		/* random loss, parts per million */
	__u32 owner;		/* PID of the af_xdp port that loaded it; 0: the uroce command did */
	__u64 seen;		/* RoCE frames looked at */
	__u64 dropped;		/* of them, dropped by the random loss */
	/*
	 * A bottleneck, as a switch port with RED/WRED would be: RoCE frames fill a
	 * virtual queue drained at rate_Bps; a frame that does not fit in buffer bytes is
	 * dropped; past kmin bytes a frame is marked CE with a probability rising to
	 * pmax_ppm at kmax and certain beyond (dropped instead when not ECN-capable).
	 */
	__u64 rate_Bps;		/* bytes per second; 0: no bottleneck */
	__u32 buffer, kmin, kmax, pmax_ppm;
	__u64 queue;		/* bytes in the virtual queue at last_ns */
	__u64 last_ns;
	__u64 passed_bytes, marked, early_drops, queue_drops;
	__u32 pass_all;		/* attached with nothing to drop: a baseline with the program's cost */
	__u32 spare_responses;	/* the random loss drops requests only, no ACK, NAK or response */
};

#endif
