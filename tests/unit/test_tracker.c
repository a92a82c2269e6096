// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tracker's semantics on hand-made record sequences: the cases that are hard to provoke
 * with exact timing in a live process (interleavings, sync ordering, nesting). The live tests
 * cover the same paths end to end.
 */
#include <string.h>
#include "check.h"
#include "gpuleak.h"
#include "probe/catalog.h"
#include "tracker/tracker.h"

#define PID  100
#define TID  101
#define TID2 102

static uint64_t clock_ns = 1000;

static struct gl_call_rec rec(uint8_t kind, uint16_t api, uint32_t tid, uint64_t addr,
			      uint64_t size, uint64_t aux)
{
	struct gl_call_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr.size = sizeof(r);
	r.hdr.kind = kind;
	r.hdr.api = api;
	r.hdr.pid = PID;
	r.hdr.tid = tid;
	r.hdr.ts_ns = clock_ns += 10;
	r.addr = addr;
	r.size = size;
	r.aux = aux;
	r.caller = 0x401000;
	r.stack_id = -1;
	return r;
}

static int feed(struct tracker *t, struct gl_call_rec r)
{
	return tracker__apply(t, &r.hdr);
}

static int alloc(struct tracker *t, uint16_t api, uint32_t tid, uint64_t addr, uint64_t size,
		 uint64_t stream)
{
	return feed(t, rec(GL_REC_ALLOC, api, tid, addr, size, stream));
}

static int sync_rec(struct tracker *t, uint16_t api, uint32_t tid, uint64_t what, uint64_t entry_ns)
{
	struct gl_call_rec r = rec(GL_REC_SYNC, api, tid, 0, 0, what);

	r.aux2 = entry_ns;
	return tracker__apply(t, &r.hdr);
}

static void async_free_pending_until_stream_sync(void)
{
	struct tracker *t;
	struct tproc *p;
	uint64_t before;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x1000, 4096, 0xaa);
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x2000, 8192, 0xbb);
	/* A sync that began before the free cannot complete it. */
	before = clock_ns;
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x1000, 0, 0xaa));
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x2000, 0, 0xbb));
	p = tracker__proc(t, PID);
	CHECK_U64(p->pending_bytes, 4096 + 8192, "pending after async frees");
	CHECK_U64(p->live_bytes, 0, "live after async frees");
	sync_rec(t, GL_API_CUDA_STREAM_SYNCHRONIZE, TID, 0xaa, before);
	CHECK_U64(p->pending_bytes, 4096 + 8192,
		  "a sync entered before the free completes nothing");
	sync_rec(t, GL_API_CUDA_STREAM_SYNCHRONIZE, TID, 0xaa, clock_ns);
	CHECK_U64(p->pending_bytes, 8192, "stream 0xaa completed, 0xbb still pending");
	CHECK_U64(p->c.frees, 1, "frees");
	/* A second free while pending is a double free, never a negative counter. */
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x2000, 0, 0xbb));
	CHECK_U64(p->c.double_frees, 1, "double free");
	CHECK_U64(p->pending_bytes, 8192, "pending unchanged by the double free");
	sync_rec(t, GL_API_CUDA_DEVICE_SYNCHRONIZE, TID, 0, clock_ns);
	CHECK_U64(p->pending_bytes, 0, "device sync completes the rest");
	CHECK_U64(p->pending_count, 0, "pending count");
	CHECK_U64(p->c.frees, 2, "frees");
	tracker__free(t);
}

static void stream_ordered_reuse_closes_pending(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x5000, 1024, 0xaa);
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x5000, 0, 0xaa));
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x5000, 1024, 0xaa);
	p = tracker__proc(t, PID);
	CHECK_U64(p->c.async_reuse, 1, "stream-ordered reuse");
	CHECK_U64(p->pending_bytes, 0, "pending closed");
	CHECK_U64(p->live_bytes, 1024, "live: the new allocation");
	CHECK_U64(p->nr_pend, 0, "pending list empty");
	/* The same address from cudaMalloc while live: freed behind our back. */
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x5000, 2048, 0);
	CHECK_U64(p->c.addr_reuse, 1, "live address returned again");
	CHECK_U64(p->live_bytes, 2048, "live replaced");
	CHECK_U64(p->live_count, 1, "live count");
	tracker__free(t);
}

