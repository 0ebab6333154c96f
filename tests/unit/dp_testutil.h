/* SPDX-License-Identifier: MIT */
/* Helpers for the dataplane's unit tests: a private run directory per test. */
#ifndef UROCE_TESTS_DP_TESTUTIL_H
#define UROCE_TESTS_DP_TESTUTIL_H

/* mkdtemp()s a directory, points UROCE_RUN_DIR at it; returns its path. */
const char *dp_test_run_dir(void);
/* rm -r of that directory. */
void dp_test_run_dir_remove(void);

#endif
