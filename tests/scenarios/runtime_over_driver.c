// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * runtime_over_driver
 *
 * The runtime's allocations are the driver's too: every cudaMalloc of the stand-in runtime
 * calls cuMemAlloc_v2 of the stand-in driver, on the same thread, before it returns (and
 * cudaFree calls cuMemFree_v2). A tracer attached to both libraries must count each
 * allocation once, at the outermost API, with the driver call as an inner layer.
 *
 * Set-up, before "ready": cudaSetDevice(0), so the runtime has dlopen()ed libcuda.so.1 (it
 * is mapped at "ready") and retained device 0's primary context.
 *   rt_alloc: 4 x cudaMalloc(2 MiB), one site; inside each, cuMemAlloc_v2(2 MiB) from
 *             libcudart.so.13 (same pointer, same size, device 0).
 *   rt_free:  cudaFree of the first; inside it, cuMemFree_v2 of the same pointer.
 * Expected at "done": 3 live allocations of 2097152 bytes, 6291456 bytes on device 0, at
 * site rt_alloc, API cudaMalloc with cuMemAlloc_v2 below it: not 6 allocations and not
 * 12 MiB. 1 free (cudaFree over cuMemFree_v2). The driver's count of device 0 bytes in use
 * is checked: 6291456.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

#define ALLOC_BYTES (2UL << 20)

static SCENARIO_SITE void rt_alloc(void **bufs, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&bufs[i], ALLOC_BYTES));
	}
}

static SCENARIO_SITE void rt_free(void *p)
{
	SCENARIO_OK(cudaFree(p));
}

int main(void)
{
	size_t free_b, total_b;
	void *bufs[4];

	SCENARIO_OK(cudaSetDevice(0));
	scenario_ready();
	rt_alloc(bufs, 4);
	rt_free(bufs[0]);
	SCENARIO_OK(cudaMemGetInfo(&free_b, &total_b));
	SCENARIO_EXPECT(total_b - free_b, 3 * ALLOC_BYTES);
	scenario_done();
	return 0;
}
