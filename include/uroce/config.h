/* SPDX-License-Identifier: MIT */
/* A uroce device's configuration, written by `uroce link add`, read by the dataplane. */
#ifndef UROCE_CONFIG_H
#define UROCE_CONFIG_H

#include <net/if.h>
#include <stddef.h>
#include <stdint.h>

/* Everything uroce keeps at run time lives here; UROCE_RUN_DIR overrides it (tests). */
#define UROCE_RUN_DIR_DEFAULT	"/run/uroce"
/* Where `ip netns` keeps its named network namespaces. */
#define UROCE_NETNS_DIR		"/run/netns"

/*
 * The run directory in effect: environment UROCE_RUN_DIR; else, inside a
 * network namespace named by `ip netns`, /run/uroce/netns/NAME (devices are
 * per network namespace, like netdevs); else /run/uroce.
 */
const char *uroce_run_dir(void);

enum uroce_pmd {
	UROCE_PMD_AF_PACKET,	/* any Linux netdev; the default */
	UROCE_PMD_AF_XDP,	/* a netdev, frames bypass the kernel */
	UROCE_PMD_PCI,		/* a NIC bound to vfio-pci, DPDK owns it */
	UROCE_PMD_MEMIF,	/* shared memory between two processes of one host */
	UROCE_PMD_PCAP,		/* rx_pcap/tx_pcap files: replay */
	UROCE_PMD_TAP,
};

/*
 * /run/uroce/devices/NAME.conf, one "key = value" per line:
 *   name, netdev, pmd (af_packet|af_xdp|pci|memif|pcap|tap), pmd_args
 *   (PCI address, memif socket and role, "rx=FILE,tx=FILE"), eal_args,
 *   mtu, mac, ipv4 / ipv6 (repeatable: addresses when DPDK owns the NIC),
 *   uverbs (the uverbsN name of the sysfs tree).
 */
#define UROCE_MAX_ADDRS 8
struct uroce_link_cfg {
	char		name[64];
	char		netdev[IF_NAMESIZE];
	enum uroce_pmd	pmd;
	char		pmd_args[256];
	char		eal_args[512];
	uint32_t	mtu;		/* 0: from the netdev */
	uint8_t		mac[6];		/* all zero: from the netdev */
	unsigned	n_addrs;
	uint8_t		addrs[UROCE_MAX_ADDRS][16];	/* GID form */
	char		uverbs[32];
};

const char *uroce_pmd_name(enum uroce_pmd pmd);
int uroce_pmd_parse(const char *s, enum uroce_pmd *out);

/* Return: 0, or -errno with a one-line reason in @err. */
int uroce_link_cfg_load(const char *name, struct uroce_link_cfg *cfg, char *err, size_t errlen);
int uroce_link_cfg_save(const struct uroce_link_cfg *cfg, char *err, size_t errlen);
int uroce_link_cfg_remove(const char *name);

#endif
