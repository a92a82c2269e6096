/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Growing arrays: room for one more element, doubling from 64. */
#ifndef GPULEAK_LIB_VEC_H
#define GPULEAK_LIB_VEC_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Room for element n of the array *v holding *cap elements of size bytes. 0 or -ENOMEM. */
static inline int vec_grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 64;
	p = realloc(*v, ncap * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

/*
 * A new zeroed element of size bytes appended to *v, an array of *n pointers with room for
 * *cap: the per-process tables (one pointer each, so that a pointer stays valid as the array
 * grows). NULL without memory, *v unchanged but for its room.
 */
static inline void *vec_push_new(void *v, size_t *cap, size_t *n, size_t size)
{
	void ***arr = v, *e;

	if (vec_grow((void **)arr, cap, *n, sizeof(void *)))
		return NULL;
	e = calloc(1, size);
	if (e)
		(*arr)[(*n)++] = e;
	return e;
}

/*
 * Binary search of n elements of size bytes at v, sorted by a key at byte key_off (uint64_t,
 * or int64_t when is_signed): the index of the first whose key is above key (upper), or at
 * least key (!upper); n when none.
 */
static inline size_t vec_bound(const void *v, size_t n, size_t size, size_t key_off, bool is_signed,
			       uint64_t key, bool upper)
{
	const char *p = v;
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint64_t k;
		bool below;

		memcpy(&k, p + mid * size + key_off, sizeof(k));
		if (is_signed)
			below = upper ? (int64_t)k <= (int64_t)key : (int64_t)k < (int64_t)key;
		else
			below = upper ? k <= key : k < key;
		if (below)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* vec_bound over the array arr of structs sorted by their 8-byte integer member field. */
#define VEC_BOUND(arr, n, field, key, upper)                                                       \
	vec_bound(arr, n, sizeof(*(arr)) + 0 * sizeof(char[sizeof((arr)->field) == 8 ? 1 : -1]),   \
		  offsetof(__typeof__(*(arr)), field),                                             \
		  _Generic((arr)->field, int64_t                                                   \
			   : true, default                                                         \
			   : false),                                                               \
		  (uint64_t)(key), upper)

#endif
