/* SPDX-License-Identifier: MIT */
/* The QPN bitmap a process shares with its socket filter (uroce_qpn_filter.bpf.c, host_qpn.c). */
#ifndef UROCE_BPF_QPN_FILTER_H
#define UROCE_BPF_QPN_FILTER_H

/* The host-wide QPN table's range (HOST_QPN_BASE, HOST_QPN_SLOTS in host_qpn.h). */
#define QPN_FILTER_BASE		0x100
#define QPN_FILTER_SLOTS	65536

struct uroce_qpn_bits {
	/*
	 * Nonzero: the broker's socket, whose holder may be any user.  Only
	 * frames of this netdev, unicast to @mac or multicast, and of those only
	 * RoCE, ARP, ICMP and ICMPv6 come in (host_broker.c).
	 */
	__u32	ifindex;
	__u8	mac[6];
	__u16	pad;
	/* Bit (qpn - QPN_FILTER_BASE): this process's QP, or one it freed and nobody took since. */
	__u64	w[QPN_FILTER_SLOTS / 64];
};

#endif
