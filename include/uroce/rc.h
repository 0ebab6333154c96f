/* SPDX-License-Identifier: MIT */
/*
 * The transport engine: PDs, MRs, CQs, SRQs, AHs, XRC domains and RC/UC/UD/XRC queue pairs,
 * driven by a port and a clock.  No DPDK here.  Work requests, completions
 * and attributes use libibverbs' public types (<infiniband/verbs.h>), so the
 * provider passes them through untouched.
 *
 * Locking: one lock per engine, taken inside every function below, so any
 * thread may call any function (the verbs thread-safety rules are met).
 * Callbacks (cq_event, async_event) run with that lock held: they must not
 * call back into the engine.
 *
 * Errors: functions returning int give 0 or a negative errno; functions
 * returning a pointer give NULL and set errno.  The errno values are those
 * the corresponding verb documents (EINVAL, ENOMEM, EBUSY, ...).
 */
#ifndef UROCE_RC_H
#define UROCE_RC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "uroce/dcqcn.h"
#include "uroce/port.h"
#include "uroce/wire.h"

/* The object that embeds @ptr as @member (the engine's objects and the provider's alike; DPDK's
 * rte_common.h has the same one). */
#ifndef container_of
#define container_of(ptr, type, member) \
	((type *)(void *)((char *)(ptr) - offsetof(type, member)))
#endif

struct rc_engine;
struct rc_pd;
struct rc_mr;
struct rc_cq;
struct rc_srq;
struct rc_qp;
struct rc_ah;
struct rc_xrcd;
struct rc_flow;

/* ---- Limits the engine honours (reported by query_device) ---- */
#define RC_MAX_QP		16384
#define RC_MAX_QP_WR		16384
#define RC_MAX_SGE		32
#define RC_MAX_INLINE		256
#define RC_MAX_CQ		4096
#define RC_MAX_CQE		(1 << 20)
#define RC_MAX_MR		65536
#define RC_MAX_MR_SIZE		(1ull << 40)
#define RC_MAX_PD		4096
#define RC_MAX_RD_ATOMIC	16	/* max_qp_rd_atom and max_qp_init_rd_atom */
#define RC_MAX_SRQ		1024
#define RC_MAX_SRQ_WR		16384
#define RC_MAX_AH		65536
#define RC_MAX_MW		65536
#define RC_MAX_MSG_SIZE		(1u << 31)

struct rc_engine_cfg {
	struct port	*port;
	/* Monotonic time in nanoseconds; tests give a virtual clock. */
	uint64_t	(*now_ns)(void *arg);
	void		*clock_arg;

	/*
	 * Host-wide QPN allocator (the dataplane shares QPNs between the
	 * processes of one netdev).  NULL: a private allocator from 0x11.
	 */
	int		(*qpn_alloc)(void *arg, uint32_t *qpn);
	void		(*qpn_free)(void *arg, uint32_t qpn);
	void		*qpn_arg;

	/* A completion entered a CQ armed by rc_cq_req_notify(). */
	void		(*cq_event)(void *arg, struct rc_cq *cq, void *cq_user);
	/*
	 * Affiliated or unaffiliated asynchronous event.  @obj_user is the
	 * @user pointer of the QP/CQ/SRQ, or NULL for port events.
	 */
	void		(*async_event)(void *arg, enum ibv_event_type type, void *obj_user);
	void		*event_arg;

	/* Seed for keys and initial values; 0 means from getrandom(). */
	uint64_t	seed;

	/*
	 * Optional.  Every frame the engine delivers to itself (destination
	 * GID is one of its own) is shown here first, complete with
	 * ICRC, so a capture sees same-host traffic as on the wire.
	 */
	void		(*frame_tap)(void *arg, const void *frame, uint32_t len);
	void		*frame_tap_arg;

	/*
	 * Optional.  A frame the engine addressed to one of its own GIDs whose
	 * destination QP it does not hold (another process on the same device
	 * owns it) is handed here, complete with ICRC; so is every such frame to
	 * QP1, which every process holds (its CM), to go to all the others.
	 * Return: 0 when taken; otherwise it counts as for an unknown QP.
	 * Engine lock held.
	 */
	int		(*local_forward)(void *arg, uint32_t dest_qp, const void *frame,
					 uint32_t len);
	void		*local_forward_arg;
	/*
	 * Optional: a multicast group gets its first member (@join) or loses its
	 * last, under the engine lock; an error on join refuses the attach.
	 */
	int		(*mcast_group)(void *arg, const uint8_t gid[16], bool join);
	void		*mcast_group_arg;

