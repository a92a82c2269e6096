// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pools MODE [STEPS]
 *
 * Stream-ordered memory pools: memory freed into a pool stays in its reserve up to its
 * release threshold, and the pool gives the rest back at the next synchronization.
 * Set-up, before "ready": cudaStreamCreate (S). STEPS defaults to 4; each step ends with
 * sync_step (cudaStreamSynchronize(S)) and step_boundary (--step sym:pools:step_boundary).
 *
 * reserve  make_pool: cudaMemPoolCreate (device 0), keep_all: cudaMemPoolSetAttribute
 *          (ReleaseThreshold = UINT64_MAX), then STEPS x (step_alloc:
 *          cudaMallocFromPoolAsync 8 MiB, step_free: cudaFreeAsync, sync_step): the 8 MiB
 *          stays in the pool's reserve. default_pool: cudaDeviceGetDefaultMemPool(0),
 *          default_threshold: its threshold 4 MiB, default_alloc: cudaMallocAsync 6 MiB,
 *          default_free: cudaFreeAsync, sync_step: the default pool keeps 4 MiB.
 *          trim_pool: cudaMemPoolTrimTo(pool, 2 MiB). At "done": nothing live, reserves
 *          2 MiB (the pool) + 4 MiB (the default pool) on device 0.
 * oom      keep_all on a new pool, one 64 MiB allocation freed into it, then STEPS x
 *          (leak_step: cudaMalloc 1 MiB, kept; sync_step; step_boundary). At "done":
 *          STEPS MiB leaked, 64 MiB in the pool's reserve, which the time to OOM counts.
 * current  make_pool, set_current: cudaDeviceSetMemPool(0, pool), get_current:
 *          cudaDeviceGetMemPool(0), keep_all, current_alloc: cudaMallocAsync 3 MiB (from
 *          the pool), current_free + sync_step: 3 MiB in the pool's reserve.
 *          destroy_pool: cudaMemPoolDestroy (its reserve goes). At "done": nothing live,
 *          no reserve.
 * driver   reserve's first half through the driver (cuMemPoolCreate, cuMemPoolSetAttribute,
 *          cuMemAllocFromPoolAsync, cuMemFreeAsync, cuMemPoolTrimTo): STEPS x 8 MiB
 *          allocated and freed, 8 MiB kept, trimmed to 2 MiB.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>
#include "scenario.h"

#define MIB (1UL << 20)

static cudaStream_t s;

static SCENARIO_SITE void step_boundary(int i)
{
	SCENARIO_OPAQUE(i);
}

static SCENARIO_SITE void sync_step(void)
{
	SCENARIO_OK(cudaStreamSynchronize(s));
}

static SCENARIO_SITE cudaMemPool_t make_pool(void)
{
	struct cudaMemPoolProps props = {0};
	cudaMemPool_t pool;

	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	SCENARIO_OK(cudaMemPoolCreate(&pool, &props));
	return pool;
}

static SCENARIO_SITE void keep_all(cudaMemPool_t pool)
{
	uint64_t max = UINT64_MAX;

	SCENARIO_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &max));
}

static SCENARIO_SITE void *step_alloc(cudaMemPool_t pool, size_t bytes)
{
	void *p;

	SCENARIO_OK(cudaMallocFromPoolAsync(&p, bytes, pool, s));
	return p;
}

static SCENARIO_SITE void step_free(void *p)
{
	SCENARIO_OK(cudaFreeAsync(p, s));
}

static SCENARIO_SITE cudaMemPool_t default_pool(void)
{
	cudaMemPool_t pool;

	SCENARIO_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
	return pool;
}

static SCENARIO_SITE void default_threshold(cudaMemPool_t pool)
{
	uint64_t v = 4 * MIB;

	SCENARIO_OK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &v));
}

static SCENARIO_SITE void *default_alloc(size_t bytes)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, bytes, s));
	return p;
}

static SCENARIO_SITE void default_free(void *p)
{
	SCENARIO_OK(cudaFreeAsync(p, s));
}

static SCENARIO_SITE void trim_pool(cudaMemPool_t pool)
{
	SCENARIO_OK(cudaMemPoolTrimTo(pool, 2 * MIB));
}

