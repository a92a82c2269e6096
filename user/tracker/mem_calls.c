// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Allocation and free calls: what each means for the graph. An allocation gets its site (its
 * device, and its owner: a communicator for a registration, the thread's context for a
 * driver allocation) and enters the sums (allocs.c); one at an address still live is one
 * more reference to an NCCL registration, a stream-ordered reuse of a block whose async free
 * is pending, or the sign of a free never seen. A free is the free policy: its memory goes
 * now, once something completes it (a deferred rule, an async free: pending.c), or, for a
 * VMM handle still mapped, at its last unmap (gpu_objects.c); or it only takes back a
 * reference (an NCCL registration handed out again, a VMM handle retained); or it frees
 * nothing live: the lower half of a free already applied (expected per thread), a double
 * free (a window of recent frees, tproc.freed), an unknown pointer. This file owns those
 * two memories and the references beyond the first (tproc.regrefs). A stream-ordered
 * allocation or free on a capturing stream is a graph's node instead (graphs.c); one from a
 * pool enters its pool (pools.c); an IPC handle opened again, or closed with references
 * left, keeps its mapping (ipc.c).
 * Calls: graphs.c, gpu_objects.c, ipc.c, pending.c, allocs.c, pools.c, sites.c, threads.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/mem_calls.h"
#include "tracker/allocs.h"
#include "tracker/gpu_objects.h"
#include "tracker/graphs.h"
#include "tracker/ipc.h"
#include "tracker/pending.h"
#include "tracker/pools.h"
#include "tracker/sites.h"
#include "tracker/threads.h"
#include "probe/cuda_desc.h"

/* ---- allocations ---- */

static int16_t device_of(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	if (api->mem == MEM_HOST_PINNED || api->mem == MEM_HOST || api->mem == MEM_HOST_REGISTERED)
		return -1;
	if ((api->flags & CAT_VMM_DEVICE) && (r->hdr.flags & GL_HF_DESC) &&
	    r->hdr.size >= sizeof(struct gl_desc_rec)) {
		const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;
		int32_t loc_type, id;

		/* CUmemAllocationProp: location.type @8, location.id @12. A host location
		 * (CU_MEM_LOCATION_TYPE_HOST 2, _HOST_NUMA 3, _HOST_NUMA_CURRENT 4: NCCL's
		 * ncclCuMemHostAlloc) is host memory, no device's: its id is a NUMA node. */
		memcpy(&loc_type, d->desc + 8, sizeof(loc_type));
		memcpy(&id, d->desc + 12, sizeof(id));
		if (loc_type == 1)
			return (int16_t)id;
		if (loc_type >= 2 && loc_type <= 4)
			return -1;
	}
	return threads__device(p, r->hdr.tid);
}

void mem_calls__count_failure(struct tracker *t, struct tproc *p, const struct cat_api *api,
			      const struct gl_call_rec *r)
{
	struct site_key k = {p->pid,	r->hdr.api,  device_of(p, api, r),
			     r->caller, r->stack_id, OWNER_NONE,
			     0,		0,	     0,
			     false,	0,	     p->gen};
	uint32_t site;

	sites__python(t, &k);
	site = sites__get(t, &k);
	p->c.failed_calls++;
	if (site == UINT32_MAX)
		return;
	t->sites[site].failed++;
	t->sites[site].last_err = r->ret;
	if (t->mem_ev && api->op == OP_ALLOC) {
		struct mem_event e = {.size = r->size,
				      .ts_ns = r->hdr.ts_ns,
				      .sstack = sites__stack(t, site, k.stack_id),
				      .err = r->ret,
				      .kind = MEM_EV_FAIL,
				      .space = api->space};

		t->mem_ev(t->mem_ev_ctx, t, p, &e);
	}
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
	/* An IPC handle opened again: the same mapping, one more reference (ipc.c). */
	if (p->ipc && !(old->flags & AF_PENDING) && ipc__reopened(p, space, r->addr))
		return 1;
	/* NCCL's registration cache hands out the same handle for the same buffer again,
	 * with one more reference: each needs its own deregister. */
	if ((space == SPACE_NCCL_REG || space == SPACE_NCCL_WIN) && !(old->flags & AF_PENDING)) {
		uint64_t *refs = hmap__get(&p->regrefs, space, r->addr);
		int err = hmap__put(&p->regrefs, space, r->addr, refs ? *refs + 1 : 1);

		return err ? err : 1;
	}
	/* Stream-ordered reuse (cudaMallocAsync handing back a block whose async free is
	 * pending): legal, the pending free is complete. Still live: freed by something we
	 * did not see. */
	if (old->flags & AF_PENDING)
		p->c.async_reuse++;
	else
		p->c.addr_reuse++;
	pending__release(t, p, old);
	return 0;
}