	/*
	 * Optional: direct placement between the processes of one host
	 * (docs/dataplane.md, "Direct placement").  The engine publishes its
	 * regions and responder QPs in @direct_table, memory the other
	 * processes map; an RDMA WRITE or READ to a QP @direct_peer finds in
	 * another process is then copied straight between the two processes'
	 * memory, no frame.  @direct_peer: that process's table and PID, or NULL.
	 * Asked for QPs whose destination is one of our own GIDs, or for every
	 * QP when @direct_every_path (a memif link: its other end is a device
	 * of this host).
	 */
	struct rc_direct_table	*direct_table;
	struct rc_direct_table	*(*direct_peer)(void *arg, uint32_t qpn, int32_t *pid);
	void		*direct_arg;
	bool		direct_every_path;

	/*
	 * Optional, and called only when built with -Dtrace=true: each step of
	 * the requester, completer and responder state machines
	 * (@machine "req"/"comp"/"resp", @state the step's name).
	 */
	void		(*trace)(void *arg, uint32_t qpn, const char *machine, const char *state);
	void		*trace_arg;

	/*
	 * Loss recovery of RC requesters (docs/engine.md, "Loss recovery");
	 * zero is the default.  The QP's local ACK timeout and retry_cnt stay
	 * the limit whatever these say.
	 */
	uint32_t	rto_min_us;	/* floor of the adaptive RTO; 0: 100 us */
	uint32_t	restart_window;	/* PSNs in flight after a loss; 0: 16, 256 or more: no restart */
	uint32_t	inflight;	/* PSNs in flight across the engine's QPs; 0: 512 */
	bool		no_adaptive_rto;	/* retransmit on the local ACK timeout only */
	bool		no_tail_probe;	/* no tail-loss probes */
	/* Selective repeat with peers that show they do it too (docs/engine.md); off by default. */
	bool		selective_repeat;
	/* DCQCN's reaction point for RC requesters (docs/engine.md, "Congestion"); off by default. */
	struct dcqcn_cfg dcqcn;
};

/*
 * The published table: entries change only under the owner's engine lock,
 * each framed by @seq (odd while it changes); a reader from another process
 * announces itself in @busy before it looks, so that withdrawing a region
 * waits until no copy into it is under way.  Slots are hashed; a key or QPN
 * whose slot is taken is not published and goes by frames.
 */
#define RC_DIRECT_MRS	1024
#define RC_DIRECT_QPS	1024

struct rc_direct_mr {
	_Atomic uint32_t	seq;
	_Atomic uint32_t	busy;
	_Atomic uint32_t	rkey;		/* 0: free */
	_Atomic int32_t		access;
	_Atomic uint64_t	pd, iova, len, addr;
};

struct rc_direct_qp {
	_Atomic uint32_t	seq;
	_Atomic uint32_t	qpn;		/* 0: free (QPN 0 is never an RC QP) */
	_Atomic int32_t		access;		/* qp_access_flags */
	_Atomic uint32_t	unused;
	_Atomic uint64_t	pd;
};

struct rc_direct_table {
	struct rc_direct_qp	qp[RC_DIRECT_QPS];
	struct rc_direct_mr	mr[RC_DIRECT_MRS];
};

struct rc_engine *rc_engine_create(const struct rc_engine_cfg *cfg);
/* Frees every object still alive. */
void rc_engine_destroy(struct rc_engine *eng);

/* How many objects of each kind are alive: created and not yet destroyed. */
struct rc_objects {
	unsigned	pd, mr, mw, cq, srq, ah, qp, xrcd, flow;
	size_t		qp_bytes;	/* memory the engine holds for the QPs */
	uint32_t	inflight;	/* PSNs its RC requesters sent and have not had acknowledged */
};

/*
 * rc_engine_objects() - the live-object counts, kept by the create and
 * destroy calls only (nothing on the data path).  Tests assert they are all
 * 0 once everything they created is destroyed, so a leak fails without ASan.
 */
