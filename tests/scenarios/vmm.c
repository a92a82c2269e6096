// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * vmm MODE
 *
 * The driver's virtual memory management API, linked against the stand-in libcuda.so.1. The
 * granularity is 2 MiB; every physical allocation is on device 0. Set-up, before "ready":
 * cuInit, cuDevicePrimaryCtxRetain(0) + cuCtxSetCurrent (for the check at the end), and
 * cuMemGetAllocationGranularity (must be 2 MiB). One site per API; a site called twice in a
 * mode is one site with two calls:
 *
 *   vmm_reserve       cuMemAddressReserve(size, alignment 0)   address space, no memory
 *   vmm_create        cuMemCreate(2 MiB, pinned, device 0)     the physical allocation
 *   vmm_map           cuMemMap(range, 2 MiB, offset 0, handle)
 *   vmm_set_access    cuMemSetAccess(range, size, device 0 read-write)
 *   vmm_unmap         cuMemUnmap(range, 2 MiB)
 *   vmm_release       cuMemRelease(handle)
 *   vmm_address_free  cuMemAddressFree(range, size)
 *
 * Modes, calls in order (R, R1, R2 ranges; H, H1, H2 handles), and what is left at "done":
 *   clean                 reserve R 4 MiB; create H1, create H2; map H1 at R, H2 at R+2 MiB;
 *                         one set_access over R, 4 MiB; unmap R, unmap R+2 MiB; release H1,
 *                         release H2; address_free R 4 MiB.  Left: nothing.
 *   leak_handle           reserve R 2 MiB; create H; map H at R; set_access; unmap R;
 *                         address_free R.  Left: H, 2 MiB, created at vmm_create, mapped
 *                         nowhere, never released.
 *   release_while_mapped  reserve R 2 MiB; create H; map H at R; set_access; release H.
 *                         Left: 2 MiB, live through the mapping at R (handle released; the
 *                         memory goes at the last unmap, which never comes), and the 2 MiB
 *                         reservation R (the stand-in refuses to free a range with mappings).
 *   release_then_unmap    reserve R 2 MiB; create H; map H at R; set_access; release H;
 *                         unmap R (the memory is freed here, by cuMemUnmap); address_free R.
 *                         Left: nothing.
 *   leak_range            reserve R 8 MiB.  Left: the 8 MiB reservation: address space only,
 *                         0 bytes of memory.
 *   double_map            reserve R1 2 MiB, reserve R2 2 MiB; create H; map H at R1, at R2;
 *                         set_access R1, set_access R2 (data written through R1 reads back
 *                         through R2); unmap R1, unmap R2; release H; address_free R1,
 *                         address_free R2.  Left: nothing; while mapped twice, H is 2 MiB,
 *                         not 4 (peak 2 MiB).
 *   double_map_live       as double_map up to the data check, then exit.  Left: H, 2 MiB,
 *                         never released, mapped at R1 and R2 (counted once: 2 MiB, not 4),
 *                         and the two reservations.
 * The driver's count of device 0 bytes in use at "done" is checked against the above.
 */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include "scenario.h"

#define GRAN (2UL << 20)

static SCENARIO_SITE CUdeviceptr vmm_reserve(size_t size)
{
	CUdeviceptr r;

	SCENARIO_OK(cuMemAddressReserve(&r, size, 0, 0, 0));
	return r;
}

static SCENARIO_SITE CUmemGenericAllocationHandle vmm_create(void)
{
	CUmemAllocationProp prop = {0};
	CUmemGenericAllocationHandle h;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	SCENARIO_OK(cuMemCreate(&h, GRAN, &prop, 0));
	return h;
}

static SCENARIO_SITE void vmm_map(CUdeviceptr at, CUmemGenericAllocationHandle h)
{
	SCENARIO_OK(cuMemMap(at, GRAN, 0, h, 0));
}

static SCENARIO_SITE void vmm_set_access(CUdeviceptr at, size_t size)
{
	CUmemAccessDesc access = {0};

	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = 0;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	SCENARIO_OK(cuMemSetAccess(at, size, &access, 1));
}

static SCENARIO_SITE void vmm_unmap(CUdeviceptr at)
{
	SCENARIO_OK(cuMemUnmap(at, GRAN));
}

static SCENARIO_SITE void vmm_release(CUmemGenericAllocationHandle h)
{
	SCENARIO_OK(cuMemRelease(h));
}

