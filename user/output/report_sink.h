/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a report is written from and into: the tracker and timeline it reads, the
 * symbolizer that names sites, the text and NDJSON streams, when time began. A session
 * fills one and hands it to report.h's entry points; the writers they call (interval, text,
 * ndjson, summary, the pictures) include this, not report.h: no writer depends on its caller.
 */
#ifndef GPULEAK_OUTPUT_REPORT_SINK_H
#define GPULEAK_OUTPUT_REPORT_SINK_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

struct tracker;
struct timeline;
struct symbolizer;

struct report {
	struct tracker *t;
	struct timeline *tl;
	struct symbolizer *sym;
	FILE *out;	/* text, stdout by default */
	FILE *json;	/* NDJSON or NULL */
	int top;	/* sites listed per table */
	uint64_t t0_ns; /* trace start: times print relative to it */
	bool step_header;
	const char *verdict_extra; /* "key":value members appended to each verdict, or NULL */
	/* Members of one process's verdict only (where its probes sat), or NULL. */
	void (*verdict_more)(void *ctx, pid_t pid, FILE *json);
	void *verdict_more_ctx;
};

/* Seconds since the trace began. */
static inline double report__secs(const struct report *r, uint64_t ts_ns)
{
	return ts_ns > r->t0_ns ? (double)(ts_ns - r->t0_ns) / 1e9 : 0.0;
}

#endif
