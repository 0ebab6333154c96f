// SPDX-License-Identifier: MIT
/* Helpers shared by the wire unit tests, the fuzz targets and the oracle packet generator. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "wire_testutil.h"

void test_rng_seed(struct test_rng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t test_rng_next(struct test_rng *r)
{
	r->s ^= r->s >> 12;
	r->s ^= r->s << 25;
	r->s ^= r->s >> 27;
	return r->s * 0x2545f4914f6cdd1dull;
}

uint32_t test_rng_below(struct test_rng *r, uint32_t n)
{
	return n ? (uint32_t)(test_rng_next(r) % n) : 0;
}

void test_rng_fill(struct test_rng *r, void *buf, size_t len)
{
	uint8_t *b = buf;

	for (size_t i = 0; i < len; i++)
		b[i] = (uint8_t)test_rng_next(r);
}

static bool coin(struct test_rng *r)
{
	return test_rng_next(r) >> 63;
}

uint32_t test_payload_len(struct test_rng *r, uint8_t opcode, uint32_t pmtu)
{
	wire_op_flags fl = wire_opcode[opcode].flags;
	/* Half the time a short payload, to exercise every pad count. */
	uint32_t cap = coin(r) ? 64 : pmtu;

	if (!(fl & WIRE_OPF_PAYLOAD))
		return 0;
	if (fl & (WIRE_OPF_FIRST | WIRE_OPF_MIDDLE))
		return pmtu;
	if (fl & WIRE_OPF_LAST)
		return 1 + test_rng_below(r, cap);
	return test_rng_below(r, cap + 1);
}

void test_random_desc(struct test_rng *r, uint8_t opcode, struct wire_build_desc *d)
{
	memset(d, 0, sizeof(*d));
	test_rng_fill(r, d->src_mac, sizeof(d->src_mac));
	test_rng_fill(r, d->dst_mac, sizeof(d->dst_mac));
	d->has_vlan = test_rng_below(r, 4) == 0;
	d->vlan_tci = (uint16_t)test_rng_next(r);
	d->ip_version = coin(r) ? 6 : 4;
	test_rng_fill(r, d->src_gid, sizeof(d->src_gid));
	test_rng_fill(r, d->dst_gid, sizeof(d->dst_gid));
	if (d->ip_version == 4) {
		static const uint8_t mapped[12] = { [10] = 0xff, [11] = 0xff };

		memcpy(d->src_gid, mapped, sizeof(mapped));
		memcpy(d->dst_gid, mapped, sizeof(mapped));
	}
	d->tclass = (uint8_t)test_rng_next(r);
	d->hop_limit = (uint8_t)(1 + test_rng_below(r, 255));
	d->flow_label = (uint32_t)test_rng_next(r) & 0xfffff;
	d->ip_id = (uint16_t)test_rng_next(r);
	d->udp_sport = coin(r) ? 0 : (uint16_t)(WIRE_UDP_SPORT_MIN + test_rng_below(r, 16384));

	d->opcode = opcode;
	d->se = coin(r);
	d->mig = coin(r);
	d->ackreq = coin(r);
	d->pkey = (uint16_t)(1 + test_rng_below(r, 0xffff));
	d->dest_qp = (uint32_t)test_rng_next(r) & WIRE_24BIT_MASK;
	d->psn = (uint32_t)test_rng_next(r) & WIRE_24BIT_MASK;

	d->reth.va = test_rng_next(r);
	d->reth.rkey = (uint32_t)test_rng_next(r);
	d->reth.len = (uint32_t)test_rng_next(r);
	d->aeth.syndrome = (uint8_t)test_rng_next(r);
	d->aeth.msn = (uint32_t)test_rng_next(r) & WIRE_24BIT_MASK;
	d->atomic.va = test_rng_next(r) & ~7ull;
	d->atomic.rkey = (uint32_t)test_rng_next(r);
	d->atomic.swap_add = test_rng_next(r);
	d->atomic.compare = test_rng_next(r);
	d->atomic_orig = test_rng_next(r);
	d->imm = (uint32_t)test_rng_next(r);
	d->ieth_rkey = (uint32_t)test_rng_next(r);
	d->deth.qkey = (uint32_t)test_rng_next(r);
	d->deth.src_qp = (uint32_t)test_rng_next(r) & WIRE_24BIT_MASK;
	d->xrc_srqn = (uint32_t)test_rng_next(r) & WIRE_SRQN_MASK;
}

