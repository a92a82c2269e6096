/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The stand-in libc10.so: the one function of PyTorch's libc10.so a GPU memory tracer sees,
 * c10::reportMemoryUsageToProfiler, exported under its C++ name with the C++ ABI of released
 * PyTorch builds. c10::Device is {int8_t type, int8_t index}, trivially copyable: passed by
 * value in one register, type in bits 0-7, index in bits 8-15. A C struct of two int8_t is
 * passed the same way.
 */
#ifndef STANDIN_C10_H
#define STANDIN_C10_H

#include <stddef.h>
#include <stdint.h>

#define C10_DEVICE_TYPE_CUDA 1 /* c10::DeviceType::CUDA */

struct c10_device {
	int8_t type;
	int8_t index;
};

/*
 * c10::reportMemoryUsageToProfiler(void *ptr, int64_t alloc_size, size_t total_allocated,
 * size_t total_reserved, c10::Device device): +block bytes when a block is handed out,
 * -block bytes when it is freed; the totals are the allocator's allocated and reserved bytes
 * after the change. Like PyTorch's, a no-op unless a profiler is listening.
 */
void _ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(void *ptr, int64_t alloc_size,
							   size_t total_allocated,
							   size_t total_reserved,
							   struct c10_device device);
/* Not in PyTorch: how many reports were made. */
uint64_t c10_standin_reports(void);

#endif
