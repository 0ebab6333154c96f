// SPDX-License-Identifier: MIT
/*
 * tc clsact ingress, direct action: RoCE frames (v2, and v1's 0x8915) go no further than tc,
 * so the kernel stack never answers them with ICMP port unreachable.
 * Packet sockets (DPDK af_packet) see frames before tc ingress.
 */
#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#include "roce_match.h"

/* Ethernet + VLAN tag + IPv6 (the longest fixed IP header) + UDP. */
#define ROCE_HDRS_LEN	(14 + 4 + 40 + 8)

SEC("tc")
int uroce_tc_ingress(struct __sk_buff *skb)
{
	void *data, *end;

	/*
	 * Frames from a TPACKET_V2 ring (DPDK af_packet on the far end of a
	 * veth) arrive with only the Ethernet header in the linear part:
	 * pull the headers in before looking at them.
	 */
	if ((void *)(long)skb->data + ROCE_HDRS_LEN > (void *)(long)skb->data_end)
		bpf_skb_pull_data(skb, skb->len < ROCE_HDRS_LEN ? skb->len : ROCE_HDRS_LEN);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	return is_roce(data, end) ? TC_ACT_SHOT : TC_ACT_OK;
}

char _license[] SEC("license") = "Dual MIT/GPL";
