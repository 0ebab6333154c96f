/* SPDX-License-Identifier: MIT */
/* Private types of the transport engine: objects, queues, per-QP state of the three machines. */
#ifndef UROCE_RC_INTERNAL_H
#define UROCE_RC_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "uroce/rc.h"

#define likely(x)	__builtin_expect(!!(x), 1)
#define unlikely(x)	__builtin_expect(!!(x), 0)

#define RC_BURST		32
#define RC_WINDOW		256	/* unacknowledged PSNs a requester keeps in flight */
/* Unacknowledged PSNs an engine keeps in flight across all its RC requesters (rc_rto.c). */
#define RC_INFLIGHT_MAX		512
#define RC_ACKREQ_PERIOD	32	/* AckReq at least every this many packets */
#define RC_TX_REF_MIN		512	/* shorter payloads are copied into the frame */
#define RC_HDR_MAX		128	/* Ethernet, VLAN, IPv6, UDP, BTH and the longest extensions */
#define RC_QP_QUOTA		64	/* packets one QP may send per service pass */
#define RC_TX_BUDGET		256	/* packets one progress pass may send */
#define RC_SELF_SLOTS		256	/* frames in flight to QPs of the same engine */
#define RC_MAX_PMTU		4096
#define RC_MAX_MSG_PKTS		(1u << 22)	/* 1 GiB at PMTU 256, 2 GiB from PMTU 512 up */
/* Largest frame the engine builds: Ethernet + 802.1Q + IPv6 + UDP + BTH + 28 + PMTU + pad + ICRC. */
#define RC_FRAME_MAX		4224
/* Header bytes around a payload, worst case (IPv6, RETH + ImmDt), for the PMTU a port allows. */
#define RC_L3_OVERHEAD		(40 + 8 + 12 + 16 + 4 + 4)
#define RC_GRH_LEN		40		/* UD receive buffers start with a GRH area */
/*
 * A UD receive completion's sl on RoCE is the frame's type, as mlx5 reports it
 * and UCX's ud_verbs reads it to find the destination address in the GRH area
 * (A17.4.5.1: the CQE tells an IPv4 from an IPv6 or a RoCE v1 frame): bit 3 set
 * for a UDP (RoCE v2) frame, bits 2:0 the L3 header: 0 GRH, 1 IPv6, 2 IPv4.
 */
#define RC_UD_SL_UDP		0x8
#define RC_UD_SL_GRH		0x0
#define RC_UD_SL_IPV6		0x1
#define RC_UD_SL_IPV4		0x2
#define RC_ICRC_IN_COPY_MIN	256		/* payload from which rx ICRC and copy are one pass */
#define RC_DEFAULT_QPN		0x11
/* Loss recovery defaults (rc_rto.c; rc_engine_cfg overrides the first two). */
#define RC_RTO_MIN_NS		100000ull	/* floor of the adaptive RTO: 100 us */
#define RC_RESTART_WINDOW	16		/* PSNs in flight right after a loss */
#define RC_RTO_MAX_NS		67108864ull	/* ceiling without a local ACK timeout (14) */
#define RC_RTO_BACKOFF_MAX	10		/* doublings of the early timer */
#define RC_PROBE_MIN_NS		10000ull	/* a tail-loss probe waits at least 10 us */
#define RC_PACE_ACKREQ_NS	25000ull	/* a paced QP asks for an ACK at least every 25 us */
#define RC_PACE_HDR_BYTES	66		/* Ethernet, IPv4, UDP, BTH, RETH, ICRC: a frame's overhead */
/* Selective repeat (docs/engine.md, "Selective repeat"). */
#define RC_SR_WINDOW		RC_WINDOW	/* PSNs past ePSN a responder may place */
#define RC_SR_WRITES		8		/* writes it remembers the RETH of */

/* ---- Intrusive list ---- */

struct rc_list {
	struct rc_list *next, *prev;
};

static inline void rc_list_init(struct rc_list *l)
{
	l->next = l->prev = l;
}

static inline bool rc_list_empty(const struct rc_list *l)
{
	return l->next == l;
}

static inline void rc_list_add_tail(struct rc_list *head, struct rc_list *n)
{
	n->prev = head->prev;
	n->next = head;
	head->prev->next = n;
	head->prev = n;
}

static inline void rc_list_del(struct rc_list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	rc_list_init(n);
}

#define rc_list_for_each_safe(pos, tmp, head) \
	for (pos = (head)->next, tmp = pos->next; pos != (head); pos = tmp, tmp = pos->next)

/* ---- u32 -> pointer map (open addressing, linear probing) ---- */

struct rc_hash_ent {
	uint32_t	key;
	void		*val;		/* NULL: empty slot */
};

struct rc_hash {
	struct rc_hash_ent *ent;
	uint32_t	cap;		/* power of two, 0 before first use */
	uint32_t	n;
};

void *rc_hash_get(const struct rc_hash *h, uint32_t key);
int rc_hash_put(struct rc_hash *h, uint32_t key, void *val);
void rc_hash_del(struct rc_hash *h, uint32_t key);
void rc_hash_free(struct rc_hash *h);

/* ---- Objects ---- */

struct rc_pd {
	struct rc_engine	*eng;
	unsigned		refs;	/* MRs, QPs, SRQs, AHs */
	struct rc_list		link;
};

/* What the keys table maps a key to: the first byte of the object says which. */
enum rc_key_kind { RC_KEY_MR = 1, RC_KEY_MW };

struct rc_mr {
	uint8_t			kind;		/* RC_KEY_MR; first, as in rc_mw */
	struct rc_engine	*eng;
	struct rc_pd		*pd;
	uint8_t			*addr;
	uint64_t		len;
	uint64_t		iova;
	int			access;
	uint32_t		lkey, rkey;
	bool			keys_live;	/* false once invalidated */
	unsigned		n_mw;		/* windows bound to it */
	uint32_t		direct_slot;	/* its entry in the direct table + 1; 0: none */
	struct rc_list		link;
};

