// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * session STEPS
 *
 * An engine's life with an explicit shutdown, for --end. engine_start: cudaMalloc(64 MiB)
 * at kv_cache_init, kept until shutdown. STEPS x serve_step: cudaMalloc(1 MiB), kept (a
 * leak). engine_shutdown: the end marker (a function of its own, nothing traced in it);
 * then release_kv_cache: cudaFree of the KV cache, and after_shutdown: cudaMalloc(2 MiB),
 * kept, then the process exits.
 * Expected without --end: exited; STEPS MiB at serve_step and 2 MiB at after_shutdown live,
 * the KV cache freed. With --end sym:session:engine_shutdown: the session ends at the
 * marker, with the KV cache still live and nothing after it counted.
 */
#include <stdlib.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define MiB (1UL << 20)

static SCENARIO_SITE void *kv_cache_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 64 * MiB));
	return p;
}

static SCENARIO_SITE void serve_step(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, MiB));
	SCENARIO_OPAQUE(p);
}

/* What an engine calls when it begins to shut down: the session's end for gpuleak --end. */
__attribute__((noinline)) void engine_shutdown(void)
{
	__asm__ volatile("" ::: "memory");
}

static SCENARIO_SITE void release_kv_cache(void *kv)
{
	SCENARIO_OK(cudaFree(kv));
}

static SCENARIO_SITE void after_shutdown(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 2 * MiB));
	SCENARIO_OPAQUE(p);
}

int main(int argc, char **argv)
{
	void *kv;
	long i, steps;

	scenario_usage(argc, 2, "session STEPS");
	steps = atol(argv[1]);
	scenario_ready();
	kv = kv_cache_init();
	for (i = 0; i < steps; i++) {
		SCENARIO_OPAQUE(i);
		serve_step();
	}
	engine_shutdown();
	release_kv_cache(kv);
	after_shutdown();
	scenario_done();
	return 0;
}
