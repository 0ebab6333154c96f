// SPDX-License-Identifier: MIT
/* Thousands of RC QPs in one process, and a connection storm: data checked, nothing leaked. */
#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/*
 * usage: scale_check [-d DEV] [-g GIDX] [-p PORT] [-n QPS] [--storm PAIRS]
 *                    [--rounds N] [--uroce PATH] [--hold FILE] [--peer-loss] [HOST]
 *
 * Both ends run the same steps; without HOST this end listens for the other.
 * A round: each end creates QPS RC QPs, the two exchange QP numbers over
 * TCP and connect QP i to the peer's QP i, every QP writes one block of
 * pattern(round, i, end) with immediate i into the peer's block i, and each
 * end checks every completion (QP, immediate) and every block it received;
 * then all QPs are destroyed.  One round of QPS, then ROUNDS rounds of
 * PAIRS (the storm).  Around them the process's open files, its resident
 * memory and what `uroce stat` says of the device (live_qps, qp_bytes,
 * qpns_held: the QPNs it holds in the host-wide table) must come back to
 * where they were.  Prints "PASS name" or "FAIL name: why" for each check,
 * "FIGURE ..." lines with what was measured (the last one the engine's
 * packet counts and the port's drops, to add up across processes); the exit
 * status is the number of failures.
 *
 * --peer-loss instead connects QPS QPs and streams writes on each until it
 * fails: the end without HOST waits to be killed, the other prints
 * "streaming" once every QP has had a write succeed, and expects every QP
 * to end in IBV_WC_RETRY_EXC_ERR within the retry budget after the last
 * write that succeeded.
 *
 * --hold FILE: with the first round's QPS QPs connected and their data
 * checked, print "HOLDING" and wait until FILE exists, so that a test can
 * look at many processes' QPs live at once.
 */

#define BLOCK		4096u
#define WAIT_MS		60000
#define STAT_WAIT_MS	5000	/* `uroce stat` is refreshed every 100 ms */
#define STORM_RSS_SLACK	(2u << 20)	/* allocator noise between the first and last storm round */
#define QP_TIMEOUT	14	/* 4.096 us * 2^14 = 67 ms per try */
#define QP_RETRY	7
/* IBA C9-140/141: (retry_cnt + 1) tries of 4.096 us * 2^timeout, with slack for scheduling. */
#define RETRY_BUDGET_MS	((QP_RETRY + 1) * 4096ull * (1u << QP_TIMEOUT) / 1000000 * 4 + 2000)

struct peer_info {
	uint32_t	n, round;
	uint8_t		gid[16];
	uint64_t	addr;
	uint32_t	rkey, pad;
};

struct end {
	struct ibv_context	*ctx;
	struct ibv_pd		*pd;
	struct ibv_cq		*scq, *rcq;
	struct ibv_mr		*mr;
	uint8_t			*local, *remote;	/* BLOCK per QP each, in the one MR */
	union ibv_gid		gid;
	int			gid_index;
	enum ibv_mtu		mtu;
	unsigned		max_qps;
	int			sock;
	bool			server;
	const char		*devname, *uroce;
	const char		*hold;		/* --hold FILE */
	struct ibv_qp		**qps;
	uint32_t		*my_qpn, *peer_qpn;	/* QPN and PSN pairs */
};

struct gauges {
	uint64_t	live_qps, qp_bytes, bytes_per_qp, qpns_held;
	uint64_t	qps_listed;	/* QPs with counters of their own in `uroce stat -j` */
	uint64_t	tx_packets, rx_packets, retransmits, rx_ring_drops, tx_dropped;
	uint64_t	tx_frames, rx_roce;
	uint64_t	updated_ns;	/* when the process last published its counters */
	long		fds, rss;
};

static int failures;

static void die(const char *what)
{
	fprintf(stderr, "scale_check: %s: %s\n", what, strerror(errno));
	exit(100);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void report(bool ok, const char *name, const char *why)
{
	if (ok) {
		printf("PASS %s\n", name);
	} else {
		failures++;
		printf("FAIL %s: %s\n", name, why);
	}
	fflush(stdout);
}

static uint8_t pattern_byte(uint32_t round, uint32_t qp, bool server, size_t k)
{
	return (uint8_t)(round * 131 + qp * 31 + k * 7 + (server ? 101 : 0));
}

/* ---- What the process holds ---- */

static long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	long n = 0;

	if (!d)
		die("/proc/self/fd");
	while ((e = readdir(d)))
		n += e->d_name[0] != '.';
	closedir(d);
	return n - 1;	/* the directory's own */
}

static long rss_bytes(void)
{
	long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f || fscanf(f, "%*d %ld", &pages) != 1)
		die("/proc/self/statm");
	fclose(f);
	return pages * sysconf(_SC_PAGESIZE);
}

