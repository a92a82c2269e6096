// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libc10.so stand-in (c10.h). PyTorch forwards the report to the thread's profiler, if any;
 * nothing listens here, so the call only counts, which keeps the call (and the probe on its
 * entry) from being optimized away and lets a scenario print how often it ran.
 */
#include "c10.h"

#define EXPORT __attribute__((visibility("default")))

static uint64_t reports;

EXPORT __attribute__((noinline)) void
_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(void *ptr, int64_t alloc_size,
						      size_t total_allocated, size_t total_reserved,
						      struct c10_device device)
{
	(void)ptr, (void)alloc_size, (void)total_allocated, (void)total_reserved, (void)device;
	__atomic_fetch_add(&reports, 1, __ATOMIC_RELAXED);
}

/* Not in PyTorch: how many reports were made (a scenario's own check). */
EXPORT uint64_t c10_standin_reports(void)
{
	return __atomic_load_n(&reports, __ATOMIC_RELAXED);
}
