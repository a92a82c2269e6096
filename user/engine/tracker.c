// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "probe/catalog.h"
#include "engine/rules.h"
#include "engine/tracker.h"
#include "lib/vec.h"
#include "probe/wgpu_abi.h"

/* ---- threads ---- */

/* Frees the runtime makes underneath a free we already applied: (space, addr) to ignore once. */
#define NR_EXPECT 4

/*
 * Records of calls nested inside another traced call on the same thread (depth > 0) wait
 * here until the outermost call returns: only then is it known whether they are layers of
 * one allocation, memory a communicator made, or calls of their own.
 */
/* Communicators one NCCL group initialises: NCCL's own limit is far above any node's GPUs. */
#define MAX_GROUP_COMMS 16

struct tthread {
	uint32_t tid;
	int16_t device;
	/* An error object was made at this depth: the creation one level up returns it. */
	uint8_t error_depth;
	uint64_t ctx;
	struct gl_desc_rec *held;
	size_t nr_held, cap_held;
	struct {
		uint64_t addr;
		uint8_t space;
		uint8_t family; /* of the free that expects it: only a lower layer matches */
	} expect[NR_EXPECT];
	unsigned int nr_expect;
	/*
	 * A thread a traced call made to do its work (GL_TASK_THREAD: NCCL's group launch):
	 * its finished calls, held[0, adopt_ready), wait until that call returns on thread
	 * adopter, and are then applied as made inside it.
	 */
	uint32_t adopter; /* 0: not adopted */
	uint8_t adopt_depth;
	size_t adopt_ready;
	/* The adopter's side: threads made inside its call at adoptees_depth. */
	unsigned int nr_adoptees;
	uint8_t adoptees_depth;
	/* ncclGroupStart nesting; the communicators inits returned inside it, by device */
	unsigned int group_depth;
	struct group_comm {
		uint64_t comm;
		int16_t device;
	} group_comms[MAX_GROUP_COMMS];
	unsigned int nr_group_comms;
};

/* A thread that never leaves its outer call must not grow without bound. */
#define MAX_HELD (1u << 20)

