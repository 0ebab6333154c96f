// SPDX-License-Identifier: MIT
/*
 * uroce-porttest: RoCE frames through the DPDK port without the engine, for
 * tests and the port benchmark.  Frames are UD SEND_ONLY packets built and
 * checked by wire/ (ICRC included); the DETH source QP says where to answer.
 *
 *   uroce-porttest pong    [PORT] [--count N] [--timeout S]
 *   uroce-porttest ping    [PORT] --peer IP --peer-qpn N [--count N] [--size B] [--timeout S]
 *   uroce-porttest blast   [PORT] --peer IP --peer-qpn N [--count N] [--size B] [--wait-ms MS]
 *   uroce-porttest stream  [PORT] --peer IP --peer-qpn N [--size B] [--timeout S] --plain
 *   uroce-porttest sink    [PORT] [--timeout S] --plain
 *   uroce-porttest resolve [PORT] --peer IP
 *   uroce-porttest udp-pong --bind IP:PORT      (kernel UDP, busy-polling baseline)
 *   uroce-porttest udp-ping --peer IP:PORT [--count N] [--size B]
 *   uroce-porttest kfilter add|del IFACE        (host_kernel_filter_install/remove)
 *
 * PORT: --pmd NAME --netdev IFACE [--pmd-args ARGS] [--mtu N] [--mac MAC]
 *       [--ip ADDR]... [--qpn N | --qpn-alloc] [--plain] [--with-ack] [--name NAME]
 * --plain: bypass the port's receive path (raw rte_eth_rx/tx_burst on the
 * same ethdev): the plain DPDK baseline of the benchmark.
 * --with-ack: ping and pong put an RC ACKNOWLEDGE in front of every frame,
 * in the same burst: the frames an RC write ping-pong must send (each side
 * acknowledges the peer's write along with its own), without a transport.
 * stream/sink: one-way goodput of raw bursts of one prebuilt frame, what the
 * PMD itself carries (no transport, no checks): the ceiling of the benchmark.
 * At exit the port's counters are printed as "name=value" lines.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "uroce/config.h"
#include "uroce/dp.h"
#include "uroce/wire.h"
#include "dp_port.h"
#include "host_qpn.h"

#define QKEY		0x11111111u
#define MAX_SAMPLES	1000000

struct opts {
	const char	*mode;
	struct host_link_cfg cfg;
	uint8_t		peer[16];
	bool		have_peer;
	uint8_t		peer_mac[6];
	bool		have_peer_mac;	/* skip ARP/ND (plain mode: nothing answers it) */
	char		peer_udp[64];
	char		bind_udp[64];
	uint32_t	qpn, peer_qpn;
	bool		qpn_alloc, plain, quiet, with_ack;
	unsigned long	count;
	uint32_t	size;
	double		timeout;
	double		wait_ms;	/* per ping */
};

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int parse_gid(const char *s, uint8_t gid[16])
{
	memset(gid, 0, 16);
	if (inet_pton(AF_INET6, s, gid) == 1)
		return 0;
	gid[10] = gid[11] = 0xff;
	return inet_pton(AF_INET, s, gid + 12) == 1 ? 0 : -1;
}

static void usage(void)
{
	fprintf(stderr, "usage: uroce-porttest pong|ping|resolve|udp-ping|udp-pong [options] "
			"(see the comment at the top of tests/dpdk/porttest.c)\n");
	exit(2);
}

