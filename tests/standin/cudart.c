// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stand-in for the CUDA runtime, libcudart.so.13, on machines without a GPU.
 *
 * Exists so the tests can attach uprobes to a runtime that really allocates: the real
 * libcudart.so.13 returns cudaErrorInsufficientDriver for everything here, and it cannot be
 * fed a fake driver (it asks the driver for undocumented export tables). This one has the
 * real soname, versioned symbols (cudaMalloc@@libcudart.so.13) and the prototypes of
 * /usr/local/cuda/include/cuda_runtime_api.h, and is layered like the real one: no link-time
 * dependency on the driver; the first call dlopen()s libcuda.so.1 (the stand-in, found
 * through this library's DT_RPATH), calls cuInit, retains each device's primary context and
 * forwards every call to the matching driver entry point.
 *
 * No exported function calls another exported one: a uprobe on cudaMallocAsync must not
 * fire when the application called cudaMallocAsync_ptsz.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/*
 * The real runtime also exports per-thread-default-stream variants. cuda_runtime_api.h
 * declares them only under CUDA_API_PER_THREAD_DEFAULT_STREAM, with the prototype of the
 * plain name; borrow it so the definitions below are checked against the header.
 */
extern __typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
extern __typeof__(cudaMallocFromPoolAsync) cudaMallocFromPoolAsync_ptsz;
extern __typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;
extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
extern __typeof__(cudaEventRecord) cudaEventRecord_ptsz;
extern __typeof__(cudaEventRecordWithFlags) cudaEventRecordWithFlags_ptsz;
extern __typeof__(cudaMemcpy) cudaMemcpy_ptds;
extern __typeof__(cudaMemset) cudaMemset_ptds;
extern __typeof__(cudaStreamBeginCapture) cudaStreamBeginCapture_ptsz;
extern __typeof__(cudaStreamEndCapture) cudaStreamEndCapture_ptsz;
extern __typeof__(cudaStreamIsCapturing) cudaStreamIsCapturing_ptsz;
extern __typeof__(cudaGraphLaunch) cudaGraphLaunch_ptsz;
extern __typeof__(cudaGraphUpload) cudaGraphUpload_ptsz;
extern __typeof__(cuStreamBeginCapture) cuStreamBeginCapture_v2_ptsz;
extern __typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
extern __typeof__(cuStreamIsCapturing) cuStreamIsCapturing_ptsz;
extern __typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;
extern __typeof__(cuGraphUpload) cuGraphUpload_ptsz;

/*
 * Driver entry points: (exported name, declaration whose prototype it has). Names are the
 * real exported ones; the _ptsz/_ptds ones borrow the plain prototype as above.
 */
#define DRIVER_FUNCS(X)                                                                            \
	X(cuInit, cuInit)                                                                          \
	X(cuDeviceGetCount, cuDeviceGetCount)                                                      \
	X(cuDeviceGetDefaultMemPool, cuDeviceGetDefaultMemPool)                                    \
	X(cuDevicePrimaryCtxRetain, cuDevicePrimaryCtxRetain)                                      \
	X(cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset_v2)                                  \
	X(cuCtxSetCurrent, cuCtxSetCurrent)                                                        \
	X(cuCtxSynchronize, cuCtxSynchronize)                                                      \
	X(cuMemAlloc_v2, cuMemAlloc_v2)                                                            \
	X(cuMemAllocManaged, cuMemAllocManaged)                                                    \
	X(cuMemAllocPitch_v2, cuMemAllocPitch_v2)                                                  \
	X(cuMemAllocHost_v2, cuMemAllocHost_v2)                                                    \
	X(cuMemHostAlloc, cuMemHostAlloc)                                                          \
	X(cuMemAllocAsync, cuMemAllocAsync)                                                        \
	X(cuMemAllocAsync_ptsz, cuMemAllocAsync)                                                   \
	X(cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync)                                        \
	X(cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync)                                   \
	X(cuMemFree_v2, cuMemFree_v2)                                                              \
	X(cuMemFreeHost, cuMemFreeHost)                                                            \
	X(cuMemFreeAsync, cuMemFreeAsync)                                                          \
	X(cuMemFreeAsync_ptsz, cuMemFreeAsync)                                                     \
	X(cuMemGetInfo_v2, cuMemGetInfo_v2)                                                        \
	X(cuStreamCreate, cuStreamCreate)                                                          \
	X(cuStreamDestroy_v2, cuStreamDestroy_v2)                                                  \
	X(cuStreamSynchronize, cuStreamSynchronize)                                                \
	X(cuStreamSynchronize_ptsz, cuStreamSynchronize)                                           \
	X(cuEventCreate, cuEventCreate)                                                            \
	X(cuEventRecord, cuEventRecord)                                                            \
	X(cuEventRecord_ptsz, cuEventRecord)                                                       \
	X(cuEventSynchronize, cuEventSynchronize)                                                  \
	X(cuEventDestroy_v2, cuEventDestroy_v2)                                                    \
	X(cuMemcpy, cuMemcpy)                                                                      \
	X(cuMemcpy_ptds, cuMemcpy)                                                                 \
	X(cuMemsetD8_v2, cuMemsetD8_v2)                                                            \
	X(cuMemsetD8_v2_ptds, cuMemsetD8_v2)                                                       \
	X(cuIpcGetMemHandle, cuIpcGetMemHandle)                                                    \
	X(cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle_v2)                                            \
	X(cuIpcCloseMemHandle, cuIpcCloseMemHandle)                                                \
	X(cuMemHostRegister_v2, cuMemHostRegister_v2)                                              \
	X(cuMemHostUnregister, cuMemHostUnregister)                                                \
	X(cuStreamBeginCapture_v2, cuStreamBeginCapture_v2)                                        \
	X(cuStreamBeginCapture_v2_ptsz, cuStreamBeginCapture_v2)                                   \
	X(cuStreamEndCapture, cuStreamEndCapture)                                                  \
	X(cuStreamEndCapture_ptsz, cuStreamEndCapture)                                             \
	X(cuStreamIsCapturing, cuStreamIsCapturing)                                                \
	X(cuStreamIsCapturing_ptsz, cuStreamIsCapturing)                                           \
	X(cuGraphAddMemAllocNode, cuGraphAddMemAllocNode)                                          \
	X(cuGraphAddMemFreeNode, cuGraphAddMemFreeNode)                                            \
	X(cuGraphInstantiateWithFlags, cuGraphInstantiateWithFlags)                                \
	X(cuGraphLaunch, cuGraphLaunch)                                                            \
	X(cuGraphLaunch_ptsz, cuGraphLaunch)                                                       \
	X(cuGraphUpload, cuGraphUpload)                                                            \
	X(cuGraphUpload_ptsz, cuGraphUpload)                                                       \
	X(cuGraphExecDestroy, cuGraphExecDestroy)                                                  \
	X(cuGraphDestroy, cuGraphDestroy)                                                          \
	X(cuGraphCreate, cuGraphCreate)                                                            \
	X(cuDeviceGraphMemTrim, cuDeviceGraphMemTrim)                                              \
	X(cuMemPoolCreate, cuMemPoolCreate)                                                        \
	X(cuMemPoolDestroy, cuMemPoolDestroy)                                                      \
	X(cuMemPoolTrimTo, cuMemPoolTrimTo)                                                        \
	X(cuMemPoolSetAttribute, cuMemPoolSetAttribute)                                            \
	X(cuMemPoolGetAttribute, cuMemPoolGetAttribute)                                            \
	X(cuDeviceSetMemPool, cuDeviceSetMemPool)                                                  \
	X(cuDeviceGetMemPool, cuDeviceGetMemPool)                                                  \
	X(cuArrayCreate_v2, cuArrayCreate_v2)                                                      \
	X(cuArray3DCreate_v2, cuArray3DCreate_v2)                                                  \
	X(cuMipmappedArrayCreate, cuMipmappedArrayCreate)                                          \
	X(cuArrayDestroy, cuArrayDestroy)                                                          \
	X(cuMipmappedArrayDestroy, cuMipmappedArrayDestroy)

#define DRV_DECLARE(name, proto) static __typeof__(proto) *drv_##name;
DRIVER_FUNCS(DRV_DECLARE)

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
/* Sticky, like the real runtime's initialisation errors. */
static cudaError_t load_err;
static int nr_devices;

static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext *dev_ctx; /* retained primary context per device, NULL until first use */

static __thread int cur_dev;
/* What this thread last made current. A program that switches contexts through the driver
 * API behind the runtime's back is not supported. */
static __thread CUcontext cur_ctx;
static __thread cudaError_t last_err;

static cudaError_t err_from_driver(CUresult r)
{
	switch (r) {
	case CUDA_SUCCESS:
		return cudaSuccess;
	case CUDA_ERROR_INVALID_VALUE:
		return cudaErrorInvalidValue;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return cudaErrorMemoryAllocation;
	case CUDA_ERROR_NOT_INITIALIZED:
		return cudaErrorInitializationError;
	case CUDA_ERROR_DEINITIALIZED:
		return cudaErrorCudartUnloading;
	case CUDA_ERROR_NO_DEVICE:
		return cudaErrorNoDevice;
	case CUDA_ERROR_INVALID_DEVICE:
		return cudaErrorInvalidDevice;
	case CUDA_ERROR_INVALID_CONTEXT:
		return cudaErrorDeviceUninitialized;
	case CUDA_ERROR_CONTEXT_IS_DESTROYED:
		return cudaErrorContextIsDestroyed;
	case CUDA_ERROR_INVALID_HANDLE:
		return cudaErrorInvalidResourceHandle;
	case CUDA_ERROR_NOT_READY:
		return cudaErrorNotReady;
	case CUDA_ERROR_NOT_SUPPORTED:
		return cudaErrorNotSupported;
	case CUDA_ERROR_ILLEGAL_STATE:
		return cudaErrorIllegalState;
	case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
		return cudaErrorHostMemoryAlreadyRegistered;
	case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
		return cudaErrorHostMemoryNotRegistered;
	case CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED:
		return cudaErrorStreamCaptureUnsupported;
	default:
		return cudaErrorUnknown;
	}
}

/* Every exported function returns through here so cudaGetLastError sees its failure. */
static cudaError_t ret(cudaError_t err)
{
	if (err != cudaSuccess)
		last_err = err;
	return err;
}

static cudaError_t ret_drv(CUresult r)
{
	return ret(err_from_driver(r));
}

static void load_driver(void)
{
	void *h;
	CUresult r;

	/* The real runtime answers a missing driver with cudaErrorInsufficientDriver. */
	load_err = cudaErrorInsufficientDriver;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return;
#define DRV_LOAD(name, proto)                                                                      \
	drv_##name = (__typeof__(proto) *)dlsym(h, #name);                                         \
	if (!drv_##name)                                                                           \
		return;
	DRIVER_FUNCS(DRV_LOAD)
#undef DRV_LOAD
	r = drv_cuInit(0);
	if (!r)
		r = drv_cuDeviceGetCount(&nr_devices);
	if (r) {
		load_err = err_from_driver(r);
		return;
	}
	dev_ctx = calloc((size_t)nr_devices, sizeof(*dev_ctx));
	load_err = dev_ctx ? cudaSuccess : cudaErrorMemoryAllocation;
	/* The driver stays loaded for the life of the process, as with the real runtime. */
}

static cudaError_t rt_load(void)
{
	pthread_once(&load_once, load_driver);
	return load_err;
}

/* Makes @dev's primary context current on this thread, retaining it on first use. */
static cudaError_t use_device(int dev)
{
	CUcontext ctx;
	CUresult r = CUDA_SUCCESS;

	pthread_mutex_lock(&ctx_lock);
	ctx = dev_ctx[dev];
	if (!ctx) {
		r = drv_cuDevicePrimaryCtxRetain(&ctx, dev);
		if (!r)
			dev_ctx[dev] = ctx;
	}
	pthread_mutex_unlock(&ctx_lock);
	if (r)
		return err_from_driver(r);
	if (ctx != cur_ctx) {
		r = drv_cuCtxSetCurrent(ctx);
		if (r)
			return err_from_driver(r);
		cur_ctx = ctx;
	}
	return cudaSuccess;
}

/* The start of every call that works on the current device. */
static cudaError_t rt_enter(void)
{
	cudaError_t err = rt_load();

	if (err)
		return err;
	return use_device(cur_dev);
}

/* A call that is its driver call on the current device: the driver's error, translated. */
#define RT_FORWARD(drv_call)                                                                       \
	do {                                                                                       \
		cudaError_t err_ = rt_enter();                                                     \
                                                                                                   \
		return err_ ? ret(err_) : ret_drv(drv_call);                                       \
	} while (0)

static void *to_ptr(CUdeviceptr d)
{
	return (void *)(uintptr_t)d;
}

static CUdeviceptr to_dptr(const void *p)
{
	return (CUdeviceptr)(uintptr_t)p;
}

/* --- devices --- */

cudaError_t CUDARTAPI cudaGetDeviceCount(int *count)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (!count)
		return ret(cudaErrorInvalidValue);
	*count = nr_devices;
	return cudaSuccess;
}

/* Per thread, like the real runtime; initialises the device's primary context at once. */
cudaError_t CUDARTAPI cudaSetDevice(int device)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (device < 0 || device >= nr_devices)
		return ret(cudaErrorInvalidDevice);
	err = use_device(device);
	if (!err)
		cur_dev = device;
	return ret(err);
}

