// SPDX-License-Identifier: MIT
/* ARP (RFC 826) and IPv6 neighbour discovery (RFC 4861): a small resolver and responder. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/wire.h"
#include "host_neigh.h"

const char *const host_neigh_counter_names[] = {
#define HOST_NEIGH_NAME(n) #n,
	HOST_NEIGH_COUNTERS(HOST_NEIGH_NAME)
#undef HOST_NEIGH_NAME
	NULL
};

/* ARP for Ethernet/IPv4, RFC 826. */
struct arp_hdr {
	wire_be16	htype;
	wire_be16	ptype;
	uint8_t		hlen;
	uint8_t		plen;
	wire_be16	oper;
	uint8_t		sha[6];
	uint8_t		spa[4];
	uint8_t		tha[6];
	uint8_t		tpa[4];
};
_Static_assert(sizeof(struct arp_hdr) == 28, "arp");
#define ARP_REQUEST	1
#define ARP_REPLY	2

/* Neighbour solicitation / advertisement with one link-layer address option, RFC 4861 4.3/4.4. */
struct nd_msg {
	uint8_t		type;
	uint8_t		code;
	wire_be16	csum;
	uint8_t		flags;		/* NA: Router, Solicited, Override */
	uint8_t		reserved[3];
	uint8_t		target[16];
	uint8_t		opt_type;	/* 1: source, 2: target link-layer address */
	uint8_t		opt_len;	/* in 8-byte units */
	uint8_t		opt_mac[6];
};
_Static_assert(sizeof(struct nd_msg) == 32, "nd");
#define ICMPV6_NS		135
#define ICMPV6_NA		136
#define ND_OPT_SLLA		1
#define ND_OPT_TLLA		2
#define NA_FLAG_SOLICITED	0x40
#define NA_FLAG_OVERRIDE	0x20
#define ND_HOP_LIMIT		255

#define ETH_MIN_FRAME		60
#define NEIGH_FRAME_MAX		(sizeof(struct wire_eth_hdr) + sizeof(struct wire_ipv6_hdr) + \
				 sizeof(struct nd_msg))

enum entry_state { ENTRY_FREE, ENTRY_INCOMPLETE, ENTRY_REACHABLE, ENTRY_FAILED };

struct entry {
	enum entry_state state;
	uint8_t		gid[16];
	uint8_t		mac[6];
	uint64_t	first_req;	/* start of the current attempt */
	uint64_t	last_req;	/* last request sent */
	uint64_t	confirmed;	/* last answer, or time of failure */
	bool		refreshing;	/* reachable entry being re-confirmed */
};

struct host_neigh {
	struct host_neigh_cfg	cfg;
	struct entry		tab[HOST_NEIGH_ENTRIES];
	struct host_neigh_counters cnt;
};

static const uint8_t bcast_mac[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };

void host_link_local_gid(const uint8_t mac[6], uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[0] = 0xfe;
	gid[1] = 0x80;
	gid[8] = mac[0] ^ 0x02;
	gid[9] = mac[1];
	gid[10] = mac[2];
	gid[11] = 0xff;
	gid[12] = 0xfe;
	gid[13] = mac[3];
	gid[14] = mac[4];
	gid[15] = mac[5];
}

struct host_neigh *host_neigh_create(const struct host_neigh_cfg *cfg)
{
	struct host_neigh *n = calloc(1, sizeof(*n));

	if (!n)
		return NULL;
	n->cfg = *cfg;
	if (n->cfg.n_addrs > HOST_MAX_ADDRS)
		n->cfg.n_addrs = HOST_MAX_ADDRS;
	host_neigh_set_addrs(n, cfg->addrs, n->cfg.n_addrs);
	return n;
}

void host_neigh_destroy(struct host_neigh *n)
{
	free(n);
}

