// SPDX-License-Identifier: MIT
/* uroce decode [-v] [-j] FILE: the frames of a pcap/pcapng capture as lines, lessons or JSON. */
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "uroce/inspect_decode.h"

enum decode_mode { MODE_LINE, MODE_VERBOSE, MODE_JSON };

static void decode_usage(FILE *out)
{
	fprintf(out,
		"usage: uroce decode [-v] [-j] [-n FIRST[-LAST]] FILE\n"
		"  Decodes an Ethernet capture (pcap or pcapng, e.g. from tcpdump -w).\n"
		"  default  one line per frame: time, addresses, opcode, QPN, PSN, lengths, ICRC\n"
		"  -v       every layer and field: offset, raw bytes, value, what it is for\n"
		"  -j       one JSON object per frame, the fields as uroce's parser sees them\n"
		"  -n       only frames FIRST to LAST (numbered from 1, as tcpdump and tshark do)\n");
}

/* Times relative to the first frame, like tcpdump -ttttt. */
static struct inspect_decode_ts rel_time(const struct timeval *t, const struct timeval *start)
{
	int64_t ns = ((int64_t)t->tv_sec - start->tv_sec) * 1000000000 +
		     ((int64_t)t->tv_usec - start->tv_usec);
	struct inspect_decode_ts ts;

	if (ns < 0)
		ns = 0;
	ts.sec = ns / 1000000000;
	ts.nsec = (uint32_t)(ns % 1000000000);
	return ts;
}

/* "N" or "N-M", frames numbered from 1. */
static bool parse_range(const char *s, uint64_t *first, uint64_t *last)
{
	char *end;
	unsigned long long a, b;

	a = strtoull(s, &end, 10);
	if (end == s || a == 0)
		return false;
	b = a;
	if (*end == '-') {
		const char *t = end + 1;

		b = strtoull(t, &end, 10);
		if (end == t || b < a)
			return false;
	}
	if (*end)
		return false;
	*first = a;
	*last = b;
	return true;
}

/* @roce counts both versions, @v1 the RoCE v1 frames among them. */
static void print_totals(uint64_t frames, uint64_t roce, uint64_t v1,
			 const struct wire_drop_stats *st)
{
	uint64_t dropped = 0;

	for (int r = 1; r < WIRE_DROP_COUNT; r++)
		if (r != WIRE_DROP_NOT_IP && r != WIRE_DROP_NOT_UDP && r != WIRE_DROP_NOT_ROCE_PORT)
			dropped += st->count[r];
	printf("%" PRIu64 " frame%s: %" PRIu64 " RoCE v2", frames, frames == 1 ? "" : "s",
	       roce - v1);
	if (v1)
		printf(" + %" PRIu64 " RoCE v1", v1);
	printf(" (%" PRIu64 " accepted), %" PRIu64 " other", st->count[WIRE_DROP_NONE],
	       frames - roce);
	if (dropped) {
		printf("; dropped:");
		for (int r = 1; r < WIRE_DROP_COUNT; r++)
			if (st->count[r] && r != WIRE_DROP_NOT_IP && r != WIRE_DROP_NOT_UDP &&
			    r != WIRE_DROP_NOT_ROCE_PORT)
				printf(" %s %" PRIu64, wire_drop_name(r), st->count[r]);
	}
	printf("\n");
}

int cmd_decode(int argc, char **argv)
{
	enum decode_mode mode = MODE_LINE;
	char errbuf[PCAP_ERRBUF_SIZE];
	struct wire_drop_stats stats = { { 0 } };
	struct timeval start = { 0, 0 };
	uint64_t frames = 0, shown = 0, roce = 0, v1 = 0;
	struct pcap_pkthdr *hdr;
	const u_char *data;
	const char *file;
	pcap_t *pc;
	uint64_t first = 1, last = UINT64_MAX;
	int opt, rc, link;

	opterr = 0;
	while ((opt = getopt(argc, argv, "vjhn:")) != -1) {
		switch (opt) {
		case 'v':
			mode = MODE_VERBOSE;
			break;
		case 'j':
			mode = MODE_JSON;
			break;
		case 'n':
			if (!parse_range(optarg, &first, &last)) {
				fprintf(stderr, "uroce decode: -n wants FRAME or FIRST-LAST (from 1), got "
					"'%s'\n", optarg);
				return 2;
			}
			break;
		case 'h':
			decode_usage(stdout);
			return 0;
		default:
			fprintf(stderr, "uroce decode: %s -%c (uroce decode -h shows the options)\n",
				optopt == 'n' ? "missing the frame range after" : "unknown option", optopt);
			return 2;
		}
	}
	if (optind != argc - 1) {
		decode_usage(stderr);
		return 2;
	}
	file = argv[optind];

	pc = pcap_open_offline_with_tstamp_precision(file, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!pc) {
		const char *why = errbuf;
		size_t n = strlen(file);

		/* libpcap starts some messages with the file name already. */
		if (!strncmp(why, file, n) && !strncmp(why + n, ": ", 2))
			why += n + 2;
		fprintf(stderr, "uroce decode: cannot read capture %s: %s%s\n", file, why,
			strstr(why, "format") ? " (expected pcap or pcapng, e.g. from tcpdump -w)" : "");
		return 1;
	}
	link = pcap_datalink(pc);
	if (link != DLT_EN10MB) {
		fprintf(stderr, "uroce decode: %s has link type %s, not Ethernet; capture on the "
			"Ethernet interface itself (tcpdump -i IFACE, not -i any)\n", file,
			pcap_datalink_val_to_name(link) ? pcap_datalink_val_to_name(link) : "unknown");
		pcap_close(pc);
		return 1;
	}

	while ((rc = pcap_next_ex(pc, &hdr, &data)) == 1) {
		struct wire_frame fr;
		struct inspect_decode_ts ts;

		if (!frames)
			start = hdr->ts;
		frames++;
		/* With nanosecond precision libpcap stores nanoseconds in tv_usec. */
		ts = rel_time(&hdr->ts, &start);
		if (frames > last)
			break;
		if (frames < first)
			continue;
		inspect_decode_frame(&fr, data, hdr->caplen, hdr->len);
		stats.count[fr.drop]++;
		roce += fr.kind == WIRE_FRAME_ROCE;
		v1 += fr.kind == WIRE_FRAME_ROCE && fr.pkt.roce_v1;
		shown++;
		switch (mode) {
		case MODE_LINE:
			inspect_decode_line(stdout, &ts, &fr);
			break;
		case MODE_VERBOSE:
			inspect_decode_verbose(stdout, frames, &ts, &fr);
			break;
		case MODE_JSON:
			inspect_decode_json(stdout, frames, &ts, &fr);
			break;
		}
	}
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "uroce decode: %s: %s (after %" PRIu64 " frames)\n", file,
			pcap_geterr(pc), frames);
		pcap_close(pc);
		return 1;
	}
	pcap_close(pc);
	if (mode != MODE_JSON)
		print_totals(shown, roce, v1, &stats);
	if (fflush(stdout) != 0) {
		perror("uroce decode: writing the output");
		return 1;
	}
	return 0;
}
