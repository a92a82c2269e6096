/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A live tracing session: loads the BPF programs, attaches to a running process (attach
 * mode) or to a child held before exec (run mode), feeds the ring buffer into the tracker,
 * prints intervals, and the final report when the target exits, on Ctrl-C or --duration.
 */
#ifndef GPULEAK_TRACE_H
#define GPULEAK_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "timeline.h"
#include "wgpu.h"

struct rules;

struct trace_opts {
	pid_t pid;		/* attach mode when > 0 */
	char **argv;		/* run mode when non-NULL */
	uint64_t duration_ns;	/* 0: until the target exits or a signal */
	uint64_t interval_ns;	/* 0: no periodic tables */
	const char *json_path;
	int top;
	bool wait_for_lib;	/* attach even if no CUDA library is mapped yet */
	bool libc;		/* also trace the C library's allocator */
	uint64_t ringbuf_bytes;
	const struct rules *rules;	/* user rules + built-ins */
	struct timeline_opts steps;
	bool steps_given;		/* --step: print a line per step */
	/* sym: markers: FILE (path or basename of a mapped object) and SYMBOL */
	const char *step_file, *step_sym;
	const char *req_file, *req_begin, *req_end;
	/* CI gate (--fail-on-leak): exit 3 when violated */
	bool fail_on_leak;
	uint64_t max_growth;		/* bytes per step a site may grow; 0: any growth leak */
	bool has_max_live;
	uint64_t max_live_at_exit;	/* leaked bytes allowed at the end */
	struct wgpu_abi webgpu_abi;	/* --webgpu-abi; labels == 0: detect per object */
};

/* Exit codes. */
enum { TRACE_OK = 0, TRACE_ERROR = 1, TRACE_LEAK = 3 };

/* Returns the process exit code: 0 done, 1 runtime error, 3 the gate found leaks. */
int trace__run(const struct trace_opts *o);

#endif
