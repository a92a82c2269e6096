/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The objects an executable maps at its start: itself and the libraries it needs (DT_NEEDED,
 * transitively), found where the dynamic linker looks for them: the loader's DT_RPATH (and the
 * executable's) unless it has a DT_RUNPATH, LD_LIBRARY_PATH, DT_RUNPATH, the directories of
 * /etc/ld.so.conf, then the system's. Nothing of the program runs: this is how run mode checks
 * a marker's FILE and SYMBOL before the command starts. ld.so has the last word; a library
 * found here is what it would load in all but exotic setups ($LIB, $PLATFORM, hwcaps
 * subdirectories, preloads), and one not found is kept by its name alone.
 */
#ifndef GPULEAK_PROBE_NEEDED_H
#define GPULEAK_PROBE_NEEDED_H

#include <stddef.h>

struct elf_obj;

struct needed_obj {
	char *name;	     /* as DT_NEEDED says it; the executable: its path */
	char *path;	     /* the file found (its real path), NULL when none was */
	struct elf_obj *elf; /* NULL when no file was found */
};

struct needed {
	struct needed_obj *v; /* the executable first, then breadth first, as ld.so loads */
	size_t n, cap;
};

/* Load exe's list. 0, or -errno when exe itself cannot be read as ELF. */
int needed__load(const char *exe, struct needed **out);
/* Accepts NULL. */
void needed__free(struct needed *nd);

#endif
