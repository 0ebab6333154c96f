// SPDX-License-Identifier: MIT
/*
 * uroce-enginetest: the transport engine through dp_device (DPDK port,
 * progress thread), two processes, RC QPs, connection data exchanged
 * through files in a shared directory.
 *
 *   uroce-enginetest server DEV --dir D [--mode M] [--size B] ...
 *   uroce-enginetest client DEV --dir D [--mode M] [--size B] [--iters N] [--seconds S] [--depth Q]
 *
 * Modes (the client drives, the server follows):
 *   check     RDMA writes and reads of many sizes and offsets, atomics, send
 *             with immediate; the server checks its memory; it only waits on
 *             its CQ (no dp_device_poll()), so the progress thread does the work.
 *   pingpong  send / receive round trips of --size bytes (both sides poll).
 *   lat       RDMA write ping-pong as ib_write_lat does it (both sides poll memory).
 *   bw        --size RDMA writes, --depth outstanding, for --seconds; the
 *             server is passive (progress thread only), the client polls.
 *   memcpy    no device: memcpy() of --size blocks through 64 MiB buffers for
 *             --seconds (the memif benchmark's baseline).
 *   memcpy-hot  the same, one --size block copied again and again, as perftest
 *             reuses its one buffer (the same-host benchmark's baseline).
 *   cma-hot   memcpy-hot with process_vm_writev() into this process: the
 *             kernel's copy that same-host direct placement is made of.
 * Results are printed as "key=value" on one line; non-zero exit on any error.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "uroce/dp.h"

#define MR_SIZE		(4u << 20)
#define CTRL_OFF	(MR_SIZE - 4096)	/* last page: atomics and flags */
#define MAX_DEPTH	64

struct opts {
	const char	*role, *dev, *dir, *mode;
	uint32_t	size, depth, mtu;
	unsigned long	iters;
	double		seconds;
	bool		ipv6;
};

struct peer_info {
	uint32_t	qpn, psn, rkey;
	uint64_t	addr;
	uint8_t		gid[16];
};

struct ctx {
	struct dp_device *dev;
	struct rc_engine *eng;
	struct rc_pd	*pd;
	struct rc_mr	*mr;
	struct rc_cq	*cq;
	struct rc_qp	*qp;
	uint8_t		*buf;
	int		gid_index;
	struct peer_info me, peer;
	bool		passive;	/* never calls dp_device_poll() */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "uroce-enginetest: %s: %s\n", what, strerror(ret < 0 ? -ret : ret));
	exit(1);
}

/* ---- Connection data through files ---- */

static void write_info(const struct opts *o, const struct peer_info *i)
{
	char path[512], tmp[520];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.info", o->dir, o->role);
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		die("write info", errno);
	fprintf(f, "%u %u %u %" PRIu64 " ", i->qpn, i->psn, i->rkey, i->addr);
	for (int k = 0; k < 16; k++)
		fprintf(f, "%02x", i->gid[k]);
	fprintf(f, "\n");
	fclose(f);
	if (rename(tmp, path))
		die("rename info", errno);
}

static void read_info(const struct opts *o, struct peer_info *i)
{
	const char *other = !strcmp(o->role, "server") ? "client" : "server";
	char path[512], hex[40];
	uint64_t end = now_ns() + 30000000000ull;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s.info", o->dir, other);
	while (!(f = fopen(path, "r"))) {
		if (now_ns() > end)
			die("waiting for the peer's info", ETIMEDOUT);
		usleep(10000);
	}
	if (fscanf(f, "%u %u %u %" SCNu64 " %32s", &i->qpn, &i->psn, &i->rkey, &i->addr, hex) != 5)
		die("peer info", EINVAL);
	fclose(f);
	for (int k = 0; k < 16; k++)
		sscanf(hex + 2 * k, "%2hhx", &i->gid[k]);
}

/* ---- Verbs through the engine ---- */

static int find_gid(struct ctx *c, bool ipv6)
{
	static const uint8_t v4prefix[12] = { [10] = 0xff, [11] = 0xff };

	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++) {
		struct wire_gid_entry e;

		if (rc_engine_get_gid(c->eng, i, &e) || !e.valid || e.type != WIRE_GID_ROCE_V2)
			continue;
		if (!memcmp(e.gid, v4prefix, 12) == !ipv6 && !(ipv6 && e.gid[0] == 0xfe)) {
			memcpy(c->me.gid, e.gid, 16);
			return (int)i;
		}
	}
	return -1;
}

