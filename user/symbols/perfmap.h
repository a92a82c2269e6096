/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * One process's perf map: the "START SIZE name" lines (hexadecimal, no 0x) that a JIT writes to
 * /tmp/perf-PID.map for the code it generates in anonymous memory (Node --perf-basic-prof,
 * Python 3.12+ -X perf, JVM perf-map agents), read incrementally as the target appends to it.
 * The file is the target's: every byte is untrusted. Lines longer than PERFMAP_MAX_LINE and
 * lines that do not parse are counted and skipped; what is kept is bounded (PERFMAP_MAX_ENTRIES
 * entries, PERFMAP_MAX_NAME_BYTES of names) and reading stops at the bound.
 *
 * Entries may overlap (a JIT reuses the memory of code it freed): the entry written last wins,
 * as the code at an address now is the code compiled there last.
 */
#ifndef GPULEAK_SYMBOLS_PERFMAP_H
#define GPULEAK_SYMBOLS_PERFMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define PERFMAP_MAX_LINE       8192	  /* bytes, newline included; V8 cuts names at 4 KiB */
#define PERFMAP_MAX_ENTRIES    (1u << 21) /* 2 M entries of 32 bytes each */
#define PERFMAP_MAX_NAME_BYTES (64u << 20)

struct perfmap;

int perfmap__new(struct perfmap **out);
void perfmap__free(struct perfmap *pm);
/* Lower bounds than the PERFMAP_MAX_* defaults (tests). */
void perfmap__set_limits(struct perfmap *pm, size_t max_entries, size_t max_name_bytes);

/*
 * Parse bytes that follow those fed before: complete lines become entries, a partial last
 * line waits for its end. 0, or -ENOSPC once a bound is reached (the rest is not kept), or
 * -ENOMEM.
 */
int perfmap__feed(struct perfmap *pm, const char *buf, size_t len);
/* Forget every entry and partial line (the file was replaced or rewritten). */
void perfmap__reset(struct perfmap *pm);

/*
 * Read what the file at path holds past what was read: opened on first use (not through a
 * symlink, a regular file owned by owner or root), read again from its start when it was
 * replaced, truncated or rewritten in place. root: the directory path is resolved in, as its
 * "/" (a process's /proc/PID/root: its mount namespace, its symlinks kept inside it), or
 * NULL for path as it is. 1 when entries were added, 0 when nothing new, -ENOENT when there
 * is no such file (yet), -EPERM when it is not one to trust, -ENOSPC at the bounds, -errno.
 */
int perfmap__refresh(struct perfmap *pm, const char *root, const char *path, uid_t owner);

/*
 * The name of the latest entry covering addr and its start address, or NULL. The name is valid
 * until the next feed, refresh or reset.
 */
const char *perfmap__find(const struct perfmap *pm, uint64_t addr, uint64_t *start);

/*
 * A perf map name as a frame: the function and, where the JIT says it, the source location
 * (basename:line:column for V8, basename for Python). V8's "JS:~makeLogits
 * file:///srv/app/model.mjs:12:20" is makeLogits at model.mjs:12:20 (the line and column where
 * the function is defined, not of the call), "JS:~ node:path:1208:10" an (anonymous) function,
 * Python's "py::Attention.forward:/srv/app/model.py" Attention.forward in model.py; any other
 * name (V8 builtins and stubs, JVM methods) is the function, with *where NULL. Both are
 * allocated; 0 or -ENOMEM.
 */
int perfmap__describe(const char *name, char **func, char **where);
/*
 * The script of a V8 name as a path, without line and column (file:// taken off):
 * "/srv/app/model.mjs", "node:internal/process/task_queues"; allocated, NULL when the name
 * holds none (a builtin, a stub) or without memory.
 */
char *perfmap__script(const char *name);

struct perfmap_stats {
	size_t entries;	      /* kept */
	size_t name_bytes;    /* of names kept */
	uint64_t bytes_read;  /* of the file, all reads together */
	uint64_t lines;	      /* complete lines seen */
	uint64_t malformed;   /* lines that did not parse, or longer than PERFMAP_MAX_LINE */
	unsigned int resets;  /* the file was replaced, truncated or rewritten */
	unsigned int refills; /* reads that added entries */
	bool full;	      /* a bound was reached: later lines are not kept */
};
void perfmap__stats(const struct perfmap *pm, struct perfmap_stats *st);

#endif
