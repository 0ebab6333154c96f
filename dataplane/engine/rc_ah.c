// SPDX-License-Identifier: MIT
/* Address vectors: from ibv_ah_attr to a path (GIDs, RoCE version, MAC), and UD address handles. */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

bool rc_gid_is_local(const struct rc_engine *eng, const uint8_t gid[16])
{
	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++)
		if (eng->gid[i].valid && memcmp(eng->gid[i].gid, gid, 16) == 0)
			return true;
	return false;
}

/*
 * A link-local RoCE v1 GID names its MAC: the interface identifier is the
 * modified EUI-64 (RFC 4291 2.5.1, appendix A) of it, ff:fe in the middle
 * and the universal/local bit flipped; ConnectX resolves it so, without ND.
 */
static bool mac_from_eui64(const uint8_t gid[16], uint8_t mac[6])
{
	if (gid[0] != 0xfe || (gid[1] & 0xc0) != 0x80 || gid[11] != 0xff || gid[12] != 0xfe)
		return false;
	mac[0] = gid[8] ^ 0x02;
	mac[1] = gid[9];
	mac[2] = gid[10];
	mac[3] = gid[13];
	mac[4] = gid[14];
	mac[5] = gid[15];
	return true;
}

int rc_path_resolve(struct rc_engine *eng, struct rc_path *p)
{
	int ret;

	if (p->mac_ok)
		return 0;
	if (p->mcast) {
		wire_gid_multicast_mac(p->dgid, p->dmac);
		p->mac_ok = true;
		p->resolve_err = 0;
		return 0;
	}
	if (p->local) {
		memcpy(p->dmac, eng->port->mac, 6);
		p->mac_ok = true;
		p->resolve_err = 0;
		return 0;
	}
	if (p->roce_v1 && mac_from_eui64(p->dgid, p->dmac)) {
		p->mac_ok = true;
		p->resolve_err = 0;
		return 0;
	}
	/* IPv4-mapped v1 GIDs through ARP, as v2's. */
	ret = eng->port->ops->resolve ? eng->port->ops->resolve(eng->port, p->dgid, p->dmac)
				      : -EHOSTUNREACH;
	if (ret != 0 && ret != -EAGAIN)
		ret = -EHOSTUNREACH;
	p->resolve_err = ret;
	p->mac_ok = ret == 0;
	return ret;
}

/**
 * rc_path_from_ah_attr() - check an address vector and build its path.
 *
 * RoCE needs the GRH (is_global); the source GID must be an entry of the
 * table and of the same IP version as the destination.  Its type picks the
 * wire: a RoCE v1 entry sends (and its peer answers) GRH frames on 0x8915,
 * a RoCE v2 entry UDP/IP.  The MAC is asked for once here; -EAGAIN is kept
 * in the path and asked again before sending.
 * Return: 0 or -EINVAL.
 */
int rc_path_from_ah_attr(struct rc_engine *eng, const struct ibv_ah_attr *ah, struct rc_path *p)
{
	const struct wire_gid_entry *g;

	if (!ah->is_global || ah->grh.sgid_index >= WIRE_GID_TABLE_LEN)
		return -EINVAL;
	g = &eng->gid[ah->grh.sgid_index];
	if (!g->valid || (g->type != WIRE_GID_ROCE_V2 && g->type != WIRE_GID_ROCE_V1))
		return -EINVAL;
	if (wire_gid_is_v4mapped(g->gid) != wire_gid_is_v4mapped(ah->grh.dgid.raw))
		return -EINVAL;
	memset(p, 0, sizeof(*p));
	memcpy(p->dgid, ah->grh.dgid.raw, 16);
	memcpy(p->sgid, g->gid, 16);
	p->roce_v1 = g->type == WIRE_GID_ROCE_V1;
	/* The GRH has IPv6's form whatever the GID. */
	p->ip_version = !p->roce_v1 && wire_gid_is_v4mapped(g->gid) ? 4 : 6;
	p->tclass = ah->grh.traffic_class;
	p->hop_limit = ah->grh.hop_limit;
	p->flow_label = ah->grh.flow_label & 0xfffff;
	p->sgid_index = ah->grh.sgid_index;
	p->local = rc_gid_is_local(eng, p->dgid);
	p->mcast = !p->roce_v1 && wire_gid_is_multicast(p->dgid);
	rc_path_resolve(eng, p);
	return 0;
}

