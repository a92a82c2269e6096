// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "probe/dawn_procs.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/catalog.h"
#include "lib/hmap.h"
#include "lib/rundir.h"
#include "lib/vec.h"

struct modules {
	struct module **v;
	size_t n, cap;
	bool libc;
	bool nvtx;
	bool fixed_probes;	  /* --probe-at-entry */
	bool dawn_procs_only;	  /* --dawn-procs */
	struct wgpu_abi wgpu_abi; /* --webgpu-abi; labels == 0: detect per object */
	struct objfacts *facts;	  /* NULL: every object scanned */
	size_t spared, scanned;
};

void modules__trace_libc(struct modules *ms, bool on)
{
	ms->libc = on;
}

void modules__trace_nvtx(struct modules *ms, bool on)
{
	ms->nvtx = on;
}

void modules__move_probes(struct modules *ms, bool on)
{
	ms->fixed_probes = !on;
}

void modules__dawn_procs_only(struct modules *ms, bool on)
{
	ms->dawn_procs_only = on;
}

void modules__set_wgpu_abi(struct modules *ms, const struct wgpu_abi *abi)
{
	ms->wgpu_abi = *abi;
}

int modules__use_facts(struct modules *ms)
{
	char name[300];
	const char *build = rundir__build_id();
	/* What a scan's result depends on besides the file: the catalog (this build), options. */
	uint64_t opts =
	    hmap_hash2((uint64_t)ms->fixed_probes << 33 | (uint64_t)ms->dawn_procs_only << 32 |
			   ms->wgpu_abi.labels << 8 | ms->wgpu_abi.formats,
		       ms->wgpu_abi.configured);

	if (!build[0])
		return 0; /* no build id: nothing tells this catalog's facts from another's */
	snprintf(name, sizeof(name), "objects-%s-%016" PRIx64, build, opts);
	return objfacts__open(name, &ms->facts);
}

int modules__save_facts(struct modules *ms)
{
	return objfacts__save(ms->facts);
}

void modules__facts_counts(const struct modules *ms, size_t *spared, size_t *scanned)
{
	*spared = ms->spared;
	*scanned = ms->scanned;
}

unsigned int module__facts(const struct module *m)
{
	return m->has_id ? objfacts__get(m->ms->facts, &m->id) : 0;
}

void module__learn(const struct module *m, unsigned int bits)
{
	if (m->has_id)
		objfacts__add(m->ms->facts, &m->id, bits);
}

int modules__new(struct modules **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void module_free(struct module *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nr_usdt; i++) {
		free(m->usdt[i].provider);
		free(m->usdt[i].name);
		free(m->usdt[i].args);
	}
	free(m->usdt);
	dawn_procs__free(m->dawn);
	elf_obj__free(m->elf);
	free(m->sites);
	free(m->path);
	free(m);
}

void modules__free(struct modules *ms)
{
	size_t i;

	if (!ms)
		return;
	for (i = 0; i < ms->n; i++)
		module_free(ms->v[i]);
	free(ms->v);
	objfacts__free(ms->facts);
	free(ms);
}

static struct module *find(struct modules *ms, uint64_t dev, uint64_t ino)
{
	size_t i;

	for (i = 0; i < ms->n; i++)
		if (ms->v[i]->dev == dev && ms->v[i]->ino == ino)
			return ms->v[i];
	return NULL;
}

static struct module *add(struct modules *ms, uint64_t dev, uint64_t ino, const char *path,
			  const char *open_path)
{
	struct module *m;
	const char *slash;

	if (vec_grow((void **)&ms->v, &ms->cap, ms->n, sizeof(*ms->v)))
		return NULL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return NULL;
	m->path = strdup(path);
	if (!m->path) {
		free(m);
		return NULL;
	}
	slash = strrchr(m->path, '/');
	m->name = slash ? slash + 1 : m->path;
	m->dev = dev;
	m->ino = ino;
	m->ms = ms;
	m->open_err = elf_obj__open(open_path, &m->elf);
	m->has_id = ms->facts && !file_id__of(open_path, &m->id);
	m->libc = ms->libc;
	m->nvtx = ms->nvtx;
	ms->v[ms->n++] = m;
	return m;
}