void host_neigh_set_addrs(struct host_neigh *n, const uint8_t (*addrs)[16], unsigned n_addrs)
{
	uint8_t ll[16];
	unsigned k = 0;

	if (n_addrs > HOST_MAX_ADDRS)
		n_addrs = HOST_MAX_ADDRS;
	/* memmove: @addrs may be n->cfg.addrs itself. */
	memmove(n->cfg.addrs, addrs, (size_t)n_addrs * 16);
	k = n_addrs;
	host_link_local_gid(n->cfg.mac, ll);
	for (unsigned i = 0; i < n_addrs; i++)
		if (!memcmp(n->cfg.addrs[i], ll, 16))
			goto done;
	memcpy(n->cfg.addrs[k++], ll, 16);
done:
	n->cfg.n_addrs = k;
}

static bool is_ours(const struct host_neigh *n, const uint8_t gid[16])
{
	for (unsigned i = 0; i < n->cfg.n_addrs; i++)
		if (!memcmp(n->cfg.addrs[i], gid, 16))
			return true;
	return false;
}

static unsigned gid_hash(const uint8_t gid[16])
{
	uint32_t h = 2166136261u;

	for (int i = 0; i < 16; i++)
		h = (h ^ gid[i]) * 16777619u;
	return h % HOST_NEIGH_ENTRIES;
}

static struct entry *lookup(struct host_neigh *n, const uint8_t gid[16])
{
	unsigned h = gid_hash(gid);

	for (unsigned i = 0; i < HOST_NEIGH_ENTRIES; i++) {
		struct entry *e = &n->tab[(h + i) % HOST_NEIGH_ENTRIES];

		if (e->state == ENTRY_FREE)
			return NULL;
		if (!memcmp(e->gid, gid, 16))
			return e;
	}
	return NULL;
}

/*
 * Open addressing without tombstones: when the table is full, the entry
 * confirmed longest ago is overwritten in place (never freed), so probe
 * chains stay intact.
 */
static struct entry *insert(struct host_neigh *n, const uint8_t gid[16])
{
	unsigned h = gid_hash(gid);
	struct entry *oldest = NULL;

	for (unsigned i = 0; i < HOST_NEIGH_ENTRIES; i++) {
		struct entry *e = &n->tab[(h + i) % HOST_NEIGH_ENTRIES];

		if (e->state == ENTRY_FREE) {
			oldest = e;
			break;
		}
		if (e->state != ENTRY_INCOMPLETE && (!oldest || e->confirmed < oldest->confirmed))
			oldest = e;
	}
	if (!oldest) {
		n->cnt.table_full++;
		return NULL;
	}
	if (oldest->state != ENTRY_FREE)
		n->cnt.table_full++;
	memset(oldest, 0, sizeof(*oldest));
	memcpy(oldest->gid, gid, 16);
	return oldest;
}

/* Source address for a request to @target: one of ours of the same family (and scope). */
static const uint8_t *pick_source(const struct host_neigh *n, const uint8_t target[16])
{
	bool v4 = wire_gid_is_v4mapped(target);
	bool ll = target[0] == 0xfe && (target[1] & 0xc0) == 0x80;
	const uint8_t *any = NULL;

	for (unsigned i = 0; i < n->cfg.n_addrs; i++) {
		const uint8_t *a = n->cfg.addrs[i];
		bool a_ll = a[0] == 0xfe && (a[1] & 0xc0) == 0x80;

		if (wire_gid_is_v4mapped(a) != v4)
			continue;
		if (v4 || a_ll == ll)
			return a;
		if (!any)
			any = a;
	}
	return any;
}

static void eth_header(uint8_t *frame, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	struct wire_eth_hdr *eth = (struct wire_eth_hdr *)frame;

	memcpy(eth->dst, dst, 6);
	memcpy(eth->src, src, 6);
	wire_set16(&eth->ethertype, type);
}

static int send_frame(struct host_neigh *n, uint8_t *frame, uint32_t len)
{
	if (len < ETH_MIN_FRAME) {
		memset(frame + len, 0, ETH_MIN_FRAME - len);
		len = ETH_MIN_FRAME;
	}
	return n->cfg.xmit(n->cfg.xmit_arg, frame, len);
}

