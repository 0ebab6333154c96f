// SPDX-License-Identifier: MIT
/* The simulated link: a frame pool, arrivals in order per direction (heap for reordered ones), seeded faults. */
#include <errno.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>

#include "port_sim.h"
#include "uroce/wire.h"

#define DEFAULT_MTU	4200
#define DEFAULT_SLOTS	4096
#define L2_MAX		(sizeof(struct wire_eth_hdr) + sizeof(struct wire_vlan_hdr))
#define TX_CACHE	32	/* free slots an end takes under one lock */

struct flight {
	uint64_t	at;
	uint64_t	seq;		/* ties keep sending order */
	uint32_t	slot;
};

/* Ends and directions each on cache lines of their own: the two ends may run on two CPUs. */
struct sim_dir {
	alignas(64) struct port_sim_faults f;
	struct port_sim_stats	st;
	uint64_t		rng[4];	/* xoshiro256** */
	uint64_t		last_at;	/* jitter never reorders: a link is FIFO */
	unsigned		burst_left;	/* frames the current loss burst still takes */
	/*
	 * Frames in arrival order: the FIFO holds those sent in order (their
	 * arrival times never decrease), the heap reordered, duplicated and
	 * injected ones; the next arrival is the earlier of the two heads.
	 */
	struct flight		*fifo;
	uint32_t		fhead, ftail;	/* free-running, fifo has nslots entries */
	struct flight		*heap;
	uint32_t		n;
	/* Frames in the FIFO and heap: read without the lock by a receiver polling an idle link. */
	uint32_t		queued;
};

struct sim_end {
	alignas(64) struct port	port;
	struct port_sim	*sim;
	int		idx;
	int		resolve_result;
	/* Free slots taken in bulk, used by this end's thread only. */
	uint32_t	cache[TX_CACHE];
	uint32_t	n_cache, cache_max;
};

/* What the link knows of the frame in a slot. */
struct slot_info {
	uint32_t	len;
	uint32_t	ext_off, ext_len;
	const uint8_t	*ext;		/* zero-copy payload in the sender's memory, or NULL */
};

struct port_sim {
	alignas(64) pthread_mutex_t lock;	/* the two ends may run on two threads */
	struct port_sim_cfg cfg;
	struct sim_end	end[2];
	struct sim_dir	dir[2];		/* indexed by the sending end */
	uint8_t		*buf;
	struct slot_info *info;		/* per slot */
	uint32_t	slot_size, nslots;
	uint32_t	*free_stack;
	uint32_t	nfree;
	uint64_t	seq;
	port_sim_filter	filter;
	void		*filter_arg;
};

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t *s)
{
	uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

static double rng_unit(uint64_t *s)
{
	return (double)(rng_next(s) >> 11) * (1.0 / 9007199254740992.0);
}

static bool chance(struct sim_dir *d, double p)
{
	return p > 0 && rng_unit(d->rng) < p;
}

static void rng_seed(uint64_t *s, uint64_t seed)
{
	for (int i = 0; i < 4; i++) {
		uint64_t z = (seed += 0x9e3779b97f4a7c15ull);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
		s[i] = z ^ (z >> 31);
	}
}

static struct sim_end *end_of(struct port *p)
{
	return (struct sim_end *)(void *)((char *)p - offsetof(struct sim_end, port));
}

/* ---- Arrival heap ---- */

static bool before(const struct flight *a, const struct flight *b)
{
	return a->at < b->at || (a->at == b->at && a->seq < b->seq);
}

static void queued_add(struct sim_dir *d, int n)
{
	__atomic_store_n(&d->queued, d->queued + (uint32_t)n, __ATOMIC_RELAXED);
}

static void heap_push(struct sim_dir *d, struct flight f)
{
	uint32_t i = d->n++;

	queued_add(d, 1);
	while (i) {
		uint32_t p = (i - 1) / 2;

		if (!before(&f, &d->heap[p]))
			break;
		d->heap[i] = d->heap[p];
		i = p;
	}
	d->heap[i] = f;
}

static struct flight heap_pop(struct sim_dir *d)
{
	struct flight top = d->heap[0], last = d->heap[--d->n];
	uint32_t i = 0;

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= d->n)
			break;
		if (c + 1 < d->n && before(&d->heap[c + 1], &d->heap[c]))
			c++;
		if (!before(&d->heap[c], &last))
			break;
		d->heap[i] = d->heap[c];
		i = c;
	}
	if (d->n)
		d->heap[i] = last;
	return top;
}

