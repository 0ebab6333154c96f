// SPDX-License-Identifier: MIT
/*
 * Engine benchmark over the simulated link (not a test): 8-byte write
 * messages/s, 64 KiB write and read GB/s next to memcpy of the same sizes,
 * and 64 KiB write goodput at 0.1 %, 1 % and 5 % loss against lossless,
 * all measured in one run on the real clock.  Every figure is the best of
 * several short rounds, engine and memcpy rounds interleaved, so both see the
 * same machine load.  Both engines run on one thread; with --threads 2 each
 * engine has a thread of its own (two hosts, one CPU each: that needs two
 * otherwise idle CPUs to mean anything).  With --odp the buffers are ODP
 * regions, whose payloads the kernel copies.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "port_sim.h"
#include "uroce/rc.h"

#define BIG		(64 * 1024)
#define DEPTH		16		/* 64 KiB operations in flight */
#define SMALL_DEPTH	128		/* 8-byte writes in flight */
#define SIGNAL_EVERY	4
#define ROUNDS		5

struct bench {
	struct port_sim		*link;
	struct rc_engine	*eng[2];
	struct rc_pd		*pd[2];
	struct rc_cq		*cq[2];
	struct rc_qp		*qp[2];
	uint8_t			*buf[2];
	struct rc_mr		*mr[2];
	double			seconds;	/* per round */
	bool			two_threads;
	bool			copy_frames;	/* payloads copied into the link's frames */
	bool			odp;		/* the buffers are ODP regions (copied by the kernel) */
	bool			writes_only;	/* only the 64 KiB write figure (profiling) */
	uint8_t			timeout;	/* local ACK timeout exponent */
	struct rc_engine_cfg	loss;		/* loss recovery settings of both engines */
	atomic_bool		stop;
	pthread_t		peer;
};

static uint64_t now_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static double now_s(void)
{
	return (double)now_ns(NULL) * 1e-9;
}

static void die(const char *what)
{
	fprintf(stderr, "bench_engine: %s failed\n", what);
	exit(1);
}

static void gid_of(int side, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = 10;
	gid[15] = (uint8_t)(side + 1);
}

static void connect_qp(struct bench *b, int s)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
	};

	if (rc_qp_modify(b->qp[s], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			 IBV_QP_ACCESS_FLAGS))
		die("INIT");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_4096;
	a.dest_qp_num = rc_qp_num(b->qp[!s]);
	a.max_dest_rd_atomic = 16;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	gid_of(!s, a.ah_attr.grh.dgid.raw);
	if (rc_qp_modify(b->qp[s], &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			 IBV_QP_MIN_RNR_TIMER))
		die("RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = b->timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	if (rc_qp_modify(b->qp[s], &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			 IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC))
		die("RTS");
}

/* Two hosts, one CPU each: the scheduler may otherwise put both spinning threads on one. */
static void pin_to_cpu(pthread_t t, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (pthread_setaffinity_np(t, sizeof(set), &set))
		fprintf(stderr, "bench_engine: cannot pin a thread to CPU %d; figures may vary\n", cpu);
}

static void *peer_loop(void *arg)
{
	struct bench *b = arg;

	while (!atomic_load_explicit(&b->stop, memory_order_relaxed))
		rc_engine_progress(b->eng[1], 64);
	return NULL;
}

