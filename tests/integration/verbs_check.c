// SPDX-License-Identifier: MIT
/* Data integrity and error semantics of a uroce device, checked through the real libibverbs. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <infiniband/verbs.h>

/*
 * usage: verbs_check [-d DEV] [-g GIDX] [-p PORT]
 *                    [--peer-death | --port-events | --port-state MS] [HOST]
 *
 * Without HOST it serves one client; with HOST it connects and runs the
 * cases, printing "PASS name" or "FAIL name: why" for each; the exit status
 * is the number of failures.  Each case gets a fresh RC QP pair: after a
 * remote access error both ends are in the error state, as the IBA wants.
 * A TCP connection carries the control messages: QP numbers, "fill this
 * region with a canary", "check this region".  --peer-death instead streams
 * RDMA writes, has the server kill itself mid-stream and expects
 * IBV_WC_RETRY_EXC_ERR within the retry budget.  --port-events and
 * --port-state watch the port alone (below).
 */

#define RW_LEN		(4u << 20)	/* remote read/write/atomic region */
#define RO_LEN		(64u << 10)	/* remote read-only region */
#define LOCAL_LEN	(4u << 20)
#define RECV_SLOTS	16
#define RECV_SLOT_LEN	(64u << 10)
#define RECV_BASE	(RW_LEN - RECV_SLOTS * RECV_SLOT_LEN)	/* recv buffers in the rw MR */
#define CQ_DEPTH	256
#define WAIT_MS		10000
#define QP_TIMEOUT	14	/* 4.096 us * 2^14 = 67 ms per try */
#define QP_RETRY	3

enum cmd {
	CMD_CONNECT = 1,	/* make a QP for the client's; reply with ours */
	CMD_FILL,		/* write pattern(seed) to rw[addr, addr+len) */
	CMD_CHECK,		/* compare rw or ro [addr, addr+len) with pattern(seed) */
	CMD_RECV_CHECK,		/* take one receive, compare with pattern(seed), len, imm */
	CMD_DESTROY,		/* drop the QP */
	CMD_DIE,		/* kill -9 ourselves */
	CMD_SEND,		/* send @len messages of 64 bytes of pattern(seed) to the client */
	CMD_QUIT,
};

#define RECV_FLAG_IMM		1	/* the receive carries @imm */
#define RECV_FLAG_NO_DATA	2	/* RDMA write with immediate: the data went elsewhere */

struct msg {
	uint32_t	cmd;
	uint32_t	qpn, psn;
	uint8_t		gid[16];
	uint32_t	region;		/* 0: rw, 1: ro */
	uint64_t	addr, len, seed;
	uint32_t	imm, flags;	/* RECV_FLAG_* */
	/* reply */
	int32_t		status;		/* 0 ok */
	uint64_t	rw_addr, ro_addr;
	uint32_t	rw_rkey, ro_rkey;
	char		why[128];
};

struct dev {
	struct ibv_context	*ctx;
	struct ibv_pd		*pd;
	struct ibv_mr		*mr_rw, *mr_ro, *mr_local;
	uint8_t			*rw, *ro, *local;
	int			gid_index;
	union ibv_gid		gid;
	struct ibv_srq		*srq;		/* the next client QP receives through it */
	enum ibv_mtu		mtu;
	int			sock;
};

struct conn {
	struct ibv_cq		*scq, *rcq;
	struct ibv_qp		*qp;
	struct ibv_cq_ex	*scq_ex;	/* extended API only */
	struct ibv_qp_ex	*qpx;
};

static int failures;

static void die(const char *what)
{
	fprintf(stderr, "verbs_check: %s: %s\n", what, strerror(errno));
	exit(100);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pattern(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;

	for (size_t i = 0; i < len; i++) {
		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		p[i] = (uint8_t)(s >> 24);
	}
}

/* Index of the first byte that differs from pattern(seed), or -1. */
static long pattern_mismatch(const uint8_t *p, size_t len, uint64_t seed)
{
	uint8_t *want = malloc(len ? len : 1);
	long at = -1;

	if (!want)
		die("malloc");
	pattern(want, len, seed);
	for (size_t i = 0; i < len; i++)
		if (p[i] != want[i]) {
			at = (long)i;
			break;
		}
	free(want);
	return at;
}

static void xfer(int sock, struct msg *m, bool send_it)
{
	size_t done = 0;

	while (done < sizeof(*m)) {
		ssize_t n = send_it ? write(sock, (char *)m + done, sizeof(*m) - done) :
				      read(sock, (char *)m + done, sizeof(*m) - done);

		if (n <= 0) {
			if (!send_it && n == 0)
				exit(failures);		/* the peer went away */
			die("control connection");
		}
		done += (size_t)n;
	}
}

static void call(struct dev *d, struct msg *m)
{
	xfer(d->sock, m, true);
	xfer(d->sock, m, false);
}

/* ---- Resources ---- */

static void dev_open(struct dev *d, const char *name, int gid_index)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_port_attr port;
	int access_rw = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;

	if (!list)
		die("ibv_get_device_list");
	for (int i = 0; list[i]; i++)
		if (!name || !strcmp(ibv_get_device_name(list[i]), name)) {
			d->ctx = ibv_open_device(list[i]);
			break;
		}
	ibv_free_device_list(list);
	if (!d->ctx)
		die("ibv_open_device");
	if (ibv_query_port(d->ctx, 1, &port))
		die("ibv_query_port");
	d->mtu = port.active_mtu;
	d->gid_index = gid_index;
	if (ibv_query_gid(d->ctx, 1, gid_index, &d->gid))
		die("ibv_query_gid");
	d->pd = ibv_alloc_pd(d->ctx);
	d->rw = aligned_alloc(4096, RW_LEN);
	d->ro = aligned_alloc(4096, RO_LEN);
	d->local = aligned_alloc(4096, LOCAL_LEN);
	if (!d->pd || !d->rw || !d->ro || !d->local)
		die("resources");
	d->mr_rw = ibv_reg_mr(d->pd, d->rw, RW_LEN, access_rw);
	d->mr_ro = ibv_reg_mr(d->pd, d->ro, RO_LEN, IBV_ACCESS_REMOTE_READ);
	d->mr_local = ibv_reg_mr(d->pd, d->local, LOCAL_LEN, IBV_ACCESS_LOCAL_WRITE);
	if (!d->mr_rw || !d->mr_ro || !d->mr_local)
		die("ibv_reg_mr");
}

/* @ex_ops: 0 for the classic verbs, else the IBV_QP_EX_WITH_* the ibv_wr_* QP gets. */
static void conn_create(struct dev *d, struct conn *c, int send_cqe, uint32_t max_send_wr,
			uint64_t ex_ops)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = max_send_wr, .max_recv_wr = RECV_SLOTS,
			 .max_send_sge = 4, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .port_num = 1, .pkey_index = 0,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};

	memset(c, 0, sizeof(*c));
	if (ex_ops) {
		struct ibv_cq_init_attr_ex cq_attr = {
			.cqe = (uint32_t)send_cqe,
			.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM |
				    IBV_WC_EX_WITH_IMM | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
				    IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK,
		};

		c->scq_ex = ibv_create_cq_ex(d->ctx, &cq_attr);
		c->scq = c->scq_ex ? ibv_cq_ex_to_cq(c->scq_ex) : NULL;
	} else {
		c->scq = ibv_create_cq(d->ctx, send_cqe, NULL, NULL, 0);
	}
	c->rcq = ibv_create_cq(d->ctx, CQ_DEPTH, NULL, NULL, 0);
	if (!c->scq || !c->rcq)
		die("ibv_create_cq");
	init.send_cq = c->scq;
	init.recv_cq = c->rcq;
	init.srq = d->srq;
	if (ex_ops) {
		struct ibv_qp_init_attr_ex ix = {
			.send_cq = c->scq, .recv_cq = c->rcq, .cap = init.cap,
			.qp_type = IBV_QPT_RC, .pd = d->pd, .send_ops_flags = ex_ops,
			.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		};

		ix.cap.max_inline_data = 256;
		c->qp = ibv_create_qp_ex(d->ctx, &ix);
		c->qpx = c->qp ? ibv_qp_to_qp_ex(c->qp) : NULL;
		if (c->qp && !c->qpx)
			die("ibv_qp_to_qp_ex");
	} else {
		c->qp = ibv_create_qp(d->pd, &init);
	}
	if (!c->qp)
		die("ibv_create_qp");
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			  IBV_QP_ACCESS_FLAGS))
		die("modify to INIT");
}

