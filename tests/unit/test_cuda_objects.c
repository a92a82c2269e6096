// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The tracker's IPC mappings, graph memory and pools (tracker/ipc.c, graphs.c, pools.c) on
 * hand-made record sequences: orderings a live run does not give on demand (a handle nobody
 * traced made, a capture found already running, a runtime call over its driver form), and
 * the exact bookkeeping of references and reserves. tests/test_coverage.py covers the same
 * paths end to end.
 */
#include <string.h>
#include "check.h"
#include "gpuleak.h"
#include "probe/catalog.h"
#include "tracker/graphs.h"
#include "tracker/ipc.h"
#include "tracker/pools.h"
#include "tracker/tracker.h"

#define PID  200
#define PID2 201
#define TID  201
#define TID2 202

static uint64_t clock_ns = 1000;

static struct gl_desc_rec drec(uint8_t kind, uint16_t api, pid_t pid, uint64_t addr, uint64_t size,
			       uint64_t aux, uint8_t depth)
{
	struct gl_desc_rec r;

	memset(&r, 0, sizeof(r));
	r.call.hdr.size = sizeof(struct gl_call_rec);
	r.call.hdr.kind = kind;
	r.call.hdr.api = api;
	r.call.hdr.pid = pid;
	r.call.hdr.tid = pid == PID ? TID : TID2;
	r.call.hdr.depth = depth;
	r.call.hdr.ts_ns = clock_ns += 10;
	r.call.addr = addr;
	r.call.size = size;
	r.call.aux = aux;
	r.call.caller = 0x401000 + api;
	r.call.stack_id = -1;
	return r;
}

/* The same record with n bytes of struct copied (gl_desc_rec). */
static struct gl_desc_rec with_desc(struct gl_desc_rec r, const void *d, size_t n)
{
	r.call.hdr.size = sizeof(r);
	r.call.hdr.flags |= GL_HF_DESC;
	memcpy(r.desc, d, n);
	return r;
}

static int feed(struct tracker *t, struct gl_desc_rec r)
{
	return tracker__apply(t, &r.call.hdr);
}

static void ipc_handle(uint8_t *h, uint8_t tag)
{
	memset(h, 0, GL_DESC_MAX);
	memcpy(h, "GLIPC", 5);
	h[63] = tag;
}

static const struct site *site_of(struct tracker *t, struct tproc *p, uint8_t space, uint64_t a)
{
	const struct alloc *x = tracker__alloc(p, space, a);

	return x ? &t->sites[tracker__alloc_site(t, x)] : NULL;
}

static void ipc_references_and_the_exporters_size(void)
{
	struct tracker *t;
	struct tproc *p, *q;
	struct ipc_totals it;
	const struct site *s;
	struct gl_desc_rec r;
	uint8_t h[GL_DESC_MAX], other[GL_DESC_MAX];

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	ipc_handle(h, 1);
	ipc_handle(other, 2);
	/* Process PID exports 4 MiB at 0x1000; PID2 opens it twice, and a handle nobody traced. */
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_MALLOC, PID, 0x1000, 4 << 20, 0, 0));
	feed(t,
	     with_desc(drec(GL_REC_CALL, GL_API_CUDA_IPC_GET_MEM_HANDLE, PID, 0x7000, 0, 0x1000, 0),
		       h, sizeof(h)));
	feed(t,
	     with_desc(drec(GL_REC_ALLOC, GL_API_CUDA_IPC_OPEN_MEM_HANDLE, PID2, 0x9000, 0, 1, 0),
		       h, sizeof(h)));
	feed(t,
	     with_desc(drec(GL_REC_ALLOC, GL_API_CUDA_IPC_OPEN_MEM_HANDLE, PID2, 0x9000, 0, 1, 0),
		       h, sizeof(h)));
	r = with_desc(drec(GL_REC_ALLOC, GL_API_CUDA_IPC_OPEN_MEM_HANDLE, PID2, 0xb000, 0, 1, 0),
		      other, sizeof(other));
	r.call.caller = 0x402000; /* a site of its own */
	feed(t, r);
	q = tracker__proc(t, PID2);
	if (!CHECK(q, "importer"))
		goto out;
	s = site_of(t, q, SPACE_IPC, 0x9000);
	CHECK(s && s->live_bytes == 4 << 20 && s->live_count == 1,
	      "one mapping of the exporter's 4 MiB");
	CHECK_U64(q->live_bytes, 0, "not the importer's own bytes");
	CHECK_U64(q->c.addr_reuse, 0, "opened again: a reference, not a reused address");
	s = site_of(t, q, SPACE_IPC, 0xb000);
	CHECK(s && s->live_bytes == 0 && s->unsized == 1, "an unknown exporter: size unknown");
	ipc__site_totals(q, tracker__alloc_site(t, tracker__alloc(q, SPACE_IPC, 0x9000)), &it);
	CHECK_U64(it.opens, 2, "opens");
	CHECK(it.exporter == PID, "the exporter");
	/* cudaIpcCloseMemHandle once, with the driver's close one layer down. */
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_IPC_CLOSE_MEM_HANDLE, PID2, 0x9000, 0, 0, 0));
	feed(t, drec(GL_REC_FREE, GL_API_CU_IPC_CLOSE_MEM_HANDLE, PID2, 0x9000, 0, 0, 1));
	feed(t, drec(GL_REC_CALL, GL_API_CUDA_SET_DEVICE, PID2, 0, 0, 0, 0));
	ipc__site_totals(q, tracker__alloc_site(t, tracker__alloc(q, SPACE_IPC, 0x9000)), &it);
	CHECK_U64(it.closes, 1, "the driver's close under the runtime's counts once");
	CHECK(tracker__alloc(q, SPACE_IPC, 0x9000), "one reference left: still mapped");
	CHECK_U64(q->c.layers, 1, "the driver's close: a layer");
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_IPC_CLOSE_MEM_HANDLE, PID2, 0x9000, 0, 0, 0));
	CHECK(!tracker__alloc(q, SPACE_IPC, 0x9000), "the last close unmaps");
	CHECK(!ipc__mapping(q, SPACE_IPC, 0x9000), "and forgets the mapping");
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_IPC_CLOSE_MEM_HANDLE, PID2, 0x9000, 0, 0, 0));
	CHECK_U64(q->c.double_frees, 1, "closed once more than opened");
	p = tracker__proc(t, PID);
	CHECK(p && p->live_bytes == 4 << 20, "the exporter still has its memory");
