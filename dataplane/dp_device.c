// SPDX-License-Identifier: MIT
/* A device: configuration + EAL + DPDK port + GID table + engine + a progress thread that backs off. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "uroce/dp.h"
#include "dp_eal.h"
#include "dp_loop.h"
#include "dp_netdev.h"
#include "dp_port.h"
#include "dp_qpn.h"
#include "dp_stats.h"

/* Passes dp_device_close() gives the engine to send what is queued. */
#define CLOSE_DRAIN_PASSES 16

/*
 * Progress thread timing.  While the engine has work the thread spins;
 * when a pass finds nothing it spins a little longer (a reply is often
 * microseconds away), then yields, then sleeps with a doubling interval
 * capped at DP_IDLE_SLEEP_MAX_NS or the next engine timer.  An application
 * thread that polled within DP_APP_POLL_HOLD_NS has the engine to itself.
 */
#define DP_SPIN_PASSES		2000
#define DP_YIELD_PASSES		200
#define DP_IDLE_SLEEP_MIN_NS	2000ull
#define DP_IDLE_SLEEP_MAX_NS	1000000ull
#define DP_APP_POLL_HOLD_NS	2000000ull
#define DP_HOUSEKEEPING_NS	100000000ull	/* counters, netlink events */
#define DP_LINK_RECHECK_NS	1000000000ull	/* link state even without an event */

struct dp_device {
	struct uroce_link_cfg	cfg;
	struct dp_open_args	args;
	struct dp_port		*port;
	struct dp_qpn_map	*qpns;
	struct dp_loop		*loop;
	struct rc_engine	*eng;
	struct dp_stats		*stats;
	int			watch_fd;
	bool			link_up;

	pthread_t		thread;
	atomic_bool		stop;
	_Atomic uint64_t	app_poll_ns;

	pthread_mutex_t		qp_lock;
	struct rc_qp		*qps[DP_STATS_QP_SLOTS];

	/* Counter names for the stats file: port, neighbour, engine, drop reasons. */
	const char		*dev_names[128];
	char			drop_names[WIRE_DROP_COUNT][DP_STATS_NAME_LEN];
};

static uint64_t mono_ns(void)
{
	return dp_clock_ns();
}

static uint64_t engine_clock(void *arg)
{
	(void)arg;
	return dp_clock_ns();
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };

	nanosleep(&ts, NULL);
}

/* The engine's GID table from the link's addresses (all entries rewritten). */
static int load_gids(struct dp_device *dev, char *err, size_t errlen)
{
	struct rc_gid_entry tbl[RC_GID_TABLE_LEN];
	int n = dp_gid_table(&dev->cfg, tbl, RC_GID_TABLE_LEN, err, errlen);

	if (n < 0)
		return n;
	for (unsigned i = 0; i < RC_GID_TABLE_LEN; i++)
		rc_engine_set_gid(dev->eng, i, &tbl[i]);
	return 0;
}

/* ---- Counters for `uroce stat` ---- */

static void name_counters(struct dp_device *dev)
{
	unsigned n = 0;

	for (unsigned i = 0; dp_port_counter_names[i]; i++)
		dev->dev_names[n++] = dp_port_counter_names[i];
	for (unsigned i = 0; dp_neigh_counter_names[i]; i++)
		dev->dev_names[n++] = dp_neigh_counter_names[i];
	for (unsigned i = 0; rc_counter_names[i]; i++)
		dev->dev_names[n++] = rc_counter_names[i];
	for (unsigned i = 1; i < WIRE_DROP_COUNT; i++) {
		char *s = dev->drop_names[i];

		snprintf(s, DP_STATS_NAME_LEN, "drop_%s", wire_drop_name((enum wire_drop)i));
		for (; *s; s++)
			*s = (char)tolower((unsigned char)*s);
		dev->dev_names[n++] = dev->drop_names[i];
	}
	dev->dev_names[n] = NULL;
}

static unsigned count_names(const char *const *names)
{
	unsigned n = 0;

	while (names[n])
		n++;
	return n;
}

