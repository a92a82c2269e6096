// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocations and frees: what they do to the graph. An allocation enters its process's
 * table (alloc_table.c) in the site stack sites.c assigns it, and its bytes join the sums
 * this file keeps up to date on every record: live and pending bytes of its sstack, site and
 * process, of its class and rule, the sites changed since the timeline last sampled, and the
 * step's changes per site. A free takes them out, now or, when something completes it later,
 * through pending.c; a free of what is not live is told apart here: the lower half of one
 * already applied, a double free (a window of recent frees), or an unknown pointer. This is
 * the consumer's hot path: what runs per allocation and free stays in this file, where the
 * compiler inlines it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/tracker_impl.h"
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

void allocs__release_where(struct tracker *t, struct tproc *p,
			   bool (*match)(const struct tracker *t, const struct alloc *a, void *ctx),
			   void *ctx)
{
	size_t i = 0;

	/* Backward-shift deletion may move an unvisited entry into slot i: slot i is looked at
	 * again after a release. */
	while (i < p->allocs.cap) {
		struct alloc *a = &p->allocs.slots[i];

		if (!a->addr || !match(t, a, ctx)) {
			i++;
			continue;
		}
		if (a->flags & AF_PENDING)
			pending__forget(t, p, a->space, a->addr);
		p->c.released_by_owner++;
		allocs__release(t, p, a);
	}
}

/* ---- allocations ---- */

static int16_t device_of(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	if (api->mem == MEM_HOST_PINNED || api->mem == MEM_HOST)
		return -1;
	if ((api->flags & CAT_VMM_DEVICE) && (r->hdr.flags & GL_HF_DESC) &&
	    r->hdr.size >= sizeof(struct gl_desc_rec)) {
		const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;
		int32_t loc_type, id;

		/* CUmemAllocationProp: location.type @8 (1 = device), location.id @12 */
		memcpy(&loc_type, d->desc + 8, sizeof(loc_type));
		memcpy(&id, d->desc + 12, sizeof(id));
		if (loc_type == 1)
			return (int16_t)id;
	}
	return threads__device(p, r->hdr.tid);
}

void allocs__count_failure(struct tracker *t, struct tproc *p, const struct cat_api *api,
			   const struct gl_call_rec *r)
{
	struct site_key k = {
	    p->pid, r->hdr.api, device_of(p, api, r), r->caller, r->stack_id, OWNER_NONE, 0, 0,
	    0,	    false};
	uint32_t site = sites__get(t, &k);

	p->c.failed_calls++;
	if (site == UINT32_MAX)
		return;
	t->sites[site].failed++;
	t->sites[site].last_err = r->ret;
}

/* The owner of an allocation made in no owner's scope, if it has one, into k. */
static void own(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r,
		struct site_key *k)
{
	struct tthread *th;

	/* A registration belongs to the communicator it was made with (its first argument). */
	if (k->owner_kind == OWNER_NONE && api->mem == MEM_REG && r->aux) {
		k->owner_kind = OWNER_COMM;
		k->owner = r->aux;
	}
	/* A driver-level allocation made directly belongs to the thread's current context:
	 * destroying the context releases it. Stream-ordered pool memory belongs to the
	 * device's pool, not to a context (cuda.h, cuCtxDestroy: it "need[s] to be destroyed
	 * explicitly"), like VMM handles. */
	if (k->owner_kind == OWNER_NONE && GL_API_FAMILY(r->hdr.api) == GL_FAM_CUDA &&
	    !(api->flags & CAT_STREAM_POOL)) {
		th = threads__get(p, r->hdr.tid);
		if (th && th->ctx) {
			k->owner_kind = OWNER_CTX;
			k->owner = th->ctx;
		}
	}
}

/*
 * An allocation r returned an address still in the table (old): 1 when it is one more
 * reference to the same registration, else old is gone (0), or -ENOMEM.
 */
