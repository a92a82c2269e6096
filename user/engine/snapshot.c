// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Snapshots (snapshot.h): a tracker's live state as the records that would have made it, fed
 * to a fresh analysis by the same tracker code as any capture. Each record is what the real
 * call looked like to the tracker; only the threads differ: memory is made on synthetic
 * threads (tids above any the kernel hands out), one per device and current context, so a
 * real thread's device and context are set by records of their own and what an allocation
 * gets from its thread (its device, its context as owner) comes from the thread made for it.
 * Calls: analysis.h (the tracker, the timeline), tracker.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "engine/analysis.h"
#include "tracker/rules.h"
#include "engine/snapshot.h"
#include "tracker/threads.h"
#include "lib/vec.h"
#include "probe/catalog.h"

/* Synthetic threads: above PID_MAX_LIMIT (2^22), so never a real tid. */
#define SYN_TID	    0xfff00000u
#define SYN_CTX_TID (SYN_TID - 1) /* makes contexts (a create leaves it current) */

/* Devices whose NVML record is carried (as the timeline keeps them). */
#define SNAP_DEVICES 16

struct syn_thread {
	int16_t device;
	uint64_t ctx;
	uint32_t tid;
};

/* An allocation and the key it is collected under (a layer's outer site, a comm). */
struct keyed {
	uint64_t key;
	const struct alloc *a;
};

/* What one process's snapshot needs, collected before the first phase. */
struct proc_plan {
	const struct tproc *p;
	struct keyed *layers; /* lower layers by the site of the allocation above */
	size_t nr_layers, cap_layers;
	struct keyed *comm; /* memory a communicator owns, by communicator */
	size_t nr_comm, cap_comm;
	bool *layer_done; /* per layers[] entry */
	struct syn_thread *syn;
	size_t nr_syn, cap_syn;
};

struct emitter {
	snapshot_emit_fn emit;
	void *ctx;
	const struct analysis *an;
	const struct tracker *t;
	uint64_t ts;
	uint64_t n;
	int err;
	struct snapshot_info *si;
};

static void put(struct emitter *e, const struct gl_hdr *h)
{
	if (e->err)
		return;
	e->err = e->emit(e->ctx, h);
	e->n++;
}

static struct gl_call_rec call_rec(const struct emitter *e, pid_t pid, uint8_t kind, uint16_t api,
				   uint32_t tid, uint8_t depth)
{
	struct gl_call_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr.size = sizeof(r);
	r.hdr.kind = kind;
	r.hdr.depth = depth;
	r.hdr.api = api;
	r.hdr.pid = (uint32_t)pid;
	r.hdr.tid = tid;
	r.hdr.ts_ns = e->ts;
	r.stack_id = -1;
	return r;
}

static void put_call(struct emitter *e, const struct gl_call_rec *r)
{
	put(e, &r->hdr);
}

/* ---- threads ---- */

static const struct tctx *ctx_of(const struct tproc *p, uint64_t ctx)
{
	size_t i;

	for (i = 0; i < p->nr_ctxs; i++)
		if (p->ctxs[i].ctx == ctx && !p->ctxs[i].destroyed)
			return &p->ctxs[i];
	return NULL;
}

/* Make tid current on ctx (if any), then on device (if it is not that context's). */
static void set_thread(struct emitter *e, const struct tproc *p, uint32_t tid, int16_t device,
		       uint64_t ctx)
{
	int16_t now = 0;
	struct gl_call_rec r;

	if (ctx) {
		const struct tctx *c = ctx_of(p, ctx);

		r = call_rec(e, p->pid, GL_REC_CALL, GL_API_CU_CTX_SET_CURRENT, tid, 0);
		r.addr = ctx;
		put_call(e, &r);
		if (c)
			now = c->device;
	}
	if (device >= 0 && device != now) {
		r = call_rec(e, p->pid, GL_REC_CALL, GL_API_CUDA_SET_DEVICE, tid, 0);
		r.aux = (uint64_t)(uint16_t)device;
		put_call(e, &r);
	}
}

