// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * reexec GENS SIZE
 *
 * One process, GENS programs in turn: each image makes one cudaMalloc of GEN x SIZE bytes at
 * hold_gen (GEN counting down from GENS to 1) and never frees it, then all but the last
 * exec() this program again with GEN - 1. Under `setarch -R` every image is loaded at the
 * same addresses, so all share one call site address: what one image left belongs to it
 * alone. Expected: image GEN ends (exec or exit) with 1 live allocation, GEN x SIZE bytes at
 * hold_gen (device 0); the last exits with status 0.
 */
#include <stdio.h>
#include <unistd.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void *hold_gen(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

int main(int argc, char **argv)
{
	unsigned long long gen, size;
	char next[24], exe[4096];
	ssize_t len;

	scenario_usage(argc, 3, "reexec GENS SIZE");
	gen = scenario_bytes(argv[1], "GENS");
	size = scenario_bytes(argv[2], "SIZE");
	if (!gen || !size) {
		fprintf(stderr, "reexec: want GENS > 0 and SIZE > 0\n");
		return 2;
	}
	hold_gen(gen * size);
	if (gen == 1)
		return 0;
	len = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (len <= 0) {
		perror("reexec: /proc/self/exe");
		return 1;
	}
	exe[len] = 0;
	snprintf(next, sizeof(next), "%llu", gen - 1);
	execl(exe, "reexec", next, argv[2], (char *)NULL);
	perror("reexec: exec");
	return 1;
}
