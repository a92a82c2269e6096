// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The probe catalog. Argument positions are 1-based and follow the real prototypes in
 * /usr/local/cuda/include (cuda_runtime_api.h); the tests compile the stand-in runtime
 * against those headers, so a wrong position here shows up as wrong bytes there.
 */
#include <stdio.h>
#include <string.h>
#include "probe/catalog.h"
#include "probe/wgpu_abi.h"

#define SPEC(sh, a, s, x, x2, m, fl, ...)                                                          \
	{                                                                                          \
		.shape = (sh), .arg_addr = (a), .arg_size = (s), .arg_aux = (x), .arg_aux2 = (x2), \
		.arg_mul = (m), .flags = (fl), ##__VA_ARGS__                                       \
	}
/* int f(void **out, size_t size, aux...) */
#define OUTPTR(a, s, x, x2)   SPEC(GL_SHAPE_ALLOC_OUTPTR, a, s, x, x2, 0, 0)
#define FREE(a)		      SPEC(GL_SHAPE_FREE, a, 0, 0, 0, 0, 0)
#define FREE_ASYNC(a, stream) SPEC(GL_SHAPE_FREE_ASYNC, a, 0, stream, 0, 0, 0)
#define SYNC(x)		      SPEC(GL_SHAPE_SYNC, 0, 0, x, 0, 0, 0)
#define CALL(a, x)	      SPEC(GL_SHAPE_CALL, a, 0, x, 0, 0, 0)
/* The same shapes for a call that may hand its work to threads it makes and joins */
#define OUTPTR_ADOPT(a, s, x, x2)                                                                  \
	SPEC(GL_SHAPE_ALLOC_OUTPTR, a, s, x, x2, 0, 0, .flags2 = GL_SPEC2_ADOPT_THREADS)
#define CALL_ADOPT(a, x) SPEC(GL_SHAPE_CALL, a, 0, x, 0, 0, 0, .flags2 = GL_SPEC2_ADOPT_THREADS)
/*
 * int f(..., T *out, ...): a query, not an allocation: the len bytes it wrote through arg a
 * are copied at return (only when it returned 0), arg x in aux. No stack is walked, as for
 * any call: a program may ask it often (cudaStreamIsCapturing).
 */
#define RETURNS(a, x, len)                                                                         \
	SPEC(GL_SHAPE_CALL, a, 0, x, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = (a),                \
	     .desc_len = (len))
/* f(args...): entry only, arg a in the record's addr */
#define NOTIFY(a) SPEC(GL_SHAPE_NOTIFY, a, 0, 0, 0, 0, 0)
/*
 * A call that copies dlen bytes of struct argument ad (from offset doff) at entry, and reads
 * a label at loff of the copy (lk) or a code pointer at coff (fl has GL_SPEC_CODE_PTR).
 */
#define DSPEC(sh, a, x, x2, fl, ad, doff, dlen, lk, loff, coff)                                    \
	{                                                                                          \
		.shape = (sh), .arg_addr = (a), .arg_aux = (x), .arg_aux2 = (x2), .flags = (fl),   \
		.arg_desc = (ad), .desc_off = (doff), .desc_len = (dlen), .label_kind = (lk),      \
		.label_off = (loff), .code_off = (coff)                                            \
	}
/*
 * WGPUObject wgpuDeviceCreateX(WGPUDevice device, const WGPUXDescriptor *desc). The returned
 * object's first 16 bytes come with the record: Dawn's objects are C++ objects (the handle is
 * the object pointer), their vtable pointer and reference count tell an error object from a
 * real one where no MakeError symbol does (tracker/wgpu_objects.c).
 */
#define WCREATE(dlen, lk)                                                                          \
	{                                                                                          \
		.shape = GL_SHAPE_ALLOC_RET, .arg_aux = 1, .arg_desc = 2, .desc_len = (dlen),      \
		.label_kind = (lk), .label_off = 8, .flags2 = GL_SPEC2_PEEK_RET,                   \
		.peek_len = GL_PEEK_MAX                                                            \
	}
/* void wgpuXSetLabel(WGPUX x, WGPUStringView label): data, length in two registers */
#define SETLABEL_SV DSPEC(GL_SHAPE_NOTIFY, 1, 2, 3, 0, 0, 0, 0, GL_LABEL_ARGS_SV, 0, 0)
/* void wgpuXSetLabel(WGPUX x, char const *label) */
#define SETLABEL_CSTR DSPEC(GL_SHAPE_NOTIFY, 1, 2, 0, 0, 0, 0, 0, GL_LABEL_ARGS_CSTR, 0, 0)
/* API(name, id, spec, op, mem, flags [, .space = ..., ...more designated fields]) */
#define API(n, id, sp, o, m, fl, ...)                                                              \
	{                                                                                          \
		.name = (n), .api = (id), .spec = sp, .op = (o), .mem = (m), .flags = (fl),        \
		##__VA_ARGS__                                                                      \
	}

/* PyTorch's own libraries: never the site of a tensor (CAT_SITE_OUTSIDE). */
static const char *const torch_libs[] = {"libc10.so*", "libc10_cuda.so*", "libtorch*.so*", NULL};

/* The fields of a USDT probe of PyTorch's allocator (its API's name is provider:name). */
#define TORCH_USDT(prov, nm, what)                                                                 \
	.space = SPACE_BLOCK, .usdt_provider = prov, .usdt_name = nm, .args = what,                \
	.site_skip = torch_libs
/*
 * c10::reportMemoryUsageToProfiler(void *ptr, int64_t alloc_size, size_t total_allocated,
 * size_t total_reserved, c10::Device device): +block bytes at an allocation, -bytes at a free.
 * c10::Device is {int8 type, int8 index}, passed by value in one register (the 5th).
 */
#define TORCH_HOOK_SPEC SPEC(GL_SHAPE_ALLOC_DONE, 1, 2, 3, 5, 0, 0, .flags2 = GL_SPEC2_SIGNED_SIZE)
#define TORCH_HOOK                                                                                 \
	.space = SPACE_BLOCK, .display = "c10::reportMemoryUsageToProfiler", .site_skip = torch_libs