cudaError_t CUDARTAPI cudaGetDevice(int *device)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (!device)
		return ret(cudaErrorInvalidValue);
	*device = cur_dev;
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaDeviceSynchronize(void)
{
	RT_FORWARD(drv_cuCtxSynchronize());
}

/* Frees what the current device's primary context holds; pool memory survives (see cuda.c). */
cudaError_t CUDARTAPI cudaDeviceReset(void)
{
	RT_FORWARD(drv_cuDevicePrimaryCtxReset_v2(cur_dev));
}

cudaError_t CUDARTAPI cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (device < 0 || device >= nr_devices)
		return ret(cudaErrorInvalidDevice);
	return ret_drv(drv_cuDeviceGetDefaultMemPool(memPool, device));
}

cudaError_t CUDARTAPI cudaMemGetInfo(size_t *free, size_t *total)
{
	RT_FORWARD(drv_cuMemGetInfo_v2(free, total));
}

/* --- allocation --- */

cudaError_t CUDARTAPI cudaMalloc(void **devPtr, size_t size)
{
	cudaError_t err = rt_enter();
	CUdeviceptr d;

	if (err)
		return ret(err);
	if (!devPtr)
		return ret(cudaErrorInvalidValue);
	/* CUDA's documented special case: success and a NULL pointer, nothing allocated. */
	if (!size) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	err = err_from_driver(drv_cuMemAlloc_v2(&d, size));
	if (!err)
		*devPtr = to_ptr(d);
	return ret(err);
}

