/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `gpuleak report`: the analysis of a capture file. The file is read twice: first its names
 * (symbols, map snapshots, processes), so that rules see every call site named as live,
 * then its records, in file order, through the same analysis__feed a live session feeds;
 * the same report prints the result. Live and offline verdicts of the same records with
 * the same options are therefore the same, and other options re-analyse them. Site names
 * come from the capture, never from this machine.
 */
#ifndef GPULEAK_OFFLINE_REPLAY_H
#define GPULEAK_OFFLINE_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "engine/analysis.h"

struct replay_opts {
	const char *path;
	const char *json_path;	/* NDJSON verdicts (and intervals), or NULL */
	int top;		/* sites per interval table */
	uint64_t interval_ns;	/* interval tables every this much record time; 0: none */
	bool list_blocks;	/* list the file's blocks instead of analysing */
	struct analysis_opts a; /* rules, steps, gate: may differ from the recording's */
};

/* Returns the process exit status (enum gl_exit): done (also for a truncated capture), a
 * runtime error, or the gate (--fail-on-leak) found leaks. */
int replay__run(const struct replay_opts *o);

/*
 * The same analysis of a capture held in memory with options a, text to out and verdicts
 * to json (may be NULL), with interval tables every interval_ns of record time (0: none).
 * 0, or -errno when the capture is corrupt. The fuzzer's entry point.
 */
int replay__mem(const void *buf, size_t len, unsigned int reader_flags,
		const struct analysis_opts *a, uint64_t interval_ns, FILE *out, FILE *json);

struct symbolizer;
struct capture_info;

/* What a caller of replay__analyse reads, once the capture is analysed. */
struct replay_result {
	const struct analysis *an; /* the tracker and the timeline, at the end */
	struct symbolizer *sym;	   /* names from the capture */
	const struct verdict *v;   /* as report would judge it */
	const struct capture_info *info;
	bool truncated; /* the capture was cut short: its processes are "running" */
	bool damaged;	/* analysed up to a damaged block (said on stderr): report exits 1 */
};

/* A step closed while the capture is analysed: the tracker still holds the memory sites the
 * step changed (struct tproc: step_changes). */
typedef void (*replay_step_fn)(void *ctx, const struct analysis *an, struct symbolizer *sym,
			       pid_t pid, const struct step_stat *st);
typedef int (*replay_done_fn)(void *ctx, const struct replay_result *res);

/*
 * The analysis of a capture with options a, for a caller that reads the result instead of
 * printing the report (gpuleak diff): the file at path, or buf[0..len) (what path named: a
 * capture read from a pipe); step (may be NULL) at every closed step, done with the result
 * before it is freed. Warnings (a capture cut short or damaged, steps it has no records for)
 * and the reader's errors go to stderr as report prints them. Returns 0, what done
 * returned, or -errno.
 */
int replay__analyse(const char *path, const void *buf, size_t len, const struct analysis_opts *a,
		    replay_step_fn step, replay_done_fn done, void *ctx);

#endif
