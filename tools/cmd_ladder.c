// SPDX-License-Identifier: MIT
/* uroce ladder [--svg OUT] [-n FIRST-LAST] [--max N] FILE: the ladder diagram of a capture or fixture. */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <pcap/pcap.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "replay.h"
#include "uroce/inspect_ladder.h"

#define DEFAULT_MAX	200
#define DEFAULT_WIDTH	100
#define MAX_WIDTH	1000

struct ladder_opts {
	const char	*svg;		/* NULL: text on stdout */
	uint64_t	first, last;	/* frames, from 1 */
	bool		ranged;		/* -n given */
	uint64_t	max;		/* packets drawn at most; 0: all */
	unsigned	width;
	unsigned	flags;		/* enum inspect_ladder_flag */
};

/* One pcap file being read; a fixture merges two. */
struct source {
	const char	*path;
	pcap_t		*pc;
	struct pcap_pkthdr *hdr;
	const u_char	*data;
	bool		have;		/* hdr/data hold its next frame */
};

static void ladder_usage(FILE *out)
{
	fprintf(out,
		"usage: uroce ladder [--svg OUT.svg] [-n FIRST[-LAST]] [--max N] [--width N] [--all] FILE\n"
		"  Draws the ladder (sequence) diagram of a RoCE v2 capture: one column per host,\n"
		"  time going down, one arrow per packet with its opcode, PSN, AckReq, AETH\n"
		"  (ACK, NAK and its code, RNR NAK and its timer, MSN) and RETH; resent PSNs\n"
		"  and PSNs lost before the capture point are marked.\n"
		"  FILE      pcap or pcapng (tcpdump -w), or a conformance fixture NAME.fixture\n"
		"            (its NAME.in.pcap and NAME.out.pcap merged in time order)\n"
		"  --svg OUT write an SVG document to OUT ('-': stdout) instead of text\n"
		"  -n        only frames FIRST to LAST (numbered from 1, as uroce decode shows them)\n"
		"  --max N   draw at most N frames (default %d; 0: all)\n"
		"  --width N text width in characters (default %d, at least %d)\n"
		"  --all     also draw ARP, ICMP and bare TCP ACKs (counted only by default)\n",
		DEFAULT_MAX, DEFAULT_WIDTH, INSPECT_LADDER_MIN_WIDTH);
}

/* "N" or "N-M", frames numbered from 1 (as uroce decode -n). */
static bool parse_range(const char *s, uint64_t *first, uint64_t *last)
{
	unsigned long long a, b;
	char *end;

	a = strtoull(s, &end, 10);
	if (end == s || a == 0 || *s == '-')
		return false;
	b = a;
	if (*end == '-') {
		const char *t = end + 1;

		b = strtoull(t, &end, 10);
		if (end == t || b < a || *t == '-')
			return false;
	}
	if (*end)
		return false;
	*first = a;
	*last = b;
	return true;
}

static bool parse_count(const char *s, uint64_t *v)
{
	unsigned long long n;
	char *end;

	if (*s < '0' || *s > '9')
		return false;
	n = strtoull(s, &end, 10);
	if (*end)
		return false;
	*v = n;
	return true;
}

static int open_source(struct source *src, const char *path)
{
	char errbuf[PCAP_ERRBUF_SIZE];
	const char *why = errbuf, *lname;
	size_t n = strlen(path);
	int link;

	memset(src, 0, sizeof(*src));
	src->path = path;
	src->pc = pcap_open_offline_with_tstamp_precision(path, PCAP_TSTAMP_PRECISION_NANO, errbuf);
	if (!src->pc) {
		/* libpcap starts some messages with the file name already. */
		if (!strncmp(why, path, n) && !strncmp(why + n, ": ", 2))
			why += n + 2;
		fprintf(stderr, "uroce ladder: cannot read capture %s: %s%s\n", path, why,
			strstr(why, "format") ? " (expected pcap or pcapng, e.g. from tcpdump -w, "
			"or a NAME.fixture)" : "");
		return -1;
	}
	link = pcap_datalink(src->pc);
	if (link != DLT_EN10MB) {
		lname = pcap_datalink_val_to_name(link);
		fprintf(stderr, "uroce ladder: %s has link type %s, not Ethernet; capture on the "
			"Ethernet interface itself (tcpdump -i IFACE, not -i any)\n", path,
			lname ? lname : "unknown");
		pcap_close(src->pc);
		src->pc = NULL;
		return -1;
	}
	return 0;
}

