/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A generated decode loop of two processes for the snapshot and flight recorder tests, with
 * every kind of state a snapshot rebuilds: layers, a context and what the driver allocates in
 * it, a communicator, a registration with two references, a VMM handle released while
 * mapped, async frees pending across step boundaries, a thread on another device, a leak,
 * and NCCL's ncclMemAlloc/ncclMemFree of a scratch buffer each step (nccl_scratch).
 */
#ifndef GPULEAK_TEST_WORKLOAD_H
#define GPULEAK_TEST_WORKLOAD_H

#include <stdlib.h>
#include <string.h>
#include "gpuleak.h"

#define P1   1000
#define P2   2000
#define MiB  (1ULL << 20)
#define COMM 0xc0330000ULL
#define CTX  0xc7000000ULL

/* Records, back to back (each padded to 8 bytes). */
struct stream {
	uint8_t *p;
	size_t len, cap;
	size_t n;
};

static uint64_t clock_ns = 1000000;

static inline void push(struct stream *s, const struct gl_hdr *h)
{
	size_t sz = (h->size + 7) & ~7UL;

	if (s->len + sz > s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1 << 16;
		s->p = realloc(s->p, s->cap);
	}
	memcpy(s->p + s->len, h, h->size);
	s->len += sz;
	s->n++;
}

static inline int push_cb(void *ctx, const struct gl_hdr *h)
{
	push(ctx, h);
	return 0;
}

static inline struct gl_desc_rec mk(uint8_t kind, uint16_t api, uint32_t pid, uint32_t tid,
				    uint8_t depth)
{
	struct gl_desc_rec r;

	memset(&r, 0, sizeof(r));
	r.call.hdr.size = sizeof(r.call);
	r.call.hdr.kind = kind;
	r.call.hdr.api = api;
	r.call.hdr.pid = pid;
	r.call.hdr.tid = tid;
	r.call.hdr.depth = depth;
	r.call.hdr.ts_ns = clock_ns += 1000;
	r.call.stack_id = -1;
	return r;
}

static inline void call(struct stream *s, uint8_t kind, uint16_t api, uint32_t pid, uint32_t tid,
			uint8_t depth, uint64_t addr, uint64_t size, uint64_t aux, uint64_t caller,
			int32_t stack)
{
	struct gl_desc_rec r = mk(kind, api, pid, tid, depth);

	r.call.addr = addr;
	r.call.size = size;
	r.call.aux = aux;
	r.call.caller = caller;
	r.call.stack_id = stack;
	if (kind == GL_REC_SYNC)
		r.call.aux2 = r.call.hdr.ts_ns - 500;
	push(s, &r.call.hdr);
}

/* cudaMalloc with its driver layer (at the same address), as the runtime makes it. */
static inline void cuda_malloc(struct stream *s, uint32_t pid, uint32_t tid, uint64_t addr,
			       uint64_t size, uint64_t caller, int32_t stack)
{
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, pid, tid, 1, addr, size, 0, 0x7000, -1);
	call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, pid, tid, 0, addr, size, 0, caller, stack);
}

static inline void cuda_free(struct stream *s, uint32_t pid, uint32_t tid, uint64_t addr)
{
	call(s, GL_REC_FREE, GL_API_CUDA_FREE, pid, tid, 0, addr, 0, 0, 0x401900, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_FREE, pid, tid, 1, addr, 0, 0, 0x7100, -1);
}

static inline void attach(struct stream *s, uint32_t pid)
{
	struct gl_proc_rec r;

	memset(&r, 0, sizeof(r));
	r.hdr = (struct gl_hdr){.size = sizeof(r),
				.kind = GL_REC_PROC,
				.pid = pid,
				.tid = pid,
				.ts_ns = clock_ns += 1000};
	r.event = GL_PROC_ATTACH;
	r.start_ticks = pid * 3;
	memcpy(r.comm, "decode", 7);
	push(s, &r.hdr);
}

static inline void step(struct stream *s, uint32_t pid)
{
	call(s, GL_REC_NOTIFY, GL_API_MARKER_STEP, pid, pid, 0, 0, 0, 0, 0x401000, -1);
}

/*
 * NCCL's ncclMemAlloc of a VMM buffer and its ncclMemFree, as the probes record them: the
 * allocation's driver calls nested in it (cuMemCreate, cuMemAddressReserve, cuMemMap: its
 * layers), the free's record complete at its entry, so ncclCuMemFree's calls come after it,
 * outermost (the handle retained and released, the range unmapped, the handle released, the
 * range freed): between them the layers are live without their allocation.
 */
static inline void nccl_scratch(struct stream *s, uint32_t pid, uint64_t va, uint64_t handle)
{
	struct gl_desc_rec cr = mk(GL_REC_ALLOC, GL_API_CU_MEM_CREATE, pid, pid, 1);
	int32_t dev0 = 0, loc = 1;

	cr.call.hdr.size = sizeof(cr);
	cr.call.hdr.flags = GL_HF_DESC;
	memcpy(cr.desc + 8, &loc, 4);
	memcpy(cr.desc + 12, &dev0, 4);
	cr.call.addr = handle;
	cr.call.size = 2 * MiB;
	cr.call.caller = 0x7500;
	push(s, &cr.call.hdr);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ADDRESS_RESERVE, pid, pid, 1, va, 2 * MiB, 0, 0x7510,
	     -1);
	call(s, GL_REC_CALL, GL_API_CU_MEM_MAP, pid, pid, 1, va, 2 * MiB, handle, 0x7520, -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_MEM_ALLOC, pid, pid, 0, va, 2 * MiB, 0, 0x401a00, -1);
	call(s, GL_REC_FREE, GL_API_NCCL_MEM_FREE, pid, pid, 0, va, 0, 0, 0x401a10, -1);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_RETAIN_ALLOCATION_HANDLE, pid, pid, 0, handle, 0, va,
	     0x7530, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_RELEASE, pid, pid, 0, handle, 0, 0, 0x7540, -1);
	call(s, GL_REC_CALL, GL_API_CU_MEM_UNMAP, pid, pid, 0, va, 2 * MiB, 0, 0x7550, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_RELEASE, pid, pid, 0, handle, 0, 0, 0x7540, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_ADDRESS_FREE, pid, pid, 0, va, 2 * MiB, 0, 0x7560, -1);
}

