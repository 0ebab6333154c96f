// SPDX-License-Identifier: MIT
/* Raw packet QPs: Ethernet frames sent as posted, flow steering (ibv_create_flow) on receive, RSS. */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

/*
 * What a flow compares, in network order, one layout for the frame's values
 * and for a flow's values and masks: a frame matches when every byte under
 * the mask equals the flow's.  ip_version and ip_proto carry what a spec
 * implies (an IPv4 spec matches IPv4 frames only, a TCP spec TCP ones), as
 * NICs match them.
 */
struct rc_flow_key {
	uint8_t	dmac[WIRE_ETH_ALEN], smac[WIRE_ETH_ALEN];
	wire_be16 ethertype;		/* after the VLAN tag (ibv_create_flow(3), note 3) */
	wire_be16 vlan_tci;
	uint8_t	has_vlan;
	uint8_t	ip_version;		/* 4 or 6 with the IP header whole, else 0 */
	uint8_t	ip_proto;		/* IPv6: after the extension headers */
	uint8_t	tos, ttl;		/* IPv6: traffic class, hop limit */
	uint8_t	ipv4_flags;		/* the three flag bits of frag_off */
	uint8_t	src_ip[16], dst_ip[16];	/* IPv4 in the first four */
	wire_be32 flow_label;		/* 20 bits */
	uint8_t	l4_ports;		/* 1 with the TCP or UDP ports in the frame */
	wire_be16 sport, dport;
};

struct rc_flow {
	struct rc_qp		*qp;
	uint16_t		priority;
	bool			dont_trap;
	bool			sniffer;	/* on eng->sniffers: every frame, no key */
	struct rc_flow_key	val, mask;
	struct rc_list		link;	/* on eng->flows or eng->sniffers */
};

#define WIRE_IPPROTO_TCP	6

/* ---- Matching ---- */

/* The key of @f; false when it is shorter than an Ethernet header. */
static bool frame_key(const uint8_t *f, uint32_t len, struct rc_flow_key *k)
{
	struct wire_frame_offsets o;

	memset(k, 0, sizeof(*k));
	if (len < sizeof(struct wire_eth_hdr))
		return false;
	wire_classify(f, len, &o);
	memcpy(k->dmac, f, WIRE_ETH_ALEN);
	memcpy(k->smac, f + WIRE_ETH_ALEN, WIRE_ETH_ALEN);
	wire_set16(&k->ethertype, o.ethertype);
	if (o.has_vlan) {
		k->has_vlan = 1;
		wire_set16(&k->vlan_tci, o.vlan_tci);
	}
	if (!o.l4_off)
		return true;
	k->ip_version = o.ip_version;
	k->ip_proto = o.l4_proto;
	if (o.ip_version == 4) {
		const struct wire_ipv4_hdr *ip = (const void *)(f + o.l3_off);

		k->tos = ip->tos;
		k->ttl = ip->ttl;
		k->ipv4_flags = (uint8_t)(wire_get16(ip->frag_off) >> 13);
		memcpy(k->src_ip, ip->src, 4);
		memcpy(k->dst_ip, ip->dst, 4);
	} else {
		const struct wire_ipv6_hdr *ip = (const void *)(f + o.l3_off);
		uint32_t vtc = wire_get32(ip->vtc_flow);

		k->tos = (uint8_t)(vtc >> 20);
		k->ttl = ip->hop_limit;
		wire_set32(&k->flow_label, vtc & 0xfffffu);
		memcpy(k->src_ip, ip->src, 16);
		memcpy(k->dst_ip, ip->dst, 16);
	}
	if ((o.l4_proto == WIRE_IPPROTO_TCP || o.l4_proto == WIRE_IPPROTO_UDP) &&
	    o.l4_off + 4u <= o.ip_end) {
		k->l4_ports = 1;
		memcpy(&k->sport, f + o.l4_off, 2);
		memcpy(&k->dport, f + o.l4_off + 2, 2);
	}
	return true;
}

static bool flow_matches(const struct rc_flow *fl, const struct rc_flow_key *k)
{
	const uint8_t *v = (const uint8_t *)&fl->val, *m = (const uint8_t *)&fl->mask;
	const uint8_t *b = (const uint8_t *)k;

	for (size_t i = 0; i < sizeof(*k); i++)
		if ((b[i] & m[i]) != v[i])
			return false;
	return true;
}

/* ---- Receive-side scaling ---- */