static void event_sync_completes_recorded_stream(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x1000, 100, 0xaa);
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x1000, 0, 0xaa));
	/* cudaEventRecord(event 0xe1, stream 0xaa) */
	feed(t, rec(GL_REC_CALL, GL_API_CUDA_EVENT_RECORD, TID, 0xe1, 0, 0xaa));
	sync_rec(t, GL_API_CUDA_EVENT_SYNCHRONIZE, TID2, 0xe2, clock_ns);
	p = tracker__proc(t, PID);
	CHECK_U64(p->pending_bytes, 100, "an unrecorded event completes nothing");
	sync_rec(t, GL_API_CUDA_EVENT_SYNCHRONIZE, TID2, 0xe1, clock_ns);
	CHECK_U64(p->pending_bytes, 0, "event sync on another thread completes the stream");
	tracker__free(t);
}

static void per_thread_default_stream(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* Stream 0 in a _ptsz call is the calling thread's own stream. */
	alloc(t, GL_API_CUDA_MALLOC_ASYNC_PTSZ, TID, 0x1000, 10, 0);
	alloc(t, GL_API_CUDA_MALLOC_ASYNC_PTSZ, TID2, 0x2000, 20, 0);
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC_PTSZ, TID, 0x1000, 0, 0));
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC_PTSZ, TID2, 0x2000, 0, 0));
	sync_rec(t, GL_API_CUDA_STREAM_SYNCHRONIZE_PTSZ, TID2, 0, clock_ns);
	p = tracker__proc(t, PID);
	CHECK_U64(p->pending_bytes, 10, "only TID2's per-thread stream completed");
	/* cudaStreamPerThread (0x2) from a non-ptsz call names the same stream. */
	sync_rec(t, GL_API_CUDA_STREAM_SYNCHRONIZE, TID, 0x2, clock_ns);
	CHECK_U64(p->pending_bytes, 0, "TID's per-thread stream completed");
	tracker__free(t);
}

static void devices_and_reset(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x1000, 100, 0);
	feed(t, rec(GL_REC_CALL, GL_API_CUDA_SET_DEVICE, TID, 0, 0, 1));
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x2000, 200, 0);
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x3000, 400, 0xaa);
	alloc(t, GL_API_CUDA_MALLOC_HOST, TID, 0x4000, 800, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 1500, "live");
	/* cudaDeviceReset on device 1: its cudaMalloc memory goes, pool memory and host stay */
	feed(t, rec(GL_REC_CALL, GL_API_CUDA_DEVICE_RESET, TID, 0, 0, 0));
	CHECK_U64(p->live_bytes, 100 + 400 + 800, "after reset of device 1");
	/* A failed cudaSetDevice changes nothing. */
	{
		struct gl_call_rec r = rec(GL_REC_CALL, GL_API_CUDA_SET_DEVICE, TID, 0, 0, 99);

		r.ret = 101;
		tracker__apply(t, &r.hdr);
	}
	CHECK_U64(p->c.failed_calls, 1, "failed set device");
	feed(t, rec(GL_REC_CALL, GL_API_CUDA_DEVICE_RESET, TID, 0, 0, 0));
	CHECK_U64(p->live_bytes, 100 + 400 + 800, "still device 1: nothing left to reset");
	tracker__free(t);
}

static void nested_calls_count_once(void)
{
	struct tracker *t;
	struct tproc *p;
	struct gl_call_rec inner;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* cudaMallocHost calling the traced cudaHostAlloc inside: one allocation. */
	inner = rec(GL_REC_ALLOC, GL_API_CUDA_HOST_ALLOC, TID, 0x7000, 4096, 0);
	inner.hdr.depth = 1;
	tracker__apply(t, &inner.hdr);
	/* ... and an unrelated inner allocation of its own (runtime bookkeeping). */
	inner = rec(GL_REC_ALLOC, GL_API_CUDA_MALLOC, TID, 0x9000, 512, 0);
	inner.hdr.depth = 1;
	tracker__apply(t, &inner.hdr);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_count, 0, "inner records wait for the outer call");
	alloc(t, GL_API_CUDA_MALLOC_HOST, TID, 0x7000, 4096, 0);
	CHECK_U64(p->live_count, 2, "outer + unrelated inner");
	CHECK_U64(p->live_bytes, 4096 + 512, "the layer is not counted twice");
	CHECK_U64(p->c.addr_reuse, 0, "the same address one call down is no reuse");
	CHECK_U64(p->c.layers, 1, "merged as a layer");
	tracker__free(t);
}

