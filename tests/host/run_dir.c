// SPDX-License-Identifier: MIT
/* A throw-away UROCE_RUN_DIR for each test that touches the run directory. */
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run_dir.h"

static char run_dir[64];

const char *test_run_dir(void)
{
	snprintf(run_dir, sizeof(run_dir), "/tmp/uroce-unit-XXXXXX");
	if (!mkdtemp(run_dir))
		abort();
	setenv("UROCE_RUN_DIR", run_dir, 1);
	return run_dir;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void test_run_dir_remove(void)
{
	if (run_dir[0])
		nftw(run_dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
	run_dir[0] = '\0';
	unsetenv("UROCE_RUN_DIR");
}