static void setup(struct bench *b, double loss)
{
	struct port_sim_cfg sc = { .seed = 42, .mtu = 4200, .slots = 4096, .now_ns = now_ns,
				    .zero_copy = !b->copy_frames };
	struct port_sim_faults f = { .loss = loss };

	b->link = port_sim_create(&sc);
	if (!b->link)
		die("link");
	port_sim_set_faults(b->link, 0, &f);
	port_sim_set_faults(b->link, 1, &f);
	for (int s = 0; s < 2; s++) {
		struct rc_engine_cfg ec = b->loss;
		struct wire_gid_entry g = { .valid = true, .type = WIRE_GID_ROCE_V2 };
		struct rc_qp_init init = { .qp_type = IBV_QPT_RC };

		ec.port = port_sim_port(b->link, s);
		ec.now_ns = now_ns;
		ec.seed = 7 + (uint64_t)s;
		b->eng[s] = rc_engine_create(&ec);
		if (!b->eng[s])
			die("engine");
		gid_of(s, g.gid);
		rc_engine_set_gid(b->eng[s], 0, &g);
		b->pd[s] = rc_pd_alloc(b->eng[s]);
		b->cq[s] = rc_cq_create(b->eng[s], 4096, NULL);
		b->buf[s] = aligned_alloc(4096, 2 * BIG);
		if (!b->pd[s] || !b->cq[s] || !b->buf[s])
			die("objects");
		memset(b->buf[s], s + 1, 2 * BIG);
		b->mr[s] = rc_mr_reg(b->pd[s], b->buf[s], 2 * BIG, (uintptr_t)b->buf[s],
				     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				     IBV_ACCESS_REMOTE_READ | (b->odp ? IBV_ACCESS_ON_DEMAND : 0));
		init.pd = b->pd[s];
		init.send_cq = init.recv_cq = b->cq[s];
		init.cap.max_send_wr = 1024;
		init.cap.max_recv_wr = 1;
		init.cap.max_send_sge = 1;
		init.cap.max_recv_sge = 1;
		b->qp[s] = rc_qp_create(b->eng[s], &init);
		if (!b->mr[s] || !b->qp[s])
			die("QP");
	}
	connect_qp(b, 0);
	connect_qp(b, 1);
	atomic_store(&b->stop, false);
	if (b->two_threads) {
		if (pthread_create(&b->peer, NULL, peer_loop, b))
			die("thread");
		pin_to_cpu(pthread_self(), 0);
		pin_to_cpu(b->peer, 1);
	}
}

static void teardown(struct bench *b)
{
	if (b->two_threads) {
		atomic_store(&b->stop, true);
		pthread_join(b->peer, NULL);
	}
	for (int s = 0; s < 2; s++) {
		rc_engine_destroy(b->eng[s]);
		free(b->buf[s]);
	}
	port_sim_destroy(b->link);
}

/*
 * Keep @depth operations of @len bytes in flight for b->seconds, every
 * SIGNAL_EVERY-th signaled.  Return: bytes per second of completed operations.
 */
static double run_ops(struct bench *b, enum ibv_wr_opcode op, uint32_t len, unsigned depth,
		      double *msgs_per_s)
{
	uint64_t posted = 0, done = 0, loops = 0;
	double t0 = now_s(), t;
	struct ibv_wc wc[32];

	for (;;) {
		int n;

		while (posted - done < depth) {
			struct ibv_sge s = { (uintptr_t)b->buf[0] + (posted & 1) * BIG, len,
					     rc_mr_lkey(b->mr[0]) };
			struct ibv_send_wr wr = {
				.wr_id = posted, .sg_list = &s, .num_sge = 1, .opcode = op,
				.send_flags = (posted + 1) % SIGNAL_EVERY ? 0 : IBV_SEND_SIGNALED,
			}, *bad;

			wr.wr.rdma.remote_addr = (uintptr_t)b->buf[1] + (posted & 1) * BIG;
			wr.wr.rdma.rkey = rc_mr_rkey(b->mr[1]);
			if (rc_post_send(b->qp[0], &wr, &bad))
				die("post");
			posted++;
		}
		rc_engine_progress(b->eng[0], 64);
		if (!b->two_threads)
			rc_engine_progress(b->eng[1], 64);
		while ((n = rc_cq_poll(b->cq[0], 32, wc)) > 0) {
			for (int i = 0; i < n; i++) {
				if (wc[i].status != IBV_WC_SUCCESS) {
					fprintf(stderr, "bench_engine: completion status %d\n",
						wc[i].status);
					exit(1);
				}
				done = wc[i].wr_id + 1;
			}
		}
		if (++loops % 16)
			continue;
		t = now_s() - t0;
		if (t >= b->seconds)
			break;
	}
	*msgs_per_s = (double)done / t;
	return (double)done * len / t;
}

