// SPDX-License-Identifier: MIT
/* `uroce link`: create, remove, list and refresh uroce devices (like `rdma link add ... type rxe`). */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "uroce/config.h"
#include "uroce/sysfs.h"

#define DEV_DIR		"/dev/infiniband"
#define MAX_UVERBS	256

static int link_usage(FILE *out)
{
	fprintf(out,
		"usage: uroce link add NAME netdev IFACE [--pmd af_packet|af_xdp|pci:BDF|pcap:ARGS]"
		" [--eal ARGS]\n"
		"       uroce link del NAME\n"
		"       uroce link show [-j] [NAME]\n"
		"       uroce link refresh NAME\n");
	return 2;
}

static int fail(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(const char *verb, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "uroce link %s: ", verb);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return 1;
}

static bool valid_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= sizeof(((struct uroce_link_cfg *)0)->name) || n >= IBV_SYSFS_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

static void sysfs_root(char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", uroce_run_dir(), UROCE_SYSFS_DIR);
}

static int ibdev_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s/class/infiniband/%s", uroce_run_dir(), UROCE_SYSFS_DIR,
			 name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Link state, MTU and MAC of a netdev.  Return: 0 or -errno. */
struct netdev_info {
	bool		up, running;
	uint32_t	mtu;
	uint8_t		mac[6];
};

static int netdev_query(const char *name, struct netdev_info *info)
{
	struct ifreq ifr = { 0 };
	int fd, ret = 0;

	if (strlen(name) >= IFNAMSIZ)
		return -ENAMETOOLONG;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, name);
	if (ioctl(fd, SIOCGIFFLAGS, &ifr)) {
		ret = -errno;
		goto out;
	}
	info->up = ifr.ifr_flags & IFF_UP;
	info->running = ifr.ifr_flags & IFF_RUNNING;
	if (ioctl(fd, SIOCGIFMTU, &ifr)) {
		ret = -errno;
		goto out;
	}
	info->mtu = (uint32_t)ifr.ifr_mtu;
	if (ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		ret = -errno;
		goto out;
	}
	memcpy(info->mac, ifr.ifr_hwaddr.sa_data, 6);
out:
	close(fd);
	return ret;
}

/* True when @dir/uverbs@n exists (as anything, a dangling symlink included). */
static bool uverbs_exists(const char *dir, unsigned n)
{
	char path[PATH_MAX];
	struct stat st;
	int len = snprintf(path, sizeof(path), "%s/uverbs%u", dir, n);

	/* A name too long to check counts as taken. */
	return len < 0 || (size_t)len >= sizeof(path) || lstat(path, &st) == 0;
}

/* The lowest uverbsN free in /dev/infiniband, the kernel's sysfs and ours. */
static int pick_uverbs(const char *root, char *out, size_t len)
{
	char ours[PATH_MAX];
	int n_ours = snprintf(ours, sizeof(ours), "%s/class/infiniband_verbs", root);

	if (n_ours < 0 || (size_t)n_ours >= sizeof(ours))
		return -ENAMETOOLONG;
	for (unsigned n = 0; n < MAX_UVERBS; n++) {
		if (uverbs_exists(DEV_DIR, n) || uverbs_exists("/sys/class/infiniband_verbs", n) ||
		    uverbs_exists(ours, n))
			continue;
		snprintf(out, len, "uverbs%u", n);
		return 0;
	}
	return -ENOSPC;
}

/*
 * The /dev/infiniband node libibverbs opens: a symlink to /dev/full, so
 * every command written to it fails cleanly.  Only our own symlinks are
 * ever removed, never a kernel device node.
 */
static int devnode_create(const char *uverbs)
{
	char path[PATH_MAX];

	if (mkdir(DEV_DIR, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), DEV_DIR "/%s", uverbs);
	if (symlink(UROCE_CDEV, path))
		return -errno;
	return 0;
}

static void devnode_remove(const char *uverbs)
{
	char path[PATH_MAX], target[PATH_MAX];
	ssize_t n;

	if (!uverbs[0])
		return;
	snprintf(path, sizeof(path), DEV_DIR "/%s", uverbs);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return;
	target[n] = '\0';
	if (!strcmp(target, UROCE_CDEV))
		unlink(path);
	rmdir(DEV_DIR);		/* only succeeds when empty */
}

/* The GID table of a configured device: its netdev's addresses plus configured ones. */
static int link_gids(const struct uroce_link_cfg *cfg, const uint8_t mac[6],
		     struct rc_gid_entry *tbl)
{
	const char *netdev = if_nametoindex(cfg->netdev) ? cfg->netdev : NULL;

