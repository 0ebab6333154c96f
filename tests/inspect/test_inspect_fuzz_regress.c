// SPDX-License-Identifier: MIT
/* The fuzz targets' properties, replayed on the seed corpus and on every crash ever found. */
#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_checks.h"

/* Runs both fuzz checks on every file of @dir; returns how many files there were. */
static unsigned replay_dir(const char *dir)
{
	struct dirent *e;
	unsigned n = 0;
	DIR *d = opendir(dir);

	ck_assert_msg(d != NULL, "cannot open %s", dir);
	while ((e = readdir(d))) {
		char path[1024];
		uint8_t *buf;
		long size;
		FILE *f;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "cannot open %s", path);
		fseek(f, 0, SEEK_END);
		size = ftell(f);
		rewind(f);
		/* An exact-size copy, so any overread trips ASan. */
		buf = malloc(size ? (size_t)size : 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_uint_eq(fread(buf, 1, (size_t)size, f), (size_t)size);
		fclose(f);
		fuzz_check_parse(buf, (size_t)size);
		fuzz_check_roundtrip(buf, (size_t)size);
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(seed_corpus)
{
	ck_assert_uint_gt(replay_dir(UROCE_FUZZ_DIR "/corpus"), 20);
}
END_TEST

START_TEST(regressions)
{
	ck_assert_uint_gt(replay_dir(UROCE_FUZZ_DIR "/regressions"), 0);
}
END_TEST

Suite *inspect_fuzz_regress_suite(void);

Suite *inspect_fuzz_regress_suite(void)
{
	Suite *s = suite_create("inspect_fuzz_regress");
	TCase *t = tcase_create("replay");

	tcase_set_timeout(t, 60);
	tcase_add_test(t, seed_corpus);
	tcase_add_test(t, regressions);
	suite_add_tcase(s, t);
	return s;
}