/* Read the next frame of @src if it has none pending.  Return: 0, or -1 after an error line. */
static int fill(struct source *src, uint64_t frames)
{
	int rc;

	if (src->have || !src->pc)
		return 0;
	rc = pcap_next_ex(src->pc, &src->hdr, &src->data);
	if (rc == 1) {
		src->have = true;
		return 0;
	}
	if (rc == PCAP_ERROR) {
		fprintf(stderr, "uroce ladder: %s: %s (after %" PRIu64 " frames)\n", src->path,
			pcap_geterr(src->pc), frames);
		return -1;
	}
	pcap_close(src->pc);
	src->pc = NULL;
	return 0;
}

static int64_t ts_ns(const struct timeval *t)
{
	/* With nanosecond precision libpcap stores nanoseconds in tv_usec. */
	return (int64_t)t->tv_sec * 1000000000 + t->tv_usec;
}

/*
 * The next frame in time order over all sources; on equal times the
 * earlier source first (a fixture's input before the output it causes).
 * Return: source index, -1 at the end, -2 after an error line.
 */
static int next_frame(struct source *srcs, int n, uint64_t frames)
{
	int best = -1;

	for (int i = 0; i < n; i++) {
		if (fill(&srcs[i], frames))
			return -2;
		if (srcs[i].have && (best < 0 ||
				     ts_ns(&srcs[i].hdr->ts) < ts_ns(&srcs[best].hdr->ts)))
			best = i;
	}
	return best;
}

static bool is_fixture_path(const char *path)
{
	size_t n = strlen(path);

	return n > 8 && !strcmp(path + n - 8, ".fixture");
}

/* A fixture names its hosts: uroce's port and its peers. */
static int load_fixture(const char *path, struct fixture *fx, struct inspect_ladder *l)
{
	char err[1200];

	if (fixture_load(path, fx, err, sizeof(err))) {
		fprintf(stderr, "uroce ladder: %s\n", err);
		return -1;
	}
	if (inspect_ladder_name_host(l, fx->local_gid, "uroce"))
		return -ENOMEM;
	for (unsigned i = 0; i < fx->n_peers; i++)
		if (inspect_ladder_name_host(l, fx->peers[i].gid, fx->peers[i].name))
			return -ENOMEM;
	return 0;
}

__attribute__((format(printf, 3, 4)))
static void note_add(char *buf, size_t cap, const char *fmt, ...)
{
	size_t len = strlen(buf);
	va_list ap;

	if (len + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + len, cap - len, fmt, ap);
	va_end(ap);
}

/*
 * What the fixture has uroce do and what it must report: the work
 * requests posted (the verbs calls), the completions expected in order,
 * and a QP's final state and events when it leaves RTS.
 */
static void fixture_note(char *buf, size_t cap, const struct fixture *fx)
{
	const char *sep = "uroce's work requests: ";

	for (unsigned i = 0; i < fx->n_actions; i++) {
		const struct fx_action *a = &fx->actions[i];
		uint64_t bytes = 0;

		if (a->kind != FX_POST_SEND && a->kind != FX_POST_RECV)
			continue;
		for (unsigned s = 0; s < a->nsge; s++)
			bytes += a->sge[s].len;
		note_add(buf, cap, "%sibv_post_%s(%s) wr_id %" PRIu64 " %s%s%" PRIu64 "B", sep,
			 a->kind == FX_POST_SEND ? "send" : "recv", fx->qps[a->qp].name, a->wr_id,
			 a->kind == FX_POST_SEND ? rc_wr_opcode_name(a->opcode) : "",
			 a->kind == FX_POST_SEND ? " " : "", bytes);
		if (a->timed)
			note_add(buf, cap, " at %.6fs", (double)a->t_ns / 1e9);
		sep = "; ";
	}
	if (strcmp(sep, "; "))
		note_add(buf, cap, "uroce's work requests: none (the peer's packets drive it)");
	sep = "\nCompletions uroce must give: ";
	for (unsigned i = 0; i < fx->n_cqes; i++) {
		const struct fx_cqe *c = &fx->cqes[i];

		note_add(buf, cap, "%s%s wr_id %" PRIu64 " %s", sep, c->recv ? "recv" : "send",
			 c->wr_id, fx_wc_status_name(c->status));
		if (c->has_opcode)
			note_add(buf, cap, " %s", fx_wc_opcode_name(c->opcode));
		if (c->has_byte_len)
			note_add(buf, cap, " byte_len %" PRIu32, c->byte_len);
		if (c->flags & IBV_WC_WITH_IMM)
			note_add(buf, cap, " imm 0x%" PRIx32, c->imm);
		if (c->flags & IBV_WC_WITH_INV)
			note_add(buf, cap, " invalidated rkey 0x%" PRIx32, c->invalidated_rkey);
		if (c->flags & IBV_WC_GRH)
			note_add(buf, cap, " src_qp 0x%" PRIx32, c->src_qp);
		sep = "; ";
	}
	if (!fx->n_cqes)
		note_add(buf, cap, "\nCompletions uroce must give: none");
	for (unsigned q = 0; q < fx->n_qps; q++) {
		if (fx->qps[q].expect_state == IBV_QPS_RTS)
			continue;
		note_add(buf, cap, "\nQP %s ends in %s", fx->qps[q].name,
			 fx->qps[q].expect_state == IBV_QPS_ERR ? "ERR" :
			 fx->qps[q].expect_state == IBV_QPS_SQE ? "SQE" : "another state");
		sep = ", event ";
		for (unsigned e = 0; e < fx->n_events; e++)
			if (fx->events[e].qp == q) {
				note_add(buf, cap, "%s%s", sep, fx_event_name(fx->events[e].type));
				sep = ", ";
			}
	}
}

