// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * CUDA graphs and their memory (graphs.h, tproc.graphs): captures in progress by stream, the
 * graphs they made (and those nodes were added to) with their memory and free nodes, and
 * their execs: what a launch maps, allocates and frees, what a destroy gives back to the
 * graph pool. Only graphs with memory nodes are kept: a graph of kernels alone holds no
 * memory gpuleak can see.
 * Calls: pending.c (a freed allocation that was pending, the stream a call names), allocs.c,
 * pools.c (the graph pool), sites.c, threads.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/graphs.h"
#include "tracker/allocs.h"
#include "tracker/pending.h"
#include "tracker/pools.h"
#include "tracker/sites.h"
#include "tracker/threads.h"
#include "lib/vec.h"

/* cudaGraphInstantiateFlagAutoFreeOnLaunch, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH */
#define INSTANTIATE_AUTO_FREE_ON_LAUNCH 1
/* cudaStreamCaptureStatusActive */
#define CAPTURE_STATUS_ACTIVE 1

static struct tgraphs *get(struct tproc *p)
{
	if (!p->graphs)
		p->graphs = calloc(1, sizeof(*p->graphs));
	return p->graphs;
}

static struct tgraph *capture_of(const struct tproc *p, uint64_t stream)
{
	size_t i;

	for (i = 0; p->graphs && i < p->graphs->nr_g; i++)
		if (p->graphs->g[i].capturing && p->graphs->g[i].stream == stream)
			return &p->graphs->g[i];
	return NULL;
}

static struct tgraph *graph_of(const struct tproc *p, uint64_t handle)
{
	size_t i;

	for (i = 0; handle && p->graphs && i < p->graphs->nr_g; i++)
		if (!p->graphs->g[i].capturing && p->graphs->g[i].handle == handle)
			return &p->graphs->g[i];
	return NULL;
}

static struct texec *exec_of(const struct tproc *p, uint64_t handle)
{
	size_t i;

	for (i = 0; handle && p->graphs && i < p->graphs->nr_x; i++)
		if (p->graphs->x[i].handle == handle)
			return &p->graphs->x[i];
	return NULL;
}

static struct tgraph *graph_add(struct tproc *p)
{
	struct tgraphs *gs = get(p);

	if (!gs || vec_grow((void **)&gs->g, &gs->cap_g, gs->nr_g, sizeof(*gs->g)))
		return NULL;
	memset(&gs->g[gs->nr_g], 0, sizeof(gs->g[0]));
	return &gs->g[gs->nr_g++];
}

static void graph_drop(struct tproc *p, struct tgraph *g)
{
	struct tgraphs *gs = p->graphs;
	size_t i = (size_t)(g - gs->g);

	free(g->nodes);
	free(g->frees);
	gs->g[i] = gs->g[--gs->nr_g];
}

static struct tgraph_node *node_at(struct tgraph_node *v, size_t n, uint64_t va)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (v[i].va == va)
			return &v[i];
	return NULL;
}

static int node_add(struct tgraph *g, const struct tgraph_node *n)
{
	if (vec_grow((void **)&g->nodes, &g->cap_nodes, g->nr_nodes, sizeof(*g->nodes)))
		return -ENOMEM;
	g->nodes[g->nr_nodes++] = *n;
	return 0;
}

/* A free node of va in g: of its own memory node, or of memory it did not allocate. */
static int free_node_add(struct tgraph *g, uint64_t va)
{
	struct tgraph_node *n = node_at(g->nodes, g->nr_nodes, va);

	if (n) {
		n->freed = true;
		return 0;
	}
	if (vec_grow((void **)&g->frees, &g->cap_frees, g->nr_frees, sizeof(*g->frees)))
		return -ENOMEM;
	g->frees[g->nr_frees++] = va;
	return 0;
}

/* ---- capture ---- */

