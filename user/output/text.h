/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The final text report of one process, for people: what is still live by site and why,
 * the allocation graph, rule violations, growth and time to OOM, what the CI gate fails on
 * and how far the numbers may be off. It prints a verdict (engine/verdict.h) and decides
 * nothing.
 */
#ifndef GPULEAK_OUTPUT_TEXT_H
#define GPULEAK_OUTPUT_TEXT_H

#include <stdint.h>

struct report;
struct gate;
struct proc_verdict;

/* pv's report on r->out as of now_ns, "GATE:" lines when gate is on. */
void text__proc(struct report *r, const struct gate *gate, const struct proc_verdict *pv,
		uint64_t now_ns);

#endif
