// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Stand-in for NCCL 2.28, libnccl.so.2, on machines without a GPU.
 *
 * NVIDIA's libnccl.so.2 answers ncclCommInitRank and ncclMemAlloc with
 * ncclUnhandledCudaError here, so the tests attach their uprobes to this library instead. It
 * has the real soname, the prototypes of /usr/local/cuda/include/nccl.h and the real symbol
 * layout: every function is a GLOBAL pncclX with a WEAK ncclX at the same address, both
 * unversioned (NCCL_API below). Like the real library it has no link-time dependency on
 * CUDA: the first call that needs the driver dlopen()s libcuda.so.1 (the stand-in next to
 * it, through this library's DT_RPATH $ORIGIN) and calls the exported cu* entry points
 * through pointers, as NCCL does through cuGetProcAddress.
 *
 * Every communicator allocates the same memory, on the thread that initialises it (see
 * comm_alloc): a tracer can predict every byte. Ranks are devices of the stand-in driver,
 * all in this process: a communicator of several ranks is made by one thread per rank (an
 * in-process rendezvous keyed by the unique id stands in for NCCL's bootstrap network), by
 * several ncclCommInitRank calls in one group, or by ncclCommInitAll.
 *
 * Unlike NCCL, no exported function calls another exported one (the real ncclCommInitAll
 * calls ncclGetUniqueId, for one): a uprobe fires once per application call.
 */
#define _GNU_SOURCE
#include <cuda.h>
#include <nccl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#if NCCL_MAJOR != 2 || NCCL_MINOR != 28
#error "this stand-in models NCCL 2.28: check CUDA_INCLUDE's nccl.h"
#endif

/*
 * The real library's layout: the body is pncclX (GLOBAL), ncclX is a WEAK alias at the same
 * address. Put NCCL_API(name) after the definition of p##name.
 */
#define NCCL_API(name) extern __typeof__(p##name) name __attribute__((weak, alias("p" #name)))

/*
 * gcc builds a leaf function without a frame even under -fno-omit-frame-pointer; asking for
 * the frame address makes such an entry start with push %rbp like every other one.
 */
#define LEAF_FRAME() __asm__ volatile("" : : "r"(__builtin_frame_address(0)))

/* What one communicator allocates, all on its device, on the thread that initialises it. */
#define COMM_CHANNELS	      4		    /* cuMemAlloc_v2 each */
#define COMM_CHANNEL_BYTES    (1ULL << 20)  /* "channel buffers" */
#define COMM_PROXY_HOST_BYTES (64ULL << 10) /* cuMemHostAlloc: "proxy buffer" */
#define COMM_P2P_BYTES	      (2ULL << 20)  /* cuMemCreate + map: "NVLS/P2P buffer" */
#define STANDIN_MAX_DEVICES   16	    /* the driver stand-in's limit */
#define CONFIG_MAGIC	      0xcafebeefU
#define RENDEZVOUS_TIMEOUT_S  30
#define LAST_ERROR_BYTES      1024

#define DRIVER_FUNCS(X)                                                                            \
	X(cuInit)                                                                                  \
	X(cuDeviceGetCount)                                                                        \
	X(cuDevicePrimaryCtxRetain)                                                                \
	X(cuCtxGetCurrent)                                                                         \
	X(cuCtxSetCurrent)                                                                         \
	X(cuCtxGetDevice)                                                                          \
	X(cuMemAlloc_v2)                                                                           \
	X(cuMemFree_v2)                                                                            \
	X(cuMemHostAlloc)                                                                          \
	X(cuMemFreeHost)                                                                           \
	X(cuMemGetAllocationGranularity)                                                           \
	X(cuMemCreate)                                                                             \
	X(cuMemRelease)                                                                            \
	X(cuMemAddressReserve)                                                                     \
	X(cuMemAddressFree)                                                                        \
	X(cuMemMap)                                                                                \
	X(cuMemUnmap)                                                                              \
	X(cuMemSetAccess)                                                                          \
	X(cuMemRetainAllocationHandle)                                                             \
	X(cuMemGetAddressRange_v2)                                                                 \
	X(cuPointerGetAttribute)

/* cuda.h's #defines make cuMemAlloc_v2 a declared name; #name keeps the exported spelling. */
#define DRV_DECLARE(name) static __typeof__(name) *drv_##name;
DRIVER_FUNCS(DRV_DECLARE)
#undef DRV_DECLARE

enum comm_state {
	COMM_PENDING, /* created inside a group; initialised by the outermost ncclGroupEnd */
	COMM_READY,
	COMM_FAILED, /* its deferred initialisation failed; owns nothing */
};

/* One physical allocation mapped at its own reserved range, as ncclMemAlloc makes them. */
struct vmm_block {
	struct vmm_block *next; /* ncclMemAlloc blocks only */
	CUdeviceptr va;
	CUmemGenericAllocationHandle handle;
	size_t size_bytes; /* rounded up to the granularity */
	int device;
};

/* A ncclCommRegister handle. Like NCCL's registration cache: a range inside a registered one
 * returns that registration again with one more reference. */
struct nccl_reg {
	struct nccl_reg *next;
	uintptr_t beg, end; /* page-aligned */
	unsigned int refs;
};

struct ncclWindow_vidmem {
	struct ncclWindow_vidmem *next;
	void *buff;
	size_t size_bytes;
	int flags;
};

struct ncclComm {
	struct ncclComm *next;
	enum comm_state state;
	ncclResult_t init_result; /* COMM_FAILED: why */
	bool finalized;
	int device, rank, nranks;
	CUcontext ctx; /* the context its memory was allocated in */
	/* Names the clique for collectives (ncclCommSplit): the unique id it was made from,
	 * or one derived from the parent's. */
	unsigned char clique[NCCL_UNIQUE_ID_BYTES];
	/* Sequence number of its next collective (ncclCommSplit); 0 is the rendezvous that
	 * ncclCommInitRank made under the same clique. */
	uint64_t next_seq;
	ncclConfig_t config;
	/* What comm_alloc made; all zero before and after. */
	CUdeviceptr chan[COMM_CHANNELS];
	void *proxy_host;
	struct vmm_block proxy_cumem; /* NCCL_CUMEM_HOST_ENABLE=1: the proxy buffer, on the host */
	struct vmm_block p2p;
	struct nccl_reg *regs;
	struct ncclWindow_vidmem *wins;
};

/* One rank's part of a rendezvous. */
struct rdv_slot {
	bool present;
	int color, key;
};

/* Ranks of one clique meeting for one collective (@seq) in this process. */
struct rdv {
	struct rdv *next;
	unsigned char clique[NCCL_UNIQUE_ID_BYTES];
	uint64_t seq;
	int nranks, arrived, departed;
	struct rdv_slot slots[];
};

enum job_kind { JOB_INIT, JOB_SPLIT };

/* The initialisation of one communicator, run at the call or at the end of a group. */
struct job {
	struct job *next;
	enum job_kind kind;
	struct ncclComm *comm; /* NULL: a split with NCCL_SPLIT_NOCOLOR, nothing to make */
	CUcontext ctx;	       /* current at the call: where the memory goes */
	int device;
	bool rendezvous; /* false: every rank is known already (ncclCommInitAll) */
	/* JOB_INIT: rank of nranks in the clique named by @clique. JOB_SPLIT: the parent's
	 * rank, nranks, clique and collective sequence number. */
	int rank, nranks;
	unsigned char clique[NCCL_UNIQUE_ID_BYTES];
	uint64_t seq;
	int color, key; /* JOB_SPLIT */
	pthread_t thread;
	bool threaded; /* @thread runs it */
	ncclResult_t result;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rdv_cond = PTHREAD_COND_INITIALIZER;
static struct ncclComm *comm_list;
static struct vmm_block *mem_list;
static struct rdv *rdv_list;
static CUcontext primary_ctx[STANDIN_MAX_DEVICES]; /* retained on first use, never released */

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static CUresult load_result; /* sticky, like NCCL's CUDA initialisation */
static int nr_devices;

/* Global like NCCL's ncclLastError; its own lock, so it can be set with @lock held. */
static pthread_mutex_t err_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_error[LAST_ERROR_BYTES];

static __thread int group_depth;
static __thread struct job *group_jobs;

__attribute__((format(printf, 1, 2))) static void set_error(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&err_lock);
	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
	pthread_mutex_unlock(&err_lock);
}

static void load_driver(void)
{
	void *h;

	load_result = CUDA_ERROR_NOT_INITIALIZED;
	h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		set_error("Failed to load libcuda.so.1: %s", dlerror());
		return;
	}
#define DRV_LOAD(name)                                                                             \
	drv_##name = (__typeof__(name) *)dlsym(h, #name);                                          \
	if (!drv_##name) {                                                                         \
		set_error("libcuda.so.1 has no %s", #name);                                        \
		return;                                                                            \
	}
	DRIVER_FUNCS(DRV_LOAD)
#undef DRV_LOAD
	load_result = drv_cuInit(0);
	if (!load_result)
		load_result = drv_cuDeviceGetCount(&nr_devices);
	if (!load_result && nr_devices > STANDIN_MAX_DEVICES)
		nr_devices = STANDIN_MAX_DEVICES;
	if (load_result)
		set_error("Cuda failure %d: cuInit", (int)load_result);
	/* Loaded for the life of the process, as in NCCL. */
}

/* Every CUDA failure surfaces as ncclUnhandledCudaError, as in NCCL. */
static ncclResult_t cu_check(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return ncclSuccess;
	set_error("Cuda failure %d: %s", (int)r, what);
	return ncclUnhandledCudaError;
}

static ncclResult_t driver_load(void)
{
	pthread_once(&load_once, load_driver);
	return load_result ? ncclUnhandledCudaError : ncclSuccess;
}

/* Threads racing to the first use of a device may each retain it: harmless, never released. */
static ncclResult_t device_primary_ctx(int device, CUcontext *ctx)
{
	ncclResult_t err;
	CUcontext c;

	if (device < 0 || device >= nr_devices)
		return cu_check(CUDA_ERROR_INVALID_DEVICE, "cudaSetDevice");
	pthread_mutex_lock(&lock);
	c = primary_ctx[device];
	pthread_mutex_unlock(&lock);
	if (!c) {
		err =
		    cu_check(drv_cuDevicePrimaryCtxRetain(&c, device), "cuDevicePrimaryCtxRetain");
		if (err)
			return err;
		pthread_mutex_lock(&lock);
		primary_ctx[device] = c;
		pthread_mutex_unlock(&lock);
	}
	*ctx = c;
	return ncclSuccess;
}

/*
 * The calling thread's device, as NCCL's cudaGetDevice() sees it: that of the current
 * context, or device 0, whose primary context the runtime would make current, when there
 * is none.
 */
static ncclResult_t current_device(CUcontext *ctx, int *device)
{
	ncclResult_t err;
	CUdevice dev;
	CUcontext c;

	err = cu_check(drv_cuCtxGetCurrent(&c), "cuCtxGetCurrent");
	if (err)
		return err;
	if (!c) {
		*device = 0;
		return device_primary_ctx(0, ctx);
	}
	err = cu_check(drv_cuCtxGetDevice(&dev), "cuCtxGetDevice");
	if (err)
		return err;
	*ctx = c;
	*device = dev;
	return ncclSuccess;
}

/* Makes @ctx current on this thread; *saved is what to give back to ctx_restore. */
static ncclResult_t ctx_enter(CUcontext ctx, CUcontext *saved)
{
	ncclResult_t err = cu_check(drv_cuCtxGetCurrent(saved), "cuCtxGetCurrent");

	if (!err && *saved != ctx)
		err = cu_check(drv_cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
	return err;
}

/* NCCL puts the caller's device back; the stand-in runtime also caches it per thread. */
static void ctx_restore(CUcontext saved, CUcontext ctx)
{
	if (saved != ctx)
		drv_cuCtxSetCurrent(saved);
}

/*
 * NCCL's ncclCuMemFree (src/include/alloc.h), call for call, from the pointer alone: the
 * handle mapped there retained (one more reference), released at once, the mapping's size
 * asked, the range unmapped, the handle released (its reference from cuMemCreate: the memory
 * goes), the range freed. Each step stops at the first failure, as NCCL's CUCHECK does.
 */
static ncclResult_t cumem_free(CUdeviceptr ptr)
{
	CUmemGenericAllocationHandle handle;
	ncclResult_t err;
	size_t size = 0;

	if (!ptr)
		return ncclSuccess;
	err = cu_check(drv_cuMemRetainAllocationHandle(&handle, (void *)(uintptr_t)ptr),
		       "cuMemRetainAllocationHandle");
	if (!err)
		err = cu_check(drv_cuMemRelease(handle), "cuMemRelease");
	if (!err)
		err =
		    cu_check(drv_cuMemGetAddressRange_v2(NULL, &size, ptr), "cuMemGetAddressRange");
	if (!err)
		err = cu_check(drv_cuMemUnmap(ptr, size), "cuMemUnmap");
	if (!err)
		err = cu_check(drv_cuMemRelease(handle), "cuMemRelease");
	if (!err)
		err = cu_check(drv_cuMemAddressFree(ptr, size), "cuMemAddressFree");
	return err;
}

static ncclResult_t vmm_free(struct vmm_block *b)
{
	ncclResult_t err = cumem_free(b->va);

	memset(b, 0, sizeof(*b));
	return err;
}

/*
 * NCCL's cuMem allocation (ncclCuMemAlloc, ncclMemAlloc): granularity, cuMemCreate,
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess for @device, in that order. The handle is
 * kept, not released, while the memory is in use. With @device -1, ncclCuMemHostAlloc: the
 * memory on the host's NUMA node 0 (CU_MEM_LOCATION_TYPE_HOST_NUMA), accessible by
 * @host_of's device and then by the host, each with a cuMemSetAccess of its own.
 */
static ncclResult_t vmm_alloc_at(int device, int host_of, size_t size_bytes,
				 CUmemAllocationGranularity_flags gf, struct vmm_block *b)
{
	CUmemAllocationProp prop = {0};
	CUmemAccessDesc access = {0};
	ncclResult_t err;
	size_t gran = 0;

	prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
	prop.location.type =
	    device >= 0 ? CU_MEM_LOCATION_TYPE_DEVICE : CU_MEM_LOCATION_TYPE_HOST_NUMA;
	prop.location.id = device >= 0 ? device : 0;
	prop.requestedHandleTypes = CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	err = cu_check(drv_cuMemGetAllocationGranularity(&gran, &prop, gf),
		       "cuMemGetAllocationGranularity");
	if (err)
		return err;
	if (!gran || size_bytes > SIZE_MAX - gran)
		return cu_check(CUDA_ERROR_OUT_OF_MEMORY, "cuMemCreate");
	b->size_bytes = (size_bytes + gran - 1) / gran * gran;
	b->device = device;
	err = cu_check(drv_cuMemCreate(&b->handle, b->size_bytes, &prop, 0), "cuMemCreate");
	if (err)
		goto fail;
	err = cu_check(drv_cuMemAddressReserve(&b->va, b->size_bytes, gran, 0, 0),
		       "cuMemAddressReserve");
	if (err)
		goto fail_release;
	err = cu_check(drv_cuMemMap(b->va, b->size_bytes, 0, b->handle, 0), "cuMemMap");
	if (err)
		goto fail_range;
	access.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
	access.location.id = device >= 0 ? device : host_of;
	access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
	err = cu_check(drv_cuMemSetAccess(b->va, b->size_bytes, &access, 1), "cuMemSetAccess");
	if (!err && device < 0) {
		access.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
		access.location.id = 0;
		err = cu_check(drv_cuMemSetAccess(b->va, b->size_bytes, &access, 1),
			       "cuMemSetAccess");
	}
	if (!err)
		return ncclSuccess;
	drv_cuMemUnmap(b->va, b->size_bytes);
fail_range:
	drv_cuMemAddressFree(b->va, b->size_bytes);
fail_release:
	drv_cuMemRelease(b->handle);
fail:
	memset(b, 0, sizeof(*b));
	return err;
}

static ncclResult_t vmm_alloc(int device, size_t size_bytes, CUmemAllocationGranularity_flags gf,
			      struct vmm_block *b)
{
	return vmm_alloc_at(device, device, size_bytes, gf, b);
}

/*
 * NCCL_CUMEM_HOST_ENABLE=1, as in NCCL: host memory through cuMem (ncclCuMemHostAlloc) instead
 * of cuMemHostAlloc. Off by default here, so the communicators' numbers stay those above.
 */
static bool cumem_host(void)
{
	const char *s = getenv("NCCL_CUMEM_HOST_ENABLE");

	return s && !strcmp(s, "1");
}

/* Everything comm_alloc made, in reverse order. Safe on a partly made communicator. */
static ncclResult_t comm_free_mem(struct ncclComm *c)
{
	ncclResult_t err, ret = ncclSuccess;
	int i;

	if (c->p2p.va)
		ret = vmm_free(&c->p2p);
	if (c->proxy_cumem.va) {
		err = vmm_free(&c->proxy_cumem);
		if (!ret)
			ret = err;
	}
	if (c->proxy_host) {
		err = cu_check(drv_cuMemFreeHost(c->proxy_host), "cuMemFreeHost");
		if (!ret)
			ret = err;
		c->proxy_host = NULL;
	}
	for (i = 0; i < COMM_CHANNELS; i++) {
		if (!c->chan[i])
			continue;
		err = cu_check(drv_cuMemFree_v2(c->chan[i]), "cuMemFree");
		if (!ret)
			ret = err;
		c->chan[i] = 0;
	}
	return ret;
}

/*
 * A communicator's memory, on the calling thread, in its context (current on entry):
 * COMM_CHANNELS x cuMemAlloc_v2(COMM_CHANNEL_BYTES), cuMemHostAlloc(COMM_PROXY_HOST_BYTES,
 * DEVICEMAP | PORTABLE), then vmm_alloc(COMM_P2P_BYTES) with the minimum granularity. With
 * NCCL_CUMEM_HOST_ENABLE=1 the proxy buffer is ncclCuMemHostAlloc's (the minimum granularity:
 * 2 MiB on the host) instead of cuMemHostAlloc's.
 */
static ncclResult_t comm_alloc(struct ncclComm *c)
{
	ncclResult_t err = ncclSuccess;
	int i;

	for (i = 0; i < COMM_CHANNELS && !err; i++)
		err = cu_check(drv_cuMemAlloc_v2(&c->chan[i], COMM_CHANNEL_BYTES), "cuMemAlloc");
	if (!err && cumem_host())
		err = vmm_alloc_at(-1, c->device, COMM_PROXY_HOST_BYTES,
				   CU_MEM_ALLOC_GRANULARITY_MINIMUM, &c->proxy_cumem);
	else if (!err)
		err = cu_check(
		    drv_cuMemHostAlloc(&c->proxy_host, COMM_PROXY_HOST_BYTES,
				       CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_PORTABLE),
		    "cuMemHostAlloc");
	if (!err)
		err =
		    vmm_alloc(c->device, COMM_P2P_BYTES, CU_MEM_ALLOC_GRANULARITY_MINIMUM, &c->p2p);
	if (err)
		comm_free_mem(c);
	return err;
}

static struct ncclComm *comm_find_locked(const struct ncclComm *c)
{
	struct ncclComm *p;

	for (p = comm_list; p; p = p->next)
		if (p == c)
			return p;
	return NULL;
}

/* NCCL's CommCheck plus ncclCommEnsureReady. Called with @lock held. */
static ncclResult_t comm_check_locked(const struct ncclComm *c, const char *api)
{
	struct ncclComm *p;

	if (!c) {
		set_error("%s : comm argument is NULL", api);
		return ncclInvalidArgument;
	}
	p = comm_find_locked(c);
	if (!p) {
		set_error("%s : unknown or destroyed communicator %p", api, (const void *)c);
		return ncclInvalidArgument;
	}
	if (p->state == COMM_PENDING) {
		set_error("%s : communicator %p is still being initialised (ncclGroupEnd)", api,
			  (const void *)c);
		return ncclInvalidUsage;
	}
	if (p->state == COMM_FAILED)
		return p->init_result;
	return ncclSuccess;
}

static ncclResult_t comm_check(const struct ncclComm *c, const char *api)
{
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(c, api);
	pthread_mutex_unlock(&lock);
	return err;
}

static struct ncclComm *comm_new(const ncclConfig_t *config, CUcontext ctx, int device,
				 enum comm_state state)
{
	struct ncclComm *c = calloc(1, sizeof(*c));

	if (!c) {
		set_error("out of host memory");
		return NULL;
	}
	c->config = *config;
	c->next_seq = 1;
	c->ctx = ctx;
	c->device = device;
	c->state = state;
	pthread_mutex_lock(&lock);
	c->next = comm_list;
	comm_list = c;
	pthread_mutex_unlock(&lock);
	return c;
}

/* Drops a communicator that never finished initialising; it owns no memory. */
static void comm_discard(struct ncclComm *c)
{
	struct ncclComm **pp;

	pthread_mutex_lock(&lock);
	for (pp = &comm_list; *pp && *pp != c; pp = &(*pp)->next)
		;
	if (*pp)
		*pp = c->next;
	pthread_mutex_unlock(&lock);
	free(c);
}

/*
 * NCCL's parseCommConfig, the parts that can fail. NULL means the defaults. Non-blocking
 * communicators are not modelled: every initialisation completes before its call returns.
 */
static ncclResult_t config_parse(const ncclConfig_t *in, const ncclConfig_t *inherit,
				 ncclConfig_t *out)
{
	ncclConfig_t def = NCCL_CONFIG_INITIALIZER;
	size_t n;

	if (!in) {
		*out = inherit ? *inherit : def;
		return ncclSuccess;
	}
	if (in->magic != CONFIG_MAGIC || in->version < NCCL_VERSION(2, 14, 0) ||
	    in->size < offsetof(ncclConfig_t, cgaClusterSize)) {
		set_error("Invalid config: not initialised with NCCL_CONFIG_INITIALIZER");
		return ncclInvalidArgument;
	}
	n = in->size < sizeof(*out) ? in->size : sizeof(*out);
	*out = def;
	memcpy(out, in, n);
	if (out->blocking != NCCL_CONFIG_UNDEF_INT && out->blocking != 0 && out->blocking != 1) {
		set_error("Invalid config blocking attribute value %d", out->blocking);
		return ncclInvalidArgument;
	}
	return ncclSuccess;
}

/* Sixteen 64-bit FNV-1a hashes of (parent clique, sequence, color, i): the child's clique. */
static void clique_derive(const unsigned char *parent, uint64_t seq, int color, unsigned char *out)
{
	uint64_t i, h;
	size_t k;

	for (i = 0; i < NCCL_UNIQUE_ID_BYTES / sizeof(h); i++) {
		uint64_t words[3] = {seq, (uint64_t)(int64_t)color, i};
		const unsigned char *w = (const unsigned char *)words;

		h = 0xcbf29ce484222325ULL;
		for (k = 0; k < NCCL_UNIQUE_ID_BYTES; k++)
			h = (h ^ parent[k]) * 0x100000001b3ULL;
		for (k = 0; k < sizeof(words); k++)
			h = (h ^ w[k]) * 0x100000001b3ULL;
		memcpy(out + i * sizeof(h), &h, sizeof(h));
	}
}

static void rdv_unlink_locked(struct rdv *r)
{
	struct rdv **pp;

	for (pp = &rdv_list; *pp != r; pp = &(*pp)->next)
		;
	*pp = r->next;
	free(r);
}

/*
 * Stands in for NCCL's bootstrap: blocks until all @nranks ranks of @clique have arrived for
 * collective @seq, then copies every rank's slot into @all (@nranks entries). Each rank calls
 * from its own thread. Gives up after RENDEZVOUS_TIMEOUT_S with ncclSystemError, where NCCL
 * would wait for ever.
 */
static ncclResult_t rendezvous(const unsigned char *clique, uint64_t seq, int nranks, int rank,
			       int color, int key, struct rdv_slot *all)
{
	ncclResult_t err = ncclSuccess;
	struct timespec deadline;
	struct rdv *r;

	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += RENDEZVOUS_TIMEOUT_S;
	pthread_mutex_lock(&lock);
	for (r = rdv_list; r; r = r->next)
		if (r->seq == seq && !memcmp(r->clique, clique, NCCL_UNIQUE_ID_BYTES))
			break;
	if (!r) {
		r = calloc(1, sizeof(*r) + (size_t)nranks * sizeof(r->slots[0]));
		if (!r) {
			set_error("out of host memory");
			err = ncclSystemError;
			goto out;
		}
		memcpy(r->clique, clique, NCCL_UNIQUE_ID_BYTES);
		r->seq = seq;
		r->nranks = nranks;
		r->next = rdv_list;
		rdv_list = r;
	} else if (r->nranks != nranks || r->slots[rank].present || r->arrived == r->nranks) {
		set_error("rank %d of %d: clique already has rank %d, or another size (%d)", rank,
			  nranks, rank, r->nranks);
		err = ncclInvalidUsage;
		goto out;
	}
	r->slots[rank] = (struct rdv_slot){.present = true, .color = color, .key = key};
	if (++r->arrived == nranks)
		pthread_cond_broadcast(&rdv_cond);
	while (r->arrived < nranks) {
		if (pthread_cond_timedwait(&rdv_cond, &lock, &deadline) == ETIMEDOUT &&
		    r->arrived < nranks) {
			set_error("rank %d of %d: the other ranks did not arrive within %d s", rank,
				  nranks, RENDEZVOUS_TIMEOUT_S);
			r->slots[rank].present = false;
			if (!--r->arrived)
				rdv_unlink_locked(r);
			err = ncclSystemError;
			goto out;
		}
	}
	memcpy(all, r->slots, (size_t)nranks * sizeof(*all));
	if (++r->departed == nranks)
		rdv_unlink_locked(r);
out:
	pthread_mutex_unlock(&lock);
	return err;
}

/* Where this rank lands in a split: its rank among the ranks of its color, and their number. */
static void split_place(const struct rdv_slot *all, int nranks, int me, int *rank, int *count)
{
	int i;

	*rank = 0;
	*count = 0;
	for (i = 0; i < nranks; i++) {
		if (all[i].color != all[me].color)
			continue;
		(*count)++;
		if (all[i].key < all[me].key || (all[i].key == all[me].key && i < me))
			(*rank)++;
	}
}

/* Initialises one communicator: meets the other ranks if needed, then allocates. */
static ncclResult_t job_run(struct job *j)
{
	struct ncclComm *c = j->comm;
	struct rdv_slot *all = NULL;
	ncclResult_t err = ncclSuccess;
	int rank = j->rank, nranks = j->nranks;
	CUcontext saved;

	if (j->rendezvous && j->nranks > 1) {
		all = calloc((size_t)j->nranks, sizeof(*all));
		if (!all) {
			set_error("out of host memory");
			err = ncclSystemError;
			goto out;
		}
		err = rendezvous(j->clique, j->seq, j->nranks, j->rank, j->color, j->key, all);
		if (err)
			goto out;
	}
	if (j->kind == JOB_SPLIT) {
		if (j->color == NCCL_SPLIT_NOCOLOR)
			goto out;
		if (all) {
			split_place(all, j->nranks, j->rank, &rank, &nranks);
		} else {
			rank = 0;
			nranks = 1;
		}
	}
	c->rank = rank;
	c->nranks = nranks;
	if (j->kind == JOB_SPLIT)
		clique_derive(j->clique, j->seq, j->color, c->clique);
	else
		memcpy(c->clique, j->clique, NCCL_UNIQUE_ID_BYTES);
	err = ctx_enter(j->ctx, &saved);
	if (!err) {
		err = comm_alloc(c);
		ctx_restore(saved, j->ctx);
	}
out:
	free(all);
	if (c) {
		pthread_mutex_lock(&lock);
		c->state = err ? COMM_FAILED : COMM_READY;
		c->init_result = err;
		pthread_mutex_unlock(&lock);
	}
	j->result = err;
	return err;
}

static void *job_thread(void *arg)
{
	job_run(arg);
	return NULL;
}

/*
 * Runs a list of jobs as NCCL 2.28's group launch does: one job on the calling thread,
 * several on one new thread each (@threads), joined before returning; or all of them one
 * after the other on the calling thread (!@threads, ncclCommInitAll by default). Returns the
 * first failure.
 */
static ncclResult_t jobs_run(struct job *jobs, bool threads)
{
	ncclResult_t err = ncclSuccess;
	struct job *j;

	if (!jobs)
		return ncclSuccess;
	if (!threads || !jobs->next) {
		for (j = jobs; j; j = j->next)
			if (job_run(j) && !err)
				err = j->result;
		return err;
	}
	for (j = jobs; j; j = j->next) {
		j->threaded = !pthread_create(&j->thread, NULL, job_thread, j);
		/* Else run it here; a rendezvous it needs may then time out. */
		if (!j->threaded)
			job_run(j);
	}
	for (j = jobs; j; j = j->next) {
		if (j->threaded)
			pthread_join(j->thread, NULL);
		if (j->result && !err)
			err = j->result;
	}
	return err;
}

static void jobs_free(struct job *j)
{
	struct job *next;

	for (; j; j = next) {
		next = j->next;
		free(j);
	}
}

/* Queues @j at the end of this thread's group. */
static void group_add(struct job *j)
{
	struct job **pp;

	for (pp = &group_jobs; *pp; pp = &(*pp)->next)
		;
	*pp = j;
}

/* --- version, ids, errors --- */

ncclResult_t pncclGetVersion(int *version)
{
	LEAF_FRAME();
	if (!version)
		return ncclInvalidArgument;
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}
NCCL_API(ncclGetVersion);

/* Random: NCCL's id holds the root's bootstrap address, which means nothing here. */
static void unique_id_make(unsigned char *id)
{
	static uint64_t counter;
	uint64_t mix[3];

	if (getrandom(id, NCCL_UNIQUE_ID_BYTES, 0) == NCCL_UNIQUE_ID_BYTES)
		return;
	/* No entropy yet: unique within the process is what matters here. */
	mix[0] = (uint64_t)getpid();
	mix[1] = (uint64_t)time(NULL);
	mix[2] = __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED);
	memset(id, 0, NCCL_UNIQUE_ID_BYTES);
	memcpy(id, mix, sizeof(mix));
}

ncclResult_t pncclGetUniqueId(ncclUniqueId *uniqueId)
{
	if (!uniqueId) {
		set_error("GetUniqueId : out argument is NULL");
		return ncclInvalidArgument;
	}
	unique_id_make((unsigned char *)uniqueId->internal);
	return ncclSuccess;
}
NCCL_API(ncclGetUniqueId);

/* NCCL 2.28.9's strings. */
const char *pncclGetErrorString(ncclResult_t result)
{
	LEAF_FRAME();
	switch (result) {
	case ncclSuccess:
		return "no error";
	case ncclUnhandledCudaError:
		return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
	case ncclSystemError:
		return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
	case ncclInternalError:
		return "internal error - please report this issue to the NCCL developers";
	case ncclInvalidArgument:
		return "invalid argument (run with NCCL_DEBUG=WARN for details)";
	case ncclInvalidUsage:
		return "invalid usage (run with NCCL_DEBUG=WARN for details)";
	case ncclRemoteError:
		return "remote process exited or there was a network error";
	case ncclInProgress:
		return "NCCL operation in progress";
	default:
		return "unknown result code";
	}
}
NCCL_API(ncclGetErrorString);

/* Like NCCL: the last message of any thread, whatever @comm is. */
const char *pncclGetLastError(ncclComm_t comm)
{
	LEAF_FRAME();
	(void)comm;
	return last_error;
}
NCCL_API(ncclGetLastError);

/* --- communicators --- */

static ncclResult_t init_rank(ncclComm_t *newcomm, int nranks, const ncclUniqueId *id, int rank,
			      const ncclConfig_t *config, const char *api)
{
	ncclConfig_t cfg;
	ncclResult_t err;
	struct job *j;
	CUcontext ctx;
	int device;

	if (!newcomm) {
		set_error("%s : newcomm argument is NULL", api);
		return ncclInvalidArgument;
	}
	*newcomm = NULL;
	err = driver_load();
	if (!err)
		err = current_device(&ctx, &device);
	if (err)
		return err;
	if (nranks < 1 || rank < 0 || rank >= nranks) {
		set_error("Invalid rank requested : %d/%d", rank, nranks);
		return ncclInvalidArgument;
	}
	err = config_parse(config, NULL, &cfg);
	if (err)
		return err;
	j = calloc(1, sizeof(*j));
	if (!j) {
		set_error("out of host memory");
		return ncclSystemError;
	}
	j->kind = JOB_INIT;
	j->ctx = ctx;
	j->device = device;
	j->rendezvous = true;
	j->rank = rank;
	j->nranks = nranks;
	memcpy(j->clique, id->internal, NCCL_UNIQUE_ID_BYTES);
	j->comm = comm_new(&cfg, ctx, device, COMM_PENDING);
	if (!j->comm) {
		free(j);
		return ncclSystemError;
	}
	if (group_depth) {
		/* Initialised by the outermost ncclGroupEnd; the handle is valid now. */
		*newcomm = j->comm;
		group_add(j);
		return ncclSuccess;
	}
	err = job_run(j);
	if (err)
		comm_discard(j->comm);
	else
		*newcomm = j->comm;
	free(j);
	return err;
}

ncclResult_t pncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank)
{
	return init_rank(comm, nranks, &commId, rank, NULL, "ncclCommInitRank");
}
NCCL_API(ncclCommInitRank);

ncclResult_t pncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId commId, int rank,
				     ncclConfig_t *config)
{
	return init_rank(comm, nranks, &commId, rank, config, "ncclCommInitRankConfig");
}
NCCL_API(ncclCommInitRankConfig);