struct rc_mw {
	uint8_t			kind;		/* RC_KEY_MW */
	struct ibv_mw		ibv;		/* what libibverbs sees */
	struct rc_engine	*eng;
	struct rc_pd		*pd;
	enum ibv_mw_type	type;
	uint32_t		rkey;		/* in the keys table */
	bool			bound;
	struct rc_mr		*mr;		/* bound: the region, the range within it */
	uint64_t		addr, len;
	int			access;
	uint32_t		qpn;		/* type 2: the QP it is bound to */
	struct rc_list		link;
};

struct rc_cq {
	struct rc_engine	*eng;
	void			*user;
	struct ibv_wc		*ring;
	uint64_t		*stamps;	/* per entry, the engine clock at completion; or NULL */
	uint32_t		cap;		/* entries it holds (what ibv_cq.cqe reports) */
	uint32_t		head, count;
	bool			overflowed;
	bool			armed, solicited_only;
	unsigned		refs;		/* QPs */
	struct rc_list		link;
};

struct rc_recv_wqe {
	uint64_t	wr_id;
	uint32_t	num_sge;
	uint32_t	length;		/* sum of the SGE lengths */
	struct ibv_sge	sge[];
};

/* A ring of receive WQEs: a QP's receive queue or an SRQ. */
struct rc_rq {
	uint8_t		*buf;		/* calloc()ed, or given to rc_rq_init() */
	uint32_t	stride;
	uint32_t	size;		/* slots, power of two */
	uint32_t	max_wr;		/* what the user may post */
	uint32_t	max_sge;
	uint32_t	head, tail;	/* consumer, producer (free-running) */
	bool		owns_buf;
};

static inline struct rc_recv_wqe *rc_rq_at(const struct rc_rq *rq, uint32_t idx)
{
	return (struct rc_recv_wqe *)(rq->buf + (size_t)(idx & (rq->size - 1)) * rq->stride);
}

static inline uint32_t rc_rq_count(const struct rc_rq *rq)
{
	return rq->tail - rq->head;
}

struct rc_xrcd {
	struct rc_engine	*eng;
	unsigned		refs;	/* SRQs and target QPs */
	struct rc_list		link;
};

struct rc_srq {
	struct rc_engine	*eng;
	struct rc_pd		*pd;
	struct rc_xrcd		*xrcd;		/* XRC SRQ: its domain; NULL for a basic SRQ */
	struct rc_cq		*cq;		/* XRC SRQ: where its receives complete */
	uint32_t		srqn;		/* XRC SRQ: the number XRCETHs carry */
	struct rc_rq		rq;
	uint32_t		limit;		/* armed when non-zero */
	void			*user;
	unsigned		refs;
	struct rc_list		link;
};

/* Where packets of a connection or an address handle go. */
struct rc_path {
	uint8_t		dgid[16];
	uint8_t		sgid[16];
	uint8_t		ip_version;	/* 6 for RoCE v1 */
	bool		roce_v1;	/* the source GID is a RoCE v1 entry: GRH on 0x8915 */
	uint8_t		tclass;
	uint8_t		hop_limit;
	uint8_t		sgid_index;
	uint32_t	flow_label;
	uint8_t		dmac[6];
	bool		mac_ok;
	bool		local;		/* the destination is one of our GIDs */
	bool		mcast;		/* a multicast group: the wire and this host's members */
	int		resolve_err;	/* last answer of port->resolve() */
};

struct rc_ah {
	struct ibv_ah		ibv;
	struct rc_engine	*eng;
	struct rc_pd		*pd;
	struct rc_path		path;
	struct rc_list		link;
};

/* ---- Send work queue entries ---- */

/* Position in an SGE list: entry and offset inside it. */
struct rc_sge_cursor {
	uint32_t idx, off;
};

enum rc_wqe_state {
	RC_WQE_POSTED,		/* not started by the requester */
	RC_WQE_ACTIVE,		/* PSNs assigned, packets being sent */
	RC_WQE_SENT,		/* every packet sent, waiting for the response */
	RC_WQE_DONE,		/* complete without a response (UC, UD) */
	RC_WQE_ERROR,		/* the requester found a local error; status says which */
};

struct rc_send_wqe {
	uint64_t	wr_id;
	uint8_t		opcode;		/* enum ibv_wr_opcode */
	uint8_t		state;		/* enum rc_wqe_state */
	uint8_t		status;		/* enum ibv_wc_status */
	bool		signaled;
	bool		fence, solicited, is_inline, rd_atomic_held;
	uint32_t	imm;		/* host order; or the rkey to invalidate */
	uint32_t	num_sge;
	uint32_t	length;
	uint32_t	xrc_srqn;	/* XRC initiator: the target's SRQ (XRCETH) */
	uint32_t	first_psn, last_psn;
	uint32_t	npkts;
	uint32_t	resp_pkts;	/* read response packets placed */
	struct rc_sge_cursor resp_cur;	/* where the next read response lands */
	/*
	 * A read asked again (rc_comp.c reread()): the completer wants it
	 * asked (reread_want); the last request, the QP's reread_seq-th
	 * resend of a read, went for reread_psn on when the next new PSN was
	 * reread_next (rereading).  A packet of its own after a response
	 * beyond reread_high answers that resend.
	 */
	bool		reread_want, rereading;
	uint32_t	reread_psn, reread_high, reread_next, reread_seq;
	union {
		struct {
			uint64_t	remote_addr;
			uint32_t	rkey;
			uint64_t	compare_add;
			uint64_t	swap;
		} rc;
		struct {
			struct rc_path	path;
			uint32_t	remote_qpn;
			uint32_t	remote_qkey;
		} ud;
		struct {			/* IBV_WR_BIND_MW */
			struct rc_mw	*mw;
			uint32_t	rkey;	/* the window's new rkey */
			uint32_t	lkey;	/* the region's */
			bool		has_mr;
			uint64_t	addr, len;
			int		access;
		} bind;
	} u;
	struct ibv_sge	sge[];		/* then the inline data */
};