static uint32_t fifo_len(const struct sim_dir *d)
{
	return d->ftail - d->fhead;
}

/* The next arrival without taking it; false when nothing is in flight. */
static bool next_flight(const struct port_sim *s, const struct sim_dir *d, struct flight *out)
{
	const struct flight *f = fifo_len(d) ? &d->fifo[d->fhead % s->nslots] : NULL;

	if (d->n && (!f || before(&d->heap[0], f)))
		f = &d->heap[0];
	if (!f)
		return false;
	*out = *f;
	return true;
}

static struct flight pop_flight(const struct port_sim *s, struct sim_dir *d)
{
	queued_add(d, -1);
	if (fifo_len(d) && (!d->n || before(&d->fifo[d->fhead % s->nslots], &d->heap[0])))
		return d->fifo[d->fhead++ % s->nslots];
	return heap_pop(d);
}

/* ---- Slots ---- */

static int slot_get(struct port_sim *s, uint32_t *slot)
{
	if (!s->nfree)
		return -ENOBUFS;
	*slot = s->free_stack[--s->nfree];
	return 0;
}

static void slot_put(struct port_sim *s, uint32_t slot)
{
	s->free_stack[s->nfree++] = slot;
}

static uint8_t *slot_data(struct port_sim *s, uint32_t slot)
{
	return s->buf + (size_t)slot * s->slot_size;
}

/* ---- Port operations ---- */

static unsigned sim_rx_burst(struct port *p, struct port_frame *f, unsigned max)
{
	struct sim_end *e = end_of(p);
	struct port_sim *s = e->sim;
	struct sim_dir *d = &s->dir[!e->idx];
	uint64_t now = 0;
	struct flight fl;
	unsigned n = 0;

	if (!__atomic_load_n(&d->queued, __ATOMIC_RELAXED))
		return 0;
	pthread_mutex_lock(&s->lock);
	while (n < max && next_flight(s, d, &fl)) {
		/* Frames sent with no delay arrive at 0: no clock needed for them. */
		if (fl.at > now)
			now = s->cfg.now_ns(s->cfg.clock_arg);
		if (fl.at > now)
			break;
		fl = pop_flight(s, d);

		f[n].data = slot_data(s, fl.slot);
		f[n].len = s->info[fl.slot].len;
		f[n].handle = (void *)(uintptr_t)fl.slot;
		f[n].ext = s->info[fl.slot].ext;
		f[n].ext_off = s->info[fl.slot].ext_off;
		f[n].ext_len = s->info[fl.slot].ext_len;
		d->st.by_reference += f[n].ext != NULL;
		d->st.delivered++;
		n++;
	}
	pthread_mutex_unlock(&s->lock);
	return n;
}

static void sim_rx_release(struct port *p, struct port_frame *f, unsigned n)
{
	struct port_sim *s = end_of(p)->sim;

	pthread_mutex_lock(&s->lock);
	for (unsigned i = 0; i < n; i++)
		slot_put(s, (uint32_t)(uintptr_t)f[i].handle);
	pthread_mutex_unlock(&s->lock);
}

/* Refill the end's slot cache: one lock for up to cache_max frames. */
static int cache_refill(struct sim_end *e)
{
	struct port_sim *s = e->sim;

	pthread_mutex_lock(&s->lock);
	while (e->n_cache < e->cache_max && s->nfree)
		e->cache[e->n_cache++] = s->free_stack[--s->nfree];
	if (!e->n_cache)
		s->dir[e->idx].st.no_buffer++;
	pthread_mutex_unlock(&s->lock);
	return e->n_cache ? 0 : -ENOBUFS;
}