static void publish_counters(struct dp_device *dev)
{
	struct dp_port_counters pc;
	struct dp_neigh_counters nc;
	struct rc_counters rc;
	unsigned n_port = count_names(dp_port_counter_names);
	unsigned n_neigh = count_names(dp_neigh_counter_names);
	unsigned n_rc = count_names(rc_counter_names);
	uint64_t *v;

	if (!dev->stats)
		return;
	dp_port_counters(dev->port, &pc);
	dp_port_neigh_counters(dev->port, &nc);
	rc_engine_counters(dev->eng, &rc);
	dp_stats_begin(dev->stats);
	v = dp_stats_dev(dev->stats);
	memcpy(v, &pc, n_port * sizeof(uint64_t));
	memcpy(v + n_port, &nc, n_neigh * sizeof(uint64_t));
	memcpy(v + n_port + n_neigh, &rc, n_rc * sizeof(uint64_t));
	memcpy(v + n_port + n_neigh + n_rc, &rc.drops.count[1],
	       (WIRE_DROP_COUNT - 1) * sizeof(uint64_t));
	pthread_mutex_lock(&dev->qp_lock);
	for (unsigned i = 0; i < DP_STATS_QP_SLOTS; i++) {
		struct rc_qp *qp = dev->qps[i];

		if (qp && rc_qp_counters(qp, &rc) == 0)
			memcpy(dp_stats_qp(dev->stats, i, rc_qp_num(qp), true), &rc,
			       n_rc * sizeof(uint64_t));
		else
			dp_stats_qp(dev->stats, i, 0, false);
	}
	pthread_mutex_unlock(&dev->qp_lock);
	dp_stats_end(dev->stats);
}

void dp_device_qp_add(struct dp_device *dev, struct rc_qp *qp)
{
	pthread_mutex_lock(&dev->qp_lock);
	for (unsigned i = 0; i < DP_STATS_QP_SLOTS; i++)
		if (!dev->qps[i]) {
			dev->qps[i] = qp;
			break;
		}
	pthread_mutex_unlock(&dev->qp_lock);
}

