/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pictures a session or a report writes at its end: --folded (live bytes by stack for
 * flamegraph.pl and speedscope), --perfetto (Chrome trace-event JSON for ui.perfetto.dev)
 * and --svg (a timeline). The files are created when the analysis is set up, so a path that
 * cannot be written stops gpuleak before it attaches anything; they are filled at the end
 * from the same analysis the text report reads.
 */
#ifndef GPULEAK_OUTPUTS_H
#define GPULEAK_OUTPUTS_H

#include <stdint.h>
#include <stdio.h>
#include "gpuleak.h"

struct output_opts;
struct report;
struct series;
struct tracker;

struct outputs;

/*
 * Create the files o names (mode 0600, like --json: they name code paths of the target).
 * *out is NULL when o names none. 0 or -errno, the failing file named on stderr.
 */
int outputs__open(const struct output_opts *o, struct outputs **out);
void outputs__free(struct outputs *out);
/* Start sampling what the pictures over time need; call before the first record. */
int outputs__attach(struct outputs *out, struct tracker *t);
/* After the analysis applied a record. */
int outputs__on_record(struct outputs *out, const struct tracker *t, const struct gl_hdr *h);
/* Write every file, as of end_ns, naming sites as report r does. 0 or the first -errno
 * (said on stderr, naming the file). */
int outputs__write(struct outputs *out, struct report *r, uint64_t end_ns);

/* The writers (outputs.c, perfetto.c, svg.c). */
int perfetto__write(FILE *f, struct report *r, const struct series *se, uint64_t end_ns);
int svg__write(FILE *f, struct report *r, const struct series *se, uint64_t end_ns);

#endif
