// SPDX-License-Identifier: MIT
/*
 * XDP on a netdev uroce uses: RoCE frames (v2 and v1) go to the AF_XDP socket of
 * their queue when there is one (af_xdp port), everything else (ARP, ND,
 * ICMP, TCP, ...) on to the kernel, which keeps owning the netdev; and for
 * tests, first a settable fraction of RoCE frames (or of requests only) is
 * dropped (`uroce loss`)
 * and a bottleneck marks ECN or drops (`uroce bottleneck`): neither the
 * kernel nor a packet socket sees a dropped frame.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "roce_match.h"
#include "xdp_cfg.h"

#define ECN_MASK	3
#define ECN_CE		3

struct {
	__uint(type, BPF_MAP_TYPE_XSKMAP);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} xsks_map SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct uroce_xdp_cfg);
} uroce_loss_cfg SEC(".maps");

/* Set CE in a RoCE v2 frame's IP header if it is ECN-capable.  Return: 0, or -1 if it is not. */
static __always_inline int mark_ce(void *data, void *end)
{
	struct ethhdr *eth = data;
	void *l3 = eth + 1;
	__u16 proto;

	if (l3 > end)
		return -1;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_8021Q_)) {
		if (l3 + 4 > end)
			return -1;
		proto = *(__u16 *)(l3 + 2);
		l3 += 4;
	}
	if (proto == bpf_htons(ETH_P_IP)) {
		struct iphdr *ip = l3;
		__u16 old, new;
		__u32 sum;

		if ((void *)(ip + 1) > end || !(ip->tos & ECN_MASK))
			return -1;
		old = *(__u16 *)ip;
		ip->tos |= ECN_CE;
		new = *(__u16 *)ip;
		/* RFC 1624: HC' = ~(~HC + ~m + m') */
		sum = (__u16)~ip->check + (__u16)~old + new;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		ip->check = (__u16)~sum;
		return 0;
	}
	if (proto == bpf_htons(ETH_P_IPV6)) {
		__u8 *b = l3;	/* version 4 bits, traffic class 8 (ECN its low 2), flow label 20 */

		if (l3 + 2 > end || !(b[1] & ECN_MASK << 4))
			return -1;
		b[1] |= ECN_CE << 4;
		return 0;
	}
	return -1;
}

/* The virtual queue of a bottleneck.  Return: XDP_PASS, or XDP_DROP. */
static __always_inline int bottleneck(struct uroce_xdp_cfg *c, void *data, void *end)
{
	__u64 now = bpf_ktime_get_ns(), len = end - data, dt = now - c->last_ns, q = c->queue;
	__u64 drained = dt >= 1000000000ull ? q : dt * c->rate_Bps / 1000000000ull;
	__u32 p;

	q = q > drained ? q - drained : 0;
	c->last_ns = now;
	if (q + len > c->buffer) {
		c->queue = q;
		c->queue_drops++;
		return XDP_DROP;
	}
	c->queue = q + len;
	if (q > c->kmin) {
		p = q >= c->kmax || c->kmax <= c->kmin ? 1000000 :
		    (__u32)((q - c->kmin) * c->pmax_ppm / (c->kmax - c->kmin));
		if (bpf_get_prandom_u32() % 1000000 < p) {
			if (mark_ce(data, end)) {
				c->queue -= len;
				c->early_drops++;
				return XDP_DROP;
			}
			c->marked++;
		}
	}
	c->passed_bytes += len;
	return XDP_PASS;
}

/*
 * A responder's packet: RDMA READ response, ACK (or NAK) or atomic ACK (IBA
 * 9.2.1: opcodes 13-18 of the RC, RD and XRC transports).
 */
static __always_inline int is_response(__u8 *bth, void *end)
{
	__u8 transport, op;

	if ((void *)(bth + 1) > end)
		return 0;
	transport = bth[0] >> 5;
	op = bth[0] & 0x1f;
	return (transport == 0 || transport == 2 || transport == 5) && op >= 13 && op <= 18;
}

SEC("xdp.frags")
int uroce_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	void *bth = roce_bth(data, end);
	struct uroce_xdp_cfg *cfg;
	__u32 zero = 0;

	if (!bth)
		return XDP_PASS;
	cfg = bpf_map_lookup_elem(&uroce_loss_cfg, &zero);
	if (cfg) {
		__sync_fetch_and_add(&cfg->seen, 1);
		if (cfg->ppm && !(cfg->spare_responses && is_response(bth, end)) &&
		    bpf_get_prandom_u32() % 1000000 < cfg->ppm) {
			__sync_fetch_and_add(&cfg->dropped, 1);
			return XDP_DROP;
		}
		/* One receive queue's frames come on one CPU at a time (a veth has one): no lock. */
		if (cfg->rate_Bps && bottleneck(cfg, data, end) == XDP_DROP)
			return XDP_DROP;
	}
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