/* The fixture's own summary and spec lines, for the title. */
static void fixture_title(char *buf, size_t cap, const char *path)
{
	char line[1024];
	FILE *f = fopen(path, "r");

	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		if (!strncmp(line, "summary ", 8) || !strncmp(line, "spec ", 5))
			note_add(buf, cap, "\n%s", line + (line[1] == 'u' ? 8 : 0));
	}
	fclose(f);
}

static int write_output(const struct inspect_ladder *l, const struct ladder_opts *o,
			const char *title, const char *note)
{
	FILE *out = stdout;

	if (!o->svg) {
		inspect_ladder_print_text(stdout, l, o->width, title, note);
	} else {
		if (strcmp(o->svg, "-")) {
			out = fopen(o->svg, "w");
			if (!out) {
				fprintf(stderr, "uroce ladder: cannot write %s: %s\n", o->svg,
					strerror(errno));
				return 1;
			}
		}
		inspect_ladder_print_svg(out, l, title, note);
		if (out != stdout && fclose(out) != 0) {
			fprintf(stderr, "uroce ladder: writing %s: %s\n", o->svg, strerror(errno));
			return 1;
		}
	}
	if (fflush(stdout) != 0) {
		perror("uroce ladder: writing the output");
		return 1;
	}
	return 0;
}

/* Read, draw, say what was left out. */
static int run(struct source *srcs, int n_src, const char *file, const struct fixture *fx,
	       const struct ladder_opts *o, struct inspect_ladder *l)
{
	struct timeval start = { 0, 0 };
	uint64_t frames = 0, drawn = 0, shown_last = 0;
	char title[3000], note[4000];
	bool broken;
	size_t len;
	int i;

	while ((i = next_frame(srcs, n_src, frames)) >= 0) {
		struct source *s = &srcs[i];
		struct inspect_decode_ts ts;
		struct wire_frame fr;
		int64_t ns;
		size_t before;

		if (!frames)
			start = s->hdr->ts;
		frames++;
		s->have = false;
		if (frames > o->last || (o->max && drawn >= o->max))
			continue;	/* counted only */
		ns = ts_ns(&s->hdr->ts) - ts_ns(&start);
		if (ns < 0)
			ns = 0;
		ts.sec = ns / 1000000000;
		ts.nsec = (uint32_t)(ns % 1000000000);
		inspect_decode_frame(&fr, s->data, s->hdr->caplen, s->hdr->len);
		before = l->n_rows;
		if (inspect_ladder_add(l, frames, &ts, &fr, frames >= o->first)) {
			fprintf(stderr, "uroce ladder: out of memory at frame %" PRIu64 "\n", frames);
			return 1;
		}
		if (frames >= o->first) {
			drawn += l->n_rows > before;
			shown_last = frames;
		}
	}
	/* A capture cut short: draw what came before the error, then fail. */
	broken = i == -2;
	if (o->ranged && o->first > frames && !broken) {
		fprintf(stderr, "uroce ladder: %s has %" PRIu64 " frame%s; -n starts at frame %"
			PRIu64 "\n", file, frames, frames == 1 ? "" : "s", o->first);
		return 1;
	}
	if (inspect_ladder_finish(l)) {
		fprintf(stderr, "uroce ladder: out of memory\n");
		return 1;
	}

	snprintf(title, sizeof(title), "uroce ladder %s", file);
	note[0] = '\0';
	if (fx) {
		fixture_title(title, sizeof(title), file);
		fixture_note(note, sizeof(note), fx);
		note_add(note, sizeof(note), "\n");
	}
	if (broken)
		note_add(note, sizeof(note), "The capture ends with an error after frame %" PRIu64
			 ": only the frames before it are drawn.", frames);
	else if (o->first > 1 || shown_last < frames)
		note_add(note, sizeof(note), "Trimmed: frames %" PRIu64 "-%" PRIu64 " of %" PRIu64
			 "%s; -n FIRST-LAST and --max N (0: all) choose others.", o->first,
			 shown_last, frames, o->max && drawn >= o->max && shown_last < o->last ?
			 " (--max reached)" : "");
	if (l->not_drawn) {
		len = strlen(note);
		note_add(note, sizeof(note), "%s--all draws the frames not drawn.",
			 len && note[len - 1] != '\n' ? " " : "");
	}
	len = strlen(note);
	if (len && note[len - 1] == '\n')
		note[len - 1] = '\0';
	if (write_output(l, o, title, note[0] ? note : NULL))
		return 1;
	return broken ? 1 : 0;
}

