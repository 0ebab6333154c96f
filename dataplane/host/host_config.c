// SPDX-License-Identifier: MIT
/* Device configuration files: /run/uroce/devices/NAME.conf, written by `uroce link add`. */
#include <arpa/inet.h>
#include <dirent.h>
#include <limits.h>
#include <pthread.h>
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uroce/config.h"
#include "uroce/wire.h"
#include "host_qpn.h"

static const char *const pmd_names[] = {
	[HOST_PMD_AF_PACKET]	= "af_packet",
	[HOST_PMD_AF_XDP]	= "af_xdp",
	[HOST_PMD_PCI]		= "pci",
	[HOST_PMD_MEMIF]	= "memif",
	[HOST_PMD_PCAP]	= "pcap",
	[HOST_PMD_TAP]		= "tap",
};

bool host_netns_name(char *name, size_t len)
{
	struct stat self, st;
	struct dirent *e;
	bool found = false;
	DIR *d;

	if (stat("/proc/self/ns/net", &self) || !(d = opendir(UROCE_NETNS_DIR)))
		return false;
	while (!found && (e = readdir(d))) {
		char path[PATH_MAX];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", UROCE_NETNS_DIR, e->d_name);
		if (!stat(path, &st) && st.st_dev == self.st_dev && st.st_ino == self.st_ino)
			found = (size_t)snprintf(name, len, "%s", e->d_name) < len;
	}
	closedir(d);
	return found;
}

static char per_netns_dir[PATH_MAX];

/* Devices are per network namespace, as netdevs are: /run/uroce/netns/NAME. */
static void find_netns_run_dir(void)
{
	char name[NAME_MAX + 1];

	if (host_netns_name(name, sizeof(name)))
		snprintf(per_netns_dir, sizeof(per_netns_dir), "%s/netns/%s",
			 UROCE_RUN_DIR_DEFAULT, name);
}

static void pthread_once_run_dir(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, find_netns_run_dir);
}

const char *host_run_dir(void)
{
	const char *dir = getenv("UROCE_RUN_DIR");

	if (dir && *dir)
		return dir;
	pthread_once_run_dir();
	return per_netns_dir[0] ? per_netns_dir : UROCE_RUN_DIR_DEFAULT;
}

/*
 * The network namespace's cookie (SO_NETNS_COOKIE): unlike its inode number,
 * never given to another namespace while the host runs.
 */
static int netns_cookie(uint64_t *out)
{
	socklen_t len = sizeof(*out);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0), ret = 0;

	if (fd < 0)
		return -errno;
	if (getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, out, &len))
		ret = -errno;
	close(fd);
	return ret;
}

/* RUN_DIR/netns: the cookie of the namespace a per-namespace run directory was made for. */
static int netns_stamp_path(char *buf, size_t len)
{
	int n;

	if (getenv("UROCE_RUN_DIR") && *getenv("UROCE_RUN_DIR"))
		return -ENOENT;
	pthread_once_run_dir();
	if (!per_netns_dir[0])
		return -ENOENT;
	n = snprintf(buf, len, "%s/netns", per_netns_dir);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int host_run_dir_stale(void)
{
	char path[PATH_MAX];
	unsigned long long was;
	uint64_t now;
	FILE *f;
	int ret;

	if (netns_stamp_path(path, sizeof(path)) || netns_cookie(&now))
		return 0;
	f = fopen(path, "re");
	if (!f)
		return 0;
	ret = fscanf(f, "%llu", &was) == 1 && was != now;
	fclose(f);
	return ret;
}

static int stamp_netns(void)
{
	char path[PATH_MAX];
	uint64_t now;
	FILE *f;

	if (netns_stamp_path(path, sizeof(path)) || netns_cookie(&now))
		return 0;
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f, "%llu\n", (unsigned long long)now);
	return fclose(f) ? -errno : 0;
}

static int remove_tree(const char *path)
{
	struct dirent *e;
	DIR *d = opendir(path);
	int ret = 0;

	if (!d)
		return errno == ENOTDIR ? (unlink(path) ? -errno : 0) : -errno;
	while ((e = readdir(d))) {
		char sub[PATH_MAX];
		struct stat st;

		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name) >= sizeof(sub)) {
			ret = -ENAMETOOLONG;
			continue;
		}
		if (lstat(sub, &st) == 0 && S_ISDIR(st.st_mode)) {
			int r = remove_tree(sub);

			if (r)
				ret = r;
		} else if (unlink(sub)) {
			ret = -errno;
		}
	}
	closedir(d);
	return rmdir(path) ? -errno : ret;
}