static void parse(int argc, char **argv, struct opts *o)
{
	static const struct option longopts[] = {
		{ "pmd", 1, 0, 'p' }, { "netdev", 1, 0, 'n' }, { "pmd-args", 1, 0, 'a' },
		{ "mtu", 1, 0, 'm' }, { "mac", 1, 0, 'M' }, { "ip", 1, 0, 'i' },
		{ "qpn", 1, 0, 'q' }, { "qpn-alloc", 0, 0, 'Q' }, { "peer", 1, 0, 'P' },
		{ "peer-qpn", 1, 0, 'R' }, { "count", 1, 0, 'c' }, { "size", 1, 0, 's' },
		{ "timeout", 1, 0, 't' }, { "plain", 0, 0, 'x' }, { "bind", 1, 0, 'b' },
		{ "name", 1, 0, 'N' }, { "wait-ms", 1, 0, 'w' }, { "quiet", 0, 0, 'z' },
		{ "eal-args", 1, 0, 'e' }, { "peer-mac", 1, 0, 'A' }, { "with-ack", 0, 0, 'K' },
		{ 0, 0, 0, 0 } };
	int c;

	if (argc < 2)
		usage();
	o->mode = argv[1];
	strcpy(o->cfg.name, "udtest");
	o->cfg.pmd = HOST_PMD_AF_PACKET;
	o->qpn = 0x200;
	o->peer_qpn = 0x200;
	o->count = strstr(o->mode, "pong") ? 0 : 1000;	/* pongs: until the timeout */
	o->size = 64;
	o->timeout = 10;
	o->wait_ms = 200;
	optind = 2;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (host_pmd_parse(optarg, &o->cfg.pmd))
				usage();
			break;
		case 'n': snprintf(o->cfg.netdev, sizeof(o->cfg.netdev), "%s", optarg); break;
		case 'a': snprintf(o->cfg.pmd_args, sizeof(o->cfg.pmd_args), "%s", optarg); break;
		case 'e': snprintf(o->cfg.eal_args, sizeof(o->cfg.eal_args), "%s", optarg); break;
		case 'm': o->cfg.mtu = (uint32_t)atoi(optarg); break;
		case 'M':
		case 'A': {
			unsigned v[6];

			if (sscanf(optarg, "%x:%x:%x:%x:%x:%x", &v[0], &v[1], &v[2], &v[3], &v[4],
				   &v[5]) != 6)
				usage();
			for (int k = 0; k < 6; k++)
				(c == 'M' ? o->cfg.mac : o->peer_mac)[k] = (uint8_t)v[k];
			o->have_peer_mac |= c == 'A';
			break;
		}
		case 'i':
			if (o->cfg.n_addrs >= HOST_MAX_ADDRS ||
			    parse_gid(optarg, o->cfg.addrs[o->cfg.n_addrs++]))
				usage();
			break;
		case 'q': o->qpn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'Q': o->qpn_alloc = true; break;
		case 'P':
			snprintf(o->peer_udp, sizeof(o->peer_udp), "%s", optarg);
			o->have_peer = parse_gid(optarg, o->peer) == 0;
			break;
		case 'R': o->peer_qpn = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'c': o->count = strtoul(optarg, NULL, 0); break;
		case 's': o->size = (uint32_t)atoi(optarg); break;
		case 't': o->timeout = atof(optarg); break;
		case 'w': o->wait_ms = atof(optarg); break;
		case 'x': o->plain = true; break;
		case 'z': o->quiet = true; break;
		case 'K': o->with_ack = true; break;
		case 'b': snprintf(o->bind_udp, sizeof(o->bind_udp), "%s", optarg); break;
		case 'N': snprintf(o->cfg.name, sizeof(o->cfg.name), "%s", optarg); break;
		default: usage();
		}
	}
}

/* ---- RTT statistics ---- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report_rtt(const char *what, uint64_t *s, unsigned long n, unsigned long sent,
		       uint32_t size)
{
	double sum = 0;

	if (n == 0) {
		printf("%s size=%u sent=%lu received=0\n", what, size, sent);
		return;
	}
	qsort(s, n, sizeof(*s), cmp_u64);
	for (unsigned long i = 0; i < n; i++)
		sum += (double)s[i];
	printf("%s size=%u sent=%lu received=%lu rtt_min_us=%.2f rtt_median_us=%.2f "
	       "rtt_p99_us=%.2f rtt_avg_us=%.2f\n", what, size, sent, n, s[0] / 1e3,
	       s[n / 2] / 1e3, s[n * 99 / 100] / 1e3, sum / (double)n / 1e3);
}

/* ---- Frames ---- */

