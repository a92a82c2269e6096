// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libc10_cuda.so stand-in: PyTorch's CUDA caching allocator (c10_cuda.h), written from its
 * documented behaviour (torch.cuda memory management notes, CUDACachingAllocator's rules as
 * tests/standin/README.md lists them), over the stand-in runtime and driver.
 *
 * Blocks are carved from segments: requests of up to 1 MiB (rounded up to 512 bytes) from
 * 2 MiB segments of the small pool, larger ones from 20 MiB segments of the large pool, or a
 * segment of their own rounded up to 2 MiB from 10 MiB on. A free block of the same stream
 * and pool is reused first (best fit, then lowest address); a block larger than needed is
 * split (small pool: what is left is at least 512 bytes; large pool: more than 1 MiB); a
 * freed block merges with free neighbours and stays cached. empty_cache cudaFree's every
 * segment that is one free block. With PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True each
 * (stream, pool) has one segment: an address range (cuMemAddressReserve, 9/8 of the device),
 * mapped in pages of 2 MiB (small) or 20 MiB (large), one cuMemCreate handle each, grown and
 * shrunk at its end.
 *
 * The probes are PyTorch's: pytorch:malloc(ptr, int8 device, size, int64 stream_id) after a
 * successful allocation, with the requested size, and pytorch:free(ptr) before a block goes
 * back, each skipped while its semaphore (torch_sdt_semaphore_pytorch_malloc/_free, in
 * .probes, raised by the kernel while a tracer is attached) is 0. raw_alloc and raw_delete
 * fire neither. Every block handed out or freed is reported to libc10.so's
 * c10::reportMemoryUsageToProfiler with its rounded size, raw ones included. Built with
 * -DSTANDIN_NO_SDT it has no probes: a PyTorch built without them (TORCH_DISABLE_SDT, 1.x).
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cuda.h>
#include <cuda_runtime_api.h>
#include "c10.h"
#include "c10_cuda.h"

#ifndef STANDIN_NO_SDT
/* sys/sdt.h names a semaphore provider_name_semaphore: these give it PyTorch's names. */
#define _SDT_HAS_SEMAPHORES	 1
#define pytorch_malloc_semaphore torch_sdt_semaphore_pytorch_malloc
#define pytorch_free_semaphore	 torch_sdt_semaphore_pytorch_free
#include <sys/sdt.h>

__attribute__((section(".probes"),
	       used)) volatile unsigned short torch_sdt_semaphore_pytorch_malloc;
__attribute__((section(".probes"), used)) volatile unsigned short torch_sdt_semaphore_pytorch_free;
#endif

#define EXPORT __attribute__((visibility("default")))

#define MIN_BLOCK    512ULL	   /* kMinBlockSize */
#define SMALL_SIZE   (1ULL << 20)  /* kSmallSize: the small pool's largest request */
#define SMALL_BUFFER (2ULL << 20)  /* kSmallBuffer: a small segment */
#define LARGE_BUFFER (20ULL << 20) /* kLargeBuffer: a large segment */
#define MIN_LARGE    (10ULL << 20) /* kMinLargeAlloc: from here a segment of its own */
#define ROUND_LARGE  (2ULL << 20)  /* kRoundLarge */
#define MAX_DEVICES  8
#define LIVE_BUCKETS 4096

struct segment;

struct block {
	char *ptr;
	size_t size;	  /* rounded */
	size_t requested; /* what the caller asked for */
	int64_t stream;
	bool small;
	bool allocated;
	struct segment *seg;
	struct block *prev, *next;   /* neighbours in the segment, by address */
	struct block *fprev, *fnext; /* its pool's free list */
	struct block *hnext;	     /* the live table's chain */
};

struct segment {
	char *base;
	size_t size; /* cudaMalloc'd bytes, or the mapped prefix of an expandable range */
	int dev;
	int64_t stream;
	bool small;
	bool expandable;
	size_t va_size, page;		 /* expandable: the reserved range, the page size */
	CUmemGenericAllocationHandle *h; /* expandable: one handle per mapped page */
	size_t nr_pages;
	struct block *head;
	struct segment *next;
};

