// SPDX-License-Identifier: MIT
/* The engine: lifetime, GID table, counters, receive dispatch, transmit batching, same-host path, timers. */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <sys/random.h>

#include "rc_internal.h"

const char *const rc_counter_names[] = {
#define RC_COUNTER_NAME(n) #n,
	RC_COUNTERS(RC_COUNTER_NAME)
	RC_QP_GAUGES(RC_COUNTER_NAME)
#undef RC_COUNTER_NAME
	NULL
};

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
	eng->next_deadline = UINT64_MAX;
	rc_list_init(&eng->pds);
	rc_list_init(&eng->mrs);
	rc_list_init(&eng->mws);
	rc_list_init(&eng->cqs);
	rc_list_init(&eng->srqs);
	rc_list_init(&eng->ahs);
	rc_list_init(&eng->qp_list);
	rc_list_init(&eng->work);
	rc_list_init(&eng->timers);
	return eng;
}

void rc_engine_destroy(struct rc_engine *eng)
{
	if (!eng)
		return;
	pthread_mutex_lock(&eng->lock);
	if (eng->ntx)
		eng->port->ops->tx_burst(eng->port, eng->txq, eng->ntx);
	eng->ntx = 0;
	rc_qp_free_all(eng);
	rc_srq_free_all(eng);
	rc_cq_free_all(eng);
	rc_ah_free_all(eng);
	rc_mw_free_all(eng);
	rc_mr_free_all(eng);
	rc_pd_free_all(eng);
	rc_hash_free(&eng->qps);
	free(eng->self_ring);
	pthread_mutex_unlock(&eng->lock);
	pthread_mutex_destroy(&eng->lock);
	free(eng);
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
	}
	pthread_mutex_unlock(&eng->lock);
}