/*
 * /proc/PID/map_files reaches the mapped inode from any mount namespace, even unlinked, but
 * only with CAP_SYS_ADMIN or CAP_CHECKPOINT_RESTORE. Without them, the path the target sees,
 * through its own root (/proc/PID/root: a container's file system), then as we see it; each
 * only if it is the mapped inode (its number: an overlay reports another device).
 */
static void reopen_by_path(struct module *m, pid_t pid, const struct pmap_ent *e)
{
	char path[4200];
	struct stat st;
	int i;

	if (!e->path || e->path[0] != '/' || e->deleted)
		return;
	for (i = 0; i < 2 && !m->elf; i++) {
		if (i == 0)
			snprintf(path, sizeof(path), "/proc/%d/root%s", pid, e->path);
		else
			snprintf(path, sizeof(path), "%s", e->path);
		if (stat(path, &st) || st.st_ino != e->ino)
			continue;
		if (!elf_obj__open(path, &m->elf))
			m->open_err = 0;
		if (m->elf)
			m->has_id = m->ms->facts && !file_id__of(path, &m->id);
	}
}

struct module *modules__get(struct modules *ms, pid_t pid, const struct pmap_ent *e)
{
	struct module *m = find(ms, e->dev, e->ino);
	char open_path[96];

	if (m)
		return m;
	proc_maps__open_path(pid, e, open_path, sizeof(open_path));
	m = add(ms, e->dev, e->ino, e->path, open_path);
	if (!m)
		errno = ENOMEM;
	else if (!m->elf)
		reopen_by_path(m, pid, e);
	return m;
}

struct module *modules__get_path(struct modules *ms, const char *path)
{
	struct module *m;
	struct stat st;

	if (stat(path, &st))
		return NULL;
	/* /proc/PID/maps prints the device as major:minor of st_dev. */
	m = find(ms, st.st_dev, st.st_ino);
	if (m)
		return m;
	m = add(ms, st.st_dev, st.st_ino, path, path);
	if (!m)
		errno = ENOMEM;
	return m;
}

struct scan_ctx {
	struct module *m;
	size_t cap;
	int err;
	bool libc; /* this module is the C library and --libc is on */
	struct wgpu_marks marks;
};

/* Functions bigger than this keep their probes at the entry (the whole body is read). */
#define PLACE_MAX_BYTES (256 * 1024)

/*
 * Put the site's probe on the function's first instruction the kernel emulates when the
 * ones before it provably do not matter (insn.h); say why not otherwise. The whole function
 * is read: no branch in it may land between the entry and the probe.
 */
static void place_probe(struct module *m, const struct elf_func *f, struct probe_site *s)
{
#if defined(__x86_64__)
	bool whole = f->size && f->size <= PLACE_MAX_BYTES;
	size_t len = whole ? f->size : 16;
	uint8_t small[16], *code = len > sizeof(small) ? malloc(len) : small;
	const char *fixed = NULL;
	ssize_t n;

	if (!code)
		return; /* left at the entry, unclassified */
	n = elf_obj__read(m->elf, s->offset, code, len);
	if (n > 0) {
		if (m->ms->fixed_probes)
			fixed = "--probe-at-entry";
		else if (!whole || (size_t)n != len)
			fixed = "function size unknown";
		s->offset += insn__place_probe(code, n, f->vaddr, fixed, &s->place);
		s->slow = s->place.place == PLACE_SLOW || s->place.place == PLACE_REFUSED;
	}
	if (code != small)
		free(code);
#else
	(void)m, (void)f, (void)s; /* not classified on this architecture */
#endif
}