static const char *option_name(int opt)
{
	switch (opt) {
	case 'n':	return "-n";
	case 'm':	return "--max";
	case 'w':	return "--width";
	default:	return "--svg";
	}
}

int cmd_ladder(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "svg",	required_argument,	NULL, 's' },
		{ "max",	required_argument,	NULL, 'm' },
		{ "width",	required_argument,	NULL, 'w' },
		{ "all",	no_argument,		NULL, 'a' },
		{ "help",	no_argument,		NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct ladder_opts o = { NULL, 1, UINT64_MAX, false, DEFAULT_MAX, DEFAULT_WIDTH, 0 };
	struct source srcs[2];
	struct fixture fx;
	struct inspect_ladder l;
	const char *file, *paths[2];
	uint64_t v;
	int opt, n_src = 1, rc = 1;
	bool have_fx = false;

	opterr = 0;
	optind = 1;
	while ((opt = getopt_long(argc, argv, "n:m:w:ah", longopts, NULL)) != -1) {
		switch (opt) {
		case 's':
			o.svg = optarg;
			break;
		case 'n':
			if (!parse_range(optarg, &o.first, &o.last)) {
				fprintf(stderr, "uroce ladder: -n wants FRAME or FIRST-LAST (from 1), "
					"got '%s'\n", optarg);
				return 2;
			}
			o.ranged = true;
			break;
		case 'm':
			if (!parse_count(optarg, &o.max)) {
				fprintf(stderr, "uroce ladder: --max wants a number of frames (0: all), "
					"got '%s'\n", optarg);
				return 2;
			}
			break;
		case 'w':
			if (!parse_count(optarg, &v) || v < INSPECT_LADDER_MIN_WIDTH || v > MAX_WIDTH) {
				fprintf(stderr, "uroce ladder: --width wants %d to %d characters, got "
					"'%s'\n", INSPECT_LADDER_MIN_WIDTH, MAX_WIDTH, optarg);
				return 2;
			}
			o.width = (unsigned)v;
			break;
		case 'a':
			o.flags |= INSPECT_LADDER_ALL_FRAMES;
			break;
		case 'h':
			ladder_usage(stdout);
			return 0;
		default:
			if (optopt && strchr("nmws", optopt))
				fprintf(stderr, "uroce ladder: missing the value after %s (uroce ladder -h "
					"shows the options)\n", option_name(optopt));
			else if (optopt)
				fprintf(stderr, "uroce ladder: unknown option -%c (uroce ladder -h shows "
					"the options)\n", optopt);
			else
				fprintf(stderr, "uroce ladder: unknown or incomplete option %s (uroce "
					"ladder -h shows the options)\n", argv[optind - 1]);
			return 2;
		}
	}
	if (optind != argc - 1) {
		ladder_usage(stderr);
		return 2;
	}
	file = argv[optind];

	inspect_ladder_init(&l, o.flags);
	memset(&fx, 0, sizeof(fx));
	memset(srcs, 0, sizeof(srcs));
	paths[0] = file;
	if (is_fixture_path(file)) {
		int err = load_fixture(file, &fx, &l);

		have_fx = true;
		if (err) {
			if (err == -ENOMEM)
				fprintf(stderr, "uroce ladder: out of memory\n");
			goto out;
		}
		paths[0] = fx.in_pcap;
		paths[1] = fx.out_pcap;
		n_src = 2;
	}
	for (int i = 0; i < n_src; i++)
		if (open_source(&srcs[i], paths[i]))
			goto out;
	rc = run(srcs, n_src, file, have_fx ? &fx : NULL, &o, &l);
out:
	for (int i = 0; i < n_src; i++)
		if (srcs[i].pc)
			pcap_close(srcs[i].pc);
	if (have_fx)
		fixture_free(&fx);
	inspect_ladder_free(&l);
	return rc;
}