struct endpoint {
	struct dp_port	*dp;
	struct port	*p;
	uint8_t		gid[16];	/* our address of the peer's family */
	uint32_t	qpn;
	bool		plain, with_ack;
};

static void fill_desc(struct wire_build_desc *d, const struct endpoint *ep, const uint8_t dst_mac[6],
		      const uint8_t dst_gid[16], uint32_t dest_qp, uint32_t psn)
{
	static const uint8_t v4prefix[12] = { [10] = 0xff, [11] = 0xff };

	memset(d, 0, sizeof(*d));
	memcpy(d->src_mac, ep->p->mac, 6);
	memcpy(d->dst_mac, dst_mac, 6);
	d->ip_version = memcmp(dst_gid, v4prefix, 12) ? 6 : 4;
	memcpy(d->src_gid, ep->gid, 16);
	memcpy(d->dst_gid, dst_gid, 16);
	d->opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
	d->dest_qp = dest_qp;
	d->psn = psn & WIRE_24BIT_MASK;
	d->deth.qkey = QKEY;
	d->deth.src_qp = ep->qpn;
}

/* Give back a buffer from build_frame() that will not be sent. */
static void discard_frame(struct endpoint *ep, struct port_frame *f)
{
	if (ep->plain)
		dp_port_raw_free(f, 1);
	else
		ep->p->ops->tx_abort(ep->p, f);
}

/* Build one frame of @d into a fresh buffer: an mbuf (plain) or a port buffer. */
static int build_frame(struct endpoint *ep, const struct wire_build_desc *d, const void *payload,
		       uint32_t len, struct port_frame *f)
{
	uint32_t flen = wire_frame_len(d, len);
	int ret;

	ret = ep->plain ? dp_port_raw_alloc(ep->dp, f, 1, flen) : ep->p->ops->tx_alloc(ep->p, f, flen);
	if (ret)
		return ret;
	if (wire_build(f->data, flen, d, payload, len))
		return 0;
	discard_frame(ep, f);
	return -EINVAL;
}

/*
 * Build one frame and queue it (plain: send it), after an RC ACKNOWLEDGE
 * to the same peer with --with-ack, both in one burst.  Return: 0 or -errno.
 */
static int send_frame(struct endpoint *ep, const struct wire_build_desc *d, const void *payload,
		      uint32_t len)
{
	struct port_frame f[2];
	unsigned n = 0;
	int ret;

	if (ep->with_ack) {
		struct wire_build_desc ack = *d;

		ack.opcode = WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE;
		ack.psn = (d->psn + 0x800000) & WIRE_24BIT_MASK;	/* never taken for an answer */
		if ((ret = build_frame(ep, &ack, NULL, 0, &f[n])))
			return ret;
		n++;
	}
	if ((ret = build_frame(ep, d, payload, len, &f[n]))) {
		if (n)
			discard_frame(ep, &f[0]);
		return ret;
	}
	n++;
	if (!ep->plain) {
		ep->p->ops->tx_burst(ep->p, f, n);
		return 0;
	}
	return dp_port_raw_tx(ep->dp, f, n) < n ? -ENOBUFS : 0;
}

/* What the device's progress thread does every 100 ms: follow the link state. */
static void maybe_refresh(struct endpoint *ep)
{
	static uint64_t last;
	uint64_t now = now_ns();

	if (now - last < 100000000ull)
		return;
	last = now;
	if (dp_port_refresh(ep->dp) & DP_PORT_LINK_CHANGED)
		printf("link changed\n");
}

static void flush(struct endpoint *ep)
{
	if (!ep->plain)
		ep->p->ops->flush(ep->p);
}

