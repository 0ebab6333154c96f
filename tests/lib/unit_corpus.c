// SPDX-License-Identifier: MIT
#include "unit_corpus.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned unit_corpus_replay(const char *dir, int (*one)(const uint8_t *data, size_t size))
{
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	ck_assert_msg(d, "cannot open %s", dir);
	while ((e = readdir(d))) {
		char path[4096];
		uint8_t *buf;
		FILE *f;
		long len;

		if (e->d_name[0] == '.' || !strcmp(e->d_name, "README.md"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		f = fopen(path, "rb");
		ck_assert_msg(f != NULL, "cannot open %s", path);
		fseek(f, 0, SEEK_END);
		len = ftell(f);
		rewind(f);
		/* An exact-size copy, so any overread trips ASan. */
		buf = malloc(len ? (size_t)len : 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		one(buf, (size_t)len);
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}
