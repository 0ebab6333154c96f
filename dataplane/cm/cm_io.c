// SPDX-License-Identifier: MIT
/* The CM's MAD I/O: the GSI QP (QPN 1), its receive and send buffers, UD SENDs to the peer's QP1. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cm_internal.h"

#define WR_RECV		(1ull << 63)

static int post_recv(struct cm *cm, unsigned slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(cm->recv_buf + (size_t)slot * CM_RECV_LEN),
		.length = CM_RECV_LEN,
		.lkey = rc_mr_lkey(cm->mr),
	};
	struct ibv_recv_wr wr = { .wr_id = WR_RECV | slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;

	return rc_post_recv(cm->qp, &wr, &bad);
}

/* RESET -> INIT -> RTR -> RTS with the GSI's Q_Key (IBA 10.2.5): what QP1 receives is keyed so. */
static int gsi_up(struct cm *cm)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT,
		.pkey_index = 0,
		.port_num = 1,
		.qkey = WIRE_GSI_QKEY,
	};
	int ret;

	ret = rc_qp_modify(cm->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			   IBV_QP_QKEY);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTR;
	ret = rc_qp_modify(cm->qp, &a, IBV_QP_STATE);
	if (ret)
		return ret;
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0;
	return rc_qp_modify(cm->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN);
}

int cm_io_init(struct cm *cm)
{
	size_t recv_bytes = (size_t)CM_RECV_SLOTS * CM_RECV_LEN;
	size_t bytes = recv_bytes + CM_SEND_SLOTS * sizeof(struct cm_send_slot);
	struct rc_qp_init init = { .qp_type = IBV_QPT_UD, .gsi = true };
	int ret = -ENOMEM;

	cm->region = calloc(1, bytes);
	if (!cm->region)
		return -ENOMEM;
	cm->recv_buf = cm->region;
	cm->send = (struct cm_send_slot *)(void *)(cm->region + recv_bytes);
	cm->pd = rc_pd_alloc(cm->cfg.eng);
	if (!cm->pd)
		goto err_free_region;
	cm->mr = rc_mr_reg(cm->pd, cm->region, bytes, (uintptr_t)cm->region,
			   IBV_ACCESS_LOCAL_WRITE);
	if (!cm->mr)
		goto err_free_pd;
	cm->cq = rc_cq_create(cm->cfg.eng, CM_RECV_SLOTS + CM_SEND_SLOTS, NULL);
	if (!cm->cq)
		goto err_dereg;
	init.pd = cm->pd;
	init.send_cq = cm->cq;
	init.recv_cq = cm->cq;
	init.cap.max_send_wr = CM_SEND_SLOTS;
	init.cap.max_recv_wr = CM_RECV_SLOTS;
	init.cap.max_send_sge = 1;
	init.cap.max_recv_sge = 1;
	init.sq_sig_all = true;
	cm->qp = rc_qp_create(cm->cfg.eng, &init);
	if (!cm->qp) {
		ret = -errno;
		goto err_destroy_cq;
	}
	ret = gsi_up(cm);
	for (unsigned i = 0; !ret && i < CM_RECV_SLOTS; i++)
		ret = post_recv(cm, i);
	if (ret)
		goto err_destroy_qp;
	return 0;

err_destroy_qp:
	rc_qp_destroy(cm->qp);
err_destroy_cq:
	rc_cq_destroy(cm->cq);
err_dereg:
	rc_mr_dereg(cm->mr);
err_free_pd:
	rc_pd_free(cm->pd);
err_free_region:
	free(cm->region);
	return ret;
}

void cm_io_fini(struct cm *cm)
{
	rc_qp_destroy(cm->qp);
	for (unsigned i = 0; i < CM_SEND_SLOTS; i++)
		if (cm->send[i].ah)
			rc_ah_destroy(cm->send[i].ah);
	rc_cq_destroy(cm->cq);
	rc_mr_dereg(cm->mr);
	rc_pd_free(cm->pd);
	free(cm->region);
}

int cm_io_gid_index(struct cm *cm, const uint8_t gid[16])
{
	struct wire_gid_entry e;

	for (unsigned i = 0; i < WIRE_GID_TABLE_LEN; i++)
		if (!rc_engine_get_gid(cm->cfg.eng, i, &e) && e.valid &&
		    e.type == WIRE_GID_ROCE_V2 && !memcmp(e.gid, gid, 16))
			return (int)i;
	return -ENOENT;
}

