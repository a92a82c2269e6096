// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the store of facts about objects (probe/objfacts.c), the file a run of
 * gpuleak leaves in /run/gpuleak for the next, on arbitrary bytes. Besides not crashing, it
 * checks what the store promises:
 *   - what parses is bounded (FACTS_MAX files) and holds only known facts, none empty;
 *   - written out and read back, it holds the same files with the same facts, in order;
 *   - every file it holds answers a lookup with its facts, and a file differing from it in
 *     any one field (another version) answers none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "probe/objfacts.h"

static void fail(const char *what, size_t i)
{
	fprintf(stderr, "file %zu: %s\n", i, what);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct objfacts *f = NULL, *g = NULL;
	struct file_id id, id2;
	unsigned int bits, bits2;
	char why[128];
	size_t i, len;
	char *text;

	if (objfacts__parse((const char *)data, size, &f, why, sizeof(why)))
		return 0;
	if (objfacts__count(f) > 20000)
		fail("more files than the bound", objfacts__count(f));
	text = objfacts__format(f, &len);
	if (!text)
		goto out;
	if (objfacts__parse(text, len, &g, why, sizeof(why)))
		fail(why, 0);
	if (objfacts__count(g) != objfacts__count(f))
		fail("a different count read back", objfacts__count(g));
	for (i = 0; objfacts__at(f, i, &id, &bits); i++) {
		uint64_t *field[] = {&id2.dev, &id2.ino, &id2.size, &id2.mtime_ns, &id2.ctime_ns};
		size_t k;

		if (!bits || (bits & ~(unsigned int)OBJF_ALL))
			fail("empty or unknown facts", i);
		if (!objfacts__at(g, i, &id2, &bits2) || memcmp(&id, &id2, sizeof(id)) ||
		    bits != bits2)
			fail("not the same when read back", i);
		if (objfacts__get(f, &id) != bits)
			fail("a lookup does not find it", i);
		/* size, mtime, ctime: the same file (device, inode) in another version. */
		for (k = 2; k < sizeof(field) / sizeof(field[0]); k++) {
			id2 = id;
			(*field[k])++;
			if (objfacts__get(f, &id2))
				fail("another version of a file answers", i);
		}
	}
	free(text);
out:
	objfacts__free(f);
	objfacts__free(g);
	return 0;
}