/*
 * One communicator per device, comm[i] is rank i on devlist[i] (or device i), all made by
 * this call. NCCL 2.28.9 runs each one's initialisation on a thread of its own; this does
 * so with GPULEAK_STANDIN_NCCL_INITALL_THREADS=1 and otherwise initialises them one after
 * the other on the calling thread.
 */
ncclResult_t pncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	const char *env = getenv("GPULEAK_STANDIN_NCCL_INITALL_THREADS");
	ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
	bool seen[STANDIN_MAX_DEVICES] = {false};
	struct job *jobs = NULL, **tail = &jobs, *j;
	unsigned char clique[NCCL_UNIQUE_ID_BYTES];
	ncclResult_t err;
	int i;

	err = driver_load();
	if (err)
		return err;
	if (!comms) {
		set_error("CommInitAll : comms argument is NULL");
		return ncclInvalidArgument;
	}
	if (ndev < 1) {
		set_error("Invalid device count requested : %d", ndev);
		return ncclInvalidArgument;
	}
	for (i = 0; devlist && i < ndev; i++) {
		if (devlist[i] < 0 || devlist[i] >= nr_devices) {
			set_error("Invalid device %d (totalnDev=%d)", devlist[i], nr_devices);
			return ncclInvalidArgument;
		}
		if (seen[devlist[i]]) {
			set_error("Duplicate device %d in devlist", devlist[i]);
			return ncclInvalidUsage;
		}
		seen[devlist[i]] = true;
	}
	unique_id_make(clique);
	for (i = 0; i < ndev; i++) {
		int dev = devlist ? devlist[i] : i;
		CUcontext ctx;

		err = device_primary_ctx(dev, &ctx);
		if (err)
			goto fail;
		j = calloc(1, sizeof(*j));
		if (!j) {
			set_error("out of host memory");
			err = ncclSystemError;
			goto fail;
		}
		*tail = j;
		tail = &j->next;
		j->kind = JOB_INIT;
		j->ctx = ctx;
		j->device = dev;
		j->rank = i;
		j->nranks = ndev;
		memcpy(j->clique, clique, sizeof(clique));
		j->comm = comm_new(&cfg, ctx, dev, COMM_PENDING);
		if (!j->comm) {
			err = ncclSystemError;
			goto fail;
		}
	}
	err = jobs_run(jobs, env && !strcmp(env, "1"));
	if (err)
		goto fail;
	for (i = 0, j = jobs; j; i++, j = j->next)
		comms[i] = j->comm;
	jobs_free(jobs);
	return ncclSuccess;