static int add_site(struct scan_ctx *sc, const struct cat_api *a, uint64_t off,
		    const struct elf_func *f, enum site_source source)
{
	struct module *m = sc->m;
	size_t i;

	/* malloc & co. only where they are the process's allocator, and only when asked:
	 * every hit costs, and glibc's free needs a single-stepped probe. */
	if ((a->flags & CAT_LIBC) && !sc->libc)
		return 0;
	/* NVTX ranges only matter when they are the steps. */
	if ((a->flags & CAT_NVTX) && !m->nvtx)
		return 0;
	/*
	 * One probe per address: aliases (weak ncclX and pncclX) and the .dynsym and .symtab
	 * copies of a symbol are the same code. Entries of one name for different webgpu.h
	 * generations are all kept until the generation is known.
	 */
	for (i = 0; i < m->nr_sites; i++)
		if (m->sites[i].entry_offset == off &&
		    (m->sites[i].api == a || strcmp(m->sites[i].api->name, a->name)))
			return 0;
	if (vec_grow((void **)&m->sites, &sc->cap, m->nr_sites, sizeof(*m->sites))) {
		sc->err = -ENOMEM;
		return 1;
	}
	m->sites[m->nr_sites] = (struct probe_site){.api = a,
						    .offset = off,
						    .vaddr = f->vaddr,
						    .local = f->local,
						    .source = source,
						    .entry_offset = off};
	place_probe(m, f, &m->sites[m->nr_sites]);
	m->nr_sites++;
	return 0;
}

static bool is_libc(const struct module *m)
{
	return !strncmp(m->name, "libc.so", 7) || !strncmp(m->name, "libc-2.", 7);
}

static int scan_one(const struct elf_func *f, void *ctx)
{
	struct scan_ctx *sc = ctx;
	struct module *m = sc->m;
	const struct cat_api *a;
	uint64_t off;

	/* Quick reject: catalog names start with 'c', 'n', 'w', 'm', 'f', 'p', 'r', 'a' or '_'. */
	if (!f->name[0] || !strchr("cnwmfpra_", f->name[0]))
		return 0;
	/* --dawn-procs: as if the object had no WebGPU symbols at all. */
	if (m->ms->dawn_procs_only &&
	    (!strncmp(f->name, "wgpu", 4) || !strncmp(f->name, "_ZN4dawn", 8)))
		return 0;
	wgpu_abi__note(&sc->marks, f->name);
	a = cat_by_name(f->name, strlen(f->name));
	if (!a || elf_obj__vaddr_to_off(m->elf, f->vaddr, &off))
		return 0;
	for (; a; a = cat_next_same_name(a))
		if (add_site(sc, a, off, f, SITE_SYMBOL))
			return 1;
	return 0;
}

/*
 * An object with no wgpu* function symbols may still have Dawn: its entry points are then
 * read from Dawn's own name table (dawn_procs.h), and the catalog's WebGPU probes go there.
 * The table's names are also the evidence of its webgpu.h generation. Objects without a
 * table's worth of wgpu* names in their .rodata are turned away by a scan of that alone, a
 * window at a time (bench: `procs`, the libcublasLt row), once.
 */
static int scan_dawn_procs(struct scan_ctx *sc)
{
	struct module *m = sc->m;
	size_t i;

	m->dawn_err = dawn_procs__recover(m->elf, &m->dawn, m->dawn_why, sizeof(m->dawn_why));
	if (m->dawn_err)
		return m->dawn_err == -ENOMEM ? -ENOMEM : 0;
	for (i = 0; i < m->dawn->n; i++) {
		const struct dawn_proc *p = &m->dawn->v[i];
		struct elf_func f = {.name = p->name, .vaddr = p->vaddr, .size = p->size};
		const struct cat_api *a;
		uint64_t off;

		wgpu_abi__note(&sc->marks, p->name);
		a = cat_by_name(p->name, strlen(p->name));
		if (!a || GL_API_FAMILY(a->api) != GL_FAM_WEBGPU ||
		    elf_obj__vaddr_to_off(m->elf, p->vaddr, &off))
			continue;
		for (; a; a = cat_next_same_name(a))
			if (add_site(sc, a, off, &f, SITE_DAWN_PROCS))
				return sc->err;
	}
	return 0;
}

