/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Calls (call_tree.c): each applied by its operation, at once or in the tree of nested calls. */
#ifndef GPULEAK_TRACKER_CALL_TREE_H
#define GPULEAK_TRACKER_CALL_TREE_H

#include "tracker/model.h"

/* A call record of p (GL_REC_ALLOC ... GL_REC_NOTIFY): applied, or held until its outermost
 * call returns. 0 or -ENOMEM. */
int call_tree__apply(struct tracker *t, struct tproc *p, const struct gl_call_rec *r);
/* GL_TASK_THREAD: a thread made by a traced call to do its work. */
int call_tree__thread_made(struct tproc *p, const struct gl_task_rec *r);
/* Records still held when a process ends belong to calls that never returned. */
int call_tree__flush(struct tracker *t, struct tproc *p);

#endif
