/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A file gpuleak writes for the user (a capture, --json, --folded, --perfetto, --svg): every
 * one is made here, the same way, because gpuleak runs as root in directories other users can
 * write (/tmp, a CI workspace):
 *
 *  - it never writes through a symbolic link: a link at the path is refused, and a link on
 *    the way to it is followed only as fs.protected_symlinks=1 would (not one another user
 *    planted in a sticky world-writable directory), whatever that setting is;
 *  - it never writes through anything but a regular file it made: a FIFO (which would hang
 *    it), a device node, a socket or a directory at the path is refused, never replaced;
 *  - what it makes is private (mode 0600: these files name code paths and command lines of
 *    someone's process), and when root made it for a sudo user it belongs to that user;
 *  - it never loses what the user had: an existing file is replaced only at commit, by a file
 *    written beside it (.NAME.XXXXXX in the same directory) and renamed over it, so a start
 *    that fails, a write that fails or a gpuleak that is killed leaves the old file whole.
 *
 * "-" is standard output: written to, flushed at commit, never closed here; what could not be
 * written there is said once, at exit, by outfile__stdout_close.
 */
#ifndef GPULEAK_LIB_OUTFILE_H
#define GPULEAK_LIB_OUTFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum outfile_mode {
	/* An existing path (a file, a link, anything) is -EEXIST. Written in place: a reader
	 * sees it grow (a capture is made to be read so: it says it is incomplete). */
	OUTFILE_NEW,
	/* A new path is written in place, as OUTFILE_NEW (NDJSON can be followed as it is
	 * written); an existing regular file is replaced at commit by the file written beside. */
	OUTFILE_REPLACE,
	/* Always written beside and renamed over the path at commit: a reader sees the old file
	 * or the whole new one, never half of it (the pictures, written in one go at the end). */
	OUTFILE_ATOMIC,
};

struct outfile;

/*
 * Open path for writing. 0, or -errno with why (may be NULL) saying what is wrong in a few
 * words ("a symbolic link: ..."), for "cannot write PATH: WHY"; nothing is left behind then.
 * -ELOOP: a link at path, or one on the way not followed; -EISDIR: a directory; -EINVAL:
 * another kind of file that is not regular; -EEXIST: OUTFILE_NEW and the path exists.
 */
int outfile__open(const char *path, enum outfile_mode mode, struct outfile **out, char *why,
		  size_t whylen);
/* Where to write: a stdio stream, or its descriptor for unbuffered writes (not both). */
FILE *outfile__stream(struct outfile *of);
int outfile__fd(const struct outfile *of);
/* The path as the user gave it. */
const char *outfile__path(const struct outfile *of);
/* The file written beside that path until it is put in place, or NULL when there is none. */
const char *outfile__temp_path(const struct outfile *of);
/*
 * Flush what the stream holds and put the file in place now (rename it over the path when it
 * was written beside), keeping it open. 0, or -errno of the first failed write (then nothing
 * is renamed: the path keeps what it had).
 */
int outfile__place(struct outfile *of);
/*
 * Keep what was written: place, then close. 0, or -errno of the first failed write or close;
 * a file written beside its path is removed then (the path keeps what it had), one written in
 * place stays as far as it got. Frees; accepts NULL.
 */
int outfile__commit(struct outfile *of);
/* Close, leaving what was written where it is: in place, or beside its path (a capture that
 * did not finish: evidence, not to be removed, nor to replace a good one). Frees; accepts
 * NULL. */
void outfile__close(struct outfile *of);
/* Close and take back what outfile__open made (the file beside, or the new file in place):
 * the path is as it was before. Frees; accepts NULL. */
void outfile__abort(struct outfile *of);

/* Whether path means standard output. */
bool outfile__is_stdout(const char *path);
/*
 * Standard output whose write errors are kept, with their errno: call first in main, before
 * anything is printed. outfile__stdout_close flushes and closes it at exit: 0, or -errno of
 * the first write or close that failed (a full disk, a closed pipe while SIGPIPE is ignored).
 */
int outfile__stdout_init(void);
int outfile__stdout_close(void);

#endif
