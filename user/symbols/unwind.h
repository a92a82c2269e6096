/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * --unwind dwarf: allocation stacks unwound in user space from what BPF copied at the call's
 * entry (struct gl_ustack_rec: rip, rsp, rbp and the top of the stack), with the call frame
 * information of the modules mapped at each frame (cfi.h), and by frame pointers where a
 * module has none (JIT code named from perf maps keeps them), until the copy ends.
 *
 * The copy is unwound when it arrives, against the process's mappings as they are then, and
 * held for the call's own record (the same thread and depth, after it in the ring buffer):
 * the unwound stack takes the place of its frame-pointer walk under an id of its own
 * (GL_STACK_UNWOUND range), one per distinct stack of a process; where the copy ended
 * before the outermost frame, a walk judged sound that went further keeps its place (it is
 * not bounded by the copy), and others go on with what such a walk found above the last
 * unwound frame.
 */
#ifndef GPULEAK_SYMBOLS_UNWIND_H
#define GPULEAK_SYMBOLS_UNWIND_H

#include <stddef.h>
#include <stdint.h>
#include "gpuleak.h"

struct symbolizer;
struct unwind;

struct unwind_stats {
	uint64_t copies;     /* stack copies received */
	uint64_t used;	     /* calls whose stack they replaced */
	uint64_t copy_ended; /* of those, unwinds the copy's end stopped (joined or cut) */
	uint64_t missing;    /* calls with a stack but no copy: BPF skipped it (the ring
			      * buffer was filling) or lost it */
	uint64_t unwind_ns;  /* time spent unwinding copies */
};

/* depth: --stack-depth, the frames a stack keeps. */
int unwind__new(struct symbolizer *sym, unsigned int depth, struct unwind **out);
void unwind__free(struct unwind *u);
/* A GL_REC_USTACK record of len bytes: unwound now, held for its call. 0, -EINVAL (too
 * short) or -ENOMEM. */
int unwind__copy(struct unwind *u, const struct gl_hdr *h, size_t len);
/*
 * The call's record (ALLOC, ALLOC_FAIL): *stack_id is the id it is to carry, the unwound
 * stack's when a copy of the same thread, depth, call site and frame-pointer walk is held
 * and its unwind replaces the walk (above). 0 or -ENOMEM.
 */
int unwind__call(struct unwind *u, const struct gl_call_rec *r, int32_t *stack_id);
void unwind__stats(const struct unwind *u, struct unwind_stats *st);

#endif
