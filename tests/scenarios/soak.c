// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * soak STEPS [EVERY]
 *
 * For the tracer's own memory: a high event rate at a constant live set, for a number of
 * steps (a count, not a time: the same work on any machine). kv_cache_init: cudaMalloc(64
 * MiB) once, kept. Then STEPS steps, as fast as they go, of:
 *   decode_step  4 x cudaMalloc(256 KiB), 4 x cudaFree, cudaStreamSynchronize(0)
 * EVERY (default 0: never): after every EVERY steps, print "at N" (N steps done) and wait for
 * a line on stdin, so a test can look at the tracer at known points of the work.
 * Live at every synchronization: the KV cache alone. Prints "steps N" at the end, on stdout,
 * before "done".
 */
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void *kv_cache_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 64UL << 20));
	return p;
}

static SCENARIO_SITE void decode_step(void)
{
	void *act[4];
	int i;

	for (i = 0; i < 4; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&act[i], 256UL << 10));
	}
	for (i = 0; i < 4; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaFree(act[i]));
	}
	SCENARIO_OK(cudaStreamSynchronize(0));
}

int main(int argc, char **argv)
{
	unsigned long long steps, every = 0, i;

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: soak STEPS [EVERY]\n");
		return 2;
	}
	steps = scenario_bytes(argv[1], "STEPS");
	if (argc == 3)
		every = scenario_bytes(argv[2], "EVERY");
	scenario_ready();
	kv_cache_init();
	for (i = 1; i <= steps; i++) {
		decode_step();
		if (every && !(i % every)) {
			printf("at %llu\n", i);
			fflush(stdout);
			scenario_wait_line();
		}
	}
	printf("steps %llu\n", steps);
	scenario_done();
	return 0;
}
