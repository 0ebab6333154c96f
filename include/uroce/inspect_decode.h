/* SPDX-License-Identifier: MIT */
/* Decoder: any Ethernet frame as one tcpdump-like line, a field-by-field lesson, or JSON. */
#ifndef UROCE_INSPECT_DECODE_H
#define UROCE_INSPECT_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "uroce/wire.h"

/*
 * Use: inspect_decode_frame() once per frame, then any of the printers.
 * The `uroce decode` command, the pcap replay runner and the ladder diagram
 * share this: a replay trace prints inspect_decode_line(), a ladder arrow is
 * labelled with inspect_decode_summary() between the frame's two addresses.
 */

/* Transport below IP, for frames that are not RoCE. */
struct wire_frame_l4 {
	uint8_t		proto;		/* IP protocol / IPv6 next header */
	bool		ports_valid;	/* TCP/UDP header present */
	uint16_t	sport, dport;
	uint32_t	off;		/* L4 header, from frame start */
	uint32_t	payload_len;	/* after the TCP/UDP header */
	uint8_t		tcp_flags;
	uint32_t	tcp_seq, tcp_ack;
	uint8_t		icmp_type, icmp_code;
};

struct wire_frame_arp {
	bool		valid;		/* Ethernet/IPv4 ARP, all 28 bytes present */
	uint16_t	op;		/* 1 request, 2 reply */
	uint8_t		sha[6], spa[4], tha[6], tpa[4];
};

/*
 * perftest's out-of-band exchange on TCP 18515 (text, one message per
 * side): the numbers the RoCE packets that follow will carry.
 */
struct wire_frame_perftest {
	bool		valid;
	uint32_t	lid, out_reads, qpn, psn, rkey, srqn;
	uint64_t	va;
	uint8_t		gid[16];
};

/* A frame as the decoder sees it; filled by inspect_decode_frame(). */
struct wire_frame {
	const uint8_t	*data;		/* not owned; must outlive the printers' calls */
	uint32_t	len;		/* bytes present (pcap caplen) */
	uint32_t	orig_len;	/* length on the wire (>= len) */
	/* wire_classify()'s, with ND and ICMP port unreachable shown as WIRE_FRAME_IP */
	enum wire_frame_kind kind;
	/*
	 * wire_parse()'s verdict with the ICRC checked as well: NONE only for
	 * a good RoCE packet; NOT_IP, NOT_UDP, NOT_ROCE_PORT for the others.
	 */
	enum wire_drop	drop;
	struct wire_pkt	pkt;		/* as far as parsing got (pkt.op NULL before the BTH) */

	uint16_t	ethertype;	/* after the VLAN tag */
	bool		has_vlan;
	uint16_t	vlan_tci;
	uint32_t	l3_off;

	/* IP, for every frame with a readable IP header */
	bool		ip_valid;
	uint8_t		ip_version;
	uint8_t		src_ip[16], dst_ip[16];	/* GID form: IPv4-mapped for IPv4 */
	uint32_t	ip_end;		/* end of the IP packet (Ethernet padding may follow) */

	/* RoCE */
	bool		icrc_checked;	/* the frame is long enough to hold an ICRC */
	uint32_t	icrc_calc;	/* ICRC recomputed over the frame */

	struct wire_frame_l4 l4;
	struct wire_frame_arp arp;
	struct wire_frame_perftest perftest;
};

/* Capture timestamp; the caller chooses the epoch (capture start for relative times). */
struct inspect_decode_ts {
	int64_t		sec;
	uint32_t	nsec;
};

/**
 * inspect_decode_frame() - classify and parse one frame for the printers.
 * @fr: filled; keeps a pointer to @data.
 * @data: Ethernet frame (FCS stripped), @len bytes present.
 * @orig_len: its length on the wire; 0 or less than @len means @len.
 *
 * Never reads outside @data[0..@len), whatever the bytes are.
 */
void inspect_decode_frame(struct wire_frame *fr, const void *data, uint32_t len,
		       uint32_t orig_len);

/**
 * inspect_decode_summary() - what the frame is, in a few words, without time or addresses.
 * @buf: output, always NUL-terminated when @cap > 0.
 *
 * E.g. "RC_SEND_FIRST qp 0x000011 psn 17 payload 1024 icrc ok" or
 * "ARP who-has 192.168.77.2 tell 192.168.77.3".
 * Return: the length the full text has (snprintf semantics).
 */
size_t inspect_decode_summary(char *buf, size_t cap, const struct wire_frame *fr);

/* "192.168.77.3.50176"-style endpoint (tcpdump's address.port), or the MAC when no IP. */
size_t inspect_decode_endpoint(char *buf, size_t cap, const struct wire_frame *fr, bool source);

/* An address in GID form as text: dotted IPv4 when IPv4-mapped, IPv6 otherwise. */
size_t inspect_format_gid(char *buf, size_t cap, const uint8_t gid[16]);

/* One line: "TIME SRC > DST: SUMMARY" ; @ts may be NULL (no time column). */
void inspect_decode_line(FILE *out, const struct inspect_decode_ts *ts, const struct wire_frame *fr);

/*
 * Every layer and field: offset, raw bytes, value and what it is for,
 * followed by a blank line.  @number is the frame's index in its capture.
 */
void inspect_decode_verbose(FILE *out, uint64_t number, const struct inspect_decode_ts *ts,
			 const struct wire_frame *fr);

/*
 * One JSON object per line with the fields as our parser sees them:
 * integers up to 32 bits as numbers, 64-bit values and the ICRC as hex
 * strings, addresses as strings.
 */
void inspect_decode_json(FILE *out, uint64_t number, const struct inspect_decode_ts *ts,
		      const struct wire_frame *fr);

#endif
