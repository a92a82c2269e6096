// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * wgpu MODE ARGS: WebGPU scenarios on the real Dawn of npm bun-webgpu-linux-x64
 * (libwebgpu_wrapper.so), Null backend unless WGPU_BACKEND=gles. Each traced call sits in
 * its own named function: the tests assert bytes and counts per function. Expected results,
 * with the scenario device as wgpu#1 (labelled "scenario-device" by wgpuDeviceSetLabel):
 *
 * basic N K R SIZE  N buffers of SIZE bytes at create_buffers; K destroyed and released,
 *                   R only released; (N-K-R) x SIZE live at create_buffers, K+R frees.
 * addref SIZE       shared (SIZE) gets a reference at cache_hold that is never released, its
 *                   creator releases its own: SIZE live at make_shared, addref site
 *                   cache_hold. balanced (2 x SIZE) gets one at borrow, given back: freed.
 * inflight SIZE wait|nowait|spontaneous
 *                   idle (SIZE, make_idle) destroyed before any submit: freed at once. A copy
 *                   src -> dst is submitted, dst (make_dst) destroyed while it may run, then
 *                   wgpuQueueOnSubmittedWorkDone. wait: events processed until the callback,
 *                   then src released: nothing live, 3 frees. nowait: exits at once: dst
 *                   pending (SIZE), src live (SIZE, make_src). spontaneous: as wait, with
 *                   CallbackMode AllowSpontaneous: on the Null backend Dawn calls it inside
 *                   wgpuQueueOnSubmittedWorkDone (the scenario says so).
 * devices SIZE      3 buffers (SIZE) and a 64x64 RGBA8 texture (16384) on wgpu#1 at
 *                   create_on_dev1, 2 buffers on a second device wgpu#2 "second" at
 *                   create_on_dev2; wgpuDeviceDestroy(wgpu#1), wgpuDeviceRelease(wgpu#2):
 *                   all 6 released by their owner, nothing live.
 * labels SIZE       at alloc_kv 3 x "kv_cache" (length-delimited label); at alloc_act 2 x
 *                   "activations" (NUL-terminated) and 1 unlabelled; at alloc_late 1 labelled
 *                   "renamed" by wgpuBufferSetLabel; at alloc_long 1 whose 100-byte label is
 *                   kept to its first 63 bytes; a texture (64x64 RGBA8) "albedo" at alloc_tex.
 *                   Device label "llm-device". Everything stays live.
 * textures          one texture per case at make_texture, told apart by label (bytes):
 *                   rgba8-mips 349524, r32f-3d 299008, rgba16f-array 491520,
 *                   bgra8-msaa4 120000, depth32f 1228800, rg16f-1d 4000, rgba8-odd 168,
 *                   d24s8 (size implementation-defined: unknown, 0 bytes). Then references:
 *                   rgba8-odd gets one at tex_hold never given back and its creator's is
 *                   released (live, addref site tex_hold); depth32f gets one at tex_borrow,
 *                   given back, and both are released (freed); rg16f-1d is destroyed at
 *                   tex_destroy, then released (freed at the destroy). 6 live, 2 frees.
 * errors SIZE       make_good: one valid buffer (SIZE, live); make_bad_buffer: 2 buffers with
 *                   usage MapRead|Storage; make_bad_texture: format 0x7777; make_bad_scoped:
 *                   MapRead|Storage inside a validation error scope. 4 error objects, none
 *                   memory; all of them destroyed and released.
 */
#include <stdbool.h>
#include "scenario.h"
#include "wgpu_setup.h"

static struct wgpu_ctx ctx;

static void label_device(WGPUDevice d, const char *label)
{
	wgpuDeviceSetLabel(d, wgpu_sv(label));
}

/* ---- basic ---- */

static SCENARIO_SITE void create_buffers(WGPUBuffer *b, int n, uint64_t size)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		b[i] = wgpu_buffer(ctx.device, size, 0, NULL);
		WGPU_CHECK(b[i]);
	}
}

static SCENARIO_SITE void destroy_buffers(WGPUBuffer *b, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		wgpuBufferDestroy(b[i]);
		wgpuBufferRelease(b[i]);
	}
}

