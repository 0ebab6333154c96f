// SPDX-License-Identifier: MIT
/* The engine: lifetime, GID table, counters and drop reasons, progress, timers. */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/random.h>

#include "rc_internal.h"

const char *const rc_counter_names[] = {
#define RC_COUNTER_NAME(n) #n,
	RC_COUNTERS(RC_COUNTER_NAME)
	RC_QP_GAUGES(RC_COUNTER_NAME)
#undef RC_COUNTER_NAME
	NULL
};

/* In enum order: the enum is made from the same list. */
static const struct wire_drop_info drop_info[RC_DROP_COUNT] = {
	RC_DROP_REASONS(WIRE_DROP_INFO)
};

const struct wire_drop_info *rc_drop_info(enum rc_drop reason)
{
	return wire_drop_info_at(drop_info, RC_DROP_COUNT, reason);
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int seed_keys(struct rc_engine *eng, uint64_t seed)
{
	uint64_t r[3];

	if (seed) {
		r[0] = splitmix64(&seed);
		r[1] = splitmix64(&seed);
		r[2] = splitmix64(&seed);
	} else if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
		return -EIO;
	}
	eng->sip_k0 = r[0];
	eng->sip_k1 = r[1];
	eng->key_ctr = r[2];
	return 0;
}

/* Largest PMTU (256..4096) whose worst-case frame fits the port's IP MTU. */
static uint32_t pmtu_for_port(uint32_t ip_mtu)
{
	uint32_t m = RC_MAX_PMTU;

	while (m > 256 && m + RC_L3_OVERHEAD > ip_mtu)
		m >>= 1;
	return m;
}

struct rc_engine *rc_engine_create(const struct rc_engine_cfg *cfg)
{
	struct rc_engine *eng;
	int ret;

	if (!cfg || !cfg->port || !cfg->port->ops || !cfg->now_ns) {
		errno = EINVAL;
		return NULL;
	}
	eng = calloc(1, sizeof(*eng));
	if (!eng) {
		errno = ENOMEM;
		return NULL;
	}
	ret = seed_keys(eng, cfg->seed);
	if (ret) {
		free(eng);
		errno = -ret;
		return NULL;
	}
	pthread_mutex_init(&eng->lock, NULL);
	atomic_flag_clear(&eng->progressing);
	atomic_init(&eng->pass_wanted, false);
	atomic_init(&eng->deadline_hint, UINT64_MAX);
	atomic_init(&eng->ack_drained, false);
	eng->cfg = *cfg;
	eng->port = cfg->port;
	eng->port_pmtu = pmtu_for_port(cfg->port->mtu);
	eng->next_qpn = RC_DEFAULT_QPN;
	eng->next_srqn = 1;
	eng->next_deadline = UINT64_MAX;
	rc_list_init(&eng->pds);
	rc_list_init(&eng->mrs);
	rc_list_init(&eng->mws);
	rc_list_init(&eng->cqs);
	rc_list_init(&eng->srqs);
	rc_list_init(&eng->ahs);
	rc_list_init(&eng->qp_list);
	rc_list_init(&eng->xrcds);
	rc_list_init(&eng->flows);
	rc_list_init(&eng->sniffers);
	rc_list_init(&eng->work);
	rc_list_init(&eng->timers);
	rc_list_init(&eng->budget_wait);
	return eng;
}

void rc_engine_destroy(struct rc_engine *eng)
{
	if (!eng)
		return;
	pthread_mutex_lock(&eng->lock);
	rc_tx_flush(eng);
	rc_flow_free_all(eng);
	rc_qp_free_all(eng);
	rc_srq_free_all(eng);
	rc_xrcd_free_all(eng);
	rc_cq_free_all(eng);
	rc_ah_free_all(eng);
	rc_mw_free_all(eng);
	rc_mr_free_all(eng);
	rc_pd_free_all(eng);
	rc_hash_free(&eng->qps);
	if (eng->self_ring)
		munmap(eng->self_ring, RC_SELF_RING_BYTES);
	pthread_mutex_unlock(&eng->lock);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
}

void rc_engine_objects(struct rc_engine *eng, struct rc_objects *out)
{
	pthread_mutex_lock(&eng->lock);
	*out = (struct rc_objects){
		.pd = eng->n_pd, .mr = eng->n_mr, .mw = eng->n_mw, .cq = eng->n_cq,
		.srq = eng->n_srq, .ah = eng->n_ah, .qp = eng->n_qp,
		.xrcd = eng->n_xrcd, .flow = eng->n_flow,
		.qp_bytes = eng->qp_bytes, .inflight = eng->inflight,
	};
	pthread_mutex_unlock(&eng->lock);
}

