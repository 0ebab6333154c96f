// SPDX-License-Identifier: MIT
/* The pcap port (port.h over libpcap): replay a capture into the engine, record what it sends. */
#include <errno.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/port_pcap.h"

#define PCAP_FRAME_MAX		65536u
#define PCAP_RX_SLOTS		64u
#define PCAP_TX_SLOTS		64u
#define PCAP_NEIGHBOURS		16u
#define ETH_VLAN_HDR_LEN	18u

struct pcap_slot {
	uint8_t		*data;
	bool		busy;
};

struct port_pcap {
	struct port		base;
	char			name[64];
	pcap_t			*rx;
	pcap_t			*tx_dead;
	pcap_dumper_t		*tx;
	uint64_t		now_ns;

	/* The next frame of the file, read ahead to know its time. */
	bool			ahead_valid;
	uint64_t		ahead_ns;
	uint32_t		ahead_len;
	uint8_t			*ahead;

	struct pcap_slot	rx_slot[PCAP_RX_SLOTS];
	struct pcap_slot	tx_slot[PCAP_TX_SLOTS];

	unsigned		n_neigh;
	struct {
		uint8_t		gid[16];
		uint8_t		mac[6];
	} neigh[PCAP_NEIGHBOURS];

	struct port_pcap_stats	stats;
};

static struct port_pcap *to_pcap(struct port *p)
{
	return (struct port_pcap *)p;
}

/* Read the next frame of the file into the look-ahead buffer (or mark the end). */
static void read_ahead(struct port_pcap *pp)
{
	struct pcap_pkthdr *hdr;
	const u_char *data;

	pp->ahead_valid = false;
	if (pcap_next_ex(pp->rx, &hdr, &data) != 1)
		return;
	pp->ahead_len = hdr->caplen < PCAP_FRAME_MAX ? hdr->caplen : PCAP_FRAME_MAX;
	if (hdr->caplen < hdr->len)
		pp->stats.rx_truncated++;
	memcpy(pp->ahead, data, pp->ahead_len);
	/* Opened with nanosecond precision: tv_usec holds nanoseconds. */
	pp->ahead_ns = (uint64_t)hdr->ts.tv_sec * 1000000000u + (uint64_t)hdr->ts.tv_usec;
	pp->ahead_valid = true;
}

static struct pcap_slot *slot_get(struct pcap_slot *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		if (!s[i].busy) {
			s[i].busy = true;
			return &s[i];
		}
	return NULL;
}

static unsigned pcap_rx_burst(struct port *p, struct port_frame *f, unsigned max)
{
	struct port_pcap *pp = to_pcap(p);
	unsigned n = 0;

	while (n < max && pp->ahead_valid && pp->ahead_ns <= pp->now_ns) {
		struct pcap_slot *s = slot_get(pp->rx_slot, PCAP_RX_SLOTS);

		if (!s)
			break;
		memcpy(s->data, pp->ahead, pp->ahead_len);
		f[n].data = s->data;
		f[n].len = pp->ahead_len;
		f[n].handle = s;
		n++;
		pp->stats.rx_frames++;
		read_ahead(pp);
	}
	return n;
}

static void pcap_rx_release(struct port *p, struct port_frame *f, unsigned n)
{
	(void)p;
	for (unsigned i = 0; i < n; i++)
		((struct pcap_slot *)f[i].handle)->busy = false;
}

static int pcap_tx_alloc(struct port *p, struct port_frame *f, uint32_t len)
{
	struct port_pcap *pp = to_pcap(p);
	struct pcap_slot *s;

	if (len > PCAP_FRAME_MAX)
		return -ENOBUFS;
	s = slot_get(pp->tx_slot, PCAP_TX_SLOTS);
	if (!s)
		return -ENOBUFS;
	f->data = s->data;
	f->len = len;
	f->handle = s;
	return 0;
}

static void pcap_tx_abort(struct port *p, struct port_frame *f)
{
	(void)p;
	((struct pcap_slot *)f->handle)->busy = false;
}

static void pcap_tx_burst(struct port *p, struct port_frame *f, unsigned n)
{
	struct port_pcap *pp = to_pcap(p);

	for (unsigned i = 0; i < n; i++) {
		struct pcap_pkthdr hdr = {
			.ts.tv_sec = (time_t)(pp->now_ns / 1000000000u),
			.ts.tv_usec = (suseconds_t)(pp->now_ns % 1000000000u),
			.caplen = f[i].len,
			.len = f[i].len,
		};

		if (f[i].len > pp->base.mtu + ETH_VLAN_HDR_LEN) {
			pp->stats.tx_too_big++;
		} else {
			if (pp->tx)
				pcap_dump((u_char *)pp->tx, &hdr, f[i].data);
			pp->stats.tx_frames++;
		}
		((struct pcap_slot *)f[i].handle)->busy = false;
	}
}

