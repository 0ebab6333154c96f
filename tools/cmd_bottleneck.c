// SPDX-License-Identifier: MIT
/* uroce bottleneck IFACE MBIT [...]|off|show: a rate-limited, ECN-marking link on a netdev (tests). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "uroce/host.h"

/* Defaults: DCQCN's (Zhu et al., SIGCOMM 2015) Kmin 5 KB, Kmax 200 KB, Pmax 1 %; 1 MB of buffer. */
#define DEFAULT_BUFFER	1000000
#define DEFAULT_KMIN	5000
#define DEFAULT_KMAX	200000
#define DEFAULT_PMAX	10000

static void usage(FILE *out)
{
	fprintf(out,
		"usage: uroce bottleneck IFACE MBIT [buffer BYTES] [mark KMIN KMAX PMAX%%|nomark]\n"
		"       uroce bottleneck IFACE off|show\n"
		"  RoCE frames the netdev receives fill a virtual queue drained at MBIT Mbit/s; a frame\n"
		"  that does not fit in BYTES (%u) is dropped; past KMIN bytes (%u) a frame is marked\n"
		"  ECN CE with a probability rising to PMAX (1%%) at KMAX (%u), certain beyond, and\n"
		"  dropped instead when it is not ECN-capable (as RED/WRED on a switch port).\n",
		DEFAULT_BUFFER, DEFAULT_KMIN, DEFAULT_KMAX);
}

static int parse_u32(const char *s, uint32_t *v)
{
	char *end;
	unsigned long x = strtoul(s, &end, 10);

	if (end == s || *end || x > UINT32_MAX)
		return -EINVAL;
	*v = (uint32_t)x;
	return 0;
}

static int parse_pct(const char *s, uint32_t *ppm)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || strcmp(end, "%") || v < 0 || v > 100)
		return -EINVAL;
	*ppm = (uint32_t)(v * 10000 + 0.5);
	return 0;
}

static int parse(int argc, char **argv, struct host_bottleneck *b)
{
	*b = (struct host_bottleneck){ .buffer = DEFAULT_BUFFER, .kmin = DEFAULT_KMIN,
				       .kmax = DEFAULT_KMAX, .pmax_ppm = DEFAULT_PMAX };
	if (parse_u32(argv[2], &b->rate_mbps) || !b->rate_mbps)
		return -EINVAL;
	for (int i = 3; i < argc; i++) {
		if (!strcmp(argv[i], "buffer") && i + 1 < argc) {
			if (parse_u32(argv[++i], &b->buffer))
				return -EINVAL;
		} else if (!strcmp(argv[i], "mark") && i + 3 < argc) {
			if (parse_u32(argv[i + 1], &b->kmin) || parse_u32(argv[i + 2], &b->kmax) ||
			    parse_pct(argv[i + 3], &b->pmax_ppm))
				return -EINVAL;
			i += 3;
		} else if (!strcmp(argv[i], "nomark")) {
			b->kmin = b->kmax = UINT32_MAX;
		} else {
			return -EINVAL;
		}
	}
	if (b->kmin == UINT32_MAX)
		b->kmin = b->kmax = b->buffer;
	return 0;
}

int cmd_bottleneck(int argc, char **argv)
{
	struct host_bottleneck b;
	char err[512];
	int ret;

	if (argc < 3) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[2], "show") && argc == 3) {
		ret = host_bottleneck_get(argv[1], &b);
		if (ret == -ENOENT) {
			printf("%s: no bottleneck\n", argv[1]);
			return 0;
		}
		if (ret) {
			fprintf(stderr, "uroce bottleneck: %s: %s\n", argv[1], strerror(-ret));
			return 1;
		}
		printf("%s: rate %u Mbit/s buffer %u mark %u %u %.2f%% queue %" PRIu64
		       " passed_bytes %" PRIu64 " marked %" PRIu64 " early_drops %" PRIu64
		       " queue_drops %" PRIu64 "\n", argv[1], b.rate_mbps, b.buffer, b.kmin, b.kmax,
		       b.pmax_ppm / 10000.0, b.queue, b.passed_bytes, b.marked, b.early_drops,
		       b.queue_drops);
		return 0;
	}
	if (!strcmp(argv[2], "off") && argc == 3) {
		memset(&b, 0, sizeof(b));
	} else if (parse(argc, argv, &b)) {
		usage(stderr);
		return 2;
	}
	ret = host_bottleneck_set(argv[1], &b, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "uroce bottleneck: %s\n", err);
		return 1;
	}
	return 0;
}
