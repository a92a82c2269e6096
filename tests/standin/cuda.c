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
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
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
extern __typeof__(cuStreamBeginCapture) cuStreamBeginCapture_v2_ptsz;
extern __typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
extern __typeof__(cuStreamIsCapturing) cuStreamIsCapturing_ptsz;
extern __typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;
extern __typeof__(cuGraphUpload) cuGraphUpload_ptsz;

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
	AK_GRAPH,   /* a graph's memory node the graph does not free, after a launch */
	AK_ARRAY,   /* the memory behind a CUarray / CUmipmappedArray */
};

/*
 * A stream-ordered pool: a device's default one, or one cuMemPoolCreate made. Memory freed
 * into it stays in its reserve (still counted against the device) until a stream, event or
 * context synchronization gives back what is above its release threshold, or
 * cuMemPoolTrimTo; an allocation takes from the reserve first.
 */
struct CUmemPoolHandle_st {
	int device;
	struct CUmemPoolHandle_st *next; /* created pools */
	bool created, destroyed;
	cuuint64_t threshold;
	size_t reserve_bytes, in_use_bytes;
	size_t reserve_high, used_high;
};

struct CUgraph_st;

struct CUstream_st {
	struct CUstream_st *next; /* created streams */
	/* Pending frees name their stream by id, never by pointer: an id is never reused,
	 * so a destroyed stream's frees can only complete through a context sync. */
	uint64_t id;
	struct CUctx_st *ctx;
	unsigned int flags;
	struct CUgraph_st *capture; /* the graph being captured, NULL: not capturing */
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
	int ipc_fd;	    /* exported (cuIpcGetMemHandle): the memfd behind it, else -1 */
	uint64_t ipc_id;
	bool graph_va; /* AK_GRAPH: its graph still owns the address range */
};