/* ---- Responder resources: outstanding read and atomic responses ---- */

/* RC_RES_EMPTY_READ: an atomic write or flush, answered by a zero-length read response (IBA 1.5). */
enum rc_res_type { RC_RES_NONE, RC_RES_READ, RC_RES_ATOMIC, RC_RES_EMPTY_READ };

struct rc_resp_res {
	uint8_t		type;
	bool		pending;	/* still has packets to send */
	uint32_t	first_psn, last_psn;
	uint32_t	cur_psn;	/* next response PSN to send */
	uint64_t	va;		/* read: start of the whole range */
	uint32_t	rkey;
	uint32_t	len;
	uint32_t	srqn;		/* XRC target: the SRQ whose PD the read is checked against */
	uint64_t	orig;		/* atomic: the value before the operation */
	/*
	 * read: run again for a duplicate request.  The original may have
	 * completed and the application unmapped the memory while it is still
	 * registered (UCX's registration cache does, pages pinned on hardware),
	 * so it is copied as ODP memory is and dropped if the memory is gone.
	 */
	bool		replay;
};

/* ---- Per-QP state of the requester, completer and responder ---- */

struct rc_req {
	uint32_t	psn;		/* next PSN to send */
	uint32_t	wqe;		/* index of the WQE being sent */
	uint32_t	offset;		/* bytes of it already sent */
	struct rc_sge_cursor cur;	/* gather cursor matching offset */
	uint32_t	max_psn;	/* one past the highest PSN ever sent */
	uint32_t	since_ackreq;	/* packets since the last AckReq */
	unsigned	rd_atomic;	/* reads/atomics started and not complete */
	bool		rnr_wait;
	uint32_t	rnr_psn;	/* the PSN the RNR NAK refused */
	bool		drained_sent;	/* SQD: the drained event has been raised */
	bool		peer_sr;	/* the responder set WIRE_BTH_SR_CAP: requests carry it too */
	bool		rereads_wanted;	/* a read before the cursor may have reread_want set */
	uint32_t	reread_seq;	/* read resends sent */
	/*
	 * A selective resend: the cursor sends [from, end) again, then goes
	 * back to where it was (psn, wqe, offset, cur, since_ackreq).  For a
	 * reread (rc_req_reread()) it visits each read the completer wants
	 * asked again, [from, end) the current one's missing responses.
	 */
	struct {
		bool		active;
		bool		reread;
		uint32_t	from, end;	/* the hole the last selective NAK named */
		uint32_t	psn, wqe, offset, since_ackreq;
		struct rc_sge_cursor cur;
	} sr;
};

struct rc_comp {
	uint32_t	psn;		/* oldest PSN not yet acknowledged */
	uint8_t		retry_left;
	uint8_t		rnr_left;
	bool		rewound;	/* a NAK or gap rewound at rewound_psn */
	uint32_t	rewound_psn;
	uint32_t	rewound_end;	/* a selective resend: one past the last PSN it resent */
	uint64_t	rewound_at;	/* engine clock of that rewind */
	uint32_t	resp_high;	/* the highest read response PSN received */
	uint32_t	reread_answered;	/* the newest read resend whose hole was filled */
	bool		reread_watch;	/* a read resend is out: check it when resp_high passes watch_psn */
	uint32_t	watch_psn;
};

/*
 * Loss recovery of a requester (rc_rto.c): the RTT estimate, the three
 * retransmission clocks behind rc_qp.retx_deadline (the earliest of them),
 * and the send window.  Times in ns on the engine clock, deadlines 0 when
 * not armed.
 */
struct rc_rto {
	uint64_t	srtt, rttvar;	/* RFC 6298 */
	uint64_t	min_rtt;	/* the shortest sample: no answer comes back sooner */
	bool		have_rtt;	/* srtt holds at least one sample */
	bool		timing;		/* timed_psn was sent once at timed_at; not yet acknowledged */
	bool		probed;		/* a probe is out for this tail */
	uint8_t		backoff;	/* early expiries since the last progress */
	uint32_t	timed_psn;
	uint64_t	timed_at;
	uint64_t	timed_rewound_at;	/* a rewind resent timed_psn then; 0: sent once */
	uint64_t	iba_deadline;	/* the QP's local ACK timeout: counts against retry_cnt */
	uint64_t	early_deadline;	/* the adaptive RTO: retransmits without counting */
	uint64_t	probe_deadline;	/* tail-loss probe */
	uint32_t	cwnd;		/* PSNs the requester may have unacknowledged */
	uint32_t	ssthresh;	/* cwnd grows by one per PSN below it, by one per cwnd above */
	uint32_t	ca_acked;	/* PSNs acknowledged towards the next growth above ssthresh */
};

/*
 * DCQCN's reaction point for one RC requester (rc_dcqcn.c): the rate a CNP
 * cut and the increases that bring it back.  Rates in kbit/s, times in ns
 * on the engine clock.  Not limited: the requester is not paced at all.
 */
struct rc_dcqcn {
	bool		limited;	/* below the line rate: packets are paced */
	bool		have_alpha;	/* a CNP came since the QP started */
	uint64_t	rate, target;	/* RC and RT of the DCQCN paper */
	uint32_t	alpha;		/* of 1 << RC_ALPHA_SHIFT */
	uint64_t	alpha_at;	/* alpha is up to date to this time */
	uint64_t	last_cut;
	uint64_t	timer_at;	/* the next timer increase event */
	uint64_t	bytes;		/* sent since the last byte-counter event */
	uint32_t	t_stage, b_stage;	/* increase events since the last cut */
	uint64_t	next_tx;	/* the pacer lets the next packet go at this time */
	uint64_t	ackreq_at;	/* the last AckReq went out then */
};

