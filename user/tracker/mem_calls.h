/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Allocation and free calls (mem_calls.c): what each means for the graph. */
#ifndef GPULEAK_TRACKER_MEM_CALLS_H
#define GPULEAK_TRACKER_MEM_CALLS_H

#include "tracker/model.h"
#include "probe/catalog.h"

/* An allocation call r that succeeded, made under scope. 0 or -ENOMEM. */
int mem_calls__alloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		     const struct gl_call_rec *r, const struct call_scope *scope);
/* realloc(old, n): old is gone once the call succeeded, n is new memory. */
int mem_calls__realloc(struct tracker *t, struct tproc *p, const struct cat_api *api,
		       const struct gl_call_rec *r, const struct call_scope *scope);
/*
 * A free call r: its memory goes now, once something completes it (pending.h), or at the
 * last unmap of a VMM handle; or it frees nothing live (NULL, the lower half of a free
 * already applied, a double free, an unknown pointer), which is counted.
 */
int mem_calls__free(struct tracker *t, struct tproc *p, const struct cat_api *api,
		    const struct gl_call_rec *r);
/*
 * cuMemRetainAllocationHandle r succeeded: one more reference on the VMM handle it returned,
 * which a cuMemRelease of its own takes back before the handle can go. 0 or -ENOMEM.
 */
int mem_calls__retain(struct tproc *p, const struct gl_call_rec *r);
/* A failed call, counted at its call site. */
void mem_calls__count_failure(struct tracker *t, struct tproc *p, const struct cat_api *api,
			      const struct gl_call_rec *r);

#endif
