// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The BPF ring buffer consumer, reading the ring's shared memory directly (the layout is the
 * kernel's ABI: a consumer position page we write, then a producer position page and the
 * data pages, mapped twice in a row so a record never wraps) rather than through libbpf's
 * ring_buffer__consume, for two reasons found by profiling:
 *   - libbpf publishes the consumer position after every record, and every reservation in
 *     BPF reads it: the cache line bounces between the consumer and each traced thread's
 *     CPU on every record. Here it is published every PUBLISH_EVERY records, or once an
 *     eighth of the ring was applied (a small ring must not look full to BPF meanwhile);
 *   - records are looked at PREFETCH_AHEAD records before they are applied, so the cache
 *     misses of the allocation table (a million live allocations do not fit in any cache)
 *     overlap instead of adding up, without copying records out of the ring.
 * Short records (struct gl_small_rec) are expanded here: the sink only sees full ones.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <linux/bpf.h>
#include "live/ringbuf.h"

#define PREFETCH_AHEAD 12
#define PUBLISH_EVERY  256

/*
 * A record gathered but not applied yet: its header (NULL when discarded) and its end. A
 * short record (gl_small_rec) is expanded into full, which h then points to.
 */
struct pending {
	const struct gl_hdr *h;
	uint32_t len;
	uint64_t next_pos;
	struct gl_call_rec full;
};

struct ringbuf {
	rec_sink_fn sink;
	rec_prefetch_fn prefetch;
	void *ctx;
	uint64_t bad;
	int map_fd;
	int epoll_fd;
	unsigned long *consumer_pos; /* our page, read-write */
	unsigned long *producer_pos; /* the kernel's page, then the data twice, read-only */
	const uint8_t *data;
	uint64_t mask;
	size_t page, data_map_len;
	struct pending q[PREFETCH_AHEAD];
};

int ringbuf__new(int map_fd, rec_sink_fn sink, void *ctx, struct ringbuf **out)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	struct epoll_event ev = {.events = EPOLLIN};
	struct ringbuf *rb = calloc(1, sizeof(*rb));
	void *p;
	int err;

	if (!rb)
		return -ENOMEM;
	rb->sink = sink;
	rb->ctx = ctx;
	rb->map_fd = map_fd;
	rb->epoll_fd = -1;
	rb->page = sysconf(_SC_PAGESIZE);
	err = bpf_map_get_info_by_fd(map_fd, &info, &info_len);
	if (err)
		goto fail;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1))) {
		err = -EINVAL;
		goto fail;
	}
	rb->mask = info.max_entries - 1;
	p = mmap(NULL, rb->page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (p == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	rb->consumer_pos = p;
	rb->data_map_len = rb->page + 2 * (size_t)info.max_entries;
	p = mmap(NULL, rb->data_map_len, PROT_READ, MAP_SHARED, map_fd, rb->page);
	if (p == MAP_FAILED) {
		err = -errno;
		goto fail;
	}
	rb->producer_pos = p;
	rb->data = (const uint8_t *)p + rb->page;
	rb->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (rb->epoll_fd < 0 || epoll_ctl(rb->epoll_fd, EPOLL_CTL_ADD, map_fd, &ev)) {
		err = -errno;
		goto fail;
	}
	*out = rb;
	return 0;
fail:
	ringbuf__free(rb);
	return err;
}

void ringbuf__set_prefetch(struct ringbuf *rb, rec_prefetch_fn prefetch)
{
	rb->prefetch = prefetch;
}

void ringbuf__free(struct ringbuf *rb)
{
	if (!rb)
		return;
	if (rb->epoll_fd >= 0)
		close(rb->epoll_fd);
	if (rb->producer_pos)
		munmap(rb->producer_pos, rb->data_map_len);
	if (rb->consumer_pos)
		munmap(rb->consumer_pos, rb->page);
	free(rb);
}

int ringbuf__fd(const struct ringbuf *rb)
{
	return rb->epoll_fd;
}

/* The record a short one stands for: what nobody but BPF and this file should know. */
static void expand(const struct gl_small_rec *s, uint32_t len, struct pending *e)
{
	bool alloc = s->hdr.kind == GL_REC_ALLOC_SMALL;

	if (len < (alloc ? GL_SMALL_ALLOC_SIZE : GL_SMALL_FREE_SIZE) || s->hdr.size > len)
		return; /* left as it is: counted as bad by the caller */
	e->full = (struct gl_call_rec){.hdr = s->hdr,
				       .addr = s->addr,
				       .caller = s->caller,
				       .size = alloc ? s->size : 0,
				       .stack_id = -1};
	e->full.hdr.size = sizeof(e->full);
	e->full.hdr.kind = alloc ? GL_REC_ALLOC : GL_REC_FREE;
	e->h = &e->full.hdr;
	e->len = sizeof(e->full);
}

/* The record at pos if BPF has submitted (or discarded) it; false while it is being written. */
static bool gather(struct ringbuf *rb, uint64_t pos, struct pending *e)
{
	const uint32_t *hdr = (const uint32_t *)(rb->data + (pos & rb->mask));
	uint32_t len = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);

	if (len & BPF_RINGBUF_BUSY_BIT)
		return false;
	e->next_pos = pos + ((((len & ~BPF_RINGBUF_DISCARD_BIT) + BPF_RINGBUF_HDR_SZ) + 7) & ~7ULL);
	e->len = len & ~BPF_RINGBUF_DISCARD_BIT;
	e->h = (len & BPF_RINGBUF_DISCARD_BIT)
		   ? NULL
		   : (const struct gl_hdr *)((const uint8_t *)hdr + BPF_RINGBUF_HDR_SZ);
	if (e->h && e->len >= sizeof(*e->h) &&
	    (e->h->kind == GL_REC_ALLOC_SMALL || e->h->kind == GL_REC_FREE_SMALL))
		expand((const struct gl_small_rec *)e->h, e->len, e);
	return true;
}

