// SPDX-License-Identifier: MIT
/* uroce's transport engine (dataplane/, rc.h) as a perftest client or server against rxe. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "perftest_xchg.h"
#include "probe_link.h"
#include "uroce/rc.h"

#define FRAME_MAX	9216
#define RX_SLOTS	32	/* one engine burst */
#define TX_SLOTS	128	/* the engine holds up to a burst before tx_burst() */
#define MR_LEN		(4u << 20)
#define DEPTH		64	/* work requests in flight, as perftest's default tx depth */
#define PT_MIN_RNR_TIMER 12
#define PT_QKEY		0x11111111u
#define GRH_LEN		40	/* in front of every UD receive (IBA 11.4.1.1) */
#define TIMEOUT_S	120

/* ---- a port (include/uroce/port.h) over the probe's AF_PACKET socket ---- */

struct afp_port {
	struct port base;
	struct probe_link *link;
	uint8_t peer_mac[6];
	uint8_t rx[RX_SLOTS][FRAME_MAX];
	uint8_t tx[TX_SLOTS][FRAME_MAX];
	unsigned tx_free[TX_SLOTS], ntx_free;
	unsigned drop_every;		/* drop every Nth frame the engine sends */
	uint64_t sent, dropped, received;	/* RoCE v2 frames */
};

static unsigned afp_rx_burst(struct port *base, struct port_frame *f, unsigned max)
{
	struct afp_port *p = (struct afp_port *)base;
	unsigned n = 0;

	while (n < max && n < RX_SLOTS) {
		ssize_t len = recv(p->link->fd, p->rx[n], FRAME_MAX, MSG_DONTWAIT);

		if (len <= 0)
			break;
		/* ARP, TCP 18515, ICMPv6 also pass this link: only RoCE goes to the engine */
		if (!probe_looks_roce(p->rx[n], (uint32_t)len))
			continue;
		p->received++;
		f[n] = (struct port_frame){ .data = p->rx[n], .len = (uint32_t)len, .handle = NULL };
		n++;
	}
	return n;
}

static void afp_rx_release(struct port *base, struct port_frame *f, unsigned n)
{
	(void)base;
	(void)f;
	(void)n;
}

static int afp_tx_alloc(struct port *base, struct port_frame *f, uint32_t len)
{
	struct afp_port *p = (struct afp_port *)base;
	unsigned slot;

	if (len > FRAME_MAX || !p->ntx_free)
		return -ENOBUFS;
	slot = p->tx_free[--p->ntx_free];
	*f = (struct port_frame){ .data = p->tx[slot], .len = len, .handle = &p->tx_free[slot] };
	return 0;
}

static void afp_tx_put(struct afp_port *p, struct port_frame *f)
{
	p->tx_free[p->ntx_free++] = (unsigned)((uint8_t (*)[FRAME_MAX])f->data - p->tx);
}

static void afp_tx_abort(struct port *base, struct port_frame *f)
{
	afp_tx_put((struct afp_port *)base, f);
}

static void afp_tx_burst(struct port *base, struct port_frame *f, unsigned n)
{
	struct afp_port *p = (struct afp_port *)base;

	for (unsigned i = 0; i < n; i++) {
		if (p->drop_every && (p->sent + p->dropped + 1) % p->drop_every == 0)
			p->dropped++;
		else if (probe_link_send(p->link, p->peer_mac, f[i].data, f[i].len) == 0)
			p->sent++;
		afp_tx_put(p, &f[i]);
	}
}

static void afp_flush(struct port *base)
{
	(void)base;
}

/* The only peer on this link is the guest: its MAC was given on the command line. */
static int afp_resolve(struct port *base, const uint8_t gid[16], uint8_t mac[6])
{
	(void)gid;
	memcpy(mac, ((struct afp_port *)base)->peer_mac, 6);
	return 0;
}

static void afp_destroy(struct port *base)
{
	(void)base;
}

static const struct port_ops afp_ops = {
	.rx_burst = afp_rx_burst,
	.rx_release = afp_rx_release,
	.tx_alloc = afp_tx_alloc,
	.tx_abort = afp_tx_abort,
	.tx_burst = afp_tx_burst,
	.flush = afp_flush,
	.resolve = afp_resolve,
	.destroy = afp_destroy,
};

static uint64_t clock_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- one RC QP of the engine, connected to perftest in the guest ---- */

