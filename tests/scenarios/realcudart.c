// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * realcudart [CODE]
 *
 * Linked against NVIDIA's real libcudart.so.13 (not the stand-in): gpuleak must attach to
 * code nobody here wrote. real_malloc: 3 x cudaMalloc (4096, 8192, 12288 bytes);
 * real_malloc_host: 2 x cudaMallocHost (4096, 8192); real_free: cudaFree of the first
 * cudaMalloc result (still NULL when that failed). Each return code is printed to stderr
 * as "<api> <size> -> <code>".
 * Every call must return CODE, else the exit status is 1. The default, 35
 * (cudaErrorInsufficientDriver), is what the real runtime answers for every one of these
 * calls, cudaFree(NULL) included, on a machine without an NVIDIA driver; on a machine with a
 * GPU pass 0.
 *   CODE 35: nothing is allocated; a tracer sees 6 calls, 5 of them failed allocations, and
 *            nothing live at "done".
 *   CODE 0:  live at "done": 8192 + 12288 bytes at real_malloc (device), 4096 + 8192 at
 *            real_malloc_host (pinned), 32768 in all; the 4096-byte cudaMalloc was freed.
 *
 * realcudart coverage: the calls of docs/cuda.md beyond plain allocation, one site each
 * (rt_<call>), with arguments no device could make good: without a driver every one returns
 * 35. Calls with a return probe (29): cudaIpcGetMemHandle, cudaIpcOpenMemHandle,
 * cudaHostRegister, cudaStreamBeginCapture(_ptsz), cudaStreamEndCapture(_ptsz),
 * cudaStreamIsCapturing(_ptsz), cudaGraphAddMemAllocNode, cudaGraphAddMemFreeNode,
 * cudaGraphInstantiate, cudaGraphInstantiateWithFlags, cudaGraphLaunch(_ptsz),
 * cudaGraphUpload(_ptsz), cudaGraphExecDestroy, cudaGraphDestroy, cudaDeviceGraphMemTrim,
 * cudaMemPoolCreate, cudaMemPoolDestroy, cudaMemPoolTrimTo, cudaMemPoolSetAttribute,
 * cudaDeviceSetMemPool, cudaDeviceGetMemPool, cudaDeviceGetDefaultMemPool, cudaMallocArray,
 * cudaMalloc3DArray, cudaMallocMipmappedArray: 30 failed calls. Entry-only frees (their
 * result is not seen): cudaIpcCloseMemHandle and cudaHostUnregister of pointers never
 * returned (2 unknown frees), cudaFreeArray(NULL) and cudaFreeMipmappedArray(NULL) (2 null
 * frees). Nothing live.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include "scenario.h"

static long want_rc = cudaErrorInsufficientDriver;

static void check(const char *api, size_t size, cudaError_t rc)
{
	fprintf(stderr, "%s %zu -> %d\n", api, size, (int)rc);
	if ((long)rc != want_rc) {
		fprintf(stderr, "realcudart: %s returned %d, expected %ld\n", api, (int)rc,
			want_rc);
		exit(1);
	}
}

static SCENARIO_SITE void real_malloc(void **bufs)
{
	int i;

	for (i = 0; i < 3; i++) {
		size_t size;

		SCENARIO_OPAQUE(i);
		size = 4096 * (i + 1);
		check("cudaMalloc", size, cudaMalloc(&bufs[i], size));
	}
}

static SCENARIO_SITE void real_malloc_host(void **bufs)
{
	int i;

	for (i = 0; i < 2; i++) {
		size_t size;

		SCENARIO_OPAQUE(i);
		size = 4096 * (i + 1);
		check("cudaMallocHost", size, cudaMallocHost(&bufs[i], size));
	}
}

static SCENARIO_SITE void real_free(void *p)
{
	check("cudaFree", 0, cudaFree(p));
}

extern __typeof__(cudaStreamBeginCapture) cudaStreamBeginCapture_ptsz;
extern __typeof__(cudaStreamEndCapture) cudaStreamEndCapture_ptsz;
extern __typeof__(cudaStreamIsCapturing) cudaStreamIsCapturing_ptsz;
extern __typeof__(cudaGraphLaunch) cudaGraphLaunch_ptsz;
extern __typeof__(cudaGraphUpload) cudaGraphUpload_ptsz;

