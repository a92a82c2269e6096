/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A small open-addressing hash map from a two-word key to a 64-bit value, for the tables
 * off the hot path (site interning, per-thread state, name caches). Linear probing with
 * backward-shift deletion: no tombstones, so long runs stay fast after many deletes.
 * The key word k0 must never be HMAP_EMPTY.
 */
#ifndef GPULEAK_LIB_HMAP_H
#define GPULEAK_LIB_HMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HMAP_EMPTY UINT64_MAX

struct hmap_slot {
	uint64_t k0, k1, val;
};

struct hmap {
	struct hmap_slot *slots;
	size_t cap; /* power of two, or 0 */
	size_t n;
};

static inline uint64_t hmap_mix(uint64_t x)
{
	/* splitmix64 finalizer: addresses differ in few low bits; this spreads them. */
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ULL;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebULL;
	x ^= x >> 31;
	return x;
}

static inline uint64_t hmap_hash2(uint64_t k0, uint64_t k1)
{
	return hmap_mix(k0 ^ hmap_mix(k1 + 0x9e3779b97f4a7c15ULL));
}

void hmap__free(struct hmap *h);
/* Pointer to the value of (k0, k1), or NULL. Invalidated by the next put/del. */
uint64_t *hmap__get(const struct hmap *h, uint64_t k0, uint64_t k1);
/* Insert or overwrite. 0 or -ENOMEM. */
int hmap__put(struct hmap *h, uint64_t k0, uint64_t k1, uint64_t val);
/* Remove; true if it was there. */
bool hmap__del(struct hmap *h, uint64_t k0, uint64_t k1);
/* Iterate: for (i = 0; hmap__next(h, &i, &slot);) */
bool hmap__next(const struct hmap *h, size_t *i, const struct hmap_slot **slot);

#endif