static void setup(struct ctx *c, const struct opts *o)
{
	struct rc_qp_init init = { 0 };
	char err[512];
	int ret;

	ret = dp_device_open(o->dev, NULL, &c->dev, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "uroce-enginetest: %s\n", err);
		exit(1);
	}
	c->eng = dp_device_engine(c->dev);
	c->buf = aligned_alloc(4096, MR_SIZE);
	memset(c->buf, 0, MR_SIZE);
	c->pd = rc_pd_alloc(c->eng);
	c->mr = rc_mr_reg(c->pd, c->buf, MR_SIZE, (uint64_t)(uintptr_t)c->buf,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			  IBV_ACCESS_REMOTE_ATOMIC);
	c->cq = rc_cq_create(c->eng, 4096, NULL);
	if (!c->pd || !c->mr || !c->cq)
		die("pd/mr/cq", errno);
	init.qp_type = IBV_QPT_RC;
	init.pd = c->pd;
	init.send_cq = c->cq;
	init.recv_cq = c->cq;
	init.cap.max_send_wr = 256;
	init.cap.max_recv_wr = 256;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	c->qp = rc_qp_create(c->eng, &init);
	if (!c->qp)
		die("create qp", errno);
	dp_device_qp_add(c->dev, c->qp);
	c->gid_index = find_gid(c, o->ipv6);
	if (c->gid_index < 0)
		die("no RoCE v2 GID of the wanted family", ENOENT);
	c->me.qpn = rc_qp_num(c->qp);
	c->me.psn = (uint32_t)(now_ns() & 0xffffff);
	c->me.rkey = rc_mr_rkey(c->mr);
	c->me.addr = (uint64_t)(uintptr_t)c->buf;
}

static void connect_qp(struct ctx *c, const struct opts *o)
{
	struct ibv_qp_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC;
	ret = rc_qp_modify(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_ACCESS_FLAGS);
	if (ret)
		die("INIT", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = o->mtu == 4096 ? IBV_MTU_4096 : o->mtu == 2048 ? IBV_MTU_2048 :
		     o->mtu == 512 ? IBV_MTU_512 : o->mtu == 256 ? IBV_MTU_256 : IBV_MTU_1024;
	a.dest_qp_num = c->peer.qpn;
	a.rq_psn = c->peer.psn;
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = (uint8_t)c->gid_index;
	a.ah_attr.grh.hop_limit = 64;
	memcpy(a.ah_attr.grh.dgid.raw, c->peer.gid, 16);
	ret = rc_qp_modify(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			   IBV_QP_MIN_RNR_TIMER);
	if (ret)
		die("RTR", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = c->me.psn;
	a.timeout = 16;		/* 268 ms: generous on a loaded CI host */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	ret = rc_qp_modify(c->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			   IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		die("RTS", ret);
}

static void post_recv(struct ctx *c, uint64_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(c->buf + off), .length = len,
			       .lkey = rc_mr_lkey(c->mr) };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 }, *bad;
	int ret = rc_post_recv(c->qp, &wr, &bad);

	if (ret)
		die("post_recv", ret);
}

static void post_send(struct ctx *c, enum ibv_wr_opcode op, uint64_t off, uint32_t len,
		      uint64_t remote_off, uint64_t id, uint64_t add_or_compare, uint64_t swap)
{
	struct ibv_sge sge = { .addr = (uint64_t)(uintptr_t)(c->buf + off), .length = len,
			       .lkey = rc_mr_lkey(c->mr) };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = len ? 1 : 0,
				  .opcode = op, .send_flags = IBV_SEND_SIGNALED }, *bad;
	int ret;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = c->peer.addr + remote_off;
		wr.wr.atomic.rkey = c->peer.rkey;
		wr.wr.atomic.compare_add = add_or_compare;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = c->peer.addr + remote_off;
		wr.wr.rdma.rkey = c->peer.rkey;
	}
	if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM)
		wr.imm_data = (uint32_t)add_or_compare;
	ret = rc_post_send(c->qp, &wr, &bad);
	if (ret)
		die("post_send", ret);
}

