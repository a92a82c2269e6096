/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * gpuleak watch: a recorder that stays attached and writes a capture only when something
 * happens. The session runs as attach and run do; its recorder is a flight recorder
 * (live/flight.h: the last records in bounded memory, and the state they start from), and
 * this module decides when to write it out and where:
 *
 *   triggers   an allocation that returned out of memory (the runtime's, the driver's, or
 *              an NCCL call failing on one underneath it), a WebGPU creation that returned an
 *              error object, the kernel's OOM killer choosing a traced process, a process
 *              dying of a signal that dumps core, live bytes reaching --live-above, the time
 *              to OOM falling below --oom-within, SIGUSR1 to gpuleak;
 *   captures   one per trigger at most every --cooldown (per cause), named by time, pid and
 *              cause in the output directory, holding every traced process; written beside
 *              their name and put there whole (lib/outfile);
 *   the disk   at most --max-captures of them and --max-disk bytes: the oldest go first. A
 *              capture that cannot be written (a full disk) is said in one line, and
 *              watching goes on.
 */
#ifndef GPULEAK_LIVE_WATCH_H
#define GPULEAK_LIVE_WATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "gpuleak.h"

struct live;
struct recorder;

/* Which triggers --on enables (the thresholds are enabled by their own options). */
enum watch_on {
	WATCH_ON_OOM = 1 << 0,	    /* out of memory at a call; WebGPU error objects */
	WATCH_ON_OOM_KILL = 1 << 1, /* the kernel's OOM killer */
	WATCH_ON_FAULT = 1 << 2,    /* death by SIGSEGV, SIGBUS, SIGABRT, ... */
	WATCH_ON_SIGNAL = 1 << 3,   /* SIGUSR1 to gpuleak */
	WATCH_ON_ALL = 0xf,
};

struct watch_opts {
	const char *dir;	/* -o DIR */
	uint64_t ring_bytes;	/* --ring SIZE */
	uint64_t ring_ns;	/* --ring-time DURATION; 0: the ring's bytes alone bound it */
	unsigned int on;	/* enum watch_on */
	uint64_t live_above;	/* --live-above BYTES; 0: off */
	uint64_t oom_within_ns; /* --oom-within DURATION; 0: off */
	uint64_t cooldown_ns;	/* --cooldown */
	unsigned int max_captures;
	uint64_t max_disk;
	bool no_verify; /* --no-verify: do not feed each snapshot back to check it */
};

/* Parse --on's list ("oom,oom-kill,fault,signal", "all", "none"). 0 or -EINVAL. */
int watch__parse_on(const char *arg, unsigned int *on);

struct watch;

/*
 * Check and prepare the directory (made if missing), and the flight recorder the session's
 * recorder becomes (*rec). Needs l's symbolizer and analysis options; json (--json, or NULL)
 * gets a record per capture. 0 or -errno, said.
 */
int watch__new(const struct watch_opts *o, struct live *l, FILE *json, struct watch **out,
	       struct recorder **rec);
void watch__free(struct watch *w);
/* Whether the OOM killer's tracepoint is wanted (before BPF is loaded). */
bool watch__wants_oom_kill(const struct watch_opts *o);
/* Say what is watched, once the targets are traced. */
void watch__started(struct watch *w, struct live *l);
/*
 * A record, just taken by the live analysis (feed.c's dispatch, as the analysis took it): a
 * trigger? An allocation; any other call record (a failed allocation, a free, a sync, a
 * call, a marker); a process forked, exec'd or exited (the scheduler's word); a process's
 * end in the analysis (GL_PROC_REC_V1_SIZE bytes at least).
 */
void watch__alloc(struct watch *w, struct live *l, const struct gl_call_rec *r);
void watch__call(struct watch *w, struct live *l, const struct gl_call_rec *r);
void watch__task(struct watch *w, struct live *l, const struct gl_task_rec *r);
void watch__proc(struct watch *w, struct live *l, const struct gl_proc_rec *r);
/* Between two drains: SIGUSR1 (usr1), the thresholds the analysis is judged on. */
void watch__poll(struct watch *w, struct live *l, bool usr1, uint64_t now_ns);
/* The session ends: say what was written. Whether a capture could not be written. */
bool watch__finish(struct watch *w);

#endif
