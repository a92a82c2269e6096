// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sums: what an allocation does to the graph while it is in its process's table
 * (alloc_table.c). An allocation enters in the site stack sites.c assigned it, and its bytes
 * join the sums this file keeps up to date on every record: live and pending bytes of its
 * sstack, site and process, of its class and rule, the sites changed since the timeline last
 * sampled, the step's changes per site, its device's live bytes and their peak (with each
 * sstack's bytes then, taken lazily), and what left since the process's latest allocation
 * (tproc.shut); a flag (pending, released while mapped) moves them, a release takes them
 * out. What a call means, and when memory goes, is decided above
 * (mem_calls.c, pending.c, gpu_objects.c, wgpu_objects.c). This is the consumer's hot path:
 * what runs per allocation and free (adding, releasing, the sums) is inline in allocs.h,
 * so that it costs no call in the modules above; this file holds the rest.
 * Calls: violations.c (a class that an allocation joins).
 */
#include "tracker/allocs.h"
#include "probe/catalog.h"

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

uint8_t allocs__peak_slot(const struct tproc *p, const struct site *s)
{
	const struct tobj *o;

	if (!s->counts)
		return PEAK_SLOT_NONE;
	if (s->owner_kind == OWNER_DEVICE) {
		o = tproc__obj(p, SPACE_WGPU, s->owner);
		if (!o)
			return PEAK_SLOT_UNSET;
		return o->ordinal >= 1 && o->ordinal <= PEAK_WGPU_SLOTS
			   ? (uint8_t)(PEAK_CUDA_SLOTS + o->ordinal - 1)
			   : PEAK_SLOT_NONE;
	}
	if (s->device < 0)
		return PEAK_HOST_SLOT;
	return s->device < PEAK_CUDA_SLOTS ? (uint8_t)s->device : PEAK_SLOT_NONE;
}

void allocs__set_flag(struct tracker *t, struct tproc *p, struct alloc *a, uint8_t flag)
{
	/* A free issued (its bytes go from live to pending) is memory leaving. */
	if (flag == AF_PENDING && !(a->flags & AF_PENDING) &&
	    t->sites[t->sstacks[a->sstack].site].counts)
		allocs_note_release(p, a->sstack, a->size);
	allocs_account(t, p, a, -1);
	a->flags |= flag;
	allocs_account(t, p, a, 1);
	if (flag == AF_PENDING && t->mem_ev)
		allocs_mem_event(t, p, a, MEM_EV_PENDING, p->last_ts_ns);
}

/*
 * An allocation live at its device's peak moved from site stack from to to (a label came
 * after the peak, which its creation may have made): the live set at the peak moves it too.
 * After both accounts, so both stacks hold their value at the peak.
 */
static void peak_move(struct tracker *t, struct tproc *p, const struct alloc *a, uint32_t from,
		      uint32_t to)
{
	struct site_stack *f = &t->sstacks[from], *e = &t->sstacks[to];
	struct site *fs = &t->sites[f->site], *es = &t->sites[e->site];
	const struct peak *pk;

	if (!fs->counts || !es->counts || fs->peak_slot != es->peak_slot ||
	    fs->peak_slot >= PEAK_SLOTS || (a->flags & AF_PENDING))
		return;
	pk = &p->peak[fs->peak_slot];
	if (!pk->epoch || a->ts_ns > pk->ts_ns || f->peak_epoch != pk->epoch ||
	    e->peak_epoch != pk->epoch || f->peak_count == 0 || f->peak_bytes < a->size)
		return;
	f->peak_bytes -= a->size;
	f->peak_count--;
	e->peak_bytes += a->size;
	e->peak_count++;
}

void allocs__move(struct tracker *t, struct tproc *p, struct alloc *a, uint32_t ss)
{
	uint32_t from = tracker__alloc_site(t, a), to = t->sstacks[ss].site, from_ss = a->sstack;

	allocs_account(t, p, a, -1);
	t->sites[from].allocs--;
	t->sites[from].alloc_bytes -= a->size;
	a->sstack = ss;
	t->sites[to].allocs++;
	t->sites[to].alloc_bytes += a->size;
	allocs_account(t, p, a, 1);
	peak_move(t, p, a, from_ss, ss);
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

void allocs__resize(struct tracker *t, struct tproc *p, struct alloc *a, uint64_t bytes)
{
	struct site *s = &t->sites[tracker__alloc_site(t, a)];

	allocs_account(t, p, a, -1);
	s->alloc_bytes = s->alloc_bytes - a->size + bytes;
	a->size = bytes;
	a->flags &= (uint8_t)~AF_UNSIZED;
	allocs_account(t, p, a, 1);
}
