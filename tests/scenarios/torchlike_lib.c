// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libtorchlike.so for the `torchlike` scenario: allocators shaped like PyTorch's (libc10.so's
 * CPU allocator, libc10_cuda.so's caching allocator), built as distributions build them:
 * -O2 -fomit-frame-pointer, where %rbp is one more general register. Each entry holds a value
 * of its own in %rbp across its allocation call, as -O2 code does when registers run short
 * (spelled out in asm so that every compiler does it):
 *   c10::alloc_cpu(size)         posix_memalign(64, size): %rbp a hash, no address at all
 *   c10::cuda::CUDACachingAllocator::Native::DeviceCachingAllocator::malloc(size)
 *                                cudaMalloc(size): %rbp the allocator object, a real address
 *                                whose first two words (0, 0x1234) read as a frame
 * A frame-pointer walk from either allocation finds the call site and nothing true above it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cuda_runtime_api.h>

#define EXPORT __attribute__((noinline, visibility("default")))

/* What a frame-pointer walk through %rbp = &allocator reads: next frame 0, return 0x1234. */
static struct {
	uint64_t blocks, bytes;
} allocator = {0, 0x1234};

EXPORT void *alloc_cpu(size_t size) __asm__("_ZN3c109alloc_cpuEm");
EXPORT void *alloc_cpu(size_t size)
{
	uint64_t key = size * 0x9e3779b97f4a7c15ULL;
	void *p = NULL;

	__asm__ volatile("mov %0, %%rbp" : : "r"(key) : "rbp");
	if (posix_memalign(&p, 64, size))
		p = NULL;
	__asm__ volatile("" : : : "rbp");
	return p;
}

EXPORT void *cuda_malloc(size_t size) __asm__(
    "_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEm");
EXPORT void *cuda_malloc(size_t size)
{
	void *p = NULL;

	__asm__ volatile("mov %0, %%rbp" : : "r"(&allocator) : "rbp");
	if (cudaMalloc(&p, size) != cudaSuccess)
		p = NULL;
	__asm__ volatile("" : : : "rbp");
	return p;
}
