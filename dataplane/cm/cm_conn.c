// SPDX-License-Identifier: MIT
/* The CM's state machines (IBA 12.9): REQ/REP/RTU, REJ and MRA, DREQ/DREP, SIDR, timers, comm IDs. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cm_internal.h"

/* The CM response timeout and packet life time rdma_cm puts in REQs (the kernel's cma.c). */
#define CM_RESPONSE_TIMEOUT	20	/* 4.096 us * 2^20: 4.3 s */
#define CM_PACKET_LIFETIME	16	/* 268 ms */
#define CM_MRA_SERVICE_TIMEOUT	24	/* what the passive side asks for while its consumer decides */
#define CM_TIMEWAIT_MS		1000

static const char *const state_names[CM_STATE_COUNT] = {
#define CM_STATE_NAME(n) [CM_##n] = #n,
	CM_STATES(CM_STATE_NAME)
#undef CM_STATE_NAME
};

const char *cm_state_name(enum cm_state s)
{
	return (unsigned)s < CM_STATE_COUNT ? state_names[s] : "INVALID";
}

uint64_t cm_now_ns(const struct cm *cm)
{
	return cm->cfg.now_ns(cm->cfg.arg);
}

/* IBA 12.7.22: a 5-bit timeout field is 4.096 us * 2^value. */
static uint32_t field_ms(uint8_t t)
{
	uint64_t ms = (4096ull << (t & 31)) / 1000000;

	return ms ? (uint32_t)ms : 1;
}

static uint32_t timeout_ms(const struct cm *cm, uint8_t response_timeout)
{
	if (cm->cfg.timeout_ms)
		return cm->cfg.timeout_ms;
	return field_ms(response_timeout) + 2 * field_ms(CM_PACKET_LIFETIME);
}

/* ---- IDs ---- */

static struct cm_id *find_local(struct cm *cm, uint32_t comm_id)
{
	for (struct cm_id *id = cm->ids; id; id = id->next)
		if (id->local_comm_id == comm_id && id->state != CM_LISTEN)
			return id;
	return NULL;
}

static struct cm_id *find_remote(struct cm *cm, uint32_t remote_comm_id, const uint8_t gid[16])
{
	for (struct cm_id *id = cm->ids; id; id = id->next)
		if (id->remote_comm_id == remote_comm_id && id->path_ok &&
		    !memcmp(id->path.dgid, gid, 16))
			return id;
	return NULL;
}

/* Whether @id holds a connection to its peer's QP: from the REQ until time-wait ends. */
static bool holds_remote_qp(const struct cm_id *id)
{
	switch (id->state) {
	case CM_REQ_RCVD:
	case CM_REP_SENT:
	case CM_REP_RCVD:
	case CM_ESTABLISHED:
	case CM_DREQ_SENT:
	case CM_DREQ_RCVD:
	case CM_TIMEWAIT:
		return id->path_ok;
	default:
		return false;
	}
}

/*
 * A REQ from QP @qpn at @gid is stale (IBA 12.9.8.3.1, REJ reason 10) when an
 * ID here still holds a connection to that QP, or one did within time-wait.
 * Return: whether it is, and in @live the ID that holds it, if any.
 */
static bool stale_req(struct cm *cm, const uint8_t gid[16], uint32_t qpn, struct cm_id **live)
{
	uint64_t now = cm_now_ns(cm);

	*live = NULL;
	for (struct cm_id *id = cm->ids; id; id = id->next)
		if (holds_remote_qp(id) && id->remote_qpn == qpn && !memcmp(id->path.dgid, gid, 16)) {
			*live = id;
			return true;
		}
	for (unsigned i = 0; i < CM_TIMEWAIT_RECS; i++) {
		const struct cm_timewait_rec *t = &cm->timewait[i];

		if (t->deadline > now && t->qpn == qpn && !memcmp(t->gid, gid, 16))
			return true;
	}
	return false;
}

static uint32_t timewait_ms(const struct cm *cm)
{
	return cm->cfg.timeout_ms ? cm->cfg.timeout_ms : CM_TIMEWAIT_MS;
}

/* @id goes before its time-wait is over: its peer's QP stays stale until then. */
static void keep_timewait(struct cm_id *id)
{
	struct cm *cm = id->cm;
	struct cm_timewait_rec *t = &cm->timewait[cm->next_timewait++ % CM_TIMEWAIT_RECS];

	memcpy(t->gid, id->path.dgid, 16);
	t->qpn = id->remote_qpn;
	t->deadline = id->state == CM_TIMEWAIT && id->deadline ? id->deadline :
		      cm_now_ns(cm) + (uint64_t)timewait_ms(cm) * 1000000;
}

static struct cm_id *find_listener(struct cm *cm, uint64_t service_id)
{
	for (struct cm_id *id = cm->ids; id; id = id->next)
		if (id->state == CM_LISTEN && id->service_id == service_id)
			return id;
	return NULL;
}

/*
 * Unique on the host while the process lives: the PID (below 2^22, Linux's
 * PID_MAX_LIMIT) in the low bits, a sequence number in the high ten.
 */
static uint32_t new_comm_id(struct cm *cm)
{
	uint32_t pid = (uint32_t)(cm->cfg.pid ? cm->cfg.pid : getpid()) & 0x3fffffu;

	for (unsigned tries = 0; tries < 1024; tries++) {
		uint32_t id = pid | (cm->next_seq++ & 0x3ffu) << 22;

		if (id && !find_local(cm, id))
			return id;
	}
	return 0;
}

