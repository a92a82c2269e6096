/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A caching allocator's blocks inside its segments (blocks.c): PyTorch's tensors, carved from
 * the CUDA allocations and VMM mappings its allocator holds (tproc.blocks).
 */
#ifndef GPULEAK_TRACKER_BLOCKS_H
#define GPULEAK_TRACKER_BLOCKS_H

#include "tracker/model.h"
#include "probe/catalog.h"

/* A block handed out (an ALLOC record) or given back to the cache (FREE). 0 or -ENOMEM. */
int blocks__apply(struct tracker *t, struct tproc *p, const struct cat_api *api,
		  const struct gl_call_rec *r);
/* Blocks whose segment went while they were live (tproc.regions.gone) go with it. */
void blocks__sweep(struct tracker *t, struct tproc *p);
void blocks__free(struct tproc *p);

#endif