/* Counter @name of this process's entry in `uroce stat -j` output @json: 0 if absent. */
static uint64_t stat_value(const char *json, const char *name)
{
	char key[64];
	const char *me, *p;

	snprintf(key, sizeof(key), "\"pid\":%d,", (int)getpid());
	me = strstr(json, key);
	if (!me)
		return UINT64_MAX;
	snprintf(key, sizeof(key), "\"%s\":", name);
	p = strstr(me, key);
	return p ? strtoull(p + strlen(key), NULL, 10) : UINT64_MAX;
}

/* The QPs this process's entry in `uroce stat -j` output @json lists. */
static uint64_t stat_qps_listed(const char *json)
{
	char key[64];
	const char *p, *end;
	uint64_t n = 0;

	snprintf(key, sizeof(key), "\"pid\":%d,", (int)getpid());
	p = strstr(json, key);
	if (!p)
		return 0;
	end = strstr(p, "{\"device\"");
	while ((p = strstr(p, "{\"qpn\":")) && (!end || p < end)) {
		n++;
		p++;
	}
	return n;
}

static char *run_stat(const struct end *e)
{
	char cmd[512], *buf = NULL;
	size_t len = 0, cap = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd), "'%s' stat -j %s", e->uroce, e->devname);
	f = popen(cmd, "r");
	if (!f)
		die("popen uroce stat");
	for (;;) {
		if (len + 65536 > cap) {
			cap = cap * 2 + 65536;
			buf = realloc(buf, cap + 1);
			if (!buf)
				die("realloc");
		}
		size_t n = fread(buf + len, 1, cap - len, f);

		if (!n)
			break;
		len += n;
	}
	pclose(f);
	buf[len] = '\0';
	return buf;
}

/*
 * The device's gauges once `uroce stat` shows @want_qps live QPs (it is
 * refreshed every 100 ms), or as they are after STAT_WAIT_MS; then the open
 * files and resident memory, outside popen().
 */
static struct gauges measure(const struct end *e, uint64_t want_qps)
{
	uint64_t end = now_ms() + STAT_WAIT_MS;
	struct gauges g;

	do {
		char *json = run_stat(e);

		g.live_qps = stat_value(json, "live_qps");
		g.qp_bytes = stat_value(json, "qp_bytes");
		g.bytes_per_qp = stat_value(json, "bytes_per_qp");
		g.qpns_held = stat_value(json, "qpns_held");
		g.tx_packets = stat_value(json, "tx_packets");
		g.rx_packets = stat_value(json, "rx_packets");
		g.retransmits = stat_value(json, "retransmits");
		g.rx_ring_drops = stat_value(json, "rx_ring_drops");
		g.tx_dropped = stat_value(json, "tx_dropped");
		g.tx_frames = stat_value(json, "tx_frames");
		g.rx_roce = stat_value(json, "rx_roce");
		g.updated_ns = stat_value(json, "updated_ns");
		g.qps_listed = stat_qps_listed(json);
		free(json);
		if (g.live_qps == want_qps)
			break;
		usleep(50000);
	} while (now_ms() < end);
	g.fds = open_fds();
	g.rss = rss_bytes();
	return g;
}

/*
 * The gauges once the packet counts stop moving: two snapshots published one
 * after the other that agree, so frames still on their way when both ends
 * agreed to stop are counted too.
 */
