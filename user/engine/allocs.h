/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The sums (allocs.c): an allocation entering or leaving p's table, or changing how it
 * counts, and what that does to the live and pending bytes it is part of. What a call means
 * (mem_calls.h) and when a pending free completes (pending.h) are decided above.
 */
#ifndef GPULEAK_ENGINE_ALLOCS_H
#define GPULEAK_ENGINE_ALLOCS_H

#include "engine/model.h"

/*
 * A new allocation a (its sstack assigned) enters p's table and the sums of its site and
 * process; its class is checked now unless check_class is false (the caller checks it
 * later). 0 or -ENOMEM.
 */
int allocs__add(struct tracker *t, struct tproc *p, const struct alloc *a, uint64_t ts_ns,
		bool check_class);
/* a (in p's table) is gone: out of the sums and the table. */
void allocs__release(struct tracker *t, struct tproc *p, struct alloc *a);
/* Set flag (AF_PENDING, AF_RELEASED_MAPPED) on a, moving its bytes where the flag counts them. */
void allocs__set_flag(struct tracker *t, struct tproc *p, struct alloc *a, uint8_t flag);
/* a moves to site stack ss (its label changed): not an allocation, nor a free. */
void allocs__move(struct tracker *t, struct tproc *p, struct alloc *a, uint32_t ss);
/* A lower layer at outer's own address: the same memory, merged into it. */
void allocs__merge_layer(struct tracker *t, struct tproc *p, struct alloc *outer, uint16_t api);

#endif
