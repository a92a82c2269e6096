// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * unwind_nofp [STEPS [DEEP]]
 *
 * Built with -O2 -fomit-frame-pointer (and the .eh_frame compilers emit by default), as
 * distribution code and npm's dawn.node are: each of STEPS (default 4) steps allocates at
 * the end of main -> leak_outer -> leak_middle -> leak_inner: cudaMalloc(1 MiB), kept.
 * leak_middle holds a value in %rbp across its call, as optimized code without frame
 * pointers does with a free callee-saved register, so the kernel's frame-pointer walk from
 * leak_inner reads that value as a frame and loses every caller; CFI restores them.
 * With DEEP, main calls leak_outer through DEEP nested calls of deep, each with 1 KiB of
 * stack of its own: a stack deeper in bytes than a small --unwind-bytes copies.
 * Expected at "done": STEPS allocations, STEPS MiB, one site (leak_inner), one stack.
 */
#include <stdlib.h>
#include <string.h>
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

static SCENARIO_SITE void deep(int level, int step)
{
	char frame[1024];

	memset(frame, level, sizeof(frame));
	/* the whole array lives on the stack: something outside the compiler's view has it */
	__asm__ volatile("" : : "r"(frame) : "memory");
	if (level > 1)
		deep(level - 1, step);
	else
		leak_outer(step);
	sink += (unsigned long)frame[0];
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 4;
	int levels = argc > 2 ? atoi(argv[2]) : 0;

	for (int i = 0; i < steps; i++) {
		if (levels)
			deep(levels, i);
		else
			leak_outer(i);
	}
	scenario_done();
	return 0;
}