static double memcpy_rate(uint32_t len, double seconds, double *ops_per_s)
{
	uint8_t *src = aligned_alloc(4096, 2 * BIG), *dst = aligned_alloc(4096, 2 * BIG);
	uint64_t n = 0;
	double t0 = now_s(), t;

	memset(src, 1, 2 * BIG);
	memset(dst, 2, 2 * BIG);
	do {
		for (int i = 0; i < 64; i++, n++) {
			memcpy(dst + (n & 1) * BIG, src + (n & 1) * BIG, len);
			__asm__ volatile("" : : "r"(dst) : "memory");
		}
		t = now_s() - t0;
	} while (t < seconds);
	free(src);
	free(dst);
	*ops_per_s = (double)n / t;
	return (double)n * len / t;
}

/*
 * What one 64 KiB write costs in data passes alone, in path-MTU packets of
 * their own ICRC each, with no engine: the sender's ICRC over its buffer
 * (zero-copy: frames refer to it; with --copy it copies too) and the
 * receiver's ICRC while it copies into place.  Every software RoCE makes
 * both; one CPU makes them one after the other.
 */
static void data_passes(double seconds, bool copy_frames, double *send_rate, double *recv_rate)
{
	uint8_t *src = aligned_alloc(4096, BIG), *dst = aligned_alloc(4096, BIG);
	volatile uint32_t sink = 0;

	memset(src, 1, BIG);
	memset(dst, 2, BIG);
	for (int pass = 0; pass < 2; pass++) {
		uint64_t n = 0;
		double t0 = now_s(), t;

		do {
			for (int i = 0; i < 16; i++, n++)
				for (uint32_t off = 0; off < BIG; off += 4096)
					sink += pass || copy_frames ?
						wire_crc32_copy(0, dst + off, src + off, 4096) :
						wire_crc32(0, src + off, 4096);
			t = now_s() - t0;
		} while (t < seconds);
		*(pass ? recv_rate : send_rate) = (double)n * BIG / t;
	}
	(void)sink;
	free(src);
	free(dst);
}

static double max(double a, double b)
{
	return a > b ? a : b;
}

static double min(double a, double b)
{
	return a < b ? a : b;
}

