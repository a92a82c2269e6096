// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/rundir.h"

bool rundir__dir(char *out, size_t size)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	struct stat st;
	int n;

	if (!geteuid())
		n = snprintf(out, size, "/run/gpuleak");
	else if (xdg && xdg[0] == '/')
		n = snprintf(out, size, "%s/gpuleak", xdg);
	else
		return false;
	if (n < 0 || (size_t)n >= size)
		return false;
	if (mkdir(out, 0700) && errno != EEXIST)
		return false;
	/* Ours alone: another user's answers are never taken for ours. */
	return !lstat(out, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	       !(st.st_mode & 022);
}

static int note_build_id(struct dl_phdr_info *info, size_t size, void *data)
{
	char *out = data;
	int i;

	(void)size;
	/* The first object is the executable itself. */
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr), *end;

		if (ph->p_type != PT_NOTE)
			continue;
		for (end = p + ph->p_memsz; p + sizeof(ElfW(Nhdr)) <= end;) {
			const ElfW(Nhdr) *n = (const ElfW(Nhdr) *)p;
			const unsigned char *desc =
			    (const unsigned char *)p + sizeof(*n) + ((n->n_namesz + 3) & ~3u);
			unsigned int j;

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 && n->n_descsz <= 64 &&
			    !memcmp(p + sizeof(*n), "GNU", 4)) {
				for (j = 0; j < n->n_descsz; j++)
					sprintf(out + 2 * j, "%02x", desc[j]);
				return 1;
			}
			p += sizeof(*n) + ((n->n_namesz + 3) & ~3u) + ((n->n_descsz + 3) & ~3u);
		}
	}
	return 1;
}

const char *rundir__build_id(void)
{
	static char build[129];
	static bool done;

	if (!done)
		dl_iterate_phdr(note_build_id, build);
	done = true;
	return build;
}

char *rundir__read(const char *path, size_t max, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	ssize_t n;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022) || (size_t)st.st_size > max)
		goto out;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		goto out;
	/* Another gpuleak replaces the file by rename, never writes into it: one size. */
	while (got < (size_t)st.st_size) {
		n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	buf[got] = 0;
	*len = got;
out:
	close(fd);
	return buf;
}

int rundir__write(const char *path, const char *data, size_t len)
{
	char tmp[4200];
	size_t done = 0;
	ssize_t n;
	int fd, err = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.%d", path, getpid()) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	while (done < len && !err) {
		n = write(fd, data + done, len - done);
		if (n <= 0)
			err = n < 0 ? -errno : -EIO;
		else
			done += (size_t)n;
	}
	if (close(fd) && !err)
		err = -errno;
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}
