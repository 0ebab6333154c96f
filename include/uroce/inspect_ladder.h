/* SPDX-License-Identifier: MIT */
/* Ladder (sequence) diagrams of a capture: one column per host, time going down, an arrow per packet. */
#ifndef UROCE_INSPECT_LADDER_H
#define UROCE_INSPECT_LADDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uroce/inspect_decode.h"

/*
 * Use: inspect_ladder_init(), inspect_ladder_add() for every frame of a capture
 * in order (frames before the range to draw too, with @shown false, so
 * that a resend inside the range is recognised as one), inspect_ladder_finish(),
 * then inspect_ladder_print_text() and/or inspect_ladder_print_svg().
 *
 * Columns are hosts (IP addresses; MAC addresses for frames without IP),
 * not UDP ports: every RoCE v2 packet goes to port 4791 from a source port
 * the sender picks per flow (Annex A17.5), so the port names no endpoint.
 * The QPs of each host are listed under its name; arrows name the
 * destination QP when a host has more than one.
 */

enum inspect_ladder_kind {
	INSPECT_LADDER_REQUEST,	/* send, write, read request, atomic (RC, UC, UD) */
	INSPECT_LADDER_RESPONSE,	/* read response, atomic acknowledge */
	INSPECT_LADDER_ACK,	/* positive acknowledge */
	INSPECT_LADDER_NAK,	/* NAK: PSN sequence error, invalid request, remote access, ... */
	INSPECT_LADDER_RNR,	/* RNR NAK */
	INSPECT_LADDER_CNP,	/* congestion notification (Annex A17.9.3) */
	INSPECT_LADDER_BAD,	/* a RoCE v2 frame a receiver drops: bad ICRC, malformed */
	INSPECT_LADDER_SETUP,	/* perftest's TCP connection on port 18515 */
	INSPECT_LADDER_OTHER,	/* any other frame (drawn with INSPECT_LADDER_ALL_FRAMES) */
	INSPECT_LADDER_LOST,	/* PSNs a sender skipped: packets lost before the capture point */
	INSPECT_LADDER_KIND_COUNT
};

/* Marks found by following each sender's PSNs (inspect_ladder_finish()). */
enum inspect_ladder_mark {
	INSPECT_LADDER_RESEND	= 1u << 0,	/* a request PSN sent before: Go-Back-N, retry */
	INSPECT_LADDER_GO_BACK	= 1u << 1,	/* the first of a run of resends */
	INSPECT_LADDER_REPEAT	= 1u << 2,	/* a response or ACK that repeats an earlier one */
	/* Why a run of resends started: a NAK or RNR NAK of that PSN came back; neither: a timeout. */
	INSPECT_LADDER_AFTER_NAK	= 1u << 3,
	INSPECT_LADDER_AFTER_RNR	= 1u << 4,
};

enum inspect_ladder_flag {
	/* Draw every frame; by default ARP, ICMP and TCP without data are counted only. */
	INSPECT_LADDER_ALL_FRAMES	= 1u << 0,
};

#define INSPECT_LADDER_NO_HOST	UINT16_MAX
#define INSPECT_LADDER_NAME_MAX	48
#define INSPECT_LADDER_MIN_WIDTH	60

struct inspect_ladder_row {
	uint64_t	number;		/* frame number in the capture (from 1); 0 for LOST */
	struct inspect_decode_ts ts;
	uint16_t	src, dst;	/* host index; dst INSPECT_LADDER_NO_HOST: broadcast */
	uint8_t		kind;		/* enum inspect_ladder_kind */
	uint8_t		marks;		/* enum inspect_ladder_mark */
	bool		shown;

	/* RoCE: BTH and extension headers in host order (SETUP: perftest's values) */
	bool		bth_read;	/* opcode, psn, dest_qp come from a BTH (BAD may have none) */
	uint8_t		opcode;
	bool		ackreq, se;
	bool		sr_nak;		/* a selective NAK (uroce's selective repeat, docs/engine.md) */
	uint32_t	psn, dest_qp;
	uint32_t	payload_len;	/* RoCE payload without pad; SETUP: TCP payload */
	uint8_t		drop;		/* enum wire_drop */
	uint16_t	hdrs;		/* wire_hdr_mask: which of the fields below are set */
	uint32_t	rkey, dmalen;	/* RETH, or the rkey of an AtomicETH */
	uint64_t	va;
	uint8_t		syndrome;	/* AETH */
	uint32_t	msn;
	uint64_t	swap_add, compare, orig;
	uint32_t	imm, inv_rkey, qkey, src_qp;

	/* A CM MAD to QP1 (a REQUEST row): the fields its label shows */
	uint16_t	cm_attr;	/* enum wire_cm_attr; 0: not a CM MAD */
	uint64_t	cm_tid;
	uint32_t	cm_local_id, cm_remote_id;	/* comm IDs; SIDR: the request ID */
	uint64_t	cm_sid;		/* REQ, SIDR_REQ, SIDR_REP */
	uint32_t	cm_qpn, cm_psn;	/* REQ, REP; DREQ: the remote QPN; SIDR_REP: the QPN */
	uint16_t	cm_reason;	/* REJ: the reason; SIDR_REP: the status */

	/* SETUP */
	bool		perftest;	/* perftest's exchange message: dest_qp, psn, rkey, va */
	uint8_t		tcp_flags;