static void pcap_flush(struct port *p)
{
	struct port_pcap *pp = to_pcap(p);

	if (pp->tx)
		pcap_dump_flush(pp->tx);
}

static int pcap_resolve(struct port *p, const uint8_t gid[16], uint8_t mac[6])
{
	struct port_pcap *pp = to_pcap(p);

	for (unsigned i = 0; i < pp->n_neigh; i++)
		if (!memcmp(pp->neigh[i].gid, gid, 16)) {
			memcpy(mac, pp->neigh[i].mac, 6);
			return 0;
		}
	return -EHOSTUNREACH;
}

static void pcap_destroy(struct port *p)
{
	struct port_pcap *pp = to_pcap(p);

	if (pp->tx)
		pcap_dump_close(pp->tx);
	if (pp->tx_dead)
		pcap_close(pp->tx_dead);
	if (pp->rx)
		pcap_close(pp->rx);
	for (unsigned i = 0; i < PCAP_RX_SLOTS; i++)
		free(pp->rx_slot[i].data);
	for (unsigned i = 0; i < PCAP_TX_SLOTS; i++)
		free(pp->tx_slot[i].data);
	free(pp->ahead);
	free(pp);
}

static const struct port_ops pcap_ops = {
	.rx_burst	= pcap_rx_burst,
	.rx_release	= pcap_rx_release,
	.tx_alloc	= pcap_tx_alloc,
	.tx_abort	= pcap_tx_abort,
	.tx_burst	= pcap_tx_burst,
	.flush		= pcap_flush,
	.resolve	= pcap_resolve,
	.destroy	= pcap_destroy,
};

static bool alloc_slots(struct pcap_slot *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		s[i].data = malloc(PCAP_FRAME_MAX);
		if (!s[i].data)
			return false;
	}
	return true;
}

struct port *port_pcap_open(const struct port_pcap_cfg *cfg, char *err, size_t errlen)
{
	char pcap_err[PCAP_ERRBUF_SIZE] = "";
	struct port_pcap *pp;

	pp = calloc(1, sizeof(*pp));
	if (!pp || !(pp->ahead = malloc(PCAP_FRAME_MAX)) ||
	    !alloc_slots(pp->rx_slot, PCAP_RX_SLOTS) || !alloc_slots(pp->tx_slot, PCAP_TX_SLOTS)) {
		snprintf(err, errlen, "pcap port: out of memory");
		goto err_free;
	}
	snprintf(pp->name, sizeof(pp->name), "%s", cfg->name ? cfg->name : "pcap");
	pp->base.ops = &pcap_ops;
	pp->base.name = pp->name;
	pp->base.mtu = cfg->mtu;
	memcpy(pp->base.mac, cfg->mac, 6);

	pp->rx = pcap_open_offline_with_tstamp_precision(cfg->rx_path, PCAP_TSTAMP_PRECISION_NANO,
							 pcap_err);
	if (!pp->rx) {
		snprintf(err, errlen, "%s: cannot read as a pcap file: %s", cfg->rx_path, pcap_err);
		goto err_free;
	}
	if (pcap_datalink(pp->rx) != DLT_EN10MB) {
		snprintf(err, errlen, "%s: link type %s, the pcap port replays Ethernet only",
			 cfg->rx_path, pcap_datalink_val_to_name(pcap_datalink(pp->rx)));
		goto err_free;
	}
	if (cfg->tx_path) {
		pp->tx_dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, PCAP_FRAME_MAX,
								   PCAP_TSTAMP_PRECISION_NANO);
		pp->tx = pp->tx_dead ? pcap_dump_open(pp->tx_dead, cfg->tx_path) : NULL;
		if (!pp->tx) {
			snprintf(err, errlen, "%s: cannot write: %s", cfg->tx_path,
				 pp->tx_dead ? pcap_geterr(pp->tx_dead) : "out of memory");
			goto err_free;
		}
	}
	read_ahead(pp);
	return &pp->base;

err_free:
	if (pp)
		pcap_destroy(&pp->base);
	return NULL;
}

void port_pcap_set_time(struct port *p, uint64_t now_ns)
{
	to_pcap(p)->now_ns = now_ns;
}

uint64_t port_pcap_next_rx_ns(struct port *p)
{
	struct port_pcap *pp = to_pcap(p);

	return pp->ahead_valid ? pp->ahead_ns : UINT64_MAX;
}

int port_pcap_add_neighbour(struct port *p, const uint8_t gid[16], const uint8_t mac[6])
{
	struct port_pcap *pp = to_pcap(p);

	if (pp->n_neigh == PCAP_NEIGHBOURS)
		return -ENOSPC;
	memcpy(pp->neigh[pp->n_neigh].gid, gid, 16);
	memcpy(pp->neigh[pp->n_neigh].mac, mac, 6);
	pp->n_neigh++;
	return 0;
}

void port_pcap_stats(struct port *p, struct port_pcap_stats *out)
{
	*out = to_pcap(p)->stats;
}
