// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * loop STEPS SIZE
 *
 * Shaped like an LLM decode loop, for the demo. kv_cache_init: cudaMalloc(64 MiB) once,
 * kept. Then STEPS times, 20 ms apart:
 *   decode_step    2 x cudaMallocAsync(2 MiB) on one created stream, 2 x cudaFreeAsync,
 *                  then cudaStreamSynchronize: nothing left after the step
 *   leaky_sampler  cudaMalloc(SIZE), never freed: the leak
 * Expected at "done": 1 + STEPS live allocations, 67108864 + STEPS * SIZE bytes: 67108864 at
 * kv_cache_init, STEPS x SIZE at leaky_sampler (device 0); 2 * STEPS stream-ordered
 * allocations at decode_step, all freed. The leak grows by SIZE every 20 ms.
 */
#include <time.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define ACTIVATION_BYTES (2UL << 20)

static SCENARIO_SITE void *kv_cache_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 64UL << 20));
	return p;
}

static SCENARIO_SITE void decode_step(cudaStream_t s)
{
	void *act[2];
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMallocAsync(&act[i], ACTIVATION_BYTES, s));
	}
	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaFreeAsync(act[i], s));
	}
	SCENARIO_OK(cudaStreamSynchronize(s));
}

static SCENARIO_SITE void *leaky_sampler(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

int main(int argc, char **argv)
{
	const struct timespec step_gap = {.tv_nsec = 20 * 1000 * 1000};
	unsigned long long steps, size, i;
	cudaStream_t s;

	scenario_usage(argc, 3, "loop STEPS SIZE");
	steps = scenario_bytes(argv[1], "STEPS");
	size = scenario_bytes(argv[2], "SIZE");
	if (!size) {
		fprintf(stderr, "loop: want SIZE > 0\n");
		return 2;
	}
	scenario_ready();
	SCENARIO_OK(cudaStreamCreate(&s));
	kv_cache_init();
	for (i = 0; i < steps; i++) {
		decode_step(s);
		leaky_sampler(size);
		nanosleep(&step_gap, NULL);
	}
	scenario_done();
	return 0;
}
