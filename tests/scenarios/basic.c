// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * basic N M SIZE
 *
 * alloc_buffers: N x cudaMalloc(SIZE); free_buffers: cudaFree of the first M.
 * Expected at "done": N - M buffers of SIZE bytes live at site alloc_buffers (device 0),
 * (N - M) * SIZE bytes; M frees.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void alloc_buffers(void **bufs, unsigned long n, size_t size)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		SCENARIO_OK(cudaMalloc(&bufs[i], size));
}

static SCENARIO_SITE void free_buffers(void **bufs, unsigned long m)
{
	unsigned long i;

	for (i = 0; i < m; i++)
		SCENARIO_OK(cudaFree(bufs[i]));
}

int main(int argc, char **argv)
{
	unsigned long long n, m, size;
	void **bufs;

	scenario_usage(argc, 4, "basic N M SIZE");
	n = scenario_bytes(argv[1], "N");
	m = scenario_bytes(argv[2], "M");
	size = scenario_bytes(argv[3], "SIZE");
	if (m > n || !size) {
		fprintf(stderr, "basic: want M <= N and SIZE > 0\n");
		return 2;
	}
	bufs = calloc(n ? n : 1, sizeof(*bufs));
	if (!bufs)
		return 1;
	scenario_ready();
	alloc_buffers(bufs, n, size);
	free_buffers(bufs, m);
	scenario_done();
	return 0;
}