/* The synthetic thread on (device, ctx), made on first use. 0 without memory. */
static uint32_t syn_thread(struct emitter *e, struct proc_plan *pl, int16_t device, uint64_t ctx)
{
	size_t i;

	if (device < 0)
		device = 0; /* host memory: any thread */
	for (i = 0; i < pl->nr_syn; i++)
		if (pl->syn[i].device == device && pl->syn[i].ctx == ctx)
			return pl->syn[i].tid;
	if (vec_grow((void **)&pl->syn, &pl->cap_syn, pl->nr_syn, sizeof(*pl->syn))) {
		e->err = -ENOMEM;
		return 0;
	}
	pl->syn[pl->nr_syn] = (struct syn_thread){
	    .device = device, .ctx = ctx, .tid = SYN_TID + (uint32_t)pl->nr_syn};
	set_thread(e, pl->p, pl->syn[pl->nr_syn].tid, device, ctx);
	return pl->syn[pl->nr_syn++].tid;
}

/* ---- allocations ---- */

static const struct site *site_of(const struct tracker *t, const struct alloc *a)
{
	return &t->sites[tracker__alloc_site(t, a)];
}

/* What the snapshot cannot make again: WebGPU objects (their bytes are in descriptors). */
static bool unsupported(const struct site *s)
{
	return GL_API_FAMILY(s->api) == GL_FAM_WEBGPU || s->owner_kind == OWNER_DEVICE;
}

static void skip(struct emitter *e, const struct alloc *a)
{
	e->si->skipped_bytes += a->size;
	e->si->skipped_count++;
}

/* The free that leaves an allocation of api pending (until: what completes it). */
static uint16_t free_api(uint16_t api, uint8_t space, bool async)
{
	const struct cat_api *c = cat_by_api(api);

	switch (GL_API_FAMILY(api)) {
	case GL_FAM_CUDART:
		if (c && c->mem == MEM_HOST_PINNED)
			return GL_API_CUDA_FREE_HOST;
		return async ? GL_API_CUDA_FREE_ASYNC : GL_API_CUDA_FREE;
	case GL_FAM_CUDA:
		if (c && c->mem == MEM_HOST_PINNED)
			return GL_API_CU_MEM_FREE_HOST;
		return async ? GL_API_CU_MEM_FREE_ASYNC : GL_API_CU_MEM_FREE;
	case GL_FAM_VMM:
		return space == SPACE_VMM_RANGE ? GL_API_CU_MEM_ADDRESS_FREE
						: GL_API_CU_MEM_RELEASE;
	case GL_FAM_NCCL:
		if (space == SPACE_NCCL_REG)
			return GL_API_NCCL_COMM_DEREGISTER;
		if (space == SPACE_NCCL_WIN)
			return GL_API_NCCL_COMM_WINDOW_DEREGISTER;
		return GL_API_NCCL_MEM_FREE;
	case GL_FAM_LIBC:
		return space == SPACE_MMAP ? GL_API_MUNMAP : GL_API_FREE;
	default:
		return GL_API_NONE;
	}
}

/* The pending free of a, as the free call that issued it. */
static void put_pending(struct emitter *e, struct proc_plan *pl, const struct alloc *a,
			uint32_t tid)
{
	const struct tproc *p = pl->p;
	const struct site *s = site_of(e->t, a);
	const struct pending_free *pf = NULL;
	struct gl_call_rec r;
	uint64_t stream;
	size_t i;

	for (i = 0; i < p->nr_pend && !pf; i++)
		if (p->pend[i].addr == a->addr && p->pend[i].space == a->space)
			pf = &p->pend[i];
	if (!pf)
		return;
	r = call_rec(e, p->pid, GL_REC_FREE,
		     free_api(s->api, a->space, pf->until == UNTIL_STREAM_SYNC), tid, 0);
	r.addr = a->addr;
	/* When it was issued: a sync that began after it completes it. */
	r.hdr.ts_ns = pf->ts_ns;
	/* The stream as pending.c keys it: a thread's per-thread stream, the legacy one, or a
	 * handle. */
	stream = pf->stream;
	if ((stream & 0xffffffffULL) == 0x2 && stream >> 32) {
		r.hdr.tid = (uint32_t)(stream >> 32);
		r.aux = 0x2; /* cudaStreamPerThread */
	} else {
		r.aux = stream;
	}
	if (r.hdr.api)
		put_call(e, &r);
}

