// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Memory pools (pools.h, tproc.pools): each pool's in-use bytes and its reserve, which
 * allocation came from which pool, each device's current pool. A pool allocation enters here
 * when it is made (mem_calls.c, graphs.c) and leaves when its memory is released, by any
 * path (allocs.h: its AF_POOL flag); syncs (pending.c) and trims give reserves back.
 * Calls nothing of the tracker.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/pools.h"
#include "lib/vec.h"

/* cudaMemPoolAttrReleaseThreshold, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD */
#define POOL_ATTR_RELEASE_THRESHOLD 4

static struct tpools *get(struct tproc *p)
{
	if (!p->pools)
		p->pools = calloc(1, sizeof(*p->pools));
	return p->pools;
}

static int16_t dev_slot(int16_t device)
{
	if (device < 0)
		return 0;
	return device < POOLS_MAX_DEVICES ? device : POOLS_MAX_DEVICES - 1;
}

static uint32_t add(struct tpools *ps, uint64_t handle, int16_t device, uint8_t kind)
{
	if (vec_grow((void **)&ps->v, &ps->cap, ps->n, sizeof(*ps->v)))
		return UINT32_MAX;
	ps->v[ps->n] =
	    (struct tpool){.handle = handle, .device = device, .kind = kind, .site = UINT32_MAX};
	return (uint32_t)ps->n++;
}

static uint32_t by_handle(const struct tpools *ps, uint64_t handle)
{
	size_t i = ps->n;

	/* the newest first: a destroyed pool's handle may be handed out again */
	while (handle && i--)
		if (ps->v[i].handle == handle && !ps->v[i].destroyed)
			return (uint32_t)i;
	return UINT32_MAX;
}

/* Device's pool of kind (default or graph), made on first use. */
static uint32_t device_pool(struct tpools *ps, int16_t device, uint8_t kind)
{
	size_t i;

	for (i = 0; i < ps->n; i++)
		if (ps->v[i].kind == kind && ps->v[i].device == device)
			return (uint32_t)i;
	return add(ps, 0, device, kind);
}

uint32_t pools__graph(struct tproc *p, int16_t device)
{
	struct tpools *ps = get(p);

	return ps ? device_pool(ps, device, POOL_GRAPH) : UINT32_MAX;
}

uint32_t pools__for_alloc(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r,
			  int16_t device)
{
	struct tpools *ps = get(p);
	uint32_t i;

	if (!ps)
		return UINT32_MAX;
	if (api->api == GL_API_CUDA_MALLOC_FROM_POOL_ASYNC ||
	    api->api == GL_API_CUDA_MALLOC_FROM_POOL_ASYNC_PTSZ ||
	    api->api == GL_API_CU_MEM_ALLOC_FROM_POOL_ASYNC ||
	    api->api == GL_API_CU_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ) {
		i = by_handle(ps, r->aux2);
		/* A pool made before the attach: known from now on, on this device. */
		return i != UINT32_MAX ? i : add(ps, r->aux2, device, POOL_CREATED);
	}
	i = ps->current[dev_slot(device)];
	if (i && !ps->v[i - 1].destroyed)
		return i - 1;
	return device_pool(ps, device, POOL_DEFAULT);
}

int pools__alloc(struct tproc *p, uint32_t pool, uint8_t space, uint64_t addr, uint64_t bytes)
{
	struct tpools *ps = p->pools;
	struct tpool *pl;

	if (!ps || pool >= ps->n)
		return -EINVAL;
	if (hmap__put(&ps->by_addr, space, addr, pool))
		return -ENOMEM;
	pl = &ps->v[pool];
	pl->in_use += bytes;
	pl->in_use_count++;
	pl->reserve -= bytes < pl->reserve ? bytes : pl->reserve;
	return 0;
}

void pools__released(struct tproc *p, uint8_t space, uint64_t addr, uint64_t bytes)
{
	struct tpools *ps = p->pools;
	struct tpool *pl;
	uint64_t *v;

	v = ps ? hmap__get(&ps->by_addr, space, addr) : NULL;
	if (!v)
		return;
	pl = &ps->v[*v];
	hmap__del(&ps->by_addr, space, addr);
	pl->in_use -= bytes < pl->in_use ? bytes : pl->in_use;
	pl->in_use_count -= pl->in_use_count ? 1 : 0;
	/* A destroyed pool's memory goes once nothing of it is in use (cudaMemPoolDestroy). */
	if (pl->destroyed)
		return;
	pl->reserve += bytes;
	if (pl->reserve > pl->reserve_peak)
		pl->reserve_peak = pl->reserve;
}

void pools__trim(struct tproc *p, uint32_t pool, uint64_t keep)
{
	struct tpools *ps = p->pools;

	if (ps && pool < ps->n && ps->v[pool].reserve > keep)
		ps->v[pool].reserve = keep;
}

