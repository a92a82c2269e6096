/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A run for `gpuleak diff` from a capture: the capture analysed as `gpuleak report` would
 * with the same options (offline/replay.h), and read into the diff's model as the NDJSON
 * verdicts of that report would give it, plus what only a capture has: every site's bytes
 * at every step (not only the 8 that changed most), and how many allocations each site made.
 */
#ifndef GPULEAK_OFFLINE_DIFF_CAPTURE_H
#define GPULEAK_OFFLINE_DIFF_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include "engine/analysis.h"
#include "diff/diff.h"

/*
 * The run of the capture at path (or of buf[0..len) when buf is given: what path named, read
 * from a pipe), analysed with a. 0, or -errno with the reason printed (as report prints it).
 * A damaged capture is analysed up to its damage and said: *damaged tells.
 */
int diff_capture__load(const char *path, const void *buf, size_t len, const struct analysis_opts *a,
		       struct diff_run **out, bool *damaged);

#endif