/* One completion (any); polls the engine unless passive.  Fails on error status or timeout. */
static void wait_wc(struct ctx *c, struct ibv_wc *wc, double timeout_s)
{
	uint64_t end = now_ns() + (uint64_t)(timeout_s * 1e9);

	for (;;) {
		int n;

		if (!c->passive)
			dp_device_poll(c->dev);
		n = rc_cq_poll(c->cq, 1, wc);
		if (n < 0)
			die("poll_cq", n);
		if (n == 1) {
			if (wc->status != IBV_WC_SUCCESS) {
				fprintf(stderr, "uroce-enginetest: completion %" PRIu64 " status %d\n",
					wc->wr_id, (int)wc->status);
				exit(1);
			}
			return;
		}
		if (now_ns() > end)
			die("waiting for a completion", ETIMEDOUT);
		if (c->passive)
			usleep(200);
	}
}

static void fill(uint8_t *p, uint32_t len, uint32_t seed)
{
	for (uint32_t i = 0; i < len; i++)
		p[i] = (uint8_t)(seed * 131 + i * 7 + (i >> 8));
}

static void print_counters(struct ctx *c)
{
	struct rc_counters rc;

	rc_engine_counters(c->eng, &rc);
	printf("retransmits=%" PRIu64 " timeouts=%" PRIu64 " seq_naks_rx=%" PRIu64
	       " duplicates=%" PRIu64 "\n", rc.retransmits, rc.timeouts, rc.seq_naks_rx,
	       rc.duplicates);
}

/* ---- check ---- */

static const uint32_t check_sizes[] = { 1, 3, 64, 255, 1024, 1025, 4096, 4097, 65536, 1000000 };
#define N_CHECK (sizeof(check_sizes) / sizeof(check_sizes[0]))

/* Where size i lands in the server's buffer: back to back, odd offsets, no overlap. */
static uint64_t check_offset(unsigned i)
{
	uint64_t off = 0;

	for (unsigned k = 0; k < i; k++)
		off += check_sizes[k] + 7;
	return off + 1;
}

static int client_check(struct ctx *c)
{
	uint64_t *ctrl = (uint64_t *)(c->buf + CTRL_OFF);
	struct ibv_wc wc;
	uint8_t *expect = malloc(1000000);

	/* Writes: a pattern per size at an odd offset; read back into another area and compare. */
	for (unsigned i = 0; i < N_CHECK; i++) {
		uint32_t len = check_sizes[i];
		uint64_t off = check_offset(i);

		fill(c->buf + 2097152, len, i);
		post_send(c, IBV_WR_RDMA_WRITE, 2097152, len, off, i, 0, 0);
		wait_wc(c, &wc, 10);
		memset(c->buf + 3145728, 0, len < 900000 ? len : 900000);
		post_send(c, IBV_WR_RDMA_READ, 3145728, len < 900000 ? len : 900000, off, 100 + i, 0, 0);
		wait_wc(c, &wc, 10);
		fill(expect, len, i);
		if (memcmp(c->buf + 3145728, expect, len < 900000 ? len : 900000)) {
			printf("check read-back mismatch size=%u\n", len);
			return 1;
		}
	}
	/* Fetch-and-add: returned old values count up; compare-and-swap hits and misses. */
	for (uint64_t k = 0; k < 100; k++) {
		post_send(c, IBV_WR_ATOMIC_FETCH_AND_ADD, CTRL_OFF, 8, CTRL_OFF, 1000 + k, 3, 0);
		wait_wc(c, &wc, 10);
		if (ctrl[0] != 1000 + 3 * k) {
			printf("check FAA returned %" PRIu64 " expected %" PRIu64 "\n", ctrl[0], 1000 + 3 * k);
			return 1;
		}
	}
	post_send(c, IBV_WR_ATOMIC_CMP_AND_SWP, CTRL_OFF, 8, CTRL_OFF, 2000, 1300, 77);
	wait_wc(c, &wc, 10);
	post_send(c, IBV_WR_ATOMIC_CMP_AND_SWP, CTRL_OFF + 8, 8, CTRL_OFF, 2001, 1300, 99);
	wait_wc(c, &wc, 10);
	if (ctrl[0] != 1300 || ctrl[1] != 77) {
		printf("check CAS returned %" PRIu64 " then %" PRIu64 "\n", ctrl[0], ctrl[1]);
		return 1;
	}
	/* Done: a send with immediate; the server answers with its verdict. */
	post_recv(c, CTRL_OFF + 64, 64, 3000);
	post_send(c, IBV_WR_SEND_WITH_IMM, CTRL_OFF, 0, 0, 3001, 0xc0ffee, 0);
	for (int got = 0; got < 2;) {
		wait_wc(c, &wc, 20);
		got++;
	}
	free(expect);
	printf("check client done verdict=%s\n", (char *)(c->buf + CTRL_OFF + 64));
	/*
	 * Our ACK of the verdict may be lost (the loss run drops 1 % each way):
	 * the server's resends are answered for a moment, as the server waits
	 * for its own last ACK.  Without this, a lost last ACK left the server's
	 * verdict to end in IBV_WC_RETRY_EXC_ERR once we had closed.  The
	 * progress thread answers them meanwhile.
	 */
	sleep(1);
	return strcmp((char *)(c->buf + CTRL_OFF + 64), "ok") ? 1 : 0;
}