static void unknown_and_null_frees(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, 0xabc000, 0, 0));
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, 0, 0, 0));
	p = tracker__proc(t, PID);
	CHECK_U64(p->c.unknown_frees, 1, "unknown frees");
	CHECK_U64(p->c.null_frees, 1, "null frees");
	CHECK_U64(p->c.frees, 0, "frees");
	tracker__free(t);
}

static void many_allocations_table(void)
{
	struct tracker *t;
	struct tproc *p;
	uint64_t i;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	for (i = 1; i <= 100000; i++)
		alloc(t, GL_API_CUDA_MALLOC, TID, i * 256, 1, 0);
	for (i = 1; i <= 100000; i += 2)
		feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, i * 256, 0, 0));
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_count, 50000, "live count");
	CHECK_U64(p->allocs.n, 50000, "table entries");
	CHECK_U64(p->c.unknown_frees, 0, "every free found its allocation");
	for (i = 2; i <= 100000; i += 2)
		feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, i * 256, 0, 0));
	CHECK_U64(p->live_count, 0, "all freed");
	CHECK_U64(p->c.unknown_frees, 0, "still every free found");
	tracker__free(t);
}

static struct gl_call_rec at_depth(struct gl_call_rec r, uint8_t depth)
{
	r.hdr.depth = depth;
	return r;
}

static void runtime_over_driver_counts_once(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* cudaMalloc -> cuMemAlloc_v2 at the same address; its free goes the same way down. */
	feed(t, at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, TID, 0x10000, 4096, 0), 1));
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x10000, 4096, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_count, 1, "one allocation");
	CHECK_U64(p->live_bytes, 4096, "bytes once");
	CHECK_U64(p->c.layers, 1, "one layer");
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, 0x10000, 0, 0));
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_FREE, TID, 0x10000, 0, 0));
	CHECK_U64(p->live_count, 0, "freed");
	CHECK_U64(p->c.unknown_frees, 0, "the driver's free is the runtime's");
	CHECK_U64(p->c.frees, 1, "one free");
	/* cudaFreeAsync -> cuMemFreeAsync: pending once, no double free */
	feed(t, at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_ALLOC_ASYNC, TID, 0x20000, 64, 0xaa), 1));
	alloc(t, GL_API_CUDA_MALLOC_ASYNC, TID, 0x20000, 64, 0xaa);
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x20000, 0, 0xaa));
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_FREE_ASYNC, TID, 0x20000, 0, 0xaa));
	CHECK_U64(p->c.double_frees, 0, "no double free");
	CHECK_U64(p->pending_bytes, 64, "pending once");
	/* the user frees the same pointer twice through the runtime: that is a double free */
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, TID, 0x20000, 0, 0xaa));
	CHECK_U64(p->c.double_frees, 1, "double free");
	tracker__free(t);
}

static struct gl_desc_rec mem_create(uint64_t handle, uint64_t size, int32_t device, uint8_t depth)
{
	struct gl_desc_rec d;
	int32_t loc_type = 1;

	memset(&d, 0, sizeof(d));
	d.call = rec(GL_REC_ALLOC, GL_API_CU_MEM_CREATE, TID, handle, size, 0);
	d.call.hdr.size = sizeof(d);
	d.call.hdr.flags |= GL_HF_DESC;
	d.call.hdr.depth = depth;
	memcpy(d.desc + 8, &loc_type, 4);
	memcpy(d.desc + 12, &device, 4);
	return d;
}