/*
 * What an allocation holds when its size argument does not say: an array's or a multicast
 * object's bytes from its structs, an opened IPC handle's from its exporter. AF_UNSIZED
 * when not known.
 */
static uint8_t sized(const struct tracker *t, const struct cat_api *api,
		     const struct gl_call_rec *r, uint64_t *size, pid_t *exporter)
{
	*exporter = 0;
	if (api->flags & CAT_DESC_SIZE) {
		if (!cuda_desc__bytes(r, size))
			return 0;
	} else if (api->mem == MEM_IPC) {
		if (ipc__exported(t, r, size, exporter))
			return 0;
	} else {
		*size = r->size;
		return 0;
	}
	*size = 0;
	return AF_UNSIZED;
}

int mem_calls__alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		     const struct gl_call_rec *r, const struct call_scope *scope)
{
	uint8_t space = (uint8_t)api->space, flags;
	struct site_key k = {p->pid,	   r->hdr.api,	device_of(p, api, r),
			     r->caller,	   r->stack_id, scope->owner_kind,
			     scope->owner, 0,		0,
			     false,	   0,		p->gen};
	struct alloc a, *old;
	uint64_t size;
	pid_t exporter;
	uint32_t ss, pool = UINT32_MAX;
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
	/* Made into a graph being captured: no memory until the graph is launched. */
	if ((api->flags & CAT_STREAM_POOL) && p->graphs &&
	    graphs__captured_alloc(t, p, api, r, k.device, &err))
		return err;
	own(p, api, r, &k);
	flags = sized(t, api, r, &size, &exporter);
	sites__python(t, &k);
	ss = sites__assign(t, &k, k.stack_id, size, NULL, p->step, p->step < 0);
	if (ss == UINT32_MAX)
		return -ENOMEM;
	old = alloc_table__find(&p->allocs, space, r->addr);
	err = old ? reused(t, p, space, r, old) : 0;
	if (err)
		return err < 0 ? err : 0;
	/* The pool it comes from: the outermost call's (a lower layer is the same memory). */
	if ((api->flags & CAT_STREAM_POOL) && scope->owner_kind != OWNER_LAYER) {
		pool = pools__for_alloc(p, api, r, k.device);
		if (pool == UINT32_MAX)
			return -ENOMEM;
		flags |= AF_POOL;
	}
	a = (struct alloc){.addr = r->addr,
			   .size = size,
			   .ts_ns = r->hdr.ts_ns,
			   .sstack = ss,
			   .space = space,
			   .flags = (scope->owner_kind == OWNER_LAYER ? AF_LAYER : 0) |
				    (p->step < 0 ? AF_INIT : 0) | flags};
	err = allocs__add(t, p, &a, r->hdr.ts_ns, true);
	if (!err && pool != UINT32_MAX)
		err = pools__alloc(p, pool, space, r->addr, size);
	if (!err && api->mem == MEM_IPC && scope->owner_kind != OWNER_LAYER)
		err = ipc__opened(p, space, r->addr, t->sstacks[ss].site, exporter, r->hdr.ts_ns);
	return err;
}

