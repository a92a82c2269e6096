// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Sites and site stacks: where allocations come from. A site is (process, API, device, call
 * site, owner, label, class), interned once and found again through a cache of the busy
 * ones; a site stack is a site's allocations from one user stack, where rules that name
 * frames (site=, lib=) are matched once and remembered. This file decides which site stack a
 * new allocation goes to: its call site and stack, then the class a persistent or ignore rule,
 * or being made before the first step (init), puts it in.
 * Calls nothing of the tracker (rules.c matches the rules).
 */
#include <string.h>
#include "tracker/sites.h"
#include "tracker/rules.h"
#include "probe/catalog.h"
#include "lib/vec.h"

static bool site_matches(const struct site *s, const struct site_key *k)
{
	return s->pid == k->pid && s->gen == k->gen && s->api == k->api && s->device == k->device &&
	       s->caller == k->caller && s->frame == k->frame && s->owner_kind == k->owner_kind &&
	       s->owner == k->owner && s->rule == k->rule && s->label == k->label &&
	       (s->cls == CLS_INIT) == k->init;
}

static uint32_t site_lookup(struct tracker *t, const struct site_key *k)
{
	uint64_t k0 =
	    (uint64_t)(uint32_t)k->pid << 32 | (uint64_t)k->api << 16 | (uint16_t)k->device;
	uint64_t k1 = k->caller ^ hmap_mix(k->owner + k->owner_kind + ((uint64_t)k->rule << 48) +
					   ((uint64_t)k->label << 24) + ((uint64_t)k->init << 40) +
					   k->frame + ((uint64_t)k->gen << 56));
	const struct cat_api *api = cat_by_api(k->api);
	uint64_t *v;
	struct site *s;

	/* The owner is folded into k1: a clash of two different keys moves to the next k1. */
	for (;; k1++) {
		v = hmap__get(&t->site_idx, k0, k1);
		if (!v || site_matches(&t->sites[*v], k))
			break;
	}
	if (v)
		return *v;
	if (vec_grow((void **)&t->sites, &t->cap_sites, t->nr_sites, sizeof(*t->sites)))
		return UINT32_MAX;
	if (hmap__put(&t->site_idx, k0, k1, t->nr_sites))
		return UINT32_MAX;
	s = &t->sites[t->nr_sites];
	memset(s, 0, sizeof(*s));
	s->pid = k->pid;
	s->gen = k->gen;
	s->api = k->api;
	s->device = k->device;
	s->caller = k->caller;
	s->frame = k->frame;
	s->owner_kind = k->owner_kind;
	s->owner = k->owner;
	s->rule = k->rule;
	s->label = k->label;
	s->sstacks = UINT32_MAX;
	s->sstack_last = UINT32_MAX;
	if (k->rule && t->rules)
		s->cls =
		    t->rules->v[k->rule - 1].kind == RULE_PERSISTENT ? CLS_PERSISTENT : CLS_IGNORED;
	else if (k->init)
		s->cls = CLS_INIT;
	/* A caching allocator's blocks are judged, their segments hold the memory. */
	s->mem = api ? (uint8_t)api->mem : MEM_NONE;
	/* cuMemCreate on a host location (NCCL's ncclCuMemHostAlloc): host memory the devices
	 * can reach, never any device's (mem_calls.c, device_of). */
	if (api && (api->flags & CAT_VMM_DEVICE) && k->device < 0)
		s->mem = MEM_HOST_PINNED;
	s->judged =
	    cat_mem_counts(s->mem) && k->owner_kind != OWNER_LAYER && k->owner_kind != OWNER_POOL;
	s->counts = cat_mem_counts(s->mem) && k->owner_kind != OWNER_LAYER && api->op != OP_BLOCK;
	s->peak_slot = PEAK_SLOT_UNSET;
	return t->nr_sites++;
}

/*
 * The sstack of (site, stack): where an allocation of that site from that stack is counted.
 * The stack id alone names a stack of the site: the site fixes the process and call site
 * (a probe the kernel single-steps leaves the call site out of the stack, so two sites of
 * one function may share an id). UINT32_MAX without memory.
 */
uint32_t sites__stack(struct tracker *t, uint32_t site, int32_t stack_id)
{
	uint32_t last;
	uint64_t *v;
	struct site_stack *ss;

	if (site == UINT32_MAX)
		return UINT32_MAX;
	if (stack_id < 0)
		stack_id = -1;
	last = t->sites[site].sstack_last;
	if (last != UINT32_MAX && t->sstacks[last].stack_id == stack_id)
		return last;
	v = hmap__get(&t->sstack_idx, site, (uint32_t)stack_id);
	if (v) {
		t->sites[site].sstack_last = (uint32_t)*v;
		return (uint32_t)*v;
	}
	if (vec_grow((void **)&t->sstacks, &t->cap_sstacks, t->nr_sstacks, sizeof(*t->sstacks)))
		return UINT32_MAX;
	if (hmap__put(&t->sstack_idx, site, (uint32_t)stack_id, t->nr_sstacks))
		return UINT32_MAX;
	ss = &t->sstacks[t->nr_sstacks];
	memset(ss, 0, sizeof(*ss));
	ss->site = site;
	ss->stack_id = stack_id;
	ss->next = t->sites[site].sstacks;
	t->sites[site].sstacks = (uint32_t)t->nr_sstacks;
	t->sites[site].sstack_last = (uint32_t)t->nr_sstacks;
	return (uint32_t)t->nr_sstacks++;
}

