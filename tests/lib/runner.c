// SPDX-License-Identifier: MIT
/* The Check runner of one test folder: `uroce-unit-FOLDER [SUITE...]`, all its suites when none is named. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_SUITE(name) Suite *name##_suite(void);
#include "suites.def"
#undef UNIT_SUITE

static const struct {
	const char *name;
	Suite *(*make)(void);
} suites[] = {
#define UNIT_SUITE(name) { #name, name##_suite },
#include "suites.def"
#undef UNIT_SUITE
};

#define N_SUITES (sizeof(suites) / sizeof(suites[0]))

int main(int argc, char **argv)
{
	SRunner *sr = NULL;
	int failed, selected = 0;

	for (size_t i = 0; i < N_SUITES; i++) {
		bool want = argc < 2;

		for (int a = 1; a < argc; a++)
			want |= strcmp(argv[a], suites[i].name) == 0;
		if (!want)
			continue;
		if (!sr)
			sr = srunner_create(suites[i].make());
		else
			srunner_add_suite(sr, suites[i].make());
		selected++;
	}
	if (!selected) {
		fprintf(stderr, "%s: no such suite; known:", argv[0]);
		for (size_t i = 0; i < N_SUITES; i++)
			fprintf(stderr, " %s", suites[i].name);
		fprintf(stderr, "\n");
		return 2;
	}
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
