// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pending frees (tproc.pend): frees issued whose memory goes only when something completes
 * them. An async free waits for its stream; a free a deferred rule names waits for what its
 * until= says (a stream, event or device sync, a WebGPU queue's work); a WebGPU object
 * destroyed while its device's queue is busy waits for that queue. This file keeps the list,
 * the events recorded on streams, which rule defers a free, and the windows past which a
 * deferred free that never completed is a violation; memory that goes while its free is
 * pending (its address handed out again, its owner torn down) ends that free here too.
 * Calls: allocs.c, violations.c, pools.c (a sync's trim), sites.c (the rule subject of a
 * free), threads.c.
 */
#include <errno.h>
#include "tracker/pending.h"
#include "tracker/allocs.h"
#include "tracker/pools.h"
#include "tracker/sites.h"
#include "tracker/threads.h"
#include "tracker/violations.h"
#include "lib/vec.h"

/*
 * Streams as the tracker names them. The per-thread default stream (cudaStreamPerThread,
 * or stream 0 in a _ptsz call) is one per thread; tid << 32 lies above every user address,
 * so it never equals a real stream handle. The legacy default stream (0 or
 * cudaStreamLegacy) is 0.
 */
#define STREAM_LEGACY	  0x1
#define STREAM_PER_THREAD 0x2

uint64_t pending__stream_key(const struct cat_api *a, uint32_t tid, uint64_t stream)
{
	if (stream == STREAM_PER_THREAD || (stream == 0 && (a->flags & CAT_PTSZ)))
		return (uint64_t)tid << 32 | STREAM_PER_THREAD;
	if (stream == STREAM_LEGACY)
		return 0;
	return stream;
}

static void pending_drop(struct tproc *p, size_t i)
{
	p->pend[i] = p->pend[--p->nr_pend];
}

/* A pending free is over (completed, or its memory gone otherwise): tell who asked. */
static void pending_end(struct tracker *t, const struct tproc *p, const struct pending_free *pf,
			const struct alloc *a)
{
	if (t->pend_done && a)
		t->pend_done(t->pend_done_ctx, p, tracker__alloc_site(t, a), a->size, pf->ts_ns,
			     t->last_ts_ns);
}

/* The pending free of (space, addr) is over without completing (its memory went otherwise). */
static void forget(struct tracker *t, struct tproc *p, uint8_t space, uint64_t addr)
{
	size_t i;

	for (i = 0; i < p->nr_pend; i++)
		if (p->pend[i].addr == addr && p->pend[i].space == space) {
			pending_end(t, p, &p->pend[i], alloc_table__find(&p->allocs, space, addr));
			pending_drop(p, i);
			return;
		}
}

void pending__release(struct tracker *t, struct tproc *p, struct alloc *a)
{
	if (a->flags & AF_PENDING)
		forget(t, p, a->space, a->addr);
	allocs__release(t, p, a);
}

void pending__release_where(struct tracker *t, struct tproc *p,
			    bool (*match)(const struct tracker *t, const struct alloc *a,
					  void *ctx),
			    void *ctx)
{
	size_t i = 0;

	/* Backward-shift deletion may move an unvisited entry into slot i: slot i is looked at
	 * again after a release. */
	while (i < p->allocs.cap) {
		struct alloc *a = &p->allocs.slots[i];

		if (!a->addr || !match(t, a, ctx)) {
			i++;
			continue;
		}
		p->c.released_by_owner++;
		p->release_how = RELEASE_OWNER;
		pending__release(t, p, a);
		p->release_how = RELEASE_FREED;
	}
}

/*
 * The deferred rule (index + 1) for a free, or 0. Rules that only name APIs are resolved once
 * per API; a rule with site=/lib= is matched against the free's call site every time.
 */
uint16_t pending__deferred_rule(struct tracker *t, const struct gl_call_rec *r)
{
	const struct rules *rs = t->rules;
	const char *syms[MAX_FRAMES], *mods[MAX_FRAMES], *where[MAX_FRAMES];
	struct rule_subject sub;
	uint16_t api = r->hdr.api;
	int m;

	if (!rs || api >= GL_API_MAX)
		return 0;
	/* Without per-call matchers the answer depends on the API alone: looked up once. */
	if (!t->defer_per_call && t->defer_known[api])
		return t->defer_by_api[api];
	sites__subject(t, r->hdr.pid, api, r->caller, r->stack_id, t->defer_per_call, &sub, syms,
		       mods, where);
	m = rules__match(rs, RULE_DEFERRED, &sub);
	if (t->defer_per_call)
		return (uint16_t)(m + 1);
	t->defer_known[api] = 1;
	t->defer_by_api[api] = (uint16_t)(m + 1);
	return t->defer_by_api[api];
}

/* a's free waits as pf says: listed, and a's bytes move from live to pending. */
static int add(struct tracker *t, struct tproc *p, struct alloc *a, const struct pending_free *pf)
{
	if (vec_grow((void **)&p->pend, &p->cap_pend, p->nr_pend, sizeof(*p->pend)))
		return -ENOMEM;
	p->pend[p->nr_pend++] = *pf;
	allocs__set_flag(t, p, a, AF_PENDING);
	return 0;
}

int pending__defer(struct tracker *t, struct tproc *p, struct alloc *a, const struct cat_api *api,
		   const struct gl_call_rec *r, uint16_t rule)
{
	return add(t, p, a,
		   &(struct pending_free){
		       .addr = a->addr,
		       .space = a->space,
		       .ts_ns = r->hdr.ts_ns,
		       .stream = pending__stream_key(api, r->hdr.tid, r->aux),
		       .until = rule ? t->rules->v[rule - 1].until : UNTIL_STREAM_SYNC,
		       .rule = rule,
		   });
}

int pending__until_queue(struct tracker *t, struct tproc *p, struct alloc *a,
			 const struct tqueue *q, const struct gl_call_rec *r)
{
	return add(t, p, a,
		   &(struct pending_free){
		       .addr = a->addr,
		       .space = a->space,
		       .ts_ns = r->hdr.ts_ns,
		       .stream = q->handle,
		       .serial = q->submitted,
		       .until = UNTIL_QUEUE_DONE,
		       .rule = pending__deferred_rule(t, r),
		   });
}

void pending__complete(struct tracker *t, struct tproc *p, enum rule_until by, bool all_streams,
		       uint64_t stream, int device, uint64_t before_ns)
{
	size_t i = 0;

	while (i < p->nr_pend) {
		struct pending_free *pf = &p->pend[i];
		struct alloc *a;

		/* A device sync completes everything; a stream or event sync what waits for
		 * its stream (until=stream-sync) or for exactly that kind of sync. */
		bool kind_ok = by == UNTIL_DEVICE_SYNC ? pf->until != UNTIL_QUEUE_DONE
			       : by == UNTIL_QUEUE_DONE
				   ? pf->until == UNTIL_QUEUE_DONE
				   : pf->until == UNTIL_STREAM_SYNC || pf->until == by;

		if (!kind_ok || pf->ts_ns > before_ns || (!all_streams && pf->stream != stream)) {
			i++;
			continue;
		}
		a = alloc_table__find(&p->allocs, pf->space, pf->addr);
		if (a && device >= -1 && t->sites[tracker__alloc_site(t, a)].device != device) {
			i++;
			continue;
		}
		pending_end(t, p, pf, a);
		if (a && (a->flags & AF_PENDING))
			allocs__release(t, p, a);
		pending_drop(p, i);
	}
}

/* Frees waiting on a queue whose work is now done up to q->done (or on nothing, any more). */
void pending__queue_done(struct tracker *t, struct tproc *p, const struct tqueue *q)
{
	size_t i = 0;

	while (i < p->nr_pend) {
		struct pending_free *pf = &p->pend[i];
		struct alloc *a;

		if (pf->until != UNTIL_QUEUE_DONE ||
		    (q && (pf->stream != q->handle || pf->serial > q->done))) {
			i++;
			continue;
		}
		a = alloc_table__find(&p->allocs, pf->space, pf->addr);
		if (q && a && (a->flags & AF_PENDING)) {
			pending_end(t, p, pf, a);
			allocs__release(t, p, a);
		} else if (a && (a->flags & AF_PENDING)) {
			i++; /* q NULL: only drop entries whose allocation is gone */
			continue;
		}
		pending_drop(p, i);
	}
}

int pending__sync(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r)
{
	uint64_t key, *ev;

	/* What completes, then what pools give back: a sync is where a pool trims its reserve
	 * to its release threshold (pools.h). */
	switch (api->op) {
	case OP_SYNC_STREAM:
		key = pending__stream_key(api, r->hdr.tid, r->aux);
		pending__complete(t, p, UNTIL_STREAM_SYNC, key == 0, key, -2, r->aux2);
		pools__sync(p);
		return 0;
	case OP_SYNC_DEVICE:
		pending__complete(t, p, UNTIL_DEVICE_SYNC, true, 0, threads__device(p, r->hdr.tid),
				  r->aux2);
		pools__sync(p);
		return 0;
	case OP_SYNC_EVENT:
		ev = hmap__get(&p->events, r->aux, 0);
		/* An event never recorded (or recorded before attach) completes nothing. */
		if (ev)
			pending__complete(t, p, UNTIL_EVENT_SYNC, *ev == 0, *ev, -2, r->aux2);
		pools__sync(p);
		return 0;
	case OP_EVENT_RECORD:
		return hmap__put(&p->events, r->addr, 0,
				 pending__stream_key(api, r->hdr.tid, r->aux));
	default:
		return 0;
	}
}

void pending__window_checks(struct tracker *t, struct tproc *p, uint64_t ts_ns)
{
	size_t i;

	if (!t->rules)
		return;
	for (i = 0; i < p->nr_pend; i++) {
		struct pending_free *pf = &p->pend[i];
		const struct rule *ru;
		struct alloc *a;

		if (!pf->rule || pf->late)
			continue;
		ru = &t->rules->v[pf->rule - 1];
		if (!ru->window_ns || ts_ns - pf->ts_ns <= ru->window_ns)
			continue;
		a = alloc_table__find(&p->allocs, pf->space, pf->addr);
		pf->late = true;
		violations__add(p, VIOL_FREE_NEVER_COMPLETED, pf->rule - 1,
				a ? tracker__alloc_site(t, a) : UINT32_MAX, a ? a->size : 0, 1,
				ts_ns);
	}
}