/* Whether an entry fits an object's webgpu.h generation (non-WebGPU entries always do). */
static bool wgpu_fits(const struct cat_api *a, const struct wgpu_abi *abi)
{
	unsigned int f = a->flags & CAT_WGPU_ABI_MASK;

	if (GL_API_FAMILY(a->api) != GL_FAM_WEBGPU)
		return true;
	if (!abi->labels)
		return false;
	if ((f & CAT_WGPU_SV) && abi->labels != WGPU_LABELS_SV)
		return false;
	if ((f & CAT_WGPU_CSTR) && abi->labels != WGPU_LABELS_CSTR)
		return false;
	if ((f & CAT_WGPU_FMT_PRE_TIER1) && abi->formats != WGPU_FORMATS_PRE_TIER1)
		return false;
	if ((f & CAT_WGPU_FMT_TIER1) && abi->formats != WGPU_FORMATS_TIER1)
		return false;
	if ((f & CAT_WGPU_FMT_UNKNOWN) && abi->formats != WGPU_FORMATS_UNKNOWN)
		return false;
	return true;
}

/* Keep the sites of the object's webgpu.h generation; count what had to be left out. */
static void wgpu_filter(struct module *m, const struct wgpu_marks *marks)
{
	const struct wgpu_abi *conf = &m->ms->wgpu_abi;
	uint64_t last_dropped = UINT64_MAX;
	size_t i, n = 0;

	m->nr_wgpu_funcs = marks->wgpu_funcs;
	if (marks->wgpu_funcs)
		wgpu_abi__judge(marks, conf->labels ? conf : NULL, &m->wgpu);
	for (i = 0; i < m->nr_sites; i++) {
		const struct cat_api *a = m->sites[i].api;

		if (!wgpu_fits(a, &m->wgpu)) {
			/* Each left-out function once, not once per generation. */
			if (!m->wgpu.labels && !(a->flags & CAT_OPTIONAL) &&
			    m->sites[i].offset != last_dropped) {
				m->nr_wgpu_dropped++;
				last_dropped = m->sites[i].offset;
			}
			continue;
		}
		m->sites[n++] = m->sites[i];
		if (!(a->flags & CAT_OPTIONAL))
			m->nr_required++;
	}
	m->nr_sites = n;
}

/* Whether an argument spec list has a base+index*scale operand: "-8@8(%rax,%rbx,8)". */
static bool has_sib(const char *args)
{
	const char *open = strchr(args, '(');

	for (; open; open = strchr(open + 1, '(')) {
		const char *close = strchr(open, ')');
		const char *comma = strchr(open, ',');

		if (close && comma && comma < close)
			return true;
	}
	return false;
}

/* One SDT note: a new probe, or one more site of a probe of the same provider:name. */
static int scan_sdt(const struct elf_sdt *n, void *ctx)
{
	struct module *m = ctx;
	struct usdt_probe *u;
	size_t i;

	for (i = 0; i < m->nr_usdt; i++) {
		u = &m->usdt[i];
		if (strcmp(u->provider, n->provider) || strcmp(u->name, n->name))
			continue;
		u->nr_sites++;
		u->args_differ |= strcmp(u->args, n->args) != 0;
		u->base_missing |= n->base_missing;
		u->sib |= has_sib(n->args);
		return 0;
	}
	if (vec_grow((void **)&m->usdt, &m->cap_usdt, m->nr_usdt, sizeof(*m->usdt)))
		return -ENOMEM;
	u = &m->usdt[m->nr_usdt];
	*u = (struct usdt_probe){.provider = strdup(n->provider),
				 .name = strdup(n->name),
				 .args = strdup(n->args),
				 .api = cat_by_usdt(n->provider, n->name),
				 .nr_sites = 1,
				 .pc_off = n->pc_off,
				 .sema_vaddr = n->sema_vaddr,
				 .sema_off = n->sema_off,
				 .base_missing = n->base_missing,
				 .sib = has_sib(n->args)};
	if (!u->provider || !u->name || !u->args) {
		free(u->provider);
		free(u->name);
		free(u->args);
		return -ENOMEM;
	}
	m->nr_usdt++;
	if (u->api) {
		m->nr_usdt_traced++;
		if (!(u->api->flags & CAT_OPTIONAL))
			m->nr_required++;
	}
	return 0;
}