static SCENARIO_SITE void vmm_address_free(CUdeviceptr r, size_t size)
{
	SCENARIO_OK(cuMemAddressFree(r, size));
}

/* Returns the device 0 bytes in use that MODE leaves. */
static size_t run_clean(void)
{
	CUmemGenericAllocationHandle h1, h2;
	CUdeviceptr r = vmm_reserve(2 * GRAN);

	h1 = vmm_create();
	h2 = vmm_create();
	vmm_map(r, h1);
	vmm_map(r + GRAN, h2);
	vmm_set_access(r, 2 * GRAN);
	vmm_unmap(r);
	vmm_unmap(r + GRAN);
	vmm_release(h1);
	vmm_release(h2);
	vmm_address_free(r, 2 * GRAN);
	return 0;
}

static size_t run_leak_handle(void)
{
	CUdeviceptr r = vmm_reserve(GRAN);
	CUmemGenericAllocationHandle h = vmm_create();

	vmm_map(r, h);
	vmm_set_access(r, GRAN);
	vmm_unmap(r);
	vmm_address_free(r, GRAN);
	return GRAN;
}

static size_t run_release(bool unmap)
{
	CUdeviceptr r = vmm_reserve(GRAN);
	CUmemGenericAllocationHandle h = vmm_create();

	vmm_map(r, h);
	vmm_set_access(r, GRAN);
	vmm_release(h);
	if (!unmap)
		return GRAN;
	vmm_unmap(r);
	vmm_address_free(r, GRAN);
	return 0;
}

static size_t run_leak_range(void)
{
	vmm_reserve(4 * GRAN);
	return 0;
}

static size_t run_double_map(bool live)
{
	CUdeviceptr r1 = vmm_reserve(GRAN), r2 = vmm_reserve(GRAN);
	CUmemGenericAllocationHandle h = vmm_create();
	volatile unsigned char *p1, *p2;

	vmm_map(r1, h);
	vmm_map(r2, h);
	vmm_set_access(r1, GRAN);
	vmm_set_access(r2, GRAN);
	/* One memory behind both ranges. */
	p1 = (volatile unsigned char *)(uintptr_t)r1;
	p2 = (volatile unsigned char *)(uintptr_t)r2;
	p1[0] = 0x5a;
	p1[GRAN - 1] = 0xa5;
	SCENARIO_EXPECT(p2[0], 0x5a);
	SCENARIO_EXPECT(p2[GRAN - 1], 0xa5);
	if (live)
		return GRAN;
	vmm_unmap(r1);
	vmm_unmap(r2);
	vmm_release(h);
	vmm_address_free(r1, GRAN);
	vmm_address_free(r2, GRAN);
	return 0;
}

int main(int argc, char **argv)
{
	CUmemAllocationProp prop = {0};
	size_t gran, free_b, total_b, want;
	const char *mode;
	CUcontext ctx;

	scenario_usage(argc, 2,
		       "vmm clean|leak_handle|release_while_mapped|release_then_unmap|"
		       "leak_range|double_map|double_map_live");
	mode = argv[1];
	SCENARIO_OK(cuInit(0));
	SCENARIO_OK(cuDevicePrimaryCtxRetain(&ctx, 0));
	SCENARIO_OK(cuCtxSetCurrent(ctx));
	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	SCENARIO_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
	SCENARIO_EXPECT(gran, GRAN);
	if (strcmp(mode, "clean") && strcmp(mode, "leak_handle") &&
	    strcmp(mode, "release_while_mapped") && strcmp(mode, "release_then_unmap") &&
	    strcmp(mode, "leak_range") && strcmp(mode, "double_map") &&
	    strcmp(mode, "double_map_live")) {
		fprintf(stderr, "vmm: unknown mode '%s'\n", mode);
		return 2;
	}
	scenario_ready();
	if (!strcmp(mode, "clean"))
		want = run_clean();
	else if (!strcmp(mode, "leak_handle"))
		want = run_leak_handle();
	else if (!strcmp(mode, "release_while_mapped"))
		want = run_release(false);
	else if (!strcmp(mode, "release_then_unmap"))
		want = run_release(true);
	else if (!strcmp(mode, "leak_range"))
		want = run_leak_range();
	else if (!strcmp(mode, "double_map"))
		want = run_double_map(false);
	else
		want = run_double_map(true);
	SCENARIO_OK(cuMemGetInfo_v2(&free_b, &total_b));
	SCENARIO_EXPECT(total_b - free_b, want);
	scenario_done();
	return 0;
}