const struct cat_api cat_apis[] = {
    /* CUDA runtime (libcudart.so.*, or linked statically into an executable) */
    API("cudaMalloc", GL_API_CUDA_MALLOC, OUTPTR(1, 2, 0, 0), OP_ALLOC, MEM_DEVICE, 0),
    API("cudaMallocManaged", GL_API_CUDA_MALLOC_MANAGED, OUTPTR(1, 2, 3, 0), OP_ALLOC, MEM_MANAGED,
	0),
    API("cudaMallocHost", GL_API_CUDA_MALLOC_HOST, OUTPTR(1, 2, 0, 0), OP_ALLOC, MEM_HOST_PINNED,
	0),
    API("cudaHostAlloc", GL_API_CUDA_HOST_ALLOC, OUTPTR(1, 2, 3, 0), OP_ALLOC, MEM_HOST_PINNED, 0),
    /* cudaMallocPitch(void **p, size_t *pitch, size_t width, size_t height): pitch x height */
    API("cudaMallocPitch", GL_API_CUDA_MALLOC_PITCH,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 2, 3, 0, 4, GL_SPEC_SIZE_BY_PTR), OP_ALLOC, MEM_DEVICE, 0),
    API("cudaMallocAsync", GL_API_CUDA_MALLOC_ASYNC, OUTPTR(1, 2, 3, 0), OP_ALLOC, MEM_DEVICE,
	CAT_STREAM_POOL),
    API("cudaMallocAsync_ptsz", GL_API_CUDA_MALLOC_ASYNC_PTSZ, OUTPTR(1, 2, 3, 0), OP_ALLOC,
	MEM_DEVICE, CAT_STREAM_POOL | CAT_PTSZ),
    /* cudaMallocFromPoolAsync(void **p, size_t size, cudaMemPool_t pool, cudaStream_t s) */
    API("cudaMallocFromPoolAsync", GL_API_CUDA_MALLOC_FROM_POOL_ASYNC, OUTPTR(1, 2, 4, 3), OP_ALLOC,
	MEM_DEVICE, CAT_STREAM_POOL),
    API("cudaMallocFromPoolAsync_ptsz", GL_API_CUDA_MALLOC_FROM_POOL_ASYNC_PTSZ, OUTPTR(1, 2, 4, 3),
	OP_ALLOC, MEM_DEVICE, CAT_STREAM_POOL | CAT_PTSZ),
    API("cudaFree", GL_API_CUDA_FREE, FREE(1), OP_FREE, MEM_DEVICE, 0),
    API("cudaFreeHost", GL_API_CUDA_FREE_HOST, FREE(1), OP_FREE, MEM_HOST_PINNED, 0),
    API("cudaFreeAsync", GL_API_CUDA_FREE_ASYNC, FREE_ASYNC(1, 2), OP_FREE_ASYNC, MEM_DEVICE, 0),
    API("cudaFreeAsync_ptsz", GL_API_CUDA_FREE_ASYNC_PTSZ, FREE_ASYNC(1, 2), OP_FREE_ASYNC,
	MEM_DEVICE, CAT_PTSZ),
    API("cudaStreamSynchronize", GL_API_CUDA_STREAM_SYNCHRONIZE, SYNC(1), OP_SYNC_STREAM, MEM_NONE,
	0),
    API("cudaStreamSynchronize_ptsz", GL_API_CUDA_STREAM_SYNCHRONIZE_PTSZ, SYNC(1), OP_SYNC_STREAM,
	MEM_NONE, CAT_PTSZ),
    API("cudaDeviceSynchronize", GL_API_CUDA_DEVICE_SYNCHRONIZE, SYNC(0), OP_SYNC_DEVICE, MEM_NONE,
	0),
    API("cudaEventSynchronize", GL_API_CUDA_EVENT_SYNCHRONIZE, SYNC(1), OP_SYNC_EVENT, MEM_NONE, 0),
    /* cudaEventRecord(cudaEvent_t event, cudaStream_t stream): needed to know what an
     * event sync completes */
    API("cudaEventRecord", GL_API_CUDA_EVENT_RECORD, CALL(1, 2), OP_EVENT_RECORD, MEM_NONE,
	CAT_OPTIONAL),
    API("cudaEventRecord_ptsz", GL_API_CUDA_EVENT_RECORD_PTSZ, CALL(1, 2), OP_EVENT_RECORD,
	MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cudaEventRecordWithFlags", GL_API_CUDA_EVENT_RECORD_WITH_FLAGS, CALL(1, 2),
	OP_EVENT_RECORD, MEM_NONE, CAT_OPTIONAL),
    API("cudaEventRecordWithFlags_ptsz", GL_API_CUDA_EVENT_RECORD_WITH_FLAGS_PTSZ, CALL(1, 2),
	OP_EVENT_RECORD, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cudaSetDevice", GL_API_CUDA_SET_DEVICE, CALL(0, 1), OP_SET_DEVICE, MEM_NONE, CAT_OPTIONAL),
    API("cudaDeviceReset", GL_API_CUDA_DEVICE_RESET, CALL(0, 0), OP_DEVICE_RESET, MEM_NONE,
	CAT_OPTIONAL),

    /*
     * IPC: an opened handle maps another process's allocation here (SPACE_IPC, not this
     * process's bytes) until it is closed; opening it again adds a reference. The handle is
     * a 64-byte struct, copied when it is made (at return) and when it is opened (passed
     * by value: on x86-64 on the stack, the flags after it in %rsi).
     */
    API("cudaIpcGetMemHandle", GL_API_CUDA_IPC_GET_MEM_HANDLE,
	SPEC(GL_SHAPE_CALL, 1, 0, 2, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 1, .desc_len = 64),
	OP_IPC_EXPORT, MEM_NONE, CAT_OPTIONAL),
    API("cudaIpcOpenMemHandle", GL_API_CUDA_IPC_OPEN_MEM_HANDLE,
	DSPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 3, 0, GL_SPEC_DESC_BYVAL, 2, 0, 64, GL_LABEL_NONE, 0, 0),
	OP_ALLOC, MEM_IPC, 0, .space = SPACE_IPC),
    API("cudaIpcCloseMemHandle", GL_API_CUDA_IPC_CLOSE_MEM_HANDLE, FREE(1), OP_FREE, MEM_IPC, 0,
	.space = SPACE_IPC),
    /* cudaHostRegister(void *ptr, size_t size, unsigned flags): pins memory the caller has */
    API("cudaHostRegister", GL_API_CUDA_HOST_REGISTER,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 2, 3, 0, 0, 0, .flags2 = GL_SPEC2_ADDR_ARG), OP_ALLOC,
	MEM_HOST_REGISTERED, 0, .space = SPACE_HOST_REG),
    API("cudaHostUnregister", GL_API_CUDA_HOST_UNREGISTER, FREE(1), OP_FREE, MEM_HOST_REGISTERED, 0,
	.space = SPACE_HOST_REG),
    /*
     * Stream capture: a stream-ordered allocation on a capturing stream allocates nothing,
     * it becomes a memory node of the graph being captured (tracker/graphs.c).
     * cudaStreamBeginCapture(stream, mode), cudaStreamEndCapture(stream, cudaGraph_t *g):
     * the graph read at return, cudaStreamIsCapturing(stream, enum cudaStreamCaptureStatus
     * *s): the status read at return
     */
    API("cudaStreamBeginCapture", GL_API_CUDA_STREAM_BEGIN_CAPTURE,
	SPEC(GL_SHAPE_CALL, 0, 0, 1, 2, 0, 0), OP_CAPTURE_BEGIN, MEM_NONE, CAT_OPTIONAL),
    API("cudaStreamBeginCapture_ptsz", GL_API_CUDA_STREAM_BEGIN_CAPTURE_PTSZ,
	SPEC(GL_SHAPE_CALL, 0, 0, 1, 2, 0, 0), OP_CAPTURE_BEGIN, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cudaStreamEndCapture", GL_API_CUDA_STREAM_END_CAPTURE, RETURNS(2, 1, 8), OP_CAPTURE_END,
	MEM_NONE, CAT_OPTIONAL),
    API("cudaStreamEndCapture_ptsz", GL_API_CUDA_STREAM_END_CAPTURE_PTSZ, RETURNS(2, 1, 8),
	OP_CAPTURE_END, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cudaStreamIsCapturing", GL_API_CUDA_STREAM_IS_CAPTURING, RETURNS(2, 1, 4),
	OP_CAPTURE_STATUS, MEM_NONE, CAT_OPTIONAL),
    API("cudaStreamIsCapturing_ptsz", GL_API_CUDA_STREAM_IS_CAPTURING_PTSZ, RETURNS(2, 1, 4),
	OP_CAPTURE_STATUS, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    /*
     * cudaGraphAddMemAllocNode(node *n, graph g, deps, ndeps, struct cudaMemAllocNodeParams
     * *p): p->bytesize @104 and p->dptr @112 (written by the call), read at return.
     * cudaGraphAddMemFreeNode(node *n, graph g, deps, ndeps, void *dptr)
     */
    API("cudaGraphAddMemAllocNode", GL_API_CUDA_GRAPH_ADD_MEM_ALLOC_NODE,
	SPEC(GL_SHAPE_CALL, 5, 0, 2, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 5, .desc_off = 104,
	     .desc_len = 16),
	OP_GRAPH_ALLOC_NODE, MEM_DEVICE, CAT_OPTIONAL),
    API("cudaGraphAddMemFreeNode", GL_API_CUDA_GRAPH_ADD_MEM_FREE_NODE,
	SPEC(GL_SHAPE_CALL, 5, 0, 2, 0, 0, 0), OP_GRAPH_FREE_NODE, MEM_NONE, CAT_OPTIONAL),
    /* cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags) */
    API("cudaGraphInstantiate", GL_API_CUDA_GRAPH_INSTANTIATE, OUTPTR(1, 0, 2, 3),
	OP_GRAPH_INSTANTIATE, MEM_NONE, CAT_OPTIONAL),
    API("cudaGraphInstantiateWithFlags", GL_API_CUDA_GRAPH_INSTANTIATE_WITH_FLAGS,
	OUTPTR(1, 0, 2, 3), OP_GRAPH_INSTANTIATE, MEM_NONE, CAT_OPTIONAL),
    /* cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t s), cudaGraphUpload the same */
    API("cudaGraphLaunch", GL_API_CUDA_GRAPH_LAUNCH, CALL(1, 2), OP_GRAPH_LAUNCH, MEM_NONE,
	CAT_OPTIONAL),
    API("cudaGraphLaunch_ptsz", GL_API_CUDA_GRAPH_LAUNCH_PTSZ, CALL(1, 2), OP_GRAPH_LAUNCH,
	MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cudaGraphUpload", GL_API_CUDA_GRAPH_UPLOAD, CALL(1, 2), OP_GRAPH_UPLOAD, MEM_NONE,
	CAT_OPTIONAL),
    API("cudaGraphUpload_ptsz", GL_API_CUDA_GRAPH_UPLOAD_PTSZ, CALL(1, 2), OP_GRAPH_UPLOAD,
	MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cudaGraphExecDestroy", GL_API_CUDA_GRAPH_EXEC_DESTROY, CALL(1, 0), OP_GRAPH_EXEC_DESTROY,
	MEM_NONE, CAT_OPTIONAL),
    API("cudaGraphDestroy", GL_API_CUDA_GRAPH_DESTROY, CALL(1, 0), OP_GRAPH_DESTROY, MEM_NONE,
	CAT_OPTIONAL),
    API("cudaDeviceGraphMemTrim", GL_API_CUDA_DEVICE_GRAPH_MEM_TRIM, CALL(0, 1), OP_GRAPH_MEM_TRIM,
	MEM_NONE, CAT_OPTIONAL),
    /*
     * Stream-ordered pools (tracker/pools.c). cudaMemPoolCreate(pool *p, const struct
     * cudaMemPoolProps *props): location.id @12 is the device.
     * cudaMemPoolSetAttribute(pool, attr, void *value): *value copied at entry.
     * cudaDeviceSetMemPool(int device, pool), cudaDeviceGet(Default)MemPool(pool *p, int dev)
     */
    API("cudaMemPoolCreate", GL_API_CUDA_MEM_POOL_CREATE,
	DSPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 0, 0, 2, 0, 16, GL_LABEL_NONE, 0, 0), OP_POOL_CREATE,
	MEM_NONE, CAT_OPTIONAL),
    API("cudaMemPoolDestroy", GL_API_CUDA_MEM_POOL_DESTROY, CALL(1, 0), OP_POOL_DESTROY, MEM_NONE,
	CAT_OPTIONAL),
    API("cudaMemPoolTrimTo", GL_API_CUDA_MEM_POOL_TRIM_TO, SPEC(GL_SHAPE_CALL, 1, 2, 0, 0, 0, 0),
	OP_POOL_TRIM, MEM_NONE, CAT_OPTIONAL),
    API("cudaMemPoolSetAttribute", GL_API_CUDA_MEM_POOL_SET_ATTRIBUTE,
	DSPEC(GL_SHAPE_CALL, 1, 2, 0, 0, 3, 0, 8, GL_LABEL_NONE, 0, 0), OP_POOL_SET_ATTR, MEM_NONE,
	CAT_OPTIONAL),
    API("cudaDeviceSetMemPool", GL_API_CUDA_DEVICE_SET_MEM_POOL, CALL(2, 1), OP_POOL_SET_CURRENT,
	MEM_NONE, CAT_OPTIONAL),
    API("cudaDeviceGetMemPool", GL_API_CUDA_DEVICE_GET_MEM_POOL, RETURNS(1, 2, 8), OP_POOL_GET,
	MEM_NONE, CAT_OPTIONAL),
    API("cudaDeviceGetDefaultMemPool", GL_API_CUDA_DEVICE_GET_DEFAULT_MEM_POOL, RETURNS(1, 2, 8),
	OP_POOL_GET_DEFAULT, MEM_NONE, CAT_OPTIONAL),
    /*
     * Arrays: bytes from the channel format (struct cudaChannelFormatDesc, 20 bytes) and the
     * extent (probe/cuda_desc.c). cudaMallocArray(a *, const desc *, width, height, flags);
     * cudaMalloc3DArray(a *, const desc *, struct cudaExtent extent, flags) and
     * cudaMallocMipmappedArray(m *, const desc *, extent, numLevels, flags): the extent (24
     * bytes, by value) first, the channel format after it. Width and height of a 2D array
     * go in aux and aux2, not in the size: they are no bytes.
     */
    API("cudaMallocArray", GL_API_CUDA_MALLOC_ARRAY,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 3, 4, 0, 0, .arg_desc = 2, .desc_len = 20), OP_ALLOC,
	MEM_DEVICE, CAT_DESC_SIZE, .space = SPACE_ARRAY),
    API("cudaMalloc3DArray", GL_API_CUDA_MALLOC_3D_ARRAY,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 4, 0, 0, GL_SPEC_DESC_BYVAL, .arg_desc = 3,
	     .desc_len = 24, .arg_desc2 = 2, .desc2_len = 20),
	OP_ALLOC, MEM_DEVICE, CAT_DESC_SIZE, .space = SPACE_ARRAY),
    API("cudaMallocMipmappedArray", GL_API_CUDA_MALLOC_MIPMAPPED_ARRAY,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 4, 5, 0, GL_SPEC_DESC_BYVAL, .arg_desc = 3,
	     .desc_len = 24, .arg_desc2 = 2, .desc2_len = 20),
	OP_ALLOC, MEM_DEVICE, CAT_DESC_SIZE, .space = SPACE_ARRAY),
    API("cudaFreeArray", GL_API_CUDA_FREE_ARRAY, FREE(1), OP_FREE, MEM_DEVICE, 0,
	.space = SPACE_ARRAY),
    API("cudaFreeMipmappedArray", GL_API_CUDA_FREE_MIPMAPPED_ARRAY, FREE(1), OP_FREE, MEM_DEVICE, 0,
	.space = SPACE_ARRAY),

    /* CUDA driver (libcuda.so.1). The runtime calls these underneath: a cudaMalloc shows
     * up as one allocation with a cuMemAlloc_v2 layer. */
    API("cuMemAlloc_v2", GL_API_CU_MEM_ALLOC, OUTPTR(1, 2, 0, 0), OP_ALLOC, MEM_DEVICE, 0),
    API("cuMemAllocManaged", GL_API_CU_MEM_ALLOC_MANAGED, OUTPTR(1, 2, 3, 0), OP_ALLOC, MEM_MANAGED,
	0),
    /* cuMemAllocPitch_v2(CUdeviceptr *p, size_t *pitch, size_t width, size_t height, ...) */
    API("cuMemAllocPitch_v2", GL_API_CU_MEM_ALLOC_PITCH,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 2, 3, 0, 4, GL_SPEC_SIZE_BY_PTR), OP_ALLOC, MEM_DEVICE, 0),
    API("cuMemAllocHost_v2", GL_API_CU_MEM_ALLOC_HOST, OUTPTR(1, 2, 0, 0), OP_ALLOC,
	MEM_HOST_PINNED, 0),
    API("cuMemHostAlloc", GL_API_CU_MEM_HOST_ALLOC, OUTPTR(1, 2, 3, 0), OP_ALLOC, MEM_HOST_PINNED,
	0),
    API("cuMemAllocAsync", GL_API_CU_MEM_ALLOC_ASYNC, OUTPTR(1, 2, 3, 0), OP_ALLOC, MEM_DEVICE,
	CAT_STREAM_POOL),
    API("cuMemAllocAsync_ptsz", GL_API_CU_MEM_ALLOC_ASYNC_PTSZ, OUTPTR(1, 2, 3, 0), OP_ALLOC,
	MEM_DEVICE, CAT_STREAM_POOL | CAT_PTSZ),
    API("cuMemAllocFromPoolAsync", GL_API_CU_MEM_ALLOC_FROM_POOL_ASYNC, OUTPTR(1, 2, 4, 3),
	OP_ALLOC, MEM_DEVICE, CAT_STREAM_POOL),
    API("cuMemAllocFromPoolAsync_ptsz", GL_API_CU_MEM_ALLOC_FROM_POOL_ASYNC_PTSZ,
	OUTPTR(1, 2, 4, 3), OP_ALLOC, MEM_DEVICE, CAT_STREAM_POOL | CAT_PTSZ),
    API("cuMemFree_v2", GL_API_CU_MEM_FREE, FREE(1), OP_FREE, MEM_DEVICE, 0),
    API("cuMemFreeHost", GL_API_CU_MEM_FREE_HOST, FREE(1), OP_FREE, MEM_HOST_PINNED, 0),
    API("cuMemFreeAsync", GL_API_CU_MEM_FREE_ASYNC, FREE_ASYNC(1, 2), OP_FREE_ASYNC, MEM_DEVICE, 0),
    API("cuMemFreeAsync_ptsz", GL_API_CU_MEM_FREE_ASYNC_PTSZ, FREE_ASYNC(1, 2), OP_FREE_ASYNC,
	MEM_DEVICE, CAT_PTSZ),
    API("cuStreamSynchronize", GL_API_CU_STREAM_SYNCHRONIZE, SYNC(1), OP_SYNC_STREAM, MEM_NONE, 0),
    API("cuStreamSynchronize_ptsz", GL_API_CU_STREAM_SYNCHRONIZE_PTSZ, SYNC(1), OP_SYNC_STREAM,
	MEM_NONE, CAT_PTSZ),
    API("cuCtxSynchronize", GL_API_CU_CTX_SYNCHRONIZE, SYNC(0), OP_SYNC_DEVICE, MEM_NONE, 0),
    API("cuEventSynchronize", GL_API_CU_EVENT_SYNCHRONIZE, SYNC(1), OP_SYNC_EVENT, MEM_NONE, 0),
    API("cuEventRecord", GL_API_CU_EVENT_RECORD, CALL(1, 2), OP_EVENT_RECORD, MEM_NONE,
	CAT_OPTIONAL),
    API("cuEventRecord_ptsz", GL_API_CU_EVENT_RECORD_PTSZ, CALL(1, 2), OP_EVENT_RECORD, MEM_NONE,
	CAT_PTSZ | CAT_OPTIONAL),
    /* cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *p, unsigned flags, CUdevice dev) */
    API("cuCtxCreate_v4", GL_API_CU_CTX_CREATE, OUTPTR(1, 0, 4, 0), OP_CTX_CREATE, MEM_NONE,
	CAT_OPTIONAL),
    API("cuCtxDestroy_v2", GL_API_CU_CTX_DESTROY, CALL(1, 0), OP_CTX_DESTROY, MEM_NONE,
	CAT_OPTIONAL),
    API("cuCtxSetCurrent", GL_API_CU_CTX_SET_CURRENT, CALL(1, 0), OP_CTX_SET, MEM_NONE,
	CAT_OPTIONAL),
    API("cuCtxPushCurrent_v2", GL_API_CU_CTX_PUSH_CURRENT, CALL(1, 0), OP_CTX_SET, MEM_NONE,
	CAT_OPTIONAL),
    /* cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev) */
    API("cuDevicePrimaryCtxRetain", GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN, OUTPTR(1, 0, 2, 0),
	OP_CTX_RETAIN, MEM_NONE, CAT_OPTIONAL),
    API("cuDevicePrimaryCtxRelease_v2", GL_API_CU_DEVICE_PRIMARY_CTX_RELEASE, CALL(0, 1),
	OP_PRIMARY_RELEASE, MEM_NONE, CAT_OPTIONAL),
    API("cuDevicePrimaryCtxReset_v2", GL_API_CU_DEVICE_PRIMARY_CTX_RESET, CALL(0, 1),
	OP_PRIMARY_RESET, MEM_NONE, CAT_OPTIONAL),

    /* cuCtxCreate_v2(CUcontext *pctx, unsigned flags, CUdevice dev) */
    API("cuCtxCreate_v2", GL_API_CU_CTX_CREATE_V2, OUTPTR(1, 0, 3, 0), OP_CTX_CREATE, MEM_NONE,
	CAT_OPTIONAL),
    /* The driver forms of the runtime's IPC, registration, capture, graph, pool and array
     * calls above: same arguments, same meaning. */
    API("cuMemHostRegister_v2", GL_API_CU_MEM_HOST_REGISTER,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 2, 3, 0, 0, 0, .flags2 = GL_SPEC2_ADDR_ARG), OP_ALLOC,
	MEM_HOST_REGISTERED, 0, .space = SPACE_HOST_REG),
    API("cuMemHostUnregister", GL_API_CU_MEM_HOST_UNREGISTER, FREE(1), OP_FREE, MEM_HOST_REGISTERED,
	0, .space = SPACE_HOST_REG),
    API("cuIpcGetMemHandle", GL_API_CU_IPC_GET_MEM_HANDLE,
	SPEC(GL_SHAPE_CALL, 1, 0, 2, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 1, .desc_len = 64),
	OP_IPC_EXPORT, MEM_NONE, CAT_OPTIONAL),
    API("cuIpcOpenMemHandle_v2", GL_API_CU_IPC_OPEN_MEM_HANDLE,
	DSPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 3, 0, GL_SPEC_DESC_BYVAL, 2, 0, 64, GL_LABEL_NONE, 0, 0),
	OP_ALLOC, MEM_IPC, 0, .space = SPACE_IPC),
    API("cuIpcCloseMemHandle", GL_API_CU_IPC_CLOSE_MEM_HANDLE, FREE(1), OP_FREE, MEM_IPC, 0,
	.space = SPACE_IPC),
    API("cuStreamBeginCapture_v2", GL_API_CU_STREAM_BEGIN_CAPTURE,
	SPEC(GL_SHAPE_CALL, 0, 0, 1, 2, 0, 0), OP_CAPTURE_BEGIN, MEM_NONE, CAT_OPTIONAL),
    API("cuStreamBeginCapture_v2_ptsz", GL_API_CU_STREAM_BEGIN_CAPTURE_PTSZ,
	SPEC(GL_SHAPE_CALL, 0, 0, 1, 2, 0, 0), OP_CAPTURE_BEGIN, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cuStreamEndCapture", GL_API_CU_STREAM_END_CAPTURE, RETURNS(2, 1, 8), OP_CAPTURE_END,
	MEM_NONE, CAT_OPTIONAL),
    API("cuStreamEndCapture_ptsz", GL_API_CU_STREAM_END_CAPTURE_PTSZ, RETURNS(2, 1, 8),
	OP_CAPTURE_END, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    API("cuStreamIsCapturing", GL_API_CU_STREAM_IS_CAPTURING, RETURNS(2, 1, 4), OP_CAPTURE_STATUS,
	MEM_NONE, CAT_OPTIONAL),
    API("cuStreamIsCapturing_ptsz", GL_API_CU_STREAM_IS_CAPTURING_PTSZ, RETURNS(2, 1, 4),
	OP_CAPTURE_STATUS, MEM_NONE, CAT_PTSZ | CAT_OPTIONAL),
    /* CUDA_MEM_ALLOC_NODE_PARAMS: bytesize @104, dptr @112, as the runtime's */
    API("cuGraphAddMemAllocNode", GL_API_CU_GRAPH_ADD_MEM_ALLOC_NODE,
	SPEC(GL_SHAPE_CALL, 5, 0, 2, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 5, .desc_off = 104,
	     .desc_len = 16),
	OP_GRAPH_ALLOC_NODE, MEM_DEVICE, CAT_OPTIONAL),
    API("cuGraphAddMemFreeNode", GL_API_CU_GRAPH_ADD_MEM_FREE_NODE,
	SPEC(GL_SHAPE_CALL, 5, 0, 2, 0, 0, 0), OP_GRAPH_FREE_NODE, MEM_NONE, CAT_OPTIONAL),
    /* cuda.h: #define cuGraphInstantiate cuGraphInstantiateWithFlags */
    API("cuGraphInstantiateWithFlags", GL_API_CU_GRAPH_INSTANTIATE, OUTPTR(1, 0, 2, 3),
	OP_GRAPH_INSTANTIATE, MEM_NONE, CAT_OPTIONAL),
    API("cuGraphLaunch", GL_API_CU_GRAPH_LAUNCH, CALL(1, 2), OP_GRAPH_LAUNCH, MEM_NONE,
	CAT_OPTIONAL),
    API("cuGraphLaunch_ptsz", GL_API_CU_GRAPH_LAUNCH_PTSZ, CALL(1, 2), OP_GRAPH_LAUNCH, MEM_NONE,
	CAT_PTSZ | CAT_OPTIONAL),
    API("cuGraphUpload", GL_API_CU_GRAPH_UPLOAD, CALL(1, 2), OP_GRAPH_UPLOAD, MEM_NONE,
	CAT_OPTIONAL),
    API("cuGraphUpload_ptsz", GL_API_CU_GRAPH_UPLOAD_PTSZ, CALL(1, 2), OP_GRAPH_UPLOAD, MEM_NONE,
	CAT_PTSZ | CAT_OPTIONAL),
    API("cuGraphExecDestroy", GL_API_CU_GRAPH_EXEC_DESTROY, CALL(1, 0), OP_GRAPH_EXEC_DESTROY,
	MEM_NONE, CAT_OPTIONAL),
    API("cuGraphDestroy", GL_API_CU_GRAPH_DESTROY, CALL(1, 0), OP_GRAPH_DESTROY, MEM_NONE,
	CAT_OPTIONAL),
    API("cuDeviceGraphMemTrim", GL_API_CU_DEVICE_GRAPH_MEM_TRIM, CALL(0, 1), OP_GRAPH_MEM_TRIM,
	MEM_NONE, CAT_OPTIONAL),
    API("cuMemPoolCreate", GL_API_CU_MEM_POOL_CREATE,
	DSPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 0, 0, 2, 0, 16, GL_LABEL_NONE, 0, 0), OP_POOL_CREATE,
	MEM_NONE, CAT_OPTIONAL),
    API("cuMemPoolDestroy", GL_API_CU_MEM_POOL_DESTROY, CALL(1, 0), OP_POOL_DESTROY, MEM_NONE,
	CAT_OPTIONAL),
    API("cuMemPoolTrimTo", GL_API_CU_MEM_POOL_TRIM_TO, SPEC(GL_SHAPE_CALL, 1, 2, 0, 0, 0, 0),
	OP_POOL_TRIM, MEM_NONE, CAT_OPTIONAL),
    API("cuMemPoolSetAttribute", GL_API_CU_MEM_POOL_SET_ATTRIBUTE,
	DSPEC(GL_SHAPE_CALL, 1, 2, 0, 0, 3, 0, 8, GL_LABEL_NONE, 0, 0), OP_POOL_SET_ATTR, MEM_NONE,
	CAT_OPTIONAL),
    /* cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool) */
    API("cuDeviceSetMemPool", GL_API_CU_DEVICE_SET_MEM_POOL, CALL(2, 1), OP_POOL_SET_CURRENT,
	MEM_NONE, CAT_OPTIONAL),
    API("cuDeviceGetMemPool", GL_API_CU_DEVICE_GET_MEM_POOL, RETURNS(1, 2, 8), OP_POOL_GET,
	MEM_NONE, CAT_OPTIONAL),
    API("cuDeviceGetDefaultMemPool", GL_API_CU_DEVICE_GET_DEFAULT_MEM_POOL, RETURNS(1, 2, 8),
	OP_POOL_GET_DEFAULT, MEM_NONE, CAT_OPTIONAL),
    /* CUDA_ARRAY_DESCRIPTOR {Width, Height, Format, NumChannels}: 24 bytes;
     * CUDA_ARRAY3D_DESCRIPTOR {Width, Height, Depth, Format, NumChannels, Flags}: 40 */
    API("cuArrayCreate_v2", GL_API_CU_ARRAY_CREATE,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 0, 0, 0, 0, .arg_desc = 2, .desc_len = 24), OP_ALLOC,
	MEM_DEVICE, CAT_DESC_SIZE, .space = SPACE_ARRAY),
    API("cuArray3DCreate_v2", GL_API_CU_ARRAY_3D_CREATE,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 0, 0, 0, 0, .arg_desc = 2, .desc_len = 40), OP_ALLOC,
	MEM_DEVICE, CAT_DESC_SIZE, .space = SPACE_ARRAY),
    /* cuMipmappedArrayCreate(CUmipmappedArray *m, const CUDA_ARRAY3D_DESCRIPTOR *d, levels) */
    API("cuMipmappedArrayCreate", GL_API_CU_MIPMAPPED_ARRAY_CREATE,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 3, 0, 0, 0, .arg_desc = 2, .desc_len = 40), OP_ALLOC,
	MEM_DEVICE, CAT_DESC_SIZE, .space = SPACE_ARRAY),
    API("cuArrayDestroy", GL_API_CU_ARRAY_DESTROY, FREE(1), OP_FREE, MEM_DEVICE, 0,
	.space = SPACE_ARRAY),
    API("cuMipmappedArrayDestroy", GL_API_CU_MIPMAPPED_ARRAY_DESTROY, FREE(1), OP_FREE, MEM_DEVICE,
	0, .space = SPACE_ARRAY),
    /* Virtual memory management: ranges, physical handles, mappings between them. */
    /* cuMemAddressReserve(CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, ...) */
    API("cuMemAddressReserve", GL_API_CU_MEM_ADDRESS_RESERVE, OUTPTR(1, 2, 0, 0), OP_ALLOC, MEM_VA,
	0, .space = SPACE_VMM_RANGE),
    API("cuMemAddressFree", GL_API_CU_MEM_ADDRESS_FREE, FREE(1), OP_FREE, MEM_VA, 0,
	.space = SPACE_VMM_RANGE),
    /* cuMemCreate(handle *h, size_t size, const CUmemAllocationProp *prop, flags): the
     * device is prop->location.id, at offset 12 */
    API("cuMemCreate", GL_API_CU_MEM_CREATE,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 2, 0, 0, 0, 0, .arg_desc = 3, .desc_len = 16), OP_ALLOC,
	MEM_DEVICE, CAT_VMM_DEVICE, .space = SPACE_VMM_HANDLE),
    API("cuMemRelease", GL_API_CU_MEM_RELEASE, FREE(1), OP_FREE, MEM_DEVICE, 0,
	.space = SPACE_VMM_HANDLE),
    /* cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, handle h, flags) */
    API("cuMemMap", GL_API_CU_MEM_MAP, SPEC(GL_SHAPE_CALL, 1, 2, 4, 3, 0, 0), OP_VMM_MAP, MEM_NONE,
	0),
    API("cuMemUnmap", GL_API_CU_MEM_UNMAP, SPEC(GL_SHAPE_CALL, 1, 2, 0, 0, 0, 0), OP_VMM_UNMAP,
	MEM_NONE, 0),
    /* cuMemRetainAllocationHandle(handle *h, void *addr): the handle mapped at addr, with one
     * more reference, which needs a cuMemRelease of its own (NCCL's ncclCuMemFree) */
    API("cuMemRetainAllocationHandle", GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE, OUTPTR(1, 0, 2, 0),
	OP_VMM_RETAIN, MEM_NONE, CAT_OPTIONAL, .space = SPACE_VMM_HANDLE),
    /*
     * Shareable handles: cuMemExportToShareableHandle(void *out, handle h, type t, flags)
     * writes a file descriptor (t 1) or a 64-byte fabric handle (t 8). A descriptor means
     * nothing in another process (it arrives there under another number), so what is
     * written is not read: an import's bytes come from its mapping (cuMemMap).
     * cuMemImportFromShareableHandle(handle *h, void *osHandle, type t) gives a VMM handle
     * of another process's memory: not this process's bytes, released like its own.
     */
    API("cuMemExportToShareableHandle", GL_API_CU_MEM_EXPORT_TO_SHAREABLE_HANDLE,
	SPEC(GL_SHAPE_CALL, 1, 0, 2, 3, 0, 0), OP_IPC_EXPORT, MEM_NONE, CAT_OPTIONAL),
    API("cuMemImportFromShareableHandle", GL_API_CU_MEM_IMPORT_FROM_SHAREABLE_HANDLE,
	OUTPTR(1, 0, 2, 3), OP_ALLOC, MEM_IPC, 0, .space = SPACE_VMM_HANDLE),
    /* cuMulticastCreate(handle *mc, const CUmulticastObjectProp *p): p->size @8 */
    API("cuMulticastCreate", GL_API_CU_MULTICAST_CREATE,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 0, 0, 0, 0, .arg_desc = 2, .desc_len = 32), OP_ALLOC,
	MEM_MULTICAST, CAT_DESC_SIZE, .space = SPACE_VMM_HANDLE),
    /* cuMulticastBindMem(mc, size_t mcOffset, handle mem, size_t memOffset, size, flags) */
    API("cuMulticastBindMem", GL_API_CU_MULTICAST_BIND_MEM, SPEC(GL_SHAPE_CALL, 1, 5, 3, 2, 0, 0),
	OP_MC_BIND, MEM_NONE, CAT_OPTIONAL),
    /* cuMulticastUnbind(mc, CUdevice dev, size_t mcOffset, size_t size) */
    API("cuMulticastUnbind", GL_API_CU_MULTICAST_UNBIND, SPEC(GL_SHAPE_CALL, 1, 4, 2, 3, 0, 0),
	OP_MC_UNBIND, MEM_NONE, CAT_OPTIONAL),

    /* NCCL (libnccl.so.2): ncclX are weak aliases of pncclX, one probe per address. */
    API("ncclMemAlloc", GL_API_NCCL_MEM_ALLOC, OUTPTR(1, 2, 0, 0), OP_ALLOC, MEM_DEVICE, 0),
    API("ncclMemFree", GL_API_NCCL_MEM_FREE, FREE(1), OP_FREE, MEM_DEVICE, 0),
    /* ncclCommRegister(comm, void *buff, size_t size, void **handle) */
    API("ncclCommRegister", GL_API_NCCL_COMM_REGISTER, OUTPTR(4, 3, 1, 2), OP_ALLOC, MEM_REG, 0,
	.space = SPACE_NCCL_REG),
    API("ncclCommDeregister", GL_API_NCCL_COMM_DEREGISTER, SPEC(GL_SHAPE_FREE, 2, 0, 1, 0, 0, 0),
	OP_FREE, MEM_REG, 0, .space = SPACE_NCCL_REG),
    /* ncclCommWindowRegister(comm, void *buff, size_t size, ncclWindow_t *win, int flags) */
    API("ncclCommWindowRegister", GL_API_NCCL_COMM_WINDOW_REGISTER, OUTPTR(4, 3, 1, 2), OP_ALLOC,
	MEM_REG, 0, .space = SPACE_NCCL_WIN),
    API("ncclCommWindowDeregister", GL_API_NCCL_COMM_WINDOW_DEREGISTER,
	SPEC(GL_SHAPE_FREE, 2, 0, 1, 0, 0, 0), OP_FREE, MEM_REG, 0, .space = SPACE_NCCL_WIN),
    /* Communicator creation: (ncclComm_t *comm, ...). ncclUniqueId is a 128-byte struct
     * passed on the stack; the out-pointer is the first register argument either way. Each
     * may run the init on threads it makes (ADOPT): what they allocate is the call's. */
    API("ncclCommInitRank", GL_API_NCCL_COMM_INIT_RANK, OUTPTR_ADOPT(1, 0, 0, 0), OP_COMM_INIT,
	MEM_NONE, 0),
    /* ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) */
    API("ncclCommInitAll", GL_API_NCCL_COMM_INIT_ALL,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 1, 0, 2, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 1,
	     .desc_len = 64, .flags2 = GL_SPEC2_ADOPT_THREADS),
	OP_COMM_INIT, MEM_NONE, 0),
    API("ncclCommInitRankConfig", GL_API_NCCL_COMM_INIT_RANK_CONFIG, OUTPTR_ADOPT(1, 0, 0, 0),
	OP_COMM_INIT, MEM_NONE, 0),
    /* ncclCommSplit(comm, int color, int key, ncclComm_t *newcomm, config) */
    API("ncclCommSplit", GL_API_NCCL_COMM_SPLIT, OUTPTR_ADOPT(4, 0, 1, 0), OP_COMM_INIT, MEM_NONE,
	0),
    /*
     * Inside ncclGroupStart/ncclGroupEnd, ncclCommInitRank(Config) and ncclCommSplit return
     * their communicator at once; the outermost ncclGroupEnd initialises them, one on its
     * own thread, several on one thread each: that memory is theirs, by device.
     */
    API("ncclGroupStart", GL_API_NCCL_GROUP_START, CALL(0, 0), OP_GROUP_START, MEM_NONE, 0),
    API("ncclGroupEnd", GL_API_NCCL_GROUP_END, CALL_ADOPT(0, 0), OP_GROUP_END, MEM_NONE, 0),
    API("ncclCommDestroy", GL_API_NCCL_COMM_DESTROY, CALL(1, 0), OP_COMM_DESTROY, MEM_NONE, 0),
    API("ncclCommAbort", GL_API_NCCL_COMM_ABORT, CALL(1, 0), OP_COMM_DESTROY, MEM_NONE, 0),
    /*
     * More communicator makers. ncclCommInitRankScalable(ncclComm_t *c, nranks, rank, nId,
     * ids *, config *); ncclCommShrink(comm, int *exclude, n, ncclComm_t *c, config *, flags).
     * ncclDevCommCreate(comm, const reqs *, ncclDevComm_t *out) fills a struct: it is known
     * by its windowTable pointer (@24, nccl_device/impl/comm__types.h), read at return, and
     * ncclDevCommDestroy(comm, const ncclDevComm_t *d) names it the same way.
     */
    API("ncclCommInitRankScalable", GL_API_NCCL_COMM_INIT_RANK_SCALABLE, OUTPTR_ADOPT(1, 0, 0, 0),
	OP_COMM_INIT, MEM_NONE, CAT_OPTIONAL),
    API("ncclCommShrink", GL_API_NCCL_COMM_SHRINK, OUTPTR_ADOPT(4, 0, 1, 0), OP_COMM_INIT, MEM_NONE,
	CAT_OPTIONAL),
    API("ncclDevCommCreate", GL_API_NCCL_DEV_COMM_CREATE,
	SPEC(GL_SHAPE_ALLOC_OUTPTR, 3, 0, 1, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 3,
	     .desc_len = 32),
	OP_COMM_INIT, MEM_NONE, CAT_OPTIONAL),
    API("ncclDevCommDestroy", GL_API_NCCL_DEV_COMM_DESTROY,
	DSPEC(GL_SHAPE_CALL, 1, 0, 0, 0, 2, 0, 32, GL_LABEL_NONE, 0, 0), OP_COMM_DESTROY, MEM_NONE,
	CAT_OPTIONAL),

    /* libc, with --libc: host-side memory that travels with GPU memory. */
    API("malloc", GL_API_MALLOC, SPEC(GL_SHAPE_ALLOC_RET, 0, 1, 0, 0, 0, 0), OP_ALLOC, MEM_HOST,
	CAT_LIBC, .space = SPACE_HOST),
    /* calloc(nmemb, size): size x nmemb */
    API("calloc", GL_API_CALLOC, SPEC(GL_SHAPE_ALLOC_RET, 0, 2, 0, 0, 1, 0), OP_ALLOC, MEM_HOST,
	CAT_LIBC, .space = SPACE_HOST),
    /* realloc(old, size) */
    API("realloc", GL_API_REALLOC, SPEC(GL_SHAPE_ALLOC_RET, 0, 2, 1, 0, 0, 0), OP_REALLOC, MEM_HOST,
	CAT_LIBC, .space = SPACE_HOST),
    /* posix_memalign(void **p, size_t align, size_t size): returns 0 or an errno */
    API("posix_memalign", GL_API_POSIX_MEMALIGN, OUTPTR(1, 3, 0, 0), OP_ALLOC, MEM_HOST, CAT_LIBC,
	.space = SPACE_HOST),
    API("aligned_alloc", GL_API_ALIGNED_ALLOC, SPEC(GL_SHAPE_ALLOC_RET, 0, 2, 0, 0, 0, 0), OP_ALLOC,
	MEM_HOST, CAT_LIBC, .space = SPACE_HOST),
    API("memalign", GL_API_MEMALIGN, SPEC(GL_SHAPE_ALLOC_RET, 0, 2, 0, 0, 0, 0), OP_ALLOC, MEM_HOST,
	CAT_LIBC, .space = SPACE_HOST),
    API("free", GL_API_FREE, FREE(1), OP_FREE, MEM_HOST, CAT_LIBC, .space = SPACE_HOST),
    /* mmap(addr, len, prot, flags, fd, off): only anonymous mappings are counted */
    API("mmap", GL_API_MMAP, SPEC(GL_SHAPE_ALLOC_RET, 0, 2, 4, 5, 0, GL_SPEC_FAIL_IS_NEG1),
	OP_ALLOC, MEM_HOST, CAT_LIBC, .space = SPACE_MMAP),
    API("munmap", GL_API_MUNMAP, SPEC(GL_SHAPE_FREE, 1, 2, 0, 0, 0, 0), OP_FREE, MEM_HOST, CAT_LIBC,
	.space = SPACE_MMAP),

    /*
     * WebGPU, as Dawn exports it (webgpu.h). Offsets are those of probe/wgpu_abi.c's decoders and
     * tests/scenarios/webgpu_min.h, checked against the real library.
     */
    API("wgpuDeviceCreateBuffer", GL_API_WGPU_DEVICE_CREATE_BUFFER,
	WCREATE(48, GL_LABEL_STRINGVIEW), OP_OBJ_CREATE, MEM_DEVICE, CAT_WGPU_SV,
	.space = SPACE_WGPU, .decode = wgpu_decode_buffer_sv),
    API("wgpuDeviceCreateTexture", GL_API_WGPU_DEVICE_CREATE_TEXTURE,
	WCREATE(60, GL_LABEL_STRINGVIEW), OP_OBJ_CREATE, MEM_DEVICE,
	CAT_WGPU_SV | CAT_WGPU_FMT_PRE_TIER1, .space = SPACE_WGPU,
	.decode = wgpu_decode_texture_sv),
    API("wgpuDeviceCreateTexture", GL_API_WGPU_DEVICE_CREATE_TEXTURE_TIER1,
	WCREATE(60, GL_LABEL_STRINGVIEW), OP_OBJ_CREATE, MEM_DEVICE,
	CAT_WGPU_SV | CAT_WGPU_FMT_TIER1, .space = SPACE_WGPU,
	.decode = wgpu_decode_texture_sv_tier1),
    API("wgpuDeviceCreateTexture", GL_API_WGPU_DEVICE_CREATE_TEXTURE_FMT_UNKNOWN,
	WCREATE(60, GL_LABEL_STRINGVIEW), OP_OBJ_CREATE, MEM_DEVICE,
	CAT_WGPU_SV | CAT_WGPU_FMT_UNKNOWN, .space = SPACE_WGPU,
	.decode = wgpu_decode_texture_sv_unknown),
    API("wgpuBufferAddRef", GL_API_WGPU_BUFFER_ADD_REF, NOTIFY(1), OP_OBJ_ADDREF, MEM_NONE, 0,
	.space = SPACE_WGPU),
    API("wgpuBufferRelease", GL_API_WGPU_BUFFER_RELEASE, NOTIFY(1), OP_OBJ_RELEASE, MEM_NONE, 0,
	.space = SPACE_WGPU),
    API("wgpuBufferDestroy", GL_API_WGPU_BUFFER_DESTROY, NOTIFY(1), OP_OBJ_DESTROY, MEM_NONE, 0,
	.space = SPACE_WGPU),
    API("wgpuBufferSetLabel", GL_API_WGPU_BUFFER_SET_LABEL, SETLABEL_SV, OP_NONE, MEM_NONE,
	CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuTextureAddRef", GL_API_WGPU_TEXTURE_ADD_REF, NOTIFY(1), OP_OBJ_ADDREF, MEM_NONE, 0,
	.space = SPACE_WGPU),
    API("wgpuTextureRelease", GL_API_WGPU_TEXTURE_RELEASE, NOTIFY(1), OP_OBJ_RELEASE, MEM_NONE, 0,
	.space = SPACE_WGPU),
    API("wgpuTextureDestroy", GL_API_WGPU_TEXTURE_DESTROY, NOTIFY(1), OP_OBJ_DESTROY, MEM_NONE, 0,
	.space = SPACE_WGPU),
    API("wgpuTextureSetLabel", GL_API_WGPU_TEXTURE_SET_LABEL, SETLABEL_SV, OP_NONE, MEM_NONE,
	CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuDeviceAddRef", GL_API_WGPU_DEVICE_ADD_REF, NOTIFY(1), OP_OWNER_ADDREF, MEM_NONE,
	CAT_OWNER | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuDeviceRelease", GL_API_WGPU_DEVICE_RELEASE, NOTIFY(1), OP_OWNER_RELEASE, MEM_NONE,
	CAT_OWNER | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuDeviceDestroy", GL_API_WGPU_DEVICE_DESTROY, NOTIFY(1), OP_OWNER_DESTROY, MEM_NONE,
	CAT_OWNER | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuDeviceSetLabel", GL_API_WGPU_DEVICE_SET_LABEL, SETLABEL_SV, OP_NONE, MEM_NONE,
	CAT_WGPU_SV | CAT_OWNER | CAT_OPTIONAL, .space = SPACE_WGPU),
    /* WGPUQueue wgpuDeviceGetQueue(WGPUDevice device): which device a queue's work is for */
    API("wgpuDeviceGetQueue", GL_API_WGPU_DEVICE_GET_QUEUE,
	SPEC(GL_SHAPE_ALLOC_RET, 0, 0, 1, 0, 0, 0), OP_QUEUE_GET, MEM_NONE,
	CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU),
    /* void wgpuQueueSubmit(WGPUQueue queue, size_t commandCount, ...) */
    API("wgpuQueueSubmit", GL_API_WGPU_QUEUE_SUBMIT, SPEC(GL_SHAPE_NOTIFY, 1, 2, 0, 0, 0, 0),
	OP_QUEUE_SUBMIT, MEM_NONE, CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU),
    /*
     * WGPUFuture wgpuQueueOnSubmittedWorkDone(WGPUQueue, WGPUQueueWorkDoneCallbackInfo):
     * the 40-byte callback info {nextInChain, mode, callback @16, userdata1 @24,
     * userdata2 @32} is passed by value. Its callback gets a probe of its own.
     */
    API("wgpuQueueOnSubmittedWorkDone", GL_API_WGPU_QUEUE_ON_SUBMITTED_WORK_DONE,
	DSPEC(GL_SHAPE_NOTIFY, 1, 0, 0, GL_SPEC_DESC_BYVAL | GL_SPEC_CODE_PTR, 2, 0, 40,
	      GL_LABEL_NONE, 0, 16),
	OP_QUEUE_WATCH, MEM_NONE, CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU,
	.code_api = GL_API_WGPU_QUEUE_WORK_DONE_CALLBACK),
    /*
     * WGPUFuture wgpuBufferMapAsync(WGPUBuffer, WGPUMapMode, size_t offset, size_t size,
     * WGPUBufferMapCallbackInfo): the future (a uint64_t id, returned in a register) completes
     * once the map is done, which Dawn does after every submit before it: onnxruntime's
     * readbacks are how its queue's work is seen done.
     */
    API("wgpuBufferMapAsync", GL_API_WGPU_BUFFER_MAP_ASYNC,
	SPEC(GL_SHAPE_ALLOC_RET, 0, 0, 1, 0, 0, 0), OP_FUTURE_WATCH, MEM_NONE,
	CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU),
    /*
     * WGPUWaitStatus wgpuInstanceWaitAny(WGPUInstance, size_t futureCount,
     * WGPUFutureWaitInfo *futures, uint64_t timeoutNS): futures[i] is {WGPUFuture future,
     * WGPUBool completed} (16 bytes), completed set by the call: the first four are copied
     * at its return.
     */
    API("wgpuInstanceWaitAny", GL_API_WGPU_INSTANCE_WAIT_ANY,
	SPEC(GL_SHAPE_CALL, 3, 2, 0, 0, 0, GL_SPEC_DESC_AT_RETURN, .arg_desc = 3, .desc_len = 64),
	OP_FUTURE_WAIT, MEM_NONE, CAT_WGPU_SV | CAT_OPTIONAL, .space = SPACE_WGPU),
    /*
     * The program's WGPUQueueWorkDoneCallback. Since webgpu-headers of 2025-04-30 it is
     * (status, WGPUStringView message, userdata1, userdata2), before (status, userdata1,
     * userdata2): arguments 2..5 cover both, the tracker matches either pair.
     */
    API("wgpuQueueWorkDoneCallback", GL_API_WGPU_QUEUE_WORK_DONE_CALLBACK,
	SPEC(GL_SHAPE_NOTIFY, 2, 3, 4, 5, 0, 0), OP_QUEUE_DONE, MEM_NONE,
	CAT_DYNAMIC | CAT_OPTIONAL, .space = SPACE_WGPU),
    /*
     * Dawn returns an error object, never NULL, from a creation that fails validation or
     * runs out of memory, and makes it here, inside the wgpu call (Dawn-internal, stable
     * since 2020; in .dynsym of libwebgpu_wrapper.so, in .symtab of dawn.node).
     */
    API("_ZN4dawn6native10BufferBase9MakeErrorEPNS0_10DeviceBaseEPKNS0_16BufferDescriptorE",
	GL_API_DAWN_BUFFER_MAKE_ERROR, NOTIFY(0), OP_ERROR_OBJECT, MEM_NONE, CAT_OPTIONAL,
	.space = SPACE_WGPU, .display = "dawn::native::BufferBase::MakeError"),
    API("_ZN4dawn6native11TextureBase9MakeErrorEPNS0_10DeviceBaseEPKNS0_17TextureDescriptorE",
	GL_API_DAWN_TEXTURE_MAKE_ERROR, NOTIFY(0), OP_ERROR_OBJECT, MEM_NONE, CAT_OPTIONAL,
	.space = SPACE_WGPU, .display = "dawn::native::TextureBase::MakeError"),
    /* webgpu.h before 2024-10: char const * labels, 32-bit usage, *Reference */
    API("wgpuDeviceCreateBuffer", GL_API_WGPU_DEVICE_CREATE_BUFFER_CSTR, WCREATE(40, GL_LABEL_CSTR),
	OP_OBJ_CREATE, MEM_DEVICE, CAT_WGPU_CSTR, .space = SPACE_WGPU,
	.decode = wgpu_decode_buffer_cstr),
    API("wgpuDeviceCreateTexture", GL_API_WGPU_DEVICE_CREATE_TEXTURE_CSTR,
	WCREATE(48, GL_LABEL_CSTR), OP_OBJ_CREATE, MEM_DEVICE, CAT_WGPU_CSTR, .space = SPACE_WGPU,
	.decode = wgpu_decode_texture_cstr),
    API("wgpuBufferSetLabel", GL_API_WGPU_BUFFER_SET_LABEL_CSTR, SETLABEL_CSTR, OP_NONE, MEM_NONE,
	CAT_WGPU_CSTR | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuTextureSetLabel", GL_API_WGPU_TEXTURE_SET_LABEL_CSTR, SETLABEL_CSTR, OP_NONE, MEM_NONE,
	CAT_WGPU_CSTR | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuDeviceSetLabel", GL_API_WGPU_DEVICE_SET_LABEL_CSTR, SETLABEL_CSTR, OP_NONE, MEM_NONE,
	CAT_WGPU_CSTR | CAT_OWNER | CAT_OPTIONAL, .space = SPACE_WGPU),
    API("wgpuBufferReference", GL_API_WGPU_BUFFER_REFERENCE, NOTIFY(1), OP_OBJ_ADDREF, MEM_NONE,
	CAT_WGPU_CSTR, .space = SPACE_WGPU),
    API("wgpuTextureReference", GL_API_WGPU_TEXTURE_REFERENCE, NOTIFY(1), OP_OBJ_ADDREF, MEM_NONE,
	CAT_WGPU_CSTR, .space = SPACE_WGPU),
    API("wgpuDeviceReference", GL_API_WGPU_DEVICE_REFERENCE, NOTIFY(1), OP_OWNER_ADDREF, MEM_NONE,
	CAT_WGPU_CSTR | CAT_OWNER | CAT_OPTIONAL, .space = SPACE_WGPU),

    /* ld.so calls this empty function whenever its link map changes (dlopen/dlclose). */
    API("_dl_debug_state", GL_API_LD_DEBUG_STATE,
	SPEC(GL_SHAPE_NOTIFY, 0, 0, 0, 0, 0, GL_SPEC_WAKEUP | GL_SPEC_HOLD), OP_RENDEZVOUS,
	MEM_NONE, CAT_OPTIONAL),

    /* Markers. The sym: ones are attached to the function the user names. */
    API("(step marker)", GL_API_MARKER_STEP, SPEC(GL_SHAPE_NOTIFY, 0, 0, 0, 0, 0, 0), OP_MARKER,
	MEM_NONE, CAT_OPTIONAL | CAT_DYNAMIC),
    API("(request begin)", GL_API_MARKER_REQ_BEGIN, SPEC(GL_SHAPE_NOTIFY, 0, 0, 0, 0, 0, 0),
	OP_MARKER, MEM_NONE, CAT_OPTIONAL | CAT_DYNAMIC),
    API("(request end)", GL_API_MARKER_REQ_END, SPEC(GL_SHAPE_NOTIFY, 0, 0, 0, 0, 0, 0), OP_MARKER,
	MEM_NONE, CAT_OPTIONAL | CAT_DYNAMIC),
    /* Wakes user space at once: the program goes on after it, gpuleak should not. */
    API("(session end)", GL_API_MARKER_END, SPEC(GL_SHAPE_NOTIFY, 0, 0, 0, 0, 0, GL_SPEC_WAKEUP),
	OP_MARKER, MEM_NONE, CAT_OPTIONAL | CAT_DYNAMIC),
    /* NVTX: the range's name becomes a label record. nvtxRangePushA(const char *message) */
    API("nvtxRangePushA", GL_API_NVTX_RANGE_PUSH_A,
	SPEC(GL_SHAPE_NOTIFY, 0, 0, 1, 0, 0, 0, .label_kind = GL_LABEL_ARGS_CSTR), OP_MARKER,
	MEM_NONE, CAT_OPTIONAL | CAT_NVTX),
    API("nvtxRangeStartA", GL_API_NVTX_RANGE_START_A,
	SPEC(GL_SHAPE_NOTIFY, 0, 0, 1, 0, 0, 0, .label_kind = GL_LABEL_ARGS_CSTR), OP_MARKER,
	MEM_NONE, CAT_OPTIONAL | CAT_NVTX),
    API("nvtxMarkA", GL_API_NVTX_MARK_A,
	SPEC(GL_SHAPE_NOTIFY, 0, 0, 1, 0, 0, 0, .label_kind = GL_LABEL_ARGS_CSTR), OP_MARKER,
	MEM_NONE, CAT_OPTIONAL | CAT_NVTX),
    /* nvtxRangePushEx(const nvtxEventAttributes_t *a): an ASCII message is a char * @40 */
    API("nvtxRangePushEx", GL_API_NVTX_RANGE_PUSH_EX,
	SPEC(GL_SHAPE_CALL, 0, 0, 0, 0, 0, 0, .arg_desc = 1, .desc_len = 48,
	     .label_kind = GL_LABEL_CSTR, .label_off = 40),
	OP_MARKER, MEM_NONE, CAT_OPTIONAL | CAT_NVTX),
    API("nvtxRangeStartEx", GL_API_NVTX_RANGE_START_EX,
	SPEC(GL_SHAPE_CALL, 0, 0, 0, 0, 0, 0, .arg_desc = 1, .desc_len = 48,
	     .label_kind = GL_LABEL_CSTR, .label_off = 40),
	OP_MARKER, MEM_NONE, CAT_OPTIONAL | CAT_NVTX),

    /*
     * PyTorch's CUDA caching allocator (docs/pytorch.md). libc10_cuda.so (2.1+, x86-64 ELF
     * builds without TORCH_DISABLE_SDT) fires pytorch:malloc after NativeCachingAllocator::
     * allocate, with the requested size, and pytorch:free before a block's free, each behind
     * its semaphore (torch_sdt_semaphore_pytorch_malloc/_free). raw_alloc fires neither.
     */
    /* stream_id is not read: a block's stream changes nothing the tracker decides (the
     * arguments in memory are read at once in BPF, usdt_args_of; others one by one) */
    API("pytorch:malloc", GL_API_TORCH_MALLOC, SPEC(GL_SHAPE_ALLOC_DONE, 1, 3, 2, 0, 0, 0),
	OP_BLOCK, MEM_DEVICE, CAT_USDT | CAT_SITE_OUTSIDE,
	TORCH_USDT("pytorch", "malloc", "ptr, device, size, stream_id")),
    API("pytorch:free", GL_API_TORCH_FREE, FREE(1), OP_BLOCK, MEM_DEVICE, CAT_USDT,
	TORCH_USDT("pytorch", "free", "ptr")),
    /* Where a build has no probes: the profiler hook libc10.so exports, called at every
     * block's allocation and free with the block's (rounded) size; raw_alloc included. */
    API("_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE", GL_API_TORCH_REPORT_MEM,
	TORCH_HOOK_SPEC, OP_BLOCK, MEM_DEVICE, CAT_C10_DEVICE | CAT_SITE_OUTSIDE, TORCH_HOOK),
    API("_ZN3c1027reportMemoryUsageToProfilerEPvlllNS_6DeviceE", GL_API_TORCH_REPORT_MEM_1,
	TORCH_HOOK_SPEC, OP_BLOCK, MEM_DEVICE, CAT_C10_DEVICE | CAT_SITE_OUTSIDE, TORCH_HOOK),
};

