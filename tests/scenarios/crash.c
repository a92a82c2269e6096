// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * crash
 *
 * A process that dies of a real fault, not a signal sent to it: alloc_before_crash keeps a
 * 2 MiB cudaMalloc, then the program writes through a null pointer (SIGSEGV; no core file).
 * Expected: exited with status 139 (128 + SIGSEGV), 2097152 bytes live at
 * alloc_before_crash, 1 allocation, 0 frees.
 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <sys/resource.h>
#include "scenario.h"

static SCENARIO_SITE void *alloc_before_crash(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 2 << 20));
	return p;
}

int main(void)
{
	struct rlimit no_core = {0, 0};
	volatile int *null = NULL;

	setrlimit(RLIMIT_CORE, &no_core);
	scenario_ready();
	alloc_before_crash();
	SCENARIO_OPAQUE(null);
	*null = 1; /* the fault: the kernel sends SIGSEGV */
	return 0;
}