void rc_path_fill_desc(struct rc_engine *eng, const struct rc_path *p, struct wire_build_desc *d)
{
	memcpy(d->src_mac, eng->port->mac, 6);
	memcpy(d->dst_mac, p->dmac, 6);
	d->ip_version = p->ip_version;
	d->roce_v1 = p->roce_v1;
	memcpy(d->src_gid, p->sgid, 16);
	memcpy(d->dst_gid, p->dgid, 16);
	d->tclass = p->tclass;
	/* DCQCN needs ECN-capable frames: ECT(0) unless the traffic class sets ECN, as ConnectX
	 * marks RoCE while its reaction point is on. */
	if (eng->cfg.dcqcn.on && !p->roce_v1 && !(d->tclass & WIRE_ECN_MASK))
		d->tclass |= WIRE_ECN_ECT0;
	d->hop_limit = p->hop_limit;
	d->flow_label = p->flow_label;
}

int rc_ah_ud_frame(struct rc_ah *ah, uint32_t src_qpn, uint32_t dest_qpn, uint32_t qkey,
		   const void *payload, uint32_t len, uint8_t *frame, uint32_t room)
{
	struct rc_engine *eng = ah->eng;
	struct wire_build_desc d;
	uint32_t n;
	int ret;

	pthread_mutex_lock(&eng->lock);
	ret = rc_path_resolve(eng, &ah->path);
	if (!ret) {
		memset(&d, 0, sizeof(d));
		rc_path_fill_desc(eng, &ah->path, &d);
		d.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
		d.dest_qp = dest_qpn;
		d.udp_sport = wire_path_udp_sport(ah->path.flow_label, src_qpn, dest_qpn);
		d.pkey = WIRE_DEFAULT_PKEY;
		d.deth.qkey = qkey;
		d.deth.src_qp = src_qpn;
		n = wire_build(frame, room, &d, payload, len);
		ret = n ? (int)n : -EMSGSIZE;
	}
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

struct rc_ah *rc_ah_create(struct rc_pd *pd, struct ibv_ah_attr *attr)
{
	struct rc_engine *eng = pd->eng;
	struct rc_ah *ah = calloc(1, sizeof(*ah));
	int ret;

	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&eng->lock);
	if (eng->n_ah >= RC_MAX_AH) {
		ret = -ENOMEM;
		goto err_unlock;
	}
	ret = rc_path_from_ah_attr(eng, attr, &ah->path);
	if (ret)
		goto err_unlock;
	ah->eng = eng;
	ah->pd = pd;
	pd->refs++;
	eng->n_ah++;
	rc_list_add_tail(&eng->ahs, &ah->link);
	pthread_mutex_unlock(&eng->lock);
	return ah;

err_unlock:
	pthread_mutex_unlock(&eng->lock);
	free(ah);
	errno = -ret;
	return NULL;
}

int rc_ah_destroy(struct rc_ah *ah)
{
	struct rc_engine *eng = ah->eng;

	pthread_mutex_lock(&eng->lock);
	rc_list_del(&ah->link);
	ah->pd->refs--;
	eng->n_ah--;
	pthread_mutex_unlock(&eng->lock);
	free(ah);
	return 0;
}

void rc_ah_free_all(struct rc_engine *eng)
{
	struct rc_list *pos, *tmp;

	rc_list_for_each_safe(pos, tmp, &eng->ahs)
		free(container_of(pos, struct rc_ah, link));
	rc_list_init(&eng->ahs);
}

struct ibv_ah *rc_ah_ibv(struct rc_ah *ah)
{
	return &ah->ibv;
}

struct rc_ah *rc_ah_from_ibv(struct ibv_ah *ibv)
{
	return container_of(ibv, struct rc_ah, ibv);
}
