/* SPDX-License-Identifier: MIT */
/* Loading the committed captures (pcap-fixtures/captures) into memory for the unit suites. */
#ifndef UROCE_TESTS_UNIT_CAPTURE_H
#define UROCE_TESTS_UNIT_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

struct test_frame {
	uint8_t		*data;		/* exactly len bytes, so ASan sees any overread */
	uint32_t	len;
	uint32_t	orig_len;
};

struct test_capture {
	struct test_frame *frames;
	size_t		n;
};

/* Directory of the committed captures: $UROCE_CAPTURES, else the source tree's. */
const char *test_captures_dir(void);

/* Loads pcap-fixtures/captures/@name; fails the running Check test if it cannot. */
void test_capture_load(const char *name, struct test_capture *c);
void test_capture_free(struct test_capture *c);

#endif