void dp_device_qp_del(struct dp_device *dev, struct rc_qp *qp)
{
	pthread_mutex_lock(&dev->qp_lock);
	for (unsigned i = 0; i < DP_STATS_QP_SLOTS; i++)
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
	struct dp_link_info info;
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

static void *progress_main(void *arg)
{
	struct dp_device *dev = arg;
	uint64_t last_house = 0, last_link = 0, sleep = DP_IDLE_SLEEP_MIN_NS;
	unsigned idle = 0;
	bool registered;
	sigset_t all;

	/* The application's signals go to the application's threads. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, NULL);
	/* An lcore id: the port's buffers then come from this thread's mempool cache. */
	registered = dp_eal_thread_register() == 0;
	while (!atomic_load_explicit(&dev->stop, memory_order_relaxed)) {
		uint64_t now = mono_ns(), deadline;

		if (now - last_house >= DP_HOUSEKEEPING_NS) {
			bool event = dev->watch_fd >= 0 &&
				     dp_netdev_watch_poll(dev->watch_fd, dp_port_ifindex(dev->port));

			if (event || now - last_link >= DP_LINK_RECHECK_NS) {
				follow_link(dev);
				last_link = now;
			}
			publish_counters(dev);
			if (now - last_link < DP_HOUSEKEEPING_NS)
				dp_port_flush_capture(dev->port);
			last_house = now;
		}
		if (now - atomic_load_explicit(&dev->app_poll_ns, memory_order_relaxed) <
		    DP_APP_POLL_HOLD_NS && !dp_port_tx_held(dev->port)) {
			/* An application thread is polling: it drives the engine; stay out of its way. */
			idle = 0;
			sleep_ns(DP_APP_POLL_HOLD_NS / 4);
			continue;
		}
		if (rc_engine_progress(dev->eng, 0)) {
			idle = 0;
			sleep = DP_IDLE_SLEEP_MIN_NS;
			continue;
		}
		if (++idle < DP_SPIN_PASSES)
			continue;
		if (idle < DP_SPIN_PASSES + DP_YIELD_PASSES) {
			sched_yield();
			continue;
		}
		deadline = rc_engine_next_deadline(dev->eng);
		if (deadline != UINT64_MAX && deadline > now && deadline - now < sleep)
			sleep_ns(deadline - now);
		else if (deadline == UINT64_MAX || deadline > now)
			sleep_ns(sleep);
		if (sleep < DP_IDLE_SLEEP_MAX_NS)
			sleep *= 2;
	}
	if (registered)
		dp_eal_thread_unregister();
	return NULL;
}

unsigned dp_device_poll(struct dp_device *dev)
{
	atomic_store_explicit(&dev->app_poll_ns, mono_ns(), memory_order_relaxed);
	return rc_engine_progress(dev->eng, 0);
}

/* ---- Open and close ---- */

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
	pthread_mutex_init(&dev->qp_lock, NULL);
	ret = uroce_link_cfg_load(ibdev, &dev->cfg, err, errlen);
	if (ret)
		goto err_free;
	/*
	 * Processes on one netdev share QPNs, and reach each other's QPs
	 * through dp_loop; a link DPDK owns is its own space.
	 */
	key = dp_pmd_uses_netdev(dev->cfg.pmd) ? dev->cfg.netdev : dev->cfg.name;
	ret = dp_qpn_open(key, &dev->qpns, err, errlen);
	if (ret)
		goto err_free;
	ret = dp_loop_open(key, &dev->loop, err, errlen);
	if (ret)
		goto err_qpn;
	ret = dp_port_open(&dev->cfg, dev->qpns, &dev->port, err, errlen);
	if (ret)
		goto err_loop;
	dp_port_set_loop(dev->port, dev->loop);
	memset(&ecfg, 0, sizeof(ecfg));
	ecfg.port = dp_port_base(dev->port);
	ecfg.now_ns = engine_clock;
	ecfg.qpn_alloc = dp_qpn_alloc;
	ecfg.qpn_free = dp_qpn_free;
	ecfg.qpn_arg = dev->qpns;
	ecfg.cq_event = dev->args.cq_event;
	ecfg.async_event = dev->args.async_event;
	ecfg.event_arg = dev->args.event_arg;
	ecfg.frame_tap = dp_port_capture;
	ecfg.frame_tap_arg = dev->port;
	ecfg.local_forward = dp_port_forward;
	ecfg.local_forward_arg = dev->port;
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
		struct dp_link_info info;

		dp_port_link(dev->port, &info);
		dev->link_up = info.up;
	}
	name_counters(dev);
	/* Counters are a convenience: a run directory we cannot write costs only them. */
	dev->stats = dp_stats_create(ibdev, dev->cfg.netdev, uroce_pmd_name(dev->cfg.pmd),
				     dev->dev_names, rc_counter_names, stats_err,
				     sizeof(stats_err));
	dev->watch_fd = dp_pmd_uses_netdev(dev->cfg.pmd) ? dp_netdev_watch_open() : -1;
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
	dp_stats_destroy(dev->stats);
err_engine:
	rc_engine_destroy(dev->eng);
err_port:
	dp_port_close(dev->port);
err_loop:
	dp_loop_close(dev->loop);
err_qpn:
	dp_qpn_close(dev->qpns);
err_free:
	pthread_mutex_destroy(&dev->qp_lock);
	free(dev);
	return ret;
}

void dp_device_close(struct dp_device *dev)
{
	if (!dev)
		return;
	atomic_store(&dev->stop, true);
	pthread_join(dev->thread, NULL);
	/* What the last passes queued (an ACK of the last message) still leaves. */
	for (int pass = 0; pass < CLOSE_DRAIN_PASSES; pass++)
		if (!rc_engine_progress(dev->eng, 0) && pass)
			break;
	rc_engine_destroy(dev->eng);
	dp_port_close(dev->port);
	dp_loop_close(dev->loop);
	dp_qpn_close(dev->qpns);
	if (dev->watch_fd >= 0)
		close(dev->watch_fd);
	dp_stats_destroy(dev->stats);
	pthread_mutex_destroy(&dev->qp_lock);
	free(dev);
}

struct rc_engine *dp_device_engine(struct dp_device *dev)
{
	return dev->eng;
}

int dp_device_link(struct dp_device *dev, struct dp_link_info *info)
{
	dp_port_link(dev->port, info);
	return 0;
}
