// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The sums: what an allocation does to the graph while it is in its process's table
 * (alloc_table.c). An allocation enters in the site stack sites.c assigned it, and its bytes
 * join the sums this file keeps up to date on every record: live and pending bytes of its
 * sstack, site and process, of its class and rule, the sites changed since the timeline last
 * sampled, and the step's changes per site; a flag (pending, released while mapped) moves
 * them, a release takes them out. What a call means, and when memory goes, is decided above
 * (mem_calls.c, pending.c, gpu_objects.c, wgpu_objects.c). This is the consumer's hot path:
 * what runs per allocation and free stays in this file, where the compiler inlines it.
 * Calls: violations.c (a class that an allocation joins).
 */
#include <errno.h>
#include "engine/allocs.h"
#include "engine/rules.h"
#include "engine/violations.h"
#include "lib/vec.h"

/* ---- the sums ---- */

static void mark_dirty(struct tproc *p, struct site *s, uint32_t idx)
{
	if (s->dirty)
		return;
	/* Without room the site misses one sample: it is sampled when next changed. */
	if (vec_grow((void **)&p->dirty, &p->cap_dirty, p->nr_dirty, sizeof(*p->dirty)))
		return;
	p->dirty[p->nr_dirty++] = idx;
	s->dirty = true;
}

/*
 * The entry of memory site idx in p's step_changes, added at its first change in the step
 * (before the change: live0 is where the step found it). -1 without room. A site's slot is
 * checked against the entry: a pid reused by a new process shares the old one's sites.
 */
static ssize_t step_change_add(struct tproc *p, struct site *s, uint32_t idx);

/* Inlined: it runs for every allocation and free (the consumer's hot path). */
static inline __attribute__((always_inline)) ssize_t step_change_get(struct tproc *p,
								     struct site *s, uint32_t idx)
{
	uint32_t slot = s->step_change;

	if (__builtin_expect(
		slot && slot <= p->nr_step_changes && p->step_changes[slot - 1].site == idx, 1))
		return slot - 1;
	return step_change_add(p, s, idx);
}

/* A site's first change in the step: a new entry. */
static ssize_t step_change_add(struct tproc *p, struct site *s, uint32_t idx)
{
	if (vec_grow((void **)&p->step_changes, &p->cap_step_changes, p->nr_step_changes,
		     sizeof(*p->step_changes)))
		return -1;
	p->step_changes[p->nr_step_changes] =
	    (struct step_change){.site = idx, .live0 = s->live_bytes};
	s->step_change = (uint32_t)++p->nr_step_changes;
	return (ssize_t)p->nr_step_changes - 1;
}

/* Bytes allocated or freed at a memory site, for the step's numbers per site. */
static inline __attribute__((always_inline)) void step_change_note(struct tracker *t,
								   struct tproc *p, uint32_t idx,
								   uint64_t allocated,
								   uint64_t freed)
{
	ssize_t i = step_change_get(p, &t->sites[idx], idx);

	if (i < 0)
		return;
	p->step_changes[i].allocated += allocated;
	p->step_changes[i].freed += freed;
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

	if (!t->sites[from].counts || !t->sites[to].counts || a->ts_ns < p->step_ts_ns)
		return;
	f = step_change_get(p, &t->sites[from], from);
	e = step_change_get(p, &t->sites[to], to);
	if (f < 0 || e < 0 || p->step_changes[f].allocated < a->size)
		return;
	p->step_changes[f].allocated -= a->size;
	p->step_changes[e].allocated += a->size;
}

static void account(struct tracker *t, struct tproc *p, struct alloc *a, int sign)
{
	struct site_stack *ss = &t->sstacks[a->sstack];
	struct site *s = &t->sites[ss->site];
	uint64_t b = a->size;

	mark_dirty(p, s, ss->site);
	if (s->counts)
		step_change_get(p, s, ss->site);

	if (a->flags & AF_PENDING) {
		ss->pending_bytes += sign * b;
		ss->pending_count += sign;
		s->pending_bytes += sign * b;
		s->pending_count += sign;
		if (s->counts) {
			p->pending_bytes += sign * b;
			p->pending_count += sign;
		}
		return;
	}
	ss->live_bytes += sign * b;
	ss->live_count += sign;
	s->live_bytes += sign * b;
	s->live_count += sign;
	if (a->flags & AF_RELEASED_MAPPED) {
		s->relmapped_bytes += sign * b;
		s->relmapped_count += sign;
	}
	if (a->layer_api)
		s->layer_count += sign;
	if (a->flags & AF_UNSIZED)
		s->unsized += sign;
	if (s->counts) {
		p->live_bytes += sign * b;
		p->live_count += sign;
		if (s->cls == CLS_PERSISTENT) {
			p->persistent_bytes += sign * b;
			p->persistent_count += sign;
		} else if (s->cls == CLS_IGNORED) {
			p->ignored_bytes += sign * b;
			p->ignored_count += sign;
		} else if (s->cls == CLS_INIT) {
			p->init_bytes += sign * b;
			p->init_count += sign;
		}
	}
	if (s->rule && p->rule_live) {
		struct rule_live *rl = &p->rule_live[s->rule - 1];

		rl->bytes += sign * b;
		rl->count += sign;
		if (rl->over_max && rl->bytes <= t->rules->v[s->rule - 1].max_bytes)
			rl->over_max = false;
	}
}

void allocs__release(struct tracker *t, struct tproc *p, struct alloc *a)
{
	uint32_t site = tracker__alloc_site(t, a);

	account(t, p, a, -1);
	t->sites[site].frees++;
	if (t->sites[site].counts) {
		p->c.frees++;
		p->c.freed_bytes += a->size;
		step_change_note(t, p, site, 0, a->size);
	}
	alloc_table__remove(&p->allocs, a);
}

void allocs__set_flag(struct tracker *t, struct tproc *p, struct alloc *a, uint8_t flag)
{
	account(t, p, a, -1);
	a->flags |= flag;
	account(t, p, a, 1);
}

void allocs__move(struct tracker *t, struct tproc *p, struct alloc *a, uint32_t ss)
{
	uint32_t from = tracker__alloc_site(t, a), to = t->sstacks[ss].site;

	account(t, p, a, -1);
	t->sites[from].allocs--;
	t->sites[from].alloc_bytes -= a->size;
	a->sstack = ss;
	t->sites[to].allocs++;
	t->sites[to].alloc_bytes += a->size;
	account(t, p, a, 1);
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

int allocs__add(struct tracker *t, struct tproc *p, const struct alloc *a, uint64_t ts_ns,
		bool check_class)
{
	uint32_t site = t->sstacks[a->sstack].site;
	struct alloc *ins = alloc_table__insert(&p->allocs, a);

	if (!ins)
		return -ENOMEM;
	account(t, p, ins, 1);
	if (check_class && violations__check_class(t, p, ins, ts_ns))
		return -ENOMEM;
	t->sites[site].allocs++;
	t->sites[site].alloc_bytes += a->size;
	if (t->sites[site].counts) {
		p->c.allocs++;
		p->c.alloc_bytes += a->size;
		step_change_note(t, p, site, a->size, 0);
	}
	return 0;
}
