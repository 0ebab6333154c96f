// SPDX-License-Identifier: MIT
/* The sysfs tree of a uroce device, checked against the formats libibverbs' sysfs fallback parses. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "uroce/sysfs.h"

static char tmp_root[64];
static char tree[96];

static void tree_setup(void)
{
	snprintf(tmp_root, sizeof(tmp_root), "/tmp/uroce-sysfs-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp_root));
	snprintf(tree, sizeof(tree), "%s/sysfs", tmp_root);
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void tree_teardown(void)
{
	nftw(tmp_root, rm_cb, 8, FTW_DEPTH | FTW_PHYS);
}

/* Contents of <tree>/<rel>, trailing newline kept; "" if missing. */
static const char *slurp(const char *rel)
{
	static char buf[512];
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return "";
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

/* Where the symlink <tree>/<rel> points; "" if it is not one. */
static const char *link_target(const char *rel)
{
	static char buf[PATH_MAX];
	char path[PATH_MAX];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	n = readlink(path, buf, sizeof(buf) - 1);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static bool exists(const char *rel)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", tree, rel);
	return stat(path, &st) == 0;
}

static const uint8_t mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };

static void fill_gids(struct wire_gid_entry *g)
{
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	static const uint8_t ll[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00, 0xff, 0xfe,
					0x12, 0x34, 0x56 };

	memset(g, 0, WIRE_GID_TABLE_LEN * sizeof(*g));
	for (int i = 0; i < 4; i++) {
		g[i].valid = true;
		memcpy(g[i].gid, i < 2 ? ll : v4, 16);
		g[i].type = i % 2 ? WIRE_GID_ROCE_V2 : WIRE_GID_ROCE_V1;
	}
}

static void create_dev(const char *ibdev, const char *uverbs)
{
	struct wire_gid_entry g[WIRE_GID_TABLE_LEN];
	struct prov_sysfs_dev d = {
		.root = tree, .ibdev = ibdev, .uverbs = uverbs, .netdev = "lo",
	};
	char err[256] = "";

	memcpy(d.mac, mac, 6);
	fill_gids(g);
	ck_assert_msg(prov_sysfs_create(&d, g, WIRE_GID_TABLE_LEN, err, sizeof(err)) == 0, "%s",
		      err);
}

START_TEST(test_gid_format_matches_kernel)
{
	static const uint8_t gid[16] = { 0xfe, 0x80, [8] = 0x50, 0x54, 0x00, 0xff, 0xfe, 0x12,
					 0x34, 0x56 };
	uint8_t back[16];
	char s[40];

	prov_sysfs_format_gid(gid, s);
	/* The kernel's "%pI6" (not compressed), which libibverbs reads 5 chars per group. */
	ck_assert_str_eq(s, "fe80:0000:0000:0000:5054:00ff:fe12:3456");
	ck_assert_int_eq(prov_sysfs_parse_gid(s, back), 0);
	ck_assert_mem_eq(back, gid, 16);
	ck_assert_int_eq(prov_sysfs_parse_gid("fe80:0000:0000:0000:5054:00ff:fe12:3456\n", back), 0);
	ck_assert_int_eq(prov_sysfs_parse_gid("fe80::1", back), -EINVAL);
	ck_assert_int_eq(prov_sysfs_parse_gid("fe80:0000:0000:0000:5054:00ff:fe12:34", back), -EINVAL);
	ck_assert_int_eq(prov_sysfs_parse_gid("fe80:0000:0000:0000:5054:00ff:fe12:345g", back),
			 -EINVAL);
}
END_TEST

START_TEST(test_node_guid_is_modified_eui64)
{
	/* RFC 4291 appendix A: 52:54:00:12:34:56 -> 5054:00ff:fe12:3456. */
	ck_assert_uint_eq(prov_node_guid(mac), 0x505400fffe123456ull);
}
END_TEST

START_TEST(test_tree_has_what_libibverbs_reads)
{
	create_dev("uroce0", "uverbs3");
	ck_assert_str_eq(slurp("class/infiniband_verbs/abi_version"), "6\n");
	ck_assert_str_eq(slurp("class/infiniband_verbs/uverbs3/ibdev"), "uroce0\n");
	ck_assert_str_eq(slurp("class/infiniband_verbs/uverbs3/dev"), "1:7\n");
	ck_assert_str_eq(slurp("class/infiniband_verbs/uverbs3/abi_version"), "1\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/node_type"), "1: CA\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/node_guid"), "5054:00ff:fe12:3456\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/device/modalias"), "uroce:Nuroce0\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/pkeys/0"), "0xffff\n");
	ck_assert_str_eq(link_target("class/infiniband/uroce0/device/net/lo"), "/sys/class/net/lo");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gids/0"),
			 "fe80:0000:0000:0000:5054:00ff:fe12:3456\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gids/3"),
			 "0000:0000:0000:0000:0000:ffff:0a00:0001\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gid_attrs/types/0"), "IB/RoCE v1\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gid_attrs/types/3"), "RoCE v2\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gid_attrs/ndevs/3"), "lo\n");
	/* Empty entries: zero GID, v1 type, no ndev (libibverbs then answers ENODATA). */
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gids/15"),
			 "0000:0000:0000:0000:0000:0000:0000:0000\n");
	ck_assert_str_eq(slurp("class/infiniband/uroce0/ports/1/gid_attrs/types/15"),
			 "IB/RoCE v1\n");
	ck_assert(!exists("class/infiniband/uroce0/ports/1/gid_attrs/ndevs/4"));
	ck_assert(!exists("class/infiniband/uroce0/ports/1/gids/16"));
}
END_TEST

