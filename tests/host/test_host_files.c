// SPDX-License-Identifier: MIT
/* Files other programs read: UROCE_PCAP recordings (read back by libpcap), counter files, GID tables. */
#include <check.h>
#include <errno.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uroce/host.h"
#include "host_capture.h"
#include "host_stats.h"
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

START_TEST(pcap_read_back_by_libpcap)
{
	char path[256], perr[PCAP_ERRBUF_SIZE];
	static uint8_t frames[3][2000];
	const void *ptrs[3] = { frames[0], frames[1], frames[2] };
	uint32_t lens[3] = { 60, 1514, 2000 };
	struct pcap_pkthdr *h;
	const u_char *data;
	struct host_capture *pc;
	pcap_t *p;
	int n = 0;

	for (int i = 0; i < 3; i++)
		memset(frames[i], 0x10 + i, sizeof(frames[i]));
	snprintf(path, sizeof(path), "%s/rec-%%p.pcap", host_run_dir());
	setenv("UROCE_PCAP", path, 1);
	pc = host_capture_get(err, sizeof(err));
	ck_assert_ptr_nonnull(pc);
	ck_assert_ptr_eq(host_capture_get(err, sizeof(err)), pc);	/* one per process */
	/* Many frames: more than one buffer's worth reaches the file. */
	for (int round = 0; round < 400; round++)
		host_capture_write(pc, ptrs, lens, 3);
	host_capture_put(pc);
	host_capture_put(pc);
	unsetenv("UROCE_PCAP");
	snprintf(path, sizeof(path), "%s/rec-%d.pcap", host_run_dir(), (int)getpid());
	p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, perr);
	ck_assert_msg(p != NULL, "%s", perr);
	ck_assert_int_eq(pcap_datalink(p), DLT_EN10MB);
	while (pcap_next_ex(p, &h, &data) == 1) {
		ck_assert_uint_eq(h->caplen, lens[n % 3]);
		ck_assert_uint_eq(h->len, lens[n % 3]);
		ck_assert_mem_eq(data, frames[n % 3], h->caplen);
		n++;
	}
	ck_assert_int_eq(n, 1200);
	pcap_close(p);
}
END_TEST

/* A process that exits holding its capture (librdmacm never closes its devices) loses no frame. */
START_TEST(pcap_written_at_exit)
{
	char path[256], perr[PCAP_ERRBUF_SIZE];
	static const uint8_t frame[60] = { 0x42 };
	const void *ptrs[1] = { frame };
	uint32_t lens[1] = { sizeof(frame) };
	struct pcap_pkthdr *h;
	const u_char *data;
	int status, n = 0;
	pcap_t *p;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/exit.pcap", host_run_dir());
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct host_capture *pc;

		setenv("UROCE_PCAP", path, 1);
		pc = host_capture_get(err, sizeof(err));
		if (!pc)
			_exit(2);
		host_capture_write(pc, ptrs, lens, 1);
		exit(0);	/* no host_capture_put() */
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_int_eq(status, 0);
	p = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, perr);
	ck_assert_msg(p != NULL, "%s", perr);
	while (pcap_next_ex(p, &h, &data) == 1) {
		ck_assert_uint_eq(h->caplen, sizeof(frame));
		ck_assert_mem_eq(data, frame, sizeof(frame));
		n++;
	}
	ck_assert_int_eq(n, 1);
	pcap_close(p);
}
END_TEST

START_TEST(pcap_unset_and_bad_path)
{
	unsetenv("UROCE_PCAP");
	ck_assert_ptr_null(host_capture_get(err, sizeof(err)));
	ck_assert_str_eq(err, "");
	setenv("UROCE_PCAP", "/nonexistent-dir/x.pcap", 1);
	ck_assert_ptr_null(host_capture_get(err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "UROCE_PCAP: cannot create /nonexistent-dir/x.pcap"));
	unsetenv("UROCE_PCAP");
}
END_TEST

struct found {
	int	n;
	int	pid;
	uint64_t rx, qp_rx;
	uint32_t qpn;	/* the last live QP's */
	unsigned live;
	bool	alive;
};

static int collect(void *arg, const struct host_stats_view *v)
{
	struct found *f = arg;

	f->n++;
	f->pid = v->hdr->pid;
	f->alive = v->alive;
	ck_assert_str_eq(v->hdr->ibdev, "uroce9");
	ck_assert_str_eq(host_stats_name(v, 0), "rx_frames");
	ck_assert_str_eq(host_stats_name(v, 1), "tx_frames");
	ck_assert_str_eq(host_stats_name(v, 2), "retransmits");
	f->rx = host_stats_dev_values(v)[0];
	for (unsigned i = 0; i < v->hdr->n_qp_slots; i++)
		if (host_stats_qp_view(v, i)->live) {
			f->qpn = host_stats_qp_view(v, i)->qpn;
			f->qp_rx = host_stats_qp_view(v, i)->v[0];
			f->live++;
		}
	return 0;
}

static const char *const dev_names[] = { "rx_frames", "tx_frames", NULL };
static const char *const qp_names[] = { "retransmits", NULL };

