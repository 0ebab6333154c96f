// SPDX-License-Identifier: MIT
/* `uroce link`: create, remove, list and refresh uroce devices (like `rdma link add ... type rxe`). */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "uroce/config.h"
#include "uroce/host.h"
#include "uroce/sysfs.h"

#define DEV_DIR		"/dev/infiniband"
#define MAX_UVERBS	256

static int link_usage(FILE *out)
{
	fprintf(out,
		"usage: uroce link add NAME netdev IFACE [--pmd af_packet|af_xdp|pci:BDF|pcap:ARGS]"
		" [--eal ARGS] [--group GROUP]\n"
		"           [rto_min_us US] [restart_window PSNS] [inflight PSNS] [adaptive on|off] [tlp on|off]\n"
		"           [direct on|off] [selective_repeat on|off] [user_qpns N]\n"
		"           [dcqcn on|off] [rpg_time_reset US] [rpg_byte_reset BYTES] [rpg_threshold N]\n"
		"           [rpg_ai_rate MBPS] [rpg_hai_rate MBPS] [rpg_gd N] [rpg_min_dec_fac PCT]\n"
		"           [rpg_min_rate MBPS] [dce_tcp_g N] [dce_tcp_rtt US]\n"
		"           [rate_reduce_monitor_period US] [initial_alpha_value N] [line_rate MBPS]\n"
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

	if (n == 0 || n >= sizeof(((struct host_link_cfg *)0)->name) || n >= IBV_SYSFS_NAME_MAX)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '-' && *s != '.')
			return false;
	return true;
}

static void sysfs_root(char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", host_run_dir(), UROCE_SYSFS_DIR);
}

