/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reports: the periodic compact table, the final report of what is still live, and their
 * NDJSON twins. Reads the tracker, names sites through the symbolizer, decides nothing.
 */
#ifndef GPULEAK_REPORT_H
#define GPULEAK_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include <stdbool.h>
#include <sys/types.h>

struct tracker;
struct timeline;
struct symbolizer;
struct step_stat;

/* The CI gate: what --fail-on-leak fails on; `failed` is set by report__final. */
struct gate {
	bool on;
	uint64_t max_growth; /* bytes/step a growing site may reach */
	bool has_max_live;
	uint64_t max_live_at_exit; /* leaked bytes allowed at the end */
	bool failed;
};

struct report {
	struct tracker *t;
	struct timeline *tl;
	struct symbolizer *sym;
	FILE *out;	/* text, stdout by default */
	FILE *json;	/* NDJSON or NULL */
	int top;	/* sites listed per table */
	uint64_t t0_ns; /* trace start: times print relative to it */
	struct gate gate;
	bool step_header;
	const char *verdict_extra; /* "key":value members appended to each verdict, or NULL */
	/* Members of one process's verdict only (where its probes sat), or NULL. */
	void (*verdict_more)(void *ctx, pid_t pid, FILE *json);
	void *verdict_more_ctx;
};

/* One interval: a compact table per process with activity. */
void report__interval(struct report *r, uint64_t now_ns);
/* A closed step: its NDJSON record. */
void report__step(struct report *r, pid_t pid, const struct step_stat *st);
/* A closed step: one terminal line with a sparkline of live bytes. */
void report__step_line(struct report *r, pid_t pid, const struct step_stat *st);
/*
 * The final report and the verdict records, one per traced process; with several processes,
 * a summary across them (rank skew) and its NDJSON record.
 */
void report__final(struct report *r, uint64_t now_ns);
/* The fleet endpoint's exposition: OpenMetrics (om) or Prometheus text 0.0.4. */
void report__metrics(struct report *r, FILE *out, bool om);

struct site;
/* Whether a site's live memory is a leak at the end (not persistent or ignored by rule). */
bool report__site_leaks(const struct tracker *t, const struct site *s);
/* A site's name as the tables print it. */
const char *report__site_name(struct report *r, const struct site *s);

#endif
