// SPDX-License-Identifier: MIT
/* Every input of the CM fuzzer's corpus, replayed: each MAD counted under the reason the check gives. */
#include <check.h>

#include "suites.h"
#include "unit_corpus.h"

int fuzz_cm_one(const uint8_t *data, size_t size);

START_TEST(corpus_replays)
{
	/* Each input aborts on a miscount or a leak. */
	ck_assert_uint_ge(unit_corpus_replay(UROCE_CM_CORPUS, fuzz_cm_one), 6);
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