bool graphs__captured_alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
			    const struct gl_call_rec *r, int16_t device, int *err)
{
	struct site_key k = {
	    .pid = p->pid, .caller = r->caller, .stack_id = r->stack_id, .gen = p->gen};
	struct tgraph *g;

	*err = 0;
	if (!p->graphs)
		return false;
	g = capture_of(p, pending__stream_key(api, r->hdr.tid, r->aux));
	if (!g)
		return false;
	if (!r->addr)
		return true;
	/* The runtime's call, then the driver's it made: one node, the lower one a layer. */
	if (node_at(g->nodes, g->nr_nodes, r->addr)) {
		p->c.layers++;
		return true;
	}
	p->graphs->captured_allocs++;
	/* Python frames are named now: the site is made at launch, the stack id is of now. */
	sites__python(t, &k);
	*err = node_add(g, &(struct tgraph_node){.va = r->addr,
						 .bytes = r->size,
						 .caller = r->caller,
						 .frame = k.frame,
						 .stack_id = k.stack_id,
						 .api = r->hdr.api,
						 .device = device});
	return true;
}

bool graphs__capturing(const struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r)
{
	return p->graphs && capture_of(p, pending__stream_key(api, r->hdr.tid, r->aux));
}

int graphs__captured_free(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	struct tgraph *g = capture_of(p, pending__stream_key(api, r->hdr.tid, r->aux));

	return g && r->addr ? free_node_add(g, r->addr) : 0;
}

/* ---- what launches and destroys do to memory ---- */

/* The allocation of node n now made at (space, va) by exec x's launch, in site stack ss. */
static int make(struct tracker *t, struct tproc *p, const struct tgraph_node *n, uint8_t space,
		uint32_t ss, uint64_t ts_ns, bool check_class)
{
	uint32_t pool = pools__graph(p, n->device);
	struct alloc a = {.addr = n->va,
			  .size = n->bytes,
			  .ts_ns = ts_ns,
			  .sstack = ss,
			  .space = space,
			  .flags = AF_POOL | (p->step < 0 ? AF_INIT : 0)};

	if (ss == UINT32_MAX || pool == UINT32_MAX)
		return -ENOMEM;
	if (pools__alloc(p, pool, space, n->va, n->bytes))
		return -ENOMEM;
	return allocs__add(t, p, &a, ts_ns, check_class);
}

/* Exec x holds its own memory nodes (those its graph frees) from its first launch on. */
static int map_exec(struct tracker *t, struct tproc *p, struct texec *x, uint64_t ts_ns)
{
	size_t i;
	int err;

	if (x->mapped)
		return 0;
	x->mapped = true;
	for (i = 0; i < x->nr_nodes; i++) {
		const struct tgraph_node *n = &x->nodes[i];
		struct site_key k = {p->pid, n->api, n->device, n->caller, n->stack_id, OWNER_GRAPH,
				     0,	     0,	     0,		false,	   n->frame,	p->gen};
		struct alloc *old;

		if (!n->freed || !n->bytes)
			continue;
		old = alloc_table__find(&p->allocs, SPACE_GRAPH, n->va);
		if (old)
			pending__release(t, p, old);
		/* Graph memory is a class of its own: no rule or first step reclassifies it. */
		err = make(t, p, n, SPACE_GRAPH, sites__stack(t, sites__get(t, &k), n->stack_id),
			   ts_ns, false);
		if (err)
			return err;
		x->held_bytes += n->bytes;
		x->held_count++;
	}
	return 0;
}

/*
 * A launch runs x's nodes: memory the graph does not free is the program's from now on;
 * memory allocated elsewhere that its free nodes free goes.
 */