/*
 * The Toeplitz hash (Microsoft's RSS specification) of @in under @key: for
 * each set bit of the input, the 32 key bits starting at that bit's position.
 */
static uint32_t toeplitz(const uint8_t *key, unsigned key_len, const uint8_t *in, unsigned len)
{
	uint32_t hash = 0, window;
	unsigned next = 4;

	if (key_len < 4)
		return 0;
	window = wire_load32(key);
	for (unsigned i = 0; i < len; i++) {
		uint8_t kb = next < key_len ? key[next] : 0;

		for (int b = 7; b >= 0; b--) {
			if (in[i] & (1u << b))
				hash ^= window;
			window = window << 1 | ((kb >> b) & 1u);
		}
		next++;
	}
	return hash;
}

/* Which of @qp's WQs takes a frame of key @k: source and destination address, then ports. */
static struct rc_qp *rss_pick(const struct rc_qp_rss *rss, const struct rc_flow_key *k)
{
	uint8_t in[36];
	unsigned n = 0, alen = k->ip_version == 4 ? 4 : 16;
	uint64_t src_ip = k->ip_version == 4 ? IBV_RX_HASH_SRC_IPV4 : IBV_RX_HASH_SRC_IPV6;
	uint64_t dst_ip = k->ip_version == 4 ? IBV_RX_HASH_DST_IPV4 : IBV_RX_HASH_DST_IPV6;
	bool tcp = k->ip_proto == WIRE_IPPROTO_TCP;

	if (k->ip_version) {
		if (rss->fields & src_ip) {
			memcpy(in + n, k->src_ip, alen);
			n += alen;
		}
		if (rss->fields & dst_ip) {
			memcpy(in + n, k->dst_ip, alen);
			n += alen;
		}
	}
	if (k->l4_ports) {
		if (rss->fields & (tcp ? IBV_RX_HASH_SRC_PORT_TCP : IBV_RX_HASH_SRC_PORT_UDP)) {
			memcpy(in + n, k->sport.b, 2);
			n += 2;
		}
		if (rss->fields & (tcp ? IBV_RX_HASH_DST_PORT_TCP : IBV_RX_HASH_DST_PORT_UDP)) {
			memcpy(in + n, k->dport.b, 2);
			n += 2;
		}
	}
	return rss->wqs[toeplitz(rss->key, rss->key_len, in, n) & ((1u << rss->log_size) - 1)];
}

int rc_raw_rss_init(struct rc_qp *qp, const struct rc_qp_rss *rss)
{
	size_t n = (size_t)1 << rss->log_size;
	struct rc_qp_rss *copy;

	if (rss->log_size > RC_RSS_LOG_SIZE_MAX || !rss->wqs || rss->key_len > RC_RSS_KEY_MAX)
		return -EINVAL;
	if (rss->fields & ~(uint64_t)RC_RSS_FIELDS)
		return -EOPNOTSUPP;
	for (size_t i = 0; i < n; i++)
		if (!rss->wqs[i] || rss->wqs[i]->eng != qp->eng || rss->wqs[i]->rss ||
		    rss->wqs[i]->type != IBV_QPT_RAW_PACKET)
			return -EINVAL;
	copy = malloc(sizeof(*copy) + n * sizeof(*copy->wqs));
	if (!copy)
		return -ENOMEM;
	*copy = *rss;
	copy->wqs = (struct rc_qp **)(copy + 1);
	memcpy(copy->wqs, rss->wqs, n * sizeof(*copy->wqs));
	qp->rss = copy;
	return 0;
}

/* ---- Receive ---- */

