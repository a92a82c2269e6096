// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * WebGPU without a process: descriptor decoding, the webgpu.h generation judgement, and the
 * tracker's object semantics on hand-made records, including the orderings a live Dawn run
 * does not produce on demand (the older work-done callback convention, a queue got before
 * attach, a stale error-object mark, futures waited for out of order, objects told by their
 * first bytes).
 */
#include <errno.h>
#include <string.h>
#include "check.h"
#include "gpuleak.h"
#include "probe/catalog.h"
#include "tracker/tracker.h"
#include "probe/wgpu_abi.h"

#define PID   200
#define TID   201
#define DEV   0x5000
#define QUEUE 0x6000

static uint64_t clock_ns = 1000;

static void texture_bytes(void)
{
	uint64_t b;

	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x12, 2, 256, 256, 1, 9, 1, &b), "rgba8");
	CHECK_U64(b, 349524, "RGBA8Unorm 256x256, 9 levels");
	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_TIER1, 0x16, 2, 256, 256, 1, 1, 1, &b), "tier1");
	CHECK_U64(b, 262144, "RGBA8Unorm is 0x16 since tier1");
	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_TIER1, 0x12, 2, 16, 16, 1, 1, 1, &b), "rg16snorm");
	CHECK_U64(b, 1024, "0x12 is RG16Snorm (4 bytes) since tier1");
	/* BC1: 4x4 blocks of 8 bytes; 10x10 rounds up to 3x3 blocks, then 2x2, 1x1 (3 levels) */
	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x2c, 2, 10, 10, 1, 3, 1, &b), "bc1");
	CHECK_U64(b, (9 + 4 + 1) * 8, "BC1 10x10, 3 levels");
	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x23, 3, 8, 8, 8, 4, 1, &b), "3d");
	CHECK_U64(b, 16 * (512 + 64 + 8 + 1), "RGBA32F 8x8x8 3D, 4 levels");
	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x23, 2, 8, 8, 8, 4, 1, &b), "array");
	CHECK_U64(b, 16 * 8 * (64 + 16 + 4 + 1), "RGBA32F 8x8 x 8 layers, 4 levels");
	CHECK(wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x29, 2, 8, 8, 1, 1, 1, &b) == -ENOENT,
	      "Depth24PlusStencil8 has no fixed size");
	CHECK(wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x7777, 2, 8, 8, 1, 1, 1, &b) == -ENOENT,
	      "unknown format");
	CHECK(wgpu_texture_bytes(WGPU_FORMATS_UNKNOWN, 0x12, 2, 8, 8, 1, 1, 1, &b) == -ENOENT,
	      "numbering unknown: no size");
	CHECK(!wgpu_texture_bytes(WGPU_FORMATS_PRE_TIER1, 0x12, 2, 1u << 31, 1u << 31, 1u << 31, 1,
				  64, &b),
	      "huge");
	CHECK_U64(b, UINT64_MAX, "saturates");
}

