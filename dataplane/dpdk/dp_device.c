// SPDX-License-Identifier: MIT
/* A device: configuration + EAL + DPDK port + GID table + engine + a progress thread that backs off. */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "uroce/dp.h"
#include "dp_eal.h"
#include "host_bpf.h"
#include "host_ring.h"
#include "host_netdev.h"
#include "dp_port.h"
#include "host_qpn.h"
#include "host_stats.h"

/* Passes dp_device_close() gives the engine to send what is queued. */
#define CLOSE_DRAIN_PASSES 16

/*
 * Progress thread timing (docs/dataplane.md, "Progress").  While an
 * application thread polls (it did within DP_APP_ACTIVE_NS) it drives the
 * engine and the thread only checks back after DP_APP_WAIT_MAX_NS; after
 * DP_APP_WAIT_MIN_NS once it found work the application had stopped polling
 * for, doubling back while it finds none.  (Each look preempts a spinning
 * program on a busy machine: starting at the minimum, the first 1.5 ms of a
 * run held ten of them, and at 1 ms two threads' looks were near 1 % of a
 * memif ib_write_lat's round trips: its 99th percentile.)  Otherwise
 * the thread runs passes while they find work, spins DP_SPIN_NS more, then
 * sleeps in poll() on the port's receive socket until a frame arrives, the
 * next engine timer or housekeeping is due.  Ports without such a socket
 * spin DP_SPIN_POLLED_NS, then sleep DP_IDLE_SLEEP_MIN_NS doubling to
 * DP_IDLE_SLEEP_MAX_NS instead.
 */
#define DP_APP_ACTIVE_NS	50000ull
#define DP_APP_WAIT_MIN_NS	50000ull
#define DP_APP_WAIT_MAX_NS	2000000ull
#define DP_SPIN_NS		200000ull
#define DP_SPIN_POLLED_NS	200000ull	/* ports without a receive socket */
#define DP_LINGER_NS		10000ull
#define DP_LINGER_MESSAGE_NS	200000ull	/* for the rest of a message half taken */
#define DP_IDLE_SLEEP_MIN_NS	2000ull
#define DP_IDLE_SLEEP_MAX_NS	1000000ull
#define DP_TIMER_SLACK_NS	1000ul
#define DP_HOUSEKEEPING_NS	100000000ull	/* counters, netlink events */
#define DP_LINK_RECHECK_NS	1000000000ull	/* link state even without an event */

/*
 * What the device holds now: live objects, the QPs' memory (qp_bytes, and
 * per QP), the QPNs it holds in the host-wide table.
 */
#define DP_OBJECT_GAUGES(X)	X(live_qps)	X(live_cqs)	X(live_mrs)	X(qp_bytes)	X(bytes_per_qp)	\
				X(qpns_held)	X(inflight_psns)	X(qpn_filter)

#define COUNT_ONE(n) + 1
/* The engine's counters and gauges (rc_counter_names[]). */
#define RC_NAMES	(0 RC_COUNTERS(COUNT_ONE) RC_QP_GAUGES(COUNT_ONE))
/*
 * Port counters (with their drop reasons and bursts: dp_port_counter_names[]),
 * neighbour and engine counters, both drop vocabularies but their NONE,
 * object gauges, extras, the NULL.
 */
#define DEV_NAMES_MAX	(sizeof(struct dp_port_counters) / sizeof(uint64_t) + \
			 0 HOST_NEIGH_COUNTERS(COUNT_ONE) + RC_NAMES + \
			 WIRE_DROP_COUNT + RC_DROP_COUNT - 1 DP_OBJECT_GAUGES(COUNT_ONE) + \
			 DP_EXTRA_COUNTERS_MAX)
/* Per QP: the engine's counters and gauges, its drop reasons but NONE, the NULL. */
#define QP_NAMES_MAX	(RC_NAMES + RC_DROP_COUNT)

struct dp_device {
	struct host_link_cfg	cfg;
	struct dp_open_args	args;
	struct dp_port		*port;
	struct host_qpn_map	*qpns;
	struct host_qpn_filter	qpn_filter;	/* loaded: the port's socket takes only our QPNs */
	struct host_ring		*loop;
	/* A memif link's other end, a device of this host: its QPN table and its processes' rings. */
	struct host_qpn_map	*peer_qpns;
	struct host_ring		*peer_loop;
	struct rc_engine	*eng;
	struct host_stats		*stats;
	int			watch_fd;
	bool			link_up;