const unsigned int cat_nr_apis = sizeof(cat_apis) / sizeof(cat_apis[0]);

const struct cat_api *cat_by_api(unsigned int api)
{
	/* Ids are sparse (a block per family): index them once, O(1) on the hot path. */
	static const struct cat_api *index[GL_API_MAX];
	static bool built;
	unsigned int i;

	if (!built) {
		for (i = 0; i < cat_nr_apis; i++)
			index[cat_apis[i].api] = &cat_apis[i];
		built = true;
	}
	return api < GL_API_MAX ? index[api] : NULL;
}

const struct cat_api *cat_by_name(const char *name, unsigned int len)
{
	const char *at = memchr(name, '@', len);
	unsigned int i;

	if (at)
		len = at - name;
	/* Every catalog name starts with "cuda", "cu", "nccl", "wgpu" or '_': most symbols of
	 * a large library are rejected on their first bytes. */
	for (i = 0; i < cat_nr_apis; i++) {
		const char *n = cat_apis[i].name;

		if (cat_apis[i].flags & (CAT_DYNAMIC | CAT_USDT))
			continue;
		if (n[0] == name[0] && strlen(n) == len && !memcmp(n, name, len))
			return &cat_apis[i];
	}
	return NULL;
}

const struct cat_api *cat_by_usdt(const char *provider, const char *name)
{
	unsigned int i;

	for (i = 0; i < cat_nr_apis; i++)
		if ((cat_apis[i].flags & CAT_USDT) &&
		    !strcmp(cat_apis[i].usdt_provider, provider) &&
		    !strcmp(cat_apis[i].usdt_name, name))
			return &cat_apis[i];
	return NULL;
}