static struct gauges measure_settled(const struct end *e, uint64_t want_qps)
{
	uint64_t end = now_ms() + STAT_WAIT_MS;
	struct gauges prev = measure(e, want_qps), g = prev;

	while (now_ms() < end) {
		usleep(20000);
		g = measure(e, want_qps);
		if (g.updated_ns == prev.updated_ns)
			continue;
		if (g.tx_packets == prev.tx_packets && g.rx_packets == prev.rx_packets &&
		    g.rx_ring_drops == prev.rx_ring_drops && g.tx_dropped == prev.tx_dropped)
			break;
		prev = g;
	}
	return g;
}

/* --hold FILE: say so, then wait until FILE exists (the test holds many processes' QPs at once). */
static void hold_until(const char *file, uint32_t n)
{
	printf("HOLDING %u QPs\n", n);
	fflush(stdout);
	while (access(file, F_OK))
		usleep(10000);
}

/* ---- Control connection ---- */

static void xfer(int sock, void *buf, size_t len, bool send_it)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = send_it ? write(sock, (char *)buf + done, len - done) :
				      read(sock, (char *)buf + done, len - done);

		if (n <= 0) {
			errno = n ? errno : ECONNRESET;
			die("control connection");
		}
		done += (size_t)n;
	}
}

/* Mine to the peer, the peer's to @theirs: the server reads first, so neither end blocks. */
static void swap(const struct end *e, const void *mine, void *theirs, size_t len)
{
	if (e->server) {
		xfer(e->sock, theirs, len, false);
		xfer(e->sock, (void *)mine, len, true);
	} else {
		xfer(e->sock, (void *)mine, len, true);
		xfer(e->sock, theirs, len, false);
	}
}

static void barrier(const struct end *e)
{
	char a = 'b', b;

	swap(e, &a, &b, 1);
}

static int tcp_connect(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = host ? 0 : AI_PASSIVE };
	struct addrinfo *res;
	uint64_t end = now_ms() + 10000;
	int fd = -1, one = 1;

	if (getaddrinfo(host, port, &hints, &res))
		die("getaddrinfo");
	if (!host) {
		int lfd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

		if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1))
			die("listen");
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		close(lfd);
	} else {
		while (fd < 0 && now_ms() < end) {
			fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
			if (fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen)) {
				close(fd);
				fd = -1;
				usleep(100000);
			}
		}
	}
	freeaddrinfo(res);
	if (fd < 0)
		die("control connection");
	return fd;
}

/* ---- Verbs ---- */

static void end_open(struct end *e, int gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;
	size_t len = (size_t)e->max_qps * BLOCK * 2;

	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), e->devname)) {
			e->ctx = ibv_open_device(list[i]);
			break;
		}
	ibv_free_device_list(list);
	if (!e->ctx)
		die("ibv_open_device");
	if (ibv_query_port(e->ctx, 1, &port))
		die("ibv_query_port");
	e->mtu = port.active_mtu;
	e->gid_index = gid_index;
	if (ibv_query_gid(e->ctx, 1, gid_index, &e->gid))
		die("ibv_query_gid");
	e->pd = ibv_alloc_pd(e->ctx);
	e->scq = ibv_create_cq(e->ctx, (int)e->max_qps, NULL, NULL, 0);
	e->rcq = ibv_create_cq(e->ctx, (int)e->max_qps, NULL, NULL, 0);
	e->local = aligned_alloc(4096, len);
	e->qps = calloc(e->max_qps, sizeof(*e->qps));
	e->my_qpn = calloc(2 * (size_t)e->max_qps, sizeof(uint32_t));
	e->peer_qpn = calloc(2 * (size_t)e->max_qps, sizeof(uint32_t));
	if (!e->pd || !e->scq || !e->rcq || !e->local || !e->qps || !e->my_qpn || !e->peer_qpn)
		die("resources");
	memset(e->local, 0, len);
	e->remote = e->local + (size_t)e->max_qps * BLOCK;
	e->mr = ibv_reg_mr(e->pd, e->local, len, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!e->mr)
		die("ibv_reg_mr");
}

