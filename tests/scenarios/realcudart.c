// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * realcudart [CODE]
 *
 * Linked against NVIDIA's real libcudart.so.13 (not the stand-in): gpuleak must attach to
 * code nobody here wrote. real_malloc: 3 x cudaMalloc (4096, 8192, 12288 bytes);
 * real_malloc_host: 2 x cudaMallocHost (4096, 8192); real_free: cudaFree of the first
 * cudaMalloc result (still NULL when that failed). Each return code is printed to stderr
 * as "<api> <size> -> <code>".
 * Every call must return CODE, else the exit status is 1. The default, 35
 * (cudaErrorInsufficientDriver), is what the real runtime answers for every one of these
 * calls, cudaFree(NULL) included, on a machine without an NVIDIA driver; on a machine with a
 * GPU pass 0.
 *   CODE 35: nothing is allocated; a tracer sees 6 calls, 5 of them failed allocations, and
 *            nothing live at "done".
 *   CODE 0:  live at "done": 8192 + 12288 bytes at real_malloc (device), 4096 + 8192 at
 *            real_malloc_host (pinned), 32768 in all; the 4096-byte cudaMalloc was freed.
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static long want_rc = cudaErrorInsufficientDriver;

static void check(const char *api, size_t size, cudaError_t rc)
{
	fprintf(stderr, "%s %zu -> %d\n", api, size, (int)rc);
	if ((long)rc != want_rc) {
		fprintf(stderr, "realcudart: %s returned %d, expected %ld\n", api, (int)rc,
			want_rc);
		exit(1);
	}
}

static SCENARIO_SITE void real_malloc(void **bufs)
{
	int i;

	for (i = 0; i < 3; i++) {
		size_t size;

		SCENARIO_OPAQUE(i);
		size = 4096 * (i + 1);
		check("cudaMalloc", size, cudaMalloc(&bufs[i], size));
	}
}

static SCENARIO_SITE void real_malloc_host(void **bufs)
{
	int i;

	for (i = 0; i < 2; i++) {
		size_t size;

		SCENARIO_OPAQUE(i);
		size = 4096 * (i + 1);
		check("cudaMallocHost", size, cudaMallocHost(&bufs[i], size));
	}
}

static SCENARIO_SITE void real_free(void *p)
{
	check("cudaFree", 0, cudaFree(p));
}

int main(int argc, char **argv)
{
	void *dev[3] = {NULL, NULL, NULL};
	void *host[2] = {NULL, NULL};

	if (argc > 2) {
		fprintf(stderr, "usage: realcudart [CODE]\n");
		return 2;
	}
	if (argc == 2)
		want_rc = (long)scenario_bytes(argv[1], "CODE");
	scenario_ready();
	real_malloc(dev);
	real_malloc_host(host);
	real_free(dev[0]);
	scenario_done();
	return 0;
}