void rc_engine_objects(struct rc_engine *eng, struct rc_objects *out);

/* The GID table of the device's port (index as ibv_query_gid). */
int rc_engine_set_gid(struct rc_engine *eng, unsigned index, const struct wire_gid_entry *e);
int rc_engine_get_gid(struct rc_engine *eng, unsigned index, struct wire_gid_entry *e);

/**
 * rc_engine_progress() - receive, run the state machines, send, fire timers.
 * @budget: at most this many received frames (0: one burst).
 *
 * Does nothing and returns 0 when another thread is progressing the engine
 * (that thread makes one more pass when rc_post_send() was called meanwhile).
 * Return: frames received + frames sent + timers fired (0 when idle).
 */
unsigned rc_engine_progress(struct rc_engine *eng, unsigned budget);

/* Time of the next timer in ns on the engine clock, UINT64_MAX if none is armed. */
uint64_t rc_engine_next_deadline(struct rc_engine *eng);
/*
 * Without the lock: no timer is due before this time (ns, engine clock;
 * UINT64_MAX if none was armed), as of the end of the last pass.  It may be
 * earlier than the real next timer (one since disarmed), never later.
 */
uint64_t rc_engine_deadline_hint(struct rc_engine *eng);

/*
 * The last pass received an ACK that left a send queue empty, and no
 * request.  In a request/response exchange the peer's next request (an
 * ib_write_lat write) usually follows that ACK in the same burst, so a
 * poller that just saw its last send complete may look again at once.
 */
bool rc_engine_ack_drained(struct rc_engine *eng);
/*
 * That ACK's QP has receives posted: its application next polls a CQ for
 * them (ib_send_lat), rather than memory for an RDMA WRITE (ib_write_lat).
 */
bool rc_engine_recv_posted(struct rc_engine *eng);
/* The last request packet the engine took did not end its message (first or middle). */
bool rc_engine_mid_message(struct rc_engine *eng);

/* ---- Counters ---- */

#define RC_COUNTERS(X)							\
	X(rx_packets)	X(rx_bytes)	X(tx_packets)	X(tx_bytes)	\
	X(retransmits)	X(timeouts)	X(rnr_naks_rx)	X(rnr_naks_tx)	\
	X(seq_naks_rx)	X(seq_naks_tx)						\
	X(inv_req_naks_rx)	X(inv_req_naks_tx)				\
	X(rem_access_naks_rx)	X(rem_access_naks_tx)			\
	X(rem_op_naks_rx)	X(rem_op_naks_tx)				\
	X(duplicates)	X(out_of_sequence)	X(cnps_rx)	X(cnps_tx)	\
	X(ecn_ce_rx)	X(tx_no_buffer)	X(cq_overflows)			\
	X(acks_rx)	X(acks_tx)	X(completions)				\
	X(rtt_samples)	X(early_retransmits)	X(tail_probes)		\
	X(window_restarts)	X(stale_naks)	X(spurious_rtos)		\
	X(rate_cuts)	X(rate_fast_recovery)	X(rate_additive)	\
	X(rate_hyper)	X(rate_paced)	X(direct_writes)	X(direct_reads)	\
	X(selective_naks_tx)	X(selective_naks_rx)	X(selective_resends)	\
	X(selective_placed)	X(reads_ahead)	X(rereads)	X(inflight_waits)	\
	X(raw_rx)	X(raw_tx)	X(raw_looped)

/*
 * Values of a QP's loss recovery and rate as of the reading, after the
 * counters: RC_COUNTERS adds them up, these do not (an engine's are its QPs'
 * largest; its rate_mbps the smallest).  rate_mbps and dcqcn_alpha (of
 * 1024) are 0 with DCQCN off.
 */
#define RC_QP_GAUGES(X)	X(srtt_ns)	X(rto_ns)	X(send_window)		\
			X(rate_mbps)	X(dcqcn_alpha)

/*
 * Why the engine dropped a frame wire_parse() accepted, as WIRE_DROP_REASONS
 * is why the parser refused one: one X-macro (name, description), one counter
 * per reason.  Silent drops only; what is answered with a NAK is counted by
 * the NAK counters.  out_of_sequence and duplicates count PSN observations,
 * whatever became of the packet; SEQ_AFTER_NAK, UC_GAP and DUP_NOT_HELD
 * count the packets of those that were dropped.
 */
