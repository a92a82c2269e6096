// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * torch_decode MODE STEPS
 *
 * An LLM decode loop on PyTorch's caching allocator (the stand-in libc10_cuda.so over the
 * stand-in runtime). Before the first step, on stream 0, device 0:
 *   load_weights           3 x c10_cuda_alloc(24 MiB): three 24 MiB segments, kept
 *   kv_cache_init          c10_cuda_alloc(48 MiB): a 48 MiB segment, kept
 *   comm_init              cudaMalloc(4 MiB), not through PyTorch (NCCL's buffers), kept
 *   workspace_init         c10_cuda_raw_alloc(32 MiB): a 32 MiB segment (cuBLAS's workspace,
 *                          no probe fires), kept
 * Then STEPS calls of decode_step (a step each), 10 ms apart:
 *   attention_scores       3 x c10_cuda_alloc(512 KiB) on stream 0 (in MODE streams on
 *                          stream 0 in even steps, stream 1 in odd ones: a cached block
 *                          serves only its own stream, so each has a 2 MiB segment), from
 *                          one 2 MiB segment of the small pool, freed at the end of the
 *                          step: cached, the same blocks every step
 *   mlp_intermediate       c10_cuda_alloc(4 MiB): split from a 20 MiB segment, freed at the
 *                          end of the step, cached
 *   leaky_cache_append     MODE leak: c10_cuda_alloc(2 MiB), never freed: the leak, 2 MiB
 *                          per step, split from 20 MiB segments (a new one every 10 steps)
 *   fragment               MODE cache, cache_empty: c10_cuda_alloc(10 MiB + 2 MiB x step),
 *                          freed in the step: a segment of its own each step that the next,
 *                          larger, request cannot reuse: the reserve grows, allocated does
 *                          not
 * MODE cache_empty calls c10_cuda_empty_cache() after the steps (torch.cuda.empty_cache()):
 * every free segment goes back.
 *
 * With TORCH_DECODE_READY_AT=K the sync handshake (SCENARIO_SYNC=1) comes before step K instead
 * of at the start: a tracer attached then finds the segments of the steps before it made
 * already, and the blocks split from them later in segments it never saw made.
 *
 * At the end it prints the allocator's own view (torch.cuda.memory_stats), then "done":
 *   stats allocated=A requested=R reserved=V segments=S device_frees=F reports=N
 * Expected live at "done" (MODE leak, STEPS 20, cudaMalloc segments): blocks 72 MiB at
 * load_weights, 48 MiB at kv_cache_init, 40 MiB at leaky_cache_append (20 x 2 MiB); segments
 * holding blocks 182 MiB (72 + 48, the small pool's 2 MiB, three 20 MiB); outside PyTorch
 * 36 MiB (comm_init's 4 MiB, the workspace's 32 MiB segment, whose block fired no probe).
 */
#include <stdint.h>
#include <time.h>
#include <cuda_runtime_api.h>
#include "c10.h"
#include "c10_cuda.h"
#include "scenario.h"

#define MiB (1ULL << 20)

enum mode { MODE_CLEAN, MODE_LEAK, MODE_CACHE, MODE_CACHE_EMPTY, MODE_STREAMS };

/* Ends the scenario when the allocator is out of memory. */
static void *need(void *p, const char *what)
{
	if (!p) {
		fprintf(stderr, "torch_decode: %s: out of memory\n", what);
		exit(1);
	}
	return p;
}

static SCENARIO_SITE void *load_weights(size_t size)
{
	return need(c10_cuda_alloc(size, 0, 0), "load_weights");
}

static SCENARIO_SITE void *kv_cache_init(void)
{
	return need(c10_cuda_alloc(48 * MiB, 0, 0), "kv_cache_init");
}

static SCENARIO_SITE void *comm_init(void)
{
	void *p;

	SCENARIO_OK(cudaMalloc(&p, 4 * MiB));
	return p;
}

static SCENARIO_SITE void *workspace_init(void)
{
	return need(c10_cuda_raw_alloc(32 * MiB, 0, 0), "workspace_init");
}

static SCENARIO_SITE void *attention_scores(int64_t stream)
{
	return need(c10_cuda_alloc(512 << 10, 0, stream), "attention_scores");
}

static SCENARIO_SITE void *mlp_intermediate(void)
{
	return need(c10_cuda_alloc(4 * MiB, 0, 0), "mlp_intermediate");
}

static SCENARIO_SITE void *leaky_cache_append(void)
{
	return need(c10_cuda_alloc(2 * MiB, 0, 0), "leaky_cache_append");
}

static SCENARIO_SITE void fragment(unsigned long long step)
{
	c10_cuda_free(need(c10_cuda_alloc((10 + 2 * step) * MiB, 0, 0), "fragment"));
}

static SCENARIO_SITE void decode_step(enum mode mode, unsigned long long step)
{
	void *scores[3], *mlp;
	int i;

	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		scores[i] = attention_scores(mode == MODE_STREAMS ? (int64_t)(step % 2) : 0);
	}
	mlp = mlp_intermediate();
	if (mode == MODE_LEAK)
		leaky_cache_append();
	if (mode == MODE_CACHE || mode == MODE_CACHE_EMPTY)
		fragment(step);
	c10_cuda_free(mlp);
	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		c10_cuda_free(scores[i]);
	}
}

static enum mode parse_mode(const char *s)
{
	static const char *const names[] = {"clean", "leak", "cache", "cache_empty", "streams"};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i]))
			return (enum mode)i;
	fprintf(stderr, "torch_decode: MODE is clean, leak, cache, cache_empty or streams\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct c10_cuda_stats st;
	const char *at = getenv("TORCH_DECODE_READY_AT");
	unsigned long long steps, i, ready_at = at ? strtoull(at, NULL, 10) : 0;
	enum mode mode;
	int k;

	scenario_usage(argc, 3, "torch_decode MODE STEPS");
	mode = parse_mode(argv[1]);
	steps = scenario_bytes(argv[2], "STEPS");
	if (!ready_at)
		scenario_ready();
	for (k = 0; k < 3; k++) {
		SCENARIO_OPAQUE(k);
		load_weights(24 * MiB);
	}
	kv_cache_init();
	comm_init();
	workspace_init();
	for (i = 0; i < steps; i++) {
		const struct timespec gap = {.tv_nsec = 10 * 1000 * 1000};

		if (ready_at && i == ready_at)
			scenario_ready();
		decode_step(mode, i);
		nanosleep(&gap, NULL);
	}
	if (mode == MODE_CACHE_EMPTY)
		c10_cuda_empty_cache();
	SCENARIO_OK(c10_cuda_memory_stats(0, &st));
	printf("stats allocated=%llu requested=%llu reserved=%llu segments=%llu device_frees=%llu "
	       "reports=%llu\n",
	       (unsigned long long)st.allocated_bytes, (unsigned long long)st.requested_bytes,
	       (unsigned long long)st.reserved_bytes, (unsigned long long)st.segments,
	       (unsigned long long)st.device_frees, (unsigned long long)c10_standin_reports());
	scenario_done();
	return 0;
}