static SCENARIO_SITE void *leak_step(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, MIB));
	return p;
}

static SCENARIO_SITE void set_current(cudaMemPool_t pool)
{
	SCENARIO_OK(cudaDeviceSetMemPool(0, pool));
}

static SCENARIO_SITE cudaMemPool_t get_current(void)
{
	cudaMemPool_t pool;

	SCENARIO_OK(cudaDeviceGetMemPool(&pool, 0));
	return pool;
}

static SCENARIO_SITE void *current_alloc(void)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, 3 * MIB, s));
	return p;
}

static SCENARIO_SITE void current_free(void *p)
{
	SCENARIO_OK(cudaFreeAsync(p, s));
}

static SCENARIO_SITE void destroy_pool(cudaMemPool_t pool)
{
	SCENARIO_OK(cudaMemPoolDestroy(pool));
}

/* --- the driver's forms --- */

static SCENARIO_SITE CUmemoryPool drv_make_pool(void)
{
	CUmemPoolProps props = {0};
	CUmemoryPool pool;

	props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
	props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	props.location.id = 0;
	SCENARIO_OK(cuMemPoolCreate(&pool, &props));
	return pool;
}

static SCENARIO_SITE void drv_keep_all(CUmemoryPool pool)
{
	cuuint64_t max = UINT64_MAX;

	SCENARIO_OK(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &max));
}

static SCENARIO_SITE CUdeviceptr drv_step_alloc(CUmemoryPool pool)
{
	CUdeviceptr p;

	SCENARIO_OK(cuMemAllocFromPoolAsync(&p, 8 * MIB, pool, (CUstream)s));
	return p;
}

static SCENARIO_SITE void drv_step_free(CUdeviceptr p)
{
	SCENARIO_OK(cuMemFreeAsync(p, (CUstream)s));
}

static SCENARIO_SITE void drv_trim_pool(CUmemoryPool pool)
{
	SCENARIO_OK(cuMemPoolTrimTo(pool, 2 * MIB));
}

int main(int argc, char **argv)
{
	cudaMemPool_t pool;
	int steps = 4, i;
	void *p;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: pools reserve|oom|current|driver [STEPS]\n");
		return 2;
	}
	if (argc == 3)
		steps = (int)scenario_bytes(argv[2], "STEPS");
	SCENARIO_OK(cudaStreamCreate(&s));
	scenario_ready();
	if (!strcmp(argv[1], "reserve")) {
		pool = make_pool();
		keep_all(pool);
		for (i = 0; i < steps; i++) {
			SCENARIO_OPAQUE(i);
			step_free(step_alloc(pool, 8 * MIB));
			sync_step();
			step_boundary(i);
		}
		p = default_pool();
		default_threshold(p);
		default_free(default_alloc(6 * MIB));
		sync_step();
		trim_pool(pool);
	} else if (!strcmp(argv[1], "oom")) {
		pool = make_pool();
		keep_all(pool);
		step_free(step_alloc(pool, 64 * MIB));
		sync_step();
		for (i = 0; i < steps; i++) {
			SCENARIO_OPAQUE(i);
			leak_step();
			sync_step();
			step_boundary(i);
		}
	} else if (!strcmp(argv[1], "current")) {
		pool = make_pool();
		set_current(pool);
		if (get_current() != pool) {
			fprintf(stderr, "pools: cudaDeviceGetMemPool is not the pool set\n");
			return 1;
		}
		keep_all(pool);
		current_free(current_alloc());
		sync_step();
		destroy_pool(pool);
	} else if (!strcmp(argv[1], "driver")) {
		CUmemoryPool dp = drv_make_pool();

		drv_keep_all(dp);
		for (i = 0; i < steps; i++) {
			SCENARIO_OPAQUE(i);
			drv_step_free(drv_step_alloc(dp));
			sync_step();
			step_boundary(i);
		}
		drv_trim_pool(dp);
	} else {
		fprintf(stderr, "pools: unknown mode %s\n", argv[1]);
		return 2;
	}
	scenario_done();
	return 0;
}
