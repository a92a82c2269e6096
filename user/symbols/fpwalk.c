// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include "lib/vec.h"
#include "probe/elf_obj.h"
#include "symbols/fpwalk.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

/* Whether the code of an object keeps frame pointers, when no symbol covers an address. */
struct obj_fp {
	const struct elf_obj *elf;
	int8_t fp;
};

struct fpwalk {
	struct obj_fp *objfp;
	size_t nr_objfp, cap_objfp;
};

int fpwalk__new(struct fpwalk **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void fpwalk__free(struct fpwalk *w)
{
	if (!w)
		return;
	free(w->objfp);
	free(w);
}

/*
 * Frame pointers at the start of a function's code: push %rbp; mov %rsp,%rbp (x86-64,
 * after an endbr64), or mov x29, sp among the first instructions (arm64, after stp x29,
 * x30). 1 yes, 0 no, -1 an architecture this does not know.
 */
static int prologue_fp(uint16_t machine, const uint8_t *b, size_t n)
{
	size_t i = 0;

	if (machine == EM_X86_64) {
		if (n >= 4 && !memcmp(b, "\xf3\x0f\x1e\xfa", 4))
			i = 4;
		/* mov %rsp,%rbp has two encodings */
		return n >= i + 4 && b[i] == 0x55 &&
		       (!memcmp(b + i + 1, "\x48\x89\xe5", 3) ||
			!memcmp(b + i + 1, "\x48\x8b\xec", 3));
	}
	if (machine == EM_AARCH64) {
		for (i = 0; i + 4 <= n && i < 16; i += 4)
			if (!memcmp(b + i, "\xfd\x03\x00\x91", 4)) /* mov x29, sp */
				return 1;
		return 0;
	}
	return -1;
}

int fpwalk__func(const struct elf_obj *elf, uint64_t start_vaddr)
{
	uint8_t b[16];
	uint64_t off;
	ssize_t n;

	if (elf_obj__vaddr_to_off(elf, start_vaddr, &off))
		return -1;
	n = elf_obj__read(elf, off, b, sizeof(b));
	return n > 0 ? prologue_fp(elf_obj__machine(elf), b, (size_t)n) : -1;
}

struct fp_count {
	const struct elf_obj *elf;
	unsigned int seen, with;
};

static int count_fp(const struct elf_func *f, void *ctx)
{
	struct fp_count *c = ctx;

	/* Tiny functions are stubs and thunks, whatever the object was built with. */
	if (f->size < 16)
		return 0;
	c->with += fpwalk__func(c->elf, f->vaddr) == 1;
	return ++c->seen >= 256;
}

int fpwalk__object(struct fpwalk *w, const struct elf_obj *elf)
{
	struct fp_count c = {.elf = elf};
	size_t i;

	for (i = 0; i < w->nr_objfp; i++)
		if (w->objfp[i].elf == elf)
			return w->objfp[i].fp;
	elf_obj__for_each_func((struct elf_obj *)elf, count_fp, &c);
	if (!vec_grow((void **)&w->objfp, &w->cap_objfp, w->nr_objfp, sizeof(*w->objfp)))
		w->objfp[w->nr_objfp++] = (struct obj_fp){elf, c.seen ? 2 * c.with > c.seen : -1};
	return c.seen ? 2 * c.with > c.seen : -1;
}

/*
 * Functions a frame-pointer walk ends in when nothing went wrong: the start of the main
 * thread and of every other (glibc's _start and clone clear %rbp before they call them).
 * Built without frame pointers, they are still where the chain ends, not where it broke.
 */
static bool walk_root(const char *func)
{
	static const char *const roots[] = {
	    "__libc_start_call_main",
	    "__libc_start_main",
	    "_start",
	    "start_thread",
	    "clone",
	    "clone3",
	    "__clone",
	    "__clone3",
	    "__clone_internal",
	    "thread_start",
	};
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(func, roots[i]))
			return true;
	return false;
}

/*
 * Frames from nofp_from on came through a function without a frame pointer (flags). When
 * that function is the last one found, and no thread starts there, the walk stopped because
 * of it (its %rbp held no frame, or held one that led nowhere): the stack is cut short,
 * nofp_from is its length and its callers are unknown.
 */
void fpwalk__judge(struct symbolizer *s, struct ustack *st)
{
	const struct sym_info *si;
	uint16_t i;

	for (i = 0; i + 1 < st->nr; i++)
		if (!symbolizer__frame_fp(s, st->pid, st->frames[i])) {
			st->flags |= STACK_NO_FP;
			st->nofp_from = i + 1;
			return;
		}
	if (!st->nr || (st->flags & STACK_TRUNCATED) ||
	    symbolizer__frame_fp(s, st->pid, st->frames[i]))
		return;
	si = symbolizer__info(s, st->pid, st->frames[i]);
	if (!si || !si->func || walk_root(si->func))
		return;
	st->flags |= STACK_NO_FP;
	st->nofp_from = st->nr;
}
