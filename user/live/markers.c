// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "engine/analysis.h"
#include "gpuleak.h"
#include "lib/log.h"
#include "live/attach.h"
#include "live/markers.h"
#include "live/process.h"
#include "live/targets.h"
#include "probe/dawn_procs.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/needed.h"
#include "probe/proc_maps.h"

struct markers {
	struct marker {
		const char *file, *provider, *sym; /* provider: a USDT probe, NULL: a function */
		unsigned int api;
		char spec[64]; /* the option as given, for messages: "--step sym:FILE:SYMBOL" */
	} v[4];
	int n;
	unsigned int said; /* bit i: "marker on ..." printed */
};

/* provider: a usdt: marker's (sym its probe's name); NULL: a sym: or api: one. */
static void add_marker(struct markers *mk, const char *opt, const char *file, const char *provider,
		       const char *sym, const char *sym2, unsigned int api)
{
	struct marker *k = &mk->v[mk->n++];

	k->file = file;
	k->provider = provider;
	k->sym = api == GL_API_MARKER_REQ_END ? sym2 : sym;
	k->api = api;
	/* Cut to fit: the file and symbol are named again, whole, in every message. */
	if (provider)
		snprintf(k->spec, sizeof(k->spec), "%s usdt:%s:%s:%s%s%s", opt, file, provider, sym,
			 sym2 ? "," : "", sym2 ? sym2 : "");
	else if (!strcmp(file, "*"))
		snprintf(k->spec, sizeof(k->spec), "%s api:%s", opt, sym);
	else
		snprintf(k->spec, sizeof(k->spec), "%s sym:%s:%s%s%s", opt, file, sym,
			 sym2 ? "," : "", sym2 ? sym2 : "");
}

int markers__new(const struct analysis_opts *a, struct markers **out)
{
	struct markers *mk = calloc(1, sizeof(*mk));

	*out = mk;
	if (!mk)
		return -ENOMEM;
	if (a->step_file)
		add_marker(mk, "--step", a->step_file, a->step_provider, a->step_sym, NULL,
			   GL_API_MARKER_STEP);
	if (a->req_file) {
		add_marker(mk, "--request", a->req_file, a->req_provider, a->req_begin, a->req_end,
			   GL_API_MARKER_REQ_BEGIN);
		add_marker(mk, "--request", a->req_file, a->req_provider, a->req_begin, a->req_end,
			   GL_API_MARKER_REQ_END);
	}
	if (a->end_file)
		add_marker(mk, "--end", a->end_file, a->end_provider, a->end_sym, NULL,
			   GL_API_MARKER_END);
	return 0;
}

void markers__free(struct markers *mk)
{
	free(mk);
}

static const char *marker_kind(unsigned int api)
{
	return api == GL_API_MARKER_STEP	? "step"
	       : api == GL_API_MARKER_REQ_BEGIN ? "request-begin"
	       : api == GL_API_MARKER_REQ_END	? "request-end"
						: "session-end";
}

int markers__attach(struct markers *mk, struct attach *att, struct target *t,
		    const struct proc_maps *m)
{
	int i, left = 0;

	for (i = 0; i < mk->n; i++) {
		struct marker *k = &mk->v[i];
		char rooted[4200];
		const char *file = k->file;
		int err;

		if (t->markers_done & (1U << i))
			continue;
		if (file[0] == '/' && m && process__in_other_root(t->pid)) {
			snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", t->pid, file);
			file = rooted;
		}
		err = attach__marker(att, t->pid, m, file, k->provider, k->sym, k->api);
		if (!err) {
			t->markers_done |= 1U << i;
			/* Once, not once per process: a server's ranks all get it. */
			if (mk->said & (1U << i))
				continue;
			mk->said |= 1U << i;
			pr_note("%s marker on %s%s%s%s in %s\n", marker_kind(k->api),
				k->provider ? "USDT " : "", k->provider ? k->provider : "",
				k->provider ? ":" : "", k->sym,
				strcmp(k->file, "*") ? k->file : "every object that has it");
		} else if (err != -ENOENT) {
			pr_err("cannot put a marker on %s%s%s in %s: %s\n",
			       k->provider ? k->provider : "", k->provider ? ":" : "", k->sym,
			       k->file, strerror(-err));
			t->markers_done |= 1U << i; /* said once; do not retry */
		} else {
			left++;
		}
	}
	return left;
}