/* Receive a burst: frames in @f (release with rx_done). */
static unsigned rx(struct endpoint *ep, struct port_frame *f)
{
	if (ep->plain)
		return dp_port_raw_rx(ep->dp, f, DP_BURST);
	return ep->p->ops->rx_burst(ep->p, f, DP_BURST);
}

static void rx_done(struct endpoint *ep, struct port_frame *f, unsigned n)
{
	if (ep->plain) {
		dp_port_raw_free(f, n);
		return;
	}
	ep->p->ops->rx_release(ep->p, f, n);
}

static void print_counters(struct dp_port *dp)
{
	struct dp_port_counters c;
	struct host_neigh_counters nc;

	dp_port_counters(dp, &c);
	dp_port_neigh_counters(dp, &nc);
	for (unsigned i = 0; dp_port_counter_names[i]; i++)
		printf("%s=%" PRIu64 "\n", dp_port_counter_names[i], (&c.rx_frames)[i]);
	for (unsigned i = 0; host_neigh_counter_names[i]; i++)
		printf("%s=%" PRIu64 "\n", host_neigh_counter_names[i], (&nc.arp_req_tx)[i]);
}

/* Our address of the family of @peer (IPv4-mapped or IPv6), from the netdev or --ip. */
static int pick_gid(struct endpoint *ep, const uint8_t peer[16])
{
	static const uint8_t v4prefix[12] = { [10] = 0xff, [11] = 0xff };
	bool v4 = !memcmp(peer, v4prefix, 12);
	uint8_t addrs[HOST_MAX_ADDRS][16];
	unsigned n = dp_port_addrs(ep->dp, addrs, HOST_MAX_ADDRS);

	bool peer_ll = peer[0] == 0xfe && (peer[1] & 0xc0) == 0x80;
	int any = -1;

	for (unsigned i = 0; i < n; i++) {
		bool ll = addrs[i][0] == 0xfe && (addrs[i][1] & 0xc0) == 0x80;

		if (!memcmp(addrs[i], v4prefix, 12) != v4)
			continue;
		if (v4 || ll == peer_ll) {
			memcpy(ep->gid, addrs[i], 16);
			return 0;
		}
		if (any < 0)
			any = (int)i;
	}
	if (any < 0)
		return -1;
	memcpy(ep->gid, addrs[any], 16);
	return 0;
}

static int resolve(struct endpoint *ep, const uint8_t peer[16], uint8_t mac[6], double timeout,
		   bool print)
{
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(timeout * 1e9);
	struct port_frame f[DP_BURST];
	int ret;

	for (;;) {
		unsigned n;

		ret = ep->p->ops->resolve(ep->p, peer, mac);
		ep->p->ops->flush(ep->p);
		if (ret != -EAGAIN || now_ns() > end || stop)
			break;
		n = ep->p->ops->rx_burst(ep->p, f, DP_BURST);
		if (n)
			ep->p->ops->rx_release(ep->p, f, n);
	}
	if (print) {
		if (ret == 0)
			printf("resolved mac=%02x:%02x:%02x:%02x:%02x:%02x after_ms=%.3f\n", mac[0],
			       mac[1], mac[2], mac[3], mac[4], mac[5], (now_ns() - t0) / 1e6);
		else
			printf("resolve failed: %s after_ms=%.3f\n", strerror(-ret),
			       (now_ns() - t0) / 1e6);
	}
	return ret;
}

/*
 * Parse a received frame as RoCE.  A broken one counts in @bad; with
 * --plain every frame of the netdev arrives, and the kernel's own (ARP,
 * IPv6 neighbour discovery, other protocols) are passed over uncounted.
 */
static bool parse_roce(const struct port_frame *f, struct wire_pkt *pkt, unsigned long *bad)
{
	enum wire_drop r = wire_parse(f->data, f->len, 0, pkt);

	if (r == WIRE_DROP_NONE)
		return true;
	if (r != WIRE_DROP_NOT_IP && r != WIRE_DROP_NOT_UDP && r != WIRE_DROP_NOT_ROCE_PORT)
		(*bad)++;
	return false;
}