static void conn_connect(struct dev *d, struct conn *c, uint32_t qpn, uint32_t psn,
			 const uint8_t gid[16], uint32_t my_psn)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_RTR, .path_mtu = d->mtu, .dest_qp_num = qpn, .rq_psn = psn,
		.max_dest_rd_atomic = 16, .min_rnr_timer = 12,
		.ah_attr = { .is_global = 1, .port_num = 1,
			     .grh = { .sgid_index = (uint8_t)d->gid_index, .hop_limit = 64 } },
	};

	memcpy(a.ah_attr.grh.dgid.raw, gid, 16);
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			  IBV_QP_MIN_RNR_TIMER))
		die("modify to RTR");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = QP_TIMEOUT;
	a.retry_cnt = QP_RETRY;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 16;
	if (ibv_modify_qp(c->qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC))
		die("modify to RTS");
}

static void conn_destroy(struct conn *c)
{
	if (ibv_destroy_qp(c->qp) || ibv_destroy_cq(c->scq) || ibv_destroy_cq(c->rcq))
		die("destroy");
	memset(c, 0, sizeof(*c));
}

/* One completion within WAIT_MS: 1, or 0 on timeout. */
static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc, unsigned ms)
{
	uint64_t end = now_ms() + ms;

	do {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return -1;
		if (n)
			return 1;
	} while (now_ms() < end);
	return 0;
}

/* ---- Server ---- */

static void post_recvs(struct dev *d, struct conn *c)
{
	for (unsigned i = 0; i < RECV_SLOTS; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)d->rw + RECV_BASE + i * RECV_SLOT_LEN,
			.length = RECV_SLOT_LEN, .lkey = d->mr_rw->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 }, *bad;

		if (ibv_post_recv(c->qp, &wr, &bad))
			die("ibv_post_recv");
	}
}

static void serve(struct dev *d)
{
	struct conn c = { 0 };
	struct msg m;

	for (;;) {
		xfer(d->sock, &m, false);
		m.status = 0;
		m.why[0] = '\0';
		switch (m.cmd) {
		case CMD_CONNECT: {
			uint32_t psn = (uint32_t)lrand48() & 0xffffff;

			if (c.qp)
				conn_destroy(&c);
			conn_create(d, &c, CQ_DEPTH, CQ_DEPTH, 0);
			post_recvs(d, &c);
			conn_connect(d, &c, m.qpn, m.psn, m.gid, psn);
			m.qpn = c.qp->qp_num;
			m.psn = psn;
			memcpy(m.gid, d->gid.raw, 16);
			m.rw_addr = (uintptr_t)d->rw;
			m.rw_rkey = d->mr_rw->rkey;
			m.ro_addr = (uintptr_t)d->ro;
			m.ro_rkey = d->mr_ro->rkey;
			break;
		}
		case CMD_FILL:
			pattern((m.region ? d->ro : d->rw) + m.addr, m.len, m.seed);
			break;
		case CMD_CHECK: {
			long at = pattern_mismatch((m.region ? d->ro : d->rw) + m.addr, m.len, m.seed);

			if (at >= 0) {
				m.status = 1;
				snprintf(m.why, sizeof(m.why), "byte %ld of %" PRIu64 " at offset %"
					 PRIu64 " differs", at, m.len, m.addr);
			}
			break;
		}
		case CMD_RECV_CHECK: {
			struct ibv_wc wc;
			int got = c.qp ? wait_wc(c.rcq, &wc, WAIT_MS) : 0;

			if (got != 1) {
				m.status = 1;
				snprintf(m.why, sizeof(m.why), "no receive completion");
			} else if (wc.status != IBV_WC_SUCCESS) {
				m.status = 1;
				snprintf(m.why, sizeof(m.why), "receive status %s",
					 ibv_wc_status_str(wc.status));
			} else if (wc.byte_len != m.len) {
				m.status = 1;
				snprintf(m.why, sizeof(m.why), "received %u bytes, sent %" PRIu64,
					 wc.byte_len, m.len);
			} else if ((m.flags & RECV_FLAG_IMM) &&
				   (!(wc.wc_flags & IBV_WC_WITH_IMM) ||
				    ntohl(wc.imm_data) != m.imm)) {
				m.status = 1;
				snprintf(m.why, sizeof(m.why), "immediate data missing or wrong");
			} else if (m.len && !(m.flags & RECV_FLAG_NO_DATA) &&
				   pattern_mismatch(d->rw + RECV_BASE +
							     wc.wr_id * RECV_SLOT_LEN,
							     m.len, m.seed) >= 0) {
				m.status = 1;
				snprintf(m.why, sizeof(m.why), "received data differs");
			}
			break;
		}
		case CMD_DESTROY:
			if (c.qp)
				conn_destroy(&c);
			break;
		case CMD_SEND:
			for (uint64_t i = 0; i < m.len && !m.status; i++) {
				struct ibv_sge sge = { .addr = (uintptr_t)d->rw, .length = 64,
						       .lkey = d->mr_rw->lkey };
				struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
							  .opcode = IBV_WR_SEND,
							  .send_flags = IBV_SEND_SIGNALED }, *bad;
				struct ibv_wc wc;

				pattern(d->rw, 64, m.seed + i);
				if (!c.qp || ibv_post_send(c.qp, &wr, &bad) ||
				    wait_wc(c.scq, &wc, WAIT_MS) != 1 || wc.status != IBV_WC_SUCCESS) {
					m.status = 1;
					snprintf(m.why, sizeof(m.why), "send %" PRIu64 " failed", i);
				}
			}
			break;
		case CMD_DIE:
			kill(getpid(), SIGKILL);
			break;
		case CMD_QUIT:
			xfer(d->sock, &m, true);
			return;
		default:
			m.status = 1;
			snprintf(m.why, sizeof(m.why), "unknown command %u", m.cmd);
		}
		xfer(d->sock, &m, true);
	}
}

/* ---- Client ---- */

struct peer {
	uint64_t	rw_addr, ro_addr;
	uint32_t	rw_rkey, ro_rkey;
};

static void open_case_ex(struct dev *d, struct conn *c, struct peer *p, int send_cqe,
			 uint32_t max_send_wr, uint64_t ex_ops)
{
	uint32_t psn = (uint32_t)lrand48() & 0xffffff;
	struct msg m = { .cmd = CMD_CONNECT };

	conn_create(d, c, send_cqe, max_send_wr, ex_ops);
	m.qpn = c->qp->qp_num;
	m.psn = psn;
	memcpy(m.gid, d->gid.raw, 16);
	call(d, &m);
	conn_connect(d, c, m.qpn, m.psn, m.gid, psn);
	p->rw_addr = m.rw_addr;
	p->rw_rkey = m.rw_rkey;
	p->ro_addr = m.ro_addr;
	p->ro_rkey = m.ro_rkey;
}

static void open_case(struct dev *d, struct conn *c, struct peer *p, int send_cqe,
		      uint32_t max_send_wr)
{
	open_case_ex(d, c, p, send_cqe, max_send_wr, 0);
}

static void close_case(struct dev *d, struct conn *c)
{
	struct msg m = { .cmd = CMD_DESTROY };

	call(d, &m);
	conn_destroy(c);
}

