/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What tracing costs each traced process, live (docs/overhead.md): the machine's trap costs
 * calibrated at start on empty programs linked to a function of gpuleak's own; the BPF
 * programs' average run time (the kernel's run-time statistics, on for an eighth of each
 * sample's interval) times each process's traps; its CPU time from /proc. Sampled about once a
 * second into a GL_REC_COST per process, which every output reads (engine/cost.h). With a
 * budget (--max-overhead) it steps a process down and back up (enum gl_cost_level).
 */
#ifndef GPULEAK_LIVE_OVERHEAD_H
#define GPULEAK_LIVE_OVERHEAD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

struct bpf_setup;
struct live;
struct overhead;

struct overhead_opts {
	double budget;		    /* --max-overhead as a fraction of a process's CPU, 0: none */
	bool python, dwarf, stacks; /* what the levels can give up (else skipped) */
};

/* Calibrates (a few milliseconds) and turns the run-time statistics on. 0 or -errno; a
 * calibration or statistics the kernel refuses is said and priced at 0, not an error. */
int overhead__new(struct bpf_setup *b, const struct overhead_opts *o, struct overhead **out);
void overhead__free(struct overhead *o);
/* The calibration's links and the run-time statistics go now, at the session's end. */
void overhead__unlink(struct overhead *o);
/* The calibrated cost of one trap of each kind (enum gl_cost_trap), ns. */
const uint32_t *overhead__trap_ns(struct overhead *o);
/* pid entered the analysis at ts_ns: its CPU time counts from now. */
void overhead__track(struct overhead *o, pid_t pid, uint64_t ts_ns);
enum ovh_when {
	OVH_DUE,   /* when a sample is due: about once a second, 4 times with a budget */
	OVH_NOW,   /* now (an --interval table) */
	OVH_FINAL, /* now, the last for only (or all): no budget step for what is leaving */
};

/* A GL_REC_COST into the analysis for each tracked process (only: that one, about to leave;
 * 0: all), and the budget's steps. */
void overhead__sample(struct overhead *o, struct live *l, uint64_t now, pid_t only,
		      enum ovh_when when);
void overhead__forget(struct overhead *o, pid_t pid);

#endif
