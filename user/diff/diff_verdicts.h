/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A run for `gpuleak diff` from the NDJSON a run wrote (`gpuleak run/attach/record/report
 * --json`): its verdict records (what is live, retained, pending and growing at the end) and
 * its step records (each process's live bytes at every step end, and the sites that changed
 * most). Each line is read by the strict JSON reader and checked for what the diff needs,
 * with the types docs/gpuleak.schema.json gives them; other members and record types are
 * ignored, as the schema asks of consumers.
 */
#ifndef GPULEAK_DIFF_DIFF_VERDICTS_H
#define GPULEAK_DIFF_DIFF_VERDICTS_H

#include <stddef.h>
#include <stdio.h>
#include "diff/diff.h"

/*
 * The run in f, named path in messages. 0; -EINVAL with err saying "PATH:LINE:COL: why"
 * (also when f holds no verdict); -ENOMEM; or -errno reading f.
 */
int diff_verdicts__load(FILE *f, const char *path, struct diff_run **out, char *err, size_t errlen);

#endif
