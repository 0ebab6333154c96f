// SPDX-License-Identifier: MIT
/* Ladder diagrams drawn: ASCII for a terminal, hand-written SVG 1.1 for a browser. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "uroce/inspect_ladder.h"

#define LABEL_MAX	512
#define TEXT_MIN_SPAN	16	/* fewer characters between lifelines: list the packets instead */

static void time_text(char *buf, size_t cap, const struct inspect_decode_ts *ts)
{
	snprintf(buf, cap, "%" PRId64 ".%06" PRIu32, ts->sec, ts->nsec / 1000);
}

/* "qp 0x000027" or "qps 0x11 0x12 0x13 0x14 +3": the QPs packets addressed on a host. */
static void qp_list(char *buf, size_t cap, const struct inspect_ladder_host *h)
{
	size_t len;

	buf[0] = '\0';
	if (!h->n_qpn)
		return;
	if (h->n_qpn == 1) {
		snprintf(buf, cap, "qp 0x%06" PRIx32, h->qpn[0]);
		return;
	}
	snprintf(buf, cap, "qps");
	for (unsigned i = 0; i < h->n_qpn && i < 4; i++) {
		len = strlen(buf);
		snprintf(buf + len, cap - len, " 0x%" PRIx32, h->qpn[i]);
	}
	if (h->n_qpn > 4) {
		len = strlen(buf);
		snprintf(buf + len, cap - len, " +%u", h->n_qpn - 4);
	}
}

static int row_column(const struct inspect_ladder *l, uint16_t host)
{
	return host == INSPECT_LADDER_NO_HOST ? -1 : l->hosts[host].column;
}

/* ---- Text ---- */

struct text_layout {
	unsigned	width, gutter, canvas;
	int		fw, tw;		/* frame and time column widths */
	int		*pos;		/* lifeline of each column, in the canvas */
};

/*
 * The next line of @*p when words wrap at @width characters and '\n' starts
 * a new line: its length, with @*p moved past it and the spaces or newline
 * that end it.
 */
static size_t next_wrapped_line(const char **p, size_t width)
{
	const char *start = *p, *end = start, *brk = NULL;

	while (*end && *end != '\n' && (size_t)(end - start) < width) {
		if (*end == ' ')
			brk = end;
		end++;
	}
	if (*end && *end != '\n' && brk && *end != ' ')
		end = brk;
	*p = end;
	if (**p == '\n')
		(*p)++;
	else
		while (**p == ' ')
			(*p)++;
	return (size_t)(end - start);
}

/* Words of @text on lines of at most @width characters; '\n' starts a new line. */
static void print_wrapped(FILE *out, const char *text, unsigned width)
{
	const char *p = text;

	while (*p) {
		const char *line = p;
		size_t len = next_wrapped_line(&p, width);

		fprintf(out, "%.*s\n", (int)len, line);
	}
}

/* Copy @s into @dst[0..@room), cut with "..." when longer. Return: characters written. */
static int put_cut(char *dst, int room, const char *s)
{
	int n = (int)strlen(s);

	if (room <= 0)
		return 0;
	if (n <= room) {
		memcpy(dst, s, (size_t)n);
		return n;
	}
	if (room <= 3) {
		memcpy(dst, s, (size_t)room);
		return room;
	}
	memcpy(dst, s, (size_t)(room - 3));
	memcpy(dst + room - 3, "...", 3);
	return room;
}

static char shaft_char(const struct inspect_ladder_row *r)
{
	if (r->marks & INSPECT_LADDER_RESEND)
		return '=';
	switch (r->kind) {
	case INSPECT_LADDER_NAK:
	case INSPECT_LADDER_RNR:
		return '~';
	case INSPECT_LADDER_SETUP:
	case INSPECT_LADDER_OTHER:
		return '.';
	default:
		return '-';
	}
}

/*
 * An arrow between canvas positions @x0 < @x1 (exclusive of the lifelines):
 * "-- LABEL ------>" or "<------ LABEL --" ... a LOST row stops half way with X.
 */
