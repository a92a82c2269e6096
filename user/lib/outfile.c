// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>
#include "lib/files.h"
#include "lib/outfile.h"

/* As the kernel's path walk: more links than this on the way is a loop. */
#define MAX_LINKS 40

struct outfile {
	char *path;	/* as given */
	char *name;	/* its last component, in dirfd */
	char *tmp;	/* the file beside it (a name in dirfd) until placed; NULL: in place */
	char *tmp_path; /* the same, as a path for messages */
	int dirfd;	/* the directory holding it (O_PATH); -1: standard output */
	int fd;		/* the file's, or 1 */
	FILE *f;	/* a stream on fd that keeps its first write error */
	int err;	/* -errno of the first failed write through f */
	bool created;	/* written in place, and open made the file: abort removes it */
	bool is_stdout;
};

/* ---- the stream: stdio over the descriptor, keeping the errno stdio would lose ---- */

static ssize_t write_all(int fd, const char *buf, size_t len, int *err)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (!*err)
				*err = n < 0 ? -errno : -EIO;
			/* stdio marks the stream in error on 0: what was not written is lost */
			return 0;
		}
		done += n;
	}
	return done;
}

static ssize_t of_write(void *cookie, const char *buf, size_t len)
{
	struct outfile *of = cookie;

	return write_all(of->fd, buf, len, &of->err);
}

/* The descriptor is closed by commit, close or abort, which check it themselves. */
static int of_close(void *cookie)
{
	(void)cookie;
	return 0;
}

/* ---- the directory: followed as fs.protected_symlinks=1 would, whatever it is set to ---- */

/*
 * Whether a walk may follow the link st found in directory dir: the kernel's rule (a link in
 * a sticky world-writable directory only when its owner is the follower or the directory's
 * owner). Another user's link in /tmp never leads root's file anywhere.
 */
static bool may_follow(const struct stat *dir, const struct stat *link)
{
	if ((dir->st_mode & (S_ISVTX | S_IWOTH)) != (S_ISVTX | S_IWOTH))
		return true;
	return link->st_uid == geteuid() || link->st_uid == dir->st_uid;
}

/*
 * The directory dir (a path), opened O_PATH, one component at a time with links followed only
 * where may_follow allows. 0 with *out, or -errno with why.
 */