int host_run_dir_reset(void)
{
	if (!host_run_dir_stale())
		return -EBUSY;
	return remove_tree(per_netns_dir);
}

const char *host_pmd_name(enum host_pmd pmd)
{
	if ((unsigned)pmd >= sizeof(pmd_names) / sizeof(pmd_names[0]))
		return "?";
	return pmd_names[pmd];
}

int host_pmd_parse(const char *s, enum host_pmd *out)
{
	for (unsigned i = 0; i < sizeof(pmd_names) / sizeof(pmd_names[0]); i++)
		if (!strcmp(s, pmd_names[i])) {
			*out = (enum host_pmd)i;
			return 0;
		}
	return -EINVAL;
}

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int ret, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* A device name becomes a file name: letters, digits, '_', '-', '.', not starting with '.'. */
static bool name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n >= sizeof(((struct host_link_cfg *)0)->name) || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)name[i]) && !strchr("_-.", name[i]))
			return false;
	return true;
}

int host_link_cfg_path(const char *name, char *buf, size_t len)
{
	int n = snprintf(buf, len, "%s/devices/%s.conf", host_run_dir(), name);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int host_link_memif_peer(const struct host_link_cfg *cfg, char *peer, size_t len)
{
	char dir[PATH_MAX];
	struct dirent *e;
	int ret = -ENOENT;
	DIR *d;

	if (cfg->pmd != HOST_PMD_MEMIF)
		return -EINVAL;
	if ((size_t)snprintf(dir, sizeof(dir), "%s/devices", host_run_dir()) >= sizeof(dir) ||
	    !(d = opendir(dir)))
		return -ENOENT;
	while (ret && (e = readdir(d))) {
		struct host_link_cfg other;
		char path[PATH_MAX], why[256];
		size_t n = strlen(e->d_name);

		if (n < 6 || strcmp(e->d_name + n - 5, ".conf") ||
		    (size_t)snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= sizeof(path) ||
		    host_link_cfg_read(path, &other, why, sizeof(why)))
			continue;
		n -= 5;		/* the device's name: the file's, without ".conf" */
		if (other.pmd != HOST_PMD_MEMIF || strcmp(other.netdev, cfg->netdev) ||
		    (strlen(cfg->name) == n && !strncmp(e->d_name, cfg->name, n)))
			continue;
		ret = n < len ? 0 : -ENAMETOOLONG;
		if (!ret)
			snprintf(peer, len, "%.*s", (int)n, e->d_name);
	}
	closedir(d);
	return ret;
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5],
		   &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xff)
			return -EINVAL;
		mac[i] = (uint8_t)v[i];
	}
	return 0;
}

static char *trim(char *s)
{
	char *end;

	while (isspace((unsigned char)*s))
		s++;
	end = s + strlen(s);
	while (end > s && isspace((unsigned char)end[-1]))
		*--end = '\0';
	return s;
}

static int copy_value(char *dst, size_t cap, const char *v)
{
	if (strlen(v) >= cap)
		return -ENAMETOOLONG;
	strcpy(dst, v);
	return 0;
}

