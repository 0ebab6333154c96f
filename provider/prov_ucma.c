// SPDX-License-Identifier: MIT
/* The kernel's rdma_cm as librdmacm sees it (the ucma ABI, version 4), answered in the process over uroce's CM. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <rdma/rdma_user_cm.h>

#include "prov.h"
#include "prov_channel.h"
#include "prov_ucma.h"
#include "uroce/cm.h"
#include "uroce/sysfs.h"
#include "host_cm_exit.h"
#include "host_cm_listen.h"
#include "host_qpn.h"
#include "host_stats.h"

/*
 * What the kernel's ucma.c and cma.c do for a process, done here: IDs,
 * address and route resolution from the uroce devices' GID tables, the IP
 * port spaces and rdma_cm's private-data header on top of the CM
 * (dataplane/cm), events queued per channel with the counts DESTROY_ID
 * reports, and the QP attributes each state needs.  One lock (ucma_lock)
 * covers all of it and every call into the CMs; a thread runs the CMs'
 * receive and timers.  Commands arrive through the preloaded
 * liburoce-ucma.so (prov_ucma_fd.c), which hands over the channel's
 * descriptors: an eventfd each, its counter the number of events queued.
 */

/* The event numbers of the ABI (the kernel's enum rdma_cm_event_type; librdmacm's rdma_cma.h). */
enum ucma_event_type {
	RDMA_CM_EVENT_ADDR_RESOLVED = 0,
	RDMA_CM_EVENT_ADDR_ERROR = 1,
	RDMA_CM_EVENT_ROUTE_RESOLVED = 2,
	RDMA_CM_EVENT_ROUTE_ERROR = 3,
	RDMA_CM_EVENT_CONNECT_REQUEST = 4,
	RDMA_CM_EVENT_CONNECT_RESPONSE = 5,
	RDMA_CM_EVENT_UNREACHABLE = 7,
	RDMA_CM_EVENT_REJECTED = 8,
	RDMA_CM_EVENT_ESTABLISHED = 9,
	RDMA_CM_EVENT_DISCONNECTED = 10,
	RDMA_CM_EVENT_MULTICAST_JOIN = 12,
	RDMA_CM_EVENT_TIMEWAIT_EXIT = 15,
};

#define UCMA_UDP_QKEY		0x01234567u	/* RDMA_UDP_QKEY: the Q_Key of the UDP port space */
#define UCMA_ACK_TIMEOUT	14		/* QP local ACK timeout: 4.096 us * 2^14 = 67 ms */
/*
 * The kernel's cm.c gives every RC QP min_rnr_timer 0 (655.36 ms, IBA table 45).  A shorter
 * one broke programs that post a receive just after their peer sends: rdma-core's
 * test_rdmacm_async_traffic_external_qp ran out of its 5 RNR retries in 3.2 ms on a busy host.
 */
#define UCMA_MIN_RNR_TIMER	0
#define UCMA_CM_RETRIES		15		/* CMA_MAX_CM_RETRIES */
#define UCMA_POLL_NS		1000000ull	/* how often the CM thread looks for MADs */
#define UCMA_SEND_WAIT_NS	1000000000ull	/* longest a command waits for its MAD to leave */
#define UCMA_SEND_SPIN_NS	1000000ull	/* and how long of that it yields before it sleeps */
/*
 * Longest a peer's DREQ waits as DISCONNECTED while a completion of the QP
 * is still unpolled (ucma_cm_event()).
 */
#define UCMA_DISC_HOLD_NS	20000000ull
#define UCMA_PORT_LO		32768
#define UCMA_PORT_HI		61000

struct ucma_dev {
	struct ibv_device	*ibdev;
	struct ibv_context	*ctx;
	struct cm		*cm;
	struct host_cm_listen	*listen;	/* the netdev's, shared with the host's other processes */
	struct host_cm_exit	*exit;		/* this process's connections, for the broker */
	__be64			guid;
	enum ibv_mtu		mtu;
	struct ucma_dev		*next;
};

struct ucma_event {
	struct rdma_ucm_event_resp	resp;
	struct ucma_ctx			*ctx;	/* whose events_reported it counts for */
	struct ucma_mc			*mc;	/* MULTICAST_JOIN: the group's, counted there too */
	struct ucma_ctx			*conn;	/* CONNECT_REQUEST: the new ID, freed with the event */
	struct ucma_event		*next;
};

struct ucma_file {
	int			fd;
	struct ucma_event	*head, **tail;
	pthread_cond_t		cond;
	unsigned		waiters;	/* in GET_EVENT */
	uint64_t		closed_ns;	/* when close() came; 0: open */
	void			(*released)(int fd);	/* called once @fd is closed for real */
	struct ucma_file	*next;
};

enum ucma_state { U_IDLE, U_BOUND, U_ADDR, U_ROUTE, U_LISTEN, U_CONNECT, U_CONNECTED, U_DISC };

/* A multicast group an ID joined (JOIN_IP_MCAST, JOIN_MCAST): its own handle and event count. */
struct ucma_mc {
	uint32_t		id;
	uint64_t		uid;
	struct ucma_ctx		*ctx;
	unsigned		events_reported;
	struct ucma_mc		*next;
};

struct ucma_ctx {
	uint32_t		id;
	uint64_t		uid;
	struct ucma_file	*file;
	uint16_t		ps;
	uint8_t			qp_type;
	enum ucma_state		state;
	struct sockaddr_storage	src, dst;
	struct ucma_dev		*dev;		/* NULL: bound to the any address */
	struct cm_id		*cm_ids[8];	/* a listener has one per device; else cm_ids[0] */
	struct ucma_dev		*cm_devs[8];	/* whose CM each is */
	unsigned		n_cm;
	unsigned		events_reported;
	bool			reuseaddr, disconnected;
	/*
	 * Made by a listener for a connection request: it shares the listener's
	 * port without holding it (the kernel's cma_new_conn_id binds no port), so
	 * the port can be bound again once the listener is gone.
	 */
	bool			passive;
	/* For INIT_QP_ATTR (ours and the peer's halves of the handshake). */
	struct cm_path		path;
	bool			path_ok;
	/*
	 * psn: the starting PSN of our REQ or REP, the first we expect (our
	 * rq_psn); remote_psn, the peer's, is our sq_psn.  The kernel's cm.c
	 * reads them so (ib_send_cm_req, cm_rep_handler).
	 */
	uint32_t		psn, remote_qpn, remote_psn, remote_qkey;
	uint32_t		qpn;		/* ours, from CONNECT or ACCEPT */
	uint64_t		disc_held_until;	/* DISCONNECTED held back until then */
	bool			timewait_held;	/* and TIMEWAIT_EXIT behind it */
	uint8_t			rres, idepth, peer_rres, retry, rnr_retry;
	uint8_t			ack_timeout;	/* RDMA_OPTION_ID_ACK_TIMEOUT; 0: UCMA_ACK_TIMEOUT */
	uint8_t			tos;		/* RDMA_OPTION_ID_TOS: the next route's traffic class */
};

static pthread_mutex_t ucma_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ucma_file *ucma_files;
static struct ucma_dev *ucma_devs;
static struct ucma_ctx **ucma_ctxs;	/* by id; slot 0 unused */
static uint32_t ucma_n_ctx;
static struct ucma_mc *ucma_mcs;
static uint32_t ucma_next_mc_id;
static bool ucma_thread_up;

/* fork(): as the dataplanes (prov_main.c), the child forgets the parent's channels, IDs and CMs. */
static void ucma_lock_for_fork(void)
{
	pthread_mutex_lock(&ucma_lock);
}

static void ucma_unlock_in_parent(void)
{
	pthread_mutex_unlock(&ucma_lock);
}

static void ucma_forget_in_child(void)
{
	pthread_mutex_init(&ucma_lock, NULL);
	ucma_files = NULL;
	ucma_devs = NULL;
	ucma_ctxs = NULL;
	ucma_n_ctx = 0;
	ucma_mcs = NULL;
	ucma_thread_up = false;
}

void prov_ucma_atfork(void)
{
	pthread_atfork(ucma_lock_for_fork, ucma_unlock_in_parent, ucma_forget_in_child);
}

/* ---- Time and randomness ---- */

