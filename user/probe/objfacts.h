/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What gpuleak learnt about an object file it scanned, kept between runs: that a scan found
 * nothing to trace in it, that it holds no Python interpreter, whether its code is unwound
 * by copies. A target maps dozens of objects (hundreds in a PyTorch process) and traces a
 * few: the scans of the rest were most of what attaching cost.
 *
 * Of the few it traces, where the scan put their probes: reading a large library's symbol
 * table and its functions' code took most of an attach that had nothing else to scan (1.2-2
 * ms for the 218 MB libnccl.so.2 on the project's VM, against ~0.5 ms to link its probes).
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
#include "probe/insn.h"

struct file_id {
	uint64_t dev, ino, size;
	uint64_t mtime_ns, ctime_ns;
};

/* The version of the file at path (stat follows /proc/PID/map_files links): 0 or -errno. */
int file_id__of(const char *path, struct file_id *id);

enum objfact {
	OBJF_NO_SITES = 1u << 0,   /* the catalog's scan found nothing to trace (modules.h), */
	OBJF_NOT_PYTHON = 1u << 1, /* no interpreter's runtime in it (py_abi.h) */
	OBJF_FP_JUDGED = 1u << 2,  /* whether its code is unwound by copies is known: */
	OBJF_FPLESS = 1u << 3,	   /*   it is (code without frame pointers, with CFI) */
	OBJF_SITES = 1u << 4,	   /* or it found these probe sites (objfacts__sites); */
	OBJF_DEBUG_SYMS = 1u << 5, /*   either with a separate debug file's symbols too */
	OBJF_ALL = (1u << 6) - 1,
};

/*
 * One probe site as a scan placed it (modules.h: probe_site), the catalog entry by its index
 * in this build's catalog (the store is per build). Checked against the object before use.
 */
struct objsite {
	uint32_t api;
	bool local;
	uint8_t source; /* enum site_source */
	bool slow;
	uint64_t offset, vaddr, entry_offset;
	struct probe_placement place;
};

/* Bounds: sites kept per file, and in the whole store (each is a line of ~100-250 bytes). */
#define OBJFACTS_SITES_PER_FILE 4096
#define OBJFACTS_SITES_MAX	40000

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
/*
 * The sites kept for this version of a file, *n of them, or NULL (none kept, or the file
 * changed). Valid until the store is next changed.
 */
const struct objsite *objfacts__sites(struct objfacts *f, const struct file_id *id, size_t *n);
/*
 * Keep what a scan found in place of what an earlier one did: no site (n == 0: OBJF_NO_SITES)
 * or these (1..OBJFACTS_SITES_PER_FILE of them, copied: OBJF_SITES), and OBJF_DEBUG_SYMS when
 * it read a debug file's symbols. Sites are not kept when the store holds OBJFACTS_SITES_MAX
 * already: the object is scanned next time.
 */
void objfacts__set_scan(struct objfacts *f, const struct file_id *id, const struct objsite *v,
			size_t n, bool with_debug);
/* Written back when something was learnt: 0 or -errno. */
int objfacts__save(struct objfacts *f);
/* How many lookups found facts, and how many files the store knows. */
size_t objfacts__hits(const struct objfacts *f);
size_t objfacts__count(const struct objfacts *f);
/* Its i-th file and facts, in the order kept (the oldest first); false past the end. */
bool objfacts__at(const struct objfacts *f, size_t i, struct file_id *id, unsigned int *bits);

#endif
