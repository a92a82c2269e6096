/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The live allocation table of one process: every allocation the tracker holds (pending
 * frees included), keyed by (address space, address), stored in the table itself. Open
 * addressing with linear probing and backward-shift deletion; a slot with addr == 0 is free.
 *
 * Not lib/hmap, because on the consumer's hot path one lookup here touches one 32-byte slot
 * that is the allocation itself, where hmap's 24-byte slot holds an index or a pointer to it
 * elsewhere: a second cache miss per record and more bytes per live allocation. Measured
 * (one thread, a free of a random live allocation then a new one, 5 M times; 1 M and 10 M
 * live): with the allocations in an array beside an hmap of indexes, 1.2 to 2 times the time
 * per free + allocation, and 82 and 72 bytes per live allocation against this table's 67 and
 * 54 (make bench's target is 64 at 10 M live); with each allocation malloc'd behind an hmap,
 * 1.4 to 2.2 times the time, 98 and 88 bytes. Big tables sit on huge pages.
 */
#ifndef GPULEAK_TRACKER_ALLOC_TABLE_H
#define GPULEAK_TRACKER_ALLOC_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/hmap.h"

enum alloc_flags {
	AF_PENDING = 1 << 0,	     /* async free issued, its stream has not completed yet */
	AF_LAYER = 1 << 1,	     /* a lower layer of another allocation: not counted */
	AF_RELEASED_MAPPED = 1 << 2, /* VMM handle released while still mapped */
	AF_UNSIZED = 1 << 3,	     /* bytes unknown (a texture format without a size) */
	AF_INIT = 1 << 4,	     /* made before the process's first step */
	AF_SEGMENT = 1 << 5,	     /* a caching allocator's segment: holds blocks (blocks.c) */
	AF_ORPHAN = 1 << 6,	     /* a block in no segment seen: its bytes are memory itself */
	AF_POOL = 1 << 7,	     /* from a memory pool: released back into it (pools.c) */
};

/* One live allocation. 32 bytes: the table is sized for ten million of them. */
struct alloc {
	uint64_t addr;
	uint64_t size;
	uint64_t ts_ns;	    /* when it was allocated */
	uint32_t sstack;    /* index into tracker sstacks (its site: tracker__alloc_site) */
	uint8_t space;	    /* enum cat_space */
	uint8_t flags;	    /* enum alloc_flags */
	uint16_t layer_api; /* a lower layer at the same address merged into this one */
};

/*
 * Slots in [0, cap): callers that walk every allocation (a teardown, the error bounds) read
 * them directly, skipping addr == 0. A removal may move a later entry into the slot removed.
 */
struct alloc_table {
	struct alloc *slots;
	size_t cap; /* power of two, or 0 */
	size_t n;
};

/* The slot a probe for (space, addr) starts at; cap must be non-zero. */
static inline size_t alloc_table__home(const struct alloc_table *t, uint8_t space, uint64_t addr)
{
	return hmap_mix(addr ^ ((uint64_t)space << 57)) & (t->cap - 1);
}

/* The allocation at (space, addr), or NULL. Invalidated by the next insert or remove. */
struct alloc *alloc_table__find(const struct alloc_table *t, uint8_t space, uint64_t addr);
/* Insert a copy of a, whose (space, addr) must be absent: its slot, or NULL without memory. */
struct alloc *alloc_table__insert(struct alloc_table *t, const struct alloc *a);
/* Remove the allocation in slot (a pointer into t->slots). */
void alloc_table__remove(struct alloc_table *t, struct alloc *slot);
/*
 * Start loading the slots a lookup of (space, addr) will read: with a million allocations
 * live each lookup is a cache miss, and misses of consecutive records overlap only when asked
 * for early. A hint: it changes nothing. Always inlined: GCC takes a function that only
 * prefetches for one without effect, and drops calls to it that it did not inline.
 */
static inline __attribute__((always_inline)) void
alloc_table__prefetch(const struct alloc_table *t, uint8_t space, uint64_t addr)
{
	size_t i;

	if (!t->cap)
		return;
	i = alloc_table__home(t, space, addr);
	/* The probe run goes on past the home slot (a lookup of a new address ends at the next
	 * empty slot, a removal shifts the run back): the slot after it too, in the next cache
	 * line when the home slot ends its line. */
	__builtin_prefetch(&t->slots[i]);
	__builtin_prefetch(&t->slots[(i + 1) & (t->cap - 1)]);
}

void alloc_table__free(struct alloc_table *t);

#endif
