/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The analysis: everything that turns records into verdicts (tracker, rules, timeline), fed
 * through one function by both the live session and offline replay of a capture, so the two
 * give the same answer for the same records.
 */
#ifndef GPULEAK_ANALYSIS_H
#define GPULEAK_ANALYSIS_H

#include "gpuleak.h"
#include "report.h"
#include "timeline.h"
#include "tracker.h"

struct rules;

/*
 * Settings of the analysis itself: the same options, parsed by the same code, configure a
 * live session and the report of a capture, so a capture can be re-analysed with other
 * rules, steps or gate limits than it was recorded with.
 */
struct analysis_opts {
	const struct rules *rules;	/* user rules + built-ins */
	struct timeline_opts steps;
	bool steps_given;		/* --step: print a line per step */
	/* sym: markers (live: FILE is a path or the basename of a mapped object) */
	const char *step_file, *step_sym;
	const char *req_file, *req_begin, *req_end;
	struct gate gate;		/* --fail-on-leak and its limits; .failed unused */
};

struct analysis {
	struct tracker *t;
	struct timeline *tl;
};

int analysis__new(const struct analysis_opts *o, frames_fn frames, void *frames_ctx,
		  struct analysis **out);
void analysis__free(struct analysis *a);
/* One record, in stream order. */
int analysis__feed(struct analysis *a, const struct gl_hdr *h);
/* A record that will be fed soon: start loading what it touches (tracker__prefetch). */
void analysis__prefetch(const struct analysis *a, const struct gl_hdr *h);

#endif
