// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The symbolizer is the hub of symbols/: it owns the mappings seen per process and the cache
 * of named addresses, and composes the modules that each own one part of the work: symbol
 * tables per build-id and debug files (symtabs.c), demangling (demangle.c), JIT code named
 * from perf maps (jitnames.c), the interned stacks (stacks.c) and the judgement of their
 * frame-pointer walks (fpwalk.c), Python frames merged into stacks (pymerge.c, pyframes.c),
 * JavaScript sites and stacks (jssites.c).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hmap.h"
#include "lib/vec.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/demangle.h"
#include "symbols/fpwalk.h"
#include "symbols/globs.h"
#include "symbols/jitnames.h"
#include "symbols/jssites.h"
#include "symbols/pyframes.h"
#include "symbols/pymerge.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "symbols/symtabs.h"

/* A mapping of a module into one process, as seen at some point of the trace. */
struct seen_map {
	pid_t pid;
	uint64_t start, end, pgoff;
	struct module *mod;  /* NULL offline: nothing to open */
	const char *path;    /* the module's, or owned by the symbolizer (offline) */
	const char *name;    /* basename of path */
	struct elf_obj *elf; /* the symbols it is named from (same build-id: shared) */
	bool elf_done;
};

/* A resolved address: its facts (strings owned here) and their formatted name. */
struct sym_entry {
	struct sym_info info;
	char *name;
	uint32_t gen; /* unnamed: s->gen when resolved; SYM_FIXED: set, never redone */
	int8_t fp;    /* symbolizer__frame_fp() once known: 1, 0, -1 unknown; 2: not asked yet */
	char *where;  /* a Python frame: "file:line", what rules match besides its function */
};

#define SYM_FIXED UINT32_MAX

struct symbolizer {
	struct modules *mods;
	struct seen_map *maps;
	size_t nr_maps, cap_maps;
	struct hmap idx;	 /* ((u32)pid, addr) -> index into ents */
	struct sym_entry **ents; /* one allocation each: callers keep pointers */
	size_t nr_ents, cap_ents;
	char **paths; /* offline mapping paths */
	size_t nr_paths, cap_paths;
	char **old_names; /* names replaced by a later resolution: callers may hold them */
	size_t nr_old, cap_old;
	uint32_t gen; /* bumped when something new may name an unnamed address */
	bool js_seen; /* a JavaScript frame was named: stacks are looked at for sites */
	struct stacks *stacks;
	struct symtabs *tabs;
	struct fpwalk *fp;
	struct jitnames *jit;
	struct pymerge *py;
	struct jssites *js;
	struct symbolizer_stats st; /* resolved and batches; the modules count the rest */
};

static const char *jit_how(void *ctx, pid_t pid);

int symbolizer__new(struct modules *mods, struct symbolizer **out)
{
	struct symbolizer *s = calloc(1, sizeof(*s));
	int err;

	if (!s)
		return -ENOMEM;
	s->mods = mods;
	err = stacks__new(&s->stacks);
	if (err)
		goto cleanup;
	err = symtabs__new(&s->tabs);
	if (err)
		goto cleanup;
	err = fpwalk__new(&s->fp);
	if (err)
		goto cleanup;
	err = jitnames__new(jit_how, s, &s->jit);
	if (err)
		goto cleanup;
	err = pymerge__new(s, s->stacks, &s->py);
	if (err)
		goto cleanup;
	err = jssites__new(s, s->stacks, &s->js);
	if (err)
		goto cleanup;
	*out = s;
	return 0;
cleanup:
	symbolizer__free(s);
	return err;
}

void symbolizer__set_debug_dirs(struct symbolizer *s, const char *const *dirs, size_t n)
{
	symtabs__set_debug_dirs(s->tabs, dirs, n);
}

static void info_free(struct sym_info *si)
{
	free((char *)si->module);
	free((char *)si->func);
	free((char *)si->file);
}

void symbolizer__free(struct symbolizer *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->nr_ents; i++) {
		info_free(&s->ents[i]->info);
		free(s->ents[i]->name);
		free(s->ents[i]->where);
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
	jssites__free(s->js);
	pymerge__free(s->py);
	jitnames__free(s->jit);
	fpwalk__free(s->fp);
	symtabs__free(s->tabs);
	stacks__free(s->stacks);
	hmap__free(&s->idx);
	free(s);
}

/* Unnamed addresses are looked up again when next asked. */
static void bump_gen(struct symbolizer *s)
{
	if (++s->gen == SYM_FIXED)
		s->gen = 0;
}