static int launch(struct tracker *t, struct tproc *p, struct texec *x, uint64_t ts_ns)
{
	size_t i;
	int err = map_exec(t, p, x, ts_ns);

	x->launches++;
	for (i = 0; !err && i < x->nr_nodes; i++) {
		const struct tgraph_node *n = &x->nodes[i];
		struct site_key k = {p->pid, n->api, n->device, n->caller, n->stack_id, OWNER_NONE,
				     0,	     0,	     0,		false,	   n->frame,	p->gen};
		struct alloc *old;

		if (n->freed || !n->bytes)
			continue;
		old = alloc_table__find(&p->allocs, SPACE_UVA, n->va);
		/* Still live from the last launch: freed by it under AutoFreeOnLaunch, or
		 * freed by something untraced (CUDA fails the launch otherwise). */
		if (old) {
			if (!(x->flags & INSTANTIATE_AUTO_FREE_ON_LAUNCH))
				p->c.addr_reuse++;
			pending__release(t, p, old);
		}
		err = make(t, p, n, SPACE_UVA,
			   sites__assign(t, &k, n->stack_id, n->bytes, NULL, p->step, p->step < 0),
			   ts_ns, true);
	}
	for (i = 0; !err && i < x->nr_frees; i++) {
		struct alloc *a = alloc_table__find(&p->allocs, SPACE_UVA, x->frees[i]);

		if (a)
			pending__release(t, p, a);
	}
	return err;
}

/* x is destroyed: what it held goes back to the graph pool, the rest stays the program's. */
static void exec_destroy(struct tracker *t, struct tproc *p, struct texec *x)
{
	struct tgraphs *gs = p->graphs;
	size_t i;

	for (i = 0; x->mapped && i < x->nr_nodes; i++) {
		struct alloc *a;

		if (!x->nodes[i].freed)
			continue;
		a = alloc_table__find(&p->allocs, SPACE_GRAPH, x->nodes[i].va);
		if (a)
			pending__release(t, p, a);
	}
	free(x->nodes);
	free(x->frees);
	gs->execs_destroyed++;
	*x = gs->x[--gs->nr_x];
}

static int instantiate(struct tproc *p, const struct gl_call_rec *r, uint32_t site)
{
	const struct tgraph *g = graph_of(p, r->aux);
	struct tgraphs *gs = p->graphs;
	struct texec *x;

	if (!g || !r->addr)
		return 0;
	if (vec_grow((void **)&gs->x, &gs->cap_x, gs->nr_x, sizeof(*gs->x)))
		return -ENOMEM;
	x = &gs->x[gs->nr_x];
	*x = (struct texec){.handle = r->addr,
			    .graph = g->handle,
			    .site = site,
			    .flags = r->aux2,
			    .ts_ns = r->hdr.ts_ns};
	x->nodes = g->nr_nodes ? malloc(g->nr_nodes * sizeof(*x->nodes)) : NULL;
	x->frees = g->nr_frees ? malloc(g->nr_frees * sizeof(*x->frees)) : NULL;
	if ((g->nr_nodes && !x->nodes) || (g->nr_frees && !x->frees)) {
		free(x->nodes);
		free(x->frees);
		return -ENOMEM;
	}
	if (g->nr_nodes)
		memcpy(x->nodes, g->nodes, g->nr_nodes * sizeof(*x->nodes));
	if (g->nr_frees)
		memcpy(x->frees, g->frees, g->nr_frees * sizeof(*x->frees));
	x->nr_nodes = g->nr_nodes;
	x->nr_frees = g->nr_frees;
	gs->nr_x++;
	return 0;
}

/* ---- the calls ---- */

static int capture_status(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	uint64_t key = pending__stream_key(api, r->hdr.tid, r->aux);
	struct tgraph *g = capture_of(p, key);
	bool active = call__returned(r, 4) == CAPTURE_STATUS_ACTIVE;

	/* A capture begun before the attach, or ended without our seeing it. */
	if (active && !g) {
		g = graph_add(p);
		if (!g)
			return -ENOMEM;
		g->capturing = true;
		g->stream = key;
	} else if (!active && g) {
		graph_drop(p, g);
	}
	return 0;
}