static int ibdev_path(char *buf, size_t len, const char *name)
{
	int n = snprintf(buf, len, "%s/%s/class/infiniband/%s", host_run_dir(), UROCE_SYSFS_DIR,
			 name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool uverbs_exists(const char *dir, unsigned n)
{
	char path[PATH_MAX];
	struct stat st;
	int len = snprintf(path, sizeof(path), "%s/uverbs%u", dir, n);

	/* A name too long to check counts as taken. */
	return len < 0 || (size_t)len >= sizeof(path) || lstat(path, &st) == 0;
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

/*
 * Who holds each /dev/infiniband node we made: OWNERS_DIR/uverbsN names the
 * configuration file of its device.  A node whose file is gone (its run
 * directory removed without `uroce link del`) is an orphan the next
 * `link add` takes back; a node without an owner file is never taken.
 * Claims hold a lock on OWNERS_DIR until the device's configuration is saved,
 * so a claim in progress never looks orphaned.
 */
#define OWNERS_DIR	UROCE_RUN_DIR_DEFAULT "/uverbs"

/* Return: the lock's fd (close() releases it), or -errno. */
static int owners_lock(void)
{
	int fd;

	if (mkdir(UROCE_RUN_DIR_DEFAULT, 0755) && errno != EEXIST)
		return -errno;
	if (mkdir(OWNERS_DIR, 0755) && errno != EEXIST)
		return -errno;
	fd = open(OWNERS_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX)) {
		int ret = -errno;

		close(fd);
		return ret;
	}
	return fd;
}

static void owner_path(char *buf, size_t len, const char *uverbs)
{
	snprintf(buf, len, OWNERS_DIR "/%s", uverbs);
}

/* Record device @name of this run directory as @uverbs's owner. */
static int owner_write(const char *uverbs, const char *name)
{
	char path[PATH_MAX], conf[PATH_MAX], cwd[PATH_MAX] = "";
	FILE *f;
	int ok;

	if (host_link_cfg_path(name, conf, sizeof(conf)))
		return -ENAMETOOLONG;
	if (conf[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return -errno;
	owner_path(path, sizeof(path), uverbs);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	ok = fprintf(f, "%s%s%s\n", cwd, cwd[0] ? "/" : "", conf) > 0;
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

/*
 * Has @uverbs an owner file whose configuration file is gone, or names
 * another node?  A configuration that cannot be read keeps its node.
 */
static bool orphaned(const char *uverbs)
{
	char path[PATH_MAX], conf[PATH_MAX], err[256];
	struct host_link_cfg cfg;
	bool found;
	FILE *f;
	int ret;

	owner_path(path, sizeof(path), uverbs);
	f = fopen(path, "re");
	if (!f)
		return false;
	found = fgets(conf, sizeof(conf), f);
	fclose(f);
	if (!found)
		return false;
	conf[strcspn(conf, "\n")] = '\0';
	ret = host_link_cfg_read(conf, &cfg, err, sizeof(err));
	if (ret)
		return ret == -ENOENT;
	return strcmp(cfg.uverbs, uverbs) != 0;
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
	if (strcmp(target, UROCE_CDEV))
		return;
	unlink(path);
	owner_path(path, sizeof(path), uverbs);
	unlink(path);
	rmdir(DEV_DIR);		/* only succeeds when empty */
}

/*
 * Take the lowest uverbsN free in the kernel's sysfs and ours by creating
 * its /dev/infiniband node (an orphan's node is taken back), and record
 * device @name as its owner.  Call with owners_lock() held.
 */
static int claim_uverbs(const char *root, const char *name, char *out, size_t len)
{
	char ours[PATH_MAX];
	int n_ours = snprintf(ours, sizeof(ours), "%s/class/infiniband_verbs", root);

	if (n_ours < 0 || (size_t)n_ours >= sizeof(ours))
		return -ENAMETOOLONG;
	for (unsigned n = 0; n < MAX_UVERBS; n++) {
		int ret;

		if (uverbs_exists("/sys/class/infiniband_verbs", n) || uverbs_exists(ours, n))
			continue;
		snprintf(out, len, "uverbs%u", n);
		ret = devnode_create(out);
		if (ret == -EEXIST && orphaned(out)) {
			devnode_remove(out);
			ret = devnode_create(out);
			if (!ret)
				fprintf(stderr, "uroce: took back %s/%s: its device's run directory "
					"is gone\n", DEV_DIR, out);
		}
		if (ret == -EEXIST)
			continue;
		if (!ret)
			ret = owner_write(out, name);
		return ret;
	}
	return -ENOSPC;
}

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

	snprintf(dir, sizeof(dir), "%s/devices", host_run_dir());
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

/* 1 if the netdev is administratively up, 0 if down, -errno if it cannot be asked. */
static int netdev_admin_up(const char *name)
{
	struct ifreq ifr = { 0 };
	int fd, ret;

	if (strlen(name) >= sizeof(ifr.ifr_name))
		return -ENAMETOOLONG;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	strcpy(ifr.ifr_name, name);
	ret = ioctl(fd, SIOCGIFFLAGS, &ifr) ? -errno : !!(ifr.ifr_flags & IFF_UP);
	close(fd);
	return ret;
}

/* The netdev named in gid_attrs/ndevs: only one that exists here (not a pci/pcap label). */
static const char *ndev_of(const struct host_link_cfg *cfg)
{
	return if_nametoindex(cfg->netdev) ? cfg->netdev : NULL;
}

/*
 * The PMDs that leave the netdev to the kernel: with af_packet it sees RoCE
 * frames too, with af_xdp those uroce's XDP program cannot hand to a socket
 * (no process has the device open).  The tc ingress filter keeps it from
 * answering them with ICMP port unreachable.
 */
static bool kernel_filtered(enum host_pmd pmd)
{
	return pmd == HOST_PMD_AF_PACKET || pmd == HOST_PMD_AF_XDP;
}

/* True when another configured device on @netdev needs the kernel filter too. */
static bool netdev_shared(const char *name, const char *netdev)
{
	char **names, err[256];
	bool shared = false;
	int n = list_devices(&names);

	for (int i = 0; i < n; i++) {
		struct host_link_cfg other;

		if (strcmp(names[i], name) && !host_link_cfg_load(names[i], &other, err, sizeof(err)) &&
		    kernel_filtered(other.pmd) && !strcmp(other.netdev, netdev))
			shared = true;
		free(names[i]);
	}
	free(names);
	return shared;
}

/* Split "--pmd NAME[:ARGS]" into the configuration. */
static int parse_pmd(const char *s, struct host_link_cfg *cfg)
{
	const char *colon = strchr(s, ':');
	char name[32];
	size_t n = colon ? (size_t)(colon - s) : strlen(s);

	if (n >= sizeof(name))
		return -EINVAL;
	memcpy(name, s, n);
	name[n] = '\0';
	if (host_pmd_parse(name, &cfg->pmd))
		return -EINVAL;
	if (colon && snprintf(cfg->pmd_args, sizeof(cfg->pmd_args), "%s", colon + 1) >=
		     (int)sizeof(cfg->pmd_args))
		return -E2BIG;
	if (cfg->pmd == HOST_PMD_PCI && !cfg->pmd_args[0])
		return -EINVAL;
	return 0;
}

/*
 * Make device @cfg (its node, sysfs tree, kernel filter, configuration and
 * broker), or none of it.  Call with owners_lock() held.  Return: 0 or 1.
 */
static int link_create(struct host_link_cfg *cfg, const uint8_t mac[6],
		       const struct wire_gid_entry *gids, const char *group)
{
	struct prov_sysfs_dev sd;
	char root[PATH_MAX], err[256];
	bool filter = false;
	int ret;

	sysfs_root(root, sizeof(root));
	ret = claim_uverbs(root, cfg->name, cfg->uverbs, sizeof(cfg->uverbs));
	if (ret == -ENOSPC)
		return fail("add", "no free uverbs name below uverbs%d in %s", MAX_UVERBS, DEV_DIR);
	if (ret)
		return fail("add", "cannot create %s/%s: %s", DEV_DIR, cfg->uverbs, strerror(-ret));

	sd = (struct prov_sysfs_dev){
		.root = root, .ibdev = cfg->name, .uverbs = cfg->uverbs, .netdev = ndev_of(cfg),
	};
	memcpy(sd.mac, mac, 6);
	ret = prov_sysfs_create(&sd, gids, WIRE_GID_TABLE_LEN, err, sizeof(err));
	if (ret) {
		fail("add", "%s", err);
		goto err_remove_node;
	}
	if (kernel_filtered(cfg->pmd)) {
		ret = host_kernel_filter_install(cfg->netdev, err, sizeof(err));
		if (ret) {
			fail("add", "%s", err);
			goto err_remove;
		}
		filter = true;
	}
	ret = host_link_cfg_save(cfg, err, sizeof(err));
	if (ret) {
		fail("add", "%s", err);
		goto err_remove_filter;
	}
	/*
	 * Programs without CAP_NET_RAW get their packet socket from the broker;
	 * on af_xdp, whose programs open their XDP socket themselves, it is there
	 * for the DREQs of processes that die with connections up.
	 */
	if (cfg->pmd == HOST_PMD_AF_PACKET || cfg->pmd == HOST_PMD_AF_XDP) {
		/* Users allocate QPNs through the broker, which trusts only its own table. */
		ret = host_qpn_protect(cfg->netdev, err, sizeof(err));
		if (!ret)
			ret = host_broker_start(cfg, group, err, sizeof(err));
		if (ret) {
			fail("add", "%s", err);
			host_link_cfg_remove(cfg->name);
			goto err_remove_filter;
		}
	}
	return 0;

err_remove_filter:
	if (filter && !netdev_shared(cfg->name, cfg->netdev))
		host_kernel_filter_remove(cfg->netdev, err, sizeof(err));
err_remove:
	prov_sysfs_remove(root, cfg->name, cfg->uverbs);
err_remove_node:
	devnode_remove(cfg->uverbs);
	return 1;
}

static int link_add(int argc, char **argv)
{
	struct host_link_cfg cfg = { 0 }, old;
	struct wire_gid_entry gids[WIRE_GID_TABLE_LEN];
	struct host_link_info link;
	char err[256];
	const char *group = NULL;
	int lock, ret;

	if (argc < 5 || strcmp(argv[3], "netdev"))
		return link_usage(stderr);
	if (!valid_name(argv[2]))
		return fail("add", "bad device name '%s': use up to %d letters, digits, '_', '-', '.'",
			    argv[2], IBV_SYSFS_NAME_MAX - 1);
	snprintf(cfg.name, sizeof(cfg.name), "%s", argv[2]);
	if (strlen(argv[4]) >= sizeof(cfg.netdev))
		return fail("add", "netdev name '%s' is too long", argv[4]);
	snprintf(cfg.netdev, sizeof(cfg.netdev), "%s", argv[4]);
	cfg.pmd = HOST_PMD_AF_PACKET;
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
		} else if (!strcmp(argv[i], "--group") && i + 1 < argc) {
			group = argv[++i];
		} else if (host_link_cfg_is_tunable(argv[i]) && i + 1 < argc) {
			const char *why = "";

			if (host_link_cfg_set(&cfg, argv[i], argv[i + 1], &why))
				return fail("add", "bad %s '%s': %s", argv[i], argv[i + 1], why);
			i++;
		} else {
			return link_usage(stderr);
		}
	}

	if (group && cfg.pmd != HOST_PMD_AF_PACKET && cfg.pmd != HOST_PMD_AF_XDP)
		return fail("add", "--group is for af_packet and af_xdp devices only (those with a broker)");

	/* The link as the dataplane will see it (a pci or pcap IFACE only labels the device). */
	ret = host_link_query(&cfg, &link, err, sizeof(err));
	if (ret == -ENODEV)
		return fail("add", "netdev %s does not exist (see `ip link show`)", cfg.netdev);
	if (ret)
		return fail("add", "%s", err);
	if (!link.up && netdev_admin_up(cfg.netdev) == 0)
		return fail("add", "netdev %s is down: run `ip link set %s up` first", cfg.netdev,
			    cfg.netdev);
	/* The kernel reports carrier up to a second after `ip link set up` (linkwatch). */
	for (int i = 0; i < 40 && !link.up; i++) {
		usleep(50000);
		if (host_link_query(&cfg, &link, err, sizeof(err)))
			break;
	}
	if (!link.up)
		return fail("add", "netdev %s has no carrier: check its cable or peer", cfg.netdev);
	if (geteuid() != 0)
		return fail("add", "permission denied: creating %s/uverbsN and %s needs root "
			    "(run it with sudo)", DEV_DIR, host_run_dir());
	if (!host_link_cfg_load(cfg.name, &old, err, sizeof(err)))
		return fail("add", "device %s exists (on netdev %s); remove it with "
			    "`uroce link del %s`", cfg.name, old.netdev, cfg.name);

	ret = host_gid_table(&cfg, gids, WIRE_GID_TABLE_LEN, err, sizeof(err));
	if (ret < 0)
		return fail("add", "%s", err);
	lock = owners_lock();
	if (lock < 0)
		return fail("add", "cannot lock %s: %s", OWNERS_DIR, strerror(-lock));
	ret = link_create(&cfg, link.mac, gids, group);
	close(lock);
	return ret;
}

static int link_del(int argc, char **argv)
{
	struct host_link_cfg cfg;
	char root[PATH_MAX], err[256];
	int ret;

	if (argc != 3)
		return link_usage(stderr);
	if (host_link_cfg_load(argv[2], &cfg, err, sizeof(err)))
		return fail("del", "no device %s (`uroce link show` lists them)", argv[2]);
	if (geteuid() != 0)
		return fail("del", "permission denied: removing %s/%s needs root (run it with sudo)",
			    DEV_DIR, cfg.uverbs);
	host_broker_stop(cfg.name);
	sysfs_root(root, sizeof(root));
	ret = prov_sysfs_remove(root, cfg.name, cfg.uverbs);
	devnode_remove(cfg.uverbs);
	if (ret)
		return fail("del", "cannot remove the sysfs tree of %s: %s", cfg.name,
			    strerror(-ret));
	ret = host_link_cfg_remove(cfg.name);
	if (ret)
		return fail("del", "cannot remove the configuration of %s: %s", cfg.name,
			    strerror(-ret));
	/* A netdev that is gone took its filter with it. */
	if (kernel_filtered(cfg.pmd) && if_nametoindex(cfg.netdev) &&
	    !netdev_shared(cfg.name, cfg.netdev) &&
	    host_kernel_filter_remove(cfg.netdev, err, sizeof(err)))
		return fail("del", "%s", err);
	return 0;
}

static int link_refresh(int argc, char **argv)
{
	struct wire_gid_entry gids[WIRE_GID_TABLE_LEN];
	struct host_link_cfg cfg;
	char path[PATH_MAX], err[256];
	int ret;

	if (argc != 3)
		return link_usage(stderr);
	if (host_link_cfg_load(argv[2], &cfg, err, sizeof(err)))
		return fail("refresh", "no device %s (`uroce link show` lists them)", argv[2]);
	ret = host_gid_table(&cfg, gids, WIRE_GID_TABLE_LEN, err, sizeof(err));
	if (ret < 0)
		return fail("refresh", "%s", err);
	if (ibdev_path(path, sizeof(path), cfg.name))
		return fail("refresh", "run directory path is too long");
	ret = prov_sysfs_write_gids(path, gids, WIRE_GID_TABLE_LEN, ndev_of(&cfg));
	if (ret == -EACCES || ret == -EPERM)
		return fail("refresh", "permission denied writing %s (run it with sudo)", path);
	if (ret)
		return fail("refresh", "cannot write %s: %s", path, strerror(-ret));
	return 0;
}

/* ---- show ---- */

static const char *gid_text(const struct wire_gid_entry *e, char *out, size_t len)
{
	return inet_ntop(AF_INET6, e->gid, out, (socklen_t)len) ? out : "?";
}

static void show_one(const struct host_link_cfg *cfg, bool json, bool first)
{
	struct wire_gid_entry gids[WIRE_GID_TABLE_LEN];
	struct host_link_info link = { 0 };
	char err[256];
	bool active = !host_link_query(cfg, &link, err, sizeof(err)) && link.up;
	uint32_t mtu = link.mtu;
	char path[PATH_MAX], gid[INET6_ADDRSTRLEN];
	bool first_gid = true;

	if (ibdev_path(path, sizeof(path), cfg->name) ||
	    prov_sysfs_read_gids(path, gids, WIRE_GID_TABLE_LEN))
		memset(gids, 0, sizeof(gids));

	if (!json) {
		printf("link %s/1 state %s physical_state %s netdev %s pmd %s mtu %u uverbs %s\n",
		       cfg->name, active ? "ACTIVE" : "DOWN", active ? "LINK_UP" : "DISABLED",
		       cfg->netdev, host_pmd_name(cfg->pmd), mtu, cfg->uverbs);
		for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++) {
			if (!gids[i].valid)
				continue;
			printf("    gid %u %s %s\n", i, gid_text(&gids[i], gid, sizeof(gid)),
			       gids[i].type == WIRE_GID_ROCE_V2 ? "RoCE v2" : "RoCE v1");
		}
		return;
	}
	printf("%s{\"ifname\":\"%s\",\"port\":1,\"state\":\"%s\",\"physical_state\":\"%s\","
	       "\"netdev\":\"%s\",\"pmd\":\"%s\",\"pmd_args\":\"%s\",\"mtu\":%u,\"uverbs\":\"%s\","
	       "\"gids\":[",
	       first ? "" : ",", cfg->name, active ? "ACTIVE" : "DOWN",
	       active ? "LINK_UP" : "DISABLED", cfg->netdev, host_pmd_name(cfg->pmd),
	       cfg->pmd_args, mtu, cfg->uverbs);
	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++) {
		if (!gids[i].valid)
			continue;
		printf("%s{\"index\":%u,\"gid\":\"%s\",\"type\":\"%s\"}", first_gid ? "" : ",", i,
		       gid_text(&gids[i], gid, sizeof(gid)), gids[i].type == WIRE_GID_ROCE_V2 ? "RoCE v2" : "RoCE v1");
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
		return fail("show", "cannot list %s/devices: %s", host_run_dir(), strerror(-n));
	if (json)
		printf("[");
	for (int i = 0; i < n; i++) {
		struct host_link_cfg cfg;

		if ((!only || !strcmp(only, names[i])) &&
		    !host_link_cfg_load(names[i], &cfg, err, sizeof(err))) {
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

/*
 * A namespace deleted and created again under the same name finds the run
 * directory of the old one (host_run_dir_stale()): its devices belong to
 * nobody.  Give back their /dev/infiniband nodes, which are the host's, and
 * remove the directory, so the new namespace starts clean.
 */
void link_purge_stale(void)
{
	char **names;
	int n;

	if (!host_run_dir_stale() || geteuid() != 0)
		return;
	n = list_devices(&names);
	for (int i = 0; i < n; i++) {
		struct host_link_cfg cfg;
		char err[256];

		if (!host_link_cfg_load(names[i], &cfg, err, sizeof(err)))
			devnode_remove(cfg.uverbs);
		host_broker_stop(names[i]);
		free(names[i]);
	}
	if (n > 0)
		free(names);
	if (host_run_dir_reset() == 0)
		fprintf(stderr, "uroce: removed %s: its devices were made in a network namespace "
			"of the same name that was deleted since\n", host_run_dir());
}

int cmd_link(int argc, char **argv)
{
	if (argc < 2)
		return link_usage(stderr);
	link_purge_stale();
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
