// SPDX-License-Identifier: MIT
/* Send: frame buffers, packet build and ICRC, batching and flush, the self ring's send side. */
#include <errno.h>
#include <stdalign.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "rc_internal.h"

/*
 * Touched whole at once: its slots are a page each, so the first pass round
 * it faulted at every frame (ib_send_lat between two processes took 6 us
 * for its first 128 round trips, 1.5 after).
 */
static int self_ring_alloc(struct rc_engine *eng)
{
	void *p;

	if (!eng->self_ring) {
		p = mmap(NULL, RC_SELF_RING_BYTES, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		eng->self_ring = p == MAP_FAILED ? NULL : p;
	}
	return eng->self_ring ? 0 : -ENOMEM;
}

uint8_t *rc_tx_alloc(struct rc_engine *eng, bool local, uint32_t len, struct port_frame *f)
{
	if (local) {
		struct rc_self_slot *s;

		if (unlikely(len > RC_FRAME_MAX || self_ring_alloc(eng) ||
			     eng->self_tail - eng->self_head >= RC_SELF_SLOTS))
			return NULL;
		s = &eng->self_ring[eng->self_tail % RC_SELF_SLOTS];
		f->data = s->data;
		f->len = len;
		f->handle = s;
		f->ext = NULL;
		return f->data;
	}
	if (unlikely(eng->port->ops->tx_alloc(eng->port, f, len)))
		return NULL;
	f->ext = NULL;
	return f->data;
}

/* Hand the frames batched so far to the port. */
void rc_tx_flush(struct rc_engine *eng)
{
	if (eng->ntx) {
		eng->port->ops->tx_burst(eng->port, eng->txq, eng->ntx);
		eng->ntx = 0;
	}
}

/*
 * Everything queued leaves now, for a QP that goes away while its peer may
 * still wait for the ACK of what it sent (a program that disconnects and
 * exits at once).  A port may hold a flush of nothing but ACKs for the next
 * one (the DPDK port does), so the second flush sends what the first kept.
 */
void rc_tx_drain(struct rc_engine *eng)
{
	rc_tx_flush(eng);
	eng->port->ops->flush(eng->port);
	eng->port->ops->flush(eng->port);
}

void rc_tx_commit(struct rc_engine *eng, bool local, struct port_frame *f)
{
	eng->tx_sent++;
	if (local) {
		struct rc_self_slot *s = f->handle;

		s->len = f->len;
		eng->self_tail++;
		if (eng->cfg.frame_tap && !eng->tap_off)
			eng->cfg.frame_tap(eng->cfg.frame_tap_arg, s->data, s->len);
		return;
	}
	if (unlikely(eng->n_sniff))
		rc_raw_sniff(eng, f->data, f->len, f);
	/*
	 * Field by field: f->len was just stored, and one 16-byte load over it
	 * would wait for the store instead of taking it from the store buffer.
	 */
	eng->txq[eng->ntx].data = f->data;
	eng->txq[eng->ntx].len = f->len;
	eng->txq[eng->ntx].handle = f->handle;
	eng->txq[eng->ntx].ext = f->ext;
	eng->txq[eng->ntx].ext_off = f->ext_off;
	eng->txq[eng->ntx].ext_len = f->ext_len;
	eng->ntx++;
	if (eng->ntx == RC_BURST)
		rc_tx_flush(eng);
}

int rc_tx_mirror_self(struct rc_engine *eng)
{
	const struct rc_self_slot *s = &eng->self_ring[(eng->self_tail - 1) % RC_SELF_SLOTS];
	struct port_frame f;
	uint8_t *data = rc_tx_alloc(eng, false, s->len, &f);

	if (unlikely(!data))
		return -ENOBUFS;
	memcpy(data, s->data, s->len);
	f.len = s->len;
	rc_tx_commit(eng, false, &f);
	return 0;
}

bool rc_tx_can_ref(const struct rc_engine *eng, bool local, const struct wire_build_desc *d,
		   uint32_t payload_len)
{
	return eng->port->tx_ext && !local && d->ip_version == 4 && payload_len >= RC_TX_REF_MIN;
}

/**
 * rc_tx_packet() - build and queue one packet.
 * @qp: counted against this QP (may be NULL for engine-level packets).
 * @local: deliver to this engine instead of the port.
 * @fill: writes the payload straight into the frame (one copy); may fail
 *	(a key went away), then nothing is sent and its error is returned.
 * @ref: instead of @fill, the payload in registered memory that stays put
 *	until the peer has it (see rc_tx_can_ref()): the frame refers to it.
 *
 * Over IPv4 the ICRC is computed while the payload is copied in; IPv6 also
 * needs the UDP checksum, so wire_seal() makes a pass of its own there.
 * Return: 0, -ENOBUFS when no frame buffer is free, or the error of @fill.
 */
int rc_tx_packet(struct rc_engine *eng, struct rc_qp *qp, bool local,
		 const struct wire_build_desc *d, uint32_t payload_len, rc_fill_fn fill, void *arg,
		 const uint8_t *ref)
{
	static const uint8_t zeros[4];
	struct rc_counters *cnt = qp ? &qp->cnt : &eng->cnt;
	uint32_t flen = wire_frame_len(d, payload_len), hdr, pad, crc = 0;
	uint32_t l3 = sizeof(struct wire_eth_hdr) + (d->has_vlan ? sizeof(struct wire_vlan_hdr) : 0);
	bool v4 = d->ip_version == 4;
	struct port_frame f;
	uint8_t *data;
	int ret;

	data = rc_tx_alloc(eng, local, flen, &f);
	if (unlikely(!data)) {
		cnt->tx_no_buffer++;
		return -ENOBUFS;
	}
	if (ref) {
		/*
		 * Headers built and summed where they are hot, then stored: the
		 * frame's lines may still sit in the receiving CPU's cache, and
		 * loads of stores to them would wait for those lines.
		 */
		alignas(64) uint8_t h[RC_HDR_MAX];

		hdr = wire_build_headers(h, d, payload_len);
		crc = wire_icrc_split(h, l3, hdr, ref, payload_len);
		memcpy(data, h, hdr);
		f.ext = ref;
		f.ext_off = hdr;
		f.ext_len = payload_len;
	} else {
		hdr = wire_build_headers(data, d, payload_len);
		if (v4)
			crc = wire_icrc(data, l3, hdr);
		ret = payload_len ? fill(arg, data + hdr, payload_len, v4 ? &crc : NULL) : 0;
		if (unlikely(ret)) {
			if (!local)
				eng->port->ops->tx_abort(eng->port, &f);
			return ret;
		}
	}
	if (v4) {
		pad = -payload_len & 3;
		memset(data + hdr + payload_len, 0, pad);
		crc = wire_crc32(crc, zeros, pad);
		wire_icrc_store(data + hdr + payload_len + pad, crc);
		f.len = hdr + payload_len + pad + WIRE_ICRC_LEN;
	} else {
		f.len = wire_seal(data, hdr, payload_len);
	}
	cnt->tx_packets++;
	cnt->tx_bytes += f.len;
	rc_tx_commit(eng, local, &f);
	return 0;
}
