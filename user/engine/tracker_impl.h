/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What the tracker's modules share and nothing outside the tracker needs (tracker.h is its
 * public face). One module per thing the tracker keeps:
 *   tracker.c       the tracker, its processes and their threads; records to their meaning
 *   alloc_table.c   a process's live allocations (alloc_table.h)
 *   allocs.c        allocations and frees: what they do to the live bytes of a site, its
 *                   process, its class and the step
 *   sites.c         sites and site stacks: interning, and the class rules put them in
 *   violations.c    rule violations: once=, max=, release=session-end
 *   pending.c       frees that complete later: deferred rules, streams, events, windows
 *   gpu_objects.c   CUDA devices and contexts, NCCL communicators, VMM mappings
 *   wgpu_objects.c  refcounted WebGPU objects, their owners, labels, queues and watches
 *   call_tree.c     nested calls, applied when the outermost returns: layers, communicator
 *                   inits, NCCL groups, threads adopted by a call
 * A function of tracker.h is defined in the module that owns what it reads (tproc__obj in
 * wgpu_objects.c, tracker__window_checks in pending.c, ...). Cross-module calls here are
 * named module__verb; what runs per allocation and free stays inside one file, or inline.
 */
#ifndef GPULEAK_ENGINE_TRACKER_IMPL_H
#define GPULEAK_ENGINE_TRACKER_IMPL_H

#include "engine/rules.h"
#include "probe/catalog.h"
#include "engine/tracker.h"
#include "engine/threads.h"

struct rule_subject;

/* ---- tracker.c: processes and threads ---- */

/* One call record with its meaning, made under scope; outermost: no traced call above it. */
int tracker__apply_op(struct tracker *t, struct tproc *p, const struct cat_api *api,
		      const struct gl_call_rec *r, const struct call_scope *scope, bool outermost);

/* ---- allocs.c: allocations and frees ---- */

int allocs__alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r, const struct call_scope *scope);
/* realloc(old, n): old is gone once the call succeeded, n is new memory. */
int allocs__realloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r, const struct call_scope *scope);
int allocs__free(struct tracker *t, struct tproc *p, const struct cat_api *api,
		 const struct gl_call_rec *r);
/*
 * A new allocation a (its sstack assigned) enters p's table and the sums of its site and
 * process; its class is checked now unless check_class is false (the caller checks it
 * later). 0 or -ENOMEM.
 */
int allocs__add(struct tracker *t, struct tproc *p, const struct alloc *a, uint64_t ts_ns,
		bool check_class);
/* a (in p's table) is gone: out of the sums and the table. */
void allocs__release(struct tracker *t, struct tproc *p, struct alloc *a);
/* Set flag (AF_PENDING, AF_RELEASED_MAPPED) on a, moving its bytes where the flag counts them. */
void allocs__set_flag(struct tracker *t, struct tproc *p, struct alloc *a, uint8_t flag);
/* a moves to site stack ss (its label changed): not an allocation, nor a free. */
void allocs__move(struct tracker *t, struct tproc *p, struct alloc *a, uint32_t ss);
/* A lower layer at outer's own address: the same memory, merged into it. */
void allocs__merge_layer(struct tracker *t, struct tproc *p, struct alloc *outer, uint16_t api);
/*
 * Release every allocation of p that match selects; used by context, device, owner and
 * communicator teardown. Pending frees of what goes are forgotten.
 */
void allocs__release_where(struct tracker *t, struct tproc *p,
			   bool (*match)(const struct tracker *t, const struct alloc *a, void *ctx),
			   void *ctx);
/* A failed call, counted at its call site. */
void allocs__count_failure(struct tracker *t, struct tproc *p, const struct cat_api *api,
			   const struct gl_call_rec *r);

/* ---- sites.c: sites, site stacks, their classes ---- */

/* Frames of a stack rules look at: all of them at the deepest --stack-depth. */
#define MAX_FRAMES 128

/* What makes a site; stack_id names the sstack of the allocation in it. */
struct site_key {
	pid_t pid;
	uint16_t api;
	int16_t device;
	uint64_t caller;
	int32_t stack_id; /* not part of the site: the sstack of its allocation */
	uint8_t owner_kind;
	uint64_t owner;
	uint16_t rule;	/* persistent/ignore rule + 1, 0: none */
	uint32_t label; /* WebGPU label + 1, 0: none */
	bool init;	/* retained by init (CLS_INIT): never with a rule */
};

/* The site of k (index into t->sites), made on first sight; UINT32_MAX without memory. */
uint32_t sites__get(struct tracker *t, const struct site_key *k);
/* The sstack of (site, stack_id), made on first sight; UINT32_MAX without memory. */
uint32_t sites__stack(struct tracker *t, uint32_t site, int32_t stack_id);
/*
 * The sstack a new allocation of size bytes goes to: its call site and stack (key k), then
 * the class a rule (unless a lower layer's) or init puts it in, which k->rule and k->init
 * say. label: its WebGPU label or NULL; step: the step it was made in; init_phase: made
 * before the process's first step. UINT32_MAX without memory.
 */
uint32_t sites__assign(struct tracker *t, struct site_key *k, int32_t stack_id, uint64_t size,
		       const char *label, int64_t step, bool init_phase);
/* The rule subject of a call site, frames named only when a rule needs them. */
void sites__subject(struct tracker *t, pid_t pid, uint16_t api, uint64_t caller, int32_t stack_id,
		    bool frames, struct rule_subject *s, const char **syms, const char **mods);