/* ---- checking that each marker can be placed, before the targets run ---- */

/* What a marker's FILE is matched against: an object the target maps, or will at its start. */
struct candidate {
	const char *path; /* where it is (NULL: a library ld.so will find, not found here) */
	const char *name; /* its name as FILE may say it: the path's basename, or DT_NEEDED's */
	const char *soname;
	struct elf_obj *elf;
};

/* Levenshtein distance, for "closest:" suggestions (names cut at 128 bytes). */
static unsigned int distance(const char *a, const char *b)
{
	unsigned int row[129], i, j, diag, up;
	size_t la = strnlen(a, 128), lb = strnlen(b, 128);

	for (j = 0; j <= lb; j++)
		row[j] = j;
	for (i = 1; i <= la; i++) {
		diag = row[0];
		row[0] = i;
		for (j = 1; j <= lb; j++) {
			up = row[j];
			row[j] = diag + (a[i - 1] != b[j - 1]);
			if (up + 1 < row[j])
				row[j] = up + 1;
			if (row[j - 1] + 1 < row[j])
				row[j] = row[j - 1] + 1;
			diag = up;
		}
	}
	return row[lb];
}

#define NR_CLOSE 3

/* The NR_CLOSE names nearest to a wanted one, nearest first. */
struct closest {
	const char *want;
	char name[NR_CLOSE][128];
	unsigned int d[NR_CLOSE];
	int n;
};

static void closest_offer(struct closest *c, const char *name, size_t len)
{
	char cut[128];
	unsigned int d;
	int i, at;

	snprintf(cut, sizeof(cut), "%.*s", (int)(len < sizeof(cut) ? len : sizeof(cut) - 1), name);
	for (i = 0; i < c->n; i++)
		if (!strcmp(c->name[i], cut))
			return;
	d = distance(c->want, cut);
	for (at = c->n; at > 0 && c->d[at - 1] > d; at--)
		;
	if (at == NR_CLOSE)
		return;
	if (c->n < NR_CLOSE)
		c->n++;
	memmove(&c->name[at + 1], &c->name[at], (c->n - 1 - at) * sizeof(c->name[0]));
	memmove(&c->d[at + 1], &c->d[at], (c->n - 1 - at) * sizeof(c->d[0]));
	snprintf(c->name[at], sizeof(c->name[at]), "%s", cut);
	c->d[at] = d;
}

/* "; closest: a, b, c" into buf. */
static const char *closest_text(const struct closest *c, char *buf, size_t len)
{
	size_t o = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < c->n && o < len; i++)
		o += snprintf(buf + o, len - o, "%s%s", i ? ", " : "; closest: ", c->name[i]);
	return buf;
}

struct sym_search {
	const char *want;
	bool found;
	struct closest close;
};

static int sym_search_cb(const struct elf_func *f, void *ctx)
{
	struct sym_search *ss = ctx;
	size_t n = strcspn(f->name, "@"); /* "name@VERSION" in .symtab */

	if (strlen(ss->want) == n && !strncmp(f->name, ss->want, n)) {
		ss->found = true;
		return 1;
	}
	closest_offer(&ss->close, f->name, n);
	return 0;
}

/*
 * A Dawn entry point by its wgpu* name in an object without symbols for it (onnxruntime):
 * attach finds those in Dawn's own name table, so this check does too. Only when the name is
 * not a symbol: recovering the table reads the whole object.
 */
static bool in_dawn_procs(struct elf_obj *elf, const char *name)
{
	struct dawn_procs *dp = NULL;
	bool found;

	if (strncmp(name, "wgpu", 4) || dawn_procs__recover(elf, &dp))
		return false;
	found = dawn_procs__find(dp, name) != NULL;
	dawn_procs__free(dp);
	return found;
}

struct usdt_search {
	const char *provider, *name;
	bool found;
	struct closest close; /* want: "provider:name" */
};

