/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Callback probes: a traced call that takes a code pointer (a host function cudaLaunchHostFunc
 * will call, a WebGPU callback) reports it in a GL_REC_CODE record, BPF stopping the caller
 * when the catalog says the callback may run before we get to it. Those requests queue here
 * as records are drained, and are probed together after the drain (a probe goes on the file
 * the code is mapped from); a caller that waits is marked for the loop to resume.
 */
#ifndef GPULEAK_LIVE_CALLBACKS_H
#define GPULEAK_LIVE_CALLBACKS_H

#include "gpuleak.h"

struct attach;
struct callbacks;
struct targets;

int callbacks__new(struct callbacks **out);
void callbacks__free(struct callbacks *cb);
/* A GL_REC_CODE record: its callback waits for a probe (when its API has one to probe). */
void callbacks__request(struct callbacks *cb, const struct gl_call_rec *r);
/* Probe every callback requested since the last call; a target stopped for one is marked
 * code_wait (one no longer in the table is resumed at once). */
void callbacks__attach(struct callbacks *cb, struct attach *att, struct targets *ts);
/* Forget what was requested (detached: nothing more is probed). */
void callbacks__clear(struct callbacks *cb);

#endif