	pthread_t		thread;
	atomic_bool		stop;
	_Atomic uint64_t	app_poll_ns;
	int			rx_fd;		/* the port's receive socket, or -1 */
	int			wake_fd;	/* eventfd: wakes the sleeping thread */
	_Atomic uint64_t	wake_ns;	/* the thread sleeps until then; 0: awake */
	atomic_bool		waiting_app;	/* that sleep defers to a polling application */

	pthread_mutex_t		qp_lock;	/* qps and mc */
	struct rc_qp		*qps[HOST_STATS_QP_SLOTS];	/* counted in the stats file */
	unsigned		qp_slots_used;	/* the highest slot used + 1 */
	_Static_assert(HOST_STATS_QP_SLOTS >= RC_MAX_QP, "a stats slot for every QP");
	struct dp_mcast {
		uint8_t		gid[16];
		int		fd;		/* a UDP socket holding the netdev's membership */
	}			mc[RC_MAX_MCAST_GROUPS];
	unsigned		n_mc;
	unsigned		n_extra;
	uint64_t		extra[DP_EXTRA_COUNTERS_MAX];	/* as the provider last gave them */

	/* Counter names for the stats file: port, neighbour, engine, drop reasons. */
	const char		*dev_names[DEV_NAMES_MAX];
	const char		*qp_names[QP_NAMES_MAX];
	char			wire_drop_names[WIRE_DROP_COUNT][HOST_STATS_NAME_LEN];
	char			rc_drop_names[RC_DROP_COUNT][HOST_STATS_NAME_LEN];
};

/* The netdev a member of @gid's IP group, through @fd: IGMP or MLD reports, the group's MAC let in. */
static int ip_group_join(int *fd, const uint8_t gid[16], int ifindex)
{
	bool v4 = wire_gid_is_v4mapped(gid);
	int ret;

	*fd = socket(v4 ? AF_INET : AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (*fd < 0)
		return -errno;
	if (v4) {
		struct ip_mreqn mr = { .imr_ifindex = ifindex };

		memcpy(&mr.imr_multiaddr, gid + 12, 4);
		ret = setsockopt(*fd, IPPROTO_IP, IP_ADD_MEMBERSHIP, &mr, sizeof(mr));
	} else {
		struct ipv6_mreq mr = { .ipv6mr_interface = (unsigned)ifindex };

		memcpy(&mr.ipv6mr_multiaddr, gid, 16);
		ret = setsockopt(*fd, IPPROTO_IPV6, IPV6_JOIN_GROUP, &mr, sizeof(mr));
	}
	if (ret) {
		ret = -errno;
		close(*fd);
		*fd = -1;
	}
	return ret;
}

/* rc_engine_cfg.mcast_group: the engine lock held, one call per group and way. */
static int device_mcast_group(void *arg, const uint8_t gid[16], bool join)
{
	struct dp_device *dev = arg;
	struct dp_mcast *m = NULL;
	int ret = 0;

	pthread_mutex_lock(&dev->qp_lock);
	for (unsigned i = 0; i < dev->n_mc && !m; i++)
		if (!memcmp(dev->mc[i].gid, gid, 16))
			m = &dev->mc[i];
	if (join && !m) {
		m = &dev->mc[dev->n_mc];
		ret = ip_group_join(&m->fd, gid, dp_port_ifindex(dev->port));
		if (!ret) {
			memcpy(m->gid, gid, 16);
			dev->n_mc++;
		}
	} else if (!join && m) {
		close(m->fd);
		*m = dev->mc[--dev->n_mc];
	}
	pthread_mutex_unlock(&dev->qp_lock);
	return ret;
}

static uint64_t engine_clock(void *arg)
{
	(void)arg;
	return dp_clock_ns();
}

/*
 * A packet socket whose netdev went down polls POLLERR (ENETDOWN) until the
 * error is read, which the PMD never does: read it here, or every later
 * sleep would return at once.  A socket that cannot be waited on any more
 * is given up: the thread then sleeps by the clock like other ports.
 */
static void rx_fd_error(struct dp_device *dev, int fd, short revents)
{
	socklen_t len = sizeof(int);
	int e;

	if ((revents & (POLLHUP | POLLNVAL)) ||
	    getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) || !e)
		dev->rx_fd = -1;
}

