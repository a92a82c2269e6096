// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * driver_alloc
 *
 * The driver API alone: linked against the stand-in libcuda.so.1, no runtime. Set-up, before
 * "ready": cuInit, cuDevicePrimaryCtxRetain(0) + cuCtxSetCurrent, cuStreamCreate (stream S).
 * Every allocation is made in device 0's primary context; pinned host memory ("host")
 * belongs to no device. One site per call:
 *
 *   site                     API                          bytes   device  at "done"
 *   drv_alloc                cuMemAlloc_v2, 3 calls        1 MiB    0     2 live; the first
 *                            (one site)                    each           freed by drv_free
 *                                                                         (cuMemFree_v2)
 *   drv_alloc_host           cuMemAllocHost_v2             65536   host   live
 *   drv_host_alloc           cuMemHostAlloc, flags 0       32768   host   freed by
 *                                                                         drv_free_host
 *                                                                         (cuMemFreeHost)
 *   drv_alloc_managed        cuMemAllocManaged, GLOBAL    131072    0     live
 *   drv_alloc_pitch          cuMemAllocPitch_v2, width     10240    0     live
 *                            1000, height 10, element 4
 *                            (pitch 1024)
 *   drv_alloc_async          cuMemAllocAsync on S         262144    0     freed: drv_free_async
 *                                                                         (cuMemFreeAsync on S),
 *                                                                         then drv_sync
 *                                                                         (cuStreamSynchronize S)
 *   drv_alloc_async_pending  cuMemAllocAsync on S         524288    0     free pending:
 *                                                                         drv_free_async_pending
 *                                                                         (cuMemFreeAsync on S),
 *                                                                         never synchronized
 *
 * Expected at "done": 5 live allocations: device 0 2238464 bytes (cuMemAlloc_v2 2 x 1048576,
 * managed 131072, pitch 10240), host 65536; plus 524288 bytes on device 0 whose free is still
 * pending on S at exit (the driver holds them until a synchronisation that never comes).
 * 9 allocation calls, 4 frees: cuMemFree_v2, cuMemFreeHost, 2 x cuMemFreeAsync (1 completed
 * by cuStreamSynchronize, 1 pending). The driver's own count of device 0 bytes in use is
 * checked: 2762752 (live + pending).
 */
#include <cuda.h>
#include "scenario.h"

#define MIB (1UL << 20)

static SCENARIO_SITE void drv_alloc(CUdeviceptr *d, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cuMemAlloc_v2(&d[i], MIB));
	}
}

static SCENARIO_SITE void drv_free(CUdeviceptr d)
{
	SCENARIO_OK(cuMemFree_v2(d));
}

static SCENARIO_SITE void *drv_alloc_host(void)
{
	void *p;

	SCENARIO_OK(cuMemAllocHost_v2(&p, 65536));
	return p;
}

static SCENARIO_SITE void *drv_host_alloc(void)
{
	void *p;

	SCENARIO_OK(cuMemHostAlloc(&p, 32768, 0));
	return p;
}

static SCENARIO_SITE void drv_free_host(void *p)
{
	SCENARIO_OK(cuMemFreeHost(p));
}

static SCENARIO_SITE CUdeviceptr drv_alloc_managed(void)
{
	CUdeviceptr d;

	SCENARIO_OK(cuMemAllocManaged(&d, 131072, CU_MEM_ATTACH_GLOBAL));
	return d;
}

static SCENARIO_SITE CUdeviceptr drv_alloc_pitch(void)
{
	CUdeviceptr d;
	size_t pitch;

	SCENARIO_OK(cuMemAllocPitch_v2(&d, &pitch, 1000, 10, 4));
	SCENARIO_EXPECT(pitch, 1024);
	return d;
}

static SCENARIO_SITE CUdeviceptr drv_alloc_async(CUstream s)
{
	CUdeviceptr d;

	SCENARIO_OK(cuMemAllocAsync(&d, 262144, s));
	return d;
}

static SCENARIO_SITE void drv_free_async(CUdeviceptr d, CUstream s)
{
	SCENARIO_OK(cuMemFreeAsync(d, s));
}

static SCENARIO_SITE void drv_sync(CUstream s)
{
	SCENARIO_OK(cuStreamSynchronize(s));
}

static SCENARIO_SITE CUdeviceptr drv_alloc_async_pending(CUstream s)
{
	CUdeviceptr d;

	SCENARIO_OK(cuMemAllocAsync(&d, 524288, s));
	return d;
}

static SCENARIO_SITE void drv_free_async_pending(CUdeviceptr d, CUstream s)
{
	SCENARIO_OK(cuMemFreeAsync(d, s));
}

int main(void)
{
	size_t free_b, total_b;
	CUdeviceptr dev[3];
	CUcontext ctx;
	CUstream s;

	SCENARIO_OK(cuInit(0));
	SCENARIO_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	SCENARIO_OK(cuCtxSetCurrent(ctx));
	SCENARIO_OK(cuStreamCreate(&s, 0));
	scenario_ready();
	drv_alloc(dev, 3);
	drv_free(dev[0]);
	drv_alloc_host();
	drv_free_host(drv_host_alloc());
	drv_alloc_managed();
	drv_alloc_pitch();
	drv_free_async(drv_alloc_async(s), s);
	drv_sync(s);
	drv_free_async_pending(drv_alloc_async_pending(s), s);
	SCENARIO_OK(cuMemGetInfo_v2(&free_b, &total_b));
	SCENARIO_EXPECT(total_b - free_b, 2 * MIB + 131072 + 10240 + 524288);
	scenario_done();
	return 0;
}
