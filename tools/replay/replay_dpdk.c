// SPDX-License-Identifier: MIT
/* `uroce replay --dpdk`: the fixture's frames through the DPDK port on the pcap PMD. */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "dp_port.h"
#include "replay_port.h"

int rp_dpdk_open(const struct fixture *fx, const char *rx_path, const char *tx_path,
		 struct port **port, void **handle, char *err, size_t errlen)
{
	static atomic_uint seq;
	struct host_link_cfg cfg;
	struct dp_port *dp;
	int ret;

	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "replay%u", atomic_fetch_add(&seq, 1));
	snprintf(cfg.netdev, sizeof(cfg.netdev), "%s", "pcap");
	cfg.pmd = HOST_PMD_PCAP;
	if ((size_t)snprintf(cfg.pmd_args, sizeof(cfg.pmd_args), "rx=%s,tx=%s", rx_path, tx_path) >=
	    sizeof(cfg.pmd_args)) {
		snprintf(err, errlen, "temporary file names too long for the pcap PMD's arguments");
		return -ENAMETOOLONG;
	}
	cfg.mtu = fx->local_mtu;
	memcpy(cfg.mac, fx->local_mac, 6);
	cfg.n_addrs = 1;
	memcpy(cfg.addrs[0], fx->local_gid, 16);
	/* Every QPN: the fixture's QPs are this process's. */
	ret = dp_port_open(&cfg, NULL, &dp, err, errlen);
	if (ret)
		return ret;
	*port = dp_port_base(dp);
	*handle = dp;
	return 0;
}

void rp_dpdk_close(void *handle, uint64_t *not_roce)
{
	struct dp_port_counters c;

	dp_port_counters(handle, &c);
	*not_roce = c.drop[DP_DROP_rx_not_roce];
	dp_port_close(handle);
}
