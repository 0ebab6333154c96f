// SPDX-License-Identifier: MIT
/* Loading the committed captures (pcap-fixtures/captures) into memory for the unit suites. */
#include <check.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "unit_capture.h"

const char *test_captures_dir(void)
{
	const char *dir = getenv("UROCE_CAPTURES");

	return dir && *dir ? dir : UROCE_CAPTURES_DIR;
}

void test_capture_load(const char *name, struct test_capture *c)
{
	char path[1024], errbuf[PCAP_ERRBUF_SIZE];
	struct pcap_pkthdr *h;
	const u_char *data;
	size_t cap = 0;
	pcap_t *pc;
	int rc;

	snprintf(path, sizeof(path), "%s/%s", test_captures_dir(), name);
	pc = pcap_open_offline(path, errbuf);
	ck_assert_msg(pc != NULL, "cannot open %s: %s", path, errbuf);
	memset(c, 0, sizeof(*c));
	while ((rc = pcap_next_ex(pc, &h, &data)) == 1) {
		struct test_frame *f;

		if (c->n == cap) {
			cap = cap ? 2 * cap : 256;
			c->frames = realloc(c->frames, cap * sizeof(*c->frames));
			ck_assert_ptr_nonnull(c->frames);
		}
		f = &c->frames[c->n++];
		f->len = h->caplen;
		f->orig_len = h->len;
		f->data = malloc(h->caplen ? h->caplen : 1);
		ck_assert_ptr_nonnull(f->data);
		memcpy(f->data, data, h->caplen);
	}
	ck_assert_msg(rc == PCAP_ERROR_BREAK, "%s: %s", path, pcap_geterr(pc));
	pcap_close(pc);
}

void test_capture_free(struct test_capture *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->frames[i].data);
	free(c->frames);
	memset(c, 0, sizeof(*c));
}
