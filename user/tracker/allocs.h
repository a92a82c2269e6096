/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sums (allocs.c): an allocation entering or leaving p's table, or changing how it
 * counts, and what that does to the live and pending bytes it is part of. What a call means
 * (mem_calls.h) and when a pending free completes (pending.h) are decided above. Adding and
 * releasing run for every allocation and free, called from those modules: they are inline
 * here, with the sums they keep (the consumer's hot path, as alloc_table.h's lookups).
 */
#ifndef GPULEAK_TRACKER_ALLOCS_H
#define GPULEAK_TRACKER_ALLOCS_H

#include <errno.h>
#include "tracker/model.h"
#include "tracker/pools.h"
#include "tracker/regions.h"
#include "tracker/rules.h"
#include "tracker/violations.h"
#include "lib/vec.h"
#include "probe/catalog.h"

/* Site idx changed: the timeline samples it next time. */
static inline void allocs_mark_dirty(struct tproc *p, struct site *s, uint32_t idx)
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
ssize_t allocs__step_change_add(struct tproc *p, struct site *s, uint32_t idx);

/* Inlined: it runs for every allocation and free (the consumer's hot path). */
static inline __attribute__((always_inline)) ssize_t
allocs_step_change_get(struct tproc *p, struct site *s, uint32_t idx)
{
	uint32_t slot = s->step_change;

	if (__builtin_expect(
		slot && slot <= p->nr_step_changes && p->step_changes[slot - 1].site == idx, 1))
		return slot - 1;
	return allocs__step_change_add(p, s, idx);
}

/* Bytes allocated or freed at a memory site, for the step's numbers per site. */
static inline __attribute__((always_inline)) void
allocs_step_change_note(struct tracker *t, struct tproc *p, uint32_t idx, uint64_t allocated,
			uint64_t freed)
{
	ssize_t i = allocs_step_change_get(p, &t->sites[idx], idx);

	if (i < 0)
		return;
	p->step_changes[i].allocated += allocated;
	p->step_changes[i].freed += freed;
}

/* A caching allocator's block or segment into or out of the allocator's sums (tproc.blocks). */
void allocs__blocks_account(struct tproc *p, const struct site *s, const struct alloc *a, int sign);

/*
 * a's bytes into (sign 1) or out of (-1) every sum it is part of, by its flags. The process's
 * live and pending bytes are memory (a caching allocator's block only when it is in no
 * segment seen: orphan); its classes are what is judged (blocks, not their segments).
 */
/* The tproc.peak slot of a site's memory (PEAK_SLOT_NONE: none), chosen at first use. */
uint8_t allocs__peak_slot(const struct tproc *p, const struct site *s);

static inline struct peak *allocs_peak(struct tproc *p, struct site *s)
{
	uint8_t slot = s->peak_slot;

	if (__builtin_expect(slot == PEAK_SLOT_UNSET, 0)) {
		slot = allocs__peak_slot(p, s);
		/* A WebGPU device not seen yet is looked up again next time. */
		if (slot != PEAK_SLOT_UNSET)
			s->peak_slot = slot;
	}
	return slot < PEAK_SLOTS ? &p->peak[slot] : NULL;
}

/*
 * Live bytes b of site stack ss leave: listed since the latest allocation (tproc.shut), with
 * why (tproc.cause_api, release_how). Without room the entry is dropped: what a shutdown
 * released then reads lower, nothing else changes.
 */
static inline void allocs_note_release(struct tproc *p, uint32_t ss, uint64_t b)
{
	if (__builtin_expect(p->nr_shut == p->cap_shut, 0) &&
	    vec_grow((void **)&p->shut, &p->cap_shut, p->nr_shut, sizeof(*p->shut)))
		return;
	p->shut[p->nr_shut++] =
	    (struct release){.sstack = ss, .api = p->cause_api, .how = p->release_how, .bytes = b};
}