const struct cat_api *cat_next_same_name(const struct cat_api *prev)
{
	const struct cat_api *a;

	for (a = prev + 1; a < cat_apis + cat_nr_apis; a++)
		if (!(a->flags & (CAT_DYNAMIC | CAT_USDT)) && !strcmp(a->name, prev->name))
			return a;
	return NULL;
}

const char *cat_family_name(enum gl_family fam)
{
	switch (fam) {
	case GL_FAM_CUDART:
		return "cudart";
	case GL_FAM_CUDA:
		return "driver";
	case GL_FAM_VMM:
		return "vmm";
	case GL_FAM_NCCL:
		return "nccl";
	case GL_FAM_WEBGPU:
		return "webgpu";
	case GL_FAM_LIBC:
		return "libc";
	case GL_FAM_LDSO:
		return "ld.so";
	case GL_FAM_MARKER:
		return "marker";
	case GL_FAM_PYTORCH:
		return "pytorch";
	default:
		return "unknown";
	}
}

const char *cat_mem_name(enum cat_mem mem)
{
	switch (mem) {
	case MEM_DEVICE:
		return "device";
	case MEM_MANAGED:
		return "managed";
	case MEM_HOST_PINNED:
		return "pinned";
	case MEM_HOST:
		return "host";
	case MEM_VA:
		return "va";
	case MEM_REG:
		return "registration";
	case MEM_IPC:
		return "ipc";
	case MEM_HOST_REGISTERED:
		return "registered";
	case MEM_MULTICAST:
		return "multicast";
	default:
		return "-";
	}
}

