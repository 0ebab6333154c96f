// SPDX-License-Identifier: MIT
/*
 * CRC-32 with 512-bit carry-less multiplication (VPCLMULQDQ, AVX-512):
 * four 64-byte accumulators fold 256 bytes per step, then the 128-bit
 * folding and reduction shared with wire_crc32.c (wire_crc32_fold.h).
 * Also a variant that copies what it reads, so a sender gets the ICRC of a
 * payload for the cost of the copy.
 */
#include <immintrin.h>
#include <string.h>

#include "uroce/wire.h"
#include "wire_crc32_fold.h"
#include "wire_crc32_vec.h"

#if defined(__x86_64__) && defined(__GNUC__)

#define VEC_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,vpclmulqdq,pclmul,sse4.1,bmi2")))

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
 * @init: what the first 16 bytes are XORed with: the 32-bit state in the
 * low lane, or an unreduced 128-bit state of data before @src.
 */
VEC_TARGET static uint32_t crc_vec128(__m128i init, const uint8_t *src, uint8_t *dst, size_t len,
				      size_t *used)
{
	const uint8_t *start = src;
	__m512i z0, z1, z2, z3, k;
	__m128i x, x1, x2, x3, x4, kx;

	z0 = load64(src, dst);
	z1 = load64(src + 64, dst ? dst + 64 : NULL);
	z2 = load64(src + 128, dst ? dst + 128 : NULL);
	z3 = load64(src + 192, dst ? dst + 192 : NULL);
	z0 = _mm512_xor_si512(z0, _mm512_zextsi128_si512(init));
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

VEC_TARGET static uint32_t crc_vec(uint32_t c, const uint8_t *src, uint8_t *dst, size_t len,
				   size_t *used)
{
	return crc_vec128(_mm_cvtsi32_si128((int)c), src, dst, len, used);
}

/*
 * @head (a multiple of 16 bytes, 16..48) ORed with @ormask, folded into an
 * unreduced 128-bit state that goes straight on into @rest: no reduction
 * to 32 bits in between, one dependency chain shorter per packet.  @rest
 * is copied to @dst on the way when @dst is set.
 */
VEC_TARGET static uint32_t crc_vec_head(uint32_t c, const uint8_t *head, const uint8_t *ormask,
					size_t head_len, const uint8_t *rest, uint8_t *dst,
					size_t rest_len, size_t *used)
{
	__m128i k = wire_crc_k128();
	__m128i x1 = _mm_or_si128(_mm_loadu_si128((const __m128i *)(const void *)head),
				  _mm_loadu_si128((const __m128i *)(const void *)ormask));

	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
	for (size_t i = 16; i < head_len; i += 16) {
		__m128i next = _mm_or_si128(
			_mm_loadu_si128((const __m128i *)(const void *)(head + i)),
			_mm_loadu_si128((const __m128i *)(const void *)(ormask + i)));

		x1 = wire_crc_fold128(x1, k, next);
	}
	/* Moved forward over 16 bytes: what the first 16 bytes of @rest are XORed with. */
	x1 = _mm_xor_si128(_mm_clmulepi64_si128(x1, k, 0x00), _mm_clmulepi64_si128(x1, k, 0x11));
	return crc_vec128(x1, rest, dst, rest_len, used);
}

static int cpu_has_vec(void)
{
	static int has = -1;

	if (has < 0)
		has = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
		      __builtin_cpu_supports("avx512bw") &&
		      __builtin_cpu_supports("vpclmulqdq") && __builtin_cpu_supports("pclmul") &&
		      __builtin_cpu_supports("bmi2");
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

uint32_t wire_crc32_vec_head(uint32_t crc, const void *head, const uint8_t *ormask, size_t head_len,
			     const void *rest, void *dst, size_t rest_len, size_t *used)
{
	*used = 0;
	if (rest_len < WIRE_CRC32_VEC_MIN || head_len < 16 || head_len > 48 || head_len % 16 ||
	    !cpu_has_vec())
		return crc;
	return ~crc_vec_head(~crc, head, ormask, head_len, rest, dst, rest_len, used);
}

uint32_t wire_crc32_vec_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	size_t used = 0;

	if (len >= WIRE_CRC32_VEC_MIN && cpu_has_vec())
		crc = ~crc_vec(~crc, src, dst, len, &used);
	if (used < len) {
		memcpy((uint8_t *)dst + used, (const uint8_t *)src + used, len - used);
		crc = wire_crc32_fast(crc, (const uint8_t *)src + used, len - used);
	}
	return crc;
}

/* 64-byte vector moves, in ascending order; the ends by masked moves (no byte outside is touched). */
VEC_TARGET static void copy_vec(uint8_t *dst, const uint8_t *src, size_t len)
{
	size_t head = -(uintptr_t)dst & 63;

	if (head) {
		__mmask64 m = _bzhi_u64(~0ull, (unsigned)(head < len ? head : len));

		_mm512_mask_storeu_epi8(dst, m, _mm512_maskz_loadu_epi8(m, src));
		if (head >= len)
			return;
		dst += head;
		src += head;
		len -= head;
	}
	for (; len >= 256; len -= 256, src += 256, dst += 256) {
		__m512i a = _mm512_loadu_si512((const void *)src);
		__m512i b = _mm512_loadu_si512((const void *)(src + 64));
		__m512i c = _mm512_loadu_si512((const void *)(src + 128));
		__m512i e = _mm512_loadu_si512((const void *)(src + 192));

		_mm512_store_si512((void *)dst, a);
		_mm512_store_si512((void *)(dst + 64), b);
		_mm512_store_si512((void *)(dst + 128), c);
		_mm512_store_si512((void *)(dst + 192), e);
	}
	for (; len >= 64; len -= 64, src += 64, dst += 64)
		_mm512_store_si512((void *)dst, _mm512_loadu_si512((const void *)src));
	if (len) {
		__mmask64 m = _bzhi_u64(~0ull, (unsigned)len);

		_mm512_mask_storeu_epi8(dst, m, _mm512_maskz_loadu_epi8(m, src));
	}
}

void wire_payload_copy(void *dst, const void *src, size_t len)
{
	if (len >= WIRE_PAYLOAD_COPY_VEC_MIN && cpu_has_vec())
		copy_vec(dst, src, len);
	else
		memcpy(dst, src, len);
}

#else

bool wire_crc32_vec_available(void)
{
	return false;
}

uint32_t wire_crc32_vec_head(uint32_t crc, const void *head, const uint8_t *ormask, size_t head_len,
			     const void *rest, void *dst, size_t rest_len, size_t *used)
{
	(void)head;
	(void)ormask;
	(void)head_len;
	(void)rest;
	(void)dst;
	(void)rest_len;
	*used = 0;
	return crc;
}

uint32_t wire_crc32_vec(uint32_t crc, const void *buf, size_t len, size_t *used)
{
	(void)buf;
	(void)len;
	*used = 0;
	return crc;
}

uint32_t wire_crc32_vec_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return wire_crc32_fast(crc, src, len);
}

void wire_payload_copy(void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
}

#endif
