/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The flight recorder (gpuleak watch): the most recent records in bounded memory, and a
 * capture of them written on demand that is an ordinary capture.
 *
 * Records go into a ring of chunks, each a RECORDS payload of the capture codec (a few bytes
 * a record, capture/codec.h), closed at a size or a second of record time. When the ring is
 * over its bounds (bytes of payload, and optionally record time) its oldest chunk leaves: its
 * records are fed to a second, lagging analysis, whose state is therefore always the state at
 * the start of the window the ring holds. A capture is then that state as records (a snapshot,
 * engine/snapshot.h), the ring's chunks as they are, a TRIGGER block saying why and where the
 * snapshot ends, and the names of every site and stack: `gpuleak report` rebuilds the live
 * set at the window's start from the snapshot and replays the window on it, so it ends with
 * the live set the live analysis had at the trigger.
 *
 * Costs: the ring's bytes (ring_bytes at most, payloads and the chunk being built), the
 * lagging analysis (the live set once more), one encoder and one decoder (~3 MiB); at a
 * capture, with verify, a third analysis fed the snapshot to check it, freed after.
 */
#ifndef GPULEAK_LIVE_FLIGHT_H
#define GPULEAK_LIVE_FLIGHT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "capture/capture.h"
#include "engine/analysis.h"

struct flight;
struct modules;
struct proc_maps;
struct symbolizer;
struct tracker;

struct flight_opts {
	uint64_t ring_bytes; /* encoded records kept, at most */
	uint64_t ring_ns;    /* and no older than this much record time; 0: no time bound */
	/* The lagging analysis: the session's own options (rules, steps), so that its state is
	 * the live analysis's of the window's start. */
	const struct analysis_opts *a;
	frames_fn frames;
	void *frames_ctx;
	bool verify; /* feed each snapshot back and compare it with what it is of */
	bool store;  /* never compress (tests) */
};

/* 0 or -ENOMEM. */
int flight__new(const struct flight_opts *o, struct flight **out);
/* Accepts NULL. */
void flight__free(struct flight *f);
/* One record, in stream order (after the live analysis took it). 0, or -ENOMEM. */
int flight__record(struct flight *f, const struct gl_hdr *h);
/* A traced process's command line and start; kept until it has exited before the window. */
int flight__process(struct flight *f, const struct capture_proc *p);
/* Its executable mappings (the latest snapshot kept), build-ids from mods (may be NULL). */
int flight__maps(struct flight *f, const struct proc_maps *m, struct modules *mods);

struct flight_stats {
	uint64_t ring_bytes;  /* payload bytes held, the chunk being built included */
	uint64_t peak_bytes;  /* the most ever held */
	uint64_t records;     /* records held */
	uint32_t chunks;      /* closed chunks held */
	uint64_t first_ts_ns; /* the window: first record held */
	uint64_t last_ts_ns;  /* last record held */
	uint64_t evicted;     /* records that left the ring into the lagging analysis */
};
void flight__stats(const struct flight *f, struct flight_stats *st);

/* What a capture is written with besides the ring. */
struct flight_write {
	/* the cause, pid, call; the window's part is filled in (its procs only while writing) */
	struct capture_trigger *tr;
	const struct tracker *live; /* the live analysis: its sites' names, each process's live
				     * bytes at the trigger */
	struct symbolizer *sym;	    /* names of sites and stack frames */
};

/*
 * Write a capture of the window at path (lib/outfile: 0600, never through a link, written
 * beside it and put there whole). 0, or -errno with why (nothing is left at path then);
 * *st says what was written.
 */
int flight__write(struct flight *f, const char *path, struct flight_write *w,
		  struct capture_stats *st, char *why, size_t whylen);

#endif