static int node_call(struct tproc *p, const struct cat_api *api, const struct gl_call_rec *r)
{
	const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;
	struct tgraph *g = graph_of(p, r->aux);
	struct tgraph_node n = {.caller = r->caller,
				.stack_id = -1,
				.api = r->hdr.api,
				.device = threads__device(p, r->hdr.tid)};

	if (!g) {
		/* made by cudaGraphCreate, which holds no memory: known from its first node */
		g = graph_add(p);
		if (!g)
			return -ENOMEM;
		g->handle = r->aux;
	}
	if (api->op == OP_GRAPH_FREE_NODE)
		return r->addr ? free_node_add(g, r->addr) : 0;
	/* cudaMemAllocNodeParams from bytesize: {bytesize, dptr} */
	if (!(r->hdr.flags & GL_HF_DESC) || (r->hdr.flags & GL_HF_DESC_READ_FAIL) ||
	    r->hdr.size < sizeof(*d))
		return 0;
	memcpy(&n.bytes, d->desc, sizeof(n.bytes));
	memcpy(&n.va, d->desc + 8, sizeof(n.va));
	if (!n.va || node_at(g->nodes, g->nr_nodes, n.va))
		return 0;
	return node_add(g, &n);
}

int graphs__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r, uint32_t site)
{
	struct tgraph *g;
	struct texec *x;
	uint64_t key;

	if (!get(p))
		return -ENOMEM;
	switch (api->op) {
	case OP_CAPTURE_BEGIN:
		key = pending__stream_key(api, r->hdr.tid, r->aux);
		if (capture_of(p, key))
			return 0;
		g = graph_add(p);
		if (!g)
			return -ENOMEM;
		g->capturing = true;
		g->stream = key;
		return 0;
	case OP_CAPTURE_END:
		g = capture_of(p, pending__stream_key(api, r->hdr.tid, r->aux));
		if (!g)
			return 0;
		/* Only a graph with memory nodes is worth keeping. */
		if (!call__returned(r, 8) || (!g->nr_nodes && !g->nr_frees)) {
			graph_drop(p, g);
			return 0;
		}
		g->capturing = false;
		g->handle = call__returned(r, 8);
		return 0;
	case OP_CAPTURE_STATUS:
		return capture_status(p, api, r);
	case OP_GRAPH_ALLOC_NODE:
	case OP_GRAPH_FREE_NODE:
		return node_call(p, api, r);
	case OP_GRAPH_INSTANTIATE:
		return instantiate(p, r, site);
	case OP_GRAPH_LAUNCH:
		x = exec_of(p, r->addr);
		return x ? launch(t, p, x, r->hdr.ts_ns) : 0;
	case OP_GRAPH_UPLOAD:
		x = exec_of(p, r->addr);
		return x ? map_exec(t, p, x, r->hdr.ts_ns) : 0;
	case OP_GRAPH_EXEC_DESTROY:
		x = exec_of(p, r->addr);
		if (x)
			exec_destroy(t, p, x);
		return 0;
	case OP_GRAPH_DESTROY:
		g = graph_of(p, r->addr);
		if (g)
			graph_drop(p, g);
		return 0;
	case OP_GRAPH_MEM_TRIM:
		pools__trim(p, pools__graph(p, (int16_t)r->aux), 0);
		return 0;
	default:
		return 0;
	}
}

void graphs__free(struct tproc *p)
{
	struct tgraphs *gs = p->graphs;
	size_t i;

	if (!gs)
		return;
	for (i = 0; i < gs->nr_g; i++) {
		free(gs->g[i].nodes);
		free(gs->g[i].frees);
	}
	for (i = 0; i < gs->nr_x; i++) {
		free(gs->x[i].nodes);
		free(gs->x[i].frees);
	}
	free(gs->g);
	free(gs->x);
	free(gs);
	p->graphs = NULL;
}