static int remote(struct dev *d, enum cmd cmd, uint32_t region, uint64_t off, uint64_t len,
		  uint64_t seed, char *why, size_t whylen)
{
	struct msg m = { .cmd = cmd, .region = region, .addr = off, .len = len, .seed = seed };

	call(d, &m);
	if (m.status)
		snprintf(why, whylen, "%s", m.why);
	return m.status;
}

/* Post one work request with one SGE; return the completion status or -errno. */
static int sge_op(struct conn *c, enum ibv_wr_opcode op, struct ibv_sge *sge, uint64_t raddr,
		  uint32_t rkey, uint64_t cmp_add, uint64_t swap, uint32_t imm)
{
	struct ibv_send_wr wr = {
		.wr_id = 7, .sg_list = sge, .num_sge = sge->length ? 1 : 0, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htonl(imm),
	}, *bad;
	struct ibv_wc wc;
	int ret;

	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = cmp_add;
		wr.wr.atomic.swap = swap;
	} else {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	ret = ibv_post_send(c->qp, &wr, &bad);
	if (ret)
		return -ret;
	ret = wait_wc(c->scq, &wc, WAIT_MS);
	if (ret != 1)
		return -ETIMEDOUT;
	return wc.status;
}

/* The same with the SGE on the local buffer. */
static int one_op(struct dev *d, struct conn *c, enum ibv_wr_opcode op, uint64_t loff,
		  uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t cmp_add,
		  uint64_t swap, uint32_t imm)
{
	struct ibv_sge sge = { .addr = (uintptr_t)d->local + loff, .length = len, .lkey = lkey };

	return sge_op(c, op, &sge, raddr, rkey, cmp_add, swap, imm);
}

#define CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			snprintf(why, whylen, __VA_ARGS__);		\
			return 1;					\
		}							\
	} while (0)

/*
 * Device memory (ibv_alloc_dm(3)): the size and mask limits, copies checked for bounds and
 * 4-byte alignment, a zero-based MR over it as the source of a write and the target of a read
 * (its SGEs name offsets), and a DM under an MR is not freed.
 */
static int case_device_memory(struct dev *d, char *why, size_t whylen)
{
	enum { DM_LEN = 8192, HALF = DM_LEN / 2 };
	struct ibv_alloc_dm_attr da = { .length = DM_LEN };
	struct ibv_device_attr_ex attr;
	static uint8_t buf[DM_LEN];
	struct ibv_sge sge;
	struct ibv_mr *mr;
	struct ibv_dm *dm;
	struct conn c;
	struct peer p;
	int st;

	CHECK(!ibv_query_device_ex(d->ctx, NULL, &attr) && attr.max_dm_size >= DM_LEN,
	      "max_dm_size %zu", (size_t)attr.max_dm_size);
	da.length = attr.max_dm_size + 1;
	CHECK(!ibv_alloc_dm(d->ctx, &da) && errno == ENOMEM, "a DM above max_dm_size: %s",
	      strerror(errno));
	da.length = DM_LEN;
	da.comp_mask = 1;
	CHECK(!ibv_alloc_dm(d->ctx, &da) && errno == EINVAL, "a DM with a comp_mask: %s",
	      strerror(errno));
	da.comp_mask = 0;
	dm = ibv_alloc_dm(d->ctx, &da);
	CHECK(dm, "ibv_alloc_dm: %s", strerror(errno));
	CHECK(ibv_memcpy_to_dm(dm, 2, buf, 4) == EINVAL, "copy to an unaligned offset");
	CHECK(ibv_memcpy_to_dm(dm, 0, buf, 6) == EINVAL, "copy of an unaligned length");
	CHECK(ibv_memcpy_from_dm(buf, dm, DM_LEN - 4, 8) == EINVAL, "copy past the end");
	CHECK(!ibv_reg_dm_mr(d->pd, dm, 0, DM_LEN, IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL,
	      "an MR that is not zero-based");
	CHECK(!ibv_reg_dm_mr(d->pd, dm, 4, DM_LEN, IBV_ACCESS_ZERO_BASED |
			     IBV_ACCESS_LOCAL_WRITE) && errno == EINVAL, "an MR past the end");
	mr = ibv_reg_dm_mr(d->pd, dm, 0, DM_LEN, IBV_ACCESS_ZERO_BASED | IBV_ACCESS_LOCAL_WRITE);
	CHECK(mr, "ibv_reg_dm_mr: %s", strerror(errno));
	CHECK(ibv_free_dm(dm) == EBUSY, "a DM under an MR was freed");

	pattern(buf, HALF, 300);
	CHECK(!ibv_memcpy_to_dm(dm, HALF, buf, HALF), "ibv_memcpy_to_dm");
	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	sge = (struct ibv_sge){ .addr = HALF, .length = HALF, .lkey = mr->lkey };
	st = sge_op(&c, IBV_WR_RDMA_WRITE, &sge, p.rw_addr, p.rw_rkey, 0, 0, 0);
	CHECK(st == IBV_WC_SUCCESS, "write from device memory: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	if (remote(d, CMD_CHECK, 0, 0, HALF, 300, why, whylen))
		return 1;
	sge.addr = 0;
	st = sge_op(&c, IBV_WR_RDMA_READ, &sge, p.rw_addr, p.rw_rkey, 0, 0, 0);
	CHECK(st == IBV_WC_SUCCESS, "read into device memory: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	memset(buf, 0, sizeof(buf));
	CHECK(!ibv_memcpy_from_dm(buf, dm, 0, HALF), "ibv_memcpy_from_dm");
	CHECK(pattern_mismatch(buf, HALF, 300) < 0, "device memory read back differs");
	close_case(d, &c);
	CHECK(!ibv_dereg_mr(mr) && !ibv_free_dm(dm), "releasing the DM and its MR");
	return 0;
}

/*
 * XRC objects (ibv_open_xrcd(3), ibv_create_srq_ex(3), ibv_open_qp(3)): a file opens one
 * domain however often (O_EXCL refuses it then), a domain with an SRQ is not closed, an XRC
 * SRQ needs its CQ and has a number, a target QP opened by number is the same QP and keeps
 * its creator from destroying it.
 */
static int case_xrc_objects(struct dev *d, char *why, size_t whylen)
{
	char path[] = "/tmp/verbs_check_xrcd_XXXXXX";
	struct ibv_xrcd_init_attr xa = {
		.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS, .fd = -1,
	};
	struct ibv_srq_init_attr_ex sa = {
		.attr = { .max_wr = 4, .max_sge = 1 }, .srq_type = IBV_SRQT_XRC, .pd = d->pd,
		.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD |
			     IBV_SRQ_INIT_ATTR_XRCD | IBV_SRQ_INIT_ATTR_CQ,
	};
	struct ibv_qp_init_attr_ex qa = { .qp_type = IBV_QPT_XRC_RECV,
					  .comp_mask = IBV_QP_INIT_ATTR_XRCD };
	struct ibv_qp_open_attr oa = { .comp_mask = IBV_QP_OPEN_ATTR_NUM | IBV_QP_OPEN_ATTR_XRCD |
					IBV_QP_OPEN_ATTR_TYPE, .qp_type = IBV_QPT_XRC_RECV };
	struct ibv_device_attr_ex attr;
	struct ibv_xrcd *x, *again;
	struct ibv_qp *tgt, *opened;
	struct ibv_srq *srq;
	struct ibv_cq *cq;
	uint32_t num = 0;
	int fd;

	CHECK(!ibv_query_device_ex(d->ctx, NULL, &attr) &&
	      (attr.orig_attr.device_cap_flags & IBV_DEVICE_XRC), "IBV_DEVICE_XRC not set");
	CHECK(!ibv_open_xrcd(d->ctx, &xa) && errno == EINVAL, "fd -1 without O_CREAT: %s",
	      strerror(errno));
	fd = mkstemp(path);
	CHECK(fd >= 0, "mkstemp: %s", strerror(errno));
	unlink(path);
	xa.fd = fd;
	xa.oflags = O_CREAT;
	x = ibv_open_xrcd(d->ctx, &xa);
	CHECK(x, "ibv_open_xrcd: %s", strerror(errno));
	again = ibv_open_xrcd(d->ctx, &xa);
	CHECK(again == x, "the same file opened another domain");
	xa.oflags = O_CREAT | O_EXCL;
	CHECK(!ibv_open_xrcd(d->ctx, &xa) && errno == EEXIST, "O_EXCL on an open domain: %s",
	      strerror(errno));
	cq = ibv_create_cq(d->ctx, 4, NULL, NULL, 0);
	CHECK(cq, "ibv_create_cq: %s", strerror(errno));
	sa.xrcd = x;
	CHECK(!ibv_create_srq_ex(d->ctx, &sa) && errno == EINVAL, "an XRC SRQ without a CQ: %s",
	      strerror(errno));
	sa.cq = cq;
	srq = ibv_create_srq_ex(d->ctx, &sa);
	CHECK(srq, "ibv_create_srq_ex XRC: %s", strerror(errno));
	CHECK(!ibv_get_srq_num(srq, &num) && num, "ibv_get_srq_num gave %u", num);
	qa.xrcd = x;
	tgt = ibv_create_qp_ex(d->ctx, &qa);
	CHECK(tgt, "XRC target QP: %s", strerror(errno));
	oa.xrcd = x;
	oa.qp_num = tgt->qp_num;
	opened = ibv_open_qp(d->ctx, &oa);
	CHECK(opened && opened->qp_num == tgt->qp_num, "ibv_open_qp: %s", strerror(errno));
	CHECK(ibv_destroy_qp(tgt) == EBUSY, "the creator destroyed a QP opened elsewhere");
	CHECK(!ibv_destroy_qp(opened) && !ibv_destroy_qp(tgt), "destroying the target QP");
	CHECK(!ibv_close_xrcd(again), "closing the second open");
	CHECK(ibv_close_xrcd(x) == EBUSY, "a domain with an SRQ was closed");
	CHECK(!ibv_destroy_srq(srq) && !ibv_close_xrcd(x) && !ibv_destroy_cq(cq),
	      "releasing the SRQ, domain and CQ");
	close(fd);
	return 0;
}

static uint64_t raw_clock_ns(struct dev *d)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	if (ibv_query_rt_values_ex(d->ctx, &v) || !(v.comp_mask & IBV_VALUES_MASK_RAW_CLOCK))
		return 0;
	return (uint64_t)v.raw_clock.tv_sec * 1000000000ull + (uint64_t)v.raw_clock.tv_nsec;
}

static uint64_t realtime_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_REALTIME, &t);
	return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/*
 * Completion timestamps: a write's completion carries the device clock
 * (ibv_query_rt_values_ex, hca_core_clock kHz) and the wall clock, each
 * between the readings taken before posting and after polling.
 */
static int case_timestamps(struct dev *d, char *why, size_t whylen)
{
	struct ibv_poll_cq_attr pa = { 0 };
	uint64_t raw0, raw1, wall0, wall1, ts = 0, wall = 0;
	struct ibv_send_wr wr, *bad;
	struct ibv_device_attr_ex attr;
	struct ibv_sge sge;
	struct conn c;
	struct peer p;
	int st, ret;

	CHECK(!ibv_query_device_ex(d->ctx, NULL, &attr) && attr.hca_core_clock == 1000000 &&
	      attr.completion_timestamp_mask == UINT64_MAX, "hca_core_clock %" PRIu64 " kHz",
	      (uint64_t)attr.hca_core_clock);
	open_case_ex(d, &c, &p, CQ_DEPTH, CQ_DEPTH, IBV_QP_EX_WITH_RDMA_WRITE);
	raw0 = raw_clock_ns(d);
	wall0 = realtime_ns();
	CHECK(raw0, "ibv_query_rt_values_ex gives no raw clock");
	sge = (struct ibv_sge){ .addr = (uintptr_t)d->local, .length = 64,
				.lkey = d->mr_local->lkey };
	wr = (struct ibv_send_wr){
		.wr_id = 9, .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = p.rw_addr, .rkey = p.rw_rkey },
	};
	CHECK(!ibv_post_send(c.qp, &wr, &bad), "post_send");
	for (uint64_t end = now_ms() + WAIT_MS; (ret = ibv_start_poll(c.scq_ex, &pa)) == ENOENT &&
	     now_ms() < end;)
		;
	CHECK(ret == 0, "no completion: %s", strerror(ret));
	st = c.scq_ex->status;
	ts = ibv_wc_read_completion_ts(c.scq_ex);
	wall = ibv_wc_read_completion_wallclock_ns(c.scq_ex);
	ibv_end_poll(c.scq_ex);
	raw1 = raw_clock_ns(d);
	wall1 = realtime_ns();
	CHECK(st == IBV_WC_SUCCESS, "write: %s", ibv_wc_status_str(st));
	CHECK(ts >= raw0 && ts <= raw1, "completion stamp %" PRIu64 " outside [%" PRIu64
	      ", %" PRIu64 "]", ts, raw0, raw1);
	/* The wall clock is derived at poll time: a microsecond of slack for the two readings. */
	CHECK(wall + 1000 >= wall0 && wall <= wall1 + 1000, "wall clock stamp %" PRIu64
	      " outside [%" PRIu64 ", %" PRIu64 "]", wall, wall0, wall1);
	close_case(d, &c);
	return 0;
}

