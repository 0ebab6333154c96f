// SPDX-License-Identifier: MIT
/*
 * The socket filter on a process's af_packet socket: a RoCE frame for a QPN
 * of the host-wide table whose bit the process has not set (another
 * process's QP) stays out of its ring, so that every process on a netdev
 * no longer copies, and overflows on, every other process's traffic.  QP1,
 * multicast, QPNs outside the table and every frame that is not RoCE come
 * in as before; the process's own classification stays the judge.  On the
 * broker's socket (uroce_qpn_bits.ifindex set) the filter also keeps its
 * holder, who may be any user, from every frame it has no business with.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <linux/if_ether.h>
#include <linux/in.h>

#include "qpn_filter.h"

#define ROCE_V2_PORT	4791
#define ETH_P_8021Q_	0x8100
#define ETH_P_ROCEV1	0x8915
#define GRH_NXTHDR_IBA	0x1b
#define IPPROTO_ICMPV6_	58
#define IPV6_HLEN	40
#define UDP_HLEN	8
#define BTH_DEST_QP	5	/* the 24-bit DestQP's offset in the BTH */
#define KEEP		0xffffffff	/* the whole frame */

/*
 * A packet socket's filter sees the frame from its Ethernet header on.  The
 * helper copies out of paged data too: a frame sent from a TX ring (as DPDK's
 * af_packet PMD sends) keeps only its Ethernet header in the linear part.
 */
#define LOAD(off, to, n)	bpf_skb_load_bytes(skb, off, to, n)

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct uroce_qpn_bits);
} uroce_qpns SEC(".maps");

/*
 * The BTH's offset in a RoCE frame, or 0 when the frame is not RoCE; then
 * @needed says whether the port uses it (ARP, ICMP, ICMPv6).
 */
static __always_inline __u32 bth_offset(struct __sk_buff *skb, int *needed)
{
	__u32 off = ETH_HLEN;
	__u16 proto, dport;
	__u8 b[2];

	*needed = 0;
	if (LOAD(12, &proto, 2))
		return 0;
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		if (LOAD(16, &proto, 2))
			return 0;
		off += 4;
	}
	if (proto == bpf_htons(ETH_P_ARP)) {
		*needed = 1;
		return 0;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		__u16 frag;

		/* version and header length, then the protocol */
		if (LOAD(off, &b[0], 1) ||
		    LOAD(off + 9, &b[1], 1) ||
		    LOAD(off + 6, &frag, 2))
			return 0;
		*needed = b[1] == IPPROTO_ICMP;
		if (b[1] != IPPROTO_UDP || (frag & bpf_htons(0x3fff)))
			return 0;
		off += (b[0] & 0xf) * 4;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (LOAD(off + 6, &b[0], 1))
			return 0;
		*needed = b[0] == IPPROTO_ICMPV6_;
		if (b[0] != IPPROTO_UDP)
			return 0;
		off += IPV6_HLEN;
	} else if (proto == bpf_htons(ETH_P_ROCEV1)) {
		if (LOAD(off + 6, &b[0], 1) || b[0] != GRH_NXTHDR_IBA)
			return 0;
		return off + IPV6_HLEN;
	} else {
		return 0;
	}
	if (LOAD(off + 2, &dport, 2) || dport != bpf_htons(ROCE_V2_PORT))
		return 0;
	return off + UDP_HLEN;
}

/*
 * The broker's socket: frames of its netdev, unicast to its address (sent
 * or received) or multicast (a group anyone may join); any other unicast
 * frame (promiscuous mode, or another process's frames to other hosts as
 * they leave) stays out.
 */
static __always_inline int strict_admits(struct __sk_buff *skb, const struct uroce_qpn_bits *bits)
{
	__u8 dst[6];

	if (skb->ifindex != bits->ifindex || LOAD(0, dst, 6))
		return 0;
	if (dst[0] & 1)
		return 1;
	return dst[0] == bits->mac[0] && dst[1] == bits->mac[1] && dst[2] == bits->mac[2] &&
	       dst[3] == bits->mac[3] && dst[4] == bits->mac[4] && dst[5] == bits->mac[5];
}

SEC("socket")
int uroce_qpn_filter(struct __sk_buff *skb)
{
	__u32 off, key = 0, slot;
	struct uroce_qpn_bits *bits;
	int needed;
	__u8 q[3];

	bits = bpf_map_lookup_elem(&uroce_qpns, &key);
	if (!bits)
		return 0;
	if (bits->ifindex && !strict_admits(skb, bits))
		return 0;
	off = bth_offset(skb, &needed);
	if (!off)
		return needed || !bits->ifindex ? KEEP : 0;
	if (LOAD(off + BTH_DEST_QP, q, 3))
		return KEEP;	/* too short: the port counts it malformed */
	slot = ((__u32)q[0] << 16 | (__u32)q[1] << 8 | q[2]) - QPN_FILTER_BASE;
	if (slot >= QPN_FILTER_SLOTS)
		return KEEP;
	return bits->w[slot / 64] >> (slot % 64) & 1 ? KEEP : 0;
}

char _license[] SEC("license") = "Dual MIT/GPL";
