// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wgpu_decode STEPS [POLLS]: an LLM decode loop on real Dawn (WebGPU), for the demo and the tests.
 * On one device labelled "llm-device":
 *   load_weights   one 16 MiB buffer "weights", released before exit
 *   kv_cache_init  4 x 8 MiB buffers "kv_cache" (one per layer), kept for the whole run
 * then STEPS times, 20 ms apart:
 *   decode_step    2 x 2 MiB "activations", a copy between them submitted, both destroyed
 *                  while it may still run (pending), wgpuQueueOnSubmittedWorkDone and events
 *                  processed until its callback: the frees complete, nothing left
 *   leaky_logits   one 1 MiB buffer "logits" per step, never released: the leak
 *   POLLS          (default 0) empty wgpuQueueSubmit calls at the start of each step, as
 *                  engines make to flush or tick a device: no work, not step boundaries
 * Expected at "done": 32 MiB "kv_cache" (4) at kv_cache_init and STEPS MiB "logits" at
 * leaky_logits still live; weights and activations freed.
 */
#include <time.h>
#include "scenario.h"
#include "wgpu_setup.h"

#define MiB (1ULL << 20)

static struct wgpu_ctx ctx;

static SCENARIO_SITE WGPUBuffer load_weights(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, 16 * MiB, WGPUBufferUsage_Storage, "weights");

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE void kv_cache_init(WGPUBuffer *layers, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		layers[i] =
		    wgpu_buffer(ctx.device, 8 * MiB,
				WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst, "kv_cache");
		WGPU_CHECK(layers[i]);
	}
}

static void on_done(uint32_t status, WGPUStringView message, void *userdata1, void *userdata2)
{
	(void)status;
	(void)message;
	(void)userdata2;
	*(int *)userdata1 = 1;
}

static SCENARIO_SITE void decode_step(unsigned long long polls)
{
	WGPUBuffer act[2];
	WGPUCommandEncoder enc;
	WGPUCommandBuffer cb;
	int done = 0, i;
	WGPUQueueWorkDoneCallbackInfo info = {
	    .mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_done, .userdata1 = &done};

	for (; polls; polls--)
		wgpuQueueSubmit(ctx.queue, 0, NULL);
	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		act[i] = wgpu_buffer(ctx.device, 2 * MiB, 0, "activations");
		WGPU_CHECK(act[i]);
	}
	enc = wgpuDeviceCreateCommandEncoder(ctx.device, NULL);
	wgpuCommandEncoderCopyBufferToBuffer(enc, act[0], 0, act[1], 0, 2 * MiB);
	cb = wgpuCommandEncoderFinish(enc, NULL);
	wgpuQueueSubmit(ctx.queue, 1, &cb);
	wgpuCommandBufferRelease(cb);
	wgpuCommandEncoderRelease(enc);
	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		wgpuBufferDestroy(act[i]);
		wgpuBufferRelease(act[i]);
	}
	wgpuQueueOnSubmittedWorkDone(ctx.queue, info);
	while (!done)
		wgpuInstanceProcessEvents(ctx.instance);
}

static SCENARIO_SITE WGPUBuffer leaky_logits(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, MiB, 0, "logits");

	WGPU_CHECK(b);
	return b;
}

int main(int argc, char **argv)
{
	const struct timespec step_gap = {.tv_nsec = 20 * 1000 * 1000};
	unsigned long long steps, polls = 0, i;
	WGPUBuffer weights, kv[4];

	if (argc != 2 && argc != 3) {
		fprintf(stderr, "usage: wgpu_decode STEPS [POLLS]\n");
		return 2;
	}
	steps = scenario_bytes(argv[1], "STEPS");
	if (argc == 3)
		polls = scenario_bytes(argv[2], "POLLS");
	wgpu_setup(&ctx);
	scenario_ready();
	wgpuDeviceSetLabel(ctx.device, wgpu_sv("llm-device"));
	weights = load_weights();
	kv_cache_init(kv, 4);
	for (i = 0; i < steps; i++) {
		decode_step(polls);
		leaky_logits();
		nanosleep(&step_gap, NULL);
	}
	wgpuBufferRelease(weights);
	scenario_done();
	return 0;
}
