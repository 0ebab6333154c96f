// SPDX-License-Identifier: MIT
/* The fuzz targets' properties, replayed on the seed corpus and on every crash ever found. */
#include <check.h>

#include "fuzz_checks.h"
#include "unit_corpus.h"

/* Both fuzz checks on one input. */
static int check_both(const uint8_t *data, size_t size)
{
	fuzz_check_parse(data, size);
	fuzz_check_roundtrip(data, size);
	return 0;
}

START_TEST(seed_corpus)
{
	ck_assert_uint_gt(unit_corpus_replay(UROCE_FUZZ_DIR "/corpus", check_both), 20);
}
END_TEST

START_TEST(regressions)
{
	ck_assert_uint_gt(unit_corpus_replay(UROCE_FUZZ_DIR "/regressions", check_both), 0);
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