static struct ibv_qp *qp_new(struct end *e)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC, .send_cq = e->scq, .recv_cq = e->rcq,
		.cap = { .max_send_wr = 2, .max_recv_wr = 2, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE,
	};
	struct ibv_recv_wr wr = { 0 }, *bad;
	struct ibv_qp *qp = ibv_create_qp(e->pd, &init);

	if (!qp)
		return NULL;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS) || ibv_post_recv(qp, &wr, &bad))
		die("QP to INIT");
	return qp;
}

static void qp_connect(const struct end *e, struct ibv_qp *qp, uint32_t qpn, uint32_t psn,
		       const uint8_t gid[16], uint32_t my_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = e->mtu, .dest_qp_num = qpn, .rq_psn = psn,
		.max_dest_rd_atomic = 1, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = (uint8_t)e->gid_index, .hop_limit = 64 } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		die("QP to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = QP_TIMEOUT;
	a.retry_cnt = QP_RETRY;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("QP to RTS");
}

/* Every QP's write and the peer's into us: 0, or -1 with @why. */
static int move_data(struct end *e, uint32_t n, uint32_t round, const struct peer_info *peer,
		     char *why, size_t whylen)
{
	uint32_t sends = 0, recvs = 0, bad_block = UINT32_MAX;
	uint64_t end;

	for (uint32_t i = 0; i < n; i++) {
		uint8_t *blk = e->local + (size_t)i * BLOCK;
		struct ibv_sge sge = { .addr = (uintptr_t)blk, .length = BLOCK, .lkey = e->mr->lkey };
		struct ibv_send_wr wr = {
			.wr_id = i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
			.imm_data = htobe32(i),
			.wr.rdma = { .remote_addr = peer->addr + (uint64_t)i * BLOCK,
				     .rkey = peer->rkey },
		}, *bad;

		for (size_t k = 0; k < BLOCK; k++)
			blk[k] = pattern_byte(round, i, e->server, k);
		if (ibv_post_send(e->qps[i], &wr, &bad)) {
			snprintf(why, whylen, "post_send on QP %u: %s", i, strerror(errno));
			return -1;
		}
	}
	end = now_ms() + WAIT_MS;
	while ((sends < n || recvs < n) && now_ms() < end) {
		struct ibv_wc wc[64];
		int k = ibv_poll_cq(e->scq, 64, wc);

		for (int j = 0; j < k; j++, sends++)
			if (wc[j].status != IBV_WC_SUCCESS) {
				snprintf(why, whylen, "write %" PRIu64 ": %s", wc[j].wr_id,
					 ibv_wc_status_str(wc[j].status));
				return -1;
			}
		k = ibv_poll_cq(e->rcq, 64, wc);
		for (int j = 0; j < k; j++, recvs++) {
			uint32_t imm = be32toh(wc[j].imm_data);

			if (wc[j].status != IBV_WC_SUCCESS ||
			    wc[j].opcode != IBV_WC_RECV_RDMA_WITH_IMM || imm >= n ||
			    e->qps[imm]->qp_num != wc[j].qp_num || wc[j].byte_len != BLOCK) {
				snprintf(why, whylen, "receive on QP 0x%x: %s, opcode %d, imm %u, "
					 "%u bytes", wc[j].qp_num, ibv_wc_status_str(wc[j].status),
					 wc[j].opcode, imm, wc[j].byte_len);
				return -1;
			}
		}
	}
	if (sends < n || recvs < n) {
		snprintf(why, whylen, "%u of %u writes and %u of %u receives completed in %u ms",
			 sends, n, recvs, n, WAIT_MS);
		return -1;
	}
	for (uint32_t i = 0; i < n && bad_block == UINT32_MAX; i++)
		for (size_t k = 0; k < BLOCK; k++)
			if (e->remote[(size_t)i * BLOCK + k] !=
			    pattern_byte(round, i, !e->server, k)) {
				bad_block = i;
				break;
			}
	if (bad_block != UINT32_MAX) {
		snprintf(why, whylen, "block %u is not what the peer's QP %u wrote", bad_block,
			 bad_block);
		return -1;
	}
	return 0;
}

struct round_times {
	uint64_t	create_ms, connect_ms, data_ms, destroy_ms;
	struct gauges	peak;
};