static void measure(double seconds, bool two_threads, bool copy_frames, bool odp,
		    bool writes_only, const struct rc_engine_cfg *loss)
{
	/*
	 * The link itself has no latency, so the local ACK timeout only has to
	 * cover scheduling: 262 us on one thread; with two threads on a shared
	 * machine one of them can be off the CPU for milliseconds, so 4.2 ms.
	 */
	struct bench b = { .seconds = seconds / ROUNDS, .two_threads = two_threads,
			   .copy_frames = copy_frames, .odp = odp, .writes_only = writes_only,
			   .timeout = two_threads ? 10 : 6, .loss = *loss };
	double mps = 0, mc_ops = 0, wr = 0, rd = 0, mc = 0, snd = 0, rcv = 0, ceiling, x, y, unused;
	struct port_sim_stats st;
	uint64_t by_ref = 0, delivered = 0;	/* frames of the 64 KiB write rounds */
	static const double losses[] = { 0.001, 0.01, 0.05 };

	printf("\n%s, local ACK timeout %.0f us\n",
	       two_threads ? "Two threads: each engine on its own CPU, as two hosts" :
			     "One thread: both engines and the link on one CPU",
	       4.096 * (1 << b.timeout));
	setup(&b, 0);
	for (int r = 0; r < ROUNDS; r++) {
		struct port_sim_stats before;

		port_sim_get_stats(b.link, 0, &before);
		wr = max(wr, run_ops(&b, IBV_WR_RDMA_WRITE, BIG, DEPTH, &unused));
		port_sim_get_stats(b.link, 0, &st);
		by_ref += st.by_reference - before.by_reference;
		delivered += st.delivered - before.delivered;
		mc = max(mc, memcpy_rate(BIG, b.seconds, &unused));
		data_passes(b.seconds / 2, copy_frames, &x, &y);
		snd = max(snd, x);
		rcv = max(rcv, y);
		if (writes_only)
			continue;
		run_ops(&b, IBV_WR_RDMA_WRITE, 8, SMALL_DEPTH, &x);
		mps = max(mps, x);
		memcpy_rate(8, b.seconds, &x);
		mc_ops = max(mc_ops, x);
		rd = max(rd, run_ops(&b, IBV_WR_RDMA_READ, BIG, DEPTH, &unused));
	}
	teardown(&b);
	printf("  64 KiB writes: %10.2f GB/s    memcpy %.2f GB/s   ratio %.0f %%   "
	       "(%.0f %% of frames with the payload by reference)\n",
	       wr / 1e9, mc / 1e9, 100 * wr / mc,
	       100.0 * (double)by_ref / (double)(delivered ? delivered : 1));
	printf("  data passes alone (no engine): sender ICRC%s %.2f GB/s, receiver ICRC+copy "
	       "%.2f GB/s\n", copy_frames ? "+copy" : "", snd / 1e9, rcv / 1e9);
	ceiling = two_threads ? min(snd, rcv) : 1 / (1 / snd + 1 / rcv);
	printf("    ceiling with %s: %.2f GB/s = %.0f %% of memcpy\n",
	       two_threads ? "one CPU per side (the slower pass)" : "both on one CPU (the sum)",
	       ceiling / 1e9, 100 * ceiling / mc);
	if (writes_only)
		return;
	printf("  8 B writes:    %10.0f msg/s   (memcpy of 8 B: %.0f/s)\n", mps, mc_ops);
	printf("  64 KiB reads:  %10.2f GB/s    memcpy %.2f GB/s   ratio %.0f %%\n",
	       rd / 1e9, mc / 1e9, 100 * rd / mc);

	for (unsigned i = 0; i < sizeof(losses) / sizeof(losses[0]); i++) {
		struct rc_counters c;
		double goodput = 0;

		setup(&b, losses[i]);
		for (int r = 0; r < ROUNDS; r++)
			goodput = max(goodput, run_ops(&b, IBV_WR_RDMA_WRITE, BIG, DEPTH, &unused));
		rc_engine_counters(b.eng[0], &c);
		teardown(&b);
		printf("  64 KiB writes at %4.1f %% loss: %6.2f GB/s, %3.0f %% of lossless "
		       "(%llu retransmits, %llu timeouts, %llu early, %llu probes, "
		       "SRTT %.0f us)\n", losses[i] * 100, goodput / 1e9,
		       100 * goodput / wr, (unsigned long long)c.retransmits,
		       (unsigned long long)c.timeouts, (unsigned long long)c.early_retransmits,
		       (unsigned long long)c.tail_probes, (double)c.srtt_ns / 1000);
	}
}

int main(int argc, char **argv)
{
	double seconds = 2.0;
	bool copy_frames = false, odp = false, writes_only = false;
	struct rc_engine_cfg loss = { 0 };
	int threads = 1;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--threads") && i + 1 < argc)
			threads = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--copy"))
			copy_frames = true;
		else if (!strcmp(argv[i], "--odp"))
			odp = true;
		else if (!strcmp(argv[i], "--writes"))
			writes_only = true;
		else if (!strcmp(argv[i], "--rto-min") && i + 1 < argc)
			loss.rto_min_us = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--restart-window") && i + 1 < argc)
			loss.restart_window = (uint32_t)atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-adaptive"))
			loss.no_adaptive_rto = true;
		else if (!strcmp(argv[i], "--no-tlp"))
			loss.no_tail_probe = true;
		else
			seconds = atof(argv[i]);
	}
	if (seconds <= 0 || threads < 1 || threads > 2) {
		fprintf(stderr, "usage: bench_engine [SECONDS per figure] [--threads 1|2] [--copy] "
			"[--odp] [--writes] [--rto-min US] [--restart-window PSNS] [--no-adaptive] "
			"[--no-tlp]\n");
		return 2;
	}
	printf("uroce engine over the simulated link: PMTU 4096, %d ops in flight, "
	       "best of %d rounds in %.1f s per figure, CRC %s, payloads %s%s\n", DEPTH, ROUNDS,
	       seconds, wire_crc32_impl(), copy_frames ? "copied into frames (--copy)" :
	       "by reference (zero-copy transmit)",
	       odp ? ", buffers in ODP regions (--odp: copied by the kernel, never by reference)" :
		     "");
	measure(seconds, threads == 2, copy_frames, odp, writes_only, &loss);
	return 0;
}