#define RC_DROP_REASONS(X)						\
	X(NONE,		"accepted")					\
	X(UNKNOWN_QP,	"no QP of the destination QPN")			\
	X(WRONG_TRANSPORT, "opcode's transport (RC, UC, UD) is not the QP's type") \
	X(NOT_OUR_ADDR,	"destination GID is none of this device's")	\
	X(WRONG_PEER,	"source GID or RoCE version is not the connected QP's peer's") \
	X(QP_STATE,	"the QP's state takes no such packet (RESET, INIT, ERR)") \
	X(RESP_IN_ERROR, "the responder has an error NAK queued; the QP goes to ERR") \
	X(SEQ_AFTER_NAK, "RC request past the expected PSN, its gap already NAKed") \
	X(DUP_NOT_HELD,	"duplicate read or atomic the responder no longer holds") \
	X(UC_GAP,	"UC packet after a PSN gap, before the next FIRST or ONLY") \
	X(UC_ERROR,	"UC request in error (length, key, access): message dropped") \
	X(NO_RECV_WQE,	"UC or UD send, or a raw frame, with no receive WQE posted") \
	X(BAD_QKEY,	"UD Q_Key does not match the QP's")		\
	X(GHOST_RESPONSE, "response or ACK for a PSN this QP has not sent") \
	X(STALE_RESPONSE, "response or ACK for PSNs already acknowledged") \
	X(UNEXPECTED_RESPONSE, "response that does not fit its WQE (kind, PSN, syndrome)") \
	X(SR_NOT_PLACED, "RC request past the expected PSN that selective repeat cannot place") \
	X(SR_DUPLICATE,	"RC request past the expected PSN, already placed out of order") \
	X(NO_MCAST_GROUP, "multicast datagram for a group no QP here has joined")

enum rc_drop {
#define RC_DROP_ENUM(n, d) RC_DROP_##n,
	RC_DROP_REASONS(RC_DROP_ENUM)
#undef RC_DROP_ENUM
	RC_DROP_COUNT
};

/* Short identifier ("UNKNOWN_QP") and meaning of a drop reason ("INVALID" past the last). */
const struct wire_drop_info *rc_drop_info(enum rc_drop reason);

struct rc_drop_stats {
	uint64_t count[RC_DROP_COUNT];
};

struct rc_counters {
#define RC_COUNTER_FIELD(n) uint64_t n;
	RC_COUNTERS(RC_COUNTER_FIELD)
	RC_QP_GAUGES(RC_COUNTER_FIELD)
#undef RC_COUNTER_FIELD
	struct wire_drop_stats drops;	/* frames wire_parse() rejected */
	struct rc_drop_stats rc_drops;	/* frames the engine dropped after parsing */
};

/* Names in field order (counters, then gauges), for printing; NULL-terminated. */
extern const char *const rc_counter_names[];

void rc_engine_counters(struct rc_engine *eng, struct rc_counters *out);
int rc_qp_counters(struct rc_qp *qp, struct rc_counters *out);

/* ---- Protection domains and memory regions ---- */

struct rc_pd *rc_pd_alloc(struct rc_engine *eng);
int rc_pd_free(struct rc_pd *pd);			/* -EBUSY while objects use it */

/*
 * @access: IBV_ACCESS_* bits.  Remote write/atomic need LOCAL_WRITE (-EINVAL).
 * With IBV_ACCESS_ON_DEMAND the range need not be mapped, and NULL, SIZE_MAX
 * (at @iova 0) is the implicit region: the whole address space.
 */
struct rc_mr *rc_mr_reg(struct rc_pd *pd, void *addr, size_t len, uint64_t iova,
			int access);
/*
 * ibv_advise_mr(3) over ODP regions of @pd.  Return: 0, -EOPNOTSUPP (an
 * advice other than the prefetches), -EINVAL (flags, an empty list), -EFAULT
 * (an lkey that is not an ODP region's of @pd with the access, a range out
 * of it, or a prefetch over memory that is not mapped).
 */
int rc_mr_advise(struct rc_pd *pd, enum ibv_advise_mr_advice advice, uint32_t flags,
		 const struct ibv_sge *sge, uint32_t num);