/* A decimal number in [@min, @max] and nothing after it. */
static int parse_uint(const char *val, unsigned long min, unsigned long max, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(val, &end, 10);

	if (*val == '\0' || *val == '-' || *end || v < min || v > max)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

/* "on" or "off" into @off. */
static int parse_off(const char *val, bool *off)
{
	if (strcmp(val, "on") && strcmp(val, "off"))
		return -EINVAL;
	*off = !strcmp(val, "off");
	return 0;
}

/* DCQCN's parameters: name, bounds, the message for a bad value. */
static const struct dcqcn_param {
	const char	*name;
	size_t		off;
	uint32_t	min, max;
	const char	*why;
} dcqcn_params[] = {
#define DCQCN_PARAM(name, def, min, max, what)					\
	{ #name, offsetof(struct dcqcn_cfg, name), min, max,			\
	  #name " must be a number from " #min " to " #max " (" what ")" },
	DCQCN_PARAMS(DCQCN_PARAM)
#undef DCQCN_PARAM
};

static const struct dcqcn_param *dcqcn_param(const char *key)
{
	for (size_t i = 0; i < sizeof(dcqcn_params) / sizeof(dcqcn_params[0]); i++)
		if (!strcmp(key, dcqcn_params[i].name))
			return &dcqcn_params[i];
	return NULL;
}

static uint32_t *dcqcn_field(struct dcqcn_cfg *c, const struct dcqcn_param *p)
{
	return (uint32_t *)(void *)((char *)c + p->off);
}

bool host_link_cfg_is_tunable(const char *key)
{
	static const char *const keys[] = {
		"rto_min_us", "restart_window", "inflight", "adaptive", "tlp", "dcqcn",
		"selective_repeat", "user_qpns",
	};

	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++)
		if (!strcmp(key, keys[i]))
			return true;
	return dcqcn_param(key) != NULL;
}

int host_link_cfg_set(struct host_link_cfg *cfg, const char *key, const char *val,
		      const char **why)
{
	const struct dcqcn_param *param;
	
	if (!strcmp(key, "name")) {
		*why = "name too long";
		return copy_value(cfg->name, sizeof(cfg->name), val);
	}
	if (!strcmp(key, "netdev")) {
		*why = "interface name longer than 15 characters";
		return copy_value(cfg->netdev, sizeof(cfg->netdev), val);
	}
	if (!strcmp(key, "pmd")) {
		*why = "pmd must be af_packet, af_xdp, pci, memif, pcap or tap";
		return host_pmd_parse(val, &cfg->pmd);
	}
	if (!strcmp(key, "pmd_args")) {
		*why = "pmd_args too long";
		return copy_value(cfg->pmd_args, sizeof(cfg->pmd_args), val);
	}
	if (!strcmp(key, "eal_args")) {
		*why = "eal_args too long";
		return copy_value(cfg->eal_args, sizeof(cfg->eal_args), val);
	}
	if (!strcmp(key, "uverbs")) {
		*why = "uverbs name too long";
		return copy_value(cfg->uverbs, sizeof(cfg->uverbs), val);
	}
	if (!strcmp(key, "mtu")) {
		*why = "mtu must be a number from 576 to 9702";
		return parse_uint(val, 576, 9702, &cfg->mtu);
	}
	if (!strcmp(key, "rto_min_us")) {
		*why = "rto_min_us must be a number of microseconds from 1 to 1000000";
		return parse_uint(val, 1, 1000000, &cfg->rto_min_us);
	}
	if (!strcmp(key, "restart_window")) {
		*why = "restart_window must be a number of PSNs from 1 to 256";
		return parse_uint(val, 1, 256, &cfg->restart_window);
	}
	if (!strcmp(key, "inflight")) {
		*why = "inflight must be a number of PSNs from 16 to 1048576";
		return parse_uint(val, 16, 1048576, &cfg->inflight);
	}
	if (!strcmp(key, "adaptive")) {
		*why = "adaptive must be on or off";
		return parse_off(val, &cfg->no_adaptive_rto);
	}
	if (!strcmp(key, "tlp")) {
		*why = "tlp must be on or off";
		return parse_off(val, &cfg->no_tail_probe);
	}
	if (!strcmp(key, "user_qpns")) {
		*why = "user_qpns must be a number of QPNs from 1 to 65536";
		return parse_uint(val, 1, HOST_QPN_SLOTS, &cfg->user_qpns);
	}
	if (!strcmp(key, "direct")) {
		*why = "direct must be on or off";
		return parse_off(val, &cfg->no_direct);
	}
	if (!strcmp(key, "selective_repeat")) {
		bool off;
		int ret;

		*why = "selective_repeat must be on or off";
		ret = parse_off(val, &off);
		cfg->selective_repeat = !ret && !off;
		return ret;
	}
	if (!strcmp(key, "dcqcn")) {
		bool off;
		int ret;

		*why = "dcqcn must be on or off";
		ret = parse_off(val, &off);
		cfg->dcqcn.on = !ret && !off;
		return ret;
	}
	param = dcqcn_param(key);
	if (param) {
		*why = param->why;
		return parse_uint(val, param->min, param->max, dcqcn_field(&cfg->dcqcn, param));
	}
	if (!strcmp(key, "mac")) {
		*why = "mac must look like 02:00:00:00:00:01";
		return parse_mac(val, cfg->mac);
	}
	if (!strcmp(key, "ipv4") || !strcmp(key, "ipv6")) {
		uint8_t *gid;

		*why = "more than 8 addresses";
		if (cfg->n_addrs >= HOST_MAX_ADDRS)
			return -E2BIG;
		gid = cfg->addrs[cfg->n_addrs];
		memset(gid, 0, 16);
		if (key[3] == '4') {
			*why = "ipv4 must be a dotted quad such as 10.0.0.1";
			gid[10] = gid[11] = 0xff;
			if (inet_pton(AF_INET, val, gid + 12) != 1)
				return -EINVAL;
		} else {
			*why = "ipv6 must be an IPv6 address such as fd00::1";
			if (inet_pton(AF_INET6, val, gid) != 1 || wire_gid_is_v4mapped(gid))
				return -EINVAL;
		}
		cfg->n_addrs++;
		return 0;
	}
	*why = "unknown key (known: name netdev pmd pmd_args eal_args mtu mac ipv4 ipv6 uverbs "
	       "rto_min_us restart_window inflight adaptive tlp dcqcn selective_repeat user_qpns, and DCQCN's "
	       "rpg_* dce_tcp_* rate_reduce_monitor_period initial_alpha_value line_rate)";
	return -EINVAL;
}

int host_link_cfg_read(const char *path, struct host_link_cfg *cfg, char *err, size_t errlen)
{
	char line[1024];
	unsigned lineno = 0;
	FILE *f;
	int ret;

	f = fopen(path, "re");
	if (!f) {
		ret = -errno;
		return fail(err, errlen, ret, "cannot read %s: %s", path, strerror(-ret));
	}
	memset(cfg, 0, sizeof(*cfg));
	cfg->pmd = HOST_PMD_AF_PACKET;
	ret = 0;
	while (fgets(line, sizeof(line), f)) {
		const char *why = "";
		char *s, *eq, *key, *val;

		lineno++;
		if (!strchr(line, '\n') && !feof(f)) {
			ret = fail(err, errlen, -EINVAL, "%s:%u: line too long", path, lineno);
			break;
		}
		s = trim(line);
		if (*s == '\0' || *s == '#')
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			ret = fail(err, errlen, -EINVAL, "%s:%u: expected 'key = value'", path,
				   lineno);
			break;
		}
		*eq = '\0';
		key = trim(s);
		val = trim(eq + 1);
		ret = host_link_cfg_set(cfg, key, val, &why);
		if (ret) {
			ret = fail(err, errlen, ret, "%s:%u: %s: %s", path, lineno, key, why);
			break;
		}
	}
	if (!ret && ferror(f))
		ret = fail(err, errlen, -EIO, "cannot read %s", path);
	fclose(f);
	if (!ret && cfg->netdev[0] == '\0')
		ret = fail(err, errlen, -EINVAL, "%s: no netdev line", path);
	return ret;
}

