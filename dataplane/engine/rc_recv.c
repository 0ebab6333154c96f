// SPDX-License-Identifier: MIT
/* Receive: port and self-ring frames parsed, checked against QP and address, dispatched. */
#include "rc_internal.h"

static bool type_matches(const struct rc_qp *qp, wire_op_flags fl)
{
	switch (qp->type) {
	case IBV_QPT_RC:
		return fl & WIRE_OPF_RC;
	case IBV_QPT_UC:
		return fl & WIRE_OPF_UC;
	case IBV_QPT_UD:
		return fl & WIRE_OPF_UD;
	/* XRC's halves: the initiator takes only responses, the target only requests. */
	case IBV_QPT_XRC_SEND:
		return (fl & WIRE_OPF_XRC) && !(fl & WIRE_OPF_REQUEST);
	case IBV_QPT_XRC_RECV:
		return (fl & WIRE_OPF_XRC) && (fl & WIRE_OPF_REQUEST);
	default:
		return false;
	}
}

void rc_rx_drop(struct rc_qp *qp, const struct wire_pkt *pkt, bool icrc_unchecked,
		enum rc_drop why)
{
	if (!icrc_unchecked || rc_icrc_ok(qp->eng, pkt))
		qp->cnt.rc_drops.count[why]++;
}

/* Addressed to us, and for a connected QP sent by its peer; RC_DROP_NONE when so. */
static enum rc_drop check_addr(const struct rc_engine *eng, const struct rc_qp *qp,
			       const struct wire_pkt *pkt)
{
	if (eng->n_gids && !rc_gid_is_local(eng, pkt->dst_gid))
		return RC_DROP_NOT_OUR_ADDR;
	/* A v1 and a v2 GID of one address are the same 16 bytes: the frame tells them apart. */
	if (qp->type != IBV_QPT_UD &&
	    (memcmp(pkt->src_gid, qp->path.dgid, 16) || pkt->roce_v1 != qp->path.roce_v1))
		return RC_DROP_WRONG_PEER;
	return RC_DROP_NONE;
}