/* A decode loop of two processes, every kind of state the snapshot rebuilds. */
static inline void workload(struct stream *s, int steps)
{
	uint64_t leak = 0x7f0000000000ULL, dev1 = 0x7e0000000000ULL, vmm_va = 0x7d0000000000ULL;
	struct gl_desc_rec cr;
	int32_t dev0 = 0, loc = 1;
	int i;

	attach(s, P1);
	attach(s, P2);
	/* init: a KV cache, a context and what the driver allocates in it, a communicator
	 * owning device and host memory, a registration with two references, a VMM handle released while mapped */
	cuda_malloc(s, P1, P1, 0x10000000, 64 * MiB, 0x401100, 7);
	call(s, GL_REC_ALLOC, GL_API_CU_DEVICE_PRIMARY_CTX_RETAIN, P1, P1, 0, CTX, 0, 0, 0x401200,
	     -1);
	call(s, GL_REC_CALL, GL_API_CU_CTX_SET_CURRENT, P1, P1 + 1, 0, CTX, 0, 0, 0x401210, -1);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, P1, P1 + 1, 0, 0x20000000, 2 * MiB, 0, 0x401220,
	     8);
	call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, P1, P1, 1, 0x30000000, 4 * MiB, 0, 0x7300, -1);
	call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, P1, P1, 1, 0x30400000, 4 * MiB, 0, 0x7300, -1);
	/* the communicator's own memory, made inside the call: device 0's and pinned host */
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ALLOC, P1, P1, 1, 0x45000000, 2 * MiB, 0, 0x7400, -1);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_HOST_ALLOC, P1, P1, 1, 0x46000000, 65536, 0, 0x7410,
	     -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_COMM_INIT_RANK, P1, P1, 0, COMM, 0, 0, 0x401300, -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_COMM_REGISTER, P1, P1, 0, 0x40000000, 1 * MiB, COMM,
	     0x401310, -1);
	call(s, GL_REC_ALLOC, GL_API_NCCL_COMM_REGISTER, P1, P1, 0, 0x40000000, 1 * MiB, COMM,
	     0x401310, -1);
	cr = mk(GL_REC_ALLOC, GL_API_CU_MEM_CREATE, P1, P1, 0);
	cr.call.hdr.size = sizeof(cr);
	cr.call.hdr.flags = GL_HF_DESC;
	memcpy(cr.desc + 8, &loc, 4);
	memcpy(cr.desc + 12, &dev0, 4);
	cr.call.addr = 0x51;
	cr.call.size = 8 * MiB;
	cr.call.caller = 0x401400;
	push(s, &cr.call.hdr);
	call(s, GL_REC_ALLOC, GL_API_CU_MEM_ADDRESS_RESERVE, P1, P1, 0, vmm_va, 8 * MiB, 0,
	     0x401410, -1);
	call(s, GL_REC_CALL, GL_API_CU_MEM_MAP, P1, P1, 0, vmm_va, 8 * MiB, 0x51, 0x401420, -1);
	call(s, GL_REC_FREE, GL_API_CU_MEM_RELEASE, P1, P1, 0, 0x51, 0, 0, 0x401430, -1);
	/* a second thread on device 1 */
	call(s, GL_REC_CALL, GL_API_CUDA_SET_DEVICE, P1, P1 + 2, 0, 0, 0, 1, 0x401500, -1);
	cuda_malloc(s, P2, P2, 0x10000000, 16 * MiB, 0x402100, 9);
	for (i = 0; i < steps; i++) {
		step(s, P1);
		nccl_scratch(s, P1, 0x7c0000000000ULL + (uint64_t)(i % 2) * 2 * MiB, 0x900 + i);
		/* activations: async on a stream, freed, the stream synchronised; the second
		 * one's free stays pending across the next boundary every other step */
		call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC_ASYNC, P1, P1, 0, 0x60000000 + i * 0x1000,
		     2 * MiB, 0xaa, 0x401600, -1);
		call(s, GL_REC_FREE, GL_API_CUDA_FREE_ASYNC, P1, P1, 0, 0x60000000 + i * 0x1000, 0,
		     0xaa, 0x401610, -1);
		if (i % 2 == 0)
			call(s, GL_REC_SYNC, GL_API_CUDA_STREAM_SYNCHRONIZE, P1, P1, 0, 0, 0, 0xaa,
			     0x401620, -1);
		/* the leak, and now and then a free of an old one */
		cuda_malloc(s, P1, P1, leak + (uint64_t)i * MiB, 1 * MiB, 0x401700, 11 + i % 3);
		if (i % 3 == 2)
			cuda_free(s, P1, P1, leak + (uint64_t)(i - 2) * MiB);
		call(s, GL_REC_ALLOC, GL_API_CUDA_MALLOC, P1, P1 + 2, 0, dev1 + i * 0x1000, 4096, 0,
		     0x401800, -1);
		/* P2: flat, steps of its own */
		step(s, P2);
		cuda_malloc(s, P2, P2, 0x70000000 + i * 0x1000, 65536, 0x402200, -1);
		cuda_free(s, P2, P2, 0x70000000 + i * 0x1000);
	}
}

#endif