cudaError_t CUDARTAPI cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
	cudaError_t err = rt_enter();
	CUdeviceptr d;

	if (err)
		return ret(err);
	if (!devPtr)
		return ret(cudaErrorInvalidValue);
	/* cudaMemAttachGlobal/Host have the driver's values; size 0 is refused there. */
	err = err_from_driver(drv_cuMemAllocManaged(&d, size, flags));
	if (!err)
		*devPtr = to_ptr(d);
	return ret(err);
}

cudaError_t CUDARTAPI cudaMallocHost(void **ptr, size_t size)
{
	cudaError_t err = rt_enter();
	void *p;

	if (err)
		return ret(err);
	if (!ptr)
		return ret(cudaErrorInvalidValue);
	err = err_from_driver(drv_cuMemAllocHost_v2(&p, size));
	if (!err)
		*ptr = p;
	return ret(err);
}

cudaError_t CUDARTAPI cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
	cudaError_t err = rt_enter();
	void *p;

	if (err)
		return ret(err);
	if (!pHost)
		return ret(cudaErrorInvalidValue);
	/* cudaHostAlloc* flags have the CU_MEMHOSTALLOC_* values. */
	err = err_from_driver(drv_cuMemHostAlloc(&p, size, flags));
	if (!err)
		*pHost = p;
	return ret(err);
}

