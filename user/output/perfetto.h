/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* --perfetto: Chrome trace-event JSON for ui.perfetto.dev (the events: perfetto.c). */
#ifndef GPULEAK_OUTPUT_PERFETTO_H
#define GPULEAK_OUTPUT_PERFETTO_H

#include <stdint.h>
#include <stdio.h>

struct report;
struct series;
struct verdict;

/* The trace, as of end_ns, from v's verdicts and se's samples. 0 or -errno. */
int perfetto__write(FILE *f, struct report *r, const struct verdict *v, const struct series *se,
		    uint64_t end_ns);

#endif