static int run_pong(struct endpoint *ep, const struct opts *o)
{
	uint64_t end = now_ns() + (uint64_t)(o->timeout * 1e9);
	unsigned long echoed = 0, bad = 0;
	struct port_frame f[DP_BURST];

	while (!stop && (o->count == 0 || echoed < o->count)) {
		unsigned n = rx(ep, f);

		if (n == 0) {
			if (now_ns() > end)
				break;
			flush(ep);
			maybe_refresh(ep);
			continue;
		}
		for (unsigned i = 0; i < n; i++) {
			struct wire_build_desc d;
			struct wire_pkt pkt;
			const struct wire_deth *deth;

			if (!parse_roce(&f[i], &pkt, &bad))
				continue;
			if (o->with_ack && pkt.opcode == (WIRE_OPC_RC | WIRE_OP_ACKNOWLEDGE))
				continue;
			if (pkt.opcode != (WIRE_OPC_UD | WIRE_OP_SEND_ONLY)) {
				bad++;
				continue;
			}
			deth = wire_pkt_ext(&pkt, WIRE_EXT_DETH);
			memcpy(ep->gid, pkt.dst_gid, 16);
			fill_desc(&d, ep, pkt.src_mac, pkt.src_gid,
				  wire_get32(deth->src_qp) & WIRE_24BIT_MASK, pkt.psn);
			if (send_frame(ep, &d, wire_pkt_payload(&pkt), pkt.payload_len) == 0)
				echoed++;
		}
		rx_done(ep, f, n);
		flush(ep);
	}
	printf("pong echoed=%lu bad=%lu\n", echoed, bad);
	return 0;
}

static int run_ping(struct endpoint *ep, const struct opts *o)
{
	uint64_t *rtt = calloc(o->count ? o->count : 1, sizeof(*rtt));
	uint64_t end = now_ns() + (uint64_t)(o->timeout * 1e9);
	uint8_t *payload = malloc(o->size), mac[6];
	unsigned long sent = 0, got = 0, bad = 0, mismatched = 0;
	struct port_frame f[DP_BURST];
	struct wire_build_desc d;
	int ret;

	if (!rtt || !payload)
		return 1;
	if (o->have_peer_mac)
		memcpy(mac, o->peer_mac, 6);
	else if (resolve(ep, o->peer, mac, o->timeout, !o->quiet))
		return 1;
	while (sent < o->count && !stop && now_ns() < end) {
		uint64_t t0, deadline;
		bool answered = false;

		for (uint32_t k = 0; k < o->size; k++)
			payload[k] = (uint8_t)(sent * 7 + k);
		fill_desc(&d, ep, mac, o->peer, o->peer_qpn, (uint32_t)sent);
		t0 = now_ns();
		ret = send_frame(ep, &d, payload, o->size);
		flush(ep);
		sent++;
		if (ret)
			continue;
		deadline = t0 + (uint64_t)(o->wait_ms * 1e6);
		maybe_refresh(ep);
		while (!answered && now_ns() < deadline && !stop) {
			unsigned n = rx(ep, f);

			for (unsigned i = 0; i < n; i++) {
				struct wire_pkt pkt;

				if (!parse_roce(&f[i], &pkt, &bad))
					continue;
				if (pkt.psn != ((sent - 1) & WIRE_24BIT_MASK) || pkt.dest_qp != ep->qpn)
					continue;	/* a late answer to an earlier ping */
				if (pkt.payload_len != o->size ||
				    memcmp(wire_pkt_payload(&pkt), payload, o->size))
					mismatched++;
				else
					rtt[got++] = now_ns() - t0;
				answered = true;
			}
			if (n)
				rx_done(ep, f, n);
		}
	}
	report_rtt(ep->plain ? "ping plain" : "ping port", rtt, got, sent, o->size);
	printf("ping bad=%lu mismatched=%lu lost=%lu\n", bad, mismatched, sent - got - mismatched);
	free(rtt);
	free(payload);
	return mismatched || bad ? 1 : 0;
}

