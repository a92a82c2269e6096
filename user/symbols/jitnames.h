/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Names of JIT code, in no mapped file (anonymous memory), from the perf map of its process:
 * /tmp/perf-NSPID.map as the process sees its /tmp and its pid (in a container, its own),
 * read through /proc/PID/root (its symlinks resolved inside it), on as it grows, and only
 * while live. One perf map per process is kept here; where there is none, the user is told
 * once per process how to make its runtime write one. For a process that runs a JIT, that
 * root is held open from when its maps are first seen until the map is open: records are
 * named after the process may have exited (a short run), and what is open is read to its end.
 */
#ifndef GPULEAK_SYMBOLS_JITNAMES_H
#define GPULEAK_SYMBOLS_JITNAMES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

struct jitnames;
struct sym_info;

/* What makes the runtime of pid write its perf map (from the objects it maps). */
typedef const char *(*jitnames_how_fn)(void *ctx, pid_t pid);

int jitnames__new(jitnames_how_fn how, void *ctx, struct jitnames **out);
/* Accepts NULL. */
void jitnames__free(struct jitnames *j);
/*
 * Name addr of pid, in no mapped file, from its perf map into si (zeroed by the caller;
 * strings allocated: func, module the source location or "perf-N.map", file the script's
 * whole path when the name has one). A map that does not cover addr is read on, once per
 * batch (the caller's count of its batches of frames) when it found nothing new. si left
 * unnamed when nothing names addr. 0 or -ENOMEM.
 */
int jitnames__resolve(struct jitnames *j, pid_t pid, uint64_t addr, uint64_t batch,
		      struct sym_info *si);
/*
 * A frame of func in an object of pid: V8's shared interpreter entry says JavaScript runs
 * unnamed when the process has no perf map (said once). 0 or -ENOMEM.
 */
int jitnames__interp_hint(struct jitnames *j, pid_t pid, const char *func, uint64_t batch);
/* pid runs a JIT (jitnames__runtime): hold its root open until its perf map is. 0 or -ENOMEM. */
int jitnames__hold(struct jitnames *j, pid_t pid);
/* Objects of runtimes that write a perf map when asked (V8, the JVM), by base name. */
static inline bool jitnames__runtime(const char *n)
{
	return !strcmp(n, "node") || !strcmp(n, "nodejs") || !strncmp(n, "libnode.so", 10) ||
	       !strcmp(n, "libjvm.so");
}
/* Addresses named from perf maps; reads of a perf map that found new entries (each may name
 * an address that had no name). */
void jitnames__stats(const struct jitnames *j, uint64_t *frames, uint64_t *reads);

#endif
