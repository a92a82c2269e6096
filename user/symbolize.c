// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "elf_syms.h"
#include "hmap.h"
#include "modules.h"
#include "symbolize.h"

/* A mapping of a module into one process, as seen at some point of the trace. */
struct seen_map {
	pid_t pid;
	uint64_t start, end, pgoff;
	struct module *mod;	/* NULL offline: nothing to open */
	const char *path;	/* the module's, or owned by the symbolizer (offline) */
	const char *name;	/* basename of path */
};

/* A resolved address: its facts (strings owned here) and their formatted name. */
struct sym_entry {
	struct sym_info info;
	char *name;
	uint32_t gen;		/* unmapped: nr_maps when resolved; SYM_FIXED: set, never redone */
};

#define SYM_FIXED UINT32_MAX

struct symbolizer {
	struct modules *mods;
	struct seen_map *maps;
	size_t nr_maps, cap_maps;
	struct hmap idx;	/* ((u32)pid, addr) -> index into ents */
	struct sym_entry **ents;	/* one allocation each: callers keep pointers */
	size_t nr_ents, cap_ents;
	char **paths;		/* offline mapping paths */
	size_t nr_paths, cap_paths;
	char **old_names;	/* names replaced by a later resolution: callers may hold them */
	size_t nr_old, cap_old;
};

static int grow(void **v, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? 2 * *cap : 64;
	p = realloc(*v, ncap * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

int symbolizer__new(struct modules *mods, struct symbolizer **out)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->mods = mods;
	*out = s;
	return 0;
}

static void info_free(struct sym_info *si)
{
	free((char *)si->module);
	free((char *)si->func);
}

void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_ents; i++) {
		info_free(&s->ents[i]->info);
		free(s->ents[i]->name);
		free(s->ents[i]);
	}
	for (i = 0; i < s->nr_paths; i++)
		free(s->paths[i]);
	for (i = 0; i < s->nr_old; i++)
		free(s->old_names[i]);
	free(s->ents);
	free(s->paths);
	free(s->old_names);
	free(s->maps);
	hmap__free(&s->idx);
	free(s);
}

static int add_seen(struct symbolizer *s, const struct seen_map *sm)
{
	size_t j;

	for (j = 0; j < s->nr_maps; j++)
		if (s->maps[j].pid == sm->pid && s->maps[j].start == sm->start &&
		    s->maps[j].end == sm->end && s->maps[j].pgoff == sm->pgoff &&
		    s->maps[j].mod == sm->mod && !strcmp(s->maps[j].path, sm->path))
			return 0;
	if (grow((void **)&s->maps, &s->cap_maps, s->nr_maps, sizeof(*s->maps)))
		return -ENOMEM;
	s->maps[s->nr_maps++] = *sm;
	return 0;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

int symbolizer__add_maps(struct symbolizer *s, const struct proc_maps *m)
{
	size_t i;
	int err;

	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod;

		if (!e->exec || !e->path || !s->mods)
			continue;
		mod = modules__get(s->mods, m->pid, e);
		if (!mod)
			return -ENOMEM;
		err = add_seen(s, &(struct seen_map){ m->pid, e->start, e->end, e->pgoff, mod,
						      mod->path, mod->name });
		if (err)
			return err;
	}
	return 0;
}

int symbolizer__add_map(struct symbolizer *s, pid_t pid, uint64_t start, uint64_t end,
			uint64_t pgoff, const char *path)
{
	char *p;
	int err;

	if (!path || !*path || end <= start)
		return 0;
	if (grow((void **)&s->paths, &s->cap_paths, s->nr_paths, sizeof(*s->paths)))
		return -ENOMEM;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	s->paths[s->nr_paths++] = p;
	err = add_seen(s, &(struct seen_map){ pid, start, end, pgoff, NULL, p, base_name(p) });
	return err;
}

/* The latest mapping of pid containing addr: a later dlopen may reuse an old range. */
static const struct seen_map *lookup(const struct symbolizer *s, pid_t pid, uint64_t addr)
{
	size_t i = s->nr_maps;

	while (i--)
		if (s->maps[i].pid == pid && addr >= s->maps[i].start && addr < s->maps[i].end)
			return &s->maps[i];
	return NULL;
}

static char *format_name(const struct sym_info *si, uint64_t addr)
{
	char *out = NULL;
	int n;

	if (si->func)
		n = asprintf(&out, "%s+0x%" PRIx64 " (%s)", si->func, si->func_off,
			     si->module ? si->module : "?");
	else if (si->module)
		n = asprintf(&out, "%s+0x%" PRIx64, si->module, si->file_off);
	else
		n = asprintf(&out, "0x%" PRIx64, addr);
	return n < 0 ? NULL : out;
}