static void vmm_leak_kinds(void)
{
	struct tracker *t;
	struct tproc *p;
	struct gl_desc_rec h1 = mem_create(0x77, 2 << 20, 1, 0),
			   h2 = mem_create(0x88, 2 << 20, 0, 0);
	size_t i;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CU_MEM_ADDRESS_RESERVE, TID, 0x40000000, 8 << 20, 0);
	tracker__apply(t, &h1.call.hdr);
	tracker__apply(t, &h2.call.hdr);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 4 << 20, "two handles; the range is address space, not bytes");
	/* map h1 twice: bytes still once */
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x40000000, 2 << 20, 0x77));
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x40200000, 2 << 20, 0x77));
	CHECK_U64(p->live_bytes, 4 << 20, "a handle mapped twice counts once");
	/* released while mapped: memory stays until the last unmap */
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x77, 0, 0));
	CHECK_U64(p->live_bytes, 4 << 20, "released while mapped is still memory");
	for (i = 0; i < t->nr_sites; i++)
		if (t->sites[i].api == GL_API_CU_MEM_CREATE && t->sites[i].device == 1)
			CHECK_U64(t->sites[i].relmapped_count, 1, "released-while-mapped handle");
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_UNMAP, TID, 0x40000000, 2 << 20, 0));
	CHECK_U64(p->live_bytes, 4 << 20, "one mapping left");
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_UNMAP, TID, 0x40200000, 2 << 20, 0));
	CHECK_U64(p->live_bytes, 2 << 20, "last unmap frees the released handle");
	/* h2 never released; the range never freed */
	CHECK_U64(p->live_count, 1, "h2 left");
	CHECK_U64(p->allocs.n, 2, "h2 and the range in the table");
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_ADDRESS_FREE, TID, 0x40000000, 0, 0));
	CHECK_U64(p->allocs.n, 1, "range freed");
	CHECK_U64(p->c.unknown_frees, 0, "unknown frees");
	tracker__free(t);
}

static void nccl_comm_owns_init_memory(void)
{
	struct tracker *t;
	struct tproc *p;
	const struct tcomm *c;
	size_t i;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* ncclCommInitRank allocating through the driver on the calling thread */
	feed(t, at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, TID, 0x100000, 1 << 20, 0), 1));
	feed(t, at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_HOST_ALLOC, TID, 0x200000, 65536, 0), 1));
	/* another thread's allocation meanwhile is not the communicator's */
	alloc(t, GL_API_CUDA_MALLOC, TID2, 0x300000, 100, 0);
	feed(t, rec(GL_REC_ALLOC, GL_API_NCCL_COMM_INIT_RANK, TID, 0xc0, 0, 0));
	p = tracker__proc(t, PID);
	c = tproc__comm(p, 0xc0);
	if (!CHECK(c, "communicator known"))
		goto cleanup;
	CHECK_U64(p->live_bytes, (1 << 20) + 65536 + 100, "live");
	for (i = 0; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		if (s->api == GL_API_CU_MEM_ALLOC || s->api == GL_API_CU_MEM_HOST_ALLOC)
			CHECK(s->owner_kind == OWNER_COMM && s->owner == 0xc0, "owned by the comm");
		if (s->api == GL_API_CUDA_MALLOC)
			CHECK(s->owner_kind == OWNER_NONE, "other thread's not owned");
	}
	/* ncclCommDestroy frees one of the two inside, then returns */
	feed(t, at_depth(rec(GL_REC_FREE, GL_API_CU_MEM_FREE, TID, 0x100000, 0, 0), 1));
	feed(t, rec(GL_REC_CALL, GL_API_NCCL_COMM_DESTROY, TID, 0xc0, 0, 0));
	CHECK(c->destroyed, "destroyed");
	CHECK_U64(p->live_bytes, 65536 + 100, "pinned buffer not returned by destroy");
cleanup:
	tracker__free(t);
}

static void nccl_mem_alloc_layers(void)
{
	struct tracker *t;
	struct tproc *p;
	struct gl_desc_rec h = mem_create(0x99, 4 << 20, 0, 1);

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	feed(t,
	     at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_ADDRESS_RESERVE, TID, 0x50000000, 4 << 20, 0),
		      1));
	tracker__apply(t, &h.call.hdr);
	feed(t, at_depth(rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x50000000, 4 << 20, 0x99), 1));
	alloc(t, GL_API_NCCL_MEM_ALLOC, TID, 0x50000000, 3 << 20, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_count, 1, "one allocation: ncclMemAlloc");
	CHECK_U64(p->live_bytes, 3 << 20, "its bytes, once");
	CHECK_U64(p->allocs.n, 3, "with its range and handle as layers in the table");
	/* ncclMemFree: unmap, release, free the range underneath */
	feed(t, rec(GL_REC_FREE, GL_API_NCCL_MEM_FREE, TID, 0x50000000, 0, 0));
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_UNMAP, TID, 0x50000000, 4 << 20, 0));
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x99, 0, 0));
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_ADDRESS_FREE, TID, 0x50000000, 0, 0));
	CHECK_U64(p->live_count, 0, "freed");
	CHECK_U64(p->allocs.n, 0, "layers freed too");
	CHECK_U64(p->c.unknown_frees, 0, "unknown frees");
	tracker__free(t);
}

