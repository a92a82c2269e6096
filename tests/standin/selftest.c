// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Self-test of the stand-in driver and runtime: the tracer's end-to-end tests trust their
 * behaviour (what is live when), so it is checked here, without any tracer. Sets its own
 * device count and capacity; prints "standin selftest: ok" and exits 0, or names the first
 * failed check and exits 1.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MIB	 (1UL << 20)
#define CAPACITY (64 * MIB)

extern __typeof__(cuMemAllocAsync) cuMemAllocAsync_ptsz;
extern __typeof__(cuMemFreeAsync) cuMemFreeAsync_ptsz;
extern __typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
extern __typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;

static int failures;

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "selftest: %s:%d: %s\n", __FILE__, __LINE__, #cond);       \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

#define CHECK_RC(call, want)                                                                       \
	do {                                                                                       \
		long __rc = (long)(call);                                                          \
		if (__rc != (long)(want)) {                                                        \
			fprintf(stderr, "selftest: %s:%d: %s = %ld, want %ld\n", __FILE__,         \
				__LINE__, #call, __rc, (long)(want));                              \
			failures++;                                                                \
		}                                                                                  \
	} while (0)

/* Bytes the current context's device has in use. */
static size_t used(void)
{
	size_t free_b = 0, total_b = 0;

	CHECK_RC(cuMemGetInfo(&free_b, &total_b), CUDA_SUCCESS);
	CHECK(total_b == CAPACITY);
	return total_b - free_b;
}

static void test_init_and_contexts(void)
{
	CUdeviceptr d = 0;
	CUcontext ctx, c2, cur;
	int n = 0, v = 0;

	CHECK_RC(cuMemAlloc(&d, 4096), CUDA_ERROR_NOT_INITIALIZED);
	CHECK_RC(cuDriverGetVersion(&v), CUDA_SUCCESS);
	CHECK(v == CUDA_VERSION);
	CHECK_RC(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuInit(0), CUDA_SUCCESS);
	CHECK_RC(cuInit(0), CUDA_SUCCESS);
	CHECK_RC(cuDeviceGetCount(&n), CUDA_SUCCESS);
	CHECK(n == 2);
	CHECK_RC(cuDeviceGet(&n, 2), CUDA_ERROR_INVALID_DEVICE);
	CHECK_RC(cuMemAlloc(&d, 4096), CUDA_ERROR_INVALID_CONTEXT);
	CHECK_RC(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
	CHECK_RC(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	CHECK_RC(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	CHECK(cur == ctx);

	/* A created context is current at once; destroying it frees what it allocated. */
	CHECK_RC(cuCtxCreate(&c2, NULL, 0, 1), CUDA_SUCCESS);
	CHECK_RC(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
	CHECK(cur == c2);
	CHECK_RC(cuMemAlloc(&d, 3 * MIB), CUDA_SUCCESS);
	CHECK(used() == 3 * MIB);
	CHECK_RC(cuCtxDestroy(c2), CUDA_SUCCESS);
	CHECK_RC(cuCtxDestroy(c2), CUDA_ERROR_INVALID_CONTEXT);
	CHECK_RC(cuCtxDestroy(ctx), CUDA_ERROR_INVALID_CONTEXT); /* primary */
	CHECK_RC(cuMemAlloc(&d, 4096), CUDA_ERROR_INVALID_CONTEXT);
	CHECK_RC(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
	CHECK_RC(cuCtxSetCurrent(c2), CUDA_ERROR_INVALID_CONTEXT);
	CHECK(used() == 0);
}

static void test_alloc_free(void)
{
	CUdeviceptr d, e, poison = 0xdead000;
	size_t pitch = 0;
	void *h;

	CHECK_RC(cuMemAlloc(&d, MIB), CUDA_SUCCESS);
	CHECK(used() == MIB);
	memset((void *)d, 0xab, MIB);
	CHECK_RC(cuMemsetD8(d, 0x5a, MIB), CUDA_SUCCESS);
	CHECK(((unsigned char *)d)[MIB - 1] == 0x5a);
	CHECK_RC(cuMemsetD8(d, 0, MIB + 1), CUDA_ERROR_INVALID_VALUE);

	e = poison;
	CHECK_RC(cuMemAlloc(&e, CAPACITY), CUDA_ERROR_OUT_OF_MEMORY);
	CHECK(e == poison);
	CHECK_RC(cuMemAlloc(&e, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemAlloc(&e, CAPACITY - MIB), CUDA_SUCCESS); /* exactly full */
	CHECK(used() == CAPACITY);
	CHECK_RC(cuMemFree(e), CUDA_SUCCESS);

	CHECK_RC(cuMemFreeHost((void *)d), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemFree(d), CUDA_SUCCESS);
	CHECK_RC(cuMemFree(d), CUDA_ERROR_INVALID_VALUE);      /* double free */
	CHECK_RC(cuMemFree(poison), CUDA_ERROR_INVALID_VALUE); /* never allocated */
	CHECK(used() == 0);

	CHECK_RC(cuMemAllocPitch(&d, &pitch, 1000, 10, 4), CUDA_SUCCESS);
	CHECK(pitch == 1024);
	CHECK(used() == 10240);
	CHECK_RC(cuMemAllocPitch(&e, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemFree(d), CUDA_SUCCESS);

	CHECK_RC(cuMemAllocManaged(&d, 2000, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
	CHECK(used() == 2000);
	CHECK_RC(cuMemAllocManaged(&e, 2000, CU_MEM_ATTACH_SINGLE), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemFree(d), CUDA_SUCCESS);

	/* Pinned host memory does not count against the device. */
	CHECK_RC(cuMemAllocHost(&h, 3000), CUDA_SUCCESS);
	CHECK_RC(cuMemHostAlloc(&h, 4000, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuMemFree((CUdeviceptr)h), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemFreeHost(h), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeHost(h), CUDA_ERROR_INVALID_VALUE);
}

static void test_stream_ordered(void)
{
	CUdeviceptr a, b, c, x, y;
	CUmemoryPool pool, pool1;
	CUstream s, s2;
	CUevent ev;

	CHECK_RC(cuStreamCreate(&s, 0), CUDA_SUCCESS);
	CHECK_RC(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING), CUDA_SUCCESS);

	/* A queued free keeps its memory; the same stream and size get the block back. */
	CHECK_RC(cuMemAllocAsync(&a, 4096, s), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(a, s), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(a, s), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
	CHECK(used() == 4096);
	CHECK_RC(cuMemAllocAsync(&c, 8192, s), CUDA_SUCCESS);
	CHECK(c != a);
	CHECK_RC(cuMemAllocAsync(&b, 4096, s2), CUDA_SUCCESS);
	CHECK(b != a); /* other stream: no reuse */
	CHECK_RC(cuMemAllocAsync(&x, 4096, s), CUDA_SUCCESS);
	CHECK(x == a); /* same stream, same size: reused */
	CHECK(used() == 4096 + 8192 + 4096);
	CHECK_RC(cuMemFreeAsync(x, s), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(b, s2), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(c, s), CUDA_SUCCESS);
	CHECK_RC(cuStreamSynchronize(s), CUDA_SUCCESS);
	CHECK(used() == 4096); /* b still queued on s2 */
	CHECK_RC(cuStreamSynchronize(NULL), CUDA_SUCCESS);
	CHECK(used() == 4096); /* legacy stream sync does not reach s2 */
	CHECK_RC(cuStreamSynchronize(s2), CUDA_SUCCESS);
	CHECK(used() == 0);

	/* An event completes the frees queued before its record, not the later ones. */
	CHECK_RC(cuEventCreate(&ev, CU_EVENT_DEFAULT), CUDA_SUCCESS);
	CHECK_RC(cuMemAlloc(&x, MIB), CUDA_SUCCESS);
	CHECK_RC(cuMemAlloc(&y, 2 * MIB), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(x, s), CUDA_SUCCESS); /* cuMemAlloc memory, freed in order */
	CHECK_RC(cuEventRecord(ev, s), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(y, s), CUDA_SUCCESS);
	CHECK_RC(cuEventSynchronize(ev), CUDA_SUCCESS);
	CHECK(used() == 2 * MIB);
	CHECK_RC(cuEventRecord(ev, s), CUDA_SUCCESS);
	CHECK_RC(cuEventSynchronize(ev), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuEventDestroy(ev), CUDA_SUCCESS);
	CHECK_RC(cuEventSynchronize(ev), CUDA_ERROR_INVALID_HANDLE);

	/* Per-thread stream: 0 in a _ptsz call, or CU_STREAM_PER_THREAD anywhere. */
	CHECK_RC(cuMemAllocAsync_ptsz(&a, 4096, NULL), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync_ptsz(a, NULL), CUDA_SUCCESS);
	CHECK_RC(cuStreamSynchronize(NULL), CUDA_SUCCESS);
	CHECK(used() == 4096);
	CHECK_RC(cuMemAllocAsync(&b, 4096, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	CHECK(b == a);
	CHECK_RC(cuMemFreeAsync(b, CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	CHECK_RC(cuStreamSynchronize(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
	CHECK(used() == 0);

	/* Pools: the pool, not the stream, decides the device. */
	CHECK_RC(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
	CHECK_RC(cuDeviceGetDefaultMemPool(&pool1, 1), CUDA_SUCCESS);
	CHECK(pool != pool1);
	CHECK_RC(cuMemAllocFromPoolAsync(&a, 6000, pool1, s), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuMemAllocFromPoolAsync(&b, 6000, pool, s), CUDA_SUCCESS);
	CHECK(used() == 6000);
	CHECK_RC(cuMemAllocFromPoolAsync(&c, 6000, (CUmemoryPool)&pool, s),
		 CUDA_ERROR_INVALID_VALUE);

	/* A destroyed stream's frees complete only at a context sync. */
	CHECK_RC(cuMemFreeAsync(b, s2), CUDA_SUCCESS);
	CHECK_RC(cuStreamDestroy(s2), CUDA_SUCCESS);
	CHECK_RC(cuStreamSynchronize(s2), CUDA_ERROR_INVALID_HANDLE);
	CHECK(used() == 6000);
	CHECK_RC(cuCtxSynchronize(), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuMemFree(a), CUDA_SUCCESS); /* pool memory may be freed synchronously */

	/* Reset frees the context's allocations, pending ones too, but not pool memory. */
	CHECK_RC(cuMemAlloc(&x, MIB), CUDA_SUCCESS);
	CHECK_RC(cuMemAlloc(&y, MIB), CUDA_SUCCESS);
	CHECK_RC(cuMemFreeAsync(y, s), CUDA_SUCCESS);
	CHECK_RC(cuMemAllocAsync(&a, 3 * MIB, s), CUDA_SUCCESS);
	CHECK(used() == 5 * MIB);
	CHECK_RC(cuDevicePrimaryCtxReset(0), CUDA_SUCCESS);
	CHECK(used() == 3 * MIB);
	CHECK_RC(cuMemFree(x), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemFree(a), CUDA_SUCCESS);
	CHECK_RC(cuStreamDestroy(s), CUDA_SUCCESS);
	CHECK(used() == 0);
}

static void test_vmm(void)
{
	CUmemAllocationProp prop = {
	    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
	};
	CUmemAccessDesc rw = {
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
	    .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
	};
	CUmemGenericAllocationHandle h, h2;
	const size_t g = 2 * MIB;
	CUdeviceptr va;
	size_t gran = 0;

	CHECK_RC(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM),
		 CUDA_SUCCESS);
	CHECK(gran == g);
	CHECK_RC(cuMemAddressReserve(&va, 8 * MIB, 0, 0, 0), CUDA_SUCCESS);
	CHECK(va % g == 0);
	CHECK_RC(cuMemAddressReserve(&va, MIB, 0, 0, 0), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemCreate(&h, 4 * MIB, &prop, 0), CUDA_SUCCESS);
	CHECK(h != 0);
	CHECK(used() == 4 * MIB);
	CHECK_RC(cuMemCreate(&h2, CAPACITY, &prop, 0), CUDA_ERROR_OUT_OF_MEMORY);

	CHECK_RC(cuMemMap(va, 4 * MIB, 0, h, 0), CUDA_SUCCESS);
	CHECK_RC(cuMemMap(va + 2 * MIB, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE); /* overlap */
	CHECK_RC(cuMemMap(va + 4 * MIB, 4 * MIB, 0, h, 0), CUDA_SUCCESS); /* same memory */
	CHECK_RC(cuMemsetD8(va, 1, 4096), CUDA_ERROR_INVALID_VALUE);	  /* no access yet */
	CHECK_RC(cuMemSetAccess(va, 8 * MIB, &rw, 1), CUDA_SUCCESS);
	CHECK_RC(cuMemsetD8(va + 100, 0x77, 1), CUDA_SUCCESS);
	CHECK(((unsigned char *)va)[4 * MIB + 100] == 0x77);

	/* Released while mapped: alive until the last unmap. */
	CHECK_RC(cuMemRelease(h), CUDA_SUCCESS);
	CHECK_RC(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	CHECK(used() == 4 * MIB);
	CHECK_RC(cuMemAddressFree(va, 8 * MIB), CUDA_ERROR_INVALID_VALUE); /* still mapped */
	CHECK_RC(cuMemUnmap(va, 2 * MIB), CUDA_ERROR_INVALID_VALUE);	   /* part of one */
	CHECK_RC(cuMemUnmap(va, 4 * MIB), CUDA_SUCCESS);
	CHECK(used() == 4 * MIB);
	CHECK_RC(cuMemUnmap(va + 4 * MIB, 4 * MIB), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuMemAddressFree(va, 8 * MIB), CUDA_SUCCESS);
	CHECK_RC(cuMemAddressFree(va, 8 * MIB), CUDA_ERROR_INVALID_VALUE);
}

/* NCCL's ncclCuMemFree: a retained reference, released with the one from cuMemCreate. */
static void test_vmm_retain_and_host(void)
{
	CUmemAllocationProp prop = {
	    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
	};
	CUmemGenericAllocationHandle h, r = 0;
	CUdeviceptr va, base = 0;
	size_t size = 0;
	int dev = -1;

	CHECK_RC(cuMemAddressReserve(&va, 4 * MIB, 0, 0, 0), CUDA_SUCCESS);
	CHECK_RC(cuMemCreate(&h, 4 * MIB, &prop, 0), CUDA_SUCCESS);
	CHECK_RC(cuMemRetainAllocationHandle(&r, (void *)va), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemMap(va, 4 * MIB, 0, h, 0), CUDA_SUCCESS);
	CHECK_RC(cuMemRetainAllocationHandle(&r, (void *)(va + 12345)), CUDA_SUCCESS);
	CHECK(r == h);
	CHECK_RC(cuMemGetAddressRange(&base, &size, va + 100), CUDA_SUCCESS);
	CHECK(base == va && size == 4 * MIB);
	CHECK_RC(cuMemGetAddressRange(NULL, &size, va), CUDA_SUCCESS);
	CHECK_RC(cuPointerGetAttribute(&dev, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, va),
		 CUDA_SUCCESS);
	CHECK(dev == 0);
	CHECK_RC(cuMemRelease(r), CUDA_SUCCESS);
	CHECK_RC(cuMemUnmap(va, size), CUDA_SUCCESS);
	CHECK(used() == 4 * MIB); /* cuMemCreate's reference left */
	CHECK_RC(cuMemRelease(h), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
	CHECK_RC(cuMemAddressFree(va, 4 * MIB), CUDA_SUCCESS);
	CHECK_RC(cuMemGetAddressRange(NULL, &size, va), CUDA_ERROR_NOT_FOUND);
	/* On the host (ncclCuMemHostAlloc): no device's memory; _HOST_NUMA_CURRENT refused. */
	prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
	CHECK_RC(cuMemCreate(&h, 2 * MIB, &prop, 0), CUDA_SUCCESS);
	CHECK(used() == 0);
	CHECK_RC(cuMemRelease(h), CUDA_SUCCESS);
	prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT;
	CHECK_RC(cuMemCreate(&h, 2 * MIB, &prop, 0), CUDA_ERROR_INVALID_VALUE);
}

static void *rt_thread(void *arg)
{
	int dev = -1;
	void *p;

	(void)arg;
	/* Each thread starts on device 0 whatever the others chose. */
	CHECK_RC(cudaGetDevice(&dev), cudaSuccess);
	CHECK(dev == 0);
	CHECK_RC(cudaMallocAsync_ptsz(&p, 4096, 0), cudaSuccess);
	CHECK_RC(cudaFreeAsync_ptsz(p, 0), cudaSuccess);
	CHECK_RC(cudaStreamSynchronize(0), cudaSuccess);
	CHECK_RC(cudaStreamSynchronize(cudaStreamPerThread), cudaSuccess);
	return NULL;
}

static void test_runtime(void)
{
	void *p = (void *)0x1234, *q;
	size_t free_b, total_b, pitch;
	cudaMemPool_t pool;
	pthread_t t;
	int n = 0;

	CHECK_RC(cudaGetDeviceCount(&n), cudaSuccess);
	CHECK(n == 2);
	CHECK_RC(cudaMalloc(&p, 0), cudaSuccess);
	CHECK(p == NULL);
	CHECK_RC(cudaFree(NULL), cudaSuccess);
	p = (void *)0x1234;
	CHECK_RC(cudaMalloc(&p, CAPACITY + 1), cudaErrorMemoryAllocation);
	CHECK(p == (void *)0x1234);
	CHECK_RC(cudaSetDevice(99), cudaErrorInvalidDevice);
	CHECK_RC(cudaPeekAtLastError(), cudaErrorInvalidDevice);
	CHECK_RC(cudaGetLastError(), cudaErrorInvalidDevice);
	CHECK_RC(cudaGetLastError(), cudaSuccess);
	CHECK(!strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory"));
	CHECK(!strcmp(cudaGetErrorName(cudaErrorInvalidDevice), "cudaErrorInvalidDevice"));

	CHECK_RC(cudaMalloc(&p, MIB), cudaSuccess);
	CHECK_RC(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
	CHECK(total_b - free_b == MIB);
	CHECK_RC(cudaMemset(p, 7, MIB), cudaSuccess);
	CHECK_RC(cudaMallocHost(&q, 100), cudaSuccess);
	CHECK_RC(cudaMemcpy(q, p, 100, cudaMemcpyDeviceToHost), cudaSuccess);
	CHECK(((unsigned char *)q)[99] == 7);
	CHECK_RC(cudaMemcpy(q, p, 100, (enum cudaMemcpyKind)9), cudaErrorInvalidMemcpyDirection);
	CHECK_RC(cudaFree(q), cudaErrorInvalidValue);
	CHECK_RC(cudaFreeHost(q), cudaSuccess);
	CHECK_RC(cudaFree(p), cudaSuccess);
	CHECK_RC(cudaFree(p), cudaErrorInvalidValue);
	CHECK_RC(cudaMallocPitch(&p, &pitch, 1000, 10), cudaSuccess);
	CHECK(pitch == 1024);
	CHECK_RC(cudaMallocManaged(&q, 0, cudaMemAttachGlobal), cudaErrorInvalidValue);
	CHECK_RC(cudaDeviceReset(), cudaSuccess);
	CHECK_RC(cudaFree(p), cudaErrorInvalidValue); /* freed by the reset */

	/* Device 1 has its own capacity and its own default pool. */
	CHECK_RC(cudaSetDevice(1), cudaSuccess);
	CHECK_RC(cudaDeviceGetDefaultMemPool(&pool, 1), cudaSuccess);
	CHECK_RC(cudaDeviceGetDefaultMemPool(&pool, 2), cudaErrorInvalidDevice);
	CHECK_RC(cudaMalloc(&p, 8000), cudaSuccess);
	CHECK_RC(cudaMemGetInfo(&free_b, &total_b), cudaSuccess);
	CHECK(total_b - free_b == 8000);
	CHECK_RC(cudaGetDevice(&n), cudaSuccess);
	CHECK(n == 1);
	CHECK(!pthread_create(&t, NULL, rt_thread, NULL) && !pthread_join(t, NULL));
	CHECK_RC(cudaFree(p), cudaSuccess);
	CHECK_RC(cudaSetDevice(0), cudaSuccess);
}

int main(void)
{
	setenv("GPULEAK_STANDIN_DEVICES", "2", 1);
	setenv("GPULEAK_STANDIN_DEVICE_MEM", "64M", 1);
	test_init_and_contexts();
	test_alloc_free();
	test_stream_ordered();
	test_vmm();
	test_vmm_retain_and_host();
	test_runtime();
	if (failures) {
		fprintf(stderr, "standin selftest: %d check(s) failed\n", failures);
		return 1;
	}
	printf("standin selftest: ok\n");
	return 0;
}
