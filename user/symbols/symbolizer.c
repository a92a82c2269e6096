// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <elf.h>
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "probe/elf_obj.h"
#include "lib/hmap.h"
#include "lib/log.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/perfmap.h"
#include "symbols/pyframes.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "lib/vec.h"

/*
 * C++ names are demangled with the C++ ABI's own entry point in libstdc++ (linked as
 * libstdc++.so.6, present wherever C++ runs). libiberty's cplus_demangle is the same GCC
 * demangler, but Debian ships it only as a static archive of a binutils build dependency;
 * libstdc++'s copy is maintained with the compiler and follows every ABI addition.
 */
char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status);

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
	int8_t fp;    /* frame_fp() once known: 1, 0, -1 unknown; 2: not asked yet */
	char *where;  /* a Python frame: "file:line", what rules match besides its function */
};

/* One ELF object per build-id names every file with that build-id (copies, containers). */
struct bid_obj {
	const char *build_id; /* the object's own string */
	struct elf_obj *elf;
};

/* Whether the code of an object keeps frame pointers, when no symbol covers an address. */
struct obj_fp {
	const struct elf_obj *elf;
	int8_t fp;
};

/*
 * The perf map of one process, for code in no mapped file (JIT code in anonymous memory):
 * /tmp/perf-NSPID.map as the process sees its /tmp and its pid (in a container, its own),
 * read through /proc/PID/root (its symlinks resolved inside it) and only while live. For a
 * process that runs a JIT, that root is held open from when its maps are first seen until the
 * map is open: records are named after the process may have exited (a short run), and what is
 * open is read to its end.
 */
struct jit_map {
	pid_t pid;
	uint32_t ns_pid;
	uid_t owner; /* the process's: the file must be its user's, or root's */
	struct perfmap *pm;
	char root[32], path[32]; /* /proc/PID/root, and the map's path inside it */
	int root_fd;		 /* /proc/PID/root held open (root is /proc/self/fd/N), or -1 */
	int err;		 /* of the last read: -ENOENT while there is no file */
	bool tried;		 /* read at least once */
	uint64_t idle_at;	 /* batches + 1 when a read found nothing new */
	uint8_t checks;		 /* unnamed frames looked up in /proc/PID/maps for the hint */
	bool hinted, said;	 /* the hint given; -v said the file names frames */
	bool warned;		 /* a file not trusted, or full */
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
	struct stacks *stacks;
	struct bid_obj *bids;
	size_t nr_bids, cap_bids;
	struct obj_fp *objfp;
	size_t nr_objfp, cap_objfp;
	const char *const *debug_dirs; /* --debug-dir, searched before /usr/lib/debug */
	size_t nr_debug_dirs;
	struct jit_map *jits;
	size_t nr_jits, cap_jits;
	uint32_t gen;		 /* bumped when something new may name an unnamed address */
	struct pyframes *py;	 /* Python code objects and stacks, from their records */
	struct hmap py_merged;	 /* ((u32)pid, hash of a merged stack) -> its first id */
	struct hmap py_canon;	 /* ((u32)pid, id) -> the first id merged to the same frames */
	bool js_seen;		 /* a JavaScript frame was named: stacks are looked at for sites */
	struct hmap js_merged;	 /* ((u32)pid, hash of a stack with its glue folded) -> id */
	struct hmap js_canon;	 /* ((u32)pid, id) -> the first id folded to the same frames */
	struct hmap js_funcs;	 /* ((u32)pid, hash of function and script) -> first address */
	const char *const *skip; /* --site-skip: frames of these never name a site */
	size_t nr_skip;
	struct symbolizer_stats st;
};

int symbolizer__new(struct modules *mods, struct symbolizer **out)
{
	struct symbolizer *s = calloc(1, sizeof(*s));

	if (!s)
		return -ENOMEM;
	if (stacks__new(&s->stacks) || pyframes__new(&s->py)) {
		stacks__free(s->stacks);
		free(s);
		return -ENOMEM;
	}
	s->mods = mods;
	*out = s;
	return 0;
}

