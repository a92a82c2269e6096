/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Destroying BPF links at exit, many at once. Each link's destruction waits for grace periods
 * (a uprobe link ~50 ms here whatever the number of its probes; a BTF tracepoint's 10-40 ms):
 * one after the other, five uprobe links made Ctrl-C take 300 ms and the scheduler's
 * tracepoints another 100. Destroyed from several threads at once, their waits overlap.
 */
#ifndef GPULEAK_LIVE_LINKS_H
#define GPULEAK_LIVE_LINKS_H

#include <stddef.h>

struct bpf_link;

/* Destroys links[0..n) (NULLs skipped), from up to 16 threads; returns when all are gone. */
void links__destroy(struct bpf_link **links, size_t n);

#endif
