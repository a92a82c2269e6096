/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What `gpuleak diff` prints of a comparison (diff/diff.h), deciding nothing: a text
 * table per process pair, largest difference first (diff_text.c), and NDJSON records for CI
 * (diff_ndjson.c; docs/gpuleak-diff.schema.json): a diff_process record per pair, then one
 * diff record with the inputs, the counts and the gate.
 */
#ifndef GPULEAK_OUTPUT_DIFF_REPORT_H
#define GPULEAK_OUTPUT_DIFF_REPORT_H

#include <stdio.h>
#include "diff/diff.h"

/* The text: top site rows per process pair (0: all). */
void diff_text__print(FILE *out, const struct diff_result *r, int top);
void diff_ndjson__write(FILE *out, const struct diff_result *r);

/* Words both share. */
/* How a process ended: "exited with status 139 (SIGSEGV)", "still running when the capture
 * ended". */
const char *diff_report__ended(const struct diff_proc *p, char *buf, size_t len);
/* A site pair as a row names it: "[label "logits"] func (module)". */
const char *diff_report__site(const struct diff_site_pair *sp, char *buf, size_t len);

#endif