/* a's bytes into (sign 1) or out of (-1) every sum it is part of, by its flags. */
static inline void allocs_account(struct tracker *t, struct tproc *p, struct alloc *a, int sign)
{
	struct site_stack *ss = &t->sstacks[a->sstack];
	struct site *s = &t->sites[ss->site];
	uint64_t b = a->size;
	bool mem = s->counts || (a->flags & AF_ORPHAN);
	struct peak *pk;

	allocs_mark_dirty(p, s, ss->site);
	if (s->counts || s->judged)
		allocs_step_change_get(p, s, ss->site);

	if (a->flags & AF_PENDING) {
		ss->pending_bytes += sign * b;
		ss->pending_count += sign;
		s->pending_bytes += sign * b;
		s->pending_count += sign;
		if (mem) {
			p->pending_bytes += sign * b;
			p->pending_count += sign;
		}
		return;
	}
	/* The live set at the peak, lazily: a site stack's value then is the one it still has
	 * at its first change after the peak (one compare per change, nothing per peak). */
	pk = s->counts ? allocs_peak(p, s) : NULL;
	if (pk && ss->peak_epoch != pk->epoch) {
		ss->peak_epoch = pk->epoch;
		ss->peak_bytes = ss->live_bytes;
		ss->peak_count = ss->live_count;
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
	if (pk) {
		pk->live_bytes += sign * b;
		pk->live_count += sign;
		if (pk->live_bytes > pk->bytes) {
			pk->bytes = pk->live_bytes;
			pk->count = pk->live_count;
			pk->ts_ns = p->last_ts_ns;
			pk->step = p->step;
			pk->epoch++;
		}
	}
	if (mem) {
		p->live_bytes += sign * b;
		p->live_count += sign;
	}
	if (s->judged) {
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
	if (__builtin_expect(p->blocks && (a->space == SPACE_BLOCK || (a->flags & AF_SEGMENT)), 0))
		allocs__blocks_account(p, s, a, sign);
}

/* Allocation a's change kind, to the --memory-viz trace (tracker.mem_ev) when it asks. */
static inline void allocs_mem_event(const struct tracker *t, const struct tproc *p,
				    const struct alloc *a, uint8_t kind, uint64_t ts_ns)
{
	struct mem_event e = {.addr = a->addr,
			      .size = a->size,
			      .ts_ns = ts_ns,
			      .sstack = a->sstack,
			      .kind = kind,
			      .space = a->space,
			      .flags = a->flags};

	t->mem_ev(t->mem_ev_ctx, t, p, &e);
}

/* a (in p's table) is gone: out of the sums and the table. */
static inline void allocs__release(struct tracker *t, struct tproc *p, struct alloc *a)
{
	uint32_t site = tracker__alloc_site(t, a);

	if (__builtin_expect(t->mem_ev != NULL, 0))
		allocs_mem_event(t, p, a, MEM_EV_RELEASE, p->last_ts_ns);
	if (!(a->flags & AF_PENDING) && t->sites[site].counts)
		allocs_note_release(p, a->sstack, a->size);
	allocs_account(t, p, a, -1);
	t->sites[site].frees++;
	if (t->sites[site].counts) {
		p->c.frees++;
		p->c.freed_bytes += a->size;
	}
	if (a->flags & AF_POOL)
		pools__released(p, a->space, a->addr, a->size);
	if (t->sites[site].counts || t->sites[site].judged)
		allocs_step_change_note(t, p, site, 0, a->size);
	if (__builtin_expect(p->regions.on, 0))
		regions__removed(t, p, a);
	alloc_table__remove(&p->allocs, a);
}

/*
 * A new allocation a (its sstack assigned) enters p's table and the sums of its site and
 * process; its class is checked now unless check_class is false (the caller checks it
 * later). 0 or -ENOMEM.
 */
static inline int allocs__add(struct tracker *t, struct tproc *p, const struct alloc *a,
			      uint64_t ts_ns, bool check_class)
{
	uint32_t site = t->sstacks[a->sstack].site;
	struct alloc *ins = alloc_table__insert(&p->allocs, a);

	if (!ins)
		return -ENOMEM;
	if (__builtin_expect(t->mem_ev != NULL, 0))
		allocs_mem_event(t, p, ins, MEM_EV_ADD, ts_ns);
	allocs_account(t, p, ins, 1);
	if (check_class && violations__check_class(t, p, ins, ts_ns))
		return -ENOMEM;
	t->sites[site].allocs++;
	t->sites[site].alloc_bytes += a->size;
	if (t->sites[site].counts) {
		p->c.allocs++;
		p->c.alloc_bytes += a->size;
	}
	/* A caching allocator's block is an allocation too: a shutdown begins after the latest. */
	if (t->sites[site].counts || t->sites[site].judged) {
		p->last_alloc_step = p->step;
		p->last_alloc_ts_ns = a->ts_ns;
		p->nr_shut = 0;
		allocs_step_change_note(t, p, site, a->size, 0);
	}
	if (__builtin_expect(p->regions.on, 0))
		regions__added(t, p, ins);
	return 0;
}

/* Set flag (AF_PENDING, AF_RELEASED_MAPPED) on a, moving its bytes where the flag counts them. */
void allocs__set_flag(struct tracker *t, struct tproc *p, struct alloc *a, uint8_t flag);
/* a moves to site stack ss (its label changed): not an allocation, nor a free. */
void allocs__move(struct tracker *t, struct tproc *p, struct alloc *a, uint32_t ss);
/* a, of unknown size until now (AF_UNSIZED), holds bytes: its sums follow, no allocation. */
void allocs__resize(struct tracker *t, struct tproc *p, struct alloc *a, uint64_t bytes);
/* A lower layer at outer's own address: the same memory, merged into it. */
void allocs__merge_layer(struct tracker *t, struct tproc *p, struct alloc *outer, uint16_t api);

#endif
