/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A minimal writer of Python's pickle format, protocol 4 (PEP 3154), for the files Python
 * tools load with pickle.load (--memory-viz: PyTorch's memory snapshot). Dicts, lists, a
 * 2-tuple, str, int, bool and None, written as a stream of opcodes; no frames (optional in
 * protocol 4). Protocol 4, not 5: PyTorch's viewer shows a blank page for 5.
 *
 * Strings asked for with pickle__str_memo are written once and referred to after (MEMOIZE,
 * then BINGET/LONG_BINGET): keys and frame names repeat in every entry. A finished container
 * can be memoized too (pickle__memo) and written again by reference (pickle__get): a trace's
 * entries share their stacks' frame lists. Errors stick: the first -errno is kept, later
 * calls do nothing, pickle__end returns it.
 */
#ifndef GPULEAK_LIB_PICKLE_H
#define GPULEAK_LIB_PICKLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct pickle;

/* A writer onto f, the header written. 0 or -ENOMEM. */
int pickle__new(FILE *f, struct pickle **out);
/* STOP and the first error (-EIO: f failed, -ENOMEM, -EINVAL: containers left open). */
int pickle__end(struct pickle *p);
/* Accepts NULL. */
void pickle__free(struct pickle *p);

/* Containers: begin, the items (a dict's as key, value, key, value ...), end. */
void pickle__dict(struct pickle *p);
void pickle__dict_end(struct pickle *p);
void pickle__list(struct pickle *p);
void pickle__list_end(struct pickle *p);
/* The two items on top of the stack (written just before) become a tuple. */
void pickle__tuple2(struct pickle *p);

void pickle__str(struct pickle *p, const char *s);
/* s, written once per writer and by reference after: for strings that repeat. */
void pickle__str_memo(struct pickle *p, const char *s);
void pickle__int(struct pickle *p, int64_t v);
void pickle__uint(struct pickle *p, uint64_t v);
void pickle__bool(struct pickle *p, bool v);
void pickle__none(struct pickle *p);

/* The object just finished, remembered: its index for pickle__get. */
uint32_t pickle__memo(struct pickle *p);
void pickle__get(struct pickle *p, uint32_t idx);

#endif