const char *cat_api_name(unsigned int api)
{
	static char buf[4][24];
	static unsigned int next;
	const struct cat_api *a = cat_by_api(api);
	char *b;

	if (a)
		return a->display ? a->display : a->name;
	b = buf[next++ % 4];
	snprintf(b, sizeof(buf[0]), "api#0x%x", api);
	return b;
}

/* Error names of the codes an allocation path returns most often (driver_types.h). */
struct err_name {
	int code;
	const char *name;
};

static const struct err_name cudart_errors[] = {
    {1, "cudaErrorInvalidValue"},
    {2, "cudaErrorMemoryAllocation"},
    {3, "cudaErrorInitializationError"},
    {4, "cudaErrorCudartUnloading"},
    {16, "cudaErrorInvalidHostPointer"},
    {17, "cudaErrorInvalidDevicePointer"},
    {34, "cudaErrorStubLibrary"},
    {35, "cudaErrorInsufficientDriver"},
    {46, "cudaErrorDevicesUnavailable"},
    {100, "cudaErrorNoDevice"},
    {101, "cudaErrorInvalidDevice"},
    {201, "cudaErrorDeviceUninitialized"},
    {205, "cudaErrorMapBufferObjectFailed"},
    {304, "cudaErrorOperatingSystem"},
    {400, "cudaErrorInvalidResourceHandle"},
    {401, "cudaErrorIllegalState"},
    {600, "cudaErrorNotReady"},
    {700, "cudaErrorIllegalAddress"},
    {712, "cudaErrorHostMemoryAlreadyRegistered"},
    {713, "cudaErrorHostMemoryNotRegistered"},
    {719, "cudaErrorLaunchFailure"},
    {800, "cudaErrorNotPermitted"},
    {801, "cudaErrorNotSupported"},
    {803, "cudaErrorSystemDriverMismatch"},
    {900, "cudaErrorStreamCaptureUnsupported"},
    {901, "cudaErrorStreamCaptureInvalidated"},
    {20, "cudaErrorInvalidChannelDescriptor"},
    {999, "cudaErrorUnknown"},
};

