// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the store of facts about objects (probe/objfacts.c), the file a run of
 * gpuleak leaves in /run/gpuleak for the next, on arbitrary bytes. Besides not crashing, it
 * checks what the store promises:
 *   - what parses is bounded (FACTS_MAX files) and holds only known facts, none empty;
 *   - written out and read back, it holds the same files with the same facts, in order, and
 *     the same probe sites for those that keep them (bounded per file and in all);
 *   - every file it holds answers a lookup with its facts, and a file differing from it in
 *     any one field (another version) answers none.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "probe/objfacts.h"

static bool same_site(const struct objsite *a, const struct objsite *b)
{
	return a->api == b->api && a->local == b->local && a->source == b->source &&
	       a->slow == b->slow && a->offset == b->offset && a->vaddr == b->vaddr &&
	       a->entry_offset == b->entry_offset && a->place.place == b->place.place &&
	       a->place.moved == b->place.moved &&
	       !strncmp(a->place.first, b->place.first, sizeof(a->place.first)) &&
	       !strncmp(a->place.why, b->place.why, sizeof(a->place.why)) &&
	       a->offset - a->entry_offset == a->place.moved;
}

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
	size_t i, j, len, n, n2, all = 0;
	char why[128];
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

		if (!bits || (bits & ~(unsigned int)OBJF_ALL) ||
		    ((bits & OBJF_DEBUG_SYMS) && !(bits & (OBJF_SITES | OBJF_NO_SITES))) ||
		    ((bits & OBJF_SITES) && (bits & OBJF_NO_SITES)))
			fail("empty, unknown or inconsistent facts", i);
		if (!objfacts__at(g, i, &id2, &bits2) || memcmp(&id, &id2, sizeof(id)) ||
		    bits != bits2)
			fail("not the same when read back", i);
		if (objfacts__get(f, &id) != bits)
			fail("a lookup does not find it", i);
		const struct objsite *s = objfacts__sites(f, &id, &n), *s2;

		if (!s != !(bits & OBJF_SITES) || (s && (!n || n > OBJFACTS_SITES_PER_FILE)))
			fail("sites not as its facts say, or too many", i);
		if (s) {
			all += n;
			s2 = objfacts__sites(g, &id, &n2);
			if (!s2 || n2 != n)
				fail("not the same sites when read back", i);
			for (j = 0; j < n; j++)
				if (!same_site(&s[j], &s2[j]) || !memchr(s[j].place.first, 0, 12) ||
				    !memchr(s[j].place.why, 0, 48))
					fail("a site differs when read back", i);
		}
		/* size, mtime, ctime: the same file (device, inode) in another version. */
		for (k = 2; k < sizeof(field) / sizeof(field[0]); k++) {
			id2 = id;
			(*field[k])++;
			if (objfacts__get(f, &id2) || objfacts__sites(f, &id2, &n))
				fail("another version of a file answers", i);
		}
	}
	if (all > OBJFACTS_SITES_MAX)
		fail("more sites than the bound", all);
	free(text);
out:
	objfacts__free(f);
	objfacts__free(g);
	return 0;
}