static int send_arp(struct host_neigh *n, uint16_t oper, const uint8_t eth_dst[6],
		    const uint8_t spa[4], const uint8_t tha[6], const uint8_t tpa[4])
{
	uint8_t frame[ETH_MIN_FRAME];
	struct arp_hdr *arp = (struct arp_hdr *)(frame + sizeof(struct wire_eth_hdr));

	eth_header(frame, eth_dst, n->cfg.mac, WIRE_ETHERTYPE_ARP);
	wire_set16(&arp->htype, 1);
	wire_set16(&arp->ptype, WIRE_ETHERTYPE_IPV4);
	arp->hlen = 6;
	arp->plen = 4;
	wire_set16(&arp->oper, oper);
	memcpy(arp->sha, n->cfg.mac, 6);
	memcpy(arp->spa, spa, 4);
	memcpy(arp->tha, tha, 6);
	memcpy(arp->tpa, tpa, 4);
	return send_frame(n, frame, sizeof(struct wire_eth_hdr) + sizeof(*arp));
}

/* RFC 4443 2.3: one's complement sum over the pseudo-header and the ICMPv6 message. */
static uint16_t icmpv6_csum(const struct wire_ipv6_hdr *ip6, const void *msg, uint32_t len)
{
	const uint8_t *p = msg;
	uint32_t sum = 0;

	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)(ip6->src[i] << 8 | ip6->src[i + 1]) +
		       (uint32_t)(ip6->dst[i] << 8 | ip6->dst[i + 1]);
	sum += len >> 16;
	sum += len & 0xffff;
	sum += WIRE_IPPROTO_ICMPV6;
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int send_nd(struct host_neigh *n, uint8_t type, const uint8_t eth_dst[6],
		   const uint8_t src[16], const uint8_t dst[16], const uint8_t target[16],
		   uint8_t flags)
{
	uint8_t frame[NEIGH_FRAME_MAX];
	struct wire_ipv6_hdr *ip6 = (struct wire_ipv6_hdr *)(frame + sizeof(struct wire_eth_hdr));
	struct nd_msg *nd = (struct nd_msg *)(ip6 + 1);

	eth_header(frame, eth_dst, n->cfg.mac, WIRE_ETHERTYPE_IPV6);
	wire_set32(&ip6->vtc_flow, 6u << 28);
	wire_set16(&ip6->payload_len, sizeof(*nd));
	ip6->next_header = WIRE_IPPROTO_ICMPV6;
	ip6->hop_limit = ND_HOP_LIMIT;
	memcpy(ip6->src, src, 16);
	memcpy(ip6->dst, dst, 16);
	memset(nd, 0, sizeof(*nd));
	nd->type = type;
	nd->flags = flags;
	memcpy(nd->target, target, 16);
	nd->opt_type = type == ICMPV6_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	nd->opt_len = 1;
	memcpy(nd->opt_mac, n->cfg.mac, 6);
	wire_set16(&nd->csum, icmpv6_csum(ip6, nd, sizeof(*nd)));
	return send_frame(n, frame, sizeof(frame));
}

static void send_request(struct host_neigh *n, struct entry *e, uint64_t now)
{
	const uint8_t *src = pick_source(n, e->gid);
	static const uint8_t zero[16];

	e->last_req = now;
	if (wire_gid_is_v4mapped(e->gid)) {
		static const uint8_t no_mac[6];

		/* No IPv4 address of ours: an ARP probe (sender 0.0.0.0, RFC 5227) still gets a reply. */
		if (!send_arp(n, ARP_REQUEST, bcast_mac, src ? src + 12 : zero, no_mac, e->gid + 12))
			n->cnt.arp_req_tx++;
	} else {
		/* To the solicited-node multicast group ff02::1:ffXX:XXXX (RFC 4291 2.7.1). */
		uint8_t snm[16] = { 0xff, 0x02, [11] = 0x01, [12] = 0xff };
		uint8_t mac[6] = { 0x33, 0x33, 0xff };

		memcpy(snm + 13, e->gid + 13, 3);
		memcpy(mac + 3, e->gid + 13, 3);
		if (!send_nd(n, ICMPV6_NS, mac, src ? src : zero, snm, e->gid, 0))
			n->cnt.ns_tx++;
	}
}