/* The driver rounds the pitch up to 512 bytes: width 1000 gives pitch 1024. */
cudaError_t CUDARTAPI cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
	cudaError_t err = rt_enter();
	CUdeviceptr d;
	size_t p;

	if (err)
		return ret(err);
	if (!devPtr || !pitch)
		return ret(cudaErrorInvalidValue);
	err = err_from_driver(drv_cuMemAllocPitch_v2(&d, &p, width, height, 4));
	if (!err) {
		*devPtr = to_ptr(d);
		*pitch = p;
	}
	return ret(err);
}

/* @from_pool: cudaMallocFromPoolAsync*, where a NULL @pool is an error, not the default. */
static cudaError_t malloc_async(void **devPtr, size_t size, bool from_pool, cudaMemPool_t pool,
				cudaStream_t stream, bool per_thread)
{
	cudaError_t err = rt_enter();
	CUdeviceptr d;
	CUresult r;

	if (err)
		return ret(err);
	if (!devPtr || (from_pool && !pool))
		return ret(cudaErrorInvalidValue);
	/* cudaStream_t and CUstream are the same handle, special values included. */
	if (from_pool)
		r = per_thread ? drv_cuMemAllocFromPoolAsync_ptsz(&d, size, pool, stream)
			       : drv_cuMemAllocFromPoolAsync(&d, size, pool, stream);
	else
		r = per_thread ? drv_cuMemAllocAsync_ptsz(&d, size, stream)
			       : drv_cuMemAllocAsync(&d, size, stream);
	err = err_from_driver(r);
	if (!err)
		*devPtr = to_ptr(d);
	return ret(err);
}

cudaError_t CUDARTAPI cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
	return malloc_async(devPtr, size, false, NULL, hStream, false);
}

cudaError_t CUDARTAPI cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
	return malloc_async(devPtr, size, false, NULL, hStream, true);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool,
					      cudaStream_t stream)
{
	return malloc_async(ptr, size, true, memPool, stream, false);
}

cudaError_t CUDARTAPI cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool,
						   cudaStream_t stream)
{
	return malloc_async(ptr, size, true, memPool, stream, true);
}

/* --- free --- */

cudaError_t CUDARTAPI cudaFree(void *devPtr)
{
	cudaError_t err = rt_enter();

	if (err)
		return ret(err);
	/* cudaFree(NULL) is the classic "initialise the context" idiom: no-op, success. */
	if (!devPtr)
		return cudaSuccess;
	return ret_drv(drv_cuMemFree_v2(to_dptr(devPtr)));
}

cudaError_t CUDARTAPI cudaFreeHost(void *ptr)
{
	cudaError_t err = rt_enter();

	if (err)
		return ret(err);
	if (!ptr)
		return cudaSuccess;
	return ret_drv(drv_cuMemFreeHost(ptr));
}

