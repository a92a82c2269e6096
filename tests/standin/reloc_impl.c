// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/* What the entries of reloc.S call: host memory, CUDA's return codes. */
#include <stdlib.h>
#include <cuda_runtime_api.h>

__attribute__((visibility("hidden"))) cudaError_t reloc_malloc(void **p, size_t size)
{
	if (!p)
		return cudaErrorInvalidValue;
	*p = malloc(size);
	return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

__attribute__((visibility("hidden"))) cudaError_t reloc_free(void *p)
{
	free(p);
	return cudaSuccess;
}
