/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Frees that complete later (pending.c): what defers them, what completes them, and what
 * becomes of them when their memory goes otherwise.
 */
#ifndef GPULEAK_TRACKER_PENDING_H
#define GPULEAK_TRACKER_PENDING_H

#include "tracker/model.h"
#include "tracker/rules.h"
#include "probe/catalog.h"

/*
 * A stream as the tracker names it: the per-thread default stream (cudaStreamPerThread, or
 * 0 in a _ptsz call) one per thread, the legacy stream 0, any other its handle.
 */
uint64_t pending__stream_key(const struct cat_api *a, uint32_t tid, uint64_t stream);
/* The deferred rule (index + 1) for a free, or 0. */
uint16_t pending__deferred_rule(struct tracker *t, const struct gl_call_rec *r);
/* A free of a by r that completes later (by rule, or an async free without rules). */
int pending__defer(struct tracker *t, struct tproc *p, struct alloc *a, const struct cat_api *api,
		   const struct gl_call_rec *r, uint16_t rule);
/* WebGPU: a's memory goes once queue q finishes what was submitted to it so far. */
int pending__until_queue(struct tracker *t, struct tproc *p, struct alloc *a,
			 const struct tqueue *q, const struct gl_call_rec *r);
/*
 * a goes now, whatever its state (its address handed out again, its owner torn down): a
 * pending free of it is over without completing.
 */
void pending__release(struct tracker *t, struct tproc *p, struct alloc *a);
/*
 * Release every allocation of p that match selects, pending or not; used by context,
 * device, owner and communicator teardown.
 */
void pending__release_where(struct tracker *t, struct tproc *p,
			    bool (*match)(const struct tracker *t, const struct alloc *a,
					  void *ctx),
			    void *ctx);
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

#endif