/* The record of allocation a at depth, on tid. */
static void put_alloc(struct emitter *e, const struct tproc *p, const struct alloc *a, uint32_t tid,
		      uint8_t depth, uint64_t extra_refs)
{
	const struct site *s = site_of(e->t, a);
	const struct cat_api *api = cat_by_api(s->api);
	struct gl_desc_rec d;
	uint64_t i;

	memset(&d, 0, sizeof(d));
	d.call = call_rec(e, p->pid, GL_REC_ALLOC, s->api, tid, depth);
	d.call.addr = a->addr;
	d.call.size = a->size;
	d.call.caller = s->caller;
	d.call.stack_id = e->t->sstacks[a->sstack].stack_id;
	if (api && api->mem == MEM_REG)
		d.call.aux = s->owner; /* the communicator */
	if (api && api->space == SPACE_MMAP)
		d.call.aux = 0x20; /* MAP_ANONYMOUS */
	if (api && (api->flags & CAT_VMM_DEVICE) && s->device >= 0) {
		/* CUmemAllocationProp: location.type 1 (device) @8, location.id @12 */
		int32_t loc = 1, id = s->device;

		d.call.hdr.size = sizeof(d);
		d.call.hdr.flags |= GL_HF_DESC;
		memcpy(d.desc + 8, &loc, sizeof(loc));
		memcpy(d.desc + 12, &id, sizeof(id));
	}
	for (i = 0; i <= extra_refs; i++)
		put(e, &d.call.hdr);
}

static int cmp_keyed(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;

	return a->key < b->key ? -1 : a->key > b->key;
}

/* The first of v[0, n) with key k, or n. */
static size_t keyed_find(const struct keyed *v, size_t n, uint64_t k)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[mid].key < k)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * a and, nested under it one level deeper, the lower layers whose outer site is a's (each
 * taken once: a layer records only its outer site, so all go under the first allocation of
 * that site), in completion order: the layers first.
 */
static void put_tree(struct emitter *e, struct proc_plan *pl, const struct alloc *a, uint32_t tid,
		     uint8_t depth)
{
	uint32_t site = tracker__alloc_site(e->t, a);
	size_t i;

	if (a->layer_api) {
		/* A lower layer at its own address: merged into it. */
		struct gl_call_rec r =
		    call_rec(e, pl->p->pid, GL_REC_ALLOC, a->layer_api, tid, (uint8_t)(depth + 1));

		r.addr = a->addr;
		r.size = a->size;
		put_call(e, &r);
	}
	for (i = keyed_find(pl->layers, pl->nr_layers, site);
	     i < pl->nr_layers && pl->layers[i].key == site && depth + 1 < GL_MAX_DEPTH; i++) {
		if (pl->layer_done[i])
			continue;
		pl->layer_done[i] = true;
		put_tree(e, pl, pl->layers[i].a, tid, (uint8_t)(depth + 1));
	}
	put_alloc(e, pl->p, a, tid, depth, 0);
}

/* The thread an allocation at site s is made on: its device, and its context as owner. */
static uint32_t thread_for(struct emitter *e, struct proc_plan *pl, const struct site *s)
{
	return syn_thread(e, pl, s->device, s->owner_kind == OWNER_CTX ? s->owner : 0);
}

/* Every allocation of the phase that is neither a layer nor a communicator's. */
static void put_allocs(struct emitter *e, struct proc_plan *pl, bool init)
{
	const struct tproc *p = pl->p;
	size_t i;

	for (i = 0; i < p->allocs.cap && !e->err; i++) {
		const struct alloc *a = &p->allocs.slots[i];
		const struct site *s;
		const struct cat_api *api;
		uint64_t *refs = NULL;
		uint32_t tid;

		if (!a->addr || (a->flags & AF_LAYER) || !(a->flags & AF_INIT) != !init)
			continue;
		s = site_of(e->t, a);
		api = cat_by_api(s->api);
		if (unsupported(s) || !api) {
			skip(e, a);
			continue;
		}
		if (s->owner_kind == OWNER_COMM && api->mem != MEM_REG)
			continue; /* with its communicator */
		tid = thread_for(e, pl, s);
		if (!tid)
			return;
		if (api->mem == MEM_REG && !(a->flags & AF_PENDING))
			refs = hmap__get(&p->regrefs, a->space, a->addr);
		if (refs)
			put_alloc(e, p, a, tid, 0, *refs);
		else
			put_tree(e, pl, a, tid, 0);
		if (a->flags & AF_PENDING)
			put_pending(e, pl, a, tid);
	}
}