/* Fill si (strings allocated) from the mappings and, live, the ELF symbols. */
static int resolve(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_info *si)
{
	const struct seen_map *m = lookup(s, pid, addr);
	uint64_t vaddr, in_sym;
	const char *sym = NULL;

	memset(si, 0, sizeof(*si));
	if (!m)
		return 0;
	si->file_off = addr - m->start + m->pgoff;
	si->module = strdup(m->name);
	if (!si->module)
		return -ENOMEM;
	if (m->mod && m->mod->elf && !elf_obj__off_to_vaddr(m->mod->elf, si->file_off, &vaddr))
		sym = elf_obj__symbolize(m->mod->elf, vaddr, &in_sym);
	if (sym) {
		/* .symtab names may carry "@VERSION": keep the function name only. */
		si->func = strndup(sym, strcspn(sym, "@"));
		if (!si->func) {
			info_free(si);
			return -ENOMEM;
		}
		si->func_off = in_sym;
	}
	return 0;
}

static int info_dup(struct sym_info *dst, const struct sym_info *src)
{
	*dst = *src;
	dst->module = src->module ? strdup(src->module) : NULL;
	dst->func = src->func ? strdup(src->func) : NULL;
	if ((src->module && !dst->module) || (src->func && !dst->func)) {
		info_free(dst);
		return -ENOMEM;
	}
	return 0;
}

/* Replace entry e's facts with si (taken over) and rename it. */
static int entry_set(struct symbolizer *s, struct sym_entry *e, struct sym_info *si,
		     uint64_t addr, uint32_t gen)
{
	char *name = format_name(si, addr);

	if (!name)
		goto nomem;
	if (e->name) {
		/* Callers may still print the old name: keep it until the end. */
		if (grow((void **)&s->old_names, &s->cap_old, s->nr_old, sizeof(*s->old_names)))
			goto nomem;
		s->old_names[s->nr_old++] = e->name;
	}
	info_free(&e->info);
	e->info = *si;
	e->name = name;
	e->gen = gen;
	return 0;
nomem:
	free(name);
	info_free(si);
	return -ENOMEM;
}

static struct sym_entry *entry_get(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	uint64_t *idx = hmap__get(&s->idx, (uint32_t)pid, addr);
	struct sym_entry *e;

	if (idx)
		return s->ents[*idx];
	if (grow((void **)&s->ents, &s->cap_ents, s->nr_ents, sizeof(*s->ents)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	if (hmap__put(&s->idx, (uint32_t)pid, addr, s->nr_ents)) {
		free(e);
		return NULL;
	}
	s->ents[s->nr_ents++] = e;
	return e;
}

int symbolizer__set(struct symbolizer *s, pid_t pid, uint64_t addr, const struct sym_info *si)
{
	struct sym_info copy;
	struct sym_entry *e;

	if (info_dup(&copy, si))
		return -ENOMEM;
	e = entry_get(s, pid, addr);
	if (!e) {
		info_free(&copy);
		return -ENOMEM;
	}
	return entry_set(s, e, &copy, addr, SYM_FIXED);
}

const struct sym_info *symbolizer__info(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	struct sym_info si;
	struct sym_entry *e;

	e = entry_get(s, pid, addr);
	if (!e)
		return NULL;
	/* Unresolved yet, or unmapped when last asked: a mapping seen since may name it. */
	if (!e->name ||
	    (!e->info.module && e->gen != SYM_FIXED && e->gen != s->nr_maps)) {
		if (resolve(s, pid, addr, &si) || entry_set(s, e, &si, addr, (uint32_t)s->nr_maps))
			return e->name ? &e->info : NULL;
	}
	return &e->info;
}

const char *symbolizer__name(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	const struct sym_info *si = symbolizer__info(s, pid, addr);

	/* info is the first member of its entry, which holds the name */
	return si ? ((const struct sym_entry *)si)->name : "?";
}

const char *symbolizer__module(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	const struct sym_info *si = symbolizer__info(s, pid, addr);

	return si ? si->module : NULL;
}

int symbolizer__frame(struct symbolizer *s, pid_t pid, uint64_t addr, const char **sym,
		      const char **module)
{
	const struct sym_info *si = symbolizer__info(s, pid, addr);

	*sym = si ? si->func : NULL;
	*module = si ? si->module : NULL;
	if (!si)
		return -ENOMEM;
	return si->module ? 0 : -ENOENT;
}

int symbolizer__site_frames(void *ctx, pid_t pid, uint64_t caller, int32_t stack_id,
			    const char **syms, const char **mods, int max)
{
	(void)stack_id;
	if (max < 1 || !caller || symbolizer__frame(ctx, pid, caller, &syms[0], &mods[0]))
		return 0;
	return 1;
}
