/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Sites and stacks of JavaScript, from frames a JIT named from its perf map (V8's: their
 * file is the script's path). A stack's site is the innermost frame of the program's own
 * scripts (not Node's, not under node_modules, not --site-skip's; else a package's
 * innermost), one address per function whatever tier of V8 ran it; stacks the same once the
 * native glue between their script frames is folded are one, the first standing for the
 * others. Judged on first use and kept in the stack (ustack.site, js_flags).
 */
#ifndef GPULEAK_SYMBOLS_JSSITES_H
#define GPULEAK_SYMBOLS_JSSITES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct jssites;
struct stacks;
struct symbolizer;

/* s names the frames; stacks (the symbolizer's) must outlive js. */
int jssites__new(struct symbolizer *s, struct stacks *stacks, struct jssites **out);
/* Accepts NULL. */
void jssites__free(struct jssites *js);
/* --site-skip (symbolizer__set_site_skip); globs must outlive js. */
void jssites__set_skip(struct jssites *js, const char *const *globs, size_t n);
/* enum stack_js of the stack (pid, id, caller), a stack without Python frames; 0 without
 * such a stack. */
unsigned int jssites__flags(struct jssites *js, pid_t pid, int32_t id, uint64_t caller);
/*
 * The frame that names the site of the stack (pid, *stack_id, caller), with *stack_id
 * replaced by the first id of the stacks with the same frames once their glue is folded;
 * 0 (the call site, *stack_id unchanged) for a stack without script frames or none at all.
 */
uint64_t jssites__site(struct jssites *js, pid_t pid, uint64_t caller, int32_t *stack_id);

#endif