/* A physical allocation made by cuMemCreate. */
struct vmm_handle {
	struct vmm_handle *next;
	CUmemGenericAllocationHandle handle;
	int fd; /* memfd: the same memory can be mapped at many places */
	size_t size_bytes;
	int device; /* -1: on the host (CU_MEM_LOCATION_TYPE_HOST, _HOST_NUMA) */
	unsigned int nr_maps;
	/* References: 1 from cuMemCreate (or an import, a multicast create), 1 per
	 * cuMemRetainAllocationHandle, a cuMemRelease takes one back; at none it dies at its
	 * last unmap and binding. */
	unsigned int refs;
	unsigned long long handle_types; /* CUmemAllocationProp.requestedHandleTypes */
	bool multicast;			 /* cuMulticastCreate: memory is bound to it */
	bool imported;			 /* another process's memory: no capacity here */
	unsigned int nr_binds;		 /* bindings to multicast objects */
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
static struct CUmemPoolHandle_st *current_pool[STANDIN_MAX_DEVICES]; /* NULL: the default */
/* Graph memory given back by destroyed execs and freed graph allocations, not trimmed yet. */
static size_t graph_reserve[STANDIN_MAX_DEVICES];
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

static void memory_returned(const struct alloc *a);

/* Unmaps, returns the capacity (or its pool's reserve) and forgets the block. */
static void alloc_release(struct alloc *a)
{
	struct alloc **pp = &htab[htab_slot(a->addr, htab_buckets)];

	while (*pp != a)
		pp = &(*pp)->hnext;
	*pp = a->hnext;
	htab_count--;
	if (a->free_pending)
		pending_del(a);
	memory_returned(a);
	if (a->ipc_fd >= 0)
		close(a->ipc_fd);
	/* A graph's address range stays reserved for its next launch. */
	if (a->kind == AK_GRAPH && a->graph_va)
		mmap((void *)a->addr, a->map_bytes, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	else
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
	a->ipc_fd = -1;
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
			if (a->ctx == ctx && a->kind != AK_POOL && a->kind != AK_GRAPH)
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

static struct CUmemPoolHandle_st *pool_list;

static bool pool_ok(CUmemoryPool pool)
{
	struct CUmemPoolHandle_st *p;
	int i;

	for (i = 0; i < nr_devices; i++)
		if (pool == &default_pool[i])
			return true;
	for (p = pool_list; p; p = p->next)
		if (p == pool && !p->destroyed)
			return true;
	return false;
}

static CUresult capture_alloc(struct CUstream_st *s, size_t size_bytes, uintptr_t *va);
static CUresult capture_free(struct CUstream_st *s, uintptr_t va);
static CUresult pool_alloc(struct CUctx_st *ctx, struct CUmemPoolHandle_st *pool, size_t size_bytes,
			   uintptr_t *addr);
static void pools_trim_to_threshold(void);

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

static CUresult get_pool(CUmemoryPool *pool, CUdevice dev, bool current)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !pool)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		*pool = current && current_pool[dev] ? current_pool[dev] : &default_pool[dev];
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
	return get_pool(pool_out, dev, false);
}

/* The default pool unless cuDeviceSetMemPool chose another. */
CUresult CUDAAPI cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
	return get_pool(pool, dev, true);
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
	if (!err) {
		pending_complete(0, ctx->device, UINT64_MAX);
		pools_trim_to_threshold();
	}
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
		pool = current_pool[s->ctx->device] ? current_pool[s->ctx->device]
						    : &default_pool[s->ctx->device];
	} else if (!pool_ok(pool)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Under stream capture: a memory node of the graph, no memory now. */
	if (s->capture) {
		err = capture_alloc(s, size_bytes, &p);
		if (!err)
			*dptr = p;
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
	err = pool_alloc(s->ctx, pool, size_bytes, &p);
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
	bool pooled;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	a = alloc_find(addr);
	if (!a || a->free_pending || (a->kind == AK_HOST) != host) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	/* Pool memory may be freed synchronously too; CUDA then waits for the device, and
	 * the pool gives back what is above its threshold, as at any synchronization. */
	pooled = a->kind == AK_POOL;
	alloc_release(a);
	if (pooled)
		pools_trim_to_threshold();
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
	if (s->capture) {
		err = capture_free(s, dptr);
		goto out;
	}
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
	if (!err && s->capture)
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (!err) {
		pending_complete(s->id, -1, UINT64_MAX);
		pools_trim_to_threshold();
	}
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
	pools_trim_to_threshold();
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
	h->handle_types = prop->requestedHandleTypes;
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

static void multicast_unbind_all(struct vmm_handle *mc);

static void handle_destroy(struct vmm_handle *h)
{
	struct vmm_handle **pp;

	for (pp = &handle_list; *pp != h; pp = &(*pp)->next)
		;
	*pp = h->next;
	if (h->device >= 0 && !h->imported && !h->multicast)
		used_bytes[h->device] -= h->size_bytes;
	if (h->multicast)
		multicast_unbind_all(h);
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
	if (!--h->refs && !h->nr_maps && !h->nr_binds)
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
	if (!--m->h->nr_maps && !m->h->refs && !m->h->nr_binds)
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

/*
 * --- memory pools, stream capture and graphs, IPC, host registration, arrays, shareable
 * handles, multicast objects ---
 */

/* Where a block's bytes go when it is released: its pool's reserve, the graph pool, or back. */
static void memory_returned(const struct alloc *a)
{
	struct CUmemPoolHandle_st *pl = a->pool;

	switch (a->kind) {
	case AK_HOST:
		return;
	case AK_POOL:
		pl->in_use_bytes -= a->size_bytes;
		/* A destroyed pool's memory goes once nothing of it is in use. */
		if (pl->destroyed) {
			used_bytes[a->device] -= a->size_bytes;
			return;
		}
		pl->reserve_bytes += a->size_bytes;
		if (pl->reserve_bytes + pl->in_use_bytes > pl->reserve_high)
			pl->reserve_high = pl->reserve_bytes + pl->in_use_bytes;
		return;
	case AK_GRAPH:
		graph_reserve[a->device] += a->size_bytes;
		return;
	default:
		used_bytes[a->device] -= a->size_bytes;
		return;
	}
}

/* --- stream-ordered pools --- */

/* A block from @pool: its reserve first, then the device's free capacity. */
static CUresult pool_alloc(struct CUctx_st *ctx, struct CUmemPoolHandle_st *pool, size_t size_bytes,
			   uintptr_t *addr)
{
	size_t take = size_bytes < pool->reserve_bytes ? size_bytes : pool->reserve_bytes;
	CUresult err;

	/* The reserve is counted against the device already: it becomes this block. */
	used_bytes[pool->device] -= take;
	err = alloc_new(ctx, pool->device, size_bytes, AK_POOL, pool, addr);
	if (err) {
		used_bytes[pool->device] += take;
		return err;
	}
	pool->reserve_bytes -= take;
	pool->in_use_bytes += size_bytes;
	if (pool->in_use_bytes > pool->used_high)
		pool->used_high = pool->in_use_bytes;
	if (pool->reserve_bytes + pool->in_use_bytes > pool->reserve_high)
		pool->reserve_high = pool->reserve_bytes + pool->in_use_bytes;
	return CUDA_SUCCESS;
}

/* Takes the lock (held whatever it returns): 0 when initialised and pool is a live pool. */
static CUresult lock_pool(CUmemoryPool pool)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !pool_ok(pool))
		err = CUDA_ERROR_INVALID_VALUE;
	return err;
}

static void pool_trim(struct CUmemPoolHandle_st *pool, size_t keep)
{
	if (pool->reserve_bytes <= keep)
		return;
	used_bytes[pool->device] -= pool->reserve_bytes - keep;
	pool->reserve_bytes = keep;
}

/* At a stream, event or context synchronization, as CUDA does: down to the threshold. */
static void pools_trim_to_threshold(void)
{
	struct CUmemPoolHandle_st *p;
	int i;

	for (i = 0; i < nr_devices; i++)
		pool_trim(&default_pool[i], default_pool[i].threshold);
	for (p = pool_list; p; p = p->next)
		if (!p->destroyed)
			pool_trim(p, p->threshold > SIZE_MAX ? SIZE_MAX : (size_t)p->threshold);
}

CUresult CUDAAPI cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
	struct CUmemPoolHandle_st *p;
	CUresult err;

	if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
		return CUDA_ERROR_INVALID_VALUE;
	if (poolProps->handleTypes & ~(unsigned int)CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device_ok(poolProps->location.id))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err) {
		p = calloc(1, sizeof(*p));
		if (!p) {
			err = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			p->device = poolProps->location.id;
			p->created = true;
			p->next = pool_list;
			pool_list = p;
			*pool = p;
		}
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* Never freed: a destroyed pool's handle must compare, not dangle. */
CUresult CUDAAPI cuMemPoolDestroy(CUmemoryPool pool)
{
	CUresult err;

	err = lock_pool(pool);
	if (!err && !pool->created)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err) {
		pool_trim(pool, 0);
		pool->destroyed = true;
		if (current_pool[pool->device] == pool)
			current_pool[pool->device] = NULL;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
	CUresult err;

	err = lock_pool(pool);
	if (!err)
		pool_trim(pool, minBytesToKeep);
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	CUresult err;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	err = lock_pool(pool);
	if (err)
		goto out;
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		break; /* reuse policies: the stand-in reuses only within a stream */
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		pool->threshold = *(cuuint64_t *)value;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* may only be reset to 0 */
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		if (*(cuuint64_t *)value)
			err = CUDA_ERROR_INVALID_VALUE;
		else if (attr == CU_MEMPOOL_ATTR_USED_MEM_HIGH)
			pool->used_high = pool->in_use_bytes;
		else
			pool->reserve_high = pool->reserve_bytes + pool->in_use_bytes;
		break;
	default:
		err = CUDA_ERROR_INVALID_VALUE;
		break;
	}
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
	cuuint64_t v = 0;
	CUresult err;

	if (!value)
		return CUDA_ERROR_INVALID_VALUE;
	err = lock_pool(pool);
	if (err)
		goto out;
	switch (attr) {
	case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
	case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
		*(int *)value = 1;
		goto out;
	case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
		v = pool->threshold;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
		v = pool->reserve_bytes + pool->in_use_bytes;
		break;
	case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
		v = pool->reserve_high;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
		v = pool->in_use_bytes;
		break;
	case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
		v = pool->used_high;
		break;
	default:
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	*(cuuint64_t *)value = v;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err && !pool_ok(pool))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && pool->device != dev)
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		current_pool[dev] = pool == &default_pool[dev] ? NULL : pool;
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- stream capture and graphs --- */