static int open_dir(const char *dir, int *out, char *why, size_t whylen)
{
	char *todo = NULL, *p, target[PATH_MAX];
	int fd = -1, next = -1, links = 0, err;
	struct stat dst, st;

	*out = -1;
	todo = strdup(dir);
	if (!todo)
		return -ENOMEM;
	fd = open(dir[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		goto fail_errno;
	p = todo;
	while (*p) {
		char *comp, *rest, *joined;
		ssize_t n;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		comp = p;
		p += strcspn(p, "/");
		if (*p)
			*p++ = 0;
		if (!strcmp(comp, "."))
			continue;
		next = openat(fd, comp, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (next < 0 || fstat(next, &st))
			goto fail_errno;
		if (S_ISDIR(st.st_mode)) {
			close(fd);
			fd = next;
			next = -1;
			continue;
		}
		if (!S_ISLNK(st.st_mode)) {
			files_say(why, whylen, "%s (on the way) is %s, not a directory", comp,
				  files_kind(st.st_mode));
			err = -ENOTDIR;
			goto cleanup;
		}
		if (fstat(fd, &dst))
			goto fail_errno;
		if (!may_follow(&dst, &st)) {
			files_say(why, whylen,
				  "%s (on the way) is a symbolic link of user %u in a sticky "
				  "world-writable directory: not followed",
				  comp, (unsigned int)st.st_uid);
			err = -ELOOP;
			goto cleanup;
		}
		if (++links > MAX_LINKS) {
			files_say(why, whylen, "too many symbolic links on the way");
			err = -ELOOP;
			goto cleanup;
		}
		/* The link itself, by its descriptor: no other can take its place meanwhile. */
		n = readlinkat(next, "", target, sizeof(target) - 1);
		if (n < 0)
			goto fail_errno;
		target[n] = 0;
		close(next);
		next = -1;
		rest = p;
		if (asprintf(&joined, "%s/%s", target, rest) < 0) {
			err = -ENOMEM;
			goto cleanup;
		}
		free(todo);
		todo = p = joined;
		if (target[0] == '/') {
			close(fd);
			fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
			if (fd < 0)
				goto fail_errno;
		}
	}
	*out = fd;
	fd = -1;
	err = 0;
	goto cleanup;
fail_errno:
	err = -errno;
	files_say(why, whylen, "%s", strerror(errno));
cleanup:
	if (next >= 0)
		close(next);
	if (fd >= 0)
		close(fd);
	free(todo);
	return err;
}

/* ---- making the file ---- */

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

/* A new file name in of->dirfd, created 0600 and exclusive (never a link): its descriptor. */
static int create_exclusive(struct outfile *of, const char *name)
{
	return openat(of->dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
}

/* ".NAME.XXXXXX" beside of->name, created: its descriptor, or -1 with errno. */
static int create_beside(struct outfile *of)
{
	static const char digits[] =
	    "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";
	int tries, fd = -1;

	for (tries = 0; tries < 100; tries++) {
		uint8_t rnd[6];
		char suffix[7];
		int i;

		if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd)) {
			uint64_t x = (uint64_t)getpid() * 0x9e3779b97f4a7c15ULL ^
				     (uint64_t)clock() * 0xbf58476d1ce4e5b9ULL ^ (uint64_t)tries;

			memcpy(rnd, &x, sizeof(rnd));
		}
		for (i = 0; i < 6; i++)
			suffix[i] = digits[rnd[i] % (sizeof(digits) - 1)];
		suffix[6] = 0;
		free(of->tmp);
		/* NAME_MAX bounds the whole name: a long name is shortened, not refused */
		if (asprintf(&of->tmp, ".%.*s.%s", NAME_MAX - 9, of->name, suffix) < 0) {
			of->tmp = NULL;
			errno = ENOMEM;
			return -1;
		}
		fd = create_exclusive(of, of->tmp);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		int e = errno;

		free(of->tmp);
		of->tmp = NULL;
		errno = e;
	}
	return fd;
}

/* Split path into its directory (a new string) and its last component (in path). */
static int split(const char *path, char **dir, const char **name)
{
	const char *slash = strrchr(path, '/');

	*name = slash ? slash + 1 : path;
	if (!slash)
		*dir = strdup(".");
	else if (slash == path)
		*dir = strdup("/");
	else
		*dir = strndup(path, (size_t)(slash - path));
	return *dir ? 0 : -ENOMEM;
}

static void open_stdout(struct outfile *of)
{
	of->is_stdout = true;
	of->dirfd = -1;
	of->fd = STDOUT_FILENO;
	of->f = stdout;
}

/* The file behind of->f: in place or beside, after the checks of what is at the path now. */
static int open_file(struct outfile *of, enum outfile_mode mode, char *why, size_t whylen)
{
	const char *name;
	char *dir = NULL;
	struct stat st;
	int err, fd = -1, tries;

	err = split(of->path, &dir, &name);
	if (err)
		return err;
	if (!*name || !strcmp(name, ".") || !strcmp(name, "..")) {
		files_say(why, whylen, "names a directory, not a file");
		err = -EISDIR;
		goto cleanup;
	}
	of->name = strdup(name);
	if (!of->name) {
		err = -ENOMEM;
		goto cleanup;
	}
	err = open_dir(dir, &of->dirfd, why, whylen);
	if (err)
		goto cleanup;
	/* Twice at most: a file made by someone else between the look and the create. */
	for (tries = 0; tries < 2; tries++) {
		if (fstatat(of->dirfd, of->name, &st, AT_SYMLINK_NOFOLLOW)) {
			if (errno != ENOENT)
				break;
			if (mode == OUTFILE_ATOMIC) {
				fd = create_beside(of);
				break;
			}
			fd = create_exclusive(of, of->name);
			of->created = fd >= 0;
			if (fd >= 0 || errno != EEXIST)
				break;
			continue;
		}
		if (S_ISLNK(st.st_mode)) {
			files_say(
			    why, whylen,
			    "a symbolic link: gpuleak writes no file through a link (name the file "
			    "it points to, or remove the link)");
			err = -ELOOP;
			goto cleanup;
		}
		if (S_ISDIR(st.st_mode)) {
			files_say(why, whylen, "a directory (name a file in it)");
			err = -EISDIR;
			goto cleanup;
		}
		if (!S_ISREG(st.st_mode)) {
			files_say(
			    why, whylen,
			    "%s, not a regular file: gpuleak writes and replaces regular files "
			    "only (- is standard output)",
			    files_kind(st.st_mode));
			err = -EINVAL;
			goto cleanup;
		}
		if (mode == OUTFILE_NEW) {
			files_say(why, whylen, "%s", strerror(EEXIST));
			err = -EEXIST;
			goto cleanup;
		}
		fd = create_beside(of);
		if (fd < 0) {
			/* the file itself may be writable where its directory is not */
			err = -errno;
			files_say(why, whylen,
				  "%s (making the file that replaces it, in its directory)",
				  strerror(errno));
			goto cleanup;
		}
		break;
	}
	if (fd < 0) {
		err = -errno;
		files_say(why, whylen, "%s", strerror(errno));
		goto cleanup;
	}
	of->fd = fd;
	if (of->tmp && asprintf(&of->tmp_path, "%s/%s", dir, of->tmp) < 0) {
		of->tmp_path = NULL;
		err = -ENOMEM;
		goto cleanup;
	}
cleanup:
	free(dir);
	return err;
}

int outfile__open(const char *path, enum outfile_mode mode, struct outfile **out, char *why,
		  size_t whylen)
{
	struct outfile *of;
	uid_t uid;
	gid_t gid;
	int err;

	*out = NULL;
	files_say(why, whylen, "%s", "");
	of = calloc(1, sizeof(*of));
	if (!of)
		return -ENOMEM;
	of->dirfd = of->fd = -1;
	of->path = strdup(path);
	if (!of->path) {
		err = -ENOMEM;
		goto fail;
	}
	if (outfile__is_stdout(path)) {
		open_stdout(of);
		*out = of;
		return 0;
	}
	err = open_file(of, mode, why, whylen);
	if (err)
		goto fail;
	/* Every file here is one gpuleak made (new, or beside the one it replaces): it changes
	 * hands. Someone's existing file is never rewritten, so never given away. */
	if (sudo_owner(&uid, &gid) && fchown(of->fd, uid, gid)) {
		err = -errno;
		files_say(why, whylen, "giving it to user %u: %s", (unsigned int)uid,
			  strerror(errno));
		goto fail;
	}
	of->f = fopencookie(of, "w", (cookie_io_functions_t){.write = of_write, .close = of_close});
	if (!of->f) {
		err = -errno;
		goto fail;
	}
	*out = of;
	return 0;
fail:
	if (err == -ENOMEM)
		files_say(why, whylen, "out of memory");
	outfile__abort(of);
	return err;
}

FILE *outfile__stream(struct outfile *of)
{
	return of->f;
}

int outfile__fd(const struct outfile *of)
{
	return of->fd;
}

const char *outfile__path(const struct outfile *of)
{
	return of->path;
}

const char *outfile__temp_path(const struct outfile *of)
{
	return of->tmp ? of->tmp_path : NULL;
}

int outfile__place(struct outfile *of)
{
	struct stat st;

	/* Standard output's errors are said once, for all that went there, at exit
	 * (outfile__stdout_close). */
	if (of->is_stdout) {
		fflush(stdout);
		return 0;
	}
	if (fflush(of->f) && !of->err)
		of->err = -EIO;
	if (of->err)
		return of->err;
	if (!of->tmp)
		return 0;
	/* The data before the name: after a crash the path holds the old file or the new one. */
	if (fsync(of->fd))
		return -errno;
	/* Replaced since open by what is not a regular file: never replace that. */
	if (!fstatat(of->dirfd, of->name, &st, AT_SYMLINK_NOFOLLOW) && !S_ISREG(st.st_mode))
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (renameat(of->dirfd, of->tmp, of->dirfd, of->name))
		return -errno;
	free(of->tmp);
	of->tmp = NULL;
	return 0;
}

static void release(struct outfile *of)
{
	if (of->f && !of->is_stdout)
		fclose(of->f);
	if (of->fd >= 0 && !of->is_stdout)
		close(of->fd);
	if (of->dirfd >= 0)
		close(of->dirfd);
	free(of->path);
	free(of->name);
	free(of->tmp);
	free(of->tmp_path);
	free(of);
}

int outfile__commit(struct outfile *of)
{
	int err;

	if (!of)
		return 0;
	err = outfile__place(of);
	if (!of->is_stdout && close(of->fd) && !err)
		err = -errno;
	of->fd = -1;
	/* Nothing half-written beside the path: what it had stays, nothing else is left. */
	if (err && of->tmp)
		unlinkat(of->dirfd, of->tmp, 0);
	release(of);
	return err;
}

void outfile__close(struct outfile *of)
{
	if (!of)
		return;
	if (of->f && !of->is_stdout)
		fflush(of->f);
	release(of);
}

void outfile__abort(struct outfile *of)
{
	if (!of)
		return;
	if (of->dirfd >= 0 && of->tmp)
		unlinkat(of->dirfd, of->tmp, 0);
	else if (of->dirfd >= 0 && of->created)
		unlinkat(of->dirfd, of->name, 0);
	release(of);
}

/* ---- standard output ---- */

bool outfile__is_stdout(const char *path)
{
	return path && !strcmp(path, "-");
}

static int stdout_err; /* -errno of the first write to standard output that failed */
static bool stdout_kept;

static ssize_t stdout_write(void *cookie, const char *buf, size_t len)
{
	(void)cookie;
	return write_all(STDOUT_FILENO, buf, len, &stdout_err);
}

static int stdout_closefn(void *cookie)
{
	(void)cookie;
	if (close(STDOUT_FILENO) && !stdout_err)
		stdout_err = -errno;
	return 0;
}

int outfile__stdout_init(void)
{
	FILE *f = fopencookie(
	    NULL, "w", (cookie_io_functions_t){.write = stdout_write, .close = stdout_closefn});

	if (!f)
		return -errno;
	/* line by line, as a terminal or a pipe to jq wants NDJSON */
	setvbuf(f, NULL, _IOLBF, 0);
	stdout = f;
	stdout_kept = true;
	return 0;
}

static int stdout_flush(void)
{
	if (fflush(stdout) && !stdout_err)
		stdout_err = -EIO;
	/* a stream not made by outfile__stdout_init loses the errno: say at least that */
	if (!stdout_kept && ferror(stdout) && !stdout_err)
		stdout_err = -EIO;
	return stdout_err;
}

int outfile__stdout_close(void)
{
	int err = stdout_flush();

	if (stdout_kept) {
		fclose(stdout);
		stdout_kept = false;
		err = stdout_err;
	}
	return err;
}