/* @n QPs in INIT, connected to the peer's @n: 0, or -1 with @why.  The peer's MR in @peer. */
static int qps_up(struct end *e, uint32_t n, uint32_t round, struct round_times *t,
		  uint64_t base_qps, struct peer_info *peer, char *why, size_t whylen)
{
	struct peer_info mine = {
		.n = n, .round = round, .addr = (uintptr_t)e->remote, .rkey = e->mr->rkey,
	};
	uint64_t t0 = now_ms();

	memcpy(mine.gid, e->gid.raw, 16);
	for (uint32_t i = 0; i < n; i++) {
		e->qps[i] = qp_new(e);
		if (!e->qps[i]) {
			snprintf(why, whylen, "ibv_create_qp %u of %u: %s", i + 1, n, strerror(errno));
			for (uint32_t j = 0; j < i; j++)
				ibv_destroy_qp(e->qps[j]);
			return -1;
		}
		e->my_qpn[2 * i] = e->qps[i]->qp_num;
		e->my_qpn[2 * i + 1] = (uint32_t)lrand48() & 0xffffff;
	}
	t->create_ms = now_ms() - t0;
	t->peak = measure(e, base_qps + n);
	swap(e, &mine, peer, sizeof(mine));
	if (peer->n != n || peer->round != round) {
		fprintf(stderr, "scale_check: peer is at round %u with %u QPs\n", peer->round,
			peer->n);
		exit(100);
	}
	swap(e, e->my_qpn, e->peer_qpn, (size_t)n * 2 * sizeof(uint32_t));
	t0 = now_ms();
	for (uint32_t i = 0; i < n; i++)
		qp_connect(e, e->qps[i], e->peer_qpn[2 * i], e->peer_qpn[2 * i + 1], peer->gid,
			   e->my_qpn[2 * i + 1]);
	t->connect_ms = now_ms() - t0;
	barrier(e);	/* both ends ready to receive */
	return 0;
}

/* One round of @n QP pairs.  Return: 0, or -1 with @why. */
static int round_run(struct end *e, uint32_t n, uint32_t round, struct round_times *t,
		     uint64_t base_qps, char *why, size_t whylen)
{
	struct peer_info peer;
	uint64_t t0;
	int ret;

	if (qps_up(e, n, round, t, base_qps, &peer, why, whylen))
		return -1;
	t0 = now_ms();
	ret = move_data(e, n, round, &peer, why, whylen);
	t->data_ms = now_ms() - t0;
	if (round == 0 && e->hold)
		hold_until(e->hold, n);
	barrier(e);	/* nothing in flight any more towards our QPs */
	t0 = now_ms();
	for (uint32_t i = 0; i < n; i++)
		if (ibv_destroy_qp(e->qps[i]))
			die("ibv_destroy_qp");
	t->destroy_ms = now_ms() - t0;
	barrier(e);
	return ret;
}

static int post_write(struct end *e, uint32_t i, const struct peer_info *peer)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->local + (size_t)i * BLOCK, .length = BLOCK,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = i, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = peer->addr + (uint64_t)i * BLOCK, .rkey = peer->rkey },
	}, *bad;

	return ibv_post_send(e->qps[i], &wr, &bad);
}

/*
 * --peer-loss: writes on every QP, one at a time each, until each has
 * failed.  The end without HOST never returns (it is killed with its
 * namespace).  Return: 0, or -1 with @why.
 */