/* @flags: IBV_REREG_MR_CHANGE_*; the keys stay, the new attributes apply at once. */
int rc_mr_rereg(struct rc_mr *mr, int flags, struct rc_pd *pd, void *addr,
		size_t len, int access);
int rc_mr_dereg(struct rc_mr *mr);	/* the keys stop working at once; -EBUSY while windows are bound */
uint32_t rc_mr_lkey(const struct rc_mr *mr);
uint32_t rc_mr_rkey(const struct rc_mr *mr);

/* ---- Completion queues ---- */

/* @cqe: at least this many entries (rounded up to a power of two); @user comes back in events. */
struct rc_cq *rc_cq_create(struct rc_engine *eng, int cqe, void *user);
int rc_cq_destroy(struct rc_cq *cq);			/* -EBUSY while QPs use it */
int rc_cq_resize(struct rc_cq *cq, int cqe);		/* -EINVAL if below the entries held */
int rc_cq_size(const struct rc_cq *cq);
/*
 * Up to @n completions, oldest first.  Does not progress the engine: the
 * caller runs rc_engine_progress() first when it wants fresh ones.  Return:
 * how many, or -EOVERFLOW once the CQ has overflowed (it is then in error;
 * an IBV_EVENT_CQ_ERR async event was raised).
 */
int rc_cq_poll(struct rc_cq *cq, int n, struct ibv_wc *wc);
/*
 * Completion timestamps: after rc_cq_enable_stamps(), each completion
 * records the engine's clock (rc_engine_clock(), nanoseconds) when it was
 * made, and rc_cq_poll_stamped() returns them beside the entries (0 for a
 * CQ without stamps).
 */
int rc_cq_enable_stamps(struct rc_cq *cq);
int rc_cq_poll_stamped(struct rc_cq *cq, int n, struct ibv_wc *wc, uint64_t *stamps);
uint64_t rc_engine_clock(struct rc_engine *eng);
/* Arm for one event: on the next completion, or the next solicited or error one. */
int rc_cq_req_notify(struct rc_cq *cq, bool solicited_only);

/* ---- Shared receive queues ---- */

