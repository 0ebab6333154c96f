// SPDX-License-Identifier: MIT
/* The DPDK port: bursts of 32 on one ethdev queue, a classifier, neighbours, counters, pcap. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mbuf_pool_ops.h>
#include <rte_mempool.h>

#include "uroce/wire.h"
#include "host_bpf.h"
#include "dp_eal.h"
#include "host_ring.h"
#include "host_netdev.h"
#include "host_capture.h"
#include "dp_port.h"
#include "dp_port_plan.h"
#include "host_qpn.h"

const char *const dp_port_counter_names[] = {
#define DP_PORT_NAME(n) #n,
#define DP_DROP_NAME(n, d) #n,
	DP_PORT_COUNTERS(DP_PORT_NAME)
	DP_DROP_REASONS(DP_DROP_NAME)
	DP_PORT_BURSTS(DP_PORT_NAME)
#undef DP_DROP_NAME
#undef DP_PORT_NAME
	NULL
};
_Static_assert(sizeof(struct dp_port_counters) ==
	       (sizeof(dp_port_counter_names) / sizeof(dp_port_counter_names[0]) - 1) *
	       sizeof(uint64_t), "a name for every counter");

static const char *const drop_descs[DP_DROP_COUNT] = {
#define DP_DROP_DESC(n, d) [DP_DROP_##n] = d,
	DP_DROP_REASONS(DP_DROP_DESC)
#undef DP_DROP_DESC
};

const char *dp_drop_name(enum dp_drop reason)
{
	return (unsigned)reason < DP_DROP_COUNT ?
	       dp_port_counter_names[offsetof(struct dp_port_counters, drop) / sizeof(uint64_t) +
				     reason] : "INVALID";
}

const char *dp_drop_desc(enum dp_drop reason)
{
	return (unsigned)reason < DP_DROP_COUNT ? drop_descs[reason] : "not a drop reason";
}

#define POOL_CACHE		64
/* How long a closing memif port leaves its rings to the peer. */
#define MEMIF_CLOSE_LINGER_NS	(100 * 1000 * 1000)
/* How long a memif client's open waits for the handshake with a server that accepted it. */
#define MEMIF_CONNECT_WAIT_NS	(1000 * 1000 * 1000ull)
#define MEMIF_CONNECT_POLL_NS	(1000 * 1000)
#define FD_SCAN_MAX		4096
#define START_RETRY_NS		200000000ull


struct dp_port {
	struct port		base;		/* what the engine sees; first */
	char			name[80];
	struct host_link_cfg	cfg;
	uint16_t		port_id;
	bool			is_vdev;
	char			vdev_name[64];
	struct rte_mempool	*pool;
	uint32_t		max_frame;	/* largest frame pool and PMD carry */
	int			ifindex;
	uint32_t		speed_mbps;
	const struct host_qpn_map	*qpns;
	struct host_ring		*loop;		/* same-host delivery, NULL: none */
	struct host_neigh		*neigh;
	struct host_capture		*pcap;
	atomic_bool		link_up;

	unsigned		n_tx;
	struct rte_mbuf		*tx[DP_BURST];
	struct dp_port_counters	cnt;

	/* Address changes: written by the progress thread, applied by the port's thread. */
	pthread_mutex_t		addr_lock;
	uint8_t			addrs[HOST_MAX_ADDRS][16];
	unsigned		n_addrs;
	atomic_bool		addrs_pending;

	int			xdp_prog_fd;	/* memfd holding the XDP object for af_xdp */
	int			packet_fd;	/* af_packet: the PMD's socket, for its drop count */
	int			neigh_tap_fd;	/* af_xdp: copies of ARP/ND the kernel receives */
	int			xdp_broker;	/* af_xdp without privilege: the broker holding
						 * its XDP program while this stays open, else -1 */
	int			user_loop_fd;	/* a packet socket for another user's processes
						 * (user_loop_send()); -1: not yet, -2: none */
	int			rx_fd;		/* readable while frames wait (af_packet, af_xdp) */
	bool			uses_netdev;	/* af_packet, af_xdp: link state from the kernel */
	atomic_bool		ack_held;	/* staged ACKs wait for a request to go with */
	uint64_t		ack_held_ns;	/* since when */
	atomic_bool		started;	/* ethdev started (a memif client may wait for its server) */
	uint64_t		next_start_ns;
	bool			memif;
	bool			memif_client;
	atomic_bool		peer_seen;	/* memif: a peer was connected (losing it is a link down) */
	atomic_bool		memif_warm;	/* memif: the connection's shared memory is faulted in */
	uint64_t		link_down_since;	/* memif client: when its link was first seen down */
	_Atomic uint64_t	ring_drops;
};

static atomic_uint port_seq;

static inline struct dp_port *to_dp(struct port *p)
{
	return (struct dp_port *)p;
}

static inline unsigned burst_bucket(unsigned n)
{
	return n >= 32 ? 5 : n >= 16 ? 4 : n >= 8 ? 3 : n >= 4 ? 2 : n >= 2 ? 1 : 0;
}

static inline bool mac_eq(const uint8_t *a, const uint8_t *b)
{
	return !memcmp(a, b, 6);
}

/* The ethdev's own link status, where DPDK owns the link (memif: a peer is connected). */
static bool ethdev_link_up(struct dp_port *dp)
{
	struct rte_eth_link link;

	return atomic_load_explicit(&dp->started, memory_order_relaxed) &&
	       rte_eth_link_get_nowait(dp->port_id, &link) == 0 &&
	       link.link_status == RTE_ETH_LINK_UP;
}

/* ---- Transmit ---- */

static void send_staged(struct dp_port *dp)
{
	unsigned n = dp->n_tx, sent = 0;

	if (n == 0)
		return;
	dp->n_tx = 0;
	/*
	 * A netdev that is down would only fill the kernel's ring; where DPDK
	 * owns the link the PMD itself refuses frames it cannot carry.
	 */
	if ((dp->uses_netdev && !atomic_load_explicit(&dp->link_up, memory_order_relaxed)) ||
	    !atomic_load_explicit(&dp->started, memory_order_relaxed)) {
		rte_pktmbuf_free_bulk(dp->tx, n);
		dp->cnt.drop[DP_DROP_tx_link_down] += n;
		return;
	}
	if (dp->pcap) {
		const void *frames[DP_BURST];
		uint32_t lens[DP_BURST];

		for (unsigned i = 0; i < n; i++) {
			frames[i] = rte_pktmbuf_mtod(dp->tx[i], const void *);
			lens[i] = dp->tx[i]->data_len;
		}
		host_capture_write(dp->pcap, frames, lens, n);
	}
	for (unsigned i = 0; i < n; i++)
		dp->cnt.tx_bytes += dp->tx[i]->pkt_len;
	/* A full ring gets two more chances; after that the frames are lost like on a wire. */
	for (int tries = 0; tries < 3 && sent < n; tries++)
		sent += rte_eth_tx_burst(dp->port_id, 0, dp->tx + sent, (uint16_t)(n - sent));
	if (sent < n) {
		rte_pktmbuf_free_bulk(dp->tx + sent, n - sent);
		/* A memif PMD takes nothing while no peer is connected: the link is down. */
		if (sent == 0 && dp->memif && !ethdev_link_up(dp))
			dp->cnt.drop[DP_DROP_tx_link_down] += n;
		else
			dp->cnt.drop[DP_DROP_tx_dropped] += n - sent;
	}
	dp->cnt.tx_frames += sent;
	(&dp->cnt.tx_burst_1)[burst_bucket(n)]++;
}