static int sim_tx_alloc(struct port *p, struct port_frame *f, uint32_t len)
{
	struct sim_end *e = end_of(p);
	struct port_sim *s = e->sim;
	uint32_t slot;

	if (len > s->slot_size)
		return -EMSGSIZE;
	if (!e->n_cache && cache_refill(e))
		return -ENOBUFS;
	slot = e->cache[--e->n_cache];
	f->data = slot_data(s, slot);
	f->len = len;
	f->handle = (void *)(uintptr_t)slot;
	return 0;
}

static void sim_tx_abort(struct port *p, struct port_frame *f)
{
	struct sim_end *e = end_of(p);
	struct port_sim *s = e->sim;

	if (e->n_cache < e->cache_max) {
		e->cache[e->n_cache++] = (uint32_t)(uintptr_t)f->handle;
		return;
	}
	pthread_mutex_lock(&s->lock);
	slot_put(s, (uint32_t)(uintptr_t)f->handle);
	pthread_mutex_unlock(&s->lock);
}

/* Offset of the IP header, or 0 when the frame is not IP or its IP header is not whole. */
static uint32_t l3_offset(const uint8_t *f, uint32_t len)
{
	struct wire_frame_offsets o;

	wire_classify(f, len, &o);
	return o.l4_off ? o.l3_off : 0;
}

static void mark_ce(uint8_t *f, uint32_t len)
{
	uint32_t l3 = l3_offset(f, len);

	if (!l3)
		return;
	if (f[l3] >> 4 == 4) {
		struct wire_ipv4_hdr *ip = (struct wire_ipv4_hdr *)(f + l3);

		ip->tos |= WIRE_ECN_CE;
		memset(&ip->checksum, 0, sizeof(ip->checksum));
		wire_set16(&ip->checksum, wire_ipv4_csum(ip, (ip->version_ihl & 0xfu) * 4));
	} else {
		/* Traffic class straddles bytes 0 and 1; ECN is its low two bits. */
		f[l3 + 1] |= (uint8_t)(WIRE_ECN_CE << 4);
	}
}

static void corrupt(struct sim_dir *d, uint8_t *f, uint32_t len)
{
	uint32_t l3 = l3_offset(f, len);
	uint32_t start = l3 + (f[l3] >> 4 == 4 ? 20 : 40) + sizeof(struct wire_udp_hdr);

	if (!l3 || start >= len)
		return;
	f[start + rng_next(d->rng) % (len - start)] ^= (uint8_t)(1u << (rng_next(d->rng) & 7));
}

/* The referenced payload into its place in the slot: the frame is whole from here on. */
static void linearize(struct port_sim *s, struct sim_dir *d, uint32_t slot)
{
	struct slot_info *x = &s->info[slot];

	if (!x->ext)
		return;
	memcpy(slot_data(s, slot) + x->ext_off, x->ext, x->ext_len);
	x->ext = NULL;
	d->st.linearized++;
}

