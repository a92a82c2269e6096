/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A process's device address ranges (tproc.regions, regions.c): its CUDA allocations of device
 * and managed memory and its VMM mappings, by address, so that the allocation holding an
 * address is found (a caching allocator's block and its segment). Kept only once the process
 * has blocks: until then nothing here costs anything. Sorted, found by binary search, changed
 * in place: a process has hundreds of ranges, not millions (a segment is 2 MiB or more).
 */
#ifndef GPULEAK_TRACKER_REGIONS_H
#define GPULEAK_TRACKER_REGIONS_H

#include "tracker/model.h"

/* Start keeping p's ranges: every device allocation in its table and every mapping. 0 or
 * -ENOMEM. */
int regions__start(struct tracker *t, struct tproc *p);
/* Allocation a entered p's table (allocs.c): a range when it is device memory. */
void regions__added(struct tracker *t, struct tproc *p, const struct alloc *a);
/* Allocation a leaves p's table: its range goes (to regions.gone if blocks are in it). */
void regions__removed(struct tracker *t, struct tproc *p, const struct alloc *a);
/* VMM handle mapped at [va, va + size) (gpu_objects.c), and a range unmapped. */
void regions__mapped(struct tproc *p, uint64_t va, uint64_t size, uint64_t handle);
void regions__unmapped(struct tproc *p, uint64_t va, uint64_t size);
/* The range holding addr, or NULL. Invalidated by the next change. */
struct region *regions__find(struct tproc *p, uint64_t addr);
/*
 * The ranges overlapping [addr, addr + size), in address order: the first, then each next
 * while it overlaps (NULL at the end). A block of an expandable segment spans pages, one
 * VMM mapping each.
 */
struct region *regions__first(struct tproc *p, uint64_t addr, uint64_t size);
struct region *regions__next(struct tproc *p, const struct region *g, uint64_t addr, uint64_t size);
void regions__free(struct tproc *p);

#endif
