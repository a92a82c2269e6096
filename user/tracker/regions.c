// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A process's device address ranges (regions.h): which allocation holds an address. The
 * ranges of CUDA allocations come and go with the allocations (allocs.h calls in), those of
 * VMM mappings with the maps and unmaps (gpu_objects.c); a range that goes with blocks still
 * counted in it is kept aside for blocks.c, which releases those blocks.
 * Calls nothing of the tracker.
 */
#include <string.h>
#include "tracker/regions.h"
#include "probe/catalog.h"
#include "lib/vec.h"

/* Whether allocation a is device memory with an address range of its own. */
static bool is_range(const struct tracker *t, const struct alloc *a)
{
	const struct site *s;
	const struct cat_api *api;

	if (a->space != SPACE_UVA || (a->flags & AF_LAYER) || !a->size)
		return false;
	s = &t->sites[tracker__alloc_site(t, a)];
	api = cat_by_api(s->api);
	return s->counts && api && (api->mem == MEM_DEVICE || api->mem == MEM_MANAGED);
}

/* Index of the first range that starts above addr. */
static size_t upper(const struct tregions *r, uint64_t addr)
{
	size_t lo = 0, hi = r->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r->v[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static void insert(struct tproc *p, uint64_t start, uint64_t size, uint8_t space, uint64_t key)
{
	struct tregions *r = &p->regions;
	size_t i;

	/* Without room the range is not known: blocks in it count as memory of their own. */
	if (!size || vec_grow((void **)&r->v, &r->cap, r->n, sizeof(*r->v)))
		return;
	i = upper(r, start);
	memmove(&r->v[i + 1], &r->v[i], (r->n - i) * sizeof(*r->v));
	r->v[i] = (struct region){.start = start, .end = start + size, .key = key, .space = space};
	r->n++;
}

static void drop(struct tproc *p, size_t i)
{
	struct tregions *r = &p->regions;

	if (r->v[i].blocks &&
	    !vec_grow((void **)&r->gone, &r->cap_gone, r->nr_gone, sizeof(*r->gone)))
		r->gone[r->nr_gone++] = r->v[i];
	memmove(&r->v[i], &r->v[i + 1], (r->n - i - 1) * sizeof(*r->v));
	r->n--;
}

struct region *regions__find(struct tproc *p, uint64_t addr)
{
	size_t i = upper(&p->regions, addr);

	if (!i || addr >= p->regions.v[i - 1].end)
		return NULL;
	return &p->regions.v[i - 1];
}

struct region *regions__first(struct tproc *p, uint64_t addr, uint64_t size)
{
	struct region *g = regions__find(p, addr);
	size_t i;

	if (g)
		return g;
	i = upper(&p->regions, addr);
	return i < p->regions.n && p->regions.v[i].start < addr + size ? &p->regions.v[i] : NULL;
}

struct region *regions__next(struct tproc *p, const struct region *g, uint64_t addr, uint64_t size)
{
	size_t i = (size_t)(g - p->regions.v) + 1;

	return i < p->regions.n && p->regions.v[i].start < addr + size ? &p->regions.v[i] : NULL;
}

int regions__start(struct tracker *t, struct tproc *p)
{
	size_t i;

	if (p->regions.on)
		return 0;
	p->regions.on = true;
	for (i = 0; i < p->allocs.cap; i++) {
		const struct alloc *a = &p->allocs.slots[i];

		if (a->addr && is_range(t, a))
			insert(p, a->addr, a->size, SPACE_UVA, a->addr);
	}
	for (i = 0; i < p->nr_maps; i++)
		insert(p, p->maps[i].va, p->maps[i].size, SPACE_VMM_HANDLE, p->maps[i].handle);
	return 0;
}

void regions__added(struct tracker *t, struct tproc *p, const struct alloc *a)
{
	if (is_range(t, a))
		insert(p, a->addr, a->size, SPACE_UVA, a->addr);
}

void regions__removed(struct tracker *t, struct tproc *p, const struct alloc *a)
{
	struct region *r;

	if (!is_range(t, a))
		return;
	r = regions__find(p, a->addr);
	if (r && r->space == SPACE_UVA && r->key == a->addr)
		drop(p, (size_t)(r - p->regions.v));
}

void regions__mapped(struct tproc *p, uint64_t va, uint64_t size, uint64_t handle)
{
	if (p->regions.on)
		insert(p, va, size, SPACE_VMM_HANDLE, handle);
}

void regions__unmapped(struct tproc *p, uint64_t va, uint64_t size)
{
	size_t i = 0;

	if (!p->regions.on)
		return;
	/* cuMemUnmap takes whole mappings: those that start in the range. */
	i = upper(&p->regions, va);
	if (i)
		i--;
	while (i < p->regions.n && p->regions.v[i].start < va + size) {
		if (p->regions.v[i].space == SPACE_VMM_HANDLE && p->regions.v[i].start >= va)
			drop(p, i);
		else
			i++;
	}
}

void regions__free(struct tproc *p)
{
	free(p->regions.v);
	free(p->regions.gone);
	memset(&p->regions, 0, sizeof(p->regions));
}
