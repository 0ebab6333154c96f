/* SPDX-License-Identifier: MIT */
/* Private to wire/: the 128-bit carry-less folding step and final reduction both CRC-32 fast paths share. */
#ifndef UROCE_WIRE_CRC32_FOLD_H
#define UROCE_WIRE_CRC32_FOLD_H

#if defined(__x86_64__) || defined(__i386__)
#define WIRE_CRC32_HAVE_CLMUL 1

#include <immintrin.h>
#include <stdint.h>

/* The instructions the 128-bit path needs; the 512-bit one adds to them. */
#define WIRE_CLMUL_TARGET __attribute__((target("pclmul,sse4.1")))

/*
 * x^n mod P for the reflected polynomial 0x104c11db7, bit-reflected and
 * shifted left by one (Intel, "Fast CRC Computation for Generic Polynomials
 * Using PCLMULQDQ"): folds of 512 bits (x^(4*128+32), x^(4*128-32)), of
 * 128 bits (x^(128+32), x^(128-32)), x^64, and P' with the Barrett
 * constant u'.
 */
#define WIRE_CRC_K512_LO	0x154442bd4ull
#define WIRE_CRC_K512_HI	0x1c6e41596ull
#define WIRE_CRC_K128_LO	0x1751997d0ull
#define WIRE_CRC_K128_HI	0x0ccaa009eull
#define WIRE_CRC_K64		0x163cd6124ull
#define WIRE_CRC_P_PRIME	0x1db710641ull
#define WIRE_CRC_U_PRIME	0x1f7011641ull

/* One folding step: @acc carried over the distance @k encodes, plus the next 16 bytes. */
WIRE_CLMUL_TARGET static inline __m128i wire_crc_fold128(__m128i acc, __m128i k, __m128i next)
{
	__m128i lo = _mm_clmulepi64_si128(acc, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(acc, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), next);
}

/* The 128-bit fold constants as wire_crc_fold128() takes them. */
WIRE_CLMUL_TARGET static inline __m128i wire_crc_k128(void)
{
	return _mm_set_epi64x((long long)WIRE_CRC_K128_HI, (long long)WIRE_CRC_K128_LO);
}

/* The raw CRC state (no inversion) of the 128-bit remainder @x. */
WIRE_CLMUL_TARGET static inline uint32_t wire_crc_reduce128(__m128i x)
{
	const __m128i mask32 = _mm_set_epi32(0, 0, 0, -1);
	__m128i k, t;

	/* 128 -> 64 bits, appending 32 zero bits. */
	t = _mm_clmulepi64_si128(x, wire_crc_k128(), 0x10);
	x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
	/* 64 -> 32 bits. */
	t = _mm_srli_si128(x, 4);
	x = _mm_and_si128(x, mask32);
	x = _mm_clmulepi64_si128(x, _mm_set_epi64x(0, (long long)WIRE_CRC_K64), 0x00);
	x = _mm_xor_si128(x, t);
	/* Barrett reduction to the 32-bit remainder. */
	k = _mm_set_epi64x((long long)WIRE_CRC_U_PRIME, (long long)WIRE_CRC_P_PRIME);
	t = x;
	x = _mm_and_si128(x, mask32);
	x = _mm_clmulepi64_si128(x, k, 0x10);
	x = _mm_and_si128(x, mask32);
	x = _mm_clmulepi64_si128(x, k, 0x00);
	x = _mm_xor_si128(x, t);
	return (uint32_t)_mm_extract_epi32(x, 1);
}

#endif

#endif