static void draw_arrow(char *c, int x0, int x1, bool rightward, const struct inspect_ladder_row *r,
		       const char *label)
{
	int len = x1 - x0 + 1, n;
	char *seg = c + x0;

	if (len < 2)
		return;
	if (r->kind == INSPECT_LADDER_LOST) {
		/* "-- LABEL --X" from the sender, or "X-- LABEL --" leftwards. */
		int lbl = (int)strlen(label) + 7, want = lbl > len / 2 ? lbl : len / 2, start;

		if (want > len)
			want = len;
		start = rightward ? 0 : len - want;
		memset(seg + start, '-', (size_t)want);
		seg[rightward ? want - 1 : start] = 'X';
		if (want < 9)
			return;
		start += rightward ? 3 : 4;
		n = put_cut(seg + start, want - 7, label);
		seg[start - 1] = seg[start + n] = ' ';
		return;
	}
	memset(seg, shaft_char(r), (size_t)len);
	seg[rightward ? len - 1 : 0] = rightward ? '>' : '<';
	if (len < 9)
		return;
	n = put_cut(seg + 3, len - 6, label);
	seg[2] = ' ';
	seg[3 + n] = ' ';
}

static void text_header(FILE *out, const struct inspect_ladder *l, const struct text_layout *t)
{
	char *line = malloc(t->width + 1), name[128];
	int ncols = (int)l->n_columns;

	if (!line)
		return;
	for (int pass = 0; pass < 2; pass++) {
		memset(line, ' ', t->width);
		line[t->width] = '\0';
		if (pass == 0) {
			int n = snprintf(line, t->width, "%*s %*s", t->fw, "frame", t->tw, "time");

			line[n] = ' ';
		}
		for (unsigned h = 0; h < l->n_hosts; h++) {
			const struct inspect_ladder_host *host = &l->hosts[h];
			int col = host->column, x, lo, hi, n;

			if (col < 0)
				continue;
			if (pass == 0)
				inspect_ladder_host_name(name, sizeof(name), host);
			else
				qp_list(name, sizeof(name), host);
			/* Each name keeps to its own part of the line, half way to its neighbours. */
			lo = col == 0 ? 0 : (t->pos[col - 1] + t->pos[col]) / 2 + 1;
			hi = col == ncols - 1 ? (int)t->canvas - 1 : (t->pos[col] + t->pos[col + 1]) / 2 - 1;
			n = (int)strlen(name);
			if (n > hi - lo + 1)
				n = hi - lo + 1;
			if (col == 0)
				x = t->pos[col];
			else if (col == ncols - 1)
				x = t->pos[col] - n + 1;
			else
				x = t->pos[col] - n / 2;
			if (x < lo)
				x = lo;
			if (x + n - 1 > hi)
				x = hi - n + 1;
			put_cut(line + t->gutter + x, n, name);
		}
		for (int e = (int)t->width - 1; e >= 0 && line[e] == ' '; e--)
			line[e] = '\0';
		fprintf(out, "%s\n", line);
	}
	free(line);
}

static void lifelines(char *c, const struct inspect_ladder *l, const struct text_layout *t)
{
	memset(c, ' ', t->canvas);
	for (unsigned i = 0; i < l->n_columns; i++)
		c[t->pos[i]] = '|';
}

static void print_canvas_line(FILE *out, const char *gutter, char *c, unsigned canvas)
{
	int end = (int)canvas;

	while (end > 0 && c[end - 1] == ' ')
		end--;
	fprintf(out, "%s%.*s\n", gutter, end, c);
}