static cudaError_t free_async(void *devPtr, cudaStream_t stream, bool per_thread)
{
	RT_FORWARD(per_thread ? drv_cuMemFreeAsync_ptsz(to_dptr(devPtr), stream)
			      : drv_cuMemFreeAsync(to_dptr(devPtr), stream));
}

cudaError_t CUDARTAPI cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream, false);
}

cudaError_t CUDARTAPI cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream)
{
	return free_async(devPtr, hStream, true);
}

/* --- streams and events --- */

static cudaError_t stream_create(cudaStream_t *pStream, unsigned int flags)
{
	RT_FORWARD(drv_cuStreamCreate(pStream, flags));
}

cudaError_t CUDARTAPI cudaStreamCreate(cudaStream_t *pStream)
{
	return stream_create(pStream, cudaStreamDefault);
}

cudaError_t CUDARTAPI cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	return stream_create(pStream, flags);
}

cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream)
{
	RT_FORWARD(drv_cuStreamDestroy_v2(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize(cudaStream_t stream)
{
	RT_FORWARD(drv_cuStreamSynchronize(stream));
}

cudaError_t CUDARTAPI cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
	RT_FORWARD(drv_cuStreamSynchronize_ptsz(stream));
}

static cudaError_t event_create(cudaEvent_t *event, unsigned int flags)
{
	RT_FORWARD(drv_cuEventCreate(event, flags));
}

cudaError_t CUDARTAPI cudaEventCreate(cudaEvent_t *event)
{
	return event_create(event, cudaEventDefault);
}

cudaError_t CUDARTAPI cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
	return event_create(event, flags);
}

static cudaError_t event_record(cudaEvent_t event, cudaStream_t stream, unsigned int flags,
				bool per_thread)
{
	cudaError_t err = rt_enter();

	if (err)
		return ret(err);
	/* cudaEventRecordExternal only matters during stream capture, which is not modelled. */
	if (flags & ~(unsigned int)cudaEventRecordExternal)
		return ret(cudaErrorInvalidValue);
	return ret_drv(per_thread ? drv_cuEventRecord_ptsz(event, stream)
				  : drv_cuEventRecord(event, stream));
}

cudaError_t CUDARTAPI cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	return event_record(event, stream, 0, false);
}

cudaError_t CUDARTAPI cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
	return event_record(event, stream, 0, true);
}

cudaError_t CUDARTAPI cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
					       unsigned int flags)
{
	return event_record(event, stream, flags, false);
}

cudaError_t CUDARTAPI cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
						    unsigned int flags)
{
	return event_record(event, stream, flags, true);
}

cudaError_t CUDARTAPI cudaEventSynchronize(cudaEvent_t event)
{
	RT_FORWARD(drv_cuEventSynchronize(event));
}

cudaError_t CUDARTAPI cudaEventDestroy(cudaEvent_t event)
{
	RT_FORWARD(drv_cuEventDestroy_v2(event));
}

/* --- copies --- */

static cudaError_t memcpy_any(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
			      bool per_thread)
{
	cudaError_t err = rt_enter();

	if (err)
		return ret(err);
	if ((unsigned int)kind > (unsigned int)cudaMemcpyDefault)
		return ret(cudaErrorInvalidMemcpyDirection);
	return ret_drv(per_thread ? drv_cuMemcpy_ptds(to_dptr(dst), to_dptr(src), count)
				  : drv_cuMemcpy(to_dptr(dst), to_dptr(src), count));
}

cudaError_t CUDARTAPI cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return memcpy_any(dst, src, count, kind, false);
}

cudaError_t CUDARTAPI cudaMemcpy_ptds(void *dst, const void *src, size_t count,
				      enum cudaMemcpyKind kind)
{
	return memcpy_any(dst, src, count, kind, true);
}

static cudaError_t memset_any(void *devPtr, int value, size_t count, bool per_thread)
{
	RT_FORWARD(per_thread ? drv_cuMemsetD8_v2_ptds(to_dptr(devPtr), (unsigned char)value, count)
			      : drv_cuMemsetD8_v2(to_dptr(devPtr), (unsigned char)value, count));
}

cudaError_t CUDARTAPI cudaMemset(void *devPtr, int value, size_t count)
{
	return memset_any(devPtr, value, count, false);
}

cudaError_t CUDARTAPI cudaMemset_ptds(void *devPtr, int value, size_t count)
{
	return memset_any(devPtr, value, count, true);
}

/* --- errors and versions --- */

cudaError_t CUDARTAPI cudaGetLastError(void)
{
	cudaError_t err = last_err;

	last_err = cudaSuccess;
	return err;
}

cudaError_t CUDARTAPI cudaPeekAtLastError(void)
{
	return last_err;
}

cudaError_t CUDARTAPI cudaRuntimeGetVersion(int *runtimeVersion)
{
	if (!runtimeVersion)
		return ret(cudaErrorInvalidValue);
	*runtimeVersion = CUDART_VERSION;
	return cudaSuccess;
}