static uint64_t mono_ns(void *arg)
{
	struct timespec ts;

	(void)arg;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint32_t rand32(void)
{
	uint32_t v;

	if (getrandom(&v, sizeof(v), 0) != sizeof(v))
		v = (uint32_t)mono_ns(NULL) * 2654435761u;
	return v;
}

/* ---- Addresses ---- */

static unsigned sa_family_of(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 ? 6 : ss->ss_family == AF_INET ? 4 : 0;
}

static uint16_t sa_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

static void sa_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* The address as a GID (IPv4-mapped for IPv4). */
static void sa_gid(const struct sockaddr_storage *ss, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (ss->ss_family == AF_INET) {
		memcpy(gid, wire_v4mapped_prefix, 12);
		memcpy(gid + 12, &((const struct sockaddr_in *)ss)->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6) {
		memcpy(gid, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	}
}

static void gid_sa(const uint8_t gid[16], uint16_t port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (wire_gid_is_v4mapped(gid)) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		memcpy(&s->sin_addr, gid + 12, 4);
		s->sin_port = htons(port);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		memcpy(&s->sin6_addr, gid, 16);
		s->sin6_port = htons(port);
	}
}

static bool sa_any(const struct sockaddr_storage *ss)
{
	static const uint8_t zero[16];
	uint8_t gid[16];

	if (ss->ss_family == AF_INET)
		return ((const struct sockaddr_in *)ss)->sin_addr.s_addr == 0;
	sa_gid(ss, gid);
	return !memcmp(gid, zero, 16);
}

static bool sa_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
}

/* Copy a sockaddr of the command (@len bytes at most) that names its own family. */
static int sa_from_cmd(const void *p, size_t len, struct sockaddr_storage *ss)
{
	sa_family_t fam;

	memset(ss, 0, sizeof(*ss));
	if (len < sizeof(fam))
		return -EINVAL;
	memcpy(&fam, p, sizeof(fam));
	if (fam == AF_INET && len >= sizeof(struct sockaddr_in))
		memcpy(ss, p, sizeof(struct sockaddr_in));
	else if (fam == AF_INET6 && len >= sizeof(struct sockaddr_in6))
		memcpy(ss, p, sizeof(struct sockaddr_in6));
	else
		return fam ? -EAFNOSUPPORT : -EINVAL;
	return 0;
}

/* ---- Devices ---- */

static bool dev_has_gid(struct ibv_device *d, const uint8_t gid[16])
{
	struct wire_gid_entry g[WIRE_GID_TABLE_LEN];

	if (prov_sysfs_read_gids(d->ibdev_path, g, WIRE_GID_TABLE_LEN))
		return false;
	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++)
		if (g[i].valid && g[i].type == WIRE_GID_ROCE_V2 && !memcmp(g[i].gid, gid, 16))
			return true;
	return false;
}

static int ucma_cm_event(void *arg, struct cm_id *id, const struct cm_event *ev);
static bool ucma_answers(void *arg, uint64_t service_id);

/* An established connection's DREQ frame, kept where the broker posts it should we die. */
static void ucma_exit_dreq(void *arg, uint32_t comm_id, const uint8_t *frame, uint32_t len)
{
	struct ucma_dev *u = arg;

	if (u->exit)
		host_cm_exit_set(u->exit, comm_id, frame, len);
}

/* Open @d for the CMs (once per process, as the kernel holds its devices). */
static struct ucma_dev *dev_get(struct ibv_device *d)
{
	struct ibv_port_attr pa;
	struct ucma_dev *u;
	struct cm_cfg cfg = {
		.now_ns = mono_ns,
		.event = ucma_cm_event,
		.answers_unclaimed = ucma_answers,
		.exit_dreq = ucma_exit_dreq,
	};
	const char *t = getenv("UROCE_CM_TIMEOUT_MS");
	struct host_link_info link;
	char err[256];

	for (u = ucma_devs; u; u = u->next)
		if (u->ibdev == d)
			return u;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->ibdev = d;
	u->ctx = ibv_open_device(d);
	if (!u->ctx || !prov_is_uroce(u->ctx))
		goto err_free;
	if (dp_device_link(prov_dp(u->ctx), &link) ||
	    host_cm_listen_open(link.netdev, &u->listen, err, sizeof(err)))
		goto err_close;
	/* Without it (no room in the run directory) only the posting at death is lost. */
	if (host_cm_exit_open(link.netdev, &u->exit, err, sizeof(err)))
		u->exit = NULL;
	u->guid = ibv_get_device_guid(d);
	u->mtu = ibv_query_port(u->ctx, PROV_PORT_NUM, &pa) ? IBV_MTU_1024 : pa.active_mtu;
	cfg.eng = prov_eng(u->ctx);
	cfg.node_guid = be64toh(u->guid);
	cfg.arg = u;
	cfg.timeout_ms = t ? (uint32_t)strtoul(t, NULL, 10) : 0;
	cfg.pid = host_self_pid();
	u->cm = cm_create(&cfg);
	if (!u->cm)
		goto err_listen;
	/* Become the netdev's answerer if nobody is (the first process wins; its death frees it). */
	host_cm_listen_mine(u->listen, HOST_CM_ANSWERER);
	u->next = ucma_devs;
	ucma_devs = u;
	return u;

err_listen:
	if (u->exit)
		host_cm_exit_close(u->exit);
	host_cm_listen_close(u->listen);
err_close:
	ibv_close_device(u->ctx);
err_free:
	free(u);
	return NULL;
}

static struct ibv_device **ucma_dev_list(void)
{
	static struct ibv_device **list;

	if (!list)
		list = ibv_get_device_list(NULL);
	return list;
}

/* The uroce device holding @gid, opened; NULL if none. */
static struct ucma_dev *dev_by_gid(const uint8_t gid[16])
{
	struct ibv_device **list = ucma_dev_list();

	for (unsigned i = 0; list && list[i]; i++)
		if (dev_has_gid(list[i], gid))
			return dev_get(list[i]);
	return NULL;
}

/*
 * What the CM just queued on QP1 leaves before the command returns, as the
 * kernel's MADs do: a process that disconnects and exits at once still
 * sends its DREQ (and, ahead of it, any ACK the port held back for the next
 * request, docs/dataplane.md), which the peer's last send waits for.
 */
static void send_now(struct ucma_dev *u)
{
	uint64_t start = mono_ns(NULL), now;

	if (!u)
		return;
	/*
	 * One pass is not enough when the progress thread holds the engine:
	 * the kick then returns at once and the pass that sends the MAD may
	 * still be running when the program exits.  Its send completion says
	 * the frame went to the port; a MAD still waiting for the neighbour's
	 * MAC after UCMA_SEND_WAIT_NS is left to the CM's retransmissions.
	 * On a loaded host the progress thread may wait long for a CPU: beside
	 * eight busy loops, with a 100 ms bound, a DREQ never reached its peer
	 * in 2 of about 200 runs of rdma-core's rdmacm tests, the likeliest
	 * loss being here.
	 */
	for (;;) {
		dp_device_kick(prov_dp(u->ctx));
		cm_process(u->cm);
		now = mono_ns(NULL);
		if (!cm_sends_in_flight(u->cm) || now - start >= UCMA_SEND_WAIT_NS)
			break;
		if (now - start < UCMA_SEND_SPIN_NS)
			sched_yield();
		else
			usleep(100);
	}
	dp_device_kick(prov_dp(u->ctx));
}

/* ---- IDs and events ---- */

static struct ucma_ctx *ctx_get(uint32_t id)
{
	return id && id < ucma_n_ctx ? ucma_ctxs[id] : NULL;
}

static struct ucma_ctx *ctx_new(struct ucma_file *f, uint16_t ps, uint8_t qp_type)
{
	struct ucma_ctx *c;
	uint32_t id = 1;

	while (id < ucma_n_ctx && ucma_ctxs[id])
		id++;
	if (id >= ucma_n_ctx) {
		uint32_t n = ucma_n_ctx ? ucma_n_ctx * 2 : 64;
		struct ucma_ctx **t = realloc(ucma_ctxs, n * sizeof(*t));

		if (!t)
			return NULL;
		memset(t + ucma_n_ctx, 0, (n - ucma_n_ctx) * sizeof(*t));
		ucma_ctxs = t;
		ucma_n_ctx = n;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->id = id;
	c->file = f;
	c->ps = ps;
	c->qp_type = qp_type;
	ucma_ctxs[id] = c;
	return c;
}

static void queue_event(struct ucma_ctx *c, struct ucma_event *e)
{
	e->ctx = c;
	e->resp.uid = e->resp.uid ? e->resp.uid : c->uid;
	e->resp.id = e->resp.id ? e->resp.id : c->id;
	*c->file->tail = e;
	c->file->tail = &e->next;
	/* libc's own, not the preloaded write(), which would bring it back here. */
	eventfd_write(c->file->fd, 1);
	pthread_cond_broadcast(&c->file->cond);
}

static struct ucma_event *new_event(uint32_t type, int32_t status)
{
	struct ucma_event *e = calloc(1, sizeof(*e));

