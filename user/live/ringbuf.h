/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The ring buffer consumer: drains BPF records on a short timer (the programs suppress
 * wakeups below a fill threshold) and hands each validated record to one sink.
 */
#ifndef GPULEAK_LIVE_RINGBUF_H
#define GPULEAK_LIVE_RINGBUF_H

#include <stdint.h>
#include "gpuleak.h"

typedef int (*rec_sink_fn)(void *ctx, const struct gl_hdr *h);
/* Called for each record a little before the sink gets it (analysis__prefetch). */
typedef void (*rec_prefetch_fn)(void *ctx, const struct gl_hdr *h);

struct ringbuf;

int ringbuf__new(int map_fd, rec_sink_fn sink, void *ctx, struct ringbuf **out);
void ringbuf__free(struct ringbuf *rb);
void ringbuf__set_prefetch(struct ringbuf *rb, rec_prefetch_fn prefetch);
/* An fd that polls readable when BPF forced a wakeup. */
int ringbuf__fd(const struct ringbuf *rb);
/* Consume everything available now; the sink has seen all of it when this returns.
 * Returns records consumed or -errno. */
int64_t ringbuf__drain(struct ringbuf *rb);
/* Samples whose length did not match their header (ABI mismatch): counted, skipped. */
uint64_t ringbuf__bad(const struct ringbuf *rb);

#endif