/* The real runtime's names and strings for every code this stand-in can return. */
static const struct {
	cudaError_t err;
	const char *name;
	const char *str;
} err_strs[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorCudartUnloading, "cudaErrorCudartUnloading", "driver shutting down"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection",
     "invalid copy direction for memcpy"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorDeviceUninitialized, "cudaErrorDeviceUninitialized", "invalid device context"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorContextIsDestroyed, "cudaErrorContextIsDestroyed", "context is destroyed"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorIllegalState, "cudaErrorIllegalState",
     "the operation cannot be performed in the present state"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorStreamCaptureUnsupported, "cudaErrorStreamCaptureUnsupported",
     "operation not permitted when stream is capturing"},
    {cudaErrorInvalidChannelDescriptor, "cudaErrorInvalidChannelDescriptor",
     "invalid channel descriptor"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

static int err_index(cudaError_t err)
{
	unsigned int i;

	for (i = 0; i < sizeof(err_strs) / sizeof(err_strs[0]); i++)
		if (err_strs[i].err == err)
			return (int)i;
	return -1;
}

const char *CUDARTAPI cudaGetErrorName(cudaError_t error)
{
	int i = err_index(error);

	return i < 0 ? "unrecognized error code" : err_strs[i].name;
}

const char *CUDARTAPI cudaGetErrorString(cudaError_t error)
{
	int i = err_index(error);

	return i < 0 ? "unrecognized error code" : err_strs[i].str;
}

/* --- IPC, host registration, stream capture and graphs, pools, arrays --- */

/* cudaIpcMemHandle_t and CUipcMemHandle are the same 64 bytes. */
cudaError_t CUDARTAPI cudaIpcGetMemHandle(cudaIpcMemHandle_t *handle, void *devPtr)
{
	cudaError_t err = rt_enter();
	CUipcMemHandle h;

	if (err)
		return ret(err);
	if (!handle)
		return ret(cudaErrorInvalidValue);
	err = err_from_driver(drv_cuIpcGetMemHandle(&h, to_dptr(devPtr)));
	if (!err)
		memcpy(handle->reserved, h.reserved, sizeof(h.reserved));
	return ret(err);
}

cudaError_t CUDARTAPI cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle,
					   unsigned int flags)
{
	cudaError_t err = rt_enter();
	CUipcMemHandle h;
	CUdeviceptr d;

	if (err)
		return ret(err);
	if (!devPtr)
		return ret(cudaErrorInvalidValue);
	memcpy(h.reserved, handle.reserved, sizeof(h.reserved));
	err = err_from_driver(drv_cuIpcOpenMemHandle_v2(&d, h, flags));
	if (!err)
		*devPtr = to_ptr(d);
	return ret(err);
}

cudaError_t CUDARTAPI cudaIpcCloseMemHandle(void *devPtr)
{
	RT_FORWARD(drv_cuIpcCloseMemHandle(to_dptr(devPtr)));
}

/* cudaHostRegister* flags have the CU_MEMHOSTREGISTER_* values. */
cudaError_t CUDARTAPI cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
	RT_FORWARD(drv_cuMemHostRegister_v2(ptr, size, flags));
}

cudaError_t CUDARTAPI cudaHostUnregister(void *ptr)
{
	RT_FORWARD(drv_cuMemHostUnregister(ptr));
}

/* Stream capture: cudaStreamCaptureMode and CUstreamCaptureMode have the same values. */
static cudaError_t begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode,
				 bool per_thread)
{
	RT_FORWARD(per_thread ? drv_cuStreamBeginCapture_v2_ptsz(stream, (CUstreamCaptureMode)mode)
			      : drv_cuStreamBeginCapture_v2(stream, (CUstreamCaptureMode)mode));
}

cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
	return begin_capture(stream, mode, false);
}

cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream,
						  enum cudaStreamCaptureMode mode)
{
	return begin_capture(stream, mode, true);
}

cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
	RT_FORWARD(drv_cuStreamEndCapture(stream, pGraph));
}

cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
	RT_FORWARD(drv_cuStreamEndCapture_ptsz(stream, pGraph));
}

static cudaError_t is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
				bool per_thread)
{
	cudaError_t err = rt_enter();
	CUstreamCaptureStatus s;

	if (err)
		return ret(err);
	if (!status)
		return ret(cudaErrorInvalidValue);
	err = err_from_driver(per_thread ? drv_cuStreamIsCapturing_ptsz(stream, &s)
					 : drv_cuStreamIsCapturing(stream, &s));
	if (!err)
		*status = (enum cudaStreamCaptureStatus)s;
	return ret(err);
}

cudaError_t CUDARTAPI cudaStreamIsCapturing(cudaStream_t stream,
					    enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return is_capturing(stream, pCaptureStatus, false);
}