static int reused(struct tracker *t, struct tproc *p, uint8_t space, const struct gl_call_rec *r,
		  struct alloc *old)
{
	/* NCCL's registration cache hands out the same handle for the same buffer again,
	 * with one more reference: each needs its own deregister. */
	if ((space == SPACE_NCCL_REG || space == SPACE_NCCL_WIN) && !(old->flags & AF_PENDING)) {
		uint64_t *refs = hmap__get(&p->regrefs, space, r->addr);
		int err = hmap__put(&p->regrefs, space, r->addr, refs ? *refs + 1 : 1);

		return err ? err : 1;
	}
	if (old->flags & AF_PENDING) {
		/* Stream-ordered reuse (cudaMallocAsync handing back a block whose async free
		 * is pending): legal, the pending free is complete. */
		p->c.async_reuse++;
		pending__forget(t, p, space, r->addr);
	} else {
		/* Still live here: freed by something we did not see. */
		p->c.addr_reuse++;
	}
	allocs__release(t, p, old);
	return 0;
}

/* allocs__add, inlined into the allocations of this file: the hot path. */
static inline __attribute__((always_inline)) int
add(struct tracker *t, struct tproc *p, const struct alloc *a, uint64_t ts_ns, bool check_class)
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

int allocs__alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r, const struct call_scope *scope)
{
	uint8_t space = (uint8_t)api->space;
	struct site_key k = {p->pid,	   r->hdr.api,	device_of(p, api, r),
			     r->caller,	   r->stack_id, scope->owner_kind,
			     scope->owner, 0,		0,
			     false};
	struct alloc a, *old;
	uint32_t ss;
	int err;

	/* Memory exists, but not where: the verdict's bounds take it (tproc__uncertainty). */
	if (r->hdr.flags & GL_HF_ADDR_READ_FAIL) {
		p->c.unaddressed_allocs++;
		p->c.unaddressed_bytes += r->size;
		return 0;
	}
	/* cudaMalloc(&p, 0) succeeds with a NULL pointer: a call, not memory. */
	if (!r->addr)
		return 0;
	/* Only anonymous mappings are memory; file mappings are the program's files. */
	if (api->space == SPACE_MMAP && !(r->aux & 0x20 /* MAP_ANONYMOUS */))
		return 0;
	own(p, api, r, &k);
	ss = sites__assign(t, &k, r->stack_id, r->size, NULL, p->step, p->step < 0);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	old = alloc_table__find(&p->allocs, space, r->addr);
	err = old ? reused(t, p, space, r, old) : 0;
	if (err)
		return err < 0 ? err : 0;
	a = (struct alloc){.addr = r->addr,
			   .size = r->size,
			   .ts_ns = r->hdr.ts_ns,
			   .sstack = ss,
			   .space = space,
			   .flags = (scope->owner_kind == OWNER_LAYER ? AF_LAYER : 0) |
				    (p->step < 0 ? AF_INIT : 0)};
	return add(t, p, &a, r->hdr.ts_ns, true);
}

int allocs__add(struct tracker *t, struct tproc *p, const struct alloc *a, uint64_t ts_ns,
		bool check_class)
{
	return add(t, p, a, ts_ns, check_class);
}

int allocs__realloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r, const struct call_scope *scope)
{
	if (r->aux && r->aux != r->addr) {
		struct gl_call_rec f = *r;

		f.addr = r->aux;
		allocs__free(t, p, api, &f);
	} else if (r->aux) {
		struct alloc *a = alloc_table__find(&p->allocs, SPACE_HOST, r->aux);

		if (a)
			allocs__release(t, p, a);
	}
	return allocs__alloc(t, p, api, r, scope);
}

/* ---- frees ---- */

/* Whether this free is the lower half of a free we already applied (cudaFree -> cuMemFree). */
static bool expected_free(struct tproc *p, uint32_t tid, unsigned int family, uint8_t space,
			  uint64_t addr)
{
	uint64_t *v = hmap__get(&p->threads, tid, 0);
	struct tthread *th = v ? (struct tthread *)(uintptr_t)*v : NULL;
	unsigned int i;

	for (i = 0; th && i < th->nr_expect; i++) {
		if (th->expect[i].addr == addr && th->expect[i].space == space &&
		    model_lower_layer(th->expect[i].family, family)) {
			th->expect[i] = th->expect[--th->nr_expect];
			return true;
		}
	}
	return false;
}

static void expect_free(struct tproc *p, uint32_t tid, unsigned int family, uint8_t space,
			uint64_t addr)
{
	struct tthread *th = threads__get(p, tid);

	if (!th)
		return;
	if (th->nr_expect == NR_EXPECT)
		th->nr_expect--;
	th->expect[th->nr_expect].addr = addr;
	th->expect[th->nr_expect].space = space;
	th->expect[th->nr_expect].family = family;
	th->nr_expect++;
}

