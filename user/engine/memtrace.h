/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation trace of --memory-viz (output/memviz.c): every change of device memory the
 * tracker makes (struct mem_event: PyTorch's blocks handed out and given back, device
 * allocations and frees, VMM ranges mapped and unmapped, allocations refused), in order, as
 * PyTorch's own allocator records its trace when recording is on. Kept only when asked for:
 * the tracker calls it on every allocation and free. A ring of the latest MEMTRACE_MAX
 * entries, as PyTorch's is of its latest max_entries: older ones are dropped and counted.
 */
#ifndef GPULEAK_ENGINE_MEMTRACE_H
#define GPULEAK_ENGINE_MEMTRACE_H

#include "tracker/model.h"

#define MEMTRACE_MAX (1u << 20) /* 48 MiB of entries at most */

struct memtrace_entry {
	pid_t pid;
	uint32_t gen; /* of the process's image (struct tproc's gen) */
	struct mem_event e;
};

struct memtrace;

int memtrace__new(struct memtrace **out);
void memtrace__free(struct memtrace *mt);
/* The tracker's mem_event_fn (tracker__on_mem_event), ctx the memtrace. */
void memtrace__event(void *ctx, const struct tracker *t, const struct tproc *p,
		     const struct mem_event *e);
/* Entries kept, the oldest first (i < memtrace__count), and how many were dropped. */
size_t memtrace__count(const struct memtrace *mt);
const struct memtrace_entry *memtrace__get(const struct memtrace *mt, size_t i);
uint64_t memtrace__dropped(const struct memtrace *mt);

#endif