fail:
	for (j = jobs; j; j = j->next) {
		if (!j->comm)
			continue;
		comm_free_mem(j->comm);
		comm_discard(j->comm);
	}
	jobs_free(jobs);
	return err;
}
NCCL_API(ncclCommInitAll);

/*
 * Collective over @comm's ranks, each from its own thread or all in one group. The child
 * is made on @comm's device; NCCL_SPLIT_NOCOLOR takes part but gets NULL.
 */
ncclResult_t pncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			    ncclConfig_t *config)
{
	struct ncclComm *child = NULL;
	ncclConfig_t cfg;
	ncclResult_t err;
	struct job *j;

	if (!newcomm) {
		set_error("CommSplit : newcomm argument is NULL");
		return ncclInvalidArgument;
	}
	if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
		set_error("CommSplit : invalid color %d", color);
		return ncclInvalidArgument;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		set_error("out of host memory");
		return ncclSystemError;
	}
	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclCommSplit");
	if (!err)
		err = config_parse(config, &comm->config, &cfg);
	if (!err) {
		j->kind = JOB_SPLIT;
		j->ctx = comm->ctx;
		j->device = comm->device;
		j->rendezvous = true;
		j->rank = comm->rank;
		j->nranks = comm->nranks;
		memcpy(j->clique, comm->clique, NCCL_UNIQUE_ID_BYTES);
		j->seq = comm->next_seq++;
		j->color = color;
		j->key = key;
	}
	pthread_mutex_unlock(&lock);
	if (err) {
		free(j);
		return err;
	}
	if (color != NCCL_SPLIT_NOCOLOR) {
		child = comm_new(&cfg, j->ctx, j->device, COMM_PENDING);
		if (!child) {
			free(j);
			return ncclSystemError;
		}
	}
	j->comm = child;
	if (group_depth) {
		*newcomm = child;
		group_add(j);
		return ncclSuccess;
	}
	err = job_run(j);
	free(j);
	if (err) {
		if (child)
			comm_discard(child);
		return err;
	}
	*newcomm = child;
	return ncclSuccess;
}
NCCL_API(ncclCommSplit);