static void generation_judgement(void)
{
	struct wgpu_marks m = {};
	struct wgpu_abi a, conf;

	wgpu_abi__note(&m, "wgpuBufferAddRef");
	wgpu_abi__judge(&m, NULL, &a);
	CHECK(a.labels == WGPU_LABELS_UNKNOWN, "AddRef alone tells nothing: %s", a.why);
	wgpu_abi__note(&m,
		       "_ZN4dawn6native20NativeBufferSetLabelEP14WGPUBufferImpl14WGPUStringView");
	wgpu_abi__judge(&m, NULL, &a);
	CHECK(a.labels == WGPU_LABELS_SV && a.formats == WGPU_FORMATS_UNKNOWN, "SV: %s", a.why);
	wgpu_abi__note(&m, "wgpuTextureGetTextureBindingViewDimension");
	wgpu_abi__judge(&m, NULL, &a);
	CHECK(a.formats == WGPU_FORMATS_TIER1, "tier1: %s", a.why);
	wgpu_abi__note(&m, "wgpuGetInstanceCapabilities");
	wgpu_abi__judge(&m, NULL, &a);
	CHECK(a.formats == WGPU_FORMATS_UNKNOWN, "contradicting markers: %s", a.why);

	memset(&m, 0, sizeof(m));
	wgpu_abi__note(&m, "wgpuBufferReference");
	wgpu_abi__note(&m, "wgpuDeviceCreateBuffer");
	wgpu_abi__judge(&m, NULL, &a);
	CHECK(a.labels == WGPU_LABELS_CSTR && a.formats == WGPU_FORMATS_PRE_TIER1, "cstr: %s",
	      a.why);
	CHECK(!wgpu_abi__parse("sv-tier1", &conf), "parse");
	wgpu_abi__judge(&m, &conf, &a);
	CHECK(a.labels == WGPU_LABELS_SV && a.formats == WGPU_FORMATS_TIER1 && a.configured &&
		  strstr(a.why, "--webgpu-abi"),
	      "configured wins, evidence kept: %s", a.why);
	CHECK(wgpu_abi__parse("v2", &conf) == -EINVAL, "bad value");

	/* Names alone (Dawn's proc table): SetStencilReference is in every generation. */
	memset(&m, 0, sizeof(m));
	wgpu_abi__note(&m, "wgpuRenderPassEncoderSetStencilReference");
	wgpu_abi__note(&m, "wgpuBufferReadMappedRange");
	wgpu_abi__note(&m, "wgpuBufferAddRef");
	wgpu_abi__judge(&m, NULL, &a);
	CHECK(a.labels == WGPU_LABELS_SV, "SetStencilReference is no *Reference: %s", a.why);
}

static struct gl_desc_rec drec(uint8_t kind, uint16_t api, uint8_t depth, uint64_t addr,
			       uint64_t aux)
{
	struct gl_desc_rec r;

	memset(&r, 0, sizeof(r));
	r.call.hdr.size = sizeof(r.call);
	r.call.hdr.kind = kind;
	r.call.hdr.depth = depth;
	r.call.hdr.api = api;
	r.call.hdr.pid = PID;
	r.call.hdr.tid = TID;
	r.call.hdr.ts_ns = clock_ns += 10;
	r.call.addr = addr;
	r.call.aux = aux;
	r.call.caller = 0x401000;
	r.call.stack_id = -1;
	return r;
}

static int call(struct tracker *t, uint16_t api, uint64_t addr)
{
	struct gl_desc_rec r = drec(GL_REC_NOTIFY, api, 0, addr, 0);

	return tracker__apply(t, &r.call.hdr);
}

/* wgpuDeviceCreateBuffer(DEV, {size}) returning handle, nested at depth. */
static int create_buffer(struct tracker *t, uint64_t handle, uint64_t size, uint8_t depth)
{
	struct gl_desc_rec r =
	    drec(GL_REC_ALLOC, GL_API_WGPU_DEVICE_CREATE_BUFFER, depth, handle, DEV);

	r.call.hdr.size = sizeof(r);
	r.call.hdr.flags = GL_HF_DESC;
	memcpy(r.desc + 32, &size, 8);
	return tracker__apply(t, &r.call.hdr);
}