int host_neigh_resolve(struct host_neigh *n, const uint8_t gid[16], uint8_t mac[6], uint64_t now)
{
	static const uint8_t zero[16];
	struct entry *e;

	if (!memcmp(gid, zero, 16) || gid[0] == 0xff ||
	    (wire_gid_is_v4mapped(gid) && ((gid[12] & 0xf0) == 0xe0 || !memcmp(gid + 12, bcast_mac, 4))))
		return -EINVAL;
	e = lookup(n, gid);
	if (!e) {
		e = insert(n, gid);
		if (!e)
			return -EAGAIN;
		e->state = ENTRY_INCOMPLETE;
		e->first_req = now;
		send_request(n, e, now);
		return -EAGAIN;
	}
	switch (e->state) {
	case ENTRY_REACHABLE:
		if (now - e->confirmed >= HOST_NEIGH_REACHABLE_NS) {
			if (!e->refreshing) {
				e->refreshing = true;
				e->first_req = now;
				send_request(n, e, now);
			} else if (now - e->first_req >= HOST_NEIGH_TIMEOUT_NS) {
				e->state = ENTRY_FAILED;
				e->refreshing = false;
				e->confirmed = now;
				n->cnt.unreachable++;
				return -EHOSTUNREACH;
			} else if (now - e->last_req >= HOST_NEIGH_RETRY_NS) {
				send_request(n, e, now);
			}
		}
		memcpy(mac, e->mac, 6);
		return 0;
	case ENTRY_INCOMPLETE:
		if (now - e->first_req >= HOST_NEIGH_TIMEOUT_NS) {
			e->state = ENTRY_FAILED;
			e->confirmed = now;
			n->cnt.unreachable++;
			return -EHOSTUNREACH;
		}
		if (now - e->last_req >= HOST_NEIGH_RETRY_NS)
			send_request(n, e, now);
		return -EAGAIN;
	case ENTRY_FAILED:
		if (now - e->confirmed < HOST_NEIGH_HOLDDOWN_NS)
			return -EHOSTUNREACH;
		e->state = ENTRY_INCOMPLETE;
		e->first_req = now;
		send_request(n, e, now);
		return -EAGAIN;
	case ENTRY_FREE:
		break;
	}
	return -EAGAIN;
}

/*
 * An address-to-MAC binding seen on the wire.  @create: also make a new
 * entry (the sender asked us something, so we will likely answer it).
 */
static void learn(struct host_neigh *n, const uint8_t gid[16], const uint8_t mac[6], bool create,
		  uint64_t now)
{
	struct entry *e = lookup(n, gid);

	if (mac[0] & 1)
		return;
	if (!e) {
		if (!create)
			return;
		e = insert(n, gid);
		if (!e)
			return;
	}
	if (e->state != ENTRY_REACHABLE)
		n->cnt.resolved++;
	memcpy(e->mac, mac, 6);
	e->state = ENTRY_REACHABLE;
	e->refreshing = false;
	e->confirmed = now;
}

static void arp_input(struct host_neigh *n, const uint8_t *frame, uint32_t len, uint64_t now)
{
	const struct arp_hdr *arp = (const struct arp_hdr *)(frame + sizeof(struct wire_eth_hdr));
	uint8_t spa[16] = { [10] = 0xff, [11] = 0xff }, tpa[16] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t zero4[4];
	bool for_us;
	uint16_t oper;

	if (len < sizeof(struct wire_eth_hdr) + sizeof(*arp) || wire_get16(arp->htype) != 1 ||
	    wire_get16(arp->ptype) != WIRE_ETHERTYPE_IPV4 || arp->hlen != 6 || arp->plen != 4) {
		n->cnt.malformed++;
		return;
	}
	oper = wire_get16(arp->oper);
	memcpy(spa + 12, arp->spa, 4);
	memcpy(tpa + 12, arp->tpa, 4);
	for_us = is_ours(n, tpa);
	if (oper == ARP_REPLY) {
		n->cnt.arp_reply_rx++;
		if (memcmp(arp->spa, zero4, 4))
			learn(n, spa, arp->sha, false, now);
		return;
	}
	if (oper != ARP_REQUEST) {
		n->cnt.malformed++;
		return;
	}
	n->cnt.arp_req_rx++;
	if (!memcmp(arp->spa, zero4, 4)) {
		/* A probe (RFC 5227): answer only, learn nothing. */
		if (for_us && n->cfg.answer_requests &&
		    !send_arp(n, ARP_REPLY, arp->sha, arp->tpa, arp->sha, arp->spa))
			n->cnt.arp_reply_tx++;
		return;
	}
	learn(n, spa, arp->sha, for_us, now);
	if (for_us && n->cfg.answer_requests &&
	    !send_arp(n, ARP_REPLY, arp->sha, arp->tpa, arp->sha, arp->spa))
		n->cnt.arp_reply_tx++;
}