static int case_write_read(struct dev *d, char *why, size_t whylen)
{
	static const uint32_t sizes[] = { 1, 7, 64, 1000, 1024, 4096, 4097, 65536, 1 << 20 };
	struct conn c;
	struct peer p;
	int st;

	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		uint64_t off = (i * 40961ull) % (RECV_BASE - sizes[i]);

		pattern(d->local, sizes[i], 100 + i);
		st = one_op(d, &c, IBV_WR_RDMA_WRITE, 0, sizes[i], d->mr_local->lkey,
			    p.rw_addr + off, p.rw_rkey, 0, 0, 0);
		CHECK(st == IBV_WC_SUCCESS, "write of %u bytes: %s", sizes[i],
		      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
		if (remote(d, CMD_CHECK, 0, off, sizes[i], 100 + i, why, whylen))
			return 1;
		memset(d->local + LOCAL_LEN / 2, 0, sizes[i]);
		st = one_op(d, &c, IBV_WR_RDMA_READ, LOCAL_LEN / 2, sizes[i], d->mr_local->lkey,
			    p.rw_addr + off, p.rw_rkey, 0, 0, 0);
		CHECK(st == IBV_WC_SUCCESS, "read of %u bytes: %s", sizes[i],
		      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
		CHECK(pattern_mismatch(d->local + LOCAL_LEN / 2, sizes[i], 100 + i) < 0,
		      "read back %u bytes differ", sizes[i]);
	}
	/* The read-only region reads fine. */
	if (remote(d, CMD_FILL, 1, 0, RO_LEN, 77, why, whylen))
		return 1;
	st = one_op(d, &c, IBV_WR_RDMA_READ, 0, RO_LEN, d->mr_local->lkey, p.ro_addr, p.ro_rkey,
		    0, 0, 0);
	CHECK(st == IBV_WC_SUCCESS, "read of the read-only region: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	CHECK(pattern_mismatch(d->local, RO_LEN, 77) < 0, "read-only region read back differs");
	close_case(d, &c);
	return 0;
}

static int case_send_recv(struct dev *d, char *why, size_t whylen)
{
	static const uint32_t sizes[] = { 0, 1, 100, 4096, 9000, RECV_SLOT_LEN };
	struct conn c;
	struct peer p;
	struct msg m;
	int st;

	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		bool imm = i % 2;

		pattern(d->local, sizes[i], 200 + i);
		st = one_op(d, &c, imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, 0, sizes[i],
			    d->mr_local->lkey, 0, 0, 0, 0, 0x1000 + i);
		CHECK(st == IBV_WC_SUCCESS, "send of %u bytes: %s", sizes[i],
		      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
		m = (struct msg){ .cmd = CMD_RECV_CHECK, .len = sizes[i], .seed = 200 + i,
				  .imm = 0x1000 + i, .flags = imm ? RECV_FLAG_IMM : 0 };
		call(d, &m);
		CHECK(!m.status, "send of %u bytes: %s", sizes[i], m.why);
	}
	/* RDMA write with immediate consumes a receive and carries no data to it. */
	pattern(d->local, 512, 300);
	st = one_op(d, &c, IBV_WR_RDMA_WRITE_WITH_IMM, 0, 512, d->mr_local->lkey, p.rw_addr,
		    p.rw_rkey, 0, 0, 0xabcd);
	CHECK(st == IBV_WC_SUCCESS, "write with immediate: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	m = (struct msg){ .cmd = CMD_RECV_CHECK, .len = 512, .imm = 0xabcd,
			  .flags = RECV_FLAG_IMM | RECV_FLAG_NO_DATA };
	call(d, &m);
	CHECK(!m.status, "write with immediate: %s", m.why);
	if (remote(d, CMD_CHECK, 0, 0, 512, 300, why, whylen))
		return 1;
	close_case(d, &c);
	return 0;
}

static int case_atomics(struct dev *d, char *why, size_t whylen)
{
	const uint64_t off = 8 * 1001, v0 = 0x1122334455667788ull, add = 0x1000000001ull;
	uint64_t *res = (uint64_t *)d->local, *val = (uint64_t *)(d->local + 64);
	struct conn c;
	struct peer p;
	int st;

	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	*val = v0;
	st = one_op(d, &c, IBV_WR_RDMA_WRITE, 64, 8, d->mr_local->lkey, p.rw_addr + off,
		    p.rw_rkey, 0, 0, 0);
	CHECK(st == IBV_WC_SUCCESS, "setup write failed");

	st = one_op(d, &c, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, d->mr_local->lkey, p.rw_addr + off,
		    p.rw_rkey, add, 0, 0);
	CHECK(st == IBV_WC_SUCCESS, "fetch-and-add: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	CHECK(*res == v0, "fetch-and-add returned %#" PRIx64 ", want %#" PRIx64, *res, v0);

	st = one_op(d, &c, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8, d->mr_local->lkey, p.rw_addr + off,
		    p.rw_rkey, v0 + add, 42, 0);
	CHECK(st == IBV_WC_SUCCESS, "compare-and-swap: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	CHECK(*res == v0 + add, "compare-and-swap returned %#" PRIx64, *res);

	st = one_op(d, &c, IBV_WR_ATOMIC_CMP_AND_SWP, 0, 8, d->mr_local->lkey, p.rw_addr + off,
		    p.rw_rkey, 1, 99, 0);
	CHECK(st == IBV_WC_SUCCESS, "failing compare-and-swap: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	CHECK(*res == 42, "failing compare-and-swap returned %#" PRIx64 ", want 42", *res);

	st = one_op(d, &c, IBV_WR_RDMA_READ, 64, 8, d->mr_local->lkey, p.rw_addr + off,
		    p.rw_rkey, 0, 0, 0);
	CHECK(st == IBV_WC_SUCCESS && *val == 42, "target holds %#" PRIx64 ", want 42", *val);
	close_case(d, &c);
	return 0;
}

/*
 * An operation that must fail: the requester sees @want, the target region
 * [off, off+len) of @region keeps its canary.
 */
static int expect_error(struct dev *d, const char *what, enum ibv_wr_opcode op, uint32_t lkey,
			int region, uint64_t raddr_off, uint32_t len, bool bad_rkey,
			enum ibv_wc_status want, uint64_t canary_off, uint64_t canary_len,
			char *why, size_t whylen)
{
	struct conn c;
	struct peer p;
	uint64_t base;
	uint32_t rkey;
	int st;

	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	if (remote(d, CMD_FILL, (uint32_t)region, canary_off, canary_len, 0xca7, why, whylen))
		return 1;
	base = region ? p.ro_addr : p.rw_addr;
	rkey = region ? p.ro_rkey : p.rw_rkey;
	if (bad_rkey)
		rkey ^= 0x00010100;
	pattern(d->local, len, 5);
	st = one_op(d, &c, op, 0, len, lkey, base + raddr_off, rkey, 1, 2, 0);
	CHECK(st == (int)want, "%s: got %s, want %s", what,
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st), ibv_wc_status_str(want));
	if (remote(d, CMD_CHECK, (uint32_t)region, canary_off, canary_len, 0xca7, why, whylen)) {
		snprintf(why + strlen(why), whylen - strlen(why), " (%s wrote to the target)", what);
		return 1;
	}
	close_case(d, &c);
	return 0;
}

static int case_bad_lkey(struct dev *d, char *why, size_t whylen)
{
	return expect_error(d, "write with a bad lkey", IBV_WR_RDMA_WRITE,
			    d->mr_local->lkey ^ 0x00101000, 0, 4096, 256, false,
			    IBV_WC_LOC_PROT_ERR, 0, 65536, why, whylen);
}

static int case_bad_rkey(struct dev *d, char *why, size_t whylen)
{
	return expect_error(d, "write with a bad rkey", IBV_WR_RDMA_WRITE, d->mr_local->lkey, 0,
			    4096, 256, true, IBV_WC_REM_ACCESS_ERR, 0, 65536, why, whylen) ||
	       expect_error(d, "read with a bad rkey", IBV_WR_RDMA_READ, d->mr_local->lkey, 0,
			    4096, 256, true, IBV_WC_REM_ACCESS_ERR, 0, 65536, why, whylen) ||
	       expect_error(d, "atomic with a bad rkey", IBV_WR_ATOMIC_FETCH_AND_ADD,
			    d->mr_local->lkey, 0, 4096, 8, true, IBV_WC_REM_ACCESS_ERR, 0, 65536,
			    why, whylen);
}

static int case_out_of_range(struct dev *d, char *why, size_t whylen)
{
	/* Straddles the end of the region: not one byte may land. */
	return expect_error(d, "write past the end of the region", IBV_WR_RDMA_WRITE,
			    d->mr_local->lkey, 0, RW_LEN - 100, 4096, false,
			    IBV_WC_REM_ACCESS_ERR, RW_LEN - 8192, 8192, why, whylen) ||
	       expect_error(d, "read past the end of the region", IBV_WR_RDMA_READ,
			    d->mr_local->lkey, 1, RO_LEN - 10, 100, false, IBV_WC_REM_ACCESS_ERR,
			    0, RO_LEN, why, whylen);
}

static int case_wrong_access(struct dev *d, char *why, size_t whylen)
{
	return expect_error(d, "write to a read-only region", IBV_WR_RDMA_WRITE,
			    d->mr_local->lkey, 1, 0, 1024, false, IBV_WC_REM_ACCESS_ERR, 0, RO_LEN,
			    why, whylen) ||
	       expect_error(d, "atomic on a read-only region", IBV_WR_ATOMIC_CMP_AND_SWP,
			    d->mr_local->lkey, 1, 64, 8, false, IBV_WC_REM_ACCESS_ERR, 0, RO_LEN,
			    why, whylen);
}

/* A misaligned atomic is refused at post time or completes in error; the target is untouched. */
static int case_misaligned_atomic(struct dev *d, char *why, size_t whylen)
{
	struct conn c;
	struct peer p;
	int st;

	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	if (remote(d, CMD_FILL, 0, 0, 4096, 0xa11, why, whylen))
		return 1;
	st = one_op(d, &c, IBV_WR_ATOMIC_FETCH_AND_ADD, 0, 8, d->mr_local->lkey, p.rw_addr + 1027,
		    p.rw_rkey, 1, 0, 0);
	CHECK(st != IBV_WC_SUCCESS && st != -ETIMEDOUT, "misaligned fetch-and-add: %s",
	      st < 0 ? strerror(-st) : ibv_wc_status_str(st));
	if (remote(d, CMD_CHECK, 0, 0, 4096, 0xa11, why, whylen))
		return 1;
	close_case(d, &c);
	return 0;
}

/* IBA 10.8.2: a QP accepts receives from INIT on and sends from RTS on; earlier, EINVAL. */
static int case_wrong_state(struct dev *d, char *why, size_t whylen)
{
	struct ibv_qp_init_attr init = {
		.qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 },
	};
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE };
	struct ibv_sge sge = { .addr = (uintptr_t)d->local, .length = 8,
			       .lkey = d->mr_local->lkey };
	struct ibv_send_wr swr = { .sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
				   .send_flags = IBV_SEND_SIGNALED }, *sbad = NULL;
	struct ibv_recv_wr rwr = { .sg_list = &sge, .num_sge = 1 }, *rbad = NULL;
	struct ibv_cq *cq = ibv_create_cq(d->ctx, 16, NULL, NULL, 0);
	struct ibv_qp *qp;
	int ret;

	CHECK(cq, "ibv_create_cq: %s", strerror(errno));
	init.send_cq = init.recv_cq = cq;
	qp = ibv_create_qp(d->pd, &init);
	CHECK(qp, "ibv_create_qp: %s", strerror(errno));
	ret = ibv_post_recv(qp, &rwr, &rbad);
	CHECK(ret == EINVAL && rbad == &rwr, "post_recv in RESET: %d (%s), want EINVAL", ret,
	      strerror(ret));
	ret = ibv_post_send(qp, &swr, &sbad);
	CHECK(ret == EINVAL && sbad == &swr, "post_send in RESET: %d (%s), want EINVAL", ret,
	      strerror(ret));
	CHECK(!ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS), "modify to INIT failed");
	sbad = NULL;
	ret = ibv_post_send(qp, &swr, &sbad);
	CHECK(ret == EINVAL && sbad == &swr, "post_send in INIT: %d (%s), want EINVAL", ret,
	      strerror(ret));
	ret = ibv_post_recv(qp, &rwr, &rbad);
	CHECK(ret == 0, "post_recv in INIT: %s", strerror(ret));
	/* An illegal transition is refused and changes nothing. */
	a.qp_state = IBV_QPS_RTS;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	CHECK(ret == EINVAL, "INIT -> RTS: %d, want EINVAL", ret);
	CHECK(!ibv_destroy_qp(qp) && !ibv_destroy_cq(cq), "destroy failed");
	return 0;
}

/* More signalled completions than the send CQ holds: IBV_EVENT_CQ_ERR on that CQ. */
static int case_cq_overflow(struct dev *d, char *why, size_t whylen)
{
	struct ibv_async_event ev;
	struct conn c;
	struct peer p;
	bool got = false;
	uint64_t end;
	int n;

	open_case(d, &c, &p, 4, 64);
	n = c.scq->cqe + 8;
	for (int i = 0; i < n; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)d->local, .length = 8,
				       .lkey = d->mr_local->lkey };
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
			.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
			.wr = { .rdma = { .remote_addr = p.rw_addr, .rkey = p.rw_rkey } },
		}, *bad;

		CHECK(!ibv_post_send(c.qp, &wr, &bad), "post %d of %d failed", i, n);
	}
	end = now_ms() + WAIT_MS;
	while (!got && now_ms() < end) {
		struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };

		/* Nothing polls the CQ, so progress comes from the dataplane's own thread. */
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		CHECK(!ibv_get_async_event(d->ctx, &ev), "ibv_get_async_event: %s", strerror(errno));
		got = ev.event_type == IBV_EVENT_CQ_ERR && ev.element.cq == c.scq;
		ibv_ack_async_event(&ev);
	}
	CHECK(got, "no IBV_EVENT_CQ_ERR for a CQ of %d entries after %d completions",
	      c.scq->cqe, n);
	close_case(d, &c);
	return 0;
}