struct run {
	struct probe_tap tap;
	struct rc_engine *eng;
	struct rc_cq *cq;
	struct rc_qp *qp;
	struct rc_mr *mr;
	uint8_t *buf;
	struct rc_ah *ah;		/* UD: towards the peer's GID */
	bool ud;
	struct pt_dest me, peer;
	int mtu_enum;
	uint32_t iters, size;
};

/* INIT, then (after the keys are known) RTR and RTS with perftest's own choices. */
static int qp_init(struct run *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1, .qkey = PT_QKEY,
		.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
	};

	return rc_qp_modify(r->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       (r->ud ? IBV_QP_QKEY : IBV_QP_ACCESS_FLAGS));
}

/* UD: RTR and RTS need no peer; sends name an address handle for the peer's GID. */
static int qp_connect_ud(struct run *r, struct rc_pd *pd)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_ah_attr ah = { .is_global = 1, .port_num = 1,
				  .grh = { .sgid_index = 0, .hop_limit = 64 } };

	memcpy(ah.grh.dgid.raw, r->peer.gid, 16);
	r->ah = rc_ah_create(pd, &ah);
	if (!r->ah || rc_qp_modify(r->qp, &a, IBV_QP_STATE))
		return -1;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = r->me.psn;
	return rc_qp_modify(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

static int qp_connect(struct run *r)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = (enum ibv_mtu)r->mtu_enum,
		.dest_qp_num = r->peer.qpn, .rq_psn = r->peer.psn,
		.max_dest_rd_atomic = RC_MAX_RD_ATOMIC, .min_rnr_timer = PT_MIN_RNR_TIMER,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = 0, .hop_limit = 64 } },
	};
	int rc;

	memcpy(a.ah_attr.grh.dgid.raw, r->peer.gid, 16);
	rc = rc_qp_modify(r->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				     IBV_QP_MIN_RNR_TIMER);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = r->me.psn;
	a.timeout = 14;			/* perftest's default: 4.096 us * 2^14 = 67 ms */
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = r->peer.out_reads < RC_MAX_RD_ATOMIC ? (uint8_t)r->peer.out_reads :
								  RC_MAX_RD_ATOMIC;
	return rc_qp_modify(r->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
}

static int post_one(struct run *r, const char *verb, uint32_t i)
{
	struct ibv_sge sge = { .addr = (uintptr_t)r->buf, .length = r->size,
			       .lkey = rc_mr_lkey(r->mr) };
	struct ibv_send_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	if (!strcmp(verb, "write") || !strcmp(verb, "read")) {
		wr.opcode = verb[0] == 'w' ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = r->peer.vaddr;
		wr.wr.rdma.rkey = r->peer.rkey;
	} else if (!strcmp(verb, "atomic")) {
		/* each in flight gets its own 8-byte result slot */
		sge.addr = (uintptr_t)(r->buf + (uint64_t)(i % DEPTH) * 8);
		sge.length = 8;
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = r->peer.vaddr;
		wr.wr.atomic.compare_add = 1;
		wr.wr.atomic.rkey = r->peer.rkey;
	} else {
		wr.opcode = IBV_WR_SEND;
		if (r->ud) {
			wr.wr.ud.ah = rc_ah_ibv(r->ah);
			wr.wr.ud.remote_qpn = r->peer.qpn;
			wr.wr.ud.remote_qkey = PT_QKEY;
		}
	}
	return rc_post_send(r->qp, &wr, &bad);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The engine as requester: @iters operations, DEPTH in flight, every one signalled.
 * Return: seconds taken, 0 on failure (reported).
 */
static double run_client(struct run *r, const char *verb)
{
	uint64_t *orig = calloc(r->iters, sizeof(*orig));
	uint32_t posted = 0, done = 0;
	double t0 = probe_now();
	bool ok = true;

	while (done < r->iters && ok) {
		struct ibv_wc wc[16];
		int n;

		while (ok && posted < r->iters && posted - done < DEPTH) {
			int rc = post_one(r, verb, posted);

			if (rc) {
				probe_check(&r->tap, false, "post %s %u: %s", verb, posted, strerror(-rc));
				ok = false;
			}
			posted++;
		}
		rc_engine_progress(r->eng, 0);
		n = rc_cq_poll(r->cq, 16, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				probe_check(&r->tap, false, "%s %" PRIu64 " completed with status %d",
					    verb, wc[i].wr_id, wc[i].status);
				ok = false;
				break;
			}
			if (!strcmp(verb, "atomic") && orig)
				memcpy(&orig[done], r->buf + (wc[i].wr_id % DEPTH) * 8, 8);
			done++;
		}
		if (probe_now() - t0 > TIMEOUT_S) {
			probe_check(&r->tap, false, "%u of %u %s done within %d s", done, r->iters,
				    verb, TIMEOUT_S);
			ok = false;
		}
	}
	if (ok)
		probe_check(&r->tap, true, "%u %s of %u bytes completed successfully", done, verb,
			    !strcmp(verb, "atomic") ? 8 : r->size);
	if (ok && orig && !strcmp(verb, "atomic")) {
		/* Fetch&Add 1 on one address: the originals are v0, v0+1, ..., each once */
		bool seq = true;

		qsort(orig, r->iters, sizeof(*orig), cmp_u64);
		for (uint32_t i = 1; i < r->iters; i++)
			seq &= orig[i] == orig[0] + i;
		probe_check(&r->tap, seq, "the %u Fetch&Add originals are consecutive, none repeated",
			    r->iters);
	}
	free(orig);
	return ok ? probe_now() - t0 : 0;
}