/* Whether a communicator's allocation is made in the call for devs[j]: host memory in the first. */
static bool comm_mem_in(struct emitter *e, const struct alloc *a, const int16_t *devs, size_t j)
{
	int16_t dev = site_of(e->t, a)->device;

	return dev == devs[j] || (dev < 0 && !j);
}

/*
 * Communicators and the memory they own, by the device it is on: that memory nested one
 * level under a call making the communicator, on a thread on that device. Those of the phase
 * whose first memory is init (made before the first step), or in phase A those with none.
 */
static void put_comms(struct emitter *e, struct proc_plan *pl, bool init)
{
	const struct tproc *p = pl->p;
	size_t i, j, k;

	for (i = 0; i < p->nr_comms && !e->err; i++) {
		const struct tcomm *c = &p->comms[i];
		size_t first = keyed_find(pl->comm, pl->nr_comm, c->comm), end = first;
		const struct site *is = &e->t->sites[c->init_site];
		int16_t devs[SNAP_DEVICES];
		size_t nr_devs = 0;
		bool has_init;

		/* A handle reused by a later communicator: that one owns what is live. */
		if (tproc__comm(p, c->comm) != c)
			continue;
		while (end < pl->nr_comm && pl->comm[end].key == c->comm)
			end++;
		if (c->destroyed && first == end)
			continue;
		has_init = first < end ? (pl->comm[first].a->flags & AF_INIT) : true;
		if (has_init != init)
			continue;
		/* One call making it per device its memory is on (device 0 when it has none);
		 * its pinned host memory was made in the first one's (a thread on a device). */
		for (j = first; j < end && nr_devs < SNAP_DEVICES; j++) {
			int16_t dev = site_of(e->t, pl->comm[j].a)->device;

			for (k = 0; k < nr_devs && devs[k] != dev; k++)
				;
			if (k == nr_devs && dev >= 0)
				devs[nr_devs++] = dev;
		}
		if (!nr_devs)
			devs[nr_devs++] = 0;
		for (j = 0; j < nr_devs && !e->err; j++) {
			uint32_t tid = syn_thread(e, pl, devs[j], 0);
			struct gl_call_rec r;

			if (!tid)
				return;
			for (k = first; k < end; k++)
				if (comm_mem_in(e, pl->comm[k].a, devs, j))
					put_tree(e, pl, pl->comm[k].a, tid, 1);
			r = call_rec(e, p->pid, GL_REC_ALLOC, is->api, tid, 0);
			r.addr = c->comm;
			r.caller = is->caller;
			put_call(e, &r);
			for (k = first; k < end; k++)
				if (comm_mem_in(e, pl->comm[k].a, devs, j) &&
				    (pl->comm[k].a->flags & AF_PENDING))
					put_pending(e, pl, pl->comm[k].a, tid);
		}
		if (c->destroyed) {
			struct gl_call_rec r = call_rec(e, p->pid, GL_REC_CALL,
							GL_API_NCCL_COMM_DESTROY, SYN_CTX_TID, 0);

			r.addr = c->comm;
			put_call(e, &r);
		}
	}
}

/* ---- a process ---- */

