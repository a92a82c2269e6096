// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * soak SECONDS
 *
 * For the tracer's own memory: a high event rate at a constant live set, for SECONDS.
 * kv_cache_init: cudaMalloc(64 MiB) once, kept. Then, as fast as it goes until SECONDS have
 * passed, steps of:
 *   decode_step  4 x cudaMalloc(256 KiB), 4 x cudaFree, cudaStreamSynchronize(0)
 * Live at every synchronization: the KV cache alone. Prints "steps N" at the end, on stdout,
 * before "done".
 */
#include <time.h>
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

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	unsigned long long seconds, steps = 0;
	double end;

	scenario_usage(argc, 2, "soak SECONDS");
	seconds = scenario_bytes(argv[1], "SECONDS");
	scenario_ready();
	kv_cache_init();
	end = now_s() + (double)seconds;
	do {
		decode_step();
		steps++;
	} while ((steps & 63) || now_s() < end);
	printf("steps %llu\n", steps);
	scenario_done();
	return 0;
}
