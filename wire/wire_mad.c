// SPDX-License-Identifier: MIT
/* CM MADs on QP1: the header check, the attribute names, rdma_cm's private-data header. */
#include <string.h>

#include "uroce/wire_mad.h"

static const char *const mad_drop_names[WIRE_MAD_DROP_COUNT] = {
#define MAD_DROP_NAME(n, d) [WIRE_MAD_DROP_##n] = #n,
	WIRE_MAD_DROP_REASONS(MAD_DROP_NAME)
#undef MAD_DROP_NAME
};

static const char *const mad_drop_descs[WIRE_MAD_DROP_COUNT] = {
#define MAD_DROP_DESC(n, d) [WIRE_MAD_DROP_##n] = d,
	WIRE_MAD_DROP_REASONS(MAD_DROP_DESC)
#undef MAD_DROP_DESC
};

const char *wire_mad_drop_name(enum wire_mad_drop reason)
{
	return (unsigned)reason < WIRE_MAD_DROP_COUNT ? mad_drop_names[reason] : "INVALID";
}

const char *wire_mad_drop_desc(enum wire_mad_drop reason)
{
	return (unsigned)reason < WIRE_MAD_DROP_COUNT ? mad_drop_descs[reason] : "not a drop reason";
}

const char *wire_cm_attr_name(uint16_t attr_id)
{
	switch (attr_id) {
#define CM_ATTR_CASE(n, v, d) case v: return #n;
	WIRE_CM_ATTRS(CM_ATTR_CASE)
#undef CM_ATTR_CASE
	default:
		return NULL;
	}
}

const char *wire_cm_rej_reason_name(unsigned reason)
{
	switch (reason) {
	case WIRE_CM_REJ_TIMEOUT:		return "timeout";
	case 2:					return "no QP available";
	case 4:					return "no resources";
	case WIRE_CM_REJ_INVALID_COMM_ID:	return "invalid comm ID";
	case WIRE_CM_REJ_INVALID_SERVICE_ID:	return "invalid service ID";
	case 9:					return "transport type not supported";
	case WIRE_CM_REJ_STALE_CONN:		return "stale connection";
	case WIRE_CM_REJ_CONSUMER_DEFINED:	return "consumer defined (rdma_reject)";
	default:				return "see IBA table 109";
	}
}

/* The fields of the class data that say how much of it, or which message, is meant. */
static enum wire_mad_drop cm_data_check(const struct wire_cm_mad *m)
{
	switch (wire_get16(m->hdr.attr_id)) {
	case WIRE_CM_REJ:
		/* IBA 12.6.7: RejectedInfoLength covers at most the 72-byte ARI. */
		if (wire_bits8(m->u.rej.ari_len, 1, 7) > WIRE_CM_REJ_ARI)
			return WIRE_MAD_DROP_BAD_INFO_LEN;
		if (wire_bits8(m->u.rej.msg_rejected, 6, 2) > WIRE_CM_MSG_OTHER)
			return WIRE_MAD_DROP_BAD_MSG_REF;
		break;
	case WIRE_CM_MRA:
		/* IBA 12.6.6 table 107: MessageMRAed 3 is reserved. */
		if (wire_bits8(m->u.mra.msg_mraed, 6, 2) > WIRE_CM_MSG_OTHER)
			return WIRE_MAD_DROP_BAD_MSG_REF;
		break;
	case WIRE_CM_SIDR_REP:
		/* IBA 12.11.2: AdditionalInformationLength covers at most its 72 bytes. */
		if (m->u.sidr_rep.info_len > WIRE_CM_SIDR_INFO)
			return WIRE_MAD_DROP_BAD_INFO_LEN;
		break;
	}
	return WIRE_MAD_DROP_NONE;
}

enum wire_mad_drop wire_cm_mad_check(const void *buf, size_t len)
{
	const struct wire_mad_hdr *h = buf;

	/* C13-4: a MAD is 256 bytes; the GSI passes longer UD payloads never. */
	if (len < WIRE_MAD_LEN)
		return WIRE_MAD_DROP_TRUNCATED;
	if (h->base_version != WIRE_MAD_BASE_VERSION)
		return WIRE_MAD_DROP_BAD_BASE_VERSION;
	if (h->mgmt_class != WIRE_MGMT_CLASS_CM)
		return WIRE_MAD_DROP_NOT_CM;
	if (h->class_version != WIRE_CM_CLASS_VERSION)
		return WIRE_MAD_DROP_BAD_CLASS_VERSION;
	/* IBA 16.7.1: the CM uses Send only, never as a response (R bit clear). */
	if (h->method != WIRE_MAD_METHOD_SEND)
		return WIRE_MAD_DROP_BAD_METHOD;
	if (!wire_cm_attr_name(wire_get16(h->attr_id)))
		return WIRE_MAD_DROP_UNKNOWN_ATTR;
	return cm_data_check(buf);
}

void wire_cm_mad_init(struct wire_cm_mad *mad, enum wire_cm_attr attr, uint64_t tid)
{
	memset(mad, 0, sizeof(*mad));
	mad->hdr.base_version = WIRE_MAD_BASE_VERSION;
	mad->hdr.mgmt_class = WIRE_MGMT_CLASS_CM;
	mad->hdr.class_version = WIRE_CM_CLASS_VERSION;
	mad->hdr.method = WIRE_MAD_METHOD_SEND;
	wire_set64(&mad->hdr.tid, tid);
	wire_set16(&mad->hdr.attr_id, (uint16_t)attr);
}

enum wire_mad_drop wire_cma_hdr_parse(const uint8_t *pdata, size_t len, unsigned *family,
				      uint8_t src[16], uint8_t dst[16], uint16_t *port)
{
	const struct wire_cma_hdr *h = (const struct wire_cma_hdr *)pdata;

	if (len < sizeof(*h) || h->cma_version != WIRE_CMA_VERSION)
		return WIRE_MAD_DROP_BAD_CMA_HDR;
	switch (h->ip_version >> 4) {
	case 4:
		*family = 4;
		memcpy(src, wire_v4mapped_prefix, 12);
		memcpy(src + 12, h->src_addr + 12, 4);
		memcpy(dst, wire_v4mapped_prefix, 12);
		memcpy(dst + 12, h->dst_addr + 12, 4);
		break;
	case 6:
		*family = 6;
		memcpy(src, h->src_addr, 16);
		memcpy(dst, h->dst_addr, 16);
		break;
	default:
		return WIRE_MAD_DROP_BAD_CMA_HDR;
	}
	*port = wire_get16(h->port);
	return WIRE_MAD_DROP_NONE;
}

void wire_cma_hdr_build(struct wire_cma_hdr *h, unsigned family, const uint8_t src[16],
			const uint8_t dst[16], uint16_t port)
{
	memset(h, 0, sizeof(*h));
	h->cma_version = WIRE_CMA_VERSION;
	h->ip_version = (uint8_t)((family == 6 ? 6 : 4) << 4);
	wire_set16(&h->port, port);
	if (family == 6) {
		memcpy(h->src_addr, src, 16);
		memcpy(h->dst_addr, dst, 16);
	} else {
		memcpy(h->src_addr + 12, src + 12, 4);
		memcpy(h->dst_addr + 12, dst + 12, 4);
	}
}