static int server_check(struct ctx *c)
{
	uint64_t *ctrl = (uint64_t *)(c->buf + CTRL_OFF);
	uint8_t *expect = malloc(1000000);
	const char *verdict = "ok";
	struct ibv_wc wc;

	ctrl[0] = 1000;		/* the client's fetch-and-add counter starts here */
	post_recv(c, CTRL_OFF + 128, 64, 1);
	c->passive = true;	/* only the progress thread moves the engine */
	wait_wc(c, &wc, 60);
	if (wc.opcode != IBV_WC_RECV || !(wc.wc_flags & IBV_WC_WITH_IMM) || wc.imm_data != 0xc0ffee)
		verdict = "bad-imm";
	for (unsigned i = 0; i < N_CHECK && !strcmp(verdict, "ok"); i++) {
		fill(expect, check_sizes[i], i);
		if (memcmp(c->buf + check_offset(i), expect, check_sizes[i]))
			verdict = "bad-data";
	}
	if (ctrl[0] != 77)
		verdict = "bad-atomic";
	c->passive = false;
	strcpy((char *)c->buf + CTRL_OFF + 256, verdict);
	post_send(c, IBV_WR_SEND, CTRL_OFF + 256, 16, 0, 2, 0, 0);
	wait_wc(c, &wc, 10);
	free(expect);
	printf("check server verdict=%s\n", verdict);
	sleep(1);	/* the ACK of our verdict reaches the client */
	return strcmp(verdict, "ok") ? 1 : 0;
}

/* ---- pingpong (send/recv) ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *s, unsigned long n, uint32_t size)
{
	double sum = 0;

	qsort(s, n, sizeof(*s), cmp_u64);
	for (unsigned long i = 0; i < n; i++)
		sum += (double)s[i];
	printf("%s size=%u iters=%lu rtt_min_us=%.2f rtt_median_us=%.2f rtt_p99_us=%.2f "
	       "rtt_avg_us=%.2f\n", what, size, n, s[0] / 1e3, s[n / 2] / 1e3, s[n * 99 / 100] / 1e3,
	       sum / (double)n / 1e3);
}

static int pingpong(struct ctx *c, const struct opts *o, bool client)
{
	uint64_t *rtt = calloc(o->iters, sizeof(*rtt));
	struct ibv_wc wc;

	for (unsigned k = 0; k < 8; k++)
		post_recv(c, 1048576 + (uint64_t)k * 65536, 65536, 10 + k);
	for (unsigned long i = 0; i < o->iters; i++) {
		uint64_t t0 = now_ns();
		bool want_send = client, want_recv = true;

		fill(c->buf, o->size, (uint32_t)i);
		if (client)
			post_send(c, IBV_WR_SEND, 0, o->size, 0, 1, 0, 0);
		while (want_send || want_recv) {
			wait_wc(c, &wc, 10);
			if (wc.opcode != IBV_WC_RECV) {
				want_send = false;
				continue;
			}
			if (wc.byte_len != o->size ||
			    memcmp(c->buf + 1048576 + (wc.wr_id - 10) * 65536, c->buf, o->size))
				die("pingpong payload", EBADMSG);
			post_recv(c, 1048576 + (wc.wr_id - 10) * 65536, 65536, wc.wr_id);
			want_recv = false;
			if (!client) {
				post_send(c, IBV_WR_SEND, 0, o->size, 0, 1, 0, 0);
				want_send = true;
			}
		}
		rtt[i] = now_ns() - t0;
	}
	if (client)
		report("pingpong", rtt, o->iters, o->size);
	free(rtt);
	return 0;
}

/* ---- lat: RDMA write ping-pong polled in memory (ib_write_lat) ---- */