/* One frame into @qp's receive queue, as ud_rx() does a datagram (no GRH area). */
static void raw_deliver(struct rc_qp *qp, const uint8_t *frame, uint32_t len, bool looped)
{
	struct rc_rq *rq = qp->srq ? &qp->srq->rq : &qp->rq;
	struct rc_recv_wqe *wqe = qp->resp.wqe;
	struct rc_sge_cursor cur = { 0, 0 };
	struct ibv_wc wc;

	qp->cnt.rx_packets++;
	qp->cnt.rx_bytes += len;
	if (!rc_qp_may_recv(qp)) {
		qp->cnt.rc_drops.count[RC_DROP_QP_STATE]++;
		return;
	}
	if (qp->srq) {
		if (!rc_srq_pop(qp->srq, wqe)) {
			qp->cnt.rc_drops.count[RC_DROP_NO_RECV_WQE]++;
			return;
		}
	} else {
		const struct rc_recv_wqe *head;

		if (!rc_rq_count(rq)) {
			qp->cnt.rc_drops.count[RC_DROP_NO_RECV_WQE]++;
			return;
		}
		head = rc_rq_at(rq, rq->head);
		memcpy(wqe, head, sizeof(*head) + head->num_sge * sizeof(struct ibv_sge));
		rq->head++;
	}
	memset(&wc, 0, sizeof(wc));
	wc.wr_id = wqe->wr_id;
	wc.opcode = IBV_WC_RECV;
	wc.qp_num = qp->qpn;
	if (len > wqe->length)
		wc.status = IBV_WC_LOC_LEN_ERR;
	else if (rc_sge_scatter(qp->eng, qp->pd, wqe->sge, wqe->num_sge, &cur, frame, len))
		wc.status = IBV_WC_LOC_PROT_ERR;
	else
		wc.byte_len = len;
	qp->cnt.raw_rx++;
	if (looped)
		qp->cnt.raw_looped++;
	rc_cq_push(qp->rcq, &wc, false);
	qp->cnt.completions++;
}

/*
 * @frame to every raw QP with a matching flow of the best priority (and of
 * the next ones, past DONT_TRAP flows), one copy per QP; @from's own flows
 * are skipped (a frame it sent).  Return: true when a flow matched.
 */
static bool raw_steer(struct rc_engine *eng, const uint8_t *frame, uint32_t len,
		      const struct rc_qp *from)
{
	struct rc_flow_key k;
	struct rc_list *pos, *tmp;
	struct rc_qp *to;
	uint64_t id;
	int trapped_at = -1;
	bool matched = false;

	if (!frame_key(frame, len, &k))
		return false;
	id = ++eng->raw_frames;
	rc_list_for_each_safe(pos, tmp, &eng->flows) {
		struct rc_flow *fl = container_of(pos, struct rc_flow, link);

		if (trapped_at >= 0 && fl->priority > trapped_at)
			break;
		if (fl->qp == from || !flow_matches(fl, &k))
			continue;
		matched = true;
		if (!fl->dont_trap)
			trapped_at = fl->priority;
		to = fl->qp->rss ? rss_pick(fl->qp->rss, &k) : fl->qp;
		if (to->raw_seen == id)
			continue;
		to->raw_seen = id;
		raw_deliver(to, frame, len, from != NULL);
	}
	return matched;
}

void rc_raw_sniff(struct rc_engine *eng, const uint8_t *data, uint32_t len,
		  const struct port_frame *f)
{
	uint8_t whole[RC_FRAME_MAX];
	struct rc_list *pos, *tmp;
	uint64_t id = ++eng->raw_frames;

	if (f && f->ext) {
		uint32_t end = f->ext_off + f->ext_len;

		if (len > sizeof(whole) || end > len)
			return;
		memcpy(whole, data, f->ext_off);
		memcpy(whole + f->ext_off, f->ext, f->ext_len);
		memcpy(whole + end, data + end, len - end);
		data = whole;
	}
	rc_list_for_each_safe(pos, tmp, &eng->sniffers) {
		struct rc_qp *qp = container_of(pos, struct rc_flow, link)->qp;

		if (qp->raw_seen == id)
			continue;
		qp->raw_seen = id;
		raw_deliver(qp, data, len, false);
	}
}

bool rc_raw_rx(struct rc_engine *eng, const uint8_t *frame, uint32_t len)
{
	struct wire_frame_offsets o;

	/* RoCE frames are the transport's, malformed ones too: no flow sees them. */
	if (wire_classify(frame, len, &o) == WIRE_FRAME_ROCE)
		return false;
	return raw_steer(eng, frame, len, NULL);
}

/* ---- Send ---- */

/* The local error that ends @w: completed in error, the QP to SQE (as UD's sends). */
static void raw_send_error(struct rc_qp *qp, struct rc_send_wqe *w, enum ibv_wc_status st)
{
	rc_qp_complete_send(qp, w, st);
	rc_qp_set_state(qp, IBV_QPS_SQE, RC_BY_ENGINE);
}