struct rc_srq *rc_srq_create(struct rc_pd *pd, struct ibv_srq_init_attr *attr, void *user);
int rc_srq_modify(struct rc_srq *srq, struct ibv_srq_attr *attr, int mask);
int rc_srq_query(struct rc_srq *srq, struct ibv_srq_attr *attr);
int rc_srq_destroy(struct rc_srq *srq);			/* -EBUSY while QPs use it */
int rc_srq_post_recv(struct rc_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* ---- XRC (IBA 1.2.1 XRC): domains, their SRQs, initiator and target QPs ---- */

/*
 * An XRC domain groups XRC SRQs and XRC target QPs: a message that reaches a
 * target QP goes to the SRQ its XRCETH names, which must be of the same domain
 * (else NAK invalid request, the initiator's WQE completes with
 * IBV_WC_REM_INV_REQ_ERR).  Memory access of such a message is checked
 * against the SRQ's PD, and its receive completion goes to the SRQ's CQ.
 */
struct rc_xrcd *rc_xrcd_alloc(struct rc_engine *eng);
int rc_xrcd_free(struct rc_xrcd *xrcd);		/* -EBUSY while SRQs or QPs use it */
/* An SRQ of @xrcd completing into @cq; its number (rc_srq_num()) is what initiators name. */
struct rc_srq *rc_srq_create_xrc(struct rc_pd *pd, struct rc_xrcd *xrcd, struct rc_cq *cq,
				 struct ibv_srq_init_attr *attr, void *user);
/* The XRC SRQ number (24 bits); 0 for a basic SRQ. */
uint32_t rc_srq_num(const struct rc_srq *srq);

/* ---- Memory windows (IBA 10.6.7) ---- */

/*
 * The engine owns the ibv_mw embedded in its MW, as for AHs: the provider
 * fills context, pd and handle, hands rc_mw_ibv() to libibverbs, and
 * IBV_WR_BIND_MW work requests name that ibv_mw (and the MR by its lkey).
 * Type 1 and type 2B (bound to the QP that bound it); a bind keeps the
 * rkey's upper 24 bits, LOCAL_INV and SEND_WITH_INV free a type 2 window.
 * @type other than 1 or 2: NULL with errno EINVAL.
 */
struct rc_mw *rc_mw_alloc(struct rc_pd *pd, enum ibv_mw_type type);
int rc_mw_dealloc(struct rc_mw *mw);
struct ibv_mw *rc_mw_ibv(struct rc_mw *mw);
struct rc_mw *rc_mw_from_ibv(struct ibv_mw *ibv);

/* ---- Address handles (UD) ---- */

/*
 * The engine owns the ibv_ah embedded in its AH; the provider hands
 * rc_ah_ibv() to libibverbs, and UD work requests name that ibv_ah.
 */
struct rc_ah *rc_ah_create(struct rc_pd *pd, struct ibv_ah_attr *attr);
int rc_ah_destroy(struct rc_ah *ah);
struct ibv_ah *rc_ah_ibv(struct rc_ah *ah);
struct rc_ah *rc_ah_from_ibv(struct ibv_ah *ibv);
/**
 * rc_ah_ud_frame() - the frame a UD SEND Only of @len bytes from QP @src_qpn
 * through @ah to QP @dest_qpn with @qkey would be, built now for sending
 * later by someone else (a CM's DREQ, posted when its process is gone).
 * @frame: @room bytes.
 * Return: its length, -EAGAIN while @ah's MAC is unresolved, -EMSGSIZE.
 */
int rc_ah_ud_frame(struct rc_ah *ah, uint32_t src_qpn, uint32_t dest_qpn, uint32_t qkey,
		   const void *payload, uint32_t len, uint8_t *frame, uint32_t room);

/* ---- Queue pairs ---- */

/*
 * Where a QP's rings come from: the allocators of a parent domain
 * (ibv_alloc_parent_domain(3)).  @alloc NULL, or returning RC_RING_DEFAULT,
 * means the engine's own; NULL from @alloc fails the creation (ENOMEM).
 * The engine zeroes what it gets and gives it back through @free.
 */
enum rc_ring_kind { RC_RING_SQ = 1, RC_RING_RQ };
#define RC_RING_DEFAULT	((void *)-1)
#define RC_RING_ALIGN	4096

struct rc_ring_alloc {
	void	*(*alloc)(void *arg, enum rc_ring_kind kind, size_t size, size_t align);
	void	(*free)(void *arg, enum rc_ring_kind kind, void *ptr);
	void	*arg;
};

/*
 * Receive-side scaling of a raw packet QP (ibv_create_qp_ex(3) with
 * IBV_QP_INIT_ATTR_RX_HASH and _IND_TABLE): a frame its flows take goes to
 * @wqs[Toeplitz hash of the @fields of the frame under @key, modulo the
 * table's size]; the QP itself has no queues.  @wqs: 1 << @log_size raw
 * packet QPs of the same engine that stand for the work queues (ibv_wq);
 * they must outlive the RSS QP (the provider's indirection table holds them).
 */
#define RC_RSS_KEY_MAX		64
#define RC_RSS_LOG_SIZE_MAX	8
#define RC_RSS_FIELDS	(IBV_RX_HASH_SRC_IPV4 | IBV_RX_HASH_DST_IPV4 | IBV_RX_HASH_SRC_IPV6 |	\
			 IBV_RX_HASH_DST_IPV6 | IBV_RX_HASH_SRC_PORT_TCP | IBV_RX_HASH_DST_PORT_TCP | \
			 IBV_RX_HASH_SRC_PORT_UDP | IBV_RX_HASH_DST_PORT_UDP)

struct rc_qp_rss {
	struct rc_qp		**wqs;
	uint32_t		log_size;
	uint64_t		fields;		/* IBV_RX_HASH_*, within RC_RSS_FIELDS */
	uint8_t			key[RC_RSS_KEY_MAX];
	uint8_t			key_len;
};

/*
 * IBV_QPT_XRC_SEND (initiator): like RC without a receive queue (@recv_cq and
 * @srq NULL); each work request names the target's SRQ in
 * wr->qp_type.xrc.remote_srqn.  IBV_QPT_XRC_RECV (target): @xrcd only, no PD,
 * CQs or send queue; it receives and answers.
 */