ncclResult_t pncclCommFinalize(ncclComm_t comm)
{
	ncclResult_t err = ncclSuccess;

	if (!comm)
		return ncclSuccess;
	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclCommFinalize");
	if (!err && comm->finalized) {
		set_error("ncclCommFinalize : communicator %p already finalized", (void *)comm);
		err = ncclInvalidArgument;
	}
	if (!err)
		comm->finalized = true;
	pthread_mutex_unlock(&lock);
	return err;
}
NCCL_API(ncclCommFinalize);

/*
 * Destroy and abort free the same things in the same order: the P2P buffer (cuMemUnmap,
 * cuMemRelease, cuMemAddressFree), the proxy buffer (cuMemFreeHost), the channels
 * (cuMemFree_v2 x COMM_CHANNELS); registrations and windows still there go silently, as
 * in NCCL. NULL is accepted and does nothing, as in NCCL.
 */
static ncclResult_t comm_destroy(ncclComm_t comm, const char *api)
{
	struct ncclWindow_vidmem *w, *wnext;
	struct nccl_reg *r, *rnext;
	struct ncclComm **pp;
	ncclResult_t err;

	if (!comm)
		return ncclSuccess;
	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, api);
	/* A failed initialisation left a handle that owns nothing: destroying it is fine. */
	if (err && comm_find_locked(comm) && comm->state == COMM_FAILED)
		err = ncclSuccess;
	if (err) {
		pthread_mutex_unlock(&lock);
		return err;
	}
	for (pp = &comm_list; *pp != comm; pp = &(*pp)->next)
		;
	*pp = comm->next;
	pthread_mutex_unlock(&lock);
	for (r = comm->regs; r; r = rnext) {
		rnext = r->next;
		free(r);
	}
	for (w = comm->wins; w; w = wnext) {
		wnext = w->next;
		free(w);
	}
	err = comm_free_mem(comm);
	free(comm);
	return err;
}