void test_desc_from_pkt(const struct wire_pkt *p, struct wire_build_desc *d)
{
	const uint8_t *h;

	memset(d, 0, sizeof(*d));
	memcpy(d->src_mac, p->src_mac, WIRE_ETH_ALEN);
	memcpy(d->dst_mac, p->dst_mac, WIRE_ETH_ALEN);
	d->has_vlan = p->has_vlan;
	d->vlan_tci = p->vlan_tci;
	d->ip_version = p->ip_version;
	d->roce_v1 = p->roce_v1;
	memcpy(d->src_gid, p->src_gid, 16);
	memcpy(d->dst_gid, p->dst_gid, 16);
	d->tclass = p->tclass;
	d->hop_limit = p->hop_limit;
	d->flow_label = p->flow_label;
	if (p->ip_version == 4) {
		const struct wire_ipv4_hdr *ip = (const void *)(p->frame + p->l3_off);

		d->ip_id = wire_get16(ip->id);
	}
	d->udp_sport = p->udp_sport;
	d->opcode = p->opcode;
	d->se = p->se;
	d->mig = p->mig;
	d->ackreq = p->ackreq;
	d->pkey = p->pkey;
	d->dest_qp = p->dest_qp;
	d->psn = p->psn;

	if ((h = wire_pkt_ext(p, WIRE_EXT_RETH))) {
		const struct wire_reth *x = (const void *)h;

		d->reth.va = wire_get64(x->va);
		d->reth.rkey = wire_get32(x->rkey);
		d->reth.len = wire_get32(x->dma_len);
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_AETH))) {
		uint32_t v = wire_get32(((const struct wire_aeth *)(const void *)h)->syn_msn);

		d->aeth.syndrome = (uint8_t)(v >> 24);
		d->aeth.msn = v & WIRE_24BIT_MASK;
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_ATOMIC_ETH))) {
		const struct wire_atomic_eth *x = (const void *)h;

		d->atomic.va = wire_get64(x->va);
		d->atomic.rkey = wire_get32(x->rkey);
		d->atomic.swap_add = wire_get64(x->swap_add);
		d->atomic.compare = wire_get64(x->compare);
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_ATOMIC_ACK_ETH)))
		d->atomic_orig = wire_get64(((const struct wire_atomic_ack_eth *)(const void *)h)->orig);
	if ((h = wire_pkt_ext(p, WIRE_EXT_IMMDT)))
		d->imm = wire_get32(((const struct wire_immdt *)(const void *)h)->imm);
	if ((h = wire_pkt_ext(p, WIRE_EXT_IETH)))
		d->ieth_rkey = wire_get32(((const struct wire_ieth *)(const void *)h)->rkey);
	if ((h = wire_pkt_ext(p, WIRE_EXT_DETH))) {
		const struct wire_deth *x = (const void *)h;

		d->deth.qkey = wire_get32(x->qkey);
		d->deth.src_qp = wire_get32(x->src_qp) & WIRE_24BIT_MASK;
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_XRCETH)))
		d->xrc_srqn = wire_get32(((const struct wire_xrceth *)(const void *)h)->srqn) &
			      WIRE_SRQN_MASK;
}

#define EXPECT(cond, ...)					\
	do {							\
		if (!(cond)) {					\
			snprintf(msg, cap, __VA_ARGS__);	\
			return msg;				\
		}						\
	} while (0)