/*
 * Sleep until @until (ns) or until @fd (if >= 0) polls readable or the
 * wake eventfd is written.  With @timers, @until is the engine's next timer
 * at most, and dp_device_poll() wakes the thread when an application pass
 * arms an earlier one; without, the thread defers to a polling application
 * and dp_device_app_waits() wakes it.
 */
static void wait_until(struct dp_device *dev, int fd, uint64_t until, bool timers)
{
	struct pollfd pfd[3] = { { .fd = dev->wake_fd, .events = POLLIN },
				 { .fd = fd, .events = POLLIN },
				 { .fd = -1, .events = POLLIN } };
	uint64_t now = dp_clock_ns(), ns = until > now ? until - now : 0;
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	uint64_t v;

	atomic_store(&dev->wake_ns, until);
	/*
	 * Published before this last look, so that dp_device_poll() sees the
	 * wake-up time or we see its earlier timer (and dp_device_app_waits()
	 * the wake-up time or we its application leaving).
	 */
	/* Frames from processes of this host ring the loop doorbell while we sleep. */
	if (timers && dev->loop) {
		pfd[2].fd = host_ring_wake_fd(dev->loop);
		if (!host_ring_sleep_begin(dev->loop))
			goto out;
	}
	if ((timers ? rc_engine_deadline_hint(dev->eng) >= until : atomic_load(&dev->app_poll_ns)) &&
	    ppoll(pfd, 3, &ts, NULL) > 0) {
		if (pfd[0].revents & POLLIN)
			(void)!read(dev->wake_fd, &v, sizeof(v));
		if (fd >= 0 && (pfd[1].revents & (POLLERR | POLLHUP | POLLNVAL)))
			rx_fd_error(dev, fd, pfd[1].revents);
	}
out:
	if (pfd[2].fd >= 0)
		host_ring_sleep_end(dev->loop);
	atomic_store(&dev->wake_ns, 0);
}

static void wake_thread(struct dp_device *dev)
{
	uint64_t one = 1;

	(void)!write(dev->wake_fd, &one, sizeof(one));
}

/* The engine's GID table from the link's addresses (all entries rewritten). */
static int load_gids(struct dp_device *dev, char *err, size_t errlen)
{
	struct wire_gid_entry tbl[WIRE_GID_TABLE_LEN];
	int n = host_gid_table(&dev->cfg, tbl, WIRE_GID_TABLE_LEN, err, errlen);

	if (n < 0)
		return n;
	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++)
		rc_engine_set_gid(dev->eng, i, &tbl[i]);
	return 0;
}

/* ---- Counters for `uroce stat` ---- */

/* A drop reason as `uroce stat` shows it: "drop_" and its name in lower case, in @s. */
static void name_counters(struct dp_device *dev)
{
	unsigned n = 0, q = 0;

	for (unsigned i = 0; dp_port_counter_names[i]; i++)
		dev->dev_names[n++] = dp_port_counter_names[i];
	for (unsigned i = 0; host_neigh_counter_names[i]; i++)
		dev->dev_names[n++] = host_neigh_counter_names[i];
	for (unsigned i = 0; rc_counter_names[i]; i++)
		dev->dev_names[n++] = dev->qp_names[q++] = rc_counter_names[i];
	for (unsigned i = 1; i < WIRE_DROP_COUNT; i++)
		dev->dev_names[n++] = host_stats_drop_name(dev->wire_drop_names[i], HOST_STATS_NAME_LEN,
							   "drop_", wire_drop_name((enum wire_drop)i));
	for (unsigned i = 1; i < RC_DROP_COUNT; i++)
		dev->dev_names[n++] = dev->qp_names[q++] = host_stats_drop_name(
			dev->rc_drop_names[i], HOST_STATS_NAME_LEN, "drop_",
			rc_drop_info((enum rc_drop)i)->name);
#define OBJECT_NAME(g) dev->dev_names[n++] = #g;
	DP_OBJECT_GAUGES(OBJECT_NAME)
#undef OBJECT_NAME
	for (dev->n_extra = 0; dev->args.extra_names && dev->args.extra_names[dev->n_extra] &&
	     dev->n_extra < DP_EXTRA_COUNTERS_MAX; dev->n_extra++)
		dev->dev_names[n++] = dev->args.extra_names[dev->n_extra];
	dev->dev_names[n] = NULL;
	dev->qp_names[q] = NULL;
}

