// SPDX-License-Identifier: MIT
/*
 * CRC-32 (IEEE 802.3, reflected) for the ICRC: slicing-by-8 everywhere, and
 * 128-bit folding with carry-less multiplication where the CPU has PCLMULQDQ
 * (Intel, "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ").
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "uroce/wire.h"
#include "wire_crc32_fold.h"
#include "wire_crc32_vec.h"

#define CRC32_POLY_REFLECTED 0xedb88320u

static uint32_t crc_table[8][256];

__attribute__((constructor)) static void crc_table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ CRC32_POLY_REFLECTED : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^
					  crc_table[0][crc_table[t - 1][i] & 0xff];
}

/* Raw state in, raw state out (no inversion). */
static uint32_t crc_slice8(uint32_t c, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
		len--;
	}
	while (len >= 8) {
		uint32_t lo, hi;

		memcpy(&lo, p, 4);
		memcpy(&hi, p + 4, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
		lo = __builtin_bswap32(lo);
		hi = __builtin_bswap32(hi);
#endif
		lo ^= c;
		c = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
		    crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^
		    crc_table[3][hi & 0xff] ^ crc_table[2][(hi >> 8) & 0xff] ^
		    crc_table[1][(hi >> 16) & 0xff] ^ crc_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
	return c;
}

uint32_t wire_crc32_portable(uint32_t crc, const void *buf, size_t len)
{
	return ~crc_slice8(~crc, buf, len);
}

#ifdef WIRE_CRC32_HAVE_CLMUL
/* Raw state; @len >= 64, a multiple of 16. */
WIRE_CLMUL_TARGET static uint32_t crc_clmul(uint32_t c, const uint8_t *p, size_t len)
{
	__m128i x1 = _mm_loadu_si128((const __m128i *)p);
	__m128i x2 = _mm_loadu_si128((const __m128i *)(p + 16));
	__m128i x3 = _mm_loadu_si128((const __m128i *)(p + 32));
	__m128i x4 = _mm_loadu_si128((const __m128i *)(p + 48));
	__m128i k;

	x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)c));
	p += 64;
	len -= 64;

	k = _mm_set_epi64x((long long)WIRE_CRC_K512_HI, (long long)WIRE_CRC_K512_LO);
	while (len >= 64) {
		x1 = wire_crc_fold128(x1, k, _mm_loadu_si128((const __m128i *)p));
		x2 = wire_crc_fold128(x2, k, _mm_loadu_si128((const __m128i *)(p + 16)));
		x3 = wire_crc_fold128(x3, k, _mm_loadu_si128((const __m128i *)(p + 32)));
		x4 = wire_crc_fold128(x4, k, _mm_loadu_si128((const __m128i *)(p + 48)));
		p += 64;
		len -= 64;
	}

	k = wire_crc_k128();
	x1 = wire_crc_fold128(x1, k, x2);
	x1 = wire_crc_fold128(x1, k, x3);
	x1 = wire_crc_fold128(x1, k, x4);
	while (len >= 16) {
		x1 = wire_crc_fold128(x1, k, _mm_loadu_si128((const __m128i *)p));
		p += 16;
		len -= 16;
	}
	return wire_crc_reduce128(x1);
}

/*
 * Raw state; 16 <= @len < 64, a multiple of 16: packet headers, one fold
 * per 16 bytes instead of a byte table walk.  With @ormask, each byte is
 * ORed with the mask's first (the ICRC's masked fields read as ones).
 */
WIRE_CLMUL_TARGET static uint32_t crc_clmul_short_or(uint32_t c, const uint8_t *p,
						     const uint8_t *ormask, size_t len)
{
	__m128i x1 = _mm_loadu_si128((const __m128i *)p), x2, m = _mm_setzero_si128();
	__m128i k = wire_crc_k128();

	if (ormask)
		m = _mm_loadu_si128((const __m128i *)ormask);
	x1 = _mm_xor_si128(_mm_or_si128(x1, m), _mm_cvtsi32_si128((int)c));
	for (p += 16, len -= 16; len >= 16; p += 16, len -= 16) {
		x2 = _mm_loadu_si128((const __m128i *)p);
		if (ormask) {
			ormask += 16;
			x2 = _mm_or_si128(x2, _mm_loadu_si128((const __m128i *)ormask));
		}
		x1 = wire_crc_fold128(x1, k, x2);
	}
	return wire_crc_reduce128(x1);
}

