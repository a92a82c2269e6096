/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* --svg: a timeline of each process's memory, its leaking sites in red (the format: svg.c). */
#ifndef GPULEAK_OUTPUT_SVG_H
#define GPULEAK_OUTPUT_SVG_H

#include <stdint.h>
#include <stdio.h>

struct report;
struct series;
struct verdict;

/* The document, as of end_ns, from v's verdicts and se's samples. 0 or -errno. */
int svg__write(FILE *f, struct report *r, const struct verdict *v, const struct series *se,
	       uint64_t end_ns);

#endif
