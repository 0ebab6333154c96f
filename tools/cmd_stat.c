// SPDX-License-Identifier: MIT
/* uroce stat [-a] [-j] [DEVICE]: counters of every running uroce device, per process and per QP. */
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "commands.h"
#include "host_stats.h"

struct stat_opts {
	bool		all, json;
	const char	*device;
	unsigned	shown;
};

static void print_text(const struct stat_opts *o, const struct host_stats_view *v)
{
	const struct host_stats_hdr *h = v->hdr;
	const uint64_t *dev = host_stats_dev_values(v);
	struct timespec ts;
	unsigned col = 0;

	clock_gettime(CLOCK_REALTIME, &ts);
	printf("%s pid %d %s:%s up %.1fs (updated %.1fs ago)\n", h->ibdev, h->pid, h->pmd,
	       h->netdev, (h->updated_ns - h->started_ns) / 1e9,
	       ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec - h->updated_ns) / 1e9);
	for (unsigned i = 0; i < h->n_dev; i++) {
		if (!dev[i] && !o->all)
			continue;
		printf("%s%-24s %14" PRIu64, col % 2 ? "   " : "    ", host_stats_name(v, i), dev[i]);
		if (++col % 2 == 0)
			printf("\n");
	}
	if (col % 2)
		printf("\n");
	for (unsigned q = 0; q < h->n_qp_slots; q++) {
		const struct host_stats_qp_slot *s = host_stats_qp_view(v, q);

		if (!s->live)
			continue;
		printf("  qp 0x%06x:", s->qpn);
		for (unsigned i = 0; i < h->n_qp; i++)
			if (s->v[i] || o->all)
				printf(" %s=%" PRIu64, host_stats_name(v, h->n_dev + i), s->v[i]);
		printf("\n");
	}
}

static void print_json(struct stat_opts *o, const struct host_stats_view *v)
{
	const struct host_stats_hdr *h = v->hdr;
	const uint64_t *dev = host_stats_dev_values(v);
	bool first = true;

	printf("%s{\"device\":\"%s\",\"pid\":%d,\"pmd\":\"%s\",\"netdev\":\"%s\","
	       "\"updated_ns\":%" PRIu64 ",\"counters\":{",
	       o->shown ? "," : "", h->ibdev, h->pid, h->pmd, h->netdev, h->updated_ns);
	for (unsigned i = 0; i < h->n_dev; i++)
		printf("%s\"%s\":%" PRIu64, i ? "," : "", host_stats_name(v, i), dev[i]);
	printf("},\"qps\":[");
	for (unsigned q = 0; q < h->n_qp_slots; q++) {
		const struct host_stats_qp_slot *s = host_stats_qp_view(v, q);

		if (!s->live)
			continue;
		printf("%s{\"qpn\":%u", first ? "" : ",", s->qpn);
		for (unsigned i = 0; i < h->n_qp; i++)
			printf(",\"%s\":%" PRIu64, host_stats_name(v, h->n_dev + i), s->v[i]);
		printf("}");
		first = false;
	}
	printf("]}");
}

static int show(void *arg, const struct host_stats_view *v)
{
	struct stat_opts *o = arg;

	if (o->device && strcmp(o->device, v->hdr->ibdev))
		return 0;
	if (o->json)
		print_json(o, v);
	else
		print_text(o, v);
	o->shown++;
	return 0;
}

static void stat_usage(FILE *out)
{
	fprintf(out, "usage: uroce stat [-a] [-j] [DEVICE]\n"
		"  Counters of the uroce devices of running processes (in this network namespace's\n"
		"  run directory), refreshed every 100 ms: port, neighbours, engine, and per QP.\n"
		"  -a  every counter, also those that are zero\n"
		"  -j  JSON\n");
}

int cmd_stat(int argc, char **argv)
{
	struct stat_opts o = { 0 };
	int c, ret;

	optind = 1;
	opterr = 0;
	while ((c = getopt(argc, argv, "ajh")) != -1) {
		if (c == 'a') {
			o.all = true;
		} else if (c == 'j') {
			o.json = true;
		} else if (c == 'h') {
			stat_usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "uroce stat: unknown option -%c\n", optopt);
			stat_usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		o.device = argv[optind];
	if (o.json)
		printf("[");
	ret = host_stats_read_all(show, &o, true);
	if (o.json)
		printf("]\n");
	if (ret < 0) {
		fprintf(stderr, "uroce stat: cannot read the counters: %s\n", strerror(-ret));
		return 1;
	}
	if (!o.shown && !o.json)
		printf("no running uroce device%s%s\n", o.device ? " named " : "",
		       o.device ? o.device : "");
	return 0;
}