/*
 * Whether an earlier run's "nothing to trace" holds for this scan: not when it traces more
 * than a plain scan does (--libc on the C library, NVTX entry points for --step nvtx).
 */
static bool facts_apply(const struct module *m)
{
	return m->has_id && !m->nvtx && !(m->libc && is_libc(m));
}

/*
 * The sites an earlier run's scan found, when they still fit the object: each at a catalog
 * entry a symbol can name, its entry inside the object's code at the address it says, the
 * probe as far past it as its placement moved it. Anything else (a store from elsewhere, a
 * debug file's symbols gone): false, and the object is scanned.
 */
static bool sites_from_facts(struct module *m, struct scan_ctx *sc)
{
	const struct objsite *v;
	size_t i, n = 0;
	uint64_t off;

	v = objfacts__sites(m->ms->facts, &m->id, &n);
	if (!v)
		return false;
	for (i = 0; i < n; i++)
		if (v[i].api >= cat_nr_apis ||
		    (cat_apis[v[i].api].flags & (CAT_DYNAMIC | CAT_USDT)) ||
		    v[i].source != SITE_SYMBOL || elf_obj__vaddr_to_off(m->elf, v[i].vaddr, &off) ||
		    off != v[i].entry_offset || v[i].offset - v[i].entry_offset != v[i].place.moved)
			return false;
	m->sites = calloc(n, sizeof(*m->sites));
	if (!m->sites)
		return false;
	for (i = 0; i < n; i++)
		m->sites[i] = (struct probe_site){.api = &cat_apis[v[i].api],
						  .offset = v[i].offset,
						  .vaddr = v[i].vaddr,
						  .local = v[i].local,
						  .source = v[i].source,
						  .slow = v[i].slow,
						  .entry_offset = v[i].entry_offset,
						  .place = v[i].place};
	m->nr_sites = sc->cap = n;
	return true;
}

/*
 * Keep what the scan found for the next run, where it depends on the object alone: not
 * WebGPU (its entries depend on the generation judged from all its names), not Dawn's
 * recovered table.
 */
static void learn_sites(struct module *m, const struct wgpu_marks *k)
{
	struct objsite *v;
	size_t i;

	if (!m->nr_sites || m->dawn || m->nr_wgpu_funcs || m->nr_wgpu_dropped || k->wgpu_funcs ||
	    k->sv_labels || k->cstr_labels || k->after_sv || k->reference || k->addref ||
	    k->tier1 || k->pre_tier1 || m->nr_sites > OBJFACTS_SITES_PER_FILE)
		return;
	v = calloc(m->nr_sites, sizeof(*v));
	if (!v)
		return;
	for (i = 0; i < m->nr_sites; i++) {
		const struct probe_site *p = &m->sites[i];

		if (p->source != SITE_SYMBOL) {
			free(v);
			return;
		}
		v[i] = (struct objsite){.api = (uint32_t)(p->api - cat_apis),
					.local = p->local,
					.source = p->source,
					.slow = p->slow,
					.offset = p->offset,
					.vaddr = p->vaddr,
					.entry_offset = p->entry_offset,
					.place = p->place};
	}
	objfacts__set_scan(m->ms->facts, &m->id, v, m->nr_sites,
			   elf_obj__debug_obj(m->elf) != NULL);
	free(v);
}