/* A memory node: its address range is reserved from its creation to its graph's end. */
struct graph_node {
	uintptr_t va;
	size_t size_bytes, map_bytes;
	int device;
	bool freed; /* a free node of the same graph frees it */
};

/* A graph's memory nodes, shared with its exec (at most one while it has memory nodes). */
struct graph_mem {
	unsigned int refs;
	struct graph_node *nodes;
	size_t nr_nodes, cap_nodes;
	uintptr_t *frees; /* free nodes of memory allocated elsewhere */
	size_t nr_frees, cap_frees;
};

struct CUgraph_st {
	struct CUgraph_st *next;
	struct graph_mem *mem;
	struct CUgraphExec_st *exec; /* its live exec, while it has memory nodes */
};

struct CUgraphExec_st {
	struct CUgraphExec_st *next;
	struct CUgraph_st *graph; /* NULL once the graph is destroyed */
	struct graph_mem *mem;
	unsigned long long flags;
	bool mapped; /* launched or uploaded: it holds the nodes its graph frees */
};

static struct CUgraph_st *graph_list;
static struct CUgraphExec_st *exec_list;
static uint64_t next_node_handle;

static bool mem_empty(const struct graph_mem *m)
{
	return !m->nr_nodes && !m->nr_frees;
}

static struct CUgraph_st *graph_new(void)
{
	struct CUgraph_st *g = calloc(1, sizeof(*g));

	if (!g)
		return NULL;
	g->mem = calloc(1, sizeof(*g->mem));
	if (!g->mem) {
		free(g);
		return NULL;
	}
	g->mem->refs = 1;
	g->next = graph_list;
	graph_list = g;
	return g;
}

static void graph_mem_put(struct graph_mem *m)
{
	size_t i;

	if (--m->refs)
		return;
	for (i = 0; i < m->nr_nodes; i++) {
		struct alloc *a = alloc_find(m->nodes[i].va);

		/* Still the program's after a launch: its free gives the range back. */
		if (a && a->kind == AK_GRAPH)
			a->graph_va = false;
		else
			munmap((void *)m->nodes[i].va, m->nodes[i].map_bytes);
	}
	free(m->nodes);
	free(m->frees);
	free(m);
}

static struct CUgraph_st *graph_find(CUgraph h)
{
	struct CUgraph_st *g;

	for (g = graph_list; g; g = g->next)
		if (g == h)
			return g;
	return NULL;
}

static struct CUgraphExec_st *exec_find(CUgraphExec h)
{
	struct CUgraphExec_st *x;

	for (x = exec_list; x; x = x->next)
		if (x == h)
			return x;
	return NULL;
}

/* A new memory node of @size_bytes on @device in g: its address range, no memory yet. */
static CUresult node_add(struct CUgraph_st *g, size_t size_bytes, int device, uintptr_t *va)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE), map_bytes;
	struct graph_mem *m = g->mem;
	void *p;

	if (!size_bytes || size_bytes > SIZE_MAX - page)
		return CUDA_ERROR_INVALID_VALUE;
	/* The stand-in's limit: a graph's memory nodes are fixed once it has an exec. */
	if (g->exec)
		return CUDA_ERROR_NOT_SUPPORTED;
	if (m->nr_nodes == m->cap_nodes) {
		size_t cap = m->cap_nodes ? 2 * m->cap_nodes : 8;
		struct graph_node *v = realloc(m->nodes, cap * sizeof(*v));

		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->nodes = v;
		m->cap_nodes = cap;
	}
	map_bytes = (size_bytes + page - 1) & ~(page - 1);
	p = mmap(NULL, map_bytes, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		return CUDA_ERROR_OUT_OF_MEMORY;
	m->nodes[m->nr_nodes++] = (struct graph_node){
	    .va = (uintptr_t)p, .size_bytes = size_bytes, .map_bytes = map_bytes, .device = device};
	*va = (uintptr_t)p;
	return CUDA_SUCCESS;
}

static CUresult free_node_add(struct CUgraph_st *g, uintptr_t va)
{
	struct graph_mem *m = g->mem;
	size_t i;

	if (!va)
		return CUDA_ERROR_INVALID_VALUE;
	if (g->exec)
		return CUDA_ERROR_NOT_SUPPORTED;
	for (i = 0; i < m->nr_nodes; i++) {
		if (m->nodes[i].va == va) {
			if (m->nodes[i].freed)
				return CUDA_ERROR_INVALID_VALUE; /* freed twice in one graph */
			m->nodes[i].freed = true;
			return CUDA_SUCCESS;
		}
	}
	/* Memory allocated outside the graph: it must be live, and stream-ordered. */
	if (!alloc_find(va) || alloc_find(va)->kind == AK_HOST)
		return CUDA_ERROR_INVALID_VALUE;
	if (m->nr_frees == m->cap_frees) {
		size_t cap = m->cap_frees ? 2 * m->cap_frees : 4;
		uintptr_t *v = realloc(m->frees, cap * sizeof(*v));

		if (!v)
			return CUDA_ERROR_OUT_OF_MEMORY;
		m->frees = v;
		m->cap_frees = cap;
	}
	m->frees[m->nr_frees++] = va;
	return CUDA_SUCCESS;
}