struct rc_qp_init {
	enum ibv_qp_type	qp_type;	/* IBV_QPT_RC, _UC, _UD, _XRC_SEND, _XRC_RECV or _RAW_PACKET */
	const struct rc_qp_rss	*rss;		/* raw packet QP: optional, copied */
	struct rc_pd		*pd;
	struct rc_cq		*send_cq;
	struct rc_cq		*recv_cq;
	struct rc_srq		*srq;		/* NULL: own receive queue */
	struct rc_xrcd		*xrcd;		/* IBV_QPT_XRC_RECV only */
	struct ibv_qp_cap	cap;		/* in: requested; out: granted */
	bool			sq_sig_all;
	void			*user;		/* comes back in async events */
	struct rc_ring_alloc	ring_alloc;	/* optional */
	/*
	 * The GSI (IBA 13.5.1): a UD QP numbered 1, one per engine, outside
	 * the QPN allocator (every process on a netdev may have its own; the
	 * CM above keeps only its own MADs).  -EBUSY when the engine has one.
	 */
	bool			gsi;
};

struct rc_qp *rc_qp_create(struct rc_engine *eng, struct rc_qp_init *init);
int rc_qp_destroy(struct rc_qp *qp);		/* -EBUSY while flows steer to it */
uint32_t rc_qp_num(const struct rc_qp *qp);
/*
 * Does a CQ of the QP numbered @qpn still hold a completion of it that nobody
 * polled?  False when there is no such QP.
 */
bool rc_qp_completions_unpolled(struct rc_engine *eng, uint32_t qpn);
/*
 * ibv_open_qp(3): the XRC target QP numbered @qpn of @xrcd, or NULL with errno
 * EINVAL when there is none.  The QP stays the creator's: it is not counted again.
 */
struct rc_qp *rc_qp_open_xrc(struct rc_xrcd *xrcd, uint32_t qpn);
/* The @user pointer the QP was created with. */
void *rc_qp_user(const struct rc_qp *qp);
/*
 * ibv_modify_qp semantics: the transition must be legal from the current
 * state with exactly the required and allowed attributes of that
 * transition (IBA 11.2.5, table "QP state transition properties"), else
 * -EINVAL and nothing changes.  Entering ERR flushes every outstanding
 * work request as IBV_WC_WR_FLUSH_ERR, in order.
 */
int rc_qp_modify(struct rc_qp *qp, struct ibv_qp_attr *attr, int mask);
/* @init (may be NULL) gets qp_type, cap and sq_sig_all; its object pointers stay NULL. */
int rc_qp_query(struct rc_qp *qp, struct ibv_qp_attr *attr, int mask,
		struct ibv_qp_init_attr *init);
/* ---- Raw packet QPs and flow steering (ibv_create_flow(3); docs/engine.md, "Raw packet QPs") ---- */

/*
 * A raw packet QP sends whole Ethernet frames: the SGEs of an IBV_WR_SEND
 * hold the frame from its destination MAC on, sent as is (no ICRC, no
 * checksum).  It receives only frames a flow of its own steers to it:
 * frames that are not RoCE (wire_classify() says so), from the port, and
 * those a raw QP of the same engine sends (as a NIC's switch loops them
 * back, the sender's own flows excepted).  RoCE frames always go to the
 * transport and match no flow but a sniffer.  A receive completes
 * IBV_WC_RECV with byte_len the frame's length, no GRH area.
 *
 * @attr: struct ibv_flow_attr followed by its specs (ETH, IPV4, IPV4_EXT,
 * IPV6, TCP, UDP), values and masks in network order; type
 * IBV_FLOW_ATTR_NORMAL or _SNIFFER, flags 0 or IBV_FLOW_ATTR_FLAGS_DONT_TRAP.
 * Among the flows a frame matches, the lowest priority value wins; flows of equal
 * priority each get a copy (one per QP), and DONT_TRAP flows let the next
 * priority match too.  IBV_FLOW_ATTR_SNIFFER (no specs): a copy of every
 * frame received from or sent to the port, RoCE ones included.  Return: the
 * flow, or NULL with errno EINVAL (a QP that is not raw, port, size or a
 * spec malformed), EOPNOTSUPP (another rule type, flag or spec: default
 * rules, egress, tunnels, actions, inner headers) or ENOMEM.
 */
struct rc_flow *rc_flow_create(struct rc_qp *qp, const struct ibv_flow_attr *attr);
int rc_flow_destroy(struct rc_flow *flow);

