// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: sequences of MADs, as UD SENDs to QP1, into the CM of
 * one engine that listens on two service IDs and answers every REQ with a
 * REP.  After each MAD the CM must have counted it once and, when
 * wire_cm_mad_check() rejects it, under that reason; ASan and UBSan watch
 * the state machines behind the check.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_sim.h"
#include "port_sim.h"
#include "uroce/cm.h"

/* The port of the seeds' REQs (uroce_rping_cm_rx.pcap) and one more. */
#define SERVICE_RPING	wire_ip_service_id(WIRE_RDMA_PS_TCP, 7600)
#define SERVICE_OTHER	wire_ip_service_id(WIRE_RDMA_PS_UDP, 4791)
#define MAD_MAX		300	/* a little past the receive buffer: the engine drops those */

struct fz {
	uint64_t		now;
	struct port_sim		*link;
	struct rc_engine	*eng;
	struct cm		*cm;
	struct cm_id		*listen[2];
	uint32_t		last_comm_id;	/* of the newest connection */
};

static uint64_t clock_now(void *arg)
{
	return ((struct fz *)arg)->now;
}

static void must(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_cm: %s\n", what);
		abort();
	}
}

/* Takes every REQ with a REP, so the RTU, DREQ and REJ that follow meet a connection. */
static int on_event(void *arg, struct cm_id *id, const struct cm_event *ev)
{
	struct cm_conn c = { .qpn = 0x000123, .psn = 0x000456, .rres = 4, .idepth = 4 };

	if (ev->type == CM_EV_REQ) {
		((struct fz *)arg)->last_comm_id = cm_id_comm_id(id);
		cm_send_rep(id, &c);
	}
	return 0;
}

static void setup(struct fz *f)
{
	struct port_sim_cfg sc = { .seed = 1, .slots = 128, .now_ns = clock_now, .clock_arg = f };
	struct wire_gid_entry g = { .valid = true, .type = WIRE_GID_ROCE_V2 };
	struct rc_engine_cfg ec = { .now_ns = clock_now, .clock_arg = f, .seed = 1 };
	struct cm_cfg cc = { .node_guid = 2, .now_ns = clock_now, .event = on_event,
			     .timeout_ms = 20, .seed = 1 };

	memset(f, 0, sizeof(*f));
	f->now = 1;
	f->link = port_sim_create(&sc);
	must(f->link, "link");
	port_sim_set_filter(f->link, fuzz_drop_replies, NULL);
	ec.port = port_sim_port(f->link, 1);
	f->eng = rc_engine_create(&ec);
	must(f->eng, "engine");
	fuzz_gid_of(1, g.gid);
	rc_engine_set_gid(f->eng, 0, &g);
	cc.eng = f->eng;
	cc.arg = f;
	f->cm = cm_create(&cc);
	must(f->cm, "cm");
	f->listen[0] = cm_id_create(f->cm, NULL);
	f->listen[1] = cm_id_create(f->cm, NULL);
	must(f->listen[0] && f->listen[1], "listeners");
	must(!cm_listen(f->listen[0], SERVICE_RPING) && !cm_listen(f->listen[1], SERVICE_OTHER),
	     "listen");
}

static void teardown(struct fz *f)
{
	struct rc_objects o;

	cm_destroy(f->cm);
	rc_engine_objects(f->eng, &o);
	if (o.qp || o.cq || o.ah || o.mr || o.pd) {
		fprintf(stderr, "fuzz_cm: the CM left %u QPs, %u CQs, %u AHs, %u MRs, %u PDs\n",
			o.qp, o.cq, o.ah, o.mr, o.pd);
		abort();
	}
	rc_engine_destroy(f->eng);
	port_sim_destroy(f->link);
}

/* One MAD of @len bytes from side 0's QP1; the CM must count it as wire_cm_mad_check() judges. */
static void send_mad(struct fz *f, const uint8_t *mad, uint16_t len)
{
	struct wire_build_desc d = { 0 };
	struct cm_counters before, after;
	enum wire_mad_drop want = wire_cm_mad_check(mad, len);
	uint8_t frame[512];
	uint32_t n;

	d.opcode = WIRE_OPC_UD | WIRE_OP_SEND_ONLY;
	d.dest_qp = WIRE_GSI_QPN;
	d.deth.qkey = WIRE_GSI_QKEY;
	d.deth.src_qp = WIRE_GSI_QPN;
	d.ip_version = 4;
	d.src_mac[0] = d.dst_mac[0] = 0x02;
	d.src_mac[5] = 1;
	d.dst_mac[5] = 2;
	fuzz_gid_of(0, d.src_gid);
	fuzz_gid_of(1, d.dst_gid);
	n = wire_build(frame, sizeof(frame), &d, mad, len);
	must(n && port_sim_inject(f->link, 1, frame, n) == 0, "inject");
	cm_counters(f->cm, &before);
	rc_engine_progress(f->eng, 0);
	cm_process(f->cm);
	cm_counters(f->cm, &after);
	if (len > WIRE_MAD_LEN)
		return;	/* longer than the GSI's receive buffers: the engine's to drop */
	if (after.mads_rx != before.mads_rx + 1 ||
	    (want && after.drops[want] != before.drops[want] + 1)) {
		fprintf(stderr, "fuzz_cm: a %u-byte MAD (%s) counted %lu times, drop %s %lu -> %lu\n",
			len, wire_mad_drop_name(want),
			(unsigned long)(after.mads_rx - before.mads_rx), wire_mad_drop_name(want),
			(unsigned long)before.drops[want], (unsigned long)after.drops[want]);
		abort();
	}
}

/*
 * Records: 0-4: a MAD (u16 length % MAD_MAX + 1, then its bytes, zeros when
 * the input ends); 5: the same with its remote comm ID (class data bytes
 * 4-7) the newest connection's, which the input cannot know; 6: the clock
 * forward u16 ms, timers fire; 7: the last MAD once more (a retransmission).
 */
int fuzz_cm_one(const uint8_t *data, size_t size);

int fuzz_cm_one(const uint8_t *data, size_t size)
{
	struct fuzz_in in = { data, size };
	uint8_t mad[MAD_MAX];
	uint16_t len = 0;
	struct fz f;

	setup(&f);
	memset(mad, 0, sizeof(mad));
	while (in.n) {
		uint8_t kind = fuzz_u8(&in) % 8;

		switch (kind) {
		case 6:
			f.now += (uint64_t)fuzz_u16(&in) * 1000000;
			rc_engine_progress(f.eng, 0);
			cm_process(f.cm);
			break;
		case 7:
			send_mad(&f, mad, len);
			break;
		default:
			len = (uint16_t)(fuzz_u16(&in) % MAD_MAX + 1);
			for (uint16_t i = 0; i < len; i++)
				mad[i] = fuzz_u8(&in);
			if (kind == 5 && len >= WIRE_MAD_HDR_LEN + 8)
				wire_set32((wire_be32 *)(mad + WIRE_MAD_HDR_LEN + 4), f.last_comm_id);
			send_mad(&f, mad, len);
			break;
		}
	}
	for (int i = 0; i < 8; i++) {
		f.now += 1000000000;
		rc_engine_progress(f.eng, 0);
		cm_process(f.cm);
	}
	teardown(&f);
	return 0;
}

#ifdef UROCE_FUZZ_ENTRY
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_cm_one(data, size);
}
#endif
