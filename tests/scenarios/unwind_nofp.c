// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * unwind_nofp [STEPS]
 *
 * Built with -O2 -fomit-frame-pointer (and the .eh_frame compilers emit by default), as
 * distribution code and npm's dawn.node are: each of STEPS (default 4) steps allocates at
 * the end of main -> leak_outer -> leak_middle -> leak_inner: cudaMalloc(1 MiB), kept.
 * leak_middle holds a value in %rbp across its call, as optimized code without frame
 * pointers does with a free callee-saved register, so the kernel's frame-pointer walk from
 * leak_inner reads that value as a frame and loses every caller; CFI restores them.
 * Expected at "done": STEPS allocations, STEPS MiB, one site (leak_inner), one stack.
 */
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static volatile unsigned long sink;

static SCENARIO_SITE void leak_inner(int step)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 1UL << 20));
	sink += (unsigned long)step;
}

static SCENARIO_SITE void leak_middle(int step)
{
	register unsigned long v __asm__("rbp") = 0x5eed0000UL + (unsigned long)step;

	__asm__ volatile("" : "+r"(v));
	leak_inner(step);
	__asm__ volatile("" : "+r"(v));
	sink += v;
}

static SCENARIO_SITE void leak_outer(int step)
{
	leak_middle(step);
	sink++;
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 4;

	for (int i = 0; i < steps; i++)
		leak_outer(i);
	scenario_done();
	return 0;
}
