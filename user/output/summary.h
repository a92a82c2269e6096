/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The text summary across processes, when a session traced more than one: a row per
 * process (live, leaked, growth) and their total, then rank skew, as the verdict judged it.
 */
#ifndef GPULEAK_OUTPUT_SUMMARY_H
#define GPULEAK_OUTPUT_SUMMARY_H

struct report;
struct verdict;

/* v's summary on r->out (v has two or more reported processes). */
void summary__print(struct report *r, const struct verdict *v);

#endif
