// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lib/outfile: every file gpuleak writes for the user is private, changes hands under sudo
 * only when gpuleak made it, and an abort takes back only what the open made.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "lib/outfile.h"

static char dir[] = "/tmp/gpuleak-outfile-XXXXXX";

static void path_of(char *buf, size_t len, const char *name)
{
	snprintf(buf, len, "%s/%s", dir, name);
}

static void put(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(path);
		fchmod(fd, mode);
		close(fd);
	}
}

static long size_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) ? -1 : (long)st.st_size;
}

static void private_new_file(void)
{
	struct outfile *of;
	char p[256];
	struct stat st;

	path_of(p, sizeof(p), "new.json");
	unsetenv("SUDO_UID");
	if (!CHECK(!outfile__open(p, OUTFILE_TRUNCATE, &of), "creates"))
		return;
	fputs("{}\n", outfile__stream(of));
	CHECK(!outfile__commit(of), "commit");
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0600, "mode 0600: %o", st.st_mode & 0777);
	CHECK(size_of(p) == 3, "what was written is there");
	unlink(p);
}

static void truncate_keeps_an_existing_file(void)
{
	struct outfile *of;
	char p[256];
	struct stat st;

	path_of(p, sizeof(p), "old.json");
	put(p, "old contents", 0644);
	if (!CHECK(!outfile__open(p, OUTFILE_TRUNCATE, &of), "opens"))
		return;
	CHECK(size_of(p) == 0, "emptied");
	outfile__abort(of);
	CHECK(size_of(p) == 0, "an abort leaves a file it did not create");
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0644, "its mode kept");
	unlink(p);
}

static void new_refuses_and_replace_replaces(void)
{
	struct outfile *of = NULL;
	char p[256], target[256];
	struct stat st;

	path_of(p, sizeof(p), "capture.glc");
	path_of(target, sizeof(target), "target");
	put(target, "precious", 0644);
	CHECK(!symlink(target, p), "a planted symlink");
	CHECK(outfile__open(p, OUTFILE_NEW, &of) == -EEXIST && !of, "new: -EEXIST");
	if (CHECK(!outfile__open(p, OUTFILE_REPLACE, &of), "replace: opens")) {
		CHECK(!lstat(p, &st) && S_ISREG(st.st_mode) && (st.st_mode & 0777) == 0600,
		      "a new private regular file, not the link");
		outfile__abort(of);
	}
	CHECK(size_of(p) == -1, "an abort removes what the open created");
	CHECK(size_of(target) == 8, "the link's target untouched");
	unlink(target);
}

static void sudo_user_owns_what_root_makes(void)
{
	struct outfile *of;
	char p[256], q[256];
	struct stat st;

	if (geteuid())
		return;
	path_of(p, sizeof(p), "mine.svg");
	path_of(q, sizeof(q), "theirs.svg");
	put(q, "x", 0644);
	setenv("SUDO_UID", "65534", 1);
	setenv("SUDO_GID", "65533", 1);
	if (CHECK(!outfile__open(p, OUTFILE_TRUNCATE, &of), "creates"))
		CHECK(!outfile__commit(of), "commit");
	CHECK(!stat(p, &st) && st.st_uid == 65534 && st.st_gid == 65533, "owner %u:%u", st.st_uid,
	      st.st_gid);
	if (CHECK(!outfile__open(q, OUTFILE_TRUNCATE, &of), "opens"))
		CHECK(!outfile__commit(of), "commit");
	CHECK(!stat(q, &st) && st.st_uid == 0, "an existing file never changes hands");
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	unlink(p);
	unlink(q);
}

static void errors_leave_nothing(void)
{
	struct outfile *of = NULL;
	char p[256];

	path_of(p, sizeof(p), "no/such/dir.json");
	CHECK(outfile__open(p, OUTFILE_TRUNCATE, &of) == -ENOENT && !of, "-ENOENT");
	CHECK(outfile__open(dir, OUTFILE_TRUNCATE, &of) == -EISDIR && !of, "-EISDIR");
	CHECK(!outfile__commit(NULL), "commit(NULL)");
	outfile__abort(NULL);
}

static void commit_says_a_failed_write(void)
{
	struct outfile *of;

	if (access("/dev/full", W_OK))
		return;
	if (!CHECK(!outfile__open("/dev/full", OUTFILE_TRUNCATE, &of), "opens /dev/full"))
		return;
	fputs("{}\n", outfile__stream(of));
	CHECK(outfile__commit(of) == -ENOSPC, "-ENOSPC");
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"outfile_private_new_file", private_new_file},
	    {"outfile_truncate_keeps_an_existing_file", truncate_keeps_an_existing_file},
	    {"outfile_new_refuses_and_replace_replaces", new_refuses_and_replace_replaces},
	    {"outfile_sudo_user_owns_what_root_makes", sudo_user_owns_what_root_makes},
	    {"outfile_errors_leave_nothing", errors_leave_nothing},
	    {"outfile_commit_says_a_failed_write", commit_says_a_failed_write},
	};
	int ret = 1;

	/* Every test makes its files in a directory of its own, removed at the end. */
	if (mkdtemp(dir))
		ret = run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
	else
		perror("mkdtemp");
	rmdir(dir);
	return ret;
}