ncclResult_t pncclCommDestroy(ncclComm_t comm)
{
	return comm_destroy(comm, "ncclCommDestroy");
}
NCCL_API(ncclCommDestroy);

ncclResult_t pncclCommAbort(ncclComm_t comm)
{
	return comm_destroy(comm, "ncclCommAbort");
}
NCCL_API(ncclCommAbort);

ncclResult_t pncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclGetAsyncError");
	if (err && comm_find_locked(comm))
		err = ncclSuccess; /* pending or failed: that is the answer */
	if (!err && !asyncError) {
		set_error("ncclGetAsyncError : asyncError argument is NULL");
		err = ncclInvalidArgument;
	}
	if (!err)
		*asyncError = comm->state == COMM_PENDING  ? ncclInProgress
			      : comm->state == COMM_FAILED ? comm->init_result
							   : ncclSuccess;
	pthread_mutex_unlock(&lock);
	return err;
}
NCCL_API(ncclCommGetAsyncError);

enum comm_attr { ATTR_COUNT, ATTR_DEVICE, ATTR_RANK };

static ncclResult_t comm_attr(const struct ncclComm *comm, int *out, enum comm_attr what,
			      const char *api)
{
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, api);
	if (!err && !out) {
		set_error("%s : out argument is NULL", api);
		err = ncclInvalidArgument;
	}
	if (!err)
		*out = what == ATTR_COUNT    ? comm->nranks
		       : what == ATTR_DEVICE ? comm->device
					     : comm->rank;
	pthread_mutex_unlock(&lock);
	return err;
}

