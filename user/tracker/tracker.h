/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The tracker: the live allocation graph of every traced process (tracker/model.h), rebuilt
 * from records. It is fed the same record stream live (ring buffer) and offline (capture
 * file), and is the only place that decides what a record means; it never reads /proc or
 * the clock. One user allocation is counted once, at the outermost traced call; the calls it
 * made underneath are its layers.
 *
 * This header is what the rest of gpuleak reads. Behind it, one module per thing the tracker
 * keeps, from the bottom up; each calls only those below it, and includes their headers
 * alone (model.h holds the types they share and is no module):
 *   alloc_table.c   a process's live allocations (tproc.allocs)
 *   threads.c       a process's threads (tproc.threads): device, context, nesting state
 *   sites.c         sites and site stacks: interning, and the class rules put them in
 *   violations.c    rule violations (tproc.viols): once=, max=, release=session-end
 *   regions.c       a process's device address ranges (tproc.regions): which allocation
 *                   holds an address
 *   pools.c         stream-ordered and graph memory pools (tproc.pools): in use, reserves,
 *                   release thresholds, which allocation came from which pool
 *   allocs.c        the sums: what an allocation entering or leaving the table does to the
 *                   live and pending bytes of its site stack, site, process, class, rule,
 *                   step and device (its peak), to a caching allocator's (tproc.blocks),
 *                   and the list of what left since the process's latest allocation
 *   blocks.c        a caching allocator's blocks (PyTorch's tensors) inside its segments
 *   pending.c       frees that complete later (tproc.pend): deferred rules, streams,
 *                   events, queues, windows; memory that goes while its free is pending
 *   ipc.c           IPC handles made and opened (tracker.ipc_exports, tproc.ipc): opens and
 *                   closes per mapping, the exporter's bytes; multicast bindings
 *   gpu_objects.c   CUDA contexts and devices, NCCL communicators, VMM mappings
 *   graphs.c        stream capture, graphs and execs with memory nodes (tproc.graphs): the
 *                   memory a launched exec holds, what its launches allocate and free
 *   wgpu_objects.c  refcounted WebGPU objects, their owners, labels, queues and watches
 *   mem_calls.c     allocation and free calls: device, owner, a reused address, and the
 *                   free policy (now, deferred, a VMM handle still mapped, a double free)
 *   call_tree.c     a call's operation, applied at once or, nested, when the outermost
 *                   call returns: layers, communicator inits, NCCL groups, adopted threads
 *   tracker.c       the tracker and its processes: the way in of every record
 */
#ifndef GPULEAK_TRACKER_TRACKER_H
#define GPULEAK_TRACKER_TRACKER_H

#include "tracker/model.h"

int tracker__new(struct tracker **out);
/* Classify allocations and deferred frees with these rules (NULL: built-in behaviour). */
void tracker__set_rules(struct tracker *t, const struct rules *rules, frames_fn frames, void *ctx);
/* Name the sites of calls with Python frames by the frame fn says (NULL: call sites). */
void tracker__set_site_fn(struct tracker *t, site_fn fn, void *ctx);
/* Tell fn about every pending free that ends (the outputs draw them as slices). */
void tracker__on_pending_done(struct tracker *t, pending_done_fn fn, void *ctx);
/* Tell fn about every change of memory (struct mem_event: the allocation trace). */
void tracker__on_mem_event(struct tracker *t, mem_event_fn fn, void *ctx);
/*
 * Whether allocations made before a process's first step that no rule classifies are
 * retained by init rather than leaks (set before the first record).
 */
void tracker__set_init_retained(struct tracker *t, bool on);
/* pid entered step `step` at ts_ns (the timeline calls this at each boundary): the memory
 * sites changed in the step that ended (step_changes) are forgotten. */
void tracker__set_step(struct tracker *t, pid_t pid, int64_t step, uint64_t ts_ns);
void tracker__free(struct tracker *t);
/*
 * What the processes pids did so far is no longer counted as its calls (allocations, frees, bytes, calls,
 * layers, here and at its sites): its records so far rebuilt a state (engine/snapshot.h).
 * Live bytes, classes and violations stay.
 */
void tracker__reset_counts(struct tracker *t, const pid_t *pids, size_t n);
/* Apply one record. Returns 0, or -EINVAL for a record it cannot decode (counted). */
int tracker__apply(struct tracker *t, const struct gl_hdr *h);
/*
 * Start loading the table slot a record will touch, a few records before it is applied: with
 * a million allocations live each lookup is a cache miss, and misses of consecutive records
 * overlap only when asked for early. A hint: it changes nothing.
 */
void tracker__prefetch(const struct tracker *t, const struct gl_hdr *h);
struct tproc *tracker__proc(struct tracker *t, pid_t pid);
/* The process of pid whose image is gen (struct tproc's gen), or NULL. */
struct tproc *tracker__image(const struct tracker *t, pid_t pid, uint32_t gen);
/* The process (image) site s is one of, or NULL. */
struct tproc *tracker__site_proc(const struct tracker *t, const struct site *s);

/* Records lost or calls untracked in BPF for this process. */
uint64_t tproc__dropped(const struct tproc *p);

/*
 * How far a process's live bytes can be from the truth because of what was lost: the true
 * value lies in [live_bytes - live_overstated_max, live_bytes + live_understated_max]
 * (upper end open when !under_known).
 */
struct uncertainty {
	bool approximate;		/* anything was lost or could not be read */
	bool under_known;		/* every missed allocation's size is known */
	uint64_t allocs_missed;		/* successful allocations never seen */
	uint64_t alloc_bytes_missed;	/* their bytes (outermost calls, sized ones) */
	uint64_t allocs_missed_unsized; /* of those, size unknown (return without entry) */
	uint64_t frees_missed;		/* frees never seen: their memory looks live */
	uint64_t live_overstated_max;	/* the frees_missed largest live allocations */
	uint64_t live_understated_max;	/* alloc_bytes_missed */
};

/* The error bounds of p's live bytes. 0 or -ENOMEM. */
int tproc__uncertainty(const struct tracker *t, const struct tproc *p, struct uncertainty *u);

/*
 * What p released since its latest allocation (tproc.shut: its shutdown, once it ended),
 * summed per site and per site stack of t (t->nr_sites, t->nr_sstacks entries, 0 where
 * nothing went).
 */
struct released {
	uint64_t *site_bytes, *site_count;
	uint64_t *ss_bytes, *ss_count;
};

/* 0 or -ENOMEM (out zeroed). */
int tproc__released(const struct tracker *t, const struct tproc *p, struct released *out);
void released__free(struct released *r);

#endif