static void text_row(FILE *out, const struct inspect_ladder *l, const struct text_layout *t,
		     const struct inspect_ladder_row *r, char *c, char *gutter)
{
	char label[LABEL_MAX], tm[32];
	int a = row_column(l, r->src), b = row_column(l, r->dst);

	inspect_ladder_label(label, sizeof(label), l, r);
	lifelines(c, l, t);
	if (r->kind == INSPECT_LADDER_LOST) {
		snprintf(gutter, t->gutter + 1, "%*s %*s  ", t->fw, "", t->tw, "");
	} else {
		time_text(tm, sizeof(tm), &r->ts);
		snprintf(gutter, t->gutter + 1, "%*" PRIu64 " %*s  ", t->fw, r->number, t->tw, tm);
	}
	if (a < 0) {
		put_cut(c, (int)t->canvas, label);
	} else if (b < 0 || a == b) {
		/* A broadcast, or a frame a host sends itself: a stub and the label. */
		int x = t->pos[a] + 1;

		x += put_cut(c + x, (int)t->canvas - x, b < 0 ? "-->* " : "<-' ");
		put_cut(c + x, (int)t->canvas - x, label);
	} else if (a < b) {
		draw_arrow(c, t->pos[a] + 1, t->pos[b] - 1, true, r, label);
	} else {
		draw_arrow(c, t->pos[b] + 1, t->pos[a] - 1, false, r, label);
	}
	print_canvas_line(out, gutter, c, t->canvas);
}

/* Too many hosts for the width: one line per packet, "SRC > DST: LABEL", after the gutter. */
static void text_list(FILE *out, const struct inspect_ladder *l, const struct text_layout *t,
		      char *gutter)
{
	char label[LABEL_MAX], src[INSPECT_LADDER_NAME_MAX + 64], dst[INSPECT_LADDER_NAME_MAX + 64];
	char tm[32], line[3 * LABEL_MAX];

	snprintf(line, sizeof(line), "%u hosts do not fit side by side in %u columns: each packet "
		 "is listed as SOURCE > DESTINATION (--width, or -n for fewer hosts)",
		 l->n_columns, t->width);
	print_wrapped(out, line, t->width);
	fprintf(out, "\n");
	for (size_t i = 0; i < l->n_rows; i++) {
		const struct inspect_ladder_row *r = &l->rows[i];

		if (!r->shown)
			continue;
		inspect_ladder_label(label, sizeof(label), l, r);
		inspect_ladder_host_name(src, sizeof(src), &l->hosts[r->src]);
		if (r->dst == INSPECT_LADDER_NO_HOST)
			snprintf(dst, sizeof(dst), "*");
		else
			inspect_ladder_host_name(dst, sizeof(dst), &l->hosts[r->dst]);
		if (r->kind == INSPECT_LADDER_LOST) {
			snprintf(gutter, t->gutter + 1, "%*s %*s  ", t->fw, "", t->tw, "");
		} else {
			time_text(tm, sizeof(tm), &r->ts);
			snprintf(gutter, t->gutter + 1, "%*" PRIu64 " %*s  ", t->fw, r->number, t->tw,
				 tm);
		}
		snprintf(line, sizeof(line), "%s%s > %s: %s", gutter, src, dst, label);
		fprintf(out, "%.*s\n", (int)t->width, line);
	}
}

