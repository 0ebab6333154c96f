// SPDX-License-Identifier: MIT
/* A small u32 -> pointer map for memory keys and QP numbers: linear probing, backward-shift delete. */
#include <errno.h>
#include <stdlib.h>

#include "rc_internal.h"

#define RC_HASH_MIN_CAP 64

static inline uint32_t slot_of(uint32_t key, uint32_t cap)
{
	/* Keys may be chosen by a peer (QPNs, forged rkeys): mix before masking. */
	uint32_t h = key * 0x9e3779b1u;

	return (h ^ (h >> 16)) & (cap - 1);
}

void *rc_hash_get(const struct rc_hash *h, uint32_t key)
{
	if (!h->cap)
		return NULL;
	for (uint32_t i = slot_of(key, h->cap);; i = (i + 1) & (h->cap - 1)) {
		const struct rc_hash_ent *e = &h->ent[i];

		if (!e->val)
			return NULL;
		if (e->key == key)
			return e->val;
	}
}

static void insert(struct rc_hash_ent *tab, uint32_t cap, uint32_t key, void *val)
{
	uint32_t i = slot_of(key, cap);

	while (tab[i].val)
		i = (i + 1) & (cap - 1);
	tab[i].key = key;
	tab[i].val = val;
}

static int grow(struct rc_hash *h)
{
	uint32_t cap = h->cap ? h->cap * 2 : RC_HASH_MIN_CAP;
	struct rc_hash_ent *tab = calloc(cap, sizeof(*tab));

	if (!tab)
		return -ENOMEM;
	for (uint32_t i = 0; i < h->cap; i++)
		if (h->ent[i].val)
			insert(tab, cap, h->ent[i].key, h->ent[i].val);
	free(h->ent);
	h->ent = tab;
	h->cap = cap;
	return 0;
}

/* Return: 0, -EEXIST when @key is present, -ENOMEM. */
int rc_hash_put(struct rc_hash *h, uint32_t key, void *val)
{
	if (rc_hash_get(h, key))
		return -EEXIST;
	if ((h->n + 1) * 2 > h->cap) {
		int ret = grow(h);

		if (ret)
			return ret;
	}
	insert(h->ent, h->cap, key, val);
	h->n++;
	return 0;
}

void rc_hash_del(struct rc_hash *h, uint32_t key)
{
	uint32_t mask = h->cap - 1, i, j;

	if (!h->cap)
		return;
	for (i = slot_of(key, h->cap);; i = (i + 1) & mask) {
		if (!h->ent[i].val)
			return;
		if (h->ent[i].key == key)
			break;
	}
	/* Move later members of the probe run back so lookups never stop early. */
	for (j = (i + 1) & mask; h->ent[j].val; j = (j + 1) & mask) {
		uint32_t home = slot_of(h->ent[j].key, h->cap);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			h->ent[i] = h->ent[j];
			i = j;
		}
	}
	h->ent[i].val = NULL;
	h->ent[i].key = 0;
	h->n--;
}

void rc_hash_free(struct rc_hash *h)
{
	free(h->ent);
	h->ent = NULL;
	h->cap = h->n = 0;
}
