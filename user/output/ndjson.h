/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The NDJSON records, one JSON object a line on r->json (--json), as
 * docs/gpuleak.schema.json describes them: "interval" (an interval table's twin), "step"
 * (a closed step), "verdict" (a process at the end) and "summary" (across processes).
 * They say what the tracker holds and the verdict decided (engine/verdict.h), nothing more.
 */
#ifndef GPULEAK_OUTPUT_NDJSON_H
#define GPULEAK_OUTPUT_NDJSON_H

#include <stdint.h>
#include <sys/types.h>

struct report;
struct interval_view;
struct step_stat;
struct verdict;
struct proc_verdict;

void ndjson__interval(struct report *r, const struct interval_view *iv, uint64_t now_ns);
void ndjson__step(struct report *r, pid_t pid, const struct step_stat *st);
/* pv's verdict record as of now_ns; v gives the gate it was judged by. */
void ndjson__verdict(struct report *r, const struct verdict *v, const struct proc_verdict *pv,
		     uint64_t now_ns);
/* The summary across v's reported processes (there are two or more). */
void ndjson__summary(struct report *r, const struct verdict *v);

#endif
