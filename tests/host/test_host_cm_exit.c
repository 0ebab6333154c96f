// SPDX-License-Identifier: MIT
/* The DREQ frames a process leaves for the broker: the file as connections come and go, reaping a dead process's, the broker's check. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "uroce/host.h"
#include "uroce/wire.h"
#include "uroce/wire_mad.h"
#include "host_cm_exit.h"
#include "run_dir.h"

#define NETDEV	"udcmx0"

static const uint8_t our_mac[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t peer_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };
static char err[512];

static void setup(void)
{
	test_run_dir();
}

static void teardown(void)
{
	test_run_dir_remove();
}

/* A DREQ from comm ID @comm_id as the CM builds it; @attr, @qpn, @mac spoil it. */
static uint32_t frame(uint8_t *buf, uint32_t comm_id, uint16_t attr, uint32_t qpn,
		      const uint8_t *mac)
{
	struct wire_build_desc d;
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, attr, 0x1234);
	wire_set32(&m.u.dreq.local_comm_id, comm_id);
	wire_set32(&m.u.dreq.remote_comm_id, 0x77);
	wire_set_hi24_lo8(&m.u.dreq.remote_qpn, 0x123, 0);
	memset(&d, 0, sizeof(d));
	memcpy(d.src_mac, mac, 6);
	memcpy(d.dst_mac, peer_mac, 6);
	d.ip_version = 4;
	d.src_gid[10] = d.src_gid[11] = d.dst_gid[10] = d.dst_gid[11] = 0xff;
	d.src_gid[12] = d.dst_gid[12] = 10;
	d.src_gid[15] = 1;
	d.dst_gid[15] = 2;
	d.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
	d.dest_qp = qpn;
	d.deth.qkey = WIRE_GSI_QKEY;
	d.deth.src_qp = WIRE_GSI_QPN;
	return wire_build(buf, HOST_CM_EXIT_FRAME_MAX, &d, &m, WIRE_MAD_LEN);
}

static unsigned files_in_dir(void)
{
	char dir[600];
	unsigned n = 0;
	struct dirent *e;
	DIR *d;

	snprintf(dir, sizeof(dir), "%s/cm/" NETDEV ".exit", host_run_dir());
	d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n;
}

struct posted {
	unsigned	n;
	uint32_t	len[4];
	uint8_t		f[4][HOST_CM_EXIT_FRAME_MAX];
};

static int collect(void *arg, const uint8_t *f, uint32_t len)
{
	struct posted *p = arg;

	if (p->n < 4) {
		memcpy(p->f[p->n], f, len);
		p->len[p->n] = len;
	}
	p->n++;
	return 0;
}

/* A file while connections are up, none once the last is over; a live process's is not reaped. */
START_TEST(file_follows_connections)
{
	struct host_cm_exit *t;
	struct posted p = { 0 };
	uint8_t f[HOST_CM_EXIT_FRAME_MAX];
	uint32_t len = frame(f, 0x11, WIRE_CM_DREQ, WIRE_GSI_QPN, our_mac);

	ck_assert_uint_gt(len, 0);
	ck_assert_int_eq(host_cm_exit_open(NETDEV, &t, err, sizeof(err)), 0);
	ck_assert_uint_eq(files_in_dir(), 0);
	ck_assert_int_eq(host_cm_exit_set(t, 0x11, f, len), 0);
	ck_assert_int_eq(host_cm_exit_set(t, 0x22, f, len), 0);
	ck_assert_uint_eq(files_in_dir(), 1);
	ck_assert_uint_eq(host_cm_exit_reap(NETDEV, collect, &p), 0);
	ck_assert_uint_eq(files_in_dir(), 1);
	ck_assert_int_eq(host_cm_exit_set(t, 0x11, NULL, 0), 0);
	ck_assert_uint_eq(files_in_dir(), 1);
	ck_assert_int_eq(host_cm_exit_set(t, 0x22, NULL, 0), 0);
	ck_assert_uint_eq(files_in_dir(), 0);
	ck_assert_int_eq(host_cm_exit_set(t, 0x33, f, HOST_CM_EXIT_FRAME_MAX + 1), -EMSGSIZE);
	host_cm_exit_close(t);
}
END_TEST

/* A process that dies with two connections up: both frames posted byte for byte, once. */
START_TEST(dead_process_frames_posted_once)
{
	struct posted p = { 0 };
	uint8_t f1[HOST_CM_EXIT_FRAME_MAX], f2[HOST_CM_EXIT_FRAME_MAX];
	uint32_t l1 = frame(f1, 0x11, WIRE_CM_DREQ, WIRE_GSI_QPN, our_mac);
	uint32_t l2 = frame(f2, 0x22, WIRE_CM_DREQ, WIRE_GSI_QPN, our_mac);
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		struct host_cm_exit *t;

		if (host_cm_exit_open(NETDEV, &t, err, sizeof(err)) ||
		    host_cm_exit_set(t, 0x11, f1, l1) || host_cm_exit_set(t, 0x22, f2, l2))
			_exit(1);
		_exit(0);	/* connections up: the file stays for the broker */
	}
	waitpid(pid, &status, 0);
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_uint_eq(files_in_dir(), 1);
	ck_assert_uint_eq(host_cm_exit_reap(NETDEV, collect, &p), 2);
	ck_assert_uint_eq(p.n, 2);
	ck_assert_uint_eq(p.len[0], l1);
	ck_assert_mem_eq(p.f[0], f1, l1);
	ck_assert_uint_eq(p.len[1], l2);
	ck_assert_mem_eq(p.f[1], f2, l2);
	ck_assert_uint_eq(files_in_dir(), 0);
	ck_assert_uint_eq(host_cm_exit_reap(NETDEV, collect, &p), 0);
	ck_assert_uint_eq(p.n, 2);
}
END_TEST

/* The broker posts a CM DREQ to QP1 from its netdev's MAC with a good ICRC, and nothing else. */
START_TEST(broker_posts_only_dreqs)
{
	uint8_t f[HOST_CM_EXIT_FRAME_MAX];
	uint32_t len;

	len = frame(f, 1, WIRE_CM_DREQ, WIRE_GSI_QPN, our_mac);
	ck_assert(host_cm_exit_frame_ok(f, len, our_mac));
	ck_assert(!host_cm_exit_frame_ok(f, len, peer_mac));		/* someone else's MAC */
	ck_assert(!host_cm_exit_frame_ok(f, len - 1, our_mac));		/* cut short */
	f[len - 10] ^= 1;						/* ICRC no longer holds */
	ck_assert(!host_cm_exit_frame_ok(f, len, our_mac));
	len = frame(f, 1, WIRE_CM_REQ, WIRE_GSI_QPN, our_mac);
	ck_assert(!host_cm_exit_frame_ok(f, len, our_mac));
	len = frame(f, 1, WIRE_CM_DREQ, 0x100, our_mac);
	ck_assert(!host_cm_exit_frame_ok(f, len, our_mac));
}
END_TEST

Suite *host_cm_exit_suite(void);

Suite *host_cm_exit_suite(void)
{
	Suite *s = suite_create("host_cm_exit");
	TCase *t = tcase_create("exit");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_add_test(t, file_follows_connections);
	tcase_add_test(t, dead_process_frames_posted_once);
	tcase_add_test(t, broker_posts_only_dreqs);
	suite_add_tcase(s, t);
	return s;
}
