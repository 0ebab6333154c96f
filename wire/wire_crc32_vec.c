// SPDX-License-Identifier: MIT
/*
 * CRC-32 with 512-bit carry-less multiplication (VPCLMULQDQ, AVX-512):
 * four 64-byte accumulators fold 256 bytes per step, then the 128-bit
 * folding and reduction shared with wire_crc32.c (wire_crc32_fold.h).
 * Also a variant that copies what it reads, so a sender gets the ICRC of a
 * payload for the cost of the copy.
 */
#include <string.h>

#include "uroce/wire.h"
#include "wire_crc32_fold.h"
#include "wire_crc32_vec.h"

#if defined(__x86_64__) && defined(__GNUC__)

#define VEC_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul,sse4.1")))

/* Constants of the 2048-bit (256-byte) fold; the narrower ones are in wire_crc32_fold.h. */
#define K2048_LO	0x11542778aull
#define K2048_HI	0x1322d1430ull

VEC_TARGET static inline __m512i fold512(__m512i acc, __m512i k, __m512i next)
{
	__m512i lo = _mm512_clmulepi64_epi128(acc, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(acc, k, 0x11);

	return _mm512_ternarylogic_epi64(lo, hi, next, 0x96);	/* lo ^ hi ^ next */
}

VEC_TARGET static inline __m512i load64(const uint8_t *src, uint8_t *dst)
{
	__m512i v = _mm512_loadu_si512((const void *)src);

	if (dst)
		_mm512_storeu_si512((void *)dst, v);
	return v;
}

/*
 * Raw CRC state in and out (no inversion).  Consumes a multiple of 16 bytes
 * (at least 256) and says how many in *used; copies them when @dst is set.
 */
VEC_TARGET static uint32_t crc_vec(uint32_t c, const uint8_t *src, uint8_t *dst, size_t len,
				   size_t *used)
{
	const uint8_t *start = src;
	__m512i z0, z1, z2, z3, k;
	__m128i x, x1, x2, x3, x4, kx;

	z0 = load64(src, dst);
	z1 = load64(src + 64, dst ? dst + 64 : NULL);
	z2 = load64(src + 128, dst ? dst + 128 : NULL);
	z3 = load64(src + 192, dst ? dst + 192 : NULL);
	z0 = _mm512_xor_si512(z0, _mm512_castsi128_si512(_mm_cvtsi32_si128((int)c)));
	src += 256;
	len -= 256;
	if (dst)
		dst += 256;

	k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)K2048_HI, (long long)K2048_LO));
	while (len >= 256) {
		z0 = fold512(z0, k, load64(src, dst));
		z1 = fold512(z1, k, load64(src + 64, dst ? dst + 64 : NULL));
		z2 = fold512(z2, k, load64(src + 128, dst ? dst + 128 : NULL));
		z3 = fold512(z3, k, load64(src + 192, dst ? dst + 192 : NULL));
		src += 256;
		len -= 256;
		if (dst)
			dst += 256;
	}

	k = _mm512_broadcast_i32x4(_mm_set_epi64x((long long)WIRE_CRC_K512_HI,
						  (long long)WIRE_CRC_K512_LO));
	z0 = fold512(z0, k, z1);
	z0 = fold512(z0, k, z2);
	z0 = fold512(z0, k, z3);
	while (len >= 64) {
		z0 = fold512(z0, k, load64(src, dst));
		src += 64;
		len -= 64;
		if (dst)
			dst += 64;
	}

	/* The four lanes are four consecutive 16-byte states: fold them into one. */
	x1 = _mm512_extracti32x4_epi32(z0, 0);
	x2 = _mm512_extracti32x4_epi32(z0, 1);
	x3 = _mm512_extracti32x4_epi32(z0, 2);
	x4 = _mm512_extracti32x4_epi32(z0, 3);
	kx = wire_crc_k128();
	x1 = wire_crc_fold128(x1, kx, x2);
	x1 = wire_crc_fold128(x1, kx, x3);
	x1 = wire_crc_fold128(x1, kx, x4);
	while (len >= 16) {
		x = _mm_loadu_si128((const __m128i *)(const void *)src);
		if (dst) {
			_mm_storeu_si128((__m128i *)(void *)dst, x);
			dst += 16;
		}
		x1 = wire_crc_fold128(x1, kx, x);
		src += 16;
		len -= 16;
	}

	*used = (size_t)(src - start);
	return wire_crc_reduce128(x1);
}

static int cpu_has_vec(void)
{
	static int has = -1;

	if (has < 0)
		has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
		      __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul");
	return has;
}

bool wire_crc32_vec_available(void)
{
	return cpu_has_vec();
}

uint32_t wire_crc32_vec(uint32_t crc, const void *buf, size_t len, size_t *used)
{
	*used = 0;
	if (len < WIRE_CRC32_VEC_MIN || !cpu_has_vec())
		return crc;
	return ~crc_vec(~crc, buf, NULL, len, used);
}

uint32_t wire_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	size_t used = 0;

	if (len >= WIRE_CRC32_VEC_MIN && cpu_has_vec())
		crc = ~crc_vec(~crc, src, dst, len, &used);
	if (used < len) {
		memcpy((uint8_t *)dst + used, (const uint8_t *)src + used, len - used);
		crc = wire_crc32(crc, (const uint8_t *)src + used, len - used);
	}
	return crc;
}

#else

bool wire_crc32_vec_available(void)
{
	return false;
}

uint32_t wire_crc32_vec(uint32_t crc, const void *buf, size_t len, size_t *used)
{
	(void)buf;
	(void)len;
	*used = 0;
	return crc;
}

uint32_t wire_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return wire_crc32(crc, src, len);
}

#endif
