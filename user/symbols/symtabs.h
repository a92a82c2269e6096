/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The symbol tables code is named from: one ELF object per build-id, so every copy of a
 * library (another path, another container) has its table built once, and the separate
 * debug file of a stripped object, found where gdb looks. Live only: offline there are no
 * files.
 */
#ifndef GPULEAK_SYMBOLS_SYMTABS_H
#define GPULEAK_SYMBOLS_SYMTABS_H

#include <stddef.h>
#include <sys/types.h>

struct elf_obj;
struct symtabs;

int symtabs__new(struct symtabs **out);
/* Accepts NULL. The objects are the modules' (probe/modules.h), not freed here. */
void symtabs__free(struct symtabs *t);
/*
 * Directories searched for separate debug files of stripped objects, before
 * /usr/lib/debug (as the target sees it, then as we do); dirs must outlive t.
 */
void symtabs__set_debug_dirs(struct symtabs *t, const char *const *dirs, size_t n);
/*
 * The object that names the code of elf, mapped from path (basename name) into pid: elf
 * given its debug file when it has no .symtab, and then the first object seen with its
 * build-id, unless elf has a .symtab that one lacks (elf replaces it). NULL for NULL elf.
 * Call once per mapping: each call counts an object.
 */
struct elf_obj *symtabs__elf(struct symtabs *t, struct elf_obj *elf, pid_t pid, const char *path,
			     const char *name);
/* Objects named from; of them, named by an earlier object with their build-id; separate
 * debug files that name stripped objects. */
void symtabs__stats(const struct symtabs *t, unsigned int *objects, unsigned int *shared,
		    unsigned int *debug_files);

#endif