	return prov_gid_table_build(netdev, mac, (const uint8_t (*)[16])cfg->addrs, cfg->n_addrs,
				    tbl, RC_GID_TABLE_LEN);
}

/* Split "--pmd NAME[:ARGS]" into the configuration. */
static int parse_pmd(const char *s, struct uroce_link_cfg *cfg)
{
	const char *colon = strchr(s, ':');
	char name[32];
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n >= sizeof(name))
		return -EINVAL;
	memcpy(name, s, n);
	name[n] = '\0';
	if (uroce_pmd_parse(name, &cfg->pmd))
		return -EINVAL;
	if (colon && snprintf(cfg->pmd_args, sizeof(cfg->pmd_args), "%s", colon + 1) >=
		     (int)sizeof(cfg->pmd_args))
		return -E2BIG;
	if (cfg->pmd == UROCE_PMD_PCI && !cfg->pmd_args[0])
		return -EINVAL;
	return 0;
}

static int link_add(int argc, char **argv)
{
	struct uroce_link_cfg cfg = { 0 }, old;
	struct rc_gid_entry gids[RC_GID_TABLE_LEN];
	struct netdev_info nd = { 0 };
	struct prov_sysfs_dev sd;
	char root[PATH_MAX], err[256];
	bool have_netdev;
	int ret;

	if (argc < 5 || strcmp(argv[3], "netdev"))
		return link_usage(stderr);
	if (!valid_name(argv[2]))
		return fail("add", "bad device name '%s': use up to %d letters, digits, '_', '-', '.'",
			    argv[2], IBV_SYSFS_NAME_MAX - 1);
	snprintf(cfg.name, sizeof(cfg.name), "%s", argv[2]);
	if (strlen(argv[4]) >= sizeof(cfg.netdev))
		return fail("add", "netdev name '%s' is too long", argv[4]);
	snprintf(cfg.netdev, sizeof(cfg.netdev), "%s", argv[4]);
	cfg.pmd = UROCE_PMD_AF_PACKET;
	for (int i = 5; i < argc; i++) {
		if (!strcmp(argv[i], "--pmd") && i + 1 < argc) {
			ret = parse_pmd(argv[++i], &cfg);
			if (ret)
				return fail("add", "bad --pmd '%s': use af_packet, af_xdp, pci:BDF, "
					    "pcap:ARGS, memif:ARGS or tap", argv[i]);
		} else if (!strcmp(argv[i], "--eal") && i + 1 < argc) {
			if (snprintf(cfg.eal_args, sizeof(cfg.eal_args), "%s", argv[++i]) >=
			    (int)sizeof(cfg.eal_args))
				return fail("add", "--eal arguments are too long");
		} else {
			return link_usage(stderr);
		}
	}

	/* A NIC DPDK owns (pci) or a replay (pcap) has no netdev: IFACE only labels it. */
	have_netdev = cfg.pmd != UROCE_PMD_PCI && cfg.pmd != UROCE_PMD_PCAP;
	if (have_netdev) {
		ret = netdev_query(cfg.netdev, &nd);
		if (ret == -ENODEV || ret == -ENXIO)
			return fail("add", "netdev %s does not exist (see `ip link show`)",
				    cfg.netdev);
		if (ret)
			return fail("add", "cannot query netdev %s: %s", cfg.netdev,
				    strerror(-ret));
		if (!nd.up)
			return fail("add", "netdev %s is down: run `ip link set %s up` first",
				    cfg.netdev, cfg.netdev);
		memcpy(cfg.mac, nd.mac, 6);
	}
	if (geteuid() != 0)
		return fail("add", "permission denied: creating %s/uverbsN and %s needs root "
			    "(run it with sudo)", DEV_DIR, uroce_run_dir());
	if (!uroce_link_cfg_load(cfg.name, &old, err, sizeof(err)))
		return fail("add", "device %s exists (on netdev %s); remove it with "
			    "`uroce link del %s`", cfg.name, old.netdev, cfg.name);

	sysfs_root(root, sizeof(root));
	ret = pick_uverbs(root, cfg.uverbs, sizeof(cfg.uverbs));
	if (ret)
		return fail("add", "no free uverbs name below uverbs%d in %s", MAX_UVERBS, DEV_DIR);
	ret = link_gids(&cfg, cfg.mac, gids);
	if (ret < 0)
		return fail("add", "cannot list the addresses of %s: %s", cfg.netdev,
			    strerror(-ret));

	sd = (struct prov_sysfs_dev){
		.root = root, .ibdev = cfg.name, .uverbs = cfg.uverbs,
		.netdev = have_netdev ? cfg.netdev : NULL,
	};
	memcpy(sd.mac, cfg.mac, 6);
	ret = prov_sysfs_create(&sd, gids, RC_GID_TABLE_LEN, err, sizeof(err));
	if (ret)
		return fail("add", "%s", err);
	ret = devnode_create(cfg.uverbs);
	if (ret) {
		fail("add", "cannot create %s/%s: %s", DEV_DIR, cfg.uverbs, strerror(-ret));
		goto err_remove_sysfs;
	}
	ret = uroce_link_cfg_save(&cfg, err, sizeof(err));
	if (ret) {
		fail("add", "%s", err);
		goto err_remove_devnode;
	}
	return 0;

err_remove_devnode:
	devnode_remove(cfg.uverbs);
err_remove_sysfs:
	prov_sysfs_remove(root, cfg.name, cfg.uverbs);
	return 1;
}