/*
 * NCCL's ncclCuMemFree under ncclMemFree: the handle retained, released, the range unmapped,
 * the handle released again, the range freed. The retain is a reference the first release
 * takes back: no double free. And the same on a handle of the program's own.
 */
static void nccl_cumem_free_retains_the_handle(void)
{
	struct tracker *t;
	struct tproc *p;
	struct gl_desc_rec h = mem_create(0x99, 4 << 20, 0, 1),
			   own = mem_create(0x77, 2 << 20, 0, 0);

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	feed(t,
	     at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_ADDRESS_RESERVE, TID, 0x50000000, 4 << 20, 0),
		      1));
	tracker__apply(t, &h.call.hdr);
	feed(t, at_depth(rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x50000000, 4 << 20, 0x99), 1));
	alloc(t, GL_API_NCCL_MEM_ALLOC, TID, 0x50000000, 3 << 20, 0);
	p = tracker__proc(t, PID);
	feed(t, at_depth(rec(GL_REC_ALLOC, GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE, TID, 0x99, 0,
			     0x50000000),
			 1));
	feed(t, at_depth(rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x99, 0, 0), 1));
	feed(t, at_depth(rec(GL_REC_CALL, GL_API_CU_MEM_UNMAP, TID, 0x50000000, 4 << 20, 0), 1));
	feed(t, at_depth(rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x99, 0, 0), 1));
	feed(t, at_depth(rec(GL_REC_FREE, GL_API_CU_MEM_ADDRESS_FREE, TID, 0x50000000, 0, 0), 1));
	feed(t, rec(GL_REC_FREE, GL_API_NCCL_MEM_FREE, TID, 0x50000000, 0, 0));
	CHECK_U64(p->c.double_frees, 0, "ncclCuMemFree: no double free");
	CHECK_U64(p->c.unknown_frees, 0, "ncclCuMemFree: no unknown free");
	CHECK_U64(p->live_count, 0, "freed");
	CHECK_U64(p->allocs.n, 0, "handle and range gone");
	/* the program's own handle: a retain keeps it live through one release */
	tracker__apply(t, &own.call.hdr);
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x60000000, 2 << 20, 0x77));
	feed(t,
	     rec(GL_REC_ALLOC, GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE, TID, 0x77, 0, 0x60001000));
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x77, 0, 0));
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_UNMAP, TID, 0x60000000, 2 << 20, 0));
	CHECK_U64(p->live_bytes, 2 << 20, "retained once, released once: still cuMemCreate's");
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x77, 0, 0));
	CHECK_U64(p->live_bytes, 0, "the last release frees it");
	feed(t, rec(GL_REC_FREE, GL_API_CU_MEM_RELEASE, TID, 0x77, 0, 0));
	CHECK_U64(p->c.double_frees, 1, "one release too many is a double free");
	/* a retain of a handle made before the attach is nothing to count */
	feed(t, rec(GL_REC_ALLOC, GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE, TID, 0x55, 0, 0x1000));
	CHECK_U64(p->live_count, 0, "no memory from a retain");
	tracker__free(t);
}

/* cuMemCreate on the host (ncclCuMemHostAlloc): pinned host memory, no device's. */
static void vmm_handle_on_the_host(void)
{
	struct tracker *t;
	struct tproc *p;
	struct gl_desc_rec h = mem_create(0x66, 2 << 20, 0, 0);
	int32_t loc_type = 3; /* CU_MEM_LOCATION_TYPE_HOST_NUMA, id 0: a NUMA node */
	size_t i;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	memcpy(h.desc + 8, &loc_type, 4);
	tracker__apply(t, &h.call.hdr);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 2 << 20, "memory");
	for (i = 0; i < t->nr_sites; i++)
		if (t->sites[i].api == GL_API_CU_MEM_CREATE) {
			CHECK(t->sites[i].device == -1, "on the host, no device");
			CHECK(t->sites[i].mem == MEM_HOST_PINNED, "pinned host memory");
		}
	tracker__free(t);
}