static CUresult capture_alloc(struct CUstream_st *s, size_t size_bytes, uintptr_t *va)
{
	return node_add(s->capture, size_bytes, s->ctx->device, va);
}

static CUresult capture_free(struct CUstream_st *s, uintptr_t va)
{
	return free_node_add(s->capture, va);
}

static CUresult begin_capture(CUstream h, CUstreamCaptureMode mode, bool per_thread)
{
	struct CUstream_st *s;
	struct CUgraph_st *g;
	CUresult err;

	if ((unsigned int)mode > CU_STREAM_CAPTURE_MODE_RELAXED)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = stream_resolve(h, per_thread, &s);
	if (err)
		goto out;
	/* The legacy stream synchronizes with every other: it cannot be captured. */
	if (s == &s->ctx->legacy) {
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
		goto out;
	}
	if (s->capture) {
		err = CUDA_ERROR_ILLEGAL_STATE;
		goto out;
	}
	g = graph_new();
	if (!g)
		err = CUDA_ERROR_OUT_OF_MEMORY;
	else
		s->capture = g;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, false);
}

CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
	return begin_capture(hStream, mode, true);
}

static CUresult end_capture(CUstream h, CUgraph *phGraph, bool per_thread)
{
	struct CUstream_st *s;
	CUresult err;

	if (!phGraph)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = stream_resolve(h, per_thread, &s);
	if (!err && !s->capture)
		err = CUDA_ERROR_ILLEGAL_STATE;
	if (!err) {
		*phGraph = s->capture;
		s->capture = NULL;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, false);
}

CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
	return end_capture(hStream, phGraph, true);
}

static CUresult is_capturing(CUstream h, CUstreamCaptureStatus *status, bool per_thread)
{
	struct CUstream_st *s;
	CUresult err;

	if (!status)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = stream_resolve(h, per_thread, &s);
	if (!err)
		*status =
		    s->capture ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return is_capturing(hStream, captureStatus, false);
}

CUresult CUDAAPI cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
	return is_capturing(hStream, captureStatus, true);
}

/* Not traced: a graph holds no memory until memory nodes are added to it. */
CUresult CUDAAPI cuGraphCreate(CUgraph *phGraph, unsigned int flags)
{
	CUresult err;

	if (!phGraph || flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err) {
		*phGraph = graph_new();
		if (!*phGraph)
			err = CUDA_ERROR_OUT_OF_MEMORY;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

static CUgraphNode node_handle(void)
{
	/* Opaque, never dereferenced: distinct and non-NULL is all a node handle must be. */
	return (CUgraphNode)(uintptr_t)(0x10000 + 16 * ++next_node_handle);
}

CUresult CUDAAPI cuGraphAddMemAllocNode(CUgraphNode *phGraphNode, CUgraph hGraph,
					const CUgraphNode *dependencies, size_t numDependencies,
					CUDA_MEM_ALLOC_NODE_PARAMS *nodeParams)
{
	struct CUgraph_st *g;
	uintptr_t va;
	CUresult err;

	(void)dependencies; /* the stand-in runs nothing: order is immaterial */
	(void)numDependencies;
	if (!phGraphNode || !nodeParams ||
	    nodeParams->poolProps.allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
	    nodeParams->poolProps.location.type != CU_MEM_LOCATION_TYPE_DEVICE ||
	    nodeParams->poolProps.handleTypes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	g = err ? NULL : graph_find(hGraph);
	if (!err && !g)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !device_ok(nodeParams->poolProps.location.id))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err)
		err = node_add(g, nodeParams->bytesize, nodeParams->poolProps.location.id, &va);
	if (!err) {
		nodeParams->dptr = va;
		*phGraphNode = node_handle();
	}
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuGraphAddMemFreeNode(CUgraphNode *phGraphNode, CUgraph hGraph,
				       const CUgraphNode *dependencies, size_t numDependencies,
				       CUdeviceptr dptr)
{
	struct CUgraph_st *g;
	CUresult err;

	(void)dependencies;
	(void)numDependencies;
	if (!phGraphNode)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	g = err ? NULL : graph_find(hGraph);
	if (!err && !g)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err)
		err = free_node_add(g, dptr);
	if (!err)
		*phGraphNode = node_handle();
	pthread_mutex_unlock(&lock);
	return err;
}

/* cuda.h: "at most one executable graph in existence" of a graph with memory nodes. */
CUresult CUDAAPI cuGraphInstantiateWithFlags(CUgraphExec *phGraphExec, CUgraph hGraph,
					     unsigned long long flags)
{
	struct CUgraphExec_st *x;
	struct CUgraph_st *g;
	CUresult err;

	if (!phGraphExec || (flags & ~0xfULL))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	g = err ? NULL : graph_find(hGraph);
	if (!err && (!g || (g->exec && !mem_empty(g->mem))))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err)
		goto out;
	x = calloc(1, sizeof(*x));
	if (!x) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	x->graph = g;
	x->mem = g->mem;
	x->mem->refs++;
	x->flags = flags;
	x->next = exec_list;
	exec_list = x;
	if (!mem_empty(g->mem))
		g->exec = x;
	*phGraphExec = x;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* Capacity for @need bytes on @dev, taking what the graph pool holds first. */
static bool graph_take(int dev, size_t need)
{
	size_t take = need < graph_reserve[dev] ? need : graph_reserve[dev];

	if (need - take > capacity_bytes - used_bytes[dev])
		return false;
	graph_reserve[dev] -= take;
	used_bytes[dev] += need - take;
	return true;
}

/* The nodes x's graph frees itself get memory for good (until x is destroyed). */
static CUresult exec_map(struct CUgraphExec_st *x)
{
	struct graph_mem *m = x->mem;
	size_t need[STANDIN_MAX_DEVICES] = {0}, i;
	int d;

	if (x->mapped)
		return CUDA_SUCCESS;
	for (i = 0; i < m->nr_nodes; i++)
		if (m->nodes[i].freed)
			need[m->nodes[i].device] += m->nodes[i].size_bytes;
	for (d = 0; d < nr_devices; d++) {
		size_t avail = graph_reserve[d] + (capacity_bytes - used_bytes[d]);

		if (need[d] > avail)
			return CUDA_ERROR_OUT_OF_MEMORY;
	}
	for (d = 0; d < nr_devices; d++)
		graph_take(d, need[d]);
	for (i = 0; i < m->nr_nodes; i++)
		if (m->nodes[i].freed)
			mmap((void *)m->nodes[i].va, m->nodes[i].map_bytes, PROT_READ | PROT_WRITE,
			     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	x->mapped = true;
	return CUDA_SUCCESS;
}

/* A node the graph does not free: the program's allocation after the launch. */
static CUresult graph_alloc(const struct graph_node *n, struct CUctx_st *ctx)
{
	struct alloc *a;
	size_t s;

	if (htab_count >= htab_buckets * 2 && htab_grow())
		return CUDA_ERROR_OUT_OF_MEMORY;
	a = calloc(1, sizeof(*a));
	if (!a)
		return CUDA_ERROR_OUT_OF_MEMORY;
	if (!graph_take(n->device, n->size_bytes)) {
		free(a);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	mmap((void *)n->va, n->map_bytes, PROT_READ | PROT_WRITE,
	     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	a->addr = n->va;
	a->size_bytes = n->size_bytes;
	a->map_bytes = n->map_bytes;
	a->kind = AK_GRAPH;
	a->device = n->device;
	a->ctx = ctx;
	a->ipc_fd = -1;
	a->graph_va = true;
	s = htab_slot(a->addr, htab_buckets);
	a->hnext = htab[s];
	htab[s] = a;
	htab_count++;
	return CUDA_SUCCESS;
}

/*
 * A launch: nothing runs, memory changes hands. Without AUTO_FREE_ON_LAUNCH a node's memory
 * still live from the last launch makes it fail, as in CUDA.
 */
static CUresult graph_launch(CUgraphExec h, CUstream hs, bool per_thread, bool upload)
{
	struct CUgraphExec_st *x;
	struct CUstream_st *s;
	struct graph_mem *m;
	CUresult err;
	size_t i;

	pthread_mutex_lock(&lock);
	err = stream_resolve(hs, per_thread, &s);
	x = err ? NULL : exec_find(h);
	if (!err && !x)
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && s->capture)
		err = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
	if (err)
		goto out;
	m = x->mem;
	for (i = 0; !upload && i < m->nr_nodes; i++) {
		struct alloc *a = m->nodes[i].freed ? NULL : alloc_find(m->nodes[i].va);

		if (a && (a->free_pending ||
			  !(x->flags & CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH))) {
			err = CUDA_ERROR_INVALID_VALUE;
			goto out;
		}
	}
	err = exec_map(x);
	for (i = 0; !err && !upload && i < m->nr_nodes; i++) {
		struct alloc *a;

		if (m->nodes[i].freed)
			continue;
		a = alloc_find(m->nodes[i].va);
		if (a)
			alloc_release(a); /* AUTO_FREE_ON_LAUNCH */
		err = graph_alloc(&m->nodes[i], s->ctx);
	}
	for (i = 0; !err && !upload && i < m->nr_frees; i++) {
		struct alloc *a = alloc_find(m->frees[i]);

		if (a && !a->free_pending && a->kind != AK_HOST)
			alloc_release(a);
	}
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, false, false);
}

CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, true, false);
}

