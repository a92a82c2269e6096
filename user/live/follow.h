/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Processes that fork, exec and exit, from the scheduler tracepoints (and pidfds): a child
 * of a traced process is taken on (--follow), stopped by BPF before its first instruction
 * until its probes are in place; an exec makes a traced process a new one to the analysis;
 * an exit, or a call of the end marker, reports its end and lets it go.
 */
#ifndef GPULEAK_LIVE_FOLLOW_H
#define GPULEAK_LIVE_FOLLOW_H

#include <stdint.h>
#include "gpuleak.h"

struct live;
struct target;

/* A GL_REC_TASK record, after the analysis had it: what it starts follows it. */
void follow__task(struct live *l, const struct gl_task_rec *r);
/* t is gone (status: its wait status, -1 unknown; at ts_ns): its last records are in,
 * report its end and forget it. */
void follow__exited(struct live *l, struct target *t, int status, uint64_t ts_ns);
/*
 * t called its end marker: the analysis ended its session at that call and takes nothing
 * more of it; stop tracing it (it runs on, like a target of --duration).
 */
void follow__ended(struct live *l, struct target *t);

#endif
