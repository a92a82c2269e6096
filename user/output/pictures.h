/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The pictures a session or a report writes at its end: --folded (live bytes by stack for
 * flamegraph.pl and speedscope), --folded-growth (the growth leaks' stacks by bytes per
 * step), --folded-peak (the live set at each device's peak), --perfetto (Chrome trace-event
 * JSON for ui.perfetto.dev), --svg (a timeline) and --memory-viz (PyTorch's memory snapshot). Each is opened when the session is set
 * up (lib/outfile: a file beside its path), so a path that cannot be written stops gpuleak
 * before it attaches anything; they are filled at the end from the verdict the text report
 * prints and the series the analysis sampled, and only then renamed over their paths: a
 * failed start leaves what the paths had, and a reader never sees half a picture. "-" is
 * standard output.
 */
#ifndef GPULEAK_OUTPUT_PICTURES_H
#define GPULEAK_OUTPUT_PICTURES_H

#include <stdint.h>
#include <stdio.h>

struct analysis;
struct output_opts;
struct report;
struct verdict;

struct pictures;

/*
 * Open the files o names (mode 0600, like --json: they name code paths of the target).
 * *out is NULL when o names none. 0 or -errno, the failing file named on stderr.
 */
int pictures__open(const struct output_opts *o, struct pictures **out);
/* Frees; what was not written (a failed start) is taken back. Accepts NULL. */
void pictures__free(struct pictures *pics);
/*
 * Write every file as of end_ns: v's verdicts, the analysis an's samples over time (its
 * series) and allocation trace, sites named as report r names them. 0 or the first -errno (said
 * on stderr, naming the file).
 */
int pictures__write(struct pictures *pics, struct report *r, const struct verdict *v,
		    const struct analysis *an, uint64_t end_ns);

/*
 * Where the text report goes when json_path (may be NULL) and o name the outputs: stdout, or
 * stderr when one of them is "-", so that standard output carries that file alone (a pipe to
 * jq, flamegraph.pl) and the report is still seen.
 */
FILE *pictures__text_stream(const char *json_path, const struct output_opts *o);

#endif
