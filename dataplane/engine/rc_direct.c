// SPDX-License-Identifier: MIT
/*
 * Direct placement between the processes of one host (docs/dataplane.md,
 * "Direct placement").  Each engine publishes its remotely accessible
 * regions and its RC QPs that take requests in a table other processes of
 * the host map (rc_engine_cfg.direct_table).  A requester whose RDMA WRITE
 * or READ goes to a QP of another process checks the published QP and
 * region as that process's responder would, and copies straight between
 * the two address spaces (process_vm_writev/readv): one copy, no frame, no
 * ICRC, no thread of the peer involved.  Anything it cannot decide that way
 * (a key or QP not published, a check that fails, a short copy) goes by
 * frames, where the peer's responder answers with the spec's error.
 */
#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <sys/uio.h>

#include "rc_internal.h"

#define SLOT_BITS	10
_Static_assert(RC_DIRECT_MRS == 1u << SLOT_BITS && RC_DIRECT_QPS == 1u << SLOT_BITS,
	       "slot hash");
/* The last bytes of a write land last: applications poll them (as perftest does). */
#define TAIL_BYTES	64
/* Withdrawing waits this many yields at most for copies under way (a reader may have died). */
#define WITHDRAW_YIELDS	100000

static uint32_t slot_of(uint32_t key)
{
	return (key * 2654435761u) >> (32 - SLOT_BITS);
}

/* Entries change between two increments of their seq: odd while they do. */
static void change_begin(_Atomic uint32_t *seq)
{
	atomic_fetch_add(seq, 1);
}

static void change_end(_Atomic uint32_t *seq)
{
	atomic_fetch_add(seq, 1);
}

void rc_direct_withdraw_mr(struct rc_mr *mr)
{
	struct rc_direct_mr *m;

	if (!mr->direct_slot)
		return;
	m = &mr->eng->cfg.direct_table->mr[mr->direct_slot - 1];
	change_begin(&m->seq);
	atomic_store(&m->rkey, 0);
	change_end(&m->seq);
	/* Sequentially consistent with the reader's busy-then-look: it sees the withdrawal or we its copy. */
	for (unsigned i = 0; atomic_load(&m->busy) && i < WITHDRAW_YIELDS; i++)
		sched_yield();
	mr->direct_slot = 0;
}

void rc_direct_publish_mr(struct rc_mr *mr)
{
	struct rc_direct_table *t = mr->eng->cfg.direct_table;
	struct rc_direct_mr *m;
	uint32_t slot;

	rc_direct_withdraw_mr(mr);
	if (!t || !mr->keys_live ||
	    !(mr->access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)))
		return;
	slot = slot_of(mr->rkey);
	m = &t->mr[slot];
	if (atomic_load(&m->rkey))
		return;		/* taken: this region goes by frames */
	change_begin(&m->seq);
	atomic_store_explicit(&m->pd, (uintptr_t)mr->pd, memory_order_relaxed);
	atomic_store_explicit(&m->iova, mr->iova, memory_order_relaxed);
	atomic_store_explicit(&m->len, mr->len, memory_order_relaxed);
	atomic_store_explicit(&m->addr, (uintptr_t)mr->addr, memory_order_relaxed);
	atomic_store_explicit(&m->access, mr->access, memory_order_relaxed);
	atomic_store(&m->rkey, mr->rkey);
	change_end(&m->seq);
	mr->direct_slot = slot + 1;
}

/* After every change of @qp's state or access: published while its responder takes requests. */
void rc_direct_update_qp(struct rc_qp *qp, bool destroyed)
{
	struct rc_direct_table *t = qp->eng->cfg.direct_table;
	bool takes = !destroyed && qp->type == IBV_QPT_RC &&
		     (qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS ||
		      qp->state == IBV_QPS_SQD);
	struct rc_direct_qp *q;

	if (!t)
		return;
	q = &t->qp[slot_of(qp->qpn)];
	if (!qp->direct_published && (!takes || atomic_load(&q->qpn)))
		return;
	change_begin(&q->seq);
	if (takes) {
		atomic_store_explicit(&q->pd, (uintptr_t)qp->pd, memory_order_relaxed);
		atomic_store_explicit(&q->access, qp->attr.qp_access_flags, memory_order_relaxed);
		atomic_store(&q->qpn, qp->qpn);
	} else {
		atomic_store(&q->qpn, 0);
	}
	change_end(&q->seq);
	qp->direct_published = takes;
}

/* The published QP @qpn if it takes requests needing @access: its PD. */
static bool peer_qp(struct rc_direct_table *t, uint32_t qpn, int access, uint64_t *pd)
{
	struct rc_direct_qp *q = &t->qp[slot_of(qpn)];
	uint32_t seq = atomic_load(&q->seq), n;
	int32_t a;

	if (seq & 1)
		return false;
	n = atomic_load_explicit(&q->qpn, memory_order_relaxed);
	a = atomic_load_explicit(&q->access, memory_order_relaxed);
	*pd = atomic_load_explicit(&q->pd, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&q->seq, memory_order_relaxed) == seq && n == qpn &&
	       (a & access) == access;
}