/*
 * What an earlier run's scan found of this version of the file, unless this scan reads more
 * symbols than that one did: a debug file the symbolizer has attached since (--debug-dir, a
 * -dbgsym package installed in between) may name functions the object alone does not. One
 * found with a debug file's symbols holds with or without it (offsets are the object's).
 */
static unsigned int scan_facts(const struct module *m)
{
	unsigned int f = facts_apply(m) ? module__facts(m) : 0;

	if (!(f & OBJF_DEBUG_SYMS) && elf_obj__debug_obj(m->elf))
		return 0;
	return f & (OBJF_NO_SITES | OBJF_SITES);
}

int module__scan(struct module *m)
{
	struct scan_ctx sc = {.m = m, .libc = m->libc && is_libc(m)};
	bool kept = false;

	if (m->scanned)
		return 0;
	m->scanned = true;
	if (!m->elf)
		return m->open_err;
	if (scan_facts(m) & OBJF_NO_SITES) {
		m->from_facts = true;
		m->ms->spared++;
		return 0;
	}
	kept = (scan_facts(m) & OBJF_SITES) && sites_from_facts(m, &sc);
	if (kept) {
		m->ms->spared++;
	} else {
		m->ms->scanned++;
		elf_obj__for_each_func(m->elf, scan_one, &sc);
		if (!sc.err && !sc.marks.wgpu_funcs)
			sc.err = scan_dawn_procs(&sc);
	}
	if (!sc.err)
		wgpu_filter(m, &sc.marks);
	if (!sc.err && !kept && facts_apply(m))
		learn_sites(m, &sc.marks);
	if (!sc.err)
		m->usdt_err = elf_obj__for_each_sdt(m->elf, scan_sdt, m);
	if (m->usdt_err == -ENOMEM)
		sc.err = -ENOMEM;
	/* Nothing to trace: no site, no catalog probe among its notes, no WebGPU, no Dawn. */
	if (!sc.err && !kept && facts_apply(m) && !m->nr_sites && !m->nr_usdt_traced &&
	    !m->usdt_err && !m->nr_wgpu_funcs && !m->nr_wgpu_dropped && !m->dawn)
		objfacts__set_scan(m->ms->facts, &m->id, NULL, 0,
				   elf_obj__debug_obj(m->elf) != NULL);
	return sc.err;
}

const struct usdt_probe *module__usdt(struct module *m, const char *provider, const char *name)
{
	size_t i;

	/* A marker may name any note: those of an object spared its scan are read now. */
	if (m->from_facts) {
		m->from_facts = false;
		m->usdt_err = elf_obj__for_each_sdt(m->elf, scan_sdt, m);
	}
	for (i = 0; i < m->nr_usdt; i++)
		if (!strcmp(m->usdt[i].provider, provider) && !strcmp(m->usdt[i].name, name))
			return &m->usdt[i];
	return NULL;
}

bool module__has_torch_usdt(const struct module *m)
{
	size_t i;

	for (i = 0; i < m->nr_usdt; i++)
		if (m->usdt[i].api && GL_API_FAMILY(m->usdt[i].api->api) == GL_FAM_PYTORCH)
			return true;
	return false;
}

bool module__has_hidden_dawn(struct module *m)
{
	/* In every Dawn build: its bug links and feature names are in .rodata. */
	return m->elf && !m->nr_wgpu_funcs && !m->dawn &&
	       (elf_obj__section_has(m->elf, ".rodata", "crbug.com/dawn/") ||
		elf_obj__section_has(m->elf, ".rodata", "dawn-internal-usages"));
}

const char *module__site_source(const struct probe_site *s)
{
	return s->source == SITE_DAWN_PROCS ? "Dawn's proc table" : "symbols";
}