/* ---- Work-request opcodes (IBA 10.8.3, ibv_post_send(3)) ---- */

/*
 * The IBA 1.5 flush rights of a region or QP: rdma-core's IBV_ACCESS_FLUSH_*
 * from v45, the same bits (libibverbs v44 has no names for them).
 */
#define RC_ACCESS_FLUSH_GLOBAL		(1 << 8)
#define RC_ACCESS_FLUSH_PERSISTENT	(1 << 9)
#define RC_ACCESS_FLUSH			(RC_ACCESS_FLUSH_GLOBAL | RC_ACCESS_FLUSH_PERSISTENT)

/* What a work request does; a bit each, so one test can name several. */
enum rc_wr_kind {
	RC_WR_SEND	= 1 << 0,	/* a message into the peer's receive queue */
	RC_WR_WRITE	= 1 << 1,	/* RDMA write into a remote buffer */
	RC_WR_READ	= 1 << 2,	/* RDMA read: the data comes back in responses */
	RC_WR_ATOMIC	= 1 << 3,	/* 8 bytes changed remotely, the original comes back */
	RC_WR_LOCAL	= 1 << 4,	/* no packet: bind a window, invalidate a key */
	RC_WR_ATOMIC_WRITE = 1 << 5,	/* IBA 1.5: 8 bytes stored at once, an empty read response */
};
/*
 * Need responder resources and a response of their own (IBA 9.5, 9.7.5.1.3;
 * the atomic write as rxe).
 */
#define RC_WR_READ_OR_ATOMIC	(RC_WR_READ | RC_WR_ATOMIC | RC_WR_ATOMIC_WRITE)

/* What a work request carries besides its kind. */
enum rc_wr_flag {
	RC_WR_IMM	= 1 << 0,	/* imm_data, delivered with the last packet */
	RC_WR_INV	= 1 << 1,	/* invalidate_rkey names a key to invalidate */
};

/* A QP type as a bit of rc_wr_opcode_info.qp_types (@t: IBV_QPT_RC, _UC, _UD, _XRC_SEND or _RAW_PACKET). */
#define RC_QPT_BIT(t)		(1u << (t))

struct rc_wr_opcode_info {
	const char		*name;		/* NULL: an opcode the engine does not take */
	uint16_t		qp_types;	/* RC_QPT_BIT() of each type it may be posted on */
	uint8_t			kind;		/* enum rc_wr_kind, one bit */
	uint8_t			flags;		/* enum rc_wr_flag bits */
	enum ibv_wc_opcode	wc_opcode;	/* of its send completion */
	uint32_t		qp_ex_flag;	/* the IBV_QP_EX_WITH_* that enables it in ibv_wr_*() */
};

#define RC_WR_OPCODE_COUNT	(IBV_WR_ATOMIC_WRITE + 1)
/* What each work-request opcode is, indexed by enum ibv_wr_opcode (rc_wr_opcode.c). */
extern const struct rc_wr_opcode_info rc_wr_opcode_info[RC_WR_OPCODE_COUNT];

/* ibv_post_send / ibv_post_recv semantics; *bad_wr names the first refused. */
/*
 * Multicast (IBA 10.5.2; ibv_attach_mcast): a UD QP attached to a group
 * receives the datagrams sent to its GID with DestQP 0xffffff, from the wire
 * and from this host's other processes and QPs.  attach: -EINVAL for a QP
 * that is not UD or a GID that is not multicast, -ENOMEM when the group or
 * the table is full, the error of cfg.mcast_group; 1 when already attached
 * (still one attachment).  detach: -EINVAL when not attached.  A destroyed
 * QP leaves its groups.
 */
#define RC_MAX_MCAST_GROUPS	64
#define RC_MAX_MCAST_QP_ATTACH	16
int rc_mcast_attach(struct rc_qp *qp, const uint8_t gid[16]);
int rc_mcast_detach(struct rc_qp *qp, const uint8_t gid[16]);

int rc_post_send(struct rc_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad_wr);
int rc_post_recv(struct rc_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad_wr);

/* Names for traces and messages ("UNKNOWN" for a value outside the tables). */
const char *rc_qp_state_name(enum ibv_qp_state state);
const char *rc_wr_opcode_name(enum ibv_wr_opcode op);

#endif