void inspect_ladder_print_text(FILE *out, const struct inspect_ladder *l, unsigned width,
			    const char *title, const char *note)
{
	struct text_layout t;
	char tm[32], totals[512], *c, *gutter;
	uint64_t max_number = 0;
	int ncols = (int)l->n_columns;

	memset(&t, 0, sizeof(t));
	t.width = width < INSPECT_LADDER_MIN_WIDTH ? INSPECT_LADDER_MIN_WIDTH : width;
	t.tw = 4;
	for (size_t i = 0; i < l->n_rows; i++) {
		const struct inspect_ladder_row *r = &l->rows[i];
		int n;

		if (!r->shown)
			continue;
		if (r->number > max_number)
			max_number = r->number;
		time_text(tm, sizeof(tm), &r->ts);
		n = (int)strlen(tm);
		if (n > t.tw)
			t.tw = n;
	}
	t.fw = snprintf(tm, sizeof(tm), "%" PRIu64, max_number);
	if (t.fw < 5)
		t.fw = 5;
	t.gutter = (unsigned)(t.fw + 1 + t.tw + 2);
	t.canvas = t.width - t.gutter;
	t.pos = calloc(ncols ? (size_t)ncols : 1, sizeof(*t.pos));
	c = malloc(t.canvas + 1);
	gutter = malloc(t.gutter + 1);
	if (!t.pos || !c || !gutter)
		goto out_free;
	for (int i = 1; i < ncols; i++)
		t.pos[i] = (int)((t.canvas - 1) * (unsigned)i / (unsigned)(ncols - 1));

	if (title)
		print_wrapped(out, title, t.width);
	print_wrapped(out, "--> packet  ==> resent  ~~> NAK  --X lost before the capture point",
		      t.width);
	print_wrapped(out, "RC unless named UC or UD; time in seconds from the first frame", t.width);
	fprintf(out, "\n");
	if (!ncols) {
		fprintf(out, "(no frames to draw)\n");
	} else if (ncols > 1 && (t.canvas - 1) / (unsigned)(ncols - 1) < TEXT_MIN_SPAN) {
		text_list(out, l, &t, gutter);
	} else {
		text_header(out, l, &t);
		memset(gutter, ' ', t.gutter);
		gutter[t.gutter] = '\0';
		lifelines(c, l, &t);
		print_canvas_line(out, gutter, c, t.canvas);
		for (size_t i = 0; i < l->n_rows; i++)
			if (l->rows[i].shown)
				text_row(out, l, &t, &l->rows[i], c, gutter);
		memset(gutter, ' ', t.gutter);
		lifelines(c, l, &t);
		print_canvas_line(out, gutter, c, t.canvas);
	}
	fprintf(out, "\n");
	inspect_ladder_totals(totals, sizeof(totals), l);
	print_wrapped(out, totals, t.width);
	if (note)
		print_wrapped(out, note, t.width);
out_free:
	free(gutter);
	free(c);
	free(t.pos);
}

/* ---- SVG ---- */

#define SVG_CHAR_W	7.2	/* monospace 12px */
#define SVG_ROW_H	20
#define SVG_GUTTER	150
#define SVG_LINE_H	18
#define SVG_MARGIN	40

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':	fputs("&lt;", out); break;
		case '>':	fputs("&gt;", out); break;
		case '&':	fputs("&amp;", out); break;
		case '"':	fputs("&quot;", out); break;
		default:
			/* Control bytes are not allowed in XML 1.0; nothing we print has any. */
			if ((unsigned char)*s >= 0x20)
				fputc(*s, out);
		}
	}
}

static const char svg_style[] =
	"text{font-family:'DejaVu Sans Mono',Menlo,Consolas,monospace;font-size:12px}\n"
	".title{font-size:14px;font-weight:bold}\n"
	".host{font-size:13px;font-weight:bold;text-anchor:middle}\n"
	".qps{fill:#555;text-anchor:middle}\n"
	".life{stroke:#888;stroke-width:1;stroke-dasharray:4 3}\n"
	".box{fill:#f2f2f2;stroke:#888}\n"
	".t{fill:#777;text-anchor:end}\n"
	".pkt line,.pkt path{stroke-width:1.5;fill:none}\n"
	".pkt text{text-anchor:middle}\n"
	".request line,.request path{stroke:#1a1a1a}.request polygon,.request text{fill:#1a1a1a}\n"
	".resent line,.resent path{stroke:#d2691e;stroke-width:2.2}.resent polygon,.resent text{fill:#d2691e}\n"
	".response line,.response path{stroke:#1f5fbf}.response polygon,.response text{fill:#1f5fbf}\n"
	".ack line,.ack path{stroke:#2a7d2a}.ack polygon,.ack text{fill:#2a7d2a}\n"
	".nak line,.nak path{stroke:#c0161b;stroke-width:2.2}.nak polygon,.nak text{fill:#c0161b}\n"
	".rnr line,.rnr path{stroke:#8e2bb8;stroke-width:2.2}.rnr polygon,.rnr text{fill:#8e2bb8}\n"
	".cnp line,.cnp path{stroke:#008080}.cnp polygon,.cnp text{fill:#008080}\n"
	".bad line,.bad path{stroke:#c0161b;stroke-dasharray:2 2}.bad polygon,.bad text{fill:#c0161b}\n"
	".setup line,.setup path,.other line,.other path{stroke:#999;stroke-dasharray:5 3}\n"
	".setup polygon,.setup text,.other polygon,.other text{fill:#777}\n"
	".lost line{stroke:#c0161b;stroke-dasharray:6 4}.lost path{stroke:#c0161b;stroke-width:2.5}\n"
	".lost text{fill:#c0161b;font-style:italic}\n"
	".note{fill:#444}\n";

