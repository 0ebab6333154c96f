/* SPDX-License-Identifier: MIT */
/* Private to wire/: the AVX-512 CRC-32 path, one of those wire_crc32.c dispatches to. */
#ifndef UROCE_WIRE_CRC32_VEC_H
#define UROCE_WIRE_CRC32_VEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WIRE_CRC32_VEC_MIN 256
#define WIRE_PAYLOAD_COPY_VEC_MIN 512

bool wire_crc32_vec_available(void);
/*
 * Continue @crc over a prefix of @buf (a multiple of 16 bytes, at least
 * 256) and say how long in *used; *used is 0 when the CPU lacks the path.
 */
uint32_t wire_crc32_vec(uint32_t crc, const void *buf, size_t len, size_t *used);
/* wire_crc32_copy() on this path: the prefix it takes copied while summed, the rest after. */
uint32_t wire_crc32_vec_copy(uint32_t crc, void *dst, const void *src, size_t len);

/*
 * Continue @crc over @head_len bytes of @head ORed with @ormask (16, 32 or
 * 48), then over a prefix of @rest (a multiple of 16, at least 256; *used
 * says how long) without reducing in between, copying that prefix to @dst
 * when @dst is set.  *used is 0 and @crc is returned unchanged when the CPU
 * lacks the path or @rest is too short.
 */
uint32_t wire_crc32_vec_head(uint32_t crc, const void *head, const uint8_t *ormask, size_t head_len,
			     const void *rest, void *dst, size_t rest_len, size_t *used);

/*
 * CRC-32 of @len bytes of @buf, each ORed with the same byte of @ormask: the
 * ICRC's masked header fields without a scratch copy.  @len: a multiple of
 * 16 below 64 takes the carry-less multiply path, any other is byte-wise.
 */
uint32_t wire_crc32_or_mask(uint32_t crc, const void *buf, const uint8_t *ormask, size_t len);

#endif