static void context_teardown_releases(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* cuCtxCreate_v4(&ctx, NULL, 0, dev 1) makes it current */
	feed(t, rec(GL_REC_ALLOC, GL_API_CU_CTX_CREATE, TID, 0xc7, 0, 1));
	alloc(t, GL_API_CU_MEM_ALLOC, TID, 0x1000, 512, 0);
	/* primary context of device 0, retained twice, on another thread */
	feed(t, rec(GL_REC_ALLOC, GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN, TID2, 0xb0, 0, 0));
	feed(t, rec(GL_REC_ALLOC, GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN, TID2, 0xb0, 0, 0));
	feed(t, rec(GL_REC_CALL, GL_API_CU_CTX_SET_CURRENT, TID2, 0xb0, 0, 0));
	alloc(t, GL_API_CU_MEM_ALLOC, TID2, 0x2000, 256, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 768, "live");
	feed(t, rec(GL_REC_CALL, GL_API_CU_CTX_DESTROY, TID, 0xc7, 0, 0));
	CHECK_U64(p->live_bytes, 256, "the context's memory went with it");
	CHECK_U64(p->c.released_by_owner, 1, "released by its owner");
	feed(t, rec(GL_REC_CALL, GL_API_CU_DEVICE_PRIMARY_CTX_RELEASE, TID2, 0, 0, 0));
	CHECK_U64(p->live_bytes, 256, "one retain left");
	feed(t, rec(GL_REC_CALL, GL_API_CU_DEVICE_PRIMARY_CTX_RELEASE, TID2, 0, 0, 0));
	CHECK_U64(p->live_bytes, 0, "last release frees the primary context's memory");
	tracker__free(t);
}

static void step_sites_per_step(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x1000, 1 << 20, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->nr_step_changes, 1, "the first step's one site");
	CHECK_U64(p->step_changes[0].allocated, 1 << 20, "allocated in the first step");
	tracker__set_step(t, PID, 0, clock_ns);
	CHECK_U64(p->nr_step_changes, 0, "a boundary forgets the step's sites");
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, 0x1000, 0, 0));
	CHECK_U64(p->nr_step_changes, 1, "one site changed in step 0");
	CHECK_U64(p->step_changes[0].freed, 1 << 20, "step 0: freed");
	CHECK_U64(p->step_changes[0].allocated, 0, "step 0: nothing allocated");
	CHECK_U64(p->step_changes[0].live0, 1 << 20, "the site held 1 MiB when the step began");
	tracker__free(t);
}

/* The site of the live allocation at addr (a CUDA pointer). */
static const struct site *site_at(struct tracker *t, struct tproc *p, uint64_t addr)
{
	const struct alloc *a = tracker__alloc(p, SPACE_UVA, addr);

	return a ? &t->sites[tracker__alloc_site(t, a)] : NULL;
}

static void init_retained_before_the_first_step(void)
{
	const struct site *s;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	tracker__set_init_retained(t, true);
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x1000, 1 << 20, 0);
	p = tracker__proc(t, PID);
	s = site_at(t, p, 0x1000);
	CHECK(s && s->cls == CLS_INIT, "before the first step, no rule: retained by init");
	CHECK_U64(p->init_bytes, 1 << 20, "init bytes");
	CHECK_U64(p->nr_step_changes, 1, "the init step's one site");
	CHECK_U64(p->step_changes[0].allocated, 1 << 20, "allocated in the init step");
	tracker__set_step(t, PID, 0, clock_ns);
	CHECK_U64(p->nr_step_changes, 0, "a boundary forgets the step's sites");
	/* The same call site in a step is another site: ordinary memory. */
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x2000, 2 << 20, 0);
	s = site_at(t, p, 0x2000);
	CHECK(s && s->cls == CLS_NONE, "made in a step: a leak candidate");
	CHECK(s != site_at(t, p, 0x1000), "two sites for one call site");
	CHECK_U64(p->init_bytes, 1 << 20, "init bytes unchanged");
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, 0x1000, 0, 0));
	CHECK_U64(p->init_bytes, 0, "init memory freed in a step");
	CHECK_U64(p->nr_step_changes, 2, "two sites changed in step 0");
	CHECK_U64(p->step_changes[0].allocated, 2 << 20, "step 0: allocated at the step site");
	CHECK_U64(p->step_changes[0].live0, 0, "from nothing");
	CHECK_U64(p->step_changes[1].freed, 1 << 20, "step 0: freed at the init site");
	CHECK_U64(p->step_changes[1].live0, 1 << 20, "which held 1 MiB when the step began");
	tracker__free(t);
	/* Off (interval steps): the first slice is no phase of the program. */
	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x1000, 1 << 20, 0);
	p = tracker__proc(t, PID);
	s = site_at(t, p, 0x1000);
	CHECK(s && s->cls == CLS_NONE, "without init retention: ordinary memory");
	CHECK_U64(p->init_bytes, 0, "no init bytes");
	tracker__free(t);
}

