// SPDX-License-Identifier: MIT
/* `uroce replay FIXTURE...`: run conformance fixtures through the transport engine. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "replay.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: uroce replay [--dpdk] [--keep DIR] FIXTURE...\n"
		"  Runs each fixture (pcap-fixtures/*/NAME.fixture, format in docs/conformance.md)\n"
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
	unsigned passed = 0, failed = 0, broken = 0;
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
		int r = replay_fixture(argv[i], &o);

		if (r > 0)
			passed++;
		else if (r == 0)
			failed++;
		else
			broken++;
		fflush(stdout);
	}
	printf("%u passed, %u failed, %u could not run (%s)\n", passed, failed, broken,
	       o.backend == RP_DPDK ? "DPDK pcap PMD" : "pcap port");
	return broken ? 2 : failed ? 1 : 0;
}