static int write_lat(struct ctx *c, const struct opts *o, bool client)
{
	uint64_t *rtt = calloc(o->iters, sizeof(*rtt));
	volatile uint8_t *in = c->buf + 65536;
	uint32_t last = o->size - 1;
	struct ibv_wc wc;

	for (unsigned long i = 0; i < o->iters; i++) {
		uint8_t tag = (uint8_t)(i % 255 + 1);
		uint64_t t0 = now_ns(), end = t0 + 5000000000ull;

		if (client) {
			c->buf[last] = tag;
			post_send(c, IBV_WR_RDMA_WRITE, 0, o->size, 65536, i, 0, 0);
		}
		while (in[last] != tag) {
			dp_device_poll(c->dev);
			while (rc_cq_poll(c->cq, 1, &wc) == 1)
				if (wc.status != IBV_WC_SUCCESS)
					die("write completion", EIO);
			if (now_ns() > end)
				die("write_lat: no write from the peer", ETIMEDOUT);
		}
		if (!client) {
			c->buf[last] = tag;
			post_send(c, IBV_WR_RDMA_WRITE, 0, o->size, 65536, i, 0, 0);
		}
		rtt[i] = now_ns() - t0;
	}
	/* Drain our last completions. */
	for (uint64_t end = now_ns() + 100000000ull; now_ns() < end;) {
		dp_device_poll(c->dev);
		while (rc_cq_poll(c->cq, 1, &wc) == 1)
			;
	}
	if (client)
		report("write_lat", rtt, o->iters, o->size);
	free(rtt);
	return 0;
}

/* ---- bw: pipelined RDMA writes against a passive server ---- */

static int write_bw(struct ctx *c, const struct opts *o)
{
	uint64_t t0, end, bytes = 0, completions = 0;
	unsigned outstanding = 0;
	struct ibv_wc wc[32];
	uint64_t *flag = (uint64_t *)(c->buf + CTRL_OFF);

	fill(c->buf, o->size, 1);
	t0 = now_ns();
	end = t0 + (uint64_t)(o->seconds * 1e9);
	while (now_ns() < end || outstanding) {
		int n;

		while (outstanding < o->depth && now_ns() < end) {
			post_send(c, IBV_WR_RDMA_WRITE, 0, o->size, (completions + outstanding) % 32 * o->size,
				  0, 0, 0);
			outstanding++;
		}
		dp_device_poll(c->dev);
		n = rc_cq_poll(c->cq, 32, wc);
		if (n < 0)
			die("poll", n);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "uroce-enginetest: write status %d\n",
					(int)wc[i].status);
				return 1;
			}
			bytes += o->size;
			completions++;
			outstanding--;
		}
	}
	t0 = now_ns() - t0;
	/* Tell the server we are done: a write of a flag it polls for. */
	*flag = 0x600d;
	post_send(c, IBV_WR_RDMA_WRITE, CTRL_OFF, 8, CTRL_OFF, 0, 0, 0);
	wait_wc(c, wc, 10);
	printf("write_bw size=%u depth=%u seconds=%.2f bytes=%" PRIu64 " goodput_gbps=%.3f\n", o->size,
	       o->depth, t0 / 1e9, bytes, bytes * 8.0 / (double)t0);
	return 0;
}

static int server_bw(struct ctx *c)
{
	volatile uint64_t *flag = (uint64_t *)(c->buf + CTRL_OFF);
	uint64_t end = now_ns() + 600000000000ull;

	/* Passive: no dp_device_poll(); the progress thread receives everything. */
	while (*flag != 0x600d && now_ns() < end)
		usleep(1000);
	printf("write_bw server done\n");
	sleep(1);
	return *flag == 0x600d ? 0 : 1;
}

/*
 * memcpy() of --size blocks, or (@cma) the same copies with process_vm_writev()
 * into this process: the kernel's cross-process copy that same-host direct
 * placement makes, its ceiling.
 */
