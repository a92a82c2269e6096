// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include "engine/memtrace.h"
#include "lib/vec.h"
#include "probe/catalog.h"

struct memtrace {
	struct memtrace_entry *v;
	size_t n, cap;
	size_t head;	  /* once full (n == MEMTRACE_MAX): the oldest entry */
	uint64_t dropped; /* overwritten, or not kept for want of memory */
};

int memtrace__new(struct memtrace **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void memtrace__free(struct memtrace *mt)
{
	if (!mt)
		return;
	free(mt->v);
	free(mt);
}

/*
 * Whether e is device memory as PyTorch's trace shows it: its blocks, and what it would call
 * segments (device allocations, VMM ranges); not host memory, handles, layers of another
 * allocation, registrations.
 */
static bool wanted(const struct tracker *t, const struct mem_event *e)
{
	const struct site *s;

	switch (e->kind) {
	case MEM_EV_MAP:
	case MEM_EV_UNMAP:
		/* a handle of its own, not the lower layer of an allocation (ncclMemAlloc's) */
		if (e->sstack >= t->nr_sstacks || (e->flags & AF_LAYER))
			return false;
		s = &t->sites[t->sstacks[e->sstack].site];
		return s->counts && s->device >= 0 && s->owner_kind != OWNER_LAYER;
	case MEM_EV_FAIL:
		return e->space == SPACE_UVA || e->space == SPACE_VMM_HANDLE;
	default:
		break;
	}
	if (e->space == SPACE_BLOCK)
		return true;
	if (e->space != SPACE_UVA || (e->flags & AF_LAYER) || e->sstack >= t->nr_sstacks)
		return false;
	s = &t->sites[t->sstacks[e->sstack].site];
	return s->counts && s->device >= 0 && s->owner_kind != OWNER_LAYER;
}

void memtrace__event(void *ctx, const struct tracker *t, const struct tproc *p,
		     const struct mem_event *e)
{
	struct memtrace *mt = ctx;
	struct memtrace_entry *slot;

	if (!wanted(t, e))
		return;
	if (mt->n < MEMTRACE_MAX && mt->n == mt->cap &&
	    vec_grow((void **)&mt->v, &mt->cap, mt->n, sizeof(*mt->v))) {
		mt->dropped++;
		return;
	}
	if (mt->n < MEMTRACE_MAX) {
		slot = &mt->v[mt->n++];
	} else {
		slot = &mt->v[mt->head];
		mt->head = (mt->head + 1) % MEMTRACE_MAX;
		mt->dropped++;
	}
	*slot = (struct memtrace_entry){.pid = p->pid, .gen = p->gen, .e = *e};
}

size_t memtrace__count(const struct memtrace *mt)
{
	return mt ? mt->n : 0;
}

const struct memtrace_entry *memtrace__get(const struct memtrace *mt, size_t i)
{
	return &mt->v[(mt->head + i) % (mt->n ? mt->n : 1)];
}

uint64_t memtrace__dropped(const struct memtrace *mt)
{
	return mt ? mt->dropped : 0;
}
