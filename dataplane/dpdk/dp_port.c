// SPDX-License-Identifier: MIT
/* The DPDK port: bursts of 32 on one ethdev queue, a classifier, neighbours, counters, pcap. */
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_bus_vdev.h>
#include <rte_dev.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>

#include "uroce/wire.h"
#include "host_bpf.h"
#include "dp_eal.h"
#include "host_ring.h"
#include "host_netdev.h"
#include "host_capture.h"
#include "dp_port.h"
#include "host_qpn.h"

const char *const dp_port_counter_names[] = {
#define DP_PORT_NAME(n) #n,
	DP_PORT_COUNTERS(DP_PORT_NAME)
#undef DP_PORT_NAME
	NULL
};

#define ETH_OVERHEAD		(14 + 4)	/* Ethernet header + one VLAN tag */
#define RING_DESCS		1024
#define POOL_CACHE		64
/* struct tpacket2_hdr + sockaddr_ll, aligned, + 16: where the kernel puts the MAC header. */
#define TPACKET2_MAC_OFF	66
/*
 * Ring frames: 4096 hold what 4 QPs with 16 RDMA reads of 64 KiB each in
 * flight send back at once; fewer made read responses overflow the ring.
 */
#define AF_PACKET_FRAMES	4096
/* How long a closing memif port leaves its rings to the peer. */
#define MEMIF_CLOSE_LINGER_NS	(100 * 1000 * 1000)
/* Largest RoCE v2 frame: Ethernet + VLAN + IPv6 + UDP + BTH + AtomicETH + 4096 + pad + ICRC. */
#define ROCE_MAX_FRAME		(14 + 4 + 40 + 8 + 12 + 28 + 4096 + 3 + 4)
/* AF_XDP chunk = mempool object <= one page: 64 header + 128 mbuf + 3840 data room. */
#define AF_XDP_DATA_ROOM	3840
#define AF_XDP_POOL_SIZE	8192
#define XDP_HEADROOM		256
#define POOL_SIZE		4096
#define FD_SCAN_MAX		4096
#define START_RETRY_NS		200000000ull

#define IPPROTO_ICMP_NUM	1
#define IPPROTO_ICMPV6_NUM	58

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
	int			rx_fd;		/* readable while frames wait (af_packet, af_xdp) */
	bool			uses_netdev;	/* af_packet, af_xdp: link state from the kernel */
	atomic_bool		ack_held;	/* staged ACKs wait for the next flush */
	atomic_bool		started;	/* ethdev started (a memif client may wait for its server) */
	uint64_t		next_start_ns;
	bool			memif_client;
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
		dp->cnt.tx_link_down += n;
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
		dp->cnt.tx_dropped += n - sent;
	}
	dp->cnt.tx_frames += sent;
	(&dp->cnt.tx_burst_1)[burst_bucket(n)]++;
}

