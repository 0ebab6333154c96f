// SPDX-License-Identifier: MIT
/* What the fuzz targets assert, shared with the unit suite that replays their corpus. */
#include <stdio.h>
#include <stdlib.h>

#include "fuzz_checks.h"
#include "uroce/inspect_decode.h"
#include "uroce/wire.h"
#include "wire_testutil.h"

/* Frames beyond this are not Ethernet (jumbo 9216 plus headroom). */
#define FUZZ_MAX_FRAME 65535

#define FUZZ_ASSERT(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			fprintf(stderr, "fuzz check failed: %s: ", #cond);	\
			fprintf(stderr, __VA_ARGS__);			\
			fprintf(stderr, "\n");				\
			abort();					\
		}							\
	} while (0)

static FILE *sink(void)
{
	static FILE *null;

	if (!null)
		null = fopen("/dev/null", "w");
	FUZZ_ASSERT(null != NULL, "cannot open /dev/null");
	return null;
}

static void check_view(const struct wire_pkt *p, size_t len)
{
	FUZZ_ASSERT(p->op != NULL && p->op == &wire_opcode[p->opcode], "opcode entry");
	FUZZ_ASSERT(p->bth_off + p->op->hdr_len == p->payload_off, "payload offset");
	FUZZ_ASSERT((uint64_t)p->payload_off + p->payload_len + p->pad + WIRE_ICRC_LEN <= len,
		    "payload %u+%u+%u past the frame (%zu)", p->payload_off, p->payload_len, p->pad,
		    len);
	FUZZ_ASSERT(p->dest_qp <= WIRE_24BIT_MASK && p->psn <= WIRE_24BIT_MASK, "24-bit fields");
}

void fuzz_check_parse(const uint8_t *data, size_t len)
{
	static const unsigned flag_sets[] = {
		0,
		WIRE_PARSE_SKIP_ICRC,
		WIRE_PARSE_SKIP_ICRC | WIRE_PARSE_SKIP_IP_CSUM,
		WIRE_PARSE_SKIP_ICRC | WIRE_PARSE_SKIP_IP_CSUM | WIRE_PARSE_SKIP_LEN_RULES,
	};
	enum wire_drop r[4];
	struct wire_frame fr;
	struct wire_pkt p;
	char sum[256];

	if (len > FUZZ_MAX_FRAME)
		return;
	for (int i = 0; i < 4; i++) {
		r[i] = wire_parse(data, (uint32_t)len, flag_sets[i], &p);
		FUZZ_ASSERT((unsigned)r[i] < WIRE_DROP_COUNT, "reason %d", r[i]);
		if (r[i] == WIRE_DROP_NONE) {
			check_view(&p, len);
			if (p.op->flags & WIRE_OPF_PAYLOAD && !(flag_sets[i] & WIRE_PARSE_SKIP_LEN_RULES))
				FUZZ_ASSERT(p.payload_len <= 4096, "payload %u", p.payload_len);
		}
		/* Skipping checks can only let more frames through. */
		if (i && r[i - 1] == WIRE_DROP_NONE)
			FUZZ_ASSERT(r[i] == WIRE_DROP_NONE, "flags %#x dropped what %#x accepted",
				    flag_sets[i], flag_sets[i - 1]);
	}
	if (r[0] == WIRE_DROP_NONE) {
		wire_parse(data, (uint32_t)len, 0, &p);
		FUZZ_ASSERT(wire_icrc(data, p.l3_off, (uint32_t)(p.payload_off + p.payload_len +
								     p.pad)) == p.icrc, "ICRC");
	}

	inspect_decode_frame(&fr, data, (uint32_t)len, 0);
	/* The decoder checks the ICRC after the rest, exactly as wire_parse() does. */
	FUZZ_ASSERT(fr.drop == r[0], "decoder says %s, parser %s", wire_drop_name(fr.drop),
		    wire_drop_name(r[0]));
	inspect_decode_line(sink(), NULL, &fr);
	inspect_decode_verbose(sink(), 1, NULL, &fr);
	inspect_decode_json(sink(), 1, NULL, &fr);
	FUZZ_ASSERT(inspect_decode_summary(sum, sizeof(sum), &fr) > 0, "empty summary");
}

void fuzz_check_roundtrip(const uint8_t *data, size_t len)
{
	static uint8_t out[TEST_MAX_FRAME];
	struct wire_build_desc d;
	struct wire_pkt p1, p2;
	uint32_t out_len;
	const char *bad;
	char msg[160];

	if (len > FUZZ_MAX_FRAME ||
	    wire_parse(data, (uint32_t)len, WIRE_PARSE_SKIP_ICRC | WIRE_PARSE_SKIP_IP_CSUM, &p1))
		return;
	test_desc_from_pkt(&p1, &d);
	out_len = wire_build(out, sizeof(out), &d, wire_pkt_payload(&p1), p1.payload_len);
	FUZZ_ASSERT(out_len == wire_frame_len(&d, p1.payload_len) && out_len,
		    "rebuild of %s with %u bytes", p1.op->name, p1.payload_len);
	FUZZ_ASSERT(wire_parse(out, out_len, 0, &p2) == WIRE_DROP_NONE, "rebuilt frame dropped: %s",
		    wire_drop_name(wire_parse(out, out_len, 0, &p2)));
	bad = test_pkt_matches_desc(&p2, &d, wire_pkt_payload(&p1), p1.payload_len, msg, sizeof(msg));
	FUZZ_ASSERT(bad == NULL, "view differs after the round trip: %s", bad);
	/* Where no builder default applies, the rebuilt view is the original one. */
	FUZZ_ASSERT(!p1.pkey || p2.pkey == p1.pkey, "P_Key");
	FUZZ_ASSERT(!p1.hop_limit || p2.hop_limit == p1.hop_limit, "hop limit");
	FUZZ_ASSERT(!p1.udp_sport || p2.udp_sport == p1.udp_sport, "UDP source port");
	FUZZ_ASSERT(p2.tclass == p1.tclass && p2.flow_label == p1.flow_label, "traffic class");
	FUZZ_ASSERT(p2.opcode == p1.opcode && p2.psn == p1.psn && p2.dest_qp == p1.dest_qp &&
		    p2.pad == p1.pad && p2.payload_len == p1.payload_len, "BTH");
}
