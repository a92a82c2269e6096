/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Memory pools (pools.c): the stream-ordered pools a process allocates from
 * (cudaMallocAsync, cudaMallocFromPoolAsync, their driver forms) and the per-device pool
 * graph memory comes from. Memory freed into a pool stays in its reserve: the process still
 * holds it on the device. A pool keeps up to its release threshold (0 unless set) and gives
 * the rest back at the next stream, event or device synchronization; cudaMemPoolTrimTo
 * and cudaDeviceGraphMemTrim give it back at once. Reserves are bytes, not allocations:
 * freed blocks are interchangeable within a pool, the way the pool reuses them.
 */
#ifndef GPULEAK_TRACKER_POOLS_H
#define GPULEAK_TRACKER_POOLS_H

#include "tracker/model.h"
#include "probe/catalog.h"

enum pool_kind {
	POOL_DEFAULT = 0, /* a device's default pool (cudaDeviceGetDefaultMemPool) */
	POOL_CREATED = 1, /* cudaMemPoolCreate */
	POOL_GRAPH = 2,	  /* a device's graph memory pool (graph memory nodes) */
};

struct tpool {
	uint64_t handle; /* cudaMemPool_t / CUmemoryPool; 0: not seen (a default, a graph pool) */
	int16_t device;
	uint8_t kind; /* enum pool_kind */
	bool destroyed;
	uint32_t site;	    /* site of its creation, UINT32_MAX: none */
	uint64_t threshold; /* cudaMemPoolAttrReleaseThreshold */
	bool threshold_set;
	uint64_t in_use, in_use_count; /* live allocations from it (pending frees included) */
	uint64_t reserve;	       /* bytes freed into it and still held */
	uint64_t reserve_peak;
};

/* Devices whose pools are kept apart (a thread's device ordinal); others share the last. */
#define POOLS_MAX_DEVICES 64

struct tpools {
	struct tpool *v;
	size_t n, cap;
	struct hmap by_addr; /* (space, address) of a pool allocation -> index into v */
	int32_t current[POOLS_MAX_DEVICES]; /* index + 1 of a device's current pool; 0: default */
};

/*
 * The pool (index) a stream-ordered allocation of api on device comes from: the pool it
 * names (cudaMallocFromPoolAsync: aux2), else the device's current one. UINT32_MAX without
 * memory.
 */
uint32_t pools__for_alloc(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r,
			  int16_t device);
/* The graph memory pool of device (index), made on first use; UINT32_MAX without memory. */
uint32_t pools__graph(struct tproc *p, int16_t device);
/*
 * An allocation of bytes at (space, addr) from pool: in use, taken from its reserve first.
 * 0 or -ENOMEM; on success the allocation must carry AF_POOL, whose release calls
 * pools__released.
 */
int pools__alloc(struct tproc *p, uint32_t pool, uint8_t space, uint64_t addr, uint64_t bytes);
/* An AF_POOL allocation's memory is back in its pool (called by allocs__release). */
void pools__released(struct tproc *p, uint8_t space, uint64_t addr, uint64_t bytes);
/* A stream, event or device synchronization: pools give back what is above their threshold. */
void pools__sync(struct tproc *p);
/* Pool `pool` keeps at most keep bytes of its reserve. */
void pools__trim(struct tproc *p, uint32_t pool, uint64_t keep);
/* Whether op is one of the pool calls, pools__apply's (catalog order). */
static inline bool pools__is_op(enum cat_op op)
{
	return op >= OP_POOL_CREATE && op <= OP_POOL_GET_DEFAULT;
}
/* The pool calls (OP_POOL_*) once they succeeded, under site of the call. 0 or -ENOMEM. */
int pools__apply(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r,
		 uint32_t site);
/* Reserve bytes p's pools hold on device (stream-ordered and graph pools alike). */
uint64_t pools__reserve_on(const struct tproc *p, int16_t device);
/* All of p's pools' reserves. */
uint64_t pools__reserve(const struct tproc *p);
/* Whether a pool is worth a line of a report: made or configured by the program, or holding. */
bool pools__notable(const struct tpool *pl);
void pools__free(struct tproc *p);

#endif
