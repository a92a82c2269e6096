/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the command line asks of a live session (gpuleak attach, run, record). */
#ifndef GPULEAK_LIVE_SESSION_OPTS_H
#define GPULEAK_LIVE_SESSION_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "capture/capture.h"
#include "engine/analysis.h"
#include "probe/wgpu_abi.h"
#include "symbols/symbolizer.h"
#include "live/watch.h"

/* A process named on the command line (-p PID[@TICKS]). */
struct session_pid {
	pid_t pid;
	uint64_t start_ticks; /* PID@TICKS: it must still be the process that started then
				 * (field 22 of /proc/PID/stat), 0: whichever has the pid */
};

struct session_opts {
	struct session_pid *pids; /* attach mode when nr_pids > 0 */
	size_t nr_pids;
	char **argv;		  /* run mode when non-NULL */
	bool follow;		  /* --follow: trace the processes the targets fork, and execs */
	const char *metrics_addr; /* --metrics ADDR:PORT, NULL: no endpoint */
	uint64_t duration_ns;	  /* 0: until the target exits or a signal */
	uint64_t interval_ns;	  /* 0: no periodic tables */
	const char *json_path;
	int top;
	bool wait_for_lib;   /* attach even if no CUDA library is mapped yet */
	bool libc;	     /* also trace the C library's allocator */
	bool probe_at_entry; /* never move a probe past its function's entry */
	bool dawn_procs;     /* Dawn's entry points from its proc table, even with symbols */
	uint64_t ringbuf_bytes;
	unsigned int stack_depth;   /* frames of allocation stacks kept; 0: no stacks */
	unsigned int stack_entries; /* distinct stacks each kernel stack map holds */
	unsigned int python_depth;  /* Python frames kept per allocation; 0: none */
	bool unwind_dwarf;	    /* --unwind dwarf: stacks unwound from a copy of the stack */
	bool unwind_auto;	    /* --unwind auto: that only where a walk met code without
				     * frame pointers (the default) */
	int uprobe_links;	    /* --uprobe-links: enum bpf_setup_links */
	unsigned int unwind_bytes;  /* its bytes per allocation (--unwind-bytes) */
	double max_overhead;	    /* --max-overhead as a fraction of CPU, 0: no budget */
	const char *debug_dirs[SYMBOLIZER_MAX_DEBUG_DIRS]; /* --debug-dir */
	size_t nr_debug_dirs;
	struct analysis_opts a;	    /* rules, steps, gate: shared with gpuleak report */
	struct wgpu_abi webgpu_abi; /* --webgpu-abi; labels == 0: detect per object */
	const char *capture_path;   /* gpuleak record: also write every record here */
	struct capture_opts capture;
	const struct watch_opts *watch; /* gpuleak watch: captures at triggers, else NULL */
};

#endif
