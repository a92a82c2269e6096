// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * asyncfree MODE
 *
 * Stream-ordered frees, for the deferred-free tests. One created stream S; each allocation
 * is cudaMallocAsync(1 MiB) at async_alloc, each free cudaFreeAsync at async_free.
 *   late_sync  alloc, free, print "freed", wait for a line (SCENARIO_SYNC=1) or 300 ms, then
 *              cudaStreamSynchronize(S) at late_sync: pending until then, then freed
 *   never      alloc, free, never synchronized, exit 300 ms later: still pending at exit
 *              (the stand-in's stream never runs the free), and pending that long
 *   double     alloc, free, free again (the stand-in reports an error for the second: its
 *              return is not checked), sync: one free, one double free
 *   reuse      alloc A, free A, alloc B of the same size on S: the stand-in hands back A's
 *              block (stream-ordered reuse), free B, sync: nothing left, one reuse
 *   event      alloc A, free A, cudaEventRecord(E, S) at record_event, cudaEventSynchronize(E)
 *              at event_sync: A's free completes by the event; alloc B, free B,
 *              cudaStreamSynchronize(S) at late_sync: B's by the stream
 *   double_after  alloc, free, sync (completed), free again (an error, unchecked), sync;
 *              then cudaMalloc(4096) at sync_alloc, cudaFree at sync_free twice: two frees,
 *              two double frees (of pointers already freed, not pending), nothing unknown
 */
#include <string.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

static SCENARIO_SITE void *async_alloc(cudaStream_t s)
{
	void *p;

	SCENARIO_OK(cudaMallocAsync(&p, 1 << 20, s));
	return p;
}

static SCENARIO_SITE cudaError_t async_free(void *p, cudaStream_t s)
{
	cudaError_t e = cudaFreeAsync(p, s);

	SCENARIO_OPAQUE(e);
	return e;
}

static SCENARIO_SITE void *sync_alloc(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 4096));
	return p;
}

static SCENARIO_SITE cudaError_t sync_free(void *p)
{
	cudaError_t e = cudaFree(p);

	SCENARIO_OPAQUE(e);
	return e;
}

static SCENARIO_SITE void record_event(cudaEvent_t e, cudaStream_t s)
{
	SCENARIO_OK(cudaEventRecord(e, s));
}

static SCENARIO_SITE void event_sync(cudaEvent_t e)
{
	SCENARIO_OK(cudaEventSynchronize(e));
}

static SCENARIO_SITE void late_sync(cudaStream_t s)
{
	SCENARIO_OK(cudaStreamSynchronize(s));
}

int main(int argc, char **argv)
{
	const struct timespec pause = {.tv_nsec = 300 * 1000 * 1000};
	cudaStream_t s;
	void *a, *b;

	scenario_usage(argc, 2, "asyncfree late_sync|never|double|reuse|event|double_after");
	SCENARIO_OK(cudaStreamCreate(&s));
	scenario_ready();
	a = async_alloc(s);
	if (!strcmp(argv[1], "late_sync")) {
		SCENARIO_OK(async_free(a, s));
		scenario_say("freed\n");
		if (scenario_sync())
			scenario_wait_line();
		else
			nanosleep(&pause, NULL);
		late_sync(s);
	} else if (!strcmp(argv[1], "never")) {
		SCENARIO_OK(async_free(a, s));
		nanosleep(&pause, NULL);
	} else if (!strcmp(argv[1], "double")) {
		SCENARIO_OK(async_free(a, s));
		async_free(a, s);
		late_sync(s);
	} else if (!strcmp(argv[1], "event")) {
		cudaEvent_t e;

		SCENARIO_OK(cudaEventCreate(&e));
		SCENARIO_OK(async_free(a, s));
		record_event(e, s);
		event_sync(e);
		b = async_alloc(s);
		SCENARIO_OK(async_free(b, s));
		late_sync(s);
	} else if (!strcmp(argv[1], "double_after")) {
		SCENARIO_OK(async_free(a, s));
		late_sync(s);
		async_free(a, s);
		late_sync(s);
		b = sync_alloc();
		SCENARIO_OK(sync_free(b));
		sync_free(b);
	} else if (!strcmp(argv[1], "reuse")) {
		SCENARIO_OK(async_free(a, s));
		b = async_alloc(s);
		if (b != a) {
			fprintf(stderr, "asyncfree: the stand-in did not reuse the block\n");
			return 1;
		}
		SCENARIO_OK(async_free(b, s));
		late_sync(s);
	} else {
		fprintf(stderr, "asyncfree: unknown mode %s\n", argv[1]);
		return 2;
	}
	scenario_done();
	return 0;
}
