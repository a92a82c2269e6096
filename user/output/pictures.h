/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pictures a session or a report writes at its end: --folded (live bytes by stack for
 * flamegraph.pl and speedscope), --folded-growth (the growth leaks' stacks by bytes per
 * step), --folded-peak (the live set at each device's peak), --perfetto (Chrome trace-event
 * JSON for ui.perfetto.dev) and --svg (a timeline). The files are created when the session is set up, so a path that
 * cannot be written stops gpuleak before it attaches anything; they are filled at the end
 * from the verdict the text report prints and the series the analysis sampled.
 */
#ifndef GPULEAK_PICTURES_H
#define GPULEAK_PICTURES_H

#include <stdint.h>
#include <stdio.h>

struct output_opts;
struct report;
struct series;
struct verdict;

struct pictures;

/*
 * Create the files o names (mode 0600, like --json: they name code paths of the target).
 * *out is NULL when o names none. 0 or -errno, the failing file named on stderr.
 */
int pictures__open(const struct output_opts *o, struct pictures **out);
void pictures__free(struct pictures *pics);
/*
 * Write every file as of end_ns: v's verdicts, se's samples over time (the analysis's,
 * NULL when it took none), sites named as report r names them. 0 or the first -errno (said
 * on stderr, naming the file).
 */
int pictures__write(struct pictures *pics, struct report *r, const struct verdict *v,
		    struct series *se, uint64_t end_ns);

#endif
