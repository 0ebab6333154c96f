// SPDX-License-Identifier: MIT
/* uroce loss IFACE RATE [requests]|pass|off|show: random loss of the RoCE frames a netdev receives. */
#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "uroce/host.h"

/* "1%", "0.5%", "0.01" (a fraction), "5000ppm" -> parts per million. */
static int parse_rate(const char *s, uint32_t *ppm)
{
	char *end;
	double v = strtod(s, &end);

	if (end == s || v < 0)
		return -EINVAL;
	if (!strcmp(end, "%"))
		v *= 10000;
	else if (!strcmp(end, "ppm"))
		;
	else if (*end == '\0' && v <= 1)
		v *= 1000000;
	else
		return -EINVAL;
	if (v > 1000000)
		return -EINVAL;
	*ppm = (uint32_t)(v + 0.5);
	return 0;
}

static int loss_usage(void)
{
	fprintf(stderr, "usage: uroce loss IFACE RATE [requests]|pass|off|show   (RATE: 1%%, "
		"0.01, 500ppm; requests: never an ACK, NAK or read or atomic response; "
		"pass: attached, dropping nothing)\n");
	return 2;
}

int cmd_loss(int argc, char **argv)
{
	bool requests_only = argc == 4 && !strcmp(argv[3], "requests");
	struct host_loss loss;
	char err[512];
	uint32_t ppm = 0;
	bool is_rate;
	int ret;

	if (argc != 3 && !requests_only)
		return loss_usage();
	is_rate = !parse_rate(argv[2], &ppm);
	if (requests_only && !is_rate) {
		fprintf(stderr, "uroce loss: 'requests' goes after a RATE, not after '%s'\n", argv[2]);
		return 2;
	}
	if (!strcmp(argv[2], "show")) {
		ret = host_loss_get(argv[1], &loss);
		if (ret == -ENOENT) {
			printf("%s: no loss injection\n", argv[1]);
			return 0;
		}
		if (ret) {
			fprintf(stderr, "uroce loss: %s: %s\n", argv[1], strerror(-ret));
			return 1;
		}
		printf("%s: rate %.4f%%%s%s roce_frames %" PRIu64 " dropped %" PRIu64 "\n", argv[1],
		       loss.ppm / 10000.0, loss.requests_only ? " (requests)" : "",
		       loss.pass ? " (pass)" : "", loss.seen, loss.dropped);
		return 0;
	}
	if (!is_rate && strcmp(argv[2], "off") && strcmp(argv[2], "pass")) {
		fprintf(stderr, "uroce loss: '%s' is not a rate (1%%, 0.01 or 500ppm)\n", argv[2]);
		return 2;
	}
	if (!strcmp(argv[2], "off"))
		ret = host_loss_clear(argv[1], err, sizeof(err));
	else if (!strcmp(argv[2], "pass"))
		ret = host_loss_pass(argv[1], err, sizeof(err));
	else
		ret = host_loss_set(argv[1], ppm, requests_only, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "uroce loss: %s\n", err);
		return 1;
	}
	return 0;
}