static bool nd_input(struct host_neigh *n, const uint8_t *frame, uint32_t len, uint64_t now)
{
	const struct wire_ipv6_hdr *ip6 =
		(const struct wire_ipv6_hdr *)(frame + sizeof(struct wire_eth_hdr));
	const struct nd_msg *nd = (const struct nd_msg *)(ip6 + 1);
	uint32_t icmp_len, min = sizeof(struct wire_eth_hdr) + sizeof(*ip6) + 24;
	static const uint8_t zero[16];
	const uint8_t *opt_mac = NULL;

	if (len < min || ip6->next_header != WIRE_IPPROTO_ICMPV6)
		return false;
	if (nd->type != ICMPV6_NS && nd->type != ICMPV6_NA)
		return false;
	icmp_len = wire_get16(ip6->payload_len);
	/* RFC 4861 7.1.1/7.1.2: hop limit 255, code 0, valid checksum, length >= 24. */
	if (icmp_len < 24 || icmp_len > len - sizeof(struct wire_eth_hdr) - sizeof(*ip6) ||
	    ip6->hop_limit != ND_HOP_LIMIT || nd->code != 0 || (nd->target[0] == 0xff) ||
	    icmpv6_csum(ip6, nd, icmp_len) != 0) {
		n->cnt.malformed++;
		return true;
	}
	/* Options: walk them for the link-layer address we want. */
	for (uint32_t off = 24; off + 8 <= icmp_len;) {
		const uint8_t *opt = (const uint8_t *)nd + off;

		if (opt[1] == 0) {
			n->cnt.malformed++;
			return true;
		}
		if (opt[0] == (nd->type == ICMPV6_NS ? ND_OPT_SLLA : ND_OPT_TLLA))
			opt_mac = opt + 2;
		off += (uint32_t)opt[1] * 8;
	}
	if (nd->type == ICMPV6_NA) {
		n->cnt.na_rx++;
		learn(n, nd->target, opt_mac ? opt_mac : frame + 6, false, now);
		return true;
	}
	n->cnt.ns_rx++;
	if (!memcmp(ip6->src, zero, 16))
		return true;	/* duplicate address detection: not ours to answer */
	if (opt_mac)
		learn(n, ip6->src, opt_mac, is_ours(n, nd->target), now);
	if (is_ours(n, nd->target) && n->cfg.answer_requests &&
	    !send_nd(n, ICMPV6_NA, opt_mac ? opt_mac : frame + 6, nd->target, ip6->src, nd->target,
		     NA_FLAG_SOLICITED | NA_FLAG_OVERRIDE))
		n->cnt.na_tx++;
	return true;
}

bool host_neigh_input(struct host_neigh *n, const uint8_t *frame, uint32_t len, uint64_t now)
{
	struct wire_frame_offsets o;

	/* Untagged only: the answers go out untagged. */
	if (wire_classify(frame, len, &o) == WIRE_FRAME_ARP && !o.has_vlan) {
		arp_input(n, frame, len, now);
		return true;
	}
	if (o.ethertype == WIRE_ETHERTYPE_IPV6 && !o.has_vlan)
		return nd_input(n, frame, len, now);
	return false;
}

void host_neigh_counters(const struct host_neigh *n, struct host_neigh_counters *out)
{
	*out = n->cnt;
}
