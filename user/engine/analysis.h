/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The analysis: everything that turns records into verdicts (tracker, rules, timeline), fed
 * through one function by both the live session and offline replay of a capture, so the two
 * give the same answer for the same records.
 */
#ifndef GPULEAK_ENGINE_ANALYSIS_H
#define GPULEAK_ENGINE_ANALYSIS_H

#include "gpuleak.h"
#include "engine/timeline.h"
#include "tracker/tracker.h"
#include "engine/verdict.h"

struct rules;

#define ANALYSIS_SITE_SKIP_MAX 16

/*
 * Files written at the end of a session or of a report (--folded, --folded-growth,
 * --folded-peak, --perfetto, --svg, --memory-viz).
 */
struct output_opts {
	const char *folded_path;
	const char *folded_growth_path;
	const char *folded_peak_path;
	const char *perfetto_path;
	const char *svg_path;
	const char *memviz_path; /* PyTorch's memory snapshot (output/memviz.h) */
};

/*
 * Settings of the analysis itself: the same options, parsed by the same code, configure a
 * live session and the report of a capture, so a capture can be re-analysed with other
 * rules, steps or gate limits than it was recorded with.
 */
struct analysis_opts {
	const struct rules *rules; /* user rules + built-ins */
	struct timeline_opts steps;
	bool steps_given; /* --step: print a line per step */
	/*
	 * sym: and usdt: markers (live: FILE is a path or the basename of a mapped object); a
	 * usdt: one names its provider (NULL: a function) and the probe in *_sym.
	 */
	const char *step_file, *step_provider, *step_sym;
	const char *req_file, *req_provider, *req_begin, *req_end;
	const char *end_file, *end_provider, *end_sym; /* --end sym:FILE:SYMBOL */
	struct gate gate;			       /* --fail-on-leak and its limits */
	struct output_opts out;
	/* --site-skip: objects and Python files whose frames never name a site */
	const char *site_skip[ANALYSIS_SITE_SKIP_MAX];
	size_t nr_site_skip;
};

struct series;
struct memtrace;

struct analysis {
	struct tracker *t;
	struct timeline *tl;
	struct series *se;   /* what --perfetto and --svg draw over time: NULL when neither */
	struct memtrace *mt; /* the allocation trace of --memory-viz, NULL without it */
	struct gate gate;
	pid_t *ended; /* processes past their end marker: nothing more of them */
	size_t nr_ended, cap_ended;
};

/* 0 or -ENOMEM. The pictures' files are output/pictures.h's to create. */
int analysis__new(const struct analysis_opts *o, frames_fn frames, void *frames_ctx,
		  struct analysis **out);
void analysis__free(struct analysis *a);
/*
 * One record, in stream order. A process's end marker (--end) ends its session there, as a
 * detach would: the records of it that follow are not taken.
 */
int analysis__feed(struct analysis *a, const struct gl_hdr *h);
/* Whether pid's session ended at its end marker. */
bool analysis__ended(const struct analysis *a, pid_t pid);
/* The verdict on every process as the analysis stands, by its gate. 0 or -ENOMEM. */
int analysis__verdict(const struct analysis *a, struct verdict **out);
/* A record that will be fed soon: start loading what it touches (tracker__prefetch). */
void analysis__prefetch(const struct analysis *a, const struct gl_hdr *h);

#endif