static int plan(struct emitter *e, struct proc_plan *pl)
{
	const struct tproc *p = pl->p;
	size_t i;

	for (i = 0; i < p->allocs.cap; i++) {
		const struct alloc *a = &p->allocs.slots[i];
		const struct site *s;
		const struct cat_api *api;

		if (!a->addr)
			continue;
		s = site_of(e->t, a);
		api = cat_by_api(s->api);
		if (s->owner_kind == OWNER_LAYER) {
			if (vec_grow((void **)&pl->layers, &pl->cap_layers, pl->nr_layers,
				     sizeof(*pl->layers)))
				return -ENOMEM;
			pl->layers[pl->nr_layers++] = (struct keyed){s->owner, a};
		} else if (s->owner_kind == OWNER_COMM && api && api->mem != MEM_REG) {
			if (vec_grow((void **)&pl->comm, &pl->cap_comm, pl->nr_comm,
				     sizeof(*pl->comm)))
				return -ENOMEM;
			pl->comm[pl->nr_comm++] = (struct keyed){s->owner, a};
		}
	}
	if (pl->nr_layers)
		qsort(pl->layers, pl->nr_layers, sizeof(*pl->layers), cmp_keyed);
	if (pl->nr_comm)
		qsort(pl->comm, pl->nr_comm, sizeof(*pl->comm), cmp_keyed);
	pl->layer_done = calloc(pl->nr_layers + 1, sizeof(*pl->layer_done));
	return pl->layer_done ? 0 : -ENOMEM;
}

/* Phase A of a process: itself, its losses, contexts, threads, and its memory made in init. */
static void phase_init(struct emitter *e, struct proc_plan *pl)
{
	const struct tproc *p = pl->p;
	const struct hmap_slot *sl;
	struct gl_proc_rec pr;
	struct gl_loss_rec lr;
	size_t i;
	unsigned int j;

	memset(&pr, 0, sizeof(pr));
	pr.hdr = (struct gl_hdr){.size = sizeof(pr),
				 .kind = GL_REC_PROC,
				 .pid = (uint32_t)p->pid,
				 .tid = (uint32_t)p->pid,
				 .ts_ns = e->ts};
	pr.event = GL_PROC_ATTACH;
	pr.start_ticks = p->start_ticks;
	memcpy(pr.comm, p->comm, sizeof(pr.comm));
	pr.ppid = (uint32_t)p->ppid;
	pr.ns_pid = p->ns_pid;
	put(e, &pr.hdr);
	for (i = 0; i < GL_STAT_MAX && !p->loss[i]; i++)
		;
	if (i < GL_STAT_MAX) {
		memset(&lr, 0, sizeof(lr));
		lr.hdr = pr.hdr;
		lr.hdr.size = sizeof(lr);
		lr.hdr.kind = GL_REC_LOSS;
		memcpy(lr.counts, p->loss, sizeof(lr.counts));
		put(e, &lr.hdr);
	}
	for (i = 0; i < p->nr_ctxs; i++) {
		const struct tctx *c = &p->ctxs[i];
		struct gl_call_rec r;
		uint32_t k;

		if (c->destroyed)
			continue;
		r = call_rec(e, p->pid, GL_REC_ALLOC,
			     c->primary ? GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN
					: GL_API_CU_CTX_CREATE_V2,
			     SYN_CTX_TID, 0);
		r.addr = c->ctx;
		r.aux = (uint64_t)(uint16_t)c->device;
		for (k = 0; k < (c->refs ? c->refs : 1); k++)
			put_call(e, &r);
	}
	for (i = 0; hmap__next(&p->threads, &i, &sl);) {
		const struct tthread *th = (const struct tthread *)(uintptr_t)sl->val;

		if (th->tid >= SYN_CTX_TID)
			continue;
		if (th->device || th->ctx)
			set_thread(e, p, th->tid, th->device, th->ctx);
		for (j = 0; j < th->group_depth; j++) {
			struct gl_call_rec r =
			    call_rec(e, p->pid, GL_REC_CALL, GL_API_NCCL_GROUP_START, th->tid, 0);

			put_call(e, &r);
		}
	}
	put_allocs(e, pl, true);
	put_comms(e, pl, true);
}

/* A site stack of site, for an allocation of it made again; UINT32_MAX when it has none. */
static uint32_t sstack_of(const struct tracker *t, uint32_t site)
{
	uint32_t i;

	for (i = 0; i < t->nr_sstacks; i++)
		if (t->sstacks[i].site == site)
			return i;
	return UINT32_MAX;
}

