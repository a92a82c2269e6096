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
 * realdriver coverage: cuInit (100), then the calls of docs/cuda.md beyond plain allocation,
 * one site each (drv_<call>), with arguments no device could make good. After the failed
 * cuInit every call with a return probe returns 3 (CUDA_ERROR_NOT_INITIALIZED), 33 of
 * them: cuMemHostRegister_v2, cuIpcGetMemHandle, cuIpcOpenMemHandle_v2,
 * cuStreamBeginCapture_v2(_ptsz), cuStreamEndCapture(_ptsz), cuStreamIsCapturing(_ptsz),
 * cuGraphAddMemAllocNode, cuGraphAddMemFreeNode, cuGraphInstantiateWithFlags,
 * cuGraphLaunch(_ptsz), cuGraphUpload(_ptsz), cuGraphExecDestroy, cuGraphDestroy,
 * cuDeviceGraphMemTrim, cuMemPoolCreate, cuMemPoolDestroy, cuMemPoolTrimTo,
 * cuMemPoolSetAttribute, cuDeviceSetMemPool, cuDeviceGetMemPool, cuDeviceGetDefaultMemPool,
 * cuArrayCreate_v2, cuArray3DCreate_v2, cuMipmappedArrayCreate,
 * cuMemExportToShareableHandle, cuMemImportFromShareableHandle, cuMulticastCreate,
 * cuMulticastBindMem, cuMulticastUnbind. Entry-only frees (their results, 3 and 400, are
 * not seen): cuMemHostUnregister and cuIpcCloseMemHandle of pointers never returned (2
 * unknown frees), cuArrayDestroy(NULL) and cuMipmappedArrayDestroy(NULL) (2 null frees).
 * Nothing live.
 *
 * Run it as a user other than root (setpriv --reuid=65534 --regid=65534 --clear-groups):
 * as root the real cuInit creates /dev/nvidiactl. It refuses root unless
 * GPULEAK_REAL_LIBCUDA_AS_ROOT=1 (a machine with a real driver installed). Exit status 2:
 * usage, GPULEAK_REAL_LIBCUDA unset, or root.
 */
#include <cuda.h>
#include <dlfcn.h>
#include <stdint.h>
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

/* --- coverage --- */

static void *lib;

