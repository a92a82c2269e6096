/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A live tracing session: loads the BPF programs, attaches to a running process (attach
 * mode) or to a child held before exec (run mode), feeds the ring buffer into the tracker,
 * prints intervals, and the final report when the target exits, on Ctrl-C or --duration.
 * With a capture path (gpuleak record) every record the tracker gets is also written to a
 * capture file, with what it takes to name the sites later (maps, symbols, command line).
 */
#ifndef GPULEAK_LIVE_SESSION_H
#define GPULEAK_LIVE_SESSION_H

#include "live/session_opts.h"

/* Returns the process exit status (enum gl_exit): done, a runtime error, or the gate found
 * leaks. */
int session__run(const struct session_opts *o);

#endif