static int dpp_tx_alloc(struct port *p, struct port_frame *f, uint32_t len)
{
	struct dp_port *dp = to_dp(p);
	struct rte_mbuf *m;

	if (unlikely(len > dp->max_frame)) {
		dp->cnt.drop[DP_DROP_tx_too_big]++;
		return -EMSGSIZE;
	}
	m = rte_pktmbuf_alloc(dp->pool);
	if (unlikely(!m)) {
		dp->cnt.drop[DP_DROP_tx_no_mbuf]++;
		return -ENOBUFS;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	f->data = rte_pktmbuf_mtod(m, uint8_t *);
	f->len = len;
	f->handle = m;
	return 0;
}

static void dpp_tx_abort(struct port *p, struct port_frame *f)
{
	(void)p;
	rte_pktmbuf_free(f->handle);
}

static void dpp_tx_burst(struct port *p, struct port_frame *f, unsigned n)
{
	struct dp_port *dp = to_dp(p);

	for (unsigned i = 0; i < n; i++) {
		struct rte_mbuf *m = f[i].handle;

		/* The engine may have shortened the frame after tx_alloc(). */
		m->data_len = (uint16_t)f[i].len;
		m->pkt_len = f[i].len;
		dp->tx[dp->n_tx++] = m;
		if (dp->n_tx == DP_BURST)
			send_staged(dp);
	}
}

/* Is @m an RC ACKNOWLEDGE (IBA 9.7.5.1): a frame that waits well for company? */
static bool is_plain_ack(const struct rte_mbuf *m)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	struct wire_frame_offsets o;

	return wire_classify(d, m->data_len, &o) == WIRE_FRAME_ROCE && o.ip_end > o.bth_off &&
	       d[o.bth_off] == (WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE);
}

/*
 * A flush of nothing but ACKs waits (the engine flushes at the end of every
 * pass), for at most ACK_HOLD_NS: the application's next request, posted in
 * between, then leaves in the same kick, behind the ACKs.  (Sending the
 * request ahead of the ACKs would be quicker still, but a peer could then see
 * our next request before the ACK of the message that caused it, which no RoCE
 * NIC does and applications rely on: its receive completing before its send.)
 * With af_packet and af_xdp every kick is a system call that also runs the
 * veth receive path, so on a request-response exchange this takes one of them
 * off the critical path on each side.  The hold outlasts the application's
 * own passes between taking a message and answering it: ib_send_lat polls
 * its receive CQ between the two, and each poll flushed the ACK alone (two
 * kicks per message, 1.4 times ib_write_lat's latency).  5 µs is about one
 * kick here: a stream's receiver, which never answers, holds its ACKs no
 * longer than that (20 µs cost ib_send_bw a fifth of its rate).  The
 * progress thread spins while ACKs are held, so they leave on time with
 * nobody polling.  Such a kick delivers synchronously, so a held ACK still
 * arrives when the process closes the port right after; memif's would be
 * lost with the shared rings.
 */
#define ACK_HOLD_NS	5000

static void dpp_flush(struct port *p)
{
	struct dp_port *dp = to_dp(p);
	bool only_acks = dp->n_tx > 0 && dp->uses_netdev;

	for (unsigned i = 0; i < dp->n_tx && only_acks; i++)
		only_acks = is_plain_ack(dp->tx[i]);
	if (only_acks) {
		uint64_t now = dp_clock_ns();

		if (!dp->ack_held) {
			dp->ack_held_ns = now;
			atomic_store_explicit(&dp->ack_held, true, memory_order_relaxed);
			return;
		}
		if (now - dp->ack_held_ns < ACK_HOLD_NS)
			return;
	}
	atomic_store_explicit(&dp->ack_held, false, memory_order_relaxed);
	send_staged(dp);
}

/* Neighbour frames: copied into an mbuf and queued with the engine's. */
static int neigh_xmit(void *arg, const void *frame, uint32_t len)
{
	struct dp_port *dp = arg;
	struct port_frame f;
	int ret = dpp_tx_alloc(&dp->base, &f, len);

	if (ret)
		return ret;
	memcpy(f.data, frame, len);
	dpp_tx_burst(&dp->base, &f, 1);
	return 0;
}

/* ---- Receive ---- */

/* RX_RAW: not RoCE, handed up for the flows of raw packet QPs (port.rx_raw). */
enum rx_verdict { RX_ROCE, RX_RAW, RX_DROP };

/* @bth: a BTH whose DestQP is QP1, the GSI. */
static inline bool is_gsi(const uint8_t *bth)
{
	return wire_load24(bth + 5) == WIRE_GSI_QPN;
}

static inline enum rx_verdict rx_drop(struct dp_port *dp, enum dp_drop why)
{
	dp->cnt.drop[why]++;
	return RX_DROP;
}

/* A frame that is not RoCE: to the engine while raw QPs have flows, else dropped as @why. */
static inline enum rx_verdict rx_raw_or_drop(struct dp_port *dp, enum wire_frame_kind kind,
					     enum dp_drop why)
{
	if (dp->base.rx_raw && kind != WIRE_FRAME_ROCE) {
		dp->cnt.rx_raw++;
		return RX_RAW;
	}
	return rx_drop(dp, why);
}

/* ARP and ND: to the neighbour table, which answers and learns. */
static enum rx_verdict to_neigh(struct dp_port *dp, const uint8_t *d, uint32_t len, uint64_t *now)
{
	if (!*now)
		*now = dp_mono_ns();
	host_neigh_input(dp->neigh, d, len, *now);
	dp->cnt.rx_neigh++;
	return RX_DROP;
}

static void apply_addrs(struct dp_port *dp)
{
	pthread_mutex_lock(&dp->addr_lock);
	host_neigh_set_addrs(dp->neigh, (const uint8_t (*)[16])dp->addrs, dp->n_addrs);
	atomic_store(&dp->addrs_pending, false);
	pthread_mutex_unlock(&dp->addr_lock);
}

/* A looped frame (our source MAC): RoCE to our MAC, to QP1 or a QP of this process; else dropped. */
static enum rx_verdict user_loop(struct dp_port *dp, const uint8_t *d, enum wire_frame_kind kind,
				 const struct wire_frame_offsets *o)
{
	const struct wire_bth *bth = (const struct wire_bth *)(d + o->bth_off);

	if (kind != WIRE_FRAME_ROCE || o->drop || o->ip_end - o->bth_off < sizeof(*bth) ||
	    !mac_eq(d, dp->base.mac) || !dp->qpns ||
	    (!is_gsi((const uint8_t *)bth) &&
	     !host_qpn_owned(dp->qpns, wire_get32(bth->qpn) & WIRE_QPN_MASK)))
		return rx_drop(dp, DP_DROP_rx_looped);
	dp->cnt.rx_user_loop++;
	return RX_ROCE;
}

