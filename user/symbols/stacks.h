/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The user call stacks of allocations, interned: one entry per (process, kernel stack id,
 * call site), however many allocations share it. Frames are return addresses, innermost
 * first, and frame 0 is always the call site (the record's caller), so a stack extends the
 * site a record names without it.
 *
 * Live, entries come from the kernel's stack maps (stacks__intern makes the kernel's frames
 * canonical); offline, from a capture's STACKS blocks, exactly as the recorder had them
 * (stacks__add). Whether a walk went through code without frame pointers is decided by the
 * symbolizer, which has the objects, and stored here with the frames.
 */
#ifndef GPULEAK_SYMBOLS_STACKS_H
#define GPULEAK_SYMBOLS_STACKS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Persisted in STACKS blocks: never renumbered. */
enum stack_flags {
	STACK_TRUNCATED = 1 << 0, /* the walk went on past --stack-depth: outer frames cut */
	STACK_NO_FP = 1 << 1,	  /* the walk passed through code without frame pointers:
					 * frames from nofp_from on may be wrong or missing */
	STACK_FLAGS_KNOWN = STACK_TRUNCATED | STACK_NO_FP,
};

/* What a stack of JavaScript frames says (symbolizer__js_flags); never persisted. */
enum stack_js {
	STACK_JS = 1 << 0,	 /* it has frames of the program's scripts */
	STACK_JS_ASYNC = 1 << 1, /* its outermost script frame runs in a callback of the event
				  * loop (a promise reaction, setImmediate, a timer): who queued it
				  * is not on the stack */
};

/* Frames one stack may hold (--stack-depth 120, plus the call site when the kernel left it
 * out). */
#define STACK_MAX_FRAMES 128

struct ustack {
	uint32_t index; /* order of interning: 0, 1, ... */
	pid_t pid;
	int32_t id; /* the kernel's stack id (gl_call_rec.stack_id) */
	uint64_t caller;
	uint16_t nr;
	uint16_t flags;	    /* enum stack_flags */
	uint16_t nofp_from; /* STACK_NO_FP: the first frame that may be wrong */
	/* A stack with Python frames (gl_stack_is_py(id)): the frame that names its site,
	 * the innermost in the program's own code; 0: the call site. Never persisted. */
	uint64_t site;
	/* A stack of JavaScript frames (symbolizer__py_site): site and js_flags looked at */
	uint8_t site_known;
	uint8_t js_flags; /* enum stack_js */
	uint64_t frames[];
};

struct stacks;

int stacks__new(struct stacks **out);
void stacks__free(struct stacks *s);
/*
 * A stack from the kernel: raw holds the frames after the probed function's own address,
 * n <= depth + 1 of them (the map holds depth + 1: a full map means the walk went on).
 * Frame 0 becomes caller when the kernel did not put the call site there (it does for a
 * probe on a push %rbp or endbr64, from the return address at the stack pointer), the stack
 * is cut to depth frames (STACK_TRUNCATED when anything was cut). *out is the new entry, or
 * the existing one with *is_new false. 0 or -ENOMEM, -EINVAL for a bad depth.
 */
int stacks__intern(struct stacks *s, pid_t pid, int32_t id, uint64_t caller, const uint64_t *raw,
		   size_t n, unsigned int depth, struct ustack **out, int *is_new);
/* A stack as recorded (a capture's STACKS block); a second one with the same key is
 * ignored. 0, -EINVAL (too many frames, unknown flags) or -ENOMEM. */
int stacks__add(struct stacks *s, pid_t pid, int32_t id, uint64_t caller, const uint64_t *frames,
		size_t nr, unsigned int flags, unsigned int nofp_from);
/* The stack of (pid, id, caller), or NULL. */
struct ustack *stacks__get(const struct stacks *s, pid_t pid, int32_t id, uint64_t caller);
/* Stacks in the order they were interned: index < stacks__count(). */
size_t stacks__count(const struct stacks *s);
struct ustack *stacks__at(const struct stacks *s, size_t index);

#endif