static unsigned count_names(const char *const *names)
{
	unsigned n = 0;

	while (names[n])
		n++;
	return n;
}

/* DP_OBJECT_GAUGES into @v.  Return: the place after them. */
static uint64_t *publish_objects(struct dp_device *dev, uint64_t *v)
{
	struct rc_objects o;

	rc_engine_objects(dev->eng, &o);
	*v++ = o.qp;
	*v++ = o.cq;
	*v++ = o.mr;
	*v++ = o.qp_bytes;
	*v++ = o.qp ? o.qp_bytes / o.qp : 0;
	*v++ = atomic_load(&dev->qpns->n_owned);
	*v++ = o.inflight;
	*v++ = dev->qpn_filter.bits != NULL;
	return v;
}

static void publish_counters(struct dp_device *dev)
{
	struct dp_port_counters pc;
	struct host_neigh_counters nc;
	struct rc_counters rc;
	unsigned n_port = count_names(dp_port_counter_names);
	unsigned n_neigh = count_names(host_neigh_counter_names);
	unsigned n_rc = count_names(rc_counter_names);
	uint64_t *v;

	if (!dev->stats)
		return;
	dp_port_counters(dev->port, &pc);
	dp_port_neigh_counters(dev->port, &nc);
	rc_engine_counters(dev->eng, &rc);
	host_stats_begin(dev->stats);
	v = host_stats_dev(dev->stats);
	memcpy(v, &pc, n_port * sizeof(uint64_t));
	memcpy(v + n_port, &nc, n_neigh * sizeof(uint64_t));
	memcpy(v + n_port + n_neigh, &rc, n_rc * sizeof(uint64_t));
	v += n_port + n_neigh + n_rc;
	memcpy(v, &rc.drops.count[1], (WIRE_DROP_COUNT - 1) * sizeof(uint64_t));
	memcpy(v + WIRE_DROP_COUNT - 1, &rc.rc_drops.count[1],
	       (RC_DROP_COUNT - 1) * sizeof(uint64_t));
	v += WIRE_DROP_COUNT - 1 + RC_DROP_COUNT - 1;
	v = publish_objects(dev, v);
	pthread_mutex_lock(&dev->qp_lock);
	memcpy(v, dev->extra, dev->n_extra * sizeof(uint64_t));
	for (unsigned i = 0; i < dev->qp_slots_used; i++) {
		struct rc_qp *qp = dev->qps[i];

		if (qp && rc_qp_counters(qp, &rc) == 0) {
			v = host_stats_qp(dev->stats, i, rc_qp_num(qp), true);
			memcpy(v, &rc, n_rc * sizeof(uint64_t));
			memcpy(v + n_rc, &rc.rc_drops.count[1],
			       (RC_DROP_COUNT - 1) * sizeof(uint64_t));
		} else {
			host_stats_qp(dev->stats, i, 0, false);
		}
	}
	pthread_mutex_unlock(&dev->qp_lock);
	host_stats_end(dev->stats);
}

void dp_device_extra_counters(struct dp_device *dev, const uint64_t *values)
{
	pthread_mutex_lock(&dev->qp_lock);
	memcpy(dev->extra, values, dev->n_extra * sizeof(uint64_t));
	pthread_mutex_unlock(&dev->qp_lock);
}

void dp_device_qp_add(struct dp_device *dev, struct rc_qp *qp)
{
	pthread_mutex_lock(&dev->qp_lock);
	for (unsigned i = 0; i < HOST_STATS_QP_SLOTS; i++)
		if (!dev->qps[i]) {
			dev->qps[i] = qp;
			if (i >= dev->qp_slots_used)
				dev->qp_slots_used = i + 1;
			break;
		}
	pthread_mutex_unlock(&dev->qp_lock);
}

void dp_device_qp_del(struct dp_device *dev, struct rc_qp *qp)
{
	pthread_mutex_lock(&dev->qp_lock);
	for (unsigned i = 0; i < dev->qp_slots_used; i++)
		if (dev->qps[i] == qp)
			dev->qps[i] = NULL;
	pthread_mutex_unlock(&dev->qp_lock);
}

