// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stand-in for the NVIDIA driver library, libcuda.so.1, on machines without a GPU.
 *
 * The tests attach real uprobes to this library, so it has the real soname, the real
 * (unversioned) exported names and the prototypes of /usr/local/cuda/include/cuda.h.
 * Every function is defined under the name cuda.h spells (cuMemAlloc, cuCtxCreate, ...)
 * so the header's #defines turn it into the symbol the real driver exports (cuMemAlloc_v2,
 * cuCtxCreate_v4, ...) and the compiler checks each prototype.
 *
 * "Device" memory is anonymous host memory mapped with MAP_NORESERVE: an 80 GiB device
 * costs nothing until a test touches the pages. Each device has a capacity (bytes
 * requested, not pages) so out-of-memory paths are reachable.
 *
 * Stream-ordered frees are modelled explicitly: cuMemFreeAsync only queues the block on its
 * stream; the block is released (munmap, capacity returned) at the next synchronisation
 * that covers it: cuStreamSynchronize of that stream, cuEventSynchronize of an event
 * recorded on it after the free, or cuCtxSynchronize on its device. Nothing completes
 * "in the background", so a test always knows when memory goes away. The implicit ordering
 * between the legacy default stream and the other blocking streams is not modelled: a free
 * completes only through its own stream, an event on it, or the device.
 *
 * Deliberately never calls its own exported functions: a uprobe on an exported symbol
 * must fire once per application call, not once more per internal use.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/*
 * The real driver exports per-thread-default-stream variants too. cuda.h declares them only
 * when CUDA_API_PER_THREAD_DEFAULT_STREAM is defined, with the prototype of the plain name;
 * borrow that prototype so the definitions below are still checked against the header.
 */
extern __typeof__(cuMemAllocAsync) cuMemAllocAsync_ptsz;
extern __typeof__(cuMemAllocFromPoolAsync) cuMemAllocFromPoolAsync_ptsz;
extern __typeof__(cuMemFreeAsync) cuMemFreeAsync_ptsz;
extern __typeof__(cuStreamSynchronize) cuStreamSynchronize_ptsz;
extern __typeof__(cuEventRecord) cuEventRecord_ptsz;
extern __typeof__(cuMemcpy) cuMemcpy_ptds;
extern __typeof__(cuMemsetD8) cuMemsetD8_v2_ptds;

#define STANDIN_MAX_DEVICES	  16
#define STANDIN_DEFAULT_DEVICES	  2
#define STANDIN_DEFAULT_MEM_BYTES (80ULL << 30)
/* VMM granularity, minimum and recommended: the 2 MiB that current NVIDIA GPUs report. */
#define STANDIN_VMM_GRAN_BYTES	  (2ULL << 20)
#define STANDIN_PITCH_ALIGN_BYTES 512

enum alloc_kind {
	AK_DEVICE,  /* cuMemAlloc */
	AK_MANAGED, /* cuMemAllocManaged */
	AK_PITCH,   /* cuMemAllocPitch */
	AK_POOL,    /* cuMemAllocAsync, cuMemAllocFromPoolAsync: stream-ordered pool memory */
	AK_HOST,    /* cuMemAllocHost, cuMemHostAlloc: pinned host memory, no device capacity */
};

struct CUmemPoolHandle_st {
	int device;
};

struct CUstream_st {
	struct CUstream_st *next; /* created streams */
	/* Pending frees name their stream by id, never by pointer: an id is never reused,
	 * so a destroyed stream's frees can only complete through a context sync. */
	uint64_t id;
	struct CUctx_st *ctx;
	unsigned int flags;
};

struct CUctx_st {
	struct CUctx_st *next; /* created (non-primary) contexts */
	int device;
	bool primary;
	/* Destroyed contexts are never freed: another thread may still hold one as current
	 * and every entry point then sees destroyed instead of reading freed memory. */
	bool destroyed;
	unsigned int retain_count; /* primary contexts only */
	struct CUstream_st legacy; /* stream 0 / CU_STREAM_LEGACY of this context */
};

struct CUevent_st {
	struct CUevent_st *next;
	unsigned int flags;
	bool recorded;
	uint64_t stream_id; /* stream of the last cuEventRecord */
	uint64_t seq;	    /* frees queued up to this sequence number precede the event */
};

struct alloc {
	struct alloc *hnext;	     /* hash chain */
	struct alloc *pprev, *pnext; /* pending-free list, while free_pending */
	uintptr_t addr;
	size_t size_bytes; /* as requested; what the capacity counts */
	size_t map_bytes;  /* length of the mapping */
	enum alloc_kind kind;
	int device;
	struct CUctx_st *ctx;		 /* context current at allocation */
	struct CUmemPoolHandle_st *pool; /* AK_POOL only */
	bool free_pending;
	uint64_t stream_id; /* while free_pending */
	uint64_t free_seq;  /* while free_pending */
};

/* A physical allocation made by cuMemCreate. */
struct vmm_handle {
	struct vmm_handle *next;
	CUmemGenericAllocationHandle handle;
	int fd; /* memfd: the same memory can be mapped at many places */
	size_t size_bytes;
	int device; /* -1: on the host (CU_MEM_LOCATION_TYPE_HOST, _HOST_NUMA) */
	unsigned int nr_maps;
	/* References: 1 from cuMemCreate, 1 per cuMemRetainAllocationHandle, a cuMemRelease
	 * takes one back; at none it dies at its last unmap. */
	unsigned int refs;
};

