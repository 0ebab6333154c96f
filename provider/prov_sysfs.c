// SPDX-License-Identifier: MIT
/* Writing and reading the sysfs tree that describes uroce devices to libibverbs. */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uroce/sysfs.h"

#define PROV_GID_TYPE_V1	"IB/RoCE v1"
#define PROV_GID_TYPE_V2	"RoCE v2"

uint64_t prov_node_guid(const uint8_t mac[6])
{
	return (uint64_t)(mac[0] ^ 0x02) << 56 | (uint64_t)mac[1] << 48 |
	       (uint64_t)mac[2] << 40 | 0xffull << 32 | 0xfeull << 24 |
	       (uint64_t)mac[3] << 16 | (uint64_t)mac[4] << 8 | mac[5];
}

void prov_sysfs_format_gid(const uint8_t gid[16], char *out)
{
	for (int i = 0; i < 8; i++)
		sprintf(out + i * 5, "%02x%02x%s", gid[2 * i], gid[2 * i + 1], i < 7 ? ":" : "");
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int prov_sysfs_parse_gid(const char *s, uint8_t gid[16])
{
	for (int i = 0; i < 8; i++) {
		unsigned v = 0;

		for (int j = 0; j < 4; j++) {
			int d = hex_digit(s[i * 5 + j]);

			if (d < 0)
				return -EINVAL;
			v = v << 4 | (unsigned)d;
		}
		if (s[i * 5 + 4] != (i < 7 ? ':' : '\0') &&
		    !(i == 7 && s[i * 5 + 4] == '\n'))
			return -EINVAL;
		gid[2 * i] = (uint8_t)(v >> 8);
		gid[2 * i + 1] = (uint8_t)v;
	}
	return 0;
}

bool prov_gid_tables_equal(const struct wire_gid_entry *a, const struct wire_gid_entry *b, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (a[i].valid != b[i].valid)
			return false;
		if (a[i].valid && (a[i].type != b[i].type || memcmp(a[i].gid, b[i].gid, 16)))
			return false;
	}
	return true;
}

static int vpath(char *buf, size_t len, const char *fmt, va_list ap)
{
	int n = vsnprintf(buf, len, fmt, ap);

	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static int path_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(buf, len, fmt, ap);
	va_end(ap);
	return ret;
}