static SCENARIO_SITE void release_buffers(WGPUBuffer *b, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		wgpuBufferRelease(b[i]);
	}
}

static void basic(int argc, char **argv)
{
	int n, k, r;
	uint64_t size;
	WGPUBuffer *b;

	scenario_usage(argc, 6, "wgpu basic N K R SIZE");
	n = (int)scenario_bytes(argv[2], "N");
	k = (int)scenario_bytes(argv[3], "K");
	r = (int)scenario_bytes(argv[4], "R");
	size = scenario_bytes(argv[5], "SIZE");
	if (k + r > n) {
		fprintf(stderr, "wgpu basic: want K + R <= N\n");
		exit(2);
	}
	b = calloc(n, sizeof(*b));
	scenario_ready();
	label_device(ctx.device, "scenario-device");
	create_buffers(b, n, size);
	destroy_buffers(b, k);
	release_buffers(b + k, r);
	scenario_done();
	free(b);
}

/* ---- addref ---- */

static SCENARIO_SITE WGPUBuffer make_shared(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, "shared");

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE WGPUBuffer make_balanced(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, "balanced");

	WGPU_CHECK(b);
	return b;
}

/* A cache that keeps a reference and forgets to drop it: the leak. */
static SCENARIO_SITE void cache_hold(WGPUBuffer b)
{
	wgpuBufferAddRef(b);
	SCENARIO_OPAQUE(b);
}

static SCENARIO_SITE void borrow(WGPUBuffer b)
{
	wgpuBufferAddRef(b);
	SCENARIO_OPAQUE(b);
}

static SCENARIO_SITE void give_back(WGPUBuffer b)
{
	wgpuBufferRelease(b);
	SCENARIO_OPAQUE(b);
}

static void addref(int argc, char **argv)
{
	WGPUBuffer shared, balanced;
	uint64_t size;

	scenario_usage(argc, 3, "wgpu addref SIZE");
	size = scenario_bytes(argv[2], "SIZE");
	scenario_ready();
	shared = make_shared(size);
	balanced = make_balanced(2 * size);
	cache_hold(shared);
	borrow(balanced);
	give_back(balanced);
	wgpuBufferRelease(balanced);
	wgpuBufferRelease(shared);
	scenario_done();
}

/* ---- inflight ---- */

static SCENARIO_SITE WGPUBuffer make_idle(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, NULL);

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE WGPUBuffer make_src(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, NULL);

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE WGPUBuffer make_dst(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, NULL);

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE void submit_copy(WGPUBuffer src, WGPUBuffer dst, uint64_t size)
{
	WGPUCommandEncoder enc = wgpuDeviceCreateCommandEncoder(ctx.device, NULL);
	WGPUCommandBuffer cb;

	WGPU_CHECK(enc);
	wgpuCommandEncoderCopyBufferToBuffer(enc, src, 0, dst, 0, size);
	cb = wgpuCommandEncoderFinish(enc, NULL);
	WGPU_CHECK(cb);
	wgpuQueueSubmit(ctx.queue, 1, &cb);
	wgpuCommandBufferRelease(cb);
	wgpuCommandEncoderRelease(enc);
}

static void on_work_done(uint32_t status, WGPUStringView message, void *userdata1, void *userdata2)
{
	(void)message;
	if (status != WGPUQueueWorkDoneStatus_Success || userdata2 != (void *)0x5eed) {
		fprintf(stderr, "scenario: work done: status %u, userdata2 %p\n", status,
			userdata2);
		exit(1);
	}
	(*(int *)userdata1)--;
}

static SCENARIO_SITE void watch_queue(int *pending, uint32_t mode)
{
	WGPUQueueWorkDoneCallbackInfo cb = {.mode = mode,
					    .callback = on_work_done,
					    .userdata1 = pending,
					    .userdata2 = (void *)0x5eed};

	(*pending)++;
	wgpuQueueOnSubmittedWorkDone(ctx.queue, cb);
}