void symbolizer__set_debug_dirs(struct symbolizer *s, const char *const *dirs, size_t n)
{
	s->debug_dirs = dirs;
	s->nr_debug_dirs = n;
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
	free(s->bids);
	free(s->objfp);
	for (i = 0; i < s->nr_jits; i++) {
		perfmap__free(s->jits[i].pm);
		if (s->jits[i].root_fd >= 0)
			close(s->jits[i].root_fd);
	}
	free(s->jits);
	stacks__free(s->stacks);
	pyframes__free(s->py);
	hmap__free(&s->py_merged);
	hmap__free(&s->py_canon);
	hmap__free(&s->js_merged);
	hmap__free(&s->js_canon);
	hmap__free(&s->js_funcs);
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

static struct jit_map *jit_get(struct symbolizer *s, pid_t pid);

/* Objects of runtimes that write a perf map when asked (V8, the JVM). */
static bool jit_runtime(const char *n)
{
	return !strcmp(n, "node") || !strcmp(n, "nodejs") || !strncmp(n, "libnode.so", 10) ||
	       !strcmp(n, "libjvm.so");
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
		if (jit_runtime(base_name(e->path)) && !jit_get(s, m->pid))
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

#define DEBUG_ROOT "/usr/lib/debug"

/* Whether path is a debug file of elf (and now names its code). */
static bool try_debug(struct symbolizer *s, struct elf_obj *elf, const char *obj, const char *path)
{
	int err = elf_obj__add_debug(elf, path);

	if (!err) {
		s->st.debug_files++;
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
static void find_debug(struct symbolizer *s, const struct seen_map *m, struct elf_obj *elf)
{
	const char *bid = elf_obj__build_id(elf), *dirs[SYMBOLIZER_MAX_DEBUG_DIRS + 2];
	const char *roots[2], *link, *slash;
	char root[48], target_debug[64], path[2 * PATH_MAX];
	size_t i, n = 0, dir_len;
	uint32_t crc;

	for (i = 0; i < s->nr_debug_dirs && i < SYMBOLIZER_MAX_DEBUG_DIRS; i++)
		dirs[n++] = s->debug_dirs[i];
	snprintf(root, sizeof(root), "/proc/%d/root", (int)m->pid);
	snprintf(target_debug, sizeof(target_debug), "%s%s", root, DEBUG_ROOT);
	dirs[n++] = target_debug;
	dirs[n++] = DEBUG_ROOT;
	if (strlen(bid) > 2)
		for (i = 0; i < n; i++) {
			snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.debug", dirs[i], bid,
				 bid + 2);
			if (try_debug(s, elf, m->name, path))
				return;
		}
	link = elf_obj__debuglink(elf, &crc);
	slash = m->path ? strrchr(m->path, '/') : NULL;
	if (!link || m->path[0] != '/' || !slash)
		return;
	dir_len = (size_t)(slash - m->path);
	roots[0] = root;
	roots[1] = "";
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s%.*s/%s", roots[i], (int)dir_len, m->path, link);
		if (try_debug(s, elf, m->name, path))
			return;
		snprintf(path, sizeof(path), "%s%.*s/.debug/%s", roots[i], (int)dir_len, m->path,
			 link);
		if (try_debug(s, elf, m->name, path))
			return;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s%.*s/%s", dirs[i], (int)dir_len, m->path, link);
		if (try_debug(s, elf, m->name, path))
			return;
	}
}

/*
 * The ELF object that names the code of mapping m: the first object opened with the same
 * build-id, so every copy of a library (another path, another container) has its symbol
 * table built once; an object with .symtab replaces a stripped twin.
 */
static struct elf_obj *map_elf(struct symbolizer *s, struct seen_map *m)
{
	struct elf_obj *elf = m->mod ? m->mod->elf : NULL;
	const char *bid;
	size_t i;

	if (m->elf_done)
		return m->elf;
	m->elf_done = true;
	m->elf = elf;
	if (!elf)
		return NULL;
	s->st.objects++;
	if (elf_obj__needs_debug(elf))
		find_debug(s, m, elf);
	bid = elf_obj__build_id(elf);
	if (!bid[0])
		return elf;
	for (i = 0; i < s->nr_bids; i++) {
		struct bid_obj *b = &s->bids[i];

		if (strcmp(b->build_id, bid))
			continue;
		if (b->elf != elf && elf_obj__has_symtab(elf) && !elf_obj__has_symtab(b->elf)) {
			b->elf = elf;
			b->build_id = bid;
		} else if (b->elf != elf) {
			s->st.shared++;
		}
		m->elf = b->elf;
		return m->elf;
	}
	/* Without room the object is still named, from itself. */
	if (!vec_grow((void **)&s->bids, &s->cap_bids, s->nr_bids, sizeof(*s->bids)))
		s->bids[s->nr_bids++] = (struct bid_obj){bid, elf};
	return elf;
}

/* "name" without "@VERSION", C++ names demangled; NULL without memory. */
static char *func_name(const char *sym)
{
	char *name = strndup(sym, strcspn(sym, "@")), *d;
	int status = -1;

	if (!name || strncmp(name, "_Z", 2))
		return name;
	d = __cxa_demangle(name, NULL, NULL, &status);
	if (status || !d) {
		free(d);
		return name; /* not a valid mangled name after all: as it is */
	}
	free(name);
	return d;
}

/* ---- JIT code, named from perf maps ---- */

/* pid as the process sees itself: the last NSpid of its status (its own pid namespace). */
static uint32_t ns_pid_of(pid_t pid)
{
	char path[64], *line = NULL, *p, *end;
	uint32_t ns = (uint32_t)pid;
	size_t cap = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return ns;
	while (getline(&line, &cap, f) > 0) {
		if (strncmp(line, "NSpid:", 6))
			continue;
		for (p = line + 6;; p = end) {
			unsigned long v = strtoul(p, &end, 10);

			if (end == p)
				break;
			ns = (uint32_t)v;
		}
		break;
	}
	free(line);
	fclose(f);
	return ns;
}

static struct jit_map *jit_get(struct symbolizer *s, pid_t pid)
{
	struct jit_map *j;
	struct stat st;
	char proc[32];
	size_t i;

	for (i = 0; i < s->nr_jits; i++)
		if (s->jits[i].pid == pid)
			return &s->jits[i];
	if (vec_grow((void **)&s->jits, &s->cap_jits, s->nr_jits, sizeof(*s->jits)))
		return NULL;
	j = &s->jits[s->nr_jits];
	*j = (struct jit_map){.pid = pid, .err = -ENOENT, .owner = (uid_t)-1, .root_fd = -1};
	if (perfmap__new(&j->pm))
		return NULL;
	s->nr_jits++;
	j->ns_pid = ns_pid_of(pid);
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (!stat(proc, &st))
		j->owner = st.st_uid;
	snprintf(j->root, sizeof(j->root), "/proc/%d/root", (int)pid);
	snprintf(j->path, sizeof(j->path), "/tmp/perf-%u.map", j->ns_pid);
	j->root_fd = open(j->root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (j->root_fd >= 0)
		snprintf(j->root, sizeof(j->root), "/proc/self/fd/%d", j->root_fd);
	return j;
}

/* Read what the process appended to its perf map; 1 when that added entries. */
static int jit_refresh(struct symbolizer *s, struct jit_map *j)
{
	struct perfmap_stats st;
	int err = perfmap__refresh(j->pm, j->root, j->path, j->owner);

	j->tried = true;
	j->err = err < 0 ? err : 0;
	/* The map is open: the process's root is no longer needed to read it. */
	if (err >= 0 && j->root_fd >= 0) {
		close(j->root_fd);
		j->root_fd = -1;
		snprintf(j->root, sizeof(j->root), "/proc/%d/root", (int)j->pid);
	}
	j->idle_at = err > 0 ? 0 : s->st.batches + 1;
	if (err > 0) {
		bump_gen(s);
		s->st.perf_map_reads++;
		if (!j->said) {
			j->said = true;
			perfmap__stats(j->pm, &st);
			pr_info("pid %d: naming JIT code from /tmp/perf-%u.map (%zu entries)\n",
				j->pid, j->ns_pid, st.entries);
		}
	} else if ((err == -EPERM || err == -ENOSPC) && !j->warned) {
		j->warned = true;
		if (err == -EPERM)
			pr_warn("pid %d: not reading /tmp/perf-%u.map: not a regular file owned by "
				"the process's user or root\n",
				j->pid, j->ns_pid);
		else
			pr_warn("pid %d: /tmp/perf-%u.map holds more than %u entries or %u MiB of "
				"names: code compiled after those is not named\n",
				j->pid, j->ns_pid, PERFMAP_MAX_ENTRIES,
				PERFMAP_MAX_NAME_BYTES >> 20);
	}
	return err;
}

/* What makes the runtime of pid write its perf map, from the objects it maps. */
static const char *jit_flags(const struct symbolizer *s, pid_t pid)
{
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

/* Once per process without a perf map: which frames have no names, and how to name them. */
static void jit_hint(struct symbolizer *s, struct jit_map *j, const char *frames)
{
	j->hinted = true;
	pr_warn("pid %d: %s have no names without /tmp/perf-%u.map: %s\n", j->pid, frames,
		j->ns_pid, jit_flags(s, j->pid));
}

/* An address no mapped file and no perf map names: say how to name it, if it is JIT code. */
static void jit_unnamed(struct symbolizer *s, struct jit_map *j, uint64_t addr)
{
	struct proc_maps *m = NULL;
	const struct pmap_ent *e;
	char what[96];
	bool anon;

	/* A bad frame of a walk through code without frame pointers is no reason to look. */
	if (j->hinted || j->err != -ENOENT || j->checks >= 8)
		return;
	j->checks++;
	if (proc_maps__load(j->pid, &m))
		return;
	e = proc_maps__find(m, addr);
	anon = e && e->exec && !e->ino;
	proc_maps__free(m);
	if (!anon)
		return;
	snprintf(what, sizeof(what),
		 "stack frames in JIT code (anonymous executable memory, 0x%" PRIx64 ")", addr);
	jit_hint(s, j, what);
}

/* Name addr, in no mapped file, from pid's perf map (read on when it does not cover addr). */
static int jit_resolve(struct symbolizer *s, pid_t pid, uint64_t addr, struct sym_info *si)
{
	struct jit_map *j;
	char *func, *where;
	const char *name;
	uint64_t start;
	int n;

	/* Below mmap_min_addr or above any user address space: a bad frame, never code. */
	if (addr < 0x10000 || addr >> 56)
		return 0;
	j = jit_get(s, pid);
	if (!j)
		return -ENOMEM;
	name = perfmap__find(j->pm, addr, &start);
	/* Past what was read: read on, once per batch of frames when there is nothing new. */
	if (!name && j->idle_at != s->st.batches + 1 && jit_refresh(s, j) > 0)
		name = perfmap__find(j->pm, addr, &start);
	if (!name) {
		jit_unnamed(s, j, addr);
		return 0;
	}
	if (perfmap__describe(name, &func, &where))
		return -ENOMEM;
	/* No source location: the object is the map the name came from, as perf says. */
	n = where ? 0 : asprintf(&where, "perf-%u.map", j->ns_pid);
	if (n < 0) {
		free(func);
		return -ENOMEM;
	}
	si->func = func;
	si->module = where;
	/* What --site-skip globs and JavaScript sites look at: the script's whole path. */
	si->file = perfmap__script(name);
	s->js_seen |= si->file != NULL;
	si->func_off = addr - start;
	s->st.jit_frames++;
	return 0;
}

/*
 * V8 runs the functions it interprets in one shared entry of its own, named
 * Builtins_InterpreterEntryTrampoline, unless asked for a copy per function in anonymous
 * memory: such a frame says JavaScript runs there unnamed (when there is no perf map: with one,
 * a few functions of V8's snapshot run there anyway).
 */
static int interp_hint(struct symbolizer *s, pid_t pid, const char *func)
{
	struct jit_map *j;

	if (strcmp(func, "Builtins_InterpreterEntryTrampoline"))
		return 0;
	j = jit_get(s, pid);
	if (!j)
		return -ENOMEM;
	if (!j->tried)
		jit_refresh(s, j);
	if (!j->hinted && j->err == -ENOENT)
		jit_hint(s, j, "JavaScript frames (in V8's interpreter entry)");
	return 0;
}

/* Fill si (strings allocated) from mapping m (NULL: none) and, live, the ELF symbols. */
static int resolve(struct symbolizer *s, struct seen_map *m, pid_t pid, uint64_t addr,
		   struct sym_info *si)
{
	struct elf_obj *elf;
	uint64_t vaddr, in_sym;
	const char *sym = NULL;

	memset(si, 0, sizeof(*si));
	if (!m)
		return s->mods ? jit_resolve(s, pid, addr, si) : 0;
	s->st.resolved++;
	si->file_off = addr - m->start + m->pgoff;
	si->module = strdup(m->name);
	if (!si->module)
		return -ENOMEM;
	elf = map_elf(s, m);
	if (elf && !elf_obj__off_to_vaddr(elf, si->file_off, &vaddr))
		sym = elf_obj__symbolize(elf, vaddr, &in_sym);
	if (sym) {
		si->func = func_name(sym);
		if (!si->func) {
			info_free(si);
			return -ENOMEM;
		}
		si->func_off = in_sym;
		if (s->mods && interp_hint(s, m->pid, si->func)) {
			info_free(si);
			return -ENOMEM;
		}
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
 * Frame pointers at the start of a function's code: push %rbp; mov %rsp,%rbp (x86-64,
 * after an endbr64), or mov x29, sp among the first instructions (arm64, after stp x29,
 * x30). 1 yes, 0 no, -1 an architecture this does not know.
 */
static int prologue_fp(uint16_t machine, const uint8_t *b, size_t n)
{
	size_t i = 0;

	if (machine == EM_X86_64) {
		if (n >= 4 && !memcmp(b, "\xf3\x0f\x1e\xfa", 4))
			i = 4;
		/* mov %rsp,%rbp has two encodings */
		return n >= i + 4 && b[i] == 0x55 &&
		       (!memcmp(b + i + 1, "\x48\x89\xe5", 3) ||
			!memcmp(b + i + 1, "\x48\x8b\xec", 3));
	}
	if (machine == EM_AARCH64) {
		for (i = 0; i + 4 <= n && i < 16; i += 4)
			if (!memcmp(b + i, "\xfd\x03\x00\x91", 4)) /* mov x29, sp */
				return 1;
		return 0;
	}
	return -1;
}

static int func_fp(const struct elf_obj *elf, uint64_t start_vaddr)
{
	uint8_t b[16];
	uint64_t off;
	ssize_t n;

	if (elf_obj__vaddr_to_off(elf, start_vaddr, &off))
		return -1;
	n = elf_obj__read(elf, off, b, sizeof(b));
	return n > 0 ? prologue_fp(elf_obj__machine(elf), b, (size_t)n) : -1;
}

struct fp_count {
	const struct elf_obj *elf;
	unsigned int seen, with;
};

static int count_fp(const struct elf_func *f, void *ctx)
{
	struct fp_count *c = ctx;

	/* Tiny functions are stubs and thunks, whatever the object was built with. */
	if (f->size < 16)
		return 0;
	c->with += func_fp(c->elf, f->vaddr) == 1;
	return ++c->seen >= 256;
}

/*
 * Whether an object's code keeps frame pointers, for addresses no symbol covers: the verdict
 * of most of its (first 256) functions. -1 when it has no sized function symbols at all.
 */
static int object_fp(struct symbolizer *s, const struct elf_obj *elf)
{
	struct fp_count c = {.elf = elf};
	size_t i;

	for (i = 0; i < s->nr_objfp; i++)
		if (s->objfp[i].elf == elf)
			return s->objfp[i].fp;
	elf_obj__for_each_func((struct elf_obj *)elf, count_fp, &c);
	if (!vec_grow((void **)&s->objfp, &s->cap_objfp, s->nr_objfp, sizeof(*s->objfp)))
		s->objfp[s->nr_objfp++] = (struct obj_fp){elf, c.seen ? 2 * c.with > c.seen : -1};
	return c.seen ? 2 * c.with > c.seen : -1;
}

/*
 * Whether the function holding return address addr keeps a frame pointer, i.e. whether a
 * frame-pointer walk from it to its caller can be trusted: 1, 0, -1 unknown (no object, no
 * code, another architecture). The split-off `.cold` parts of functions run in their parent's
 * frame and count as unknown.
 */
static int frame_fp(struct symbolizer *s, pid_t pid, uint64_t addr)
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
	e->fp = (int8_t)(sym ? func_fp(elf, vaddr - in_sym) : object_fp(s, elf));
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

int symbolizer__frame_fp(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	return frame_fp(s, pid, addr);
}

int symbolizer__object_fp(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	uint64_t bias;
	struct elf_obj *elf = symbolizer__object(s, pid, addr, &bias);

	return elf ? object_fp(s, elf) : -1;
}

/*
 * Functions a frame-pointer walk ends in when nothing went wrong: the start of the main
 * thread and of every other (glibc's _start and clone clear %rbp before they call them).
 * Built without frame pointers, they are still where the chain ends, not where it broke.
 */
static bool walk_root(const char *func)
{
	static const char *const roots[] = {
	    "__libc_start_call_main",
	    "__libc_start_main",
	    "_start",
	    "start_thread",
	    "clone",
	    "clone3",
	    "__clone",
	    "__clone3",
	    "__clone_internal",
	    "thread_start",
	};
	size_t i;

	for (i = 0; i < sizeof(roots) / sizeof(roots[0]); i++)
		if (!strcmp(func, roots[i]))
			return true;
	return false;
}

/*
 * Frames from nofp_from on came through a function without a frame pointer (flags). When
 * that function is the last one found, and no thread starts there, the walk stopped because
 * of it (its %rbp held no frame, or held one that led nowhere): the stack is cut short,
 * nofp_from is its length and its callers are unknown.
 */
static void judge_walk(struct symbolizer *s, struct ustack *st)
{
	const struct sym_info *si;
	uint16_t i;

	for (i = 0; i + 1 < st->nr; i++)
		if (!frame_fp(s, st->pid, st->frames[i])) {
			st->flags |= STACK_NO_FP;
			st->nofp_from = i + 1;
			return;
		}
	if (!st->nr || (st->flags & STACK_TRUNCATED) || frame_fp(s, st->pid, st->frames[i]))
		return;
	si = symbolizer__info(s, st->pid, st->frames[i]);
	if (!si || !si->func || walk_root(si->func))
		return;
	st->flags |= STACK_NO_FP;
	st->nofp_from = st->nr;
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
	judge_walk(s, st);
	return err;
}

int symbolizer__set_stack(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller,
			  const uint64_t *frames, size_t nr, unsigned int flags,
			  unsigned int nofp_from)
{
	return stacks__add(s->stacks, pid, id, caller, frames, nr, flags, nofp_from);
}

/* name matches one of globs: n of them, or up to a NULL (n SIZE_MAX). */
static bool any_glob(const char *const *globs, size_t n, const char *name)
{
	size_t i;

	for (i = 0; name && i < n && globs[i]; i++)
		if (!fnmatch(globs[i], name, 0))
			return true;
	return false;
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
		if (!any_glob(skip, SIZE_MAX, mod))
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

/* ---- Python frames ---- */

/*
 * Frames that never name a site: the interpreter and its way into C (ctypes, libffi), the
 * libraries gpuleak traces, PyTorch's allocator. Object basenames; then Python files.
 */
static const char *const skip_objects[] = {
    "libpython*",  "python*",	  "_ctypes*",	   "libffi.so*", "libcudart.so*",
    "libcuda.so*", "libnccl.so*", "libc.so*",	   "libwebgpu*", "libdawn*",
    "dawn.node",   "libc10*.so*", "libtorch*.so*",
};
static const char *const skip_files[] = {
    "*/site-packages/torch/*",
    "*/dist-packages/torch/*",
    "*/ctypes/__init__.py",
    "<frozen *>",
};

void symbolizer__set_site_skip(struct symbolizer *s, const char *const *globs, size_t n)
{
	s->skip = globs;
	s->nr_skip = n;
}

static bool skipped(const struct symbolizer *s, const struct sym_info *si)
{
	if (!si)
		return true;
	if (si->python)
		return any_glob(skip_files, sizeof(skip_files) / sizeof(skip_files[0]), si->file) ||
		       any_glob(s->skip, s->nr_skip, si->file) ||
		       any_glob(s->skip, s->nr_skip, si->module);
	return !si->module ||
	       any_glob(skip_objects, sizeof(skip_objects) / sizeof(skip_objects[0]), si->module) ||
	       any_glob(s->skip, s->nr_skip, si->module);
}

/* A call of the interpreter's evaluation loop: where Python frames run. */
static bool eval_frame(const struct sym_info *si)
{
	return si && si->func && !strncmp(si->func, "_PyEval_EvalFrameDefault", 24);
}

static bool interp_frame(const struct sym_info *si)
{
	return si && si->module &&
	       (!fnmatch("libpython*", si->module, 0) || !fnmatch("python*", si->module, 0));
}

/* The address of Python frame i of st, named as such on first use; 0 without memory. */
static uint64_t py_addr(struct symbolizer *s, const struct py_stack *st, unsigned int i)
{
	struct py_frame_name nm;
	struct sym_info si = {.python = true};
	struct sym_entry *e;
	const char *base;
	uint64_t addr;

	addr = pyframes__frame(s->py, st->pid, st->version, &st->frames[i], &nm);
	if (!addr)
		return 0;
	e = entry_get(s, st->pid, addr);
	if (!e)
		return 0;
	if (e->name)
		return addr;
	base = nm.file ? strrchr(nm.file, '/') : NULL;
	si.func = strdup(nm.name ? nm.name : "?");
	si.module = strdup(nm.file ? (base ? base + 1 : nm.file) : "python");
	si.file = nm.file ? strdup(nm.file) : NULL;
	si.line = nm.line;
	if (!si.func || !si.module || (nm.file && !si.file)) {
		info_free(&si);
		return 0;
	}
	if (nm.file && asprintf(&e->where, "%s:%d", nm.file, nm.line) < 0) {
		e->where = NULL;
		info_free(&si);
		return 0;
	}
	return entry_set(s, e, &si, addr, SYM_FIXED) ? 0 : addr;
}

/*
 * Two Python stack ids merge to the same frames when only what was dropped differs (the
 * native frames of a walk gone astray, how a call of the loop was entered): the first one
 * stands for both, so an allocation site has one stack where a user sees one.
 */
static int canonical(struct symbolizer *s, const struct ustack *st)
{
	uint64_t h = hmap_hash2(st->caller, st->flags | (uint64_t)st->nofp_from << 16), *at;
	const struct ustack *first;
	uint16_t i;

	for (i = 0; i < st->nr; i++)
		h = hmap_hash2(h, st->frames[i]);
	for (;; h++) {
		at = hmap__get(&s->py_merged, (uint32_t)st->pid, h);
		if (!at)
			break;
		first = stacks__get(s->stacks, st->pid, (int32_t)*at, st->caller);
		if (first && first->nr == st->nr && first->flags == st->flags &&
		    first->nofp_from == st->nofp_from && first->site == st->site &&
		    !memcmp(first->frames, st->frames, st->nr * sizeof(st->frames[0])))
			return hmap__put(&s->py_canon, (uint32_t)st->pid, (uint32_t)st->id, *at);
	}
	return hmap__put(&s->py_merged, (uint32_t)st->pid, h, (uint32_t)st->id);
}

struct merge {
	uint64_t v[STACK_MAX_FRAMES];
	size_t n;
	bool cut;
};

static void merge_add(struct merge *m, uint64_t addr)
{
	if (m->n < STACK_MAX_FRAMES)
		m->v[m->n++] = addr;
	else
		m->cut = true;
}

/*
 * Python frames from *next up to the outermost of those one call of the evaluation loop
 * runs (entry_mask), into m; *next moves past them.
 */
static void merge_group(struct merge *m, const struct py_stack *st, const uint64_t *py,
			unsigned int *next)
{
	unsigned int i;

	for (i = *next; i < st->nr; i++) {
		merge_add(m, py[i]);
		if (st->entry_mask & (1ULL << (i & 63)))
			break;
	}
	*next = i < st->nr ? i + 1 : st->nr;
}

/*
 * The stack of a record with Python frames, as py-spy --native shows one: the native
 * frames, with the Python frames in place of the evaluation loop's calls they ran in. A
 * native walk through an interpreter built without frame pointers (all of these here) is
 * unreliable from the interpreter on: what it found there is dropped while Python frames
 * remain to be placed, since the interpreter's own frame chain says where the program
 * was, exactly; the Python frames left then follow the native frames kept.
 */
static int py_merge(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller)
{
	const struct py_stack *st = pyframes__stack(s->py, pid, id);
	uint64_t py[GL_PY_DEPTH_MAX], site = 0;
	const uint64_t *nat = &caller;
	size_t nn = 1, bad_from = 1, i;
	unsigned int next = 0, flags = 0, nofp = 0, p;
	const struct ustack *ns = NULL;
	struct merge m = {};
	bool has_eval = false;
	struct ustack *out;
	int err;

	if (!st || stacks__get(s->stacks, pid, id, caller))
		return 0;
	for (p = 0; p < st->nr; p++) {
		py[p] = py_addr(s, st, p);
		if (!py[p])
			return -ENOMEM;
	}
	if (st->native_id >= 0)
		ns = stacks__get(s->stacks, pid, st->native_id, caller);
	if (ns) {
		nat = ns->frames;
		nn = ns->nr;
		bad_from = ns->flags & STACK_NO_FP ? ns->nofp_from : nn;
		flags |= ns->flags & STACK_TRUNCATED;
	}
	if (!caller)
		nn = 0;
	for (i = 0; i < nn; i++)
		has_eval |= eval_frame(symbolizer__info(s, pid, nat[i]));
	for (i = 0; i < nn; i++) {
		const struct sym_info *si = symbolizer__info(s, pid, nat[i]);
		bool bad = i >= bad_from;

		if (eval_frame(si) && next < st->nr) {
			merge_group(&m, st, py, &next);
			continue;
		}
		/* The interpreter again with no Python left: the Python stack was cut here. */
		if (eval_frame(si) && (st->flags & GL_PYS_TRUNCATED)) {
			flags |= STACK_TRUNCATED;
			break;
		}
		/* Found by a walk gone astray: not where the Python frames belong, and once
		 * they are placed, no call of the loop runs any we know of. */
		if (bad && (next < st->nr || eval_frame(si)))
			continue;
		if (!has_eval && interp_frame(si))
			while (next < st->nr)
				merge_add(&m, py[next++]);
		if (bad && !(flags & STACK_NO_FP)) {
			flags |= STACK_NO_FP;
			nofp = (unsigned int)m.n;
		}
		merge_add(&m, nat[i]);
	}
	while (next < st->nr)
		merge_add(&m, py[next++]);
	if (m.cut || (st->flags & GL_PYS_TRUNCATED))
		flags |= STACK_TRUNCATED;
	/* The site: the innermost frame of the program's own code, else its innermost Python. */
	for (i = 0; i < m.n && !site; i++)
		if (!skipped(s, symbolizer__info(s, pid, m.v[i])))
			site = m.v[i];
	if (!site)
		site = py[0];
	err = stacks__add(s->stacks, pid, id, caller, m.v, m.n, flags, nofp);
	if (err)
		return err;
	out = stacks__get(s->stacks, pid, id, caller);
	if (!out)
		return -ENOMEM;
	out->site = site == caller ? 0 : site;
	return canonical(s, out);
}

int symbolizer__py_record(struct symbolizer *s, const struct gl_hdr *h)
{
	const struct gl_call_rec *r = (const struct gl_call_rec *)h;

	switch (h->kind) {
	case GL_REC_PY_CODE:
	case GL_REC_PY_STACK:
		return pyframes__record(s->py, h);
	case GL_REC_ALLOC:
	case GL_REC_ALLOC_FAIL:
		if (h->size < sizeof(*r) || !gl_stack_is_py(r->stack_id))
			return 0;
		return py_merge(s, (pid_t)h->pid, r->stack_id, r->caller);
	default:
		return 0;
	}
}

int32_t symbolizer__py_native_id(const struct symbolizer *s, pid_t pid, int32_t id)
{
	const struct py_stack *st = pyframes__stack(s->py, pid, id);

	return st ? st->native_id : -1;
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
	const uint64_t *at = hmap__get(&s->py_canon, (uint32_t)pid, (uint32_t)id);

	return at ? (int32_t)*at : id;
}

/* ---- JavaScript frames ---- */

/* A frame of a script a JIT named from its perf map (V8's): its file is the script's path. */
static bool js_frame(const struct sym_info *si)
{
	return si && !si->python && si->file;
}

bool symbolizer__script_frame(const struct sym_info *si)
{
	return si && (si->python || si->file);
}

static bool js_internal(const struct sym_info *si)
{
	return !strncmp(si->file, "node:", 5);
}

/* Scripts that name no site while the program's own are on the stack: packages. */
static const char *const skip_scripts[] = {"*/node_modules/*"};

static bool js_skipped(const struct symbolizer *s, const struct sym_info *si)
{
	return any_glob(skip_scripts, sizeof(skip_scripts) / sizeof(skip_scripts[0]), si->file) ||
	       any_glob(s->skip, s->nr_skip, si->file) || any_glob(s->skip, s->nr_skip, si->module);
}

static uint64_t str_hash(uint64_t h, const char *str)
{
	for (; str && *str; str++)
		h = (h ^ (uint8_t)*str) * 0x100000001b3ULL;
	return h;
}

/*
 * The address that stands for a JavaScript function wherever V8 runs it: the first one seen
 * of the same function and script location. V8 compiles a function again and again
 * (interpreted, baseline, optimized), each tier at other addresses: one site and one stack
 * for all of them, as a reader sees one function. addr itself when it is no script's, or
 * without memory.
 */
static uint64_t js_func(struct symbolizer *s, pid_t pid, uint64_t addr)
{
	const struct sym_info *si = symbolizer__info(s, pid, addr), *o;
	uint64_t h, *at;

	if (!js_frame(si) || !si->func || !si->module)
		return addr;
	h = str_hash(str_hash(0xcbf29ce484222325ULL, si->func), si->module);
	for (;; h++) {
		at = hmap__get(&s->js_funcs, (uint32_t)pid, h);
		if (!at)
			break;
		o = symbolizer__info(s, pid, *at);
		if (o && o->func && o->module && !strcmp(o->func, si->func) &&
		    !strcmp(o->module, si->module))
			return *at;
	}
	hmap__put(&s->js_funcs, (uint32_t)pid, h, addr); /* unremembered: stands for itself */
	return addr;
}

/*
 * Node's event loop running a queued callback: its task queues and timers (scripts), V8's
 * microtask runner and libuv's callbacks (native). Above such a frame the callback's own
 * frames begin; whoever queued it returned long ago.
 */
static bool js_loop_frame(const struct sym_info *si)
{
	static const char *const scripts[] = {"node:internal/process/task_queues",
					      "node:internal/timers"};
	static const char *const funcs[] = {"Builtins_RunMicrotasks",
					    "Builtins_PromiseFulfillReactionJob",
					    "Builtins_PromiseRejectReactionJob",
					    "uv__run_timers",
					    "uv__run_check",
					    "uv__run_idle"};

	if (!si)
		return false;
	if (js_frame(si))
		return any_glob(scripts, sizeof(scripts) / sizeof(scripts[0]), si->file);
	return any_glob(funcs, sizeof(funcs) / sizeof(funcs[0]), si->func);
}

/*
 * The site of a stack with JavaScript frames, as for Python: the innermost frame of the
 * program's own scripts (not Node's, not a package's, not --site-skip's); else the
 * innermost script frame of a package; 0 (the call site) without any. Whether the outermost
 * script frame runs in a callback of the event loop.
 */
static void js_judge(struct symbolizer *s, struct ustack *st)
{
	uint64_t first = 0;
	int outer = -1;
	uint16_t i;

	st->site = 0;
	st->js_flags = 0;
	for (i = 0; i < st->nr; i++) {
		const struct sym_info *si = symbolizer__info(s, st->pid, st->frames[i]);

		if (!js_frame(si) || js_internal(si))
			continue;
		outer = i;
		if (!first)
			first = st->frames[i];
		if (!st->site && !js_skipped(s, si))
			st->site = st->frames[i];
	}
	if (!first)
		return;
	st->site = js_func(s, st->pid, st->site ? st->site : first);
	st->js_flags = STACK_JS;
	for (i = (uint16_t)(outer + 1); i < st->nr; i++)
		if (js_loop_frame(symbolizer__info(s, st->pid, st->frames[i]))) {
			st->js_flags |= STACK_JS_ASYNC;
			break;
		}
}

/*
 * A JavaScript stack as a reader tells stacks apart: its script frames, each function at one
 * address whatever tier ran it, with each run of native frames around them (V8's builtins
 * and stubs, N-API, the binding, Node's event loop: what tier and entry V8 took) as one 0;
 * the call site, frame 0, as it is (the site's key has it). Into v; its length.
 */
static size_t fold_glue(struct symbolizer *s, const struct ustack *st, uint64_t *v)
{
	size_t n = 0;
	int i;

	for (i = 0; i < st->nr; i++) {
		bool glue =
		    i > 0 && !symbolizer__script_frame(symbolizer__info(s, st->pid, st->frames[i]));

		if (!glue)
			v[n++] = js_func(s, st->pid, st->frames[i]);
		else if (!n || v[n - 1])
			v[n++] = 0;
	}
	return n;
}

/* Stacks the same once their glue is folded are one: the first stands for the others. */
static int js_canonical(struct symbolizer *s, const struct ustack *st)
{
	uint64_t v[STACK_MAX_FRAMES], w[STACK_MAX_FRAMES], h, *at;
	size_t n = fold_glue(s, st, v), i;
	const struct ustack *first;

	h = hmap_hash2(st->caller, st->site ^ ((uint64_t)st->flags << 48 | st->js_flags));
	for (i = 0; i < n; i++)
		h = hmap_hash2(h, v[i]);
	for (;; h++) {
		at = hmap__get(&s->js_merged, (uint32_t)st->pid, h);
		if (!at)
			break;
		first = stacks__get(s->stacks, st->pid, (int32_t)*at, st->caller);
		if (first && first->site == st->site && first->flags == st->flags &&
		    first->js_flags == st->js_flags && fold_glue(s, first, w) == n &&
		    !memcmp(v, w, n * sizeof(v[0])))
			return hmap__put(&s->js_canon, (uint32_t)st->pid, (uint32_t)st->id, *at);
	}
	return hmap__put(&s->js_merged, (uint32_t)st->pid, h, (uint32_t)st->id);
}

static struct ustack *js_stack(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller)
{
	struct ustack *st = stacks__get(s->stacks, pid, id, caller);

	if (!st || gl_stack_is_py(id))
		return NULL;
	if (!st->site_known) {
		st->site_known = 1;
		js_judge(s, st);
		if (st->site && js_canonical(s, st))
			st->site_known = 0; /* out of memory: judged again next time */
	}
	return st;
}

unsigned int symbolizer__js_flags(struct symbolizer *s, pid_t pid, int32_t id, uint64_t caller)
{
	const struct ustack *st = js_stack(s, pid, id, caller);

	return st ? st->js_flags : 0;
}

uint64_t symbolizer__py_site(void *ctx, pid_t pid, uint64_t caller, int32_t *stack_id)
{
	struct symbolizer *s = ctx;
	const struct ustack *st;
	uint64_t site, *at;

	if (gl_stack_is_py(*stack_id)) {
		site = symbolizer__site_frame(s, pid, *stack_id, caller);
		*stack_id = symbolizer__py_canonical(s, pid, *stack_id);
		return site;
	}
	if (!s->js_seen)
		return 0;
	st = js_stack(s, pid, *stack_id, caller);
	if (!st || !st->site)
		return 0;
	at = hmap__get(&s->js_canon, (uint32_t)pid, (uint32_t)*stack_id);
	if (at)
		*stack_id = (int32_t)*at;
	return st->site == caller ? 0 : st->site;
}

uint64_t symbolizer__py_bad(const struct symbolizer *s)
{
	return pyframes__bad(s->py);
}
