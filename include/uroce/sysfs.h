/* SPDX-License-Identifier: MIT */
/* The sysfs tree libibverbs reads for uroce devices: written by `uroce link`, kept current by the provider. */
#ifndef UROCE_SYSFS_H
#define UROCE_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "uroce/rc.h"

/*
 * libibverbs finds devices in $SYSFS_PATH/class/infiniband_verbs when the
 * kernel's RDMA netlink does not answer.  `uroce exec` points SYSFS_PATH at
 * <run dir>/sysfs, which holds for each device:
 *
 *   class/infiniband_verbs/abi_version            "6", the uverbs ABI
 *   class/infiniband_verbs/<uverbs>/ibdev         device name
 *   class/infiniband_verbs/<uverbs>/dev           "1:7", /dev/full: commands fail cleanly
 *   class/infiniband_verbs/<uverbs>/abi_version   UROCE_SYSFS_ABI, checked by the provider
 *   class/infiniband/<ibdev>/node_type            "1: CA"
 *   class/infiniband/<ibdev>/node_guid            EUI-64 of the MAC
 *   class/infiniband/<ibdev>/device/modalias      "uroce:N<ibdev>", what the provider matches
 *   class/infiniband/<ibdev>/device/net/<netdev>  symlink to /sys/class/net/<netdev>
 *   class/infiniband/<ibdev>/ports/1/gids/N       the GID table (as the kernel prints it)
 *   class/infiniband/<ibdev>/ports/1/gid_attrs/types/N   "IB/RoCE v1" or "RoCE v2"
 *   class/infiniband/<ibdev>/ports/1/gid_attrs/ndevs/N   netdev of a valid entry
 *   class/infiniband/<ibdev>/ports/1/pkeys/0      "0xffff"
 *   class/infiniband/<ibdev>/ports/1/link_layer   "Ethernet"
 *   class/misc/rdma_cm/abi_version               "4" (the ucma ABI, for librdmacm)
 */
#define UROCE_SYSFS_DIR		"sysfs"
#define UROCE_UVERBS_ABI	6
#define UROCE_SYSFS_ABI		1
#define UROCE_UCMA_ABI		4	/* the rdma_cm ABI librdmacm reads in class/misc/rdma_cm */
#define UROCE_MODALIAS_PREFIX	"uroce:N"
/* The character device every uroce uverbs node stands for: /dev/full. */
#define UROCE_CDEV		"/dev/full"
#define UROCE_CDEV_MAJOR	1
#define UROCE_CDEV_MINOR	7

struct prov_sysfs_dev {
	const char	*root;		/* <run dir>/sysfs */
	const char	*ibdev;		/* "uroce0" */
	const char	*uverbs;	/* "uverbs0" */
	uint8_t		mac[6];		/* gives the node GUID */
	const char	*netdev;	/* named in gid_attrs/ndevs; NULL or "" if none */
};

/* EUI-64 of a MAC address (U/L bit flipped), the node GUID, host order. */
uint64_t prov_node_guid(const uint8_t mac[6]);

/* A GID as sysfs prints it: eight groups of four hex digits. @out holds 40 bytes. */
void prov_sysfs_format_gid(const uint8_t gid[16], char *out);
/* Return: 0, or -EINVAL if @s is not in that form. */
int prov_sysfs_parse_gid(const char *s, uint8_t gid[16]);

/*
 * prov_sysfs_create() - write a device's tree, with @n GID entries.
 * Return: 0, -EEXIST if the device or the uverbs name is taken, or -errno
 * with a one-line reason in @err.
 */
int prov_sysfs_create(const struct prov_sysfs_dev *d, const struct wire_gid_entry *gids,
		      unsigned n, char *err, size_t errlen);

/* Remove a device's tree (and the class directories once empty).  Return: 0 or -errno. */
int prov_sysfs_remove(const char *root, const char *ibdev, const char *uverbs);

/*
 * prov_sysfs_write_gids() - replace the GID table of port 1.
 * @ibdev_path: <root>/class/infiniband/<ibdev>
 *
 * Each file is replaced by rename(), so a reader sees the old or the new
 * entry, never a torn one.  Return: 0 or -errno.
 */
int prov_sysfs_write_gids(const char *ibdev_path, const struct wire_gid_entry *gids, unsigned n,
			  const char *netdev);

/* Read the GID table of port 1 back (missing entries read as invalid).  Return: 0 or -errno. */
int prov_sysfs_read_gids(const char *ibdev_path, struct wire_gid_entry *gids, unsigned n);

/* True when the two tables hold the same valid entries at the same indexes. */
bool prov_gid_tables_equal(const struct wire_gid_entry *a, const struct wire_gid_entry *b, unsigned n);

#endif
