// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * timeline STEPS LEAK_A LEAK_B START_B REQ_STEPS [GAP_MS [KV_STEPS [REQ_LEAK]]]
 *
 * A decode loop with known growth, for the timeline tests. Each step calls step_boundary()
 * (a named step marker) and opens an NVTX range "step" (NVTX v3, header-only: it reaches a
 * tool only through NVTX_INJECTION64_PATH), then in decode_step:
 *   noise          3 cudaMalloc of 1..3 MiB (varying with the step) freed in the same step
 *   leak_a         cudaMalloc(LEAK_A), kept: grows by LEAK_A per step from step 0
 *   leak_b         from step START_B on, cudaMalloc(LEAK_B), kept (LEAK_B 0: never)
 *   request_state  cudaMalloc(1 MiB) kept until the end of the request: REQ_STEPS steps
 *                  make a request, whose last step frees them all (a sawtooth, not a leak;
 *                  REQ_STEPS 0: none). request_begin and request_end mark the request
 *                  (gpuleak --request sym:timeline:request_begin,request_end); request_end
 *                  also calls request_leak: cudaMalloc(REQ_LEAK) kept (default 0: none)
 *   kv_cache_grow  during the first KV_STEPS steps (default 0), cudaMalloc(8 MiB) kept: a KV
 *                  cache that fills at the first tokens and then stays (a persistent class)
 * before the first step, kv_cache_init allocates 64 MiB once (kept).
 * Steps are GAP_MS apart (default 10). Expected at "done": 64 MiB at kv_cache_init,
 * KV_STEPS x 8 MiB at kv_cache_grow,
 * STEPS x LEAK_A at leak_a, (STEPS - START_B) x LEAK_B at leak_b, the open request's
 * blocks at request_state; nothing at noise.
 */
#include <stdint.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include "scenario.h"

#define MiB (1UL << 20)

static SCENARIO_SITE void *kv_cache_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 64 * MiB));
	return p;
}

/* The step marker: gpuleak --step sym:timeline:step_boundary counts its calls. */
SCENARIO_SITE void step_boundary(unsigned long long step)
{
	SCENARIO_OPAQUE(step);
}

static SCENARIO_SITE void noise(unsigned long long step)
{
	void *p[3];
	int i;

	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&p[i], (1 + (step + i) % 3) * MiB));
	}
	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaFree(p[i]));
	}
}

static SCENARIO_SITE void *leak_a(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

static SCENARIO_SITE void *leak_b(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

static SCENARIO_SITE void *kv_cache_grow(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 8 * MiB));
	return p;
}

static SCENARIO_SITE void *request_state(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, MiB));
	return p;
}

static SCENARIO_SITE void *request_leak(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

/* The request markers. */
SCENARIO_SITE void request_begin(unsigned long long step)
{
	SCENARIO_OPAQUE(step);
}

SCENARIO_SITE void request_end(void **blocks, unsigned long long n, size_t leak)
{
	unsigned long long i;

	for (i = 0; i < n; i++)
		SCENARIO_OK(cudaFree(blocks[i]));
	if (leak)
		request_leak(leak);
}

int main(int argc, char **argv)
{
	unsigned long long steps, a, b, start_b, req, gap_ms = 10, kv = 0, req_leak = 0, i,
						      open = 0;
	struct timespec gap;
	void **reqs;

	if (argc < 6 || argc > 9) {
		fprintf(stderr, "usage: timeline STEPS LEAK_A LEAK_B START_B REQ_STEPS "
				"[GAP_MS [KV_STEPS [REQ_LEAK]]]\n");
		return 2;
	}
	steps = scenario_bytes(argv[1], "STEPS");
	a = scenario_bytes(argv[2], "LEAK_A");
	b = scenario_bytes(argv[3], "LEAK_B");
	start_b = scenario_bytes(argv[4], "START_B");
	req = scenario_bytes(argv[5], "REQ_STEPS");
	if (argc > 6)
		gap_ms = scenario_bytes(argv[6], "GAP_MS");
	if (argc > 7)
		kv = scenario_bytes(argv[7], "KV_STEPS");
	if (argc > 8)
		req_leak = scenario_bytes(argv[8], "REQ_LEAK");
	gap = (struct timespec){.tv_sec = gap_ms / 1000, .tv_nsec = (gap_ms % 1000) * 1000000};
	reqs = calloc(req ? req : 1, sizeof(*reqs));
	if (!reqs)
		return 1;
	scenario_ready();
	kv_cache_init();
	for (i = 0; i < steps; i++) {
		step_boundary(i);
		nvtxRangePushA("step");
		noise(i);
		if (i < kv)
			kv_cache_grow();
		if (a)
			leak_a(a);
		if (b && i >= start_b)
			leak_b(b);
		if (req) {
			if (!open)
				request_begin(i);
			reqs[open++] = request_state();
			if (open == req) {
				request_end(reqs, open, req_leak);
				open = 0;
			}
		}
		nvtxRangePop();
		nanosleep(&gap, NULL);
	}
	scenario_done();
	free(reqs);
	return 0;
}