/* ---- Link and address changes ---- */

static void port_event(struct dp_device *dev, enum ibv_event_type type)
{
	if (dev->args.async_event)
		dev->args.async_event(dev->args.event_arg, type, NULL);
}

static void follow_link(struct dp_device *dev)
{
	unsigned changes = dp_port_refresh(dev->port);
	struct host_link_info info;
	char err[256];

	if (changes & DP_PORT_LINK_CHANGED) {
		dp_port_link(dev->port, &info);
		dev->link_up = info.up;
		port_event(dev, info.up ? IBV_EVENT_PORT_ACTIVE : IBV_EVENT_PORT_ERR);
	}
	if ((changes & DP_PORT_ADDRS_CHANGED) && load_gids(dev, err, sizeof(err)) == 0)
		port_event(dev, IBV_EVENT_GID_CHANGE);
}

/* ---- Progress ---- */

static void housekeeping(struct dp_device *dev, uint64_t now, uint64_t *last_link)
{
	bool event = dev->watch_fd >= 0 &&
		     host_netdev_watch_poll(dev->watch_fd, dp_port_ifindex(dev->port));

	if (event || now - *last_link >= DP_LINK_RECHECK_NS) {
		follow_link(dev);
		*last_link = now;
	}
	publish_counters(dev);
	if (now - *last_link < DP_HOUSEKEEPING_NS)
		dp_port_flush_capture(dev->port);
}

struct progress_state {
	uint64_t	last_work;	/* the thread's last pass that found work */
	uint64_t	sleep;		/* ports without a receive socket: next sleep */
	uint64_t	app_wait;	/* while the application polls: next look after */
};

/* Nothing to do for now: sleep until a frame, a timer or housekeeping, or the application stops. */
static void progress_idle(struct dp_device *dev, struct progress_state *st, uint64_t now,
			  uint64_t next_house)
{
	uint64_t app = atomic_load_explicit(&dev->app_poll_ns, memory_order_relaxed);
	uint64_t until = next_house, deadline;

	if (now - app < DP_APP_ACTIVE_NS) {
		/* The application polls: it receives and runs the timers; check back when it may have stopped. */
		atomic_store(&dev->waiting_app, true);
		wait_until(dev, -1, app + st->app_wait, false);
		atomic_store(&dev->waiting_app, false);
		if (st->app_wait < DP_APP_WAIT_MAX_NS)
			st->app_wait *= 2;
		st->sleep = DP_IDLE_SLEEP_MIN_NS;
		return;
	}
	deadline = rc_engine_next_deadline(dev->eng);
	if (deadline < until)
		until = deadline;
	if (dev->rx_fd < 0) {
		if (now + st->sleep < until)
			until = now + st->sleep;
		if (st->sleep < DP_IDLE_SLEEP_MAX_NS)
			st->sleep *= 2;
	}
	wait_until(dev, dev->rx_fd, until, true);
}

static void *progress_main(void *arg)
{
	struct dp_device *dev = arg;
	struct progress_state st = { .sleep = DP_IDLE_SLEEP_MIN_NS, .app_wait = DP_APP_WAIT_MAX_NS };
	uint64_t last_house = 0, last_link = 0;
	bool registered;
	sigset_t all;

	/* The application's signals go to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* Timed sleeps here are short: the default 50 µs of slack would dominate them. */
	prctl(PR_SET_TIMERSLACK, DP_TIMER_SLACK_NS);
	/* An lcore id: the port's buffers then come from this thread's mempool cache. */
	registered = dp_eal_thread_register() == 0;
	/* Other processes place writes and reads into ours only while this runs. */
	host_ring_hold_running(dev->loop);
	while (!atomic_load_explicit(&dev->stop, memory_order_relaxed)) {
		uint64_t now = dp_clock_ns();

		if (now - last_house >= DP_HOUSEKEEPING_NS) {
			housekeeping(dev, now, &last_link);
			last_house = now;
		}
		if (now - atomic_load_explicit(&dev->app_poll_ns, memory_order_relaxed) >=
		    DP_APP_ACTIVE_NS) {
			if (rc_engine_progress(dev->eng, 0) || dp_port_tx_held(dev->port)) {
				/* Held ACKs leave with the next pass. */
				st.last_work = now;
				st.sleep = DP_IDLE_SLEEP_MIN_NS;
				st.app_wait = DP_APP_WAIT_MIN_NS;
				continue;
			}
			/*
			 * Spin politely: a thread runnable on this CPU (the
			 * peer process whose reply we wait for) runs first.
			 */
			if (now - st.last_work < (dev->rx_fd >= 0 ? DP_SPIN_NS : DP_SPIN_POLLED_NS)) {
				sched_yield();
				continue;
			}
		}
		progress_idle(dev, &st, now, last_house + DP_HOUSEKEEPING_NS);
	}
	host_ring_release_running(dev->loop);
	if (registered)
		dp_eal_thread_unregister();
	return NULL;
}

