// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "elf_syms.h"
#include "modules.h"
#include "probe_catalog.h"

struct modules {
	struct module **v;
	size_t n, cap;
	struct wgpu_abi wgpu_abi;	/* --webgpu-abi; labels == 0: detect per object */
};

void modules__set_wgpu_abi(struct modules *ms, const struct wgpu_abi *abi)
{
	ms->wgpu_abi = *abi;
}

int modules__new(struct modules **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void module_free(struct module *m)
{
	if (!m)
		return;
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

	if (ms->n == ms->cap) {
		size_t cap = ms->cap ? 2 * ms->cap : 64;
		struct module **v = realloc(ms->v, cap * sizeof(*v));

		if (!v)
			return NULL;
		ms->v = v;
		ms->cap = cap;
	}
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
	ms->v[ms->n++] = m;
	return m;
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
	struct wgpu_marks marks;
};

static int add_site(struct scan_ctx *sc, const struct cat_api *a, uint64_t off,
		    const struct elf_func *f)
{
	struct module *m = sc->m;
	size_t i;

	/*
	 * One probe per address: aliases (weak ncclX and pncclX) and the .dynsym and .symtab
	 * copies of a symbol are the same code. Entries of one name for different webgpu.h
	 * generations are all kept until the generation is known.
	 */
	for (i = 0; i < m->nr_sites; i++)
		if (m->sites[i].offset == off &&
		    (m->sites[i].api == a || strcmp(m->sites[i].api->name, a->name)))
			return 0;
	if (m->nr_sites == sc->cap) {
		size_t cap = sc->cap ? 2 * sc->cap : 16;
		struct probe_site *v = realloc(m->sites, cap * sizeof(*v));

		if (!v) {
			sc->err = -ENOMEM;
			return 1;
		}
		m->sites = v;
		sc->cap = cap;
	}
	m->sites[m->nr_sites++] = (struct probe_site){ a, off, f->vaddr, f->local };
	return 0;
}

static int scan_one(const struct elf_func *f, void *ctx)
{
	struct scan_ctx *sc = ctx;
	struct module *m = sc->m;
	const struct cat_api *a;
	uint64_t off;

	/* Quick reject: catalog names start with 'c', 'n', 'w', 'm', 'f', 'p', 'r', 'a' or '_'. */
	if (!strchr("cnwmfpra_", f->name[0]))
		return 0;
	wgpu_abi__note(&sc->marks, f->name);
	a = cat_by_name(f->name, strlen(f->name));
	if (!a || elf_obj__vaddr_to_off(m->elf, f->vaddr, &off))
		return 0;
	for (; a; a = cat_next_same_name(a))
		if (add_site(sc, a, off, f))
			return 1;
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

int module__scan(struct module *m)
{
	struct scan_ctx sc = { .m = m };

	if (m->scanned)
		return 0;
	m->scanned = true;
	if (!m->elf)
		return m->open_err;
	elf_obj__for_each_func(m->elf, scan_one, &sc);
	if (!sc.err)
		wgpu_filter(m, &sc.marks);
	return sc.err;
}

bool module__has_hidden_dawn(struct module *m)
{
	/* In every Dawn build: its bug links and feature names are in .rodata. */
	return m->elf && !m->nr_wgpu_funcs &&
	       (elf_obj__section_has(m->elf, ".rodata", "crbug.com/dawn/") ||
		elf_obj__section_has(m->elf, ".rodata", "dawn-internal-usages"));
}