static void inflight(int argc, char **argv)
{
	WGPUBuffer idle, src, dst;
	int pending = 0;
	uint64_t size;
	bool wait, spontaneous;

	scenario_usage(argc, 4, "wgpu inflight SIZE wait|nowait|spontaneous");
	size = scenario_bytes(argv[2], "SIZE");
	wait = strcmp(argv[3], "nowait");
	spontaneous = !strcmp(argv[3], "spontaneous");
	scenario_ready();
	idle = make_idle(size);
	src = make_src(size);
	dst = make_dst(size);
	wgpuBufferDestroy(idle);
	wgpuBufferRelease(idle);
	submit_copy(src, dst, size);
	wgpuBufferDestroy(dst);
	wgpuBufferRelease(dst);
	watch_queue(&pending, spontaneous ? WGPUCallbackMode_AllowSpontaneous
					  : WGPUCallbackMode_AllowProcessEvents);
	if (spontaneous)
		printf("callback %s\n", pending ? "later" : "inside wgpuQueueOnSubmittedWorkDone");
	if (wait) {
		while (pending)
			wgpuInstanceProcessEvents(ctx.instance);
		wgpuBufferRelease(src);
	}
	scenario_done();
}

/* ---- devices ---- */

static SCENARIO_SITE void create_on_dev1(WGPUBuffer *b, WGPUTexture *t, uint64_t size)
{
	WGPUTextureDescriptor td = {
	    .usage = WGPUTextureUsage_CopyDst | WGPUTextureUsage_TextureBinding,
	    .dimension = WGPUTextureDimension_2D,
	    .size = {64, 64, 1},
	    .format = WGPUTextureFormat_RGBA8Unorm,
	    .mipLevelCount = 1,
	    .sampleCount = 1,
	};
	int i;

	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		b[i] = wgpu_buffer(ctx.device, size, 0, NULL);
		WGPU_CHECK(b[i]);
	}
	*t = wgpuDeviceCreateTexture(ctx.device, &td);
	WGPU_CHECK(*t);
}

static SCENARIO_SITE void create_on_dev2(WGPUDevice d, WGPUBuffer *b, uint64_t size)
{
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		b[i] = wgpu_buffer(d, size, 0, NULL);
		WGPU_CHECK(b[i]);
	}
}

static void devices(int argc, char **argv)
{
	WGPUBuffer b1[3], b2[2];
	WGPUTexture t;
	WGPUDevice d2;
	uint64_t size;
	int i;

	scenario_usage(argc, 3, "wgpu devices SIZE");
	size = scenario_bytes(argv[2], "SIZE");
	d2 = wgpu_new_device(&ctx, "second");
	scenario_ready();
	label_device(ctx.device, "scenario-device");
	label_device(d2, "second");
	create_on_dev1(b1, &t, size);
	create_on_dev2(d2, b2, size);
	wgpuDeviceDestroy(ctx.device);
	wgpuDeviceRelease(d2);
	/* The handles stay valid after their device is gone: releasing them frees nothing. */
	for (i = 0; i < 3; i++)
		wgpuBufferRelease(b1[i]);
	wgpuTextureRelease(t);
	for (i = 0; i < 2; i++)
		wgpuBufferRelease(b2[i]);
	scenario_done();
}

/* ---- labels ---- */

static SCENARIO_SITE void alloc_kv(uint64_t size)
{
	/* Length-delimited: only the first 8 bytes are the label. */
	WGPUBufferDescriptor bd = {.label = {"kv_cache_and_more", 8},
				   .usage = WGPUBufferUsage_Storage | WGPUBufferUsage_CopyDst,
				   .size = size};
	int i;

	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		WGPU_CHECK(wgpuDeviceCreateBuffer(ctx.device, &bd));
	}
}

static SCENARIO_SITE void alloc_act(uint64_t size)
{
	int i;

	for (i = 0; i < 3; i++) {
		SCENARIO_OPAQUE(i);
		WGPU_CHECK(wgpu_buffer(ctx.device, size, 0, i < 2 ? "activations" : NULL));
	}
}

static SCENARIO_SITE WGPUBuffer alloc_late(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, NULL);

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE void alloc_long(uint64_t size)
{
	char label[101];

	memset(label, 'x', 100);
	memcpy(label, "long-label-", 11);
	label[100] = 0;
	WGPU_CHECK(wgpu_buffer(ctx.device, size, 0, label));
}

