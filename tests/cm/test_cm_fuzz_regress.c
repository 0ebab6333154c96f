// SPDX-License-Identifier: MIT
/* Every input of the CM fuzzer's corpus, replayed: each MAD counted under the reason the check gives. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "suites.h"

int fuzz_cm_one(const uint8_t *data, size_t size);

START_TEST(corpus_replays)
{
	DIR *d = opendir(UROCE_CM_CORPUS);
	struct dirent *e;
	unsigned n = 0;

	ck_assert_msg(d, "cannot open %s", UROCE_CM_CORPUS);
	while ((e = readdir(d))) {
		char path[4096];
		uint8_t *buf;
		FILE *f;
		long len;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", UROCE_CM_CORPUS, e->d_name);
		f = fopen(path, "rb");
		ck_assert_ptr_nonnull(f);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		buf = malloc((size_t)len + 1);
		ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		fuzz_cm_one(buf, (size_t)len);	/* aborts on a miscount or a leak */
		free(buf);
		n++;
	}
	closedir(d);
	ck_assert_uint_ge(n, 6);
}
END_TEST

Suite *cm_fuzz_regress_suite(void)
{
	Suite *s = suite_create("cm_fuzz_regress");
	TCase *tc = tcase_create("corpus");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, corpus_replays);
	suite_add_tcase(s, tc);
	return s;
}