/*
 * After an application pass: a timer now due before the sleeping thread wakes
 * gets it up, unless it sleeps because the application polls, which runs the
 * timers itself (a wake-up per request then cost ib_send_lat a system call
 * and a context switch each way).
 */
static inline void check_sleeper(struct dp_device *dev)
{
	uint64_t wake = atomic_load(&dev->wake_ns);

	if (wake && !atomic_load_explicit(&dev->waiting_app, memory_order_relaxed) &&
	    rc_engine_deadline_hint(dev->eng) < wake &&
	    atomic_compare_exchange_strong(&dev->wake_ns, &wake, 0))
		wake_thread(dev);
}

/*
 * An application that sees its last send complete often stops polling and
 * waits in memory for the peer's reply (ib_write_lat): when that ACK came
 * alone, the request sent right behind it is taken here, microseconds later,
 * rather than by the background thread when it next looks.
 */
unsigned dp_device_poll(struct dp_device *dev)
{
	uint64_t now = dp_clock_ns(), end;
	unsigned n;

	atomic_store_explicit(&dev->app_poll_ns, now, memory_order_relaxed);
	n = rc_engine_progress(dev->eng, 0);
	if (n && rc_engine_ack_drained(dev->eng)) {
		bool taken = false;

		for (end = now + DP_LINGER_NS; !taken && dp_clock_ns() < end;)
			taken = rc_engine_progress(dev->eng, 0) != 0;
		n += taken;
		/* Nothing behind the ACK, no receive to poll for: the application now spins on memory. */
		if (!taken && !rc_engine_recv_posted(dev->eng))
			dp_device_app_waits(dev);
	}
	/*
	 * Half of a message taken (the first packets of an RDMA WRITE): the rest
	 * is microseconds behind, and the application may next poll memory for
	 * it, leaving it to the background thread, which on a machine whose CPUs
	 * spin in applications waits for the scheduler (milliseconds).
	 */
	if (n && rc_engine_mid_message(dev->eng))
		for (end = dp_clock_ns() + DP_LINGER_MESSAGE_NS;
		     rc_engine_mid_message(dev->eng) && dp_clock_ns() < end;)
			n += rc_engine_progress(dev->eng, 0);
	check_sleeper(dev);
	return n;
}

void dp_device_app_waits(struct dp_device *dev)
{
	uint64_t wake = atomic_load(&dev->wake_ns);

	atomic_store(&dev->app_poll_ns, 0);
	/* Asleep because the application polled (no receive socket in that sleep): wake it. */
	if (wake && atomic_load(&dev->waiting_app) &&
	    atomic_compare_exchange_strong(&dev->wake_ns, &wake, 0))
		wake_thread(dev);
}

unsigned dp_device_kick(struct dp_device *dev)
{
	unsigned n = rc_engine_progress(dev->eng, 0);

	check_sleeper(dev);
	return n;
}

/* ---- Open and close ---- */

/*
 * Other processes' RoCE frames stay in the kernel instead of every
 * process's ring (docs/dataplane.md, "Many QPs").  Without the privilege to
 * load the filter, or on the broker's socket (its filter is locked), the
 * receive path sorts them as before.
 */
static void qpn_filter_on(struct dp_device *dev)
{
	char why[256];

	if (host_qpn_filter_load(&dev->qpn_filter, why, sizeof(why)))
		return;
	host_qpn_filter_bits(dev->qpns, dev->qpn_filter.bits);
	if (host_qpn_filter_attach(&dev->qpn_filter, dp_port_rx_fd(dev->port), why, sizeof(why))) {
		host_qpn_filter_bits(dev->qpns, NULL);
		host_qpn_filter_close(&dev->qpn_filter);
		return;
	}
	dp_port_drop_received(dev->port);
}