static int usdt_search_cb(const struct elf_sdt *n, void *ctx)
{
	struct usdt_search *us = ctx;
	char pn[256];
	int len;

	if (!strcmp(n->provider, us->provider) && !strcmp(n->name, us->name)) {
		us->found = true;
		return 1;
	}
	len = snprintf(pn, sizeof(pn), "%s:%s", n->provider, n->name);
	closest_offer(&us->close, pn, len < (int)sizeof(pn) ? (size_t)len : sizeof(pn) - 1);
	return 0;
}

/*
 * usdt:FILE:PROVIDER:NAME: the object has an SDT note of PROVIDER:NAME, as attach looks for
 * it: 0, or -EINVAL said (with the closest probes it has).
 */
static int check_usdt(const struct marker *k, const char *shown, const char *path,
		      struct elf_obj *elf)
{
	char want[256], more[3 * 128 + 16];
	struct usdt_search us = {.provider = k->provider, .name = k->sym};
	int err;

	snprintf(want, sizeof(want), "%s:%s", k->provider, k->sym);
	us.close.want = want;
	err = elf_obj__for_each_sdt(elf, usdt_search_cb, &us);
	if (us.found)
		return 0;
	if (err) {
		pr_err("%s: the USDT notes of %s cannot be read (%s): %s\n", k->spec, shown, path,
		       strerror(-err));
		return -EINVAL;
	}
	pr_err("%s: %s has no USDT probe %s (%s%s)\n", k->spec, shown, want, path,
	       us.close.n ? closest_text(&us.close, more, sizeof(more))
			  : "; no USDT probes (.note.stapsdt)");
	return -EINVAL;
}

/*
 * SYMBOL (a usdt: marker's probe) in the object FILE named: 0, or -EINVAL said (with the
 * closest names it has).
 */
static int check_symbol(const struct marker *k, const char *shown, const char *path,
			struct elf_obj *elf)
{
	struct sym_search ss = {.want = k->sym, .close = {.want = k->sym}};
	char more[3 * 128 + 16];

	if (k->provider)
		return check_usdt(k, shown, path, elf);
	elf_obj__for_each_func(elf, sym_search_cb, &ss);
	if (ss.found || in_dawn_procs(elf, k->sym))
		return 0;
	pr_err("%s: %s has no function %s (%s%s)\n", k->spec, shown, k->sym, path,
	       ss.close.n ? closest_text(&ss.close, more, sizeof(more)) : "; no function symbols");
	return -EINVAL;
}

/* FILE as a path: the file exists, is ELF, and defines SYMBOL. */
static int check_path(const struct marker *k, const char *path)
{
	struct elf_obj *elf;
	struct stat st;
	int err;

	/* Before opening: a FIFO would block the open, and a directory is no object. */
	if (stat(path, &st)) {
		pr_err("%s: %s: %s\n", k->spec, k->file, strerror(errno));
		return -EINVAL;
	}
	if (!S_ISREG(st.st_mode)) {
		pr_err("%s: %s is not a regular file\n", k->spec, k->file);
		return -EINVAL;
	}
	err = elf_obj__open(path, &elf);
	if (err) {
		if (err == -ENOEXEC)
			pr_err("%s: %s is not an ELF object\n", k->spec, k->file);
		else
			pr_err("%s: %s: %s\n", k->spec, k->file, strerror(-err));
		return -EINVAL;
	}
	err = check_symbol(k, k->file, path, elf);
	elf_obj__free(elf);
	return err;
}

/* FILE as a name, among what the target maps (where: "pid 42 maps", "/x/prog maps at its
 * start"). 1: not among them but --wait lets it come later; 0; -EINVAL said. */