/* @ext: the frame's zero-copy payload (port_frame.ext), NULL when contiguous. */
static void rx_frame(struct rc_engine *eng, const uint8_t *data, uint32_t len,
		     const struct port_frame *ext, bool local)
{
	struct wire_pkt pkt;
	enum wire_drop r;
	enum rc_drop why;
	struct rc_qp *qp;
	bool unchecked;

	if (unlikely(eng->n_sniff) && !local)
		rc_raw_sniff(eng, data, len, ext);
	/* Frames this engine built itself cannot be corrupted on the way. */
	r = wire_parse(data, len, WIRE_PARSE_SKIP_ICRC, &pkt);
	if (ext && !r) {
		/* The port said where the payload is: it must be where the headers put it. */
		if (unlikely(pkt.payload_off != ext->ext_off || pkt.payload_len != ext->ext_len))
			r = WIRE_DROP_BAD_PAYLOAD_LEN;
		else
			pkt.payload = ext->ext;
	}
	if (unlikely(r)) {
		/* Not RoCE: a raw packet QP's flow may want it. */
		if (eng->n_flow && !ext && !local && rc_raw_rx(eng, data, len))
			return;
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		eng->cnt.drops.count[r]++;
		return;
	}
	if (unlikely(pkt.dest_qp == WIRE_MCAST_QPN)) {
		rc_mcast_rx(eng, &pkt, data, len, local);
		return;
	}
	qp = rc_hash_get(&eng->qps, pkt.dest_qp);
	unchecked = !local && qp && rc_resp_icrc_deferred(qp, &pkt);
	if (!local && !unchecked && !rc_icrc_ok(eng, &pkt)) {
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		return;
	}
	/* Same host, QP1: every engine's CM sees it (and ours too, when we have one). */
	if (unlikely(local && pkt.dest_qp == WIRE_GSI_QPN) && eng->cfg.local_forward &&
	    eng->cfg.local_forward(eng->cfg.local_forward_arg, pkt.dest_qp, data, len) == 0 && !qp)
		return;
	if (unlikely(!qp)) {
		/* Same host, another engine's QP: it is received there, not here. */
		if (local && eng->cfg.local_forward &&
		    eng->cfg.local_forward(eng->cfg.local_forward_arg, pkt.dest_qp, data, len) == 0)
			return;
		eng->cnt.rx_packets++;
		eng->cnt.rx_bytes += len;
		eng->cnt.rc_drops.count[RC_DROP_UNKNOWN_QP]++;
		return;
	}
	qp->cnt.rx_packets++;
	qp->cnt.rx_bytes += len;
	why = check_addr(eng, qp, &pkt);
	if (unlikely(why)) {
		rc_rx_drop(qp, &pkt, unchecked, why);
		return;
	}
	if (unlikely(pkt.op->flags & WIRE_OPF_CNP)) {
		/* Annex A17.9: a CNP that passes its ICRC slows the requester (DCQCN on). */
		if (unchecked && !rc_icrc_ok(eng, &pkt))
			return;
		qp->cnt.cnps_rx++;
		rc_dcqcn_cnp(qp);
		return;
	}
	if (unlikely(!type_matches(qp, pkt.op->flags))) {
		rc_rx_drop(qp, &pkt, unchecked, RC_DROP_WRONG_TRANSPORT);
		return;
	}
	if (pkt.op->flags & WIRE_OPF_REQUEST) {
		/* ECN is IP's: a RoCE v1 GRH's traffic class carries none. */
		if (unlikely((pkt.tclass & WIRE_ECN_MASK) == WIRE_ECN_CE) && !pkt.roce_v1 &&
		    (!unchecked || rc_icrc_ok(eng, &pkt))) {
			unchecked = false;
			rc_resp_ecn(qp, &pkt);
		}
		rc_resp_rx(qp, &pkt, unchecked);
		eng->pass_rx_request = true;
		eng->rx_mid_message = !(pkt.op->flags & (WIRE_OPF_LAST | WIRE_OPF_ONLY));
	} else {
		rc_comp_rx(qp, &pkt);
		if ((pkt.opcode & WIRE_OPC_LOW_MASK) == WIRE_OP_ACKNOWLEDGE && qp->sq_head == qp->sq_tail) {
			eng->pass_ack_drained = true;
			eng->pass_recv_posted |= qp->srq || rc_rq_count(&qp->rq);
		}
	}
}

static unsigned self_ring_rx(struct rc_engine *eng, unsigned budget)
{
	uint32_t end = eng->self_tail;
	unsigned n = 0;

	while (eng->self_head != end && n < budget) {
		struct rc_self_slot *s = &eng->self_ring[eng->self_head % RC_SELF_SLOTS];

		rx_frame(eng, s->data, s->len, NULL, true);
		eng->self_head++;
		n++;
	}
	return n;
}

static unsigned port_rx(struct rc_engine *eng, unsigned budget)
{
	struct port_frame f[RC_BURST];
	unsigned total = 0;

	while (total < budget) {
		unsigned want = budget - total < RC_BURST ? budget - total : RC_BURST;
		unsigned n = eng->port->ops->rx_burst(eng->port, f, want);

		if (n == 0)
			break;
		for (unsigned i = 0; i < n; i++) {
			/* The next frame's headers and trailer load while this one is handled. */
			if (i + 1 < n) {
				__builtin_prefetch(f[i + 1].data);
				__builtin_prefetch(f[i + 1].data + 64);
				/* Pad and ICRC: past the payload, on a line of their own. */
				__builtin_prefetch(f[i + 1].data + f[i + 1].len - WIRE_ICRC_LEN);
			}
			rx_frame(eng, f[i].data, f[i].len,
				 eng->port->tx_ext && f[i].ext ? &f[i] : NULL, false);
		}
		eng->port->ops->rx_release(eng->port, f, n);
		total += n;
		if (n < want)
			break;
	}
	return total;
}

/* Frames from this engine's own QPs first (they were sent in the last pass), then the port's. */
unsigned rc_rx_poll(struct rc_engine *eng, unsigned budget)
{
	unsigned n = eng->self_ring ? self_ring_rx(eng, budget) : 0;

	return n + port_rx(eng, budget);
}