enum rc_resp_msg { RC_MSG_NONE, RC_MSG_SEND, RC_MSG_WRITE };

/*
 * A write a selective-repeat responder knows the RETH of, from its first
 * packet, so that later ones can be placed before ePSN reaches them.  The
 * last byte of the message waits in last_byte until it does, and so does
 * the completion of a write with immediate.
 */
struct rc_sr_write {
	bool		used;
	bool		held;		/* the last packet is placed but for last_byte */
	bool		with_imm, solicited;	/* its last packet's: completes with imm */
	uint8_t		last_byte;
	uint32_t	imm;		/* host order */
	uint32_t	first_psn, last_psn;
	uint64_t	va;
	uint32_t	rkey, len;
};

struct rc_resp {
	uint32_t	epsn;
	uint32_t	msn;
	uint8_t		msg;		/* enum rc_resp_msg: message in progress */
	bool		nak_sent;	/* a sequence or RNR NAK is out for epsn */
	bool		drop_msg;	/* UC: skip to the next FIRST/ONLY */
	bool		fatal;		/* an error NAK is queued; ERR once it is sent */
	uint8_t		fatal_event;	/* enum ibv_event_type raised then */
	/* XRC target: the SRQ of the message in progress (its XRCETH), or NULL */
	struct rc_srq	*xsrq;
	/* send in progress */
	bool		have_wqe;
	uint32_t	recv_len;	/* bytes placed */
	struct rc_sge_cursor recv_cur;
	struct rc_recv_wqe *wqe;	/* a copy, RC_MAX_SGE entries */
	/* write in progress */
	uint64_t	va;
	uint32_t	rkey;
	uint32_t	resid;
	uint32_t	write_len;
	/* ACK/NAK waiting to be sent (after any queued responses) */
	bool		ack_pending;
	uint8_t		ack_syndrome;
	uint32_t	ack_psn;
	uint32_t	ack_msn;	/* a selective NAK: the PSNs missing */
	bool		ack_selective;	/* the NAK is selective (WIRE_BTH_SR_NAK) */
	/* selective repeat: the requester set WIRE_BTH_SR_CAP */
	bool		peer_sr;
	uint64_t	sr_placed[RC_SR_WINDOW / 64];	/* PSNs past ePSN placed, by PSN mod window */
	uint32_t	sr_seen;	/* one past the newest PSN that came ahead of ePSN */
	uint32_t	sr_nak_end;	/* one past the last PSN the last selective NAK named */
	struct rc_sr_write sr_write[RC_SR_WRITES];
	/* read/atomic responses */
	struct rc_resp_res res[RC_MAX_RD_ATOMIC];
	uint32_t	nres;		/* slots in use: max(1, max_dest_rd_atomic) */
	uint32_t	res_head;	/* next slot to allocate (free-running) */
	/* congestion notification (Annex A17.9) */
	bool		cnp_pending;
	uint64_t	next_cnp_ns;	/* rate limit */
	uint32_t	cnp_qpn;
	uint8_t		cnp_gid[16];		/* the marked packet's source */
	uint8_t		cnp_src_gid[16];	/* and its destination, one of ours */
	uint8_t		cnp_mac[6];
	uint8_t		cnp_ipver;
	uint8_t		reply_mac[6];	/* source MAC of the last request */
	bool		reply_mac_ok;
};

struct rc_qp {
	struct rc_engine	*eng;
	unsigned		n_flows;	/* raw packet QP: flows steering to it */
	struct rc_qp_rss	*rss;		/* raw packet QP: its frames go to these WQs */
	uint64_t		raw_seen;	/* raw packet QP: the last frame it took (rc_raw.c) */
	enum ibv_qp_type	type;
	uint32_t		qpn;
	enum ibv_qp_state	state;
	struct rc_pd		*pd;
	struct rc_cq		*scq, *rcq;
	struct rc_srq		*srq;
	struct rc_xrcd		*xrcd;		/* XRC target */
	uint8_t			opc_base;	/* transport of the packets it builds: WIRE_OPC_* */
	void			*user;
	bool			sq_sig_all;
	struct ibv_qp_cap	cap;
	struct ibv_qp_attr	attr;		/* as last set, for query */
	uint32_t		pmtu;		/* bytes */
	bool			direct_published;	/* in the direct table (rc_direct.c) */
	bool			direct_off;	/* the peer's memory refused a direct copy */
	uint64_t		timeout_ns;	/* 0: infinite */
	struct rc_path		path;
	struct wire_build_desc	tmpl;		/* headers common to this connection */

	/* send queue */
	uint8_t			*sq_buf;
	struct rc_ring_alloc	ring_alloc;	/* where sq_buf/rq.buf came from when custom */
	bool			sq_custom, rq_custom;
	size_t			bytes;		/* this QP's memory: struct, rings, receive WQE */
	uint32_t		sq_stride, sq_size;
	uint32_t		sq_head;	/* oldest not complete */
	uint32_t		sq_tail;	/* next free */

	struct rc_rq		rq;
	struct rc_req		req;
	struct rc_comp		comp;
	struct rc_rto		rto;
	struct rc_dcqcn		cc;
	struct rc_resp		resp;
	struct rc_counters	cnt;

	uint64_t		retx_deadline;	/* 0: not armed; the earliest of rto's */
	uint64_t		rnr_deadline;
	uint64_t		pace_deadline;	/* DCQCN: the next paced packet or rate increase */
	bool			on_work, on_timer, on_budget;
	struct rc_list		link, work_link, timer_link;
	struct rc_list		budget_link;	/* on eng->budget_wait */
	uint32_t		inflight;	/* its PSNs counted in eng->inflight */
};

