/* SPDX-License-Identifier: MIT */
/* Replaying a fuzz target's committed corpus in a unit suite. */
#ifndef UROCE_TESTS_UNIT_CORPUS_H
#define UROCE_TESTS_UNIT_CORPUS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Each file of @dir (but dot files and a README.md) through @one, in a copy
 * of exactly its size, so ASan sees any overread; @one aborts on a failed
 * property.  Check assertions fail on a file that cannot be read.
 * Return: the number of files replayed.
 */
unsigned unit_corpus_replay(const char *dir, int (*one)(const uint8_t *data, size_t size));

#endif