uint32_t sites__get(struct tracker *t, const struct site_key *k)
{
	/* A few busy sites make most calls: their indexes by caller, before any hashing. */
	uint32_t *c = &t->site_cache[(k->caller >> 2 ^ k->api) % TRACKER_SITE_CACHE];
	uint32_t idx;

	if (*c && site_matches(&t->sites[*c - 1], k))
		return *c - 1;
	idx = site_lookup(t, k);
	if (idx != UINT32_MAX)
		*c = idx + 1;
	return idx;
}

void sites__subject(struct tracker *t, pid_t pid, uint16_t api, uint64_t caller, int32_t stack_id,
		    bool frames, struct rule_subject *s, const char **syms, const char **mods,
		    const char **where)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->api = cat_api_name(api);
	s->step = -1;
	s->syms = syms;
	s->mods = mods;
	s->where = where;
	if (frames && t->frames)
		s->nr_frames =
		    t->frames(t->frames_ctx, pid, caller, stack_id, syms, mods, where, MAX_FRAMES);
}

/*
 * The persistent/ignore rule (index + 1) for an allocation at base sstack b (its site
 * without a rule, its stack) in *rule, 0: none. What depends on the call site and stack is
 * matched once per sstack: the rules that hold there are kept as a list of indexes, in rule
 * order, in t->cands; per allocation only their size, label and phase (step: the one it
 * was made in) are looked at. Any number of rules. 0 or -ENOMEM.
 */
static int classify(struct tracker *t, uint32_t b, uint64_t size, const char *label, int64_t step,
		    uint16_t *rule)
{
	const struct rules *rs = t->rules;
	struct site_stack *ss = &t->sstacks[b];
	const struct site *st = &t->sites[ss->site];
	size_t i;

	*rule = 0;
	if (!rs || !rs->n)
		return 0;
	if (!ss->cand_valid) {
		const char *syms[MAX_FRAMES], *mods[MAX_FRAMES], *where[MAX_FRAMES];
		struct rule_subject sub;
		bool need_frames = false;

		for (i = 0; i < rs->n; i++)
			need_frames |= rs->v[i].kind != RULE_DEFERRED &&
				       rs->v[i].kind != RULE_CACHE && rule__needs_frames(&rs->v[i]);
		sites__subject(t, st->pid, st->api, st->caller, ss->stack_id, need_frames, &sub,
			       syms, mods, where);
		ss->cand_first = (uint32_t)t->nr_cands;
		for (i = 0; i < rs->n; i++) {
			/* Deferred rules decide frees; cache rules the verdict (judge_cache). */
			if (rs->v[i].kind == RULE_DEFERRED || rs->v[i].kind == RULE_CACHE ||
			    !rule__match_static(&rs->v[i], &sub))
				continue;
			if (vec_grow((void **)&t->cands, &t->cap_cands, t->nr_cands,
				     sizeof(*t->cands))) {
				t->nr_cands = ss->cand_first;
				return -ENOMEM;
			}
			t->cands[t->nr_cands++] = (uint32_t)i;
		}
		ss->nr_cand = (uint32_t)(t->nr_cands - ss->cand_first);
		ss->cand_valid = true;
	}
	for (i = 0; i < ss->nr_cand; i++) {
		uint32_t c = t->cands[ss->cand_first + i];

		if (rule__match_dynamic(&rs->v[c], size, label, step)) {
			*rule = (uint16_t)(c + 1);
			return 0;
		}
	}
	return 0;
}

/*
 * Whether memory made before the first step goes to a site retained by init: no rule
 * decided about it (a rule, phase=init or not, says otherwise), and not a lower layer
 * (those follow the allocation above them).
 */
static bool init_site(const struct tracker *t, bool before_first_step, const struct site_key *k)
{
	return t->init_retained && before_first_step && !k->rule && k->owner_kind != OWNER_LAYER &&
	       k->owner_kind != OWNER_POOL;
}

uint32_t sites__assign(struct tracker *t, struct site_key *k, int32_t stack_id, uint64_t size,
		       const char *label, int64_t step, bool init_phase)
{
	uint32_t ss = sites__stack(t, sites__get(t, k), stack_id);

	if (ss == UINT32_MAX)
		return UINT32_MAX;
	/* A lower layer's class follows the allocation above it: no rule of its own; nor has a
	 * caching allocator's segment (its blocks are judged). */
	if (k->owner_kind != OWNER_LAYER && k->owner_kind != OWNER_POOL &&
	    classify(t, ss, size, label, step, &k->rule))
		return UINT32_MAX;
	k->init = init_site(t, init_phase, k);
	return k->rule || k->init ? sites__stack(t, sites__get(t, k), stack_id) : ss;
}