static void send_one(struct port_sim *s, int from, const struct port_frame *fr, uint64_t now)
{
	struct sim_dir *d = &s->dir[from];
	uint32_t slot = (uint32_t)(uintptr_t)fr->handle, len = fr->len;
	uint8_t *data = slot_data(s, slot);
	uint64_t at = now + d->f.delay_ns;
	uint32_t dup_slot;
	bool in_order = true;

	d->st.sent++;
	s->info[slot] = (struct slot_info){
		.len = len, .ext_off = fr->ext_off, .ext_len = fr->ext_len,
		.ext = s->cfg.zero_copy && fr->ext_len ? fr->ext : NULL,
	};
	if (s->filter) {
		linearize(s, d, slot);
		if (s->filter(s->filter_arg, from, data, len)) {
			d->st.filtered++;
			slot_put(s, slot);
			return;
		}
	}
	if (d->burst_left || chance(d, d->f.loss)) {
		if (d->burst_left)
			d->burst_left--;
		else if (d->f.burst > 1)
			d->burst_left = d->f.burst - 1;
		d->st.lost++;
		slot_put(s, slot);
		return;
	}
	if (d->f.jitter_ns)
		at += rng_next(d->rng) % (d->f.jitter_ns + 1);
	if (at < d->last_at)
		at = d->last_at;
	d->last_at = at;
	if (chance(d, d->f.reorder)) {
		/*
		 * Overtaken frames can arrive after their message completed
		 * through a retransmission, its buffer reused: by value.
		 */
		linearize(s, d, slot);
		d->st.reordered++;
		at += d->f.reorder_ns;
		in_order = false;
	}
	if (chance(d, d->f.dup) && !slot_get(s, &dup_slot)) {
		linearize(s, d, slot);
		d->st.duplicated++;
		memcpy(slot_data(s, dup_slot), data, len);
		s->info[dup_slot] = (struct slot_info){ .len = len };
		heap_push(d, (struct flight){ at + 1, s->seq++, dup_slot });
	}
	if (chance(d, d->f.corrupt)) {
		d->st.corrupted++;
		linearize(s, d, slot);
		corrupt(d, data, len);
	}
	if (chance(d, d->f.ce_mark)) {
		d->st.ce_marked++;
		linearize(s, d, slot);
		mark_ce(data, len);
	}
	if (in_order) {
		d->fifo[d->ftail++ % s->nslots] = (struct flight){ at, s->seq++, slot };
		queued_add(d, 1);
	} else
		heap_push(d, (struct flight){ at, s->seq++, slot });
}

static void sim_tx_burst(struct port *p, struct port_frame *f, unsigned n)
{
	struct sim_end *e = end_of(p);
	struct port_sim *s = e->sim;
	const struct port_sim_faults *faults = &s->dir[e->idx].f;
	uint64_t now = 0;

	pthread_mutex_lock(&s->lock);
	/* Without delay a frame can be delivered at once: it arrives at 0 (or at last_at). */
	if (faults->delay_ns || faults->jitter_ns || faults->reorder)
		now = s->cfg.now_ns(s->cfg.clock_arg);
	for (unsigned i = 0; i < n; i++)
		send_one(s, e->idx, &f[i], now);
	pthread_mutex_unlock(&s->lock);
}

static void sim_flush(struct port *p)
{
	(void)p;
}

static int sim_resolve(struct port *p, const uint8_t gid[16], uint8_t mac[6])
{
	struct sim_end *e = end_of(p);

	(void)gid;
	if (e->resolve_result)
		return e->resolve_result;
	memcpy(mac, e->sim->end[!e->idx].port.mac, 6);
	return 0;
}

static void sim_destroy(struct port *p)
{
	(void)p;	/* the link owns both ends: port_sim_destroy() */
}

static const struct port_ops sim_ops = {
	.rx_burst = sim_rx_burst,
	.rx_release = sim_rx_release,
	.tx_alloc = sim_tx_alloc,
	.tx_abort = sim_tx_abort,
	.tx_burst = sim_tx_burst,
	.flush = sim_flush,
	.resolve = sim_resolve,
	.destroy = sim_destroy,
};

/* ---- Link ---- */

struct port_sim *port_sim_create(const struct port_sim_cfg *cfg)
{
	pthread_mutexattr_t ma;
	struct port_sim *s;