/*
 * The other end of a memif link is a device of this host when its
 * configuration is here: its processes' QPs are then placed into directly, as
 * those of another process on one device are (docs/dataplane.md, "Direct
 * placement").  Without it, everything goes by frames.
 */
static void memif_peer_open(struct dp_device *dev)
{
	char peer[sizeof(dev->cfg.name)], why[256];

	if (dev->cfg.pmd != HOST_PMD_MEMIF || dev->cfg.no_direct ||
	    host_link_memif_peer(&dev->cfg, peer, sizeof(peer)) ||
	    host_qpn_open(peer, &dev->peer_qpns, why, sizeof(why)))
		return;
	if (host_ring_open_view(peer, &dev->peer_loop, why, sizeof(why))) {
		host_qpn_close(dev->peer_qpns);
		dev->peer_qpns = NULL;
	}
}

static void memif_peer_close(struct dp_device *dev)
{
	host_ring_close(dev->peer_loop);
	if (dev->peer_qpns)
		host_qpn_close(dev->peer_qpns);
}

/* rc_engine_cfg.direct_peer of a memif link: the QP's process at the other end. */
static struct rc_direct_table *memif_direct_peer(void *arg, uint32_t qpn, int32_t *pid)
{
	struct dp_device *dev = arg;
	uint32_t start;
	int32_t owner = host_qpn_owner(dev->peer_qpns, qpn, &start);

	if (!owner)
		return NULL;
	*pid = owner;
	return host_ring_peer_shared(dev->peer_loop, owner, start);
}