struct cm_id *cm_id_create(struct cm *cm, void *user)
{
	struct cm_id *id = calloc(1, sizeof(*id));

	if (!id)
		return NULL;
	id->local_comm_id = new_comm_id(cm);
	if (!id->local_comm_id) {
		free(id);
		errno = EAGAIN;
		return NULL;
	}
	id->cm = cm;
	id->user = user;
	id->state = CM_IDLE;
	id->next = cm->ids;
	cm->ids = id;
	return id;
}

void *cm_id_user(const struct cm_id *id)
{
	return id->user;
}

void cm_id_set_user(struct cm_id *id, void *user)
{
	id->user = user;
}

enum cm_state cm_id_state(const struct cm_id *id)
{
	return id->state;
}

uint32_t cm_id_comm_id(const struct cm_id *id)
{
	return id->local_comm_id;
}

const struct cm_path *cm_id_path(const struct cm_id *id)
{
	return id->path_ok ? &id->path : NULL;
}

static void id_unlink(struct cm_id *id)
{
	for (struct cm_id **p = &id->cm->ids; *p; p = &(*p)->next)
		if (*p == id) {
			*p = id->next;
			return;
		}
}

/* ---- Sending ---- */

static void stop_timer(struct cm_id *id)
{
	id->deadline = 0;
	id->resend = false;
}

/* Send id->msg and repeat it every timeout until answered, @retries times. */
static int send_retried(struct cm_id *id, uint32_t ms, unsigned retries)
{
	int ret = cm_io_send(id->cm, &id->path, &id->msg);

	id->resend = true;
	id->retries_left = retries;
	id->timeout_ms = ms;
	id->deadline = cm_now_ns(id->cm) + (uint64_t)ms * 1000000;
	/* A lost first copy is what the timer is for. */
	return ret == -ENOBUFS ? 0 : ret;
}

static void copy_pdata(uint8_t *dst, size_t room, const void *pdata, uint8_t len)
{
	if (pdata && len)
		memcpy(dst, pdata, len < room ? len : room);
}

/* A REJ for a REQ or REP of @remote_comm_id that @local_comm_id (0 if none) refuses. */
static void send_rej(struct cm *cm, const struct cm_path *path, uint64_t tid,
		     uint32_t local_comm_id, uint32_t remote_comm_id, uint8_t msg_rejected,
		     uint16_t reason, const void *pdata, uint8_t len)
{
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, WIRE_CM_REJ, tid);
	wire_set32(&m.u.rej.local_comm_id, local_comm_id);
	wire_set32(&m.u.rej.remote_comm_id, remote_comm_id);
	m.u.rej.msg_rejected = (uint8_t)(msg_rejected << 6);
	wire_set16(&m.u.rej.reason, reason);
	copy_pdata(m.u.rej.pdata, sizeof(m.u.rej.pdata), pdata, len);
	cm->cnt.rej_tx++;
	cm_io_send(cm, path, &m);
}

static void send_simple(struct cm_id *id, enum wire_cm_attr attr, const void *pdata, uint8_t len)
{
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, attr, id->tid);
	wire_set32(&m.u.rtu.local_comm_id, id->local_comm_id);
	wire_set32(&m.u.rtu.remote_comm_id, id->remote_comm_id);
	copy_pdata(m.u.rtu.pdata, sizeof(m.u.rtu.pdata), pdata, len);
	cm_io_send(id->cm, &id->path, &m);
	id->msg = m;	/* a duplicate of what this answers gets it again */
}

static uint64_t new_tid(struct cm_id *id)
{
	return (uint64_t)id->local_comm_id << 32 | (id->cm->next_seq++ & 0xffffffffu);
}

static void dreq_mad(struct cm_id *id, struct wire_cm_mad *m, uint64_t tid, const void *pdata,
		     uint8_t len)
{
	struct wire_cm_dreq *d = &m->u.dreq;

	wire_cm_mad_init(m, WIRE_CM_DREQ, tid);
	wire_set32(&d->local_comm_id, id->local_comm_id);
	wire_set32(&d->remote_comm_id, id->remote_comm_id);
	wire_set_hi24_lo8(&d->remote_qpn, id->remote_qpn, 0);
	copy_pdata(d->pdata, sizeof(d->pdata), pdata, len);
}

/*
 * Tell cfg.exit_dreq that @id is established (@up) with the DREQ frame to
 * post should the process die, or that it no longer is.
 */
static void note_exit(struct cm_id *id, bool up)
{
	struct cm *cm = id->cm;
	uint8_t frame[512];
	struct wire_cm_mad m;
	int len;

	if (!cm->cfg.exit_dreq || up == id->exit_noted)
		return;
	if (!up) {
		cm->cfg.exit_dreq(cm->cfg.arg, id->local_comm_id, NULL, 0);
		id->exit_noted = false;
		return;
	}
	dreq_mad(id, &m, new_tid(id), NULL, 0);
	len = cm_io_frame(cm, &id->path, &m, frame, sizeof(frame));
	if (len <= 0)
		return;
	cm->cfg.exit_dreq(cm->cfg.arg, id->local_comm_id, frame, (uint32_t)len);
	id->exit_noted = true;
}

int cm_listen(struct cm_id *id, uint64_t service_id)
{
	if (id->state != CM_IDLE)
		return -EINVAL;
	if (find_listener(id->cm, service_id))
		return -EBUSY;
	id->service_id = service_id;
	id->state = CM_LISTEN;
	return 0;
}