out:
	tracker__free(t);
}

static void capture_found_running_and_launch_once(void)
{
	uint32_t active = 1;	 /* cudaStreamCaptureStatusActive */
	uint64_t graph = 0x6000; /* the cudaGraph_t cudaStreamEndCapture writes */
	struct tracker *t;
	struct tproc *p;
	const struct site *s;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* Attached while stream 0xaa captured: cudaStreamIsCapturing says so (status 1). */
	feed(t,
	     with_desc(drec(GL_REC_CALL, GL_API_CUDA_STREAM_IS_CAPTURING, PID, 0x7ff0, 0, 0xaa, 0),
		       &active, sizeof(active)));
	/* cudaMallocAsync over cuMemAllocAsync, both on the capturing stream: one node. */
	feed(t, drec(GL_REC_ALLOC, GL_API_CU_MEM_ALLOC_ASYNC, PID, 0x10000, 1 << 20, 0xaa, 1));
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_MALLOC_ASYNC, PID, 0x10000, 1 << 20, 0xaa, 0));
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, PID, 0x10000, 0, 0xaa, 0));
	feed(t, drec(GL_REC_FREE, GL_API_CU_MEM_FREE_ASYNC, PID, 0x10000, 0, 0xaa, 1));
	feed(t,
	     with_desc(drec(GL_REC_CALL, GL_API_CUDA_STREAM_END_CAPTURE, PID, 0x7ff8, 0, 0xaa, 0),
		       &graph, sizeof(graph)));
	p = tracker__proc(t, PID);
	if (!CHECK(p, "process"))
		goto out;
	CHECK_U64(p->live_count, 0, "captured: nothing allocated");
	CHECK_U64(p->pending_count, 0, "captured: nothing freed");
	CHECK_U64(p->c.unknown_frees + p->c.double_frees, 0, "the captured free is a free node");
	CHECK(p->graphs && p->graphs->nr_g == 1 && p->graphs->g[0].nr_nodes == 1 &&
		  p->graphs->g[0].nodes[0].freed,
	      "one graph, one node its graph frees");
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_GRAPH_INSTANTIATE, PID, 0x6100, 0, 0x6000, 0));
	/* cudaGraphLaunch over cuGraphLaunch: one launch. */
	feed(t, drec(GL_REC_CALL, GL_API_CU_GRAPH_LAUNCH, PID, 0x6100, 0, 0xaa, 1));
	feed(t, drec(GL_REC_CALL, GL_API_CUDA_GRAPH_LAUNCH, PID, 0x6100, 0, 0xaa, 0));
	CHECK(p->graphs->nr_x == 1 && p->graphs->x[0].launches == 1, "launched once");
	s = site_of(t, p, SPACE_GRAPH, 0x10000);
	CHECK(s && s->owner_kind == OWNER_GRAPH && s->live_bytes == 1 << 20,
	      "held by the exec, at the capture's site");
	CHECK_U64(p->live_bytes, 1 << 20, "this process's device memory");
	feed(t, drec(GL_REC_CALL, GL_API_CUDA_GRAPH_EXEC_DESTROY, PID, 0x6100, 0, 0, 0));
	CHECK_U64(p->live_bytes, 0, "destroyed: back to the graph pool");
	CHECK_U64(pools__reserve_on(p, 0), 1 << 20, "the graph pool's reserve");
	feed(t, drec(GL_REC_CALL, GL_API_CUDA_DEVICE_GRAPH_MEM_TRIM, PID, 0, 0, 0, 0));
	CHECK_U64(pools__reserve_on(p, 0), 0, "trimmed");
