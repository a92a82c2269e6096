/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * CUDA graphs and their memory (graphs.c). A stream-ordered allocation on a capturing stream
 * allocates nothing: it becomes a memory node of the graph being captured, and a
 * stream-ordered free there a free node (the same for cudaGraphAddMemAllocNode/FreeNode).
 * Memory exists once an exec of the graph is launched (or uploaded): a node the graph also
 * frees is held by the exec from then on (OWNER_GRAPH sites, in SPACE_GRAPH), until the
 * exec is destroyed and its memory goes back to the device's graph pool; a node the graph
 * does not free is the program's allocation after each launch, freed like any other (by
 * cudaFree, cudaFreeAsync, a later graph's free node, or the next launch of an exec
 * instantiated with cudaGraphInstantiateFlagAutoFreeOnLaunch). Graph memory comes from the
 * device's graph pool (pools.c), which keeps what execs gave back until
 * cudaDeviceGraphMemTrim.
 */
#ifndef GPULEAK_TRACKER_GRAPHS_H
#define GPULEAK_TRACKER_GRAPHS_H

#include "tracker/model.h"
#include "probe/catalog.h"

struct tgraph_node {
	uint64_t va, bytes;
	uint64_t caller; /* the call that made it: its site when memory is made */
	uint64_t frame;	 /* its Python frame (struct site_key's) */
	int32_t stack_id;
	uint16_t api;
	int16_t device;
	bool freed; /* the same graph frees it: the exec holds it */
};

/* A graph with memory nodes, or a capture in progress (capturing). */
struct tgraph {
	uint64_t handle; /* cudaGraph_t, 0 while capturing */
	uint64_t stream; /* while capturing: the stream (pending__stream_key) */
	bool capturing;
	struct tgraph_node *nodes;
	size_t nr_nodes, cap_nodes;
	uint64_t *frees; /* free nodes of memory the graph did not allocate */
	size_t nr_frees, cap_frees;
};

/* An exec of a graph with memory nodes. */
struct texec {
	uint64_t handle, graph;
	uint32_t site; /* its instantiation */
	uint64_t flags;
	bool mapped; /* launched or uploaded: it holds its memory */
	uint64_t launches;
	uint64_t held_bytes, held_count; /* what it holds now */
	uint64_t ts_ns;
	struct tgraph_node *nodes; /* the graph's, when it was instantiated */
	size_t nr_nodes;
	uint64_t *frees;
	size_t nr_frees;
};

struct tgraphs {
	struct tgraph *g;
	size_t nr_g, cap_g;
	struct texec *x; /* live execs */
	size_t nr_x, cap_x;
	uint64_t execs_destroyed; /* execs with memory nodes destroyed */
	uint64_t captured_allocs; /* allocations made into a graph, not memory then */
};

/*
 * An allocation of api (stream-ordered, on stream aux) that is a node of a capture: taken
 * as one (true), or not captured (false: an allocation). *err: 0 or -ENOMEM.
 */
bool graphs__captured_alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
			    const struct gl_call_rec *r, int16_t device, int *err);
/* Whether a stream-ordered free of api on stream aux is made into a capture. */
bool graphs__capturing(const struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r);
/* That free, as a free node. 0 or -ENOMEM. */
int graphs__captured_free(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r);
/* Whether op is one of graphs__apply's: capture, node, instantiate ... trim (catalog order). */
static inline bool graphs__is_op(enum cat_op op)
{
	return op >= OP_CAPTURE_BEGIN && op <= OP_GRAPH_MEM_TRIM;
}
/* The capture, node, instantiate, launch, destroy and trim calls, at site. 0 or -ENOMEM. */
int graphs__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r, uint32_t site);
void graphs__free(struct tproc *p);

#endif
