/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* What the reader of user files (infile.c) and the writer of outputs (outfile.c) both say. */
#ifndef GPULEAK_LIB_FILES_H
#define GPULEAK_LIB_FILES_H

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>

/* A few words for "PATH: WHY" into why (nothing when why is NULL). */
__attribute__((format(printf, 3, 4))) static inline void files_say(char *why, size_t whylen,
								   const char *fmt, ...)
{
	va_list ap;

	if (!why || !whylen)
		return;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
}

/* What a file of mode m is, when it is not the regular file wanted. */
static inline const char *files_kind(mode_t m)
{
	return S_ISDIR(m)    ? "a directory"
	       : S_ISFIFO(m) ? "a FIFO"
	       : S_ISCHR(m)  ? "a character device"
	       : S_ISBLK(m)  ? "a block device"
	       : S_ISSOCK(m) ? "a socket"
	       : S_ISLNK(m)  ? "a symbolic link"
			     : "not a regular file";
}

#endif