int cm_send_req(struct cm_id *id, const struct cm_path *path, const struct cm_conn *c,
		uint8_t max_retries)
{
	struct wire_cm_req *r = &id->msg.u.req;
	struct cm *cm = id->cm;
	int idx;

	if (id->state != CM_IDLE)
		return -EINVAL;
	idx = cm_io_gid_index(cm, path->sgid);
	if (idx < 0)
		return -EADDRNOTAVAIL;
	id->path = *path;
	id->path.sgid_index = (unsigned)idx;
	id->path_ok = true;
	id->service_id = c->service_id;
	id->tid = new_tid(id);
	id->local_cm_timeout = CM_RESPONSE_TIMEOUT;
	wire_cm_mad_init(&id->msg, WIRE_CM_REQ, id->tid);
	wire_set32(&r->local_comm_id, id->local_comm_id);
	wire_set64(&r->service_id, c->service_id);
	wire_set64(&r->local_ca_guid, cm->cfg.node_guid);
	wire_set32(&r->local_qkey, c->qkey);
	wire_set_hi24_lo8(&r->qpn_rres, c->qpn, c->rres);
	wire_set_hi24_lo8(&r->eecn_idepth, 0, c->idepth);
	wire_set_hi24_lo8(&r->reecn_misc, 0, (uint8_t)(CM_RESPONSE_TIMEOUT << 3 |
			  (c->qp_type == IBV_QPT_UC ? 1 : 0) << 1 | (c->flow_control ? 1 : 0)));
	wire_set_hi24_lo8(&r->psn_misc, c->psn,
			  (uint8_t)(CM_RESPONSE_TIMEOUT << 3 | (c->retry_count & 7)));
	wire_set16(&r->pkey, WIRE_DEFAULT_PKEY);
	r->mtu_misc = (uint8_t)((path->mtu & 0xf) << 4 | (c->rnr_retry & 7));
	r->retries_misc = (uint8_t)((max_retries & 0xf) << 4 | (c->srq ? 1 : 0) << 3);
	/* The permissive LID in both, as the kernel's cm.c puts it in a REQ of a global (RoCE) path. */
	wire_set16(&r->primary.local_lid, WIRE_PERMISSIVE_LID);
	wire_set16(&r->primary.remote_lid, WIRE_PERMISSIVE_LID);
	memcpy(r->primary.local_gid, path->sgid, 16);
	memcpy(r->primary.remote_gid, path->dgid, 16);
	wire_set32(&r->primary.flow_rate, (path->flow_label & 0xfffff) << 12);
	r->primary.tclass = path->tclass;
	r->primary.hop_limit = path->hop_limit ? path->hop_limit : 64;
	r->primary.ack_timeout = (uint8_t)((c->ack_timeout & 0x1f) << 3);
	copy_pdata(r->pdata, sizeof(r->pdata), c->pdata, c->pdata_len);
	id->state = CM_REQ_SENT;
	return send_retried(id, timeout_ms(cm, CM_RESPONSE_TIMEOUT), max_retries);
}

int cm_send_rep(struct cm_id *id, const struct cm_conn *c)
{
	struct wire_cm_rep *r = &id->msg.u.rep;
	struct cm *cm = id->cm;

	if (id->state != CM_REQ_RCVD)
		return -EINVAL;
	wire_cm_mad_init(&id->msg, WIRE_CM_REP, id->tid);
	wire_set32(&r->local_comm_id, id->local_comm_id);
	wire_set32(&r->remote_comm_id, id->remote_comm_id);
	wire_set32(&r->local_qkey, c->qkey);
	wire_set_hi24_lo8(&r->qpn_vendor, c->qpn, 0);
	wire_set_hi24_lo8(&r->psn_vendor, c->psn, 0);
	r->rres = c->rres;
	r->idepth = c->idepth;
	r->ack_misc = (uint8_t)((c->ack_timeout & 0x1f) << 3 | (c->flow_control ? 1 : 0));
	r->rnr_misc = (uint8_t)((c->rnr_retry & 7) << 5 | (c->srq ? 1 : 0) << 4);
	wire_set64(&r->local_ca_guid, cm->cfg.node_guid);
	copy_pdata(r->pdata, sizeof(r->pdata), c->pdata, c->pdata_len);
	id->state = CM_REP_SENT;
	/* The active side said in its REQ how long it waits (its local CM response timeout). */
	return send_retried(id, timeout_ms(cm, id->local_cm_timeout), 15);
}

int cm_send_rtu(struct cm_id *id, const void *pdata, uint8_t len)
{
	if (id->state != CM_REP_RCVD)
		return -EINVAL;
	send_simple(id, WIRE_CM_RTU, pdata, len);
	id->state = CM_ESTABLISHED;
	note_exit(id, true);
	return 0;
}

int cm_send_rej(struct cm_id *id, uint16_t reason, const void *pdata, uint8_t len)
{
	uint8_t which;

	switch (id->state) {
	case CM_REQ_RCVD:
		which = WIRE_CM_MSG_REQ;
		break;
	case CM_REP_RCVD:
		which = WIRE_CM_MSG_REP;
		break;
	default:
		return -EINVAL;
	}
	send_rej(id->cm, &id->path, id->tid, id->local_comm_id, id->remote_comm_id, which, reason,
		 pdata, len);
	stop_timer(id);
	id->state = CM_IDLE;
	return 0;
}

int cm_send_dreq(struct cm_id *id, const void *pdata, uint8_t len)
{
	if (id->state != CM_ESTABLISHED)
		return -EINVAL;
	id->tid = new_tid(id);
	dreq_mad(id, &id->msg, id->tid, pdata, len);
	id->state = CM_DREQ_SENT;
	note_exit(id, false);
	return send_retried(id, timeout_ms(id->cm, CM_RESPONSE_TIMEOUT), 15);
}