static int peer_loss(struct end *e, uint32_t n, uint64_t base_qps, char *why, size_t whylen)
{
	uint32_t errors = 0, successes = 0, n_streaming = 0;
	uint64_t last_ok = 0, slowest = 0, end;
	struct round_times t;
	struct peer_info peer;
	bool *streaming;
	int ret = -1;

	if (qps_up(e, n, 0, &t, base_qps, &peer, why, whylen))
		return -1;
	if (e->server) {
		printf("connected\n");
		fflush(stdout);
		for (;;)
			pause();
	}
	streaming = calloc(n, sizeof(*streaming));
	if (!streaming)
		die("calloc");
	for (uint32_t i = 0; i < n; i++)
		if (post_write(e, i, &peer))
			die("ibv_post_send");
	end = now_ms() + 600000;
	while (errors < n && now_ms() < end) {
		struct ibv_wc wc[64];
		int k = ibv_poll_cq(e->scq, 64, wc);

		for (int j = 0; j < k; j++) {
			uint32_t i = (uint32_t)wc[j].wr_id;

			if (wc[j].status == IBV_WC_SUCCESS) {
				last_ok = now_ms();
				successes++;
				/* Every QP has moved data: the test may take the peer away now. */
				if (i < n && !streaming[i]) {
					streaming[i] = true;
					if (++n_streaming == n) {
						printf("streaming\n");
						fflush(stdout);
					}
				}
				if (post_write(e, i, &peer))
					die("ibv_post_send");
				continue;
			}
			errors++;
			if (wc[j].status != IBV_WC_RETRY_EXC_ERR) {
				snprintf(why, whylen, "QP %u ended in %s, want %s", i,
					 ibv_wc_status_str(wc[j].status),
					 ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
				goto out;
			}
			if (!last_ok) {
				snprintf(why, whylen, "QP %u failed before any write succeeded", i);
				goto out;
			}
			if (now_ms() - last_ok > slowest)
				slowest = now_ms() - last_ok;
		}
	}
	printf("FIGURE peer_loss qps=%u writes=%u slowest_ms=%" PRIu64 " budget_ms=%llu\n", n,
	       successes, slowest, RETRY_BUDGET_MS);
	if (errors < n)
		snprintf(why, whylen, "%u of %u QPs ended in an error", errors, n);
	else if (slowest > RETRY_BUDGET_MS)
		snprintf(why, whylen, "the last QP failed %" PRIu64 " ms after the last write that "
			 "succeeded, budget %llu ms", slowest, RETRY_BUDGET_MS);
	else
		ret = 0;
out:
	free(streaming);
	return ret;
}

static bool same_as_base(const struct gauges *g, const struct gauges *base, char *why,
			 size_t whylen)
{
	if (g->live_qps == base->live_qps && g->qpns_held == base->qpns_held &&
	    g->fds == base->fds)
		return true;
	snprintf(why, whylen, "live_qps %" PRIu64 " (was %" PRIu64 "), qpns_held %" PRIu64
		 " (was %" PRIu64 "), open files %ld (were %ld)", g->live_qps, base->live_qps,
		 g->qpns_held, base->qpns_held, g->fds, base->fds);
	return false;
}

int main(int argc, char **argv)
{
	struct end e = { .devname = "uroce0", .uroce = "uroce", .max_qps = 4096 };
	const char *port = "18800", *host = NULL;
	uint32_t storm = 256, rounds = 10;
	bool loss = false;
	struct gauges base, g, first = { 0 };
	struct round_times t;
	int gid_index = 0;
	char why[512];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			e.devname = argv[++i];
		else if (!strcmp(argv[i], "-g") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			port = argv[++i];
		else if (!strcmp(argv[i], "-n") && i + 1 < argc)
			e.max_qps = (unsigned)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--storm") && i + 1 < argc)
			storm = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
			rounds = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--uroce") && i + 1 < argc)
			e.uroce = argv[++i];
		else if (!strcmp(argv[i], "--hold") && i + 1 < argc)
			e.hold = argv[++i];
		else if (!strcmp(argv[i], "--peer-loss"))
			loss = true;
		else if (argv[i][0] != '-' && !host)
			host = argv[i];
		else {
			fprintf(stderr, "usage: scale_check [-d DEV] [-g GIDX] [-p PORT] [-n QPS] "
				"[--storm PAIRS] [--rounds N] [--uroce PATH] [--hold FILE] "
				"[--peer-loss] [HOST]\n");
			return 100;
		}
	}
	if (!e.max_qps || (!loss && rounds && storm > e.max_qps)) {
		fprintf(stderr, "scale_check: -n must be at least 1 and --storm at most -n\n");
		return 100;
	}
	srand48(getpid() ^ (long)now_ms());
	alarm(600);	/* a hang is a failure too */
	e.server = !host;
	end_open(&e, gid_index);
	e.sock = tcp_connect(host, port);
	base = measure(&e, 0);
	if (base.live_qps == UINT64_MAX) {
		fprintf(stderr, "scale_check: `%s stat -j %s` does not show this process\n",
			e.uroce, e.devname);
		return 100;
	}
	if (loss) {
		why[0] = '\0';
		report(peer_loss(&e, e.max_qps, base.live_qps, why, sizeof(why)) == 0,
		       "peer_loss_retry_exc_err", why);
		return failures;
	}

	/* Thousands of QPs at once. */
	why[0] = '\0';
	report(round_run(&e, e.max_qps, 0, &t, base.live_qps, why, sizeof(why)) == 0,
	       "many_qps_data", why);
	snprintf(why, sizeof(why), "uroce stat: live_qps %" PRIu64 " with %u QPs created (%"
		 PRIu64 " before)", t.peak.live_qps, e.max_qps, base.live_qps);
	report(t.peak.live_qps == base.live_qps + e.max_qps, "many_qps_counted", why);
	snprintf(why, sizeof(why), "uroce stat lists %" PRIu64 " QPs with %u created (%" PRIu64
		 " before)", t.peak.qps_listed, e.max_qps, base.qps_listed);
	report(t.peak.qps_listed == base.qps_listed + e.max_qps, "many_qps_listed", why);
	printf("FIGURE qps=%u create_ms=%" PRIu64 " connect_ms=%" PRIu64 " data_ms=%" PRIu64
	       " destroy_ms=%" PRIu64 " qp_bytes=%" PRIu64 " bytes_per_qp=%" PRIu64
	       " rss_per_qp=%ld fds=%ld\n", e.max_qps, t.create_ms, t.connect_ms, t.data_ms,
	       t.destroy_ms, t.peak.qp_bytes, t.peak.bytes_per_qp,
	       (t.peak.rss - base.rss) / (long)e.max_qps, t.peak.fds - base.fds);
	g = measure(&e, base.live_qps);
	report(same_as_base(&g, &base, why, sizeof(why)), "many_qps_nothing_left", why);

	/* The storm: the same again and again with fewer QPs. */
	for (uint32_t r = 1; r <= rounds; r++) {
		char what[600];

		if (round_run(&e, storm, r, &t, base.live_qps, why, sizeof(why))) {
			snprintf(what, sizeof(what), "round %u: %s", r, why);
			report(false, "storm_data", what);
			break;
		}
		g = measure(&e, base.live_qps);
		if (!same_as_base(&g, &base, why, sizeof(why))) {
			snprintf(what, sizeof(what), "after round %u: %s", r, why);
			report(false, "storm_nothing_left", what);
			break;
		}
		if (r == 1)
			first = g;
		printf("FIGURE storm_round=%u qps=%u create_ms=%" PRIu64 " connect_ms=%" PRIu64
		       " data_ms=%" PRIu64 " destroy_ms=%" PRIu64 " rss=%ld\n", r, storm,
		       t.create_ms, t.connect_ms, t.data_ms, t.destroy_ms, g.rss);
		if (r == rounds) {
			report(true, "storm_data", "");
			report(true, "storm_nothing_left", "");
			snprintf(what, sizeof(what), "resident memory grew by %ld bytes from round 1 "
				 "to round %u", g.rss - first.rss, r);
			report(g.rss - first.rss < (long)STORM_RSS_SLACK, "storm_no_memory_growth",
			       what);
		}
	}
	barrier(&e);	/* neither end sends any more */
	g = measure_settled(&e, base.live_qps);
	printf("FIGURE end tx_packets=%" PRIu64 " rx_packets=%" PRIu64 " retransmits=%" PRIu64
	       " rx_ring_drops=%" PRIu64 " tx_dropped=%" PRIu64 " tx_frames=%" PRIu64 " rx_roce=%"
	       PRIu64 "\n", g.tx_packets, g.rx_packets, g.retransmits, g.rx_ring_drops,
	       g.tx_dropped, g.tx_frames, g.rx_roce);
	return failures;
}