static const char *ext_matches(const struct wire_pkt *p, const struct wire_build_desc *d,
			       char *msg, size_t cap)
{
	const uint8_t *h;

	if ((h = wire_pkt_ext(p, WIRE_EXT_RETH))) {
		const struct wire_reth *x = (const void *)h;

		EXPECT(wire_get64(x->va) == d->reth.va, "RETH va");
		EXPECT(wire_get32(x->rkey) == d->reth.rkey, "RETH rkey");
		EXPECT(wire_get32(x->dma_len) == d->reth.len, "RETH dma_len");
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_AETH))) {
		uint32_t v = wire_get32(((const struct wire_aeth *)(const void *)h)->syn_msn);

		EXPECT(v >> 24 == d->aeth.syndrome, "AETH syndrome");
		EXPECT((v & WIRE_24BIT_MASK) == (d->aeth.msn & WIRE_24BIT_MASK), "AETH msn");
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_ATOMIC_ETH))) {
		const struct wire_atomic_eth *x = (const void *)h;

		EXPECT(wire_get64(x->va) == d->atomic.va, "AtomicETH va");
		EXPECT(wire_get32(x->rkey) == d->atomic.rkey, "AtomicETH rkey");
		EXPECT(wire_get64(x->swap_add) == d->atomic.swap_add, "AtomicETH swap/add");
		EXPECT(wire_get64(x->compare) == d->atomic.compare, "AtomicETH compare");
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_ATOMIC_ACK_ETH)))
		EXPECT(wire_get64(((const struct wire_atomic_ack_eth *)(const void *)h)->orig) ==
		       d->atomic_orig, "AtomicAckETH orig");
	if ((h = wire_pkt_ext(p, WIRE_EXT_IMMDT)))
		EXPECT(wire_get32(((const struct wire_immdt *)(const void *)h)->imm) == d->imm,
		       "ImmDt");
	if ((h = wire_pkt_ext(p, WIRE_EXT_IETH)))
		EXPECT(wire_get32(((const struct wire_ieth *)(const void *)h)->rkey) == d->ieth_rkey,
		       "IETH rkey");
	if ((h = wire_pkt_ext(p, WIRE_EXT_DETH))) {
		const struct wire_deth *x = (const void *)h;

		EXPECT(wire_get32(x->qkey) == d->deth.qkey, "DETH qkey");
		EXPECT(wire_get32(x->src_qp) == (d->deth.src_qp & WIRE_24BIT_MASK), "DETH src_qp");
	}
	if ((h = wire_pkt_ext(p, WIRE_EXT_XRCETH)))
		EXPECT(wire_get32(((const struct wire_xrceth *)(const void *)h)->srqn) ==
		       (d->xrc_srqn & WIRE_SRQN_MASK), "XRCETH srqn (reserved byte 0)");
	if ((h = wire_pkt_ext(p, WIRE_EXT_CNP)))
		for (int i = 0; i < 16; i++)
			EXPECT(h[i] == 0, "CNP reserved byte %d", i);
	return NULL;
}

const char *test_pkt_matches_desc(const struct wire_pkt *p, const struct wire_build_desc *d,
				  const uint8_t *payload, uint32_t payload_len,
				  char *msg, size_t cap)
{
	const struct wire_opcode_info *op = &wire_opcode[d->opcode];
	uint16_t sport = d->roce_v1 ? 0 : d->udp_sport ? d->udp_sport :
			 wire_udp_sport(0, d->dest_qp);
	uint8_t pad = op->flags & WIRE_OPF_PAYLOAD ? (uint8_t)(-payload_len & 3) : 0;

	EXPECT(p->op == op, "opcode table entry");
	EXPECT(p->opcode == d->opcode, "opcode 0x%02x, expected 0x%02x", p->opcode, d->opcode);
	EXPECT(!memcmp(p->src_mac, d->src_mac, 6) && !memcmp(p->dst_mac, d->dst_mac, 6), "MACs");
	EXPECT(p->has_vlan == d->has_vlan, "VLAN presence");
	EXPECT(!d->has_vlan || p->vlan_tci == d->vlan_tci, "VLAN TCI");
	EXPECT(p->ip_version == d->ip_version, "IP version");
	EXPECT(p->roce_v1 == d->roce_v1, "RoCE version");
	EXPECT(!memcmp(p->src_gid, d->src_gid, 16), "source GID");
	EXPECT(!memcmp(p->dst_gid, d->dst_gid, 16), "destination GID");
	EXPECT(p->tclass == d->tclass, "traffic class %u, expected %u", p->tclass, d->tclass);
	EXPECT(p->hop_limit == (d->hop_limit ? d->hop_limit : 64), "hop limit %u", p->hop_limit);
	EXPECT(p->flow_label == (d->ip_version == 6 ? d->flow_label & 0xfffff : 0), "flow label");
	EXPECT(p->udp_sport == sport, "UDP source port %u, expected %u", p->udp_sport, sport);
	EXPECT(p->se == d->se && p->mig == d->mig && p->ackreq == d->ackreq, "BTH SE/M/A");
	EXPECT(p->pad == pad, "pad %u, expected %u", p->pad, pad);
	EXPECT(p->tver == 0, "TVer");
	EXPECT(p->pkey == (d->pkey ? d->pkey : WIRE_DEFAULT_PKEY), "P_Key 0x%04x", p->pkey);
	EXPECT(p->dest_qp == (d->dest_qp & WIRE_24BIT_MASK), "DestQP 0x%06" PRIx32, p->dest_qp);
	EXPECT(p->psn == (d->psn & WIRE_24BIT_MASK), "PSN %" PRIu32, p->psn);
	EXPECT(p->payload_len == payload_len, "payload length %" PRIu32 ", expected %" PRIu32,
	       p->payload_len, payload_len);
	EXPECT(!payload_len || !memcmp(wire_pkt_payload(p), payload, payload_len), "payload bytes");
	return ext_matches(p, d, msg, cap);
}
