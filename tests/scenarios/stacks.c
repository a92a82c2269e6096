// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * stacks
 *
 * Allocations at the end of known call stacks (everything here is built with frame
 * pointers; the libraries are described in stacks_lib.c and stacks_nofp.c):
 *   main -> outer_a -> middle_b -> inner_c: cudaMalloc(3 MiB)            the three-deep chain
 *   main -> gpuapp::cache::grow (libstackhelper.so, stripped) -> a static function of it
 *        -> grow_cb: cudaMalloc(2 MiB)                                     the stripped library
 *   main -> nofp_call (libnofp.so, no frame pointers) -> nofp_cb: cudaMalloc(1 MiB)
 *   main -> inner_c via a second call in main: cudaMalloc(3 MiB)           a second stack of
 *                                                                          the chain's site
 * All kept. Expected at "done": 4 allocations, 9 MiB, at three sites: inner_c (6 MiB in 2
 * stacks), grow_cb (2 MiB), nofp_cb (1 MiB).
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

typedef void (*grow_cb_t)(unsigned long);
void cache_grow(grow_cb_t cb, unsigned long n) __asm__("_ZN6gpuapp5cache4growEPFvmEm");
int nofp_call(int (*cb)(int), int x);

static volatile int sink;

static SCENARIO_SITE void inner_c(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 3UL << 20));
}

static SCENARIO_SITE void middle_b(void)
{
	inner_c();
	sink++;
}

static SCENARIO_SITE void outer_a(void)
{
	middle_b();
	sink++;
}

static SCENARIO_SITE void grow_cb(unsigned long n)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, n));
}

static SCENARIO_SITE int nofp_cb(int x)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 1UL << 20));
	return x + 1;
}

int main(void)
{
	scenario_ready();
	outer_a();
	cache_grow(grow_cb, 2UL << 20);
	sink = nofp_call(nofp_cb, 1);
	inner_c();
	scenario_done();
	return 0;
}
