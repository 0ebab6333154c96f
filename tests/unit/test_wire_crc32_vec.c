// SPDX-License-Identifier: MIT
/* The AVX-512 CRC-32 path and wire_crc32_copy() against zlib and the table-driven reference. */
#include <check.h>
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
	}
	free(src);
	free(dst);
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
	suite_add_tcase(s, tc);
	return s;
}
