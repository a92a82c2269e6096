/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Whether a frame-pointer walk can be trusted: whether a function keeps a frame pointer,
 * judged from the first bytes of its code (x86-64, arm64), and, for code no symbol covers,
 * whether most functions of its object do (judged once per object, kept here). A stack
 * whose walk went through a function without one is marked (STACK_NO_FP, stacks.h).
 */
#ifndef GPULEAK_SYMBOLS_FPWALK_H
#define GPULEAK_SYMBOLS_FPWALK_H

#include <stdint.h>

struct elf_obj;
struct fpwalk;
struct symbolizer;
struct ustack;

int fpwalk__new(struct fpwalk **out);
/* Accepts NULL. */
void fpwalk__free(struct fpwalk *w);
/* Whether the function of elf starting at start_vaddr keeps a frame pointer: 1, 0, -1
 * unknown (no code there, another architecture). */
int fpwalk__func(const struct elf_obj *elf, uint64_t start_vaddr);
/*
 * Whether an object's code keeps frame pointers, for addresses no symbol covers: the verdict
 * of most of its (first 256) functions, kept per object. -1 when it has no sized function
 * symbols at all.
 */
int fpwalk__object(struct fpwalk *w, const struct elf_obj *elf);
/*
 * Judge the walk that found st (its frames named by s): STACK_NO_FP with nofp_from when a
 * frame other than the last is in a function without a frame pointer (symbolizer__frame_fp),
 * or when the last is and no thread starts there (the walk stopped because of it).
 */
void fpwalk__judge(struct symbolizer *s, struct ustack *st);

#endif
