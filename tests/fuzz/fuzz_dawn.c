// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: an object file as the Dawn proc-table recovery reads it (probe/elf_image.c,
 * probe/dawn_procs.c), on arbitrary bytes: what `gpuleak probes --lib` and attach do with any
 * library that has no wgpu* symbols. Besides not crashing, hanging or reading out of bounds
 * (the sanitizers, libFuzzer's -timeout), it checks what the two promise:
 *   - a refused object says why in one line that names where (a file offset or address);
 *   - every word the image gives for an .init_array entry or an unwind-table lookup lies in
 *     the file's bytes, and a function found contains the address looked up;
 *   - a recovered table has at least 8 entries, each named "wgpu[A-Z]..." and found by it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "probe/dawn_procs.h"
#include "probe/elf_image.h"
#include "probe/elf_obj.h"

static char path[64];

static void remove_file(void)
{
	unlink(path);
}

static void said(int err, const char *why, const char *what)
{
	if (err != -EINVAL)
		return;
	if (!why[0] || strchr(why, '\n') || !strstr(why, "0x")) {
		fprintf(stderr, "%s refused without one line naming where: '%s'\n", what, why);
		abort();
	}
}

static void image(struct elf_obj *o)
{
	struct elf_image *im = NULL;
	char why[160];
	size_t i, n;
	int err = elf_image__new(o, &im, why, sizeof(why));

	said(err, why, "image");
	if (err)
		return;
	n = elf_image__nr_init(im);
	for (i = 0; i < n; i++) {
		uint64_t f = elf_image__init(im, i), size = 0, start;

		/* Each entry's function, and the unwind lookups a table search makes. */
		start = elf_image__func_start(im, f, &size);
		if (start && (start > f || (f != start && f - start >= size))) {
			fprintf(stderr,
				"0x%llx: function at 0x%llx (%llu bytes) does not hold it\n",
				(unsigned long long)f, (unsigned long long)start,
				(unsigned long long)size);
			abort();
		}
	}
	if (elf_image__bad(im))
		said(-EINVAL, elf_image__bad(im), "unwind entry");
	elf_image__free(im);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dawn_procs *p = NULL;
	struct elf_obj *o = NULL;
	char why[160];
	size_t i;
	FILE *f;
	int err;

	if (!path[0]) {
		snprintf(path, sizeof(path), "/dev/shm/gpuleak-fuzz-dawn-%d.so", (int)getpid());
		atexit(remove_file);
	}
	f = fopen(path, "w");
	if (!f || fwrite(data, 1, size, f) != size || fclose(f))
		abort();
	if (elf_obj__open(path, &o))
		return 0;
	image(o);
	err = dawn_procs__recover(o, &p, why, sizeof(why));
	said(err, why, "table");
	if (!err) {
		if (p->n < 8) {
			fprintf(stderr, "a table of %zu entries\n", p->n);
			abort();
		}
		for (i = 0; i < p->n; i++) {
			const char *n = p->v[i].name;

			if (strncmp(n, "wgpu", 4) || n[4] < 'A' || n[4] > 'Z') {
				fprintf(stderr, "entry %zu named '%s'\n", i, n);
				abort();
			}
			if (dawn_procs__find(p, n) == NULL) {
				fprintf(stderr, "entry '%s' not found by name\n", n);
				abort();
			}
		}
	}
	dawn_procs__free(p);
	elf_obj__free(o);
	return 0;
}