struct vmm_reserve {
	struct vmm_reserve *next;
	uintptr_t base;
	size_t size_bytes;
};

struct vmm_map {
	struct vmm_map *next;
	uintptr_t addr;
	size_t size_bytes;
	struct vmm_handle *h;
	int prot;
};

/* Per-thread default stream of one context (CU_STREAM_PER_THREAD, or 0 in _ptsz calls). */
struct pt_stream {
	struct pt_stream *next;
	struct CUstream_st s;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static bool init_done;
static CUresult init_result;
static int nr_devices;
static size_t capacity_bytes;
static size_t used_bytes[STANDIN_MAX_DEVICES];
static struct CUctx_st primary_ctx[STANDIN_MAX_DEVICES];
static struct CUmemPoolHandle_st default_pool[STANDIN_MAX_DEVICES];
static pthread_key_t pt_key;

static struct CUctx_st *ctx_list;
static struct CUstream_st *stream_list;
static struct CUevent_st *event_list;
static struct vmm_handle *handle_list;
static struct vmm_reserve *reserve_list;
static struct vmm_map *map_list;

static uint64_t next_stream_id = 1;
static uint64_t next_free_seq;
static CUmemGenericAllocationHandle next_vmm_handle = 0x1000;

/* Live allocations by address; resized so chains stay short under benchmark loads. */
static struct alloc **htab;
static size_t htab_buckets;
static size_t htab_count;
static struct alloc *pending_head, *pending_tail;

static __thread struct CUctx_st *cur_ctx;
static __thread struct pt_stream *pt_streams;

static size_t htab_slot(uintptr_t addr, size_t buckets)
{
	return (size_t)(((uint64_t)(addr >> 12) * 0x9e3779b97f4a7c15ULL) >> 20) & (buckets - 1);
}

static int htab_grow(void)
{
	size_t n = htab_buckets ? htab_buckets * 2 : 1024;
	struct alloc **t = calloc(n, sizeof(*t));
	size_t i;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < htab_buckets; i++) {
		struct alloc *a = htab[i], *next;

		for (; a; a = next) {
			size_t s = htab_slot(a->addr, n);

			next = a->hnext;
			a->hnext = t[s];
			t[s] = a;
		}
	}
	free(htab);
	htab = t;
	htab_buckets = n;
	return 0;
}

static struct alloc *alloc_find(uintptr_t addr)
{
	struct alloc *a;

	if (!htab_buckets)
		return NULL;
	for (a = htab[htab_slot(addr, htab_buckets)]; a; a = a->hnext)
		if (a->addr == addr)
			return a;
	return NULL;
}

static void pending_add(struct alloc *a)
{
	a->pnext = NULL;
	a->pprev = pending_tail;
	if (pending_tail)
		pending_tail->pnext = a;
	else
		pending_head = a;
	pending_tail = a;
	a->free_pending = true;
}

static void pending_del(struct alloc *a)
{
	if (a->pprev)
		a->pprev->pnext = a->pnext;
	else
		pending_head = a->pnext;
	if (a->pnext)
		a->pnext->pprev = a->pprev;
	else
		pending_tail = a->pprev;
	a->pprev = a->pnext = NULL;
	a->free_pending = false;
}

/* Unmaps, returns the capacity and forgets the block. */
static void alloc_release(struct alloc *a)
{
	struct alloc **pp = &htab[htab_slot(a->addr, htab_buckets)];

	while (*pp != a)
		pp = &(*pp)->hnext;
	*pp = a->hnext;
	htab_count--;
	if (a->free_pending)
		pending_del(a);
	if (a->kind != AK_HOST)
		used_bytes[a->device] -= a->size_bytes;
	munmap((void *)a->addr, a->map_bytes);
	free(a);
}

