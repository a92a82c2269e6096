// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * hostleak
 *
 * Host memory beside GPU memory, for --libc. After "ready":
 *   host_leak      malloc(100000) x3, kept
 *   host_calloc    calloc(1000, 10), kept
 *   host_aligned   posix_memalign(4096, 65536), kept
 *   host_aligned2  aligned_alloc(256, 8192) and memalign(512, 4096), kept (in glibc 2.36
 *                  both are one function: its probe names it once, see the test)
 *   host_realloc   malloc(1000) then realloc to 300000 (moves), kept: 300000 at host_realloc
 *   host_temp      malloc(5000) x4, freed
 *   host_mmap      mmap 1 MiB anonymous, kept; mmap 2 MiB anonymous, munmapped
 *   gpu_leak       cudaMalloc(1 MiB), kept
 * Expected live at those sites: 300000, 10000, 65536, 12288, 300000, 0, 1048576 and 1 MiB
 * device.
 */
#include <malloc.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static void *keep[16];
static int nkeep;

static SCENARIO_SITE void host_leak(void)
{
	int i;

	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		keep[nkeep++] = malloc(100000);
	}
}

static SCENARIO_SITE void host_calloc(void)
{
	keep[nkeep++] = calloc(1000, 10);
}

static SCENARIO_SITE void host_aligned(void)
{
	void *p = NULL;

	if (posix_memalign(&p, 4096, 65536))
		exit(1);
	keep[nkeep++] = p;
}

static SCENARIO_SITE void host_aligned2(void)
{
	keep[nkeep++] = aligned_alloc(256, 8192);
	keep[nkeep++] = memalign(512, 4096);
}

static SCENARIO_SITE void host_realloc(void)
{
	void *p = malloc(1000);

	SCENARIO_OPAQUE(p);
	keep[nkeep++] = realloc(p, 300000);
}

static SCENARIO_SITE void host_temp(void)
{
	void *p[4];
	int i;

	for (i = 0; i < 4; i++) {
		SCENARIO_OPAQUE(i);
		p[i] = malloc(5000);
	}
	for (i = 0; i < 4; i++) {
		SCENARIO_OPAQUE(i);
		free(p[i]);
	}
}

static SCENARIO_SITE void host_mmap(void)
{
	void *kept =
	    mmap(NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *gone =
	    mmap(NULL, 2 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (kept == MAP_FAILED || gone == MAP_FAILED || munmap(gone, 2 << 20))
		exit(1);
	keep[nkeep++] = kept;
}

static SCENARIO_SITE void gpu_leak(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 1 << 20));
}

int main(void)
{
	/* Initialize the runtime before the traced work: its own setup is not the point. */
	SCENARIO_OK(cudaSetDevice(0));
	scenario_ready();
	host_leak();
	host_calloc();
	host_aligned();
	host_aligned2();
	host_realloc();
	host_temp();
	host_mmap();
	gpu_leak();
	scenario_done();
	return 0;
}
