// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fail
 *
 * Calls that fail or allocate nothing, then one that succeeds:
 *   alloc_too_big      cudaMalloc(device 0 capacity + 1 byte)  -> 2 (cudaErrorMemoryAllocation),
 *                      out-pointer untouched, nothing allocated
 *   alloc_zero         cudaMalloc(0)                           -> 0 (cudaSuccess), pointer set
 *                      to NULL, nothing allocated (CUDA's documented special case)
 *   set_bad_device     cudaSetDevice(99)                       -> 101 (cudaErrorInvalidDevice),
 *                      current device stays 0
 *   alloc_after_errors cudaMalloc(4096)                        -> 0, kept
 * The capacity is read with cudaMemGetInfo before "ready".
 * Expected at "done": 1 live allocation, 4096 bytes at alloc_after_errors (device 0); the
 * failed and the size-0 call leave nothing live.
 */
#include <stdint.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define POISON ((void *)(uintptr_t)0xdeadbeef)

static SCENARIO_SITE void alloc_too_big(size_t size)
{
	void *p = POISON;

	SCENARIO_EXPECT(cudaMalloc(&p, size), cudaErrorMemoryAllocation);
	SCENARIO_EXPECT((uintptr_t)p, (uintptr_t)POISON);
}

static SCENARIO_SITE void alloc_zero(void)
{
	void *p = POISON;

	SCENARIO_OK(cudaMalloc(&p, 0));
	SCENARIO_EXPECT((uintptr_t)p, 0);
}

static SCENARIO_SITE void set_bad_device(void)
{
	int dev = -1;

	SCENARIO_EXPECT(cudaSetDevice(99), cudaErrorInvalidDevice);
	SCENARIO_OK(cudaGetDevice(&dev));
	SCENARIO_EXPECT(dev, 0);
}

static SCENARIO_SITE void *alloc_after_errors(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 4096));
	return p;
}

int main(void)
{
	size_t free_bytes, total_bytes;

	SCENARIO_OK(cudaMemGetInfo(&free_bytes, &total_bytes));
	scenario_ready();
	alloc_too_big(total_bytes + 1);
	alloc_zero();
	set_bad_device();
	alloc_after_errors();
	scenario_done();
	return 0;
}