/* The frame of @w on the port, and to the flows of this engine's other raw QPs. */
static int raw_send(struct rc_qp *qp, struct rc_send_wqe *w)
{
	struct rc_engine *eng = qp->eng;
	/* The port's IP MTU, Ethernet and one VLAN tag around it; no FCS. */
	uint32_t max = eng->port->mtu + sizeof(struct wire_eth_hdr) + sizeof(struct wire_vlan_hdr);
	struct rc_sge_cursor cur = { 0, 0 };
	struct port_frame f;
	uint8_t *data;

	if (w->length < sizeof(struct wire_eth_hdr) || w->length > max) {
		raw_send_error(qp, w, IBV_WC_LOC_LEN_ERR);
		return 0;
	}
	data = rc_tx_alloc(eng, false, w->length, &f);
	if (unlikely(!data)) {
		qp->cnt.tx_no_buffer++;
		return -ENOBUFS;
	}
	if (w->is_inline) {
		memcpy(data, rc_wqe_inline(w, qp->cap.max_send_sge), w->length);
	} else if (rc_sge_gather(eng, qp->pd, w->sge, w->num_sge, &cur, data, w->length, NULL)) {
		eng->port->ops->tx_abort(eng->port, &f);
		raw_send_error(qp, w, IBV_WC_LOC_PROT_ERR);
		return 0;
	}
	f.len = w->length;
	if (eng->n_flow)
		raw_steer(eng, data, f.len, qp);
	qp->cnt.tx_packets++;
	qp->cnt.tx_bytes += f.len;
	qp->cnt.raw_tx++;
	rc_tx_commit(eng, false, &f);
	rc_qp_complete_send(qp, w, IBV_WC_SUCCESS);
	return 1;
}

int rc_raw_tx(struct rc_qp *qp, unsigned quota, bool *more)
{
	int sent = 0, ret;

	/* Each frame is sent and complete at once: the oldest WQE is always the next. */
	while (qp->sq_head != qp->sq_tail && rc_qp_states[qp->state].start) {
		if ((unsigned)sent == quota) {
			*more = true;
			break;
		}
		ret = raw_send(qp, rc_sq_at(qp, qp->sq_head));
		if (ret < 0)
			return ret;
		sent += ret;
	}
	return sent;
}

/* ---- Flows ---- */

/* Adds @len bytes of value and mask to the key; -EINVAL when they contradict what is there. */
static int key_set(struct rc_flow *fl, uint8_t *val_field, const void *v, const void *m,
		   size_t len)
{
	uint8_t *mask_field = (uint8_t *)&fl->mask + (val_field - (uint8_t *)&fl->val);
	const uint8_t *vb = v, *mb = m;

	for (size_t i = 0; i < len; i++) {
		uint8_t both = mask_field[i] & mb[i];

		if ((val_field[i] & both) != (vb[i] & both))
			return -EINVAL;
		val_field[i] |= vb[i] & mb[i];
		mask_field[i] |= mb[i];
	}
	return 0;
}

/* Sets a field the spec implies (IP version, protocol, the ports' presence) to @value. */
static int key_require(struct rc_flow *fl, uint8_t *val_field, uint8_t value)
{
	static const uint8_t all = 0xff;

	return key_set(fl, val_field, &value, &all, 1);
}

static int spec_eth(struct rc_flow *fl, const struct ibv_flow_spec_eth *s)
{
	const struct ibv_flow_eth_filter *v = &s->val, *m = &s->mask;
	int ret = key_set(fl, fl->val.dmac, v->dst_mac, m->dst_mac, WIRE_ETH_ALEN);

	ret = ret ? ret : key_set(fl, fl->val.smac, v->src_mac, m->src_mac, WIRE_ETH_ALEN);
	ret = ret ? ret : key_set(fl, fl->val.ethertype.b, &v->ether_type, &m->ether_type, 2);
	if (!ret && m->vlan_tag) {
		ret = key_require(fl, &fl->val.has_vlan, 1);
		ret = ret ? ret : key_set(fl, fl->val.vlan_tci.b, &v->vlan_tag, &m->vlan_tag, 2);
	}
	return ret;
}

static int spec_ipv4(struct rc_flow *fl, const struct ibv_flow_ipv4_ext_filter *v,
		     const struct ibv_flow_ipv4_ext_filter *m, bool ext)
{
	uint8_t flags_mask;
	int ret = key_require(fl, &fl->val.ip_version, 4);

	ret = ret ? ret : key_set(fl, fl->val.src_ip, &v->src_ip, &m->src_ip, 4);
	ret = ret ? ret : key_set(fl, fl->val.dst_ip, &v->dst_ip, &m->dst_ip, 4);
	if (ret || !ext)
		return ret;
	ret = key_set(fl, &fl->val.ip_proto, &v->proto, &m->proto, 1);
	ret = ret ? ret : key_set(fl, &fl->val.tos, &v->tos, &m->tos, 1);
	ret = ret ? ret : key_set(fl, &fl->val.ttl, &v->ttl, &m->ttl, 1);
	/* The three flag bits; the rest of the byte is not in the header. */
	flags_mask = m->flags & 7u;
	return ret ? ret : key_set(fl, &fl->val.ipv4_flags, &v->flags, &flags_mask, 1);
}