static void refcounts(void)
{
	struct tracker *t;
	struct tproc *p;
	struct tobj *o;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	create_buffer(t, 0xb1, 4096, 0);
	call(t, GL_API_WGPU_BUFFER_ADD_REF, 0xb1);
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb1);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 4096, "one reference left");
	o = tproc__obj(p, SPACE_WGPU, 0xb1);
	CHECK(o && o->refs == 1 && o->nr_addref == 1 && o->addref_count[0] == 1, "addref site");
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb1);
	CHECK_U64(p->live_bytes, 0, "freed at zero");
	CHECK(!tproc__obj(p, SPACE_WGPU, 0xb1), "handle gone");
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb2);
	CHECK_U64(p->c.unknown_refs, 1, "release of a buffer never seen");
	/* Destroy frees the memory; the handle lives on until its last release. */
	create_buffer(t, 0xb3, 100, 0);
	call(t, GL_API_WGPU_BUFFER_DESTROY, 0xb3);
	CHECK_U64(p->live_bytes, 0, "destroyed");
	CHECK(tproc__obj(p, SPACE_WGPU, 0xb3) != NULL, "handle still referenced");
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb3);
	CHECK_U64(p->c.frees, 2, "one free each, none for the release after destroy");
	tracker__free(t);
}

static void work_done(struct tracker *t, uint64_t a2, uint64_t a3, uint64_t a4, uint64_t a5)
{
	struct gl_desc_rec r = drec(GL_REC_NOTIFY, GL_API_WGPU_QUEUE_WORK_DONE_CALLBACK, 0, a2, a4);

	r.call.size = a3;
	r.call.aux2 = a5;
	tracker__apply(t, &r.call.hdr);
}

static void watch(struct tracker *t, uint64_t ud1, uint64_t ud2)
{
	struct gl_desc_rec r =
	    drec(GL_REC_NOTIFY, GL_API_WGPU_QUEUE_ON_SUBMITTED_WORK_DONE, 0, QUEUE, 0);

	r.call.hdr.size = sizeof(r);
	r.call.hdr.flags = GL_HF_DESC;
	memcpy(r.desc + 24, &ud1, 8);
	memcpy(r.desc + 32, &ud2, 8);
	tracker__apply(t, &r.call.hdr);
}

static void pending_until_work_done(void)
{
	struct gl_desc_rec q;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	q = drec(GL_REC_ALLOC, GL_API_WGPU_DEVICE_GET_QUEUE, 0, QUEUE, DEV);
	tracker__apply(t, &q.call.hdr);
	create_buffer(t, 0xb1, 1000, 0);
	create_buffer(t, 0xb2, 2000, 0);
	create_buffer(t, 0xb3, 4000, 0);
	call(t, GL_API_WGPU_BUFFER_DESTROY, 0xb1);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 6000, "nothing submitted: freed at once");
	call(t, GL_API_WGPU_QUEUE_SUBMIT, QUEUE);
	call(t, GL_API_WGPU_BUFFER_DESTROY, 0xb2);
	CHECK_U64(p->pending_bytes, 2000, "destroyed while submit 1 may run");
	watch(t, 0x11, 0x22);
	call(t, GL_API_WGPU_QUEUE_SUBMIT, QUEUE);
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb3);
	CHECK_U64(p->pending_bytes, 6000, "last release while submit 2 may run: pending too");
	watch(t, 0x33, 0x44);
	work_done(t, 0, 0, 0x99, 0x99);
	CHECK_U64(p->c.unmatched_done, 1, "a callback for nothing we saw registered");
	/* The callback of before webgpu-headers 2025-04-30: (status, userdata1, userdata2) */
	work_done(t, 0x11, 0x22, 0, 0);
	CHECK_U64(p->pending_bytes, 4000, "submit 1 done: b2 freed, b3 still waits");
	/* Since: (status, message.data, message.length, userdata1, userdata2) */
	work_done(t, 0xdead, 5, 0x33, 0x44);
	CHECK_U64(p->pending_bytes, 0, "submit 2 done");
	CHECK_U64(p->c.frees, 3, "frees");
	CHECK_U64(p->nr_watch, 0, "registrations consumed");
	tracker__free(t);
}