/*
 * Layers whose allocation above is gone, its free applied before theirs: a free's record is
 * complete at its entry, so ncclMemFree comes before the calls its ncclCuMemFree makes
 * (cuMemRelease of the handle, cuMemAddressFree of the range), each an outermost call of its
 * own, and until they come the layers are live with nothing above them. Made again as they
 * came: under an allocation of the site above, freed at once. That one holds 0 bytes, so no
 * sum or peak sees it; it sits at its first layer's address, unless something live of its
 * space is there (then they are left out, counted). An owner above it (a communicator) is not
 * made again: those too are left out.
 */
static void put_unfreed_layers(struct emitter *e, struct proc_plan *pl)
{
	const struct tproc *p = pl->p;
	size_t i;

	for (i = 0; i < pl->nr_layers && !e->err; i++) {
		const struct alloc *l = pl->layers[i].a;
		const struct cat_api *api = NULL;
		const struct site *s = NULL;
		uint32_t site = (uint32_t)pl->layers[i].key, ss = UINT32_MAX, tid;
		struct gl_call_rec r;
		struct alloc outer;

		if (pl->layer_done[i])
			continue;
		if (site < e->t->nr_sites) {
			s = &e->t->sites[site];
			api = cat_by_api(s->api);
			ss = sstack_of(e->t, site);
		}
		if (!api || api->op != OP_ALLOC || ss == UINT32_MAX || unsupported(s) ||
		    (s->owner_kind != OWNER_NONE && s->owner_kind != OWNER_CTX) ||
		    alloc_table__find(&p->allocs, (uint8_t)api->space, l->addr)) {
			skip(e, l);
			continue;
		}
		outer = (struct alloc){.addr = l->addr, .sstack = ss, .space = (uint8_t)api->space};
		tid = thread_for(e, pl, s);
		if (!tid)
			return;
		put_tree(e, pl, &outer, tid, 0);
		r = call_rec(e, p->pid, GL_REC_FREE, free_api(s->api, outer.space, false), tid, 0);
		r.addr = outer.addr;
		put_call(e, &r);
	}
}

/*
 * The references a VMM handle was given beyond its first (cuMemRetainAllocationHandle, as
 * ncclCuMemFree takes one before it releases it): each needs a release of its own.
 */
static void put_retains(struct emitter *e, struct proc_plan *pl)
{
	const struct tproc *p = pl->p;
	size_t i;

	for (i = 0; i < p->allocs.cap && !e->err; i++) {
		const struct alloc *a = &p->allocs.slots[i];
		struct gl_call_rec r;
		uint64_t *refs, k;

		if (!a->addr || a->space != SPACE_VMM_HANDLE || (a->flags & AF_PENDING))
			continue;
		refs = hmap__get(&p->regrefs, SPACE_VMM_HANDLE, a->addr);
		r = call_rec(e, p->pid, GL_REC_ALLOC, GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE,
			     SYN_CTX_TID, 0);
		r.addr = a->addr;
		for (k = 0; refs && k < *refs; k++)
			put_call(e, &r);
	}
}

/* Phase B: the memory made since the first step, mappings, NVML's view, held records. */
static void phase_steps(struct emitter *e, struct proc_plan *pl)
{
	const struct tproc *p = pl->p;
	const struct hmap_slot *sl;
	size_t i, k;
	int d;

	put_allocs(e, pl, false);
	put_comms(e, pl, false);
	put_unfreed_layers(e, pl);
	put_retains(e, pl);
	for (i = 0; i < p->nr_maps; i++) {
		struct gl_call_rec r =
		    call_rec(e, p->pid, GL_REC_CALL, GL_API_CU_MEM_MAP, SYN_CTX_TID, 0);

		r.addr = p->maps[i].va;
		r.size = p->maps[i].size;
		r.aux = p->maps[i].handle;
		put_call(e, &r);
	}
	for (i = 0; i < p->allocs.cap; i++) {
		const struct alloc *a = &p->allocs.slots[i];
		struct gl_call_rec r;

		if (!a->addr || !(a->flags & AF_RELEASED_MAPPED))
			continue;
		r = call_rec(e, p->pid, GL_REC_FREE, GL_API_CU_MEM_RELEASE, SYN_CTX_TID, 0);
		r.addr = a->addr;
		put_call(e, &r);
	}
	/* NVML's view, so the time to OOM has the same baseline: what the process held beyond
	 * the trace then, over what the trace holds now. */
	for (d = 0; d < SNAP_DEVICES; d++) {
		struct gl_devmem_rec dm;
		uint64_t then;

		if (!timeline__devmem(e->an->tl, p, d, &dm, &then))
			continue;
		dm.hdr = (struct gl_hdr){.size = sizeof(dm),
					 .kind = GL_REC_DEVMEM,
					 .pid = (uint32_t)p->pid,
					 .tid = (uint32_t)p->pid,
					 .ts_ns = e->ts};
		dm.proc_used_bytes =
		    (dm.proc_used_bytes > then ? dm.proc_used_bytes - then : 0) + p->live_bytes;
		put(e, &dm.hdr);
	}
	/* Calls nested in one still open: held until it returns, in the window. */
	for (i = 0; hmap__next(&p->threads, &i, &sl);) {
		const struct tthread *th = (const struct tthread *)(uintptr_t)sl->val;

		for (k = 0; k < th->nr_held; k++) {
			struct gl_peek_rec r = th->held[k];

			r.desc.call.hdr.ts_ns = e->ts;
			put(e, &r.desc.call.hdr);
		}
	}
}