/*
 * Pings in bursts of 32; after each burst, answers are collected until the
 * burst is complete or --wait-ms pass without one.  Counts what came back
 * (loss tests), independent of scheduling delays on a busy machine.
 */
static int run_blast(struct endpoint *ep, const struct opts *o)
{
	uint8_t *seen = calloc(o->count ? o->count : 1, 1), *payload = malloc(o->size), mac[6];
	unsigned long sent = 0, got = 0, bad = 0, dup = 0, mismatched = 0;
	struct port_frame f[DP_BURST];
	struct wire_build_desc d;

	if (!seen || !payload || resolve(ep, o->peer, mac, o->timeout, !o->quiet))
		return 1;
	while (sent < o->count && !stop) {
		unsigned long first = sent, burst_got = 0;
		uint64_t idle_since;

		while (sent < o->count && sent - first < DP_BURST) {
			for (uint32_t k = 0; k < o->size; k++)
				payload[k] = (uint8_t)(sent * 7 + k);
			fill_desc(&d, ep, mac, o->peer, o->peer_qpn, (uint32_t)sent);
			if (send_frame(ep, &d, payload, o->size))
				break;
			sent++;
		}
		flush(ep);
		idle_since = now_ns();
		while (!stop && burst_got < sent - first &&
		       now_ns() - idle_since < (uint64_t)(o->wait_ms * 1e6)) {
			unsigned n = rx(ep, f);

			for (unsigned i = 0; i < n; i++) {
				struct wire_pkt pkt;
				uint32_t psn;

				if (!parse_roce(&f[i], &pkt, &bad))
					continue;
				psn = pkt.psn;
				if (psn >= o->count || pkt.dest_qp != ep->qpn)
					continue;
				for (uint32_t k = 0; k < o->size; k++)
					payload[k] = (uint8_t)(psn * 7 + k);
				if (pkt.payload_len != o->size ||
				    memcmp(wire_pkt_payload(&pkt), payload, o->size)) {
					mismatched++;
				} else if (seen[psn]++) {
					dup++;
				} else {
					got++;
					burst_got += psn >= first;
				}
				idle_since = now_ns();
			}
			if (n)
				rx_done(ep, f, n);
			maybe_refresh(ep);
		}
	}
	printf("blast size=%u sent=%lu received=%lu duplicates=%lu bad=%lu mismatched=%lu\n", o->size,
	       sent, got, dup, bad, mismatched);
	free(seen);
	free(payload);
	return bad || mismatched || dup ? 1 : 0;
}

/* Raw bursts of copies of one prebuilt frame for --timeout seconds, as fast as the PMD takes them. */
static int run_stream(struct endpoint *ep, const struct opts *o)
{
	uint64_t t0 = now_ns(), end = t0 + (uint64_t)(o->timeout * 1e9), sent = 0;
	struct port_frame f[DP_BURST];
	struct wire_build_desc d;
	uint8_t *payload, *tmpl, mac[6];
	uint32_t flen;
	bool built;

	if (!ep->plain)
		return 1;
	if (o->have_peer_mac)
		memcpy(mac, o->peer_mac, 6);
	else if (resolve(ep, o->peer, mac, 5, !o->quiet))
		return 1;
	fill_desc(&d, ep, mac, o->peer, o->peer_qpn, 0);
	flen = wire_frame_len(&d, o->size);
	payload = calloc(1, o->size ? o->size : 1);
	tmpl = malloc(flen ? flen : 1);
	built = flen && payload && tmpl && wire_build(tmpl, flen, &d, payload, o->size);
	free(payload);
	if (!built) {
		free(tmpl);
		return 1;
	}
	while (!stop && now_ns() < end) {
		if (dp_port_raw_alloc(ep->dp, f, DP_BURST, flen))
			continue;
		for (unsigned i = 0; i < DP_BURST; i++)
			memcpy(f[i].data, tmpl, flen);
		sent += dp_port_raw_tx(ep->dp, f, DP_BURST);
	}
	printf("stream size=%u frame=%u sent=%" PRIu64 " seconds=%.3f\n", o->size, flen, sent,
	       (now_ns() - t0) / 1e9);
	free(tmpl);
	return 0;
}