static SCENARIO_SITE WGPUTexture alloc_tex(void)
{
	WGPUTextureDescriptor td = {
	    .usage = WGPUTextureUsage_CopyDst | WGPUTextureUsage_TextureBinding,
	    .dimension = WGPUTextureDimension_2D,
	    .size = {64, 64, 1},
	    .format = WGPUTextureFormat_RGBA8Unorm,
	    .mipLevelCount = 1,
	    .sampleCount = 1,
	};
	WGPUTexture t = wgpuDeviceCreateTexture(ctx.device, &td);

	WGPU_CHECK(t);
	return t;
}

static void labels(int argc, char **argv)
{
	WGPUBuffer late;
	WGPUTexture tex;
	uint64_t size;

	scenario_usage(argc, 3, "wgpu labels SIZE");
	size = scenario_bytes(argv[2], "SIZE");
	scenario_ready();
	label_device(ctx.device, "llm-device");
	alloc_kv(size);
	alloc_act(size);
	late = alloc_late(size);
	wgpuBufferSetLabel(late, wgpu_sv("renamed"));
	alloc_long(size);
	tex = alloc_tex();
	wgpuTextureSetLabel(tex, (WGPUStringView){"albedo", 6});
	scenario_done();
}

/* ---- textures ---- */

static SCENARIO_SITE WGPUTexture make_texture(const char *label, uint32_t dim, uint32_t format,
					      uint32_t w, uint32_t h, uint32_t d, uint32_t mips,
					      uint32_t samples, WGPUTextureUsage usage)
{
	WGPUTextureDescriptor td = {
	    .label = wgpu_sv(label),
	    .usage = usage,
	    .dimension = dim,
	    .size = {w, h, d},
	    .format = format,
	    .mipLevelCount = mips,
	    .sampleCount = samples,
	};
	WGPUTexture t = wgpuDeviceCreateTexture(ctx.device, &td);

	WGPU_CHECK(t);
	return t;
}

static SCENARIO_SITE void tex_hold(WGPUTexture t)
{
	wgpuTextureAddRef(t);
	SCENARIO_OPAQUE(t);
}

static SCENARIO_SITE void tex_borrow(WGPUTexture t)
{
	wgpuTextureAddRef(t);
	SCENARIO_OPAQUE(t);
}

static SCENARIO_SITE void tex_destroy(WGPUTexture t)
{
	wgpuTextureDestroy(t);
	SCENARIO_OPAQUE(t);
}

static void textures(int argc, char **argv)
{
	const WGPUTextureUsage sampled = WGPUTextureUsage_CopyDst | WGPUTextureUsage_TextureBinding;
	const WGPUTextureUsage target = WGPUTextureUsage_RenderAttachment;
	WGPUTexture depth, rg16, odd;

	scenario_usage(argc, 2, "wgpu textures");
	(void)argv;
	scenario_ready();
	make_texture("rgba8-mips", WGPUTextureDimension_2D, WGPUTextureFormat_RGBA8Unorm, 256, 256,
		     1, 9, 1, sampled);
	make_texture("r32f-3d", WGPUTextureDimension_3D, WGPUTextureFormat_R32Float, 64, 64, 16, 3,
		     1, sampled);
	make_texture("rgba16f-array", WGPUTextureDimension_2D, WGPUTextureFormat_RGBA16Float, 128,
		     64, 6, 2, 1, sampled);
	make_texture("bgra8-msaa4", WGPUTextureDimension_2D, WGPUTextureFormat_BGRA8Unorm, 100, 75,
		     1, 1, 4, target);
	depth = make_texture("depth32f", WGPUTextureDimension_2D, WGPUTextureFormat_Depth32Float,
			     640, 480, 1, 1, 1, target);
	rg16 = make_texture("rg16f-1d", WGPUTextureDimension_1D, WGPUTextureFormat_RG16Float, 1000,
			    1, 1, 1, 1, sampled);
	odd = make_texture("rgba8-odd", WGPUTextureDimension_2D, WGPUTextureFormat_RGBA8Unorm, 7, 5,
			   1, 3, 1, sampled);
	make_texture("d24s8", WGPUTextureDimension_2D, WGPUTextureFormat_Depth24PlusStencil8, 64,
		     64, 1, 1, 1, target);
	tex_hold(odd);
	wgpuTextureRelease(odd);
	tex_borrow(depth);
	wgpuTextureRelease(depth);
	wgpuTextureRelease(depth);
	tex_destroy(rg16);
	wgpuTextureRelease(rg16);
	scenario_done();
}