/* mkdir -p, 0755. */
static int make_dirs(const char *path)
{
	char tmp[PATH_MAX];
	size_t len = strlen(path);

	if (len >= sizeof(tmp))
		return -ENAMETOOLONG;
	memcpy(tmp, path, len + 1);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(tmp, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

/* Write @text to @path through a temporary file and rename(), creating the directory. */
static int write_file(const char *path, const char *text)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	size_t len = strlen(text);
	char *slash;
	int fd, ret;

	if (path_fmt(tmp, sizeof(tmp), "%s.%d.tmp", path, (int)getpid()) ||
	    path_fmt(dir, sizeof(dir), "%s", path))
		return -ENAMETOOLONG;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		ret = make_dirs(dir);
		if (ret)
			return ret;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	if (write(fd, text, len) != (ssize_t)len) {
		ret = errno ? -errno : -EIO;
		close(fd);
		unlink(tmp);
		return ret;
	}
	if (close(fd) || rename(tmp, path)) {
		ret = -errno;
		unlink(tmp);
		return ret;
	}
	return 0;
}

static int write_fmt(const char *text, const char *fmt, ...)
{
	char path[PATH_MAX];
	va_list ap;
	int ret;

	va_start(ap, fmt);
	ret = vpath(path, sizeof(path), fmt, ap);
	va_end(ap);
	return ret ? ret : write_file(path, text);
}

int prov_sysfs_write_gids(const char *ibdev_path, const struct wire_gid_entry *gids, unsigned n,
			  const char *netdev)
{
	char text[64], path[PATH_MAX];
	int ret;

	for (unsigned i = 0; i < n; i++) {
		static const uint8_t zero[16];
		const struct wire_gid_entry *e = &gids[i];

		prov_sysfs_format_gid(e->valid ? e->gid : zero, text);
		strcat(text, "\n");
		ret = write_fmt(text, "%s/ports/1/gids/%u", ibdev_path, i);
		if (ret)
			return ret;
		/*
		 * The kernel fails reads of an empty entry's type; a regular
		 * file cannot, and "IB/RoCE v1" with a zero GID makes
		 * libibverbs answer ENODATA for it exactly as with the kernel.
		 */
		ret = write_fmt(e->valid && e->type == WIRE_GID_ROCE_V2 ? PROV_GID_TYPE_V2 "\n" :
				PROV_GID_TYPE_V1 "\n",
				"%s/ports/1/gid_attrs/types/%u", ibdev_path, i);
		if (ret)
			return ret;
		ret = path_fmt(path, sizeof(path), "%s/ports/1/gid_attrs/ndevs/%u", ibdev_path, i);
		if (ret)
			return ret;
		if (e->valid && netdev && *netdev) {
			snprintf(text, sizeof(text), "%s\n", netdev);
			ret = write_file(path, text);
			if (ret)
				return ret;
		} else if (unlink(path) && errno != ENOENT) {
			return -errno;
		}
	}
	return 0;
}

static int read_small(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	return (int)n;
}

int prov_sysfs_read_gids(const char *ibdev_path, struct wire_gid_entry *gids, unsigned n)
{
	char path[PATH_MAX], text[64];
	int ret;

	for (unsigned i = 0; i < n; i++) {
		struct wire_gid_entry *e = &gids[i];
		static const uint8_t zero[16];

		memset(e, 0, sizeof(*e));
		ret = path_fmt(path, sizeof(path), "%s/ports/1/gids/%u", ibdev_path, i);
		if (ret)
			return ret;
		ret = read_small(path, text, sizeof(text));
		if (ret == -ENOENT)
			continue;
		if (ret < 0)
			return ret;
		if (prov_sysfs_parse_gid(text, e->gid))
			return -EINVAL;
		e->valid = memcmp(e->gid, zero, 16) != 0;
		if (!e->valid)
			continue;
		ret = path_fmt(path, sizeof(path), "%s/ports/1/gid_attrs/types/%u", ibdev_path, i);
		if (ret)
			return ret;
		ret = read_small(path, text, sizeof(text));
		if (ret < 0)
			return ret;
		e->type = strncmp(text, PROV_GID_TYPE_V2, strlen(PROV_GID_TYPE_V2)) == 0 ?
			  WIRE_GID_ROCE_V2 : WIRE_GID_ROCE_V1;
	}
	return 0;
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	if (flag == FTW_DP ? rmdir(path) : unlink(path))
		return errno == ENOENT ? 0 : -1;
	return 0;
}

static int remove_tree(const char *path)
{
	if (nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS) && errno != ENOENT)
		return -errno;
	return 0;
}