/* A new block of @size_bytes on @device; CUDA_ERROR_OUT_OF_MEMORY past the capacity. */
static CUresult alloc_new(struct CUctx_st *ctx, int device, size_t size_bytes, enum alloc_kind kind,
			  struct CUmemPoolHandle_st *pool, uintptr_t *addr)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t map_bytes;
	struct alloc *a;
	void *p;
	size_t s;

	if (!size_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	if (kind != AK_HOST && size_bytes > capacity_bytes - used_bytes[device])
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (size_bytes > SIZE_MAX - page)
		return CUDA_ERROR_OUT_OF_MEMORY;
	map_bytes = (size_bytes + page - 1) & ~(page - 1);
	if (htab_count >= htab_buckets * 2 && htab_grow())
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	p = mmap(NULL, map_bytes, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	a->addr = (uintptr_t)p;
	a->size_bytes = size_bytes;
	a->map_bytes = map_bytes;
	a->kind = kind;
	a->device = device;
	a->ctx = ctx;
	a->pool = pool;
	s = htab_slot(a->addr, htab_buckets);
	a->hnext = htab[s];
	htab[s] = a;
	htab_count++;
	if (kind != AK_HOST)
		used_bytes[device] += size_bytes;
	*addr = a->addr;
	return CUDA_SUCCESS;
}

/*
 * What a context's destruction or reset frees: everything allocated in it, pending frees
 * included, except stream-ordered pool memory, which belongs to the device's memory pool
 * rather than to the context. (Whether the real cudaDeviceReset trims the default pool is
 * not documented; the tests' expectations follow this model.)
 */
static void ctx_release_allocs(struct CUctx_st *ctx)
{
	size_t i;

	for (i = 0; i < htab_buckets; i++) {
		struct alloc *a = htab[i], *next;

		for (; a; a = next) {
			next = a->hnext;
			if (a->ctx == ctx && a->kind != AK_POOL)
				alloc_release(a);
		}
	}
}

/* Releases pending frees; stream_id 0 matches any stream, device -1 any device. */
static void pending_complete(uint64_t stream_id, int device, uint64_t max_seq)
{
	struct alloc *a = pending_head, *next;

	for (; a; a = next) {
		next = a->pnext;
		if (stream_id && a->stream_id != stream_id)
			continue;
		if (device >= 0 && a->device != device)
			continue;
		if (a->free_seq > max_seq)
			continue;
		alloc_release(a);
	}
}

/* "123", "64K", "80G": binary multiples, as the env knobs are documented. */
static int parse_bytes(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -EINVAL;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1ULL << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mul = 1ULL << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mul = 1ULL << 30;
		end++;
		break;
	case 't':
	case 'T':
		mul = 1ULL << 40;
		end++;
		break;
	}
	if (*end || (v && mul > SIZE_MAX / v))
		return -EINVAL;
	*out = (size_t)(v * mul);
	return 0;
}

static void pt_streams_free(void *head)
{
	struct pt_stream *p = head, *next;

	/* Frees still queued on these streams keep their (dead) stream id: only a context
	 * sync completes them now, as for a destroyed stream. Another key's destructor may
	 * still call in, so the list must look empty, not dangle. */
	pt_streams = NULL;
	for (; p; p = next) {
		next = p->next;
		free(p);
	}
}

static CUresult do_init(void)
{
	const char *env;
	size_t n;
	int i;

	env = getenv("GPULEAK_STANDIN_DEVICES");
	n = STANDIN_DEFAULT_DEVICES;
	if (env && (parse_bytes(env, &n) || n > STANDIN_MAX_DEVICES)) {
		fprintf(stderr, "libcuda stand-in: GPULEAK_STANDIN_DEVICES=%s: want 0..%d\n", env,
			STANDIN_MAX_DEVICES);
		return CUDA_ERROR_INVALID_VALUE;
	}
	nr_devices = (int)n;
	env = getenv("GPULEAK_STANDIN_DEVICE_MEM");
	capacity_bytes = STANDIN_DEFAULT_MEM_BYTES;
	if (env && parse_bytes(env, &capacity_bytes)) {
		fprintf(stderr,
			"libcuda stand-in: GPULEAK_STANDIN_DEVICE_MEM=%s: want 123, 64K, 2M...\n",
			env);
		return CUDA_ERROR_INVALID_VALUE;
	}
	/* Like the real driver on a machine whose GPUs are all hidden. */
	if (!nr_devices)
		return CUDA_ERROR_NO_DEVICE;
	if (pthread_key_create(&pt_key, pt_streams_free))
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (htab_grow())
		return CUDA_ERROR_OUT_OF_MEMORY;
	for (i = 0; i < nr_devices; i++) {
		primary_ctx[i].device = i;
		primary_ctx[i].primary = true;
		primary_ctx[i].legacy.id = next_stream_id++;
		primary_ctx[i].legacy.ctx = &primary_ctx[i];
		default_pool[i].device = i;
	}
	return CUDA_SUCCESS;
}

/* Every entry point but cuInit and cuDriverGetVersion starts here, lock held. */
static CUresult check_init(void)
{
	if (!init_done)
		return CUDA_ERROR_NOT_INITIALIZED;
	return init_result;
}

static CUresult check_ctx(struct CUctx_st **ctx)
{
	CUresult err = check_init();

	if (err)
		return err;
	if (!cur_ctx || cur_ctx->destroyed)
		return CUDA_ERROR_INVALID_CONTEXT;
	*ctx = cur_ctx;
	return CUDA_SUCCESS;
}

static bool device_ok(CUdevice dev)
{
	return dev >= 0 && dev < nr_devices;
}

/* Handles come from the application: compare, never dereference an unknown one. */
static bool ctx_known(struct CUctx_st *ctx)
{
	struct CUctx_st *c;
	int i;

	for (i = 0; i < nr_devices; i++)
		if (ctx == &primary_ctx[i])
			return true;
	for (c = ctx_list; c; c = c->next)
		if (c == ctx)
			return true;
	return false;
}

static struct CUstream_st *per_thread_stream(struct CUctx_st *ctx)
{
	struct pt_stream *p;

	for (p = pt_streams; p; p = p->next)
		if (p->s.ctx == ctx)
			return &p->s;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->s.id = next_stream_id++;
	p->s.ctx = ctx;
	p->next = pt_streams;
	pt_streams = p;
	pthread_setspecific(pt_key, pt_streams);
	return &p->s;
}

/*
 * A stream handle as the API accepts it. NULL is the legacy stream of the current context,
 * or, in the _ptsz/_ptds entry points, the calling thread's per-thread stream.
 */
