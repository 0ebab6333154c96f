/* SPDX-License-Identifier: MIT */
/* Helpers for the dataplane's unit tests: a private run directory per test. */
#ifndef UROCE_TESTS_RUN_DIR_H
#define UROCE_TESTS_RUN_DIR_H

/* mkdtemp()s a directory, points UROCE_RUN_DIR at it; returns its path. */
const char *test_run_dir(void);
/* rm -r of that directory. */
void test_run_dir_remove(void);

#endif
