/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The one interface that names code addresses of a traced process: "symbol+0xoff (object)",
 * falling back to "object+0xfileoff" for stripped code and "0xaddr" for unmapped addresses.
 * Mappings are remembered per process as they are seen, so names survive dlclose and the
 * target's exit; resolved names are cached per (pid, address).
 */
#ifndef GPULEAK_SYMBOLIZE_H
#define GPULEAK_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct symbolizer;
struct modules;
struct proc_maps;

int symbolizer__new(struct modules *mods, struct symbolizer **out);
void symbolizer__free(struct symbolizer *s);
/* Remember pid's current mappings (call at attach and whenever they change). */
int symbolizer__add_maps(struct symbolizer *s, const struct proc_maps *m);
/* Name addr in pid. The returned string lives as long as the symbolizer. */
const char *symbolizer__name(struct symbolizer *s, pid_t pid, uint64_t addr);
/*
 * The function containing addr (plain name: no offset, no version) and the object's
 * basename, for rules (site=, lib=). Either may be NULL when unknown. 0 or -ENOENT.
 */
int symbolizer__frame(struct symbolizer *s, pid_t pid, uint64_t addr, const char **sym,
		      const char **module);
/* The module (basename) containing addr in pid, or NULL. */
const char *symbolizer__module(struct symbolizer *s, pid_t pid, uint64_t addr);

#endif
