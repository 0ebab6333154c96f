// SPDX-License-Identifier: MIT
/* Multicast: UD QPs attached to groups, datagrams to DestQP 0xffffff handed to each member. */
#include <errno.h>
#include <string.h>

#include "rc_internal.h"

static struct rc_mcast_group *group_find(struct rc_engine *eng, const uint8_t gid[16])
{
	for (unsigned i = 0; i < eng->n_mcast; i++)
		if (!memcmp(eng->mcast[i].gid, gid, 16))
			return &eng->mcast[i];
	return NULL;
}

static void group_remove_qp(struct rc_engine *eng, struct rc_mcast_group *g, unsigned i)
{
	g->qp[i] = g->qp[--g->n];
	if (g->n)
		return;
	if (eng->cfg.mcast_group)
		eng->cfg.mcast_group(eng->cfg.mcast_group_arg, g->gid, false);
	*g = eng->mcast[--eng->n_mcast];
}

int rc_mcast_attach(struct rc_qp *qp, const uint8_t gid[16])
{
	struct rc_engine *eng = qp->eng;
	struct rc_mcast_group *g;
	int ret = 0;

	if (qp->type != IBV_QPT_UD || !wire_gid_is_multicast(gid))
		return -EINVAL;
	pthread_mutex_lock(&eng->lock);
	g = group_find(eng, gid);
	if (!g) {
		if (eng->n_mcast == RC_MAX_MCAST_GROUPS) {
			ret = -ENOMEM;
			goto out;
		}
		if (eng->cfg.mcast_group) {
			ret = eng->cfg.mcast_group(eng->cfg.mcast_group_arg, gid, true);
			if (ret)
				goto out;
		}
		g = &eng->mcast[eng->n_mcast++];
		memcpy(g->gid, gid, 16);
		g->n = 0;
	}
	for (unsigned i = 0; i < g->n; i++)
		if (g->qp[i] == qp) {
			ret = 1;
			goto out;
		}
	if (g->n == RC_MAX_MCAST_QP_ATTACH)
		ret = -ENOMEM;
	else
		g->qp[g->n++] = qp;
out:
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

int rc_mcast_detach(struct rc_qp *qp, const uint8_t gid[16])
{
	struct rc_engine *eng = qp->eng;
	struct rc_mcast_group *g;
	int ret = -EINVAL;

	pthread_mutex_lock(&eng->lock);
	g = group_find(eng, gid);
	for (unsigned i = 0; g && i < g->n; i++)
		if (g->qp[i] == qp) {
			group_remove_qp(eng, g, i);
			ret = 0;
			break;
		}
	pthread_mutex_unlock(&eng->lock);
	return ret;
}

void rc_mcast_qp_gone(struct rc_qp *qp)
{
	struct rc_engine *eng = qp->eng;

	for (unsigned k = eng->n_mcast; k-- > 0;) {
		struct rc_mcast_group *g = &eng->mcast[k];

		for (unsigned i = 0; i < g->n; i++)
			if (g->qp[i] == qp) {
				group_remove_qp(eng, g, i);
				break;
			}
	}
}

void rc_mcast_rx(struct rc_engine *eng, const struct wire_pkt *pkt, const uint8_t *data,
		 uint32_t len, bool local)
{
	struct rc_mcast_group *g;

	/* Sent here: this host's other processes are members too (their copy goes by the host rings). */
	if (local && eng->cfg.local_forward)
		eng->cfg.local_forward(eng->cfg.local_forward_arg, WIRE_MCAST_QPN, data, len);
	if (!local && !rc_icrc_ok(eng, pkt)) {
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		return;
	}
	g = group_find(eng, pkt->dst_gid);
	if (!g || !(pkt->op->flags & WIRE_OPF_UD)) {
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		eng->cnt.rc_drops.count[g ? RC_DROP_WRONG_TRANSPORT : RC_DROP_NO_MCAST_GROUP]++;
		return;
	}
	/* Each member receives it as its own datagram (its Q_Key, its receive queue). */
	for (unsigned i = 0; i < g->n; i++) {
		struct rc_qp *qp = g->qp[i];

		qp->cnt.rx_packets++;
		qp->cnt.rx_bytes += len;
		rc_resp_rx(qp, pkt, false);
	}
	eng->pass_rx_request = true;
}
