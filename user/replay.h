/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `gpuleak report`: the analysis of a capture file. The records go, in file order, through
 * the same tracker__apply a live session feeds, and the same report__final prints the
 * result, so live and offline verdicts of the same records are the same. Site names come
 * from the capture (its symbol table, else its map snapshots), never from this machine.
 */
#ifndef GPULEAK_REPLAY_H
#define GPULEAK_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * Settings of the analysis itself, which may differ between a capture and its reports:
 * re-analysis with other settings is what captures are for. Rules (issue 5) and step
 * detection (issue 6) are configured here, and live sessions configure them the same way.
 */
struct analysis_opts {
	const char *rules_path;		/* --rules FILE */
	const char *step_spec;		/* --step SPEC */
};

struct replay_opts {
	const char *path;
	const char *json_path;		/* NDJSON verdicts (and intervals), or NULL */
	int top;			/* sites per interval table */
	uint64_t interval_ns;		/* interval tables every this much record time; 0: none */
	bool list_blocks;		/* list the file's blocks instead of analysing */
	struct analysis_opts analysis;
};

/* Returns the process exit code: 0 done (also for a truncated capture), 1 error. */
int replay__run(const struct replay_opts *o);

/*
 * The same analysis of a capture held in memory, text to out and verdicts to json (may be
 * NULL), with interval tables every interval_ns of record time (0: none). 0, or -errno
 * when the capture is corrupt. The fuzzer's entry point.
 */
int replay__mem(const void *buf, size_t len, unsigned int reader_flags, uint64_t interval_ns,
		FILE *out, FILE *json);

#endif
