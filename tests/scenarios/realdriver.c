// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * realdriver [INIT_RC ALLOC_RC CREATE_RC RETAIN_RC]
 *
 * NVIDIA's real driver library, libcuda.so.1 535.x from Debian's libcuda1 package, as
 * scripts/install-deps.sh unpacks it (never installed). Links nothing from CUDA: set-up,
 * before "ready", dlopen()s the file named by GPULEAK_REAL_LIBCUDA (so it is mapped at
 * "ready") and looks up the four entry points. One site per call:
 *   real_cu_init        cuInit(0)
 *   real_cu_mem_alloc   cuMemAlloc_v2(1 MiB)
 *   real_cu_mem_create  cuMemCreate(2 MiB, pinned, device 0)
 *   real_cu_mem_retain  cuMemRetainAllocationHandle(&h, a host address): NCCL's first call
 *                       when it frees cuMem memory (ncclCuMemFree)
 * Each code is printed to stderr as "<api> -> <code>"; any other than the expected one ends
 * the program with status 1. Defaults, what the driver answers on a machine without an
 * NVIDIA GPU: 100 3 3 3 (CUDA_ERROR_NO_DEVICE, then CUDA_ERROR_NOT_INITIALIZED thrice).
 * There, nothing is allocated: a tracer sees 4 calls, the last 3 failed, nothing live.
 *
 * Run it as a user other than root (setpriv --reuid=65534 --regid=65534 --clear-groups):
 * as root the real cuInit creates /dev/nvidiactl. It refuses root unless
 * GPULEAK_REAL_LIBCUDA_AS_ROOT=1 (a machine with a real driver installed). Exit status 2:
 * usage, GPULEAK_REAL_LIBCUDA unset, or root.
 */
#include <cuda.h>
#include <dlfcn.h>
#include "scenario.h"

static long want[4] = {CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED,
		       CUDA_ERROR_NOT_INITIALIZED};

static __typeof__(cuInit) *real_init;
static __typeof__(cuMemAlloc_v2) *real_alloc;
static __typeof__(cuMemCreate) *real_create;
static __typeof__(cuMemRetainAllocationHandle) *real_retain;

static CUresult check(const char *api, CUresult rc, long expect)
{
	fprintf(stderr, "%s -> %d\n", api, (int)rc);
	if ((long)rc != expect) {
		fprintf(stderr, "realdriver: %s returned %d, expected %ld\n", api, (int)rc, expect);
		exit(1);
	}
	return rc;
}

static SCENARIO_SITE void real_cu_init(void)
{
	check("cuInit", real_init(0), want[0]);
}

static SCENARIO_SITE void real_cu_mem_alloc(void)
{
	CUdeviceptr d = 0;

	check("cuMemAlloc_v2", real_alloc(&d, 1UL << 20), want[1]);
}

static SCENARIO_SITE void real_cu_mem_create(void)
{
	CUmemAllocationProp prop = {0};
	CUmemGenericAllocationHandle h = 0;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	prop.location.id = 0;
	check("cuMemCreate", real_create(&h, 2UL << 20, &prop, 0), want[2]);
}

static SCENARIO_SITE void real_cu_mem_retain(void)
{
	CUmemGenericAllocationHandle h = 0;

	check("cuMemRetainAllocationHandle", real_retain(&h, &h), want[3]);
}

int main(int argc, char **argv)
{
	const char *path = getenv("GPULEAK_REAL_LIBCUDA");
	const char *as_root = getenv("GPULEAK_REAL_LIBCUDA_AS_ROOT");
	void *h;
	int i;

	if (argc != 1 && argc != 5) {
		fprintf(stderr, "usage: realdriver [INIT_RC ALLOC_RC CREATE_RC RETAIN_RC]\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		want[i - 1] = (long)scenario_bytes(argv[i], "RC");
	if (!path || !*path) {
		fprintf(stderr, "realdriver: set GPULEAK_REAL_LIBCUDA to a real libcuda.so.1 "
				"(scripts/install-deps.sh puts one in "
				"/var/cache/gpuleak/libcuda1/)\n");
		return 2;
	}
	if (geteuid() == 0 && !(as_root && !strcmp(as_root, "1"))) {
		fprintf(stderr, "realdriver: refusing to run as root (the driver would create "
				"/dev/nvidiactl): use setpriv --reuid=65534 --regid=65534 "
				"--clear-groups\n");
		return 2;
	}
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "realdriver: %s\n", dlerror());
		return 1;
	}
	real_init = (__typeof__(real_init))dlsym(h, "cuInit");
	real_alloc = (__typeof__(real_alloc))dlsym(h, "cuMemAlloc_v2");
	real_create = (__typeof__(real_create))dlsym(h, "cuMemCreate");
	real_retain = (__typeof__(real_retain))dlsym(h, "cuMemRetainAllocationHandle");
	if (!real_init || !real_alloc || !real_create || !real_retain) {
		fprintf(stderr,
			"realdriver: %s lacks cuInit, cuMemAlloc_v2, cuMemCreate or "
			"cuMemRetainAllocationHandle\n",
			path);
		return 1;
	}
	scenario_ready();
	real_cu_init();
	real_cu_mem_alloc();
	real_cu_mem_create();
	real_cu_mem_retain();
	scenario_done();
	return 0;
}