static int add_seen(struct symbolizer *s, const struct seen_map *sm)
{
	size_t j;

	for (j = 0; j < s->nr_maps; j++)
		if (s->maps[j].pid == sm->pid && s->maps[j].start == sm->start &&
		    s->maps[j].end == sm->end && s->maps[j].pgoff == sm->pgoff &&
		    s->maps[j].mod == sm->mod && !strcmp(s->maps[j].path, sm->path))
			return 0;
	if (vec_grow((void **)&s->maps, &s->cap_maps, s->nr_maps, sizeof(*s->maps)))
		return -ENOMEM;
	s->maps[s->nr_maps++] = *sm;
	bump_gen(s);
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
		/* Its root held from now: its records may be named after it exited. */
		if (jitnames__runtime(base_name(e->path)) && jitnames__hold(s->jit, m->pid))
			return -ENOMEM;
		mod = modules__get(s->mods, m->pid, e);
		if (!mod)
			return -ENOMEM;
		err = add_seen(s, &(struct seen_map){.pid = m->pid,
						     .start = e->start,
						     .end = e->end,
						     .pgoff = e->pgoff,
						     .mod = mod,
						     .path = mod->path,
						     .name = mod->name});
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
	if (vec_grow((void **)&s->paths, &s->cap_paths, s->nr_paths, sizeof(*s->paths)))
		return -ENOMEM;
	p = strdup(path);
	if (!p)
		return -ENOMEM;
	s->paths[s->nr_paths++] = p;
	err = add_seen(s, &(struct seen_map){.pid = pid,
					     .start = start,
					     .end = end,
					     .pgoff = pgoff,
					     .path = p,
					     .name = base_name(p)});
	return err;
}

/* The latest mapping of pid containing addr: a later dlopen may reuse an old range. */
static struct seen_map *lookup(const struct symbolizer *s, pid_t pid, uint64_t addr)
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

	if (si->python && si->line)
		n = asprintf(&out, "%s (%s:%d)", si->func ? si->func : "?",
			     si->module ? si->module : "?", si->line);
	else if (si->python)
		n = asprintf(&out, "%s (%s)", si->func ? si->func : "?",
			     si->module ? si->module : "?");
	/* A script's function (V8's, its file:line:col): an offset into one of the tiers V8
	 * compiled it to says nothing to its reader, and tiers are one function. */
	else if (si->func && si->file)
		n = asprintf(&out, "%s (%s)", si->func, si->module ? si->module : "?");
	else if (si->func)
		n = asprintf(&out, "%s+0x%" PRIx64 " (%s)", si->func, si->func_off,
			     si->module ? si->module : "?");
	else if (si->module)
		n = asprintf(&out, "%s+0x%" PRIx64, si->module, si->file_off);
	else
		n = asprintf(&out, "0x%" PRIx64, addr);
	return n < 0 ? NULL : out;
}

/*
 * The ELF object that names the code of mapping m (symtabs.h: one per build-id, with its
 * debug file), looked for once per mapping.
 */
static struct elf_obj *map_elf(struct symbolizer *s, struct seen_map *m)
{
	if (m->elf_done)
		return m->elf;
	m->elf_done = true;
	m->elf = symtabs__elf(s->tabs, m->mod ? m->mod->elf : NULL, m->pid, m->path, m->name);
	return m->elf;
}

/* What makes the runtime of pid write its perf map, from the objects it maps (jitnames.h). */
static const char *jit_how(void *ctx, pid_t pid)
{
	const struct symbolizer *s = ctx;
	size_t i;

	for (i = 0; i < s->nr_maps; i++) {
		const char *n = s->maps[i].name;

		if (s->maps[i].pid != pid)
			continue;
		if (!strcmp(n, "node") || !strcmp(n, "nodejs") || !strncmp(n, "libnode.so", 10))
			return "start node with --perf-basic-prof "
			       "--interpreted-frames-native-stack";
		if (!strncmp(n, "python3", 7) || !strncmp(n, "libpython3", 10))
			return "start Python 3.12 or later with -X perf (or PYTHONPERFSUPPORT=1)";
		if (!strcmp(n, "libjvm.so"))
			return "load a perf map agent into the JVM";
	}
	return "turn the JIT's perf map on (node --perf-basic-prof "
	       "--interpreted-frames-native-stack, python3.12 -X perf, a JVM perf map agent)";
}

static uint64_t jit_reads(const struct symbolizer *s)
{
	uint64_t frames, reads;

	jitnames__stats(s->jit, &frames, &reads);
	return reads;
}

/* Fill si (strings allocated) from mapping m (NULL: none) and, live, the ELF symbols. */
static int resolve(struct symbolizer *s, struct seen_map *m, pid_t pid, uint64_t addr,
		   struct sym_info *si)
{
	struct elf_obj *elf;
	uint64_t vaddr, in_sym, reads;
	const char *sym = NULL;
	int err;

