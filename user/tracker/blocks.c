// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * A caching allocator's blocks (PyTorch's tensors) inside its segments. A block is an
 * allocation of its own (space SPACE_BLOCK) at its site, judged like any memory: it leaks,
 * grows, is retained by a rule or by init. Its bytes are its segment's: the CUDA allocation
 * or VMM handle whose range holds its address (regions.c) becomes a segment at its first
 * block (AF_SEGMENT, moved to a site of its own, OWNER_POOL), whose bytes are memory and
 * the allocator's reserve, judged on the blocks inside it. A block in no range seen (its
 * segment was made before the attach) is an orphan: its bytes count as memory themselves.
 * A block given back is a free of the block, not of CUDA memory: its segment stays. The
 * sums per device (tproc.blocks) are kept by allocs.c as the allocations come and go.
 *
 * Blocks come from PyTorch's USDT probes or from its profiler hook, whichever the process
 * shows first; records of the other are counted and left out, never counted twice.
 * Calls: allocs.c, sites.c, regions.c.
 */
#include <errno.h>
#include <stdlib.h>
#include "tracker/blocks.h"
#include "tracker/allocs.h"
#include "tracker/regions.h"
#include "tracker/sites.h"

#define C10_DEVICE_TYPE_CUDA 1

/* The CUDA device of a block record, -1 when it is memory of no CUDA device. */
static int16_t device_of(const struct cat_api *api, const struct gl_call_rec *r)
{
	if (api->flags & CAT_C10_DEVICE) {
		/* c10::Device by value: type in bits 0-7, index in bits 8-15 */
		if ((r->aux2 & 0xff) != C10_DEVICE_TYPE_CUDA)
			return -1;
		return (int8_t)(r->aux2 >> 8);
	}
	return (int8_t)r->aux; /* c10::DeviceIndex */
}

/*
 * The allocation of range g becomes a segment: flagged, and moved to its pool site (the same
 * call site and stack, no class: the blocks inside are what is judged).
 */
static int promote(struct tracker *t, struct tproc *p, const struct region *g)
{
	struct alloc *a = alloc_table__find(&p->allocs, g->space, g->key);
	struct site_key k;
	const struct site *s;
	uint32_t ss;

	if (!a || (a->flags & AF_SEGMENT))
		return 0;
	s = &t->sites[tracker__alloc_site(t, a)];
	k = (struct site_key){.pid = s->pid,
			      .gen = s->gen,
			      .api = s->api,
			      .device = s->device,
			      .caller = s->caller,
			      .frame = s->frame,
			      .owner_kind = OWNER_POOL};
	ss = sites__stack(t, sites__get(t, &k), t->sstacks[a->sstack].stack_id);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	allocs__set_flag(t, p, a, AF_SEGMENT);
	allocs__move(t, p, a, ss);
	return 0;
}

static int block_alloc(struct tracker *t, struct tproc *p, int16_t device,
		       const struct gl_call_rec *r)
{
	struct site_key k = {p->pid, r->hdr.api, device, r->caller, r->stack_id, OWNER_NONE,
			     0,	     0,		 0,	 false,	    0,		 p->gen};
	struct alloc a, *old;
	struct region *g;
	uint32_t ss;
	int err;

	if (!r->addr || !r->size)
		return 0;
	/* A tensor made from Python is named by the user's frame, as any allocation is. */
	sites__python(t, &k);
	/* The same block handed out again: its free was not seen. */
	old = alloc_table__find(&p->allocs, SPACE_BLOCK, r->addr);
	if (old) {
		g = regions__find(p, old->addr);
		if (g && g->blocks)
			g->blocks--;
		p->c.addr_reuse++;
		allocs__release(t, p, old);
	}
	ss = sites__assign(t, &k, k.stack_id, r->size, NULL, p->step, p->step < 0);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	/* Every range the block spans is a segment (an expandable one's pages); the one it
	 * starts in counts it. */
	for (g = regions__first(p, r->addr, r->size); g;
	     g = regions__next(p, g, r->addr, r->size)) {
		err = promote(t, p, g);
		if (err)
			return err;
	}
	g = regions__first(p, r->addr, r->size);
	if (g)
		g->blocks++;
	a = (struct alloc){.addr = r->addr,
			   .size = r->size,
			   .ts_ns = r->hdr.ts_ns,
			   .sstack = ss,
			   .space = SPACE_BLOCK,
			   .flags = (g ? 0 : AF_ORPHAN) | (p->step < 0 ? AF_INIT : 0)};
	err = allocs__add(t, p, &a, r->hdr.ts_ns, true);
	if (err)
		return err;
	p->blocks->allocs++;
	p->blocks->alloc_bytes += r->size;
	return 0;
}

static int block_free(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	struct alloc *a;
	struct region *g;

	if (!r->addr) {
		p->c.null_frees++;
		return 0;
	}
	a = alloc_table__find(&p->allocs, SPACE_BLOCK, r->addr);
	if (!a) {
		/* Handed out before the attach: its memory was never counted here. */
		p->blocks->unknown_frees++;
		return 0;
	}
	g = regions__find(p, a->addr);
	if (g && g->blocks)
		g->blocks--;
	allocs__release(t, p, a);
	p->blocks->frees++;
	return 0;
}

int blocks__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r)
{
	uint8_t source = (api->flags & CAT_USDT) ? TBLOCKS_USDT : TBLOCKS_HOOK;
	int16_t device;
	int err;

	if (!p->blocks) {
		p->blocks = calloc(1, sizeof(*p->blocks));
		if (!p->blocks)
			return -ENOMEM;
		err = regions__start(t, p);
		if (err)
			return err;
	}
	if (!p->blocks->source)
		p->blocks->source = source;
	if (p->blocks->source != source) {
		p->blocks->other_source++;
		return 0;
	}
	device = device_of(api, r);
	if (device < 0) {
		p->blocks->not_cuda++;
		return 0;
	}
	if (r->hdr.kind == GL_REC_ALLOC)
		return block_alloc(t, p, device, r);
	if (r->hdr.kind == GL_REC_FREE)
		return block_free(t, p, r);
	return 0;
}

void blocks__sweep(struct tracker *t, struct tproc *p)
{
	struct tregions *rg = &p->regions;
	size_t i, k;

	for (k = 0; k < rg->nr_gone; k++) {
		const struct region g = rg->gone[k];

		/* Backward-shift deletion may move an unvisited entry into slot i: look again. */
		for (i = 0; i < p->allocs.cap;) {
			struct alloc *a = &p->allocs.slots[i];

			if (a->addr && a->space == SPACE_BLOCK && a->addr >= g.start &&
			    a->addr < g.end && !regions__find(p, a->addr)) {
				allocs__release(t, p, a);
				if (p->blocks)
					p->blocks->released_with_segment++;
				continue;
			}
			i++;
		}
	}
	rg->nr_gone = 0;
}

void blocks__free(struct tproc *p)
{
	free(p->blocks);
	p->blocks = NULL;
	regions__free(p);
}
