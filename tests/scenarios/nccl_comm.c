// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * nccl_comm MODE
 *
 * NCCL communicators over the stand-in libnccl.so.2, which allocates through the stand-in
 * driver (it dlopen()s libcuda.so.1; nothing of NCCL's goes through the runtime). User
 * buffers come from the stand-in runtime (cudaMalloc over cuMemAlloc_v2). Set-up, before
 * "ready": cudaSetDevice(0), so libcuda.so.1 is mapped at "ready" (libnccl.so.2 is NEEDED).
 *
 * Every communicator allocates exactly this, inside the NCCL call that initialises it, on the
 * thread that runs the initialisation, in its device's primary context, in this order:
 *   cuMemAlloc_v2 x 4        1048576 bytes each  device memory ("channel buffers")
 *   cuMemHostAlloc           65536 bytes         pinned host memory, DEVICEMAP|PORTABLE
 *   cuMemGetAllocationGranularity (MINIMUM, 2 MiB), then cuMemCreate 2097152 (the device),
 *   cuMemAddressReserve 2097152 (alignment 2 MiB), cuMemMap, cuMemSetAccess (device, RW)
 * = 6291456 device bytes (4 allocations + 1 VMM handle mapped once) + 65536 host bytes.
 * With NCCL_CUMEM_HOST_ENABLE=1 the 65536 host bytes are NCCL's ncclCuMemHostAlloc instead:
 * granularity (MINIMUM), cuMemCreate 2097152 on the host (CU_MEM_LOCATION_TYPE_HOST_NUMA 0),
 * cuMemAddressReserve, cuMemMap, cuMemSetAccess (device, RW), cuMemSetAccess (host, RW).
 * ncclCommDestroy and ncclCommAbort of it free all of it, on the calling thread, in this
 * order: the VMM buffer as NCCL's ncclCuMemFree does (cuMemRetainAllocationHandle,
 * cuMemRelease, cuMemGetAddressRange, cuMemUnmap, cuMemRelease, cuMemAddressFree), the host
 * buffer (cuMemFreeHost, or ncclCuMemFree's sequence), cuMemFree_v2 x 4.
 * Driver calls that allocate nothing come with them: cuInit and cuDeviceGetCount once per
 * process, cuCtxGetCurrent/cuCtxGetDevice at each initialisation, cuDevicePrimaryCtxRetain at
 * the first use of a device without a current context, cuCtxSetCurrent when a context must be
 * switched (and back).
 *
 * One site per NCCL call; a site called several times is one site:
 *   nccl_get_id ncclGetUniqueId, nccl_init ncclCommInitRank(nranks 1, rank 0),
 *   nccl_init_config ncclCommInitRankConfig, nccl_init_all ncclCommInitAll,
 *   nccl_init_rank ncclCommInitRank(nranks 2), nccl_split ncclCommSplit,
 *   nccl_allreduce ncclAllReduce, nccl_destroy ncclCommDestroy, nccl_abort ncclCommAbort,
 *   nccl_register ncclCommRegister, nccl_deregister ncclCommDeregister,
 *   nccl_window_register ncclCommWindowRegister, nccl_window_deregister
 *   ncclCommWindowDeregister, nccl_mem_alloc ncclMemAlloc, nccl_mem_free ncclMemFree,
 *   nccl_group_start ncclGroupStart, nccl_group_end ncclGroupEnd; alloc_buffer cudaMalloc,
 *   free_buffer cudaFree (user buffers); nccl_bad_calls, nccl_bad_comm_calls (errors).
 *
 * Modes ("C's memory" = the per-communicator set above):
 *   clean     nccl_get_id; nccl_init -> C (device 0); alloc_buffer 2 x 16384 (send, recv;
 *             send filled, recv read back with cudaMemcpy); nccl_allreduce (4096 floats,
 *             sum: copies send to recv); nccl_destroy C; free_buffer x 2.  Left: nothing.
 *   leak      nccl_get_id; nccl_init -> C.  Left: C's memory, device 0, all allocated inside
 *             ncclCommInitRank at nccl_init; C never destroyed.
 *   abort     nccl_get_id; nccl_init -> C; nccl_abort C.  Left: nothing.
 *   all       nccl_init_all: ncclCommInitAll(2, devlist {0, 1}) -> C0 (rank 0, device 0),
 *             then C1 (rank 1, device 1), both inside the one call, on the calling thread
 *             (with GPULEAK_STANDIN_NCCL_INITALL_THREADS=1 on one new libnccl thread each,
 *             as NCCL 2.28.9 does); nccl_destroy C0.  Left: C1's memory, on device 1
 *             (6291456 bytes) + 65536 host, allocated inside ncclCommInitAll.
 *   split     nccl_get_id; nccl_init -> P; nccl_split(P, color 0, key 0) -> Q (device 0,
 *             rank 0 of 1), Q's memory allocated inside ncclCommSplit; nccl_destroy P.
 *             Left: Q's memory, device 0, allocated inside ncclCommSplit at nccl_split.
 *   register  nccl_get_id; nccl_init -> C; alloc_buffer 4 MiB -> B; nccl_register x 2:
 *             ncclCommRegister(C, B, 4 MiB) returns the same handle H both times (NCCL's
 *             registration cache: the second call takes a second reference); nccl_deregister
 *             H once; nccl_destroy C (drops H's last reference silently, as NCCL does);
 *             free_buffer B.  Left: no memory; one registration of H never deregistered
 *             (2 registers, 1 deregister) when its communicator C was destroyed.
 *   memalloc  nccl_mem_alloc x 2: ncclMemAlloc(3 MiB), each inside: granularity
 *             (RECOMMENDED), cuMemCreate 4194304 (device 0), cuMemAddressReserve 4194304,
 *             cuMemMap, cuMemSetAccess; the pointer returned is the reserved range.
 *             nccl_mem_free of the first: cuPointerGetAttribute, then ncclCuMemFree's
 *             cuMemRetainAllocationHandle, cuMemRelease, cuMemGetAddressRange, cuMemUnmap,
 *             cuMemRelease, cuMemAddressFree.
 *             Left: one block, 4194304 bytes (3145728 asked) on device 0, at nccl_mem_alloc.
 *   memfree   nccl_mem_alloc x 3 (3 MiB each, as memalloc), nccl_mem_free x 3.  Left:
 *             nothing; no release is of a handle already gone.
 *   hoststeps nccl_get_id; nccl_init -> C; then 10 times nccl_step (a step marker) and
 *             alloc_buffer 1 MiB, kept.  Left: C's memory and 10 MiB at alloc_buffer, all
 *             on device 0 but C's host memory (with NCCL_CUMEM_HOST_ENABLE=1, a 2 MiB
 *             cuMemCreate on the host: no device's memory).
 *   config    nccl_get_id; nccl_init_config (blocking 1, commName "gpuleak") -> C;
 *             nccl_destroy C.  Left: nothing.
 *   window    nccl_get_id; nccl_init -> C; nccl_mem_alloc 2 MiB -> W; nccl_window_register
 *             x 2 (W, 2 MiB, NCCL_WIN_COLL_SYMMETRIC): two different windows w0, w1;
 *             nccl_window_deregister w0; nccl_destroy C (drops w1 silently); nccl_mem_free W.
 *             Left: no memory; window w1 never deregistered before C was destroyed.
 *   threads   nccl_get_id; threads T0 and T1 each cudaSetDevice(rank), then nccl_init_rank
 *             (nranks 2, rank = 0 or 1): they meet inside ncclCommInitRank, then each
 *             allocates its communicator's memory on its own thread and device; the main
 *             thread joins them and destroys C0 (nccl_destroy).  Left: C1's memory on device
 *             1, allocated on thread T1 inside its ncclCommInitRank.
 *   group     nccl_get_id; nccl_group_start; cudaSetDevice(0), nccl_init_rank (2, 0) -> C0;
 *             cudaSetDevice(1), nccl_init_rank (2, 1) -> C1, both returning at once with
 *             nothing allocated; cudaSetDevice(0); nccl_group_end: C0 and C1 are initialised
 *             inside ncclGroupEnd, each on a new thread libnccl creates (as NCCL 2.28.9
 *             does), C0's memory on device 0, C1's on device 1; nccl_destroy C0.
 *             Left: C1's memory on device 1, allocated on a libnccl thread during
 *             ncclGroupEnd for the communicator that ncclCommInitRank returned at its second
 *             nccl_init_rank call.
 *   errors    nccl_get_id; nccl_bad_calls: calls that fail or do nothing, none allocates
 *             (each result checked, see below); nccl_get_id; nccl_init -> C;
 *             nccl_bad_comm_calls(C), likewise; nccl_destroy C; then a second
 *             ncclCommDestroy(C) from main, ncclInvalidArgument (the stand-in knows it is
 *             gone).  Left: nothing.
 * The driver's count of bytes in use on devices 0 and 1 at "done" is checked against the
 * above (host memory is not counted there). Needs GPULEAK_STANDIN_DEVICES >= 2 (default).
 */
#include <cuda_runtime_api.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include "scenario.h"

#define MIB	       (1UL << 20)
#define COMM_DEV_BYTES (6 * MIB)
#define BUF_FLOATS     4096

static SCENARIO_SITE ncclUniqueId nccl_get_id(void)
{
	ncclUniqueId id;

	SCENARIO_OK(ncclGetUniqueId(&id));
	return id;
}

static SCENARIO_SITE ncclComm_t nccl_init(ncclUniqueId id)
{
	ncclComm_t c;

	SCENARIO_OK(ncclCommInitRank(&c, 1, id, 0));
	return c;
}

static SCENARIO_SITE ncclComm_t nccl_init_config(ncclUniqueId id)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	ncclComm_t c;

	config.blocking = 1;
	config.commName = "gpuleak";
	SCENARIO_OK(ncclCommInitRankConfig(&c, 1, id, 0, &config));
	return c;
}

static SCENARIO_SITE void nccl_init_all(ncclComm_t *comms, int n, const int *devs)
{
	SCENARIO_OK(ncclCommInitAll(comms, n, devs));
}

static SCENARIO_SITE ncclComm_t nccl_init_rank(int nranks, ncclUniqueId id, int rank)
{
	ncclComm_t c;

	SCENARIO_OK(ncclCommInitRank(&c, nranks, id, rank));
	return c;
}

static SCENARIO_SITE ncclComm_t nccl_split(ncclComm_t parent, int color, int key)
{
	ncclComm_t c;

	SCENARIO_OK(ncclCommSplit(parent, color, key, &c, NULL));
	return c;
}

static SCENARIO_SITE void nccl_allreduce(const float *send, float *recv, size_t count, ncclComm_t c)
{
	SCENARIO_OK(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, c, 0));
}