struct svg_layout {
	double	span;
	double	*x;		/* lifeline of each column */
	double	width, height;
	double	box_y;		/* top of the host boxes */
	double	rows_y;		/* first row */
	double	life_end;	/* where the lifelines stop */
	size_t	wrap;		/* characters per line of the title and notes */
};

/*
 * Lines of @text (split at '\n', words wrapped at @s->wrap characters) as
 * <text> elements from @y down, SVG_LINE_H apart; @out NULL only counts.
 * Return: the number of lines.
 */
static unsigned svg_lines(FILE *out, const struct svg_layout *s, const char *cls, double y,
			  const char *text)
{
	const char *p = text;
	unsigned n = 0;

	while (p && *p) {
		const char *start = p;
		size_t len = next_wrapped_line(&p, s->wrap);

		if (out) {
			char *line = strndup(start, len);

			fprintf(out, "<text class=\"%s\" x=\"%d\" y=\"%.0f\">", cls, SVG_MARGIN / 2,
				y + SVG_LINE_H * n);
			xml_text(out, line ? line : "");
			fprintf(out, "</text>\n");
			free(line);
		}
		n++;
	}
	return n;
}

/* The box with a host's name: the bold 13px text, at most the space between two lifelines. */
static double host_box_width(const char *name, const struct svg_layout *s)
{
	double w = (double)strlen(name) * 7.8 + 20;

	return w > s->span - 10 ? s->span - 10 : w;
}

static double svg_box_width(const struct inspect_ladder *l, const struct svg_layout *s)
{
	char name[128];
	double widest = 0, w;

	for (unsigned h = 0; h < l->n_hosts; h++) {
		if (l->hosts[h].column < 0)
			continue;
		inspect_ladder_host_name(name, sizeof(name), &l->hosts[h]);
		w = host_box_width(name, s);
		if (w > widest)
			widest = w;
	}
	return widest;
}

static const char svg_explain[] = "time: seconds from the first frame; RC unless named UC "
	"or UD; response: read response or atomic ACK; hover over an arrow to see its frame decoded";

static void svg_head(FILE *out, const struct inspect_ladder *l, const struct svg_layout *s,
		     const char *title)
{
	char name[128];
	double y = 24;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\">\n<style>\n%s</style>\n"
		"<rect x=\"0\" y=\"0\" width=\"%.0f\" height=\"%.0f\" fill=\"white\"/>\n",
		s->width, s->height, s->width, s->height, svg_style, s->width, s->height);
	if (title) {
		const char *nl = strchr(title, '\n');
		char *first = strndup(title, nl ? (size_t)(nl - title) : strlen(title));

		svg_lines(out, s, "title", y, first ? first : "");
		y += SVG_LINE_H;
		free(first);
		if (nl)
			y += SVG_LINE_H * svg_lines(out, s, "note", y, nl + 1);
	}
	svg_lines(out, s, "note", y, svg_explain);
	fprintf(out, "<text class=\"t\" x=\"60\" y=\"%.0f\">frame</text>"
		"<text class=\"t\" x=\"%d\" y=\"%.0f\">time</text>\n", s->rows_y - 20,
		SVG_GUTTER - 20, s->rows_y - 20);
	for (unsigned h = 0; h < l->n_hosts; h++) {
		const struct inspect_ladder_host *host = &l->hosts[h];
		double x, w;

		if (host->column < 0)
			continue;
		x = s->x[host->column];
		inspect_ladder_host_name(name, sizeof(name), host);
		w = host_box_width(name, s);
		fprintf(out, "<rect class=\"box\" x=\"%.1f\" y=\"%.0f\" width=\"%.1f\" height=\"38\" "
			"rx=\"4\"/>\n<text class=\"host\" x=\"%.1f\" y=\"%.0f\">", x - w / 2,
			s->box_y, w, x, s->box_y + 16);
		xml_text(out, name);
		qp_list(name, sizeof(name), host);
		fprintf(out, "</text>\n<text class=\"qps\" x=\"%.1f\" y=\"%.0f\">%s</text>\n", x,
			s->box_y + 32, name);
		fprintf(out, "<line class=\"life\" x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\"/>\n",
			x, s->box_y + 38, x, s->life_end);
	}
}