/* Counts RoCE frames and their payload bytes until --timeout, or 1 s without one after the first. */
static int run_sink(struct endpoint *ep, const struct opts *o)
{
	uint64_t end = now_ns() + (uint64_t)(o->timeout * 1e9), first = 0, last = 0, frames = 0;
	uint64_t bytes = 0;
	struct port_frame f[DP_BURST];

	if (!ep->plain)
		return 1;
	while (!stop) {
		uint64_t now = now_ns();
		unsigned n = rx(ep, f);

		if (n) {
			if (!first)
				first = now;
			last = now;
			for (unsigned i = 0; i < n; i++) {
				struct wire_pkt pkt;

				if (wire_parse(f[i].data, f[i].len, WIRE_PARSE_SKIP_ICRC, &pkt) ==
				    WIRE_DROP_NONE) {
					frames++;
					bytes += pkt.payload_len;
				}
			}
			rx_done(ep, f, n);
		} else if (now > end || (first && now - last > 1000000000ull)) {
			break;
		}
	}
	printf("sink frames=%" PRIu64 " payload_bytes=%" PRIu64 " seconds=%.6f goodput_gbps=%.3f\n",
	       frames, bytes, (last - first) / 1e9,
	       last > first ? bytes * 8.0 / (double)(last - first) : 0.0);
	return 0;
}

/* ---- Kernel UDP baseline: non-blocking sockets polled in a loop ---- */

static int udp_socket(const char *spec, struct sockaddr_storage *sa, socklen_t *len, bool bind_it)
{
	char host[64], *colon;
	int fd, port;

	snprintf(host, sizeof(host), "%s", spec);
	colon = strrchr(host, ':');
	if (!colon)
		return -1;
	*colon = '\0';
	port = atoi(colon + 1);
	memset(sa, 0, sizeof(*sa));
	if (strchr(host, ':')) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)sa;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
		inet_pton(AF_INET6, host, &s6->sin6_addr);
		*len = sizeof(*s6);
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)sa;

		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
		inet_pton(AF_INET, host, &s4->sin_addr);
		*len = sizeof(*s4);
	}
	fd = socket(sa->ss_family, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	if (fd >= 0 && bind_it && bind(fd, (struct sockaddr *)sa, *len)) {
		close(fd);
		return -1;
	}
	return fd;
}

static int run_udp_pong(const struct opts *o)
{
	struct sockaddr_storage sa, from;
	uint64_t end = now_ns() + (uint64_t)(o->timeout * 1e9);
	unsigned long echoed = 0;
	char buf[65536];
	socklen_t len;
	int fd = udp_socket(o->bind_udp, &sa, &len, true);

	if (fd < 0)
		return perror("udp-pong"), 1;
	while (!stop && now_ns() < end && (o->count == 0 || echoed < o->count)) {
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen);

		if (n < 0)
			continue;
		sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
		echoed++;
	}
	printf("udp-pong echoed=%lu\n", echoed);
	close(fd);
	return 0;
}

