/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Snapshots (snapshot.c): the records that rebuild what an analysis holds live, so that a
 * capture can start in the middle of a session (gpuleak watch: the live set at the start of
 * the window it keeps, then the window's records) and still be an ordinary capture that any
 * gpuleak report analyses with any rules.
 *
 * The records are the calls that would have made that state, synthesized from the tracker:
 * each process's attach and loss counters, its contexts and the device and context each of
 * its threads is on, its communicators with the memory they own, every live allocation at its
 * site and stack with its lower layers, its async free when one is pending, VMM mappings, and
 * the nested records a thread holds until its outer call returns. They come in two phases:
 * first the memory each process made before its first step, then (once the reader has put the
 * process at the step it was in: snapshot__at) the rest, so that classes by init and by
 * phase= rules come out as they did live. What the records cannot rebuild (WebGPU objects:
 * their sizes are in descriptors) is counted in snapshot_info.skipped_*, and a caller can
 * check the result with snapshot__compare.
 *
 * Above analysis.c: it reads the tracker and the timeline, and steers the timeline of the
 * analysis a snapshot is fed to. Calls nothing above it.
 */
#ifndef GPULEAK_ENGINE_SNAPSHOT_H
#define GPULEAK_ENGINE_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

struct analysis;
struct tracker;

/* Where one process stood when the snapshot was taken. */
struct snapshot_proc {
	pid_t pid;
	int64_t step;	     /* the step it was in (-1: before its first) */
	uint64_t step_ts_ns; /* when that step began */
};

struct snapshot_info {
	uint64_t init_records; /* records of the first phase (all processes) */
	uint64_t records;      /* in all: the window's records follow */
	struct snapshot_proc *procs;
	size_t nr_procs;
	/* Live state the records do not rebuild: bytes and allocations left out. */
	uint64_t skipped_bytes, skipped_count;
	/* Fed to an analysis whose steps come from another source than the recording's: its
	 * processes stay at the steps its own timeline gives them. */
	bool own_steps;
	/* While it is fed (snapshot__at): which phase boundaries were applied. */
	bool stepped, done;
};

/* Each record of a snapshot, in order; a nonzero return stops the snapshot with it. */
typedef int (*snapshot_emit_fn)(void *ctx, const struct gl_hdr *h);

/*
 * The records that rebuild an's live state, each stamped ts_ns, to emit; *out says how many
 * and where the processes stood (free it with snapshot_info__free). Processes that exited or
 * were detached are left out. 0, -ENOMEM, or emit's error.
 */
int snapshot__emit(const struct analysis *an, uint64_t ts_ns, snapshot_emit_fn emit, void *ctx,
		   struct snapshot_info *out);
void snapshot_info__free(struct snapshot_info *si);

/*
 * Feeding a snapshot to an analysis: call with the number of records fed so far, before each
 * record and once after the last. At init_records each process is put at its step; at
 * records the snapshot is over: its allocations become where each process's step began
 * (sampled once, counted as neither allocated nor freed in any step, nor as calls), so the
 * steps that follow are judged on what the window's records do.
 */
void snapshot__at(struct analysis *an, struct snapshot_info *si, uint64_t fed);

/* How far two trackers' live state is apart, compared by site (its key, not its index). */
struct snapshot_diff {
	uint64_t bytes; /* sum over sites and stacks of |live difference| + |pending difference| */
	uint64_t count; /* the same in allocations */
	uint64_t sites; /* site stacks that differ */
	uint64_t comms; /* |difference| in communicators not destroyed, process by process */
};

/* want: the tracker whose state was snapshot; got: one fed the snapshot. 0 or -ENOMEM. */
int snapshot__compare(const struct tracker *want, const struct tracker *got,
		      struct snapshot_diff *out);

#endif
