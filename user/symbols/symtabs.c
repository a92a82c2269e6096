// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/log.h"
#include "lib/vec.h"
#include "probe/elf_obj.h"
#include "symbols/symbolizer.h"
#include "symbols/symtabs.h"

/* One ELF object per build-id names every file with that build-id (copies, containers). */
struct bid_obj {
	const char *build_id; /* the object's own string */
	struct elf_obj *elf;
};

struct symtabs {
	struct bid_obj *bids;
	size_t nr_bids, cap_bids;
	const char *const *debug_dirs; /* --debug-dir, searched before /usr/lib/debug */
	size_t nr_debug_dirs;
	unsigned int objects, shared, debug_files;
};

int symtabs__new(struct symtabs **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void symtabs__free(struct symtabs *t)
{
	if (!t)
		return;
	free(t->bids);
	free(t);
}

void symtabs__set_debug_dirs(struct symtabs *t, const char *const *dirs, size_t n)
{
	t->debug_dirs = dirs;
	t->nr_debug_dirs = n;
}

void symtabs__stats(const struct symtabs *t, unsigned int *objects, unsigned int *shared,
		    unsigned int *debug_files)
{
	*objects = t->objects;
	*shared = t->shared;
	*debug_files = t->debug_files;
}

#define DEBUG_ROOT "/usr/lib/debug"

/* Whether path is a debug file of elf (and now names its code). */
static bool try_debug(struct symtabs *t, struct elf_obj *elf, const char *obj, const char *path)
{
	int err = elf_obj__add_debug(elf, path);

	if (!err) {
		t->debug_files++;
		pr_info("naming %s from its debug file %s\n", obj, path);
		return true;
	}
	if (err != -ENOENT && err != -ENOTDIR)
		pr_info("not naming %s from %s: %s\n", obj, path,
			err == -ESTALE ? "another build of it" : strerror(-err));
	return false;
}

/*
 * A separate debug file for a mapped object without .symtab, where gdb looks: by build-id
 * under each debug directory (--debug-dir, then /usr/lib/debug as the target sees it, then
 * as we do), then by its .gnu_debuglink name beside the object, in .debug/ beside it, and
 * under each debug directory followed by the object's directory. A file of another build
 * is never used (elf_obj__add_debug checks).
 */
static void find_debug(struct symtabs *t, pid_t pid, const char *obj_path, const char *name,
		       struct elf_obj *elf)
{
	const char *bid = elf_obj__build_id(elf), *dirs[SYMBOLIZER_MAX_DEBUG_DIRS + 2];
	const char *roots[2], *link, *slash;
	char root[48], target_debug[64], path[2 * PATH_MAX];
	size_t i, n = 0, dir_len;
	uint32_t crc;

	for (i = 0; i < t->nr_debug_dirs && i < SYMBOLIZER_MAX_DEBUG_DIRS; i++)
		dirs[n++] = t->debug_dirs[i];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)pid);
	snprintf(target_debug, sizeof(target_debug), "%s%s", root, DEBUG_ROOT);
	dirs[n++] = target_debug;
	dirs[n++] = DEBUG_ROOT;
	if (strlen(bid) > 2)
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dirs[i], bid,
				 bid + 2);
			if (try_debug(t, elf, name, path))
				return;
		}
	link = elf_obj__debuglink(elf, &crc);
	slash = obj_path ? strrchr(obj_path, '/') : NULL;
	if (!link || obj_path[0] != '/' || !slash)
		return;
	dir_len = (size_t)(slash - obj_path);
	roots[0] = root;
	roots[1] = "";
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s%.*s/%s", roots[i], (int)dir_len, obj_path, link);
		if (try_debug(t, elf, name, path))
			return;
		snprintf(path, sizeof(path), "%s%.*s/.debug/%s", roots[i], (int)dir_len, obj_path,
			 link);
		if (try_debug(t, elf, name, path))
			return;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%.*s/%s", dirs[i], (int)dir_len, obj_path, link);
		if (try_debug(t, elf, name, path))
			return;
	}
}

struct elf_obj *symtabs__elf(struct symtabs *t, struct elf_obj *elf, pid_t pid, const char *path,
			     const char *name)
{
	const char *bid;
	size_t i;

	if (!elf)
		return NULL;
	t->objects++;
	if (elf_obj__needs_debug(elf))
		find_debug(t, pid, path, name, elf);
	bid = elf_obj__build_id(elf);
	if (!bid[0])
		return elf;
	for (i = 0; i < t->nr_bids; i++) {
		struct bid_obj *b = &t->bids[i];

		if (strcmp(b->build_id, bid))
			continue;
		if (b->elf != elf && elf_obj__has_symtab(elf) && !elf_obj__has_symtab(b->elf)) {
			b->elf = elf;
			b->build_id = bid;
		} else if (b->elf != elf) {
			t->shared++;
		}
		return b->elf;
	}
	/* Without room the object is still named, from itself. */
	if (!vec_grow((void **)&t->bids, &t->cap_bids, t->nr_bids, sizeof(*t->bids)))
		t->bids[t->nr_bids++] = (struct bid_obj){bid, elf};
	return elf;
}
