/* SPDX-License-Identifier: MIT */
/* A uroce device's configuration, written by `uroce link add`, read by the dataplane. */
#ifndef UROCE_CONFIG_H
#define UROCE_CONFIG_H

#include <net/if.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/dcqcn.h"

/* Everything uroce keeps at run time lives here; UROCE_RUN_DIR overrides it (tests). */
#define UROCE_RUN_DIR_DEFAULT	"/run/uroce"
/* Where `ip netns` keeps its named network namespaces. */
#define UROCE_NETNS_DIR		"/run/netns"

/*
 * The run directory in effect: environment UROCE_RUN_DIR; else, inside a
 * network namespace named by `ip netns`, /run/uroce/netns/NAME (devices are
 * per network namespace, like netdevs); else /run/uroce.
 */
const char *host_run_dir(void);

/*
 * The name `ip netns` gave the network namespace this process is in (the
 * entry of /run/netns that is a bind mount of the same namespace) into
 * @name.  Return: false when the namespace has no such name.
 */
bool host_netns_name(char *name, size_t len);

/*
 * host_run_dir_stale() - 1 if this named namespace's run directory was made
 * for another namespace of the same name, one deleted since (its devices
 * belong to nobody); 0 otherwise, and for run directories not per namespace.
 * host_run_dir_reset() removes such a directory whole.  Return: 0, -EBUSY if
 * it is not stale, or -errno.
 */
int host_run_dir_stale(void);
int host_run_dir_reset(void);

enum host_pmd {
	HOST_PMD_AF_PACKET,	/* any Linux netdev; the default */
	HOST_PMD_AF_XDP,	/* a netdev, frames bypass the kernel */
	HOST_PMD_PCI,		/* a NIC bound to vfio-pci, DPDK owns it */
	HOST_PMD_MEMIF,	/* shared memory between two processes of one host */
	HOST_PMD_PCAP,		/* rx_pcap/tx_pcap files: replay */
	HOST_PMD_TAP,
};

/*
 * /run/uroce/devices/NAME.conf, one "key = value" per line:
 *   name, netdev, pmd (af_packet|af_xdp|pci|memif|pcap|tap), pmd_args
 *   (PCI address, memif socket and role, "rx=FILE,tx=FILE"), eal_args,
 *   mtu, mac, ipv4 / ipv6 (repeatable: addresses when DPDK owns the NIC),
 *   uverbs (the uverbsN name of the sysfs tree); loss recovery of RC QPs
 *   (docs/engine.md, "Loss recovery"): rto_min_us (1-1000000, default 100),
 *   restart_window (1-256, default 16; 256: no restart), adaptive and tlp
 *   (on|off, default on), inflight (PSNs unacknowledged across a process's
 *   QPs on the device, 16-1048576, default 512); DCQCN's reaction point (docs/engine.md,
 *   "Congestion"): dcqcn (on|off, default off) and its parameters by their
 *   mlx5 names (DCQCN_PARAMS in uroce/dcqcn.h, ConnectX's defaults);
 *   selective_repeat (on|off, default off; docs/engine.md, "Selective repeat").
 */
#define HOST_MAX_ADDRS 8
struct host_link_cfg {
	char		name[64];
	char		netdev[IF_NAMESIZE];
	enum host_pmd	pmd;
	char		pmd_args[256];
	char		eal_args[512];
	uint32_t	mtu;		/* 0: from the netdev */
	uint8_t		mac[6];		/* all zero: from the netdev */
	unsigned	n_addrs;
	uint8_t		addrs[HOST_MAX_ADDRS][16];	/* GID form */
	char		uverbs[32];
	/* Loss recovery, as rc_engine_cfg takes it: 0 and false are the defaults. */
	uint32_t	rto_min_us;
	uint32_t	restart_window;
	uint32_t	inflight;
	bool		no_adaptive_rto;
	bool		no_tail_probe;
	bool		selective_repeat;
	/* Same-host RDMA WRITE and READ by frames only (docs/dataplane.md, "Direct placement"). */
	bool		no_direct;
	/* QPNs one user other than root may hold through the broker; 0: a quarter of the table. */
	uint32_t	user_qpns;
	struct dcqcn_cfg dcqcn;		/* as rc_engine_cfg takes it */
};

/* A key of the loss and congestion settings, which `uroce link add` takes as words. */
bool host_link_cfg_is_tunable(const char *key);

const char *host_pmd_name(enum host_pmd pmd);
int host_pmd_parse(const char *s, enum host_pmd *out);

/* The configuration file of device @name: <run dir>/devices/NAME.conf. */
int host_link_cfg_path(const char *name, char *buf, size_t len);
/*
 * The device at the other end of memif link @cfg (the other configuration of
 * this run directory with the same memif link name) into @peer.
 * Return: 0, -ENOENT when there is none here, -EINVAL for another PMD.
 */
int host_link_memif_peer(const struct host_link_cfg *cfg, char *peer, size_t len);
/* Return: 0, or -errno with a one-line reason in @err. */
int host_link_cfg_load(const char *name, struct host_link_cfg *cfg, char *err, size_t errlen);
/* A configuration file by its path (the device's name unchecked). */
int host_link_cfg_read(const char *path, struct host_link_cfg *cfg, char *err, size_t errlen);
int host_link_cfg_save(const struct host_link_cfg *cfg, char *err, size_t errlen);
int host_link_cfg_remove(const char *name);
/*
 * One "key = value" of the file into @cfg (also what `uroce link add` takes
 * for the keys it passes on).  Return: 0, or -errno with a phrase in @why.
 */
int host_link_cfg_set(struct host_link_cfg *cfg, const char *key, const char *val,
		      const char **why);

#endif
