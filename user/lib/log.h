/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Diagnostics go to stderr, data to stdout. -v raises verbosity to 1, -vv to 2. */
#ifndef GPULEAK_LOG_H
#define GPULEAK_LOG_H

#include <stdio.h>

extern int gl_verbosity;

#define pr_err(fmt, ...)  fprintf(stderr, "gpuleak: " fmt, ##__VA_ARGS__)
#define pr_warn(fmt, ...) fprintf(stderr, "gpuleak: warning: " fmt, ##__VA_ARGS__)
#define pr_info(fmt, ...)                                                                          \
	do {                                                                                       \
		if (gl_verbosity >= 1)                                                             \
			fprintf(stderr, "gpuleak: " fmt, ##__VA_ARGS__);                           \
	} while (0)
#define pr_debug(fmt, ...)                                                                         \
	do {                                                                                       \
		if (gl_verbosity >= 2)                                                             \
			fprintf(stderr, "gpuleak: " fmt, ##__VA_ARGS__);                           \
	} while (0)

#endif
