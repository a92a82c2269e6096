/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A file gpuleak writes for the user (a capture, --json, --folded, --perfetto, --svg): every
 * one is made here, the same way. It is private (mode 0600: these files name code paths and
 * command lines of someone's process), and when root made it for a sudo user it belongs to
 * that user, who reads it without privileges. Writing is open, write, then commit (keep it)
 * or abort (take back what open made): open is where a later change can write beside the
 * file and rename it over at commit, without touching the callers.
 */
#ifndef GPULEAK_OUTFILE_H
#define GPULEAK_OUTFILE_H

#include <stdio.h>

enum outfile_mode {
	OUTFILE_TRUNCATE, /* an existing file is emptied and rewritten, keeping its mode */
	OUTFILE_NEW,	  /* an existing path (even a dangling symlink) is -EEXIST */
	OUTFILE_REPLACE,  /* an existing file is removed first, then made anew: never through
			   * a symlink someone planted, and 0600 whatever the old one was */
};

struct outfile;

/* Open path for writing. 0, or -errno (nothing is left behind then). */
int outfile__open(const char *path, enum outfile_mode mode, struct outfile **out);
/* Where to write: a stdio stream, or its descriptor for unbuffered writes (not both). */
FILE *outfile__stream(struct outfile *of);
int outfile__fd(const struct outfile *of);
const char *outfile__path(const struct outfile *of);
/* Keep what was written: flush and close. 0, or -errno of the first failed write. Frees;
 * accepts NULL. */
int outfile__commit(struct outfile *of);
/* Close and take back what outfile__open made: a file it created is removed (one it
 * truncated stays, empty or not). Frees; accepts NULL. */
void outfile__abort(struct outfile *of);

#endif