/* ---- violations.c ---- */

int violations__add(struct tproc *p, enum violation_kind kind, uint16_t rule, uint32_t site,
		    uint64_t bytes, uint64_t count, uint64_t ts_ns);
/*
 * Allocation a has just joined the class of its site's rule: a `once` class now holding
 * two, or one over its max=, is a violation. 0 or -ENOMEM.
 */
int violations__check_class(struct tracker *t, struct tproc *p, const struct alloc *a,
			    uint64_t ts_ns);
/* Session end: classes of release=session-end rules still live. */
void violations__not_released(struct tracker *t, struct tproc *p, uint64_t ts_ns);

/* ---- pending.c: frees that complete later ---- */

/* The deferred rule (index + 1) for a free, or 0. */
uint16_t pending__deferred_rule(struct tracker *t, const struct gl_call_rec *r);
/* A free of a by r that completes later (by rule, or an async free without rules). */
int pending__defer(struct tracker *t, struct tproc *p, struct alloc *a, const struct cat_api *api,
		   const struct gl_call_rec *r, uint16_t rule);
/* WebGPU: a's memory goes once queue q finishes what was submitted to it so far. */
int pending__until_queue(struct tracker *t, struct tproc *p, struct alloc *a,
			 const struct tqueue *q, const struct gl_call_rec *r);
/* The pending free of (space, addr) is over without completing (its memory went otherwise). */
void pending__forget(struct tracker *t, struct tproc *p, uint8_t space, uint64_t addr);
/*
 * Complete pending frees issued before `before_ns`: on one stream, or on every stream of a
 * device (device < -1: any device). A sync of the legacy stream waits for all blocking
 * streams of the process, so it completes every stream.
 */
void pending__complete(struct tracker *t, struct tproc *p, enum rule_until by, bool all_streams,
		       uint64_t stream, int device, uint64_t before_ns);
/* Queue q's work is done up to q->done; q NULL: drop what waits on memory already gone. */
void pending__queue_done(struct tracker *t, struct tproc *p, const struct tqueue *q);
/* Stream, device and event syncs, and event records: what completes pending frees. */
int pending__sync(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r);
/* Deferred frees of p pending longer than their window at ts_ns become violations. */
void pending__window_checks(struct tracker *t, struct tproc *p, uint64_t ts_ns);

/* ---- gpu_objects.c: CUDA devices, contexts, VMM mappings, NCCL communicators ---- */

/* Device, context, VMM mapping and communicator teardown calls. */
int gpu_objects__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r);
int gpu_objects__comm_add(struct tproc *p, uint64_t comm, uint32_t site, uint64_t ts_ns);
/* Whether a VMM handle is mapped somewhere. */
bool gpu_objects__handle_mapped(const struct tproc *p, uint64_t handle);

/* ---- wgpu_objects.c: refcounted objects, owners, labels, queues ---- */

/* Whether op is one of the refcounted-object and queue operations (inline: every record). */
static inline bool wgpu_objects__is_op(enum cat_op op)
{
	switch (op) {
	case OP_OBJ_CREATE:
	case OP_OBJ_ADDREF:
	case OP_OBJ_RELEASE:
	case OP_OBJ_DESTROY:
	case OP_OWNER_ADDREF:
	case OP_OWNER_RELEASE:
	case OP_OWNER_DESTROY:
	case OP_ERROR_OBJECT:
	case OP_QUEUE_GET:
	case OP_QUEUE_SUBMIT:
	case OP_QUEUE_WATCH:
	case OP_QUEUE_DONE:
		return true;
	default:
		return false;
	}
}

int wgpu_objects__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
			const struct gl_call_rec *r);
int wgpu_objects__label(struct tracker *t, struct tproc *p, const struct gl_label_rec *r);
void wgpu_objects__free(struct tproc *p);

/* ---- call_tree.c: nested calls ---- */

/*
 * Whether call record r on th goes through the call tree: nested in another call, on a
 * thread that holds nested records or works for another call (adopted, adopting), or one
 * that applies a tree of its own (a communicator init, a group end). Inline: the common
 * call, a plain allocation or free, needs no tree.
 */
static inline bool call_tree__needed(const struct tthread *th, const struct cat_api *api,
				     const struct gl_call_rec *r)
{
	return r->hdr.depth || th->nr_held || th->adopter || th->nr_adoptees ||
	       (r->hdr.kind == GL_REC_ALLOC && api->op == OP_COMM_INIT) || api->op == OP_GROUP_END;
}

/* A call record r that call_tree__needed: held until its outermost call returns, or applied. */
int call_tree__apply(struct tracker *t, struct tproc *p, struct tthread *th,
		     const struct cat_api *api, const struct gl_call_rec *r);

/* r was applied on th (not held): an error-object mark not taken by the creation it was
 * made in is stale now. */
static inline void call_tree__applied(struct tthread *th, const struct gl_call_rec *r)
{
	if (r->hdr.kind != GL_REC_NOTIFY && r->hdr.kind != GL_REC_FREE &&
	    th->error_depth > r->hdr.depth)
		th->error_depth = 0;
}
/* GL_TASK_THREAD: a thread made by a traced call to do its work. */
int call_tree__thread_made(struct tproc *p, const struct gl_task_rec *r);
/* Records still held when a process ends belong to calls that never returned. */
int call_tree__flush(struct tracker *t, struct tproc *p);
/* ncclGroupStart on r's thread. */
int call_tree__group_start(struct tproc *p, const struct gl_call_rec *r);

#endif
