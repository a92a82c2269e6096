// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libwgpu_unknown.so: wgpu* functions and nothing that tells which webgpu.h they follow
 * (no Dawn C++ symbols, no function of only one generation), as a WebGPU implementation
 * other than Dawn might export them. gpuleak must refuse to read its descriptors unless
 * told the generation (--webgpu-abi). Never called: `gpuleak probes --lib` reads it.
 */
#include <stddef.h>

void *wgpuDeviceCreateBuffer(void *device, const void *descriptor);
void *wgpuDeviceCreateTexture(void *device, const void *descriptor);
void wgpuBufferAddRef(void *buffer);
void wgpuBufferRelease(void *buffer);
void wgpuBufferDestroy(void *buffer);

void *wgpuDeviceCreateBuffer(void *device, const void *descriptor)
{
	return descriptor ? device : NULL;
}

void *wgpuDeviceCreateTexture(void *device, const void *descriptor)
{
	return descriptor ? device : NULL;
}

void wgpuBufferAddRef(void *buffer)
{
	(void)buffer;
}

void wgpuBufferRelease(void *buffer)
{
	(void)buffer;
}

void wgpuBufferDestroy(void *buffer)
{
	(void)buffer;
}