	if (!cfg || !cfg->now_ns)
		return NULL;
	s = aligned_alloc(alignof(struct port_sim), sizeof(*s));
	if (!s)
		return NULL;
	memset(s, 0, sizeof(*s));
	s->cfg = *cfg;
	if (!s->cfg.mtu)
		s->cfg.mtu = DEFAULT_MTU;
	s->nslots = s->cfg.slots ? s->cfg.slots : DEFAULT_SLOTS;
	s->slot_size = (uint32_t)((s->cfg.mtu + L2_MAX + 63) & ~63u);
	s->buf = malloc((size_t)s->nslots * s->slot_size);
	s->info = calloc(s->nslots, sizeof(*s->info));
	s->free_stack = malloc(s->nslots * sizeof(*s->free_stack));
	s->dir[0].heap = malloc(s->nslots * sizeof(struct flight));
	s->dir[1].heap = malloc(s->nslots * sizeof(struct flight));
	s->dir[0].fifo = malloc(s->nslots * sizeof(struct flight));
	s->dir[1].fifo = malloc(s->nslots * sizeof(struct flight));
	if (!s->buf || !s->info || !s->free_stack || !s->dir[0].heap || !s->dir[1].heap ||
	    !s->dir[0].fifo || !s->dir[1].fifo) {
		port_sim_destroy(s);
		return NULL;
	}
	for (uint32_t i = 0; i < s->nslots; i++)
		s->free_stack[i] = s->nslots - 1 - i;
	s->nfree = s->nslots;
	pthread_mutexattr_init(&ma);
	/* Held for a few frames at a time: spin a little before sleeping. */
	pthread_mutexattr_settype(&ma, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&s->lock, &ma);
	pthread_mutexattr_destroy(&ma);
	for (int i = 0; i < 2; i++) {
		struct sim_end *e = &s->end[i];
		static const char *const names[2] = { "sim:0", "sim:1" };

		e->sim = s;
		e->idx = i;
		e->port.ops = &sim_ops;
		e->port.mac[0] = 0x02;
		e->port.mac[5] = (uint8_t)(i + 1);
		e->port.mtu = s->cfg.mtu;
		e->port.name = names[i];
		e->port.tx_ext = s->cfg.zero_copy;
		/* A small link keeps most of its slots in the shared pool. */
		e->cache_max = s->nslots / 16 < TX_CACHE ? s->nslots / 16 : TX_CACHE;
		if (!e->cache_max)
			e->cache_max = 1;
		rng_seed(s->dir[i].rng, s->cfg.seed * 2 + (uint64_t)i + 1);
	}
	return s;
}

void port_sim_destroy(struct port_sim *s)
{
	if (!s)
		return;
	if (s->free_stack)
		pthread_mutex_destroy(&s->lock);
	free(s->dir[0].heap);
	free(s->dir[1].heap);
	free(s->dir[0].fifo);
	free(s->dir[1].fifo);
	free(s->free_stack);
	free(s->info);
	free(s->buf);
	free(s);
}

struct port *port_sim_port(struct port_sim *s, int end)
{
	return &s->end[end ? 1 : 0].port;
}

void port_sim_set_faults(struct port_sim *s, int from_end, const struct port_sim_faults *f)
{
	pthread_mutex_lock(&s->lock);
	s->dir[from_end ? 1 : 0].f = *f;
	pthread_mutex_unlock(&s->lock);
}

void port_sim_set_filter(struct port_sim *s, port_sim_filter filter, void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->filter = filter;
	s->filter_arg = arg;
	pthread_mutex_unlock(&s->lock);
}

void port_sim_set_resolve(struct port_sim *s, int end, int result)
{
	s->end[end ? 1 : 0].resolve_result = result;
}

int port_sim_inject(struct port_sim *s, int to_end, const void *frame, uint32_t len)
{
	struct sim_dir *d = &s->dir[to_end ? 0 : 1];
	uint32_t slot;
	int ret;

	if (len > s->slot_size)
		return -EMSGSIZE;
	pthread_mutex_lock(&s->lock);
	ret = slot_get(s, &slot);
	if (!ret) {
		memcpy(slot_data(s, slot), frame, len);
		s->info[slot] = (struct slot_info){ .len = len };
		heap_push(d, (struct flight){ s->cfg.now_ns(s->cfg.clock_arg), s->seq++, slot });
	}
	pthread_mutex_unlock(&s->lock);
	return ret;
}

uint64_t port_sim_next_arrival(struct port_sim *s)
{
	uint64_t t = UINT64_MAX;
	struct flight f;

	pthread_mutex_lock(&s->lock);

	for (int i = 0; i < 2; i++)
		if (next_flight(s, &s->dir[i], &f) && f.at < t)
			t = f.at;
	pthread_mutex_unlock(&s->lock);
	return t;
}

void port_sim_get_stats(struct port_sim *s, int from_end, struct port_sim_stats *st)
{
	pthread_mutex_lock(&s->lock);
	*st = s->dir[from_end ? 1 : 0].st;
	pthread_mutex_unlock(&s->lock);
}
