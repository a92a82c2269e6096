// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include "lib/hmap.h"

void hmap__free(struct hmap *h)
{
	free(h->slots);
	h->slots = NULL;
	h->cap = h->n = 0;
}

static size_t find_slot(const struct hmap *h, uint64_t k0, uint64_t k1)
{
	size_t mask = h->cap - 1, i = hmap_hash2(k0, k1) & mask;

	while (h->slots[i].k0 != HMAP_EMPTY && (h->slots[i].k0 != k0 || h->slots[i].k1 != k1))
		i = (i + 1) & mask;
	return i;
}

uint64_t *hmap__get(const struct hmap *h, uint64_t k0, uint64_t k1)
{
	size_t i;

	if (!h->n)
		return NULL;
	i = find_slot(h, k0, k1);
	return h->slots[i].k0 == HMAP_EMPTY ? NULL : &h->slots[i].val;
}

static int grow(struct hmap *h)
{
	size_t cap = h->cap ? 2 * h->cap : 16, i;
	struct hmap_slot *old = h->slots;
	size_t old_cap = h->cap;

	h->slots = malloc(cap * sizeof(*h->slots));
	if (!h->slots) {
		h->slots = old;
		return -ENOMEM;
	}
	for (i = 0; i < cap; i++)
		h->slots[i].k0 = HMAP_EMPTY;
	h->cap = cap;
	for (i = 0; i < old_cap; i++)
		if (old[i].k0 != HMAP_EMPTY)
			h->slots[find_slot(h, old[i].k0, old[i].k1)] = old[i];
	free(old);
	return 0;
}

int hmap__put(struct hmap *h, uint64_t k0, uint64_t k1, uint64_t val)
{
	size_t i;

	if ((h->n + 1) * 4 > h->cap * 3 && grow(h))
		return -ENOMEM;
	i = find_slot(h, k0, k1);
	if (h->slots[i].k0 == HMAP_EMPTY)
		h->n++;
	h->slots[i] = (struct hmap_slot){k0, k1, val};
	return 0;
}

bool hmap__del(struct hmap *h, uint64_t k0, uint64_t k1)
{
	size_t mask = h->cap - 1, i, j;

	if (!h->n)
		return false;
	i = find_slot(h, k0, k1);
	if (h->slots[i].k0 == HMAP_EMPTY)
		return false;
	/* Backward shift: pull later members of the probe run into the hole. */
	for (j = (i + 1) & mask; h->slots[j].k0 != HMAP_EMPTY; j = (j + 1) & mask) {
		size_t home = hmap_hash2(h->slots[j].k0, h->slots[j].k1) & mask;

		/* Move j to i unless its home lies cyclically in (i, j]. */
		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			h->slots[i] = h->slots[j];
			i = j;
		}
	}
	h->slots[i].k0 = HMAP_EMPTY;
	h->n--;
	return true;
}

bool hmap__next(const struct hmap *h, size_t *i, const struct hmap_slot **slot)
{
	for (; *i < h->cap; (*i)++) {
		if (h->slots[*i].k0 != HMAP_EMPTY) {
			*slot = &h->slots[(*i)++];
			return true;
		}
	}
	return false;
}
