// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * diffapp STEPS [CRASH_AT [REQ_STEPS]]
 *
 * One decode loop built twice for the diff tests (tests/build.mk): BASE as written
 * (bin/diff-base/diffapp), NEW with -DDIFFAPP_NEW (bin/diff-new/diffapp), the change under
 * review: a per-step leak added at a new site, and the code laid out differently (a function
 * more before all the others, and a few instructions more before the calls in weights_init
 * and sampler_keep), so every call site's address differs between the builds and those two
 * call sites also sit at another offset in their function. The same file name in both, so
 * the processes have one command and the sites one module.
 *
 *   weights_init   before the first step: cudaMalloc(16 MiB), kept (retained by init)
 *   STEPS times, each begun by step_marker (gpuleak --step sym:diffapp:step_marker):
 *     activations  2 x cudaMalloc(2 MiB), both freed in the step
 *     sampler_keep cudaMalloc(64 KiB), kept: the leak both builds have
 *     cache_logits NEW only: cudaMalloc(1 MiB), kept: the leak the change adds
 *   REQ_STEPS (default 0: no requests): every REQ_STEPS steps make a request, request_begin
 *     at its first step and request_end at its last (gpuleak --request
 *     sym:diffapp:request_begin,request_end); request_end calls request_leak:
 *     cudaMalloc(256 KiB), kept
 *   CRASH_AT (default -1: never): step CRASH_AT writes through a null pointer after its
 *     allocations (SIGSEGV: exit status 139, no core file)
 *
 * Steps closed: STEPS + 1 (the one before the first marker, where weights_init runs).
 * Expected at "done": 16 MiB at weights_init, STEPS x 64 KiB at sampler_keep, in NEW also
 * STEPS x 1 MiB at cache_logits, and (STEPS / REQ_STEPS) x 256 KiB at request_leak; nothing
 * at activations. Growth per step: 65536 bytes in BASE, 1114112 in NEW.
 */
#include <stdlib.h>
#include <sys/resource.h>
#include <cuda_runtime_api.h>
#include "scenario.h"

#define KiB (1UL << 10)
#define MiB (1UL << 20)

#ifdef DIFFAPP_NEW
/* Moves every function after it: the layout of another build. */
static SCENARIO_SITE unsigned long layout_pad(unsigned long x)
{
	SCENARIO_OPAQUE(x);
	x = x * 2654435761UL + 12345;
	SCENARIO_OPAQUE(x);
	return x ^ (x >> 13);
}

/* A few instructions more before a call: its return address sits further in. */
#define NEW_LAYOUT()                                                                               \
	do {                                                                                       \
		unsigned long pad = 3;                                                             \
		SCENARIO_OPAQUE(pad);                                                              \
		pad = pad * 7 + 1;                                                                 \
		SCENARIO_OPAQUE(pad);                                                              \
	} while (0)
#else
#define NEW_LAYOUT()                                                                               \
	do {                                                                                       \
	} while (0)
#endif

static SCENARIO_SITE void *weights_init(void)
{
	void *p;

	NEW_LAYOUT();
	SCENARIO_OK(cudaMalloc(&p, 16 * MiB));
	return p;
}

/* The step marker. */
SCENARIO_SITE void step_marker(long step)
{
	SCENARIO_OPAQUE(step);
}

SCENARIO_SITE void request_begin(long step)
{
	SCENARIO_OPAQUE(step);
}

static SCENARIO_SITE void *request_leak(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 256 * KiB));
	return p;
}

SCENARIO_SITE void request_end(long step)
{
	SCENARIO_OPAQUE(step);
	request_leak();
}

static SCENARIO_SITE void activations(void)
{
	void *p[2];
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&p[i], 2 * MiB));
	}
	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaFree(p[i]));
	}
}

static SCENARIO_SITE void *sampler_keep(void)
{
	void *p;

	NEW_LAYOUT();
	SCENARIO_OK(cudaMalloc(&p, 64 * KiB));
	return p;
}

#ifdef DIFFAPP_NEW
static SCENARIO_SITE void *cache_logits(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, MiB));
	return p;
}
#endif

static long number(const char *s, const char *what)
{
	char *end;
	long v = strtol(s, &end, 10);

	if (!*s || *end) {
		fprintf(stderr, "diffapp: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

int main(int argc, char **argv)
{
	struct rlimit no_core = {0, 0};
	long steps, crash_at = -1, req = 0, i;
	volatile int *null = NULL;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: diffapp STEPS [CRASH_AT [REQ_STEPS]]\n");
		return 2;
	}
	steps = number(argv[1], "STEPS");
	if (argc > 2)
		crash_at = number(argv[2], "CRASH_AT");
	if (argc > 3)
		req = number(argv[3], "REQ_STEPS");
	setrlimit(RLIMIT_CORE, &no_core);
#ifdef DIFFAPP_NEW
	if (!layout_pad((unsigned long)steps))
		fprintf(stderr, "diffapp: (layout)\n");
#endif
	scenario_ready();
	weights_init();
	for (i = 0; i < steps; i++) {
		step_marker(i);
		if (req > 0 && i % req == 0)
			request_begin(i);
		activations();
		sampler_keep();
#ifdef DIFFAPP_NEW
		cache_logits();
#endif
		if (i == crash_at) {
			SCENARIO_OPAQUE(null);
			*null = 1; /* the fault: the kernel sends SIGSEGV */
		}
		if (req > 0 && i % req == req - 1)
			request_end(i);
	}
	scenario_done();
	return 0;
}
