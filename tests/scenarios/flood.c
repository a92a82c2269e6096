// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flood N SIZE K
 *
 * For the loss tests: a burst with no pause, meant to overrun a small ring buffer.
 * warm_up (before "ready": untraced): one cudaMalloc + cudaFree, so the runtime's and
 * driver's initialisation calls happen before the trace. Then, traced:
 *   burst     N x (cudaMalloc(SIZE), cudaFree) from one call site each
 *   keep      K x cudaMalloc(SIZE), never freed
 * Every cudaMalloc reaches the driver (cuMemAlloc_v2), every cudaFree too (cuMemFree_v2):
 * the traced calls are exactly 4 * N + 2 * K, half allocations and half frees of the burst.
 * Expected at "done": K * SIZE bytes live at site keep.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void warm_up(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	SCENARIO_OK(cudaFree(p));
}

static SCENARIO_SITE void burst(unsigned long long n, size_t size)
{
	unsigned long long i;
	void *p;

	for (i = 0; i < n; i++) {
		SCENARIO_OK(cudaMalloc(&p, size));
		SCENARIO_OK(cudaFree(p));
	}
}

static SCENARIO_SITE void keep(void **v, unsigned long long k, size_t size)
{
	unsigned long long i;

	for (i = 0; i < k; i++)
		SCENARIO_OK(cudaMalloc(&v[i], size));
}

int main(int argc, char **argv)
{
	unsigned long long n, size, k;
	void **v;

	scenario_usage(argc, 4, "flood N SIZE K");
	n = scenario_bytes(argv[1], "N");
	size = scenario_bytes(argv[2], "SIZE");
	k = scenario_bytes(argv[3], "K");
	if (!size) {
		fprintf(stderr, "flood: want SIZE > 0\n");
		return 2;
	}
	v = calloc(k ? k : 1, sizeof(*v));
	if (!v)
		return 1;
	warm_up(size);
	scenario_ready();
	burst(n, size);
	keep(v, k, size);
	scenario_done();
	return 0;
}
