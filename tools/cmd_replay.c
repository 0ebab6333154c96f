// SPDX-License-Identifier: MIT
/* `uroce replay FIXTURE...`: run conformance fixtures through the transport engine. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "replay.h"

struct tally {
	unsigned	passed, failed, broken;
};

static void run_one(const char *path, const struct rp_options *o, struct tally *t)
{
	int r = replay_fixture(path, o);

	if (r > 0)
		t->passed++;
	else if (r == 0)
		t->failed++;
	else
		t->broken++;
	fflush(o->out);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int is_fixture(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 8 && !strcmp(d->d_name + n - 8, ".fixture");
}

/* Every NAME.fixture of a directory, in name order; none at all is an error. */
static void run_dir(const char *dir, const struct rp_options *o, struct tally *t)
{
	struct dirent **list;
	int n = scandir(dir, &list, is_fixture, by_name);

	if (n <= 0) {
		fprintf(stderr, "uroce replay: %s: %s\n", dir, n < 0 ? strerror(errno) : "no *.fixture files");
		t->broken++;
		return;
	}
	for (int i = 0; i < n; i++) {
		char path[4096];

		snprintf(path, sizeof(path), "%s/%s", dir, list[i]->d_name);
		run_one(path, o, t);
		free(list[i]);
	}
	free(list);
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: uroce replay [--dpdk] [--keep DIR] FIXTURE|DIR...\n"
		"  Runs each fixture (NAME.fixture, or every one in DIR; format in docs/conformance.md)\n"
		"  and prints PASS or FAIL; a failure shows the first differing packet decoded,\n"
		"  the differing memory bytes, completions, counters and QP states.\n"
		"  --dpdk      through the DPDK dataplane with the pcap PMD instead of the pcap port\n"
		"  --keep DIR  write what uroce sent to DIR/NAME.sent.pcap\n"
		"Exit status: 0 all passed, 1 some failed, 2 some could not run.\n");
}

int cmd_replay(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "dpdk", no_argument, NULL, 'd' },
		{ "keep", required_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct rp_options o = { .backend = RP_PCAP_PORT, .out = stdout };
	struct tally t = { 0 };
	int c;

	while ((c = getopt_long(argc, argv, "dk:h", opts, NULL)) != -1) {
		switch (c) {
		case 'd':
			o.backend = RP_DPDK;
			break;
		case 'k':
			o.keep_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind == argc) {
		usage(stderr);
		return 2;
	}
	for (int i = optind; i < argc; i++) {
		struct stat st;

		if (!stat(argv[i], &st) && S_ISDIR(st.st_mode))
			run_dir(argv[i], &o, &t);
		else
			run_one(argv[i], &o, &t);
	}
	printf("%u passed, %u failed, %u could not run (%s)\n", t.passed, t.failed, t.broken,
	       o.backend == RP_DPDK ? "DPDK pcap PMD" : "pcap port");
	return t.broken ? 2 : t.failed ? 1 : 0;
}