int cm_send_sidr_req(struct cm_id *id, const struct cm_path *path, uint64_t service_id,
		     const void *pdata, uint8_t len)
{
	struct wire_cm_sidr_req *r = &id->msg.u.sidr_req;
	int idx;

	if (id->state != CM_IDLE)
		return -EINVAL;
	idx = cm_io_gid_index(id->cm, path->sgid);
	if (idx < 0)
		return -EADDRNOTAVAIL;
	id->path = *path;
	id->path.sgid_index = (unsigned)idx;
	id->path_ok = true;
	id->service_id = service_id;
	id->tid = new_tid(id);
	wire_cm_mad_init(&id->msg, WIRE_CM_SIDR_REQ, id->tid);
	wire_set32(&r->request_id, id->local_comm_id);
	wire_set16(&r->pkey, WIRE_DEFAULT_PKEY);
	wire_set64(&r->service_id, service_id);
	copy_pdata(r->pdata, sizeof(r->pdata), pdata, len);
	id->state = CM_SIDR_REQ_SENT;
	return send_retried(id, timeout_ms(id->cm, CM_RESPONSE_TIMEOUT), 15);
}

static void send_sidr_rep(struct cm *cm, const struct cm_path *path, uint64_t tid,
			  uint32_t request_id, uint64_t service_id, uint8_t status, uint32_t qpn,
			  uint32_t qkey, const void *pdata, uint8_t len)
{
	struct wire_cm_mad m;

	wire_cm_mad_init(&m, WIRE_CM_SIDR_REP, tid);
	wire_set32(&m.u.sidr_rep.request_id, request_id);
	m.u.sidr_rep.status = status;
	wire_set_hi24_lo8(&m.u.sidr_rep.qpn_vendor, qpn, 0);
	wire_set64(&m.u.sidr_rep.service_id, service_id);
	wire_set32(&m.u.sidr_rep.qkey, qkey);
	copy_pdata(m.u.sidr_rep.pdata, sizeof(m.u.sidr_rep.pdata), pdata, len);
	cm_io_send(cm, path, &m);
}

int cm_send_sidr_rep(struct cm_id *id, uint8_t status, uint32_t qpn, uint32_t qkey,
		     const void *pdata, uint8_t len)
{
	if (id->state != CM_SIDR_REQ_RCVD)
		return -EINVAL;
	send_sidr_rep(id->cm, &id->path, id->tid, id->remote_comm_id, id->service_id, status, qpn,
		      qkey, pdata, len);
	id->state = CM_IDLE;
	return 0;
}

void cm_id_destroy(struct cm_id *id)
{
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		send_rej(id->cm, &id->path, id->tid, id->local_comm_id, 0, WIRE_CM_MSG_REQ,
			 WIRE_CM_REJ_TIMEOUT, NULL, 0);
		break;
	case CM_REQ_RCVD:
	case CM_REP_SENT:
	case CM_REP_RCVD:
		send_rej(id->cm, &id->path, id->tid, id->local_comm_id, id->remote_comm_id,
			 id->state == CM_REP_RCVD ? WIRE_CM_MSG_REP : WIRE_CM_MSG_REQ,
			 WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CM_ESTABLISHED:
		cm_send_dreq(id, NULL, 0);
		break;
	case CM_SIDR_REQ_RCVD:
		send_sidr_rep(id->cm, &id->path, id->tid, id->remote_comm_id, id->service_id,
			      WIRE_SIDR_REJECT, 0, 0, NULL, 0);
		break;
	default:
		break;
	}
	/* Disconnecting (an established one just sent its DREQ) or in time-wait. */
	if (id->path_ok && (id->state == CM_DREQ_SENT || id->state == CM_DREQ_RCVD ||
			    id->state == CM_TIMEWAIT))
		keep_timewait(id);
	note_exit(id, false);
	id_unlink(id);
	free(id);
}

/* ---- Receiving ---- */

static int deliver(struct cm *cm, struct cm_id *id, struct cm_event *ev)
{
	return cm->cfg.event(cm->cfg.arg, id, ev);
}

/* The path back to the sender of a message that came from @src to our @dst. */
static bool reply_path(struct cm *cm, const uint8_t src[16], const uint8_t dst[16],
		       struct cm_path *p)
{
	int idx = cm_io_gid_index(cm, dst);

	if (idx < 0)
		return false;
	memset(p, 0, sizeof(*p));
	memcpy(p->sgid, dst, 16);
	memcpy(p->dgid, src, 16);
	p->sgid_index = (unsigned)idx;
	p->hop_limit = 64;
	return true;
}

static void req_conn(const struct wire_cm_req *r, struct cm_conn *c)
{
	memset(c, 0, sizeof(*c));
	c->service_id = wire_get64(r->service_id);
	c->qpn = wire_hi24(r->qpn_rres);
	c->rres = wire_lo8(r->qpn_rres);
	c->idepth = wire_lo8(r->eecn_idepth);
	c->psn = wire_hi24(r->psn_misc);
	c->qkey = wire_get32(r->local_qkey);
	c->retry_count = wire_cm_req_retry_count(r);
	c->rnr_retry = wire_cm_req_rnr_retry(r);
	c->ack_timeout = wire_bits8(r->primary.ack_timeout, 3, 5);
	c->srq = wire_cm_req_srq(r);
	c->flow_control = wire_lo8(r->reecn_misc) & 1;
	c->qp_type = wire_cm_req_transport(r) == 1 ? IBV_QPT_UC : IBV_QPT_RC;
	c->pdata_len = WIRE_CM_REQ_PDATA;
	memcpy(c->pdata, r->pdata, WIRE_CM_REQ_PDATA);
}