static enum rx_verdict classify(struct dp_port *dp, struct rte_mbuf *m, uint64_t *now)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct wire_bth *bth;
	struct wire_frame_offsets o;
	enum wire_frame_kind kind;
	uint32_t len = m->data_len;
	bool multicast;

	if (unlikely(m->nb_segs != 1))
		return rx_drop(dp, DP_DROP_rx_multiseg);
	kind = wire_classify(d, len, &o);
	if (unlikely(!o.l3_off))	/* shorter than an Ethernet header */
		return rx_drop(dp, DP_DROP_rx_not_roce);
	/*
	 * Our own frames, or another process's on this netdev, looped back by the
	 * kernel; taken only when another user's process sent it (user_loop_send())
	 * to QP1 or a QP of ours (our ring is closed to that user).
	 */
	if (unlikely(mac_eq(d + 6, dp->base.mac)))
		return user_loop(dp, d, kind, &o);
	if (unlikely(kind == WIRE_FRAME_ARP))
		return to_neigh(dp, d, len, now);
	multicast = d[0] & 1;
	/* A datagram to a multicast group: the engine knows which of its QPs joined. */
	if (unlikely(multicast) && kind == WIRE_FRAME_ROCE && !o.drop &&
	    o.ip_end - o.bth_off >= sizeof(*bth)) {
		bth = (const struct wire_bth *)(d + o.bth_off);
		if ((wire_get32(bth->qpn) & WIRE_QPN_MASK) == WIRE_MCAST_QPN)
			return RX_ROCE;
	}
	if (unlikely(multicast && o.ethertype != WIRE_ETHERTYPE_IPV6))
		/* broadcast / multicast that is not ND */
		return rx_raw_or_drop(dp, kind, DP_DROP_rx_not_roce);
	if (unlikely(!multicast && !mac_eq(d, dp->base.mac)))
		return rx_drop(dp, DP_DROP_rx_not_for_us);
	switch (kind) {
	case WIRE_FRAME_ROCE:
		/* Unicast, no IPv6 extension headers, and a BTH to read the QPN from. */
		if (unlikely(o.drop || multicast || o.ip_end - o.bth_off < sizeof(*bth)))
			break;
		bth = (const struct wire_bth *)(d + o.bth_off);
		/*
		 * BTH DestQP (IBA 9.2): frames for another process's QPs are dropped
		 * without a NAK.  QP1 is every process's: each CM keeps its own MADs.
		 * A QP this process destroyed is still its own to count (unknown QP).
		 */
		if (dp->qpns && !is_gsi((const uint8_t *)bth)) {
			uint32_t qpn = wire_get32(bth->qpn) & WIRE_QPN_MASK;

			if (!host_qpn_owned(dp->qpns, qpn) && !host_qpn_was_mine(dp->qpns, qpn))
				return rx_drop(dp, DP_DROP_rx_other_qpn);
		}
		return RX_ROCE;
	case WIRE_FRAME_ICMP_ROCE:
		return rx_drop(dp, DP_DROP_rx_icmp_unreach);
	case WIRE_FRAME_ND:
		if (o.has_vlan)		/* the neighbour table reads untagged frames only */
			break;
		return to_neigh(dp, d, len, now);
	default:
		break;
	}
	return rx_raw_or_drop(dp, kind, DP_DROP_rx_not_roce);
}

/* The deferred start of a memif client, from the port's own thread; a few times a second. */
static unsigned try_start(struct dp_port *dp)
{
	uint64_t now = dp_mono_ns();

	if (now < dp->next_start_ns)
		return 0;
	dp->next_start_ns = now + START_RETRY_NS;
	dp_eal_log_mark();
	if (rte_eth_dev_start(dp->port_id) == 0)
		atomic_store(&dp->started, true);
	return 0;
}

/*
 * A memif connection's rings and packet buffers are shared memory the PMD
 * maps when the peer connects; each page of it first touched in a process
 * costs a fault there, and small frames touch a new page each until the
 * rings have wrapped once: ib_send_lat's first 500 iterations took 9.3 us
 * instead of 1.3.  Fault the whole mapping in at once, when the connection
 * is first seen (the client's open, the first frame received, link checks).
 */
static void memif_connected(struct dp_port *dp)
{
	unsigned long lo, hi;
	char line[512];
	FILE *maps;

	atomic_store(&dp->peer_seen, true);
	if (atomic_exchange(&dp->memif_warm, true))
		return;
	maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "/memfd:memif_region_") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			(void)madvise((void *)lo, hi - lo, MADV_POPULATE_WRITE);
	fclose(maps);
}

/*
 * A memif server answers a client that knocks before the server device has
 * started with "ID not found", and the client does not try again: restart a
 * client whose link stays down, a few times a second.  A link seen up means
 * a peer was connected, whose loss is then a link down (memif_link_state()).
 */
static void memif_watch(struct dp_port *dp)
{
	uint64_t now = dp_mono_ns();

	if (now < dp->next_start_ns)
		return;
	dp->next_start_ns = now + START_RETRY_NS;
	if (ethdev_link_up(dp)) {
		memif_connected(dp);
		dp->link_down_since = 0;
		return;
	}
	if (!dp->link_down_since) {
		dp->link_down_since = now;
		return;
	}
	if (now - dp->link_down_since < 2 * START_RETRY_NS)
		return;
	dp->link_down_since = 0;
	rte_eth_dev_stop(dp->port_id);
	if (rte_eth_dev_start(dp->port_id))
		atomic_store(&dp->started, false);
}

/*
 * Frames other processes of this host sent us (host_ring.h), into fresh
 * mbufs: they never crossed a wire, so the classifier has nothing to say
 * about them; the engine checks them (ICRC included) like any other.
 */
static unsigned ring_rx(struct dp_port *dp, struct port_frame *f, unsigned max)
{
	unsigned n = 0;

	while (n < max) {
		struct rte_mbuf *m = rte_pktmbuf_alloc(dp->pool);
		uint32_t len;

		if (unlikely(!m))
			break;
		len = host_ring_recv(dp->loop, rte_pktmbuf_mtod(m, void *), rte_pktmbuf_tailroom(m));
		if (!len) {
			rte_pktmbuf_free(m);
			break;
		}
		m->data_len = (uint16_t)len;
		m->pkt_len = len;
		f[n].data = rte_pktmbuf_mtod(m, uint8_t *);
		f[n].len = len;
		f[n].handle = m;
		n++;
	}
	dp->cnt.rx_loop += n;
	return n;
}

