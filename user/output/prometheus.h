/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The fleet endpoint's exposition (--metrics): a verdict as metric families, in the
 * OpenMetrics text format or Prometheus text 0.0.4. Every family is a row of one table
 * (prometheus.c: families[]): its name, type, help and what its samples read.
 */
#ifndef GPULEAK_OUTPUT_PROMETHEUS_H
#define GPULEAK_OUTPUT_PROMETHEUS_H

#include <stdbool.h>
#include <stdio.h>

struct tracker;
struct verdict;

/* v, judged from t, on out: OpenMetrics when om. 0, or -ENOMEM with nothing written. */
int prometheus__write(FILE *out, const struct tracker *t, const struct verdict *v, bool om);

#endif