ncclResult_t pncclCommCount(const ncclComm_t comm, int *count)
{
	return comm_attr(comm, count, ATTR_COUNT, "CommCount");
}
NCCL_API(ncclCommCount);

ncclResult_t pncclCommCuDevice(const ncclComm_t comm, int *device)
{
	return comm_attr(comm, device, ATTR_DEVICE, "CommCuDevice");
}
NCCL_API(ncclCommCuDevice);

ncclResult_t pncclCommUserRank(const ncclComm_t comm, int *rank)
{
	return comm_attr(comm, rank, ATTR_RANK, "CommUserRank");
}
NCCL_API(ncclCommUserRank);

/* --- registration --- */

/* NCCL's registration cache, page-granular: a covered range takes another reference. */
ncclResult_t pncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t beg = (uintptr_t)buff & ~(page - 1);
	uintptr_t end;
	struct nccl_reg *r;
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclCommRegister");
	if (err)
		goto out;
	if (!handle || !buff || !size || (uintptr_t)buff > UINTPTR_MAX - size - page) {
		set_error("ncclCommRegister : invalid buffer %p size %zu or NULL handle", buff,
			  size);
		err = ncclInvalidArgument;
		goto out;
	}
	end = ((uintptr_t)buff + size + page - 1) & ~(page - 1);
	for (r = comm->regs; r; r = r->next) {
		if (r->beg <= beg && end <= r->end) {
			r->refs++;
			*handle = r;
			goto out;
		}
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		set_error("out of host memory");
		err = ncclSystemError;
		goto out;
	}
	r->beg = beg;
	r->end = end;
	r->refs = 1;
	r->next = comm->regs;
	comm->regs = r;
	*handle = r;