	memset(si, 0, sizeof(*si));
	if (!m && !s->mods)
		return 0;
	/* A read of a perf map that found new entries may name what had no name: bump_gen. */
	if (!m) {
		reads = jit_reads(s);
		err = jitnames__resolve(s->jit, pid, addr, s->st.batches, si);
		if (jit_reads(s) != reads)
			bump_gen(s);
		s->js_seen |= si->file != NULL;
		return err;
	}
	s->st.resolved++;
	si->file_off = addr - m->start + m->pgoff;
	si->module = strdup(m->name);
	if (!si->module)
		return -ENOMEM;
	elf = map_elf(s, m);
	if (elf && !elf_obj__off_to_vaddr(elf, si->file_off, &vaddr))
		sym = elf_obj__symbolize(elf, vaddr, &in_sym);
	if (!sym)
		return 0;
	si->func = demangle__func_name(sym);
	if (!si->func) {
		info_free(si);
		return -ENOMEM;
	}
	si->func_off = in_sym;
	if (!s->mods)
		return 0;
	reads = jit_reads(s);
	err = jitnames__interp_hint(s->jit, m->pid, si->func, s->st.batches);
	if (jit_reads(s) != reads)
		bump_gen(s);
	if (err) {
		info_free(si);
		return -ENOMEM;
	}
	return 0;
}

static int info_dup(struct sym_info *dst, const struct sym_info *src)
{
	*dst = *src;
	dst->module = src->module ? strdup(src->module) : NULL;
	dst->func = src->func ? strdup(src->func) : NULL;
	dst->file = src->file ? strdup(src->file) : NULL;
	if ((src->module && !dst->module) || (src->func && !dst->func) ||
	    (src->file && !dst->file)) {
		info_free(dst);
		return -ENOMEM;
	}
	return 0;
}