static SCENARIO_SITE void nccl_destroy(ncclComm_t c)
{
	SCENARIO_OK(ncclCommDestroy(c));
}

static SCENARIO_SITE void nccl_abort(ncclComm_t c)
{
	SCENARIO_OK(ncclCommAbort(c));
}

static SCENARIO_SITE void nccl_register(ncclComm_t c, void *buf, size_t size, void **handles, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(ncclCommRegister(c, buf, size, &handles[i]));
	}
}

static SCENARIO_SITE void nccl_deregister(ncclComm_t c, void *handle)
{
	SCENARIO_OK(ncclCommDeregister(c, handle));
}

static SCENARIO_SITE void nccl_window_register(ncclComm_t c, void *buf, size_t size,
					       ncclWindow_t *wins, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(
		    ncclCommWindowRegister(c, buf, size, &wins[i], NCCL_WIN_COLL_SYMMETRIC));
	}
}

static SCENARIO_SITE void nccl_window_deregister(ncclComm_t c, ncclWindow_t w)
{
	SCENARIO_OK(ncclCommWindowDeregister(c, w));
}

static SCENARIO_SITE void nccl_mem_alloc(void **ptrs, size_t size, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(ncclMemAlloc(&ptrs[i], size));
	}
}

static SCENARIO_SITE void nccl_mem_free(void *p)
{
	SCENARIO_OK(ncclMemFree(p));
}

