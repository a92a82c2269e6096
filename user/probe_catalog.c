// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The probe catalog. Argument positions are 1-based and follow the real prototypes in
 * /usr/local/cuda/include (cuda_runtime_api.h); the tests compile the stand-in runtime
 * against those headers, so a wrong position here shows up as wrong bytes there.
 */
#include <stdio.h>
#include <string.h>
#include "probe_catalog.h"

#define SPEC(sh, a, s, x, x2, m, fl)                                                               \
	{                                                                                          \
		.shape = (sh), .arg_addr = (a), .arg_size = (s), .arg_aux = (x), .arg_aux2 = (x2), \
		.arg_mul = (m), .flags = (fl)                                                      \
	}
/* int f(void **out, size_t size, aux...) */
#define OUTPTR(a, s, x, x2)   SPEC(GL_SHAPE_ALLOC_OUTPTR, a, s, x, x2, 0, 0)
#define FREE(a)		      SPEC(GL_SHAPE_FREE, a, 0, 0, 0, 0, 0)
#define FREE_ASYNC(a, stream) SPEC(GL_SHAPE_FREE_ASYNC, a, 0, stream, 0, 0, 0)
#define SYNC(x)		      SPEC(GL_SHAPE_SYNC, 0, 0, x, 0, 0, 0)
#define CALL(a, x)	      SPEC(GL_SHAPE_CALL, a, 0, x, 0, 0, 0)
/* API(name, id, spec, op, mem, flags [, .ns = ..., ...more designated fields]) */
#define API(n, id, sp, o, m, fl, ...)                                                              \
	{                                                                                          \
		.name = (n), .api = (id), .spec = sp, .op = (o), .mem = (m), .flags = (fl),        \
		##__VA_ARGS__                                                                      \
	}

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

    /* ld.so calls this empty function whenever its link map changes (dlopen/dlclose). */
    API("_dl_debug_state", GL_API_LD_DEBUG_STATE,
	SPEC(GL_SHAPE_NOTIFY, 0, 0, 0, 0, 0, GL_SPEC_WAKEUP | GL_SPEC_HOLD), OP_RENDEZVOUS,
	MEM_NONE, CAT_OPTIONAL),
};

const unsigned int cat_nr_apis = sizeof(cat_apis) / sizeof(cat_apis[0]);

const struct cat_api *cat_by_api(unsigned int api)
{
	/* Small and sorted by id: a binary search beats keeping a sparse 0x900-entry index. */
	unsigned int lo = 0, hi = cat_nr_apis;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (cat_apis[mid].api == api)
			return &cat_apis[mid];
		if (cat_apis[mid].api < api)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
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

		if (n[0] == name[0] && strlen(n) == len && !memcmp(n, name, len))
			return &cat_apis[i];
	}
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
		return a->name;
	b = buf[next++ % 4];
	snprintf(b, sizeof(buf[0]), "api#0x%x", api);
	return b;
}

/* Error names of the codes an allocation path returns most often (driver_types.h). */
static const struct {
	int code;
	const char *name;
} cudart_errors[] = {
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
    {304, "cudaErrorOperatingSystem"},
    {400, "cudaErrorInvalidResourceHandle"},
    {401, "cudaErrorIllegalState"},
    {600, "cudaErrorNotReady"},
    {700, "cudaErrorIllegalAddress"},
    {719, "cudaErrorLaunchFailure"},
    {800, "cudaErrorNotPermitted"},
    {801, "cudaErrorNotSupported"},
    {803, "cudaErrorSystemDriverMismatch"},
    {900, "cudaErrorStreamCaptureUnsupported"},
    {999, "cudaErrorUnknown"},
};

const char *cat_error_name(unsigned int api, int code)
{
	size_t i;

	if (GL_API_FAMILY(api) == GL_FAM_CUDART) {
		for (i = 0; i < sizeof(cudart_errors) / sizeof(cudart_errors[0]); i++)
			if (cudart_errors[i].code == code)
				return cudart_errors[i].name;
	}
	return NULL;
}