int mem_calls__realloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r, const struct call_scope *scope)
{
	if (r->aux && r->aux != r->addr) {
		struct gl_call_rec f = *r;

		f.addr = r->aux;
		mem_calls__free(t, p, api, &f);
	} else if (r->aux) {
		struct alloc *a = alloc_table__find(&p->allocs, SPACE_HOST, r->aux);

		if (a)
			allocs__release(t, p, a);
	}
	return mem_calls__alloc(t, p, api, r, scope);
}

int mem_calls__retain(struct tproc *p, const struct gl_call_rec *r)
{
	const struct alloc *a = alloc_table__find(&p->allocs, SPACE_VMM_HANDLE, r->addr);
	uint64_t *refs;

	/* A handle made before the attach: its releases are frees of something never seen. */
	if (!a || (a->flags & AF_PENDING))
		return 0;
	refs = hmap__get(&p->regrefs, SPACE_VMM_HANDLE, r->addr);
	return hmap__put(&p->regrefs, SPACE_VMM_HANDLE, r->addr, refs ? *refs + 1 : 1);
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
		    family_is_lower_layer(th->expect[i].family, family)) {
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

int mem_calls__free(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r)
{
	unsigned int fam = GL_API_FAMILY(r->hdr.api);
	uint8_t space = (uint8_t)api->space;
	struct alloc *a;
	uint16_t rule;
	bool pooled;

	if (!r->addr) {
		p->c.null_frees++;
		return 0;
	}
	/* Made into a graph being captured: a free node, nothing freed now. */
	if (api->op == OP_FREE_ASYNC && p->graphs && graphs__capturing(p, api, r)) {
		if (expected_free(p, r->hdr.tid, fam, space, r->addr)) {
			p->c.layers++;
			return 0;
		}
		expect_lower_free(p, r, fam, space);
		return graphs__captured_free(p, api, r);
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
	/* The driver's close under the runtime's, of a mapping with references left. */
	if (space == SPACE_IPC && expected_free(p, r->hdr.tid, fam, space, r->addr)) {
		p->c.layers++;
		return 0;
	}
	expect_lower_free(p, r, fam, space);
	/* A reference beyond the first: an NCCL registration handed out again, a VMM handle
	 * retained (NCCL's ncclCuMemFree releases it twice). Only the last one frees. */
	if (space == SPACE_NCCL_REG || space == SPACE_NCCL_WIN || space == SPACE_VMM_HANDLE) {
		uint64_t *refs = hmap__get(&p->regrefs, space, r->addr);

		if (refs && *refs) {
			(*refs)--;
			return 0;
		}
	}
	/* An IPC mapping opened more often than this: it stays, one reference less. */
	if (p->ipc && ipc__closing(p, space, r->addr))
		return 0;
	remember_freed(p, space, r->addr);
	rule = pending__deferred_rule(t, r);
	/* Without rules (unit tests, old captures) async frees keep their built-in meaning. */
	if (rule || (!t->rules && api->op == OP_FREE_ASYNC))
		return pending__defer(t, p, a, api, r, rule);
	/* A physical handle released while mapped (or bound to a multicast object) lives on
	 * until its last unmap. */
	if (api->space == SPACE_VMM_HANDLE &&
	    (gpu_objects__handle_mapped(p, a->addr) || ipc__bound(p, a->addr))) {
		allocs__set_flag(t, p, a, AF_RELEASED_MAPPED);
		return 0;
	}
	pooled = a->flags & AF_POOL;
	allocs__release(t, p, a);
	if (api->space == SPACE_VMM_HANDLE)
		ipc__handle_gone(t, p, r->addr);
	/* A synchronous free of pool memory waits for the device: a synchronization, where
	 * pools give back what is above their threshold. */
	if (pooled && api->op == OP_FREE)
		pools__sync(p);
	return 0;
}