/* An SRQ armed with a limit raises IBV_EVENT_SRQ_LIMIT_REACHED once fewer receives remain. */
static int case_srq_limit(struct dev *d, char *why, size_t whylen)
{
	struct ibv_srq_init_attr sattr = { .attr = { .max_wr = 32, .max_sge = 1 } };
	struct ibv_srq_attr lim = { .srq_limit = 10 };
	struct ibv_async_event ev;
	struct conn c;
	struct peer p;
	struct msg m;
	bool got = false;
	uint64_t end;
	struct ibv_wc wc;
	struct ibv_srq *srq = ibv_create_srq(d->pd, &sattr);
	int ret;

	CHECK(srq, "ibv_create_srq: %s", strerror(errno));
	for (int i = 0; i < 16; i++) {
		struct ibv_sge sge = { .addr = (uintptr_t)d->local + (uint64_t)i * 4096,
				       .length = 4096, .lkey = d->mr_local->lkey };
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1 },
				   *bad;

		CHECK(!ibv_post_srq_recv(srq, &wr, &bad), "ibv_post_srq_recv %d failed", i);
	}
	ret = ibv_modify_srq(srq, &lim, IBV_SRQ_LIMIT);
	CHECK(ret == 0, "arming the SRQ limit: %s", strerror(ret));
	d->srq = srq;
	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	d->srq = NULL;

	/* 16 - 5 = 11 receives left: above the limit, no event yet. */
	m = (struct msg){ .cmd = CMD_SEND, .len = 5, .seed = 500 };
	call(d, &m);
	CHECK(!m.status, "peer: %s", m.why);
	m = (struct msg){ .cmd = CMD_SEND, .len = 3, .seed = 505 };
	call(d, &m);
	CHECK(!m.status, "peer: %s", m.why);
	for (int i = 0; i < 8; i++) {
		CHECK(wait_wc(c.rcq, &wc, WAIT_MS) == 1 && wc.status == IBV_WC_SUCCESS &&
		      wc.byte_len == 64, "receive %d through the SRQ", i);
		CHECK(pattern_mismatch(d->local + wc.wr_id * 4096, 64, 500 + (uint64_t)i) < 0,
		      "receive %d through the SRQ holds the wrong data", i);
	}
	end = now_ms() + WAIT_MS;
	while (!got && now_ms() < end) {
		struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		CHECK(!ibv_get_async_event(d->ctx, &ev), "ibv_get_async_event: %s", strerror(errno));
		got = ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED && ev.element.srq == srq;
		ibv_ack_async_event(&ev);
	}
	CHECK(got, "no IBV_EVENT_SRQ_LIMIT_REACHED with 8 of 16 receives left, limit 10");
	close_case(d, &c);
	CHECK(!ibv_destroy_srq(srq), "ibv_destroy_srq failed");
	return 0;
}