static unsigned dpp_rx_burst(struct port *p, struct port_frame *f, unsigned max)
{
	struct dp_port *dp = to_dp(p);
	struct rte_mbuf *m[DP_BURST], *drop[DP_BURST];
	unsigned n, out = 0, n_drop = 0, n_roce = 0;
	uint64_t now = 0;

	if (unlikely(atomic_load_explicit(&dp->addrs_pending, memory_order_relaxed)))
		apply_addrs(dp);
	if (unlikely(!atomic_load_explicit(&dp->started, memory_order_relaxed)))
		return try_start(dp);
	if (max > DP_BURST)
		max = DP_BURST;
	dp->cnt.rx_polls++;
	n = rte_eth_rx_burst(dp->port_id, 0, m, (uint16_t)max);
	if (n) {
		(&dp->cnt.rx_burst_1)[burst_bucket(n)]++;
		dp->cnt.rx_frames += n;
		/* A frame came through: a peer is connected, however briefly (memif_link_state()). */
		if (dp->memif && !atomic_load_explicit(&dp->memif_warm, memory_order_relaxed))
			memif_connected(dp);
	} else if (unlikely(dp->memif_client)) {
		memif_watch(dp);
	}
	for (unsigned i = 0; i < n; i++) {
		enum rx_verdict v;

		dp->cnt.rx_bytes += m[i]->pkt_len;
		v = classify(dp, m[i], &now);
		if (v != RX_DROP) {
			n_roce += v == RX_ROCE;
			f[out].data = rte_pktmbuf_mtod(m[i], uint8_t *);
			f[out].len = m[i]->data_len;
			f[out].handle = m[i];
			out++;
		} else {
			drop[n_drop++] = m[i];
		}
	}
	if (n_drop)
		rte_pktmbuf_free_bulk(drop, n_drop);
	dp->cnt.rx_roce += n_roce;
	if (dp->loop && out < max && host_ring_ready(dp->loop)) {
		unsigned looped = ring_rx(dp, f + out, max - out);

		dp->cnt.rx_roce += looped;
		out += looped;
	}
	if (!out)
		return 0;
	if (dp->pcap) {
		const void *frames[DP_BURST];
		uint32_t lens[DP_BURST];

		for (unsigned i = 0; i < out; i++) {
			frames[i] = f[i].data;
			lens[i] = f[i].len;
		}
		host_capture_write(dp->pcap, frames, lens, out);
	}
	return out;
}

static void dpp_rx_release(struct port *p, struct port_frame *f, unsigned n)
{
	struct rte_mbuf *m[DP_BURST];

	(void)p;
	while (n) {
		unsigned k = n < DP_BURST ? n : DP_BURST;

		for (unsigned i = 0; i < k; i++)
			m[i] = f[i].handle;
		rte_pktmbuf_free_bulk(m, k);
		f += k;
		n -= k;
	}
}

static int dpp_resolve(struct port *p, const uint8_t gid[16], uint8_t mac[6])
{
	struct dp_port *dp = to_dp(p);

	uint64_t now = dp_mono_ns();

	if (unlikely(atomic_load_explicit(&dp->addrs_pending, memory_order_relaxed)))
		apply_addrs(dp);
	/* Asked only while a path has no MAC yet: the answers to our requests are waiting here. */
	if (dp->neigh_tap_fd >= 0)
		dp->cnt.rx_neigh += host_netdev_neigh_tap_drain(dp->neigh_tap_fd, dp->neigh,
							      dp->base.mac, now);
	return host_neigh_resolve(dp->neigh, gid, mac, now);
}

static void dpp_destroy(struct port *p)
{
	dp_port_close(to_dp(p));
}

static const struct port_ops dp_port_ops = {
	.rx_burst	= dpp_rx_burst,
	.rx_release	= dpp_rx_release,
	.tx_alloc	= dpp_tx_alloc,
	.tx_abort	= dpp_tx_abort,
	.tx_burst	= dpp_tx_burst,
	.flush		= dpp_flush,
	.resolve	= dpp_resolve,
	.destroy	= dpp_destroy,
};

/* ---- Open ---- */

/*
 * One line: what failed, DPDK's own reason (its last log line), the fix.
 * Drivers often return a bare -1: then the errno says nothing and only
 * DPDK's reason is quoted.
 */
static int fail_dpdk(char *err, size_t errlen, int ret, const char *what, const char *fix)
{
	char reason[256];

	if (ret > 0)
		ret = -ret;
	dp_eal_log_tail(reason, sizeof(reason));
	if (strstr(reason, "ermission denied") || strstr(reason, "not permitted") ||
	    ((ret == -EPERM || ret == -EACCES) && !reason[0]))
		fix = "run as root, or give the program CAP_NET_RAW, CAP_NET_ADMIN, CAP_BPF and CAP_IPC_LOCK (setcap)";
	if (ret == -1 && reason[0])
		snprintf(err, errlen, "%s (DPDK: %s): %s", what, reason, fix);
	else
		snprintf(err, errlen, "%s (%s%s%s): %s", what, strerror(-ret),
			 reason[0] ? "; DPDK: " : "", reason, fix);
	return ret == -1 ? -EIO : ret;
}

static int probe(struct dp_port *dp, const struct dp_pmd_plan *pl, char *err, size_t errlen)
{
	const struct host_link_cfg *cfg = &dp->cfg;
	char what[400];
	int ret;

	dp_eal_log_mark();
	if (!pl->driver) {
		if (!cfg->pmd_args[0]) {
			snprintf(err, errlen,
				 "%s: pmd pci needs the PCI address in pmd_args (`uroce link add ... --pmd pci:0000:01:00.0`)",
				 cfg->name);
			return -EINVAL;
		}
		if (rte_eth_dev_get_port_by_name(cfg->pmd_args, &dp->port_id) == 0)
			return 0;
		ret = rte_dev_probe(cfg->pmd_args);
		if (ret == 0 && rte_eth_dev_get_port_by_name(cfg->pmd_args, &dp->port_id) == 0)
			return 0;
		snprintf(what, sizeof(what), "%s: DPDK cannot take the NIC %s", cfg->name,
			 cfg->pmd_args);
		return fail_dpdk(err, errlen, ret ? ret : -ENODEV, what,
				 "bind it to vfio-pci (dpdk-devbind.py -b vfio-pci BDF) and check that DPDK has a driver for it");
	}
	/* The PID too: a child forked after its parent opened a device inherits the names taken. */
	snprintf(dp->vdev_name, sizeof(dp->vdev_name), "%s_uroce%d_%u", pl->driver, (int)getpid(),
		 atomic_fetch_add(&port_seq, 1));
	ret = rte_vdev_init(dp->vdev_name, pl->args);
	if (ret) {
		snprintf(what, sizeof(what), "%s: cannot open the %s port on %s", cfg->name,
			 host_pmd_name(cfg->pmd), cfg->netdev);
		return fail_dpdk(err, errlen, ret, what, dp_pmd_fix(cfg->pmd));
	}
	dp->is_vdev = true;
	if (rte_eth_dev_get_port_by_name(dp->vdev_name, &dp->port_id)) {
		snprintf(err, errlen, "%s: DPDK created %s but no port for it", cfg->name,
			 dp->vdev_name);
		return -ENODEV;
	}
	return 0;
}

/*
 * The port's mbufs.  af_xdp's UMEM is the span from the first mbuf to the
 * last, which the PMD takes as @pl->pool_size objects back to back: over
 * 4 KiB pages DPDK would otherwise start each object on a fresh page where
 * it does not fit the rest of one, and the last objects would lie past the
 * UMEM's end (the kernel counts their frames as invalid descriptors).  A
 * copy-mode UMEM is virtual memory, so objects may straddle pages.
 */