cudaError_t CUDARTAPI cudaStreamIsCapturing_ptsz(cudaStream_t stream,
						 enum cudaStreamCaptureStatus *pCaptureStatus)
{
	return is_capturing(stream, pCaptureStatus, true);
}

/* struct cudaMemAllocNodeParams and CUDA_MEM_ALLOC_NODE_PARAMS have one layout. */
cudaError_t CUDARTAPI cudaGraphAddMemAllocNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					       const cudaGraphNode_t *pDependencies,
					       size_t numDependencies,
					       struct cudaMemAllocNodeParams *nodeParams)
{
	cudaError_t err = rt_enter();
	CUDA_MEM_ALLOC_NODE_PARAMS p;

	if (err)
		return ret(err);
	if (!nodeParams)
		return ret(cudaErrorInvalidValue);
	memcpy(&p, nodeParams, sizeof(p));
	err = err_from_driver(
	    drv_cuGraphAddMemAllocNode(pGraphNode, graph, pDependencies, numDependencies, &p));
	if (!err)
		nodeParams->dptr = to_ptr(p.dptr);
	return ret(err);
}

cudaError_t CUDARTAPI cudaGraphAddMemFreeNode(cudaGraphNode_t *pGraphNode, cudaGraph_t graph,
					      const cudaGraphNode_t *pDependencies,
					      size_t numDependencies, void *dptr)
{
	RT_FORWARD(drv_cuGraphAddMemFreeNode(pGraphNode, graph, pDependencies, numDependencies,
					     to_dptr(dptr)));
}

cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
					   unsigned long long flags)
{
	RT_FORWARD(drv_cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

cudaError_t CUDARTAPI cudaGraphInstantiateWithFlags(cudaGraphExec_t *pGraphExec, cudaGraph_t graph,
						    unsigned long long flags)
{
	RT_FORWARD(drv_cuGraphInstantiateWithFlags(pGraphExec, graph, flags));
}

static cudaError_t graph_launch(cudaGraphExec_t exec, cudaStream_t stream, bool per_thread,
				bool upload)
{
	cudaError_t err = rt_enter();
	CUresult r;

	if (err)
		return ret(err);
	if (upload)
		r = per_thread ? drv_cuGraphUpload_ptsz(exec, stream)
			       : drv_cuGraphUpload(exec, stream);
	else
		r = per_thread ? drv_cuGraphLaunch_ptsz(exec, stream)
			       : drv_cuGraphLaunch(exec, stream);
	return ret_drv(r);
}

cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_launch(graphExec, stream, false, false);
}

cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_launch(graphExec, stream, true, false);
}

cudaError_t CUDARTAPI cudaGraphUpload(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_launch(graphExec, stream, false, true);
}

cudaError_t CUDARTAPI cudaGraphUpload_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
	return graph_launch(graphExec, stream, true, true);
}

cudaError_t CUDARTAPI cudaGraphExecDestroy(cudaGraphExec_t graphExec)
{
	RT_FORWARD(drv_cuGraphExecDestroy(graphExec));
}

cudaError_t CUDARTAPI cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
	RT_FORWARD(drv_cuGraphCreate(pGraph, flags));
}

cudaError_t CUDARTAPI cudaGraphDestroy(cudaGraph_t graph)
{
	RT_FORWARD(drv_cuGraphDestroy(graph));
}

cudaError_t CUDARTAPI cudaDeviceGraphMemTrim(int device)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (device < 0 || device >= nr_devices)
		return ret(cudaErrorInvalidDevice);
	return ret_drv(drv_cuDeviceGraphMemTrim(device));
}

/* struct cudaMemPoolProps and CUmemPoolProps, cudaMemPoolAttr and CUmemPool_attribute agree. */
cudaError_t CUDARTAPI cudaMemPoolCreate(cudaMemPool_t *memPool,
					const struct cudaMemPoolProps *poolProps)
{
	RT_FORWARD(drv_cuMemPoolCreate(memPool, (const CUmemPoolProps *)poolProps));
}

cudaError_t CUDARTAPI cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	RT_FORWARD(drv_cuMemPoolDestroy(memPool));
}

cudaError_t CUDARTAPI cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
	RT_FORWARD(drv_cuMemPoolTrimTo(memPool, minBytesToKeep));
}

cudaError_t CUDARTAPI cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
					      void *value)
{
	RT_FORWARD(drv_cuMemPoolSetAttribute(memPool, (CUmemPool_attribute)attr, value));
}

cudaError_t CUDARTAPI cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
					      void *value)
{
	RT_FORWARD(drv_cuMemPoolGetAttribute(memPool, (CUmemPool_attribute)attr, value));
}

cudaError_t CUDARTAPI cudaDeviceSetMemPool(int device, cudaMemPool_t memPool)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (device < 0 || device >= nr_devices)
		return ret(cudaErrorInvalidDevice);
	return ret_drv(drv_cuDeviceSetMemPool(device, memPool));
}

