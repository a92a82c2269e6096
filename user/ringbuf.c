// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <bpf/libbpf.h>
#include "ringbuf.h"

struct ringbuf {
	struct ring_buffer *rb;
	rec_sink_fn sink;
	void *ctx;
	uint64_t bad;
	int sink_err;
};

static int on_sample(void *ctx, void *data, size_t len)
{
	struct ringbuf *rb = ctx;
	const struct gl_hdr *h = data;
	int err;

	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h)) {
		rb->bad++;
		return 0;
	}
	err = rb->sink(rb->ctx, h);
	/* Only allocation failure stops the drain; a record the sink rejects is counted there. */
	if (err == -ENOMEM) {
		rb->sink_err = err;
		return err;
	}
	return 0;
}

int ringbuf__new(int map_fd, rec_sink_fn sink, void *ctx, struct ringbuf **out)
{
	struct ringbuf *rb = calloc(1, sizeof(*rb));

	if (!rb)
		return -ENOMEM;
	rb->sink = sink;
	rb->ctx = ctx;
	rb->rb = ring_buffer__new(map_fd, on_sample, rb, NULL);
	if (!rb->rb) {
		int err = -errno;

		free(rb);
		return err;
	}
	*out = rb;
	return 0;
}

void ringbuf__free(struct ringbuf *rb)
{
	if (!rb)
		return;
	ring_buffer__free(rb->rb);
	free(rb);
}

int ringbuf__fd(const struct ringbuf *rb)
{
	return ring_buffer__epoll_fd(rb->rb);
}

int64_t ringbuf__drain(struct ringbuf *rb)
{
	int64_t n = ring_buffer__consume(rb->rb);

	if (rb->sink_err)
		return rb->sink_err;
	return n;
}

uint64_t ringbuf__bad(const struct ringbuf *rb)
{
	return rb->bad;
}
