// SPDX-License-Identifier: MIT
/* Every input of the responder fuzzer's corpus, replayed: no write outside granted memory. */
#include <check.h>

#include "suites.h"
#include "unit_corpus.h"

int fuzz_responder_one(const uint8_t *data, size_t size);

START_TEST(corpus_replays)
{
	ck_assert_uint_ge(unit_corpus_replay(UROCE_ENGINE_CORPUS, fuzz_responder_one), 9);
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