static CUresult stream_resolve(CUstream h, bool per_thread, struct CUstream_st **out)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult err;

	if (h && h != CU_STREAM_LEGACY && h != CU_STREAM_PER_THREAD) {
		err = check_init();
		if (err)
			return err;
		for (s = stream_list; s; s = s->next)
			if (s == h)
				break;
		if (!s)
			return CUDA_ERROR_INVALID_HANDLE;
		if (s->ctx->destroyed)
			return CUDA_ERROR_CONTEXT_IS_DESTROYED;
		*out = s;
		return CUDA_SUCCESS;
	}
	err = check_ctx(&ctx);
	if (err)
		return err;
	if (h == CU_STREAM_PER_THREAD || (!h && per_thread)) {
		s = per_thread_stream(ctx);
		if (!s)
			return CUDA_ERROR_OUT_OF_MEMORY;
	} else {
		s = &ctx->legacy;
	}
	*out = s;
	return CUDA_SUCCESS;
}

static struct CUevent_st *event_find(CUevent h)
{
	struct CUevent_st *e;

	for (e = event_list; e; e = e->next)
		if (e == h)
			return e;
	return NULL;
}

static bool pool_ok(CUmemoryPool pool)
{
	int i;

	for (i = 0; i < nr_devices; i++)
		if (pool == &default_pool[i])
			return true;
	return false;
}

/* --- initialisation, devices, contexts --- */

CUresult CUDAAPI cuInit(unsigned int Flags)
{
	CUresult err;

	if (Flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	if (!init_done) {
		init_result = do_init();
		init_done = true;
	}
	err = init_result;
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDriverGetVersion(int *driverVersion)
{
	if (!driverVersion)
		return CUDA_ERROR_INVALID_VALUE;
	*driverVersion = CUDA_VERSION;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !device_ok(ordinal))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*device = ordinal;
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !count)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*count = nr_devices;
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult get_pool(CUmemoryPool *pool, CUdevice dev)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !pool)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*pool = &default_pool[dev];
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	return get_pool(pool_out, dev);
}

/* No cuDeviceSetMemPool here: the current pool is always the default one. */
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return get_pool(pool, dev);
}

CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !pctx)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err) {
		primary_ctx[dev].retain_count++;
		*pctx = &primary_ctx[dev];
	}
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err && !primary_ctx[dev].retain_count)
		err = CUDA_ERROR_INVALID_CONTEXT;
	/* The last release destroys the primary context's resources, as in CUDA. */
	if (!err && !--primary_ctx[dev].retain_count)
		ctx_release_allocs(&primary_ctx[dev]);
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		ctx_release_allocs(&primary_ctx[dev]);
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
			     unsigned int flags, CUdevice dev)
{
	struct CUctx_st *ctx;
	CUresult err;

	(void)ctxCreateParams; /* affinity and CIG settings mean nothing without a GPU */
	(void)flags;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !pctx)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err) {
		ctx = calloc(1, sizeof(*ctx));
		if (!ctx) {
			err = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			ctx->device = dev;
			ctx->legacy.id = next_stream_id++;
			ctx->legacy.ctx = ctx;
			ctx->next = ctx_list;
			ctx_list = ctx;
			/* cuCtxCreate makes the new context current, like the real one. */
			cur_ctx = ctx;
			*pctx = ctx;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
	struct CUctx_st **pp;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err) {
		for (pp = &ctx_list; *pp && *pp != ctx; pp = &(*pp)->next)
			;
		/* Primary contexts are released, not destroyed. */
		if (!*pp) {
			err = CUDA_ERROR_INVALID_CONTEXT;
		} else {
			*pp = ctx->next;
			ctx->destroyed = true;
			ctx_release_allocs(ctx);
			if (cur_ctx == ctx)
				cur_ctx = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && ctx && (!ctx_known(ctx) || ctx->destroyed))
		err = CUDA_ERROR_INVALID_CONTEXT;
	if (!err)
		cur_ctx = ctx;
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !pctx)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*pctx = cur_ctx;
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuCtxGetDevice(CUdevice *device)
{
	struct CUctx_st *ctx;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (!err && !device)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		*device = ctx->device;
	pthread_mutex_unlock(&lock);
	return err;
}

/* Completes every stream of the device, whichever context or thread queued the free. */
CUresult CUDAAPI cuCtxSynchronize(void)
{
	struct CUctx_st *ctx;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (!err)
		pending_complete(0, ctx->device, UINT64_MAX);
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- allocation --- */

static CUresult mem_alloc(uintptr_t *out, size_t size_bytes, enum alloc_kind kind)
{
	struct CUctx_st *ctx;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (!err)
		err = alloc_new(ctx, ctx->device, size_bytes, kind, NULL, out);
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemAlloc(CUdeviceptr *dptr, size_t bytesize)
{
	uintptr_t p;
	CUresult err;

	if (!dptr)
		return CUDA_ERROR_INVALID_VALUE;
	err = mem_alloc(&p, bytesize, AK_DEVICE);
	if (!err)
		*dptr = p;
	return err;
}

CUresult CUDAAPI cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
	uintptr_t p;
	CUresult err;

	if (!dptr || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
		return CUDA_ERROR_INVALID_VALUE;
	/* Counted against the device like cuMemAlloc: the stand-in never migrates pages. */
	err = mem_alloc(&p, bytesize, AK_MANAGED);
	if (!err)
		*dptr = p;
	return err;
}

CUresult CUDAAPI cuMemAllocPitch(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
				 size_t Height, unsigned int ElementSizeBytes)
{
	size_t pitch;
	uintptr_t p;
	CUresult err;

	if (!dptr || !pPitch || !WidthInBytes || !Height)
		return CUDA_ERROR_INVALID_VALUE;
	if (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16)
		return CUDA_ERROR_INVALID_VALUE;
	if (WidthInBytes > SIZE_MAX - STANDIN_PITCH_ALIGN_BYTES)
		return CUDA_ERROR_INVALID_VALUE;
	pitch = (WidthInBytes + STANDIN_PITCH_ALIGN_BYTES - 1) &
		~(size_t)(STANDIN_PITCH_ALIGN_BYTES - 1);
	if (Height > SIZE_MAX / pitch)
		return CUDA_ERROR_OUT_OF_MEMORY;
	err = mem_alloc(&p, pitch * Height, AK_PITCH);
	if (!err) {
		*dptr = p;
		*pPitch = pitch;
	}
	return err;
}

CUresult CUDAAPI cuMemAllocHost(void **pp, size_t bytesize)
{
	uintptr_t p;
	CUresult err;

	if (!pp)
		return CUDA_ERROR_INVALID_VALUE;
	err = mem_alloc(&p, bytesize, AK_HOST);
	if (!err)
		*pp = (void *)p;
	return err;
}

CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	const unsigned int known =
	    CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
	uintptr_t p;
	CUresult err;

	if (!pp || (Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	err = mem_alloc(&p, bytesize, AK_HOST);
	if (!err)
		*pp = (void *)p;
	return err;
}

/*
 * Stream-ordered allocation. A block whose free is still queued on the same stream, from
 * the same pool and of exactly the same size is handed out again at the same address:
 * legal in CUDA (the stream orders the reuse after the free), and the case a leak tracker
 * must not mistake for a double allocation. The oldest such block goes first.
 */
static CUresult alloc_async(CUdeviceptr *dptr, size_t size_bytes, bool from_pool, CUmemoryPool pool,
			    CUstream h, bool per_thread)
{
	struct CUstream_st *s;
	struct alloc *a;
	uintptr_t p;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = stream_resolve(h, per_thread, &s);
	if (err)
		goto out;
	if (!dptr) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!from_pool) {
		pool = &default_pool[s->ctx->device];
	} else if (!pool_ok(pool)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (a = pending_head; a; a = a->pnext) {
		if (a->kind == AK_POOL && a->stream_id == s->id && a->pool == pool &&
		    a->size_bytes == size_bytes) {
			pending_del(a);
			*dptr = a->addr;
			goto out;
		}
	}
	err = alloc_new(s->ctx, pool->device, size_bytes, AK_POOL, pool, &p);
	if (!err)
		*dptr = p;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, false, NULL, hStream, false);
}

CUresult CUDAAPI cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
	return alloc_async(dptr, bytesize, false, NULL, hStream, true);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					 CUstream hStream)
{
	return alloc_async(dptr, bytesize, true, pool, hStream, false);
}

CUresult CUDAAPI cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
					      CUstream hStream)
{
	return alloc_async(dptr, bytesize, true, pool, hStream, true);
}

/* --- free --- */

/* Unknown, already freed (or free queued) and wrong-family pointers: CUDA_ERROR_INVALID_VALUE. */
static CUresult mem_free(uintptr_t addr, bool host)
{
	struct alloc *a;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	a = alloc_find(addr);
	if (!a || a->free_pending || (a->kind == AK_HOST) != host) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Pool memory may be freed synchronously too; CUDA then waits for the device. */
	alloc_release(a);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemFree(CUdeviceptr dptr)
{
	return mem_free(dptr, false);
}

CUresult CUDAAPI cuMemFreeHost(void *p)
{
	return mem_free((uintptr_t)p, true);
}

static CUresult free_async(CUdeviceptr dptr, CUstream h, bool per_thread)
{
	struct CUstream_st *s;
	struct alloc *a;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = stream_resolve(h, per_thread, &s);
	if (err)
		goto out;
	/* Memory from cuMemAlloc may be freed in stream order too; host memory may not. */
	a = alloc_find(dptr);
	if (!a || a->free_pending || a->kind == AK_HOST) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	a->stream_id = s->id;
	a->free_seq = ++next_free_seq;
	pending_add(a);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, false);
}

CUresult CUDAAPI cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
	return free_async(dptr, hStream, true);
}