/* A block record: pytorch:malloc (device in aux) or the profiler hook (c10::Device in aux2). */
static int block(struct tracker *t, uint16_t api, uint8_t kind, uint64_t addr, uint64_t size,
		 int dev)
{
	struct gl_call_rec r = rec(kind, api, TID, addr, size, 0);

	if (api == GL_API_TORCH_MALLOC)
		r.aux = (uint64_t)dev;
	else
		r.aux2 = dev < 0 ? 0 /* CPU */ : (uint64_t)dev << 8 | 1 /* CUDA */;
	r.caller = 0x402000;
	return tracker__apply(t, &r.hdr);
}

static void blocks_inside_segments_count_once(void)
{
	struct tracker *t;
	struct tproc *p;
	size_t i, segment_sites = 0;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x100000, 20 << 20, 0);
	block(t, GL_API_TORCH_MALLOC, GL_REC_ALLOC, 0x100000, 4 << 20, 0);
	block(t, GL_API_TORCH_MALLOC, GL_REC_ALLOC, 0x100000 + (4 << 20), 1 << 20, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->live_bytes, 20 << 20, "memory: the segment, once");
	CHECK_U64(p->blocks->allocated[0], 5 << 20, "allocated: the blocks");
	CHECK_U64(p->blocks->reserved[0], 20 << 20, "reserved: the segment");
	CHECK_U64(p->blocks->nr_segments[0], 1, "one segment");
	for (i = 0; i < t->nr_sites; i++)
		segment_sites += t->sites[i].owner_kind == OWNER_POOL && t->sites[i].live_count;
	CHECK_U64(segment_sites, 1, "the segment moved to its pool site");
	/* A block given back to the cache is no free of CUDA memory. */
	block(t, GL_API_TORCH_FREE, GL_REC_FREE, 0x100000, 0, 0);
	CHECK_U64(p->blocks->allocated[0], 1 << 20, "one block left");
	CHECK_U64(p->live_bytes, 20 << 20, "the segment stays");
	CHECK_U64(p->c.frees, 0, "no CUDA free");
	/* A block in no segment seen (made before the attach) is memory of its own. */
	block(t, GL_API_TORCH_MALLOC, GL_REC_ALLOC, 0x9000000, 2 << 20, 0);
	CHECK_U64(p->live_bytes, 22 << 20, "the orphan counts as memory");
	CHECK_U64(p->blocks->orphan[0], 2 << 20, "orphan bytes");
	/* A free of a block never seen: before the attach. */
	block(t, GL_API_TORCH_FREE, GL_REC_FREE, 0x8000000, 0, 0);
	CHECK_U64(p->blocks->unknown_frees, 1, "unknown block free");
	/* The segment goes with a block still in it (a missed free): the block goes too. */
	feed(t, rec(GL_REC_FREE, GL_API_CUDA_FREE, TID, 0x100000, 0, 0));
	CHECK_U64(p->blocks->released_with_segment, 1, "released with its segment");
	CHECK_U64(p->blocks->allocated[0], 2 << 20, "only the orphan left");
	CHECK_U64(p->blocks->reserved[0], 0, "no segment");
	CHECK_U64(p->live_bytes, 2 << 20, "memory: the orphan");
	tracker__free(t);
}

static void blocks_from_one_source_only(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CUDA_MALLOC, TID, 0x100000, 2 << 20, 0);
	block(t, GL_API_TORCH_MALLOC, GL_REC_ALLOC, 0x100000, 1000, 0);
	/* The profiler hook reports the same block (rounded): never counted twice. */
	block(t, GL_API_TORCH_REPORT_MEM, GL_REC_ALLOC, 0x100000, 1024, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->blocks->source, TBLOCKS_USDT, "the first source stays");
	CHECK_U64(p->blocks->other_source, 1, "the other one's record counted, left out");
	CHECK_U64(p->blocks->allocated[0], 1000, "the block once, with its requested size");
	tracker__free(t);
}

