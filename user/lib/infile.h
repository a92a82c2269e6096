/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A file the user names for gpuleak to read (a capture, --rules, --lib, sym:FILE, a debug
 * file): opened so that nothing the path turns out to be can hang gpuleak or touch a device.
 * The path is first opened O_PATH (which neither blocks on a FIFO without a writer nor runs a
 * device driver's open), its type checked, and only a regular file opened for reading, by
 * that same descriptor. Symbolic links are followed (libcudart.so.13 is one): reading through
 * a link writes nothing.
 *
 * Pipes are read where standard input is meant: "-" (a file, a pipe, a socket or a terminal,
 * never another device: /dev/zero would never end), and /dev/fd/N (or /proc/self/fd/N) of an
 * inherited pipe or socket, which is what a shell's <(zcat x.glc.gz) names.
 */
#ifndef GPULEAK_LIB_INFILE_H
#define GPULEAK_LIB_INFILE_H

#include <stdbool.h>
#include <stddef.h>

/*
 * Open path for reading: a descriptor (close-on-exec) in *fd, and whether it is a pipe (or
 * another stream that cannot be read twice or at an offset) in *stream, which may be NULL
 * when the caller takes regular files only (a pipe is then -EINVAL). 0, or -errno with why
 * (may be NULL) in a few words for "PATH: WHY": -EISDIR a directory, -EINVAL a FIFO, device
 * or socket by name.
 */
int infile__open(const char *path, int *fd, bool *stream, char *why, size_t whylen);
/*
 * All of fd, to its end, into *buf (malloc'd, room for a NUL after its *len bytes; the
 * caller frees it, also on error): a pipe that can be read once, a file whose size may
 * change. 0, -EFBIG past max bytes, or -errno.
 */
int infile__read_all(int fd, size_t max, char **buf, size_t *len);
/* What path names, for messages: "standard input" for "-", else path. */
const char *infile__name(const char *path);

#endif