static inline struct rc_send_wqe *rc_sq_at(const struct rc_qp *qp, uint32_t idx)
{
	return (struct rc_send_wqe *)(qp->sq_buf + (size_t)(idx & (qp->sq_size - 1)) * qp->sq_stride);
}

static inline uint8_t *rc_wqe_inline(struct rc_send_wqe *w, uint32_t max_sge)
{
	return (uint8_t *)&w->sge[max_sge];
}

/* What the work request of @w is: its opcode was checked against the table when posted. */
static inline const struct rc_wr_opcode_info *rc_wqe_op(const struct rc_send_wqe *w)
{
	return &rc_wr_opcode_info[w->opcode];
}

/* ---- The engine ---- */

struct rc_self_slot {
	uint32_t	len;
	uint8_t		data[RC_FRAME_MAX];
};
#define RC_SELF_RING_BYTES	(sizeof(struct rc_self_slot) * RC_SELF_SLOTS)

struct rc_engine {
	pthread_mutex_t		lock;
	atomic_flag		progressing;
	/* rc_post_send() queued work: a pass that is running must be followed by another. */
	atomic_bool		pass_wanted;
	/* next_deadline as of the end of the last pass, for lock-free readers. */
	_Atomic uint64_t	deadline_hint;
	/* This pass: an ACK emptied a send queue; a request was received. */
	bool			pass_ack_drained, pass_rx_request;
	bool			pass_recv_posted;	/* the drained QP has receives posted */
	atomic_bool		ack_drained;	/* the last pass: the first without the second */
	atomic_bool		recv_posted;	/* the last pass: pass_recv_posted */
	/* The last request packet taken did not end its message: the rest is on its way. */
	bool			rx_mid_message;
	atomic_bool		mid_message;	/* rx_mid_message after the last pass */
	struct rc_engine_cfg	cfg;
	struct port		*port;
	uint32_t		port_pmtu;	/* largest PMTU whose frames fit the port */
	uint64_t		now;		/* clock at the start of the current call */

	struct wire_gid_entry	gid[WIRE_GID_TABLE_LEN];
	unsigned		n_gids;

	uint64_t		sip_k0, sip_k1, key_ctr;	/* key generator */
	struct rc_hash		keys;		/* lkey/rkey -> MR, rkey -> MW */
	struct rc_hash		mw_index;	/* upper 24 bits of an MW's rkey -> MW */
	struct rc_hash		qps;		/* QPN -> QP */
	uint32_t		next_qpn;
	struct rc_hash		xrc_srqs;	/* XRC SRQ number -> SRQ */
	uint32_t		next_srqn;

	struct rc_list		pds, mrs, mws, cqs, srqs, ahs, qp_list, xrcds;
	struct rc_list		flows;		/* by priority, lowest value first */
	struct rc_list		sniffers;	/* IBV_FLOW_ATTR_SNIFFER flows */
	unsigned		n_flow, n_sniff;	/* n_flow counts the sniffers too */
	uint64_t		raw_frames;	/* frames matched against the flows so far */
	struct rc_list		work;		/* QPs with something to send */
	struct rc_list		timers;		/* QPs with an armed timer */
	struct rc_list		budget_wait;	/* QPs held back by the in-flight budget, in order */
	uint32_t		inflight;	/* unacknowledged PSNs of all RC requesters */
	uint64_t		next_deadline;
	unsigned		n_pd, n_mr, n_mw, n_cq, n_srq, n_ah, n_qp, n_xrcd;
	size_t			qp_bytes;	/* the live QPs' bytes */

	struct rc_counters	cnt;		/* not attributable to a live QP */

	struct port_frame	txq[RC_BURST];
	unsigned		ntx;
	unsigned		tx_sent;	/* frames sent in this pass */

	struct rc_self_slot	*self_ring;		/* same-process ring, allocated on first use */
	uint32_t		self_head, self_tail;
	bool			tap_off;	/* rc_tx_commit(): no frame_tap (the port captures it) */

	struct rc_mcast_group {
		uint8_t		gid[16];
		unsigned	n;
		struct rc_qp	*qp[RC_MAX_MCAST_QP_ATTACH];
	}			mcast[RC_MAX_MCAST_GROUPS];
	unsigned		n_mcast;
};

/* ---- Engine internals shared by the modules ---- */

/* Both return the host address for [addr, addr+len) or NULL when the key, PD, access or bounds fail. */
uint8_t *rc_mr_local(struct rc_engine *eng, struct rc_pd *pd, uint32_t lkey, uint64_t addr,
		     uint64_t len, int access);
/*
 * @qpn: the QP the request came on (a type 2 window serves only the QP it is
 * bound to).  @odp: when not NULL, set on success: the memory is an ODP
 * region's, to be reached only through rc_odp_read() and rc_odp_write().
 */
uint8_t *rc_mr_remote(struct rc_engine *eng, struct rc_pd *pd, uint32_t qpn, uint32_t rkey,
		      uint64_t va, uint64_t len, int access, bool *odp);
/* Copies from and to ODP memory.  Return: 0, or -EFAULT where it is not mapped (or writable). */
int rc_odp_read(uint8_t *dst, const uint8_t *src, uint32_t len);
int rc_odp_write(uint8_t *dst, const uint8_t *src, uint32_t len);
/* The pages of ODP memory [p, p + len) present and writable; -EFAULT where they cannot be. */
int rc_odp_populate_write(uint8_t *p, uint32_t len);
/*
 * SEND_WITH_INV and LOCAL_INV on QP @qpn: 0, or -EINVAL when @rkey names
 * neither a live MR of @pd nor a bound type 2 window of @pd bound to @qpn.
 */
