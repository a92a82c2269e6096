/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What gpuleak learnt about an object file it scanned, kept between runs: that a scan found
 * nothing to trace in it, that it holds no Python interpreter, whether its code is unwound
 * by copies. A target maps dozens of objects (hundreds in a PyTorch process) and traces a
 * few: the scans of the rest were most of what attaching cost.
 *
 * A fact belongs to one version of one file: device, inode, size and both change times. Any
 * write to the file, a replacement, even a chmod, makes it another file. The store is one
 * file per gpuleak build and scan options in the run directory (lib/rundir.h), read at start
 * and rewritten whole when a run learnt something.
 */
#ifndef GPULEAK_PROBE_OBJFACTS_H
#define GPULEAK_PROBE_OBJFACTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct file_id {
	uint64_t dev, ino, size;
	uint64_t mtime_ns, ctime_ns;
};

/* The version of the file at path (stat follows /proc/PID/map_files links): 0 or -errno. */
int file_id__of(const char *path, struct file_id *id);

enum objfact {
	OBJF_NO_SITES = 1u << 0,   /* the catalog's scan found nothing to trace (modules.h) */
	OBJF_NOT_PYTHON = 1u << 1, /* no interpreter's runtime in it (py_abi.h) */
	OBJF_FP_JUDGED = 1u << 2,  /* whether its code is unwound by copies is known: */
	OBJF_FPLESS = 1u << 3,	   /*   it is (code without frame pointers, with CFI) */
	OBJF_ALL = (1u << 4) - 1,
};

struct objfacts;

/*
 * The store called name (a file name, no slash) in the run directory, loaded; an empty one
 * that is never saved when there is no run directory. A file that does not parse is taken
 * as empty (said at -v), and replaced at the next save. 0 or -ENOMEM.
 */
int objfacts__open(const char *name, struct objfacts **out);
/* The store read from buf alone, never saved (tests, fuzzing): 0, -EINVAL or -ENOMEM. */
int objfacts__parse(const char *buf, size_t len, struct objfacts **out, char *why, size_t whylen);
void objfacts__free(struct objfacts *f);
/* The facts known of this version of a file (0: none). */
unsigned int objfacts__get(struct objfacts *f, const struct file_id *id);
/* Learn more of it (bits OR-ed in). */
void objfacts__add(struct objfacts *f, const struct file_id *id, unsigned int bits);
/* The store as its file says it (malloc'd, *len bytes), or NULL on -ENOMEM. */
char *objfacts__format(const struct objfacts *f, size_t *len);
/* Written back when something was learnt: 0 or -errno. */
int objfacts__save(struct objfacts *f);
/* How many lookups found facts, and how many files the store knows. */
size_t objfacts__hits(const struct objfacts *f);
size_t objfacts__count(const struct objfacts *f);
/* Its i-th file and facts, in the order kept (the oldest first); false past the end. */
bool objfacts__at(const struct objfacts *f, size_t i, struct file_id *id, unsigned int *bits);

#endif
