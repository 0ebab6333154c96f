// SPDX-License-Identifier: MIT
/* The pcap port: frames arrive when the virtual clock reaches them, sent frames carry its time. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "replay.h"
#include "uroce/port_pcap.h"

static char tx_path[64];

static struct port *open_port(const char *fixture, uint32_t mtu)
{
	char rx[1024], err[512] = "";
	struct port_pcap_cfg cfg = {
		.rx_path = rx,
		.tx_path = tx_path,
		.mac = { 2, 0, 0, 0, 0, 1 },
		.mtu = mtu,
		.name = "test",
	};
	struct port *p;
	int fd;

	snprintf(rx, sizeof(rx), "%s/spec/%s.in.pcap", UROCE_FIXTURES_DIR, fixture);
	snprintf(tx_path, sizeof(tx_path), "/tmp/uroce-port-pcap-XXXXXX");
	fd = mkstemp(tx_path);
	ck_assert_int_ge(fd, 0);
	close(fd);
	p = port_pcap_open(&cfg, err, sizeof(err));
	ck_assert_msg(p, "%s", err);
	return p;
}

START_TEST(rx_follows_the_clock)
{
	/* rc_out_of_sequence.in.pcap: five frames at 1, 2, 3, 4 and 5 ms. */
	struct port *p = open_port("rc_out_of_sequence", 1500);
	struct port_frame f[8];
	struct port_pcap_stats st;
	unsigned n;

	ck_assert_uint_eq(port_pcap_next_rx_ns(p), 1000000);
	port_pcap_set_time(p, 999999);
	ck_assert_uint_eq(p->ops->rx_burst(p, f, 8), 0);
	port_pcap_set_time(p, 1000000);
	n = p->ops->rx_burst(p, f, 8);
	ck_assert_uint_eq(n, 1);
	ck_assert_uint_gt(f[0].len, 60);
	ck_assert_uint_eq(port_pcap_next_rx_ns(p), 2000000);
	p->ops->rx_release(p, f, n);
	port_pcap_set_time(p, 3500000);
	ck_assert_uint_eq(p->ops->rx_burst(p, f, 1), 1);	/* @max is honoured */
	ck_assert_uint_eq(p->ops->rx_burst(p, f + 1, 8), 1);
	p->ops->rx_release(p, f, 2);
	port_pcap_set_time(p, UINT64_MAX);
	ck_assert_uint_eq(p->ops->rx_burst(p, f, 8), 2);
	p->ops->rx_release(p, f, 2);
	ck_assert_uint_eq(port_pcap_next_rx_ns(p), UINT64_MAX);
	ck_assert_uint_eq(p->ops->rx_burst(p, f, 8), 0);
	port_pcap_stats(p, &st);
	ck_assert_uint_eq(st.rx_frames, 5);
	p->ops->destroy(p);
	unlink(tx_path);
}
END_TEST

START_TEST(tx_carries_the_clock)
{
	struct port *p = open_port("rc_write_only", 1500);
	struct port_frame f[3];
	struct port_pcap_stats st;
	struct rp_frames written = { 0 };
	char err[512];

	ck_assert_int_eq(p->ops->tx_alloc(p, &f[0], 100), 0);
	memset(f[0].data, 0xa5, 100);
	ck_assert_int_eq(p->ops->tx_alloc(p, &f[1], 2000), 0);	/* too big for MTU 1500 */
	port_pcap_set_time(p, 1234567891);
	p->ops->tx_burst(p, f, 2);
	ck_assert_int_eq(p->ops->tx_alloc(p, &f[2], 60), 0);
	p->ops->tx_abort(p, &f[2]);
	p->ops->flush(p);
	port_pcap_stats(p, &st);
	ck_assert_uint_eq(st.tx_frames, 1);
	ck_assert_uint_eq(st.tx_too_big, 1);
	ck_assert_int_eq(rp_frames_read(tx_path, &written, err, sizeof(err)), 0);
	ck_assert_uint_eq(written.n, 1);
	ck_assert_uint_eq(written.f[0].t_ns, 1234567891);	/* nanosecond pcap */
	ck_assert_uint_eq(written.f[0].len, 100);
	ck_assert_uint_eq(written.f[0].data[99], 0xa5);
	rp_frames_free(&written);
	p->ops->destroy(p);
	unlink(tx_path);
}
END_TEST

START_TEST(resolve_from_table)
{
	struct port *p = open_port("rc_write_only", 1500);
	uint8_t gid[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 }, mac[6];
	static const uint8_t peer_mac[6] = { 2, 0, 0, 0, 0, 2 };

	ck_assert_int_eq(p->ops->resolve(p, gid, mac), -EHOSTUNREACH);
	ck_assert_int_eq(port_pcap_add_neighbour(p, gid, peer_mac), 0);
	ck_assert_int_eq(p->ops->resolve(p, gid, mac), 0);
	ck_assert_mem_eq(mac, peer_mac, 6);
	p->ops->destroy(p);
	unlink(tx_path);
}
END_TEST

START_TEST(bad_file_is_named)
{
	struct port_pcap_cfg cfg = { .rx_path = "/nonexistent.pcap", .mtu = 1500 };
	char err[512] = "";

	ck_assert_ptr_null(port_pcap_open(&cfg, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "/nonexistent.pcap: cannot read as a pcap file"));
}
END_TEST

Suite *port_pcap_suite(void);

Suite *port_pcap_suite(void)
{
	Suite *s = suite_create("port_pcap");
	TCase *tc = tcase_create("port");

	tcase_add_test(tc, rx_follows_the_clock);
	tcase_add_test(tc, tx_carries_the_clock);
	tcase_add_test(tc, resolve_from_table);
	tcase_add_test(tc, bad_file_is_named);
	suite_add_tcase(s, tc);
	return s;
}