static int spec_ipv6(struct rc_flow *fl, const struct ibv_flow_spec_ipv6 *s)
{
	const struct ibv_flow_ipv6_filter *v = &s->val, *m = &s->mask;
	int ret = key_require(fl, &fl->val.ip_version, 6);

	if (be32toh(m->flow_label) & ~0xfffffu)
		return -EINVAL;
	ret = ret ? ret : key_set(fl, fl->val.src_ip, v->src_ip, m->src_ip, 16);
	ret = ret ? ret : key_set(fl, fl->val.dst_ip, v->dst_ip, m->dst_ip, 16);
	ret = ret ? ret : key_set(fl, fl->val.flow_label.b, &v->flow_label, &m->flow_label, 4);
	ret = ret ? ret : key_set(fl, &fl->val.ip_proto, &v->next_hdr, &m->next_hdr, 1);
	ret = ret ? ret : key_set(fl, &fl->val.tos, &v->traffic_class, &m->traffic_class, 1);
	return ret ? ret : key_set(fl, &fl->val.ttl, &v->hop_limit, &m->hop_limit, 1);
}

static int spec_tcp_udp(struct rc_flow *fl, const struct ibv_flow_spec_tcp_udp *s)
{
	uint8_t proto = s->type == IBV_FLOW_SPEC_TCP ? WIRE_IPPROTO_TCP : WIRE_IPPROTO_UDP;
	int ret = key_require(fl, &fl->val.ip_proto, proto);

	ret = ret ? ret : key_require(fl, &fl->val.l4_ports, 1);
	ret = ret ? ret : key_set(fl, fl->val.sport.b, &s->val.src_port, &s->mask.src_port, 2);
	return ret ? ret : key_set(fl, fl->val.dport.b, &s->val.dst_port, &s->mask.dst_port, 2);
}

/*
 * One spec into @fl; @size is what the spec says it is.  Return: 0, -EINVAL
 * (malformed) or -EOPNOTSUPP (a kind uroce lacks).
 */