START_TEST(test_create_refuses_taken_names)
{
	struct wire_gid_entry g[WIRE_GID_TABLE_LEN];
	struct prov_sysfs_dev d = { .root = tree, .ibdev = "uroce0", .uverbs = "uverbs9" };
	char err[256] = "";

	create_dev("uroce0", "uverbs0");
	fill_gids(g);
	ck_assert_int_eq(prov_sysfs_create(&d, g, WIRE_GID_TABLE_LEN, err, sizeof(err)), -EEXIST);
	ck_assert_ptr_nonnull(strstr(err, "uroce0"));
	d.ibdev = "uroce1";
	d.uverbs = "uverbs0";
	ck_assert_int_eq(prov_sysfs_create(&d, g, WIRE_GID_TABLE_LEN, err, sizeof(err)), -EEXIST);
	ck_assert(!exists("class/infiniband/uroce1"));
	/* The first device is untouched. */
	ck_assert_str_eq(slurp("class/infiniband_verbs/uverbs0/ibdev"), "uroce0\n");
}
END_TEST

START_TEST(test_gids_round_trip_and_rewrite)
{
	struct wire_gid_entry g[WIRE_GID_TABLE_LEN], back[WIRE_GID_TABLE_LEN];
	char path[PATH_MAX];

	create_dev("uroce0", "uverbs0");
	snprintf(path, sizeof(path), "%s/class/infiniband/uroce0", tree);
	fill_gids(g);
	ck_assert_int_eq(prov_sysfs_read_gids(path, back, WIRE_GID_TABLE_LEN), 0);
	ck_assert(prov_gid_tables_equal(g, back, WIRE_GID_TABLE_LEN));

	/* The address went away: entries 2 and 3 become empty, ndevs go with them. */
	g[2].valid = g[3].valid = false;
	ck_assert(!prov_gid_tables_equal(g, back, WIRE_GID_TABLE_LEN));
	ck_assert_int_eq(prov_sysfs_write_gids(path, g, WIRE_GID_TABLE_LEN, "lo"), 0);
	ck_assert_int_eq(prov_sysfs_read_gids(path, back, WIRE_GID_TABLE_LEN), 0);
	ck_assert(prov_gid_tables_equal(g, back, WIRE_GID_TABLE_LEN));
	ck_assert(!back[3].valid);
	ck_assert(!exists("class/infiniband/uroce0/ports/1/gid_attrs/ndevs/3"));
	ck_assert(exists("class/infiniband/uroce0/ports/1/gid_attrs/ndevs/1"));

	/* A type change alone is a difference. */
	back[1].type = WIRE_GID_ROCE_V1;
	ck_assert(!prov_gid_tables_equal(g, back, WIRE_GID_TABLE_LEN));
}
END_TEST

START_TEST(test_remove_leaves_other_devices_then_nothing)
{
	DIR *d;

	create_dev("uroce0", "uverbs0");
	create_dev("uroce1", "uverbs1");
	ck_assert_int_eq(prov_sysfs_remove(tree, "uroce0", "uverbs0"), 0);
	ck_assert(!exists("class/infiniband/uroce0"));
	ck_assert(!exists("class/infiniband_verbs/uverbs0"));
	ck_assert_str_eq(slurp("class/infiniband_verbs/uverbs1/ibdev"), "uroce1\n");
	ck_assert_str_eq(slurp("class/infiniband_verbs/abi_version"), "6\n");

	ck_assert_int_eq(prov_sysfs_remove(tree, "uroce1", "uverbs1"), 0);
	ck_assert(!exists(""));
	d = opendir(tmp_root);
	ck_assert_ptr_nonnull(d);
	for (struct dirent *e; (e = readdir(d));)
		ck_assert_msg(!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."),
			      "left behind: %s", e->d_name);
	closedir(d);
}
END_TEST

Suite *prov_sysfs_suite(void);

Suite *prov_sysfs_suite(void)
{
	Suite *s = suite_create("prov_sysfs");
	TCase *tc = tcase_create("format");
	TCase *tt = tcase_create("tree");

	tcase_add_test(tc, test_gid_format_matches_kernel);
	tcase_add_test(tc, test_node_guid_is_modified_eui64);
	suite_add_tcase(s, tc);

	tcase_add_checked_fixture(tt, tree_setup, tree_teardown);
	tcase_add_test(tt, test_tree_has_what_libibverbs_reads);
	tcase_add_test(tt, test_create_refuses_taken_names);
	tcase_add_test(tt, test_gids_round_trip_and_rewrite);
	tcase_add_test(tt, test_remove_leaves_other_devices_then_nothing);
	suite_add_tcase(s, tt);
	return s;
}
