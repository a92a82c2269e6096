/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --memory-viz: PyTorch's memory snapshot, the dict torch.cuda.memory._snapshot() returns,
 * pickled (protocol 4), for PyTorch's memory viewer (pytorch.org/memory_viz) and its
 * torch/cuda/_memory_viz.py: the segments of one process with their blocks, and the
 * allocation trace per device. Made from outside the process, so it shows what PyTorch's
 * own cannot: memory its caching allocator never saw (NCCL, cuBLAS workspaces, cudaMalloc of
 * other code, VMM maps) as segments of their own kind named by API, blocks in segments made
 * before gpuleak attached, and frees still pending in a deferred-free window.
 */
#ifndef GPULEAK_OUTPUT_MEMVIZ_H
#define GPULEAK_OUTPUT_MEMVIZ_H

#include <stdio.h>

struct memtrace;
struct report;

/*
 * The snapshot of the process with PyTorch's blocks (the one with the most device memory
 * among several), as r's tracker holds it now, and its trace from mt (NULL: none), its
 * sites' frames named by r's symbolizer. 0 or -errno (-EIO: f failed).
 */
int memviz__write(FILE *f, struct report *r, const struct memtrace *mt);

#endif
