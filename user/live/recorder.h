/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * What a live session writes to a capture (gpuleak record): every record the analysis is
 * fed, in the same order, and beside them what `gpuleak report` needs to name sites without
 * the target's binaries: each process's command line, its executable mappings, the names of
 * the call sites and of every stack's frames. A write that fails stops the capture (said
 * once; what was written stays readable) while tracing goes on; the exit status is then 1.
 * Every function accepts a NULL recorder: no capture.
 */
#ifndef GPULEAK_LIVE_RECORDER_H
#define GPULEAK_LIVE_RECORDER_H

#include <stdbool.h>
#include <stdint.h>
#include "gpuleak.h"

struct capture_opts;
struct modules;
struct proc_maps;
struct recorder;
struct symbolizer;
struct target;
struct tracker;

/* Create the capture at path: 0, or -errno said on stderr. */
int recorder__new(const char *path, const struct capture_opts *o, struct recorder **out);
/*
 * gpuleak watch: records, processes and mappings go to a flight recorder instead (kept in
 * memory, written when a trigger says: live/watch.c). 0 or -ENOMEM.
 */
struct flight;
struct flight_opts;
int recorder__new_flight(const struct flight_opts *o, struct recorder **out);
/* The flight recorder, or NULL for a capture file. */
struct flight *recorder__flight(const struct recorder *rec);
/* Close; what was written stays. */
void recorder__free(struct recorder *rec);
/* Close and remove the file: the session never started. */
void recorder__discard(struct recorder *rec);
/* The capture's time origin: the live report's times are measured from it, as a report of
 * the capture's are. */
uint64_t recorder__t0_ns(const struct recorder *rec);
/* Whether a write failed. */
bool recorder__failed(const struct recorder *rec);

void recorder__record(struct recorder *rec, const struct gl_hdr *h);
/* t's executable mappings, for naming addresses the capture has no symbol for. */
void recorder__maps(struct recorder *rec, const struct proc_maps *m, struct modules *mods);
/* t's command line, as it entered the analysis. */
void recorder__process(struct recorder *rec, const struct target *t);
/*
 * Names of the tracker's call sites and of the frames of every stack, for a report without
 * the binaries. An address is named once, when it lies in a known mapping (a library mapped
 * a moment ago may not be scanned yet); final: every one, as the live report names it.
 */
void recorder__names(struct recorder *rec, struct symbolizer *sym, const struct tracker *t,
		     bool final);
/* Write the end of the capture and say what was written. */
void recorder__finish(struct recorder *rec);

#endif