static void queue_got_before_attach(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* Submits on a queue whose wgpuDeviceGetQueue came before attach: device unknown. */
	create_buffer(t, 0xb1, 1000, 0);
	call(t, GL_API_WGPU_QUEUE_SUBMIT, QUEUE);
	call(t, GL_API_WGPU_BUFFER_DESTROY, 0xb1);
	p = tracker__proc(t, PID);
	CHECK_U64(p->pending_bytes, 1000, "may be this device's queue: pending");
	watch(t, 1, 2);
	work_done(t, 0, 0, 1, 2);
	CHECK_U64(p->pending_bytes, 0, "completed");
	tracker__free(t);
}

static void error_objects(void)
{
	struct gl_desc_rec mk;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	mk = drec(GL_REC_NOTIFY, GL_API_DAWN_BUFFER_MAKE_ERROR, 1, 0, 0);
	tracker__apply(t, &mk.call.hdr);
	create_buffer(t, 0xe1, 1 << 20, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->c.error_objects, 1, "the creation MakeError ran in");
	CHECK_U64(p->live_bytes, 0, "not memory");
	CHECK(tproc__obj(p, SPACE_WGPU, 0xe1) != NULL, "but a handle to release");
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xe1);
	CHECK_U64(p->c.unknown_refs, 0, "its release is known");
	create_buffer(t, 0xb1, 100, 0);
	CHECK_U64(p->live_bytes, 100, "the mark was taken");
	/* MakeError outside a traced creation (wgpuDeviceCreateErrorBuffer): no mark. */
	mk = drec(GL_REC_NOTIFY, GL_API_DAWN_BUFFER_MAKE_ERROR, 0, 0, 0);
	tracker__apply(t, &mk.call.hdr);
	create_buffer(t, 0xb2, 100, 0);
	CHECK_U64(p->c.error_objects, 1, "depth 0: no creation to blame");
	tracker__free(t);
}

/* wgpuBufferMapAsync(buffer) returning future; wgpuInstanceWaitAny of futures[]. */
static void map_async(struct tracker *t, uint64_t buffer, uint64_t future)
{
	struct gl_desc_rec r = drec(GL_REC_ALLOC, GL_API_WGPU_BUFFER_MAP_ASYNC, 0, future, buffer);

	tracker__apply(t, &r.call.hdr);
}

static void wait_any(struct tracker *t, const uint64_t *futures, const uint32_t *completed,
		     size_t n)
{
	struct gl_desc_rec r = drec(GL_REC_CALL, GL_API_WGPU_INSTANCE_WAIT_ANY, 0, 0x7000, 0);
	size_t i;

	r.call.hdr.size = sizeof(r);
	r.call.hdr.flags = GL_HF_DESC;
	r.call.size = n;
	for (i = 0; i < n && i < 4; i++) {
		memcpy(r.desc + 16 * i, &futures[i], 8);
		memcpy(r.desc + 16 * i + 8, &completed[i], 4);
	}
	tracker__apply(t, &r.call.hdr);
}

