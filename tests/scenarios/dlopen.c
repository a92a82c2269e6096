// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * dlopen
 *
 * Not linked against libcudart: after the "go" line it dlopen()s "libcudart.so.13" (found
 * through this executable's DT_RPATH, i.e. the stand-in), prints "loaded" and, with
 * SCENARIO_SYNC=1, waits for one more line (a tracer can now see the new mapping). Then
 * alloc_after_dlopen calls cudaMalloc, looked up with dlsym, 4 x 16384 bytes and
 * free_one_after_dlopen cudaFrees the first.
 * Output with SCENARIO_SYNC=1: "ready <pid>", "loaded", "done".
 * Expected at "done": 3 live allocations, 49152 bytes at site alloc_after_dlopen (device 0);
 * 1 free.
 */
#include <dlfcn.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void alloc_after_dlopen(__typeof__(cudaMalloc) *do_malloc, void **bufs)
{
	int i;

	for (i = 0; i < 4; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(do_malloc(&bufs[i], 16384));
	}
}

static SCENARIO_SITE void free_one_after_dlopen(__typeof__(cudaFree) *do_free, void *p)
{
	SCENARIO_OK(do_free(p));
}

int main(void)
{
	__typeof__(cudaMalloc) *do_malloc;
	__typeof__(cudaFree) *do_free;
	void *bufs[4];
	void *h;

	scenario_ready();
	h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	do_malloc = (__typeof__(cudaMalloc) *)dlsym(h, "cudaMalloc");
	do_free = (__typeof__(cudaFree) *)dlsym(h, "cudaFree");
	if (!do_malloc || !do_free) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	scenario_say("loaded\n");
	if (scenario_sync())
		scenario_wait_line();
	alloc_after_dlopen(do_malloc, bufs);
	free_one_after_dlopen(do_free, bufs[0]);
	scenario_done();
	return 0;
}