	if (e) {
		e->resp.event = type;
		e->resp.status = (uint32_t)status;
	}
	return e;
}

static void post(struct ucma_ctx *c, uint32_t type, int32_t status)
{
	struct ucma_event *e = new_event(type, status);

	if (e)
		queue_event(c, e);
}

static void ctx_free(struct ucma_ctx *c);

/*
 * Take the queued events of @c (only those of its group @mc, when given) off
 * its channel; they no longer count (the kernel does the same).
 */
static void drop_events(struct ucma_ctx *c, const struct ucma_mc *mc)
{
	struct ucma_file *f = c->file;
	struct ucma_event **p = &f->head, *gone = NULL;
	eventfd_t v;

	f->tail = &f->head;
	while (*p) {
		struct ucma_event *e = *p;

		if (mc ? e->mc == mc : e->ctx == c || e->conn == c) {
			*p = e->next;
			e->next = gone;
			gone = e;
			/* The semaphore eventfd is at least as high as the queue. */
			eventfd_read(f->fd, &v);
			continue;
		}
		f->tail = &e->next;
		p = &e->next;
	}
	/* A listener's connection requests nobody took go with it. */
	while (gone) {
		struct ucma_event *e = gone;

		gone = e->next;
		if (e->conn && e->conn != c)
			ctx_free(e->conn);
		free(e);
	}
}

static void mc_free(struct ucma_mc *mc)
{
	struct ucma_mc **p = &ucma_mcs;

	while (*p != mc)
		p = &(*p)->next;
	*p = mc->next;
	drop_events(mc->ctx, mc);
	free(mc);
}

static struct ucma_mc *mc_get(uint32_t id)
{
	struct ucma_mc *mc = ucma_mcs;