/* True when @path is a directory holding nothing but entries named @allowed. */
static bool dir_holds_only(const char *path, const char *allowed)
{
	DIR *dir = opendir(path);
	struct dirent *de;
	bool only = true;

	if (!dir)
		return false;
	while ((de = readdir(dir)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..") &&
		    (!allowed || strcmp(de->d_name, allowed)))
			only = false;
	closedir(dir);
	return only;
}

int prov_sysfs_remove(const char *root, const char *ibdev, const char *uverbs)
{
	char path[PATH_MAX], abi[PATH_MAX];
	int ret = 0, r;

	if (!path_fmt(path, sizeof(path), "%s/class/infiniband/%s", root, ibdev)) {
		r = remove_tree(path);
		ret = ret ? ret : r;
	}
	if (uverbs && *uverbs &&
	    !path_fmt(path, sizeof(path), "%s/class/infiniband_verbs/%s", root, uverbs)) {
		r = remove_tree(path);
		ret = ret ? ret : r;
	}
	/* The class directories and the tree itself go once no device is left. */
	if (!path_fmt(path, sizeof(path), "%s/class/infiniband_verbs", root) &&
	    dir_holds_only(path, "abi_version") &&
	    !path_fmt(abi, sizeof(abi), "%s/abi_version", path)) {
		unlink(abi);
		rmdir(path);
	}
	if (!path_fmt(path, sizeof(path), "%s/class/infiniband", root) && !rmdir(path) &&
	    !path_fmt(path, sizeof(path), "%s/class/misc/rdma_cm", root) &&
	    !path_fmt(abi, sizeof(abi), "%s/abi_version", path)) {
		unlink(abi);
		rmdir(path);
		path[strlen(path) - strlen("/rdma_cm")] = '\0';
		rmdir(path);
	}
	if (!path_fmt(path, sizeof(path), "%s/class", root))
		rmdir(path);
	rmdir(root);
	return ret;
}

/*
 * device/net/NETDEV, as the kernel links a RoCE device to its netdev: a
 * symlink to /sys/class/net/NETDEV, so readers that list the directory
 * (rdma-core's tests) or follow it (to the netdev's attributes) find it.
 */
static int link_netdev(const char *ibdev_path, const char *netdev)
{
	char path[PATH_MAX], target[PATH_MAX];
	int ret;

	if (!netdev || !*netdev)
		return 0;
	if (path_fmt(path, sizeof(path), "%s/device/net", ibdev_path) ||
	    path_fmt(target, sizeof(target), "/sys/class/net/%s", netdev))
		return -ENAMETOOLONG;
	ret = make_dirs(path);
	if (ret)
		return ret;
	if (path_fmt(path, sizeof(path), "%s/device/net/%s", ibdev_path, netdev))
		return -ENAMETOOLONG;
	return symlink(target, path) ? -errno : 0;
}

int prov_sysfs_create(const struct prov_sysfs_dev *d, const struct wire_gid_entry *gids,
		      unsigned n, char *err, size_t errlen)
{
	char ibdev_path[PATH_MAX], uv_path[PATH_MAX], text[64];
	uint64_t guid = prov_node_guid(d->mac);
	struct stat st;
	int ret;

	if (path_fmt(ibdev_path, sizeof(ibdev_path), "%s/class/infiniband/%s", d->root, d->ibdev) ||
	    path_fmt(uv_path, sizeof(uv_path), "%s/class/infiniband_verbs/%s", d->root, d->uverbs)) {
		snprintf(err, errlen, "path of %s under %s is too long", d->ibdev, d->root);
		return -ENAMETOOLONG;
	}
	if (!stat(ibdev_path, &st)) {
		snprintf(err, errlen, "device %s exists (%s)", d->ibdev, ibdev_path);
		return -EEXIST;
	}
	if (!stat(uv_path, &st)) {
		snprintf(err, errlen, "%s is taken (%s)", d->uverbs, uv_path);
		return -EEXIST;
	}

	snprintf(text, sizeof(text), "%04x:%04x:%04x:%04x\n", (unsigned)(guid >> 48),
		 (unsigned)(guid >> 32) & 0xffff, (unsigned)(guid >> 16) & 0xffff,
		 (unsigned)guid & 0xffff);
	ret = write_fmt("1: CA\n", "%s/node_type", ibdev_path);
	ret = ret ? ret : write_fmt(text, "%s/node_guid", ibdev_path);
	ret = ret ? ret : write_fmt(text, "%s/sys_image_guid", ibdev_path);
	ret = ret ? ret : write_fmt("0xffff\n", "%s/ports/1/pkeys/0", ibdev_path);
	ret = ret ? ret : write_fmt("Ethernet\n", "%s/ports/1/link_layer", ibdev_path);
	if (!ret) {
		snprintf(text, sizeof(text), UROCE_MODALIAS_PREFIX "%s\n", d->ibdev);
		ret = write_fmt(text, "%s/device/modalias", ibdev_path);
	}
	ret = ret ? ret : link_netdev(ibdev_path, d->netdev);
	ret = ret ? ret : prov_sysfs_write_gids(ibdev_path, gids, n, d->netdev);
	/* The uverbs entry last: libibverbs discovers devices from it. */
	if (!ret) {
		snprintf(text, sizeof(text), "%d\n", UROCE_UVERBS_ABI);
		ret = write_fmt(text, "%s/class/infiniband_verbs/abi_version", d->root);
	}
	if (!ret) {
		snprintf(text, sizeof(text), "%d\n", UROCE_SYSFS_ABI);
		ret = write_fmt(text, "%s/abi_version", uv_path);
	}
	/* librdmacm, with RDMA netlink hidden, reads the ucma ABI here (prov_ucma.c answers it). */
	if (!ret) {
		snprintf(text, sizeof(text), "%d\n", UROCE_UCMA_ABI);
		ret = write_fmt(text, "%s/class/misc/rdma_cm/abi_version", d->root);
	}
	if (!ret) {
		snprintf(text, sizeof(text), "%d:%d\n", UROCE_CDEV_MAJOR, UROCE_CDEV_MINOR);
		ret = write_fmt(text, "%s/dev", uv_path);
	}
	if (!ret) {
		snprintf(text, sizeof(text), "%s\n", d->ibdev);
		ret = write_fmt(text, "%s/ibdev", uv_path);
	}
	if (ret) {
		snprintf(err, errlen, "cannot write %s: %s", ibdev_path, strerror(-ret));
		prov_sysfs_remove(d->root, d->ibdev, d->uverbs);
	}
	return ret;
}