/* One site per call: looked up by its exported name, called with what follows. */
#define DRV_CALL(fn, want, ...)                                                                    \
	static SCENARIO_SITE void drv_##fn(void)                                                   \
	{                                                                                          \
		__typeof__(fn) *f = (__typeof__(fn) *)dlsym(lib, #fn);                             \
		if (!f) {                                                                          \
			fprintf(stderr, "realdriver: no %s\n", #fn);                               \
			exit(1);                                                                   \
		}                                                                                  \
		check(#fn, f(__VA_ARGS__), want);                                                  \
	}

extern __typeof__(cuStreamBeginCapture_v2) cuStreamBeginCapture_v2_ptsz;
extern __typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
extern __typeof__(cuStreamIsCapturing) cuStreamIsCapturing_ptsz;
extern __typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;
extern __typeof__(cuGraphUpload) cuGraphUpload_ptsz;

#define NI CUDA_ERROR_NOT_INITIALIZED

static char host_buf[4096];
static CUipcMemHandle ipc_handle;
static CUdeviceptr dptr;
static CUgraph graph;
static CUgraphExec graph_exec;
static CUgraphNode graph_node;
static CUstreamCaptureStatus capture_status;
static CUDA_MEM_ALLOC_NODE_PARAMS node_params;
static CUmemoryPool pool;
static CUmemPoolProps pool_props;
static cuuint64_t threshold = UINT64_MAX;
static CUarray array;
static CUmipmappedArray mipmapped;
static CUDA_ARRAY_DESCRIPTOR array_desc = {16, 16, CU_AD_FORMAT_FLOAT, 1};
static CUDA_ARRAY3D_DESCRIPTOR array3d_desc = {16, 16, 1, CU_AD_FORMAT_FLOAT, 1, 0};
static CUmemGenericAllocationHandle handle;
static int shared_fd;
static CUmulticastObjectProp mc_prop = {1, 2UL << 20, 0, 0};

DRV_CALL(cuMemHostRegister_v2, NI, host_buf, sizeof(host_buf), 0)
DRV_CALL(cuMemHostUnregister, NI, host_buf)
DRV_CALL(cuIpcGetMemHandle, NI, &ipc_handle, 0x1000)
DRV_CALL(cuIpcOpenMemHandle_v2, NI, &dptr, ipc_handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS)
DRV_CALL(cuIpcCloseMemHandle, NI, 0x1000)
DRV_CALL(cuStreamBeginCapture_v2, NI, NULL, CU_STREAM_CAPTURE_MODE_GLOBAL)
DRV_CALL(cuStreamBeginCapture_v2_ptsz, NI, NULL, CU_STREAM_CAPTURE_MODE_GLOBAL)
DRV_CALL(cuStreamEndCapture, NI, NULL, &graph)
DRV_CALL(cuStreamEndCapture_ptsz, NI, NULL, &graph)
DRV_CALL(cuStreamIsCapturing, NI, NULL, &capture_status)
DRV_CALL(cuStreamIsCapturing_ptsz, NI, NULL, &capture_status)
DRV_CALL(cuGraphAddMemAllocNode, NI, &graph_node, graph, NULL, 0, &node_params)
DRV_CALL(cuGraphAddMemFreeNode, NI, &graph_node, graph, NULL, 0, 0x1000)
DRV_CALL(cuGraphInstantiateWithFlags, NI, &graph_exec, graph, 0)
DRV_CALL(cuGraphLaunch, NI, graph_exec, NULL)
DRV_CALL(cuGraphLaunch_ptsz, NI, graph_exec, NULL)
DRV_CALL(cuGraphUpload, NI, graph_exec, NULL)
DRV_CALL(cuGraphUpload_ptsz, NI, graph_exec, NULL)
DRV_CALL(cuGraphExecDestroy, NI, graph_exec)
DRV_CALL(cuGraphDestroy, NI, graph)
DRV_CALL(cuDeviceGraphMemTrim, NI, 0)
DRV_CALL(cuMemPoolCreate, NI, &pool, &pool_props)
DRV_CALL(cuMemPoolDestroy, NI, pool)
DRV_CALL(cuMemPoolTrimTo, NI, pool, 0)
DRV_CALL(cuMemPoolSetAttribute, NI, pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &threshold)
DRV_CALL(cuDeviceSetMemPool, NI, 0, pool)
DRV_CALL(cuDeviceGetMemPool, NI, &pool, 0)
DRV_CALL(cuDeviceGetDefaultMemPool, NI, &pool, 0)
DRV_CALL(cuArrayCreate_v2, NI, &array, &array_desc)
DRV_CALL(cuArray3DCreate_v2, NI, &array, &array3d_desc)
DRV_CALL(cuMipmappedArrayCreate, NI, &mipmapped, &array3d_desc, 2)
DRV_CALL(cuArrayDestroy, CUDA_ERROR_INVALID_HANDLE, NULL)
DRV_CALL(cuMipmappedArrayDestroy, CUDA_ERROR_INVALID_HANDLE, NULL)
DRV_CALL(cuMemExportToShareableHandle, NI, &shared_fd, 1, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR,
	 0)
DRV_CALL(cuMemImportFromShareableHandle, NI, &handle, (void *)(intptr_t)3,
	 CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
DRV_CALL(cuMulticastCreate, NI, &handle, &mc_prop)
DRV_CALL(cuMulticastBindMem, NI, 1, 0, 2, 0, 2UL << 20, 0)
DRV_CALL(cuMulticastUnbind, NI, 1, 0, 0, 2UL << 20)

static void coverage(void)
{
	/* Touched first: BPF reads only pages the process has faulted in, and a struct of
	 * zeroes in .bss has none until written (a program's own arguments are written). */
	memset(&ipc_handle, 0, sizeof(ipc_handle));
	memset(&node_params, 0, sizeof(node_params));
	memset(&pool_props, 0, sizeof(pool_props));
	memset(host_buf, 0, sizeof(host_buf));
	real_cu_init();
	drv_cuMemHostRegister_v2();
	drv_cuMemHostUnregister();
	drv_cuIpcGetMemHandle();
	drv_cuIpcOpenMemHandle_v2();
	drv_cuIpcCloseMemHandle();
	drv_cuStreamBeginCapture_v2();
	drv_cuStreamBeginCapture_v2_ptsz();
	drv_cuStreamEndCapture();
	drv_cuStreamEndCapture_ptsz();
	drv_cuStreamIsCapturing();
	drv_cuStreamIsCapturing_ptsz();
	drv_cuGraphAddMemAllocNode();
	drv_cuGraphAddMemFreeNode();
	drv_cuGraphInstantiateWithFlags();
	drv_cuGraphLaunch();
	drv_cuGraphLaunch_ptsz();
	drv_cuGraphUpload();
	drv_cuGraphUpload_ptsz();
	drv_cuGraphExecDestroy();
	drv_cuGraphDestroy();
	drv_cuDeviceGraphMemTrim();
	drv_cuMemPoolCreate();
	drv_cuMemPoolDestroy();
	drv_cuMemPoolTrimTo();
	drv_cuMemPoolSetAttribute();
	drv_cuDeviceSetMemPool();
	drv_cuDeviceGetMemPool();
	drv_cuDeviceGetDefaultMemPool();
	drv_cuArrayCreate_v2();
	drv_cuArray3DCreate_v2();
	drv_cuMipmappedArrayCreate();
	drv_cuArrayDestroy();
	drv_cuMipmappedArrayDestroy();
	drv_cuMemExportToShareableHandle();
	drv_cuMemImportFromShareableHandle();
	drv_cuMulticastCreate();
	drv_cuMulticastBindMem();
	drv_cuMulticastUnbind();
}

int main(int argc, char **argv)
{
	const char *path = getenv("GPULEAK_REAL_LIBCUDA");
	const char *as_root = getenv("GPULEAK_REAL_LIBCUDA_AS_ROOT");
	bool cov = argc == 2 && !strcmp(argv[1], "coverage");
	void *h;
	int i;

	if (argc != 1 && argc != 5 && !cov) {
		fprintf(stderr, "usage: realdriver [INIT_RC ALLOC_RC CREATE_RC RETAIN_RC] | "
				"realdriver coverage\n");
		return 2;
	}
	for (i = 1; i < argc && !cov; i++)
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
	lib = h;
	scenario_ready();
	if (cov) {
		coverage();
	} else {
		real_cu_init();
		real_cu_mem_alloc();
		real_cu_mem_create();
		real_cu_mem_retain();
	}
	scenario_done();
	return 0;
}