static void futures(void)
{
	struct gl_desc_rec q;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	q = drec(GL_REC_ALLOC, GL_API_WGPU_DEVICE_GET_QUEUE, 0, QUEUE, DEV);
	tracker__apply(t, &q.call.hdr);
	create_buffer(t, 0xb1, 1000, 0); /* staging, released after its submit */
	create_buffer(t, 0xb2, 2000, 0);
	create_buffer(t, 0xbf, 64, 0); /* the readback */
	call(t, GL_API_WGPU_QUEUE_SUBMIT, QUEUE);
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb1);
	p = tracker__proc(t, PID);
	CHECK_U64(p->pending_bytes, 1000, "released while submit 1 may run");
	map_async(t, 0xbf, 7); /* done once submit 1 is */
	call(t, GL_API_WGPU_QUEUE_SUBMIT, QUEUE);
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb2);
	map_async(t, 0xbf, 8); /* once submit 2 is */
	CHECK_U64(p->pending_bytes, 3000, "both pending");
	/* A wait that timed out completes nothing; one for another future, nothing either. */
	wait_any(t, (uint64_t[]){8}, (uint32_t[]){0}, 1);
	wait_any(t, (uint64_t[]){99}, (uint32_t[]){1}, 1);
	CHECK_U64(p->pending_bytes, 3000, "nothing completed yet");
	wait_any(t, (uint64_t[]){5, 7}, (uint32_t[]){0, 1}, 2);
	CHECK_U64(p->pending_bytes, 2000, "future 7: submit 1 done, b1 freed");
	wait_any(t, (uint64_t[]){8}, (uint32_t[]){1}, 1);
	CHECK_U64(p->pending_bytes, 0, "future 8: submit 2 done");
	CHECK_U64(p->nr_watch, 0, "futures consumed");
	/* A callback with userdata 0, 0 is not a future's. */
	call(t, GL_API_WGPU_QUEUE_SUBMIT, QUEUE);
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xbf);
	map_async(t, 0xb1, 9); /* a buffer not known: nothing to watch */
	CHECK_U64(p->nr_watch, 0, "no watch for an unknown buffer");
	work_done(t, 0, 0, 0, 0);
	CHECK_U64(p->pending_bytes, 64, "still pending");
	/* The implementation hands the pending handle out again: its release is over. */
	create_buffer(t, 0xbf, 128, 0);
	CHECK_U64(p->pending_bytes, 0, "pending handle made again");
	CHECK_U64(p->c.async_reuse, 1, "a legal reuse");
	CHECK_U64(p->c.addr_reuse, 0, "not an untraced free");
	tracker__free(t);
}

/* A creation of handle whose object's first 16 bytes are (vptr, refs), read at its return. */
static int create_peeked(struct tracker *t, uint64_t handle, uint64_t vptr, uint64_t refs)
{
	struct gl_peek_rec r;

	memset(&r, 0, sizeof(r));
	r.desc = drec(GL_REC_ALLOC, GL_API_WGPU_DEVICE_CREATE_BUFFER, 0, handle, DEV);
	r.desc.call.hdr.size = sizeof(r);
	r.desc.call.hdr.flags = GL_HF_DESC | GL_HF_PEEK;
	memcpy(r.desc.desc + 32, &(uint64_t){4096}, 8);
	memcpy(r.peek, &vptr, 8);
	memcpy(r.peek + 8, &refs, 8);
	return tracker__apply(t, &r.desc.call.hdr);
}

static void class_rec(struct tracker *t, uint32_t kind, uint64_t vptr, uint64_t len)
{
	struct gl_class_rec c = {.hdr = {.size = sizeof(c), .kind = GL_REC_CLASS, .pid = PID},
				 .vptr = vptr,
				 .len = len,
				 .kind = kind};

	tracker__apply(t, &c.hdr);
}