/* The ID the sender of a REQ (its local comm ID) or SIDR_REQ (its request ID) named itself by. */
static uint32_t sender_id(const struct wire_cm_mad *m)
{
	return wire_get16(m->hdr.attr_id) == WIRE_CM_SIDR_REQ ? wire_get32(m->u.sidr_req.request_id) :
								 wire_get32(m->u.req.local_comm_id);
}

/*
 * Keep @m, a REQ or SIDR_REQ for a service ID with no listener here, until
 * one comes or the grace ends (revisit_parked()); false: not kept (no room,
 * or already past its grace), decide now.  A repeat of a kept one is a
 * duplicate.
 */
static bool park(struct cm *cm, const uint8_t src[16], const uint8_t dst[16],
		 const struct wire_cm_mad *m, bool may_park)
{
	uint32_t grace = cm->cfg.listen_grace_ms ? cm->cfg.listen_grace_ms : CM_LISTEN_GRACE_MS;
	struct cm_parked *p;

	if (!may_park)
		return false;
	for (unsigned i = 0; i < cm->n_parked; i++) {
		p = &cm->parked[i];
		if (!memcmp(p->src, src, 16) &&
		    wire_get16(p->mad.hdr.attr_id) == wire_get16(m->hdr.attr_id) &&
		    sender_id(&p->mad) == sender_id(m)) {
			cm->cnt.duplicates++;
			return true;
		}
	}
	if (cm->n_parked == CM_PARKED_MAX)
		return false;
	p = &cm->parked[cm->n_parked++];
	p->mad = *m;
	memcpy(p->src, src, 16);
	memcpy(p->dst, dst, 16);
	p->deadline = cm_now_ns(cm) + (uint64_t)grace * 1000000;
	cm->cnt.parked++;
	return true;
}

static void rx_req(struct cm *cm, const uint8_t src[16], const uint8_t dst[16],
		   const struct wire_cm_mad *m, bool may_park)
{
	const struct wire_cm_req *r = &m->u.req;
	uint32_t remote = wire_get32(r->local_comm_id);
	struct cm_event ev = { .type = CM_EV_REQ };
	struct cm_id *id, *listen;
	struct cm_path path;

	id = find_remote(cm, remote, src);
	if (id) {
		/* IBA 12.9.7.1: a repeated REQ; the first is being handled. */
		cm->cnt.duplicates++;
		if (id->state == CM_REP_SENT)
			cm_io_send(cm, &id->path, &id->msg);
		else if (id->state == CM_REQ_RCVD) {
			struct wire_cm_mad mra;

			wire_cm_mad_init(&mra, WIRE_CM_MRA, id->tid);
			wire_set32(&mra.u.mra.local_comm_id, id->local_comm_id);
			wire_set32(&mra.u.mra.remote_comm_id, id->remote_comm_id);
			mra.u.mra.msg_mraed = WIRE_CM_MSG_REQ << 6;
			mra.u.mra.service_timeout = CM_MRA_SERVICE_TIMEOUT << 3;
			cm_io_send(cm, &id->path, &mra);
		}
		return;
	}
	if (!reply_path(cm, src, dst, &path)) {
		cm->cnt.not_ours++;
		return;
	}
	listen = find_listener(cm, wire_get64(r->service_id));
	if (!listen) {
		if (park(cm, src, dst, m, may_park))
			return;
		if (cm->cfg.answers_unclaimed &&
		    cm->cfg.answers_unclaimed(cm->cfg.arg, wire_get64(r->service_id))) {
			cm->cnt.unclaimed++;
			send_rej(cm, &path, wire_get64(m->hdr.tid), 0, remote, WIRE_CM_MSG_REQ,
				 WIRE_CM_REJ_INVALID_SERVICE_ID, NULL, 0);
		} else
			cm->cnt.not_ours++;
		return;
	}
	if (stale_req(cm, src, wire_hi24(r->qpn_rres), &id)) {
		/* As the kernel's cm_match_req(): REJ the REQ, and DREQ what still holds the QP. */
		cm->cnt.stale++;
		send_rej(cm, &path, wire_get64(m->hdr.tid), 0, remote, WIRE_CM_MSG_REQ,
			 WIRE_CM_REJ_STALE_CONN, NULL, 0);
		if (id && id->state == CM_ESTABLISHED)
			cm_send_dreq(id, NULL, 0);
		return;
	}
	id = cm_id_create(cm, NULL);
	if (!id)
		return;	/* the active side repeats its REQ */
	path.mtu = wire_cm_req_mtu(r);
	path.hop_limit = r->primary.hop_limit;
	path.tclass = r->primary.tclass;
	path.flow_label = wire_get32(r->primary.flow_rate) >> 12;
	id->path = path;
	id->path_ok = true;
	id->remote_comm_id = remote;
	id->remote_qpn = wire_hi24(r->qpn_rres);
	id->service_id = wire_get64(r->service_id);
	id->tid = wire_get64(m->hdr.tid);
	id->local_cm_timeout = wire_cm_req_local_cm_timeout(r);
	id->state = CM_REQ_RCVD;
	ev.listen = listen;
	req_conn(r, &ev.conn);
	ev.path = path;
	if (deliver(cm, id, &ev)) {
		cm_send_rej(id, WIRE_CM_REJ_CONSUMER_DEFINED, NULL, 0);
		id_unlink(id);
		free(id);
	}
}