/* Replace entry e's facts with si (taken over) and rename it. */
static int entry_set(struct symbolizer *s, struct sym_entry *e, struct sym_info *si, uint64_t addr,
		     uint32_t gen)
{
	char *name = format_name(si, addr);

	if (!name)
		goto nomem;
	if (e->name) {
		/* Callers may still print the old name: keep it until the end. */
		if (vec_grow((void **)&s->old_names, &s->cap_old, s->nr_old, sizeof(*s->old_names)))
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
	if (vec_grow((void **)&s->ents, &s->cap_ents, s->nr_ents, sizeof(*s->ents)))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->fp = 2;
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
	s->js_seen |= !si->python && si->file;
	e = entry_get(s, pid, addr);
	if (!e) {
		info_free(&copy);
		return -ENOMEM;
	}
	return entry_set(s, e, &copy, addr, SYM_FIXED);
}

int symbolizer__set_python(struct symbolizer *s, pid_t pid, uint64_t addr,
			   const struct py_frame_name *nm)
{
	struct sym_info si = {.python = true};
	struct sym_entry *e;
	const char *base;

	e = entry_get(s, pid, addr);
	if (!e)
		return -ENOMEM;
	if (e->name)
		return 0;
	base = nm->file ? strrchr(nm->file, '/') : NULL;
	si.func = strdup(nm->name ? nm->name : "?");
	si.module = strdup(nm->file ? (base ? base + 1 : nm->file) : "python");
	si.file = nm->file ? strdup(nm->file) : NULL;
	si.line = nm->line;
	if (!si.func || !si.module || (nm->file && !si.file)) {
		info_free(&si);
		return -ENOMEM;
	}
	if (nm->file && asprintf(&e->where, "%s:%d", nm->file, nm->line) < 0) {
		e->where = NULL;
		info_free(&si);
		return -ENOMEM;
	}
	return entry_set(s, e, &si, addr, SYM_FIXED);
}

/*
 * The entry of addr, (re)resolved when needed; m is its mapping if the caller knows it. A
 * batch (retry) looks an unnamed address up again even when nothing new was seen: a perf map
 * may have grown since.
 */
static struct sym_entry *info_in(struct symbolizer *s, pid_t pid, uint64_t addr, struct seen_map *m,
				 bool m_known, bool retry)
{
	struct sym_info si;
	struct sym_entry *e;

	e = entry_get(s, pid, addr);
	if (!e)
		return NULL;
	/*
	 * Unresolved yet, or unnamed when last asked: a mapping seen since, or what a perf map
	 * gained since, may name it.
	 */
	if (!e->name || (!e->info.module && e->gen != SYM_FIXED && (retry || e->gen != s->gen))) {
		if (!m_known)
			m = lookup(s, pid, addr);
		if (resolve(s, m, pid, addr, &si))
			return e->name ? e : NULL;
		if (e->name && !si.module && !si.func) {
			e->gen = s->gen; /* unnamed still: the same name */
			return e;
		}
		if (entry_set(s, e, &si, addr, s->gen))
			return e->name ? e : NULL;
	}
	return e;
}

const struct sym_info *symbolizer__info(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	struct sym_entry *e = info_in(s, pid, addr, NULL, false, false);

	return e ? &e->info : NULL;
}

/* Whether a later mapping of m's process overlaps m (a range reused after dlclose). */
static bool overlapped(const struct symbolizer *s, const struct seen_map *m)
{
	size_t i;

	for (i = (size_t)(m - s->maps) + 1; i < s->nr_maps; i++)
		if (s->maps[i].pid == m->pid && s->maps[i].start < m->end &&
		    s->maps[i].end > m->start)
			return true;
	return false;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int symbolizer__resolve(struct symbolizer *s, pid_t pid, const uint64_t *addrs, size_t n)
{
	struct seen_map *m = NULL;
	bool m_alone = false;
	uint64_t *v;
	size_t i;
	int err = 0;

	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, addrs, n * sizeof(*v));
	/* In address order, one mapping lookup serves every address it contains. */
	qsort(v, n, sizeof(*v), cmp_u64);
	s->st.batches++;
	for (i = 0; i < n && !err; i++) {
		if (i && v[i] == v[i - 1])
			continue;
		if (!m_alone || v[i] < m->start || v[i] >= m->end) {
			m = lookup(s, pid, v[i]);
			m_alone = m && !overlapped(s, m);
		}
		if (!info_in(s, pid, v[i], m, true, true))
			err = -ENOMEM;
	}
	free(v);
	return err;
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

/*
 * Whether the function holding return address addr keeps a frame pointer, i.e. whether a
 * frame-pointer walk from it to its caller can be trusted: 1, 0, -1 unknown (no object, no
 * code, another architecture). The split-off `.cold` parts of functions run in their parent's
 * frame and count as unknown.
 */
int symbolizer__frame_fp(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	struct sym_entry *e = info_in(s, pid, addr, NULL, false, false);
	struct seen_map *m;
	struct elf_obj *elf;
	uint64_t vaddr, in_sym;
	const char *sym;

	if (!e)
		return -1;
	if (e->fp != 2)
		return e->fp;
	e->fp = -1;
	m = lookup(s, pid, addr);
	elf = m ? map_elf(s, m) : NULL;
	if (!elf || elf_obj__off_to_vaddr(elf, addr - m->start + m->pgoff, &vaddr))
		return e->fp;
	sym = elf_obj__symbolize(elf, vaddr, &in_sym);
	if (sym && strstr(sym, ".cold"))
		return e->fp;
	e->fp = (int8_t)(sym ? fpwalk__func(elf, vaddr - in_sym) : fpwalk__object(s->fp, elf));
	return e->fp;
}

struct elf_obj *symbolizer__object(struct symbolizer *s, pid_t pid, uint64_t addr, uint64_t *bias)
{
	struct seen_map *m = lookup(s, pid, addr);
	struct elf_obj *elf = m ? map_elf(s, m) : NULL;
	uint64_t vaddr;

	if (!elf || elf_obj__off_to_vaddr(elf, addr - m->start + m->pgoff, &vaddr))
		return NULL;
	*bias = addr - vaddr;
	return elf;
}

int symbolizer__object_fp(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	uint64_t bias;
	struct elf_obj *elf = symbolizer__object(s, pid, addr, &bias);

	return elf ? fpwalk__object(s->fp, elf) : -1;
}

int symbolizer__add_stack(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			  const uint64_t *raw, size_t n, unsigned int depth,
			  const struct ustack **out)
{
	struct ustack *st;
	int err, is_new;

	err = stacks__intern(s->stacks, pid, id, caller, raw, n, depth, &st, &is_new);
	if (err)
		return err;
	*out = st;
	if (!is_new)
		return 0;
	/* Named all at once, and judged now: what a capture writes is what this report says. */
	err = symbolizer__resolve(s, pid, st->frames, st->nr);
	fpwalk__judge(s, st);
	return err;
}

int symbolizer__set_stack(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			  const uint64_t *frames, size_t nr, unsigned int flags,
			  unsigned int nofp_from)
{
	return stacks__add(s->stacks, pid, id, caller, frames, nr, flags, nofp_from);
}

int symbolizer__site_outside(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			     const char *const *skip, uint64_t *site)
{
	const struct ustack *st = stacks__get(s->stacks, pid, id, caller);
	unsigned int flags, nofp_from = 0;
	uint16_t i, trusted;

	if (!st)
		return -ENOENT;
	trusted = (st->flags & STACK_NO_FP) ? st->nofp_from : st->nr;
	for (i = 0; i < trusted; i++) {
		const char *mod = symbolizer__module(s, pid, st->frames[i]);

		if (!mod)
			return -ENOENT; /* in no object: not a frame to name a site by */
		if (!globs__any(skip, SIZE_MAX, mod))
			break;
	}
	if (i >= trusted)
		return -ENOENT;
	*site = st->frames[i];
	if (!i || stacks__get(s->stacks, pid, id, *site))
		return 0;
	flags = st->flags;
	if (flags & STACK_NO_FP)
		nofp_from = st->nofp_from - i;
	return stacks__add(s->stacks, pid, id, *site, st->frames + i, st->nr - i, flags, nofp_from);
}

const struct ustack *symbolizer__stack(const struct symbolizer *s, pid_t pid, int32_t id,
				       uint64_t caller)
{
	return stacks__get(s->stacks, pid, id, caller);
}

const struct stacks *symbolizer__stacks(const struct symbolizer *s)
{
	return s->stacks;
}

void symbolizer__stats(const struct symbolizer *s, struct symbolizer_stats *st)
{
	*st = s->st;
	symtabs__stats(s->tabs, &st->objects, &st->shared, &st->debug_files);
	jitnames__stats(s->jit, &st->jit_frames, &st->perf_map_reads);
}

int symbolizer__site_frames(void *ctx, pid_t pid, uint64_t caller, int32_t stack_id,
			    const char **syms, const char **mods, const char **where, int max)
{
	struct symbolizer *s = ctx;
	const struct ustack *st = symbolizer__stack(s, pid, stack_id, caller);
	int i, n = st ? (st->nr < max ? st->nr : max) : 1;

	if (max < 1 || !caller)
		return 0;
	where[0] = NULL;
	if (!st)
		return symbolizer__frame(s, pid, caller, &syms[0], &mods[0]) ? 0 : 1;
	/* Every frame, named or not, so that frame i of syms and of mods is one frame. */
	for (i = 0; i < n; i++) {
		const struct sym_info *si = symbolizer__info(s, pid, st->frames[i]);

		if (!si)
			return i;
		syms[i] = si->func;
		mods[i] = si->module;
		/* info is the first member of its entry */
		where[i] = ((const struct sym_entry *)si)->where;
	}
	return n;
}

/* ---- Python and JavaScript frames: pymerge.c, jssites.c ---- */

void symbolizer__set_site_skip(struct symbolizer *s, const char *const *globs, size_t n)
{
	pymerge__set_skip(s->py, globs, n);
	jssites__set_skip(s->js, globs, n);
}

int symbolizer__py_record(struct symbolizer *s, const struct gl_hdr *h)
{
	return pymerge__record(s->py, h);
}

int32_t symbolizer__py_native_id(const struct symbolizer *s, pid_t pid, int32_t id)
{
	return pymerge__native_id(s->py, pid, id);
}

uint64_t symbolizer__site_frame(const struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller)
{
	const struct ustack *st = stacks__get(s->stacks, pid, id, caller);

	return st ? st->site : 0;
}

const char *symbolizer__site_name(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller)
{
	int32_t canon = id;
	uint64_t frame = symbolizer__py_site(s, pid, caller, &canon);

	return symbolizer__name(s, pid, frame ? frame : caller);
}

int32_t symbolizer__py_canonical(const struct symbolizer *s, pid_t pid, int32_t id)
{
	return pymerge__canonical(s->py, pid, id);
}

bool symbolizer__script_frame(const struct sym_info *si)
{
	return si && (si->python || si->file);
}

unsigned int symbolizer__js_flags(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller)
{
	return jssites__flags(s->js, pid, id, caller);
}

uint64_t symbolizer__py_site(void *ctx, pid_t pid, uint64_t caller, int32_t *stack_id)
{
	struct symbolizer *s = ctx;
	uint64_t site;

	if (gl_stack_is_py(*stack_id)) {
		site = symbolizer__site_frame(s, pid, *stack_id, caller);
		*stack_id = symbolizer__py_canonical(s, pid, *stack_id);
		return site;
	}
	if (!s->js_seen)
		return 0;
	return jssites__site(s->js, pid, caller, stack_id);
}

uint64_t symbolizer__py_bad(const struct symbolizer *s)
{
	return pymerge__bad(s->py);
}
