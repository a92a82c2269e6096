/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The report: what a session (live, or the replay of a capture) prints and when. Between
 * verdicts, interval tables and step lines; at the end, the final report of each process
 * and its NDJSON verdict record, and a summary across processes; on request, the metrics
 * exposition. Each is written by its own module (interval.c, text.c, ndjson.c, summary.c,
 * prometheus.c) from the tracker and a verdict (engine/verdict.h): the report decides
 * nothing.
 */
#ifndef GPULEAK_OUTPUT_REPORT_H
#define GPULEAK_OUTPUT_REPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "output/report_sink.h"

struct step_stat;
struct verdict;

/* One interval: a compact table per process with activity. */
void report__interval(struct report *r, uint64_t now_ns);
/* A closed step: its NDJSON record. */
void report__step(struct report *r, pid_t pid, const struct step_stat *st);
/* A closed step: one terminal line with a sparkline of live bytes. */
void report__step_line(struct report *r, pid_t pid, const struct step_stat *st);
/*
 * The final report and the verdict records of v (engine/verdict.h), one per reported
 * process, as of now_ns; with several processes, a summary across them (rank skew) and its
 * NDJSON record.
 */
void report__final(struct report *r, const struct verdict *v, uint64_t now_ns);
/* The fleet endpoint's exposition of the verdict as it stands: OpenMetrics (om) or
 * Prometheus text 0.0.4. */
void report__metrics(struct report *r, FILE *out, bool om);

#endif