void pools__sync(struct tproc *p)
{
	struct tpools *ps = p->pools;
	size_t i;

	/* Graph pools hold on to their memory until cudaDeviceGraphMemTrim. */
	for (i = 0; ps && i < ps->n; i++)
		if (ps->v[i].kind != POOL_GRAPH)
			pools__trim(p, (uint32_t)i, ps->v[i].threshold);
}

/* Device's default pool has this handle (learned from a get call). */
static uint32_t learn_default(struct tpools *ps, uint64_t handle, int16_t device)
{
	uint32_t i = device_pool(ps, device, POOL_DEFAULT);

	if (i != UINT32_MAX)
		ps->v[i].handle = handle;
	return i;
}

int pools__apply(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r,
		 uint32_t site)
{
	struct tpools *ps = get(p);
	const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;
	bool desc = (r->hdr.flags & GL_HF_DESC) && !(r->hdr.flags & GL_HF_DESC_READ_FAIL) &&
		    r->hdr.size >= sizeof(*d);
	int16_t dev = (int16_t)r->aux;
	uint32_t i;
	int32_t id;

	if (!ps)
		return -ENOMEM;
	switch (api->op) {
	case OP_POOL_CREATE:
		/* cudaMemPoolProps / CUmemPoolProps: location.id @12 */
		id = 0;
		if (desc)
			memcpy(&id, d->desc + 12, sizeof(id));
		i = add(ps, r->addr, (int16_t)id, POOL_CREATED);
		if (i == UINT32_MAX)
			return -ENOMEM;
		ps->v[i].site = site;
		return 0;
	case OP_POOL_DESTROY:
		i = by_handle(ps, r->addr);
		if (i == UINT32_MAX)
			return 0;
		/* Its reserve goes now; what is still in use goes when it is freed. */
		ps->v[i].destroyed = true;
		ps->v[i].reserve = 0;
		return 0;
	case OP_POOL_TRIM:
		i = by_handle(ps, r->addr);
		if (i != UINT32_MAX)
			pools__trim(p, i, r->size);
		return 0;
	case OP_POOL_SET_ATTR:
		i = by_handle(ps, r->addr);
		if (r->aux != POOL_ATTR_RELEASE_THRESHOLD || !desc)
			return 0;
		/* A pool never seen made: a default pool got before the attach, or one made then. */
		if (i == UINT32_MAX)
			i = add(ps, r->addr, -1, POOL_CREATED);
		if (i == UINT32_MAX)
			return -ENOMEM;
		memcpy(&ps->v[i].threshold, d->desc, sizeof(ps->v[i].threshold));
		ps->v[i].threshold_set = true;
		return 0;
	case OP_POOL_SET_CURRENT:
		i = by_handle(ps, r->addr);
		if (i == UINT32_MAX)
			i = add(ps, r->addr, dev, POOL_CREATED);
		if (i == UINT32_MAX)
			return -ENOMEM;
		ps->current[dev_slot(dev)] = ps->v[i].kind == POOL_DEFAULT ? 0 : (int32_t)i + 1;
		return 0;
	case OP_POOL_GET_DEFAULT:
		if (!call__returned(r, 8))
			return 0;
		return learn_default(ps, call__returned(r, 8), dev) == UINT32_MAX ? -ENOMEM : 0;
	case OP_POOL_GET:
		/* The current pool, the default one unless it was set: then its handle. */
		if (call__returned(r, 8) && !ps->current[dev_slot(dev)] &&
		    by_handle(ps, call__returned(r, 8)) == UINT32_MAX)
			return learn_default(ps, call__returned(r, 8), dev) == UINT32_MAX ? -ENOMEM
											  : 0;
		return 0;
	default:
		return 0;
	}
}

uint64_t pools__reserve_on(const struct tproc *p, int16_t device)
{
	const struct tpools *ps = p->pools;
	uint64_t sum = 0;
	size_t i;

	for (i = 0; ps && i < ps->n; i++)
		if (ps->v[i].device == device)
			sum += ps->v[i].reserve;
	return sum;
}

uint64_t pools__reserve(const struct tproc *p)
{
	const struct tpools *ps = p->pools;
	uint64_t sum = 0;
	size_t i;

	for (i = 0; ps && i < ps->n; i++)
		sum += ps->v[i].reserve;
	return sum;
}

bool pools__notable(const struct tpool *pl)
{
	return pl->kind == POOL_CREATED || pl->threshold_set || pl->reserve || pl->reserve_peak;
}

void pools__free(struct tproc *p)
{
	if (!p->pools)
		return;
	hmap__free(&p->pools->by_addr);
	free(p->pools->v);
	free(p->pools);
	p->pools = NULL;
}