static void rx_rep(struct cm *cm, const struct wire_cm_mad *m)
{
	const struct wire_cm_rep *r = &m->u.rep;
	struct cm_id *id = find_local(cm, wire_get32(r->remote_comm_id));
	struct cm_event ev = { .type = CM_EV_REP };
	struct cm_conn *c = &ev.conn;

	if (!id) {
		cm->cnt.not_ours++;
		return;
	}
	if (id->state == CM_ESTABLISHED && id->remote_comm_id == wire_get32(r->local_comm_id)) {
		/* Our RTU was lost: the REP comes again, and so does the RTU. */
		cm->cnt.duplicates++;
		cm_io_send(cm, &id->path, &id->msg);
		return;
	}
	if (id->state != CM_REQ_SENT && id->state != CM_MRA_REQ_RCVD) {
		cm->cnt.duplicates++;
		return;
	}
	stop_timer(id);
	id->remote_comm_id = wire_get32(r->local_comm_id);
	id->remote_qpn = wire_hi24(r->qpn_vendor);
	id->state = CM_REP_RCVD;
	c->qpn = id->remote_qpn;
	c->psn = wire_hi24(r->psn_vendor);
	c->qkey = wire_get32(r->local_qkey);
	c->rres = r->rres;
	c->idepth = r->idepth;
	c->ack_timeout = wire_bits8(r->ack_misc, 3, 5);
	c->flow_control = r->ack_misc & 1;
	c->rnr_retry = wire_bits8(r->rnr_misc, 5, 3);
	c->srq = wire_bits8(r->rnr_misc, 4, 1);
	c->pdata_len = WIRE_CM_REP_PDATA;
	memcpy(c->pdata, r->pdata, WIRE_CM_REP_PDATA);
	deliver(cm, id, &ev);
}

static void rx_rtu(struct cm *cm, const struct wire_cm_mad *m)
{
	struct cm_id *id = find_local(cm, wire_get32(m->u.rtu.remote_comm_id));
	struct cm_event ev = { .type = CM_EV_RTU };

	if (!id) {
		cm->cnt.not_ours++;
		return;
	}
	if (id->state != CM_REP_SENT) {
		cm->cnt.duplicates++;
		return;
	}
	stop_timer(id);
	id->state = CM_ESTABLISHED;
	note_exit(id, true);
	ev.conn.pdata_len = WIRE_CM_RTU_PDATA;
	memcpy(ev.conn.pdata, m->u.rtu.pdata, WIRE_CM_RTU_PDATA);
	deliver(cm, id, &ev);
}

static void rx_rej(struct cm *cm, const struct wire_cm_mad *m)
{
	const struct wire_cm_rej *r = &m->u.rej;
	struct cm_id *id = find_local(cm, wire_get32(r->remote_comm_id));
	struct cm_event ev = { .type = CM_EV_REJ, .reason = wire_get16(r->reason) };

	if (!id) {
		cm->cnt.not_ours++;
		return;
	}
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
	case CM_REP_SENT:
	case CM_REQ_RCVD:
	case CM_REP_RCVD:
		break;
	default:
		cm->cnt.duplicates++;
		return;
	}
	stop_timer(id);
	id->state = CM_IDLE;
	ev.conn.pdata_len = WIRE_CM_REJ_PDATA;
	memcpy(ev.conn.pdata, r->pdata, WIRE_CM_REJ_PDATA);
	deliver(cm, id, &ev);
}

static void rx_mra(struct cm *cm, const struct wire_cm_mad *m)
{
	const struct wire_cm_mra *r = &m->u.mra;
	struct cm_id *id = find_local(cm, wire_get32(r->remote_comm_id));
	uint32_t ms;

	if (!id) {
		cm->cnt.not_ours++;
		return;
	}
	/* IBA 12.6.6: stop repeating; the peer answers within its service timeout. */
	ms = field_ms(wire_bits8(r->service_timeout, 3, 5)) + 2 * field_ms(CM_PACKET_LIFETIME);
	if (cm->cfg.timeout_ms && ms > cm->cfg.timeout_ms * 4)
		ms = cm->cfg.timeout_ms * 4;
	if (id->state == CM_REQ_SENT && wire_bits8(r->msg_mraed, 6, 2) == WIRE_CM_MSG_REQ) {
		id->state = CM_MRA_REQ_RCVD;
		id->retries_left = 0;
		id->deadline = cm_now_ns(cm) + (uint64_t)ms * 1000000;
	} else if (id->state == CM_REP_SENT && wire_bits8(r->msg_mraed, 6, 2) == WIRE_CM_MSG_REP) {
		id->retries_left = 0;
		id->deadline = cm_now_ns(cm) + (uint64_t)ms * 1000000;
	}
}

static void enter_timewait(struct cm_id *id)
{
	id->state = CM_TIMEWAIT;
	id->resend = false;
	id->deadline = cm_now_ns(id->cm) + (uint64_t)timewait_ms(id->cm) * 1000000;
}