static SCENARIO_SITE void nccl_group_start(void)
{
	SCENARIO_OK(ncclGroupStart());
}

static SCENARIO_SITE void nccl_group_end(void)
{
	SCENARIO_OK(ncclGroupEnd());
}

static SCENARIO_SITE void alloc_buffer(void **bufs, size_t size, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		SCENARIO_OPAQUE(i);
		SCENARIO_OK(cudaMalloc(&bufs[i], size));
	}
}

static SCENARIO_SITE void free_buffer(void *p)
{
	SCENARIO_OK(cudaFree(p));
}

/* Checks what the communicator says about itself; not a traced site. */
static void check_comm(ncclComm_t c, int nranks, int rank, int device)
{
	int v;

	SCENARIO_OK(ncclCommCount(c, &v));
	SCENARIO_EXPECT(v, nranks);
	SCENARIO_OK(ncclCommUserRank(c, &v));
	SCENARIO_EXPECT(v, rank);
	SCENARIO_OK(ncclCommCuDevice(c, &v));
	SCENARIO_EXPECT(v, device);
}

/* Failures that allocate nothing; the codes are NCCL 2.28.9's where it defines them. */
static SCENARIO_SITE void nccl_bad_calls(ncclUniqueId id)
{
	int dup[2] = {0, 0}, bad[1] = {5}, v = 0;
	ncclComm_t c = (ncclComm_t)&v, comms[2];
	void *h, *p = &v;

	SCENARIO_EXPECT(ncclCommInitRank(NULL, 1, id, 0), ncclInvalidArgument);
	SCENARIO_EXPECT(ncclCommInitRank(&c, 1, id, 1), ncclInvalidArgument);
	SCENARIO_EXPECT(c == NULL, 1);
	SCENARIO_EXPECT(ncclCommInitAll(comms, 2, dup), ncclInvalidUsage);
	SCENARIO_EXPECT(ncclCommInitAll(comms, 1, bad), ncclInvalidArgument);
	SCENARIO_EXPECT(ncclCommDestroy(NULL), ncclSuccess);
	SCENARIO_EXPECT(ncclCommAbort(NULL), ncclSuccess);
	SCENARIO_EXPECT(ncclCommCount(NULL, &v), ncclInvalidArgument);
	SCENARIO_EXPECT(ncclCommRegister(NULL, p, 4096, &h), ncclInvalidArgument);
	SCENARIO_EXPECT(ncclMemAlloc(NULL, 4096), ncclUnhandledCudaError);
	SCENARIO_EXPECT(ncclMemAlloc(&p, 0), ncclSuccess);
	SCENARIO_EXPECT(p == NULL, 1);
	SCENARIO_EXPECT(ncclMemFree(&v), ncclUnhandledCudaError);
	SCENARIO_EXPECT(ncclMemFree(NULL), ncclSuccess);
	SCENARIO_EXPECT(ncclGroupEnd(), ncclInvalidUsage);
	SCENARIO_EXPECT(ncclGetVersion(&v), ncclSuccess);
	SCENARIO_EXPECT(v, NCCL_VERSION_CODE);
	SCENARIO_EXPECT(strcmp(ncclGetErrorString(ncclInvalidUsage),
			       "invalid usage (run with NCCL_DEBUG=WARN for details)"),
			0);
	SCENARIO_EXPECT(ncclGetLastError(NULL)[0] != '\0', 1);
}

