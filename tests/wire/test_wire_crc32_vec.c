// SPDX-License-Identifier: MIT
/* The AVX-512 CRC-32 path, wire_crc32_copy() and wire_payload_copy() against zlib and memcpy(). */
#include <check.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "uroce/wire.h"
#include "suites.h"

static uint64_t rng = 88172645463325252ull;

static uint32_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)rng;
}

/* Random lengths around every boundary of the vector path (16, 64, 256 bytes). */
START_TEST(crc_matches_reference)
{
	enum { MAX = 20000 };
	uint8_t *src = malloc(MAX + 64), *dst = malloc(MAX + 64);

	for (size_t i = 0; i < MAX + 64; i++)
		src[i] = (uint8_t)next_rand();
	for (int iter = 0; iter < 3000; iter++) {
		size_t len = iter < 600 ? (size_t)iter : next_rand() % MAX;
		size_t off = next_rand() % 64;
		uint32_t seed = iter & 1 ? next_rand() : 0;
		uint32_t want = (uint32_t)crc32(seed, src + off, (uInt)len);

		ck_assert_uint_eq(wire_crc32_portable(seed, src + off, len), want);

		ck_assert_uint_eq(wire_crc32(seed, src + off, len), want);
		memset(dst, 0, MAX + 64);
		ck_assert_uint_eq(wire_crc32_copy(seed, dst + (off ^ 5), src + off, len), want);
		ck_assert_int_eq(memcmp(dst + (off ^ 5), src + off, len), 0);
		ck_assert_uint_eq(dst[(off ^ 5) + len], 0);
		if (off ^ 5)
			ck_assert_uint_eq(dst[(off ^ 5) - 1], 0);
	}
	free(src);
	free(dst);
}
END_TEST

/*
 * Every source and destination alignment, lengths around each boundary of
 * the vector loop (the head to the next line, 64, 256, the masked tail):
 * the bytes arrive, and not one byte around them is touched.
 */
START_TEST(payload_copy_is_memcpy)
{
	enum { GUARD = 128, MAX = 3072, SIZE = MAX + 3 * GUARD };	/* a multiple of 64 */
	static const size_t lens[] = { 0, 1, 15, 63, 64, 65, 127, 255, 256, 257, 511, 512, 513,
				       1000, 1024, 2047, 2048, 2999 };
	uint8_t *src = aligned_alloc(64, SIZE), *dst = aligned_alloc(64, SIZE);
	uint8_t *want = aligned_alloc(64, SIZE);

	for (size_t i = 0; i < SIZE; i++)
		src[i] = (uint8_t)next_rand();
	for (size_t so = 0; so < 64; so += 3)
		for (size_t dof = 0; dof < 64; dof++)
			for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++) {
				size_t len = lens[k];

				memset(dst, 0xa5, SIZE);
				memset(want, 0xa5, SIZE);
				memcpy(want + GUARD + dof, src + GUARD + so, len);
				wire_payload_copy(dst + GUARD + dof, src + GUARD + so, len);
				ck_assert_msg(memcmp(dst, want, SIZE) == 0,
					      "source offset %zu, destination offset %zu, length %zu",
					      so, dof, len);
			}
	free(src);
	free(dst);
	free(want);
}
END_TEST

/* The CRC-32 check value (IEEE 802.3): "123456789" -> 0xcbf43926, and chaining. */
START_TEST(crc_check_value_and_chaining)
{
	static const char digits[] = "123456789";
	uint8_t big[1000];
	uint32_t whole, parts;

	ck_assert_uint_eq(wire_crc32(0, digits, 9), 0xcbf43926u);
	for (int i = 0; i < 1000; i++)
		big[i] = (uint8_t)(i * 13);
	whole = wire_crc32(0, big, 1000);
	parts = wire_crc32(wire_crc32(0, big, 300), big + 300, 700);
	ck_assert_uint_eq(whole, parts);
	ck_assert_ptr_nonnull(wire_crc32_impl());
}
END_TEST

Suite *wire_crc32_vec_suite(void)
{
	Suite *s = suite_create("wire_crc32_vec");
	TCase *tc = tcase_create("crc");

	tcase_add_test(tc, crc_matches_reference);
	tcase_add_test(tc, crc_check_value_and_chaining);
	tcase_add_test(tc, payload_copy_is_memcpy);
	suite_add_tcase(s, tc);
	return s;
}