int rc_mr_invalidate(struct rc_engine *eng, struct rc_pd *pd, uint32_t qpn, uint32_t rkey);
/* Execute a BIND_MW work request of @qp.  Return: 0, or -EINVAL (IBV_WC_MW_BIND_ERR). */
int rc_mw_bind(struct rc_qp *qp, const struct rc_send_wqe *w);
void rc_mw_free_all(struct rc_engine *eng);
void rc_mr_free_all(struct rc_engine *eng);

/* Copy between a contiguous buffer and an SGE list, keys checked per chunk. */
void rc_sge_seek(const struct ibv_sge *sge, uint32_t num, uint32_t offset,
		 struct rc_sge_cursor *cur);
/*
 * Return: 0, -EFAULT (key/bounds/access), -ENOSPC (the list is too short).
 * @crc: when not NULL, the CRC-32 continues over the bytes gathered.
 */
int rc_sge_gather(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		  uint32_t num, struct rc_sge_cursor *cur, uint8_t *dst, uint32_t len,
		  uint32_t *crc);
/*
 * The next @len bytes of the SGE list at @cur when they lie in one mapped
 * SGE (the cursor moves past them); NULL otherwise, the cursor unmoved.
 */
const uint8_t *rc_sge_ref(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
			 uint32_t num, struct rc_sge_cursor *cur, uint32_t len);
int rc_sge_scatter(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
		   uint32_t num, struct rc_sge_cursor *cur, const uint8_t *src, uint32_t len);
/*
 * The same, each copy fault-safe (rc_odp_write()) whatever the region: for
 * UD receives, which arrive from anyone at any time, also after a program
 * freed a buffer it left registered and posted (UCX at exit): -EFAULT then.
 */
int rc_sge_scatter_may_fault(struct rc_engine *eng, struct rc_pd *pd, const struct ibv_sge *sge,
			     uint32_t num, struct rc_sge_cursor *cur, const uint8_t *src,
			     uint32_t len);

/* Completion queues. */
void rc_cq_push(struct rc_cq *cq, const struct ibv_wc *wc, bool solicited);
void rc_cq_clean(struct rc_cq *cq, uint32_t qpn);
bool rc_cq_holds(const struct rc_cq *cq, uint32_t qpn);
void rc_cq_free_all(struct rc_engine *eng);

/* Receive queues. */
/* The ring's bytes for @max_wr entries of @max_sge SGEs. */
size_t rc_rq_bytes(uint32_t max_wr, uint32_t max_sge);
/* @buf: zeroed memory of rc_rq_bytes() the caller owns, or NULL for calloc(). */
int rc_rq_init(struct rc_rq *rq, uint32_t max_wr, uint32_t max_sge, void *buf);
/* Frees the ring if rc_rq_init() allocated it. */
void rc_rq_fini(struct rc_rq *rq);
int rc_rq_post(struct rc_rq *rq, const struct ibv_recv_wr *wr);
/* Pop one WQE into @dst (RC_MAX_SGE entries); false when empty. */
bool rc_srq_pop(struct rc_srq *srq, struct rc_recv_wqe *dst);
void rc_srq_free_all(struct rc_engine *eng);
void rc_xrcd_free_all(struct rc_engine *eng);
/* The XRC SRQ numbered @srqn, or NULL. */
struct rc_srq *rc_xrc_srq_get(struct rc_engine *eng, uint32_t srqn);
void rc_ah_free_all(struct rc_engine *eng);
void rc_pd_free_all(struct rc_engine *eng);

/* Paths. */
int rc_path_from_ah_attr(struct rc_engine *eng, const struct ibv_ah_attr *ah, struct rc_path *p);
/* Ask the port for the MAC once more; returns 0, -EAGAIN or -EHOSTUNREACH. */
int rc_path_resolve(struct rc_engine *eng, struct rc_path *p);
bool rc_gid_is_local(const struct rc_engine *eng, const uint8_t gid[16]);
void rc_path_fill_desc(struct rc_engine *eng, const struct rc_path *p, struct wire_build_desc *d);

/* Receive (rc_recv.c): up to @budget frames from the self ring, as many from the port. */
unsigned rc_rx_poll(struct rc_engine *eng, unsigned budget);
/*
 * Count @qp dropping @pkt for @why.  A packet whose ICRC is still unchecked
 * is verified first: a corrupted one counts as WIRE_DROP_BAD_ICRC instead,
 * so that each dropped frame has exactly one reason.
 */
void rc_rx_drop(struct rc_qp *qp, const struct wire_pkt *pkt, bool icrc_unchecked,
		enum rc_drop why);

/* Transmit (rc_send.c): rc_tx_alloc(), write the frame, rc_tx_commit(); rc_tx_flush() per pass. */
uint8_t *rc_tx_alloc(struct rc_engine *eng, bool local, uint32_t len, struct port_frame *f);
void rc_tx_commit(struct rc_engine *eng, bool local, struct port_frame *f);
void rc_tx_flush(struct rc_engine *eng);
void rc_tx_drain(struct rc_engine *eng);
/*
 * Writes @len payload bytes at @dst; when @crc is not NULL it continues the
 * ICRC over them (wire_crc32_copy(): the copy and the CRC in one pass).
 */
typedef int (*rc_fill_fn)(void *arg, uint8_t *dst, uint32_t len, uint32_t *crc);
int rc_tx_packet(struct rc_engine *eng, struct rc_qp *qp, bool local,
		 const struct wire_build_desc *d, uint32_t payload_len, rc_fill_fn fill, void *arg,
		 const uint8_t *ref);
/* The port takes this packet's payload by reference (port.tx_ext, IPv4, long enough to pay). */
bool rc_tx_can_ref(const struct rc_engine *eng, bool local, const struct wire_build_desc *d,
		   uint32_t payload_len);