static void error_objects_by_their_bytes(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* Before any class record: the bytes mean nothing (not known to be Dawn's). */
	create_peeked(t, 0xa0, 0x7f0000001000, 4);
	p = tracker__proc(t, PID);
	CHECK_U64(p->c.error_objects, 0, "no image known: not judged");
	/* A Dawn image without RTTI: the reference count word decides. */
	class_rec(t, GL_CLASS_DAWN_IMAGE, 0x7f0000000000, 0x100000);
	class_rec(t, GL_CLASS_DAWN_IMAGE, 0x7f0000000000, 0x100000); /* a rescan: once */
	CHECK_U64(p->nr_classes, 1, "kept once");
	create_peeked(t, 0xa1, 0x7f0000002000, 6);
	create_peeked(t, 0xa2, 0x7f0000002000, 3);
	CHECK_U64(p->c.error_objects, 0, "count 1, payload set: real objects (2 and 1 bits)");
	create_peeked(t, 0xa3, 0x7f0000002000, 4);
	create_peeked(t, 0xa4, 0x7f0000003000, 2);
	CHECK_U64(p->c.error_objects, 2, "payload 0: error objects (2 and 1 payload bits)");
	create_peeked(t, 0xa5, 0x7e0000002000, 4);
	CHECK_U64(p->c.error_objects, 2, "a vtable outside the image: not Dawn's, not judged");
	/* With the image's error classes known (RTTI), their vtables decide alone. */
	class_rec(t, GL_CLASS_ERROR_OBJECT, 0x7f0000005000, 0);
	create_peeked(t, 0xa6, 0x7f0000002000, 4);
	CHECK_U64(p->c.error_objects, 2, "another class: a real object, whatever its count");
	create_peeked(t, 0xa7, 0x7f0000005000, 4);
	CHECK_U64(p->c.error_objects, 3, "the error class");
	CHECK_U64(p->live_bytes, 5 * 4096, "the 5 real buffers only are memory");
	tracker__free(t);
}

static void owners_and_labels(void)
{
	struct gl_label_rec lr;
	struct tracker *t;
	struct tproc *p;
	struct tobj *dev;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	create_buffer(t, 0xb1, 100, 0);
	create_buffer(t, 0xb2, 200, 0);
	memset(&lr, 0, sizeof(lr));
	lr.hdr = (struct gl_hdr){.size = sizeof(lr),
				 .kind = GL_REC_LABEL,
				 .api = GL_API_WGPU_BUFFER_SET_LABEL,
				 .pid = PID,
				 .tid = TID};
	lr.addr = 0xb1;
	lr.len = 8;
	memcpy(lr.label, "kv_cache", 8);
	tracker__apply(t, &lr.hdr);
	p = tracker__proc(t, PID);
	CHECK(!strcmp(tracker__label(t, tproc__obj(p, SPACE_WGPU, 0xb1)->label), "kv_cache"),
	      "label");
	lr.addr = 0xb2;
	tracker__apply(t, &lr.hdr);
	CHECK_U64(t->nr_labels, 1, "interned once");
	lr.len = 0;
	tracker__apply(t, &lr.hdr);
	CHECK(!strcmp(tracker__label(t, tproc__obj(p, SPACE_WGPU, 0xb2)->label), ""), "cleared");
	/* Cut inside a UTF-8 sequence: the partial character goes. */
	lr.len = 64;
	lr.truncated = 1;
	memset(lr.label, 'a', 63);
	lr.label[63] = (char)0xc3;
	tracker__apply(t, &lr.hdr);
	CHECK_U64(strlen(tracker__label(t, tproc__obj(p, SPACE_WGPU, 0xb2)->label)), 63,
		  "utf-8 trim");
	dev = tproc__obj(p, SPACE_WGPU, DEV);
	CHECK(dev && dev->ordinal == 1 && (dev->flags & TOBJ_OWNER), "device seen");
	call(t, GL_API_WGPU_DEVICE_ADD_REF, DEV);
	call(t, GL_API_WGPU_DEVICE_RELEASE, DEV);
	CHECK_U64(p->live_bytes, 300, "one reference left on the device");
	call(t, GL_API_WGPU_DEVICE_RELEASE, DEV);
	CHECK_U64(p->live_bytes, 0, "device released to zero: its buffers go");
	CHECK_U64(p->c.released_by_owner, 2, "owner frees");
	call(t, GL_API_WGPU_BUFFER_RELEASE, 0xb1);
	CHECK_U64(p->c.frees, 2, "a buffer released after its device frees nothing more");
	tracker__free(t);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"wgpu_texture_bytes", texture_bytes},
	    {"wgpu_generation_judgement", generation_judgement},
	    {"wgpu_refcounts", refcounts},
	    {"wgpu_pending_until_work_done", pending_until_work_done},
	    {"wgpu_queue_got_before_attach", queue_got_before_attach},
	    {"wgpu_error_objects", error_objects},
	    {"wgpu_owners_and_labels", owners_and_labels},
	    {"wgpu_futures", futures},
	    {"wgpu_error_objects_by_their_bytes", error_objects_by_their_bytes},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