START_TEST(stats_round_trip)
{
	struct found f = { 0 };
	struct host_stats *s;

	s = host_stats_create("uroce9", "udvA", "af_packet", dev_names, qp_names, err, sizeof(err));
	ck_assert_msg(s != NULL, "%s", err);
	host_stats_begin(s);
	host_stats_dev(s)[0] = 12345;
	host_stats_qp(s, 3, 0x123, true)[0] = 7;
	host_stats_end(s);
	ck_assert_int_eq(host_stats_read_all(collect, &f, true), 1);
	ck_assert_int_eq(f.pid, getpid());
	ck_assert(f.alive);
	ck_assert_uint_eq(f.rx, 12345);
	ck_assert_uint_eq(f.qpn, 0x123);
	ck_assert_uint_eq(f.qp_rx, 7);
	ck_assert_uint_eq(f.live, 1);
	/* the last of 16384 slots is read back too, and the slots between are not live */
	host_stats_begin(s);
	host_stats_qp(s, HOST_STATS_QP_SLOTS - 1, 0x4321, true)[0] = 9;
	host_stats_end(s);
	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(host_stats_read_all(collect, &f, true), 1);
	ck_assert_uint_eq(f.live, 2);
	ck_assert_uint_eq(f.qpn, 0x4321);
	ck_assert_uint_eq(f.qp_rx, 9);
	host_stats_destroy(s);
	f.n = 0;
	ck_assert_int_eq(host_stats_read_all(collect, &f, true), 0);
}
END_TEST

START_TEST(stats_of_dead_process_removed)
{
	struct found f = { 0 };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		if (!host_stats_create("uroce9", "udvA", "af_packet", dev_names, qp_names, err,
				     sizeof(err)))
			_exit(1);
		_exit(0);	/* no host_stats_destroy(): the file stays behind */
	}
	waitpid(pid, &status, 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_int_eq(host_stats_read_all(collect, &f, false), 1);
	ck_assert(!f.alive);
	ck_assert_int_eq(host_stats_read_all(collect, &f, true), 0);
	ck_assert_int_eq(host_stats_read_all(collect, &f, true), 0);
}
END_TEST

START_TEST(gid_table_owned_link)
{
	struct host_link_cfg cfg = { 0 };
	struct wire_gid_entry t[WIRE_GID_TABLE_LEN];
	static const uint8_t v4[16] = { [10] = 0xff, [11] = 0xff, 10, 9, 8, 7 };
	static const uint8_t v6[16] = { 0xfd, 0x01, [15] = 9 };
	static const uint8_t ll[16] = { 0xfe, 0x80, [8] = 0x00, 0x11, 0x22, 0xff, 0xfe, 0x33, 0x44,
					0x55 };

	strcpy(cfg.name, "m0");
	strcpy(cfg.netdev, "memif0");
	cfg.pmd = HOST_PMD_MEMIF;
	memcpy(cfg.mac, (uint8_t[6]){ 0x02, 0x11, 0x22, 0x33, 0x44, 0x55 }, 6);
	cfg.n_addrs = 2;
	memcpy(cfg.addrs[0], v6, 16);	/* IPv6 listed first: IPv4 still comes first */
	memcpy(cfg.addrs[1], v4, 16);
	ck_assert_int_eq(host_gid_table(&cfg, t, WIRE_GID_TABLE_LEN, err, sizeof(err)), 6);
	ck_assert_mem_eq(t[0].gid, ll, 16);
	ck_assert_int_eq(t[0].type, WIRE_GID_ROCE_V1);
	ck_assert_mem_eq(t[1].gid, ll, 16);
	ck_assert_int_eq(t[1].type, WIRE_GID_ROCE_V2);
	ck_assert_mem_eq(t[2].gid, v4, 16);
	ck_assert_mem_eq(t[3].gid, v4, 16);
	ck_assert_int_eq(t[3].type, WIRE_GID_ROCE_V2);
	ck_assert_mem_eq(t[4].gid, v6, 16);
	ck_assert_mem_eq(t[5].gid, v6, 16);
	ck_assert(t[5].valid && !t[6].valid);
	/* A short table is filled as far as it goes. */
	ck_assert_int_eq(host_gid_table(&cfg, t, 3, err, sizeof(err)), 3);
}
END_TEST

START_TEST(gid_table_netdev)
{
	struct host_link_cfg cfg = { 0 };
	struct wire_gid_entry t[WIRE_GID_TABLE_LEN];
	static const uint8_t lo4[16] = { [10] = 0xff, [11] = 0xff, 127, 0, 0, 1 };
	struct host_link_info info;
	int n;

	strcpy(cfg.name, "l0");
	strcpy(cfg.netdev, "lo");
	ck_assert_int_eq(host_link_query(&cfg, &info, err, sizeof(err)), 0);
	ck_assert_int_gt(info.ifindex, 0);
	ck_assert_uint_eq(info.mtu, 65536);
	n = host_gid_table(&cfg, t, WIRE_GID_TABLE_LEN, err, sizeof(err));
	ck_assert_int_ge(n, 4);
	ck_assert_uint_eq(t[0].gid[0], 0xfe);
	ck_assert_mem_eq(t[2].gid, lo4, 16);
	strcpy(cfg.netdev, "udnope0");
	ck_assert_int_eq(host_gid_table(&cfg, t, WIRE_GID_TABLE_LEN, err, sizeof(err)), -ENODEV);
	ck_assert_ptr_nonnull(strstr(err, "no network interface 'udnope0'"));
}
END_TEST

Suite *host_files_suite(void);

Suite *host_files_suite(void)
{
	Suite *s = suite_create("host_files");
	TCase *t = tcase_create("files");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, pcap_read_back_by_libpcap);
	tcase_add_test(t, pcap_written_at_exit);
	tcase_add_test(t, pcap_unset_and_bad_path);
	tcase_add_test(t, stats_round_trip);
	tcase_add_test(t, stats_of_dead_process_removed);
	tcase_add_test(t, gid_table_owned_link);
	tcase_add_test(t, gid_table_netdev);
	suite_add_tcase(s, t);
	return s;
}