/* The driver's and the VMM calls' CUresult (cuda.h), likewise. */
static const struct err_name cuda_errors[] = {
    {1, "CUDA_ERROR_INVALID_VALUE"},	 {2, "CUDA_ERROR_OUT_OF_MEMORY"},
    {3, "CUDA_ERROR_NOT_INITIALIZED"},	 {4, "CUDA_ERROR_DEINITIALIZED"},
    {34, "CUDA_ERROR_STUB_LIBRARY"},	 {46, "CUDA_ERROR_DEVICE_UNAVAILABLE"},
    {100, "CUDA_ERROR_NO_DEVICE"},	 {101, "CUDA_ERROR_INVALID_DEVICE"},
    {201, "CUDA_ERROR_INVALID_CONTEXT"}, {304, "CUDA_ERROR_OPERATING_SYSTEM"},
    {400, "CUDA_ERROR_INVALID_HANDLE"},	 {401, "CUDA_ERROR_ILLEGAL_STATE"},
    {700, "CUDA_ERROR_ILLEGAL_ADDRESS"}, {719, "CUDA_ERROR_LAUNCH_FAILED"},
    {800, "CUDA_ERROR_NOT_PERMITTED"},	 {801, "CUDA_ERROR_NOT_SUPPORTED"},
    {999, "CUDA_ERROR_UNKNOWN"},
};

