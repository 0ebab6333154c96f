// SPDX-License-Identifier: MIT
/*
 * XDP on a netdev uroce uses: RoCE frames (v2 and v1) go to the AF_XDP socket of
 * their queue when there is one (af_xdp port), everything else (ARP, ND,
 * ICMP, TCP, ...) on to the kernel, which keeps owning the netdev; and a
 * settable fraction of RoCE frames is dropped first (loss injection for
 * tests: neither the kernel nor a packet socket sees a dropped frame).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "roce_match.h"

struct uroce_loss_cfg {
	__u32 ppm;		/* drop probability, parts per million */
	__u32 owner;		/* set by userspace: PID of the af_xdp port, 0 for `uroce loss` */
	__u64 seen;		/* RoCE frames looked at */
	__u64 dropped;
};

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
	__type(value, struct uroce_loss_cfg);
} uroce_loss_cfg SEC(".maps");

SEC("xdp.frags")
int uroce_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct uroce_loss_cfg *cfg;
	__u32 zero = 0;

	if (!is_roce(data, end))
		return XDP_PASS;
	cfg = bpf_map_lookup_elem(&uroce_loss_cfg, &zero);
	if (cfg) {
		__sync_fetch_and_add(&cfg->seen, 1);
		if (cfg->ppm && bpf_get_prandom_u32() % 1000000 < cfg->ppm) {
			__sync_fetch_and_add(&cfg->dropped, 1);
			return XDP_DROP;
		}
	}
	return bpf_redirect_map(&xsks_map, ctx->rx_queue_index, XDP_PASS);
}

char _license[] SEC("license") = "Dual MIT/GPL";