/*
 * The published region @rkey of @pd, with @access, holding [@va, @va + @len):
 * held (its busy count raised) until direct_put(), and *@where the address
 * in its owner's memory.  NULL when it is none of that.
 */
static struct rc_direct_mr *peer_mr(struct rc_direct_table *t, uint32_t rkey, uint64_t pd,
				    int access, uint64_t va, uint64_t len, uint64_t *where)
{
	struct rc_direct_mr *m = &t->mr[slot_of(rkey)];
	uint64_t mpd, iova, mlen, addr;
	uint32_t seq, key;
	int32_t a;

	atomic_fetch_add(&m->busy, 1);
	seq = atomic_load(&m->seq);
	if (seq & 1)
		goto miss;
	key = atomic_load_explicit(&m->rkey, memory_order_relaxed);
	a = atomic_load_explicit(&m->access, memory_order_relaxed);
	mpd = atomic_load_explicit(&m->pd, memory_order_relaxed);
	iova = atomic_load_explicit(&m->iova, memory_order_relaxed);
	mlen = atomic_load_explicit(&m->len, memory_order_relaxed);
	addr = atomic_load_explicit(&m->addr, memory_order_relaxed);
	atomic_thread_fence(memory_order_acquire);
	if (atomic_load_explicit(&m->seq, memory_order_relaxed) != seq || key != rkey ||
	    mpd != pd || (a & access) != access)
		goto miss;
	if (va < iova || len > mlen || va - iova > mlen - len)
		goto miss;
	*where = addr + (va - iova);
	return m;
miss:
	atomic_fetch_sub(&m->busy, 1);
	return NULL;
}

static void direct_put(struct rc_direct_mr *m)
{
	atomic_fetch_sub(&m->busy, 1);
}

/* @w's local buffers as iovecs (check_local() has checked them); their count. */
static int local_iov(struct rc_qp *qp, struct rc_send_wqe *w, struct iovec *iov)
{
	int n = 0;

	if (w->is_inline) {
		iov[0].iov_base = rc_wqe_inline(w, qp->cap.max_send_sge);
		iov[0].iov_len = w->length;
		return 1;
	}
	for (uint32_t i = 0; i < w->num_sge; i++) {
		const struct ibv_sge *s = &w->sge[i];

		if (!s->length)
			continue;
		iov[n].iov_base = rc_mr_local(qp->eng, qp->pd, s->lkey, s->addr, s->length, 0);
		if (!iov[n].iov_base)
			return -1;
		iov[n++].iov_len = s->length;
	}
	return n;
}

bool rc_direct_try(struct rc_qp *qp, struct rc_send_wqe *w)
{
	struct rc_engine *eng = qp->eng;
	bool read = w->opcode == IBV_WR_RDMA_READ;
	int access = read ? IBV_ACCESS_REMOTE_READ : IBV_ACCESS_REMOTE_WRITE;
	struct iovec local[RC_MAX_SGE], remote[2];
	struct rc_direct_table *t;
	struct rc_direct_mr *m;
	uint64_t pd, where;
	int32_t pid;
	ssize_t n;
	int nl, nr = 1;

	if (!eng->cfg.direct_peer || qp->direct_off || qp->type != IBV_QPT_RC ||
	    !(qp->path.local || eng->cfg.direct_every_path) ||
	    !w->length ||
	    (w->opcode != IBV_WR_RDMA_WRITE && !read))
		return false;
	/* In order only: every request sent before has been executed and acknowledged. */
	if (qp->req.psn != qp->comp.psn || qp->req.rd_atomic)
		return false;
	t = eng->cfg.direct_peer(eng->cfg.direct_arg, qp->attr.dest_qp_num, &pid);
	if (!t || !peer_qp(t, qp->attr.dest_qp_num, access, &pd))
		return false;
	nl = local_iov(qp, w, local);
	if (nl <= 0)
		return false;
	m = peer_mr(t, w->u.rc.rkey, pd, access, w->u.rc.remote_addr, w->length, &where);
	if (!m)
		return false;
	remote[0].iov_base = (void *)(uintptr_t)where;
	remote[0].iov_len = w->length;
	if (!read && w->length > TAIL_BYTES) {
		remote[0].iov_len = w->length - TAIL_BYTES;
		remote[1].iov_base = (void *)(uintptr_t)(where + remote[0].iov_len);
		remote[1].iov_len = TAIL_BYTES;
		nr = 2;
	}
	n = read ? process_vm_readv(pid, local, (unsigned long)nl, remote, (unsigned long)nr, 0) :
		   process_vm_writev(pid, local, (unsigned long)nl, remote, (unsigned long)nr, 0);
	direct_put(m);
	if (n < 0 && (errno == EPERM || errno == ENOSYS))
		qp->direct_off = true;	/* not allowed to reach its memory: frames from now on */
	if (n != (ssize_t)w->length)
		return false;
	if (read)
		qp->cnt.direct_reads++;
	else
		qp->cnt.direct_writes++;
	return true;
}