int host_link_cfg_load(const char *name, struct host_link_cfg *cfg, char *err, size_t errlen)
{
	char path[512];
	int ret;

	if (!name_ok(name))
		return fail(err, errlen, -EINVAL,
			    "'%s' is not a valid device name (letters, digits, '_', '-', '.')",
			    name);
	if (host_link_cfg_path(name, path, sizeof(path)))
		return fail(err, errlen, -ENAMETOOLONG, "run directory path too long: %s",
			    host_run_dir());
	ret = host_link_cfg_read(path, cfg, err, errlen);
	if (ret == -ENOENT)
		return fail(err, errlen, ret,
			    "no device %s (%s missing): create it with `uroce link add %s netdev IFACE`",
			    name, path, name);
	if (ret)
		return ret;
	if (cfg->name[0] == '\0')
		strcpy(cfg->name, name);
	if (strcmp(cfg->name, name))
		return fail(err, errlen, -EINVAL, "%s names device '%s', expected '%s'", path,
			    cfg->name, name);
	return 0;
}

static int mkdir_p(const char *dir)
{
	char buf[512];

	if (strlen(dir) >= sizeof(buf))
		return -ENAMETOOLONG;
	strcpy(buf, dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Values are written back as one line each: no newline may hide inside. */
static bool value_ok(const char *v)
{
	return !strpbrk(v, "\n\r");
}

int host_link_cfg_save(const struct host_link_cfg *cfg, char *err, size_t errlen)
{
	char dir[512], path[512], tmp[560], addr[INET6_ADDRSTRLEN];
	static const uint8_t zero_mac[6];
	FILE *f;
	int ret;

	if (!name_ok(cfg->name))
		return fail(err, errlen, -EINVAL,
			    "'%s' is not a valid device name (letters, digits, '_', '-', '.')",
			    cfg->name);
	if (cfg->netdev[0] == '\0' || !value_ok(cfg->netdev) || !value_ok(cfg->pmd_args) ||
	    !value_ok(cfg->eal_args) || !value_ok(cfg->uverbs))
		return fail(err, errlen, -EINVAL, "%s: empty netdev or a value with a newline",
			    cfg->name);
	if (cfg->n_addrs > HOST_MAX_ADDRS)
		return fail(err, errlen, -EINVAL, "%s: more than %d addresses", cfg->name,
			    HOST_MAX_ADDRS);
	snprintf(dir, sizeof(dir), "%s/devices", host_run_dir());
	ret = mkdir_p(dir);
	if (ret)
		return fail(err, errlen, ret, "cannot create %s: %s%s", dir, strerror(-ret),
			    ret == -EACCES || ret == -EPERM ? " (run as root)" : "");
	/* Shared by every verbs process, whoever runs it: sticky and world-writable like /tmp. */
	for (const char *const *sub = (const char *const[]){ "qpn", "stats", "loop", "cm", NULL };
	     *sub; sub++) {
		snprintf(tmp, sizeof(tmp), "%s/%s", host_run_dir(), *sub);
		if (mkdir(tmp, 01777) == 0)
			chmod(tmp, 01777);
	}
	ret = stamp_netns();
	if (ret)
		return fail(err, errlen, ret, "cannot write %s/netns: %s", host_run_dir(),
			    strerror(-ret));
	if (host_link_cfg_path(cfg->name, path, sizeof(path)))
		return fail(err, errlen, -ENAMETOOLONG, "run directory path too long");
	snprintf(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid());
	f = fopen(tmp, "we");
	if (!f) {
		ret = -errno;
		return fail(err, errlen, ret, "cannot write %s: %s%s", tmp, strerror(-ret),
			    ret == -EACCES || ret == -EPERM ? " (run as root)" : "");
	}
	fprintf(f, "# uroce device configuration (written by uroce link add)\n");
	fprintf(f, "name = %s\nnetdev = %s\npmd = %s\n", cfg->name, cfg->netdev,
		host_pmd_name(cfg->pmd));
	if (cfg->pmd_args[0])
		fprintf(f, "pmd_args = %s\n", cfg->pmd_args);
	if (cfg->eal_args[0])
		fprintf(f, "eal_args = %s\n", cfg->eal_args);
	if (cfg->mtu)
		fprintf(f, "mtu = %u\n", cfg->mtu);
	if (memcmp(cfg->mac, zero_mac, 6))
		fprintf(f, "mac = %02x:%02x:%02x:%02x:%02x:%02x\n", cfg->mac[0], cfg->mac[1],
			cfg->mac[2], cfg->mac[3], cfg->mac[4], cfg->mac[5]);
	for (unsigned i = 0; i < cfg->n_addrs; i++) {
		if (wire_gid_is_v4mapped(cfg->addrs[i]))
			fprintf(f, "ipv4 = %s\n",
				inet_ntop(AF_INET, cfg->addrs[i] + 12, addr, sizeof(addr)));
		else
			fprintf(f, "ipv6 = %s\n",
				inet_ntop(AF_INET6, cfg->addrs[i], addr, sizeof(addr)));
	}
	if (cfg->uverbs[0])
		fprintf(f, "uverbs = %s\n", cfg->uverbs);
	if (cfg->rto_min_us)
		fprintf(f, "rto_min_us = %u\n", cfg->rto_min_us);
	if (cfg->restart_window)
		fprintf(f, "restart_window = %u\n", cfg->restart_window);
	if (cfg->inflight)
		fprintf(f, "inflight = %u\n", cfg->inflight);
	if (cfg->no_adaptive_rto)
		fprintf(f, "adaptive = off\n");
	if (cfg->no_tail_probe)
		fprintf(f, "tlp = off\n");
	if (cfg->no_direct)
		fprintf(f, "direct = off\n");
	if (cfg->selective_repeat)
		fprintf(f, "selective_repeat = on\n");
	if (cfg->user_qpns)
		fprintf(f, "user_qpns = %u\n", cfg->user_qpns);
	if (cfg->dcqcn.on)
		fprintf(f, "dcqcn = on\n");
	for (size_t i = 0; i < sizeof(dcqcn_params) / sizeof(dcqcn_params[0]); i++) {
		uint32_t v = *dcqcn_field((struct dcqcn_cfg *)&cfg->dcqcn, &dcqcn_params[i]);

		if (v)
			fprintf(f, "%s = %u\n", dcqcn_params[i].name, v);
	}
	if (fflush(f) || fsync(fileno(f))) {
		ret = -errno;
		fclose(f);
		unlink(tmp);
		return fail(err, errlen, ret, "cannot write %s: %s", tmp, strerror(-ret));
	}
	fclose(f);
	if (rename(tmp, path)) {
		ret = -errno;
		unlink(tmp);
		return fail(err, errlen, ret, "cannot rename %s to %s: %s", tmp, path,
			    strerror(-ret));
	}
	return 0;
}

int host_link_cfg_remove(const char *name)
{
	char path[512];

	if (!name_ok(name))
		return -EINVAL;
	if (host_link_cfg_path(name, path, sizeof(path)))
		return -ENAMETOOLONG;
	return unlink(path) ? -errno : 0;
}