CUresult CUDAAPI cuMemGetInfo(size_t *free, size_t *total)
{
	struct CUctx_st *ctx;
	CUresult err;

	if (!free || !total)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (!err) {
		*free = capacity_bytes - used_bytes[ctx->device];
		*total = capacity_bytes;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- streams and events --- */

CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	struct CUstream_st *s;
	struct CUctx_st *ctx;
	CUresult err;

	if (!phStream || (Flags & ~(unsigned int)CU_STREAM_NON_BLOCKING))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (err)
		goto out;
	s = calloc(1, sizeof(*s));
	if (!s) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	s->id = next_stream_id++;
	s->ctx = ctx;
	s->flags = Flags;
	s->next = stream_list;
	stream_list = s;
	*phStream = s;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/*
 * Frees still queued on the stream stay queued under its id: in CUDA they complete once the
 * device drains the stream; here only a cuCtxSynchronize on the device observes that.
 */
CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
	struct CUstream_st **pp;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &stream_list; *pp && *pp != hStream; pp = &(*pp)->next)
		;
	if (!*pp) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	*pp = hStream->next;
	free(hStream);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult stream_sync(CUstream h, bool per_thread)
{
	struct CUstream_st *s;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = stream_resolve(h, per_thread, &s);
	if (!err)
		pending_complete(s->id, -1, UINT64_MAX);
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	return stream_sync(hStream, false);
}

CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
	return stream_sync(hStream, true);
}

CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	const unsigned int known =
	    CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	struct CUevent_st *e;
	struct CUctx_st *ctx;
	CUresult err;

	if (!phEvent || (Flags & ~known))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (err)
		goto out;
	e = calloc(1, sizeof(*e));
	if (!e) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	e->flags = Flags;
	e->next = event_list;
	event_list = e;
	*phEvent = e;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

static CUresult event_record(CUevent h, CUstream hs, bool per_thread)
{
	struct CUstream_st *s;
	struct CUevent_st *e;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = stream_resolve(hs, per_thread, &s);
	if (err)
		goto out;
	e = event_find(h);
	if (!e) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	/* The event completes after every free queued on the stream so far, and no later. */
	e->recorded = true;
	e->stream_id = s->id;
	e->seq = next_free_seq;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	return event_record(hEvent, hStream, false);
}

CUresult CUDAAPI cuEventRecord_ptsz(CUevent hEvent, CUstream hStream)
{
	return event_record(hEvent, hStream, true);
}

CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	struct CUevent_st *e;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	e = event_find(hEvent);
	if (!e) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	/* An event never recorded is complete and completes nothing. */
	if (e->recorded)
		pending_complete(e->stream_id, -1, e->seq);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuEventDestroy(CUevent hEvent)
{
	struct CUevent_st **pp;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &event_list; *pp && *pp != hEvent; pp = &(*pp)->next)
		;
	if (!*pp) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	*pp = hEvent->next;
	free(hEvent);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- copies --- */

/* With unified addressing any host pointer is a valid copy end, so nothing is checked. */
static CUresult mem_copy(CUdeviceptr dst, CUdeviceptr src, size_t n)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	pthread_mutex_unlock(&lock);
	if (!err && n)
		memmove((void *)dst, (const void *)src, n);
	return err;
}

CUresult CUDAAPI cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return mem_copy(dst, src, ByteCount);
}

CUresult CUDAAPI cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
	return mem_copy(dst, src, ByteCount);
}

static bool range_in(uintptr_t p, size_t n, uintptr_t base, size_t size)
{
	return p >= base && p - base <= size && n <= size - (p - base);
}

/* A memset target must be device-visible memory the stand-in handed out. */
static bool range_writable(uintptr_t p, size_t n)
{
	struct vmm_map *m;
	size_t i;

	for (i = 0; i < htab_buckets; i++) {
		struct alloc *a;

		for (a = htab[i]; a; a = a->hnext)
			if (range_in(p, n, a->addr, a->size_bytes))
				return true;
	}
	for (m = map_list; m; m = m->next)
		if ((m->prot & PROT_WRITE) && range_in(p, n, m->addr, m->size_bytes))
			return true;
	return false;
}

static CUresult mem_set(CUdeviceptr dst, unsigned char uc, size_t n)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !range_writable(dst, n))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		memset((void *)dst, uc, n);
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemsetD8(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return mem_set(dstDevice, uc, N);
}

CUresult CUDAAPI cuMemsetD8_v2_ptds(CUdeviceptr dstDevice, unsigned char uc, size_t N)
{
	return mem_set(dstDevice, uc, N);
}

/* --- virtual memory management --- */

static bool gran_aligned(uint64_t v)
{
	return !(v & (STANDIN_VMM_GRAN_BYTES - 1));
}

/*
 * On a device, or on the host: CU_MEM_LOCATION_TYPE_HOST (id ignored) or _HOST_NUMA (id a
 * NUMA node: 0 here, one node), as NCCL's ncclCuMemHostAlloc asks. cuda.h: _HOST_NUMA_CURRENT
 * "will result in CUDA_ERROR_INVALID_VALUE" for cuMemCreate.
 */
static bool prop_ok(const CUmemAllocationProp *prop)
{
	if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
		return false;
	switch (prop->location.type) {
	case CU_MEM_LOCATION_TYPE_DEVICE:
		return device_ok(prop->location.id);
	case CU_MEM_LOCATION_TYPE_HOST:
		return true;
	case CU_MEM_LOCATION_TYPE_HOST_NUMA:
		return prop->location.id == 0;
	default:
		return false;
	}
}