/* ---- errors ---- */

static SCENARIO_SITE WGPUBuffer make_good(uint64_t size)
{
	WGPUBuffer b = wgpu_buffer(ctx.device, size, 0, NULL);

	WGPU_CHECK(b);
	return b;
}

static SCENARIO_SITE void make_bad_buffer(WGPUBuffer *b, uint64_t size)
{
	int i;

	for (i = 0; i < 2; i++) {
		SCENARIO_OPAQUE(i);
		b[i] = wgpu_buffer(ctx.device, size,
				   WGPUBufferUsage_MapRead | WGPUBufferUsage_Storage, "bad");
		WGPU_CHECK(b[i]);
	}
}

static SCENARIO_SITE WGPUTexture make_bad_texture(void)
{
	WGPUTextureDescriptor td = {
	    .usage = WGPUTextureUsage_CopyDst,
	    .dimension = WGPUTextureDimension_2D,
	    .size = {64, 64, 1},
	    .format = 0x7777,
	    .mipLevelCount = 1,
	    .sampleCount = 1,
	};
	WGPUTexture t = wgpuDeviceCreateTexture(ctx.device, &td);

	WGPU_CHECK(t);
	return t;
}

static void on_pop(uint32_t status, uint32_t type, WGPUStringView message, void *userdata1,
		   void *userdata2)
{
	(void)status;
	(void)message;
	(void)userdata2;
	*(uint32_t *)userdata1 = type;
}

static SCENARIO_SITE WGPUBuffer make_bad_scoped(uint64_t size)
{
	WGPUBuffer b;

	wgpuDevicePushErrorScope(ctx.device, WGPUErrorFilter_Validation);
	b = wgpu_buffer(ctx.device, size, WGPUBufferUsage_MapRead | WGPUBufferUsage_Storage, NULL);
	WGPU_CHECK(b);
	return b;
}

static void errors(int argc, char **argv)
{
	WGPUPopErrorScopeCallbackInfo pop = {.mode = WGPUCallbackMode_AllowProcessEvents,
					     .callback = on_pop};
	WGPUBuffer good, bad[2], scoped;
	WGPUTexture badtex;
	uint32_t type = 0;
	uint64_t size;
	int i;

	scenario_usage(argc, 3, "wgpu errors SIZE");
	size = scenario_bytes(argv[2], "SIZE");
	scenario_ready();
	good = make_good(size);
	make_bad_buffer(bad, size);
	badtex = make_bad_texture();
	scoped = make_bad_scoped(size);
	pop.userdata1 = &type;
	wgpuDevicePopErrorScope(ctx.device, pop);
	while (!type)
		wgpuInstanceProcessEvents(ctx.instance);
	/* The scope caught one, the uncaptured-error callback the three others. */
	if (type != WGPUErrorType_Validation || wgpu_errors != 3) {
		fprintf(stderr, "scenario: scope error type %u, uncaptured errors %d\n", type,
			wgpu_errors);
		exit(1);
	}
	for (i = 0; i < 2; i++) {
		wgpuBufferDestroy(bad[i]);
		wgpuBufferRelease(bad[i]);
	}
	wgpuTextureRelease(badtex);
	wgpuBufferRelease(scoped);
	(void)good;
	scenario_done();
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*fn)(int argc, char **argv);
	} modes[] = {
	    {"basic", basic},	  {"addref", addref}, {"inflight", inflight},
	    {"devices", devices}, {"labels", labels}, {"textures", textures},
	    {"errors", errors},
	};
	size_t i;

	if (argc < 2) {
		fprintf(stderr, "usage: wgpu basic|addref|inflight|devices|labels|textures|errors "
				"ARGS\n");
		return 2;
	}
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		if (!strcmp(argv[1], modes[i].name)) {
			wgpu_setup(&ctx);
			modes[i].fn(argc, argv);
			return 0;
		}
	}
	fprintf(stderr, "wgpu: unknown mode '%s'\n", argv[1]);
	return 2;
}