struct device {
	struct block *free[2]; /* [small]: free blocks of the pool */
	struct segment *segs;
	struct c10_cuda_stats st;
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct device devs[MAX_DEVICES];
static struct block *live[LIVE_BUCKETS];
static bool inited, expandable;

static unsigned int bucket(const void *p)
{
	return (unsigned int)(((uintptr_t)p >> 9) * 0x9E3779B1u % LIVE_BUCKETS);
}

static void init_locked(void)
{
	const char *conf;

	if (inited)
		return;
	inited = true;
	conf = getenv("PYTORCH_CUDA_ALLOC_CONF");
	expandable = conf && strstr(conf, "expandable_segments:True");
}

/* The device's current values, reported with every block (profiler hook). */
static void report(const struct block *b, int dev, int64_t delta)
{
	struct c10_device d = {C10_DEVICE_TYPE_CUDA, (int8_t)dev};

	_ZN3c1027reportMemoryUsageToProfilerEPvlmmNS_6DeviceE(
	    b->ptr, delta, devs[dev].st.allocated_bytes, devs[dev].st.reserved_bytes, d);
}

/* PyTorch switches devices with a guard around its CUDA calls. */
static void use_device(int dev)
{
	int cur = -1;

	if (cudaGetDevice(&cur) || cur != dev)
		cudaSetDevice(dev);
}

/* ---- pools ---- */

static void pool_insert(struct device *d, struct block *b)
{
	struct block **head = &d->free[b->small];

	b->fprev = NULL;
	b->fnext = *head;
	if (*head)
		(*head)->fprev = b;
	*head = b;
}

static void pool_remove(struct device *d, struct block *b)
{
	if (b->fprev)
		b->fprev->fnext = b->fnext;
	else if (d->free[b->small] == b)
		d->free[b->small] = b->fnext;
	if (b->fnext)
		b->fnext->fprev = b->fprev;
	b->fprev = b->fnext = NULL;
}

static struct block *best_fit(struct device *d, bool small, int64_t stream, size_t size)
{
	struct block *b, *best = NULL;

	for (b = d->free[small]; b; b = b->fnext) {
		if (b->stream != stream || b->size < size)
			continue;
		if (!best || b->size < best->size || (b->size == best->size && b->ptr < best->ptr))
			best = b;
	}
	if (best)
		pool_remove(d, best);
	return best;
}

static struct block *block_new(struct segment *s, char *ptr, size_t size)
{
	struct block *b = calloc(1, sizeof(*b));

	if (!b)
		return NULL;
	b->ptr = ptr;
	b->size = size;
	b->stream = s->stream;
	b->small = s->small;
	b->seg = s;
	return b;
}

/* ---- segments ---- */

static size_t segment_size(size_t size)
{
	if (size <= SMALL_SIZE)
		return SMALL_BUFFER;
	if (size < MIN_LARGE)
		return LARGE_BUFFER;
	return (size + ROUND_LARGE - 1) / ROUND_LARGE * ROUND_LARGE;
}

/* A new cudaMalloc'd segment holding one free block of all of it. */
static struct block *segment_malloc(struct device *d, int dev, int64_t stream, bool small,
				    size_t size)
{
	size_t bytes = segment_size(size);
	struct segment *s = calloc(1, sizeof(*s));
	void *p = NULL;

	if (!s)
		return NULL;
	use_device(dev);
	if (cudaMalloc(&p, bytes) != cudaSuccess) {
		free(s);
		return NULL;
	}
	*s = (struct segment){
	    .base = p, .size = bytes, .dev = dev, .stream = stream, .small = small};
	s->head = block_new(s, p, bytes);
	if (!s->head) {
		cudaFree(p);
		free(s);
		return NULL;
	}
	s->next = d->segs;
	d->segs = s;
	d->st.reserved_bytes += bytes;
	d->st.segments++;
	d->st.device_allocs++;
	return s->head;
}

static struct segment *expandable_get(struct device *d, int dev, int64_t stream, bool small)
{
	size_t total = 0, free_bytes = 0, page = small ? SMALL_BUFFER : LARGE_BUFFER;
	struct segment *s;
	CUdeviceptr va;

	for (s = d->segs; s; s = s->next)
		if (s->expandable && s->stream == stream && s->small == small)
			return s;
	use_device(dev);
	if (cudaMemGetInfo(&free_bytes, &total) != cudaSuccess)
		return NULL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	/* As PyTorch: address space for 9/8 of the device, whatever is mapped in it. */
	s->va_size = (total + total / 8 + page - 1) / page * page;
	s->page = page;
	if (cuMemAddressReserve(&va, s->va_size, 0, 0, 0) != CUDA_SUCCESS) {
		free(s);
		return NULL;
	}
	s->h = calloc(s->va_size / page, sizeof(*s->h));
	if (!s->h) {
		cuMemAddressFree(va, s->va_size);
		free(s);
		return NULL;
	}
	s->base = (char *)va;
	s->dev = dev;
	s->stream = stream;
	s->small = small;
	s->expandable = true;
	s->next = d->segs;
	d->segs = s;
	return s;
}

/* Map one more page at the end of an expandable segment. 0 or -1. */
static int map_page(struct device *d, struct segment *s)
{
	CUmemAllocationProp prop = {
	    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
	    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = s->dev}};
	CUmemAccessDesc access = {.location = prop.location,
				  .flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
	CUdeviceptr at = (CUdeviceptr)(s->base + s->size);
	CUmemGenericAllocationHandle h;

	if (s->size + s->page > s->va_size)
		return -1;
	if (cuMemCreate(&h, s->page, &prop, 0) != CUDA_SUCCESS)
		return -1;
	if (cuMemMap(at, s->page, 0, h, 0) != CUDA_SUCCESS) {
		cuMemRelease(h);
		return -1;
	}
	if (cuMemSetAccess(at, s->page, &access, 1) != CUDA_SUCCESS) {
		cuMemUnmap(at, s->page);
		cuMemRelease(h);
		return -1;
	}
	s->h[s->nr_pages++] = h;
	s->size += s->page;
	d->st.reserved_bytes += s->page;
	d->st.segments++;
	d->st.device_allocs++;
	return 0;
}

/* The last block of a segment, or NULL. */
static struct block *tail(struct segment *s)
{
	struct block *b = s->head;

