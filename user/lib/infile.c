// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/files.h"
#include "lib/infile.h"
#include "lib/vec.h"

const char *infile__name(const char *path)
{
	return strcmp(path, "-") ? path : "standard input";
}

/* N of "/dev/fd/N" or "/proc/self/fd/N", or -1. */
static int inherited_fd(const char *path)
{
	static const char *const prefixes[] = {"/dev/fd/", "/proc/self/fd/"};
	size_t i, n;
	char *end;
	long v;

	for (i = 0; i < 2; i++) {
		n = strlen(prefixes[i]);
		if (strncmp(path, prefixes[i], n) || !path[n])
			continue;
		v = strtol(path + n, &end, 10);
		return *end || v < 0 || v > 1 << 20 ? -1 : (int)v;
	}
	return -1;
}

/* A copy of the descriptor n, taken as a stream when it is one. */
static int take_fd(int n, int *fd, bool *stream, char *why, size_t whylen)
{
	struct stat st;

	if (fstat(n, &st)) {
		files_say(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	if (S_ISDIR(st.st_mode)) {
		files_say(why, whylen, "a directory");
		return -EISDIR;
	}
	if (!S_ISREG(st.st_mode) && !stream) {
		files_say(why, whylen, "%s, not a regular file", files_kind(st.st_mode));
		return -EINVAL;
	}
	/* A pipe or a terminal ends; /dev/zero as standard input never would. */
	if ((S_ISCHR(st.st_mode) && !isatty(n)) || S_ISBLK(st.st_mode)) {
		files_say(why, whylen, "%s, not a regular file or a pipe", files_kind(st.st_mode));
		return -EINVAL;
	}
	*fd = fcntl(n, F_DUPFD_CLOEXEC, 3);
	if (*fd < 0) {
		files_say(why, whylen, "%s", strerror(errno));
		return -errno;
	}
	if (stream)
		*stream = !S_ISREG(st.st_mode);
	return 0;
}

int infile__open(const char *path, int *fd, bool *stream, char *why, size_t whylen)
{
	struct stat st, again;
	char self[64];
	int pfd, n, err;

	*fd = -1;
	if (stream)
		*stream = false;
	if (!strcmp(path, "-"))
		return take_fd(STDIN_FILENO, fd, stream, why, whylen);
	n = inherited_fd(path);
	if (n >= 0 && !fstat(n, &st) && (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)))
		return take_fd(n, fd, stream, why, whylen);
	pfd = open(path, O_PATH | O_CLOEXEC);
	if (pfd < 0 || fstat(pfd, &st)) {
		err = -errno;
		files_say(why, whylen, "%s", strerror(errno));
		goto cleanup;
	}
	if (!S_ISREG(st.st_mode)) {
		err = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		files_say(why, whylen, "%s, not a regular file%s", files_kind(st.st_mode),
			  S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)
			      ? " (a pipe is read as standard input: -)"
			      : "");
		goto cleanup;
	}
	/* The file behind the descriptor, opened for reading: nothing else can be swapped in. */
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	*fd = open(self, O_RDONLY | O_CLOEXEC);
	if (*fd < 0 && errno == ENOENT) {
		/* no /proc: by name again, never blocking, and only if it is the same file */
		*fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		if (*fd >= 0 && (fstat(*fd, &again) || again.st_dev != st.st_dev ||
				 again.st_ino != st.st_ino || fcntl(*fd, F_SETFL, 0))) {
			close(*fd);
			*fd = -1;
			errno = ESTALE;
		}
	}
	if (*fd < 0) {
		err = -errno;
		files_say(why, whylen, "%s", strerror(errno));
		goto cleanup;
	}
	err = 0;
cleanup:
	if (pfd >= 0)
		close(pfd);
	return err;
}

int infile__read_all(int fd, size_t max, char **buf, size_t *len)
{
	size_t cap = 0;
	ssize_t n;

	*buf = NULL;
	*len = 0;
	for (;;) {
		/* room for one more byte than read, so that the caller may end it with a NUL */
		if (vec_grow((void **)buf, &cap, *len, 1))
			return -ENOMEM;
		n = read(fd, *buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (!n)
			return 0;
		*len += (size_t)n;
		if (*len > max)
			return -EFBIG;
	}
}