static void svg_head_arrow(FILE *out, double x, double y, bool rightward)
{
	double d = rightward ? -9 : 9;

	fprintf(out, "<polygon points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>", x, y, x + d, y - 4,
		x + d, y + 4);
}

static void svg_row(FILE *out, const struct inspect_ladder *l, const struct svg_layout *s,
		    const struct inspect_ladder_row *r, double y)
{
	char label[LABEL_MAX], tm[32];
	int a = row_column(l, r->src), b = row_column(l, r->dst);
	const char *cls = inspect_ladder_kind_name(r->kind);
	double xa, xb;

	inspect_ladder_label(label, sizeof(label), l, r);
	if (r->kind != INSPECT_LADDER_LOST) {
		time_text(tm, sizeof(tm), &r->ts);
		fprintf(out, "<text class=\"t\" x=\"60\" y=\"%.0f\">%" PRIu64 "</text>"
			"<text class=\"t\" x=\"%d\" y=\"%.0f\">%s</text>\n", y + 4, r->number,
			SVG_GUTTER - 20, y + 4, tm);
	}
	fprintf(out, "<g class=\"pkt %s%s%s\" data-frame=\"%" PRIu64 "\">", cls,
		(r->marks & INSPECT_LADDER_RESEND) ? " resent" : "",
		(r->marks & INSPECT_LADDER_REPEAT) ? " repeat" : "", r->number);
	if (r->line) {
		fprintf(out, "<title>frame %" PRIu64 ": ", r->number);
		xml_text(out, r->line);
		fprintf(out, "</title>");
	}
	xa = a < 0 ? SVG_GUTTER : s->x[a];
	if (a < 0 || b < 0 || a == b) {
		/* Broadcast: a stub; to itself: a loop. */
		if (b >= 0 && a == b)
			fprintf(out, "<path d=\"M%.1f,%.1f h24 v8 h-20\"/>", xa, y - 4);
		else
			fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", xa, y,
				xa + 30, y);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" style=\"text-anchor:start\">", xa + 36,
			y + 4);
	} else if (r->kind == INSPECT_LADDER_LOST) {
		/* A dashed line that stops half way (or past its label) at an X. */
		double dir, reach, end;

		xb = s->x[b];
		dir = xb > xa ? 1 : -1;
		reach = (xb - xa) * dir / 2;
		if (reach < (double)strlen(label) * SVG_CHAR_W + 24)
			reach = (double)strlen(label) * SVG_CHAR_W + 24;
		if (reach > (xb - xa) * dir - 12)
			reach = (xb - xa) * dir - 12;
		end = xa + dir * reach;
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
			"<path d=\"M%.1f,%.1f l10,10 m0,-10 l-10,10\"/>", xa, y, end, y, end - 5,
			y - 5);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" style=\"text-anchor:%s\">", xa + dir * 8,
			y - 4, dir > 0 ? "start" : "end");
	} else {
		xb = s->x[b];
		fprintf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", xa, y,
			xb + (xb > xa ? -8 : 8), y);
		svg_head_arrow(out, xb, y, xb > xa);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">", (xa + xb) / 2, y - 4);
	}
	xml_text(out, label);
	fprintf(out, "</text></g>\n");
}

