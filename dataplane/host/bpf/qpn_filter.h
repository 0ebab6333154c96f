/* SPDX-License-Identifier: MIT */
/* The QPN bitmap a process shares with its socket filter (uroce_qpn_filter.bpf.c, host_qpn.c). */
#ifndef UROCE_BPF_QPN_FILTER_H
#define UROCE_BPF_QPN_FILTER_H

/* The host-wide QPN table's range (HOST_QPN_BASE, HOST_QPN_SLOTS in host_qpn.h). */
#define QPN_FILTER_BASE		0x100
#define QPN_FILTER_SLOTS	65536

/* Bit (qpn - QPN_FILTER_BASE): this process's QP, or one it freed and nobody took since. */
struct uroce_qpn_bits {
	__u64	w[QPN_FILTER_SLOTS / 64];
};

#endif