/*
 * The engine as responder until the guest's client speaks on TCP again; for SEND it
 * posts @iters receives first and counts their completions.
 */
static void run_server(struct run *r, const char *verb, int tcp_fd)
{
	uint32_t recvd = 0, bad_len = 0, want_len = r->size + (r->ud ? GRH_LEN : 0);
	double t0 = probe_now();

	if (!strcmp(verb, "send") || r->ud) {
		for (uint32_t i = 0; i < r->iters; i++) {
			struct ibv_sge sge = { .addr = (uintptr_t)r->buf + (uint64_t)(i % 64) * want_len,
					       .length = want_len, .lkey = rc_mr_lkey(r->mr) };
			struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

			if (rc_post_recv(r->qp, &wr, &bad)) {
				probe_check(&r->tap, false, "post receive %u", i);
				return;
			}
		}
	}
	for (;;) {
		struct pollfd pfd = { .fd = tcp_fd, .events = POLLIN };
		struct ibv_wc wc[16];
		int n;

		rc_engine_progress(r->eng, 0);
		n = rc_cq_poll(r->cq, 16, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				probe_check(&r->tap, false, "receive %" PRIu64 " completed with status %d",
					    wc[i].wr_id, wc[i].status);
			else if (wc[i].byte_len != want_len ||
				 (r->ud && (wc[i].src_qp != r->peer.qpn || !(wc[i].wc_flags & IBV_WC_GRH))))
				bad_len++;
			recvd++;
		}
		if (poll(&pfd, 1, 0) == 1)
			break;
		if (probe_now() - t0 > TIMEOUT_S) {
			probe_check(&r->tap, false, "perftest client done within %d s", TIMEOUT_S);
			return;
		}
	}
	if (!strcmp(verb, "send") || r->ud)
		probe_check(&r->tap, recvd == r->iters && bad_len == 0,
			    "%u receives completed, %u with a length other than %u%s (want %u, 0)",
			    recvd, bad_len, want_len, r->ud ? " or without GRH and source QP" : "",
			    r->iters);
}