static SCENARIO_SITE void nccl_bad_comm_calls(ncclComm_t c)
{
	ncclComm_t n;
	int v;

	SCENARIO_EXPECT(ncclCommDeregister(c, &v), ncclInvalidUsage);
	SCENARIO_EXPECT(ncclCommDeregister(c, NULL), ncclSuccess);
	SCENARIO_EXPECT(ncclCommWindowDeregister(c, (ncclWindow_t)&v), ncclInvalidArgument);
	SCENARIO_EXPECT(ncclCommSplit(c, -5, 0, &n, NULL), ncclInvalidArgument);
	SCENARIO_EXPECT(ncclAllReduce(NULL, NULL, 0, ncclNumTypes, ncclSum, c, 0),
			ncclInvalidArgument);
	SCENARIO_EXPECT(ncclCommFinalize(c), ncclSuccess);
	SCENARIO_EXPECT(ncclCommFinalize(c), ncclInvalidArgument);
}

/* Bytes in use on @dev by the driver's count; leaves device 0 current. */
static size_t used_on(int dev)
{
	size_t free_b, total_b;

	SCENARIO_OK(cudaSetDevice(dev));
	SCENARIO_OK(cudaMemGetInfo(&free_b, &total_b));
	SCENARIO_OK(cudaSetDevice(0));
	return total_b - free_b;
}