out:
	pthread_mutex_unlock(&lock);
	return err;
}
NCCL_API(ncclCommRegister);

/* NULL is a no-op; a handle this communicator does not hold is ncclInvalidUsage, as in NCCL. */
ncclResult_t pncclCommDeregister(const ncclComm_t comm, void *handle)
{
	struct nccl_reg **pp, *r;
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclCommDeregister");
	if (err || !handle)
		goto out;
	for (pp = &comm->regs; *pp && *pp != handle; pp = &(*pp)->next)
		;
	if (!*pp) {
		set_error("Deregister: Could not find handle");
		err = ncclInvalidUsage;
		goto out;
	}
	r = *pp;
	if (!--r->refs) {
		*pp = r->next;
		free(r);
	}
out:
	pthread_mutex_unlock(&lock);
	return err;
}
NCCL_API(ncclCommDeregister);

/* Each call makes a new window. A NULL buffer or size 0 succeeds without one, as in NCCL. */
ncclResult_t pncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, ncclWindow_t *win,
				     int winFlags)
{
	struct ncclWindow_vidmem *w;
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclCommWindowRegister");
	if (err)
		goto out;
	if (!win || (winFlags & ~NCCL_WIN_COLL_SYMMETRIC)) {
		set_error("ncclCommWindowRegister : NULL win or bad flags 0x%x", winFlags);
		err = ncclInvalidArgument;
		goto out;
	}
	if (!buff || !size)
		goto out;
	w = calloc(1, sizeof(*w));
	if (!w) {
		set_error("out of host memory");
		err = ncclSystemError;
		goto out;
	}
	w->buff = buff;
	w->size_bytes = size;
	w->flags = winFlags;
	w->next = comm->wins;
	comm->wins = w;
	*win = w;
out:
	pthread_mutex_unlock(&lock);
	return err;
}
NCCL_API(ncclCommWindowRegister);

