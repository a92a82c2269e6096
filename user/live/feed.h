/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The record path: every record, from BPF or made here (a process attached, exec'd or
 * exited, its losses, its devices' memory, the time), enters the analysis through
 * feed__record, and a capture gets exactly the same stream in the same order, so `gpuleak
 * report` replays what the tracker saw. One switch on its kind hands it to its kind's
 * handler, which does what it starts in the session around the analysis: before it, a
 * rendezvous (rescan), an end marker, a callback to probe, Python frames and a stack to
 * read, an allocation's site moved out of its allocator, a followed process's first traced
 * call (which brings it into the analysis); after it, watch's triggers and what a fork,
 * exec or exit starts (follow.c).
 */
#ifndef GPULEAK_LIVE_FEED_H
#define GPULEAK_LIVE_FEED_H

#include <stdint.h>
#include "gpuleak.h"

struct live;
struct target;

/* One record, in stream order; 0 or the analysis's -errno. */
int feed__record(struct live *l, const struct gl_hdr *h);
/* t attached, exec'd, exited or detached (GL_PROC_*), at ts_ns or now. */
void feed__proc_at(struct live *l, struct target *t, enum gl_proc_event ev, int status,
		   uint64_t ts_ns);
void feed__proc(struct live *l, struct target *t, enum gl_proc_event ev, int status);
/* BPF's loss counters of t, when they changed (a process that lost records is announced). */
void feed__loss(struct live *l, struct target *t);
/* Time advanced, whether or not anything happened. */
void feed__tick(struct live *l);
/* What NVML says t holds on each device (time-to-OOM projections). */
void feed__devmem(struct live *l, const struct target *t);
/*
 * From now on t is in the analysis and the report: the tracker learns its name, the capture
 * its command line, the projection its devices. Processes named by the user are announced
 * at once; a followed one at its first traced call, so the shells and helpers a server
 * forks, which call nothing traced, never show up.
 */
void feed__announce(struct live *l, struct target *t, uint64_t ts_ns);

#endif