static void mode_clean(void)
{
	float host[BUF_FLOATS], back[BUF_FLOATS];
	ncclComm_t c = nccl_init(nccl_get_id());
	void *bufs[2];
	int i;

	check_comm(c, 1, 0, 0);
	alloc_buffer(bufs, sizeof(host), 2);
	for (i = 0; i < BUF_FLOATS; i++)
		host[i] = (float)i;
	SCENARIO_OK(cudaMemcpy(bufs[0], host, sizeof(host), cudaMemcpyHostToDevice));
	nccl_allreduce(bufs[0], bufs[1], BUF_FLOATS, c);
	SCENARIO_OK(cudaMemcpy(back, bufs[1], sizeof(back), cudaMemcpyDeviceToHost));
	SCENARIO_EXPECT(memcmp(host, back, sizeof(host)), 0);
	nccl_destroy(c);
	free_buffer(bufs[0]);
	free_buffer(bufs[1]);
}

static void mode_all(void)
{
	const int devs[2] = {0, 1};
	ncclComm_t comms[2];

	nccl_init_all(comms, 2, devs);
	check_comm(comms[0], 2, 0, 0);
	check_comm(comms[1], 2, 1, 1);
	nccl_destroy(comms[0]);
}

static void mode_split(void)
{
	ncclComm_t p = nccl_init(nccl_get_id()), q;

	q = nccl_split(p, 0, 0);
	check_comm(q, 1, 0, 0);
	nccl_destroy(p);
}

static void mode_register(void)
{
	ncclComm_t c = nccl_init(nccl_get_id());
	void *buf, *h[2];

	alloc_buffer(&buf, 4 * MIB, 1);
	nccl_register(c, buf, 4 * MIB, h, 2);
	SCENARIO_EXPECT(h[0] == h[1] && h[0], 1);
	nccl_deregister(c, h[0]);
	nccl_destroy(c);
	free_buffer(buf);
}

static void mode_memalloc(void)
{
	void *p[2];

	nccl_mem_alloc(p, 3 * MIB, 2);
	SCENARIO_EXPECT(p[0] != p[1] && p[0] && p[1], 1);
	nccl_mem_free(p[0]);
}

static void mode_window(void)
{
	ncclComm_t c = nccl_init(nccl_get_id());
	ncclWindow_t w[2];
	void *buf;

	nccl_mem_alloc(&buf, 2 * MIB, 1);
	nccl_window_register(c, buf, 2 * MIB, w, 2);
	SCENARIO_EXPECT(w[0] != w[1] && w[0] && w[1], 1);
	nccl_window_deregister(c, w[0]);
	nccl_destroy(c);
	nccl_mem_free(buf);
}

struct rank_arg {
	ncclUniqueId id;
	int rank;
	ncclComm_t comm;
};

static void *rank_thread(void *p)
{
	struct rank_arg *a = p;

	SCENARIO_OK(cudaSetDevice(a->rank));
	a->comm = nccl_init_rank(2, a->id, a->rank);
	return NULL;
}

static void mode_threads(void)
{
	struct rank_arg a[2];
	pthread_t t[2];
	int r;

	a[0].id = nccl_get_id();
	a[1].id = a[0].id;
	for (r = 0; r < 2; r++) {
		a[r].rank = r;
		SCENARIO_OK(pthread_create(&t[r], NULL, rank_thread, &a[r]));
	}
	for (r = 0; r < 2; r++)
		SCENARIO_OK(pthread_join(t[r], NULL));
	check_comm(a[0].comm, 2, 0, 0);
	check_comm(a[1].comm, 2, 1, 1);
	nccl_destroy(a[0].comm);
}

