/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Diagnostics go to stderr, data to stdout. -v raises verbosity to 1, -vv to 2. A diagnostic
 * often names something of the target's (a path, a process name): every one is written
 * through term_fputs (lib/term.h), its own line breaks kept.
 */
#ifndef GPULEAK_LIB_LOG_H
#define GPULEAK_LIB_LOG_H

#include <stdio.h>

extern int gl_verbosity;

/* "gpuleak: " prefix, then fmt, control characters of the result escaped. */
void gl_log(const char *prefix, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define pr_err(fmt, ...) gl_log("gpuleak: ", fmt, ##__VA_ARGS__)
/* What the user should know that is not wrong: "tracing pid ...", "waiting for ...". */
#define pr_note(fmt, ...) gl_log("gpuleak: ", fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) gl_log("gpuleak: warning: ", fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)                                                                          \
	do {                                                                                       \
		if (gl_verbosity >= 1)                                                             \
			gl_log("gpuleak: ", fmt, ##__VA_ARGS__);                                   \
	} while (0)
#define pr_debug(fmt, ...)                                                                         \
	do {                                                                                       \
		if (gl_verbosity >= 2)                                                             \
			gl_log("gpuleak: ", fmt, ##__VA_ARGS__);                                   \
	} while (0)

#endif