/* ncclResult_t (nccl.h): an allocation that failed in the driver is ncclUnhandledCudaError. */
static const struct err_name nccl_errors[] = {
    {1, "ncclUnhandledCudaError"}, {2, "ncclSystemError"},  {3, "ncclInternalError"},
    {4, "ncclInvalidArgument"},	   {5, "ncclInvalidUsage"}, {6, "ncclRemoteError"},
    {7, "ncclInProgress"},
};

#define ERRORS(t) (t), sizeof(t) / sizeof((t)[0])

static const char *err_find(const struct err_name *t, size_t n, int code)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (t[i].code == code)
			return t[i].name;
	return NULL;
}

const char *cat_error_name(unsigned int api, int code)
{
	switch (GL_API_FAMILY(api)) {
	case GL_FAM_CUDART:
		return err_find(ERRORS(cudart_errors), code);
	case GL_FAM_CUDA:
	case GL_FAM_VMM:
		return err_find(ERRORS(cuda_errors), code);
	case GL_FAM_NCCL:
		return err_find(ERRORS(nccl_errors), code);
	default:
		break;
	}
	if (GL_API_FAMILY(api) == GL_FAM_WEBGPU) {
		if (code == CAT_ERR_WGPU_ERROR_OBJECT)
			return "error object";
		if (code == CAT_ERR_WGPU_NULL)
			return "NULL";
	}
	return NULL;
}
