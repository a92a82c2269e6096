// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/outfile.h"

struct outfile {
	char *path;
	FILE *f;
	bool created; /* open made the file: abort removes it */
};

/* Under sudo the file is for the user who asked: root's files would need root to read. */
static bool sudo_owner(uid_t *uid, gid_t *gid)
{
	const char *u = getenv("SUDO_UID"), *g = getenv("SUDO_GID");
	unsigned long uv, gv;
	char *end;

	if (geteuid() || !u || !g || !*u || !*g)
		return false;
	uv = strtoul(u, &end, 10);
	if (*end)
		return false;
	gv = strtoul(g, &end, 10);
	if (*end)
		return false;
	*uid = uv;
	*gid = gv;
	return true;
}

/* The descriptor for path, and whether this call created the file. -errno. */
static int create(const char *path, enum outfile_mode mode, bool *created)
{
	int fd;

	if (mode == OUTFILE_REPLACE && unlink(path) && errno != ENOENT)
		return -errno;
	/* Exclusive first: a new file is known to be ours (its owner and abort depend on it),
	 * and O_EXCL never follows a symlink. */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	*created = fd >= 0;
	if (fd < 0 && errno == EEXIST && mode == OUTFILE_TRUNCATE)
		fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	return fd >= 0 ? fd : -errno;
}

int outfile__open(const char *path, enum outfile_mode mode, struct outfile **out)
{
	struct outfile *of;
	uid_t uid;
	gid_t gid;
	int fd = -1, err;

	*out = NULL;
	of = calloc(1, sizeof(*of));
	if (!of)
		return -ENOMEM;
	of->path = strdup(path);
	if (!of->path) {
		err = -ENOMEM;
		goto cleanup;
	}
	fd = create(path, mode, &of->created);
	if (fd < 0) {
		err = fd;
		goto cleanup;
	}
	/* Only a file we made changes hands: never someone's existing file. */
	if (of->created && sudo_owner(&uid, &gid) && fchown(fd, uid, gid)) {
		err = -errno;
		goto cleanup;
	}
	of->f = fdopen(fd, "w");
	if (!of->f) {
		err = -errno;
		goto cleanup;
	}
	*out = of;
	return 0;
cleanup:
	if (fd >= 0)
		close(fd);
	if (of->created)
		unlink(path);
	free(of->path);
	free(of);
	return err;
}

FILE *outfile__stream(struct outfile *of)
{
	return of->f;
}

int outfile__fd(const struct outfile *of)
{
	return fileno(of->f);
}

const char *outfile__path(const struct outfile *of)
{
	return of->path;
}

int outfile__commit(struct outfile *of)
{
	int err = 0;

	if (!of)
		return 0;
	/* A write that failed earlier leaves only the stream's error flag: ask it too. */
	if (ferror(of->f))
		err = -EIO;
	if (fclose(of->f) && !err)
		err = -errno;
	free(of->path);
	free(of);
	return err;
}

void outfile__abort(struct outfile *of)
{
	if (!of)
		return;
	fclose(of->f);
	if (of->created)
		unlink(of->path);
	free(of->path);
	free(of);
}