int64_t ringbuf__drain(struct ringbuf *rb)
{
	uint64_t cons = __atomic_load_n(rb->consumer_pos, __ATOMIC_ACQUIRE);
	uint64_t prod = __atomic_load_n(rb->producer_pos, __ATOMIC_ACQUIRE);
	uint64_t gpos = cons; /* next record to gather; cons: next to apply */
	uint64_t published = cons;
	size_t head = 0, n = 0, since_publish = 0;
	int64_t done = 0;
	int err = 0;

	for (;;) {
		/* Keep PREFETCH_AHEAD records gathered ahead of the one applied. */
		while (n < PREFETCH_AHEAD) {
			struct pending *e = &rb->q[(head + n) % PREFETCH_AHEAD];

			if (gpos >= prod) {
				prod = __atomic_load_n(rb->producer_pos, __ATOMIC_ACQUIRE);
				if (gpos >= prod)
					break;
			}
			if (!gather(rb, gpos, e))
				break;
			gpos = e->next_pos;
			if (e->h && rb->prefetch && e->len >= sizeof(*e->h))
				rb->prefetch(rb->ctx, e->h);
			n++;
		}
		if (!n)
			break;
		{
			struct pending *e = &rb->q[head];
			const struct gl_hdr *h = e->h;

			head = (head + 1) % PREFETCH_AHEAD;
			n--;
			if (h) {
				if (e->len < sizeof(*h) || h->size > e->len ||
				    h->size < sizeof(*h)) {
					rb->bad++;
				} else {
					err = rb->sink(rb->ctx, h);
					done++;
				}
			}
			cons = e->next_pos;
		}
		/* Only allocation failure stops the drain; a record the sink rejects is counted
		 * there. The failed record counts as consumed: it is not seen twice. */
		if (err == -ENOMEM)
			break;
		err = 0;
		if (++since_publish == PUBLISH_EVERY || cons - published > (rb->mask + 1) / 8) {
			/* Room for BPF: the space of applied records is free again. */
			__atomic_store_n(rb->consumer_pos, cons, __ATOMIC_RELEASE);
			published = cons;
			since_publish = 0;
		}
	}
	__atomic_store_n(rb->consumer_pos, cons, __ATOMIC_RELEASE);
	return err ? err : done;
}

uint64_t ringbuf__bad(const struct ringbuf *rb)
{
	return rb->bad;
}