/* NULL is a no-op; a window this communicator does not hold is ncclInvalidArgument. */
ncclResult_t pncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win)
{
	struct ncclWindow_vidmem **pp, *w;
	ncclResult_t err;

	pthread_mutex_lock(&lock);
	err = comm_check_locked(comm, "ncclCommWindowDeregister");
	if (err || !win)
		goto out;
	for (pp = &comm->wins; *pp && *pp != win; pp = &(*pp)->next)
		;
	if (!*pp) {
		set_error("ncclCommWindowDeregister : unknown window %p", (void *)win);
		err = ncclInvalidArgument;
		goto out;
	}
	w = *pp;
	*pp = w->next;
	free(w);
out:
	pthread_mutex_unlock(&lock);
	return err;
}
NCCL_API(ncclCommWindowDeregister);

/* --- memory --- */

/*
 * As NCCL with cuMem enabled: on the current device, rounded up to the recommended
 * granularity (2 MiB here), through vmm_alloc. Size 0 succeeds with *ptr = NULL and a NULL
 * @ptr fails with ncclUnhandledCudaError: NCCL hands both to cudaMalloc.
 */
ncclResult_t pncclMemAlloc(void **ptr, size_t size)
{
	struct vmm_block *b;
	ncclResult_t err;
	CUcontext ctx;
	int device;

	if (!ptr)
		return cu_check(CUDA_ERROR_INVALID_VALUE, "cudaMalloc");
	if (!size) {
		*ptr = NULL;
		return ncclSuccess;
	}
	err = driver_load();
	if (!err)
		err = current_device(&ctx, &device);
	if (err)
		return err;
	b = calloc(1, sizeof(*b));
	if (!b) {
		set_error("out of host memory");
		return ncclSystemError;
	}
	err = vmm_alloc(device, size, CU_MEM_ALLOC_GRANULARITY_RECOMMENDED, b);
	if (err) {
		free(b);
		return err;
	}
	pthread_mutex_lock(&lock);
	b->next = mem_list;
	mem_list = b;
	pthread_mutex_unlock(&lock);
	*ptr = (void *)(uintptr_t)b->va;
	return ncclSuccess;
}
NCCL_API(ncclMemAlloc);

/*
 * NCCL 2.28's ncclMemFree: the pointer's device asked (cuPointerGetAttribute), then
 * ncclCuMemFree from the pointer alone (cumem_free). NULL is a no-op; a pointer that is no
 * device memory fails there with ncclUnhandledCudaError, as in NCCL.
 */
ncclResult_t pncclMemFree(void *ptr)
{
	struct vmm_block **pp, *b;
	ncclResult_t err;
	int device = 0;

	if (!ptr)
		return ncclSuccess;
	err = driver_load();
	if (!err)
		err =
		    cu_check(drv_cuPointerGetAttribute(&device, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL,
						       (CUdeviceptr)(uintptr_t)ptr),
			     "cuPointerGetAttribute");
	if (!err)
		err = cumem_free((CUdeviceptr)(uintptr_t)ptr);
	if (err)
		return err;
	/* The stand-in's own bookkeeping: the block is gone. */
	pthread_mutex_lock(&lock);
	for (pp = &mem_list; *pp && (*pp)->va != (CUdeviceptr)(uintptr_t)ptr; pp = &(*pp)->next)
		;
	b = *pp;
	if (b)
		*pp = b->next;
	pthread_mutex_unlock(&lock);
	free(b);
	return ncclSuccess;
}
NCCL_API(ncclMemFree);

/* --- collectives and groups --- */

static size_t dtype_bytes(ncclDataType_t t)
{
	switch (t) {
	case ncclInt8:
	case ncclUint8:
	case ncclFloat8e4m3:
	case ncclFloat8e5m2:
		return 1;
	case ncclFloat16:
	case ncclBfloat16:
		return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

/*
 * Completes at once, in or out of a group, and exchanges nothing: recvbuff gets this rank's
 * sendbuff (the exact result when nranks is 1 and op is sum, max, min or avg). The stream is
 * not looked at.
 */
ncclResult_t pncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			    cudaStream_t stream)
{
	size_t esize = dtype_bytes(datatype);
	ncclResult_t err;

	(void)stream;
	err = comm_check(comm, "AllReduce");
	if (err)
		return err;
	if (!esize || (int)op < 0 || op >= ncclNumOps) {
		set_error("AllReduce : invalid type %d or reduction operation %d", (int)datatype,
			  (int)op);
		return ncclInvalidArgument;
	}
	if (count && (!sendbuff || !recvbuff || count > SIZE_MAX / esize)) {
		set_error("AllReduce : invalid buffers %p %p count %zu", sendbuff, recvbuff, count);
		return ncclInvalidArgument;
	}
	if (count && sendbuff != recvbuff)
		memmove(recvbuff, sendbuff, count * esize);
	return ncclSuccess;
}
NCCL_API(ncclAllReduce);

ncclResult_t pncclGroupStart(void)
{
	LEAF_FRAME();
	group_depth++;
	return ncclSuccess;
}
NCCL_API(ncclGroupStart);

/*
 * The outermost ncclGroupEnd initialises the communicators that ncclCommInitRank(Config)
 * and ncclCommSplit queued in the group: one on this thread, several on one thread each,
 * as NCCL 2.28.9 does. Failed ones stay as handles that only ncclCommDestroy/Abort accept.
 */
ncclResult_t pncclGroupEnd(void)
{
	ncclResult_t err;
	struct job *jobs;

	if (!group_depth) {
		set_error("ncclGroupEnd: not in a group call.");
		return ncclInvalidUsage;
	}
	if (--group_depth)
		return ncclSuccess;
	jobs = group_jobs;
	group_jobs = NULL;
	err = jobs_run(jobs, true);
	jobs_free(jobs);
	return err;
}
NCCL_API(ncclGroupEnd);
