/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Where gpuleak keeps what it learnt about this machine between runs (the kernel's features,
 * facts about the objects it scanned): /run/gpuleak as root, else $XDG_RUNTIME_DIR/gpuleak.
 * Both are emptied at boot, and both are this user's alone: a file another user could have
 * written is never taken for an answer.
 */
#ifndef GPULEAK_LIB_RUNDIR_H
#define GPULEAK_LIB_RUNDIR_H

#include <stdbool.h>
#include <stddef.h>

/* The directory, made if missing; false when there is none this user alone owns. */
bool rundir__dir(char *out, size_t size);
/* This executable's GNU build id in hex ("" when it has none): what a file's answers fit. */
const char *rundir__build_id(void);
/*
 * A file of the directory read whole into a malloc'd, NUL-terminated buffer (*len bytes
 * before the NUL): NULL when missing, not a regular file of this user's, writable by others,
 * or larger than max.
 */
char *rundir__read(const char *path, size_t max, size_t *len);
/* Written whole under another name, then renamed: a reader sees all of it or nothing. */
int rundir__write(const char *path, const char *data, size_t len);

#endif