static void mode_group(void)
{
	ncclUniqueId id = nccl_get_id();
	ncclComm_t c0, c1;

	nccl_group_start();
	SCENARIO_OK(cudaSetDevice(0));
	c0 = nccl_init_rank(2, id, 0);
	SCENARIO_OK(cudaSetDevice(1));
	c1 = nccl_init_rank(2, id, 1);
	SCENARIO_OK(cudaSetDevice(0));
	nccl_group_end();
	check_comm(c0, 2, 0, 0);
	check_comm(c1, 2, 1, 1);
	nccl_destroy(c0);
}

static void mode_errors(void)
{
	ncclComm_t c;

	nccl_bad_calls(nccl_get_id());
	c = nccl_init(nccl_get_id());
	nccl_bad_comm_calls(c);
	nccl_destroy(c);
	SCENARIO_EXPECT(ncclCommDestroy(c), ncclInvalidArgument);
}

/* The step marker of hoststeps (gpuleak --step sym:nccl_comm:nccl_step). */
SCENARIO_SITE void nccl_step(int step)
{
	SCENARIO_OPAQUE(step);
}

static void mode_hoststeps(void)
{
	void *buf;
	int i;

	nccl_init(nccl_get_id());
	for (i = 0; i < 10; i++) {
		nccl_step(i);
		alloc_buffer(&buf, MIB, 1);
	}
}

static void mode_memfree(void)
{
	void *p[3];
	int i;

	nccl_mem_alloc(p, 3 * MIB, 3);
	for (i = 0; i < 3; i++)
		nccl_mem_free(p[i]);
}

static const char *const modes[] = {"clean",	"leak",	    "abort",   "all",	   "split",
				    "register", "memalloc", "config",  "window",   "threads",
				    "group",	"errors",   "memfree", "hoststeps"};

int main(int argc, char **argv)
{
	size_t want0 = 0, want1 = 0;
	const char *mode;
	unsigned int i;

	scenario_usage(argc, 2,
		       "nccl_comm clean|leak|abort|all|split|register|memalloc|config|window|"
		       "threads|group|errors|memfree|hoststeps");
	mode = argv[1];
	for (i = 0; i < sizeof(modes) / sizeof(modes[0]); i++)
		if (!strcmp(mode, modes[i]))
			break;
	if (i == sizeof(modes) / sizeof(modes[0])) {
		fprintf(stderr, "nccl_comm: unknown mode '%s'\n", mode);
		return 2;
	}
	SCENARIO_OK(cudaSetDevice(0));
	scenario_ready();
	if (!strcmp(mode, "clean")) {
		mode_clean();
	} else if (!strcmp(mode, "leak")) {
		nccl_init(nccl_get_id());
		want0 = COMM_DEV_BYTES;
	} else if (!strcmp(mode, "abort")) {
		nccl_abort(nccl_init(nccl_get_id()));
	} else if (!strcmp(mode, "all")) {
		mode_all();
		want1 = COMM_DEV_BYTES;
	} else if (!strcmp(mode, "split")) {
		mode_split();
		want0 = COMM_DEV_BYTES;
	} else if (!strcmp(mode, "register")) {
		mode_register();
	} else if (!strcmp(mode, "memalloc")) {
		mode_memalloc();
		want0 = 4 * MIB;
	} else if (!strcmp(mode, "config")) {
		nccl_destroy(nccl_init_config(nccl_get_id()));
	} else if (!strcmp(mode, "window")) {
		mode_window();
	} else if (!strcmp(mode, "threads")) {
		mode_threads();
		want1 = COMM_DEV_BYTES;
	} else if (!strcmp(mode, "group")) {
		mode_group();
		want1 = COMM_DEV_BYTES;
	} else if (!strcmp(mode, "memfree")) {
		mode_memfree();
	} else if (!strcmp(mode, "hoststeps")) {
		mode_hoststeps();
		want0 = COMM_DEV_BYTES + 10 * MIB;
	} else {
		mode_errors();
	}
	SCENARIO_EXPECT(used_on(0), want0);
	SCENARIO_EXPECT(used_on(1), want1);
	scenario_done();
	return 0;
}
