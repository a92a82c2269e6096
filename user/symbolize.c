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
	struct module *mod;
};

struct symbolizer {
	struct modules *mods;
	struct seen_map *maps;
	size_t nr_maps, cap_maps;
	struct hmap names;	/* (pid, addr) -> index into strs: "sym+0xoff (module)" */
	struct hmap funcs;	/* (pid, addr) -> index into strs + 1: plain function name, 0: none */
	char **strs;
	size_t nr_strs, cap_strs;
};

int symbolizer__new(struct modules *mods, struct symbolizer **out)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	s->mods = mods;
	*out = s;
	return 0;
}

void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_strs; i++)
		free(s->strs[i]);
	free(s->strs);
	free(s->maps);
	hmap__free(&s->names);
	hmap__free(&s->funcs);
	free(s);
}

int symbolizer__add_maps(struct symbolizer *s, const struct proc_maps *m)
{
	size_t i, j;

	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod;
		bool known = false;

		if (!e->exec || !e->path)
			continue;
		mod = modules__get(s->mods, m->pid, e);
		if (!mod)
			return -ENOMEM;
		for (j = 0; j < s->nr_maps && !known; j++)
			known = s->maps[j].pid == m->pid && s->maps[j].start == e->start &&
				s->maps[j].end == e->end && s->maps[j].mod == mod;
		if (known)
			continue;
		if (s->nr_maps == s->cap_maps) {
			size_t cap = s->cap_maps ? 2 * s->cap_maps : 64;
			struct seen_map *v = realloc(s->maps, cap * sizeof(*v));

			if (!v)
				return -ENOMEM;
			s->maps = v;
			s->cap_maps = cap;
		}
		s->maps[s->nr_maps++] = (struct seen_map){ m->pid, e->start, e->end, e->pgoff, mod };
	}
	return 0;
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

const char *symbolizer__module(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	const struct seen_map *m = lookup(s, pid, addr);

	return m ? m->mod->name : NULL;
}

static char *format_name(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	const struct seen_map *m = lookup(s, pid, addr);
	uint64_t off, vaddr, in_sym;
	const char *sym = NULL;
	char *out = NULL;

	if (!m) {
		if (asprintf(&out, "0x%" PRIx64, addr) < 0)
			return NULL;
		return out;
	}
	off = addr - m->start + m->pgoff;
	if (m->mod->elf && !elf_obj__off_to_vaddr(m->mod->elf, off, &vaddr))
		sym = elf_obj__symbolize(m->mod->elf, vaddr, &in_sym);
	if (sym) {
		/* .symtab names may carry "@VERSION": keep the function name only. */
		int len = (int)strcspn(sym, "@");

		if (asprintf(&out, "%.*s+0x%" PRIx64 " (%s)", len, sym, in_sym, m->mod->name) < 0)
			return NULL;
	} else if (asprintf(&out, "%s+0x%" PRIx64, m->mod->name, off) < 0) {
		return NULL;
	}
	return out;
}

/* Keep str (taken over) and remember it under (pid, addr) in h as index + bias. */
static const char *intern(struct symbolizer *s, struct hmap *h, pid_t pid, uint64_t addr,
			  char *str, uint64_t bias)
{
	if (s->nr_strs == s->cap_strs) {
		size_t cap = s->cap_strs ? 2 * s->cap_strs : 64;
		char **v = realloc(s->strs, cap * sizeof(*v));

		if (!v) {
			free(str);
			return NULL;
		}
		s->strs = v;
		s->cap_strs = cap;
	}
	if (hmap__put(h, (uint64_t)pid, addr, s->nr_strs + bias)) {
		free(str);
		return NULL;
	}
	s->strs[s->nr_strs++] = str;
	return str;
}

const char *symbolizer__name(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	uint64_t *idx = hmap__get(&s->names, (uint64_t)pid, addr);
	const char *ret;
	char *name;

	if (idx)
		return s->strs[*idx];
	name = format_name(s, pid, addr);
	if (!name)
		return "?";
	ret = intern(s, &s->names, pid, addr, name, 0);
	return ret ? ret : "?";
}

int symbolizer__frame(struct symbolizer *s, pid_t pid, uint64_t addr, const char **sym,
		      const char **module)
{
	const struct seen_map *m = lookup(s, pid, addr);
	uint64_t *idx = hmap__get(&s->funcs, (uint64_t)pid, addr);
	uint64_t off, vaddr, in_sym;
	const char *name = NULL;

	*sym = NULL;
	*module = m ? m->mod->name : NULL;
	if (idx) {
		*sym = *idx ? s->strs[*idx - 1] : NULL;
		return 0;
	}
	if (m && m->mod->elf) {
		off = addr - m->start + m->pgoff;
		if (!elf_obj__off_to_vaddr(m->mod->elf, off, &vaddr))
			name = elf_obj__symbolize(m->mod->elf, vaddr, &in_sym);
	}
	if (!name) {
		hmap__put(&s->funcs, (uint64_t)pid, addr, 0);
		return m ? 0 : -ENOENT;
	}
	{
		char *plain = strndup(name, strcspn(name, "@"));

		if (!plain)
			return -ENOMEM;
		*sym = intern(s, &s->funcs, pid, addr, plain, 1);
	}
	return 0;
}
