/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The allocation graph: live bytes by call stack, as a tree read top-down (outermost caller
 * first, the allocating API last). Its first level groups memory by device and API layer:
 * a CUDA device's runtime, driver and VMM memory, an NCCL communicator's, a WebGPU
 * device's, the host's. The same paths, one line each, are the folded stacks flamegraph.pl
 * and speedscope read. Built from the tracker's per-stack counts and the symbolizer's
 * stacks, so it is the same live and offline.
 */
#ifndef GPULEAK_OUTPUT_GRAPH_H
#define GPULEAK_OUTPUT_GRAPH_H

#include <stdio.h>
#include <sys/types.h>

struct tracker;
struct symbolizer;
struct tproc;

/* The tree of tp's live memory, under a title line; nothing when tp has none. */
void graph__print(FILE *out, const struct tracker *t, struct symbolizer *sym,
		  const struct tproc *tp);
/*
 * Folded stacks of every process's live memory: "comm;outer;...;inner;api bytes" per stack,
 * the lines summing to the live bytes. 0 or -errno (a write error).
 */
int graph__folded(FILE *out, const struct tracker *t, struct symbolizer *sym);

struct verdict;

/*
 * Folded stacks of the growth leaks: each stack weighted by its share of its site's slope,
 * in bytes per step (--folded-growth): who grows, as a flame graph. 0 or -errno.
 */
int graph__folded_growth(FILE *out, const struct tracker *t, struct symbolizer *sym,
			 const struct verdict *v);
/*
 * Folded stacks of the live set at each device's peak (--folded-peak): what the end of a run
 * that released everything no longer shows. 0 or -errno.
 */
int graph__folded_peak(FILE *out, const struct tracker *t, struct symbolizer *sym,
		       const struct verdict *v);
/* The frames of site stack sstack, outermost first, joined by arrows, on one line (no \n). */
void graph__print_path(FILE *out, const struct tracker *t, struct symbolizer *sym, uint32_t sstack);

#endif