/* Scheduling. */
void rc_qp_kick(struct rc_qp *qp);		/* has something to send */
void rc_timer_arm(struct rc_qp *qp, uint64_t *deadline, uint64_t when);
void rc_async(struct rc_engine *eng, enum ibv_event_type type, void *user);
void rc_engine_retire_counters(struct rc_engine *eng, const struct rc_counters *c);

/* QP state (rc_qp.c). */

/* What a QP may do in a state (IBA 10.3.1): a row per enum ibv_qp_state. */
struct rc_qp_state_info {
	const char	*name;
	bool		post_send;	/* ibv_post_send takes work requests */
	bool		post_recv;	/* ibv_post_recv takes work requests */
	bool		send;		/* the requester and completer work the send queue */
	bool		start;		/* the requester starts WQEs not yet started */
	bool		recv;		/* the responder takes requests and answers them */
};

extern const struct rc_qp_state_info rc_qp_states[IBV_QPS_ERR + 1];

/* RC and both halves of XRC: reliable, acknowledged, the same three machines. */
static inline bool rc_qp_reliable(const struct rc_qp *qp)
{
	return qp->type == IBV_QPT_RC || qp->type == IBV_QPT_XRC_SEND ||
	       qp->type == IBV_QPT_XRC_RECV;
}

/*
 * Where the responder takes receive WQEs, checks keys and completes
 * receives: the QP's own for RC, UC and UD; for an XRC target the SRQ of
 * the message in progress (set by the XRCETH check before any use).
 */
static inline struct rc_srq *rc_resp_srq(const struct rc_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp.xsrq : qp->srq;
}

static inline struct rc_pd *rc_resp_pd(const struct rc_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp.xsrq->pd : qp->pd;
}

static inline struct rc_cq *rc_resp_cq(const struct rc_qp *qp)
{
	return qp->type == IBV_QPT_XRC_RECV ? qp->resp.xsrq->cq : qp->rcq;
}

static inline bool rc_qp_may_send(const struct rc_qp *qp)
{
	return rc_qp_states[qp->state].send;
}

static inline bool rc_qp_may_recv(const struct rc_qp *qp)
{
	return rc_qp_states[qp->state].recv;
}

enum rc_state_actor { RC_BY_USER = 1, RC_BY_ENGINE = 2 };
int rc_qp_set_state(struct rc_qp *qp, enum ibv_qp_state to, enum rc_state_actor who);
/* The engine found a fatal error: QP to ERR, @event raised when non-zero. */
void rc_qp_error(struct rc_qp *qp, enum ibv_event_type event, bool raise);
void rc_qp_free_all(struct rc_engine *eng);
void rc_qp_complete_send(struct rc_qp *qp, struct rc_send_wqe *w, enum ibv_wc_status st);

/* Requester (rc_req.c). */
/*
 * Send what the window allows, at most @quota packets; *more is set when the
 * quota ran out with packets left.  Return: packets sent, or -ENOBUFS.
 */
int rc_req_tx(struct rc_qp *qp, unsigned quota, bool *more);
void rc_req_rewind(struct rc_qp *qp);
/* comp.psn passed the send cursor: nothing before it needs sending again. */
void rc_req_overtaken(struct rc_qp *qp);
/* Selective repeat: send the @n PSNs from @from again, then carry on where the cursor was. */
void rc_req_resend(struct rc_qp *qp, uint32_t from, uint32_t n);
/*
 * Ask each read before the cursor that the completer wants asked again
 * (reread_want) for its missing responses only, oldest first, then carry on
 * where the cursor was; false (nothing started) when a resend is under way,
 * the cursor is inside a message, or no read wants it.
 */
bool rc_req_reread(struct rc_qp *qp);
/* Send the newest packet once more (a tail-loss probe); false when the cursor is not at the front. */
bool rc_req_probe(struct rc_qp *qp);
void rc_req_rnr_expired(struct rc_qp *qp);
void rc_req_reset(struct rc_qp *qp);

/* Loss recovery (rc_rto.c). */
void rc_rto_reset(struct rc_qp *qp);
/* The retransmission timer (retx_deadline) fired: whichever of its clocks is due. */
void rc_req_timeout(struct rc_qp *qp);
/*
 * A packet of PSN @psn went out; @first: never sent before; @answered: the
 * responder answers it at once (AckReq, read, atomic), so it may be timed.
 */
void rc_rto_sent(struct rc_qp *qp, uint32_t psn, bool first, bool answered);
/*
 * The engine's in-flight budget (rc_rto.c): what its RC requesters have sent
 * and not had acknowledged, at most eng->cfg.inflight PSNs, so that thousands
 * of QPs posting at once do not overflow the receiving ring together.
 */
/* @qp's sent and unacknowledged PSNs counted again (after a send or an ACK). */
void rc_budget_sync(struct rc_qp *qp);
/* @qp sends no more (error, reset, destroy): its PSNs and its place in line go. */
void rc_budget_release(struct rc_qp *qp);
/* May @qp send a PSN never sent before?  If not, it waits in line for rc_budget_wake(). */
bool rc_budget_may_send(struct rc_qp *qp);
/* @npsn more would fill the budget: ask for an ACK now. */
bool rc_budget_filling(const struct rc_engine *eng, uint32_t npsn);
/* Kick as many waiting QPs as the budget has room for. */
void rc_budget_wake(struct rc_engine *eng);
/* The requester has nothing it may send now: arm the tail-loss probe. */
void rc_rto_idle(struct rc_qp *qp);
/* comp.psn moved forward by @acked PSNs. */
void rc_rto_progress(struct rc_qp *qp, uint32_t acked);
/*
 * The responder answered a later request while the oldest still waits (a
 * read's response placed ahead): it is alive and the pipe flows, so the
 * early clock and the probe start again; comp.psn and the IBA clock stay.
 */
