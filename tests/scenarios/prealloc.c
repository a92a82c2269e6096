// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * prealloc K
 *
 * Before "ready" (so before a tracer attaches): alloc_before_attach does K x
 * cudaMalloc(65536). After the "go" line: free_preexisting cudaFrees all K of them and
 * alloc_after_attach does 2 x cudaMalloc(65536), kept.
 * Expected at "done", as seen by a tracer attached at "ready": 2 live allocations, 131072
 * bytes at alloc_after_attach (device 0); K frees of addresses it never saw allocated
 * (which must not count as live or negative). The process itself holds exactly the 2.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void alloc_before_attach(void **bufs, unsigned long k)
{
	unsigned long i;

	for (i = 0; i < k; i++)
		SCENARIO_OK(cudaMalloc(&bufs[i], 65536));
}

static SCENARIO_SITE void free_preexisting(void **bufs, unsigned long k)
{
	unsigned long i;

	for (i = 0; i < k; i++)
		SCENARIO_OK(cudaFree(bufs[i]));
}

static SCENARIO_SITE void alloc_after_attach(void **out)
{
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&out[i], 65536));
	}
}

int main(int argc, char **argv)
{
	unsigned long long k;
	void *kept[2];
	void **bufs;

	scenario_usage(argc, 2, "prealloc K");
	k = scenario_bytes(argv[1], "K");
	bufs = calloc(k ? k : 1, sizeof(*bufs));
	if (!bufs)
		return 1;
	alloc_before_attach(bufs, k);
	scenario_ready();
	free_preexisting(bufs, k);
	alloc_after_attach(kept);
	scenario_done();
	return 0;
}