	while (mc && mc->id != id)
		mc = mc->next;
	return mc;
}

static void ctx_free(struct ucma_ctx *c)
{
	for (struct ucma_mc *mc = ucma_mcs, *next; mc; mc = next) {
		next = mc->next;
		if (mc->ctx == c)
			mc_free(mc);
	}
	for (unsigned i = 0; i < c->n_cm; i++) {
		if (c->state == U_LISTEN)
			host_cm_listen_del(c->cm_devs[i]->listen,
					   wire_ip_service_id(c->ps, sa_port(&c->src)));
		if (c->cm_ids[i])
			cm_id_destroy(c->cm_ids[i]);
	}
	drop_events(c, NULL);
	ucma_ctxs[c->id] = NULL;
	free(c);
}

/* ---- Events from the CMs ---- */

/* The message's private data from byte @skip on (past rdma_cm's header), as much as fits. */
static uint8_t pdata_out(uint8_t dst[RDMA_MAX_PRIVATE_DATA], const struct cm_conn *c, size_t skip)
{
	size_t n = c->pdata_len > skip ? c->pdata_len - skip : 0;

	if (n > RDMA_MAX_PRIVATE_DATA)
		n = RDMA_MAX_PRIVATE_DATA;
	memcpy(dst, c->pdata + skip, n);
	return (uint8_t)n;
}

static void conn_param(struct rdma_ucm_conn_param *p, const struct cm_conn *c, size_t skip)
{
	p->private_data_len = pdata_out(p->private_data, c, skip);
	/* What the peer can take is what this side may initiate, and the other way round. */
	p->responder_resources = c->idepth;
	p->initiator_depth = c->rres;
	p->flow_control = c->flow_control;
	p->retry_count = c->retry_count;
	p->rnr_retry_count = c->rnr_retry;
	p->srq = c->srq;
	p->qp_num = c->qpn;
}

static void ud_param(struct rdma_ucm_ud_param *p, const struct cm_path *path, const struct cm_conn *c,
		     size_t skip)
{
	p->private_data_len = pdata_out(p->private_data, c, skip);
	p->qp_num = c->qpn;
	p->qkey = c->qkey;
	memcpy(p->ah_attr.grh.dgid, path->dgid, 16);
	p->ah_attr.grh.sgid_index = (uint8_t)path->sgid_index;
	p->ah_attr.grh.hop_limit = path->hop_limit ? path->hop_limit : 64;
	p->ah_attr.grh.traffic_class = path->tclass;
	p->ah_attr.is_global = 1;
	p->ah_attr.port_num = PROV_PORT_NUM;
}

static uint8_t clamp_rd(uint8_t v)
{
	return v > RC_MAX_RD_ATOMIC ? RC_MAX_RD_ATOMIC : v;
}

/*
 * Retry and RNR retry counts are 3 bits in the REQ, the REP and the QP
 * (IBA 12.6.5); the kernel's cma.c takes min(7, what the consumer asked),
 * and libfabric's verbs provider asks 15.
 */
static uint8_t clamp_retry(uint8_t v)
{
	return v > 7 ? 7 : v;
}

/* A REQ or SIDR_REQ for a listener: a new ID on the listener's channel. */
static int conn_request(struct ucma_dev *u, struct ucma_ctx *l, struct cm_id *id,
			const struct cm_event *ev)
{
	uint8_t src[16], dst[16];
	struct ucma_event *e;
	struct ucma_ctx *c;
	unsigned family;
	uint16_t port;

	if (wire_cma_hdr_parse(ev->conn.pdata, ev->conn.pdata_len, &family, src, dst, &port))
		return -EINVAL;
	c = ctx_new(l->file, l->ps, l->qp_type);
	e = new_event(RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!c || !e) {
		free(e);
		if (c)
			ctx_free(c);
		return -ENOMEM;
	}
	c->dev = u;
	c->passive = true;
	c->cm_ids[0] = id;
	c->cm_devs[0] = c->dev;
	c->n_cm = 1;
	cm_id_set_user(id, c);
	gid_sa(dst, sa_port(&l->src), &c->src);
	gid_sa(src, port, &c->dst);
	c->path = ev->path;
	c->path.mtu = ev->path.mtu && ev->path.mtu < u->mtu ? ev->path.mtu : u->mtu;
	c->path_ok = true;
	c->state = U_CONNECT;
	c->remote_qpn = ev->conn.qpn;
	c->remote_psn = ev->conn.psn;
	c->peer_rres = ev->conn.rres;
	c->retry = ev->conn.retry_count;
	c->rnr_retry = ev->conn.rnr_retry;
	/*
	 * librdmacm takes the QP to RTS before its ACCEPT: the PSN the REP will
	 * carry and the read depths the REQ asked for must be known already.
	 */
	c->psn = rand32() & WIRE_PSN_MASK;
	c->rres = clamp_rd(ev->conn.idepth);
	c->idepth = clamp_rd(ev->conn.rres);
	e->resp.uid = l->uid;
	e->resp.id = c->id;
	e->conn = c;
	if (l->qp_type == IBV_QPT_UD)
		ud_param(&e->resp.param.ud, &c->path, &ev->conn, sizeof(struct wire_cma_hdr));
	else
		conn_param(&e->resp.param.conn, &ev->conn, sizeof(struct wire_cma_hdr));
	/* The event counts for the listener; the new ID's own start with its next. */
	queue_event(l, e);
	return 0;
}

/* UCMA_DISC_HOLD_NS, or UROCE_CM_DISC_HOLD_MS (for tests). */
static uint64_t disc_hold_ns(void)
{
	const char *t = getenv("UROCE_CM_DISC_HOLD_MS");

	return t && *t ? strtoull(t, NULL, 10) * 1000000ull : UCMA_DISC_HOLD_NS;
}

static int ucma_cm_event(void *arg, struct cm_id *id, const struct cm_event *ev)
{
	struct ucma_dev *u = arg;
	struct ucma_ctx *c = cm_id_user(id);
	struct ucma_event *e;

	switch (ev->type) {
	case CM_EV_REQ:
	case CM_EV_SIDR_REQ:
		return cm_id_user(ev->listen) ? conn_request(u, cm_id_user(ev->listen), id, ev) :
						 -ENOENT;
	default:
		break;
	}
	if (!c)
		return 0;
	switch (ev->type) {
	case CM_EV_REP:
		c->remote_qpn = ev->conn.qpn;
		c->remote_psn = ev->conn.psn;
		c->peer_rres = ev->conn.rres;
		if (!c->rnr_retry || ev->conn.rnr_retry < c->rnr_retry)
			c->rnr_retry = ev->conn.rnr_retry;
		e = new_event(RDMA_CM_EVENT_CONNECT_RESPONSE, 0);
		if (!e)
			return 0;
		conn_param(&e->resp.param.conn, &ev->conn, 0);
		queue_event(c, e);
		return 0;
	case CM_EV_RTU:
		c->state = U_CONNECTED;
		post(c, RDMA_CM_EVENT_ESTABLISHED, 0);
		return 0;
	case CM_EV_REJ:
		c->state = U_ROUTE;
		e = new_event(RDMA_CM_EVENT_REJECTED, ev->reason);
		if (!e)
			return 0;
		conn_param(&e->resp.param.conn, &ev->conn, 0);
		e->resp.param.conn.qp_num = 0;
		queue_event(c, e);
		return 0;
	case CM_EV_DREQ:
	case CM_EV_DREP:
		if (c->disconnected)
			return 0;
		c->disconnected = true;
		c->state = U_DISC;
		/*
		 * A peer's DREQ comes right behind the last ACK or message it sent,
		 * and a program may destroy its QP on DISCONNECTED (libfabric's rxm
		 * does, from its CM thread), which takes unpolled completions with
		 * it.  A NIC's completion beats the kernel CM's event; here both
		 * arrive at once, so DISCONNECTED waits until the QP's completions
		 * are polled, at most UCMA_DISC_HOLD_NS (released by cm_thread()).
		 */
		if (ev->type == CM_EV_DREQ && c->qpn &&
		    rc_qp_completions_unpolled(prov_eng(u->ctx), c->qpn)) {
			c->disc_held_until = mono_ns(NULL) + disc_hold_ns();
			return 0;
		}
		post(c, RDMA_CM_EVENT_DISCONNECTED, 0);
		return 0;
	case CM_EV_TIMEOUT:
		if (ev->msg == WIRE_CM_DREQ) {
			if (!c->disconnected) {
				c->disconnected = true;
				c->state = U_DISC;
				post(c, RDMA_CM_EVENT_DISCONNECTED, 0);
			}
			return 0;
		}
		c->state = U_ROUTE;
		post(c, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT);
		return 0;
	case CM_EV_TIMEWAIT_EXIT:
		if (c->disc_held_until)
			c->timewait_held = true;
		else
			post(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		return 0;
	case CM_EV_SIDR_REP:
		if (ev->sidr_status != WIRE_SIDR_OK) {
			post(c, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED);
			return 0;
		}
		e = new_event(RDMA_CM_EVENT_ESTABLISHED, 0);
		if (!e)
			return 0;
		ud_param(&e->resp.param.ud, &c->path, &ev->conn, 0);
		queue_event(c, e);
		return 0;
	default:
		return 0;
	}
}

/*
 * One process per netdev answers REQs nobody listens for: the one holding
 * the listen table's answerer entry; when it dies the next process to see
 * such a REQ takes over.  A service ID another process listens on, or
 * listened on a moment ago, is left to that process.
 */
static bool ucma_answers(void *arg, uint64_t service_id)
{
	struct ucma_dev *u = arg;

	return host_cm_listen_mine(u->listen, HOST_CM_ANSWERER) &&
	       (service_id == HOST_CM_ANSWERER || !host_cm_listen_claimed(u->listen, service_id));
}

/* The CM's counters in `uroce stat`: "cm_" and each name, then "cm_drop_" and each MAD drop reason. */
#define COUNT_ONE(n) + 1
#define CM_VALUES	(0 CM_COUNTERS(COUNT_ONE) + WIRE_MAD_DROP_COUNT - 1)
_Static_assert(CM_VALUES <= DP_EXTRA_COUNTERS_MAX, "dp_open_args.extra_names");

static const char *cm_counter_names[CM_VALUES + 1];
static char cm_drop_names[WIRE_MAD_DROP_COUNT][HOST_STATS_NAME_LEN];
static pthread_once_t cm_counter_names_once = PTHREAD_ONCE_INIT;

static void name_cm_counters(void)
{
	unsigned n = 0;

#define CM_COUNTER_NAME(f) cm_counter_names[n++] = "cm_" #f;
	CM_COUNTERS(CM_COUNTER_NAME)
#undef CM_COUNTER_NAME
	for (unsigned i = 1; i < WIRE_MAD_DROP_COUNT; i++)
		cm_counter_names[n++] = host_stats_drop_name(cm_drop_names[i], sizeof(cm_drop_names[i]),
							     "cm_drop_", wire_mad_drop_name((enum wire_mad_drop)i));
}

const char *const *prov_ucma_counter_names(void)
{
	pthread_once(&cm_counter_names_once, name_cm_counters);
	return cm_counter_names;
}

static void publish_counters(struct ucma_dev *u)
{
	uint64_t v[CM_VALUES];
	struct cm_counters c;
	unsigned n = 0;

	cm_counters(u->cm, &c);
#define CM_COUNTER_VALUE(f) v[n++] = c.f;
	CM_COUNTERS(CM_COUNTER_VALUE)
#undef CM_COUNTER_VALUE
	memcpy(v + n, &c.drops[1], (WIRE_MAD_DROP_COUNT - 1) * sizeof(uint64_t));
	dp_device_extra_counters(prov_dp(u->ctx), v);
}

static void release_closed(uint64_t now);

/* DISCONNECTED events ucma_cm_event() held back: their QP's completions are polled, or time is up. */
static void release_held_disconnects(uint64_t now)
{
	for (uint32_t i = 1; i < ucma_n_ctx; i++) {
		struct ucma_ctx *c = ucma_ctxs[i];

		if (!c || !c->disc_held_until)
			continue;
		if (now < c->disc_held_until && c->cm_devs[0] &&
		    rc_qp_completions_unpolled(prov_eng(c->cm_devs[0]->ctx), c->qpn))
			continue;
		c->disc_held_until = 0;
		post(c, RDMA_CM_EVENT_DISCONNECTED, 0);
		if (c->timewait_held)
			post(c, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0);
		c->timewait_held = false;
	}
}

static void *cm_thread(void *arg)
{
	sigset_t all;

	(void)arg;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	for (;;) {
		struct timespec ts = { 0, (long)UCMA_POLL_NS };

		pthread_mutex_lock(&ucma_lock);
		for (struct ucma_dev *u = ucma_devs; u; u = u->next) {
			cm_process(u->cm);
			publish_counters(u);
		}
		release_closed(mono_ns(NULL));
		release_held_disconnects(mono_ns(NULL));
		pthread_mutex_unlock(&ucma_lock);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* ---- Commands ---- */

/* The response area the command names, when it can hold @len bytes. */
static void *resp_ptr(uint64_t response, uint16_t out, size_t len)
{
	return response && out >= len ? (void *)(uintptr_t)response : NULL;
}

static uint16_t ephemeral_port(uint16_t ps)
{
	for (unsigned tries = 0; tries < 1000; tries++) {
		uint16_t p = (uint16_t)(UCMA_PORT_LO + rand32() % (UCMA_PORT_HI - UCMA_PORT_LO));
		bool used = false;

		for (uint32_t i = 1; i < ucma_n_ctx && !used; i++)
			used = ucma_ctxs[i] && ucma_ctxs[i]->ps == ps && sa_port(&ucma_ctxs[i]->src) == p;
		if (!used)
			return p;
	}
	return 0;
}

static int bind_addr(struct ucma_ctx *c, const struct sockaddr_storage *ss)
{
	uint16_t port = sa_port(ss);
	uint8_t gid[16];

	if (c->state != U_IDLE)
		return -EINVAL;
	/*
	 * A loopback address names no uroce device: bound as the any address
	 * is, the device comes with the peer's address.  (The kernel attaches
	 * it to its first active port; libfabric's verbs provider binds
	 * 127.0.0.1 to ask whether rdma_cm works at all and, finding no device
	 * on the ID, takes the devices' own addresses.)
	 */
	if (!sa_any(ss) && !sa_loopback(ss)) {
		sa_gid(ss, gid);
		c->dev = dev_by_gid(gid);
		if (!c->dev)
			return -EADDRNOTAVAIL;
	}
	for (uint32_t i = 1; port && i < ucma_n_ctx; i++) {
		struct ucma_ctx *o = ucma_ctxs[i];

		if (o && o != c && !o->passive && o->ps == c->ps && o->state >= U_BOUND &&
		    sa_port(&o->src) == port && !(o->reuseaddr && c->reuseaddr) &&
		    (o->state == U_LISTEN || !o->dev || !c->dev || o->dev == c->dev))
			return -EADDRINUSE;
	}
	c->src = *ss;
	if (!port)
		sa_set_port(&c->src, ephemeral_port(c->ps));
	c->state = U_BOUND;
	return 0;
}

/* The address the kernel's routing would send from towards @dst. */
static int route_src(const struct sockaddr_storage *dst, struct sockaddr_storage *src)
{
	socklen_t len = sizeof(*src);
	int s = socket(dst->ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct sockaddr_storage d = *dst;
	int ret = 0;

	if (s < 0)
		return -errno;
	if (!sa_port(&d))
		sa_set_port(&d, 4791);
	if (connect(s, (struct sockaddr *)&d, dst->ss_family == AF_INET ?
		    sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6)) ||
	    getsockname(s, (struct sockaddr *)src, &len))
		ret = -errno;
	close(s);
	return ret;
}

static int cmd_resolve_ip(struct ucma_ctx *c, const struct sockaddr_storage *src_in,
			  const struct sockaddr_storage *dst)
{
	struct sockaddr_storage src = *src_in;
	uint8_t gid[16];
	uint16_t port;
	int ret;

	if (c->state == U_IDLE) {
		if (!src.ss_family || sa_any(&src)) {
			ret = route_src(dst, &src);
			if (ret) {
				/* No route: the kernel's answer comes as an event, so does ours. */
				c->dst = *dst;
				post(c, RDMA_CM_EVENT_ADDR_ERROR, ret);
				return 0;
			}
			sa_set_port(&src, sa_port(src_in));
		}
		ret = bind_addr(c, &src);
		if (ret == -EADDRNOTAVAIL) {
			c->dst = *dst;
			post(c, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
			return 0;
		}
		if (ret)
			return ret;
	} else if (c->state != U_BOUND && c->state != U_ADDR) {
		return -EINVAL;
	}
	if (!c->dev) {
		ret = route_src(dst, &src);
		sa_gid(&src, gid);
		c->dev = ret ? NULL : dev_by_gid(gid);
		if (!c->dev) {
			post(c, RDMA_CM_EVENT_ADDR_ERROR, -ENODEV);
			return 0;
		}
		port = sa_port(&c->src);
		c->src = src;
		sa_set_port(&c->src, port);
	}
	c->dst = *dst;
	c->state = U_ADDR;
	post(c, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	return 0;
}

/*
 * The flow label of a connection: the source address's IPv6 flow label, else
 * sport * 31 + dport in 20 bits, as the kernel's cma_get_roce_udp_flow_label()
 * makes it; the QP's UDP source port follows from it (wire_path_udp_sport()).
 */
static uint32_t roce_flow_label(const struct ucma_ctx *c)
{
	const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)&c->src;
	uint32_t fl = 0;

	if (c->src.ss_family == AF_INET6)
		fl = ntohl(s6->sin6_flowinfo) & 0xfffff;
	return fl ? fl : ((uint32_t)sa_port(&c->src) * 31 + sa_port(&c->dst)) & 0xfffff;
}

static int cmd_resolve_route(struct ucma_ctx *c)
{
	int idx;

	if (c->state != U_ADDR && c->state != U_ROUTE)
		return -EINVAL;
	memset(&c->path, 0, sizeof(c->path));
	sa_gid(&c->src, c->path.sgid);
	sa_gid(&c->dst, c->path.dgid);
	idx = cm_gid_index(c->dev->cm, c->path.sgid);
	if (idx < 0) {
		post(c, RDMA_CM_EVENT_ROUTE_ERROR, -EADDRNOTAVAIL);
		return 0;
	}
	c->path.sgid_index = (unsigned)idx;
	c->path.hop_limit = 64;
	c->path.tclass = c->tos;	/* as the kernel's cma_resolve_iboe_route() */
	c->path.flow_label = roce_flow_label(c);
	c->path.mtu = (uint8_t)c->dev->mtu;
	c->path_ok = true;
	c->state = U_ROUTE;
	post(c, RDMA_CM_EVENT_ROUTE_RESOLVED, 0);
	return 0;
}

/*
 * JOIN_IP_MCAST and JOIN_MCAST on RoCE, as the kernel's cma_iboe_join_multicast():
 * no subnet manager to ask, so the join is answered at once.  The group's GID is
 * the IPv6 address, or the IPv4 one mapped (::ffff:a.b.c.d, RoCE v2); datagrams
 * go to QPN 0xffffff with rdma_cm's UDP Q_Key.  The netdev joins the IP group
 * (IGMP, MLD) when librdmacm attaches the QP on the event.
 */
static int cmd_join(struct ucma_ctx *c, uint64_t uid, const struct sockaddr_storage *addr,
		    struct rdma_ucm_create_id_resp *r)
{
	struct ucma_event *e;
	struct ucma_mc *mc;
	uint8_t mgid[16], sgid[16];
	int idx;

	if (!c->dev || (c->state != U_ADDR && c->state != U_ROUTE && c->state != U_BOUND))
		return -EINVAL;
	sa_gid(addr, mgid);
	if (!wire_gid_is_multicast(mgid))
		return -EINVAL;
	sa_gid(&c->src, sgid);
	idx = cm_gid_index(c->dev->cm, sgid);
	if (idx < 0 || wire_gid_is_v4mapped(sgid) != wire_gid_is_v4mapped(mgid))
		return -EADDRNOTAVAIL;
	mc = calloc(1, sizeof(*mc));
	e = new_event(RDMA_CM_EVENT_MULTICAST_JOIN, 0);
	if (!mc || !e) {
		free(mc);
		free(e);
		return -ENOMEM;
	}
	mc->id = ++ucma_next_mc_id;
	mc->uid = uid;
	mc->ctx = c;
	mc->next = ucma_mcs;
	ucma_mcs = mc;
	e->mc = mc;
	e->resp.uid = uid;
	e->resp.param.ud.qp_num = WIRE_MCAST_QPN;
	e->resp.param.ud.qkey = UCMA_UDP_QKEY;
	memcpy(e->resp.param.ud.ah_attr.grh.dgid, mgid, 16);
	e->resp.param.ud.ah_attr.grh.sgid_index = (uint8_t)idx;
	e->resp.param.ud.ah_attr.grh.hop_limit = 64;
	e->resp.param.ud.ah_attr.grh.traffic_class = c->path.tclass;
	e->resp.param.ud.ah_attr.is_global = 1;
	e->resp.param.ud.ah_attr.port_num = PROV_PORT_NUM;
	queue_event(c, e);
	r->id = mc->id;
	return 0;
}

static void fill_route(const struct ucma_ctx *c, struct rdma_ucm_query_route_resp *r)
{
	uint8_t gid[16];

	memset(r, 0, sizeof(*r));
	if (c->dev) {
		r->node_guid = c->dev->guid;
		r->port_num = PROV_PORT_NUM;
		r->ibdev_index = (uint32_t)ibv_get_device_index(c->dev->ibdev);
	} else {
		r->ibdev_index = UINT32_MAX;
	}
	sa_gid(&c->src, gid);
	memcpy(r->ib_route[0].sgid, gid, 16);
	sa_gid(&c->dst, gid);
	memcpy(r->ib_route[0].dgid, gid, 16);
	r->ib_route[0].pkey = htons(WIRE_DEFAULT_PKEY);
	if (c->path_ok) {
		r->num_paths = 1;
		r->ib_route[0].mtu = c->path.mtu;
		r->ib_route[0].hop_limit = c->path.hop_limit;
		r->ib_route[0].traffic_class = c->path.tclass;
		r->ib_route[0].numb_path = 1;
		r->ib_route[0].reversible = 1;
		r->ib_route[0].packet_life_time = 16;
		r->ib_route[0].mtu_selector = 2;
		r->ib_route[0].rate_selector = 2;
		r->ib_route[0].packet_life_time_selector = 2;
	}
	memcpy(&r->src_addr, &c->src, sizeof(r->src_addr));
	memcpy(&r->dst_addr, &c->dst, sizeof(r->dst_addr));
}

static int listen_on(struct ucma_ctx *c, struct ucma_dev *u)
{
	uint64_t sid = wire_ip_service_id(c->ps, sa_port(&c->src));
	struct cm_id *id;
	int ret;

	if (c->n_cm >= sizeof(c->cm_ids) / sizeof(c->cm_ids[0]))
		return -ENOMEM;
	ret = host_cm_listen_add(u->listen, sid);
	if (ret)
		return ret;
	id = cm_id_create(u->cm, c);
	if (!id) {
		ret = -errno;
		goto err_del;
	}
	ret = cm_listen(id, sid);
	if (ret) {
		cm_id_destroy(id);
		ret = ret == -EBUSY ? -EADDRINUSE : ret;
		goto err_del;
	}
	c->cm_devs[c->n_cm] = u;
	c->cm_ids[c->n_cm++] = id;
	return 0;

err_del:
	host_cm_listen_del(u->listen, sid);
	return ret;
}

static int cmd_listen(struct ucma_ctx *c)
{
	struct ibv_device **list;
	int ret = 0;

	if (c->state == U_IDLE) {
		struct sockaddr_storage any = { .ss_family = AF_INET };

		ret = bind_addr(c, &any);
		if (ret)
			return ret;
	}
	if (c->state != U_BOUND)
		return c->state == U_LISTEN ? 0 : -EINVAL;
	if (c->dev) {
		ret = listen_on(c, c->dev);
	} else {
		list = ucma_dev_list();
		for (unsigned i = 0; !ret && list && list[i]; i++) {
			struct ucma_dev *u = dev_get(list[i]);

			if (u)
				ret = listen_on(c, u);
		}
	}
	if (ret) {
		while (c->n_cm) {
			c->n_cm--;
			host_cm_listen_del(c->cm_devs[c->n_cm]->listen,
					   wire_ip_service_id(c->ps, sa_port(&c->src)));
			cm_id_destroy(c->cm_ids[c->n_cm]);
		}
		return ret;
	}
	c->state = U_LISTEN;
	return 0;
}

static int cmd_connect(struct ucma_ctx *c, const struct rdma_ucm_conn_param *p)
{
	struct cm_conn conn = { 0 };
	struct wire_cma_hdr h;
	uint8_t src[16], dst[16];
	struct cm_id *id;
	int ret;

	if (c->state != U_ROUTE || !c->path_ok)
		return -EINVAL;
	id = cm_id_create(c->dev->cm, c);
	if (!id)
		return -errno;
	sa_gid(&c->src, src);
	sa_gid(&c->dst, dst);
	wire_cma_hdr_build(&h, sa_family_of(&c->src), src, dst, sa_port(&c->src));
	memcpy(conn.pdata, &h, sizeof(h));
	conn.pdata_len = sizeof(h);
	if (p->private_data_len) {
		size_t room = (c->qp_type == IBV_QPT_UD ? WIRE_CM_SIDR_REQ_PDATA : WIRE_CM_REQ_PDATA) -
			      sizeof(h);

		if (p->private_data_len > room) {
			cm_id_destroy(id);
			return -EINVAL;
		}
		memcpy(conn.pdata + sizeof(h), p->private_data, p->private_data_len);
		conn.pdata_len = (uint8_t)(sizeof(h) + p->private_data_len);
	}
	c->cm_ids[0] = id;
	c->cm_devs[0] = c->dev;
	c->n_cm = 1;
	c->disconnected = false;
	if (c->qp_type == IBV_QPT_UD) {
		ret = cm_send_sidr_req(id, &c->path, wire_ip_service_id(c->ps, sa_port(&c->dst)),
				       conn.pdata, conn.pdata_len);
	} else {
		c->psn = rand32() & WIRE_PSN_MASK;
		c->rres = clamp_rd(p->responder_resources);
		c->idepth = clamp_rd(p->initiator_depth);
		c->retry = clamp_retry(p->retry_count);
		c->rnr_retry = clamp_retry(p->rnr_retry_count);
		conn.service_id = wire_ip_service_id(c->ps, sa_port(&c->dst));
		conn.qpn = c->qpn = p->qp_num;
		conn.psn = c->psn;
		conn.rres = c->rres;
		conn.idepth = c->idepth;
		conn.retry_count = c->retry;
		conn.rnr_retry = c->rnr_retry;
		conn.flow_control = p->flow_control;
		conn.srq = p->srq;
		conn.ack_timeout = UCMA_ACK_TIMEOUT;
		conn.qp_type = c->qp_type == IBV_QPT_UC ? IBV_QPT_UC : IBV_QPT_RC;
		ret = cm_send_req(id, &c->path, &conn, UCMA_CM_RETRIES);
	}
	if (ret) {
		cm_id_destroy(id);
		c->cm_ids[0] = NULL;
		c->n_cm = 0;
		return ret;
	}
	c->state = U_CONNECT;
	return 0;
}

static int cmd_accept(struct ucma_ctx *c, const struct rdma_ucm_accept *a)
{
	const struct rdma_ucm_conn_param *p = &a->conn_param;
	struct cm_id *id = c->n_cm ? c->cm_ids[0] : NULL;
	struct cm_conn conn = { 0 };

	if (!id)
		return -EINVAL;
	if (a->uid)
		c->uid = a->uid;
	if (cm_id_state(id) == CM_REP_RCVD) {
		/* The active side's ACCEPT: librdmacm has its QP at RTS, the RTU says so. */
		int ret = cm_send_rtu(id, NULL, 0);

		if (!ret)
			c->state = U_CONNECTED;
		return ret;
	}
	if (!p->valid)
		return -EINVAL;
	memcpy(conn.pdata, p->private_data, p->private_data_len);
	conn.pdata_len = p->private_data_len;
	if (c->qp_type == IBV_QPT_UD)
		return cm_send_sidr_rep(id, WIRE_SIDR_OK, p->qp_num, UCMA_UDP_QKEY, conn.pdata,
					conn.pdata_len);
	c->rres = clamp_rd(p->responder_resources);
	c->idepth = clamp_rd(p->initiator_depth);
	conn.qpn = c->qpn = p->qp_num;
	conn.psn = c->psn;
	conn.rres = c->rres;
	conn.idepth = c->idepth;
	conn.rnr_retry = clamp_retry(p->rnr_retry_count);
	conn.flow_control = p->flow_control;
	conn.srq = p->srq;
	conn.ack_timeout = UCMA_ACK_TIMEOUT;
	return cm_send_rep(id, &conn);
}

static int cmd_init_qp_attr(struct ucma_ctx *c, uint32_t state, struct ib_uverbs_qp_attr *r)
{
	memset(r, 0, sizeof(*r));
	r->qp_state = state;
	r->port_num = PROV_PORT_NUM;
	switch (state) {
	case IBV_QPS_INIT:
		r->qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (c->qp_type == IBV_QPT_UD) {
			r->qkey = UCMA_UDP_QKEY;
			r->qp_attr_mask |= IBV_QP_QKEY;
		} else {
			/* After the handshake the peer may read and write (the kernel's cm.c does so). */
			if (c->n_cm && c->state == U_CONNECT)
				r->qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					(c->rres ? IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC : 0);
			r->qp_attr_mask |= IBV_QP_ACCESS_FLAGS;
		}
		return 0;
	case IBV_QPS_RTR:
		if (c->qp_type == IBV_QPT_UD) {
			r->qp_attr_mask = IBV_QP_STATE;
			return 0;
		}
		if (!c->path_ok || !c->n_cm)
			return -EINVAL;
		r->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				  IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
		r->path_mtu = c->path.mtu;
		r->dest_qp_num = c->remote_qpn;
		r->rq_psn = c->psn;	/* ours, in our REQ or REP: the peer sends from it */
		r->max_dest_rd_atomic = c->rres;
		r->min_rnr_timer = UCMA_MIN_RNR_TIMER;
		memcpy(r->ah_attr.grh.dgid, c->path.dgid, 16);
		r->ah_attr.grh.sgid_index = (uint8_t)c->path.sgid_index;
		r->ah_attr.grh.hop_limit = c->path.hop_limit ? c->path.hop_limit : 64;
		r->ah_attr.grh.traffic_class = c->path.tclass;
		r->ah_attr.grh.flow_label = c->path.flow_label;
		r->ah_attr.is_global = 1;
		r->ah_attr.port_num = PROV_PORT_NUM;
		return 0;
	case IBV_QPS_RTS:
		r->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN;
		r->sq_psn = c->remote_psn;
		if (c->qp_type == IBV_QPT_UD)
			return 0;
		r->qp_attr_mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				   IBV_QP_MAX_QP_RD_ATOMIC;
		r->timeout = c->ack_timeout ? c->ack_timeout : UCMA_ACK_TIMEOUT;
		r->retry_cnt = c->retry ? c->retry : 7;
		r->rnr_retry = c->rnr_retry;
		r->max_rd_atomic = c->idepth < c->peer_rres ? c->idepth : c->peer_rres;
		return 0;
	default:
		return -EINVAL;
	}
}

static int cmd_get_event(struct ucma_file *f, struct rdma_ucm_event_resp *out)
{
	struct ucma_event *e;
	eventfd_t v;

	/* A closed channel has no events and gets none: a GET_EVENT on it sleeps for good. */
	while (!f->head) {
		int fl = fcntl(f->fd, F_GETFL);

		if (fl >= 0 && (fl & O_NONBLOCK))
			return -EAGAIN;
		f->waiters++;
		pthread_cond_wait(&f->cond, &ucma_lock);
		f->waiters--;
	}
	e = f->head;
	f->head = e->next;
	if (!f->head)
		f->tail = &f->head;
	eventfd_read(f->fd, &v);
	*out = e->resp;
	e->ctx->events_reported++;
	if (e->mc)
		e->mc->events_reported++;
	free(e);
	return 0;
}

static struct ucma_file *file_of(int fd)
{
	for (struct ucma_file *f = ucma_files; f; f = f->next)
		if (f->fd == fd)
			return f;
	return NULL;
}

/* Copies of the command structures: what follows the header, at most what the caller wrote. */
#define CMD(type, var) \
	type var; \
	if (in < sizeof(var)) \
		return -EINVAL; \
	memcpy(&var, body, sizeof(var))

static ssize_t dispatch(struct ucma_file *f, uint32_t op, const uint8_t *body, size_t in,
			uint16_t out)
{
	struct ucma_dev *u;
	struct ucma_ctx *c;
	int ret;

	switch (op) {
	case RDMA_USER_CM_CMD_CREATE_ID: {
		CMD(struct rdma_ucm_create_id, cmd);
		struct rdma_ucm_create_id_resp *r = resp_ptr(cmd.response, out, sizeof(*r));

		if (!r)
			return -EFAULT;
		if (cmd.ps != RDMA_PS_TCP && cmd.ps != RDMA_PS_UDP && cmd.ps != RDMA_PS_IB &&
		    cmd.ps != RDMA_PS_IPOIB)
			return -EINVAL;
		c = ctx_new(f, cmd.ps, cmd.qp_type);
		if (!c)
			return -ENOMEM;
		c->uid = cmd.uid;
		r->id = c->id;
		return 0;
	}
	case RDMA_USER_CM_CMD_DESTROY_ID: {
		CMD(struct rdma_ucm_destroy_id, cmd);
		struct rdma_ucm_destroy_id_resp *r = resp_ptr(cmd.response, out, sizeof(*r));

		c = ctx_get(cmd.id);
		if (!c || c->file != f)
			return -EINVAL;
		if (r)
			r->events_reported = c->events_reported;
		u = c->dev;
		ctx_free(c);
		send_now(u);
		return 0;
	}
	case RDMA_USER_CM_CMD_BIND_IP: {
		CMD(struct rdma_ucm_bind_ip, cmd);
		struct sockaddr_storage ss;

		c = ctx_get(cmd.id);
		if (!c)
			return -EINVAL;
		ret = sa_from_cmd(&cmd.addr, sizeof(cmd.addr), &ss);
		return ret ? ret : bind_addr(c, &ss);
	}
	case RDMA_USER_CM_CMD_BIND:
		/* AF_IB addresses (librdmacm's probe for them): uroce is RoCE and speaks IP only. */
		return -EAFNOSUPPORT;
	case RDMA_USER_CM_CMD_RESOLVE_IP: {
		CMD(struct rdma_ucm_resolve_ip, cmd);
		struct sockaddr_storage src, dst;

		c = ctx_get(cmd.id);
		if (!c)
			return -EINVAL;
		ret = sa_from_cmd(&cmd.dst_addr, sizeof(cmd.dst_addr), &dst);
		if (ret)
			return ret;
		if (sa_from_cmd(&cmd.src_addr, sizeof(cmd.src_addr), &src))
			memset(&src, 0, sizeof(src));
		return cmd_resolve_ip(c, &src, &dst);
	}
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE: {
		CMD(struct rdma_ucm_resolve_route, cmd);

		c = ctx_get(cmd.id);
		return c ? cmd_resolve_route(c) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_QUERY_ROUTE: {
		CMD(struct rdma_ucm_query, cmd);
		struct rdma_ucm_query_route_resp *r = resp_ptr(cmd.response, out, sizeof(*r));

		c = ctx_get(cmd.id);
		if (!c)
			return -EINVAL;
		if (!r)
			return -EFAULT;
		fill_route(c, r);
		return 0;
	}
	case RDMA_USER_CM_CMD_LISTEN: {
		CMD(struct rdma_ucm_listen, cmd);

		c = ctx_get(cmd.id);
		return c ? cmd_listen(c) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_CONNECT: {
		CMD(struct rdma_ucm_connect, cmd);

		c = ctx_get(cmd.id);
		if (!c)
			return -EINVAL;
		if (!cmd.conn_param.valid)
			return -EINVAL;
		return cmd_connect(c, &cmd.conn_param);
	}
	case RDMA_USER_CM_CMD_ACCEPT: {
		CMD(struct rdma_ucm_accept, cmd);

		c = ctx_get(cmd.id);
		return c ? cmd_accept(c, &cmd) : -EINVAL;
	}
	case RDMA_USER_CM_CMD_REJECT: {
		CMD(struct rdma_ucm_reject, cmd);

		c = ctx_get(cmd.id);
		if (!c || !c->n_cm)
			return -EINVAL;
		if (c->qp_type == IBV_QPT_UD)
			ret = cm_send_sidr_rep(c->cm_ids[0], WIRE_SIDR_REJECT, 0, 0,
					       cmd.private_data, cmd.private_data_len);
		else
			ret = cm_send_rej(c->cm_ids[0], cmd.reason ? cmd.reason :
					  WIRE_CM_REJ_CONSUMER_DEFINED, cmd.private_data,
					  cmd.private_data_len);
		send_now(c->dev);
		return ret;
	}
	case RDMA_USER_CM_CMD_DISCONNECT: {
		CMD(struct rdma_ucm_disconnect, cmd);

		c = ctx_get(cmd.id);
		if (!c || !c->n_cm)
			return -EINVAL;
		/* After the peer's DREQ (DREP sent already) there is nothing left to say. */
		if (cm_id_state(c->cm_ids[0]) != CM_ESTABLISHED)
			return c->disconnected ? 0 : -EINVAL;
		ret = cm_send_dreq(c->cm_ids[0], NULL, 0);
		send_now(c->dev);
		return ret;
	}
	case RDMA_USER_CM_CMD_INIT_QP_ATTR: {
		CMD(struct rdma_ucm_init_qp_attr, cmd);
		struct ib_uverbs_qp_attr *r = resp_ptr(cmd.response, out, sizeof(*r));

		c = ctx_get(cmd.id);
		if (!c)
			return -EINVAL;
		if (!r)
			return -EFAULT;
		return cmd_init_qp_attr(c, cmd.qp_state, r);
	}
	case RDMA_USER_CM_CMD_GET_EVENT: {
		CMD(struct rdma_ucm_get_event, cmd);
		struct rdma_ucm_event_resp ev, *r = resp_ptr(cmd.response, out, sizeof(*r));

		if (!r)
			return -EFAULT;
		ret = cmd_get_event(f, &ev);
		if (!ret)
			*r = ev;
		return ret;
	}
	case RDMA_USER_CM_CMD_SET_OPTION: {
		CMD(struct rdma_ucm_set_option, cmd);
		int v = 0;

		c = ctx_get(cmd.id);
		if (!c)
			return -EINVAL;
		if (cmd.level != RDMA_OPTION_ID)
			return -ENOSYS;	/* RDMA_OPTION_IB_PATH: paths come from the GID table here */
		if (cmd.optlen >= sizeof(int) && cmd.optval)
			memcpy(&v, (const void *)(uintptr_t)cmd.optval, sizeof(v));
		if (cmd.optname == RDMA_OPTION_ID_REUSEADDR)
			c->reuseaddr = v != 0;
		else if (cmd.optname == RDMA_OPTION_ID_TOS && cmd.optlen >= 1)
			c->tos = *(const uint8_t *)(uintptr_t)cmd.optval;
		else if (cmd.optname == RDMA_OPTION_ID_ACK_TIMEOUT && cmd.optlen >= 1) {
			/* The QP's local ACK timeout at RTS, as the kernel's rdma_set_ack_timeout(). */
			uint8_t t = *(const uint8_t *)(uintptr_t)cmd.optval;

			if (t > 31)
				return -EINVAL;
			c->ack_timeout = t ? t : UCMA_ACK_TIMEOUT;
		}
		return 0;
	}
	case RDMA_USER_CM_CMD_NOTIFY: {
		CMD(struct rdma_ucm_notify, cmd);

		return ctx_get(cmd.id) ? 0 : -EINVAL;
	}
	case RDMA_USER_CM_CMD_MIGRATE_ID: {
		CMD(struct rdma_ucm_migrate_id, cmd);
		struct rdma_ucm_migrate_resp *r = resp_ptr(cmd.response, out, sizeof(*r));
		struct ucma_event *moved = NULL, **mt = &moved;
		struct ucma_file *old = file_of((int)cmd.fd);
		struct ucma_event **p;
		eventfd_t v;

		c = ctx_get(cmd.id);
		if (!c || !old || c->file != old)
			return -EINVAL;
		for (p = &old->head; *p;) {
			struct ucma_event *e = *p;

			if (e->ctx == c) {
				*p = e->next;
				e->next = NULL;
				*mt = e;
				mt = &e->next;
				eventfd_read(old->fd, &v);
				continue;
			}
			p = &e->next;
		}
		old->tail = &old->head;
		while (*old->tail)
			old->tail = &(*old->tail)->next;
		c->file = f;
		while (moved) {
			struct ucma_event *e = moved;

			moved = e->next;
			e->next = NULL;
			queue_event(c, e);
		}
		if (r)
			r->events_reported = c->events_reported;
		return 0;
	}
	case RDMA_USER_CM_CMD_JOIN_IP_MCAST: {
		CMD(struct rdma_ucm_join_ip_mcast, cmd);
		struct rdma_ucm_create_id_resp *r = resp_ptr(cmd.response, out, sizeof(*r));
		struct sockaddr_storage ss;

		c = ctx_get(cmd.id);
		if (!c || c->file != f)
			return -EINVAL;
		if (!r)
			return -EFAULT;
		ret = sa_from_cmd(&cmd.addr, sizeof(cmd.addr), &ss);
		return ret ? ret : cmd_join(c, cmd.uid, &ss, r);
	}
	case RDMA_USER_CM_CMD_JOIN_MCAST: {
		CMD(struct rdma_ucm_join_mcast, cmd);
		struct rdma_ucm_create_id_resp *r = resp_ptr(cmd.response, out, sizeof(*r));
		struct sockaddr_storage ss;

		c = ctx_get(cmd.id);
		if (!c || c->file != f || cmd.join_flags >= RDMA_MC_JOIN_FLAG_RESERVED)
			return -EINVAL;
		if (!r)
			return -EFAULT;
		ret = sa_from_cmd(&cmd.addr, cmd.addr_size < sizeof(cmd.addr) ? cmd.addr_size :
				  sizeof(cmd.addr), &ss);
		return ret ? ret : cmd_join(c, cmd.uid, &ss, r);
	}
	case RDMA_USER_CM_CMD_LEAVE_MCAST: {
		CMD(struct rdma_ucm_destroy_id, cmd);
		struct rdma_ucm_destroy_id_resp *r = resp_ptr(cmd.response, out, sizeof(*r));
		struct ucma_mc *mc = mc_get(cmd.id);

		if (!mc || mc->ctx->file != f)
			return -ENOENT;
		if (r)
			r->events_reported = mc->events_reported;
		mc_free(mc);
		return 0;
	}
	default:
		/* QUERY (AF_IB's form) and what came later: the kernel without them says so. */
		return -ENOSYS;
	}
}

static ssize_t ucma_write(int fd, const void *buf, size_t len)
{
	struct rdma_ucm_cmd_hdr hdr;
	struct ucma_file *f;
	ssize_t ret;

	if (len < sizeof(hdr))
		return -EINVAL;
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.in + sizeof(hdr) > len)
		return -EINVAL;
	pthread_mutex_lock(&ucma_lock);
	f = file_of(fd);
	if (f && f->closed_ns && hdr.cmd != RDMA_USER_CM_CMD_GET_EVENT)
		f = NULL;
	ret = f ? dispatch(f, hdr.cmd, (const uint8_t *)buf + sizeof(hdr), hdr.in, hdr.out) :
		  -EBADF;
	pthread_mutex_unlock(&ucma_lock);
	return ret ? ret : (ssize_t)len;
}

static int ucma_open(int flags)
{
	struct ucma_file *f = calloc(1, sizeof(*f));
	pthread_t t;

	if (!f)
		return -ENOMEM;
	/* A semaphore: each read takes one event's count; poll sees POLLIN while any is queued. */
	f->fd = eventfd(0, EFD_SEMAPHORE | (flags & O_CLOEXEC ? EFD_CLOEXEC : 0) |
			(flags & O_NONBLOCK ? EFD_NONBLOCK : 0));
	if (f->fd < 0) {
		int ret = -errno;

		free(f);
		return ret;
	}
	pthread_cond_init(&f->cond, NULL);
	f->tail = &f->head;
	pthread_mutex_lock(&ucma_lock);
	if (!ucma_thread_up && !pthread_create(&t, NULL, cm_thread, NULL)) {
		pthread_detach(t);
		ucma_thread_up = true;
	}
	f->next = ucma_files;
	ucma_files = f;
	pthread_mutex_unlock(&ucma_lock);
	return f->fd;
}

/* Close for real the channels closed PROV_UCMA_CLOSE_LINGER_MS before @now. */
static void release_closed(uint64_t now)
{
	for (struct ucma_file **p = &ucma_files; *p;) {
		struct ucma_file *f = *p;

		if (!f->closed_ns || now - f->closed_ns < PROV_UCMA_CLOSE_LINGER_MS * 1000000ull) {
			p = &f->next;
			continue;
		}
		*p = f->next;
		/* First, so that this close() is libc's and not the preloaded one's. */
		if (f->released)
			f->released(f->fd);
		close(f->fd);
		/*
		 * A thread blocked in GET_EVENT on this channel keeps it, as it keeps
		 * the kernel's file: it sleeps on, and the channel is never freed.
		 */
		if (!f->waiters) {
			pthread_cond_destroy(&f->cond);
			free(f);
		}
	}
}

static void ucma_close(int fd, void (*released)(int fd))
{
	struct ucma_file *f;

	pthread_mutex_lock(&ucma_lock);
	f = file_of(fd);
	if (!f || f->closed_ns) {
		pthread_mutex_unlock(&ucma_lock);
		return;
	}
	for (uint32_t i = 1; i < ucma_n_ctx; i++)
		if (ucma_ctxs[i] && ucma_ctxs[i]->file == f)
			ctx_free(ucma_ctxs[i]);
	f->released = released;
	f->closed_ns = mono_ns(NULL);
	/* Without the CM thread nothing would release it later. */
	if (!ucma_thread_up) {
		f->closed_ns = 1;
		release_closed(mono_ns(NULL));
	}
	pthread_mutex_unlock(&ucma_lock);
}

__attribute__((visibility("default")))
const struct prov_ucma_ops uroce_ucma_ops = {
	.open = ucma_open,
	.write = ucma_write,
	.close = ucma_close,
};
