// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The live allocation table (alloc_table.h): open addressing, linear probing, backward-shift
 * delete, big tables on transparent huge pages.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "tracker/alloc_table.h"

struct alloc *alloc_table__find(const struct alloc_table *t, uint8_t space, uint64_t addr)
{
	size_t mask = t->cap - 1, i;

	if (!t->n)
		return NULL;
	for (i = alloc_table__home(t, space, addr); t->slots[i].addr; i = (i + 1) & mask)
		if (t->slots[i].addr == addr && t->slots[i].space == space)
			return &t->slots[i];
	return NULL;
}

/*
 * Slots of a big table on transparent huge pages: every lookup lands on a random slot, and
 * with 4 KiB pages each one is a TLB miss as well as a cache miss (a two-level page walk
 * under virtualization). Small tables stay on the ordinary heap.
 */
#define HUGE_BYTES (2UL << 20)

static struct alloc *slots_alloc(size_t cap)
{
	size_t bytes = cap * sizeof(struct alloc);
	void *p;

	if (bytes < HUGE_BYTES)
		return calloc(cap, sizeof(struct alloc));
	if (posix_memalign(&p, HUGE_BYTES, bytes))
		return NULL;
	/* Advice only: without THP the table works the same, slower. */
	madvise(p, bytes, MADV_HUGEPAGE);
	memset(p, 0, bytes);
	return p;
}

static int grow(struct alloc_table *t)
{
	size_t cap = t->cap ? 2 * t->cap : 1024, i;
	struct alloc *old = t->slots;
	size_t old_cap = t->cap;

	t->slots = slots_alloc(cap);
	if (!t->slots) {
		t->slots = old;
		return -ENOMEM;
	}
	t->cap = cap;
	for (i = 0; i < old_cap; i++) {
		size_t j;

		if (!old[i].addr)
			continue;
		for (j = alloc_table__home(t, old[i].space, old[i].addr); t->slots[j].addr;
		     j = (j + 1) & (cap - 1))
			;
		t->slots[j] = old[i];
	}
	free(old);
	return 0;
}

struct alloc *alloc_table__insert(struct alloc_table *t, const struct alloc *a)
{
	size_t i;

	/* 0.8 load keeps 10 M live allocations under 64 bytes each (16 M slots x 32 B). */
	if ((t->n + 1) * 5 > t->cap * 4 && grow(t))
		return NULL;
	for (i = alloc_table__home(t, a->space, a->addr); t->slots[i].addr;
	     i = (i + 1) & (t->cap - 1))
		;
	t->slots[i] = *a;
	t->n++;
	return &t->slots[i];
}

void alloc_table__remove(struct alloc_table *t, struct alloc *slot)
{
	size_t mask = t->cap - 1, i = slot - t->slots, j;

	for (j = (i + 1) & mask; t->slots[j].addr; j = (j + 1) & mask) {
		size_t home = alloc_table__home(t, t->slots[j].space, t->slots[j].addr);

		if ((j > i && (home <= i || home > j)) || (j < i && home <= i && home > j)) {
			t->slots[i] = t->slots[j];
			i = j;
		}
	}
	t->slots[i].addr = 0;
	t->n--;
}

void alloc_table__free(struct alloc_table *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->n = 0;
}
