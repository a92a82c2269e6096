/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The parts of a live session, made and freed by session.c, lent to the modules that work
 * across several of them: feed.c (records into the analysis), scan.c (a target's mappings
 * into probes), follow.c (forks, execs, exits) and start.c (the targets the command line
 * names). Each part is its own module with its own data; this is only where they meet.
 */
#ifndef GPULEAK_LIVE_LIVE_H
#define GPULEAK_LIVE_LIVE_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>
#include "live/launch.h"

struct analysis;
struct attach;
struct bpf_setup;
struct callbacks;
struct markers;
struct modules;
struct overhead;
struct probe_sites;
struct pyconf;
struct recorder;
struct session_opts;
struct signals;
struct symbolizer;
struct targets;
struct watch;
struct unwind;

struct live {
	const struct session_opts *o;
	struct bpf_setup *bpf;
	struct targets *tgts;
	struct modules *mods;
	struct attach *att; /* NULL once detached (finishing) */
	struct symbolizer *sym;
	struct unwind *unw; /* --unwind dwarf, else NULL */
	struct analysis *an;
	struct recorder *rec;	   /* gpuleak record, else NULL */
	struct callbacks *cbs;	   /* callbacks waiting for their probes */
	struct markers *mk;	   /* step/request/end markers */
	struct probe_sites *sites; /* --json: where the probes sat, for the verdicts, else NULL */
	struct watch *watch;	   /* gpuleak watch: the triggers, else NULL */
	struct pyconf *py;	   /* Python interpreters found in targets */
	struct overhead *ovh;	   /* what tracing costs each process */
	struct launch child;	   /* run mode's command; pid -1 in attach mode */
	struct signals *sig;	   /* SIGINT, SIGTERM, SIGHUP: also while starting */
	bool finishing;		   /* detached: stopped processes are resumed, not attached to */
	bool warned_unstopped;	   /* the kernel cannot stop forks before they run: said once */
	bool usage_err;		   /* starting failed on the command line's fault: exit 2 */
	bool said_unfollowed;	   /* a target forked without --follow: said once */
};

/* The clock of bpf_ktime_get_ns(): record and user-space times compare directly. */
static inline uint64_t live_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

#endif
