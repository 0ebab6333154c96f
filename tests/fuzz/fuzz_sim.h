/* SPDX-License-Identifier: MIT */
/* What the fuzz targets on the simulated link share: the input reader and the link's set-up. */
#ifndef UROCE_TESTS_FUZZ_SIM_H
#define UROCE_TESTS_FUZZ_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The fuzzer's input, read little-endian; past its end every read is 0. */
struct fuzz_in {
	const uint8_t	*p;
	size_t		n;
};

static inline uint8_t fuzz_u8(struct fuzz_in *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

static inline uint16_t fuzz_u16(struct fuzz_in *in)
{
	return (uint16_t)(fuzz_u8(in) | fuzz_u8(in) << 8);
}

static inline uint32_t fuzz_u32(struct fuzz_in *in)
{
	return (uint32_t)fuzz_u16(in) | (uint32_t)fuzz_u16(in) << 16;
}

static inline uint64_t fuzz_u64(struct fuzz_in *in)
{
	return (uint64_t)fuzz_u32(in) | (uint64_t)fuzz_u32(in) << 32;
}

/* port_sim filter: what the engine under test sends is dropped (nobody listens on side 1). */
static inline bool fuzz_drop_replies(void *arg, int from, const uint8_t *frame, uint32_t len)
{
	(void)arg;
	(void)frame;
	(void)len;
	return from == 1;
}

/* The IPv4-mapped GID of side 0 or 1: ::ffff:10.0.0.(side + 1). */
static inline void fuzz_gid_of(int side, uint8_t gid[16])
{
	memset(gid, 0, 16);
	gid[10] = gid[11] = 0xff;
	gid[12] = 10;
	gid[15] = (uint8_t)(side + 1);
}

#endif