CUresult CUDAAPI cuGraphUpload(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, false, true);
}

CUresult CUDAAPI cuGraphUpload_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
	return graph_launch(hGraphExec, hStream, true, true);
}

/* What x held goes to the graph pool; what its launches made stays the program's. */
CUresult CUDAAPI cuGraphExecDestroy(CUgraphExec hGraphExec)
{
	struct CUgraphExec_st **pp, *x;
	CUresult err;
	size_t i;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &exec_list; *pp && *pp != hGraphExec; pp = &(*pp)->next)
		;
	if (!*pp) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	x = *pp;
	*pp = x->next;
	for (i = 0; x->mapped && i < x->mem->nr_nodes; i++) {
		const struct graph_node *n = &x->mem->nodes[i];

		if (!n->freed)
			continue;
		graph_reserve[n->device] += n->size_bytes;
		mmap((void *)n->va, n->map_bytes, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0);
	}
	if (x->graph && x->graph->exec == x)
		x->graph->exec = NULL;
	graph_mem_put(x->mem);
	free(x);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuGraphDestroy(CUgraph hGraph)
{
	struct CUgraph_st **pp, *g;
	struct CUstream_st *s;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &graph_list; *pp && *pp != hGraph; pp = &(*pp)->next)
		;
	for (s = stream_list; *pp && s; s = s->next)
		if (s->capture == *pp)
			break;
	if (!*pp || s) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	g = *pp;
	*pp = g->next;
	if (g->exec)
		g->exec->graph = NULL;
	graph_mem_put(g->mem);
	free(g);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* What no exec holds goes back to the device. */