static int add_spec(struct rc_flow *fl, const struct ibv_flow_spec *spec, uint16_t size)
{
	enum ibv_flow_spec_type type = spec->hdr.type;

	if (type & IBV_FLOW_SPEC_INNER)
		return -EOPNOTSUPP;
	switch (type) {
	case IBV_FLOW_SPEC_ETH:
		if (size != sizeof(spec->eth))
			return -EINVAL;
		return spec_eth(fl, &spec->eth);
	case IBV_FLOW_SPEC_IPV4: {
		const struct ibv_flow_spec_ipv4 *s = &spec->ipv4;
		struct ibv_flow_ipv4_ext_filter v = { .src_ip = s->val.src_ip,
						      .dst_ip = s->val.dst_ip };
		struct ibv_flow_ipv4_ext_filter m = { .src_ip = s->mask.src_ip,
						      .dst_ip = s->mask.dst_ip };

		if (size != sizeof(*s))
			return -EINVAL;
		return spec_ipv4(fl, &v, &m, false);
	}
	case IBV_FLOW_SPEC_IPV4_EXT:
		if (size != sizeof(spec->ipv4_ext))
			return -EINVAL;
		return spec_ipv4(fl, &spec->ipv4_ext.val, &spec->ipv4_ext.mask, true);
	case IBV_FLOW_SPEC_IPV6:
		if (size != sizeof(spec->ipv6))
			return -EINVAL;
		return spec_ipv6(fl, &spec->ipv6);
	case IBV_FLOW_SPEC_TCP:
	case IBV_FLOW_SPEC_UDP:
		if (size != sizeof(spec->tcp_udp))
			return -EINVAL;
		return spec_tcp_udp(fl, &spec->tcp_udp);
	case IBV_FLOW_SPEC_ESP:
	case IBV_FLOW_SPEC_VXLAN_TUNNEL:
	case IBV_FLOW_SPEC_GRE:
	case IBV_FLOW_SPEC_MPLS:
	case IBV_FLOW_SPEC_ACTION_TAG:
	case IBV_FLOW_SPEC_ACTION_DROP:
	case IBV_FLOW_SPEC_ACTION_HANDLE:
	case IBV_FLOW_SPEC_ACTION_COUNT:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
}

static int check_attr(const struct rc_qp *qp, const struct ibv_flow_attr *a)
{
	if (qp->type != IBV_QPT_RAW_PACKET)
		/* ibv_create_flow(3) allows UD QPs too; uroce steers only to raw ones. */
		return qp->type == IBV_QPT_UD ? -EOPNOTSUPP : -EINVAL;
	if (a->comp_mask || a->port != 1 || a->size < sizeof(*a))
		return -EINVAL;
	switch (a->type) {
	case IBV_FLOW_ATTR_NORMAL:
		break;
	case IBV_FLOW_ATTR_SNIFFER:
		/* ibv_create_flow(3) notes 4 and 5: no specs, no DONT_TRAP. */
		if (a->num_of_specs || (a->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP))
			return -EINVAL;
		break;
	case IBV_FLOW_ATTR_ALL_DEFAULT:
	case IBV_FLOW_ATTR_MC_DEFAULT:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
	if (a->flags & IBV_FLOW_ATTR_FLAGS_EGRESS)
		return -EOPNOTSUPP;
	if (a->flags & ~(uint32_t)IBV_FLOW_ATTR_FLAGS_DONT_TRAP)
		return -EINVAL;
	return 0;
}

/* Into the engine's list behind the flows of the same or a better priority. */
static void flow_insert(struct rc_engine *eng, struct rc_flow *fl)
{
	struct rc_list *pos = eng->flows.next;

	for (; pos != &eng->flows; pos = pos->next)
		if (container_of(pos, struct rc_flow, link)->priority > fl->priority)
			break;
	rc_list_add_tail(pos, &fl->link);
}

struct rc_flow *rc_flow_create(struct rc_qp *qp, const struct ibv_flow_attr *attr)
{
	const uint8_t *spec = (const uint8_t *)(attr + 1);
	struct rc_engine *eng = qp->eng;
	struct rc_flow *fl;
	int ret = check_attr(qp, attr);

	if (ret)
		goto err;
	fl = calloc(1, sizeof(*fl));
	if (!fl) {
		ret = -ENOMEM;
		goto err;
	}
	fl->qp = qp;
	fl->priority = attr->priority;
	fl->dont_trap = attr->flags & IBV_FLOW_ATTR_FLAGS_DONT_TRAP;
	fl->sniffer = attr->type == IBV_FLOW_ATTR_SNIFFER;
	/*
	 * Specs follow one another, each as long as its size says (how
	 * libibverbs walks them), 4-byte aligned at best: each is copied out
	 * to be read (the union wants 8).
	 */
	for (unsigned i = 0; i < attr->num_of_specs; i++) {
		struct ibv_flow_spec s;
		uint16_t size;

		memcpy(&size, spec + offsetof(struct ibv_flow_spec, hdr.size), sizeof(size));
		memset(&s, 0, sizeof(s));
		memcpy(&s, spec, size < sizeof(s) ? size : sizeof(s));
		ret = size >= sizeof(s.hdr) ? add_spec(fl, &s, size) : -EINVAL;
		if (ret)
			goto err_free_flow;
		spec += size;
	}
	pthread_mutex_lock(&eng->lock);
	if (fl->sniffer) {
		rc_list_add_tail(&eng->sniffers, &fl->link);
		eng->n_sniff++;
	} else {
		flow_insert(eng, fl);
	}
	qp->n_flows++;
	eng->n_flow++;
	eng->port->rx_raw = true;
	pthread_mutex_unlock(&eng->lock);
	return fl;

err_free_flow:
	free(fl);
err:
	errno = -ret;
	return NULL;
}

int rc_flow_destroy(struct rc_flow *fl)
{
	struct rc_engine *eng = fl->qp->eng;

	pthread_mutex_lock(&eng->lock);
	rc_list_del(&fl->link);
	if (fl->sniffer)
		eng->n_sniff--;
	fl->qp->n_flows--;
	if (!--eng->n_flow)
		eng->port->rx_raw = false;
	pthread_mutex_unlock(&eng->lock);
	free(fl);
	return 0;
}

void rc_flow_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->flows)
		free(container_of(pos, struct rc_flow, link));
	rc_list_for_each_safe(pos, tmp, &eng->sniffers)
		free(container_of(pos, struct rc_flow, link));
	rc_list_init(&eng->flows);
	rc_list_init(&eng->sniffers);
	eng->n_flow = eng->n_sniff = 0;
}
