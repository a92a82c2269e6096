// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wgpu_diff STEPS: a WebGPU decode loop on real Dawn, built twice for the diff tests like
 * diffapp (tests/build.mk): BASE as written (bin/diff-base/wgpu_diff), NEW with
 * -DWGPU_DIFF_NEW (bin/diff-new/wgpu_diff): a function more before the others (every
 * address moves), the per-step "logits" buffer made in another function (sample_logits
 * instead of keep_logits: the same label, so the diff pairs them by it), and a new per-step
 * leak, "attn_scratch". On one device labelled "llm-device":
 *
 *   kv_cache_init  before the first step: 2 x 4 MiB "kv_cache", kept (retained by init)
 *   STEPS times, each begun by step_marker (gpuleak --step sym:wgpu_diff:step_marker):
 *     activations   one 1 MiB "activations", released in the step (its last reference)
 *     keep_logits   (NEW: sample_logits) one 256 KiB "logits", kept: the leak both have
 *     attn_scratch  NEW only: one 1 MiB "attn_scratch", kept: the leak the change adds
 *
 * Steps closed: STEPS + 1. Expected at "done": 8 MiB "kv_cache", STEPS x 256 KiB "logits",
 * in NEW also STEPS x 1 MiB "attn_scratch"; nothing "activations".
 */
#include "scenario.h"
#include "wgpu_setup.h"

#define KiB (1ULL << 10)
#define MiB (1ULL << 20)

static struct wgpu_ctx ctx;

#ifdef WGPU_DIFF_NEW
/* Moves every function after it: the layout of another build. */
static SCENARIO_SITE unsigned long layout_pad(unsigned long x)
{
	SCENARIO_OPAQUE(x);
	x = x * 2654435761UL + 12345;
	SCENARIO_OPAQUE(x);
	return x ^ (x >> 13);
}
#endif

static SCENARIO_SITE void kv_cache_init(WGPUBuffer *kv, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		kv[i] = wgpu_buffer(ctx.device, 4 * MiB, WGPUBufferUsage_Storage, "kv_cache");
		WGPU_CHECK(kv[i]);
	}
}

/* The step marker. */
SCENARIO_SITE void step_marker(unsigned long long step)
{
	SCENARIO_OPAQUE(step);
}

static SCENARIO_SITE void activations(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, MiB, 0, "activations");

	WGPU_CHECK(b);
	wgpuBufferRelease(b);
}

#ifndef WGPU_DIFF_NEW
static SCENARIO_SITE WGPUBuffer keep_logits(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, 256 * KiB, 0, "logits");

	WGPU_CHECK(b);
	return b;
}
#else
static SCENARIO_SITE WGPUBuffer sample_logits(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, 256 * KiB, 0, "logits");

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE WGPUBuffer attn_scratch(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, MiB, 0, "attn_scratch");

	WGPU_CHECK(b);
	return b;
}
#endif

int main(int argc, char **argv)
{
	unsigned long long steps, i;
	WGPUBuffer kv[2];

	scenario_usage(argc, 2, "wgpu_diff STEPS");
	steps = scenario_bytes(argv[1], "STEPS");
#ifdef WGPU_DIFF_NEW
	if (!layout_pad((unsigned long)steps))
		fprintf(stderr, "wgpu_diff: (layout)\n");
#endif
	wgpu_setup(&ctx);
	scenario_ready();
	wgpuDeviceSetLabel(ctx.device, wgpu_sv("llm-device"));
	kv_cache_init(kv, 2);
	for (i = 0; i < steps; i++) {
		step_marker(i);
		activations();
#ifndef WGPU_DIFF_NEW
		keep_logits();
#else
		sample_logits();
		attn_scratch();
#endif
	}
	scenario_done();
	return 0;
}