static struct rte_mempool *pool_create(const char *name, const struct dp_pmd_plan *pl)
{
	struct rte_pktmbuf_pool_private priv = { .mbuf_data_room_size = (uint16_t)pl->data_room };
	struct rte_mempool *mp;

	if (!pl->packed_pool)
		return rte_pktmbuf_pool_create(name, pl->pool_size, POOL_CACHE, 0,
					       (uint16_t)pl->data_room, (int)rte_socket_id());
	mp = rte_mempool_create_empty(name, pl->pool_size,
				      (unsigned)sizeof(struct rte_mbuf) + pl->data_room, POOL_CACHE,
				      sizeof(priv), (int)rte_socket_id(),
				      RTE_MEMPOOL_F_NO_IOVA_CONTIG);
	if (!mp)
		return NULL;
	if (rte_mempool_set_ops_byname(mp, rte_mbuf_best_mempool_ops(), NULL))
		goto err;
	rte_pktmbuf_pool_init(mp, &priv);
	if (rte_mempool_populate_default(mp) != (int)pl->pool_size)
		goto err;
	rte_mempool_obj_iter(mp, rte_pktmbuf_init, NULL);
	return mp;
err:
	rte_mempool_free(mp);
	return NULL;
}

static int start_ethdev(struct dp_port *dp, const struct dp_pmd_plan *pl, uint32_t mtu, char *err,
			size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	char pool_name[RTE_MEMPOOL_NAMESIZE], what[400];
	int ret;

	snprintf(pool_name, sizeof(pool_name), "uroce%d_%u", (int)getpid(),
		 atomic_fetch_add(&port_seq, 1));
	/* Pools in plain memory (EAL --no-huge): what they need becomes resident at creation. */
	dp->pool = pool_create(pool_name, pl);
	if (!dp->pool) {
		snprintf(what, sizeof(what), "%s: cannot create a pool of %u buffers of %u bytes",
			 dp->cfg.name, pl->pool_size, pl->data_room);
		return fail_dpdk(err, errlen, -rte_errno, what,
				 "give DPDK more memory (eal_args -m MB)");
	}
	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_info_get(dp->port_id, &info);
	if (ret)
		goto fail;
	if (dp->cfg.pmd == HOST_PMD_PCI)
		conf.rxmode.mtu = mtu;
	ret = rte_eth_dev_configure(dp->port_id, 1, 1, &conf);
	if (!ret)
		ret = rte_eth_rx_queue_setup(dp->port_id, 0, pl->ring_descs,
					     (unsigned)rte_eth_dev_socket_id(dp->port_id), NULL,
					     dp->pool);
	if (!ret)
		ret = rte_eth_tx_queue_setup(dp->port_id, 0, pl->ring_descs,
					     (unsigned)rte_eth_dev_socket_id(dp->port_id), NULL);
	if (ret)
		goto fail;
	ret = rte_eth_dev_start(dp->port_id);
	if (ret && dp->cfg.pmd == HOST_PMD_MEMIF) {
		/* A memif client whose server is not there yet: start later, link down meanwhile. */
		dp->next_start_ns = dp_mono_ns() + START_RETRY_NS;
		ret = 0;
	} else if (ret) {
		goto fail;
	} else {
		atomic_store(&dp->started, true);
	}
	if (!host_pmd_uses_netdev(dp->cfg.pmd)) {
		/* Where DPDK owns the link it answers to our MAC; NICs also join ND multicast. */
		rte_eth_dev_default_mac_addr_set(dp->port_id, (struct rte_ether_addr *)dp->base.mac);
		rte_eth_allmulticast_enable(dp->port_id);
	}
	return 0;
fail:
	snprintf(what, sizeof(what), "%s: cannot start the %s port on %s", dp->cfg.name,
		 host_pmd_name(dp->cfg.pmd), dp->cfg.netdev);
	return fail_dpdk(err, errlen, ret, what, dp_pmd_fix(dp->cfg.pmd));
}

/*
 * The AF_PACKET socket the PMD opened: the one socket of that family that
 * was not there before the probe.  DPDK keeps it private, and its drop count
 * (PACKET_STATISTICS) is the only sign of a receive ring that overflows.
 */
static void fd_snapshot(uint8_t *seen, int max)
{
	memset(seen, 0, (size_t)max);
	for (int fd = 0; fd < max; fd++)
		if (fcntl(fd, F_GETFD) >= 0)
			seen[fd] = 1;
}

/* A socket of @family opened since the snapshot @before, or -1. */
static int find_new_socket(const uint8_t *before, int max, int family)
{
	for (int fd = 0; fd < max; fd++) {
		int domain;
		socklen_t len = sizeof(domain);

		if (before[fd] || fcntl(fd, F_GETFD) < 0)
			continue;
		if (!getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) && domain == family)
			return fd;
	}
	return -1;
}