CUresult CUDAAPI cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
					       CUmemAllocationGranularity_flags option)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	pthread_mutex_unlock(&lock);
	if (err)
		return err;
	if (!granularity || !prop_ok(prop) ||
	    (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
	     option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = STANDIN_VMM_GRAN_BYTES;
	return CUDA_SUCCESS;
}

CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
				     CUdeviceptr addr, unsigned long long flags)
{
	struct vmm_reserve *r = NULL;
	size_t align = alignment > STANDIN_VMM_GRAN_BYTES ? alignment : STANDIN_VMM_GRAN_BYTES;
	uintptr_t base, start;
	size_t span;
	CUresult err;
	void *p;

	if (!ptr || !size || !gran_aligned(size) || flags || (alignment & (alignment - 1)) ||
	    size > SIZE_MAX - align)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	/* Over-reserve, then trim to the alignment: mmap only promises page alignment. */
	span = size + align;
	p = mmap((void *)addr, span, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	base = (uintptr_t)p;
	start = (base + align - 1) & ~(uintptr_t)(align - 1);
	if (start > base)
		munmap(p, start - base);
	if (base + span > start + size)
		munmap((void *)(start + size), base + span - (start + size));
	r->base = start;
	r->size_bytes = size;
	r->next = reserve_list;
	reserve_list = r;
	*ptr = start;
	r = NULL;
out:
	pthread_mutex_unlock(&lock);
	free(r);
	return err;
}

/* Stricter than CUDA documents: a range that still has mappings is refused, not leaked. */
CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
	struct vmm_reserve **pp, *r;
	struct vmm_map *m;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &reserve_list; *pp; pp = &(*pp)->next)
		if ((*pp)->base == ptr && (*pp)->size_bytes == size)
			break;
	if (!*pp) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	r = *pp;
	for (m = map_list; m; m = m->next) {
		if (range_in(m->addr, m->size_bytes, r->base, r->size_bytes)) {
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	*pp = r->next;
	munmap((void *)r->base, r->size_bytes);
	free(r);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
			     const CUmemAllocationProp *prop, unsigned long long flags)
{
	struct vmm_handle *h = NULL;
	int dev, fd = -1;
	CUresult err;

	if (!handle || !size || !gran_aligned(size) || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	if (!prop_ok(prop)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	dev = prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : -1;
	if (dev >= 0 && size > capacity_bytes - used_bytes[dev]) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h = calloc(1, sizeof(*h));
	fd = memfd_create("gpuleak-standin-vmm", MFD_CLOEXEC);
	if (!h || fd < 0 || ftruncate(fd, (off_t)size)) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h->handle = next_vmm_handle++;
	h->fd = fd;
	h->size_bytes = size;
	h->device = dev;
	h->refs = 1;
	h->next = handle_list;
	handle_list = h;
	if (dev >= 0)
		used_bytes[dev] += size;
	*handle = h->handle;
	h = NULL;
	fd = -1;
out:
	pthread_mutex_unlock(&lock);
	if (fd >= 0)
		close(fd);
	free(h);
	return err;
}

static struct vmm_handle *handle_find(CUmemGenericAllocationHandle handle)
{
	struct vmm_handle *h;

	for (h = handle_list; h; h = h->next)
		if (h->handle == handle)
			return h;
	return NULL;
}

static void handle_destroy(struct vmm_handle *h)
{
	struct vmm_handle **pp;

	for (pp = &handle_list; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	if (h->device >= 0)
		used_bytes[h->device] -= h->size_bytes;
	close(h->fd);
	free(h);
}

/*
 * One reference less; at none the physical memory dies, or, while mapped, at its last
 * cuMemUnmap. A release of a handle with no reference left is CUDA_ERROR_INVALID_VALUE.
 */
CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
	struct vmm_handle *h;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	h = handle_find(handle);
	if (!h || !h->refs) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (!--h->refs && !h->nr_maps)
		handle_destroy(h);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

static struct vmm_reserve *reserve_covering(uintptr_t p, size_t n)
{
	struct vmm_reserve *r;

	for (r = reserve_list; r; r = r->next)
		if (range_in(p, n, r->base, r->size_bytes))
			return r;
	return NULL;
}

CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
			  CUmemGenericAllocationHandle handle, unsigned long long flags)
{
	struct vmm_map *m = NULL, *o;
	struct vmm_handle *h;
	CUresult err;
	void *p;

	/* cuda.h: "offset ... currently must be zero". */
	if (!size || !gran_aligned(ptr) || !gran_aligned(size) || offset || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	h = handle_find(handle);
	if (!h || !h->refs || size > h->size_bytes || !reserve_covering(ptr, size)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (o = map_list; o; o = o->next) {
		if (ptr < o->addr + o->size_bytes && o->addr < ptr + size) {
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	/* Inaccessible until cuMemSetAccess, as the real cuMemMap documents. */
	p = mmap((void *)ptr, size, PROT_NONE, MAP_SHARED | MAP_FIXED, h->fd, 0);
	if (p == MAP_FAILED) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	m->addr = ptr;
	m->size_bytes = size;
	m->h = h;
	m->prot = PROT_NONE;
	m->next = map_list;
	map_list = m;
	h->nr_maps++;
	m = NULL;
out:
	pthread_mutex_unlock(&lock);
	free(m);
	return err;
}

/*
 * Calls @fn on each mapping of [ptr, ptr + size) in address order; fails unless the range is
 * exactly a run of whole, adjacent mappings.
 */
static CUresult for_each_map(uintptr_t ptr, size_t size, void (*fn)(struct vmm_map *m, void *arg),
			     void *arg)
{
	uintptr_t at, end;
	struct vmm_map *m;
	size_t len;
	int pass;

	if (!size || ptr > UINTPTR_MAX - size)
		return CUDA_ERROR_INVALID_VALUE;
	end = ptr + size;
	/* First pass checks, second applies: a refused call changes nothing. */
	for (pass = 0; pass < 2; pass++) {
		for (at = ptr; at < end; at += len) {
			for (m = map_list; m; m = m->next)
				if (m->addr == at)
					break;
			if (!m || m->size_bytes > end - at)
				return CUDA_ERROR_INVALID_VALUE;
			len = m->size_bytes; /* fn may free m */
			if (pass)
				fn(m, arg);
		}
	}
	return CUDA_SUCCESS;
}

static void map_set_prot(struct vmm_map *m, void *arg)
{
	m->prot = *(int *)arg;
	mprotect((void *)m->addr, m->size_bytes, m->prot);
}

CUresult CUDAAPI cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
				size_t count)
{
	int prot = PROT_NONE;
	CUresult err;
	size_t i;

	if (!desc || !count)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	/* The host is every device's view here: grant the union of what the devices get. */
	for (i = 0; i < count; i++) {
		/* The host itself (ncclCuMemHostAlloc grants its NUMA node access too) */
		bool host = desc[i].location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA &&
			    desc[i].location.id == 0;

		if (!host && (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
			      !device_ok(desc[i].location.id))) {
			err = CUDA_ERROR_INVALID_DEVICE;
			goto out;
		}
		switch (desc[i].flags) {
		case CU_MEM_ACCESS_FLAGS_PROT_NONE:
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READ:
			prot |= PROT_READ;
			break;
		case CU_MEM_ACCESS_FLAGS_PROT_READWRITE:
			prot |= PROT_READ | PROT_WRITE;
			break;
		default:
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	err = for_each_map(ptr, size, map_set_prot, &prot);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

static void map_drop(struct vmm_map *m, void *arg)
{
	struct vmm_map **pp;

	(void)arg;
	/* Back to a bare reservation, so the range can be mapped again. */
	mmap((void *)m->addr, m->size_bytes, PROT_NONE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	for (pp = &map_list; *pp != m; pp = &(*pp)->next)
		;
	*pp = m->next;
	if (!--m->h->nr_maps && !m->h->refs)
		handle_destroy(m->h);
	free(m);
}

CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err)
		err = for_each_map(ptr, size, map_drop, NULL);
	pthread_mutex_unlock(&lock);
	return err;
}

/* The mapping of the stand-in's VMM memory that holds p, or NULL. */
static struct vmm_map *map_holding(uintptr_t p)
{
	struct vmm_map *m;

	for (m = map_list; m; m = m->next)
		if (p >= m->addr && p - m->addr < m->size_bytes)
			return m;
	return NULL;
}

/* Any address of a mapping: its handle, with one more reference (NCCL's ncclCuMemFree). */
CUresult CUDAAPI cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
	struct vmm_map *m;
	CUresult err;

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	m = map_holding((uintptr_t)addr);
	if (!m) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	m->h->refs++;
	*handle = m->h->handle;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/*
 * The allocation holding dptr: a cuMemAlloc-family block, or the VMM mapping it lies in (what
 * the real driver answers for cuMem memory, and what ncclCuMemFree unmaps). pbase, psize may
 * be NULL.
 */
CUresult CUDAAPI cuMemGetAddressRange(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	uintptr_t base = 0;
	struct vmm_map *m;
	size_t size = 0, i;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (i = 0; i < htab_buckets && !size; i++) {
		struct alloc *a;

		for (a = htab[i]; a && !size; a = a->hnext)
			if (range_in(dptr, 1, a->addr, a->size_bytes)) {
				base = a->addr;
				size = a->size_bytes;
			}
	}
	m = size ? NULL : map_holding(dptr);
	if (m) {
		base = m->addr;
		size = m->size_bytes;
	}
	if (!size) {
		err = CUDA_ERROR_NOT_FOUND;
		goto out;
	}
	if (pbase)
		*pbase = base;
	if (psize)
		*psize = size;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL of the stand-in's device memory (ncclMemFree asks). */
CUresult CUDAAPI cuPointerGetAttribute(void *data, CUpointer_attribute attribute, CUdeviceptr ptr)
{
	struct vmm_map *m;
	struct alloc *a;
	CUresult err;
	int dev = -1;
	size_t i;

	if (!data || attribute != CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (i = 0; i < htab_buckets && dev < 0; i++)
		for (a = htab[i]; a && dev < 0; a = a->hnext)
			if (range_in(ptr, 1, a->addr, a->size_bytes) && a->kind != AK_HOST)
				dev = a->device;
	m = dev < 0 ? map_holding(ptr) : NULL;
	if (m && m->h->device >= 0)
		dev = m->h->device;
	if (dev < 0)
		err = CUDA_ERROR_INVALID_VALUE;
	else
		*(int *)data = dev;
out:
	pthread_mutex_unlock(&lock);
	return err;
}