static void plan_free(struct proc_plan *pl)
{
	free(pl->layers);
	free(pl->comm);
	free(pl->layer_done);
	free(pl->syn);
}

int snapshot__emit(const struct analysis *an, uint64_t ts_ns, snapshot_emit_fn emit, void *ctx,
		   struct snapshot_info *out)
{
	const struct tracker *t = an->t;
	struct emitter e = {.emit = emit, .ctx = ctx, .an = an, .t = t, .ts = ts_ns, .si = out};
	struct proc_plan *plans;
	size_t i, n = 0;

	memset(out, 0, sizeof(*out));
	plans = calloc(t->nr_procs + 1, sizeof(*plans));
	out->procs = calloc(t->nr_procs + 1, sizeof(*out->procs));
	if (!plans || !out->procs) {
		e.err = -ENOMEM;
		goto cleanup;
	}
	for (i = 0; i < t->nr_procs && !e.err; i++) {
		const struct tproc *p = t->procs[i];
		struct snapshot_proc *sp = &out->procs[n];

		if (!p->attached || p->exited || p->detached)
			continue;
		plans[n].p = p;
		e.err = plan(&e, &plans[n]);
		sp->pid = p->pid;
		sp->step = -1;
		if (!timeline__step_now(an->tl, p, &sp->step, &sp->step_ts_ns))
			sp->step_ts_ns = ts_ns;
		n++;
	}
	out->nr_procs = n;
	for (i = 0; i < n && !e.err; i++)
		phase_init(&e, &plans[i]);
	out->init_records = e.n;
	for (i = 0; i < n && !e.err; i++)
		phase_steps(&e, &plans[i]);
	out->records = e.n;
cleanup:
	for (i = 0; plans && i < n; i++)
		plan_free(&plans[i]);
	free(plans);
	if (e.err)
		snapshot_info__free(out);
	return e.err;
}

void snapshot_info__free(struct snapshot_info *si)
{
	free(si->procs);
	si->procs = NULL;
	si->nr_procs = 0;
}

void snapshot__at(struct analysis *an, struct snapshot_info *si, uint64_t fed)
{
	size_t i;

	if (!si->stepped && fed >= si->init_records) {
		si->stepped = true;
		for (i = 0; i < si->nr_procs && !si->own_steps; i++)
			if (si->procs[i].step >= 0)
				timeline__snapshot_step(an->tl, si->procs[i].pid, si->procs[i].step,
							si->procs[i].step_ts_ns);
	}
	if (!si->done && fed >= si->records) {
		pid_t *pids = calloc(si->nr_procs + 1, sizeof(*pids));

		si->done = true;
		for (i = 0; pids && i < si->nr_procs; i++)
			pids[i] = si->procs[i].pid;
		if (pids)
			tracker__reset_counts(an->t, pids, si->nr_procs);
		free(pids);
		for (i = 0; i < si->nr_procs; i++) {
			int64_t step = si->procs[i].step;
			uint64_t ts = si->procs[i].step_ts_ns;

			if (si->own_steps &&
			    !timeline__step_now(an->tl, tracker__proc(an->t, si->procs[i].pid),
						&step, &ts))
				continue;
			timeline__snapshot_done(an->tl, si->procs[i].pid, step, ts);
		}
	}
}

