// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * shutdown STEPS KEEP END [REQ_STEPS]
 *
 * A decode loop that cleans up at shutdown, for the shutdown tests. Before the first step,
 * kv_cache_init allocates 16 MiB (kept until shutdown). Then STEPS times, 5 ms apart:
 *   decode_step    the step marker (gpuleak --step sym:shutdown:decode_step): a 2 MiB
 *                  cudaMalloc freed in the same step, then cudaStreamSynchronize of the
 *                  legacy stream (gpuleak --step sync: one step per decode step)
 *   keep_step      cudaMalloc(KEEP), kept (KEEP 0: none): with REQ_STEPS 0 it is never
 *                  freed before shutdown, the classic per-step leak; with REQ_STEPS > 0 a
 *                  request of REQ_STEPS steps keeps them (begin_request marks its start),
 *                  and end_request frees them after the request's last decode_step (a
 *                  sawtooth: the last request's frees fall after the last step marker when
 *                  REQ_STEPS divides STEPS)
 * After the last step, END says how the program shuts down:
 *   free    free_all: cudaFree of every block still kept and of the KV cache, then
 *           cudaDeviceSynchronize (under --step sync one more step, which frees only)
 *   reset   cudaDeviceReset: the device's primary context goes, with everything in it
 *   exit    nothing: the process exits with its memory live
 * Expected at "done": with free and reset, 0 bytes live, 1 + STEPS + (KEEP ? STEPS : 0)
 * allocations; with exit, 16 MiB at kv_cache_init and the kept blocks of KEEP bytes at
 * keep_step (STEPS of them without requests, those of an unfinished request with).
 */
#include <time.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define MiB (1UL << 20)

static SCENARIO_SITE void *kv_cache_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 16 * MiB));
	return p;
}

static SCENARIO_SITE void *scratch(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 2 * MiB));
	return p;
}

/* The step marker (sym:) and one sync (sync): a step's own memory comes and goes in it. */
SCENARIO_SITE void decode_step(unsigned long long step)
{
	void *p = scratch();

	SCENARIO_OPAQUE(step);
	SCENARIO_OK(cudaFree(p));
	SCENARIO_OK(cudaStreamSynchronize(0));
}

static SCENARIO_SITE void *keep_step(size_t size)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, size));
	return p;
}

/* The request markers (gpuleak --request sym:shutdown:begin_request,end_request). */
SCENARIO_SITE void begin_request(unsigned long long step)
{
	SCENARIO_OPAQUE(step);
}

SCENARIO_SITE void end_request(void **kept, unsigned long long n)
{
	unsigned long long i;

	for (i = 0; i < n; i++)
		SCENARIO_OK(cudaFree(kept[i]));
}

static SCENARIO_SITE void free_all(void **kept, unsigned long long n, void *kv)
{
	unsigned long long i;

	for (i = 0; i < n; i++)
		SCENARIO_OK(cudaFree(kept[i]));
	SCENARIO_OK(cudaFree(kv));
	SCENARIO_OK(cudaDeviceSynchronize());
}

int main(int argc, char **argv)
{
	const struct timespec gap = {.tv_nsec = 5 * 1000 * 1000};
	unsigned long long steps, keep, req = 0, i, n = 0;
	const char *end;
	void **kept, *kv;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: shutdown STEPS KEEP free|reset|exit [REQ_STEPS]\n");
		return 2;
	}
	steps = scenario_bytes(argv[1], "STEPS");
	keep = scenario_bytes(argv[2], "KEEP");
	end = argv[3];
	if (strcmp(end, "free") && strcmp(end, "reset") && strcmp(end, "exit")) {
		fprintf(stderr, "shutdown: END is free, reset or exit\n");
		return 2;
	}
	if (argc > 4)
		req = scenario_bytes(argv[4], "REQ_STEPS");
	kept = calloc(steps ? steps : 1, sizeof(*kept));
	if (!kept)
		return 1;
	scenario_ready();
	kv = kv_cache_init();
	for (i = 0; i < steps; i++) {
		decode_step(i);
		if (req && !n)
			begin_request(i);
		if (keep)
			kept[n++] = keep_step(keep);
		if (req && n == req) {
			end_request(kept, n);
			n = 0;
		}
		nanosleep(&gap, NULL);
	}
	if (!strcmp(end, "free"))
		free_all(kept, n, kv);
	else if (!strcmp(end, "reset"))
		SCENARIO_OK(cudaDeviceReset());
	scenario_done();
	free(kept);
	return 0;
}