static int run_udp_ping(const struct opts *o)
{
	struct sockaddr_storage sa;
	uint64_t *rtt = calloc(o->count ? o->count : 1, sizeof(*rtt));
	unsigned long sent = 0, got = 0;
	char *buf = calloc(1, 65536), *in = calloc(1, 65536);
	socklen_t len;
	int fd = udp_socket(o->peer_udp, &sa, &len, false);

	if (fd < 0 || !rtt || !buf || !in)
		return perror("udp-ping"), 1;
	while (sent < o->count && !stop) {
		uint64_t t0 = now_ns(), deadline = t0 + (uint64_t)(o->wait_ms * 1e6);

		memcpy(buf, &sent, sizeof(sent));
		sendto(fd, buf, o->size, 0, (struct sockaddr *)&sa, len);
		sent++;
		while (now_ns() < deadline) {
			ssize_t n = recv(fd, in, 65536, 0);

			unsigned long seq;

			memcpy(&seq, in, sizeof(seq));
			if (n == (ssize_t)o->size && seq == sent - 1) {
				rtt[got++] = now_ns() - t0;
				break;
			}
		}
	}
	report_rtt("udp-ping kernel", rtt, got, sent, o->size);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct host_qpn_map *qmap = NULL;
	struct endpoint ep = { 0 };
	struct opts o;
	char err[512];
	int ret;

	memset(&o, 0, sizeof(o));
	parse(argc, argv, &o);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(o.mode, "udp-pong"))
		return run_udp_pong(&o);
	if (!strcmp(o.mode, "udp-ping"))
		return run_udp_ping(&o);
	if (!strcmp(o.mode, "kfilter") && argc == 4) {
		ret = !strcmp(argv[2], "add") ? host_kernel_filter_install(argv[3], err, sizeof(err)) :
						host_kernel_filter_remove(argv[3], err, sizeof(err));
		if (ret)
			fprintf(stderr, "uroce-porttest: %s\n", err);
		return ret ? 1 : 0;
	}
	if (strcmp(o.mode, "pong") && strcmp(o.mode, "ping") && strcmp(o.mode, "resolve") &&
	    strcmp(o.mode, "blast") && strcmp(o.mode, "stream") && strcmp(o.mode, "sink"))
		usage();
	if (o.qpn_alloc) {
		ret = host_qpn_open(o.cfg.netdev, &qmap, err, sizeof(err));
		if (!ret)
			ret = host_qpn_alloc(qmap, &o.qpn);
		if (ret) {
			fprintf(stderr, "uroce-porttest: QPN: %s\n", err);
			return 1;
		}
		printf("qpn=0x%x\n", o.qpn);
	}
	ret = dp_port_open(&o.cfg, qmap, &ep.dp, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "uroce-porttest: %s\n", err);
		return 1;
	}
	ep.p = dp_port_base(ep.dp);
	ep.qpn = o.qpn;
	ep.plain = o.plain;
	ep.with_ack = o.with_ack;
	printf("port %s mac=%02x:%02x:%02x:%02x:%02x:%02x mtu=%u\n", ep.p->name, ep.p->mac[0],
	       ep.p->mac[1], ep.p->mac[2], ep.p->mac[3], ep.p->mac[4], ep.p->mac[5], ep.p->mtu);
	if (o.have_peer && pick_gid(&ep, o.peer)) {
		fprintf(stderr, "uroce-porttest: no address of the peer's family on %s\n",
			o.cfg.netdev);
		ret = 1;
	} else if (!strcmp(o.mode, "pong")) {
		ret = run_pong(&ep, &o);
	} else if (!strcmp(o.mode, "ping")) {
		ret = run_ping(&ep, &o);
	} else if (!strcmp(o.mode, "blast")) {
		ret = run_blast(&ep, &o);
	} else if (!strcmp(o.mode, "stream")) {
		ret = run_stream(&ep, &o);
	} else if (!strcmp(o.mode, "sink")) {
		ret = run_sink(&ep, &o);
	} else {
		uint8_t mac[6];

		ret = resolve(&ep, o.peer, mac, o.timeout, true) ? 1 : 0;
	}
	if (!o.quiet)
		print_counters(ep.dp);
	dp_port_close(ep.dp);
	host_qpn_close(qmap);
	return ret;
}