/* Stream writes, have the peer die, and time the requester's retry exhaustion. */
static int case_peer_death(struct dev *d, char *why, size_t whylen)
{
	/* IBA C9-140/141: (retry_cnt + 1) tries of 4.096 us * 2^timeout, with slack for scheduling. */
	const uint64_t budget_ms = (QP_RETRY + 1) * 4096ull * (1u << QP_TIMEOUT) / 1000000 * 4 + 2000;
	struct msg m = { .cmd = CMD_DIE };
	struct conn c;
	struct peer p;
	unsigned done = 0, posted = 0;
	uint64_t died = 0, end = now_ms() + 30000;
	struct ibv_wc wc;

	open_case(d, &c, &p, CQ_DEPTH, CQ_DEPTH);
	while (now_ms() < end) {
		while (posted - done < 32) {
			struct ibv_sge sge = { .addr = (uintptr_t)d->local, .length = 65536,
					       .lkey = d->mr_local->lkey };
			struct ibv_send_wr wr = {
				.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr = { .rdma = { .remote_addr = p.rw_addr, .rkey = p.rw_rkey } },
			}, *bad;

			if (ibv_post_send(c.qp, &wr, &bad))
				break;
			posted++;
		}
		if (ibv_poll_cq(c.scq, 1, &wc) != 1)
			continue;
		done++;
		if (wc.status == IBV_WC_SUCCESS) {
			if (done == 200 && !died) {
				/* No reply comes: the server kills itself. */
				xfer(d->sock, &m, true);
				died = now_ms();
			}
			continue;
		}
		CHECK(died, "error %s before the peer died", ibv_wc_status_str(wc.status));
		CHECK(wc.status == IBV_WC_RETRY_EXC_ERR, "got %s, want %s",
		      ibv_wc_status_str(wc.status), ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR));
		CHECK(now_ms() - died <= budget_ms, "retry exhaustion took %" PRIu64
		      " ms, budget %" PRIu64 " ms", now_ms() - died, budget_ms);
		printf("retry exhaustion after %" PRIu64 " ms (timeout %d, retry_cnt %d)\n",
		       now_ms() - died, QP_TIMEOUT, QP_RETRY);
		conn_destroy(&c);
		return 0;
	}
	snprintf(why, whylen, "no error completion 30 s after the peer %s",
		 died ? "died" : "was told to die");
	return 1;
}

