// SPDX-License-Identifier: MIT
/* The replay runner's port: paces the lower port by the virtual clock and records what is sent. */
#include <errno.h>
#include <string.h>

#include "replay_port.h"
#include "uroce/port_pcap.h"

static struct rp_port *to_rp(struct port *p)
{
	return (struct rp_port *)p;
}

static unsigned rp_rx_burst(struct port *p, struct port_frame *f, unsigned max)
{
	struct rp_port *rp = to_rp(p);
	struct port *low = rp->lower ? rp->lower->port : NULL;
	unsigned allowed = rp->due - rp->delivered, n;

	if (!low || !allowed)
		return 0;
	n = low->ops->rx_burst(low, f, max < allowed ? max : allowed);
	rp->delivered += n;
	return n;
}

static void rp_rx_release(struct port *p, struct port_frame *f, unsigned n)
{
	struct port *low = to_rp(p)->lower->port;

	low->ops->rx_release(low, f, n);
}

static int rp_tx_alloc(struct port *p, struct port_frame *f, uint32_t len)
{
	struct rp_port *rp = to_rp(p);
	struct port *low = rp->lower ? rp->lower->port : NULL;

	return low ? low->ops->tx_alloc(low, f, len) : -ENOBUFS;
}

static void rp_tx_abort(struct port *p, struct port_frame *f)
{
	struct port *low = to_rp(p)->lower->port;

	low->ops->tx_abort(low, f);
}

static void rp_tx_burst(struct port *p, struct port_frame *f, unsigned n)
{
	struct rp_port *rp = to_rp(p);
	struct port *low = rp->lower->port;

	for (unsigned i = 0; i < n; i++)
		if (!rp_frames_add(&rp->sent, rp->now, f[i].data, f[i].len))
			rp->sent.f[rp->sent.n - 1].window = rp->due;
	low->ops->tx_burst(low, f, n);
}

static void rp_flush(struct port *p)
{
	struct rp_port *rp = to_rp(p);
	struct port *low = rp->lower ? rp->lower->port : NULL;

	if (low)
		low->ops->flush(low);
}

static int rp_resolve(struct port *p, const uint8_t gid[16], uint8_t mac[6])
{
	const struct fixture *fx = to_rp(p)->fx;

	for (unsigned i = 0; i < fx->n_peers; i++)
		if (!memcmp(fx->peers[i].gid, gid, 16)) {
			memcpy(mac, fx->peers[i].mac, 6);
			return 0;
		}
	return -EHOSTUNREACH;
}

static void rp_destroy(struct port *p)
{
	(void)p;
}

static const struct port_ops rp_ops = {
	.rx_burst	= rp_rx_burst,
	.rx_release	= rp_rx_release,
	.tx_alloc	= rp_tx_alloc,
	.tx_abort	= rp_tx_abort,
	.tx_burst	= rp_tx_burst,
	.flush		= rp_flush,
	.resolve	= rp_resolve,
	.destroy	= rp_destroy,
};

void rp_port_init(struct rp_port *p, const struct fixture *fx)
{
	memset(p, 0, sizeof(*p));
	p->base.ops = &rp_ops;
	memcpy(p->base.mac, fx->local_mac, 6);
	p->base.mtu = fx->local_mtu;
	p->base.name = "replay";
	p->fx = fx;
}

void rp_port_attach(struct rp_port *p, struct rp_lower *l)
{
	p->lower = l;
}

void rp_port_set_time(struct rp_port *p, uint64_t now, const struct rp_frames *input)
{
	p->now = now;
	while (p->due < input->n && input->f[p->due].t_ns <= now)
		p->due++;
	if (p->lower && p->lower->port && p->lower->backend == RP_PCAP_PORT)
		port_pcap_set_time(p->lower->port, now);
}

void rp_port_free(struct rp_port *p)
{
	rp_frames_free(&p->sent);
}

/* ---- The lower port ---- */

int rp_lower_open(struct rp_lower *l, enum rp_backend backend, const struct fixture *fx,
		  const char *rx_path, const char *tx_path, char *err, size_t errlen)
{
	memset(l, 0, sizeof(*l));
	l->backend = backend;
	if (backend == RP_PCAP_PORT) {
		struct port_pcap_cfg cfg = {
			.rx_path = rx_path,
			.tx_path = tx_path,
			.mtu = fx->local_mtu,
			.name = fx->name,
		};

		memcpy(cfg.mac, fx->local_mac, 6);
		l->port = port_pcap_open(&cfg, err, errlen);
		return l->port ? 0 : -EINVAL;
	}
#ifdef UROCE_REPLAY_DPDK
	return rp_dpdk_open(fx, rx_path, tx_path, &l->port, &l->dpdk, err, errlen);
#else
	snprintf(err, errlen, "this uroce was built without the DPDK dataplane (dp_dep): --dpdk is not available");
	return -ENOTSUP;
#endif
}

void rp_lower_finish(struct rp_lower *l)
{
	if (!l->port)
		return;
	if (l->backend == RP_PCAP_PORT) {
		l->port->ops->flush(l->port);
		return;
	}
#ifdef UROCE_REPLAY_DPDK
	rp_dpdk_close(l->dpdk, &l->not_roce);
	l->dpdk = NULL;
	l->port = NULL;
#endif
}

void rp_lower_close(struct rp_lower *l)
{
	if (l->backend == RP_PCAP_PORT) {
		if (l->port)
			l->port->ops->destroy(l->port);
	} else {
		rp_lower_finish(l);
	}
	l->port = NULL;
}

const char *rp_lower_name(const struct rp_lower *l)
{
	return l->backend == RP_PCAP_PORT ? "pcap" : "DPDK pcap PMD";
}

void rp_lower_adjust_counters(const struct rp_lower *l, struct rc_counters *c)
{
	c->drops.count[WIRE_DROP_NOT_ROCE_PORT] += l->not_roce;
}