/* One site per call: each a function of its own, named after it. */
#define RT_CALL(fn, ...)                                                                           \
	static SCENARIO_SITE void rt_##fn(void)                                                    \
	{                                                                                          \
		check(#fn, 0, fn(__VA_ARGS__));                                                    \
	}

static cudaIpcMemHandle_t ipc_handle;
static void *out_ptr;
static char host_buf[4096];
static enum cudaStreamCaptureStatus capture_status;
static cudaGraph_t graph;
static cudaGraphExec_t graph_exec;
static cudaGraphNode_t graph_node;
static struct cudaMemAllocNodeParams node_params;
static cudaMemPool_t pool;
static struct cudaMemPoolProps pool_props;
static uint64_t threshold = UINT64_MAX;
static cudaArray_t array;
static cudaMipmappedArray_t mipmapped;
static struct cudaChannelFormatDesc channel = {32, 0, 0, 0, cudaChannelFormatKindFloat};
static struct cudaExtent extent = {16, 16, 1};

RT_CALL(cudaIpcGetMemHandle, &ipc_handle, (void *)0x1000)
RT_CALL(cudaIpcOpenMemHandle, &out_ptr, ipc_handle, cudaIpcMemLazyEnablePeerAccess)
RT_CALL(cudaIpcCloseMemHandle, (void *)0x1000)
RT_CALL(cudaHostRegister, host_buf, sizeof(host_buf), cudaHostRegisterDefault)
RT_CALL(cudaHostUnregister, host_buf)
RT_CALL(cudaStreamBeginCapture, (cudaStream_t)0, cudaStreamCaptureModeGlobal)
RT_CALL(cudaStreamBeginCapture_ptsz, (cudaStream_t)0, cudaStreamCaptureModeGlobal)
RT_CALL(cudaStreamEndCapture, (cudaStream_t)0, &graph)
RT_CALL(cudaStreamEndCapture_ptsz, (cudaStream_t)0, &graph)
RT_CALL(cudaStreamIsCapturing, (cudaStream_t)0, &capture_status)
RT_CALL(cudaStreamIsCapturing_ptsz, (cudaStream_t)0, &capture_status)
RT_CALL(cudaGraphAddMemAllocNode, &graph_node, graph, NULL, 0, &node_params)
RT_CALL(cudaGraphAddMemFreeNode, &graph_node, graph, NULL, 0, (void *)0x1000)
RT_CALL(cudaGraphInstantiate, &graph_exec, graph, 0)
RT_CALL(cudaGraphInstantiateWithFlags, &graph_exec, graph, 0)
RT_CALL(cudaGraphLaunch, graph_exec, (cudaStream_t)0)
RT_CALL(cudaGraphLaunch_ptsz, graph_exec, (cudaStream_t)0)
RT_CALL(cudaGraphUpload, graph_exec, (cudaStream_t)0)
RT_CALL(cudaGraphUpload_ptsz, graph_exec, (cudaStream_t)0)
RT_CALL(cudaGraphExecDestroy, graph_exec)
RT_CALL(cudaGraphDestroy, graph)
RT_CALL(cudaDeviceGraphMemTrim, 0)
RT_CALL(cudaMemPoolCreate, &pool, &pool_props)
RT_CALL(cudaMemPoolDestroy, pool)
RT_CALL(cudaMemPoolTrimTo, pool, 0)
RT_CALL(cudaMemPoolSetAttribute, pool, cudaMemPoolAttrReleaseThreshold, &threshold)
RT_CALL(cudaDeviceSetMemPool, 0, pool)
RT_CALL(cudaDeviceGetMemPool, &pool, 0)
RT_CALL(cudaDeviceGetDefaultMemPool, &pool, 0)
RT_CALL(cudaMallocArray, &array, &channel, 16, 16, 0)
RT_CALL(cudaMalloc3DArray, &array, &channel, extent, 0)
RT_CALL(cudaMallocMipmappedArray, &mipmapped, &channel, extent, 2, 0)
RT_CALL(cudaFreeArray, NULL)
RT_CALL(cudaFreeMipmappedArray, NULL)

static void coverage(void)
{
	/* Touched first: BPF reads only pages the process has faulted in, and a struct of
	 * zeroes in .bss has none until written (a program's own arguments are written). */
	memset(&ipc_handle, 0, sizeof(ipc_handle));
	memset(&node_params, 0, sizeof(node_params));
	memset(&pool_props, 0, sizeof(pool_props));
	memset(host_buf, 0, sizeof(host_buf));
	scenario_ready();
	rt_cudaIpcGetMemHandle();
	rt_cudaIpcOpenMemHandle();
	rt_cudaIpcCloseMemHandle();
	rt_cudaHostRegister();
	rt_cudaHostUnregister();
	rt_cudaStreamBeginCapture();
	rt_cudaStreamBeginCapture_ptsz();
	rt_cudaStreamEndCapture();
	rt_cudaStreamEndCapture_ptsz();
	rt_cudaStreamIsCapturing();
	rt_cudaStreamIsCapturing_ptsz();
	rt_cudaGraphAddMemAllocNode();
	rt_cudaGraphAddMemFreeNode();
	rt_cudaGraphInstantiate();
	rt_cudaGraphInstantiateWithFlags();
	rt_cudaGraphLaunch();
	rt_cudaGraphLaunch_ptsz();
	rt_cudaGraphUpload();
	rt_cudaGraphUpload_ptsz();
	rt_cudaGraphExecDestroy();
	rt_cudaGraphDestroy();
	rt_cudaDeviceGraphMemTrim();
	rt_cudaMemPoolCreate();
	rt_cudaMemPoolDestroy();
	rt_cudaMemPoolTrimTo();
	rt_cudaMemPoolSetAttribute();
	rt_cudaDeviceSetMemPool();
	rt_cudaDeviceGetMemPool();
	rt_cudaDeviceGetDefaultMemPool();
	rt_cudaMallocArray();
	rt_cudaMalloc3DArray();
	rt_cudaMallocMipmappedArray();
	rt_cudaFreeArray();
	rt_cudaFreeMipmappedArray();
	scenario_done();
}

int main(int argc, char **argv)
{
	void *dev[3] = {NULL, NULL, NULL};
	void *host[2] = {NULL, NULL};

	if (argc == 2 && !strcmp(argv[1], "coverage")) {
		coverage();
		return 0;
	}
	if (argc > 2) {
		fprintf(stderr, "usage: realcudart [CODE] | realcudart coverage\n");
		return 2;
	}
	if (argc == 2)
		want_rc = (long)scenario_bytes(argv[1], "CODE");
	scenario_ready();
	real_malloc(dev);
	real_malloc_host(host);
	real_free(dev[0]);
	scenario_done();
	return 0;
}