static struct rc_ah *path_ah(struct cm *cm, const struct cm_path *path)
{
	struct ibv_ah_attr aa = {
		.is_global = 1,
		.port_num = 1,
		.grh = {
			.sgid_index = (uint8_t)path->sgid_index,
			.hop_limit = path->hop_limit ? path->hop_limit : 64,
			.traffic_class = path->tclass,
			.flow_label = path->flow_label,
		},
	};

	memcpy(aa.grh.dgid.raw, path->dgid, 16);
	return rc_ah_create(cm->pd, &aa);
}

int cm_io_frame(struct cm *cm, const struct cm_path *path, const struct wire_cm_mad *mad,
		uint8_t *frame, uint32_t room)
{
	struct rc_ah *ah = path_ah(cm, path);
	int ret;

	if (!ah)
		return -EHOSTUNREACH;
	ret = rc_ah_ud_frame(ah, WIRE_GSI_QPN, WIRE_GSI_QPN, WIRE_GSI_QKEY, mad, WIRE_MAD_LEN,
			     frame, room);
	rc_ah_destroy(ah);
	return ret;
}

int cm_io_send(struct cm *cm, const struct cm_path *path, const struct wire_cm_mad *mad)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	struct cm_send_slot *s = NULL;
	struct ibv_sge sge;
	unsigned i;
	int ret;

	for (i = 0; i < CM_SEND_SLOTS; i++)
		if (!cm->send[i].busy) {
			s = &cm->send[i];
			break;
		}
	if (!s) {
		cm->cnt.tx_no_slot++;
		return -ENOBUFS;
	}
	s->ah = path_ah(cm, path);
	if (!s->ah)
		return -EHOSTUNREACH;
	s->mad = *mad;
	sge.addr = (uintptr_t)&s->mad;
	sge.length = WIRE_MAD_LEN;
	sge.lkey = rc_mr_lkey(cm->mr);
	wr.wr_id = i;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.wr.ud.ah = rc_ah_ibv(s->ah);
	wr.wr.ud.remote_qpn = WIRE_GSI_QPN;
	wr.wr.ud.remote_qkey = WIRE_GSI_QKEY;
	ret = rc_post_send(cm->qp, &wr, &bad);
	if (ret) {
		rc_ah_destroy(s->ah);
		s->ah = NULL;
		return ret;
	}
	s->busy = true;
	cm->cnt.mads_tx++;
	return 0;
}

unsigned cm_sends_in_flight(const struct cm *cm)
{
	unsigned n = 0;

	for (unsigned i = 0; i < CM_SEND_SLOTS; i++)
		n += cm->send[i].busy;
	return n;
}

/* The sender's and our address from the 40 bytes in front of the MAD (IBA 11.4.1.2 for RoCE v2). */
static void grh_gids(const uint8_t *grh, uint8_t src[16], uint8_t dst[16])
{
	if (grh[0] >> 4 == 6) {
		memcpy(src, grh + 8, 16);
		memcpy(dst, grh + 24, 16);
		return;
	}
	/* IPv4: the IP header in the last 20 bytes. */
	memcpy(src, wire_v4mapped_prefix, 12);
	memcpy(src + 12, grh + 20 + 12, 4);
	memcpy(dst, wire_v4mapped_prefix, 12);
	memcpy(dst + 12, grh + 20 + 16, 4);
}

unsigned cm_io_poll(struct cm *cm)
{
	struct ibv_wc wc[16];
	unsigned total = 0;
	int n;

	while ((n = rc_cq_poll(cm->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			unsigned slot = (unsigned)(wc[i].wr_id & 0xffff);

			if (!(wc[i].wr_id & WR_RECV)) {
				struct cm_send_slot *s = &cm->send[slot];

				if (s->ah)
					rc_ah_destroy(s->ah);
				s->ah = NULL;
				s->busy = false;
				continue;
			}
			if (wc[i].status == IBV_WC_SUCCESS) {
				const uint8_t *b = cm->recv_buf + (size_t)slot * CM_RECV_LEN;
				uint32_t len = wc[i].byte_len > CM_GRH_LEN ?
					       wc[i].byte_len - CM_GRH_LEN : 0;
				enum wire_mad_drop r = wire_cm_mad_check(b + CM_GRH_LEN, len);
				uint8_t src[16], dst[16];

				cm->cnt.mads_rx++;
				total++;
				if (r) {
					cm->cnt.drops[r]++;
				} else {
					grh_gids(b, src, dst);
					cm_conn_rx(cm, src, dst,
						   (const struct wire_cm_mad *)(b + CM_GRH_LEN));
				}
			}
			/* A flushed receive (QP destroyed) is not posted again. */
			if (wc[i].status != IBV_WC_WR_FLUSH_ERR)
				post_recv(cm, slot);
		}
	}
	return total;
}
