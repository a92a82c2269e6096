// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: perf maps (symbols/perfmap.c), the file a traced process writes for its
 * JIT code, on arbitrary bytes. Besides not crashing, it checks what the reader promises:
 *   - bytes fed at once, in chunks of sizes taken from the input, and read from a file that
 *     grows in two steps give the same entries (incremental reading loses and invents nothing);
 *   - a found entry starts at or below the address looked up;
 *   - every found name describes as a function (V8's and CPython's forms included);
 *   - a map with small bounds keeps no more than its bounds.
 * The addresses looked up are each line's first field and its neighbours, so lookups meet the
 * entries the input defines.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "symbols/perfmap.h"

static char path[64];

static void remove_file(void)
{
	unlink(path);
}

static void same(const struct perfmap *a, const struct perfmap *b, uint64_t addr, const char *what)
{
	uint64_t sa = 0, sb = 0;
	const char *na = perfmap__find(a, addr, &sa), *nb = perfmap__find(b, addr, &sb);
	char *func = NULL, *where = NULL;

	if ((!na) != (!nb) || (na && (strcmp(na, nb) || sa != sb))) {
		fprintf(stderr, "0x%llx: '%s' at 0x%llx at once, '%s' at 0x%llx %s\n",
			(unsigned long long)addr, na ? na : "-", (unsigned long long)sa,
			nb ? nb : "-", (unsigned long long)sb, what);
		abort();
	}
	if (!na)
		return;
	if (sa > addr) {
		fprintf(stderr, "0x%llx: found '%s' starting above it\n", (unsigned long long)addr,
			na);
		abort();
	}
	if (perfmap__describe(na, &func, &where) || !func) {
		fprintf(stderr, "'%s' does not describe\n", na);
		abort();
	}
	free(func);
	free(where);
}

static void lookups(const struct perfmap *whole, const struct perfmap *other, const char *text,
		    size_t len, const char *what)
{
	size_t i = 0;

	while (i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t end = nl ? (size_t)(nl - text) : len;
		char buf[24];
		size_t n = end - i < sizeof(buf) - 1 ? end - i : sizeof(buf) - 1;
		uint64_t a;

		memcpy(buf, text + i, n);
		buf[n] = 0;
		a = strtoull(buf, NULL, 16);
		same(whole, other, a, what);
		same(whole, other, a + 1, what);
		same(whole, other, a - 1, what);
		i = end + 1;
	}
}

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct perfmap *whole = NULL, *chunks = NULL, *file = NULL, *small = NULL;
	const char *text = (const char *)data;
	struct perfmap_stats st;
	uint32_t rnd = size ? data[0] * 2654435761u + 1 : 1;
	size_t i, half = size / 2;
	int fd;

	if (!path[0]) {
		const char *tmp = getenv("TMPDIR");

		snprintf(path, sizeof(path), "%s/gpuleak-fuzz-perfmap-%d.map",
			 tmp && strlen(tmp) < 24 ? tmp : "/tmp", (int)getpid());
		atexit(remove_file);
	}
	if (perfmap__new(&whole) || perfmap__new(&chunks) || perfmap__new(&file) ||
	    perfmap__new(&small))
		goto out;
	perfmap__feed(whole, text, size);
	for (i = 0; i < size;) {
		size_t n;

		rnd = rnd * 1103515245u + 12345u;
		n = 1 + (rnd >> 16) % 97;
		if (n > size - i)
			n = size - i;
		perfmap__feed(chunks, text + i, n);
		i += n;
	}
	lookups(whole, chunks, text, size, "in chunks");

	/* the file, written in two steps with a read after each */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0) {
		if (!write_all(fd, data, half)) {
			perfmap__refresh(file, NULL, path, geteuid());
			if (!write_all(fd, data + half, size - half)) {
				perfmap__refresh(file, NULL, path, geteuid());
				lookups(whole, file, text, size, "from a growing file");
			}
		}
		close(fd);
	}

	perfmap__set_limits(small, 8, 256);
	perfmap__feed(small, text, size);
	perfmap__stats(small, &st);
	if (st.entries > 8 || st.name_bytes > 256) {
		fprintf(stderr, "bounds passed: %zu entries, %zu bytes\n", st.entries,
			st.name_bytes);
		abort();
	}
out:
	perfmap__free(whole);
	perfmap__free(chunks);
	perfmap__free(file);
	perfmap__free(small);
	return 0;
}