static void profiler_hook_devices(void)
{
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	block(t, GL_API_TORCH_REPORT_MEM, GL_REC_ALLOC, 0x200000, 4096, 1);
	block(t, GL_API_TORCH_REPORT_MEM, GL_REC_ALLOC, 0x300000, 4096, -1);
	p = tracker__proc(t, PID);
	CHECK_U64(p->blocks->allocated[1], 4096, "device index in bits 8-15 of c10::Device");
	CHECK_U64(p->blocks->not_cuda, 1, "a CPU report is no CUDA memory");
	/* The hook's release: a negative size, a free record from BPF. */
	block(t, GL_API_TORCH_REPORT_MEM, GL_REC_FREE, 0x200000, 4096, 1);
	CHECK_U64(p->blocks->allocated[1], 0, "released");
	CHECK_U64(p->live_bytes, 0, "nothing live");
	tracker__free(t);
}

static void expandable_segment_pages(void)
{
	struct tracker *t;
	struct tproc *p;
	struct gl_desc_rec h1 = mem_create(0x71, 20 << 20, 0, 0),
			   h2 = mem_create(0x72, 20 << 20, 0, 0);

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	alloc(t, GL_API_CU_MEM_ADDRESS_RESERVE, TID, 0x40000000, 1ULL << 30, 0);
	tracker__apply(t, &h1.call.hdr);
	tracker__apply(t, &h2.call.hdr);
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x40000000, 20 << 20, 0x71));
	/* A block of the first page: a segment; mapped later, the second page too. */
	block(t, GL_API_TORCH_MALLOC, GL_REC_ALLOC, 0x40000000, 8 << 20, 0);
	p = tracker__proc(t, PID);
	CHECK_U64(p->blocks->reserved[0], 20 << 20, "the first page is a segment");
	feed(t, rec(GL_REC_CALL, GL_API_CU_MEM_MAP, TID, 0x40000000 + (20 << 20), 20 << 20, 0x72));
	/* A block across both pages: each page it spans is PyTorch's. */
	block(t, GL_API_TORCH_MALLOC, GL_REC_ALLOC, 0x40000000 + (8 << 20), 24 << 20, 0);
	CHECK_U64(p->blocks->reserved[0], 40 << 20, "both pages");
	CHECK_U64(p->blocks->nr_segments[0], 2, "two handles");
	CHECK_U64(p->blocks->allocated[0], 32 << 20, "allocated");
	CHECK_U64(p->live_bytes, 40 << 20, "memory: the handles");
	tracker__free(t);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"tracker_async_free_pending_until_stream_sync", async_free_pending_until_stream_sync},
	    {"tracker_stream_ordered_reuse_closes_pending", stream_ordered_reuse_closes_pending},
	    {"tracker_event_sync_completes_recorded_stream", event_sync_completes_recorded_stream},
	    {"tracker_per_thread_default_stream", per_thread_default_stream},
	    {"tracker_devices_and_reset", devices_and_reset},
	    {"tracker_nested_calls_count_once", nested_calls_count_once},
	    {"tracker_unknown_and_null_frees", unknown_and_null_frees},
	    {"tracker_many_allocations_table", many_allocations_table},
	    {"tracker_runtime_over_driver_counts_once", runtime_over_driver_counts_once},
	    {"tracker_vmm_leak_kinds", vmm_leak_kinds},
	    {"tracker_nccl_comm_owns_init_memory", nccl_comm_owns_init_memory},
	    {"tracker_nccl_mem_alloc_layers", nccl_mem_alloc_layers},
	    {"tracker_nccl_cumem_free_retains_the_handle", nccl_cumem_free_retains_the_handle},
	    {"tracker_vmm_handle_on_the_host", vmm_handle_on_the_host},
	    {"tracker_context_teardown_releases", context_teardown_releases},
	    {"tracker_step_sites_per_step", step_sites_per_step},
	    {"tracker_init_retained_before_the_first_step", init_retained_before_the_first_step},
	    {"tracker_blocks_inside_segments_count_once", blocks_inside_segments_count_once},
	    {"tracker_blocks_from_one_source_only", blocks_from_one_source_only},
	    {"tracker_profiler_hook_devices", profiler_hook_devices},
	    {"tracker_expandable_segment_pages", expandable_segment_pages},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