static int cpu_has_clmul(void)
{
	static int has = -1;

	if (has < 0)
		has = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
	return has;
}
#endif

uint32_t wire_crc32_fast(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

#ifdef WIRE_CRC32_HAVE_CLMUL
	if (len >= 16 && cpu_has_clmul()) {
		size_t bulk = len & ~(size_t)15;

		c = len >= 64 ? crc_clmul(c, p, bulk) : crc_clmul_short_or(c, p, NULL, bulk);
		p += bulk;
		len -= bulk;
	}
#endif
	return ~crc_slice8(c, p, len);
}

uint32_t wire_crc32_or_mask(uint32_t crc, const void *buf, const uint8_t *ormask, size_t len)
{
	const uint8_t *p = buf;
	uint32_t c = ~crc;

#ifdef WIRE_CRC32_HAVE_CLMUL
	if (len >= 16 && len < 64 && !(len & 15) && cpu_has_clmul())
		return ~crc_clmul_short_or(c, p, ormask, len);
#endif
	for (size_t i = 0; i < len; i++) {
		uint8_t b = p[i] | ormask[i];

		c = crc_slice8(c, &b, 1);
	}
	return ~c;
}

/* The AVX-512 path over the prefix it takes, the 128-bit path over the rest. */
static uint32_t crc_vec_whole(uint32_t crc, const void *buf, size_t len)
{
	size_t used;

	crc = wire_crc32_vec(crc, buf, len, &used);
	return wire_crc32_fast(crc, (const uint8_t *)buf + used, len - used);
}

static uint32_t copy_portable(uint32_t crc, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return wire_crc32_portable(crc, src, len);
}

static uint32_t copy_fast(uint32_t crc, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return wire_crc32_fast(crc, src, len);
}

static bool always(void)
{
	return true;
}

#ifdef WIRE_CRC32_HAVE_CLMUL
static bool clmul_usable(void)
{
	return cpu_has_clmul();
}
#endif

/*
 * The CRC-32 paths, best last: the first the CPU runs, from the end, serves
 * every wire_crc32() and wire_crc32_copy() (DPDK's rte_net_crc.c picks its
 * handlers the same way).  Each takes whole buffers of any length.
 */
struct crc32_path {
	const char	*name;
	bool		(*usable)(void);
	uint32_t	(*crc)(uint32_t crc, const void *buf, size_t len);
	uint32_t	(*crc_copy)(uint32_t crc, void *dst, const void *src, size_t len);
};

static const struct crc32_path crc32_paths[] = {
	{ "portable", always, wire_crc32_portable, copy_portable },
#ifdef WIRE_CRC32_HAVE_CLMUL
	{ "pclmul", clmul_usable, wire_crc32_fast, copy_fast },
#endif
	{ "vpclmulqdq", wire_crc32_vec_available, crc_vec_whole, wire_crc32_vec_copy },
};

static const struct crc32_path *crc32_path;

__attribute__((constructor)) static void crc32_path_select(void)
{
	__builtin_cpu_init();
	for (size_t i = sizeof(crc32_paths) / sizeof(crc32_paths[0]); i-- > 0;)
		if (crc32_paths[i].usable()) {
			crc32_path = &crc32_paths[i];
			return;
		}
}

/* The selected path; selected here if a constructor of someone else's asks before ours ran. */
static inline const struct crc32_path *path(void)
{
	if (__builtin_expect(!crc32_path, 0))
		crc32_path_select();
	return crc32_path;
}

uint32_t wire_crc32(uint32_t crc, const void *buf, size_t len)
{
	return path()->crc(crc, buf, len);
}

uint32_t wire_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	return path()->crc_copy(crc, dst, src, len);
}

const char *wire_crc32_impl(void)
{
	return path()->name;
}