/*
 * The runtime (and NCCL) free the layer underneath right after, at the same address: expect
 * it, whether or not we saw the allocation (it may predate the attach), so that the lower
 * free neither counts as unknown nor, for a pending async free, as a double free.
 */
static void expect_lower_free(struct tproc *p, const struct gl_call_rec *r, unsigned int fam,
			      uint8_t space)
{
	if (fam == GL_FAM_CUDART || fam == GL_FAM_NCCL)
		expect_free(p, r->hdr.tid, fam, space, r->addr);
	if (fam == GL_FAM_NCCL)
		expect_free(p, r->hdr.tid, fam, SPACE_VMM_RANGE, r->addr);
}

/*
 * Recently freed addresses, direct-mapped: a free of one that is not live again is a double
 * free (had it been allocated again by a traced call, it would be live). A slot keeps the
 * last free that hashed to it, so the window is about the last two thousand frees, for one store
 * per free and no work per allocation. An address the program got again from something
 * untraced and freed twice reads as a double free too, which it is from the trace's view.
 */
#define FREED_SLOTS 2048 /* 16 KiB: stays in the L1 cache of the consumer */

/* The address with its address space in the top bits (user addresses stay below 2^57). */
static inline uint64_t freed_key(uint8_t space, uint64_t addr)
{
	return addr ^ ((uint64_t)space << 58);
}

static uint64_t *freed_slot(struct tproc *p, uint64_t key)
{
	if (!p->freed)
		p->freed = calloc(FREED_SLOTS, sizeof(*p->freed));
	return p->freed ? &p->freed[(key * 0x9e3779b97f4a7c15ULL) >> (64 - 11)] : NULL;
}

static void remember_freed(struct tproc *p, uint8_t space, uint64_t addr)
{
	uint64_t key = freed_key(space, addr), *f = freed_slot(p, key);

	/* Without memory for the window a double free reads as an unknown free: counted. */
	if (f)
		*f = key;
}

static bool freed_before(struct tproc *p, uint8_t space, uint64_t addr)
{
	uint64_t key = freed_key(space, addr), *f = freed_slot(p, key);

	return f && *f == key;
}

int allocs__free(struct tracker *t, struct tproc *p, const struct cat_api *api,
		 const struct gl_call_rec *r)
{
	unsigned int fam = GL_API_FAMILY(r->hdr.api);
	uint8_t space = (uint8_t)api->space;
	struct alloc *a;
	uint16_t rule;

	if (!r->addr) {
		p->c.null_frees++;
		return 0;
	}
	a = alloc_table__find(&p->allocs, space, r->addr);
	if (!a || (a->flags & AF_PENDING)) {
		/* The lower half of a free already applied (cudaFreeAsync -> cuMemFreeAsync). */
		if (expected_free(p, r->hdr.tid, fam, space, r->addr)) {
			p->c.layers++;
			return 0;
		}
		if (a || freed_before(p, space, r->addr))
			p->c.double_frees++;
		/* Mappings the program did not make with mmap (libraries, ld.so's) are
		 * unmapped too: not a free of anything traced. */
		else if (api->space != SPACE_MMAP)
			p->c.unknown_frees++;
		expect_lower_free(p, r, fam, space);
		return 0;
	}
	expect_lower_free(p, r, fam, space);
	if (space == SPACE_NCCL_REG || space == SPACE_NCCL_WIN) {
		uint64_t *refs = hmap__get(&p->regrefs, space, r->addr);

		if (refs && *refs) {
			(*refs)--;
			return 0;
		}
	}
	remember_freed(p, space, r->addr);
	rule = pending__deferred_rule(t, r);
	/* Without rules (unit tests, old captures) async frees keep their built-in meaning. */
	if (rule || (!t->rules && api->op == OP_FREE_ASYNC))
		return pending__defer(t, p, a, api, r, rule);
	/* A physical handle released while mapped lives on until its last unmap. */
	if (api->space == SPACE_VMM_HANDLE && gpu_objects__handle_mapped(p, a->addr)) {
		allocs__set_flag(t, p, a, AF_RELEASED_MAPPED);
		return 0;
	}
	allocs__release(t, p, a);
	return 0;
}