	uint32_t	lost_count;	/* LOST: PSNs psn .. psn + lost_count - 1 */

	char		*line;		/* "SRC > DST: SUMMARY" as uroce decode prints it; owned */
	char		*text;		/* OTHER: the decoder's summary; owned */
};

struct inspect_ladder_host {
	uint8_t		addr[16];	/* GID form; a MAC in the first 6 bytes when is_mac */
	bool		is_mac;
	char		role[INSPECT_LADDER_NAME_MAX];	/* "perftest client", "uroce", ... */
	int		column;		/* -1: in no shown row */
	uint32_t	qpn[4];		/* destination QPs seen, first four */
	unsigned	n_qpn;		/* all of them */
};

struct inspect_ladder {
	unsigned	flags;		/* enum inspect_ladder_flag */
	struct inspect_ladder_row *rows;
	size_t		n_rows, cap_rows;
	struct inspect_ladder_host *hosts;
	unsigned	n_hosts, cap_hosts;
	unsigned	n_columns;	/* set by inspect_ladder_finish() */
	uint32_t	pmtu;		/* largest FIRST/MIDDLE payload, 0 if none (read spans) */
	uint64_t	frames;		/* frames given to inspect_ladder_add() */
	uint64_t	shown_frames;	/* of those, in the range to draw */
	uint64_t	not_drawn;	/* in the range, but counted only (ARP, TCP ACKs...) */
	uint64_t	count[INSPECT_LADDER_KIND_COUNT];	/* drawn rows by kind */
	uint64_t	resends, lost_psns;	/* drawn */
	uint64_t	cm_msgs;		/* drawn requests that are CM MADs */
	bool		finished;
};

void inspect_ladder_init(struct inspect_ladder *l, unsigned flags);
void inspect_ladder_free(struct inspect_ladder *l);

/**
 * inspect_ladder_add() - one frame, in capture order.
 * @number: its number in the capture (from 1), as tcpdump and tshark count.
 * @ts: capture time; the caller's epoch (relative times print best).
 * @fr: the frame from inspect_decode_frame(); nothing of it is kept.
 * @shown: false for frames before the range to draw: they only feed the
 *         PSN bookkeeping.
 * Return: 0, or -ENOMEM (the ladder is left as it was).
 */
int inspect_ladder_add(struct inspect_ladder *l, uint64_t number, const struct inspect_decode_ts *ts,
		    const struct wire_frame *fr, bool shown);

/**
 * inspect_ladder_name_host() - give a host a role shown beside its address.
 * @addr: GID form (IPv4-mapped for IPv4), e.g. a fixture's local address.
 * Return: 0, or -ENOMEM.  A later name replaces an earlier one.
 */
int inspect_ladder_name_host(struct inspect_ladder *l, const uint8_t addr[16], const char *role);

/**
 * inspect_ladder_finish() - follow every sender's PSNs and place the columns.
 *
 * Marks resent requests (a PSN at or below one the same QP pair sent
 * before), repeated responses and ACKs, and inserts a LOST row before a
 * request whose PSN skips ahead of the sender's next one (a packet lost
 * before the capture point; the responder NAKs the gap).  Every host of a
 * shown row gets a column, in the order hosts first appear in the capture
 * (shown rows or not, so a range does not reorder them): the host that
 * starts a perftest run or a fixture's exchange is on the left.
 * Return: 0, or -ENOMEM.
 */
int inspect_ladder_finish(struct inspect_ladder *l);

/* The arrow's text, e.g. "WRITE FIRST psn 10418352 rkey 0x18f4 len 4096 1024B". */
size_t inspect_ladder_label(char *buf, size_t cap, const struct inspect_ladder *l,
			 const struct inspect_ladder_row *r);

/* Short names: "request", "ACK", "NAK", ... (also the SVG classes, lowercase). */
const char *inspect_ladder_kind_name(enum inspect_ladder_kind kind);

/* Host name as shown: "192.168.77.3" or "10.0.0.1 (uroce)". */
size_t inspect_ladder_host_name(char *buf, size_t cap, const struct inspect_ladder_host *h);

/**
 * inspect_ladder_print_text() - the diagram for a terminal, ASCII only.
 * @width: characters per line (at least INSPECT_LADDER_MIN_WIDTH); labels that
 *         do not fit are cut with "...".
 * @title: first line (e.g. the file name), or NULL.
 * @note: printed last (e.g. what was trimmed), or NULL.
 */
void inspect_ladder_print_text(FILE *out, const struct inspect_ladder *l, unsigned width,
			    const char *title, const char *note);

/**
 * inspect_ladder_print_svg() - the diagram as a standalone SVG 1.1 document.
 *
 * Each packet is a <g class="pkt KIND" data-frame="N"> holding its line,
 * arrowhead, label and a <title> with uroce decode's line for the frame
 * (shown on hover); LOST rows are <g class="pkt lost">.
 */
void inspect_ladder_print_svg(FILE *out, const struct inspect_ladder *l, const char *title,
			   const char *note);

/* The counts line both printers end with, e.g. "150 packets: 120 requests (4 resent), ...". */
size_t inspect_ladder_totals(char *buf, size_t cap, const struct inspect_ladder *l);

#endif