int rc_qp_counters(struct rc_qp *qp, struct rc_counters *out)
{
	pthread_mutex_lock(&qp->eng->lock);
	*out = qp->cnt;
	rc_rto_gauges(qp, out);
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

/* ---- Transmit ---- */

static int self_ring_alloc(struct rc_engine *eng)
{
	if (!eng->self_ring)
		eng->self_ring = malloc(sizeof(*eng->self_ring) * RC_SELF_SLOTS);
	return eng->self_ring ? 0 : -ENOMEM;
}

uint8_t *rc_tx_alloc(struct rc_engine *eng, bool local, uint32_t len, struct port_frame *f)
{
	if (local) {
		struct rc_self_slot *s;

		if (unlikely(len > RC_FRAME_MAX || self_ring_alloc(eng) ||
			     eng->self_tail - eng->self_head >= RC_SELF_SLOTS))
			return NULL;
		s = &eng->self_ring[eng->self_tail % RC_SELF_SLOTS];
		f->data = s->data;
		f->len = len;
		f->handle = s;
		f->ext = NULL;
		return f->data;
	}
	if (unlikely(eng->port->ops->tx_alloc(eng->port, f, len)))
		return NULL;
	f->ext = NULL;
	return f->data;
}

static void tx_flush_batch(struct rc_engine *eng)
{
	if (eng->ntx) {
		eng->port->ops->tx_burst(eng->port, eng->txq, eng->ntx);
		eng->ntx = 0;
	}
}

void rc_tx_commit(struct rc_engine *eng, bool local, struct port_frame *f)
{
	eng->tx_sent++;
	if (local) {
		struct rc_self_slot *s = f->handle;

		s->len = f->len;
		eng->self_tail++;
		if (eng->cfg.frame_tap)
			eng->cfg.frame_tap(eng->cfg.frame_tap_arg, s->data, s->len);
		return;
	}
	/*
	 * Field by field: f->len was just stored, and one 16-byte load over it
	 * would wait for the store instead of taking it from the store buffer.
	 */
	eng->txq[eng->ntx].data = f->data;
	eng->txq[eng->ntx].len = f->len;
	eng->txq[eng->ntx].handle = f->handle;
	eng->txq[eng->ntx].ext = f->ext;
	eng->txq[eng->ntx].ext_off = f->ext_off;
	eng->txq[eng->ntx].ext_len = f->ext_len;
	eng->ntx++;
	if (eng->ntx == RC_BURST)
		tx_flush_batch(eng);
}

bool rc_tx_can_ref(const struct rc_engine *eng, bool local, const struct wire_build_desc *d,
		   uint32_t payload_len)
{
	return eng->port->tx_ext && !local && d->ip_version == 4 && payload_len >= RC_TX_REF_MIN;
}

/**
 * rc_tx_packet() - build and queue one packet.
 * @qp: counted against this QP (may be NULL for engine-level packets).
 * @local: deliver to this engine instead of the port.
 * @fill: writes the payload straight into the frame (one copy); may fail
 *	(a key went away), then nothing is sent and its error is returned.
 * @ref: instead of @fill, the payload in registered memory that stays put
 *	until the peer has it (see rc_tx_can_ref()): the frame refers to it.
 *
 * Over IPv4 the ICRC is computed while the payload is copied in; IPv6 also
 * needs the UDP checksum, so wire_seal() makes a pass of its own there.
 * Return: 0, -ENOBUFS when no frame buffer is free, or the error of @fill.
 */
int rc_tx_packet(struct rc_engine *eng, struct rc_qp *qp, bool local,
		 const struct wire_build_desc *d, uint32_t payload_len, rc_fill_fn fill, void *arg,
		 const uint8_t *ref)
{
	static const uint8_t zeros[4];
	struct rc_counters *cnt = qp ? &qp->cnt : &eng->cnt;
	uint32_t flen = wire_frame_len(d, payload_len), hdr, pad, crc = 0;
	uint32_t l3 = sizeof(struct wire_eth_hdr) + (d->has_vlan ? sizeof(struct wire_vlan_hdr) : 0);
	bool v4 = d->ip_version == 4;
	struct port_frame f;
	uint8_t *data;
	int ret;

	data = rc_tx_alloc(eng, local, flen, &f);
	if (unlikely(!data)) {
		cnt->tx_no_buffer++;
		return -ENOBUFS;
	}
	if (ref) {
		/*
		 * Headers built and summed where they are hot, then stored: the
		 * frame's lines may still sit in the receiving CPU's cache, and
		 * loads of stores to them would wait for those lines.
		 */
		alignas(64) uint8_t h[RC_HDR_MAX];

		hdr = wire_build_headers(h, d, payload_len);
		crc = wire_icrc_split(h, l3, hdr, ref, payload_len);
		memcpy(data, h, hdr);
		f.ext = ref;
		f.ext_off = hdr;
		f.ext_len = payload_len;
	} else {
		hdr = wire_build_headers(data, d, payload_len);
		if (v4)
			crc = wire_icrc(data, l3, hdr);
		ret = payload_len ? fill(arg, data + hdr, payload_len, v4 ? &crc : NULL) : 0;
		if (unlikely(ret)) {
			if (!local)
				eng->port->ops->tx_abort(eng->port, &f);
			return ret;
		}
	}
	if (v4) {
		pad = -payload_len & 3;
		memset(data + hdr + payload_len, 0, pad);
		crc = wire_crc32(crc, zeros, pad);
		wire_icrc_store(data + hdr + payload_len + pad, crc);
		f.len = hdr + payload_len + pad + WIRE_ICRC_LEN;
	} else {
		f.len = wire_seal(data, hdr, payload_len);
	}
	cnt->tx_packets++;
	cnt->tx_bytes += f.len;
	rc_tx_commit(eng, local, &f);
	return 0;
}

/* ---- Receive ---- */

static bool type_matches(const struct rc_qp *qp, wire_op_flags fl)
{
	switch (qp->type) {
	case IBV_QPT_RC:
		return fl & WIRE_OPF_RC;
	case IBV_QPT_UC:
		return fl & WIRE_OPF_UC;
	case IBV_QPT_UD:
		return fl & WIRE_OPF_UD;
	default:
		return false;
	}
}

bool rc_icrc_ok(struct rc_engine *eng, const struct wire_pkt *pkt)
{
	if (wire_pkt_icrc(pkt) == pkt->icrc)
		return true;
	eng->cnt.drops.count[WIRE_DROP_BAD_ICRC]++;
	return false;
}

/*
 * A write's middle packet at the expected PSN goes into memory its message
 * already owns (the range its first packet was checked for): its ICRC is
 * computed while the payload is copied there, one pass over the bytes
 * instead of two.  Should it not match, the packet is dropped like any
 * other, and the bytes are written again by the retransmission before the
 * message can complete (the last byte is never placed unchecked).  Every
 * other packet is checked before anything acts on it.
 */
static bool icrc_in_copy(const struct rc_qp *qp, const struct wire_pkt *pkt)
{
	return pkt->opcode == (WIRE_OPC_RC | WIRE_OP_WRITE_MIDDLE) && qp->type == IBV_QPT_RC &&
	       pkt->psn == qp->resp.epsn && !qp->resp.nak_sent &&
	       pkt->payload_len >= RC_ICRC_IN_COPY_MIN;
}

/* @ext: the frame's zero-copy payload (port_frame.ext), NULL when contiguous. */
static void rx_frame(struct rc_engine *eng, const uint8_t *data, uint32_t len,
		     const struct port_frame *ext, bool local)
{
	struct wire_pkt pkt;
	enum wire_drop r;
	struct rc_qp *qp;
	bool unchecked;

	/* Frames this engine built itself cannot be corrupted on the way. */
	r = wire_parse(data, len, WIRE_PARSE_SKIP_ICRC, &pkt);
	if (ext && !r) {
		/* The port said where the payload is: it must be where the headers put it. */
		if (unlikely(pkt.payload_off != ext->ext_off || pkt.payload_len != ext->ext_len))
			r = WIRE_DROP_BAD_PAYLOAD_LEN;
		else
			pkt.payload = ext->ext;
	}
	if (unlikely(r)) {
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		eng->cnt.drops.count[r]++;
		return;
	}
	qp = rc_hash_get(&eng->qps, pkt.dest_qp);
	unchecked = !local && qp && icrc_in_copy(qp, &pkt);
	if (!local && !unchecked && !rc_icrc_ok(eng, &pkt)) {
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		return;
	}
	if (unlikely(!qp)) {
		/* Same host, another engine's QP: it is received there, not here. */
		if (local && eng->cfg.local_forward &&
		    eng->cfg.local_forward(eng->cfg.local_forward_arg, pkt.dest_qp, data, len) == 0)
			return;
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		eng->cnt.unknown_qp++;
		return;
	}
	qp->cnt.rx_packets++;
	qp->cnt.rx_bytes += len;
	/* Addressed to us, and for a connected QP sent by its peer. */
	if (unlikely((eng->n_gids && !rc_gid_is_local(eng, pkt.dst_gid)) ||
		     (qp->type != IBV_QPT_UD && memcmp(pkt.src_gid, qp->path.dgid, 16)))) {
		if (!unchecked || rc_icrc_ok(eng, &pkt))
			qp->cnt.bad_addr++;
		return;
	}
	if (unlikely(pkt.op->flags & WIRE_OPF_CNP)) {
		/* Annex A17.9: the requester counts it; rate control is not done here. */
		qp->cnt.cnps_rx++;
		return;
	}
	if (unlikely(!type_matches(qp, pkt.op->flags))) {
		qp->cnt.unknown_qp++;
		return;
	}
	if (pkt.op->flags & WIRE_OPF_REQUEST) {
		if (unlikely((pkt.tclass & WIRE_ECN_MASK) == WIRE_ECN_CE) &&
		    (!unchecked || rc_icrc_ok(eng, &pkt))) {
			unchecked = false;
			rc_resp_ecn(qp, &pkt);
		}
		rc_resp_rx(qp, &pkt, unchecked);
		eng->pass_rx_request = true;
	} else {
		rc_comp_rx(qp, &pkt);
		if (pkt.opcode == (WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE) && qp->sq_head == qp->sq_tail)
			eng->pass_ack_drained = true;
	}
}

static unsigned self_ring_rx(struct rc_engine *eng, unsigned budget)
{
	uint32_t end = eng->self_tail;
	unsigned n = 0;

	while (eng->self_head != end && n < budget) {
		struct rc_self_slot *s = &eng->self_ring[eng->self_head % RC_SELF_SLOTS];

		rx_frame(eng, s->data, s->len, NULL, true);
		eng->self_head++;
		n++;
	}
	return n;
}

static unsigned port_rx(struct rc_engine *eng, unsigned budget)
{
	struct port_frame f[RC_BURST];
	unsigned total = 0;

	while (total < budget) {
		unsigned want = budget - total < RC_BURST ? budget - total : RC_BURST;
		unsigned n = eng->port->ops->rx_burst(eng->port, f, want);

		if (n == 0)
			break;
		for (unsigned i = 0; i < n; i++) {
			/* The next frame's headers and trailer load while this one is handled. */
			if (i + 1 < n) {
				__builtin_prefetch(f[i + 1].data);
				__builtin_prefetch(f[i + 1].data + 64);
				/* Pad and ICRC: past the payload, on a line of their own. */
				__builtin_prefetch(f[i + 1].data + f[i + 1].len - WIRE_ICRC_LEN);
			}
			rx_frame(eng, f[i].data, f[i].len,
				 eng->port->tx_ext && f[i].ext ? &f[i] : NULL, false);
		}
		eng->port->ops->rx_release(eng->port, f, n);
		total += n;
		if (n < want)
			break;
	}
	return total;
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

static unsigned run_timers(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;
	uint64_t now = eng->now, next = UINT64_MAX;
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
		if (qp->rnr_deadline && qp->rnr_deadline < next)
			next = qp->rnr_deadline;
		if (qp->retx_deadline && qp->retx_deadline < next)
			next = qp->retx_deadline;
		if (!qp->rnr_deadline && !qp->retx_deadline) {
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
		ret = rc_resp_tx(qp, RC_QP_QUOTA, &more);
		if (ret >= 0)
			ret = rc_req_tx(qp, RC_QP_QUOTA, &more);
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
	eng->pass_ack_drained = eng->pass_rx_request = false;
	if (!budget)
		budget = RC_BURST;
	rx = eng->self_ring ? self_ring_rx(eng, budget) : 0;
	rx += port_rx(eng, budget);
	fired = run_timers(eng);
	service(eng);
	tx_flush_batch(eng);
	eng->port->ops->flush(eng->port);
	rx += eng->tx_sent + fired;
	atomic_store_explicit(&eng->deadline_hint, eng->next_deadline, memory_order_relaxed);
	atomic_store_explicit(&eng->ack_drained, eng->pass_ack_drained && !eng->pass_rx_request,
			      memory_order_relaxed);
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
		struct rc_qp *qp = container_of(pos, struct rc_qp, timer_link);

		if (qp->rnr_deadline && qp->rnr_deadline < next)
			next = qp->rnr_deadline;
		if (qp->retx_deadline && qp->retx_deadline < next)
			next = qp->retx_deadline;
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

uint64_t rc_engine_deadline_hint(struct rc_engine *eng)
{
	return atomic_load_explicit(&eng->deadline_hint, memory_order_relaxed);
}

bool rc_engine_idle(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;
	bool idle;

	pthread_mutex_lock(&eng->lock);
	idle = rc_list_empty(&eng->work) && rc_list_empty(&eng->timers) &&
	       eng->self_head == eng->self_tail;
	if (idle) {
		rc_list_for_each_safe(pos, tmp, &eng->qp_list) {
			struct rc_qp *qp = container_of(pos, struct rc_qp, link);

			if (qp->sq_head != qp->sq_tail && rc_qp_may_send(qp)) {
				idle = false;
				break;
			}
		}
	}
	pthread_mutex_unlock(&eng->lock);
	return idle;
}