static void read_ring_drops(struct dp_port *dp)
{
	uint64_t drops = 0;

	if (dp->packet_fd >= 0) {
		struct tpacket_stats st;
		socklen_t len = sizeof(st);

		/* Reading resets the kernel's counts: accumulate. */
		if (!getsockopt(dp->packet_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
			atomic_fetch_add(&dp->ring_drops, st.tp_drops);
		return;
	}
	if (dp->cfg.pmd != HOST_PMD_AF_PACKET) {
		struct rte_eth_stats st;

		if (!rte_eth_stats_get(dp->port_id, &st))
			drops = st.imissed;
		atomic_store(&dp->ring_drops, drops);
	}
}

static void read_addrs(struct dp_port *dp, uint8_t (*addrs)[16], unsigned *n)
{
	int k;

	if (!host_pmd_uses_netdev(dp->cfg.pmd)) {
		*n = dp->cfg.n_addrs;
		memcpy(addrs, dp->cfg.addrs, *n * 16);
		return;
	}
	k = host_netdev_addrs(dp->cfg.netdev, addrs, HOST_MAX_ADDRS);
	*n = k < 0 ? 0 : (unsigned)k;
}

/*
 * The state a memif port reports (docs/dataplane.md, "memif link state"):
 * the socket is the cable.  A server listens from its open and a client
 * connects from its open on (or as soon as its server appears), so both
 * are ACTIVE before their peer process has come; frames sent meanwhile are
 * lost like on a wire nobody listens on (counted tx_link_down) and RC
 * retransmission recovers them.  Once a peer has been connected, losing it
 * is a link down (IBV_EVENT_PORT_ERR) until a peer connects again.
 */
static bool memif_link_state(struct dp_port *dp)
{
	if (ethdev_link_up(dp)) {
		memif_connected(dp);
		return true;
	}
	atomic_store(&dp->memif_warm, false);	/* the next peer's memory is mapped anew */
	return !atomic_load(&dp->peer_seen);
}

/*
 * A memif client whose server accepted the connection: the handshake runs
 * in DPDK's interrupt thread, a few messages each way.  Wait for it, bounded,
 * so that the application's first frames find the rings; a server slower
 * than that leaves the port ACTIVE and connected a little later.
 */
static void memif_wait_connected(struct dp_port *dp)
{
	uint64_t end = dp_mono_ns() + MEMIF_CONNECT_WAIT_NS;

	while (!ethdev_link_up(dp)) {
		if (dp_mono_ns() >= end)
			return;
		nanosleep(&(struct timespec){ .tv_nsec = MEMIF_CONNECT_POLL_NS }, NULL);
	}
	memif_connected(dp);
}

/* The broker attaches uroce's XDP program for this process: the netdev is ours until it closes. */
static int xdp_attach_by_broker(struct dp_port *dp, char *err, size_t errlen)
{
	uint32_t holder = 0;
	int ret = host_broker_xdp_call(dp->xdp_broker, HOST_QPN_OP_XDP_ATTACH, &holder, -1, NULL);

	if (ret == -EBUSY && holder)
		snprintf(err, errlen,
			 "%s: af_xdp is in use by process %u (one process per netdev queue): use af_packet to share the netdev",
			 dp->cfg.name, holder);
	else if (ret == -EBUSY)
		snprintf(err, errlen,
			 "%s: another XDP program is attached to %s (`ip link show %s`): af_xdp needs the netdev's XDP hook",
			 dp->cfg.name, dp->cfg.netdev, dp->cfg.netdev);
	else if (ret)
		snprintf(err, errlen, "%s: its broker could not attach the XDP program to %s: %s",
			 dp->cfg.name, dp->cfg.netdev, strerror(-ret));
	return ret;
}

/*
 * A table of QPNs that is root's (host_qpn_protect()) is written by the
 * device's broker for us: on the connection our packet socket came on, or
 * on one of its own for a process that opens its socket itself.
 */
static int use_broker_qpns(const struct host_link_cfg *cfg, struct host_qpn_map *qpns,
			   int broker, char *err, size_t errlen)
{
	if (qpns && host_qpn_read_only(qpns) && broker < 0) {
		int fd = host_broker_fetch(cfg, &broker, err, errlen);

		if (fd < 0) {
			if (fd == -ENOENT)
				snprintf(err, errlen,
					 "%s: the QPN table of %s is root's and the device has no broker: recreate it (`uroce link add` as root)",
					 cfg->name, cfg->netdev);
			return fd;
		}
		close(fd);
	}
	if (broker >= 0 && qpns)
		host_qpn_use_broker(qpns, broker);
	else if (broker >= 0)
		close(broker);
	return 0;
}

int dp_port_open(const struct host_link_cfg *cfg, struct host_qpn_map *qpns,
		 struct dp_port **out, char *err, size_t errlen)
{
	struct host_neigh_cfg ncfg;
	struct host_link_info link;
	static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
	uint8_t fds_before[FD_SCAN_MAX];
	uint32_t xdp_ppm = 0;
	struct dp_pmd_plan plan;
	struct dp_port *dp;
	char pcap_err[256];
	int handover = -1, broker = -1, xdp_broker = -1;
	uint32_t mtu;
	int ret;

	ret = host_link_query(cfg, &link, err, errlen);
	if (ret) {
		if (ret == -ENODEV)
			snprintf(err, errlen,
				 "%s: its netdev %s does not exist in this network namespace: check `ip link`, or recreate the device with `uroce link add %s netdev IFACE`",
				 cfg->name, cfg->netdev, cfg->name);
		return ret;
	}
	ret = dp_pmd_check_caps(cfg, &handover, &broker, err, errlen);
	if (ret)
		return ret;
	/* af_xdp through the broker: its connection holds the XDP program until the port closes. */
	if (cfg->pmd == HOST_PMD_AF_XDP && broker >= 0) {
		xdp_broker = fcntl(broker, F_DUPFD_CLOEXEC, 0);
		if (xdp_broker < 0) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", cfg->name, strerror(-ret));
			close(broker);
			goto err_close_handover;
		}
	}
	ret = use_broker_qpns(cfg, qpns, broker, err, errlen);
	if (ret)
		goto err_close_handover;
	ret = dp_eal_start(cfg, err, errlen);
	if (ret)
		goto err_close_handover;
	dp = calloc(1, sizeof(*dp));
	if (!dp) {
		snprintf(err, errlen, "%s: out of memory", cfg->name);
		ret = -ENOMEM;
		goto err_close_handover;
	}
	dp->cfg = *cfg;
	dp->uses_netdev = host_pmd_uses_netdev(cfg->pmd);
	dp->memif = cfg->pmd == HOST_PMD_MEMIF;
	dp->memif_client = dp->memif && strstr(cfg->pmd_args, "role=client");
	dp->qpns = qpns;
	dp->xdp_prog_fd = -1;
	dp->neigh_tap_fd = -1;
	dp->xdp_broker = xdp_broker;
	dp->user_loop_fd = -1;
	dp->ifindex = link.ifindex;
	dp->speed_mbps = link.speed_mbps;
	pthread_mutex_init(&dp->addr_lock, NULL);
	memcpy(dp->base.mac, link.mac, 6);
	mtu = cfg->mtu ? cfg->mtu : link.mtu;
	ret = dp_pmd_plan(cfg, dp->base.mac, mtu, &plan, err, errlen);
	dp->xdp_prog_fd = plan.xdp_prog_fd;
	if (ret)
		goto err_free;
	if (xdp_broker >= 0) {
		ret = dp_pmd_plan_memlock(cfg, &plan, err, errlen);
		if (!ret)
			ret = xdp_attach_by_broker(dp, err, errlen);
		if (ret)
			goto err_free;
	} else if (cfg->pmd == HOST_PMD_AF_XDP) {
		uint32_t holder;
		char why[384];

		ret = host_bpf_xdp_claim(cfg->netdev, (uint32_t)getpid(), &xdp_ppm, &holder, why,
					 sizeof(why));
		if (ret) {
			snprintf(err, errlen, "%s: %s", cfg->name, why);
			goto err_free;
		}
	}
	/*
	 * One port opening at a time in the process, so "the new socket" is
	 * ours: af_packet's appears at probe, af_xdp's (an XSK cannot tell its
	 * netdev) when the queues are set up.
	 */
	pthread_mutex_lock(&probe_lock);
	fd_snapshot(fds_before, FD_SCAN_MAX);
	dp_pmd_handover(xdp_broker >= 0 ? -1 : handover);
	dp_pmd_xdp_broker(xdp_broker, dp->ifindex);
	ret = probe(dp, &plan, err, errlen);
	if (ret) {
		dp_pmd_handover(-1);
		dp_pmd_xdp_broker(-1, 0);
		pthread_mutex_unlock(&probe_lock);
		goto err_free;
	}
	dp->packet_fd = cfg->pmd == HOST_PMD_AF_PACKET ?
			find_new_socket(fds_before, FD_SCAN_MAX, AF_PACKET) : -1;
	ret = start_ethdev(dp, &plan, mtu, err, errlen);
	dp_pmd_handover(-1);
	if (dp_pmd_xdp_broker(-1, 0) == -ENOBUFS && ret)
		snprintf(err, errlen,
			 "%s: the kernel would not lock af_xdp's %llu KiB of packet buffers: this user's processes lock more than its RLIMIT_MEMLOCK already (it counts them all, other af_xdp ports included): end them, raise the limit (`@rdma - memlock unlimited` in /etc/security/limits.conf), or use af_packet",
			 cfg->name,
			 (unsigned long long)(dp_pmd_umem_bytes(&plan) >> 10));
	if (xdp_broker >= 0) {
		/* The broker's socket is the ARP/ND tap. */
		dp->neigh_tap_fd = handover;
		handover = -1;
	}
	if (handover >= 0) {
		close(handover);
		handover = -1;
	}
	/* The socket the PMD receives on: the progress thread sleeps in poll() on it. */
	dp->rx_fd = cfg->pmd == HOST_PMD_AF_XDP && !ret ?
		    find_new_socket(fds_before, FD_SCAN_MAX, AF_XDP) : dp->packet_fd;
	pthread_mutex_unlock(&probe_lock);
	if (ret)
		goto err_close;
	if (dp->memif_client && atomic_load(&dp->started))
		memif_wait_connected(dp);
	if (dp->xdp_prog_fd >= 0) {
		close(dp->xdp_prog_fd);
		dp->xdp_prog_fd = -1;
		/* Ours now: a later open can tell a dead owner's program from a live one's. */
		if (xdp_broker < 0)
			host_bpf_xdp_set_owner(cfg->netdev, (uint32_t)getpid(), xdp_ppm);
	}
	dp->max_frame = plan.max_frame;
	if (mtu + DP_ETH_OVERHEAD > dp->max_frame)
		mtu = dp->max_frame - DP_ETH_OVERHEAD;
	dp->base.mtu = mtu;
	dp->base.ops = &dp_port_ops;
	snprintf(dp->name, sizeof(dp->name), "%s:%s", host_pmd_name(cfg->pmd), cfg->netdev);
	dp->base.name = dp->name;
	atomic_store(&dp->link_up, dp->memif ? memif_link_state(dp) : link.up);

	memset(&ncfg, 0, sizeof(ncfg));
	memcpy(ncfg.mac, dp->base.mac, 6);
	read_addrs(dp, ncfg.addrs, &ncfg.n_addrs);
	memcpy(dp->addrs, ncfg.addrs, sizeof(dp->addrs));
	dp->n_addrs = ncfg.n_addrs;
	/*
	 * With af_packet the kernel sees every frame, with af_xdp every frame
	 * but RoCE v2 (uroce's XDP program passes the rest): it answers for
	 * itself.  The af_xdp port reads copies of ARP/ND from a packet socket.
	 */
	ncfg.answer_requests = !dp->uses_netdev;
	if (cfg->pmd == HOST_PMD_AF_XDP && dp->neigh_tap_fd < 0) {
		dp->neigh_tap_fd = host_netdev_neigh_tap_open(dp->ifindex);
		if (dp->neigh_tap_fd < 0) {
			ret = dp->neigh_tap_fd;
			snprintf(err, errlen, "%s: cannot open a packet socket on %s for ARP/ND: %s",
				 cfg->name, cfg->netdev, strerror(-ret));
			goto err_close;
		}
	}
	ncfg.xmit = neigh_xmit;
	ncfg.xmit_arg = dp;
	dp->neigh = host_neigh_create(&ncfg);
	if (!dp->neigh) {
		snprintf(err, errlen, "%s: out of memory", cfg->name);
		ret = -ENOMEM;
		goto err_close;
	}
	dp->pcap = host_capture_get(pcap_err, sizeof(pcap_err));
	if (!dp->pcap && pcap_err[0]) {
		snprintf(err, errlen, "%s: %s", cfg->name, pcap_err);
		ret = -EIO;
		goto err_close;
	}
	*out = dp;
	return 0;

err_close:
	if (dp->neigh_tap_fd >= 0)
		close(dp->neigh_tap_fd);
	if (dp->user_loop_fd >= 0)
		close(dp->user_loop_fd);
	host_neigh_destroy(dp->neigh);
	rte_eth_dev_stop(dp->port_id);
	rte_eth_dev_close(dp->port_id);
	if (dp->is_vdev)
		rte_vdev_uninit(dp->vdev_name);
	rte_mempool_free(dp->pool);
err_free:
	if (dp->xdp_prog_fd >= 0)
		close(dp->xdp_prog_fd);
	free(dp);
err_close_handover:
	if (handover >= 0)
		close(handover);
	if (xdp_broker >= 0)
		close(xdp_broker);
	return ret;
}

struct port *dp_port_base(struct dp_port *dp)
{
	return &dp->base;
}

void dp_port_close(struct dp_port *dp)
{
	if (!dp)
		return;
	send_staged(dp);
	/*
	 * memif frames sit in rings shared with the peer until it reads them;
	 * closing at once would take our last ACK away with the rings.
	 */
	if (dp->cfg.pmd == HOST_PMD_MEMIF && atomic_load(&dp->started))
		nanosleep(&(struct timespec){ .tv_nsec = MEMIF_CLOSE_LINGER_NS }, NULL);
	if (atomic_load(&dp->started))
		rte_eth_dev_stop(dp->port_id);
	rte_eth_dev_close(dp->port_id);
	if (dp->is_vdev)
		rte_vdev_uninit(dp->vdev_name);
	rte_mempool_free(dp->pool);
	if (dp->neigh_tap_fd >= 0)
		close(dp->neigh_tap_fd);
	if (dp->xdp_broker >= 0)
		close(dp->xdp_broker);
	host_neigh_destroy(dp->neigh);
	host_capture_put(dp->pcap);
	pthread_mutex_destroy(&dp->addr_lock);
	free(dp);
}

void dp_port_link(struct dp_port *dp, struct host_link_info *info)
{
	memset(info, 0, sizeof(*info));
	snprintf(info->netdev, sizeof(info->netdev), "%s", dp->cfg.netdev);
	info->ifindex = dp->ifindex;
	memcpy(info->mac, dp->base.mac, 6);
	info->mtu = dp->base.mtu;
	info->up = atomic_load(&dp->link_up);
	info->speed_mbps = dp->speed_mbps;
}

unsigned dp_port_refresh(struct dp_port *dp)
{
	uint8_t addrs[HOST_MAX_ADDRS][16];
	unsigned n_addrs, changes = 0;
	bool up;

	if (host_pmd_uses_netdev(dp->cfg.pmd)) {
		struct host_link_info info;
		char err[128];

		up = host_netdev_info(dp->cfg.netdev, &info, err, sizeof(err)) == 0 && info.up &&
		     info.ifindex == dp->ifindex;
	} else if (dp->memif) {
		up = memif_link_state(dp);
	} else {
		up = ethdev_link_up(dp);
	}
	if (up != atomic_exchange(&dp->link_up, up))
		changes |= DP_PORT_LINK_CHANGED;
	read_ring_drops(dp);
	read_addrs(dp, addrs, &n_addrs);
	pthread_mutex_lock(&dp->addr_lock);
	if (n_addrs != dp->n_addrs || memcmp(addrs, dp->addrs, n_addrs * 16)) {
		memcpy(dp->addrs, addrs, n_addrs * 16);
		dp->n_addrs = n_addrs;
		atomic_store(&dp->addrs_pending, true);
		changes |= DP_PORT_ADDRS_CHANGED;
	}
	pthread_mutex_unlock(&dp->addr_lock);
	return changes;
}

void dp_port_capture(void *arg, const void *frame, uint32_t len)
{
	struct dp_port *dp = arg;

	if (dp->pcap)
		host_capture_write(dp->pcap, &frame, &len, 1);
}

void dp_port_set_ring(struct dp_port *dp, struct host_ring *loop)
{
	dp->loop = loop;
}

/*
 * A frame for another user's process on this device, whose ring is 0600: sent
 * on the netdev from a packet socket that does not bypass the qdisc layer (the
 * PMD's does), so the kernel hands it to the netdev's other packet sockets as it
 * leaves, and the owner's port takes it (user_loop()).  The socket is the
 * broker's, as the PMD's is, and receives nothing; a device without a broker
 * (memif, tap) loses these frames, and so does af_xdp, whose XDP socket never
 * sees a frame sent on its own netdev.
 */
static void user_loop_send(struct dp_port *dp, const void *frame, uint32_t len)
{
	struct sockaddr_ll to = { .sll_family = AF_PACKET, .sll_halen = 6,
				  .sll_ifindex = (int)dp_port_ifindex(dp) };

	if (dp->user_loop_fd == -1) {
		char err[256];

		dp->user_loop_fd = host_broker_fetch(&dp->cfg, NULL, err, sizeof(err));
		if (dp->user_loop_fd < 0)
			dp->user_loop_fd = -2;
	}
	memcpy(to.sll_addr, frame, 6);
	if (dp->user_loop_fd >= 0 && len >= 14 &&
	    sendto(dp->user_loop_fd, frame, len, 0, (struct sockaddr *)&to, sizeof(to)) == (ssize_t)len)
		dp->cnt.tx_user_loop++;
	else
		dp->cnt.drop[DP_DROP_tx_loop_dropped]++;
}

int dp_port_forward(void *arg, uint32_t dest_qp, const void *frame, uint32_t len)
{
	struct dp_port *dp = arg;
	uint32_t start;
	int32_t owner;
	int ret;

	if (!dp->loop || !dp->qpns)
		return -ENOENT;
	/*
	 * QP1 is every process's: each CM keeps what is its own, as from the
	 * wire.  A multicast group's members may be in any process.
	 */
	if (dest_qp == WIRE_GSI_QPN || dest_qp == WIRE_MCAST_QPN) {
		bool denied;

		dp->cnt.tx_loop += host_ring_broadcast(dp->loop, frame, len, &denied);
		/* Another user's process has a CM here too: its copy goes by user_loop_send(). */
		if (denied && dest_qp == WIRE_GSI_QPN)
			user_loop_send(dp, frame, len);
		return 0;
	}
	owner = host_qpn_owner(dp->qpns, dest_qp, &start);
	if (!owner || owner == dp->loop->me)
		return -ENOENT;
	/* A full ring or a peer gone loses the frame, as a wire would: the requester retries. */
	ret = host_ring_send(dp->loop, owner, start, frame, len);
	if (ret == -EACCES)
		user_loop_send(dp, frame, len);
	else if (ret)
		dp->cnt.drop[DP_DROP_tx_loop_dropped]++;
	else
		dp->cnt.tx_loop++;
	return 0;
}

struct rc_direct_table *dp_port_direct_peer(void *arg, uint32_t qpn, int32_t *pid)
{
	struct dp_port *dp = arg;
	uint32_t start;
	int32_t owner;

	if (!dp->loop || !dp->qpns)
		return NULL;
	owner = host_qpn_owner(dp->qpns, qpn, &start);
	if (!owner || owner == dp->loop->me)
		return NULL;
	*pid = owner;
	return host_ring_peer_shared(dp->loop, owner, start);
}

int dp_port_rx_fd(struct dp_port *dp)
{
	return dp->rx_fd;
}

void dp_port_drop_received(struct dp_port *dp)
{
	struct rte_mbuf *m[DP_BURST];
	uint16_t n;

	if (!atomic_load(&dp->started))
		return;
	while ((n = rte_eth_rx_burst(dp->port_id, 0, m, DP_BURST))) {
		dp->cnt.drop[DP_DROP_rx_before_filter] += n;
		rte_pktmbuf_free_bulk(m, n);
	}
}

bool dp_port_tx_held(struct dp_port *dp)
{
	return atomic_load_explicit(&dp->ack_held, memory_order_relaxed);
}

void dp_port_flush_capture(struct dp_port *dp)
{
	if (dp->pcap)
		host_capture_flush(dp->pcap);
}

unsigned dp_port_addrs(struct dp_port *dp, uint8_t (*addrs)[16], unsigned max)
{
	unsigned n;

	pthread_mutex_lock(&dp->addr_lock);
	n = dp->n_addrs < max ? dp->n_addrs : max;
	memcpy(addrs, dp->addrs, n * 16);
	pthread_mutex_unlock(&dp->addr_lock);
	return n;
}

void dp_port_counters(struct dp_port *dp, struct dp_port_counters *out)
{
	*out = dp->cnt;
	out->drop[DP_DROP_rx_ring_drops] = atomic_load(&dp->ring_drops);
}

void dp_port_neigh_counters(struct dp_port *dp, struct host_neigh_counters *out)
{
	host_neigh_counters(dp->neigh, out);
}

int dp_port_raw_alloc(struct dp_port *dp, struct port_frame *f, unsigned n, uint32_t len)
{
	struct rte_mbuf *m[DP_BURST];

	if (n > DP_BURST || len > UINT16_MAX)
		return -EINVAL;
	if (rte_pktmbuf_alloc_bulk(dp->pool, m, n))
		return -ENOBUFS;
	for (unsigned i = 0; i < n; i++) {
		m[i]->data_len = (uint16_t)len;
		m[i]->pkt_len = len;
		f[i] = (struct port_frame){ .data = rte_pktmbuf_mtod(m[i], uint8_t *), .len = len,
					    .handle = m[i] };
	}
	return 0;
}

void dp_port_raw_free(struct port_frame *f, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		rte_pktmbuf_free(f[i].handle);
}

unsigned dp_port_raw_tx(struct dp_port *dp, struct port_frame *f, unsigned n)
{
	struct rte_mbuf *m[DP_BURST];
	unsigned sent;

	n = RTE_MIN(n, (unsigned)DP_BURST);
	for (unsigned i = 0; i < n; i++)
		m[i] = f[i].handle;
	sent = rte_eth_tx_burst(dp->port_id, 0, m, (uint16_t)n);
	if (sent < n)
		rte_pktmbuf_free_bulk(m + sent, n - sent);
	return sent;
}

unsigned dp_port_raw_rx(struct dp_port *dp, struct port_frame *f, unsigned max)
{
	struct rte_mbuf *m[DP_BURST];
	unsigned n = rte_eth_rx_burst(dp->port_id, 0, m, (uint16_t)RTE_MIN(max, (unsigned)DP_BURST));

	for (unsigned i = 0; i < n; i++)
		f[i] = (struct port_frame){ .data = rte_pktmbuf_mtod(m[i], uint8_t *),
					    .len = m[i]->data_len, .handle = m[i] };
	return n;
}

int dp_port_ifindex(struct dp_port *dp)
{
	return dp->ifindex;
}