int dp_device_open(const char *ibdev, const struct dp_open_args *args, struct dp_device **out,
		   char *err, size_t errlen)
{
	struct rc_engine_cfg ecfg;
	struct dp_device *dev;
	const char *key;
	char stats_err[256];
	int ret;

	dev = calloc(1, sizeof(*dev));
	if (!dev) {
		snprintf(err, errlen, "%s: out of memory", ibdev);
		return -ENOMEM;
	}
	if (args)
		dev->args = *args;
	dev->watch_fd = -1;
	dev->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (dev->wake_fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: cannot create an eventfd: %s", ibdev, strerror(errno));
		free(dev);
		return ret;
	}
	pthread_mutex_init(&dev->qp_lock, NULL);
	ret = host_link_cfg_load(ibdev, &dev->cfg, err, errlen);
	if (ret)
		goto err_free;
	/*
	 * Processes on one netdev share QPNs, and reach each other's QPs
	 * through host_ring; a link DPDK owns is its own space.
	 */
	key = host_pmd_uses_netdev(dev->cfg.pmd) ? dev->cfg.netdev : dev->cfg.name;
	ret = host_qpn_open(key, &dev->qpns, err, errlen);
	if (ret)
		goto err_free;
	/* The port first: through a broker it learns the PID the ring is named by (host_self_set()). */
	ret = dp_port_open(&dev->cfg, dev->qpns, &dev->port, err, errlen);
	if (ret)
		goto err_qpn;
	ret = host_ring_open(key, &dev->loop, err, errlen);
	if (ret)
		goto err_port;
	if (dev->cfg.pmd == HOST_PMD_AF_PACKET)
		qpn_filter_on(dev);
	dp_port_set_ring(dev->port, dev->loop);
	memset(&ecfg, 0, sizeof(ecfg));
	ecfg.port = dp_port_base(dev->port);
	ecfg.now_ns = engine_clock;
	ecfg.qpn_alloc = host_qpn_alloc;
	ecfg.qpn_free = host_qpn_free;
	ecfg.qpn_arg = dev->qpns;
	ecfg.cq_event = dev->args.cq_event;
	ecfg.async_event = dev->args.async_event;
	ecfg.event_arg = dev->args.event_arg;
	ecfg.frame_tap = dp_port_capture;
	ecfg.frame_tap_arg = dev->port;
	ecfg.mcast_group = device_mcast_group;
	ecfg.mcast_group_arg = dev;
	ecfg.local_forward = dp_port_forward;
	ecfg.local_forward_arg = dev->port;
	_Static_assert(sizeof(struct rc_direct_table) <= HOST_RING_SHARED_BYTES, "direct table");
	if (!dev->cfg.no_direct) {
		ecfg.direct_table = host_ring_shared(dev->loop);
		ecfg.direct_peer = dp_port_direct_peer;
		ecfg.direct_arg = dev->port;
		memif_peer_open(dev);
		if (dev->peer_loop) {
			ecfg.direct_peer = memif_direct_peer;
			ecfg.direct_arg = dev;
			ecfg.direct_every_path = true;
		}
	}
	ecfg.rto_min_us = dev->cfg.rto_min_us;
	ecfg.restart_window = dev->cfg.restart_window;
	ecfg.inflight = dev->cfg.inflight;
	ecfg.no_adaptive_rto = dev->cfg.no_adaptive_rto;
	ecfg.no_tail_probe = dev->cfg.no_tail_probe;
	ecfg.selective_repeat = dev->cfg.selective_repeat;
	ecfg.dcqcn = dev->cfg.dcqcn;
	dev->eng = rc_engine_create(&ecfg);
	if (!dev->eng) {
		ret = errno ? -errno : -ENOMEM;
		snprintf(err, errlen, "%s: cannot create the transport engine: %s", ibdev,
			 strerror(-ret));
		goto err_port;
	}
	ret = load_gids(dev, err, errlen);
	if (ret)
		goto err_engine;
	{
		struct host_link_info info;

		dp_port_link(dev->port, &info);
		dev->link_up = info.up;
	}
	name_counters(dev);
	/* Counters are a convenience: a run directory we cannot write costs only them. */
	dev->stats = host_stats_create(ibdev, dev->cfg.netdev, host_pmd_name(dev->cfg.pmd),
				     dev->dev_names, dev->qp_names, stats_err,
				     sizeof(stats_err));
	dev->watch_fd = host_pmd_uses_netdev(dev->cfg.pmd) ? host_netdev_watch_open() : -1;
	dev->rx_fd = dp_port_rx_fd(dev->port);
	ret = pthread_create(&dev->thread, NULL, progress_main, dev);
	if (ret) {
		ret = -ret;
		snprintf(err, errlen, "%s: cannot start the progress thread: %s", ibdev,
			 strerror(-ret));
		goto err_stats;
	}
	pthread_setname_np(dev->thread, "uroce-progress");
	*out = dev;
	return 0;

err_stats:
	if (dev->watch_fd >= 0)
		close(dev->watch_fd);
	host_stats_destroy(dev->stats);
err_engine:
	rc_engine_destroy(dev->eng);
err_port:
	memif_peer_close(dev);
	dp_port_close(dev->port);
	host_ring_close(dev->loop);
err_qpn:
	host_qpn_close(dev->qpns);
	host_qpn_filter_close(&dev->qpn_filter);
err_free:
	pthread_mutex_destroy(&dev->qp_lock);
	close(dev->wake_fd);
	free(dev);
	return ret;
}

void dp_device_close(struct dp_device *dev)
{
	if (!dev)
		return;
	for (unsigned i = 0; i < dev->n_mc; i++)
		close(dev->mc[i].fd);
	atomic_store(&dev->stop, true);
	wake_thread(dev);
	pthread_join(dev->thread, NULL);
	/* What the last passes queued (an ACK of the last message) still leaves. */
	for (int pass = 0; pass < CLOSE_DRAIN_PASSES; pass++)
		if (!rc_engine_progress(dev->eng, 0) && pass)
			break;
	rc_engine_destroy(dev->eng);
	memif_peer_close(dev);
	dp_port_close(dev->port);
	host_ring_close(dev->loop);
	host_qpn_close(dev->qpns);
	host_qpn_filter_close(&dev->qpn_filter);
	if (dev->watch_fd >= 0)
		close(dev->watch_fd);
	host_stats_destroy(dev->stats);
	pthread_mutex_destroy(&dev->qp_lock);
	close(dev->wake_fd);
	free(dev);
}

struct rc_engine *dp_device_engine(struct dp_device *dev)
{
	return dev->eng;
}

int dp_device_link(struct dp_device *dev, struct host_link_info *info)
{
	dp_port_link(dev->port, info);
	return 0;
}
