// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * torch_dlopen
 *
 * Not linked against PyTorch: after the "go" line it dlopen()s "libc10_cuda.so" (found
 * through this executable's DT_RPATH: the stand-in, with its USDT probes), as `import torch`
 * loads it, prints "loaded" and, with SCENARIO_SYNC=1, waits for one more line. Then
 * tensors_after_import makes 4 blocks of 1 MiB (small pool: two 2 MiB segments) and
 * free_one_tensor frees the first.
 * Output with SCENARIO_SYNC=1: "ready <pid>", "loaded", "done".
 * Expected at "done": 3 live blocks, 3 MiB at tensors_after_import (device 0); reserved
 * 4 MiB in 2 segments, 1 MiB cached; 1 block freed into the cache.
 */
#include <dlfcn.h>
#include <stdint.h>
#include "c10_cuda.h"
#include "scenario.h"

typedef void *alloc_fn(size_t size, int device, int64_t stream);
typedef void free_fn(void *ptr);

static SCENARIO_SITE void tensors_after_import(alloc_fn *do_alloc, void **t)
{
	int i;

	for (i = 0; i < 4; i++) {
		SCENARIO_OPAQUE(i);
		t[i] = do_alloc(1 << 20, 0, 0);
		if (!t[i]) {
			fprintf(stderr, "torch_dlopen: out of memory\n");
			exit(1);
		}
	}
}

static SCENARIO_SITE void free_one_tensor(free_fn *do_free, void *p)
{
	do_free(p);
}

int main(void)
{
	alloc_fn *do_alloc;
	free_fn *do_free;
	void *t[4];
	void *h;

	scenario_ready();
	h = dlopen("libc10_cuda.so", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "torch_dlopen: %s\n", dlerror());
		return 1;
	}
	do_alloc = (alloc_fn *)dlsym(h, "c10_cuda_alloc");
	do_free = (free_fn *)dlsym(h, "c10_cuda_free");
	if (!do_alloc || !do_free) {
		fprintf(stderr, "torch_dlopen: %s\n", dlerror());
		return 1;
	}
	scenario_say("loaded\n");
	if (scenario_sync())
		scenario_wait_line();
	tensors_after_import(do_alloc, t);
	free_one_tensor(do_free, t[0]);
	scenario_done();
	return 0;
}