cudaError_t CUDARTAPI cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
	cudaError_t err = rt_load();

	if (err)
		return ret(err);
	if (device < 0 || device >= nr_devices)
		return ret(cudaErrorInvalidDevice);
	return ret_drv(drv_cuDeviceGetMemPool(memPool, device));
}

/*
 * Arrays: the channel format becomes the driver's array format (every channel the same
 * width), and the runtime's array handles are the driver's.
 */
static cudaError_t array_format(const struct cudaChannelFormatDesc *d, CUarray_format *fmt,
				unsigned int *channels)
{
	int bits = d->x;

	if (!d || bits <= 0 || (d->y && d->y != bits) || (d->z && d->z != bits) ||
	    (d->w && d->w != bits) || (!d->y && (d->z || d->w)) || (!d->z && d->w))
		return cudaErrorInvalidChannelDescriptor;
	*channels = 1 + !!d->y + !!d->z + !!d->w;
	if (*channels == 3)
		return cudaErrorInvalidChannelDescriptor;
	switch (d->f) {
	case cudaChannelFormatKindSigned:
		*fmt = bits == 8    ? CU_AD_FORMAT_SIGNED_INT8
		       : bits == 16 ? CU_AD_FORMAT_SIGNED_INT16
				    : CU_AD_FORMAT_SIGNED_INT32;
		break;
	case cudaChannelFormatKindUnsigned:
		*fmt = bits == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
		       : bits == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
				    : CU_AD_FORMAT_UNSIGNED_INT32;
		break;
	case cudaChannelFormatKindFloat:
		if (bits != 16 && bits != 32)
			return cudaErrorInvalidChannelDescriptor;
		*fmt = bits == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
		break;
	default:
		return cudaErrorInvalidChannelDescriptor;
	}
	return bits == 8 || bits == 16 || bits == 32 ? cudaSuccess
						     : cudaErrorInvalidChannelDescriptor;
}

/*
 * The driver's descriptor of an array the runtime call describes (out: its out-pointer, a
 * depth of 0 for a 2D array), on the current device: cudaSuccess or the error to return.
 */
static cudaError_t array_desc(const void *out, const struct cudaChannelFormatDesc *desc,
			      struct cudaExtent extent, unsigned int flags,
			      CUDA_ARRAY3D_DESCRIPTOR *d)
{
	cudaError_t err = rt_enter();

	if (err)
		return err;
	if (!out || !desc)
		return cudaErrorInvalidValue;
	memset(d, 0, sizeof(*d));
	err = array_format(desc, &d->Format, &d->NumChannels);
	if (err)
		return err;
	d->Width = extent.width;
	d->Height = extent.height;
	d->Depth = extent.depth;
	d->Flags = flags; /* cudaArrayLayered ... have the CUDA_ARRAY3D_* values */
	return cudaSuccess;
}

cudaError_t CUDARTAPI cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
				      size_t width, size_t height, unsigned int flags)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	cudaError_t err = array_desc(array, desc, (struct cudaExtent){width, height, 0}, flags, &d);

	if (err)
		return ret(err);
	return ret_drv(drv_cuArray3DCreate_v2((CUarray *)array, &d));
}

cudaError_t CUDARTAPI cudaMalloc3DArray(cudaArray_t *array,
					const struct cudaChannelFormatDesc *desc,
					struct cudaExtent extent, unsigned int flags)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	cudaError_t err = array_desc(array, desc, extent, flags, &d);

	if (err)
		return ret(err);
	return ret_drv(drv_cuArray3DCreate_v2((CUarray *)array, &d));
}

cudaError_t CUDARTAPI cudaMallocMipmappedArray(cudaMipmappedArray_t *mipmappedArray,
					       const struct cudaChannelFormatDesc *desc,
					       struct cudaExtent extent, unsigned int numLevels,
					       unsigned int flags)
{
	CUDA_ARRAY3D_DESCRIPTOR d;
	cudaError_t err = array_desc(mipmappedArray, desc, extent, flags, &d);

	if (err)
		return ret(err);
	return ret_drv(
	    drv_cuMipmappedArrayCreate((CUmipmappedArray *)mipmappedArray, &d, numLevels));
}

/* NULL is a no-op, as for cudaFree. */
cudaError_t CUDARTAPI cudaFreeArray(cudaArray_t array)
{
	cudaError_t err = rt_enter();

	if (err)
		return ret(err);
	if (!array)
		return cudaSuccess;
	return ret_drv(drv_cuArrayDestroy((CUarray)array));
}

cudaError_t CUDARTAPI cudaFreeMipmappedArray(cudaMipmappedArray_t mipmappedArray)
{
	cudaError_t err = rt_enter();

	if (err)
		return ret(err);
	if (!mipmappedArray)
		return cudaSuccess;
	return ret_drv(drv_cuMipmappedArrayDestroy((CUmipmappedArray)mipmappedArray));
}
