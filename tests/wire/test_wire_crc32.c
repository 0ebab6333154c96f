// SPDX-License-Identifier: MIT
/* CRC-32: the PCLMULQDQ path, the portable path and zlib's crc32() agree everywhere. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "uroce/wire.h"
#include "wire_testutil.h"

#define MAX_LEN 9216
#define ALIGNMENTS 16

static uint8_t *buf;

static void setup(void)
{
	struct test_rng r;

	buf = malloc(MAX_LEN + ALIGNMENTS);
	ck_assert_ptr_nonnull(buf);
	test_rng_seed(&r, 0xc4c32);
	test_rng_fill(&r, buf, MAX_LEN + ALIGNMENTS);
}

static void teardown(void)
{
	free(buf);
	buf = NULL;
}

static uint32_t zlib_crc(uint32_t crc, const uint8_t *p, size_t len)
{
	return (uint32_t)crc32(crc, p, (uInt)len);
}

/* The CRC-32 catalogue's check value: CRC of "123456789". */
START_TEST(check_value)
{
	const char *s = "123456789";

	ck_assert_uint_eq(wire_crc32_portable(0, s, 9), 0xcbf43926);
	ck_assert_uint_eq(wire_crc32_fast(0, s, 9), 0xcbf43926);
	ck_assert_uint_eq(wire_crc32(0, s, 9), 0xcbf43926);
	ck_assert_uint_eq(zlib_crc(0, (const uint8_t *)s, 9), 0xcbf43926);
	ck_assert_uint_eq(wire_crc32(0, s, 0), 0);
}
END_TEST

/* Loop over start alignments: every length 0..1100, and lengths up to 9216 in steps. */
START_TEST(all_lengths)
{
	const uint8_t *p = buf + _i;

	for (uint32_t len = 0; len <= MAX_LEN; len += len < 1100 ? 1 : 61) {
		uint32_t z = zlib_crc(0, p, len);

		ck_assert_msg(wire_crc32_portable(0, p, len) == z, "portable, len %u align %d", len, _i);
		ck_assert_msg(wire_crc32_fast(0, p, len) == z, "fast, len %u align %d", len, _i);
	}
}
END_TEST

/* Feeding chunks continues the CRC exactly as zlib does. */
START_TEST(chaining)
{
	struct test_rng r;

	test_rng_seed(&r, 77);
	for (int k = 0; k < 2000; k++) {
		uint32_t len = test_rng_below(&r, MAX_LEN + 1);
		uint32_t cut = test_rng_below(&r, len + 1);
		uint32_t z = zlib_crc(0, buf, len);
		uint32_t f = wire_crc32_fast(wire_crc32_fast(0, buf, cut), buf + cut, len - cut);
		uint32_t s = wire_crc32_portable(wire_crc32_portable(0, buf, cut), buf + cut, len - cut);

		ck_assert_msg(f == z && s == z, "len %u cut %u", len, cut);
		/* A running value that did not start at 0. */
		ck_assert_uint_eq(wire_crc32_fast(0x12345678, buf, len), zlib_crc(0x12345678, buf, len));
	}
}
END_TEST

/* Patterns that catch folding mistakes: all zero, all ones, a single set bit anywhere. */
START_TEST(patterns)
{
	static uint8_t p[4096];

	memset(p, 0, sizeof(p));
	ck_assert_uint_eq(wire_crc32_fast(0, p, sizeof(p)), zlib_crc(0, p, sizeof(p)));
	memset(p, 0xff, sizeof(p));
	ck_assert_uint_eq(wire_crc32_fast(0, p, sizeof(p)), zlib_crc(0, p, sizeof(p)));
	memset(p, 0, sizeof(p));
	for (uint32_t bit = 0; bit < 8 * 256; bit++) {
		p[bit / 8] = (uint8_t)(1u << (bit % 8));
		ck_assert_uint_eq(wire_crc32_fast(0, p, 256), zlib_crc(0, p, 256));
		p[bit / 8] = 0;
	}
}
END_TEST

START_TEST(dispatch)
{
	const char *impl = wire_crc32_impl();

	ck_assert(!strcmp(impl, "vpclmulqdq") || !strcmp(impl, "pclmul") ||
		  !strcmp(impl, "portable"));
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("vpclmulqdq") &&
	    __builtin_cpu_supports("pclmul"))
		ck_assert_str_eq(impl, "vpclmulqdq");
	else if (__builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1"))
		ck_assert_str_eq(impl, "pclmul");
#endif
}
END_TEST

Suite *wire_crc32_suite(void);

Suite *wire_crc32_suite(void)
{
	Suite *s = suite_create("wire_crc32");
	TCase *t = tcase_create("crc32");

	tcase_add_checked_fixture(t, setup, teardown);
	tcase_set_timeout(t, 120);
	tcase_add_test(t, check_value);
	tcase_add_loop_test(t, all_lengths, 0, ALIGNMENTS);
	tcase_add_test(t, chaining);
	tcase_add_test(t, patterns);
	tcase_add_test(t, dispatch);
	suite_add_tcase(s, t);
	return s;
}
