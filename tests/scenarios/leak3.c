// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * leak3
 *
 * leak_one_mib, called 3 times: cudaMalloc(1 MiB), kept. transient_work, called once
 * between the first and second leak: 5 pairs of cudaMalloc(4096) + cudaFree (the freed
 * addresses may come back for later allocations, as real allocators do).
 * Expected at "done": 3 allocations, 3145728 bytes, all at site leak_one_mib (device 0);
 * 5 allocations of 4096 at transient_work, all freed: 8 allocations, 5 frees in all.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void *leak_one_mib(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 1 << 20));
	return p;
}

static SCENARIO_SITE void transient_work(void)
{
	void *p;
	int i;

	for (i = 0; i < 5; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&p, 4096));
		SCENARIO_OK(cudaFree(p));
	}
}

int main(void)
{
	scenario_ready();
	leak_one_mib();
	transient_work();
	leak_one_mib();
	leak_one_mib();
	scenario_done();
	return 0;
}
