/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The timeline: cuts the record stream into steps (fixed time slices, synchronizations,
 * calls of a named function or NVTX ranges), samples each call site's live bytes at every
 * step boundary, and finds growth leaks: sites whose live bytes keep growing step after
 * step, with a fitted slope, its goodness of fit, and a projection of when the device runs
 * out. A process that ended is judged up to its latest allocation: what it released after
 * it is its shutdown, not a step (timeline.c, struct cut). Like the tracker it only reads
 * records, so it runs the same live and offline.
 */
#ifndef GPULEAK_ENGINE_TIMELINE_H
#define GPULEAK_ENGINE_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

struct tracker;
struct tproc;

enum step_source {
	STEP_INTERVAL = 0, /* interval:DURATION (the default) */
	STEP_SYNC,	   /* every stream/device/event synchronization, or queue submit */
	STEP_MARKER,	   /* sym:FILE:SYMBOL: each call of a function */
	STEP_NVTX,	   /* nvtx:NAME: each NVTX range (push/start) of that name */
};

struct timeline_opts {
	enum step_source source;
	uint64_t interval_ns;
	char nvtx_name[GL_LABEL_MAX + 1];
	bool requests;		  /* request markers given (--request) */
	int64_t warmup_steps;	  /* W: steps ignored before growth counts */
	int64_t min_growth_steps; /* K: steps a site must grow in to be a growth leak */
	uint64_t device_mem;	  /* --device-mem, 0: from NVML records or unknown */
};

/* Memory sites a step record lists by name: the ones whose memory changed most. */
#define STEP_TOP_SITES 8

/* One memory site in one closed step, from the tracker's step_change. */
struct step_site_stat {
	uint32_t site;	    /* tracker site index */
	uint64_t live;	    /* bytes at the end of the step */
	uint64_t allocated; /* bytes allocated there during the step */
	uint64_t freed;	    /* bytes released there during the step */
};

/*
 * The memory sites that changed in a step: the STEP_TOP_SITES largest by |allocated -
 * freed| (then by allocated + freed), and the sum of the others, so the sites and the rest
 * add up to the step's own allocated and freed bytes.
 */
struct step_site_summary {
	struct step_site_stat top[STEP_TOP_SITES];
	size_t n;
	uint64_t rest; /* sites beyond the top */
	uint64_t rest_allocated, rest_freed;
};

/* One closed step of one process. */
struct step_stat {
	int64_t step;
	uint64_t t_start_ns, t_end_ns;
	uint64_t live, persistent, pending, suspect; /* bytes at the end of the step */
	uint64_t allocated, freed;		     /* bytes during the step */
	/* PyTorch's caching allocator at the end of the step, over devices (tproc.blocks) */
	bool torch;
	uint64_t torch_allocated, torch_reserved;
	uint64_t allocs, frees;
	uint64_t requests; /* --request: requests completed during the step */
	uint64_t inflight; /* and in flight at its end */
	/* Its sites, only while the step callback runs (NULL in timeline__steps). */
	const struct step_site_summary *sites;
};

/* A growth leak found at one site. */
struct growth {
	uint32_t site;
	int64_t first_step;   /* where the growth began */
	int64_t growth_steps; /* steps in which its live bytes grew */
	/* live bytes where the growth began and where its steps end (for a process that shut
	 * down, at its latest allocation) */
	uint64_t start_bytes, end_bytes;
	double slope_per_step; /* bytes/step, least squares from first_step */
	double slope_per_s;    /* bytes/s, against step end times */
	double per_request;    /* bytes per request completed while it grew (--request), or 0 */
	double r2;	       /* goodness of that fit */
};

struct projection {
	bool known;  /* a device size is known and memory grows */
	bool webgpu; /* device is a WebGPU device: wgpu#(device + 1) */
	int16_t device;
	uint64_t capacity;    /* bytes */
	uint64_t used;	      /* bytes now: traced live + what NVML saw before attach */
	uint64_t baseline;    /* bytes NVML saw this process hold that the trace cannot explain */
	uint64_t reserve;     /* bytes freed into memory pools and held by them (in used) */
	double rate_per_step; /* growth of that device's leaking sites */
	double steps_to_oom;
	double seconds_to_oom;
};

typedef void (*step_fn)(void *ctx, pid_t pid, const struct step_stat *st);

struct timeline;

int timeline__new(const struct timeline_opts *o, struct tracker *t, struct timeline **out);
void timeline__free(struct timeline *tl);
/* Called for every step a process closes (live step lines, NDJSON step records). */
void timeline__on_step(struct timeline *tl, step_fn fn, void *ctx);
/* Feed one record, after the tracker applied it. */
int timeline__on_record(struct timeline *tl, const struct gl_hdr *h);
/* Close the step in progress of pid (session end), so its last step counts. */
void timeline__finish(struct timeline *tl, pid_t pid, uint64_t ts_ns);

/*
 * The functions below are about one process, tp (one image of its pid: an exec'd program
 * has a timeline of its own).
 */
/* Steps closed so far for tp, the most recent ones kept (a bounded number). */
const struct step_stat *timeline__steps(const struct timeline *tl, const struct tproc *tp,
					size_t *n);
/* How many steps tp closed in all, those no longer kept included. */
size_t timeline__nr_steps(const struct timeline *tl, const struct tproc *tp);
/* Requests completed in tp's closed steps, those no longer kept included. */
uint64_t timeline__nr_requests(const struct timeline *tl, const struct tproc *tp);
/* Growth leaks of tp, largest slope first. Caller frees *out. */
int timeline__growth(struct timeline *tl, const struct tproc *tp, struct growth **out, size_t *n);
/* Time to OOM of tp's most pressed device, given its growth leaks. */
void timeline__project(struct timeline *tl, const struct tproc *tp, const struct growth *g,
		       size_t n, struct projection *out);
/* Live bytes of a site at the end of each closed step from `from` (dense; caller frees). */
int timeline__site_series(struct timeline *tl, const struct tproc *tp, uint32_t site, int64_t from,
			  uint64_t **vals, size_t *n);
const struct timeline_opts *timeline__opts(const struct timeline *tl);
/* Records seen that closed a step (syncs, marker calls, NVTX ranges; not time slices). */
uint64_t timeline__boundaries(const struct timeline *tl);

/*
 * What tp's NVML record for device said (struct gl_devmem_rec, hdr not set), and the traced
 * live bytes when it came; false when there was none.
 */
bool timeline__devmem(const struct timeline *tl, const struct tproc *tp, int device,
		      struct gl_devmem_rec *out, uint64_t *traced_then);
/* The step tp is in (-1: before its first) and when it began; false when tp has none. */
bool timeline__step_now(const struct timeline *tl, const struct tproc *tp, int64_t *step,
			uint64_t *start_ns);
/*
 * These two are about pid's newest image, the one records are being fed for (as
 * timeline__on_record is).
 *
 * A snapshot of pid is being fed (engine/snapshot.h): what follows was made in step `step`,
 * begun at start_ns.
 */
void timeline__snapshot_step(struct timeline *tl, pid_t pid, int64_t step, uint64_t start_ns);
/*
 * The snapshot of pid is in: step `step` (begun at start_ns) goes on from here. Every site's
 * live bytes are sampled as of before it, as the value its growth starts from (not growth in
 * itself), and the step's numbers start from zero.
 */
void timeline__snapshot_done(struct timeline *tl, pid_t pid, int64_t step, uint64_t start_ns);

#endif
