// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * lib/outfile and lib/infile: every file gpuleak writes for the user is private, changes
 * hands under sudo only when gpuleak made it, is never written through a link or anything but
 * a regular file, and replaces what the user had only at commit; an abort or a failed write
 * leaves the path as it was. Every file it reads by name is opened without blocking on a FIFO.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>
#include "check.h"
#include "lib/infile.h"
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

static bool has(const char *path, const char *text)
{
	char buf[256] = {};
	FILE *f = fopen(path, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	return f && n == strlen(text) && !memcmp(buf, text, n);
}

/* Names in the test directory, besides the ones the test made on purpose. */
static int entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	while (d && (e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return n;
}

static void private_new_file_in_place(void)
{
	struct outfile *of;
	char p[256], why[256];
	struct stat st;

	path_of(p, sizeof(p), "new.json");
	unsetenv("SUDO_UID");
	if (!CHECK(!outfile__open(p, OUTFILE_REPLACE, &of, why, sizeof(why)), "creates: %s", why))
		return;
	CHECK(!outfile__temp_path(of), "a new path is written in place");
	fputs("{}\n", outfile__stream(of));
	fflush(outfile__stream(of));
	CHECK(size_of(p) == 3, "readable as it is written (NDJSON followed by a reader)");
	CHECK(!outfile__commit(of), "commit");
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0600, "mode 0600: %o", st.st_mode & 0777);
	CHECK(has(p, "{}\n"), "what was written is there");
	unlink(p);
}

static void replace_writes_beside_until_commit(void)
{
	struct outfile *of;
	char p[256], why[256];
	struct stat st;

	path_of(p, sizeof(p), "prev.json");
	put(p, "old contents", 0644);
	if (!CHECK(!outfile__open(p, OUTFILE_REPLACE, &of, why, sizeof(why)), "opens: %s", why))
		return;
	CHECK(outfile__temp_path(of) && strstr(outfile__temp_path(of), "/.prev.json."),
	      "beside it: %s", outfile__temp_path(of));
	CHECK(entries() == 2, "the file and the one beside it");
	fputs("new\n", outfile__stream(of));
	CHECK(has(p, "old contents"), "untouched until commit");
	CHECK(!outfile__commit(of), "commit");
	CHECK(has(p, "new\n"), "replaced at commit");
	CHECK(!stat(p, &st) && (st.st_mode & 0777) == 0600, "a new private file: %o",
	      st.st_mode & 0777);
	CHECK(entries() == 1, "nothing left beside it");
	unlink(p);
}

static void abort_leaves_the_path_as_it_was(void)
{
	struct outfile *of;
	char p[256], q[256];

	path_of(p, sizeof(p), "prev.json");
	path_of(q, sizeof(q), "fresh.json");
	put(p, "old contents", 0644);
	if (CHECK(!outfile__open(p, OUTFILE_REPLACE, &of, NULL, 0), "opens")) {
		fputs("half", outfile__stream(of));
		outfile__abort(of);
	}
	CHECK(has(p, "old contents"), "a failed start loses nothing");
	if (CHECK(!outfile__open(q, OUTFILE_REPLACE, &of, NULL, 0), "creates"))
		outfile__abort(of);
	CHECK(size_of(q) == -1, "and leaves no empty file behind");
	if (CHECK(!outfile__open(q, OUTFILE_ATOMIC, &of, NULL, 0), "atomic")) {
		CHECK(size_of(q) == -1, "atomic: nothing at the path before commit");
		outfile__abort(of);
	}
	CHECK(entries() == 1, "nothing left beside");
	unlink(p);
}

static void a_failed_write_replaces_nothing(void)
{
	struct rlimit old, small = {.rlim_cur = 8, .rlim_max = RLIM_INFINITY};
	struct outfile *of;
	char p[256], q[256];
	int err;

	path_of(p, sizeof(p), "prev.json");
	path_of(q, sizeof(q), "fresh.json");
	put(p, "old contents", 0644);
	/* A file size limit makes writes fail as a full disk does, without root. */
	signal(SIGXFSZ, SIG_IGN);
	getrlimit(RLIMIT_FSIZE, &old);
	small.rlim_max = old.rlim_max;
	if (CHECK(!outfile__open(p, OUTFILE_REPLACE, &of, NULL, 0), "opens")) {
		setrlimit(RLIMIT_FSIZE, &small);
		fputs("more than eight bytes\n", outfile__stream(of));
		err = outfile__commit(of);
		setrlimit(RLIMIT_FSIZE, &old);
		CHECK(err == -EFBIG, "the write's own errno: %d", err);
	}
	CHECK(has(p, "old contents"), "a half-written file never replaces a good one");
	if (CHECK(!outfile__open(q, OUTFILE_REPLACE, &of, NULL, 0), "creates")) {
		setrlimit(RLIMIT_FSIZE, &small);
		fputs("more than eight bytes\n", outfile__stream(of));
		err = outfile__commit(of);
		setrlimit(RLIMIT_FSIZE, &old);
		CHECK(err == -EFBIG, "said: %d", err);
	}
	CHECK(size_of(q) == 8, "a new file keeps what it got: %ld", size_of(q));
	CHECK(entries() == 2, "nothing left beside");
	signal(SIGXFSZ, SIG_DFL);
	unlink(p);
	unlink(q);
}

static void new_refuses_what_exists(void)
{
	struct outfile *of = NULL;
	char p[256], why[256];

	path_of(p, sizeof(p), "capture.glc");
	put(p, "evidence", 0600);
	CHECK(outfile__open(p, OUTFILE_NEW, &of, why, sizeof(why)) == -EEXIST && !of, "-EEXIST");
	CHECK(!strcmp(why, "File exists"), "%s", why);
	CHECK(has(p, "evidence"), "untouched");
	unlink(p);
	CHECK(!outfile__open(p, OUTFILE_NEW, &of, NULL, 0), "a new path");
	CHECK(!outfile__temp_path(of), "in place: a capture is read while it grows");
	outfile__close(of);
	CHECK(size_of(p) == 0, "close keeps it");
	unlink(p);
}

static void refuses_links_and_what_is_not_a_file(void)
{
	static const enum outfile_mode modes[] = {OUTFILE_NEW, OUTFILE_REPLACE, OUTFILE_ATOMIC};
	struct outfile *of = NULL;
	char link[256], target[256], fifo[256], dev[256], why[256];
	size_t i;

	path_of(link, sizeof(link), "x.json");
	path_of(target, sizeof(target), "target");
	path_of(fifo, sizeof(fifo), "fifo");
	path_of(dev, sizeof(dev), "full");
	put(target, "precious", 0644);
	CHECK(!symlink(target, link), "a planted symlink");
	CHECK(!mkfifo(fifo, 0600), "a FIFO");
	for (i = 0; i < 3; i++) {
		CHECK(outfile__open(link, modes[i], &of, why, sizeof(why)) == -ELOOP && !of,
		      "mode %zu: a link is refused: %s", i, why);
		CHECK(strstr(why, "a symbolic link"), "says so: %s", why);
		/* A FIFO would block an open for writing until a reader came: never opened. */
		CHECK(outfile__open(fifo, modes[i], &of, why, sizeof(why)) == -EINVAL && !of,
		      "mode %zu: a FIFO is refused", i);
		CHECK(strstr(why, "a FIFO, not a regular file"), "%s", why);
		CHECK(outfile__open(dir, modes[i], &of, why, sizeof(why)) == -EISDIR && !of,
		      "mode %zu: a directory", i);
	}
	CHECK(has(target, "precious") && size_of(link) > 0, "the link and its target untouched");
	if (!geteuid() && !mknod(dev, S_IFCHR | 0666, makedev(1, 7))) {
		struct stat st;

		CHECK(outfile__open(dev, OUTFILE_REPLACE, &of, why, sizeof(why)) == -EINVAL,
		      "a device node is never replaced");
		CHECK(strstr(why, "a character device"), "%s", why);
		CHECK(!lstat(dev, &st) && S_ISCHR(st.st_mode), "still the device");
		unlink(dev);
	}
	unlink(link);
	unlink(target);
	unlink(fifo);
}

/*
 * As root, in a sticky world-writable directory (a /tmp), links another user planted are
 * never followed: at the path, nor on the way to it; a link of root's own is.
 */
static void planted_links_in_a_sticky_directory(void)
{
	struct outfile *of = NULL;
	char sticky[128], elsewhere[128], link[256], p[512], target[512], why[256];

	if (geteuid())
		return;
	path_of(sticky, sizeof(sticky), "tmp");
	path_of(elsewhere, sizeof(elsewhere), "etc");
	if (!CHECK(!mkdir(sticky, 0755) && !chmod(sticky, 01777) && !mkdir(elsewhere, 0755),
		   "directories"))
		return;
	snprintf(target, sizeof(target), "%s/passwd", elsewhere);
	put(target, "precious", 0644);
	/* /tmp/evil -> /etc by user nobody: /tmp/evil/passwd would be /etc/passwd */
	snprintf(link, sizeof(link), "%s/evil", sticky);
	CHECK(!symlink(elsewhere, link) && !lchown(link, 65534, 65534), "nobody's link");
	snprintf(p, sizeof(p), "%s/passwd", link);
	CHECK(outfile__open(p, OUTFILE_REPLACE, &of, why, sizeof(why)) == -ELOOP && !of,
	      "not followed on the way");
	CHECK(strstr(why, "evil (on the way) is a symbolic link of user 65534"), "%s", why);
	CHECK(has(target, "precious"), "the target untouched");
	/* the same link, root's: followed, as the kernel's fs.protected_symlinks=1 would */
	CHECK(!lchown(link, 0, 0), "root's link");
	if (CHECK(!outfile__open(p, OUTFILE_REPLACE, &of, why, sizeof(why)), "followed: %s", why))
		outfile__abort(of);
	unlink(link);
	unlink(target);
	rmdir(sticky);
	rmdir(elsewhere);
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
	if (CHECK(!outfile__open(p, OUTFILE_ATOMIC, &of, NULL, 0), "creates"))
		CHECK(!outfile__commit(of), "commit");
	CHECK(!stat(p, &st) && st.st_uid == 65534 && st.st_gid == 65533, "owner %u:%u", st.st_uid,
	      st.st_gid);
	/* a file replaced is a new file gpuleak made: the user's, private */
	if (CHECK(!outfile__open(q, OUTFILE_REPLACE, &of, NULL, 0), "opens"))
		CHECK(!outfile__commit(of), "commit");
	CHECK(!stat(q, &st) && st.st_uid == 65534 && (st.st_mode & 0777) == 0600,
	      "the replacement is the user's: %u %o", st.st_uid, st.st_mode & 0777);
	unsetenv("SUDO_UID");
	unsetenv("SUDO_GID");
	unlink(p);
	unlink(q);
}

static void errors_leave_nothing(void)
{
	struct outfile *of = NULL;
	char p[256], why[256];

	path_of(p, sizeof(p), "no/such/dir.json");
	CHECK(outfile__open(p, OUTFILE_REPLACE, &of, why, sizeof(why)) == -ENOENT && !of,
	      "-ENOENT");
	CHECK(!strcmp(why, "No such file or directory"), "%s", why);
	path_of(p, sizeof(p), "");
	CHECK(outfile__open(p, OUTFILE_REPLACE, &of, NULL, 0) == -EISDIR && !of, "DIR/");
	CHECK(!outfile__commit(NULL), "commit(NULL)");
	outfile__abort(NULL);
	outfile__close(NULL);
	CHECK(entries() == 0, "nothing made");
}

static void a_long_name_has_room_beside(void)
{
	struct outfile *of;
	char name[256], p[512];

	memset(name, 'n', 255);
	name[255] = 0;
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	put(p, "old", 0600);
	if (CHECK(!outfile__open(p, OUTFILE_ATOMIC, &of, NULL, 0), "a 255-byte name")) {
		fputs("new", outfile__stream(of));
		CHECK(!outfile__commit(of), "commit");
	}
	CHECK(has(p, "new"), "replaced");
	unlink(p);
}

static void dash_is_standard_output(void)
{
	struct outfile *of;

	CHECK(outfile__is_stdout("-") && !outfile__is_stdout("./-") && !outfile__is_stdout(NULL),
	      "only - itself");
	if (!CHECK(!outfile__open("-", OUTFILE_ATOMIC, &of, NULL, 0), "opens"))
		return;
	CHECK(outfile__stream(of) == stdout && outfile__fd(of) == 1, "stdout");
	CHECK(!outfile__commit(of), "flushed");
	CHECK(fcntl(1, F_GETFD) >= 0, "never closed");
}

static void infile_never_blocks_on_a_fifo(void)
{
	char fifo[256], p[256], why[256];
	bool stream;
	int fd, pipefd[2];

	path_of(fifo, sizeof(fifo), "fifo");
	path_of(p, sizeof(p), "file");
	CHECK(!mkfifo(fifo, 0600), "a FIFO without a writer");
	CHECK(infile__open(fifo, &fd, &stream, why, sizeof(why)) == -EINVAL && fd == -1,
	      "refused, not waited on");
	CHECK(strstr(why, "a FIFO, not a regular file (a pipe is read as standard input: -)"), "%s",
	      why);
	CHECK(infile__open(dir, &fd, NULL, why, sizeof(why)) == -EISDIR, "a directory");
	CHECK(!strcmp(why, "a directory, not a regular file"), "%s", why);
	put(p, "x", 0600);
	if (CHECK(!infile__open(p, &fd, &stream, NULL, 0), "a file"))
		close(fd);
	CHECK(!stream, "a file is no stream");
	/* /dev/fd/N of a pipe: what a shell's <(...) names */
	if (CHECK(!pipe(pipefd), "pipe")) {
		char dev[64];

		snprintf(dev, sizeof(dev), "/dev/fd/%d", pipefd[0]);
		if (CHECK(!infile__open(dev, &fd, &stream, why, sizeof(why)), "%s: %s", dev, why))
			close(fd);
		CHECK(stream, "a pipe is a stream");
		CHECK(infile__open(dev, &fd, NULL, why, sizeof(why)) == -EINVAL,
		      "refused where a file is needed");
		close(pipefd[0]);
		close(pipefd[1]);
	}
	CHECK(!strcmp(infile__name("-"), "standard input"), "named");
	unlink(fifo);
	unlink(p);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"outfile_private_new_file_in_place", private_new_file_in_place},
	    {"outfile_replace_writes_beside_until_commit", replace_writes_beside_until_commit},
	    {"outfile_abort_leaves_the_path_as_it_was", abort_leaves_the_path_as_it_was},
	    {"outfile_a_failed_write_replaces_nothing", a_failed_write_replaces_nothing},
	    {"outfile_new_refuses_what_exists", new_refuses_what_exists},
	    {"outfile_refuses_links_and_what_is_not_a_file", refuses_links_and_what_is_not_a_file},
	    {"outfile_planted_links_in_a_sticky_directory", planted_links_in_a_sticky_directory},
	    {"outfile_sudo_user_owns_what_root_makes", sudo_user_owns_what_root_makes},
	    {"outfile_errors_leave_nothing", errors_leave_nothing},
	    {"outfile_a_long_name_has_room_beside", a_long_name_has_room_beside},
	    {"outfile_dash_is_standard_output", dash_is_standard_output},
	    {"infile_never_blocks_on_a_fifo", infile_never_blocks_on_a_fifo},
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
