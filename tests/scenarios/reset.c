// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * reset
 *
 * cudaDeviceReset in a running process: the runtime resets device 0's primary context
 * (cuDevicePrimaryCtxReset_v2, as NVIDIA's runtime does), which releases everything
 * allocated in it except stream-ordered pool memory (the stand-in driver's model, see
 * tests/standin/cuda.c ctx_release_allocs). Set-up, before "ready": cudaStreamCreate (S).
 *
 *   site               API                         bytes    at "done"
 *   before_reset       cudaMalloc                  1 MiB    released by the reset
 *   pool_before_reset  cudaMallocAsync on S        2 MiB    live (the pool keeps it)
 *   after_reset        cudaMalloc                  4 MiB    live (a new primary context)
 *
 * Expected: 3 allocations, 0 frees, 6 MiB live in 2 allocations, 1 released by its owner
 * (the context), no unknown frees.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void *before_reset(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 1 << 20));
	return p;
}

static SCENARIO_SITE void *pool_before_reset(cudaStream_t s)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, 2 << 20, s));
	SCENARIO_OK(cudaStreamSynchronize(s));
	return p;
}

static SCENARIO_SITE void *after_reset(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 4 << 20));
	return p;
}

int main(void)
{
	cudaStream_t s;

	SCENARIO_OK(cudaStreamCreate(&s));
	scenario_ready();
	before_reset();
	pool_before_reset(s);
	SCENARIO_OK(cudaDeviceReset());
	after_reset();
	scenario_done();
	return 0;
}
