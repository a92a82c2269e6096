/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Time series of the analysis, for pictures drawn at the end (--perfetto, --svg): per process
 * its live, persistent and pending bytes, its live bytes per API family and PyTorch's
 * allocated and reserved bytes, per site its live
 * bytes, and the pending frees as intervals. Sampled from the tracker as records arrive, at
 * most once per resolution of record time, and only when something changed; past a bounded
 * number of points the resolution doubles and every other point goes, so a day-long session
 * costs what an hour costs. It reads records only, so live and offline series are the same.
 */
#ifndef GPULEAK_ENGINE_SERIES_H
#define GPULEAK_ENGINE_SERIES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

struct tracker;
struct tproc;

struct series_point {
	uint64_t ts_ns;
	uint64_t live, persistent, pending; /* bytes, the process's totals */
	uint64_t fam[GL_FAM_MAX];	    /* live bytes per enum gl_family */
	/* PyTorch's caching allocator over its devices (tproc.blocks), 0 without one */
	uint64_t torch_allocated, torch_reserved;
};

struct series_proc {
	pid_t pid;
	uint32_t gen; /* of its image (struct tproc's gen): an exec'd program has its own */
	struct series_point *v;
	size_t n, cap;
};

/* A site's live bytes where they changed. */
struct site_point {
	uint64_t ts_ns, bytes;
};

struct site_series {
	struct site_point *v;
	size_t n, cap;
	uint64_t peak;
};

/* One pending free, from its issue to its end (end_ns 0: still pending at the end). */
struct pending_slice {
	pid_t pid;
	uint32_t gen;
	uint32_t site;
	uint64_t bytes;
	uint64_t begin_ns, end_ns;
};

struct series {
	uint64_t res_ns; /* at most one sample per this much record time */
	uint64_t next_ns;
	struct series_proc *procs;
	size_t nr_procs, cap_procs;
	struct site_series *sites; /* by tracker site index */
	size_t nr_sites;
	struct pending_slice *slices;
	size_t nr_slices, cap_slices;
	uint64_t slices_dropped; /* past the bound: counted, not drawn */
};

int series__new(struct series **out);
void series__free(struct series *se);
/* After the tracker applied a record of time ts_ns. 0 or -ENOMEM. */
int series__on_record(struct series *se, const struct tracker *t, uint64_t ts_ns);
/* A last sample at end_ns, and the frees still pending then as open slices. */
int series__finish(struct series *se, const struct tracker *t, uint64_t end_ns);
/* The tracker's pending_done_fn (ctx: the series). */
void series__pending_done(void *ctx, const struct tproc *p, uint32_t site, uint64_t bytes,
			  uint64_t begin_ns, uint64_t end_ns);
const struct series_proc *series__proc(const struct series *se, const struct tproc *p);

#endif