out:
	tracker__free(t);
}

static void pool_reserve_and_threshold(void)
{
	uint64_t threshold = 6000, pool = 0xd0;
	struct gl_desc_rec r;
	struct tracker *t;
	struct tproc *p;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	/* cudaDeviceGetDefaultMemPool(&pool 0xd0, device 0), then its threshold 6000. */
	feed(t, with_desc(drec(GL_REC_CALL, GL_API_CUDA_DEVICE_GET_DEFAULT_MEM_POOL, PID, 0x7ff0, 0,
			       0, 0),
			  &pool, sizeof(pool)));
	feed(t, with_desc(drec(GL_REC_CALL, GL_API_CUDA_MEM_POOL_SET_ATTRIBUTE, PID, 0xd0, 0, 4, 0),
			  &threshold, sizeof(threshold)));
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_MALLOC_ASYNC, PID, 0x1000, 4096, 0xaa, 0));
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_MALLOC_ASYNC, PID, 0x3000, 4096, 0xaa, 0));
	p = tracker__proc(t, PID);
	if (!CHECK(p && p->pools, "pools"))
		goto out;
	CHECK_U64(p->pools->v[0].in_use, 8192, "in use");
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, PID, 0x1000, 0, 0xaa, 0));
	CHECK_U64(pools__reserve(p), 0, "pending: still in use");
	r = drec(GL_REC_SYNC, GL_API_CUDA_STREAM_SYNCHRONIZE, PID, 0, 0, 0xaa, 0);
	r.call.aux2 = clock_ns; /* entered after the free */
	feed(t, r);
	CHECK_U64(pools__reserve(p), 4096, "completed: in the reserve, under its threshold");
	/* A synchronous free of pool memory synchronizes: the pool trims to 6000. */
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_FREE, PID, 0x3000, 0, 0, 0));
	CHECK_U64(pools__reserve(p), 6000, "trimmed to its threshold");
	CHECK_U64(p->pools->v[0].in_use, 0, "nothing in use");
	/* A new allocation takes from the reserve first. */
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_MALLOC_ASYNC, PID, 0x5000, 5000, 0xaa, 0));
	CHECK_U64(pools__reserve(p), 1000, "taken from the reserve");
	CHECK(p->pools->v[0].handle == 0xd0 && p->pools->v[0].kind == POOL_DEFAULT,
	      "the default pool, known by the handle the program got");
	feed(t, drec(GL_REC_CALL, GL_API_CUDA_MEM_POOL_TRIM_TO, PID, 0xd0, 0, 0, 0));
	CHECK_U64(pools__reserve(p), 0, "cudaMemPoolTrimTo(0)");
out:
	tracker__free(t);
}

static void host_registration_counts_once(void)
{
	struct tracker *t;
	struct tproc *p;
	const struct site *s;

	if (!CHECK(!tracker__new(&t), "new"))
		return;
	feed(t, drec(GL_REC_ALLOC, GL_API_CU_MEM_HOST_REGISTER, PID, 0x7f0000, 65536, 0, 1));
	feed(t, drec(GL_REC_ALLOC, GL_API_CUDA_HOST_REGISTER, PID, 0x7f0000, 65536, 0, 0));
	p = tracker__proc(t, PID);
	if (!CHECK(p, "process"))
		goto out;
	s = site_of(t, p, SPACE_HOST_REG, 0x7f0000);
	CHECK(s && s->device == -1 && s->layer_count == 1, "host, the driver's call its layer");
	CHECK_U64(p->live_bytes, 65536, "pinned host memory, counted");
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_HOST_UNREGISTER, PID, 0x7f0000, 0, 0, 0));
	feed(t, drec(GL_REC_FREE, GL_API_CU_MEM_HOST_UNREGISTER, PID, 0x7f0000, 0, 0, 1));
	feed(t, drec(GL_REC_CALL, GL_API_CUDA_SET_DEVICE, PID, 0, 0, 0, 0));
	CHECK_U64(p->live_bytes, 0, "unregistered");
	CHECK_U64(p->c.unknown_frees + p->c.double_frees, 0, "the driver's unregister: a layer");
	/* A device pointer of the same value is another thing. */
	feed(t, drec(GL_REC_FREE, GL_API_CUDA_FREE, PID, 0x7f0000, 0, 0, 0));
	CHECK_U64(p->c.unknown_frees, 1, "cudaFree finds no registration");
out:
	tracker__free(t);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"ipc_references_and_the_exporters_size", ipc_references_and_the_exporters_size},
	    {"capture_found_running_and_launch_once", capture_found_running_and_launch_once},
	    {"pool_reserve_and_threshold", pool_reserve_and_threshold},
	    {"host_registration_counts_once", host_registration_counts_once},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