static int link_del(int argc, char **argv)
{
	struct uroce_link_cfg cfg;
	char root[PATH_MAX], err[256];
	int ret;

	if (argc != 3)
		return link_usage(stderr);
	if (uroce_link_cfg_load(argv[2], &cfg, err, sizeof(err)))
		return fail("del", "no device %s (`uroce link show` lists them)", argv[2]);
	if (geteuid() != 0)
		return fail("del", "permission denied: removing %s/%s needs root (run it with sudo)",
			    DEV_DIR, cfg.uverbs);
	sysfs_root(root, sizeof(root));
	ret = prov_sysfs_remove(root, cfg.name, cfg.uverbs);
	devnode_remove(cfg.uverbs);
	if (ret)
		return fail("del", "cannot remove the sysfs tree of %s: %s", cfg.name,
			    strerror(-ret));
	ret = uroce_link_cfg_remove(cfg.name);
	if (ret)
		return fail("del", "cannot remove the configuration of %s: %s", cfg.name,
			    strerror(-ret));
	return 0;
}

static int link_refresh(int argc, char **argv)
{
	struct rc_gid_entry gids[RC_GID_TABLE_LEN];
	struct uroce_link_cfg cfg;
	struct netdev_info nd;
	char path[PATH_MAX], err[256];
	const char *netdev = NULL;
	int ret;

	if (argc != 3)
		return link_usage(stderr);
	if (uroce_link_cfg_load(argv[2], &cfg, err, sizeof(err)))
		return fail("refresh", "no device %s (`uroce link show` lists them)", argv[2]);
	if (!netdev_query(cfg.netdev, &nd)) {
		netdev = cfg.netdev;
		if (!cfg.mac[0] && !cfg.mac[1] && !cfg.mac[2] && !cfg.mac[3] && !cfg.mac[4] &&
		    !cfg.mac[5])
			memcpy(cfg.mac, nd.mac, 6);
	}
	ret = link_gids(&cfg, cfg.mac, gids);
	if (ret < 0)
		return fail("refresh", "cannot list the addresses of %s: %s", cfg.netdev,
			    strerror(-ret));
	if (ibdev_path(path, sizeof(path), cfg.name))
		return fail("refresh", "run directory path is too long");
	ret = prov_sysfs_write_gids(path, gids, RC_GID_TABLE_LEN, netdev);
	if (ret == -EACCES || ret == -EPERM)
		return fail("refresh", "permission denied writing %s (run it with sudo)", path);
	if (ret)
		return fail("refresh", "cannot write %s: %s", path, strerror(-ret));
	return 0;
}

/* ---- show ---- */

static int cfg_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names of the configured devices, sorted; the caller frees them. */
static int list_devices(char ***names)
{
	char dir[PATH_MAX];
	struct dirent *de;
	size_t n = 0, cap = 0;
	char **v = NULL;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/devices", uroce_run_dir());
	d = opendir(dir);
	if (!d) {
		*names = NULL;
		return errno == ENOENT ? 0 : -errno;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **nv;

		if (len <= 5 || strcmp(de->d_name + len - 5, ".conf"))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		v[n] = strndup(de->d_name, len - 5);
		if (v[n])
			n++;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cfg_name_cmp);
	*names = v;
	return (int)n;
}