int rc_engine_set_gid(struct rc_engine *eng, unsigned index, const struct wire_gid_entry *e)
{
	if (index >= WIRE_GID_TABLE_LEN || !e)
		return -EINVAL;
	pthread_mutex_lock(&eng->lock);
	if (eng->gid[index].valid)
		eng->n_gids--;
	eng->gid[index] = *e;
	if (e->valid)
		eng->n_gids++;
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

int rc_engine_get_gid(struct rc_engine *eng, unsigned index, struct wire_gid_entry *e)
{
	if (index >= WIRE_GID_TABLE_LEN || !e)
		return -EINVAL;
	pthread_mutex_lock(&eng->lock);
	*e = eng->gid[index];
	pthread_mutex_unlock(&eng->lock);
	return 0;
}

/* ---- Counters ---- */

static void counters_add(struct rc_counters *to, const struct rc_counters *from)
{
#define RC_COUNTER_ADD(n) to->n += from->n;
	RC_COUNTERS(RC_COUNTER_ADD)
#undef RC_COUNTER_ADD
	for (unsigned i = 0; i < WIRE_DROP_COUNT; i++)
		to->drops.count[i] += from->drops.count[i];
	for (unsigned i = 0; i < RC_DROP_COUNT; i++)
		to->rc_drops.count[i] += from->rc_drops.count[i];
}

void rc_engine_counters(struct rc_engine *eng, struct rc_counters *out)
{
	struct rc_list *pos, *tmp;

	pthread_mutex_lock(&eng->lock);
	*out = eng->cnt;
	rc_list_for_each_safe(pos, tmp, &eng->qp_list) {
		struct rc_qp *qp = container_of(pos, struct rc_qp, link);

		counters_add(out, &qp->cnt);
		rc_rto_gauges(qp, out);
		rc_dcqcn_gauges(qp, out);
	}
	pthread_mutex_unlock(&eng->lock);
}

int rc_qp_counters(struct rc_qp *qp, struct rc_counters *out)
{
	pthread_mutex_lock(&qp->eng->lock);
	*out = qp->cnt;
	rc_rto_gauges(qp, out);
	rc_dcqcn_gauges(qp, out);
	pthread_mutex_unlock(&qp->eng->lock);
	return 0;
}

/* A destroyed QP's counts stay in the engine's totals. */
void rc_engine_retire_counters(struct rc_engine *eng, const struct rc_counters *c)
{
	counters_add(&eng->cnt, c);
}

void rc_async(struct rc_engine *eng, enum ibv_event_type type, void *user)
{
	if (eng->cfg.async_event)
		eng->cfg.async_event(eng->cfg.event_arg, type, user);
}

/* ---- Scheduling ---- */

void rc_qp_kick(struct rc_qp *qp)
{
	if (!qp->on_work) {
		qp->on_work = true;
		rc_list_add_tail(&qp->eng->work, &qp->work_link);
	}
}

void rc_timer_arm(struct rc_qp *qp, uint64_t *deadline, uint64_t when)
{
	struct rc_engine *eng = qp->eng;

	*deadline = when ? when : 1;
	if (!qp->on_timer) {
		qp->on_timer = true;
		rc_list_add_tail(&eng->timers, &qp->timer_link);
	}
	if (*deadline < eng->next_deadline)
		eng->next_deadline = *deadline;
}

/* The earliest of @qp's armed timers, UINT64_MAX when none is. */
static uint64_t qp_deadline(const struct rc_qp *qp)
{
	uint64_t next = UINT64_MAX;

	for (const uint64_t *d = (const uint64_t[]){ qp->rnr_deadline, qp->retx_deadline,
						     qp->pace_deadline }, *end = d + 3; d != end; d++)
		if (*d && *d < next)
			next = *d;
	return next;
}

static unsigned run_timers(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;
	uint64_t now = eng->now, next = UINT64_MAX, qp_next;
	unsigned fired = 0;

	if (now < eng->next_deadline)
		return 0;
	eng->next_deadline = UINT64_MAX;
	rc_list_for_each_safe(pos, tmp, &eng->timers) {
		struct rc_qp *qp = container_of(pos, struct rc_qp, timer_link);

		if (qp->rnr_deadline && qp->rnr_deadline <= now) {
			qp->rnr_deadline = 0;
			rc_req_rnr_expired(qp);
			fired++;
		}
		if (qp->retx_deadline && qp->retx_deadline <= now) {
			qp->retx_deadline = 0;
			rc_req_timeout(qp);
			fired++;
		}
		if (qp->pace_deadline && qp->pace_deadline <= now) {
			qp->pace_deadline = 0;
			rc_dcqcn_timer(qp);
			fired++;
		}
		qp_next = qp_deadline(qp);
		if (qp_next < next)
			next = qp_next;
		if (qp_next == UINT64_MAX) {
			rc_list_del(&qp->timer_link);
			qp->on_timer = false;
		}
	}
	if (next < eng->next_deadline)
		eng->next_deadline = next;
	return fired;
}

/* Round-robin over QPs with work: responses first, then new requests. */
static void service(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp, todo;

	rc_budget_wake(eng);
	if (rc_list_empty(&eng->work))
		return;
	/* Take the list, so QPs kicked while serving wait for the next pass. */
	todo = eng->work;
	todo.next->prev = &todo;
	todo.prev->next = &todo;
	rc_list_init(&eng->work);

	rc_list_for_each_safe(pos, tmp, &todo) {
		struct rc_qp *qp = container_of(pos, struct rc_qp, work_link);
		bool more = false;
		int ret;

		rc_list_del(&qp->work_link);
		qp->on_work = false;
		if (eng->tx_sent >= RC_TX_BUDGET) {
			rc_qp_kick(qp);
			continue;
		}
		if (qp->type == IBV_QPT_RAW_PACKET) {
			ret = rc_raw_tx(qp, RC_QP_QUOTA, &more);
		} else {
			ret = rc_resp_tx(qp, RC_QP_QUOTA, &more);
			if (ret >= 0)
				ret = rc_req_tx(qp, RC_QP_QUOTA, &more);
		}
		if (ret == -ENOBUFS || more)
			rc_qp_kick(qp);
	}
}

static unsigned engine_pass(struct rc_engine *eng, unsigned budget)
{
	unsigned rx, fired;

	pthread_mutex_lock(&eng->lock);
	atomic_store_explicit(&eng->pass_wanted, false, memory_order_relaxed);
	eng->now = eng->cfg.now_ns(eng->cfg.clock_arg);
	eng->tx_sent = 0;
	eng->pass_ack_drained = eng->pass_rx_request = eng->pass_recv_posted = false;
	if (!budget)
		budget = RC_BURST;
	rx = rc_rx_poll(eng, budget);
	fired = run_timers(eng);
	service(eng);
	rc_tx_flush(eng);
	eng->port->ops->flush(eng->port);
	rx += eng->tx_sent + fired;
	atomic_store_explicit(&eng->deadline_hint, eng->next_deadline, memory_order_relaxed);
	atomic_store_explicit(&eng->ack_drained, eng->pass_ack_drained && !eng->pass_rx_request,
			      memory_order_relaxed);
	atomic_store_explicit(&eng->recv_posted, eng->pass_recv_posted, memory_order_relaxed);
	atomic_store_explicit(&eng->mid_message, eng->rx_mid_message, memory_order_relaxed);
	pthread_mutex_unlock(&eng->lock);
	return rx;
}

/*
 * One thread progresses at a time; the others return at once instead of
 * queueing on the lock.  A thread that posted work while the pass was
 * running (rc_post_send() sets pass_wanted) is not left waiting for the next
 * caller: the running thread makes another pass.  The flag is cleared and
 * pass_wanted read with sequential consistency, so a poster that found the
 * engine busy and the running thread cannot both miss each other.
 */
unsigned rc_engine_progress(struct rc_engine *eng, unsigned budget)
{
	unsigned done = 0;

	do {
		if (atomic_flag_test_and_set(&eng->progressing))
			break;
		done += engine_pass(eng, budget);
		atomic_flag_clear(&eng->progressing);
	} while (atomic_load(&eng->pass_wanted));
	return done;
}

uint64_t rc_engine_next_deadline(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;
	uint64_t next = UINT64_MAX;

	pthread_mutex_lock(&eng->lock);
	rc_list_for_each_safe(pos, tmp, &eng->timers) {
		uint64_t qp_next = qp_deadline(container_of(pos, struct rc_qp, timer_link));

		if (qp_next < next)
			next = qp_next;
	}
	/* Exact now: forget timers disarmed since they were armed. */
	eng->next_deadline = next;
	atomic_store_explicit(&eng->deadline_hint, next, memory_order_relaxed);
	pthread_mutex_unlock(&eng->lock);
	return next;
}

bool rc_engine_ack_drained(struct rc_engine *eng)
{
	return atomic_load_explicit(&eng->ack_drained, memory_order_relaxed);
}

bool rc_engine_recv_posted(struct rc_engine *eng)
{
	return atomic_load_explicit(&eng->recv_posted, memory_order_relaxed);
}

bool rc_engine_mid_message(struct rc_engine *eng)
{
	return atomic_load_explicit(&eng->mid_message, memory_order_relaxed);
}

uint64_t rc_engine_deadline_hint(struct rc_engine *eng)
{
	return atomic_load_explicit(&eng->deadline_hint, memory_order_relaxed);
}
