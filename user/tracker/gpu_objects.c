// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * What owns CUDA memory besides the program: devices and contexts (tproc.ctxs; a thread's
 * current device and context), NCCL communicators (tproc.comms) and VMM mappings
 * (tproc.maps). This file follows their lives from the calls that make, switch, map and
 * tear them down, and releases what a context destroy, a device or primary context reset,
 * or a last unmap takes with it.
 * Calls: ipc.c (an imported handle's size, multicast bindings), pending.c (teardown, a
 * reset's completions), allocs.c, regions.c (mappings as device ranges), threads.c.
 */
#include <errno.h>
#include <string.h>
#include "tracker/gpu_objects.h"
#include "tracker/allocs.h"
#include "tracker/ipc.h"
#include "tracker/pending.h"
#include "tracker/regions.h"
#include "tracker/threads.h"
#include "lib/vec.h"

/* ---- contexts and devices ---- */

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
	pending__release_where(t, p, on_device, &m);
	pending__complete(t, p, UNTIL_DEVICE_SYNC, true, 0, device, UINT64_MAX);
}

/* cuCtxCreate, cuDevicePrimaryCtxRetain, cuCtxSetCurrent (and what makes one current). */
static int ctx_use(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	struct tthread *th;
	struct tctx *c;

	if (api->op != OP_CTX_SET) {
		c = ctx_add(p, r->addr, (int16_t)r->aux, api->op == OP_CTX_RETAIN);
		if (!c)
			return -ENOMEM;
		c->refs++;
		if (api->op == OP_CTX_RETAIN)
			return 0;
		/* A created context is current on the creating thread. */
	}
	th = threads__get(p, r->hdr.tid);
	if (!th)
		return -ENOMEM;
	th->ctx = r->addr;
	c = ctx_find(p, r->addr);
	if (c)
		th->device = c->device;
	return 0;
}

/* cuDevicePrimaryCtxRelease (the last reference) and cuDevicePrimaryCtxReset of device aux. */
static void primary_release(struct tracker *t, struct tproc *p, const struct cat_api *api,
			    const struct gl_call_rec *r)
{
	size_t i;

	for (i = 0; i < p->nr_ctxs; i++) {
		struct tctx *c = &p->ctxs[i];

		if (!c->primary || c->destroyed || c->device != (int16_t)r->aux)
			continue;
		if (api->op == OP_PRIMARY_RELEASE && c->refs > 1) {
			c->refs--;
			return;
		}
		c->refs = 0;
		/* Like cudaDeviceReset, which is this underneath: pool memory stays. */
		device_reset(t, p, c->device);
		c->destroyed = true;
	}
}

/* ---- communicators ---- */

int gpu_objects__comm_add(struct tproc *p, uint64_t comm, uint32_t site, uint64_t ts_ns)
{
	if (vec_grow((void **)&p->comms, &p->cap_comms, p->nr_comms, sizeof(*p->comms)))
		return -ENOMEM;
	p->comms[p->nr_comms++] = (struct tcomm){.comm = comm, .init_site = site, .ts_ns = ts_ns};
	return 0;
}

/* ---- VMM mappings ---- */

uint64_t gpu_objects__comm_handle(const struct gl_call_rec *r)
{
	const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;
	uint64_t h = 0;

	if (r->hdr.api != GL_API_NCCL_DEV_COMM_CREATE && r->hdr.api != GL_API_NCCL_DEV_COMM_DESTROY)
		return r->addr;
	if ((r->hdr.flags & GL_HF_DESC) && !(r->hdr.flags & GL_HF_DESC_READ_FAIL) &&
	    r->hdr.size >= sizeof(*d))
		memcpy(&h, d->desc + 24, sizeof(h));
	return h;
}

bool gpu_objects__handle_mapped(const struct tproc *p, uint64_t handle)
{
	return tproc__vmm_mapped(p, handle);
}

/* A range mapped or unmapped, to the --memory-viz trace: as the handle it maps, at va. */
static void map_event(struct tracker *t, struct tproc *p, uint8_t kind, uint64_t va, uint64_t size,
		      uint64_t handle, uint64_t ts_ns)
{
	const struct alloc *a = alloc_table__find(&p->allocs, SPACE_VMM_HANDLE, handle);
	struct mem_event e = {.addr = va,
			      .size = size,
			      .ts_ns = ts_ns,
			      .sstack = a ? a->sstack : UINT32_MAX,
			      .kind = kind,
			      .space = SPACE_VMM_HANDLE,
			      .flags = a ? a->flags : 0};

	t->mem_ev(t->mem_ev_ctx, t, p, &e);
}

static int vmm_map(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	if (vec_grow((void **)&p->maps, &p->cap_maps, p->nr_maps, sizeof(*p->maps)))
		return -ENOMEM;
	p->maps[p->nr_maps++] = (struct tmapping){.va = r->addr, .size = r->size, .handle = r->aux};
	/* An imported handle's size: what is mapped of it. */
	ipc__mapped_size(t, p, r->aux, r->size);
	regions__mapped(p, r->addr, r->size, r->aux);
	if (t->mem_ev)
		map_event(t, p, MEM_EV_MAP, r->addr, r->size, r->aux, r->hdr.ts_ns);
	return 0;
}

static void vmm_unmap(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	size_t i = 0;

	regions__unmapped(p, r->addr, r->size);
	while (i < p->nr_maps) {
		struct tmapping m = p->maps[i];
		struct alloc *a;

		if (m.va < r->addr || m.va >= r->addr + r->size) {
			i++;
			continue;
		}
		if (t->mem_ev)
			map_event(t, p, MEM_EV_UNMAP, m.va, m.size, m.handle, r->hdr.ts_ns);
		p->maps[i] = p->maps[--p->nr_maps];
		/* The last mapping of a handle released while mapped frees its memory. */
		a = alloc_table__find(&p->allocs, SPACE_VMM_HANDLE, m.handle);
		if (a && (a->flags & AF_RELEASED_MAPPED) && !tproc__vmm_mapped(p, m.handle) &&
		    !ipc__bound(p, m.handle)) {
			allocs__release(t, p, a);
			ipc__handle_gone(t, p, m.handle);
		}
	}
}

int gpu_objects__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r)
{
	struct tthread *th;
	struct tctx *c;
	size_t i;

	switch (api->op) {
	case OP_SET_DEVICE:
		th = threads__get(p, r->hdr.tid);
		if (!th)
			return -ENOMEM;
		th->device = (int16_t)r->aux;
		return 0;
	case OP_DEVICE_RESET:
		device_reset(t, p, threads__device(p, r->hdr.tid));
		return 0;
	case OP_CTX_CREATE:
	case OP_CTX_RETAIN:
	case OP_CTX_SET:
		return ctx_use(p, api, r);
	case OP_CTX_DESTROY:
		c = ctx_find(p, r->addr);
		pending__release_where(t, p, of_ctx, &(uint64_t){r->addr});
		if (c)
			c->destroyed = true;
		return 0;
	case OP_PRIMARY_RELEASE:
	case OP_PRIMARY_RESET:
		primary_release(t, p, api, r);
		return 0;
	case OP_VMM_MAP:
		return vmm_map(t, p, r);
	case OP_VMM_UNMAP:
		vmm_unmap(t, p, r);
		return 0;
	case OP_COMM_DESTROY:
		for (i = 0; i < p->nr_comms; i++)
			if (p->comms[i].comm == gpu_objects__comm_handle(r))
				p->comms[i].destroyed = true;
		return 0;
	default:
		return 0;
	}
}