void inspect_ladder_print_svg(FILE *out, const struct inspect_ladder *l, const char *title,
			   const char *note)
{
	static const char *const legend[][2] = {
		{ "request", "request" }, { "request resent", "resent" },
		{ "response", "response" }, { "ack", "ACK" },
		{ "nak", "NAK" }, { "rnr", "RNR NAK" }, { "lost", "lost" },
		{ "setup", "perftest TCP" },
	};
	struct svg_layout s;
	char label[LABEL_MAX], totals[512];
	size_t shown = 0, longest = 0;
	unsigned head_lines;
	double y, lx;

	memset(&s, 0, sizeof(s));
	for (size_t i = 0; i < l->n_rows; i++) {
		size_t n;

		if (!l->rows[i].shown)
			continue;
		shown++;
		n = inspect_ladder_label(label, sizeof(label), l, &l->rows[i]);
		if (n > longest)
			longest = n;
	}
	s.span = (double)longest * SVG_CHAR_W + 60;
	if (s.span < 320)
		s.span = 320;
	if (s.span > 1000)
		s.span = 1000;
	s.x = calloc(l->n_columns ? l->n_columns : 1, sizeof(*s.x));
	if (!s.x)
		return;
	for (unsigned i = 0; i < l->n_columns; i++)
		s.x[i] = SVG_GUTTER + 120 + s.span * i;
	s.width = SVG_GUTTER + 120 + s.span * (l->n_columns ? l->n_columns - 1 : 0) +
		  svg_box_width(l, &s) / 2 + SVG_MARGIN / 2;
	if (s.width < 760)
		s.width = 760;
	s.wrap = (size_t)((s.width - SVG_MARGIN) / SVG_CHAR_W);

	/* Top down: title and its lines, the explanation, host boxes, rows, notes, legend. */
	inspect_ladder_totals(totals, sizeof(totals), l);
	head_lines = svg_lines(NULL, &s, "note", 0, svg_explain);
	if (title) {
		const char *nl = strchr(title, '\n');

		head_lines += 1 + (nl ? svg_lines(NULL, &s, "note", 0, nl + 1) : 0);
	}
	s.box_y = 24 + SVG_LINE_H * (head_lines - 1) + 12;
	s.rows_y = s.box_y + 38 + 26;
	s.life_end = s.rows_y + SVG_ROW_H * (double)shown;
	s.height = s.life_end + 24 + SVG_LINE_H * (svg_lines(NULL, &s, "note", 0, totals) +
		   svg_lines(NULL, &s, "note", 0, note) + 1) + 20;

	svg_head(out, l, &s, title);
	y = s.rows_y;
	for (size_t i = 0; i < l->n_rows; i++) {
		if (!l->rows[i].shown)
			continue;
		svg_row(out, l, &s, &l->rows[i], y);
		y += SVG_ROW_H;
	}
	y = s.life_end + 24;
	y += SVG_LINE_H * svg_lines(out, &s, "note", y, totals);
	y += SVG_LINE_H * svg_lines(out, &s, "note", y, note);
	lx = SVG_MARGIN / 2;
	fprintf(out, "<g class=\"legend\">");
	for (size_t i = 0; i < sizeof(legend) / sizeof(legend[0]); i++) {
		fprintf(out, "<g class=\"%s\"><line x1=\"%.0f\" y1=\"%.0f\" x2=\"%.0f\" y2=\"%.0f\"/>"
			"<text x=\"%.0f\" y=\"%.0f\" style=\"text-anchor:start\">%s</text></g>",
			legend[i][0], lx, y + 2, lx + 24, y + 2, lx + 30, y + 6, legend[i][1]);
		lx += 44 + strlen(legend[i][1]) * SVG_CHAR_W;
	}
	fprintf(out, "</g>\n</svg>\n");
	free(s.x);
}
