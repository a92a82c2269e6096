/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The analysis: everything that turns records into verdicts (tracker, rules, timeline), fed
 * through one function by both the live session and offline replay of a capture, so the two
 * give the same answer for the same records.
 */
#ifndef GPULEAK_ANALYSIS_H
#define GPULEAK_ANALYSIS_H

#include "gpuleak.h"
#include "timeline.h"
#include "tracker.h"

struct rules;

struct analysis {
	struct tracker *t;
	struct timeline *tl;
};

int analysis__new(const struct timeline_opts *o, const struct rules *rules, frames_fn frames,
		  void *frames_ctx, struct analysis **out);
void analysis__free(struct analysis *a);
/* One record, in stream order. */
int analysis__feed(struct analysis *a, const struct gl_hdr *h);

#endif