static int memcpy_bw(const struct opts *o, bool hot, bool cma)
{
	pid_t self = getpid();
	size_t span = hot ? o->size + 1 : 64u << 20;
	/*
	 * Page-aligned, as perftest's buffers are: two malloc() blocks side by
	 * side put the destination 16 bytes past the source modulo 4 KiB, and
	 * each load then waited for the store it falsely aliased (64 KiB: 22
	 * Gbit/s, a cold 64 MiB copy 73).
	 */
	size_t alloc = (span + 4095) & ~(size_t)4095;
	uint8_t *src = aligned_alloc(4096, alloc), *dst = aligned_alloc(4096, alloc);
	uint64_t t0, bytes = 0;
	size_t off = 0;

	if (!src || !dst)
		return 1;
	memset(src, 1, span);
	memset(dst, 2, span);
	t0 = now_ns();
	while (now_ns() - t0 < (uint64_t)(o->seconds * 1e9)) {
		for (int k = 0; k < 64; k++) {
			struct iovec from = { src + off, o->size }, to = { dst + off, o->size };

			if (!cma)
				memcpy(dst + off, src + off, o->size);
			else if (process_vm_writev(self, &from, 1, &to, 1, 0) != (ssize_t)o->size)
				return 1;
			off = (off + o->size) % (span - o->size);
			bytes += o->size;
		}
	}
	t0 = now_ns() - t0;
	printf("%s size=%u seconds=%.2f bytes=%" PRIu64 " goodput_gbps=%.3f check=%u\n",
	       cma ? "process_vm_writev" : "memcpy", o->size,
	       t0 / 1e9, bytes, bytes * 8.0 / (double)t0, dst[off]);
	free(src);
	free(dst);
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "dir", 1, 0, 'd' }, { "mode", 1, 0, 'm' }, { "size", 1, 0, 's' },
		{ "iters", 1, 0, 'n' }, { "seconds", 1, 0, 'S' }, { "depth", 1, 0, 'q' },
		{ "mtu", 1, 0, 'M' }, { "ipv6", 0, 0, '6' }, { 0, 0, 0, 0 } };
	struct opts o = { .mode = "check", .size = 64, .iters = 1000, .seconds = 5, .depth = 16,
			  .mtu = 1024 };
	struct ctx c;
	bool client;
	int opt, ret = 1;

	if (argc < 3) {
		fprintf(stderr, "usage: uroce-enginetest server|client DEV --dir DIR [--mode M] ...\n");
		return 2;
	}
	o.role = argv[1];
	o.dev = argv[2];
	optind = 3;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case 'd': o.dir = optarg; break;
		case 'm': o.mode = optarg; break;
		case 's': o.size = (uint32_t)atoi(optarg); break;
		case 'n': o.iters = strtoul(optarg, NULL, 0); break;
		case 'S': o.seconds = atof(optarg); break;
		case 'q': o.depth = (uint32_t)atoi(optarg); break;
		case 'M': o.mtu = (uint32_t)atoi(optarg); break;
		case '6': o.ipv6 = true; break;
		default: return 2;
		}
	}
	if (!strcmp(o.mode, "memcpy") || !strcmp(o.mode, "memcpy-hot") || !strcmp(o.mode, "cma-hot"))
		return memcpy_bw(&o, strcmp(o.mode, "memcpy"), !strcmp(o.mode, "cma-hot"));
	if (!o.dir || o.depth > MAX_DEPTH || o.size > 65536 * 2)
		return 2;
	client = !strcmp(o.role, "client");
	setvbuf(stdout, NULL, _IOLBF, 0);
	memset(&c, 0, sizeof(c));
	setup(&c, &o);
	write_info(&o, &c.me);
	read_info(&o, &c.peer);
	connect_qp(&c, &o);
	if (!strcmp(o.mode, "check"))
		ret = client ? client_check(&c) : server_check(&c);
	else if (!strcmp(o.mode, "pingpong"))
		ret = pingpong(&c, &o, client);
	else if (!strcmp(o.mode, "lat"))
		ret = write_lat(&c, &o, client);
	else if (!strcmp(o.mode, "bw"))
		ret = client ? write_bw(&c, &o) : server_bw(&c);
	print_counters(&c);
	dp_device_qp_del(c.dev, c.qp);
	rc_qp_destroy(c.qp);
	rc_cq_destroy(c.cq);
	rc_mr_dereg(c.mr);
	rc_pd_free(c.pd);
	dp_device_close(c.dev);
	free(c.buf);
	return ret;
}