void rc_rto_alive(struct rc_qp *qp);
/* A loss was detected (NAK, gap, timer): the window restarts small. */
void rc_rto_loss(struct rc_qp *qp);
/* The requester goes back to @psn: a sample pending at or after it is ambiguous (Karn). */
void rc_rto_rewound(struct rc_qp *qp, uint32_t psn);
void rc_rto_stop(struct rc_qp *qp);
/* srtt_ns, rto_ns and window of @qp into @out, keeping the larger where @out has one. */
void rc_rto_gauges(const struct rc_qp *qp, struct rc_counters *out);

/* DCQCN reaction point (rc_dcqcn.c). */
#define RC_ALPHA_SHIFT	20
void rc_dcqcn_reset(struct rc_qp *qp);
/* The notification point's: at least this long between two CNPs of a QP (min_time_between_cnps). */
uint64_t rc_cnp_interval_ns(const struct rc_engine *eng);
/* A CNP for @qp arrived: alpha up, the rate cut (at most once per monitor period). */
void rc_dcqcn_cnp(struct rc_qp *qp);
/*
 * The pacer: true when the requester may send its next packet now; false
 * with pace_deadline armed for when it may.  Increase events due by now are
 * applied first.
 */
bool rc_dcqcn_may_send(struct rc_qp *qp);
/*
 * A paced packet of @payload bytes asks for an ACK: the last AckReq is
 * RC_PACE_ACKREQ_NS old, or the gap after this packet is that long.  The
 * usual AckReq every 32 packets would otherwise leave the retransmission
 * clocks without progress for 32 gaps.
 */
bool rc_dcqcn_ackreq_due(const struct rc_qp *qp, uint32_t payload);
/* pace_deadline fired: increase events due, the requester kicked, the clock armed again. */
void rc_dcqcn_timer(struct rc_qp *qp);
/* A packet of about @bytes on the wire went out: the pacer's gap, the byte counter. */
void rc_dcqcn_sent(struct rc_qp *qp, uint32_t bytes);
/* rate_mbps and dcqcn_alpha of @qp into @out: the smaller rate where @out has one. */
void rc_dcqcn_gauges(const struct rc_qp *qp, struct rc_counters *out);

/* Completer (rc_comp.c). */
void rc_comp_rx(struct rc_qp *qp, const struct wire_pkt *pkt);
/* Complete what needs no response (UC/UD sends, local errors); no packet. */
void rc_comp_run(struct rc_qp *qp);

/* Responder (rc_resp.c). */
/*
 * @icrc_unchecked: the packet's ICRC is still to be verified (what
 * rc_resp_icrc_deferred() allows: checked while its payload is copied).
 */
void rc_resp_rx(struct rc_qp *qp, const struct wire_pkt *pkt, bool icrc_unchecked);
/* A datagram to WIRE_MCAST_QPN: to every QP of its group (rc_mcast.c); @local: from this engine. */
void rc_mcast_rx(struct rc_engine *eng, const struct wire_pkt *pkt, const uint8_t *data,
		 uint32_t len, bool local);
/* @qp leaves every group (it is being destroyed); the engine lock held. */
void rc_mcast_qp_gone(struct rc_qp *qp);
/* The frame rc_tx_packet() just put in the self ring, to the port as well. */
int rc_tx_mirror_self(struct rc_engine *eng);
/* The responder checks this port frame's ICRC itself, in its payload copy. */
bool rc_resp_icrc_deferred(const struct rc_qp *qp, const struct wire_pkt *pkt);
/* Verify the ICRC of a packet parsed without it; a mismatch is counted as a drop. */
bool rc_icrc_ok(struct rc_engine *eng, const struct wire_pkt *pkt);
int rc_resp_tx(struct rc_qp *qp, unsigned quota, bool *more);
void rc_resp_ack_before_stop(struct rc_qp *qp);
void rc_resp_reset(struct rc_qp *qp);
void rc_resp_ecn(struct rc_qp *qp, const struct wire_pkt *pkt);

/* Traces: compiled in with -Dtrace=true. */
#ifdef UROCE_TRACE
#define RC_TRACE(qp, machine, state)					\
	do {								\
		if ((qp)->eng->cfg.trace)				\
			(qp)->eng->cfg.trace((qp)->eng->cfg.trace_arg,	\
					     (qp)->qpn, machine, state);\
	} while (0)
#else
#define RC_TRACE(qp, machine, state) do { (void)(qp); (void)(state); } while (0)
#endif

/* rc_raw.c: raw packet QPs and flow steering. */
/*
 * A frame the parser did not take as RoCE, to the raw QPs whose flows match
 * it.  Return: true when at least one QP took it (or counted it dropped).
 */
bool rc_raw_rx(struct rc_engine *eng, const uint8_t *frame, uint32_t len);
/*
 * A copy of a frame from or to the port for every sniffer flow's QP; @f may
 * name its zero-copy payload (port_frame.ext), NULL when contiguous.
 */
void rc_raw_sniff(struct rc_engine *eng, const uint8_t *data, uint32_t len,
		  const struct port_frame *f);
/* Send what @qp's send queue holds, at most @quota frames.  Return: frames sent, or -ENOBUFS. */
int rc_raw_tx(struct rc_qp *qp, unsigned quota, bool *more);
void rc_flow_free_all(struct rc_engine *eng);
/* A copy of @rss for @qp: 0, -EINVAL (not raw QPs of @qp's engine, sizes), -EOPNOTSUPP (fields). */
int rc_raw_rss_init(struct rc_qp *qp, const struct rc_qp_rss *rss);

/* rc_direct.c: direct placement between the processes of one host. */
void rc_direct_publish_mr(struct rc_mr *mr);
void rc_direct_withdraw_mr(struct rc_mr *mr);
void rc_direct_update_qp(struct rc_qp *qp, bool destroyed);
/* @w, an RDMA WRITE or READ, done in the peer's memory: true when done. */
bool rc_direct_try(struct rc_qp *qp, struct rc_send_wqe *w);

#endif
