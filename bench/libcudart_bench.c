// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The benchmark's CUDA runtime: libcudart.so.13 with only cudaMalloc and cudaFree, versioned
 * @@libcudart.so.13 like NVIDIA's, so gpuleak attaches to it exactly as in production. It
 * does next to nothing (hands out fresh fake device addresses), so a pair measures the
 * tracer, not the allocator. Built like the test stand-ins: every entry starts with
 * `push %rbp`, as NVIDIA's do, which the kernel emulates under a uprobe.
 */
#include <stdint.h>
#include <stddef.h>
#include <cuda_runtime_api.h>

/* 256-byte granules, never reused: unique addresses. Single-threaded callers only. */
static uintptr_t next_addr = 0x700000000000ULL;

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
	if (!devPtr)
		return cudaErrorInvalidValue;
	if (!size) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	*devPtr = (void *)next_addr;
	next_addr += (size + 255) & ~(size_t)255;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
	/* Keeps the call from being folded away at the caller: the pointer is looked at. */
	__asm__ volatile("" : : "r"(devPtr) : "memory");
	return cudaSuccess;
}