/* Completions through the extended poll API: @n of them, all successful, in wr_id order from 1. */
static int ex_poll(struct conn *c, int n, uint64_t *first_wr_id, char *why, size_t whylen)
{
	struct ibv_poll_cq_attr attr = { 0 };
	uint64_t end = now_ms() + WAIT_MS;
	int got = 0, ret;

	while (got < n && now_ms() < end) {
		ret = ibv_start_poll(c->scq_ex, &attr);
		if (ret == ENOENT)
			continue;
		CHECK(ret == 0, "ibv_start_poll: %s", strerror(ret));
		do {
			CHECK(c->scq_ex->status == IBV_WC_SUCCESS, "wr_id %" PRIu64 ": %s",
			      c->scq_ex->wr_id, ibv_wc_status_str(c->scq_ex->status));
			CHECK(ibv_wc_read_qp_num(c->scq_ex) == c->qp->qp_num,
			      "ibv_wc_read_qp_num %u, QP %u", ibv_wc_read_qp_num(c->scq_ex),
			      c->qp->qp_num);
			if (!got && first_wr_id)
				*first_wr_id = c->scq_ex->wr_id;
			got++;
		} while (got < n && ibv_next_poll(c->scq_ex) == 0);
		ibv_end_poll(c->scq_ex);
	}
	CHECK(got == n, "%d of %d completions", got, n);
	return 0;
}

/* The ibv_wr_* post-send API and the extended CQ, against the same checks as the classic path. */
static int case_ex_api(struct dev *d, char *why, size_t whylen)
{
	const uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
			     IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	uint8_t inl[200];
	struct ibv_sge sges[2];
	struct ibv_wc wc;
	struct conn c;
	struct peer p;
	struct msg m;
	uint64_t first = 0;
	int ret;

	open_case_ex(d, &c, &p, CQ_DEPTH, CQ_DEPTH, ops);

	/* Two writes in one batch: inline data (copied at once) and a two-entry SGE list. */
	pattern(inl, sizeof(inl), 400);
	pattern(d->local, 3000, 401);
	sges[0] = (struct ibv_sge){ .addr = (uintptr_t)d->local, .length = 1000,
				    .lkey = d->mr_local->lkey };
	sges[1] = (struct ibv_sge){ .addr = (uintptr_t)d->local + 1000, .length = 2000,
				    .lkey = d->mr_local->lkey };
	ibv_wr_start(c.qpx);
	c.qpx->wr_id = 1;
	c.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(c.qpx, p.rw_rkey, p.rw_addr + 8192);
	ibv_wr_set_inline_data(c.qpx, inl, sizeof(inl));
	memset(inl, 0, sizeof(inl));
	c.qpx->wr_id = 2;
	ibv_wr_rdma_write(c.qpx, p.rw_rkey, p.rw_addr + 16384);
	ibv_wr_set_sge_list(c.qpx, 2, sges);
	ret = ibv_wr_complete(c.qpx);
	CHECK(ret == 0, "ibv_wr_complete: %s", strerror(ret));
	if (ex_poll(&c, 2, &first, why, whylen))
		return 1;
	CHECK(first == 1, "first completion has wr_id %" PRIu64 ", want 1", first);
	if (remote(d, CMD_CHECK, 0, 8192, 200, 400, why, whylen) ||
	    remote(d, CMD_CHECK, 0, 16384, 3000, 401, why, whylen))
		return 1;

	/* Read it back, then fetch-and-add. */
	memset(d->local, 0, 3000);
	ibv_wr_start(c.qpx);
	c.qpx->wr_id = 3;
	ibv_wr_rdma_read(c.qpx, p.rw_rkey, p.rw_addr + 16384);
	ibv_wr_set_sge(c.qpx, d->mr_local->lkey, (uintptr_t)d->local, 3000);
	ret = ibv_wr_complete(c.qpx);
	CHECK(ret == 0, "ibv_wr_complete (read): %s", strerror(ret));
	if (ex_poll(&c, 1, NULL, why, whylen))
		return 1;
	CHECK(pattern_mismatch(d->local, 3000, 401) < 0, "read back through ibv_wr_rdma_read differs");
	ibv_wr_start(c.qpx);
	c.qpx->wr_id = 4;
	ibv_wr_atomic_fetch_add(c.qpx, p.rw_rkey, p.rw_addr + 8192, 5);
	ibv_wr_set_sge(c.qpx, d->mr_local->lkey, (uintptr_t)d->local + 4096, 8);
	ret = ibv_wr_complete(c.qpx);
	CHECK(ret == 0, "ibv_wr_complete (fetch-and-add): %s", strerror(ret));
	if (ex_poll(&c, 1, NULL, why, whylen))
		return 1;
	{
		uint64_t before, *got = (uint64_t *)(d->local + 4096);

		pattern((uint8_t *)&before, 8, 400);
		CHECK(*got == before, "fetch-and-add returned %#" PRIx64 ", want %#" PRIx64, *got,
		      before);
	}

	/* Send with immediate, received by the classic receive path. */
	pattern(d->local, 777, 402);
	ibv_wr_start(c.qpx);
	c.qpx->wr_id = 5;
	ibv_wr_send_imm(c.qpx, htonl(0x5151));
	ibv_wr_set_sge(c.qpx, d->mr_local->lkey, (uintptr_t)d->local, 777);
	ret = ibv_wr_complete(c.qpx);
	CHECK(ret == 0, "ibv_wr_complete (send with immediate): %s", strerror(ret));
	if (ex_poll(&c, 1, NULL, why, whylen))
		return 1;
	m = (struct msg){ .cmd = CMD_RECV_CHECK, .len = 777, .seed = 402, .imm = 0x5151,
			  .flags = RECV_FLAG_IMM };
	call(d, &m);
	CHECK(!m.status, "send with immediate: %s", m.why);

	/* An aborted batch and a batch with an operation the QP was not created for post nothing. */
	if (remote(d, CMD_FILL, 0, 0, 4096, 0xab, why, whylen))
		return 1;
	ibv_wr_start(c.qpx);
	ibv_wr_rdma_write(c.qpx, p.rw_rkey, p.rw_addr);
	ibv_wr_set_sge(c.qpx, d->mr_local->lkey, (uintptr_t)d->local, 64);
	ibv_wr_abort(c.qpx);
	ibv_wr_start(c.qpx);
	c.qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(c.qpx, p.rw_rkey, p.rw_addr + 64);
	ibv_wr_set_sge(c.qpx, d->mr_local->lkey, (uintptr_t)d->local, 64);
	ibv_wr_atomic_cmp_swp(c.qpx, p.rw_rkey, p.rw_addr, 0, 1);
	ibv_wr_set_sge(c.qpx, d->mr_local->lkey, (uintptr_t)d->local, 8);
	ret = ibv_wr_complete(c.qpx);
	CHECK(ret == EOPNOTSUPP, "a batch with compare-and-swap on a QP without it: %d (%s), "
	      "want EOPNOTSUPP", ret, strerror(ret));
	CHECK(wait_wc(c.scq, &wc, 300) == 0, "a refused batch produced a completion");
	if (remote(d, CMD_CHECK, 0, 0, 4096, 0xab, why, whylen))
		return 1;
	close_case(d, &c);
	return 0;
}

