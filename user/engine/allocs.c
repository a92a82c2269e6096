// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sums: what an allocation does to the graph while it is in its process's table
 * (alloc_table.c). An allocation enters in the site stack sites.c assigned it, and its bytes
 * join the sums this file keeps up to date on every record: live and pending bytes of its
 * sstack, site and process, of its class and rule, the sites changed since the timeline last
 * sampled, and the step's changes per site; a flag (pending, released while mapped) moves
 * them, a release takes them out. What a call means, and when memory goes, is decided above
 * (mem_calls.c, pending.c, gpu_objects.c, wgpu_objects.c). This is the consumer's hot path:
 * what runs per allocation and free (adding, releasing, the sums) is inline in allocs.h,
 * so that it costs no call in the modules above; this file holds the rest.
 * Calls: violations.c (a class that an allocation joins).
 */
#include "engine/allocs.h"

/* A site's first change in the step: a new entry. */
ssize_t allocs__step_change_add(struct tproc *p, struct site *s, uint32_t idx)
{
	if (vec_grow((void **)&p->step_changes, &p->cap_step_changes, p->nr_step_changes,
		     sizeof(*p->step_changes)))
		return -1;
	p->step_changes[p->nr_step_changes] =
	    (struct step_change){.site = idx, .live0 = s->live_bytes};
	s->step_change = (uint32_t)++p->nr_step_changes;
	return (ssize_t)p->nr_step_changes - 1;
}

/*
 * An allocation moved to another site (a label came): not an allocation, except that one
 * made in this step was made at its new site as far as the step's numbers go. After the
 * move is accounted, so both sites have their entries.
 */
static void step_change_move(struct tracker *t, struct tproc *p, uint32_t from, uint32_t to,
			     const struct alloc *a)
{
	ssize_t f, e;

	if (!(t->sites[from].counts || t->sites[from].judged) ||
	    !(t->sites[to].counts || t->sites[to].judged) || a->ts_ns < p->step_ts_ns)
		return;
	f = allocs_step_change_get(p, &t->sites[from], from);
	e = allocs_step_change_get(p, &t->sites[to], to);
	if (f < 0 || e < 0 || p->step_changes[f].allocated < a->size)
		return;
	p->step_changes[f].allocated -= a->size;
	p->step_changes[e].allocated += a->size;
}

void allocs__blocks_account(struct tproc *p, const struct site *s, const struct alloc *a, int sign)
{
	struct tblocks *b = p->blocks;
	unsigned int d =
	    s->device >= 0 && s->device < TBLOCKS_DEVICES ? (unsigned int)s->device : 0;
	uint64_t n = a->size, allocated = 0, reserved = 0;

	if (a->space == SPACE_BLOCK) {
		b->allocated[d] += sign * n;
		b->nr_allocated[d] += sign;
		if (a->flags & AF_ORPHAN)
			b->orphan[d] += sign * n;
	} else {
		b->reserved[d] += sign * n;
		b->nr_segments[d] += sign;
	}
	if (sign < 0)
		return;
	for (d = 0; d < TBLOCKS_DEVICES; d++) {
		allocated += b->allocated[d];
		reserved += b->reserved[d] + b->orphan[d];
	}
	if (allocated > b->peak_allocated)
		b->peak_allocated = allocated;
	if (reserved > b->peak_reserved)
		b->peak_reserved = reserved;
}

void allocs__set_flag(struct tracker *t, struct tproc *p, struct alloc *a, uint8_t flag)
{
	allocs_account(t, p, a, -1);
	a->flags |= flag;
	allocs_account(t, p, a, 1);
}

void allocs__move(struct tracker *t, struct tproc *p, struct alloc *a, uint32_t ss)
{
	uint32_t from = tracker__alloc_site(t, a), to = t->sstacks[ss].site;

	allocs_account(t, p, a, -1);
	t->sites[from].allocs--;
	t->sites[from].alloc_bytes -= a->size;
	a->sstack = ss;
	t->sites[to].allocs++;
	t->sites[to].alloc_bytes += a->size;
	allocs_account(t, p, a, 1);
	step_change_move(t, p, from, to, a);
}

void allocs__merge_layer(struct tracker *t, struct tproc *p, struct alloc *outer, uint16_t api)
{
	p->c.layers++;
	if (outer->layer_api)
		return;
	outer->layer_api = api;
	if (!(outer->flags & AF_PENDING))
		t->sites[tracker__alloc_site(t, outer)].layer_count++;
	t->sites[tracker__alloc_site(t, outer)].layer_api = api;
}