static int check_named(const struct marker *k, const struct candidate *c, size_t n,
		       const char *where, bool wait)
{
	struct closest close = {.want = k->file};
	char list[512], more[3 * 128 + 16];
	size_t i, o = 0;

	for (i = 0; i < n; i++)
		if (!strcmp(c[i].name, k->file) || (c[i].soname && !strcmp(c[i].soname, k->file)))
			break;
	/* Found by a name ld.so will resolve, not by us: its symbols are for ld.so to see. */
	if (i < n)
		return c[i].elf ? check_symbol(k, k->file, c[i].path, c[i].elf) : 0;
	if (wait) {
		pr_note("%s: no object named %s in what %s yet: waiting for one to be loaded "
			"(--wait)\n",
			k->spec, k->file, where);
		return 1;
	}
	list[0] = 0;
	for (i = 0; i < n; i++) {
		closest_offer(&close, c[i].name, strlen(c[i].name));
		if (o < sizeof(list))
			o += snprintf(list + o, sizeof(list) - o, "%s%s", i ? ", " : "", c[i].name);
	}
	pr_err("%s: no object named %s in what %s (%s%s); a library loaded later (dlopen): give "
	       "its path, or add --wait\n",
	       k->spec, k->file, where, list, closest_text(&close, more, sizeof(more)));
	return -EINVAL;
}

int markers__check_exec(struct markers *mk, const char *exe, bool wait)
{
	struct candidate *c = NULL;
	struct needed *nd = NULL;
	char where[4200];
	int i, err = 0, ret;
	size_t j;

	for (i = 0; i < mk->n && !err; i++) {
		const struct marker *k = &mk->v[i];

		/* api:NAME is in whichever objects have it, now or later: nothing to check. */
		if (!strcmp(k->file, "*"))
			continue;
		if (strchr(k->file, '/')) {
			err = check_path(k, k->file);
			continue;
		}
		if (!nd) {
			err = needed__load(exe, &nd);
			if (err)
				return 0; /* not ELF, say (a script): ld.so's business, checked at exec */
			c = calloc(nd->n, sizeof(*c));
			if (!c) {
				err = -ENOMEM;
				break;
			}
			for (j = 0; j < nd->n; j++) {
				const struct elf_dyn *dy =
				    nd->v[j].elf ? elf_obj__dyn(nd->v[j].elf) : NULL;
				const char *p = nd->v[j].path;

				c[j] = (struct candidate){.path = p,
							  .name = p && strrchr(p, '/')
								      ? strrchr(p, '/') + 1
								      : nd->v[j].name,
							  .soname = dy ? dy->soname : NULL,
							  .elf = nd->v[j].elf};
			}
			snprintf(where, sizeof(where), "%s maps at its start", exe);
		}
		ret = check_named(k, c, nd->n, where, wait);
		err = ret < 0 ? ret : 0;
	}
	free(c);
	needed__free(nd);
	return err;
}

int markers__check_maps(struct markers *mk, struct modules *mods, pid_t pid,
			const struct proc_maps *m, bool wait)
{
	struct candidate *c;
	char where[64], rooted[4200];
	size_t i, n = 0;
	int k, err = 0, ret;

	c = calloc(m->n ? m->n : 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		const struct elf_dyn *dy;
		struct module *mod;
		size_t j;
		bool dup = false;

		if (!e->exec || !e->path || e->path[0] != '/')
			continue;
		for (j = 0; j < n && !dup; j++)
			dup = !strcmp(c[j].path, e->path);
		mod = dup ? NULL : modules__get(mods, pid, e);
		if (!mod)
			continue;
		dy = mod->elf ? elf_obj__dyn(mod->elf) : NULL;
		c[n++] = (struct candidate){.path = e->path,
					    .name = mod->name,
					    .soname = dy ? dy->soname : NULL,
					    .elf = mod->elf};
	}
	snprintf(where, sizeof(where), "pid %d maps", pid);
	for (k = 0; k < mk->n && !err; k++) {
		const struct marker *mr = &mk->v[k];

		if (!strcmp(mr->file, "*"))
			continue; /* api:NAME: any object, now or later */
		if (!strchr(mr->file, '/')) {
			ret = check_named(mr, c, n, where, wait);
			err = ret < 0 ? ret : 0;
		} else if (mr->file[0] == '/' && process__in_other_root(pid)) {
			snprintf(rooted, sizeof(rooted), "/proc/%d/root%s", pid, mr->file);
			err = check_path(mr, rooted);
		} else {
			err = check_path(mr, mr->file);
		}
	}
	free(c);
	return err;
}
