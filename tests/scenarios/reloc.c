// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * reloc N SIZE
 *
 * Against the probe-placement runtime (tests/standin/reloc.S, in lib-reloc/), whose entries
 * start with instructions the kernel single-steps. device_buffers: N x cudaMalloc(SIZE);
 * drop_device: cudaFree of the first; host_buffers: 2 x cudaMallocHost(4096); drop_host:
 * cudaFreeHost of the first. Expected at "done": N - 1 device buffers of SIZE live at
 * device_buffers, one host buffer of 4096 at host_buffers; N + 2 allocations, 2 frees.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void device_buffers(void **bufs, unsigned long n, size_t size)
{
	unsigned long i;

	for (i = 0; i < n; i++)
		SCENARIO_OK(cudaMalloc(&bufs[i], size));
}

static SCENARIO_SITE void drop_device(void *p)
{
	SCENARIO_OK(cudaFree(p));
}

static SCENARIO_SITE void host_buffers(void **bufs)
{
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMallocHost(&bufs[i], 4096));
	}
}

static SCENARIO_SITE void drop_host(void *p)
{
	SCENARIO_OK(cudaFreeHost(p));
}

int main(int argc, char **argv)
{
	unsigned long long n, size;
	void **bufs, *host[2];

	scenario_usage(argc, 3, "reloc N SIZE");
	n = scenario_bytes(argv[1], "N");
	size = scenario_bytes(argv[2], "SIZE");
	if (!n || !size) {
		fprintf(stderr, "reloc: want N > 0 and SIZE > 0\n");
		return 2;
	}
	bufs = calloc(n, sizeof(*bufs));
	if (!bufs)
		return 1;
	scenario_ready();
	device_buffers(bufs, n, size);
	drop_device(bufs[0]);
	host_buffers(host);
	drop_host(host[0]);
	scenario_done();
	return 0;
}
