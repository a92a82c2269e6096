/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Getting a real Dawn device for the WebGPU scenarios, untraced set-up shared by them.
 *
 * WGPU_BACKEND=null (default) asks for Dawn's Null backend: objects are created, refcounted
 * and destroyed, commands are validated but not executed, no dependencies. WGPU_BACKEND=gles
 * asks for OpenGL ES on Mesa's llvmpipe (needs EGL_PLATFORM=surfaceless, feature level
 * Compatibility). Every callback runs in wgpuInstanceProcessEvents (AllowProcessEvents).
 */
#ifndef GPULEAK_WGPU_SETUP_H
#define GPULEAK_WGPU_SETUP_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "scenario.h"
#include "webgpu_min.h"

struct wgpu_ctx {
	WGPUInstance instance;
	WGPUAdapter adapter;
	WGPUDevice device;
	WGPUQueue queue;
	WGPUDevice new_device; /* what the last device request got */
	int pending;	       /* callbacks still to come */
};

static inline WGPUStringView wgpu_sv(const char *s)
{
	return (WGPUStringView){s, WGPU_STRLEN};
}

static void wgpu_on_adapter(uint32_t status, WGPUAdapter adapter, WGPUStringView message,
			    void *userdata1, void *userdata2)
{
	struct wgpu_ctx *c = userdata1;

	(void)userdata2;
	if (status != WGPURequestAdapterStatus_Success) {
		fprintf(stderr, "scenario: no adapter (status %u): %.*s\n", status,
			(int)(message.data ? strnlen(message.data, message.length) : 0),
			message.data ? message.data : "");
		exit(3);
	}
	c->adapter = adapter;
	c->pending--;
}

static void wgpu_on_device(uint32_t status, WGPUDevice device, WGPUStringView message,
			   void *userdata1, void *userdata2)
{
	struct wgpu_ctx *c = userdata1;

	(void)userdata2;
	if (status != WGPURequestDeviceStatus_Success) {
		fprintf(stderr, "scenario: no device (status %u): %.*s\n", status,
			(int)(message.data ? strnlen(message.data, message.length) : 0),
			message.data ? message.data : "");
		exit(3);
	}
	c->new_device = device;
	c->pending--;
}

/* Validation errors are expected in some scenarios: keep Dawn from printing them. */
static void wgpu_on_error(const WGPUDevice *device, uint32_t type, WGPUStringView message,
			  void *userdata1, void *userdata2)
{
	(void)device;
	(void)type;
	(void)message;
	(void)userdata2;
	if (userdata1)
		(*(int *)userdata1)++;
}

static int wgpu_errors;

static inline void wgpu_wait(struct wgpu_ctx *c)
{
	while (c->pending > 0)
		wgpuInstanceProcessEvents(c->instance);
}

/* A device of the adapter; uncaptured errors are counted in wgpu_errors. */
static inline WGPUDevice wgpu_new_device(struct wgpu_ctx *c, const char *label)
{
	WGPUDeviceDescriptor dd = {.label = wgpu_sv(label)};
	WGPURequestDeviceCallbackInfo cb = {.mode = WGPUCallbackMode_AllowProcessEvents,
					    .callback = wgpu_on_device,
					    .userdata1 = c};

	dd.uncapturedErrorCallbackInfo.callback = wgpu_on_error;
	dd.uncapturedErrorCallbackInfo.userdata1 = &wgpu_errors;
	c->pending++;
	wgpuAdapterRequestDevice(c->adapter, &dd, cb);
	wgpu_wait(c);
	return c->new_device;
}

static inline void wgpu_setup(struct wgpu_ctx *c)
{
	const char *backend = getenv("WGPU_BACKEND");
	bool gles = backend && !strcmp(backend, "gles");
	WGPURequestAdapterOptions ao = {
	    .backendType = gles ? WGPUBackendType_OpenGLES : WGPUBackendType_Null,
	    .featureLevel = gles ? WGPUFeatureLevel_Compatibility : WGPUFeatureLevel_Core,
	};
	WGPURequestAdapterCallbackInfo cb = {.mode = WGPUCallbackMode_AllowProcessEvents,
					     .callback = wgpu_on_adapter,
					     .userdata1 = c};

	memset(c, 0, sizeof(*c));
	c->instance = wgpuCreateInstance(NULL);
	if (!c->instance) {
		fprintf(stderr, "scenario: wgpuCreateInstance failed\n");
		exit(3);
	}
	c->pending = 1;
	wgpuInstanceRequestAdapter(c->instance, &ao, cb);
	wgpu_wait(c);
	c->device = wgpu_new_device(c, "scenario-device");
	c->queue = wgpuDeviceGetQueue(c->device);
}

/* A buffer of size bytes, usage CopySrc | CopyDst unless given; label NULL: none. */
static inline WGPUBuffer wgpu_buffer(WGPUDevice d, uint64_t size, WGPUBufferUsage usage,
				     const char *label)
{
	WGPUBufferDescriptor bd = {
	    .usage = usage ? usage : WGPUBufferUsage_CopySrc | WGPUBufferUsage_CopyDst,
	    .size = size,
	};

	if (label)
		bd.label = wgpu_sv(label);
	return wgpuDeviceCreateBuffer(d, &bd);
}

/* Ends the scenario: a creation that gave NULL is never what a scenario expects. */
#define WGPU_CHECK(handle)                                                                         \
	do {                                                                                       \
		if (!(handle)) {                                                                   \
			fprintf(stderr, "scenario: %s:%d: %s is NULL\n", __FILE__, __LINE__,       \
				#handle);                                                          \
			exit(1);                                                                   \
		}                                                                                  \
	} while (0)

#endif
