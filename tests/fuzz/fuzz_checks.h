/* SPDX-License-Identifier: MIT */
/* What the fuzz targets assert, shared with the unit suite that replays their corpus. */
#ifndef UROCE_TESTS_FUZZ_CHECKS_H
#define UROCE_TESTS_FUZZ_CHECKS_H

#include <stddef.h>
#include <stdint.h>

/*
 * Parse @data under every flag combination and decode it in every output
 * mode: no crash, no read outside @data, and the verdicts agree with each
 * other.  Aborts with a message on stderr when a property fails.
 */
void fuzz_check_parse(const uint8_t *data, size_t len);

/*
 * If @data parses (ICRC and IP checksum not checked), rebuild it from its
 * view: the new frame must pass every check and parse to the same view.
 */
void fuzz_check_roundtrip(const uint8_t *data, size_t len);

#endif
