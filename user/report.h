/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Reports: the periodic compact table, the final report of what is still live, and their
 * NDJSON twins. Reads the tracker, names sites through the symbolizer, decides nothing.
 */
#ifndef GPULEAK_REPORT_H
#define GPULEAK_REPORT_H

#include <stdint.h>
#include <stdio.h>

struct tracker;
struct symbolizer;

struct report {
	struct tracker *t;
	struct symbolizer *sym;
	FILE *out;		/* text, stdout by default */
	FILE *json;		/* NDJSON or NULL */
	int top;		/* sites listed per table */
	uint64_t t0_ns;		/* trace start: times print relative to it */
	const char *verdict_extra;	/* "key":value members appended to each verdict, or NULL */
};

/* One interval: a compact table per process with activity. */
void report__interval(struct report *r, uint64_t now_ns);
/* The final report and the verdict records, one per traced process. */
void report__final(struct report *r, uint64_t now_ns);

/* "1.50 MiB": binary units, 3 significant digits. */
const char *fmt_bytes(uint64_t bytes, char *buf, size_t len);

#endif
