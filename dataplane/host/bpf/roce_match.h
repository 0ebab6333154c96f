/* SPDX-License-Identifier: MIT */
/* Shared by the BPF programs: is this frame RoCE (UDP to port 4791, or EtherType 0x8915)? */
#ifndef UROCE_BPF_ROCE_MATCH_H
#define UROCE_BPF_ROCE_MATCH_H

#include <linux/types.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <linux/udp.h>
#include <bpf/bpf_endian.h>

#define ROCE_V2_PORT	4791	/* IBA Annex A17.2.1 */
#define ETH_P_8021Q_	0x8100
#define ETH_P_ROCEV1	0x8915	/* IBA Annex A16: a GRH, then the BTH */
#define GRH_NXTHDR_IBA	0x1b

/*
 * One optional 802.1Q tag, then IPv4 (any header length, first fragment)
 * or IPv6 (UDP as the first next header) to UDP 4791, or a RoCE v1 GRH
 * (IPv6's layout) whose next header is the BTH.  Every access is
 * bounds-checked against @end, as the verifier demands.
 * Return: where the BTH starts (not bounds-checked itself), or NULL.
 */
static __always_inline void *roce_bth(void *data, void *end)
{
	struct ethhdr *eth = data;
	struct udphdr *udp;
	__u16 proto;
	void *l3;

	if ((void *)(eth + 1) > end)
		return NULL;
	proto = eth->h_proto;
	l3 = eth + 1;
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		if (l3 + 4 > end)
			return NULL;
		proto = *(__u16 *)(l3 + 2);
		l3 += 4;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;

		if ((void *)(ip + 1) > end || ip->protocol != IPPROTO_UDP ||
		    (ip->frag_off & bpf_htons(0x1fff)))
			return NULL;
		udp = l3 + ip->ihl * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		struct ipv6hdr *ip6 = l3;

		if ((void *)(ip6 + 1) > end || ip6->nexthdr != IPPROTO_UDP)
			return NULL;
		udp = (void *)(ip6 + 1);
	} else if (proto == bpf_htons(ETH_P_ROCEV1)) {
		struct ipv6hdr *grh = l3;

		return (void *)(grh + 1) <= end && grh->nexthdr == GRH_NXTHDR_IBA ? grh + 1 : NULL;
	} else {
		return NULL;
	}
	if ((void *)(udp + 1) > end)
		return NULL;
	return udp->dest == bpf_htons(ROCE_V2_PORT) ? udp + 1 : NULL;
}

static __always_inline int is_roce(void *data, void *end)
{
	return roce_bth(data, end) != NULL;
}

#endif
