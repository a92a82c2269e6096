// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * soak STEPS [EVERY [CALM_US]]
 *
 * For the tracer's own memory: a high event rate at a constant live set, for a number of
 * steps (a count, not a time: the same work on any machine). kv_cache_init: cudaMalloc(64
 * MiB) once, kept. Then STEPS steps, as fast as they go, of:
 *   decode_step  4 x cudaMalloc(256 KiB), 4 x cudaFree, cudaStreamSynchronize(0)
 * EVERY (default 0: never): after every EVERY steps, print "at N" (N steps done) and wait for
 * a line on stdin, so a test can look at the tracer at known points of the work.
 * CALM_US (default 0: none; needs EVERY): after the first such wait, a calm spell, for a test
 * of a tracing budget when the call rate falls: steps that each first spend CALM_US of the
 * thread's CPU time computing, until a line arrives on stdin; then "calm N" (N calm steps),
 * and the STEPS steps go on as fast as before. CPU time, not wall time: a loaded machine
 * makes the spell longer, never its calls denser.
 * Live at every synchronization: the KV cache alone. Prints "steps N" at the end, on stdout,
 * before "done" (N: STEPS, the calm steps not counted).
 */
#include <poll.h>
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

static unsigned long long thread_cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ULL + (unsigned long long)ts.tv_nsec;
}

/* us microseconds of this thread's CPU time on arithmetic: no call the tracer sees. */
static void compute(unsigned long long us)
{
	unsigned long long end = thread_cpu_ns() + us * 1000;
	unsigned long x = 0, k;

	do {
		for (k = 0; k < 10000; k++)
			SCENARIO_OPAQUE(x);
	} while (thread_cpu_ns() < end);
}

/* Calm steps until a line is waiting on stdin (or it is closed): how many. */
static unsigned long long calm_spell(unsigned long long calm_us)
{
	struct pollfd in = {.fd = STDIN_FILENO, .events = POLLIN};
	unsigned long long n = 0;

	while (poll(&in, 1, 0) == 0) {
		compute(calm_us);
		decode_step();
		n++;
	}
	scenario_wait_line();
	return n;
}

int main(int argc, char **argv)
{
	unsigned long long steps, every = 0, calm_us = 0, i;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: soak STEPS [EVERY [CALM_US]]\n");
		return 2;
	}
	steps = scenario_bytes(argv[1], "STEPS");
	if (argc >= 3)
		every = scenario_bytes(argv[2], "EVERY");
	if (argc == 4)
		calm_us = scenario_bytes(argv[3], "CALM_US");
	scenario_ready();
	kv_cache_init();
	for (i = 1; i <= steps; i++) {
		decode_step();
		if (every && !(i % every)) {
			printf("at %llu\n", i);
			fflush(stdout);
			scenario_wait_line();
			if (calm_us && i == every) {
				printf("calm %llu\n", calm_spell(calm_us));
				fflush(stdout);
			}
		}
	}
	printf("steps %llu\n", steps);
	scenario_done();
	return 0;
}
