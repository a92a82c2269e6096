/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * SIGINT, SIGTERM and SIGHUP end a session: blocked and read from a signalfd the event loop
 * polls, so a signal is handled between two drains, never in the middle of one. In run
 * mode a terminal's Ctrl-C reached the child too: gpuleak waits for it to exit (its shutdown
 * frees are worth tracing), a second one stops at once; a SIGINT sent to gpuleak alone
 * (kill -INT) stops at once, the child running on. While the session starts, the same
 * signals stop it before anything is traced (signals__take at each stage, and beside every
 * wait).
 */
#ifndef GPULEAK_LIVE_SIGNALS_H
#define GPULEAK_LIVE_SIGNALS_H

#include <stdbool.h>
#include <sys/types.h>

struct signals;

/* Block the signals and open the signalfd. 0 or -errno. */
int signals__new(struct signals **out);
/* Closes the signalfd (the signals stay blocked). Accepts NULL. */
void signals__free(struct signals *sg);
/* What to poll. */
int signals__fd(const struct signals *sg);
/* Read the signal poll reported; child: run mode's child while it is traced, else 0.
 * Returns whether tracing should stop. */
bool signals__stop(struct signals *sg, pid_t child);
/* gpuleak watch: SIGUSR1 is read too (it asks for a capture; it never stops). 0 or -errno. */
int signals__catch_usr1(struct signals *sg);
/* Whether a SIGUSR1 came since the last call. */
bool signals__usr1(struct signals *sg);
/* A signal waiting, taken: its number, 0 when none (never blocks). */
int signals__take(struct signals *sg);

#endif