int tracker__new(struct tracker **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void tracker__set_rules(struct tracker *t, const struct rules *rules, frames_fn frames, void *ctx)
{
	size_t i;

	t->rules = rules;
	t->frames = frames;
	t->frames_ctx = ctx;
	memset(t->defer_known, 0, sizeof(t->defer_known));
	t->defer_per_call = false;
	for (i = 0; rules && i < rules->n; i++)
		t->defer_per_call |= rules->v[i].kind == RULE_DEFERRED &&
				     (rule__needs_frames(&rules->v[i]) || rules->v[i].pid);
}

void tracker__on_pending_done(struct tracker *t, pending_done_fn fn, void *ctx)
{
	t->pend_done = fn;
	t->pend_done_ctx = ctx;
}

static void proc_free(struct tproc *p)
{
	const struct hmap_slot *s;
	size_t i;

	if (!p)
		return;
	for (i = 0; hmap__next(&p->threads, &i, &s);) {
		struct tthread *th = (struct tthread *)(uintptr_t)s->val;

		free(th->held);
		free(th);
	}
	for (i = 0; hmap__next(&p->objs, &i, &s);)
		free((void *)(uintptr_t)s->val);
	for (i = 0; hmap__next(&p->queues, &i, &s);)
		free((void *)(uintptr_t)s->val);
	hmap__free(&p->threads);
	hmap__free(&p->events);
	hmap__free(&p->regrefs);
	free(p->freed);
	hmap__free(&p->objs);
	hmap__free(&p->queues);
	free(p->watch);
	alloc_table__free(&p->allocs);
	free(p->pend);
	free(p->ctxs);
	free(p->comms);
	free(p->maps);
	free(p->rule_live);
	free(p->viols);
	free(p->dirty);
	free(p->step_changes);
	free(p);
}

void tracker__free(struct tracker *t)
{
	size_t i;

	if (!t)
		return;
	for (i = 0; i < t->nr_procs; i++)
		proc_free(t->procs[i]);
	free(t->procs);
	free(t->sites);
	hmap__free(&t->site_idx);
	free(t->sstacks);
	hmap__free(&t->sstack_idx);
	free(t->cands);
	for (i = 0; i < t->nr_labels; i++)
		free(t->labels[i]);
	free(t->labels);
	hmap__free(&t->label_idx);
	free(t);
}

struct tproc *tracker__proc(struct tracker *t, pid_t pid)
{
	size_t i;

	/* A reused pid after an exit gets a fresh entry: search newest first. */
	for (i = t->nr_procs; i--;)
		if (t->procs[i]->pid == pid)
			return t->procs[i];
	return NULL;
}

static struct tproc *proc_get(struct tracker *t, pid_t pid)
{
	struct tproc *p = tracker__proc(t, pid);

	if (p && !p->exited)
		return p;
	if (t->nr_procs == t->cap_procs) {
		size_t cap = t->cap_procs ? 2 * t->cap_procs : 8;
		struct tproc **v = realloc(t->procs, cap * sizeof(*v));

		if (!v)
			return NULL;
		t->procs = v;
		t->cap_procs = cap;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->step = -1;
	if (t->rules && t->rules->n) {
		p->rule_live = calloc(t->rules->n, sizeof(*p->rule_live));
		if (!p->rule_live) {
			free(p);
			return NULL;
		}
	}
	t->procs[t->nr_procs++] = p;
	return p;
}

static struct tthread *thread_get(struct tproc *p, uint32_t tid)
{
	uint64_t *v;
	struct tthread *th;

	/* Looked up several times per record: the thread of the last one first. Threads live
	 * as long as their process, so the pointer stays valid. */
	if (p->last_thread && p->last_thread->tid == tid)
		return p->last_thread;
	v = hmap__get(&p->threads, tid, 0);
	if (v)
		return p->last_thread = (struct tthread *)(uintptr_t)*v;
	th = calloc(1, sizeof(*th));
	if (!th)
		return NULL;
	th->tid = tid;
	if (hmap__put(&p->threads, tid, 0, (uintptr_t)th)) {
		free(th);
		return NULL;
	}
	return p->last_thread = th;
}

static int16_t thread_device(struct tproc *p, uint32_t tid)
{
	struct tthread *th = thread_get(p, tid);

	return th ? th->device : 0;
}

/* ---- sites ---- */

struct site_key {
	pid_t pid;
	uint16_t api;
	int16_t device;
	uint64_t caller;
	int32_t stack_id; /* not part of the site: the sstack of its allocation */
	uint8_t owner_kind;
	uint64_t owner;
	uint16_t rule;	/* persistent/ignore rule + 1, 0: none */
	uint32_t label; /* WebGPU label + 1, 0: none */
	bool init;	/* retained by init (CLS_INIT): never with a rule */
};

static bool site_matches(const struct site *s, const struct site_key *k)
{
	return s->pid == k->pid && s->api == k->api && s->device == k->device &&
	       s->caller == k->caller && s->owner_kind == k->owner_kind && s->owner == k->owner &&
	       s->rule == k->rule && s->label == k->label && (s->cls == CLS_INIT) == k->init;
}

static uint32_t site_lookup(struct tracker *t, const struct site_key *k)
{
	uint64_t k0 =
	    (uint64_t)(uint32_t)k->pid << 32 | (uint64_t)k->api << 16 | (uint16_t)k->device;
	uint64_t k1 = k->caller ^ hmap_mix(k->owner + k->owner_kind + ((uint64_t)k->rule << 48) +
					   ((uint64_t)k->label << 24) + ((uint64_t)k->init << 40));
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
	s->api = k->api;
	s->device = k->device;
	s->caller = k->caller;
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
	s->counts = api && cat_mem_counts(api->mem) && k->owner_kind != OWNER_LAYER;
	return t->nr_sites++;
}

/*
 * The sstack of (site, stack): where an allocation of that site from that stack is counted.
 * The stack id alone names a stack of the site: the site fixes the process and call site
 * (a probe the kernel single-steps leaves the call site out of the stack, so two sites of
 * one function may share an id). UINT32_MAX without memory.
 */
static uint32_t sstack_get(struct tracker *t, uint32_t site, int32_t stack_id)
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

static uint32_t site_get(struct tracker *t, const struct site_key *k)
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

const struct alloc *tracker__alloc(const struct tproc *p, uint8_t space, uint64_t addr)
{
	return alloc_table__find(&p->allocs, space, addr);
}

uint64_t tproc__dropped(const struct tproc *p)
{
	return p->loss[GL_STAT_RB_FULL] + p->loss[GL_STAT_STASH_FAIL] +
	       p->loss[GL_STAT_DEPTH_OVERFLOW] + p->loss[GL_STAT_RET_NO_ENTRY];
}

static int cmp_desc_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x == y ? 0 : x > y ? -1 : 1;
}

int tproc__uncertainty(const struct tracker *t, const struct tproc *p, struct uncertainty *u)
{
	uint64_t lost_frees = p->loss[GL_STAT_LOST_FREES], *sizes;
	size_t i, n = 0;

	memset(u, 0, sizeof(*u));
	u->approximate =
	    tproc__dropped(p) || p->loss[GL_STAT_READ_FAIL] || p->loss[GL_STAT_MAP_FULL];
	/* Lost in the ring, or arrived without the address its out-pointer should have held. */
	u->allocs_missed = p->loss[GL_STAT_LOST_ALLOCS] + p->c.unaddressed_allocs;
	u->alloc_bytes_missed = p->loss[GL_STAT_LOST_ALLOC_BYTES] + p->c.unaddressed_bytes;
	u->allocs_missed_unsized = p->loss[GL_STAT_LOST_ALLOCS_UNSIZED];
	u->frees_missed = lost_frees;
	/* Also a call whose return never came (stale frames), or an unreadable address. */
	u->approximate |= u->allocs_missed || u->allocs_missed_unsized || lost_frees;
	/* Allocations missed can only have made live bytes look smaller, by at most their
	 * bytes; one of unknown size leaves that side open. */
	u->under_known = !u->allocs_missed_unsized;
	u->live_understated_max = u->alloc_bytes_missed;
	/* Each free missed left one allocation looking live: at worst the largest ones. */
	if (!lost_frees)
		return 0;
	if (lost_frees >= p->live_count) {
		u->live_overstated_max = p->live_bytes;
		return 0;
	}
	sizes = malloc(p->live_count * sizeof(*sizes));
	if (!sizes)
		return -ENOMEM;
	for (i = 0; i < p->allocs.cap && n < p->live_count; i++) {
		const struct alloc *a = &p->allocs.slots[i];

		if (a->addr && !(a->flags & AF_PENDING) &&
		    t->sites[tracker__alloc_site(t, a)].counts)
			sizes[n++] = a->size;
	}
	qsort(sizes, n, sizeof(*sizes), cmp_desc_u64);
	for (i = 0; i < n && i < lost_frees; i++)
		u->live_overstated_max += sizes[i];
	free(sizes);
	return 0;
}

/*
 * Streams as the tracker names them. The per-thread default stream (cudaStreamPerThread,
 * or stream 0 in a _ptsz call) is one per thread; tid << 32 lies above every user address,
 * so it never equals a real stream handle. The legacy default stream (0 or
 * cudaStreamLegacy) is 0.
 */
#define STREAM_LEGACY	  0x1
#define STREAM_PER_THREAD 0x2

static uint64_t stream_key(const struct cat_api *a, uint32_t tid, uint64_t stream)
{
	if (stream == STREAM_PER_THREAD || (stream == 0 && (a->flags & CAT_PTSZ)))
		return (uint64_t)tid << 32 | STREAM_PER_THREAD;
	if (stream == STREAM_LEGACY)
		return 0;
	return stream;
}

/* ---- contexts, communicators, mappings ---- */

static struct tctx *ctx_find(struct tproc *p, uint64_t ctx)
{
	size_t i;

	for (i = 0; i < p->nr_ctxs; i++)
		if (p->ctxs[i].ctx == ctx && !p->ctxs[i].destroyed)
			return &p->ctxs[i];
	return NULL;
}

static struct tctx *ctx_add(struct tproc *p, uint64_t ctx, int16_t device, bool primary)
{
	struct tctx *c = ctx_find(p, ctx);

	if (c)
		return c;
	if (vec_grow((void **)&p->ctxs, &p->cap_ctxs, p->nr_ctxs, sizeof(*p->ctxs)))
		return NULL;
	c = &p->ctxs[p->nr_ctxs++];
	*c = (struct tctx){.ctx = ctx, .device = device, .primary = primary};
	return c;
}

const struct tcomm *tproc__comm(const struct tproc *p, uint64_t comm)
{
	size_t i = p->nr_comms;

	while (i--)
		if (p->comms[i].comm == comm)
			return &p->comms[i];
	return NULL;
}

static int comm_add(struct tproc *p, uint64_t comm, uint32_t site, uint64_t ts_ns)
{
	if (vec_grow((void **)&p->comms, &p->cap_comms, p->nr_comms, sizeof(*p->comms)))
		return -ENOMEM;
	p->comms[p->nr_comms++] = (struct tcomm){.comm = comm, .init_site = site, .ts_ns = ts_ns};
	return 0;
}

static bool handle_mapped(const struct tproc *p, uint64_t handle)
{
	size_t i;

	for (i = 0; i < p->nr_maps; i++)
		if (p->maps[i].handle == handle)
			return true;
	return false;
}

/* ---- allocation graph updates ---- */

static void mark_dirty(struct tproc *p, struct site *s, uint32_t idx)
{
	if (s->dirty)
		return;
	if (p->nr_dirty == p->cap_dirty) {
		size_t cap = p->cap_dirty ? 2 * p->cap_dirty : 64;
		uint32_t *v = realloc(p->dirty, cap * sizeof(*v));

		/* Without room the site misses one sample: it is sampled when next changed. */
		if (!v)
			return;
		p->dirty = v;
		p->cap_dirty = cap;
	}
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

static void release(struct tracker *t, struct tproc *p, struct alloc *a)
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

static void pending_drop(struct tproc *p, size_t i)
{
	p->pend[i] = p->pend[--p->nr_pend];
}

/* A pending free is over (completed, or its memory gone otherwise): tell who asked. */
static void pending_end(struct tracker *t, const struct tproc *p, const struct pending_free *pf,
			const struct alloc *a)
{
	if (t->pend_done && a)
		t->pend_done(t->pend_done_ctx, p, tracker__alloc_site(t, a), a->size, pf->ts_ns,
			     t->last_ts_ns);
}

static void pending_forget(struct tracker *t, struct tproc *p, uint8_t space, uint64_t addr)
{
	size_t i;

	for (i = 0; i < p->nr_pend; i++)
		if (p->pend[i].addr == addr && p->pend[i].space == space) {
			pending_end(t, p, &p->pend[i], alloc_table__find(&p->allocs, space, addr));
			pending_drop(p, i);
			return;
		}
}

/* How a record is placed in the graph: by itself, under an allocation, or by an owner. */
struct placement {
	uint8_t owner_kind;
	uint8_t outer_space; /* for OWNER_LAYER: the allocation above, by key (a pointer */
	uint64_t outer_addr; /* into the table would not survive its growth) */
	uint64_t owner;
};

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
	return thread_device(p, r->hdr.tid);
}

static int add_violation(struct tproc *p, enum violation_kind kind, uint16_t rule, uint32_t site,
			 uint64_t bytes, uint64_t count, uint64_t ts_ns)
{
	if (vec_grow((void **)&p->viols, &p->cap_viols, p->nr_viols, sizeof(*p->viols)))
		return -ENOMEM;
	p->viols[p->nr_viols++] = (struct violation){.kind = kind,
						     .rule = rule,
						     .site = site,
						     .bytes = bytes,
						     .count = count,
						     .ts_ns = ts_ns,
						     .step = p->step};
	return 0;
}

/*
 * Allocation a has just joined the class of its site's rule (and is counted in it): a `once`
 * class now holding two, or a class whose live bytes just went over its max=, is a violation.
 * Every path that puts memory into a class ends here: a CUDA, NCCL or host allocation, a
 * WebGPU creation, a WebGPU object moved by its label. 0 or -ENOMEM.
 */
static int class_check(struct tracker *t, struct tproc *p, const struct alloc *a, uint64_t ts_ns)
{
	uint32_t site = tracker__alloc_site(t, a);
	uint16_t rule = t->sites[site].rule;
	const struct rule *ru;
	struct rule_live *rl;

	/* A pending free's memory is not in its class any more (account leaves it out). */
	if (!rule || !p->rule_live || (a->flags & AF_PENDING))
		return 0;
	ru = &t->rules->v[rule - 1];
	rl = &p->rule_live[rule - 1];
	if (ru->once && rl->count > 1 &&
	    add_violation(p, VIOL_ONCE, rule - 1, site, a->size, 1, ts_ns))
		return -ENOMEM;
	if (ru->max_bytes && !rl->over_max && rl->bytes > ru->max_bytes) {
		/* Reported once per excursion: account() closes it when the class is back. */
		rl->over_max = true;
		return add_violation(p, VIOL_MAX, rule - 1, site, rl->bytes, rl->count, ts_ns);
	}
	return 0;
}

/* Frames of a stack rules look at: all of them at the deepest --stack-depth. */
#define MAX_FRAMES 128

/* The rule subject of a call site, frames named only when a rule needs them. */
static void subject_of(struct tracker *t, pid_t pid, uint16_t api, uint64_t caller,
		       int32_t stack_id, bool frames, struct rule_subject *s, const char **syms,
		       const char **mods)
{
	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->api = cat_api_name(api);
	s->step = -1;
	s->syms = syms;
	s->mods = mods;
	if (frames && t->frames)
		s->nr_frames =
		    t->frames(t->frames_ctx, pid, caller, stack_id, syms, mods, MAX_FRAMES);
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
		const char *syms[MAX_FRAMES], *mods[MAX_FRAMES];
		struct rule_subject sub;
		bool need_frames = false;

		for (i = 0; i < rs->n; i++)
			need_frames |=
			    rs->v[i].kind != RULE_DEFERRED && rule__needs_frames(&rs->v[i]);
		subject_of(t, st->pid, st->api, st->caller, ss->stack_id, need_frames, &sub, syms,
			   mods);
		ss->cand_first = (uint32_t)t->nr_cands;
		for (i = 0; i < rs->n; i++) {
			if (rs->v[i].kind == RULE_DEFERRED || !rule__match_static(&rs->v[i], &sub))
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
	return t->init_retained && before_first_step && !k->rule && k->owner_kind != OWNER_LAYER;
}

/*
 * The site stack a new allocation of size bytes goes to: its call site and stack (key k),
 * then the class a rule (classified, unless a lower layer's) or init puts it in, which
 * k->rule and k->init say. UINT32_MAX without memory.
 */
static uint32_t place(struct tracker *t, struct tproc *p, struct site_key *k, int32_t stack_id,
		      uint64_t size, bool classified)
{
	uint32_t ss = sstack_get(t, site_get(t, k), stack_id);

	if (ss == UINT32_MAX)
		return UINT32_MAX;
	if (classified && classify(t, ss, size, NULL, p->step, &k->rule))
		return UINT32_MAX;
	k->init = init_site(t, p->step < 0, k);
	return k->rule || k->init ? sstack_get(t, site_get(t, k), stack_id) : ss;
}

static int do_alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r, const struct placement *pl)
{
	uint8_t space = (uint8_t)api->space;
	struct site_key k = {p->pid,	r->hdr.api,  device_of(p, api, r),
			     r->caller, r->stack_id, pl->owner_kind,
			     pl->owner, 0,	     0,
			     false};
	struct alloc a, *old, *ins;
	struct tthread *th;
	uint32_t site, ss;

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
	/* A registration belongs to the communicator it was made with (its first argument). */
	if (k.owner_kind == OWNER_NONE && api->mem == MEM_REG && r->aux) {
		k.owner_kind = OWNER_COMM;
		k.owner = r->aux;
	}
	/* A driver-level allocation made directly belongs to the thread's current context:
	 * destroying the context releases it. Stream-ordered pool memory belongs to the
	 * device's pool, not to a context (cuda.h, cuCtxDestroy: it "need[s] to be destroyed
	 * explicitly"), like VMM handles. */
	if (k.owner_kind == OWNER_NONE && GL_API_FAMILY(r->hdr.api) == GL_FAM_CUDA &&
	    !(api->flags & CAT_STREAM_POOL)) {
		th = thread_get(p, r->hdr.tid);
		if (th && th->ctx) {
			k.owner_kind = OWNER_CTX;
			k.owner = th->ctx;
		}
	}
	ss = place(t, p, &k, r->stack_id, r->size, k.owner_kind != OWNER_LAYER);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	site = t->sstacks[ss].site;
	old = alloc_table__find(&p->allocs, space, r->addr);
	/* NCCL's registration cache hands out the same handle for the same buffer again,
	 * with one more reference: each needs its own deregister. */
	if (old && (space == SPACE_NCCL_REG || space == SPACE_NCCL_WIN) &&
	    !(old->flags & AF_PENDING)) {
		uint64_t *refs = hmap__get(&p->regrefs, space, r->addr);

		return hmap__put(&p->regrefs, space, r->addr, refs ? *refs + 1 : 1);
	}
	if (old) {
		if (old->flags & AF_PENDING) {
			/* Stream-ordered reuse (cudaMallocAsync handing back a block whose
			 * async free is pending): legal, the pending free is complete. */
			p->c.async_reuse++;
			pending_forget(t, p, space, r->addr);
		} else {
			/* Still live here: freed by something we did not see. */
			p->c.addr_reuse++;
		}
		release(t, p, old);
	}
	a = (struct alloc){.addr = r->addr,
			   .size = r->size,
			   .ts_ns = r->hdr.ts_ns,
			   .sstack = ss,
			   .space = space,
			   .flags = (pl->owner_kind == OWNER_LAYER ? AF_LAYER : 0) |
				    (p->step < 0 ? AF_INIT : 0)};
	ins = alloc_table__insert(&p->allocs, &a);
	if (!ins)
		return -ENOMEM;
	account(t, p, ins, 1);
	if (class_check(t, p, ins, r->hdr.ts_ns))
		return -ENOMEM;
	t->sites[site].allocs++;
	t->sites[site].alloc_bytes += r->size;
	if (t->sites[site].counts) {
		p->c.allocs++;
		p->c.alloc_bytes += r->size;
		step_change_note(t, p, site, r->size, 0);
	}
	return 0;
}

static bool is_layer_family(unsigned int outer, unsigned int inner);

/* Whether this free is the lower half of a free we already applied (cudaFree -> cuMemFree). */
static bool expected_free(struct tproc *p, uint32_t tid, unsigned int family, uint8_t space,
			  uint64_t addr)
{
	uint64_t *v = hmap__get(&p->threads, tid, 0);
	struct tthread *th = v ? (struct tthread *)(uintptr_t)*v : NULL;
	unsigned int i;

	for (i = 0; th && i < th->nr_expect; i++) {
		if (th->expect[i].addr == addr && th->expect[i].space == space &&
		    is_layer_family(th->expect[i].family, family)) {
			th->expect[i] = th->expect[--th->nr_expect];
			return true;
		}
	}
	return false;
}

static void expect_free(struct tproc *p, uint32_t tid, unsigned int family, uint8_t space,
			uint64_t addr)
{
	struct tthread *th = thread_get(p, tid);

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
 * The deferred rule (index + 1) for a free, or 0. Rules that only name APIs are resolved once
 * per API; a rule with site=/lib= is matched against the free's call site every time.
 */
static uint16_t deferred_rule(struct tracker *t, const struct gl_call_rec *r)
{
	const struct rules *rs = t->rules;
	const char *syms[MAX_FRAMES], *mods[MAX_FRAMES];
	struct rule_subject sub;
	uint16_t api = r->hdr.api;
	int m;

	if (!rs || api >= GL_API_MAX)
		return 0;
	/* Without per-call matchers the answer depends on the API alone: looked up once. */
	if (!t->defer_per_call && t->defer_known[api])
		return t->defer_by_api[api];
	subject_of(t, r->hdr.pid, api, r->caller, r->stack_id, t->defer_per_call, &sub, syms, mods);
	m = rules__match(rs, RULE_DEFERRED, &sub);
	if (t->defer_per_call)
		return (uint16_t)(m + 1);
	t->defer_known[api] = 1;
	t->defer_by_api[api] = (uint16_t)(m + 1);
	return t->defer_by_api[api];
}

static int add_pending(struct tracker *t, struct tproc *p, struct alloc *a,
		       const struct cat_api *api, const struct gl_call_rec *r, uint16_t rule)
{
	if (vec_grow((void **)&p->pend, &p->cap_pend, p->nr_pend, sizeof(*p->pend)))
		return -ENOMEM;
	p->pend[p->nr_pend++] = (struct pending_free){
	    .addr = a->addr,
	    .space = a->space,
	    .ts_ns = r->hdr.ts_ns,
	    .stream = stream_key(api, r->hdr.tid, r->aux),
	    .until = rule ? t->rules->v[rule - 1].until : UNTIL_STREAM_SYNC,
	    .rule = rule,
	};
	account(t, p, a, -1);
	a->flags |= AF_PENDING;
	account(t, p, a, 1);
	return 0;
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

/* The address with its namespace in the top bits (user addresses stay below 2^57). */
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

static int do_free(struct tracker *t, struct tproc *p, const struct cat_api *api,
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
	rule = deferred_rule(t, r);
	/* Without rules (unit tests, old captures) async frees keep their built-in meaning. */
	if (rule || (!t->rules && api->op == OP_FREE_ASYNC))
		return add_pending(t, p, a, api, r, rule);
	/* A physical handle released while mapped lives on until its last unmap. */
	if (api->space == SPACE_VMM_HANDLE && handle_mapped(p, a->addr)) {
		account(t, p, a, -1);
		a->flags |= AF_RELEASED_MAPPED;
		account(t, p, a, 1);
		return 0;
	}
	release(t, p, a);
	return 0;
}

/*
 * Complete pending frees issued before `before_ns`: on one stream, or on every stream of a
 * device (device < -1: any device). A sync of the legacy stream waits for all blocking
 * streams of the process, so it completes every stream.
 */
static void complete(struct tracker *t, struct tproc *p, enum rule_until by, bool all_streams,
		     uint64_t stream, int device, uint64_t before_ns)
{
	size_t i = 0;

	while (i < p->nr_pend) {
		struct pending_free *pf = &p->pend[i];
		struct alloc *a;

		/* A device sync completes everything; a stream or event sync what waits for
		 * its stream (until=stream-sync) or for exactly that kind of sync. */
		bool kind_ok = by == UNTIL_DEVICE_SYNC ? pf->until != UNTIL_QUEUE_DONE
			       : by == UNTIL_QUEUE_DONE
				   ? pf->until == UNTIL_QUEUE_DONE
				   : pf->until == UNTIL_STREAM_SYNC || pf->until == by;

		if (!kind_ok || pf->ts_ns > before_ns || (!all_streams && pf->stream != stream)) {
			i++;
			continue;
		}
		a = alloc_table__find(&p->allocs, pf->space, pf->addr);
		if (a && device >= -1 && t->sites[tracker__alloc_site(t, a)].device != device) {
			i++;
			continue;
		}
		pending_end(t, p, pf, a);
		if (a && (a->flags & AF_PENDING))
			release(t, p, a);
		pending_drop(p, i);
	}
}

/*
 * Release every allocation `keep` does not protect; used by context, device and
 * communicator teardown. Backward-shift deletion may move an unvisited entry into slot i:
 * slot i is looked at again after a release.
 */
static void release_where(struct tracker *t, struct tproc *p,
			  bool (*match)(const struct tracker *t, const struct alloc *a, void *ctx),
			  void *ctx)
{
	size_t i = 0;

	while (i < p->allocs.cap) {
		struct alloc *a = &p->allocs.slots[i];

		if (!a->addr || !match(t, a, ctx)) {
			i++;
			continue;
		}
		if (a->flags & AF_PENDING)
			pending_forget(t, p, a->space, a->addr);
		p->c.released_by_owner++;
		release(t, p, a);
	}
}

struct dev_match {
	int16_t device;
	uint64_t ctx; /* also this context's own allocations, 0: none */
};

static bool on_device(const struct tracker *t, const struct alloc *a, void *ctx)
{
	const struct dev_match *m = ctx;
	const struct site *s = &t->sites[tracker__alloc_site(t, a)];
	const struct cat_api *api = cat_by_api(s->api);

	if (s->owner_kind == OWNER_CTX)
		return m->ctx && s->owner == m->ctx;
	if (!api || s->device != m->device || s->owner_kind == OWNER_COMM)
		return false;
	if (GL_API_FAMILY(s->api) != GL_FAM_CUDART && GL_API_FAMILY(s->api) != GL_FAM_CUDA)
		return false;
	/* A reset leaves stream-ordered pool memory alone (cuda_runtime_api.h, cudaDeviceReset:
	 * it "will not destroy memory allocations by cudaMallocAsync()"). */
	return !(api->flags & CAT_STREAM_POOL);
}

static bool of_ctx(const struct tracker *t, const struct alloc *a, void *ctx)
{
	const struct site *s = &t->sites[tracker__alloc_site(t, a)];

	return s->owner_kind == OWNER_CTX && s->owner == *(uint64_t *)ctx;
}

static void device_reset(struct tracker *t, struct tproc *p, int16_t device)
{
	struct dev_match m = {.device = device};
	size_t i;

	for (i = 0; i < p->nr_ctxs; i++)
		if (p->ctxs[i].primary && p->ctxs[i].device == device && !p->ctxs[i].destroyed)
			m.ctx = p->ctxs[i].ctx;
	release_where(t, p, on_device, &m);
	complete(t, p, UNTIL_DEVICE_SYNC, true, 0, device, UINT64_MAX);
}

static int vmm_map(struct tproc *p, const struct gl_call_rec *r)
{
	if (vec_grow((void **)&p->maps, &p->cap_maps, p->nr_maps, sizeof(*p->maps)))
		return -ENOMEM;
	p->maps[p->nr_maps++] = (struct tmapping){.va = r->addr, .size = r->size, .handle = r->aux};
	return 0;
}

static void vmm_unmap(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	size_t i = 0;

	while (i < p->nr_maps) {
		struct tmapping m = p->maps[i];
		struct alloc *a;

		if (m.va < r->addr || m.va >= r->addr + r->size) {
			i++;
			continue;
		}
		p->maps[i] = p->maps[--p->nr_maps];
		/* The last mapping of a handle released while mapped frees its memory. */
		a = alloc_table__find(&p->allocs, SPACE_VMM_HANDLE, m.handle);
		if (a && (a->flags & AF_RELEASED_MAPPED) && !handle_mapped(p, m.handle))
			release(t, p, a);
	}
}

static void count_failure(struct tracker *t, struct tproc *p, const struct cat_api *api,
			  const struct gl_call_rec *r)
{
	struct site_key k = {
	    p->pid, r->hdr.api, device_of(p, api, r), r->caller, r->stack_id, OWNER_NONE, 0, 0,
	    0,	    false};
	uint32_t site = site_get(t, &k);

	p->c.failed_calls++;
	if (site == UINT32_MAX)
		return;
	t->sites[site].failed++;
	t->sites[site].last_err = r->ret;
}

/* ---- refcounted objects, their owners and queues (WebGPU) ---- */

/* The longest prefix of a cut label that does not end inside a UTF-8 sequence. */
static size_t utf8_trim(const char *s, size_t len)
{
	size_t i = len, need;

	while (i && ((unsigned char)s[i - 1] & 0xc0) == 0x80 && len - i < 3)
		i--;
	if (!i || ((unsigned char)s[i - 1] & 0x80) == 0)
		return len;
	need = ((unsigned char)s[i - 1] & 0xe0) == 0xc0	  ? 2
	       : ((unsigned char)s[i - 1] & 0xf0) == 0xe0 ? 3
	       : ((unsigned char)s[i - 1] & 0xf8) == 0xf0 ? 4
							  : 1;
	return len - (i - 1) >= need ? len : i - 1;
}

/* Intern a label: its index + 1, 0 on allocation failure. */
static uint32_t label_intern(struct tracker *t, const char *s, size_t len)
{
	uint64_t h = 1469598103934665603ULL;
	uint64_t *v;
	size_t i;
	char *str;

	for (i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
	v = hmap__get(&t->label_idx, h, len);
	if (v && !memcmp(t->labels[*v], s, len) && !t->labels[*v][len])
		return *v + 1;
	if (t->nr_labels == t->cap_labels) {
		size_t cap = t->cap_labels ? 2 * t->cap_labels : 64;
		char **nv = realloc(t->labels, cap * sizeof(*nv));

		if (!nv)
			return 0;
		t->labels = nv;
		t->cap_labels = cap;
	}
	str = strndup(s, len);
	if (!str)
		return 0;
	/* A hash collision keeps the first string indexed; the second is stored unindexed. */
	if (!v && hmap__put(&t->label_idx, h, len, t->nr_labels)) {
		free(str);
		return 0;
	}
	t->labels[t->nr_labels++] = str;
	return t->nr_labels;
}

const char *tracker__label(const struct tracker *t, uint32_t label)
{
	return label && label <= t->nr_labels ? t->labels[label - 1] : "";
}

struct tobj *tproc__obj(const struct tproc *p, uint8_t space, uint64_t handle)
{
	uint64_t *v = hmap__get(&p->objs, (uint64_t)space << 56 | 1, handle);

	return v ? (struct tobj *)(uintptr_t)*v : NULL;
}

/* A fresh object for a handle just created, replacing whatever the handle meant before. */
static struct tobj *obj_new(struct tproc *p, uint8_t space, uint64_t handle, uint64_t owner)
{
	struct tobj *o = tproc__obj(p, space, handle);

	if (!o) {
		o = malloc(sizeof(*o));
		if (!o)
			return NULL;
		if (hmap__put(&p->objs, (uint64_t)space << 56 | 1, handle, (uintptr_t)o)) {
			free(o);
			return NULL;
		}
	}
	memset(o, 0, sizeof(*o));
	o->handle = handle;
	o->owner = owner;
	o->space = space;
	o->refs = 1;
	return o;
}

static void obj_drop(struct tproc *p, struct tobj *o)
{
	hmap__del(&p->objs, (uint64_t)o->space << 56 | 1, o->handle);
	free(o);
}

/*
 * An owner (device) on first sight holds the one reference its creation gave the program:
 * gpuleak does not trace device creation (an asynchronous callback), only its use.
 */
static struct tobj *owner_get(struct tproc *p, uint8_t space, uint64_t handle)
{
	struct tobj *o = tproc__obj(p, space, handle);

	if (o)
		return o;
	o = obj_new(p, space, handle, 0);
	if (o) {
		o->flags = TOBJ_OWNER;
		o->ordinal = ++p->nr_owners;
	}
	return o;
}

static struct tqueue *queue_get(struct tproc *p, uint64_t handle)
{
	uint64_t *v = hmap__get(&p->queues, handle, 0);
	struct tqueue *q;

	if (v)
		return (struct tqueue *)(uintptr_t)*v;
	q = calloc(1, sizeof(*q));
	if (!q)
		return NULL;
	q->handle = handle;
	if (hmap__put(&p->queues, handle, 0, (uintptr_t)q)) {
		free(q);
		return NULL;
	}
	return q;
}

/* The queue whose submitted work an owner's objects may be in use by, if any is running. */
static struct tqueue *queue_busy(const struct tproc *p, uint64_t owner)
{
	struct tqueue *unknown = NULL;
	const struct hmap_slot *sl;
	size_t i;

	for (i = 0; hmap__next(&p->queues, &i, &sl);) {
		struct tqueue *q = (struct tqueue *)(uintptr_t)sl->val;

		if (q->submitted <= q->done)
			continue;
		if (q->owner == owner)
			return q;
		/* A queue got before attach: its device is unknown, assume it may be this one. */
		if (!q->owner)
			unknown = q;
	}
	return unknown;
}

/*
 * An object's memory goes (destroy or last release): now, or once the work submitted so far
 * to its device's queue is done, if some of that work is still running.
 */
static int obj_free_memory(struct tracker *t, struct tproc *p, struct tobj *o,
			   const struct gl_call_rec *r)
{
	struct alloc *a = alloc_table__find(&p->allocs, o->space, o->handle);
	struct tqueue *q;

	if (!a || (a->flags & AF_PENDING))
		return 0;
	q = queue_busy(p, o->owner);
	if (!q) {
		release(t, p, a);
		return 0;
	}
	if (vec_grow((void **)&p->pend, &p->cap_pend, p->nr_pend, sizeof(*p->pend)))
		return -ENOMEM;
	p->pend[p->nr_pend++] = (struct pending_free){
	    .addr = o->handle,
	    .space = o->space,
	    .ts_ns = r->hdr.ts_ns,
	    .stream = q->handle,
	    .serial = q->submitted,
	    .until = UNTIL_QUEUE_DONE,
	    .rule = deferred_rule(t, r),
	};
	account(t, p, a, -1);
	a->flags |= AF_PENDING;
	account(t, p, a, 1);
	return 0;
}

/* Frees waiting on a queue whose work is now done up to q->done (or on nothing, any more). */
static void queue_complete(struct tracker *t, struct tproc *p, const struct tqueue *q)
{
	size_t i = 0;

	while (i < p->nr_pend) {
		struct pending_free *pf = &p->pend[i];
		struct alloc *a;

		if (pf->until != UNTIL_QUEUE_DONE ||
		    (q && (pf->stream != q->handle || pf->serial > q->done))) {
			i++;
			continue;
		}
		a = alloc_table__find(&p->allocs, pf->space, pf->addr);
		if (q && a && (a->flags & AF_PENDING)) {
			pending_end(t, p, pf, a);
			release(t, p, a);
		} else if (a && (a->flags & AF_PENDING)) {
			i++; /* q NULL: only drop entries whose allocation is gone */
			continue;
		}
		pending_drop(p, i);
	}
}

/* An owner is destroyed: everything it owns is released, pending frees included. */
static void owner_destroy(struct tracker *t, struct tproc *p, struct tobj *owner)
{
	const struct hmap_slot *sl;
	size_t i = 0;

	owner->flags |= TOBJ_DESTROYED;
	while (i < p->allocs.cap) {
		struct alloc *a = &p->allocs.slots[i];
		const struct site *s = &t->sites[tracker__alloc_site(t, a)];

		if (!a->addr || a->space != owner->space || s->owner_kind != OWNER_DEVICE ||
		    s->owner != owner->handle) {
			i++;
			continue;
		}
		if (a->flags & AF_PENDING)
			pending_forget(t, p, a->space, a->addr);
		p->c.released_by_owner++;
		/* Backward shift may move an unvisited entry into slot i: look at i again. */
		release(t, p, a);
	}
	queue_complete(t, p, NULL);
	for (i = 0; hmap__next(&p->objs, &i, &sl);) {
		struct tobj *o = (struct tobj *)(uintptr_t)sl->val;

		if (o->owner == owner->handle)
			o->flags |= TOBJ_DESTROYED;
	}
}

static void obj_addref_site(struct tobj *o, uint32_t site)
{
	unsigned int i;

	for (i = 0; i < o->nr_addref; i++)
		if (o->addref_site[i] == site)
			break;
	if (i == o->nr_addref) {
		/* Past the slots, the last one stands for the rest. */
		if (o->nr_addref == TOBJ_ADDREF_SITES)
			i = TOBJ_ADDREF_SITES - 1;
		else
			o->addref_site[o->nr_addref++] = site;
	}
	o->addref_count[i]++;
}

static int obj_create(struct tracker *t, struct tproc *p, const struct cat_api *api,
		      const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	uint8_t space = (uint8_t)api->space;
	uint64_t owner = r->aux;
	struct site_key k = {
	    p->pid, r->hdr.api, -1, r->caller, r->stack_id, owner ? OWNER_DEVICE : OWNER_NONE,
	    owner,  0,		0,  false};
	struct wgpu_desc d = {};
	struct alloc a, *old, *ins;
	struct tthread *th;
	struct tobj *o;
	uint32_t site, ss;
	bool error;

	if (owner && !owner_get(p, space, owner))
		return -ENOMEM;
	th = thread_get(p, r->hdr.tid);
	error = th && th->error_depth == r->hdr.depth + 1;
	if (th)
		th->error_depth = 0;
	o = obj_new(p, space, r->addr, owner);
	if (!o)
		return -ENOMEM;
	if (error) {
		/* Dawn made an error object: a handle the program must release, no memory. */
		o->flags |= TOBJ_ERROR;
		p->c.error_objects++;
		p->c.failed_calls++;
		site = site_get(t, &k);
		if (site == UINT32_MAX)
			return -ENOMEM;
		t->sites[site].failed++;
		t->sites[site].last_err = CAT_ERR_WGPU_ERROR_OBJECT;
		return 0;
	}
	if (!api->decode || !(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
	    (r->hdr.flags & GL_HF_DESC_READ_FAIL) || api->decode(dr->desc, api->spec.desc_len, &d))
		d.unknown_format = true;
	ss = place(t, p, &k, r->stack_id, d.bytes, true);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	site = t->sstacks[ss].site;
	old = alloc_table__find(&p->allocs, space, r->addr);
	if (old) {
		/* A handle value reused after an untraced release. */
		if (old->flags & AF_PENDING)
			pending_forget(t, p, space, r->addr);
		p->c.addr_reuse++;
		release(t, p, old);
	}
	a = (struct alloc){.addr = r->addr,
			   .size = d.bytes,
			   .ts_ns = r->hdr.ts_ns,
			   .sstack = ss,
			   .space = space,
			   .flags =
			       (d.unknown_format ? AF_UNSIZED : 0) | (p->step < 0 ? AF_INIT : 0)};
	ins = alloc_table__insert(&p->allocs, &a);
	if (!ins)
		return -ENOMEM;
	account(t, p, ins, 1);
	/*
	 * A label in the descriptor comes in the next record and may put the object in another
	 * class (label= rules): checking the class it has without it would report a violation
	 * of a class it never stays in. apply_label checks it then.
	 */
	if (r->hdr.flags & GL_HF_LABEL)
		o->flags |= TOBJ_CLASS_OWED;
	else if (class_check(t, p, ins, r->hdr.ts_ns))
		return -ENOMEM;
	t->sites[site].allocs++;
	t->sites[site].alloc_bytes += d.bytes;
	if (t->sites[site].counts) {
		p->c.allocs++;
		p->c.alloc_bytes += d.bytes;
		step_change_note(t, p, site, d.bytes, 0);
	}
	return 0;
}

static bool is_obj_op(enum cat_op op)
{
	switch (op) {
	case OP_OBJ_CREATE:
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
	case OP_ERROR_OBJECT:
	case OP_QUEUE_GET:
	case OP_QUEUE_SUBMIT:
	case OP_QUEUE_WATCH:
	case OP_QUEUE_DONE:
		return true;
	default:
		return false;
	}
}

/* The refcounted-object and queue operations: records of entry-only calls and creations. */
static int apply_obj(struct tracker *t, struct tproc *p, const struct cat_api *api,
		     const struct gl_call_rec *r)
{
	const struct gl_desc_rec *dr = (const struct gl_desc_rec *)r;
	uint8_t space = (uint8_t)api->space;
	struct tthread *th;
	struct tqueue *q;
	struct tobj *o;
	size_t i;

	switch (api->op) {
	case OP_OBJ_CREATE:
		return r->hdr.kind == GL_REC_ALLOC && r->addr ? obj_create(t, p, api, r) : 0;
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
		o = tproc__obj(p, space, r->addr);
		if (!o) {
			/* Created before attach, or not traced: nothing to account. */
			p->c.unknown_refs++;
			return 0;
		}
		if (api->op == OP_OBJ_ADDREF) {
			struct site_key k = {p->pid,	  r->hdr.api,
					     -1,	  r->caller,
					     r->stack_id, o->owner ? OWNER_DEVICE : OWNER_NONE,
					     o->owner,	  0,
					     0,		  false};
			uint32_t site = site_get(t, &k);

			if (site == UINT32_MAX)
				return -ENOMEM;
			o->refs++;
			obj_addref_site(o, site);
			return 0;
		}
		if (api->op == OP_OBJ_DESTROY) {
			o->flags |= TOBJ_DESTROYED;
			return obj_free_memory(t, p, o, r);
		}
		if (--o->refs > 0)
			return 0;
		/* The last reference: memory not destroyed yet goes now, the handle too. */
		if (obj_free_memory(t, p, o, r))
			return -ENOMEM;
		obj_drop(p, o);
		return 0;
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
		o = owner_get(p, space, r->addr);
		if (!o)
			return -ENOMEM;
		if (api->op == OP_OWNER_ADDREF)
			o->refs++;
		else if (api->op == OP_OWNER_DESTROY || --o->refs == 0)
			owner_destroy(t, p, o);
		return 0;
	case OP_ERROR_OBJECT:
		/* Only inside a traced creation (depth > 0) does it name that creation's result. */
		th = r->hdr.depth ? thread_get(p, r->hdr.tid) : NULL;
		if (th)
			th->error_depth = r->hdr.depth;
		return 0;
	case OP_QUEUE_GET:
		if (r->hdr.kind != GL_REC_ALLOC || !r->addr)
			return 0;
		q = queue_get(p, r->addr);
		if (!q || (r->aux && !owner_get(p, space, r->aux)))
			return -ENOMEM;
		q->owner = r->aux;
		return 0;
	case OP_QUEUE_SUBMIT:
		q = queue_get(p, r->addr);
		if (!q)
			return -ENOMEM;
		q->submitted++;
		return 0;
	case OP_QUEUE_WATCH:
		if (!(r->hdr.flags & GL_HF_DESC) || r->hdr.size < sizeof(*dr) ||
		    (r->hdr.flags & GL_HF_DESC_READ_FAIL))
			return 0;
		q = queue_get(p, r->addr);
		if (!q)
			return -ENOMEM;
		if (vec_grow((void **)&p->watch, &p->cap_watch, p->nr_watch, sizeof(*p->watch)))
			return -ENOMEM;
		/* WGPUQueueWorkDoneCallbackInfo: userdata1 @24, userdata2 @32 */
		p->watch[p->nr_watch] =
		    (struct queue_watch){.queue = q->handle, .serial = q->submitted};
		memcpy(&p->watch[p->nr_watch].userdata1, dr->desc + 24, 8);
		memcpy(&p->watch[p->nr_watch].userdata2, dr->desc + 32, 8);
		p->nr_watch++;
		return 0;
	case OP_QUEUE_DONE:
		/*
		 * The callback's userdata: arguments 4, 5 (aux, aux2) since the work-done
		 * callback got a message argument, 2, 3 (addr, size) before. The oldest
		 * registration with them completes: a queue finishes its work in order.
		 */
		for (i = 0; i < p->nr_watch; i++) {
			struct queue_watch *w = &p->watch[i];

			if ((w->userdata1 == r->aux && w->userdata2 == r->aux2) ||
			    (w->userdata1 == r->addr && w->userdata2 == r->size))
				break;
		}
		if (i == p->nr_watch) {
			p->c.unmatched_done++;
			return 0;
		}
		q = queue_get(p, p->watch[i].queue);
		if (!q)
			return -ENOMEM;
		if (p->watch[i].serial > q->done)
			q->done = p->watch[i].serial;
		memmove(&p->watch[i], &p->watch[i + 1],
			(p->nr_watch - i - 1) * sizeof(p->watch[0]));
		p->nr_watch--;
		queue_complete(t, p, q);
		return 0;
	default:
		return 0;
	}
}

/*
 * A label arrived (at creation, or by SetLabel): the object's memory moves to the site of its
 * label, so reports split by label and label= rules match.
 */
static int apply_label(struct tracker *t, const struct gl_label_rec *r)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	struct tproc *p = proc_get(t, r->hdr.pid);
	bool joined;
	struct tobj *o;
	struct alloc *a;
	size_t len;

	if (!p)
		return -ENOMEM;
	if (!api || !api->space)
		return 0;
	o = tproc__obj(p, (uint8_t)api->space, r->addr);
	if (!o && (api->flags & CAT_OWNER))
		o = owner_get(p, (uint8_t)api->space, r->addr);
	if (!o)
		return 0;
	len = r->len > GL_LABEL_MAX ? GL_LABEL_MAX : r->len;
	if (r->truncated)
		len = utf8_trim(r->label, len);
	/* SetLabel(NULL) or "" clears it. */
	o->label = len ? label_intern(t, r->label, len) : 0;
	/* Its creation left the class check to its label (obj_create). */
	joined = o->flags & TOBJ_CLASS_OWED;
	o->flags &= (uint8_t)~TOBJ_CLASS_OWED;
	a = alloc_table__find(&p->allocs, o->space, o->handle);
	if (!a || (a->flags & AF_LAYER))
		return 0;
	if (t->sites[tracker__alloc_site(t, a)].label != o->label) {
		uint32_t from = tracker__alloc_site(t, a);
		int32_t stack_id = t->sstacks[a->sstack].stack_id;
		const struct site *old = &t->sites[from];
		struct site_key k = {
		    p->pid,	     old->api,	 old->device, old->caller, stack_id,
		    old->owner_kind, old->owner, 0,	      o->label,	   false};
		uint32_t base = sstack_get(t, site_get(t, &k), stack_id), site, ss;
		bool init = a->flags & AF_INIT;

		/* Rules and init see the allocation as made, in its step, not the label's. */
		if (base == UINT32_MAX || classify(t, base, a->size, tracker__label(t, o->label),
						   init ? -1 : p->step, &k.rule))
			return -ENOMEM;
		k.init = init_site(t, init, &k);
		ss = k.rule || k.init ? sstack_get(t, site_get(t, &k), stack_id) : base;
		if (ss == UINT32_MAX)
			return -ENOMEM;
		site = t->sstacks[ss].site;
		account(t, p, a, -1);
		t->sites[from].allocs--;
		t->sites[from].alloc_bytes -= a->size;
		a->sstack = ss;
		t->sites[site].allocs++;
		t->sites[site].alloc_bytes += a->size;
		account(t, p, a, 1);
		step_change_move(t, p, from, site, a);
		/* Moving within its class is not a new member of it. */
		joined |= t->sites[from].rule != k.rule;
	}
	return joined ? class_check(t, p, a, r->hdr.ts_ns) : 0;
}

/* One record with its meaning; pl says where allocations go in the graph. */
static int apply_op(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r, const struct placement *pl, bool outermost)
{
	struct tthread *th;
	struct tctx *c;
	uint64_t *ev;

	if (is_obj_op(api->op) && r->hdr.kind != GL_REC_ALLOC_FAIL)
		return apply_obj(t, p, api, r);

	switch (r->hdr.kind) {
	case GL_REC_ALLOC:
		if (api->op == OP_ALLOC)
			return do_alloc(t, p, api, r, pl);
		if (api->op == OP_REALLOC) {
			/* realloc(old, n): old is gone once the call succeeded */
			if (r->aux && r->aux != r->addr) {
				struct gl_call_rec f = *r;

				f.addr = r->aux;
				do_free(t, p, api, &f);
			} else if (r->aux) {
				struct alloc *a = alloc_table__find(&p->allocs, SPACE_HOST, r->aux);

				if (a)
					release(t, p, a);
			}
			return do_alloc(t, p, api, r, pl);
		}
		break;
	case GL_REC_ALLOC_FAIL:
		/* A failure under an outer call is that call's failure, counted there. */
		if (outermost)
			count_failure(t, p, api, r);
		return 0;
	case GL_REC_FREE:
		return api->op == OP_FREE || api->op == OP_FREE_ASYNC ? do_free(t, p, api, r) : 0;
	case GL_REC_SYNC:
	case GL_REC_CALL:
		break;
	default:
		return 0;
	}
	if (r->ret) {
		if (outermost)
			count_failure(t, p, api, r);
		return 0;
	}
	switch (api->op) {
	case OP_SYNC_STREAM: {
		uint64_t key = stream_key(api, r->hdr.tid, r->aux);

		complete(t, p, UNTIL_STREAM_SYNC, key == 0, key, -2, r->aux2);
		break;
	}
	case OP_SYNC_DEVICE:
		complete(t, p, UNTIL_DEVICE_SYNC, true, 0, thread_device(p, r->hdr.tid), r->aux2);
		break;
	case OP_SYNC_EVENT:
		ev = hmap__get(&p->events, r->aux, 0);
		/* An event never recorded (or recorded before attach) completes nothing. */
		if (ev)
			complete(t, p, UNTIL_EVENT_SYNC, *ev == 0, *ev, -2, r->aux2);
		break;
	case OP_EVENT_RECORD:
		return hmap__put(&p->events, r->addr, 0, stream_key(api, r->hdr.tid, r->aux));
	case OP_SET_DEVICE:
		th = thread_get(p, r->hdr.tid);
		if (!th)
			return -ENOMEM;
		th->device = (int16_t)r->aux;
		break;
	case OP_DEVICE_RESET:
		device_reset(t, p, thread_device(p, r->hdr.tid));
		break;
	case OP_CTX_CREATE:
	case OP_CTX_RETAIN:
		c = ctx_add(p, r->addr, (int16_t)r->aux, api->op == OP_CTX_RETAIN);
		if (!c)
			return -ENOMEM;
		c->refs++;
		if (api->op == OP_CTX_RETAIN)
			break;
		/* A created context is current on the creating thread. */
		__attribute__((fallthrough));
	case OP_CTX_SET:
		th = thread_get(p, r->hdr.tid);
		if (!th)
			return -ENOMEM;
		th->ctx = r->addr;
		c = ctx_find(p, r->addr);
		if (c)
			th->device = c->device;
		break;
	case OP_CTX_DESTROY:
		c = ctx_find(p, r->addr);
		release_where(t, p, of_ctx, &(uint64_t){r->addr});
		if (c)
			c->destroyed = true;
		break;
	case OP_PRIMARY_RELEASE:
	case OP_PRIMARY_RESET: {
		size_t i;

		for (i = 0; i < p->nr_ctxs; i++) {
			c = &p->ctxs[i];
			if (!c->primary || c->destroyed || c->device != (int16_t)r->aux)
				continue;
			if (api->op == OP_PRIMARY_RELEASE && c->refs > 1) {
				c->refs--;
				return 0;
			}
			c->refs = 0;
			/* Like cudaDeviceReset, which is this underneath: pool memory stays. */
			device_reset(t, p, c->device);
			c->destroyed = true;
		}
		break;
	}
	case OP_VMM_MAP:
		return vmm_map(p, r);
	case OP_VMM_UNMAP:
		vmm_unmap(t, p, r);
		break;
	case OP_GROUP_START:
		th = thread_get(p, r->hdr.tid);
		if (!th)
			return -ENOMEM;
		th->group_depth++;
		break;
	case OP_COMM_DESTROY: {
		size_t i;

		for (i = 0; i < p->nr_comms; i++)
			if (p->comms[i].comm == r->addr)
				p->comms[i].destroyed = true;
		break;
	}
	default:
		break;
	}
	return 0;
}

/* ---- call trees: count once at the outermost call ---- */

struct node {
	const struct gl_call_rec *r;
	const struct cat_api *api;
	size_t first_child; /* children are nodes [first_child, self) not owned by others */
	size_t parent;
};

/*
 * Lower layers of the same memory: the runtime allocates through the driver, NCCL through
 * the runtime and the driver, the driver's VMM underneath it.
 */
static bool is_layer_family(unsigned int outer, unsigned int inner)
{
	switch (outer) {
	case GL_FAM_CUDART:
		return inner == GL_FAM_CUDA || inner == GL_FAM_VMM;
	case GL_FAM_NCCL:
		return inner == GL_FAM_CUDART || inner == GL_FAM_CUDA || inner == GL_FAM_VMM;
	case GL_FAM_CUDA:
		return inner == GL_FAM_VMM;
	default:
		return false;
	}
}

static int apply_tree(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
		      const struct placement *scope, const struct placement *layer, bool outermost);

/* An inner allocation returning the outer one's address (cudaMallocHost -> cudaHostAlloc). */
static bool same_memory(const struct alloc *outer, const struct cat_api *api,
			const struct gl_call_rec *r)
{
	return outer && r->hdr.kind == GL_REC_ALLOC && api->op == OP_ALLOC &&
	       (uint8_t)api->space == outer->space && r->addr == outer->addr;
}

/*
 * Children of a node. Under an allocation (outer != NULL), calls of a lower layer family
 * are that allocation's layers; anything else (a malloc inside cudaMalloc) is memory of its
 * own, placed by the enclosing scope (a communicator being created, or nothing).
 */
static int apply_children(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
			  const struct placement *scope, const struct placement *layer,
			  const struct alloc *outer)
{
	unsigned int fam = GL_API_FAMILY(nodes[self].r->hdr.api);
	struct placement lp;
	size_t i;
	int err;

	if (outer)
		lp = (struct placement){.owner_kind = OWNER_LAYER,
					.owner = tracker__alloc_site(t, outer),
					.outer_space = outer->space,
					.outer_addr = outer->addr};
	for (i = nodes[self].first_child; i < self; i++) {
		const struct placement *l = layer;

		if (nodes[i].parent != self)
			continue;
		if (outer)
			l = &lp;
		/* Only calls one layer further down stay in the layer (not cudaMalloc's
		 * bookkeeping malloc, nor a malloc inside the driver's cuCtxSetCurrent). */
		if (l &&
		    !(nodes[i].api && (is_layer_family(fam, GL_API_FAMILY(nodes[i].r->hdr.api)) ||
				       same_memory(outer, nodes[i].api, nodes[i].r))))
			l = NULL;
		err = apply_tree(t, p, nodes, i, scope, l, false);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A communicator made: everything allocated on this thread while it was being created is its
 * own. ncclCommInitAll makes one per device on the calling thread (its out-array, read at
 * return, lists them in device order when no devlist is given): an allocation goes to the
 * communicator of the device the thread was on when it was made.
 */
static int apply_comm_init(struct tracker *t, struct tproc *p, struct node *nodes, size_t self)
{
	const struct gl_call_rec *r = nodes[self].r;
	struct site_key k = {p->pid,	r->hdr.api,  thread_device(p, r->hdr.tid),
			     r->caller, r->stack_id, OWNER_NONE,
			     0,		0,	     0,
			     false};
	uint32_t site = site_get(t, &k);
	uint64_t comms[GL_DESC_MAX / 8] = {r->addr};
	struct tthread *th;
	size_t nr = 1, i, j;
	int err;

	if (site == UINT32_MAX)
		return -ENOMEM;
	if (r->hdr.api == GL_API_NCCL_COMM_INIT_ALL && (r->hdr.flags & GL_HF_DESC) &&
	    !(r->hdr.flags & GL_HF_DESC_READ_FAIL) && r->hdr.size >= sizeof(struct gl_desc_rec)) {
		const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;

		nr = r->aux < GL_DESC_MAX / 8 ? (size_t)r->aux : GL_DESC_MAX / 8;
		memcpy(comms, d->desc, nr * sizeof(comms[0]));
	}
	for (i = 0; i < nr; i++)
		if (comms[i] && comm_add(p, comms[i], site, r->hdr.ts_ns))
			return -ENOMEM;
	th = thread_get(p, r->hdr.tid);
	if (!th)
		return -ENOMEM;
	/* Inside a group it only queued: the outermost ncclGroupEnd initialises it. */
	if (th->group_depth && nr == 1 && th->nr_group_comms < MAX_GROUP_COMMS)
		th->group_comms[th->nr_group_comms++] = (struct group_comm){r->addr, k.device};
	for (j = nodes[self].first_child; j < self; j++) {
		struct placement comm = {.owner_kind = OWNER_COMM, .owner = comms[0]};
		int16_t dev = thread_device(p, nodes[j].r->hdr.tid);

		if (nodes[j].parent != self)
			continue;
		if (nr > 1 && dev >= 0 && (size_t)dev < nr && comms[dev])
			comm.owner = comms[dev];
		err = apply_tree(t, p, nodes, j, &comm, NULL, false);
		if (err)
			return err;
	}
	return 0;
}

/* The communicator of a group made on device dev; the only one when the group made one. */
static uint64_t group_comm(const struct tthread *th, int16_t dev)
{
	unsigned int i;

	for (i = 0; i < th->nr_group_comms; i++)
		if (th->group_comms[i].device == dev)
			return th->group_comms[i].comm;
	return th->nr_group_comms == 1 ? th->group_comms[0].comm : 0;
}

/*
 * The outermost ncclGroupEnd initialises the communicators the group's inits returned at
 * once: what is allocated inside it, on this thread or on the threads it made (adopted), is
 * the communicator's of the device the allocating thread was on. It ends the group even
 * when it fails.
 */
static int apply_group_end(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
			   const struct placement *scope, const struct placement *layer,
			   bool outermost)
{
	const struct gl_call_rec *r = nodes[self].r;
	struct tthread *th = thread_get(p, r->hdr.tid);
	size_t j;
	int err = 0;

	if (!th)
		return -ENOMEM;
	if (th->group_depth != 1 || !th->nr_group_comms) {
		err = apply_children(t, p, nodes, self, scope, layer, NULL);
	} else {
		for (j = nodes[self].first_child; j < self && !err; j++) {
			struct placement comm = {.owner_kind = OWNER_COMM};

			if (nodes[j].parent != self)
				continue;
			comm.owner = group_comm(th, thread_device(p, nodes[j].r->hdr.tid));
			err = apply_tree(t, p, nodes, j, comm.owner ? &comm : scope, NULL, false);
		}
	}
	if (th->group_depth && !--th->group_depth)
		th->nr_group_comms = 0;
	return err ? err : apply_op(t, p, nodes[self].api, r, scope, outermost);
}

static int apply_tree(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
		      const struct placement *scope, const struct placement *layer, bool outermost)
{
	const struct gl_call_rec *r = nodes[self].r;
	const struct cat_api *api = nodes[self].api;
	struct alloc *a, entry;
	int err;

	if (!api)
		return apply_children(t, p, nodes, self, scope, layer, NULL);
	if (r->hdr.kind == GL_REC_ALLOC && api->op == OP_COMM_INIT && r->addr)
		return apply_comm_init(t, p, nodes, self);
	if (api->op == OP_GROUP_END)
		return apply_group_end(t, p, nodes, self, scope, layer, outermost);
	if (r->hdr.kind != GL_REC_ALLOC || api->op != OP_ALLOC) {
		/* Any other call: what happened inside it first, then the call itself. */
		err = apply_children(t, p, nodes, self, scope, layer, NULL);
		if (err)
			return err;
		return apply_op(t, p, api, r, layer ? layer : scope, outermost);
	}
	if (layer) {
		struct alloc *outer =
		    alloc_table__find(&p->allocs, layer->outer_space, layer->outer_addr);

		/* The same address one layer down: the same memory, merged. */
		if (outer && outer->space == api->space && r->addr == outer->addr) {
			p->c.layers++;
			if (!outer->layer_api) {
				outer->layer_api = r->hdr.api;
				if (!(outer->flags & AF_PENDING))
					t->sites[tracker__alloc_site(t, outer)].layer_count++;
				t->sites[tracker__alloc_site(t, outer)].layer_api = r->hdr.api;
			}
			entry = *outer;
			return apply_children(t, p, nodes, self, scope, layer, &entry);
		}
	}
	err = do_alloc(t, p, api, r, layer ? layer : scope);
	if (err)
		return err;
	a = r->addr ? alloc_table__find(&p->allocs, (uint8_t)api->space, r->addr) : NULL;
	if (!a)
		return apply_children(t, p, nodes, self, scope, NULL, NULL);
	/* A copy: children may grow the table under a pointer. */
	entry = *a;
	return apply_children(t, p, nodes, self, scope, NULL, &entry);
}

/* Apply a thread's held records plus the outermost call r that closes them. */
static int apply_held(struct tracker *t, struct tproc *p, struct tthread *th,
		      const struct gl_call_rec *r)
{
	size_t n = (th ? th->nr_held : 0) + (r ? 1 : 0), i, top = 0;
	struct node *nodes;
	size_t *stack;
	int err = 0;

	if (!n)
		return 0;
	nodes = calloc(n, sizeof(*nodes));
	stack = calloc(n, sizeof(*stack));
	if (!nodes || !stack) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Records arrive in completion order (children before their caller): a record at
	 * depth d adopts every unclaimed record deeper than d that came before it. */
	for (i = 0; i < n; i++) {
		const struct gl_call_rec *rec = i < n - (r ? 1 : 0) ? &th->held[i].call : r;

		nodes[i].r = rec;
		nodes[i].api = cat_by_api(rec->hdr.api);
		nodes[i].parent = SIZE_MAX;
		nodes[i].first_child = i;
		while (top && nodes[stack[top - 1]].r->hdr.depth > rec->hdr.depth) {
			nodes[stack[top - 1]].parent = i;
			nodes[i].first_child = stack[top - 1];
			top--;
		}
		stack[top++] = i;
	}
	for (i = 0; i < top && !err; i++) {
		struct placement none = {0};

		err = apply_tree(t, p, nodes, stack[i], &none, NULL, true);
	}
cleanup:
	if (th) {
		th->nr_held = 0;
		th->adopt_ready = 0;
	}
	free(nodes);
	free(stack);
	return err;
}

static int hold(struct tthread *th, const struct gl_hdr *h)
{
	size_t len = h->size < sizeof(struct gl_desc_rec) ? h->size : sizeof(struct gl_desc_rec);

	if (vec_grow((void **)&th->held, &th->cap_held, th->nr_held, sizeof(*th->held)))
		return -ENOMEM;
	memset(&th->held[th->nr_held], 0, sizeof(th->held[0]));
	memcpy(&th->held[th->nr_held], h, len);
	th->nr_held++;
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct tthread *x = *(struct tthread *const *)a, *y = *(struct tthread *const *)b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The call that made threads to do its work returns on th: the calls those threads finished
 * meanwhile join th's held records, one thread after the other in the order they were made,
 * one level below that call, so that its tree owns them (a communicator's memory, by the
 * device each thread was on). What they do afterwards is their own.
 */
static int adopt(struct tproc *p, struct tthread *th)
{
	const struct hmap_slot *s;
	struct tthread **v;
	size_t i, k, n = 0;
	int err = 0;

	v = calloc(th->nr_adoptees, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; n < th->nr_adoptees && hmap__next(&p->threads, &i, &s);) {
		struct tthread *c = (struct tthread *)(uintptr_t)s->val;

		if (c != th && c->adopter == th->tid)
			v[n++] = c;
	}
	qsort(v, n, sizeof(*v), cmp_tid);
	for (i = 0; i < n && !err; i++) {
		struct tthread *c = v[i];

		for (k = 0; k < c->adopt_ready && !err; k++) {
			struct gl_desc_rec rec = c->held[k];

			rec.call.hdr.depth += th->adoptees_depth + 1;
			err = hold(th, &rec.call.hdr);
		}
		if (err)
			break;
		memmove(c->held, c->held + c->adopt_ready,
			(c->nr_held - c->adopt_ready) * sizeof(*c->held));
		c->nr_held -= c->adopt_ready;
		c->adopt_ready = 0;
		c->adopter = 0;
	}
	th->nr_adoptees = 0;
	free(v);
	return err;
}

/* GL_TASK_THREAD: thread tid was made by ppid inside a call that hands it its work. */
static int apply_thread_made(struct tracker *t, const struct gl_task_rec *r)
{
	struct tproc *p = proc_get(t, r->hdr.pid);
	struct tthread *c, *parent;

	if (!p)
		return -ENOMEM;
	c = thread_get(p, r->hdr.tid);
	parent = thread_get(p, r->ppid);
	if (!c || !parent)
		return -ENOMEM;
	/* One adopting call per thread at a time: the innermost BPF saw open. */
	if (c == parent || c->adopter || c->nr_held ||
	    (parent->nr_adoptees && parent->adoptees_depth != r->hdr.depth))
		return 0;
	c->adopter = r->ppid;
	c->adopt_depth = r->hdr.depth;
	parent->adoptees_depth = r->hdr.depth;
	parent->nr_adoptees++;
	return 0;
}

static int apply_call(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	struct tthread *th;
	int err;

	if (api && api->op != OP_RENDEZVOUS)
		p->c.calls++;
	if (!api || api->op == OP_RENDEZVOUS)
		return 0;
	th = thread_get(p, r->hdr.tid);
	if (!th)
		return -ENOMEM;
	/* A new allocation may reuse an address whose lower-layer free never came: expected
	 * frees do not outlive the thread's next allocation. */
	if (th->nr_expect && r->hdr.kind == GL_REC_ALLOC && !r->hdr.depth)
		th->nr_expect = 0;
	if (th->nr_adoptees && r->hdr.depth == th->adoptees_depth) {
		err = adopt(p, th);
		if (err)
			return err;
	}
	if (th->adopter && th->nr_held >= MAX_HELD)
		th->adopter = 0; /* never returns: take it as the thread's own */
	if (th->adopter && !r->hdr.depth) {
		/* Finished on a thread made to do another call's work: it waits for that call. */
		err = hold(th, &r->hdr);
		th->adopt_ready = th->nr_held;
		return err;
	}
	if (r->hdr.depth) {
		if (th->nr_held < MAX_HELD)
			return hold(th, &r->hdr);
		/* A thread stuck inside one call: take what it held as calls of their own. */
		err = apply_held(t, p, th, NULL);
		if (err)
			return err;
		return hold(th, &r->hdr);
	}
	if (th->nr_held || (r->hdr.kind == GL_REC_ALLOC && api->op == OP_COMM_INIT) ||
	    api->op == OP_GROUP_END)
		err = apply_held(t, p, th, r);
	else /* the common case, nothing nested: no tree to build */
		err = apply_op(t, p, api, r, &(struct placement){0}, true);
	/* An error-object mark not taken by the creation it was made in is stale now. */
	if (r->hdr.kind != GL_REC_NOTIFY && r->hdr.kind != GL_REC_FREE &&
	    th->error_depth > r->hdr.depth)
		th->error_depth = 0;
	return err;
}

/* Records still held when a process ends belong to calls that never returned. */
static int flush_threads(struct tracker *t, struct tproc *p)
{
	const struct hmap_slot *s;
	size_t i;
	int err = 0;

	for (i = 0; hmap__next(&p->threads, &i, &s) && !err;) {
		struct tthread *th = (struct tthread *)(uintptr_t)s->val;

		if (th->nr_held)
			err = apply_held(t, p, th, NULL);
	}
	return err;
}

static void apply_proc(struct tracker *t, const struct gl_proc_rec *r)
{
	struct tproc *p =
	    r->event == GL_PROC_ATTACH ? proc_get(t, r->hdr.pid) : tracker__proc(t, r->hdr.pid);

	if (!p)
		return;
	switch (r->event) {
	case GL_PROC_ATTACH:
		p->attached = true;
		p->start_ticks = r->start_ticks;
		memcpy(p->comm, r->comm, sizeof(p->comm));
		p->comm[sizeof(p->comm) - 1] = 0;
		if (r->hdr.size >= sizeof(*r)) {
			p->ppid = r->ppid;
			p->ns_pid = r->ns_pid;
		}
		if (!p->first_ts_ns)
			p->first_ts_ns = r->hdr.ts_ns;
		break;
	case GL_PROC_EXEC:
		/* Its memory went with its old program: the same end as an exit. */
		flush_threads(t, p);
		tracker__end_checks(t, p, r->hdr.ts_ns);
		p->exited = true;
		p->execed = true;
		p->exit_status = -1;
		break;
	case GL_PROC_EXIT:
		flush_threads(t, p);
		tracker__end_checks(t, p, r->hdr.ts_ns);
		p->exited = true;
		p->exit_status = r->status;
		break;
	case GL_PROC_DETACH:
	case GL_PROC_END:
		flush_threads(t, p);
		tracker__end_checks(t, p, r->hdr.ts_ns);
		p->detached = true;
		p->ended = r->event == GL_PROC_END;
		break;
	}
	p->last_ts_ns = r->hdr.ts_ns;
}

void tracker__prefetch(const struct tracker *t, const struct gl_hdr *h)
{
	const struct gl_call_rec *r = (const struct gl_call_rec *)h;
	const struct cat_api *api;
	const struct tproc *p = NULL;
	size_t i;

	if ((h->kind != GL_REC_ALLOC && h->kind != GL_REC_FREE) || h->size < sizeof(*r))
		return;
	for (i = t->nr_procs; i-- && !p;)
		if (t->procs[i]->pid == (pid_t)h->pid)
			p = t->procs[i];
	api = cat_by_api(h->api);
	if (p && api)
		alloc_table__prefetch(&p->allocs, (uint8_t)api->space, r->addr);
}

int tracker__apply(struct tracker *t, const struct gl_hdr *h)
{
	struct tproc *p;

	t->records++;
	if (h->ts_ns > t->last_ts_ns)
		t->last_ts_ns = h->ts_ns;
	switch (h->kind) {
	case GL_REC_ALLOC:
	case GL_REC_ALLOC_FAIL:
	case GL_REC_FREE:
	case GL_REC_SYNC:
	case GL_REC_CALL:
	case GL_REC_NOTIFY:
		if (h->size < sizeof(struct gl_call_rec))
			break;
		p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		p->records++;
		if (!p->first_ts_ns)
			p->first_ts_ns = h->ts_ns;
		p->last_ts_ns = h->ts_ns;
		return apply_call(t, p, (const struct gl_call_rec *)h);
	case GL_REC_LABEL:
		if (h->size < sizeof(struct gl_label_rec))
			break;
		return apply_label(t, (const struct gl_label_rec *)h);
	case GL_REC_CODE:
		return 0;
	case GL_REC_TICK:
		return 0;
	case GL_REC_TASK:
		/* What it means for a process (a child to trace, an exit status) reaches the
		 * analysis as GL_REC_PROC from user space, once acted on; a thread made to do a
		 * call's work is the tracker's own business. */
		if (h->size >= sizeof(struct gl_task_rec) &&
		    ((const struct gl_task_rec *)h)->event == GL_TASK_THREAD)
			return apply_thread_made(t, (const struct gl_task_rec *)h);
		return 0;
	case GL_REC_PROC:
		if (h->size < GL_PROC_REC_V1_SIZE)
			break;
		apply_proc(t, (const struct gl_proc_rec *)h);
		return 0;
	case GL_REC_LOSS: {
		size_t n = h->size - sizeof(*h);

		if (h->size < GL_LOSS_REC_V1_SIZE)
			break;
		p = tracker__proc(t, h->pid);
		if (!p)
			p = proc_get(t, h->pid);
		if (!p)
			return -ENOMEM;
		/* Older records have fewer counters, newer ones more: take those we know. */
		memcpy(p->loss, ((const struct gl_loss_rec *)h)->counts,
		       n < sizeof(p->loss) ? n : sizeof(p->loss));
		return 0;
	}
	default:
		break;
	}
	t->bad_records++;
	return -EINVAL;
}

void tracker__set_step(struct tracker *t, pid_t pid, int64_t step, uint64_t ts_ns)
{
	struct tproc *p = tracker__proc(t, pid);
	size_t i;

	if (!p || p->exited)
		return;
	p->step = step;
	p->step_ts_ns = ts_ns;
	for (i = 0; i < p->nr_step_changes; i++)
		t->sites[p->step_changes[i].site].step_change = 0;
	p->nr_step_changes = 0;
	tracker__window_checks(t, p, ts_ns);
}

void tracker__set_init_retained(struct tracker *t, bool on)
{
	t->init_retained = on;
}

void tracker__window_checks(struct tracker *t, struct tproc *p, uint64_t ts_ns)
{
	size_t i;

	if (!t->rules)
		return;
	for (i = 0; i < p->nr_pend; i++) {
		struct pending_free *pf = &p->pend[i];
		const struct rule *ru;
		struct alloc *a;

		if (!pf->rule || pf->late)
			continue;
		ru = &t->rules->v[pf->rule - 1];
		if (!ru->window_ns || ts_ns - pf->ts_ns <= ru->window_ns)
			continue;
		a = alloc_table__find(&p->allocs, pf->space, pf->addr);
		pf->late = true;
		add_violation(p, VIOL_FREE_NEVER_COMPLETED, pf->rule - 1,
			      a ? tracker__alloc_site(t, a) : UINT32_MAX, a ? a->size : 0, 1,
			      ts_ns);
	}
}

void tracker__end_checks(struct tracker *t, struct tproc *p, uint64_t ts_ns)
{
	size_t i;

	tracker__window_checks(t, p, ts_ns);
	if (!t->rules)
		return;
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (s->pid != p->pid || !s->rule || !s->live_count ||
		    !t->rules->v[s->rule - 1].release_at_end)
			continue;
		add_violation(p, VIOL_NOT_RELEASED, s->rule - 1, (uint32_t)i, s->live_bytes,
			      s->live_count, ts_ns);
	}
}