static void rx_dreq(struct cm *cm, const uint8_t src[16], const uint8_t dst[16],
		    const struct wire_cm_mad *m)
{
	const struct wire_cm_dreq *d = &m->u.dreq;
	struct cm_id *id = find_local(cm, wire_get32(d->remote_comm_id));
	struct cm_event ev = { .type = CM_EV_DREQ };
	struct cm_path path;

	if (!id || id->remote_comm_id != wire_get32(d->local_comm_id)) {
		/* IBA 12.9.7.4: a DREQ for no connection still gets its DREP (from one process). */
		if (cm->cfg.answers_unclaimed && cm->cfg.answers_unclaimed(cm->cfg.arg, 0) &&
		    reply_path(cm, src, dst, &path)) {
			struct wire_cm_mad r;

			cm->cnt.unclaimed++;
			wire_cm_mad_init(&r, WIRE_CM_DREP, wire_get64(m->hdr.tid));
			wire_set32(&r.u.rtu.local_comm_id, wire_get32(d->remote_comm_id));
			wire_set32(&r.u.rtu.remote_comm_id, wire_get32(d->local_comm_id));
			cm_io_send(cm, &path, &r);
		} else {
			cm->cnt.not_ours++;
		}
		return;
	}
	id->tid = wire_get64(m->hdr.tid);
	switch (id->state) {
	case CM_ESTABLISHED:
	case CM_DREQ_SENT:	/* both ended at once */
	case CM_REP_SENT:	/* the RTU was lost and the peer is done already */
		send_simple(id, WIRE_CM_DREP, NULL, 0);
		enter_timewait(id);
		note_exit(id, false);
		ev.conn.pdata_len = WIRE_CM_DREQ_PDATA;
		memcpy(ev.conn.pdata, d->pdata, WIRE_CM_DREQ_PDATA);
		deliver(cm, id, &ev);
		return;
	case CM_TIMEWAIT:
		cm->cnt.duplicates++;
		send_simple(id, WIRE_CM_DREP, NULL, 0);
		return;
	default:
		cm->cnt.duplicates++;
		return;
	}
}

static void rx_drep(struct cm *cm, const struct wire_cm_mad *m)
{
	struct cm_id *id = find_local(cm, wire_get32(m->u.rtu.remote_comm_id));
	struct cm_event ev = { .type = CM_EV_DREP };

	if (!id) {
		cm->cnt.not_ours++;
		return;
	}
	if (id->state != CM_DREQ_SENT) {
		cm->cnt.duplicates++;
		return;
	}
	enter_timewait(id);
	ev.conn.pdata_len = WIRE_CM_RTU_PDATA;
	memcpy(ev.conn.pdata, m->u.rtu.pdata, WIRE_CM_RTU_PDATA);
	deliver(cm, id, &ev);
}

static void rx_sidr_req(struct cm *cm, const uint8_t src[16], const uint8_t dst[16],
			const struct wire_cm_mad *m, bool may_park)
{
	const struct wire_cm_sidr_req *r = &m->u.sidr_req;
	struct cm_event ev = { .type = CM_EV_SIDR_REQ };
	uint64_t sid = wire_get64(r->service_id);
	struct cm_id *id, *listen;
	struct cm_path path;

	if (find_remote(cm, wire_get32(r->request_id), src)) {
		cm->cnt.duplicates++;
		return;
	}
	if (!reply_path(cm, src, dst, &path)) {
		cm->cnt.not_ours++;
		return;
	}
	listen = find_listener(cm, sid);
	if (!listen) {
		if (park(cm, src, dst, m, may_park))
			return;
		if (cm->cfg.answers_unclaimed && cm->cfg.answers_unclaimed(cm->cfg.arg, sid)) {
			cm->cnt.unclaimed++;
			send_sidr_rep(cm, &path, wire_get64(m->hdr.tid), wire_get32(r->request_id),
				      sid, WIRE_SIDR_UNSUPPORTED, 0, 0, NULL, 0);
		} else
			cm->cnt.not_ours++;
		return;
	}
	id = cm_id_create(cm, NULL);
	if (!id)
		return;
	id->path = path;
	id->path_ok = true;
	id->remote_comm_id = wire_get32(r->request_id);
	id->service_id = sid;
	id->tid = wire_get64(m->hdr.tid);
	id->state = CM_SIDR_REQ_RCVD;
	ev.listen = listen;
	ev.path = path;
	ev.conn.service_id = sid;
	ev.conn.pdata_len = WIRE_CM_SIDR_REQ_PDATA;
	memcpy(ev.conn.pdata, r->pdata, WIRE_CM_SIDR_REQ_PDATA);
	if (deliver(cm, id, &ev)) {
		cm_send_sidr_rep(id, WIRE_SIDR_REJECT, 0, 0, NULL, 0);
		id_unlink(id);
		free(id);
	}
}

static void rx_sidr_rep(struct cm *cm, const struct wire_cm_mad *m)
{
	const struct wire_cm_sidr_rep *r = &m->u.sidr_rep;
	struct cm_id *id = find_local(cm, wire_get32(r->request_id));
	struct cm_event ev = { .type = CM_EV_SIDR_REP, .sidr_status = r->status };

	if (!id || id->state != CM_SIDR_REQ_SENT) {
		cm->cnt.not_ours++;
		return;
	}
	stop_timer(id);
	id->state = CM_IDLE;
	ev.conn.qpn = wire_hi24(r->qpn_vendor);
	ev.conn.qkey = wire_get32(r->qkey);
	ev.conn.pdata_len = WIRE_CM_SIDR_REP_PDATA;
	memcpy(ev.conn.pdata, r->pdata, WIRE_CM_SIDR_REP_PDATA);
	deliver(cm, id, &ev);
}

