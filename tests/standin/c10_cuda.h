/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stand-in libc10_cuda.so: PyTorch's CUDA caching allocator as a tracer sees it from
 * outside the process, over the stand-in runtime and driver (their cudaMalloc/cudaFree, and
 * cuMemAddressReserve/cuMemCreate/cuMemMap/cuMemSetAccess/cuMemUnmap/cuMemRelease for
 * expandable segments). What it models and what it leaves out: tests/standin/README.md.
 *
 * The entry points stand for PyTorch's C++ ones (NativeCachingAllocator::allocate and the
 * DataPtr deleter local_raw_delete, raw_alloc_with_stream/raw_delete, emptyCache,
 * getDeviceStats): the probes and the profiler hook fire where PyTorch's do.
 */
#ifndef STANDIN_C10_CUDA_H
#define STANDIN_C10_CUDA_H

#include <stddef.h>
#include <stdint.h>

/* torch.cuda.memory_stats(device), the "current" values of the aggregate pool. */
struct c10_cuda_stats {
	uint64_t allocated_bytes; /* live blocks, as handed out (rounded to 512 bytes) */
	uint64_t requested_bytes; /* what their callers asked for */
	uint64_t reserved_bytes;  /* segments: cudaMalloc'd, or mapped expandable pages */
	uint64_t segments;	  /* cudaMalloc'd segments, or mapped pages */
	uint64_t allocations;	  /* live blocks */
	uint64_t device_allocs;	  /* cudaMalloc or cuMemCreate calls so far */
	uint64_t device_frees;	  /* cudaFree or cuMemRelease calls so far */
};

/* NativeCachingAllocator::allocate on device for stream: fires pytorch:malloc after it. */
void *c10_cuda_alloc(size_t size, int device, int64_t stream);
/* local_raw_delete: fires pytorch:free before the block goes back to the cache. */
void c10_cuda_free(void *ptr);
/* raw_alloc_with_stream / raw_delete: the same allocator, no probe (cuBLAS workspaces). */
void *c10_cuda_raw_alloc(size_t size, int device, int64_t stream);
void c10_cuda_raw_delete(void *ptr);
/* torch.cuda.empty_cache(): every free segment (free pages, expandable) goes back to CUDA. */
void c10_cuda_empty_cache(void);
/* 0, or -1 for a bad device. */
int c10_cuda_memory_stats(int device, struct c10_cuda_stats *out);

#endif
