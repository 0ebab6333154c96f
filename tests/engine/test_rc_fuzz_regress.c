// SPDX-License-Identifier: MIT
/* Every input of the responder fuzzer's corpus, replayed: no write outside granted memory. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "suites.h"

int fuzz_responder_one(const uint8_t *data, size_t size);

START_TEST(corpus_replays)
{
	DIR *d = opendir(UROCE_ENGINE_CORPUS);
	struct dirent *e;
	unsigned n = 0;

	ck_assert_msg(d, "cannot open %s", UROCE_ENGINE_CORPUS);
	while ((e = readdir(d))) {
		char path[4096];
		uint8_t *buf;
		FILE *f;
		long len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", UROCE_ENGINE_CORPUS, e->d_name);
		f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc((size_t)len + 1);
		ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		fuzz_responder_one(buf, (size_t)len);
		free(buf);
		n++;
	}
	closedir(d);
	ck_assert_uint_ge(n, 9);
}
END_TEST

Suite *rc_fuzz_regress_suite(void)
{
	Suite *s = suite_create("rc_fuzz_regress");
	TCase *tc = tcase_create("corpus");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, corpus_replays);
	suite_add_tcase(s, tc);
	return s;
}
