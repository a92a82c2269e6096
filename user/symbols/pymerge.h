/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Stacks with Python frames, as py-spy --native shows them: the Python records (pyframes.h)
 * are kept here, and an allocation with a Python stack id gets its merged stack (native
 * frames, with its Python frames in place of the interpreter's evaluation loop) in the
 * symbolizer's stacks, with its site (the innermost frame of the program's own code) and
 * the first id merged to the same frames, which stands for it. Live and offline alike: the
 * same records give the same stacks.
 */
#ifndef GPULEAK_SYMBOLS_PYMERGE_H
#define GPULEAK_SYMBOLS_PYMERGE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct gl_hdr;
struct pymerge;
struct stacks;
struct symbolizer;

/* s names the frames (Python frames through symbolizer__set_python); merged stacks go into
 * stacks, which must outlive the merge. */
int pymerge__new(struct symbolizer *s, struct stacks *stacks, struct pymerge **out);
/* Accepts NULL. */
void pymerge__free(struct pymerge *pm);
/* --site-skip: frames whose object or file matches one of globs never name a site, beside
 * the built-in ones (symbolizer__set_site_skip); globs must outlive pm. */
void pymerge__set_skip(struct pymerge *pm, const char *const *globs, size_t n);
/* symbolizer__py_record: a Python record kept, or an allocation with a Python stack id
 * merged, once. 0, -EINVAL for a malformed Python record (left out), or -ENOMEM. */
int pymerge__record(struct pymerge *pm, const struct gl_hdr *h);
/* The native stack id in Python stack id of pid, -1: none or not known. */
int32_t pymerge__native_id(const struct pymerge *pm, pid_t pid, int32_t id);
/* The first id whose merged stack has the same frames as id's, else id. */
int32_t pymerge__canonical(const struct pymerge *pm, pid_t pid, int32_t id);
/* Python records left out as malformed. */
uint64_t pymerge__bad(const struct pymerge *pm);

#endif