/*
 * --port-events: listen on the control port (the harness's signal that the
 * device is open), then expect IBV_EVENT_PORT_ERR and IBV_EVENT_PORT_ACTIVE
 * for port 1 on the async fd while the harness takes the netdev down and up.
 */
static int port_events(struct dev *d, const char *port)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_PASSIVE };
	enum ibv_event_type want[2] = { IBV_EVENT_PORT_ERR, IBV_EVENT_PORT_ACTIVE };
	uint64_t end = now_ms() + 30000;
	struct addrinfo *res;
	int lfd, one = 1, got = 0;

	if (getaddrinfo(NULL, port, &hints, &res))
		die("getaddrinfo");
	lfd = socket(res->ai_family, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1))
		die("listen");
	freeaddrinfo(res);
	while (got < 2 && now_ms() < end) {
		struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;

		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (ibv_get_async_event(d->ctx, &ev))
			die("ibv_get_async_event");
		printf("event %s port %d\n", ibv_event_type_str(ev.event_type), ev.element.port_num);
		fflush(stdout);		/* the harness acts on each event as it comes */
		if (ev.event_type == want[got] && ev.element.port_num == 1)
			got++;
		ibv_ack_async_event(&ev);
	}
	close(lfd);
	printf("%s port_events: %s\n", got == 2 ? "PASS" : "FAIL",
	       got == 2 ? "PORT_ERR then PORT_ACTIVE" : "missing port events");
	return got == 2 ? 0 : 1;
}

/*
 * --port-state MS: keep the device open MS milliseconds (past its first link
 * refreshes), then PASS if port 1 is ACTIVE and no IBV_EVENT_PORT_ERR came
 * meanwhile.
 */
static int port_state(struct dev *d, int ms)
{
	uint64_t end = now_ms() + (uint64_t)ms;
	struct ibv_port_attr attr;
	int errs = 0;
	bool ok;

	for (uint64_t now; (now = now_ms()) < end;) {
		struct pollfd pfd = { .fd = d->ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;

		if (poll(&pfd, 1, (int)(end - now)) <= 0)
			continue;
		if (ibv_get_async_event(d->ctx, &ev))
			die("ibv_get_async_event");
		printf("event %s port %d\n", ibv_event_type_str(ev.event_type), ev.element.port_num);
		if (ev.event_type == IBV_EVENT_PORT_ERR)
			errs++;
		ibv_ack_async_event(&ev);
	}
	if (ibv_query_port(d->ctx, 1, &attr))
		die("ibv_query_port");
	ok = attr.state == IBV_PORT_ACTIVE && !errs;
	printf("%s port_state: %s after %d ms, %d port error event(s)\n", ok ? "PASS" : "FAIL",
	       ibv_port_state_str(attr.state), ms, errs);
	return ok ? 0 : 1;
}

/* ---- Main ---- */

static int tcp_connect(const char *host, const char *port, bool server)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = server ? AI_PASSIVE : 0 };
	struct addrinfo *res;
	int fd = -1, one = 1;
	uint64_t end = now_ms() + WAIT_MS;

	if (getaddrinfo(server ? NULL : host, port, &hints, &res))
		die("getaddrinfo");
	if (server) {
		int lfd = socket(res->ai_family, SOCK_STREAM, 0);

		if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
		    bind(lfd, res->ai_addr, res->ai_addrlen) || listen(lfd, 1))
			die("listen");
		printf("listening\n");
		fflush(stdout);
		fd = accept(lfd, NULL, NULL);
		close(lfd);
	} else {
		/* The server may not listen yet. */
		while (fd < 0 && now_ms() < end) {
			fd = socket(res->ai_family, SOCK_STREAM, 0);
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

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*run)(struct dev *d, char *why, size_t whylen);
	} cases[] = {
		{ "write_read_integrity", case_write_read },
		{ "send_recv_integrity", case_send_recv },
		{ "atomics", case_atomics },
		{ "bad_lkey_local_prot_err", case_bad_lkey },
		{ "bad_rkey_rem_access_err", case_bad_rkey },
		{ "out_of_range_rem_access_err", case_out_of_range },
		{ "wrong_access_rem_access_err", case_wrong_access },
		{ "misaligned_atomic_error", case_misaligned_atomic },
		{ "post_in_wrong_state_einval", case_wrong_state },
		{ "cq_overflow_async_cq_err", case_cq_overflow },
		{ "post_send_api_and_extended_cq", case_ex_api },
		{ "srq_limit_async_event", case_srq_limit },
		{ "device_memory", case_device_memory },
		{ "completion_timestamps", case_timestamps },
		{ "xrc_objects", case_xrc_objects },
	};
	const char *devname = NULL, *port = "18600", *host = NULL;
	bool peer_death = false, events = false;
	int state_ms = -1;
	struct dev d = { 0 };
	int gid_index = 0;
	struct msg m;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-d") && i + 1 < argc)
			devname = argv[++i];
		else if (!strcmp(argv[i], "-g") && i + 1 < argc)
			gid_index = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-p") && i + 1 < argc)
			port = argv[++i];
		else if (!strcmp(argv[i], "--peer-death"))
			peer_death = true;
		else if (!strcmp(argv[i], "--port-events"))
			events = true;
		else if (!strcmp(argv[i], "--port-state") && i + 1 < argc)
			state_ms = atoi(argv[++i]);
		else if (argv[i][0] != '-' && !host)
			host = argv[i];
		else {
			fprintf(stderr, "usage: verbs_check [-d DEV] [-g GIDX] [-p PORT] "
				"[--peer-death | --port-events | --port-state MS] [HOST]\n");
			return 100;
		}
	}
	srand48(getpid() ^ (long)now_ms());
	/* A hang is a failure too. */
	alarm(300);
	dev_open(&d, devname, gid_index);
	if (events)
		return port_events(&d, port);
	if (state_ms >= 0)
		return port_state(&d, state_ms);
	d.sock = tcp_connect(host, port, !host);
	if (!host) {
		serve(&d);
		return 0;
	}
	if (peer_death) {
		char why[256] = "";
		int r = case_peer_death(&d, why, sizeof(why));

		printf("%s peer_death_retry_exc_err%s%s\n", r ? "FAIL" : "PASS", r ? ": " : "",
		       why);
		return r;
	}
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char why[256] = "";

		if (cases[i].run(&d, why, sizeof(why))) {
			failures++;
			printf("FAIL %s: %s\n", cases[i].name, why);
			/* The failed case may have left a QP: the next CONNECT replaces it. */
		} else {
			printf("PASS %s\n", cases[i].name);
		}
		fflush(stdout);
	}
	m = (struct msg){ .cmd = CMD_QUIT };
	call(&d, &m);
	return failures;
}
