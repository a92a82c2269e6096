// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * torchlike STEPS
 *
 * A decode loop over libtorchlike.so (tests/scenarios/torchlike_lib.c: PyTorch-like
 * allocators built -O2 -fomit-frame-pointer, %rbp no frame pointer), the way an interpreter
 * calls into PyTorch: main (built with frame pointers) -> forward_step, STEPS times, each
 * making one c10::alloc_cpu(4096) (posix_memalign: gpuleak --libc) and one
 * CUDACachingAllocator malloc(1 MiB) (cudaMalloc), both kept.
 * Expected at "done": STEPS x 4096 bytes of posix_memalign at c10::alloc_cpu and STEPS MiB of
 * cudaMalloc at the caching allocator's malloc, each with a stack that ends at its call site.
 */
#include <stddef.h>
#include <stdio.h>
#include "scenario.h"

void *alloc_cpu(size_t size) __asm__("_ZN3c109alloc_cpuEm");
void *cuda_malloc(size_t size) __asm__(
    "_ZN3c104cuda20CUDACachingAllocator6Native22DeviceCachingAllocator6mallocEm");

static volatile int sink;

static SCENARIO_SITE void forward_step(void)
{
	if (!alloc_cpu(4096) || !cuda_malloc(1UL << 20)) {
		fprintf(stderr, "torchlike: an allocation failed\n");
		exit(1);
	}
	sink++;
}

int main(int argc, char **argv)
{
	unsigned long long steps, i;

	scenario_usage(argc, 2, "torchlike STEPS");
	steps = scenario_bytes(argv[1], "STEPS");
	scenario_ready();
	for (i = 0; i < steps; i++)
		forward_step();
	scenario_done();
	return 0;
}