static int dpp_tx_alloc(struct port *p, struct port_frame *f, uint32_t len)
{
	struct dp_port *dp = to_dp(p);
	struct rte_mbuf *m;

	if (unlikely(len > dp->max_frame)) {
		dp->cnt.tx_too_big++;
		return -EMSGSIZE;
	}
	m = rte_pktmbuf_alloc(dp->pool);
	if (unlikely(!m)) {
		dp->cnt.tx_no_mbuf++;
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
	uint32_t off = 14, len = m->data_len;
	uint16_t type = wire_load16(d + 12);

	if (type == WIRE_ETHERTYPE_VLAN && len >= 18) {
		type = wire_load16(d + 16);
		off = 18;
	}
	if (type == WIRE_ETHERTYPE_IPV4 && len > off + 20)
		off += (d[off] & 0xfu) * 4;
	else if (type == WIRE_ETHERTYPE_IPV6)
		off += 40;
	else
		return false;
	return len > off + 8 && d[off + 8] == (WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE);
}

/*
 * A flush of nothing but ACKs waits for the next one (the engine flushes at
 * the end of every pass): the application's next request, posted in between,
 * then leaves in the same kick, behind the ACKs.  (Sending the request ahead
 * of the ACKs would be quicker still, but a peer could then see our next
 * request before the ACK of the message that caused it, which no RoCE NIC
 * does and applications rely on: its receive completing before its send.)  With af_packet and af_xdp every kick is a
 * system call that also runs the veth receive path, so on a request-response
 * exchange this takes one of them off the critical path on each side.  Such
 * a kick delivers synchronously, so a held ACK still arrives when the process
 * closes the port right after; memif's would be lost with the shared rings.
 */
static void dpp_flush(struct port *p)
{
	struct dp_port *dp = to_dp(p);
	bool only_acks = dp->n_tx > 0 && dp->uses_netdev;

	if (!dp->ack_held) {
		for (unsigned i = 0; i < dp->n_tx && only_acks; i++)
			only_acks = is_plain_ack(dp->tx[i]);
		if (only_acks) {
			atomic_store_explicit(&dp->ack_held, true, memory_order_relaxed);
			return;
		}
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

enum rx_verdict { RX_ROCE, RX_DROP };

/* Embedded IP header of an ICMP error: was it our UDP 4791? (RFC 792 / RFC 4443 quote it) */
/* @bth: a BTH whose DestQP is QP1, the GSI. */
static inline bool is_gsi(const uint8_t *bth)
{
	return wire_load24(bth + 5) == WIRE_GSI_QPN;
}

static bool quotes_roce(const uint8_t *ip, uint32_t len, int version)
{
	if (version == 4) {
		uint32_t ihl;

		if (len < 20)
			return false;
		ihl = (ip[0] & 0xfu) * 4;
		return ip[9] == WIRE_IPPROTO_UDP && len >= ihl + 4 &&
		       wire_load16(ip + ihl + 2) == WIRE_ROCEV2_PORT;
	}
	return len >= 44 && ip[6] == WIRE_IPPROTO_UDP && wire_load16(ip + 42) == WIRE_ROCEV2_PORT;
}

static void apply_addrs(struct dp_port *dp)
{
	pthread_mutex_lock(&dp->addr_lock);
	host_neigh_set_addrs(dp->neigh, (const uint8_t (*)[16])dp->addrs, dp->n_addrs);
	atomic_store(&dp->addrs_pending, false);
	pthread_mutex_unlock(&dp->addr_lock);
}

static enum rx_verdict classify(struct dp_port *dp, struct rte_mbuf *m, uint64_t *now)
{
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len, off = 14, l4;
	uint16_t type;

	if (unlikely(m->nb_segs != 1)) {
		dp->cnt.rx_multiseg++;
		return RX_DROP;
	}
	if (unlikely(len < 14)) {
		dp->cnt.rx_not_roce++;
		return RX_DROP;
	}
	/* Our own frames, or another process's on this netdev, looped back by the kernel. */
	if (unlikely(mac_eq(d + 6, dp->base.mac))) {
		dp->cnt.rx_looped++;
		return RX_DROP;
	}
	type = wire_load16(d + 12);
	if (type == WIRE_ETHERTYPE_VLAN && len >= 18) {
		type = wire_load16(d + 16);
		off = 18;
	}
	if (unlikely(type == WIRE_ETHERTYPE_ARP)) {
		if (!*now)
			*now = dp_mono_ns();
		host_neigh_input(dp->neigh, d, len, *now);
		dp->cnt.rx_neigh++;
		return RX_DROP;
	}
	if (unlikely((d[0] & 1) && type != WIRE_ETHERTYPE_IPV6)) {
		dp->cnt.rx_not_roce++;		/* broadcast / multicast that is not ND */
		return RX_DROP;
	}
	if (unlikely(!(d[0] & 1) && !mac_eq(d, dp->base.mac))) {
		dp->cnt.rx_not_for_us++;
		return RX_DROP;
	}
	if (type == WIRE_ETHERTYPE_IPV4 && len >= off + 20) {
		const uint8_t *ip = d + off;

		l4 = off + (ip[0] & 0xfu) * 4;
		if (ip[9] == WIRE_IPPROTO_UDP && len >= l4 + 8 + 12 &&
		    wire_load16(d + l4 + 2) == WIRE_ROCEV2_PORT)
			goto roce;
		if (ip[9] == IPPROTO_ICMP_NUM && len >= l4 + 8 && d[l4] == 3 && d[l4 + 1] == 3 &&
		    quotes_roce(d + l4 + 8, len - l4 - 8, 4)) {
			dp->cnt.rx_icmp_unreach++;
			return RX_DROP;
		}
	} else if (type == WIRE_ETHERTYPE_IPV6 && len >= off + 40) {
		const uint8_t *ip = d + off;

		l4 = off + 40;
		if (ip[6] == WIRE_IPPROTO_UDP && len >= l4 + 8 + 12 &&
		    wire_load16(d + l4 + 2) == WIRE_ROCEV2_PORT && !(d[0] & 1))
			goto roce;
		if (ip[6] == IPPROTO_ICMPV6_NUM && len >= l4 + 8) {
			if (d[l4] == 1 && d[l4 + 1] == 4 && quotes_roce(d + l4 + 8, len - l4 - 8, 6)) {
				dp->cnt.rx_icmp_unreach++;
				return RX_DROP;
			}
			if (off == 14 && (d[l4] == 135 || d[l4] == 136)) {
				if (!*now)
					*now = dp_mono_ns();
				host_neigh_input(dp->neigh, d, len, *now);
				dp->cnt.rx_neigh++;
				return RX_DROP;
			}
		}
	}
	dp->cnt.rx_not_roce++;
	return RX_DROP;
roce:
	/*
	 * BTH DestQP (IBA 9.2): frames for another process's QPs are dropped
	 * without a NAK.  QP1 is every process's: each CM keeps its own MADs.
	 */
	if (dp->qpns && !is_gsi(d + l4 + 8) &&
	    !host_qpn_owned(dp->qpns, (uint32_t)(d[l4 + 8 + 5] << 16 |
						 d[l4 + 8 + 6] << 8 | d[l4 + 8 + 7]))) {
		dp->cnt.rx_other_qpn++;
		return RX_DROP;
	}
	return RX_ROCE;
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
 * A memif server answers a client that knocks before the server device has
 * started with "ID not found", and the client does not try again: restart a
 * client whose link stays down, a few times a second.
 */
static void memif_watch(struct dp_port *dp)
{
	struct rte_eth_link link;
	uint64_t now = dp_mono_ns();

	if (now < dp->next_start_ns)
		return;
	dp->next_start_ns = now + START_RETRY_NS;
	if (rte_eth_link_get_nowait(dp->port_id, &link) == 0 && link.link_status == RTE_ETH_LINK_UP) {
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
static unsigned loop_rx(struct dp_port *dp, struct port_frame *f, unsigned max)
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
	unsigned n, out = 0, n_drop = 0;
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
	} else if (unlikely(dp->memif_client)) {
		memif_watch(dp);
	}
	for (unsigned i = 0; i < n; i++) {
		dp->cnt.rx_bytes += m[i]->pkt_len;
		if (classify(dp, m[i], &now) == RX_ROCE) {
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
	if (dp->loop && out < max && host_ring_ready(dp->loop))
		out += loop_rx(dp, f + out, max - out);
	if (!out)
		return 0;
	dp->cnt.rx_roce += out;
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

static uint32_t align_up(uint32_t x, uint32_t a)
{
	return (x + a - 1) / a * a;
}

static uint32_t lcm(uint32_t a, uint32_t b)
{
	uint32_t x = a, y = b;

	while (y) {
		uint32_t t = x % y;

		x = y;
		y = t;
	}
	return (uint32_t)((uint64_t)a / x * b);
}

static uint32_t next_pow2(uint32_t x)
{
	uint32_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* pmd_args "k=v,k=v" with every key also known to us rewritten ("rx=" -> "rx_pcap="). */
static int append_pmd_args(char *buf, size_t len, const char *pmd_args, enum host_pmd pmd)
{
	char args[sizeof(((struct host_link_cfg *)0)->pmd_args)];
	char *save = NULL;
	size_t used = strlen(buf);

	snprintf(args, sizeof(args), "%s", pmd_args);
	for (char *kv = strtok_r(args, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		const char *prefix = "";
		int n;

		if (pmd == HOST_PMD_PCAP && (!strncmp(kv, "rx=", 3) || !strncmp(kv, "tx=", 3)))
			prefix = "_pcap";
		if (*prefix) {
			n = snprintf(buf + used, len - used, "%s%.2s%s%s", used ? "," : "", kv,
				     prefix, kv + 2);
		} else {
			n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", kv);
		}
		if (n < 0 || (size_t)n >= len - used)
			return -E2BIG;
		used += (size_t)n;
	}
	return 0;
}

struct pmd_plan {
	const char	*driver;	/* vdev driver name, NULL for PCI */
	char		args[768];
	uint32_t	data_room;	/* mempool data room (incl. headroom) */
	unsigned	pool_size;
	uint32_t	max_frame;
	bool		uses_netdev;
};

/*
 * A memif server binds RUN_DIR/memif-LINK.sock.  A server that died left the
 * file behind and the next bind fails; remove it when nobody answers on it.
 */
static int memif_clear_stale_socket(const struct host_link_cfg *cfg, char *err, size_t errlen)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, ret;

	if (strstr(cfg->pmd_args, "role=client"))
		return 0;
	if (snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/memif-%s.sock", host_run_dir(),
		     cfg->netdev) >= (int)sizeof(sa.sun_path)) {
		snprintf(err, errlen, "%s: the memif socket path is too long (run directory %s)",
			 cfg->name, host_run_dir());
		return -ENAMETOOLONG;
	}
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	ret = connect(fd, (struct sockaddr *)&sa, sizeof(sa));
	if (ret && errno == ECONNREFUSED)
		unlink(sa.sun_path);
	close(fd);
	if (ret == 0) {
		snprintf(err, errlen, "%s: another process already serves memif link %s (%s)",
			 cfg->name, cfg->netdev, sa.sun_path);
		return -EADDRINUSE;
	}
	return 0;
}

static int plan_pmd(struct dp_port *dp, uint32_t mtu, struct pmd_plan *pl, char *err, size_t errlen)
{
	const struct host_link_cfg *cfg = &dp->cfg;
	uint32_t frame = mtu + ETH_OVERHEAD;
	char mac[32];
	int ret = 0;

	memset(pl, 0, sizeof(*pl));
	pl->pool_size = POOL_SIZE;
	pl->data_room = RTE_PKTMBUF_HEADROOM + align_up(frame, 64);
	pl->max_frame = frame;
	snprintf(mac, sizeof(mac), "%02x:%02x:%02x:%02x:%02x:%02x", dp->base.mac[0],
		 dp->base.mac[1], dp->base.mac[2], dp->base.mac[3], dp->base.mac[4],
		 dp->base.mac[5]);
	switch (cfg->pmd) {
	case HOST_PMD_AF_PACKET: {
		/*
		 * The kernel cuts a frame at framesz - TPACKET2_MAC_OFF; DPDK's
		 * receive copies a whole ring frame into one mbuf.  Both follow
		 * the MTU (the PMD's 2 KiB default silently truncates more), up
		 * to the largest RoCE frame: a jumbo MTU needs no bigger slots,
		 * and smaller slots mean more of them in the same memory.  DPDK
		 * addresses ring frames as i * framesz, so a block must hold a
		 * whole number of frames: blocksz = lcm(framesz, page).
		 */
		uint32_t rframe = frame < ROCE_MAX_FRAME ? frame : ROCE_MAX_FRAME;
		uint32_t framesz = align_up(TPACKET2_MAC_OFF + rframe + 16, 128);
		uint32_t page = (uint32_t)getpagesize();
		uint32_t blocksz = lcm(framesz, page), per_block, framecnt;

		if (blocksz > (4u << 20)) {
			framesz = next_pow2(framesz);
			blocksz = framesz > page ? framesz : page;
		}
		per_block = blocksz / framesz;
		framecnt = (AF_PACKET_FRAMES + per_block - 1) / per_block * per_block;
		pl->driver = "net_af_packet";
		pl->uses_netdev = true;
		pl->data_room = RTE_PKTMBUF_HEADROOM + framesz;
		pl->max_frame = framesz - TPACKET2_MAC_OFF - 16;
		snprintf(pl->args, sizeof(pl->args),
			 "iface=%s,qpairs=1,blocksz=%u,framesz=%u,framecnt=%u", cfg->netdev,
			 blocksz, framesz, framecnt);
		break;
	}
	case HOST_PMD_AF_XDP:
		/*
		 * Zero-copy UMEM over the mempool: an mbuf must fit one 4 KiB
		 * chunk, so frames stop at 3456 bytes (IP MTU 3438 with a VLAN
		 * tag; veth refuses XDP above MTU 3506 anyway).  busy_budget=0:
		 * preferred busy polling only costs on veth.
		 */
		pl->driver = "net_af_xdp";
		pl->uses_netdev = true;
		pl->data_room = AF_XDP_DATA_ROOM;
		pl->pool_size = AF_XDP_POOL_SIZE;
		pl->max_frame = AF_XDP_DATA_ROOM - RTE_PKTMBUF_HEADROOM - XDP_HEADROOM;
		dp->xdp_prog_fd = host_bpf_xdp_object_fd();
		if (dp->xdp_prog_fd < 0) {
			snprintf(err, errlen, "%s: cannot stage the XDP program: %s", cfg->name,
				 strerror(-dp->xdp_prog_fd));
			return dp->xdp_prog_fd;
		}
		snprintf(pl->args, sizeof(pl->args),
			 "iface=%s,start_queue=0,queue_count=1,busy_budget=0,xdp_prog=/proc/self/fd/%d",
			 cfg->netdev, dp->xdp_prog_fd);
		break;
	case HOST_PMD_MEMIF: {
		uint32_t bsize = align_up(frame, 128);

		ret = memif_clear_stale_socket(cfg, err, errlen);
		if (ret)
			return ret;

		pl->driver = "net_memif";
		if (bsize < 2048)
			bsize = 2048;
		/* A socket file, not an abstract one: abstract sockets stop at netns borders. */
		snprintf(pl->args, sizeof(pl->args),
			 "id=0,socket=%s/memif-%s.sock,socket-abstract=no,bsize=%u,rsize=10,mac=%s",
			 host_run_dir(), cfg->netdev, bsize, mac);
		break;
	}
	case HOST_PMD_PCAP:
		pl->driver = "net_pcap";
		break;
	case HOST_PMD_TAP:
		pl->driver = "net_tap";
		snprintf(pl->args, sizeof(pl->args), "iface=%s,mac=%s", cfg->netdev, mac);
		break;
	case HOST_PMD_PCI:
		pl->driver = NULL;
		break;
	}
	if (cfg->pmd != HOST_PMD_PCI)
		ret = append_pmd_args(pl->args, sizeof(pl->args), cfg->pmd_args, cfg->pmd);
	if (ret)
		snprintf(err, errlen, "%s: pmd_args too long", cfg->name);
	return ret;
}

/* What to try when a PMD refuses to start. */
static const char *pmd_fix(enum host_pmd pmd)
{
	switch (pmd) {
	case HOST_PMD_AF_XDP:
		return "the netdev may already run an XDP program (`ip link show`; `uroce loss IFACE off`), or hold another AF_XDP socket on queue 0";
	case HOST_PMD_PCAP:
		return "check pmd_args (rx=FILE,tx=FILE: the rx file must exist and be a pcap)";
	case HOST_PMD_MEMIF:
		return "check pmd_args (role=server|client) and that the socket directory exists";
	case HOST_PMD_TAP:
		return "check that /dev/net/tun exists and the interface name is free";
	default:
		return "set UROCE_DEBUG=1 to see DPDK's log";
	}
}

/* Is capability @cap (linux/capability.h numbering) in this process's effective set? */
static bool has_cap(unsigned cap)
{
	unsigned long long eff = 0;
	char line[128];
	bool found = false;
	FILE *f = fopen("/proc/self/status", "re");

	if (!f)
		return true;	/* cannot tell: let the kernel decide */
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "CapEff: %llx", &eff) == 1) {
			found = true;
			break;
		}
	fclose(f);
	return !found || (eff >> cap & 1);
}

#define CAP_NET_ADMIN_NUM	12
#define CAP_NET_RAW_NUM		13
#define CAP_SYS_ADMIN_NUM	21
#define CAP_BPF_NUM		39

/* The capabilities a PMD needs, checked up front: one clear line instead of a driver's guess. */
static int check_caps(const struct host_link_cfg *cfg, char *err, size_t errlen)
{
	const char *need = NULL, *setcap = NULL;

	switch (cfg->pmd) {
	case HOST_PMD_AF_PACKET:
		/* NET_ADMIN too: ethdev start restores the promiscuous flag by ioctl. */
		if (!has_cap(CAP_NET_RAW_NUM) || !has_cap(CAP_NET_ADMIN_NUM)) {
			need = "CAP_NET_RAW and CAP_NET_ADMIN";
			setcap = "cap_net_raw,cap_net_admin+ep";
		}
		break;
	case HOST_PMD_AF_XDP:
		if (!has_cap(CAP_NET_RAW_NUM) || !has_cap(CAP_NET_ADMIN_NUM) ||
		    (!has_cap(CAP_BPF_NUM) && !has_cap(CAP_SYS_ADMIN_NUM))) {
			need = "CAP_NET_RAW, CAP_NET_ADMIN and CAP_BPF";
			setcap = "cap_net_raw,cap_net_admin,cap_bpf+ep";
		}
		break;
	case HOST_PMD_TAP:
		if (!has_cap(CAP_NET_ADMIN_NUM)) {
			need = "CAP_NET_ADMIN";
			setcap = "cap_net_admin+ep";
		}
		break;
	default:
		break;
	}
	if (!need)
		return 0;
	snprintf(err, errlen, "%s: %s on %s needs %s: run as root, or `setcap %s PROGRAM`",
		 cfg->name, host_pmd_name(cfg->pmd), cfg->netdev, need, setcap);
	return -EPERM;
}

static int probe(struct dp_port *dp, const struct pmd_plan *pl, char *err, size_t errlen)
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
	snprintf(dp->vdev_name, sizeof(dp->vdev_name), "%s_uroce%u", pl->driver,
		 atomic_fetch_add(&port_seq, 1));
	ret = rte_vdev_init(dp->vdev_name, pl->args);
	if (ret) {
		snprintf(what, sizeof(what), "%s: cannot open the %s port on %s", cfg->name,
			 host_pmd_name(cfg->pmd), cfg->netdev);
		return fail_dpdk(err, errlen, ret, what, pmd_fix(cfg->pmd));
	}
	dp->is_vdev = true;
	if (rte_eth_dev_get_port_by_name(dp->vdev_name, &dp->port_id)) {
		snprintf(err, errlen, "%s: DPDK created %s but no port for it", cfg->name,
			 dp->vdev_name);
		return -ENODEV;
	}
	return 0;
}

static int start_ethdev(struct dp_port *dp, const struct pmd_plan *pl, uint32_t mtu, char *err,
			size_t errlen)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	char pool_name[RTE_MEMPOOL_NAMESIZE], what[400];
	int ret;

	snprintf(pool_name, sizeof(pool_name), "uroce_pool%u", atomic_fetch_add(&port_seq, 1));
	/* Pools in plain memory (EAL --no-huge): what they need becomes resident at creation. */
	dp->pool = rte_pktmbuf_pool_create(pool_name, pl->pool_size, POOL_CACHE, 0,
					   (uint16_t)pl->data_room, (int)rte_socket_id());
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
		ret = rte_eth_rx_queue_setup(dp->port_id, 0, RING_DESCS,
					     (unsigned)rte_eth_dev_socket_id(dp->port_id), NULL,
					     dp->pool);
	if (!ret)
		ret = rte_eth_tx_queue_setup(dp->port_id, 0, RING_DESCS,
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
	return fail_dpdk(err, errlen, ret, what, pmd_fix(dp->cfg.pmd));
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

int dp_port_open(const struct host_link_cfg *cfg, const struct host_qpn_map *qpns,
		 struct dp_port **out, char *err, size_t errlen)
{
	struct host_neigh_cfg ncfg;
	struct host_link_info link;
	static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;
	uint8_t fds_before[FD_SCAN_MAX];
	uint32_t xdp_ppm = 0;
	struct pmd_plan plan;
	struct dp_port *dp;
	char pcap_err[256];
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
	ret = check_caps(cfg, err, errlen);
	if (ret)
		return ret;
	ret = dp_eal_start(cfg, err, errlen);
	if (ret)
		return ret;
	dp = calloc(1, sizeof(*dp));
	if (!dp) {
		snprintf(err, errlen, "%s: out of memory", cfg->name);
		return -ENOMEM;
	}
	dp->cfg = *cfg;
	dp->uses_netdev = host_pmd_uses_netdev(cfg->pmd);
	dp->memif_client = cfg->pmd == HOST_PMD_MEMIF && strstr(cfg->pmd_args, "role=client");
	dp->qpns = qpns;
	dp->xdp_prog_fd = -1;
	dp->neigh_tap_fd = -1;
	dp->ifindex = link.ifindex;
	dp->speed_mbps = link.speed_mbps;
	pthread_mutex_init(&dp->addr_lock, NULL);
	memcpy(dp->base.mac, link.mac, 6);
	mtu = cfg->mtu ? cfg->mtu : link.mtu;
	ret = plan_pmd(dp, mtu, &plan, err, errlen);
	if (ret)
		goto err_free;
	if (cfg->pmd == HOST_PMD_AF_XDP) {
		char why[384];

		ret = host_bpf_xdp_claim(cfg->netdev, &xdp_ppm, why, sizeof(why));
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
	ret = probe(dp, &plan, err, errlen);
	if (ret) {
		pthread_mutex_unlock(&probe_lock);
		goto err_free;
	}
	dp->packet_fd = cfg->pmd == HOST_PMD_AF_PACKET ?
			find_new_socket(fds_before, FD_SCAN_MAX, AF_PACKET) : -1;
	ret = start_ethdev(dp, &plan, mtu, err, errlen);
	/* The socket the PMD receives on: the progress thread sleeps in poll() on it. */
	dp->rx_fd = cfg->pmd == HOST_PMD_AF_XDP && !ret ?
		    find_new_socket(fds_before, FD_SCAN_MAX, AF_XDP) : dp->packet_fd;
	pthread_mutex_unlock(&probe_lock);
	if (ret)
		goto err_close;
	if (dp->xdp_prog_fd >= 0) {
		close(dp->xdp_prog_fd);
		dp->xdp_prog_fd = -1;
		/* Ours now: a later open can tell a dead owner's program from a live one's. */
		host_bpf_xdp_set_owner(cfg->netdev, (uint32_t)getpid(), xdp_ppm);
	}
	dp->max_frame = plan.max_frame;
	if (mtu + ETH_OVERHEAD > dp->max_frame)
		mtu = dp->max_frame - ETH_OVERHEAD;
	dp->base.mtu = mtu;
	dp->base.ops = &dp_port_ops;
	snprintf(dp->name, sizeof(dp->name), "%s:%s", host_pmd_name(cfg->pmd), cfg->netdev);
	dp->base.name = dp->name;
	atomic_store(&dp->link_up, link.up);

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
	if (cfg->pmd == HOST_PMD_AF_XDP) {
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
	} else {
		struct rte_eth_link link;

		up = atomic_load(&dp->started) && rte_eth_link_get_nowait(dp->port_id, &link) == 0 &&
		     link.link_status == RTE_ETH_LINK_UP;
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

int dp_port_forward(void *arg, uint32_t dest_qp, const void *frame, uint32_t len)
{
	struct dp_port *dp = arg;
	uint32_t start;
	int32_t owner;

	if (!dp->loop || !dp->qpns)
		return -ENOENT;
	owner = host_qpn_owner(dp->qpns, dest_qp, &start);
	if (!owner || owner == (int32_t)getpid())
		return -ENOENT;
	/* A full ring or a peer gone loses the frame, as a wire would: the requester retries. */
	if (host_ring_send(dp->loop, owner, start, frame, len))
		dp->cnt.tx_loop_dropped++;
	else
		dp->cnt.tx_loop++;
	return 0;
}

int dp_port_rx_fd(struct dp_port *dp)
{
	return dp->rx_fd;
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
	out->rx_ring_drops = atomic_load(&dp->ring_drops);
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