static void note_counters(struct run *r)
{
	struct rc_counters c;
	uint64_t drops = 0;

	rc_engine_counters(r->eng, &c);
	for (int i = 1; i < WIRE_DROP_COUNT; i++)
		drops += c.drops.count[i];
	probe_note("engine: rx %" PRIu64 " tx %" PRIu64 " retransmits %" PRIu64 " timeouts %"
		   PRIu64 " seq NAKs rx %" PRIu64 " tx %" PRIu64 " duplicates %" PRIu64
		   " out of sequence %" PRIu64 " RNR NAKs rx %" PRIu64,
		   c.rx_packets, c.tx_packets, c.retransmits, c.timeouts, c.seq_naks_rx,
		   c.seq_naks_tx, c.duplicates, c.out_of_sequence, c.rnr_naks_rx);
	probe_check(&r->tap, drops == 0, "the engine's parser dropped %" PRIu64 " of rxe's frames",
		    drops);
	probe_check(&r->tap, c.rem_access_naks_rx + c.rem_access_naks_tx + c.inv_req_naks_rx +
			     c.inv_req_naks_tx + c.rem_op_naks_rx + c.rem_op_naks_tx == 0,
		    "no NAK other than PSN sequence errors either way");
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: engine-probe --case [serve-]write|read|atomic|send|ud --ifname IF --local IP\n"
		"                    --peer IP --peer-mac MAC [--pmtu 1024|4096] [--iters N]\n"
		"                    [--size BYTES] [--drop-every N]\n"
		"uroce's transport engine on an AF_PACKET port: as the client of a perftest server\n"
		"running on rxe at PEER (ib_write_bw / ib_read_bw / ib_atomic_bw / ib_send_bw [-c UD]\n"
		"-n N -s BYTES), or with serve-* as the server of a perftest client there.  --drop-every\n"
		"drops every Nth frame the engine sends.  One TAP line per check.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "case", required_argument, NULL, 'c' },
		{ "ifname", required_argument, NULL, 'i' },
		{ "local", required_argument, NULL, 'l' },
		{ "peer", required_argument, NULL, 'p' },
		{ "peer-mac", required_argument, NULL, 'm' },
		{ "pmtu", required_argument, NULL, 'M' },
		{ "iters", required_argument, NULL, 'n' },
		{ "size", required_argument, NULL, 's' },
		{ "drop-every", required_argument, NULL, 'D' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	const char *kase = NULL, *ifname = NULL, *local = NULL, *peer = NULL, *mac = NULL, *verb;
	static struct afp_port port;
	static struct probe_link link;
	struct run r = { .mtu_enum = 3, .iters = 200, .size = 4096 };
	struct pt_report rep = { 0 };
	struct rc_qp_init qi = { .qp_type = IBV_QPT_RC };	/* UD for --case [serve-]ud */
	struct wire_gid_entry ge = { .valid = true, .type = WIRE_GID_ROCE_V2 };
	struct rc_engine_cfg cfg = { .port = &port.base, .now_ns = clock_ns };
	bool serve;
	double secs;
	int c, fd, syncs;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': kase = optarg; break;
		case 'i': ifname = optarg; break;
		case 'l': local = optarg; break;
		case 'p': peer = optarg; break;
		case 'm': mac = optarg; break;
		case 'M': r.mtu_enum = atoi(optarg) == 4096 ? 5 : atoi(optarg) == 2048 ? 4 : 3; break;
		case 'n': r.iters = (uint32_t)atoi(optarg); break;
		case 's': r.size = (uint32_t)atoi(optarg); break;
		case 'D': port.drop_every = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!kase || !ifname || !local || !peer || !mac || probe_parse_mac(mac, port.peer_mac) ||
	    !r.iters || !r.size || r.size > MR_LEN / 64) {
		usage(stderr);
		return 2;
	}
	serve = !strncmp(kase, "serve-", 6);
	verb = serve ? kase + 6 : kase;
	if (strcmp(verb, "write") && strcmp(verb, "read") && strcmp(verb, "atomic") &&
	    strcmp(verb, "send") && strcmp(verb, "ud")) {
		usage(stderr);
		return 2;
	}
	r.ud = !strcmp(verb, "ud");
	syncs = !strcmp(verb, "send") || r.ud ? 3 : 2;

	if (probe_link_open(&link, ifname, local, 4))
		return 1;
	port.link = &link;
	port.base.ops = &afp_ops;
	port.base.mtu = r.mtu_enum == 5 ? 9000 : 1500;
	port.base.name = ifname;
	memcpy(port.base.mac, link.mac, 6);
	for (unsigned i = 0; i < TX_SLOTS; i++)
		port.tx_free[port.ntx_free++] = i;

	r.eng = rc_engine_create(&cfg);
	memcpy(ge.gid, link.gid, 16);
	r.buf = aligned_alloc(4096, MR_LEN);
	if (!r.eng || !r.buf || rc_engine_set_gid(r.eng, 0, &ge)) {
		fprintf(stderr, "engine-probe: cannot set up the engine: %s\n", strerror(errno));
		return 1;
	}
	memset(r.buf, 0, MR_LEN);
	qi.pd = rc_pd_alloc(r.eng);
	r.cq = rc_cq_create(r.eng, 1024, NULL);
	r.mr = qi.pd ? rc_mr_reg(qi.pd, r.buf, MR_LEN, (uintptr_t)r.buf,
				 IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
				 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC) : NULL;
	qi.send_cq = qi.recv_cq = r.cq;
	qi.qp_type = r.ud ? IBV_QPT_UD : IBV_QPT_RC;
	qi.cap = (struct ibv_qp_cap){ .max_send_wr = 128, .max_recv_wr = 1024,
				      .max_send_sge = 1, .max_recv_sge = 1 };
	r.qp = r.cq && r.mr ? rc_qp_create(r.eng, &qi) : NULL;
	if (!r.qp || qp_init(&r)) {
		fprintf(stderr, "engine-probe: cannot create the QP: %s\n", strerror(errno));
		return 1;
	}

	srand48(time(NULL));
	r.me = (struct pt_dest){ .qpn = rc_qp_num(r.qp), .psn = (uint32_t)lrand48() & 0xffffff,
				 .rkey = rc_mr_rkey(r.mr), .vaddr = (uintptr_t)r.buf,
				 .out_reads = RC_MAX_RD_ATOMIC };
	memcpy(r.me.gid, link.gid, 16);
	/* as perftest: keys, then the QP to RTR/RTS, then the syncs */
	fd = serve ? pt_accept(TIMEOUT_S) : pt_connect(peer, 30);
	if (fd < 0 || (serve ? pt_server_setup(fd, &r.mtu_enum, 0, &r.me, &r.peer) :
			       pt_client_setup(fd, &r.mtu_enum, 0, &r.me, &r.peer)))
		return 1;
	if (!probe_check(&r.tap, (r.ud ? qp_connect_ud(&r, qi.pd) : qp_connect(&r)) == 0,
			 "%s QP 0x%06x to RTS towards rxe's QP 0x%06x, path MTU %u", r.ud ? "UD" : "RC",
			 r.me.qpn, r.peer.qpn, wire_mtu_bytes((unsigned)r.mtu_enum)) ||
	    pt_syncs(fd, serve, &r.me, syncs))
		return 1;

	if (serve) {
		struct pt_report client = { 0 };
		uint64_t sum = 0;

		run_server(&r, verb, fd);
		probe_check(&r.tap, pt_server_finish(fd, &r.me, strcmp(verb, "send") && !r.ud ?
						     &client : NULL) == 0,
			    "perftest closing exchange");
		if (!strcmp(verb, "atomic")) {
			for (uint32_t off = 0; off < MR_LEN; off += 8) {
				uint64_t v;

				memcpy(&v, r.buf + off, 8);
				sum += v;
			}
			probe_check(&r.tap, sum == client.iters,
				    "our memory holds %" PRIu64 " increments, the client made %" PRIu64,
				    sum, client.iters);
		}
		probe_note("rxe's perftest client reported: %" PRIu64 " bytes x %" PRIu64
			   " iterations, %.2f MB/s average", client.size, client.iters, client.bw_avg);
	} else {
		secs = run_client(&r, verb);
		rep.size = !strcmp(verb, "atomic") ? 8 : r.size;
		rep.iters = r.iters;
		rep.bw_avg = rep.bw_peak = secs > 0 ? (double)rep.size * r.iters / secs / 1e6 : 0;
		rep.msg_rate = secs > 0 ? r.iters / secs / 1e6 : 0;
		probe_note("engine as client: %u x %" PRIu64 " bytes in %.2f s, %.2f MB/s", r.iters,
			   rep.size, secs, rep.bw_avg);
		probe_check(&r.tap, pt_client_finish(fd, &r.me, strcmp(verb, "send") && !r.ud ?
						     &rep : NULL) == 0,
			    "perftest closing exchange");
	}
	/* whatever rxe still sends (late ACKs, retransmissions) is received and counted */
	for (double end = probe_now() + 0.5; probe_now() < end;)
		rc_engine_progress(r.eng, 0);
	note_counters(&r);
	probe_check(&r.tap, probe_link_drops(&link) == 0, "the socket lost %ld frames",
		    probe_link_drops(&link));
	printf("# broken on purpose: bad_icrc=0 bad_udp_csum=0\n");
	printf("# engine frames dropped on purpose: %" PRIu64 "\n", port.dropped);
	printf("# RoCE v2 frames: sent=%" PRIu64 " received=%" PRIu64 "\n", port.sent,
	       port.received);
	rc_engine_destroy(r.eng);
	return probe_tap_end(&r.tap);
}