static const char *gid_text(const struct rc_gid_entry *e, char *out, size_t len)
{
	return inet_ntop(AF_INET6, e->gid, out, (socklen_t)len) ? out : "?";
}

static void show_one(const struct uroce_link_cfg *cfg, bool json, bool first)
{
	struct rc_gid_entry gids[RC_GID_TABLE_LEN];
	struct netdev_info nd = { 0 };
	bool has_nd = netdev_query(cfg->netdev, &nd) == 0;
	bool active = has_nd ? nd.up && nd.running :
		      cfg->pmd == UROCE_PMD_PCI || cfg->pmd == UROCE_PMD_PCAP;
	uint32_t mtu = cfg->mtu ? cfg->mtu : nd.mtu;
	char path[PATH_MAX], gid[INET6_ADDRSTRLEN];
	bool first_gid = true;

	if (ibdev_path(path, sizeof(path), cfg->name) ||
	    prov_sysfs_read_gids(path, gids, RC_GID_TABLE_LEN))
		memset(gids, 0, sizeof(gids));

	if (!json) {
		printf("link %s/1 state %s physical_state %s netdev %s pmd %s mtu %u uverbs %s\n",
		       cfg->name, active ? "ACTIVE" : "DOWN", active ? "LINK_UP" : "DISABLED",
		       cfg->netdev, uroce_pmd_name(cfg->pmd), mtu, cfg->uverbs);
		for (unsigned i = 0; i < RC_GID_TABLE_LEN; i++) {
			if (!gids[i].valid)
				continue;
			printf("    gid %u %s %s\n", i, gid_text(&gids[i], gid, sizeof(gid)),
			       gids[i].type == RC_GID_ROCE_V2 ? "RoCE v2" : "RoCE v1");
		}
		return;
	}
	printf("%s{\"ifname\":\"%s\",\"port\":1,\"state\":\"%s\",\"physical_state\":\"%s\","
	       "\"netdev\":\"%s\",\"pmd\":\"%s\",\"pmd_args\":\"%s\",\"mtu\":%u,\"uverbs\":\"%s\","
	       "\"gids\":[",
	       first ? "" : ",", cfg->name, active ? "ACTIVE" : "DOWN",
	       active ? "LINK_UP" : "DISABLED", cfg->netdev, uroce_pmd_name(cfg->pmd),
	       cfg->pmd_args, mtu, cfg->uverbs);
	for (unsigned i = 0; i < RC_GID_TABLE_LEN; i++) {
		if (!gids[i].valid)
			continue;
		printf("%s{\"index\":%u,\"gid\":\"%s\",\"type\":\"%s\"}", first_gid ? "" : ",", i,
		       gid_text(&gids[i], gid, sizeof(gid)), gids[i].type == RC_GID_ROCE_V2 ? "RoCE v2" : "RoCE v1");
		first_gid = false;
	}
	printf("]}");
}

static int link_show(int argc, char **argv)
{
	const char *only = NULL;
	bool json = false, any = false;
	char **names, err[256];
	int n;

	for (int i = 2; i < argc; i++) {
		if (!strcmp(argv[i], "-j") || !strcmp(argv[i], "--json"))
			json = true;
		else if (!only && argv[i][0] != '-')
			only = argv[i];
		else
			return link_usage(stderr);
	}
	n = list_devices(&names);
	if (n < 0)
		return fail("show", "cannot list %s/devices: %s", uroce_run_dir(), strerror(-n));
	if (json)
		printf("[");
	for (int i = 0; i < n; i++) {
		struct uroce_link_cfg cfg;

		if ((!only || !strcmp(only, names[i])) &&
		    !uroce_link_cfg_load(names[i], &cfg, err, sizeof(err))) {
			show_one(&cfg, json, !any);
			any = true;
		}
		free(names[i]);
	}
	free(names);
	if (json)
		printf("]\n");
	if (only && !any)
		return fail("show", "no device %s", only);
	return 0;
}

int cmd_link(int argc, char **argv)
{
	if (argc < 2)
		return link_usage(stderr);
	if (!strcmp(argv[1], "add"))
		return link_add(argc, argv);
	if (!strcmp(argv[1], "del") || !strcmp(argv[1], "delete"))
		return link_del(argc, argv);
	if (!strcmp(argv[1], "show") || !strcmp(argv[1], "list"))
		return link_show(argc, argv);
	if (!strcmp(argv[1], "refresh"))
		return link_refresh(argc, argv);
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		link_usage(stdout);
		return 0;
	}
	return link_usage(stderr);
}
