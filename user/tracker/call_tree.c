// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Calls: every call record comes in here, and is applied by its API's operation by the module
 * that owns what it changes. One user allocation is counted once, at the outermost traced
 * call: records of calls nested inside another traced call on the same thread wait in the
 * thread's held list (tthread.held) until the outermost call returns; then the tree they form
 * is applied from the top: calls of a lower layer family under an allocation are its layers
 * (merged when at its own address), memory made while a communicator is created or an NCCL
 * group ends is that communicator's, and the calls threads made to do a call's work (adopted)
 * count as made inside it. A call with nothing nested, the common one, is applied at once.
 * Calls: mem_calls.c, wgpu_objects.c, graphs.c, gpu_objects.c, ipc.c, pending.c (syncs),
 * pools.c, blocks.c (a caching allocator's blocks), allocs.c (a merged layer), sites.c,
 * threads.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "tracker/call_tree.h"
#include "tracker/allocs.h"
#include "tracker/blocks.h"
#include "tracker/gpu_objects.h"
#include "tracker/graphs.h"
#include "tracker/ipc.h"
#include "tracker/mem_calls.h"
#include "tracker/pending.h"
#include "tracker/pools.h"
#include "tracker/sites.h"
#include "tracker/threads.h"
#include "tracker/wgpu_objects.h"
#include "lib/vec.h"

/* ---- a call's operation ---- */

/* ncclGroupStart on r's thread. */
static int group_start(struct tproc *p, const struct gl_call_rec *r)
{
	struct tthread *th = threads__get(p, r->hdr.tid);

	if (!th)
		return -ENOMEM;
	th->group_depth++;
	return 0;
}

/* The site of a call that makes an object (a pool, an exec): where the report says it was. */
static uint32_t call_site(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	struct site_key k = {p->pid,	r->hdr.api,  threads__device(p, r->hdr.tid),
			     r->caller, r->stack_id, OWNER_NONE,
			     0,		0,	     0,
			     false,	0,	     p->gen};

	sites__python(t, &k);
	return sites__get(t, &k);
}

/* Calls that are neither allocations nor frees, once they succeeded. */
static int apply_call_op(struct tracker *t, struct tproc *p, const struct cat_api *api,
			 const struct gl_call_rec *r)
{
	if (pools__is_op(api->op))
		return pools__apply(p, api, r,
				    api->op == OP_POOL_CREATE ? call_site(t, p, r) : UINT32_MAX);
	if (graphs__is_op(api->op))
		return graphs__apply(t, p, api, r,
				     api->op == OP_GRAPH_INSTANTIATE ? call_site(t, p, r)
								     : UINT32_MAX);
	switch (api->op) {
	case OP_IPC_EXPORT:
		return ipc__export(t, p, r);
	case OP_MC_BIND:
	case OP_MC_UNBIND:
		return ipc__mc_apply(t, p, api, r);
	case OP_SYNC_STREAM:
	case OP_SYNC_DEVICE:
	case OP_SYNC_EVENT:
	case OP_EVENT_RECORD:
		return pending__sync(t, p, api, r);
	case OP_GROUP_START:
		return group_start(p, r);
	default:
		return gpu_objects__apply(t, p, api, r);
	}
}

/* One call record with its meaning, made under scope; outermost: no traced call above it. */
static int apply_op(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r, const struct call_scope *scope, bool outermost)
{
	if (wgpu_objects__is_op(api->op) && r->hdr.kind != GL_REC_ALLOC_FAIL)
		return wgpu_objects__apply(t, p, api, r);
	if (api->op == OP_BLOCK)
		return blocks__apply(t, p, api, r);

	switch (r->hdr.kind) {
	case GL_REC_ALLOC:
		if (api->op == OP_ALLOC)
			return mem_calls__alloc(t, p, api, r, scope);
		if (api->op == OP_REALLOC)
			return mem_calls__realloc(t, p, api, r, scope);
		if (api->op == OP_VMM_RETAIN)
			return mem_calls__retain(p, r);
		break;
	case GL_REC_ALLOC_FAIL:
		/* A failure under an outer call is that call's failure, counted there. */
		if (outermost)
			mem_calls__count_failure(t, p, api, r);
		return 0;
	case GL_REC_FREE:
		return api->op == OP_FREE || api->op == OP_FREE_ASYNC
			   ? mem_calls__free(t, p, api, r)
			   : 0;
	case GL_REC_SYNC:
	case GL_REC_CALL:
		break;
	default:
		return 0;
	}
	if (r->ret) {
		if (outermost)
			mem_calls__count_failure(t, p, api, r);
		return 0;
	}
	return apply_call_op(t, p, api, r);
}

/* ---- the tree ---- */

/* A thread that never leaves its outer call must not grow without bound. */
#define MAX_HELD (1u << 20)

struct node {
	const struct gl_call_rec *r;
	const struct cat_api *api;
	size_t first_child; /* children are nodes [first_child, self) not owned by others */
	size_t parent;
};

static int apply_tree(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
		      const struct call_scope *scope, const struct call_scope *layer,
		      bool outermost);

/* An inner allocation returning the outer one's address (cudaMallocHost -> cudaHostAlloc). */
static bool same_memory(const struct alloc *outer, const struct cat_api *api,
			const struct gl_call_rec *r)
{
	return outer && r->hdr.kind == GL_REC_ALLOC && api->op == OP_ALLOC &&
	       (uint8_t)api->space == outer->space && r->addr == outer->addr;
}

/*
 * Whether child, nested in parent, is the same call one layer down (cudaGraphLaunch ->
 * cuGraphLaunch): for the calls whose effect must not be applied twice, it is a layer.
 */
static bool same_call_below(const struct cat_api *parent, const struct cat_api *child)
{
	if (!parent || !child || parent->op != child->op ||
	    !family_is_lower_layer(GL_API_FAMILY(parent->api), GL_API_FAMILY(child->api)))
		return false;
	return parent->op == OP_IPC_EXPORT || graphs__is_op(parent->op) || pools__is_op(parent->op);
}

/*
 * Children of a node. Under an allocation (outer != NULL), calls of a lower layer family
 * are that allocation's layers; anything else (a malloc inside cudaMalloc) is memory of its
 * own, owned by the enclosing scope (a communicator being created, or nothing).
 */
static int apply_children(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
			  const struct call_scope *scope, const struct call_scope *layer,
			  const struct alloc *outer)
{
	unsigned int fam = GL_API_FAMILY(nodes[self].r->hdr.api);
	struct call_scope lp;
	size_t i;
	int err;

	if (outer)
		lp = (struct call_scope){.owner_kind = OWNER_LAYER,
					 .owner = tracker__alloc_site(t, outer),
					 .outer_space = outer->space,
					 .outer_addr = outer->addr};
	for (i = nodes[self].first_child; i < self; i++) {
		const struct call_scope *l = layer;

		if (nodes[i].parent != self)
			continue;
		if (!outer && nodes[i].r->hdr.kind != GL_REC_ALLOC_FAIL && !nodes[i].r->ret &&
		    same_call_below(nodes[self].api, nodes[i].api)) {
			p->c.layers++;
			continue;
		}
		if (outer)
			l = &lp;
		/* Only calls one layer further down stay in the layer (not cudaMalloc's
		 * bookkeeping malloc, nor a malloc inside the driver's cuCtxSetCurrent). */
		if (l && !(nodes[i].api &&
			   (family_is_lower_layer(fam, GL_API_FAMILY(nodes[i].r->hdr.api)) ||
			    same_memory(outer, nodes[i].api, nodes[i].r))))
			l = NULL;
		err = apply_tree(t, p, nodes, i, scope, l, false);
		if (err)
			return err;
	}
	return 0;
}

/*
 * A communicator made: everything allocated on this thread while it was being created is its
 * own. ncclCommInitAll makes one per device on the calling thread (its out-array, read at
 * return, lists them in device order when no devlist is given): an allocation goes to the
 * communicator of the device the thread was on when it was made.
 */
static int apply_comm_init(struct tracker *t, struct tproc *p, struct node *nodes, size_t self)
{
	const struct gl_call_rec *r = nodes[self].r;
	uint32_t site = call_site(t, p, r);
	uint64_t comms[GL_DESC_MAX / 8] = {gpu_objects__comm_handle(r)};
	struct tthread *th;
	size_t nr = 1, i, j;
	int err;

	if (site == UINT32_MAX)
		return -ENOMEM;
	if (r->hdr.api == GL_API_NCCL_COMM_INIT_ALL && (r->hdr.flags & GL_HF_DESC) &&
	    !(r->hdr.flags & GL_HF_DESC_READ_FAIL) && r->hdr.size >= sizeof(struct gl_desc_rec)) {
		const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;

		nr = r->aux < GL_DESC_MAX / 8 ? (size_t)r->aux : GL_DESC_MAX / 8;
		memcpy(comms, d->desc, nr * sizeof(comms[0]));
	}
	for (i = 0; i < nr; i++)
		if (comms[i] && gpu_objects__comm_add(p, comms[i], site, r->hdr.ts_ns))
			return -ENOMEM;
	/* A device communicator is made on a communicator: the table says which. */
	if (r->hdr.api == GL_API_NCCL_DEV_COMM_CREATE && comms[0])
		p->comms[p->nr_comms - 1].parent = r->aux;
	th = threads__get(p, r->hdr.tid);
	if (!th)
		return -ENOMEM;
	/* Inside a group it only queued: the outermost ncclGroupEnd initialises it. */
	if (th->group_depth && nr == 1 && th->nr_group_comms < MAX_GROUP_COMMS)
		th->group_comms[th->nr_group_comms++] =
		    (struct group_comm){r->addr, threads__device(p, r->hdr.tid)};
	for (j = nodes[self].first_child; j < self; j++) {
		struct call_scope comm = {.owner_kind = OWNER_COMM, .owner = comms[0]};
		int16_t dev = threads__device(p, nodes[j].r->hdr.tid);

		if (nodes[j].parent != self)
			continue;
		if (nr > 1 && dev >= 0 && (size_t)dev < nr && comms[dev])
			comm.owner = comms[dev];
		err = apply_tree(t, p, nodes, j, &comm, NULL, false);
		if (err)
			return err;
	}
	return 0;
}

/* The communicator of a group made on device dev; the only one when the group made one. */
static uint64_t group_comm(const struct tthread *th, int16_t dev)
{
	unsigned int i;

	for (i = 0; i < th->nr_group_comms; i++)
		if (th->group_comms[i].device == dev)
			return th->group_comms[i].comm;
	return th->nr_group_comms == 1 ? th->group_comms[0].comm : 0;
}

/*
 * The outermost ncclGroupEnd initialises the communicators the group's inits returned at
 * once: what is allocated inside it, on this thread or on the threads it made (adopted), is
 * the communicator's of the device the allocating thread was on. It ends the group even
 * when it fails.
 */
static int apply_group_end(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
			   const struct call_scope *scope, const struct call_scope *layer,
			   bool outermost)
{
	const struct gl_call_rec *r = nodes[self].r;
	struct tthread *th = threads__get(p, r->hdr.tid);
	size_t j;
	int err = 0;

	if (!th)
		return -ENOMEM;
	if (th->group_depth != 1 || !th->nr_group_comms) {
		err = apply_children(t, p, nodes, self, scope, layer, NULL);
	} else {
		for (j = nodes[self].first_child; j < self && !err; j++) {
			struct call_scope comm = {.owner_kind = OWNER_COMM};

			if (nodes[j].parent != self)
				continue;
			comm.owner = group_comm(th, threads__device(p, nodes[j].r->hdr.tid));
			err = apply_tree(t, p, nodes, j, comm.owner ? &comm : scope, NULL, false);
		}
	}
	if (th->group_depth && !--th->group_depth)
		th->nr_group_comms = 0;
	return err ? err : apply_op(t, p, nodes[self].api, r, scope, outermost);
}

static int apply_tree(struct tracker *t, struct tproc *p, struct node *nodes, size_t self,
		      const struct call_scope *scope, const struct call_scope *layer,
		      bool outermost)
{
	const struct gl_call_rec *r = nodes[self].r;
	const struct cat_api *api = nodes[self].api;
	struct alloc *a, entry;
	int err;

	if (!api)
		return apply_children(t, p, nodes, self, scope, layer, NULL);
	if (r->hdr.kind == GL_REC_ALLOC && api->op == OP_COMM_INIT && gpu_objects__comm_handle(r))
		return apply_comm_init(t, p, nodes, self);
	if (api->op == OP_GROUP_END)
		return apply_group_end(t, p, nodes, self, scope, layer, outermost);
	if (r->hdr.kind != GL_REC_ALLOC || api->op != OP_ALLOC) {
		/* Any other call: what happened inside it first, then the call itself. */
		err = apply_children(t, p, nodes, self, scope, layer, NULL);
		if (err)
			return err;
		return apply_op(t, p, api, r, layer ? layer : scope, outermost);
	}
	if (layer) {
		struct alloc *outer =
		    alloc_table__find(&p->allocs, layer->outer_space, layer->outer_addr);

		/* The same address one layer down: the same memory, merged. */
		if (outer && outer->space == api->space && r->addr == outer->addr) {
			allocs__merge_layer(t, p, outer, r->hdr.api);
			entry = *outer;
			return apply_children(t, p, nodes, self, scope, layer, &entry);
		}
	}
	err = mem_calls__alloc(t, p, api, r, layer ? layer : scope);
	if (err)
		return err;
	a = r->addr ? alloc_table__find(&p->allocs, (uint8_t)api->space, r->addr) : NULL;
	if (!a)
		return apply_children(t, p, nodes, self, scope, NULL, NULL);
	/* A copy: children may grow the table under a pointer. */
	entry = *a;
	return apply_children(t, p, nodes, self, scope, NULL, &entry);
}

/* Apply a thread's held records plus the outermost call r that closes them. */
static int apply_held(struct tracker *t, struct tproc *p, struct tthread *th,
		      const struct gl_call_rec *r)
{
	size_t n = (th ? th->nr_held : 0) + (r ? 1 : 0), i, top = 0;
	struct node *nodes;
	size_t *stack;
	int err = 0;

	if (!n)
		return 0;
	nodes = calloc(n, sizeof(*nodes));
	stack = calloc(n, sizeof(*stack));
	if (!nodes || !stack) {
		err = -ENOMEM;
		goto cleanup;
	}
	/* Records arrive in completion order (children before their caller): a record at
	 * depth d adopts every unclaimed record deeper than d that came before it. */
	for (i = 0; i < n; i++) {
		const struct gl_call_rec *rec = i < n - (r ? 1 : 0) ? &th->held[i].desc.call : r;

		nodes[i].r = rec;
		nodes[i].api = cat_by_api(rec->hdr.api);
		nodes[i].parent = SIZE_MAX;
		nodes[i].first_child = i;
		while (top && nodes[stack[top - 1]].r->hdr.depth > rec->hdr.depth) {
			nodes[stack[top - 1]].parent = i;
			nodes[i].first_child = stack[top - 1];
			top--;
		}
		stack[top++] = i;
	}
	for (i = 0; i < top && !err; i++) {
		struct call_scope none = {0};

		/* What goes while the tree is applied goes in its outermost call. */
		p->cause_api = nodes[stack[i]].r->hdr.api;
		err = apply_tree(t, p, nodes, stack[i], &none, NULL, true);
	}
cleanup:
	if (th) {
		th->nr_held = 0;
		th->adopt_ready = 0;
	}
	free(nodes);
	free(stack);
	return err;
}

static int hold(struct tthread *th, const struct gl_hdr *h)
{
	size_t len = h->size < sizeof(struct gl_peek_rec) ? h->size : sizeof(struct gl_peek_rec);

	if (vec_grow((void **)&th->held, &th->cap_held, th->nr_held, sizeof(*th->held)))
		return -ENOMEM;
	memset(&th->held[th->nr_held], 0, sizeof(th->held[0]));
	memcpy(&th->held[th->nr_held], h, len);
	th->nr_held++;
	return 0;
}

static int cmp_tid(const void *a, const void *b)
{
	const struct tthread *x = *(struct tthread *const *)a, *y = *(struct tthread *const *)b;

	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * The call that made threads to do its work returns on th: the calls those threads finished
 * meanwhile join th's held records, one thread after the other in the order they were made,
 * one level below that call, so that its tree owns them (a communicator's memory, by the
 * device each thread was on). What they do afterwards is their own.
 */
static int adopt(struct tproc *p, struct tthread *th)
{
	const struct hmap_slot *s;
	struct tthread **v;
	size_t i, k, n = 0;
	int err = 0;

	v = calloc(th->nr_adoptees, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; n < th->nr_adoptees && hmap__next(&p->threads, &i, &s);) {
		struct tthread *c = (struct tthread *)(uintptr_t)s->val;

		if (c != th && c->adopter == th->tid)
			v[n++] = c;
	}
	qsort(v, n, sizeof(*v), cmp_tid);
	for (i = 0; i < n && !err; i++) {
		struct tthread *c = v[i];

		for (k = 0; k < c->adopt_ready && !err; k++) {
			struct gl_peek_rec rec = c->held[k];

			rec.desc.call.hdr.depth += th->adoptees_depth + 1;
			err = hold(th, &rec.desc.call.hdr);
		}
		if (err)
			break;
		memmove(c->held, c->held + c->adopt_ready,
			(c->nr_held - c->adopt_ready) * sizeof(*c->held));
		c->nr_held -= c->adopt_ready;
		c->adopt_ready = 0;
		c->adopter = 0;
	}
	th->nr_adoptees = 0;
	free(v);
	return err;
}

/* GL_TASK_THREAD: thread tid was made by ppid inside a call that hands it its work. */
int call_tree__thread_made(struct tproc *p, const struct gl_task_rec *r)
{
	struct tthread *c, *parent;

	c = threads__get(p, r->hdr.tid);
	parent = threads__get(p, r->ppid);
	if (!c || !parent)
		return -ENOMEM;
	/* One adopting call per thread at a time: the innermost BPF saw open. */
	if (c == parent || c->adopter || c->nr_held ||
	    (parent->nr_adoptees && parent->adoptees_depth != r->hdr.depth))
		return 0;
	c->adopter = r->ppid;
	c->adopt_depth = r->hdr.depth;
	parent->adoptees_depth = r->hdr.depth;
	parent->nr_adoptees++;
	return 0;
}

/* ---- the way in of every call ---- */

/*
 * Whether call record r on th goes through the call tree: nested in another call, on a
 * thread that holds nested records or works for another call (adopted, adopting), or one
 * that applies a tree of its own (a communicator init, a group end). Inline: the common
 * call, a plain allocation or free, needs no tree.
 */
static inline bool needed(const struct tthread *th, const struct cat_api *api,
			  const struct gl_call_rec *r)
{
	return r->hdr.depth || th->nr_held || th->adopter || th->nr_adoptees ||
	       (r->hdr.kind == GL_REC_ALLOC && api->op == OP_COMM_INIT) || api->op == OP_GROUP_END;
}

/*
 * r was applied on th (not held): an error-object mark not taken by the creation it was made
 * in is stale now.
 */
static inline void applied(struct tthread *th, const struct gl_call_rec *r)
{
	if (r->hdr.kind != GL_REC_NOTIFY && r->hdr.kind != GL_REC_FREE &&
	    th->error_depth > r->hdr.depth)
		th->error_depth = 0;
}

/* A call record r that needed(): held until its outermost call returns, or applied. */
static int apply_nested(struct tracker *t, struct tproc *p, struct tthread *th,
			const struct cat_api *api, const struct gl_call_rec *r)
{
	int err;

	if (th->nr_adoptees && r->hdr.depth == th->adoptees_depth) {
		err = adopt(p, th);
		if (err)
			return err;
	}
	if (th->adopter && th->nr_held >= MAX_HELD)
		th->adopter = 0; /* never returns: take it as the thread's own */
	if (th->adopter && !r->hdr.depth) {
		/* Finished on a thread made to do another call's work: it waits for that call. */
		err = hold(th, &r->hdr);
		th->adopt_ready = th->nr_held;
		return err;
	}
	if (r->hdr.depth) {
		if (th->nr_held < MAX_HELD)
			return hold(th, &r->hdr);
		/* A thread stuck inside one call: take what it held as calls of their own. */
		err = apply_held(t, p, th, NULL);
		if (err)
			return err;
		return hold(th, &r->hdr);
	}
	if (th->nr_held || (r->hdr.kind == GL_REC_ALLOC && api->op == OP_COMM_INIT) ||
	    api->op == OP_GROUP_END)
		err = apply_held(t, p, th, r);
	else /* nothing nested after all: no tree to build */
		err = apply_op(t, p, api, r, &(struct call_scope){0}, true);
	applied(th, r);
	return err;
}

/* Every call record comes in here; nested ones go through the tree. */
int call_tree__apply(struct tracker *t, struct tproc *p, const struct gl_call_rec *r)
{
	const struct cat_api *api = cat_by_api(r->hdr.api);
	struct tthread *th;
	int err;

	if (!api || api->op == OP_RENDEZVOUS)
		return 0;
	p->c.calls++;
	p->cause_api = r->hdr.api;
	th = threads__get(p, r->hdr.tid);
	if (!th)
		return -ENOMEM;
	/* A new allocation may reuse an address whose lower-layer free never came: expected
	 * frees do not outlive the thread's next allocation. */
	if (th->nr_expect && r->hdr.kind == GL_REC_ALLOC && !r->hdr.depth)
		th->nr_expect = 0;
	if (needed(th, api, r))
		return apply_nested(t, p, th, api, r);
	err = apply_op(t, p, api, r, &(struct call_scope){0}, true);
	applied(th, r);
	return err;
}

int call_tree__flush(struct tracker *t, struct tproc *p)
{
	const struct hmap_slot *s;
	size_t i;
	int err = 0;

	for (i = 0; hmap__next(&p->threads, &i, &s) && !err;) {
		struct tthread *th = (struct tthread *)(uintptr_t)s->val;

		if (th->nr_held)
			err = apply_held(t, p, th, NULL);
	}
	return err;
}
