// SPDX-License-Identifier: MIT
/* The long soak: `uroce-engine-soak [--seeds N] [--first S] [--loss P] [--reorder P] ... [--zero-copy] [--xrc] [--atomic-write] [--odp]`. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_soak.h"

static void usage(void)
{
	fprintf(stderr, "usage: uroce-engine-soak [--seeds N] [--first SEED] [--loss P] [--burst N] "
			"[--reorder P] [--dup P] [--corrupt P] [--ce-mark P] [--ops N] [--pairs N] "
			"[--depth N] [--max-msg BYTES] [--inflight PSNS] [--zero-copy] [--dcqcn] [--xrc] [--selective-repeat] [--atomic-write] [--odp]\n"
			"  P is a probability per frame and direction; --burst N: each loss takes "
			"N frames in a row\n");
	exit(2);
}

static bool probability(double p)
{
	return p >= 0 && p < 1;
}

int main(int argc, char **argv)
{
	unsigned long long seeds = 100, first = 1;
	struct soak_cfg base;
	unsigned failed = 0, exhausted = 0;

	soak_defaults(&base, 0);
	for (int i = 1; i < argc; i += 2) {
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(argv[i], "--zero-copy") || !strcmp(argv[i], "--dcqcn")) {
			*(argv[i][2] == 'z' ? &base.zero_copy : &base.dcqcn) = true;
			i--;
			continue;
		}
		if (!strcmp(argv[i], "--xrc") || !strcmp(argv[i], "--selective-repeat")) {
			*(argv[i][2] == 'x' ? &base.xrc : &base.selective_repeat) = true;
			i--;
			continue;
		}
		if (!strcmp(argv[i], "--atomic-write") || !strcmp(argv[i], "--odp")) {
			*(argv[i][2] == 'a' ? &base.atomic_write : &base.odp) = true;
			i--;
			continue;
		}
		if (!v)
			usage();
		if (!strcmp(argv[i], "--seeds"))
			seeds = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--first"))
			first = strtoull(v, NULL, 0);
		else if (!strcmp(argv[i], "--loss"))
			base.loss = strtod(v, NULL);
		else if (!strcmp(argv[i], "--burst"))
			base.burst = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--reorder"))
			base.reorder = strtod(v, NULL);
		else if (!strcmp(argv[i], "--dup"))
			base.dup = strtod(v, NULL);
		else if (!strcmp(argv[i], "--corrupt"))
			base.corrupt = strtod(v, NULL);
		else if (!strcmp(argv[i], "--ce-mark"))
			base.ce_mark = strtod(v, NULL);
		else if (!strcmp(argv[i], "--ops"))
			base.ops = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--pairs"))
			base.pairs = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--depth"))
			base.depth = (unsigned)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--max-msg"))
			base.max_msg = (uint32_t)strtoul(v, NULL, 0);
		else if (!strcmp(argv[i], "--inflight"))
			base.inflight = (uint32_t)strtoul(v, NULL, 0);
		else
			usage();
	}
	if (!base.depth || !base.ops || !base.max_msg || !probability(base.loss) ||
	    !probability(base.reorder) || !probability(base.dup) || !probability(base.corrupt) ||
	    !probability(base.ce_mark) || base.burst > 1000)
		usage();
	for (unsigned long long s = first; s < first + seeds; s++) {
		struct soak_cfg c = base;
		struct soak_result r;

		c.seed = s;
		soak_run(&c, &r);
		printf("seed %llu: %s ops %llu flushed %llu bytes %llu retransmits %llu timeouts %llu "
		       "lost %llu corrupted %llu digest %016llx frames %llu cnps %llu cuts %llu "
		       "virtual_us %llu snaks %llu sresends %llu placed %llu early %llu probes %llu "
		       "seq_naks %llu rnr_naks %llu stale %llu inflight_waits %llu%s%s\n", s,
		       r.ok ? "ok" : "FAILED",
		       (unsigned long long)r.ops_done, (unsigned long long)r.ops_flushed,
		       (unsigned long long)r.bytes,
		       (unsigned long long)r.retransmits, (unsigned long long)r.timeouts,
		       (unsigned long long)r.lost, (unsigned long long)r.corrupted,
		       (unsigned long long)r.digest, (unsigned long long)r.frames,
		       (unsigned long long)r.cnps_rx, (unsigned long long)r.rate_cuts,
		       (unsigned long long)(r.virtual_ns / 1000), (unsigned long long)r.selective_naks,
		       (unsigned long long)r.selective_resends, (unsigned long long)r.selective_placed,
		       (unsigned long long)r.early_retransmits, (unsigned long long)r.tail_probes,
		       (unsigned long long)r.seq_naks, (unsigned long long)r.rnr_naks,
		       (unsigned long long)r.stale_naks, (unsigned long long)r.inflight_waits,
		       r.ok ? "" : ": ", r.error);
		fflush(stdout);
		failed += !r.ok;
		exhausted += r.pairs_retry_exhausted;
	}
	printf("%llu seeds, %u failed, %u QPs ended in IBV_WC_RETRY_EXC_ERR\n", seeds, failed,
	       exhausted);
	return failed ? 1 : 0;
}
