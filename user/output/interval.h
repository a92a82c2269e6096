/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a session prints while it runs: every --interval a compact table per process (live
 * memory by API and device, the largest leaking sites), and with --step one line per closed
 * step with a sparkline of live bytes. The NDJSON twin of a table is ndjson__interval's.
 */
#ifndef GPULEAK_OUTPUT_INTERVAL_H
#define GPULEAK_OUTPUT_INTERVAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine/query.h"

struct report;
struct step_stat;

#define INTERVAL_ROWS 32

/* One process as an interval shows it. */
struct interval_view {
	const struct tproc *p;
	struct api_sum rows[INTERVAL_ROWS];
	size_t nr_rows;
	struct site_list leaks; /* as they stand, largest first: tables show r->top of them */
};

/* Whether p has a table at now_ns: reported, and not gone for a second or more. */
bool interval__shows(const struct tproc *p, uint64_t now_ns);
/* p's view as it stands; free iv->leaks.v after. 0 or -ENOMEM (iv->leaks then empty). */
int interval__view(const struct tracker *t, const struct tproc *p, struct interval_view *iv);
void interval__table(struct report *r, const struct interval_view *iv, uint64_t now_ns);
void interval__step_line(struct report *r, pid_t pid, const struct step_stat *st);

#endif