	while (b && b->next)
		b = b->next;
	return b;
}

/* Grow the (stream, pool) expandable segment at its end until its last block holds size. */
static struct block *segment_expand(struct device *d, int dev, int64_t stream, bool small,
				    size_t size)
{
	struct segment *s = expandable_get(d, dev, stream, small);
	struct block *last, *b;
	size_t have;
	char *end;

	if (!s)
		return NULL;
	last = tail(s);
	if (last && last->allocated)
		last = NULL;
	have = last ? last->size : 0;
	end = s->base + s->size;
	while (have < size) {
		if (map_page(d, s))
			return NULL;
		have += s->page;
	}
	if (last) {
		pool_remove(d, last);
		last->size = have;
		return last;
	}
	b = block_new(s, end, have);
	if (!b)
		return NULL;
	b->prev = tail(s);
	if (b->prev)
		b->prev->next = b;
	else
		s->head = b;
	return b;
}

static void segment_unlink(struct device *d, struct segment *s)
{
	struct segment **pp;

	for (pp = &d->segs; *pp; pp = &(*pp)->next) {
		if (*pp == s) {
			*pp = s->next;
			return;
		}
	}
}

/* Unmap the whole pages at the end of an expandable segment that a free block covers. */
static void shrink(struct device *d, struct segment *s)
{
	struct block *last = tail(s);
	size_t keep, off;

	if (!last || last->allocated)
		return;
	off = (size_t)(last->ptr - s->base);
	keep = (off + s->page - 1) / s->page * s->page; /* the page the block starts in stays */
	while (s->size > keep) {
		CUdeviceptr at = (CUdeviceptr)(s->base + s->size - s->page);

		cuMemUnmap(at, s->page);
		cuMemRelease(s->h[--s->nr_pages]);
		s->size -= s->page;
		d->st.reserved_bytes -= s->page;
		d->st.segments--;
		d->st.device_frees++;
	}
	pool_remove(d, last);
	if (s->size > off) {
		last->size = s->size - off;
		pool_insert(d, last);
		return;
	}
	/* The block was all unmapped pages: it goes, and an empty segment with it. */
	if (last->prev)
		last->prev->next = NULL;
	else
		s->head = NULL;
	free(last);
	if (!s->head) {
		segment_unlink(d, s);
		cuMemAddressFree((CUdeviceptr)s->base, s->va_size);
		free(s->h);
		free(s);
	}
}

static void empty_cache_locked(struct device *d)
{
	struct segment *s = d->segs, *next;

	for (; s; s = next) {
		next = s->next;
		if (s->expandable) {
			shrink(d, s);
			continue;
		}
		if (s->head->allocated || s->head->next)
			continue;
		pool_remove(d, s->head);
		cudaFree(s->base);
		d->st.reserved_bytes -= s->size;
		d->st.segments--;
		d->st.device_frees++;
		segment_unlink(d, s);
		free(s->head);
		free(s);
	}
}

/* ---- blocks ---- */

static bool should_split(const struct block *b, size_t size)
{
	size_t rest = b->size - size;

	if (b->small || b->seg->expandable)
		return rest >= MIN_BLOCK;
	return rest > SMALL_SIZE;
}

static void split(struct device *d, struct block *b, size_t size)
{
	struct block *rest = block_new(b->seg, b->ptr + size, b->size - size);

	if (!rest)
		return; /* handed out whole */
	rest->prev = b;
	rest->next = b->next;
	if (b->next)
		b->next->prev = rest;
	b->next = rest;
	b->size = size;
	pool_insert(d, rest);
}

static void merge_next(struct device *d, struct block *b)
{
	struct block *n = b->next;

	if (!n || n->allocated)
		return;
	pool_remove(d, n);
	b->size += n->size;
	b->next = n->next;
	if (n->next)
		n->next->prev = b;
	free(n);
}

static void *malloc_locked(size_t requested, int dev, int64_t stream)
{
	struct device *d = &devs[dev];
	size_t size =
	    requested < MIN_BLOCK ? MIN_BLOCK : (requested + MIN_BLOCK - 1) / MIN_BLOCK * MIN_BLOCK;
	bool small = size <= SMALL_SIZE;
	struct block *b = best_fit(d, small, stream, size);
	unsigned int h;

	if (!b)
		b = expandable ? segment_expand(d, dev, stream, small, size)
			       : segment_malloc(d, dev, stream, small, size);
	if (!b) {
		/* Out of memory: give the cache back and try once more, as PyTorch does. */
		empty_cache_locked(d);
		b = expandable ? segment_expand(d, dev, stream, small, size)
			       : segment_malloc(d, dev, stream, small, size);
	}
	if (!b)
		return NULL; /* PyTorch raises torch.OutOfMemoryError */
	if (should_split(b, size))
		split(d, b, size);
	b->allocated = true;
	b->requested = requested;
	h = bucket(b->ptr);
	b->hnext = live[h];
	live[h] = b;
	d->st.allocated_bytes += b->size;
	d->st.requested_bytes += requested;
	d->st.allocations++;
	report(b, dev, (int64_t)b->size);
	return b->ptr;
}

static void free_locked(void *ptr)
{
	struct block **pp = &live[bucket(ptr)], *b;
	struct device *d;
	int dev;

	while (*pp && (*pp)->ptr != ptr)
		pp = &(*pp)->hnext;
	b = *pp;
	if (!b) {
		fprintf(stderr, "c10_cuda stand-in: invalid device pointer: %p\n", ptr);
		abort(); /* PyTorch: TORCH_CHECK(false, "invalid device pointer") */
	}
	*pp = b->hnext;
	dev = b->seg->dev;
	d = &devs[dev];
	d->st.allocated_bytes -= b->size;
	d->st.requested_bytes -= b->requested;
	d->st.allocations--;
	report(b, dev, -(int64_t)b->size);
	b->allocated = false;
	merge_next(d, b);
	if (b->prev && !b->prev->allocated) {
		struct block *p = b->prev;

		pool_remove(d, p);
		merge_next(d, p);
		b = p;
	}
	pool_insert(d, b);
}

static void *alloc_common(size_t size, int dev, int64_t stream)
{
	void *p;

	if (dev < 0 || dev >= MAX_DEVICES || !size)
		return NULL;
	pthread_mutex_lock(&lock);
	init_locked();
	p = malloc_locked(size, dev, stream);
	pthread_mutex_unlock(&lock);
	return p;
}

EXPORT void *c10_cuda_alloc(size_t size, int device, int64_t stream)
{
	void *p = alloc_common(size, device, stream);
	int8_t dev = (int8_t)device; /* c10::DeviceIndex */

	(void)dev;
#ifndef STANDIN_NO_SDT
	/* After the allocation, when it succeeded: PyTorch 2.2+'s place for it. */
	if (p && torch_sdt_semaphore_pytorch_malloc)
		STAP_PROBE4(pytorch, malloc, p, dev, size, stream);
#endif
	return p;
}

EXPORT void c10_cuda_free(void *ptr)
{
	if (!ptr)
		return; /* a DataPtr without memory never reaches its deleter */
#ifndef STANDIN_NO_SDT
	if (torch_sdt_semaphore_pytorch_free)
		STAP_PROBE1(pytorch, free, ptr);
#endif
	pthread_mutex_lock(&lock);
	free_locked(ptr);
	pthread_mutex_unlock(&lock);
}

EXPORT void *c10_cuda_raw_alloc(size_t size, int device, int64_t stream)
{
	return alloc_common(size, device, stream);
}

EXPORT void c10_cuda_raw_delete(void *ptr)
{
	if (!ptr)
		return;
	pthread_mutex_lock(&lock);
	free_locked(ptr);
	pthread_mutex_unlock(&lock);
}

EXPORT void c10_cuda_empty_cache(void)
{
	int i;

	pthread_mutex_lock(&lock);
	init_locked();
	for (i = 0; i < MAX_DEVICES; i++)
		empty_cache_locked(&devs[i]);
	pthread_mutex_unlock(&lock);
}

EXPORT int c10_cuda_memory_stats(int device, struct c10_cuda_stats *out)
{
	if (device < 0 || device >= MAX_DEVICES)
		return -1;
	pthread_mutex_lock(&lock);
	*out = devs[device].st;
	pthread_mutex_unlock(&lock);
	return 0;
}