/* ---- comparing two trackers ---- */

/* A site's identity across trackers: what its key holds, its owner site by identity too. */
static uint64_t site_id(const struct tracker *t, uint32_t idx, int depth)
{
	const struct site *s = &t->sites[idx];
	uint64_t owner = s->owner;
	const char *label = tracker__label(t, s->label);
	uint64_t h = hmap_mix((uint64_t)(uint32_t)s->pid << 32 | s->api) ^
		     hmap_mix(s->caller + ((uint64_t)(uint16_t)s->device << 48));

	if (s->owner_kind == OWNER_LAYER && owner < t->nr_sites && depth < 4)
		owner = site_id(t, (uint32_t)owner, depth + 1);
	h ^= hmap_mix(owner * 31 + s->owner_kind) + ((uint64_t)s->rule << 40) +
	     ((uint64_t)s->cls << 56);
	for (; *label; label++)
		h = (h ^ (uint8_t)*label) * 0x100000001b3ULL;
	return h;
}

struct sums {
	int64_t bytes, count;
};

/* Each site stack's live and pending sums of t into (sign) the table, by identity. */
static int add_sums(const struct tracker *t, struct hmap *idx, struct sums **v, size_t *n,
		    size_t *cap, int sign)
{
	size_t i;

	for (i = 0; i < t->nr_sstacks; i++) {
		const struct site_stack *ss = &t->sstacks[i];
		const struct site *s = &t->sites[ss->site];
		const struct tproc *p = tracker__site_proc(t, s);
		uint64_t k0 = site_id(t, ss->site, 0), k1 = (uint32_t)ss->stack_id, *slot;
		int pass;

		if (!p || p->exited || p->detached)
			continue;
		if (k0 == HMAP_EMPTY)
			k0--;
		for (pass = 0; pass < 2; pass++) {
			slot = hmap__get(idx, k0, k1 | (uint64_t)pass << 32);
			if (!slot) {
				if (vec_grow((void **)v, cap, *n, sizeof(**v)) ||
				    hmap__put(idx, k0, k1 | (uint64_t)pass << 32, *n))
					return -ENOMEM;
				(*v)[*n] = (struct sums){0, 0};
				slot = hmap__get(idx, k0, k1 | (uint64_t)pass << 32);
				(*n)++;
			}
			(*v)[*slot].bytes +=
			    sign * (int64_t)(pass ? ss->pending_bytes : ss->live_bytes);
			(*v)[*slot].count +=
			    sign * (int64_t)(pass ? ss->pending_count : ss->live_count);
		}
	}
	return 0;
}

/* Communicators of p not destroyed: a snapshot makes each once, as its creation did. */
static uint64_t live_comms(const struct tproc *p)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; p && i < p->nr_comms; i++)
		n += !p->comms[i].destroyed;
	return n;
}

int snapshot__compare(const struct tracker *want, const struct tracker *got,
		      struct snapshot_diff *out)
{
	struct hmap idx = {0};
	struct sums *v = NULL;
	size_t n = 0, cap = 0, i;
	int err;

	memset(out, 0, sizeof(*out));
	err = add_sums(want, &idx, &v, &n, &cap, 1);
	if (!err)
		err = add_sums(got, &idx, &v, &n, &cap, -1);
	for (i = 0; !err && i < n; i++) {
		if (!v[i].bytes && !v[i].count)
			continue;
		out->bytes += (uint64_t)(v[i].bytes < 0 ? -v[i].bytes : v[i].bytes);
		out->count += (uint64_t)(v[i].count < 0 ? -v[i].count : v[i].count);
		out->sites++;
	}
	for (i = 0; i < want->nr_procs; i++) {
		const struct tproc *w = want->procs[i];
		uint64_t a, b;

		if (w->exited || w->detached)
			continue;
		a = live_comms(w);
		b = live_comms(tracker__proc((struct tracker *)got, w->pid));
		out->comms += a > b ? a - b : b - a;
	}
	hmap__free(&idx);
	free(v);
	return err;
}