CUresult CUDAAPI cuDeviceGraphMemTrim(CUdevice device)
{
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device_ok(device))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (!err) {
		used_bytes[device] -= graph_reserve[device];
		graph_reserve[device] = 0;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- IPC --- */

/* What the stand-in puts in a CUipcMemHandle: the exporter's memfd, by pid and number. */
struct ipc_wire {
	uint64_t magic;
	int32_t pid, fd;
	uint64_t id, size_bytes;
	int32_t device;
};

#define IPC_MAGIC 0x31435049454c5047ULL /* "GPLEIPC1" */

/* A handle opened here: one mapping, however often it is opened. */
struct ipc_open {
	struct ipc_open *next;
	int32_t pid;
	uint64_t id;
	uintptr_t addr;
	size_t size_bytes;
	unsigned int refs;
};

static struct ipc_open *ipc_opens;
static uint64_t next_ipc_id = 1;

_Static_assert(sizeof(struct ipc_wire) <= sizeof(CUipcMemHandle), "IPC handle too small");

/*
 * Only cuMemAlloc'd memory can be exported, as in CUDA. The block moves to a memfd, at the
 * same address, the first time: another process can then map the same pages.
 */
CUresult CUDAAPI cuIpcGetMemHandle(CUipcMemHandle *pHandle, CUdeviceptr dptr)
{
	struct ipc_wire w = {.magic = IPC_MAGIC};
	struct alloc *a;
	CUresult err;
	int fd;

	if (!pHandle)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	a = alloc_find(dptr);
	if (!a || a->free_pending || (a->kind != AK_DEVICE && a->kind != AK_PITCH)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	if (a->ipc_fd < 0) {
		fd = memfd_create("gpuleak-standin-ipc", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, (off_t)a->map_bytes) ||
		    pwrite(fd, (void *)a->addr, a->map_bytes, 0) != (ssize_t)a->map_bytes ||
		    mmap((void *)a->addr, a->map_bytes, PROT_READ | PROT_WRITE,
			 MAP_SHARED | MAP_FIXED, fd, 0) == MAP_FAILED) {
			if (fd >= 0)
				close(fd);
			err = CUDA_ERROR_OUT_OF_MEMORY;
			goto out;
		}
		a->ipc_fd = fd;
		a->ipc_id = next_ipc_id++;
	}
	w.pid = (int32_t)getpid();
	w.fd = a->ipc_fd;
	w.id = a->ipc_id;
	w.size_bytes = a->size_bytes;
	w.device = a->device;
	memset(pHandle, 0, sizeof(*pHandle));
	memcpy(pHandle->reserved, &w, sizeof(w));
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* Opened again: the same pointer, one more reference (cuda.h, cuIpcOpenMemHandle). */
CUresult CUDAAPI cuIpcOpenMemHandle(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int Flags)
{
	struct ipc_open *o = NULL;
	struct CUctx_st *ctx;
	struct ipc_wire w;
	char path[64];
	CUresult err;
	void *p;
	int fd;

	memcpy(&w, handle.reserved, sizeof(w));
	if (!pdptr || (Flags & ~(unsigned int)CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS) ||
	    w.magic != IPC_MAGIC || !w.size_bytes)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (err)
		goto out;
	/* CUDA maps another process's memory only. */
	if (w.pid == (int32_t)getpid()) {
		err = CUDA_ERROR_INVALID_CONTEXT;
		goto out;
	}
	for (o = ipc_opens; o; o = o->next)
		if (o->pid == w.pid && o->id == w.id)
			break;
	if (o) {
		o->refs++;
		*pdptr = o->addr;
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", (int)w.pid, (int)w.fd);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		err = CUDA_ERROR_INVALID_HANDLE; /* the exporter is gone */
		goto out;
	}
	p = mmap(NULL, w.size_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	o = p == MAP_FAILED ? NULL : calloc(1, sizeof(*o));
	if (!o) {
		if (p != MAP_FAILED)
			munmap(p, w.size_bytes);
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	o->pid = w.pid;
	o->id = w.id;
	o->addr = (uintptr_t)p;
	o->size_bytes = w.size_bytes;
	o->refs = 1;
	o->next = ipc_opens;
	ipc_opens = o;
	*pdptr = o->addr;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* One reference less; the last one unmaps. */
CUresult CUDAAPI cuIpcCloseMemHandle(CUdeviceptr dptr)
{
	struct ipc_open **pp, *o;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &ipc_opens; *pp && (*pp)->addr != dptr; pp = &(*pp)->next)
		;
	if (!*pp) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	o = *pp;
	if (--o->refs)
		goto out;
	*pp = o->next;
	munmap((void *)o->addr, o->size_bytes);
	free(o);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- host registration --- */

struct host_reg {
	struct host_reg *next;
	uintptr_t addr;
	size_t size_bytes;
};

static struct host_reg *host_regs;

/* Pins nothing for real (no privileges needed): the range is remembered until unregistered. */
CUresult CUDAAPI cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
	const unsigned int known = CU_MEMHOSTREGISTER_PORTABLE | CU_MEMHOSTREGISTER_DEVICEMAP |
				   CU_MEMHOSTREGISTER_IOMEMORY | CU_MEMHOSTREGISTER_READ_ONLY;
	uintptr_t beg = (uintptr_t)p;
	struct host_reg *r;
	struct CUctx_st *ctx;
	CUresult err;
	size_t i;

	if (!p || !bytesize || (Flags & ~known) || beg > UINTPTR_MAX - bytesize)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (err)
		goto out;
	for (r = host_regs; r; r = r->next)
		if (beg < r->addr + r->size_bytes && r->addr < beg + bytesize)
			break;
	/* Pinned memory of cuMemHostAlloc is registered already, as CUDA says. */
	for (i = 0; !r && i < htab_buckets; i++) {
		struct alloc *a;

		for (a = htab[i]; a && !r; a = a->hnext)
			if (a->kind == AK_HOST && beg < a->addr + a->size_bytes &&
			    a->addr < beg + bytesize)
				r = (struct host_reg *)1;
	}
	if (r) {
		err = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
		goto out;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	r->addr = beg;
	r->size_bytes = bytesize;
	r->next = host_regs;
	host_regs = r;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuMemHostUnregister(void *p)
{
	struct host_reg **pp, *r;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &host_regs; *pp && (*pp)->addr != (uintptr_t)p; pp = &(*pp)->next)
		;
	if (!*pp) {
		err = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
		goto out;
	}
	r = *pp;
	*pp = r->next;
	free(r);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* --- arrays --- */

struct CUarray_st {
	struct CUarray_st *next;
	uintptr_t mem; /* its block (AK_ARRAY) */
	bool mipmapped;
};

/* A mipmapped array is the same object here, told apart by its flag. */
struct CUmipmappedArray_st {
	struct CUarray_st a;
};

static struct CUarray_st *array_list;

/* Bytes of one element of an array format: the plain formats only, in the stand-in. */
static size_t format_bytes(CUarray_format f, unsigned int channels)
{
	size_t b;

	switch (f) {
	case CU_AD_FORMAT_UNSIGNED_INT8:
	case CU_AD_FORMAT_SIGNED_INT8:
		b = 1;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT16:
	case CU_AD_FORMAT_SIGNED_INT16:
	case CU_AD_FORMAT_HALF:
		b = 2;
		break;
	case CU_AD_FORMAT_UNSIGNED_INT32:
	case CU_AD_FORMAT_SIGNED_INT32:
	case CU_AD_FORMAT_FLOAT:
		b = 4;
		break;
	default:
		return 0;
	}
	return channels == 1 || channels == 2 || channels == 4 ? b * channels : 0;
}

static size_t level_dim(size_t v, unsigned int l)
{
	v >>= l;
	return v ? v : 1;
}

/* Width x height x depth texels (0 meaning 1) over @levels mip levels; 0: refused. */
static size_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
	size_t elem = format_bytes(d->Format, d->NumChannels), sum = 0, maxdim;
	unsigned int l, max_levels = 1;

	if (!elem || !d->Width || levels < 1)
		return 0;
	maxdim = d->Width > d->Height ? d->Width : d->Height;
	maxdim = maxdim > d->Depth ? maxdim : d->Depth;
	while (maxdim >>= 1)
		max_levels++;
	if (levels > max_levels)
		return 0;
	for (l = 0; l < levels; l++) {
		size_t w = level_dim(d->Width, l), h = level_dim(d->Height, l);
		size_t z = level_dim(d->Depth, l);

		if (w > SIZE_MAX / h || w * h > SIZE_MAX / z || w * h * z > (SIZE_MAX - sum) / elem)
			return 0;
		sum += w * h * z * elem;
	}
	return sum;
}

static CUresult array_create(struct CUarray_st **out, const CUDA_ARRAY3D_DESCRIPTOR *d,
			     unsigned int levels, bool mipmapped)
{
	struct CUarray_st *arr;
	struct CUctx_st *ctx;
	size_t bytes;
	CUresult err;

	if (!out || !d)
		return CUDA_ERROR_INVALID_VALUE;
	bytes = array_bytes(d, levels);
	if (!bytes || ((d->Flags & CUDA_ARRAY3D_CUBEMAP) && d->Depth != 6))
		return CUDA_ERROR_INVALID_VALUE;
	arr = calloc(1, sizeof(struct CUmipmappedArray_st));
	if (!arr)
		return CUDA_ERROR_OUT_OF_MEMORY;
	pthread_mutex_lock(&lock);
	err = check_ctx(&ctx);
	if (!err)
		err = alloc_new(ctx, ctx->device, bytes, AK_ARRAY, NULL, &arr->mem);
	if (!err) {
		arr->mipmapped = mipmapped;
		arr->next = array_list;
		array_list = arr;
		*out = arr;
		arr = NULL;
	}
	pthread_mutex_unlock(&lock);
	free(arr);
	return err;
}

CUresult CUDAAPI cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
	CUDA_ARRAY3D_DESCRIPTOR d = {0};

	if (!pAllocateArray)
		return CUDA_ERROR_INVALID_VALUE;
	d.Width = pAllocateArray->Width;
	d.Height = pAllocateArray->Height;
	d.Format = pAllocateArray->Format;
	d.NumChannels = pAllocateArray->NumChannels;
	return array_create(pHandle, &d, 1, false);
}

CUresult CUDAAPI cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
	return array_create(pHandle, pAllocateArray, 1, false);
}

CUresult CUDAAPI cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
					const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
					unsigned int numMipmapLevels)
{
	return array_create((struct CUarray_st **)pHandle, pMipmappedArrayDesc, numMipmapLevels,
			    true);
}

static CUresult array_destroy(struct CUarray_st *h, bool mipmapped)
{
	struct CUarray_st **pp, *arr;
	struct alloc *a;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	for (pp = &array_list; *pp && (*pp != h || (*pp)->mipmapped != mipmapped);
	     pp = &(*pp)->next)
		;
	if (!*pp) {
		err = CUDA_ERROR_INVALID_HANDLE;
		goto out;
	}
	arr = *pp;
	*pp = arr->next;
	/* Gone already when its context was destroyed. */
	a = alloc_find(arr->mem);
	if (a && a->kind == AK_ARRAY)
		alloc_release(a);
	free(arr);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

CUresult CUDAAPI cuArrayDestroy(CUarray hArray)
{
	return array_destroy(hArray, false);
}

CUresult CUDAAPI cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
	return array_destroy((struct CUarray_st *)hMipmappedArray, true);
}

/* --- shareable handles and multicast objects --- */

/* A handle made with requestedHandleTypes POSIX_FILE_DESCRIPTOR gives a file descriptor. */
CUresult CUDAAPI cuMemExportToShareableHandle(void *shareableHandle,
					      CUmemGenericAllocationHandle handle,
					      CUmemAllocationHandleType handleType,
					      unsigned long long flags)
{
	struct vmm_handle *h;
	CUresult err;
	int fd;

	if (!shareableHandle || flags)
		return CUDA_ERROR_INVALID_VALUE;
	if (handleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	err = check_init();
	h = err ? NULL : handle_find(handle);
	if (!err && (!h || !h->refs || h->multicast || !(h->handle_types & handleType)))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err) {
		fd = fcntl(h->fd, F_DUPFD_CLOEXEC, 0);
		if (fd < 0)
			err = CUDA_ERROR_OUT_OF_MEMORY;
		else
			*(int *)shareableHandle = fd;
	}
	pthread_mutex_unlock(&lock);
	return err;
}

/* A new handle of the memory behind the descriptor: the exporter's, not this process's. */
CUresult CUDAAPI cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle,
						void *osHandle,
						CUmemAllocationHandleType shHandleType)
{
	struct vmm_handle *h = NULL;
	struct stat st;
	CUresult err;
	int fd = -1;

	if (!handle)
		return CUDA_ERROR_INVALID_VALUE;
	if (shHandleType != CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
		return CUDA_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	if (fstat((int)(intptr_t)osHandle, &st) || !S_ISREG(st.st_mode) || !st.st_size ||
	    !gran_aligned((uint64_t)st.st_size)) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	h = calloc(1, sizeof(*h));
	fd = fcntl((int)(intptr_t)osHandle, F_DUPFD_CLOEXEC, 0);
	if (!h || fd < 0) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h->handle = next_vmm_handle++;
	h->fd = fd;
	h->size_bytes = (size_t)st.st_size;
	h->imported = true;
	h->refs = 1;
	h->handle_types = shHandleType;
	h->next = handle_list;
	handle_list = h;
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

struct mc_bind {
	struct mc_bind *next;
	struct vmm_handle *mc, *mem;
	size_t mc_off, size_bytes;
};

static struct mc_bind *mc_binds;

CUresult CUDAAPI cuMulticastGetGranularity(size_t *granularity, const CUmulticastObjectProp *prop,
					   CUmulticastGranularity_flags option)
{
	if (!granularity || !prop ||
	    (option != CU_MULTICAST_GRANULARITY_MINIMUM &&
	     option != CU_MULTICAST_GRANULARITY_RECOMMENDED))
		return CUDA_ERROR_INVALID_VALUE;
	*granularity = STANDIN_VMM_GRAN_BYTES;
	return CUDA_SUCCESS;
}

/* No memory of its own: the memory of each device is bound to it. */
CUresult CUDAAPI cuMulticastCreate(CUmemGenericAllocationHandle *mcHandle,
				   const CUmulticastObjectProp *prop)
{
	struct vmm_handle *h = NULL;
	CUresult err;
	int fd = -1;

	if (!mcHandle || !prop || !prop->size || !gran_aligned(prop->size) || prop->flags)
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && (prop->numDevices < 1 || (int)prop->numDevices > nr_devices))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err)
		goto out;
	h = calloc(1, sizeof(*h));
	fd = memfd_create("gpuleak-standin-multicast", MFD_CLOEXEC);
	if (!h || fd < 0 || ftruncate(fd, (off_t)prop->size)) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	h->handle = next_vmm_handle++;
	h->fd = fd;
	h->size_bytes = prop->size;
	h->multicast = true;
	h->refs = 1;
	h->next = handle_list;
	handle_list = h;
	*mcHandle = h->handle;
	h = NULL;
	fd = -1;
out:
	pthread_mutex_unlock(&lock);
	if (fd >= 0)
		close(fd);
	free(h);
	return err;
}

CUresult CUDAAPI cuMulticastBindMem(CUmemGenericAllocationHandle mcHandle, size_t mcOffset,
				    CUmemGenericAllocationHandle memHandle, size_t memOffset,
				    size_t size, unsigned long long flags)
{
	struct vmm_handle *mc, *mem;
	struct mc_bind *b;
	CUresult err;

	if (!size || flags || !gran_aligned(mcOffset) || !gran_aligned(memOffset) ||
	    !gran_aligned(size))
		return CUDA_ERROR_INVALID_VALUE;
	pthread_mutex_lock(&lock);
	err = check_init();
	if (err)
		goto out;
	mc = handle_find(mcHandle);
	mem = handle_find(memHandle);
	if (!mc || !mc->multicast || !mc->refs || !mem || mem->multicast || !mem->refs ||
	    mcOffset > mc->size_bytes || size > mc->size_bytes - mcOffset ||
	    memOffset > mem->size_bytes || size > mem->size_bytes - memOffset) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	for (b = mc_binds; b; b = b->next)
		if (b->mc == mc && mcOffset < b->mc_off + b->size_bytes &&
		    b->mc_off < mcOffset + size)
			break;
	if (b) {
		err = CUDA_ERROR_INVALID_VALUE;
		goto out;
	}
	b = calloc(1, sizeof(*b));
	if (!b) {
		err = CUDA_ERROR_OUT_OF_MEMORY;
		goto out;
	}
	b->mc = mc;
	b->mem = mem;
	b->mc_off = mcOffset;
	b->size_bytes = size;
	b->next = mc_binds;
	mc_binds = b;
	mem->nr_binds++;
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* A binding ends: memory released while bound goes with its last binding and mapping. */
static void bind_drop(struct mc_bind **pp)
{
	struct mc_bind *b = *pp;

	*pp = b->next;
	if (!--b->mem->nr_binds && !b->mem->refs && !b->mem->nr_maps)
		handle_destroy(b->mem);
	free(b);
}

static void multicast_unbind_all(struct vmm_handle *mc)
{
	struct mc_bind **pp = &mc_binds;

	while (*pp) {
		if ((*pp)->mc == mc)
			bind_drop(pp);
		else
			pp = &(*pp)->next;
	}
}

CUresult CUDAAPI cuMulticastUnbind(CUmemGenericAllocationHandle mcHandle, CUdevice dev,
				   size_t mcOffset, size_t size)
{
	struct mc_bind **pp;
	CUresult err;

	pthread_mutex_lock(&lock);
	err = check_init();
	if (!err && !device_ok(dev))
		err = CUDA_ERROR_INVALID_DEVICE;
	if (err)
		goto out;
	for (pp = &mc_binds; *pp; pp = &(*pp)->next)
		if ((*pp)->mc->handle == mcHandle && (*pp)->mc_off == mcOffset &&
		    (*pp)->size_bytes == size)
			break;
	if (!*pp)
		err = CUDA_ERROR_INVALID_VALUE;
	else
		bind_drop(pp);
out:
	pthread_mutex_unlock(&lock);
	return err;
}
