// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * apis
 *
 * One allocation per runtime API, each at its own site and of a distinct size. Device is the
 * current device at the call; pinned host memory ("host") belongs to no device.
 *
 *   site              API                                 bytes  device  at "done"
 *   alloc_malloc      cudaMalloc                           1000    0     live
 *   alloc_managed     cudaMallocManaged, global            2000    0     live
 *   alloc_host        cudaMallocHost                       3000   host   freed by free_host
 *                                                                        (cudaFreeHost)
 *   alloc_host_alloc  cudaHostAlloc, default flags         4000   host   live
 *   alloc_pitch       cudaMallocPitch 1000 x 10           10240    0     live (pitch 1024)
 *   alloc_async       cudaMallocAsync, created stream      5000    0     freed by free_async
 *                                                                        (cudaFreeAsync, then
 *                                                                        cudaStreamSynchronize)
 *   alloc_from_pool   cudaMallocFromPoolAsync, device 0    6000    0     live
 *                     default pool, created stream
 *   alloc_async_ptsz  cudaMallocAsync_ptsz, stream 0       7000    0     freed by
 *                     (the thread's per-thread stream)                   free_async_ptsz
 *                                                                        (cudaFreeAsync_ptsz,
 *                                                                        then
 *                                                                        cudaDeviceSynchronize)
 *   alloc_on_device1  cudaSetDevice(1), then cudaMalloc    8000    1     live
 *
 * Expected at "done": 6 live allocations, 31240 bytes: device 0 19240 (cudaMalloc 1000,
 * managed 2000, pitch 10240, pool 6000), device 1 8000, pinned host 4000. 9 allocations,
 * 3 frees (2 of them stream-ordered, both synchronized: nothing pending). Needs
 * GPULEAK_STANDIN_DEVICES >= 2 (the default).
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

/* Declared by cuda_runtime_api.h only under CUDA_API_PER_THREAD_DEFAULT_STREAM. */
extern __typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
extern __typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;

static SCENARIO_SITE void *alloc_malloc(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 1000));
	return p;
}

static SCENARIO_SITE void *alloc_managed(void)
{
	void *p;

	SCENARIO_OK(cudaMallocManaged(&p, 2000, cudaMemAttachGlobal));
	return p;
}

static SCENARIO_SITE void *alloc_host(void)
{
	void *p;

	SCENARIO_OK(cudaMallocHost(&p, 3000));
	return p;
}

static SCENARIO_SITE void free_host(void *p)
{
	SCENARIO_OK(cudaFreeHost(p));
}

static SCENARIO_SITE void *alloc_host_alloc(void)
{
	void *p;

	SCENARIO_OK(cudaHostAlloc(&p, 4000, cudaHostAllocDefault));
	return p;
}

static SCENARIO_SITE void *alloc_pitch(void)
{
	size_t pitch;
	void *p;

	SCENARIO_OK(cudaMallocPitch(&p, &pitch, 1000, 10));
	SCENARIO_EXPECT(pitch, 1024);
	return p;
}

static SCENARIO_SITE void *alloc_async(cudaStream_t s)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, 5000, s));
	return p;
}

static SCENARIO_SITE void free_async(void *p, cudaStream_t s)
{
	SCENARIO_OK(cudaFreeAsync(p, s));
	SCENARIO_OK(cudaStreamSynchronize(s));
}

static SCENARIO_SITE void *alloc_from_pool(cudaStream_t s)
{
	cudaMemPool_t pool;
	void *p;

	SCENARIO_OK(cudaDeviceGetDefaultMemPool(&pool, 0));
	SCENARIO_OK(cudaMallocFromPoolAsync(&p, 6000, pool, s));
	return p;
}

static SCENARIO_SITE void *alloc_async_ptsz(void)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync_ptsz(&p, 7000, 0));
	return p;
}

static SCENARIO_SITE void free_async_ptsz(void *p)
{
	SCENARIO_OK(cudaFreeAsync_ptsz(p, 0));
	SCENARIO_OK(cudaDeviceSynchronize());
}

static SCENARIO_SITE void *alloc_on_device1(void)
{
	void *p;

	SCENARIO_OK(cudaSetDevice(1));
	SCENARIO_OK(cudaMalloc(&p, 8000));
	return p;
}

int main(void)
{
	cudaStream_t s;

	scenario_ready();
	SCENARIO_OK(cudaStreamCreate(&s));
	alloc_malloc();
	alloc_managed();
	free_host(alloc_host());
	alloc_host_alloc();
	alloc_pitch();
	free_async(alloc_async(s), s);
	alloc_from_pool(s);
	free_async_ptsz(alloc_async_ptsz());
	alloc_on_device1();
	scenario_done();
	return 0;
}