void cm_conn_rx(struct cm *cm, const uint8_t src[16], const uint8_t dst[16],
		const struct wire_cm_mad *m)
{
	switch (wire_get16(m->hdr.attr_id)) {
	case WIRE_CM_REQ:
		rx_req(cm, src, dst, m, true);
		break;
	case WIRE_CM_MRA:
		rx_mra(cm, m);
		break;
	case WIRE_CM_REJ:
		rx_rej(cm, m);
		break;
	case WIRE_CM_REP:
		rx_rep(cm, m);
		break;
	case WIRE_CM_RTU:
		rx_rtu(cm, m);
		break;
	case WIRE_CM_DREQ:
		rx_dreq(cm, src, dst, m);
		break;
	case WIRE_CM_DREP:
		rx_drep(cm, m);
		break;
	case WIRE_CM_SIDR_REQ:
		rx_sidr_req(cm, src, dst, m, true);
		break;
	case WIRE_CM_SIDR_REP:
		rx_sidr_rep(cm, m);
		break;
	}
}

/* ---- Timers ---- */

/* @id's timer fired: repeat its message, give up on it, or leave time-wait. */
static void expire(struct cm *cm, struct cm_id *id)
{
	struct cm_event ev = { .type = CM_EV_TIMEOUT };

	if (id->state == CM_TIMEWAIT) {
		id->deadline = 0;
		id->state = CM_IDLE;
		ev.type = CM_EV_TIMEWAIT_EXIT;
		deliver(cm, id, &ev);
		return;
	}
	if (id->resend && id->retries_left) {
		id->retries_left--;
		cm->cnt.retransmits++;
		cm_io_send(cm, &id->path, &id->msg);
		id->deadline = cm_now_ns(cm) + (uint64_t)id->timeout_ms * 1000000;
		return;
	}
	cm->cnt.timeouts++;
	stop_timer(id);
	switch (id->state) {
	case CM_REQ_SENT:
	case CM_MRA_REQ_RCVD:
		/* IBA 12.9.6: give up with a REJ "timeout", in case the peer is only slow. */
		send_rej(cm, &id->path, id->tid, id->local_comm_id, 0, WIRE_CM_MSG_REQ,
			 WIRE_CM_REJ_TIMEOUT, NULL, 0);
		ev.msg = WIRE_CM_REQ;
		id->state = CM_IDLE;
		break;
	case CM_REP_SENT:
		send_rej(cm, &id->path, id->tid, id->local_comm_id, id->remote_comm_id,
			 WIRE_CM_MSG_REP, WIRE_CM_REJ_TIMEOUT, NULL, 0);
		ev.msg = WIRE_CM_REP;
		id->state = CM_IDLE;
		break;
	case CM_DREQ_SENT:
		ev.msg = WIRE_CM_DREQ;
		enter_timewait(id);
		break;
	case CM_SIDR_REQ_SENT:
		ev.msg = WIRE_CM_SIDR_REQ;
		id->state = CM_IDLE;
		break;
	default:
		return;
	}
	deliver(cm, id, &ev);
}

/* Parked requests whose listener came, or whose grace is over, are taken as if they came now. */
static unsigned revisit_parked(struct cm *cm, uint64_t now)
{
	unsigned n = 0;

	for (unsigned i = 0; i < cm->n_parked;) {
		struct cm_parked p = cm->parked[i];
		bool sidr = wire_get16(p.mad.hdr.attr_id) == WIRE_CM_SIDR_REQ;
		uint64_t sid = sidr ? wire_get64(p.mad.u.sidr_req.service_id) :
				      wire_get64(p.mad.u.req.service_id);

		if (now < p.deadline && !find_listener(cm, sid)) {
			i++;
			continue;
		}
		cm->parked[i] = cm->parked[--cm->n_parked];
		if (sidr)
			rx_sidr_req(cm, p.src, p.dst, &p.mad, false);
		else
			rx_req(cm, p.src, p.dst, &p.mad, false);
		n++;
	}
	return n;
}

unsigned cm_process(struct cm *cm)
{
	unsigned n = cm_io_poll(cm);
	uint64_t now = cm_now_ns(cm);
	bool again = true;

	n += revisit_parked(cm, now);

	/* An event may create or free IDs: start over after each expiry. */
	while (again) {
		again = false;
		for (struct cm_id *id = cm->ids; id; id = id->next)
			if (id->deadline && id->deadline <= now) {
				expire(cm, id);
				n++;
				again = true;
				break;
			}
	}
	return n;
}

uint64_t cm_next_deadline(const struct cm *cm)
{
	uint64_t d = UINT64_MAX;

	for (const struct cm_id *id = cm->ids; id; id = id->next)
		if (id->deadline && id->deadline < d)
			d = id->deadline;
	for (unsigned i = 0; i < cm->n_parked; i++)
		if (cm->parked[i].deadline < d)
			d = cm->parked[i].deadline;
	return d;
}

int cm_gid_index(struct cm *cm, const uint8_t gid[16])
{
	return cm_io_gid_index(cm, gid);
}

void cm_counters(const struct cm *cm, struct cm_counters *out)
{
	*out = cm->cnt;
}

struct cm *cm_create(const struct cm_cfg *cfg)
{
	struct cm *cm;
	int ret;

	if (!cfg->eng || !cfg->now_ns || !cfg->event) {
		errno = EINVAL;
		return NULL;
	}
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return NULL;
	cm->cfg = *cfg;
	cm->next_seq = cfg->seed ? cfg->seed : (uint32_t)(cfg->now_ns(cfg->arg) >> 10);
	ret = cm_io_init(cm);
	if (ret) {
		free(cm);
		errno = -ret;
		return NULL;
	}
	return cm;
}

void cm_destroy(struct cm *cm)
{
	while (cm->ids) {
		struct cm_id *id = cm->ids;

		cm->ids = id->next;
		free(id);
	}
	cm_io_fini(cm);
	free(cm);
}
