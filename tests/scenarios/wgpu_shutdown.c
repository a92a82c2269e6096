// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wgpu_shutdown STEPS KEEP END: a decode loop on real Dawn (WebGPU) that tears its device
 * down at shutdown, for the shutdown tests. On one device labelled "llm-device":
 *   kv_cache_init  2 x 4 MiB buffers "kv_cache", kept until shutdown (before the first step)
 * then STEPS times, 5 ms apart:
 *   decode_step    the step marker (--step sym:wgpu_shutdown:decode_step): a 2 MiB
 *                  "scratch" buffer, a copy into it submitted (--step sync: one step per
 *                  decode step), destroyed and released once the queue's work is done
 *   keep_logits    when KEEP is 1, one 1 MiB buffer "logits" per step, kept: the leak
 * After the last step, END says how the program shuts down:
 *   destroy  wgpuDeviceDestroy: every buffer of the device goes with it
 *   free     wgpuBufferRelease of every buffer still kept, the KV cache included
 *   exit     nothing: the process exits with its buffers live
 * Expected at "done": with destroy and free nothing live; with exit 8 MiB "kv_cache" and,
 * with KEEP 1, STEPS MiB "logits".
 */
#include <time.h>
#include "scenario.h"
#include "wgpu_setup.h"

#define MiB (1ULL << 20)

static struct wgpu_ctx ctx;

static SCENARIO_SITE void kv_cache_init(WGPUBuffer *layers, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		layers[i] = wgpu_buffer(ctx.device, 4 * MiB, WGPUBufferUsage_Storage, "kv_cache");
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

static SCENARIO_SITE WGPUBuffer scratch(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, 2 * MiB, 0, "scratch");

	WGPU_CHECK(b);
	return b;
}

/* The step marker: one submit with work, the scratch buffer gone when it is done. */
SCENARIO_SITE void decode_step(WGPUBuffer src)
{
	WGPUBuffer b = scratch();
	WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx.device, NULL);
	WGPUCommandBuffer cb;
	int done = 0;
	WGPUQueueWorkDoneCallbackInfo info = {
	    .mode = WGPUCallbackMode_AllowProcessEvents, .callback = on_done, .userdata1 = &done};

	wgpuCommandEncoderCopyBufferToBuffer(enc, src, 0, b, 0, MiB);
	cb = wgpuCommandEncoderFinish(enc, NULL);
	wgpuQueueSubmit(ctx.queue, 1, &cb);
	wgpuCommandBufferRelease(cb);
	wgpuCommandEncoderRelease(enc);
	wgpuQueueOnSubmittedWorkDone(ctx.queue, info);
	while (!done)
		wgpuInstanceProcessEvents(ctx.instance);
	wgpuBufferDestroy(b);
	wgpuBufferRelease(b);
}

static SCENARIO_SITE WGPUBuffer keep_logits(void)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, MiB, 0, "logits");

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE void release_all(WGPUBuffer *kept, unsigned long long n, WGPUBuffer *kv,
				      int nkv)
{
	unsigned long long i;

	for (i = 0; i < n; i++)
		wgpuBufferRelease(kept[i]);
	for (i = 0; i < (unsigned long long)nkv; i++)
		wgpuBufferRelease(kv[i]);
}

int main(int argc, char **argv)
{
	const struct timespec gap = {.tv_nsec = 5 * 1000 * 1000};
	unsigned long long steps, keep, i, n = 0;
	WGPUBuffer kv[2], src, *kept;
	const char *end;

	if (argc != 4) {
		fprintf(stderr, "usage: wgpu_shutdown STEPS KEEP destroy|free|exit\n");
		return 2;
	}
	steps = scenario_bytes(argv[1], "STEPS");
	keep = scenario_bytes(argv[2], "KEEP");
	end = argv[3];
	if (strcmp(end, "destroy") && strcmp(end, "free") && strcmp(end, "exit")) {
		fprintf(stderr, "wgpu_shutdown: END is destroy, free or exit\n");
		return 2;
	}
	kept = calloc(steps ? steps : 1, sizeof(*kept));
	if (!kept)
		return 1;
	wgpu_setup(&ctx);
	/* The copy source, made before the traced work: not part of what the tests count. */
	src = wgpu_buffer(ctx.device, MiB, 0, NULL);
	WGPU_CHECK(src);
	scenario_ready();
	wgpuDeviceSetLabel(ctx.device, wgpu_sv("llm-device"));
	kv_cache_init(kv, 2);
	for (i = 0; i < steps; i++) {
		decode_step(src);
		if (keep)
			kept[n++] = keep_logits();
		nanosleep(&gap, NULL);
	}
	if (!strcmp(end, "destroy"))
		wgpuDeviceDestroy(ctx.device);
	else if (!strcmp(end, "free"))
		release_all(kept, n, kv, 2);
	scenario_done();
	free(kept);
	return 0;
}
