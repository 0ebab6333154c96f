// SPDX-License-Identifier: MIT
/* Device configuration files: round trip, and one clear line for every kind of bad input. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "uroce/config.h"
#include "run_dir.h"

static char err[512];

static void setup(void)
{
	test_run_dir();
}

static void teardown(void)
{
	test_run_dir_remove();
}

static void write_conf(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/devices", host_run_dir());
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/devices/%s.conf", host_run_dir(), name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(run_dir_from_env)
{
	ck_assert_str_eq(host_run_dir(), getenv("UROCE_RUN_DIR"));
	unsetenv("UROCE_RUN_DIR");
	ck_assert_str_eq(host_run_dir(), "/run/uroce");
}
END_TEST

START_TEST(round_trip)
{
	struct host_link_cfg in = { 0 }, out;
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, 10, 1, 2, 3 };
	static const uint8_t v6[16] = { 0xfd, 0x00, [15] = 0x42 };

	strcpy(in.name, "uroce0");
	strcpy(in.netdev, "udvA");
	in.pmd = HOST_PMD_MEMIF;
	strcpy(in.pmd_args, "role=server");
	strcpy(in.eal_args, "-m 128");
	in.mtu = 4200;
	memcpy(in.mac, (uint8_t[6]){ 0x02, 0, 0, 0xab, 0xcd, 0xef }, 6);
	in.n_addrs = 2;
	memcpy(in.addrs[0], v4, 16);
	memcpy(in.addrs[1], v6, 16);
	strcpy(in.uverbs, "uverbs3");
	in.rto_min_us = 250;
	in.restart_window = 32;
	in.inflight = 4096;
	in.no_adaptive_rto = true;
	in.no_tail_probe = true;
	in.selective_repeat = true;
	in.user_qpns = 4096;
	in.dcqcn.on = true;
	in.dcqcn.rpg_ai_rate = 10;
	in.dcqcn.dce_tcp_g = 1000;
	in.dcqcn.line_rate = 25000;
	ck_assert_int_eq(host_link_cfg_save(&in, err, sizeof(err)), 0);
	ck_assert_int_eq(host_link_cfg_load("uroce0", &out, err, sizeof(err)), 0);
	ck_assert_mem_eq(&in, &out, sizeof(in));
	ck_assert_int_eq(host_link_cfg_remove("uroce0"), 0);
	ck_assert_int_eq(host_link_cfg_remove("uroce0"), -ENOENT);
}
END_TEST

START_TEST(defaults_and_comments)
{
	struct host_link_cfg c;

	write_conf("d1", "# a comment\n\n  netdev =  eth9  \n");
	ck_assert_int_eq(host_link_cfg_load("d1", &c, err, sizeof(err)), 0);
	ck_assert_str_eq(c.name, "d1");
	ck_assert_str_eq(c.netdev, "eth9");
	ck_assert_int_eq(c.pmd, HOST_PMD_AF_PACKET);
	ck_assert_uint_eq(c.mtu, 0);
	ck_assert_uint_eq(c.n_addrs, 0);
	ck_assert_uint_eq(c.rto_min_us, 0);
	ck_assert_uint_eq(c.restart_window, 0);
	ck_assert_uint_eq(c.inflight, 0);
	ck_assert_uint_eq(c.user_qpns, 0);
	ck_assert(!c.no_adaptive_rto && !c.no_tail_probe && !c.selective_repeat);
	ck_assert(!c.dcqcn.on && !c.dcqcn.rpg_time_reset && !c.dcqcn.line_rate);
}
END_TEST

static const struct {
	const char *text, *expect;
} bad_files[] = {
	{ "netdev = a\nspeed = 10\n", ":2: speed: unknown key" },
	{ "netdev = a\nmac = 02:00:00\n", ":2: mac: mac must look like" },
	{ "netdev = a\nmac = 02:00:00:00:00:1ff\n", "mac must look like" },
	{ "netdev = a\nmtu = 99999\n", "mtu must be a number" },
	{ "netdev = a\nmtu = 15x\n", "mtu must be a number" },
	{ "netdev = a\nrto_min_us = 0\n", "rto_min_us must be a number" },
	{ "netdev = a\nrto_min_us = -5\n", "rto_min_us must be a number" },
	{ "netdev = a\nrestart_window = 257\n", "restart_window must be a number" },
	{ "netdev = a\ninflight = 8\n", "inflight must be a number" },
	{ "netdev = a\ntlp = yes\n", "tlp must be on or off" },
	{ "netdev = a\nadaptive = 1\n", "adaptive must be on or off" },
	{ "netdev = a\ndcqcn = yes\n", "dcqcn must be on or off" },
	{ "netdev = a\nselective_repeat = 1\n", "selective_repeat must be on or off" },
	{ "netdev = a\nuser_qpns = 0\n", "user_qpns must be a number of QPNs from 1 to 65536" },
	{ "netdev = a\nuser_qpns = 65537\n", "user_qpns must be a number of QPNs from 1 to 65536" },
	{ "netdev = a\nrpg_gd = 9\n", "rpg_gd must be a number from 10 to 20" },
	{ "netdev = a\ndce_tcp_g = 1024\n", "dce_tcp_g must be a number from 1 to 1023" },
	{ "netdev = a\nrpg_min_dec_fac = 0\n", "rpg_min_dec_fac must be a number from 1 to 100" },
	{ "netdev = a\nipv4 = 10.0.0.300\n", "ipv4 must be a dotted quad" },
	{ "netdev = a\nipv6 = ::ffff:1.2.3.4\n", "ipv6 must be an IPv6 address" },
	{ "netdev = a\npmd = dpdk\n", "pmd must be af_packet" },
	{ "netdev = a\njust words\n", ":2: expected 'key = value'" },
	{ "pmd = tap\n", "no netdev line" },
	{ "name = other\nnetdev = a\n", "names device 'other'" },
	{ "netdev = averyveryverylongname\n", "longer than 15" },
};

START_TEST(bad_input)
{
	struct host_link_cfg c;

	write_conf("bad", bad_files[_i].text);
	ck_assert_int_eq(host_link_cfg_load("bad", &c, err, sizeof(err)) < 0, 1);
	ck_assert_msg(strstr(err, bad_files[_i].expect), "'%s' lacks '%s'", err,
		      bad_files[_i].expect);
	ck_assert_ptr_null(strchr(err, '\n'));
}
END_TEST

START_TEST(too_many_addresses)
{
	char text[1024] = "netdev = a\n";
	struct host_link_cfg c;

	for (int i = 0; i <= HOST_MAX_ADDRS; i++)
		snprintf(text + strlen(text), sizeof(text) - strlen(text), "ipv4 = 10.0.0.%d\n", i);
	write_conf("many", text);
	ck_assert_int_eq(host_link_cfg_load("many", &c, err, sizeof(err)), -E2BIG);
	ck_assert_ptr_nonnull(strstr(err, "more than 8 addresses"));
}
END_TEST

START_TEST(missing_device)
{
	struct host_link_cfg c;

	ck_assert_int_eq(host_link_cfg_load("uroce7", &c, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, "uroce link add uroce7 netdev IFACE"));
}
END_TEST

START_TEST(bad_names)
{
	struct host_link_cfg c = { 0 };

	ck_assert_int_eq(host_link_cfg_load("../etc/passwd", &c, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "not a valid device name"));
	ck_assert_int_eq(host_link_cfg_load(".hidden", &c, err, sizeof(err)), -EINVAL);
	strcpy(c.name, "a/b");
	strcpy(c.netdev, "x");
	ck_assert_int_eq(host_link_cfg_save(&c, err, sizeof(err)), -EINVAL);
	strcpy(c.name, "ok");
	strcpy(c.pmd_args, "a\nnetdev = evil");
	ck_assert_int_eq(host_link_cfg_save(&c, err, sizeof(err)), -EINVAL);
	ck_assert_int_eq(host_link_cfg_remove("a/b"), -EINVAL);
}
END_TEST

START_TEST(pmd_names)
{
	enum host_pmd p;

	for (int i = HOST_PMD_AF_PACKET; i <= HOST_PMD_TAP; i++) {
		ck_assert_int_eq(host_pmd_parse(host_pmd_name((enum host_pmd)i), &p), 0);
		ck_assert_int_eq(p, i);
	}
	ck_assert_int_eq(host_pmd_parse("AF_PACKET", &p), -EINVAL);
	ck_assert_str_eq(host_pmd_name((enum host_pmd)99), "?");
}
END_TEST

START_TEST(save_creates_shared_dirs)
{
	struct host_link_cfg c = { 0 };
	char path[256];
	struct stat st;

	strcpy(c.name, "u1");
	strcpy(c.netdev, "x");
	ck_assert_int_eq(host_link_cfg_save(&c, err, sizeof(err)), 0);
	snprintf(path, sizeof(path), "%s/qpn", host_run_dir());
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 01777);
	snprintf(path, sizeof(path), "%s/stats", host_run_dir());
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 01777);
}
END_TEST

Suite *host_config_suite(void);

Suite *host_config_suite(void)
{
	Suite *s = suite_create("host_config");
	TCase *t = tcase_create("config");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, run_dir_from_env);
	tcase_add_test(t, round_trip);
	tcase_add_test(t, defaults_and_comments);
	tcase_add_loop_test(t, bad_input, 0, sizeof(bad_files) / sizeof(bad_files[0]));
	tcase_add_test(t, too_many_addresses);
	tcase_add_test(t, missing_device);
	tcase_add_test(t, bad_names);
	tcase_add_test(t, pmd_names);
	tcase_add_test(t, save_creates_shared_dirs);
	suite_add_tcase(s, t);
	return s;
}
