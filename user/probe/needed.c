// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include "lib/vec.h"
#include "probe/elf_obj.h"
#include "probe/needed.h"

/* Past this many objects the list stops growing: no real program needs that many. */
#define NEEDED_MAX 1024
/* ld.so.conf includes nested deeper than this are not followed (a loop). */
#define CONF_DEPTH 4

struct dirs {
	char **v;
	size_t n, cap;
};

static int dirs_add(struct dirs *d, const char *dir, size_t len)
{
	size_t i;

	while (len > 1 && dir[len - 1] == '/')
		len--;
	if (!len)
		return 0;
	for (i = 0; i < d->n; i++)
		if (strlen(d->v[i]) == len && !strncmp(d->v[i], dir, len))
			return 0;
	if (vec_grow((void **)&d->v, &d->cap, d->n, sizeof(*d->v)))
		return -ENOMEM;
	d->v[d->n] = strndup(dir, len);
	return d->v[d->n++] ? 0 : -ENOMEM;
}

static void dirs_free(struct dirs *d)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		free(d->v[i]);
	free(d->v);
}

/* One ld.so.conf: a directory per line, "include GLOB" (relative to /etc), # comments. */
static void read_conf(struct dirs *d, const char *path, int depth)
{
	char line[PATH_MAX + 16], pat[PATH_MAX + 8];
	struct stat st;
	FILE *f;

	/* Only regular files: a FIFO here would block. */
	if (depth > CONF_DEPTH || stat(path, &st) || !S_ISREG(st.st_mode))
		return;
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = line, *end;
		glob_t g;
		size_t i;

		line[strcspn(line, "#\n")] = 0;
		p += strspn(p, " \t");
		end = p + strlen(p);
		while (end > p && (end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		if (!*p || !strncmp(p, "hwcap ", 6))
			continue;
		if (strncmp(p, "include", 7) || (p[7] != ' ' && p[7] != '\t')) {
			dirs_add(d, p, strlen(p));
			continue;
		}
		p += 7 + strspn(p + 7, " \t");
		snprintf(pat, sizeof(pat), "%s%s", *p == '/' ? "" : "/etc/", p);
		if (glob(pat, 0, NULL, &g))
			continue;
		for (i = 0; i < g.gl_pathc; i++)
			read_conf(d, g.gl_pathv[i], depth + 1);
		globfree(&g);
	}
	fclose(f);
}

/* The directories after the object's own: /etc/ld.so.conf's, then the system's. */
static void system_dirs(struct dirs *d)
{
	static const char *const fixed[] = {"/lib64", "/usr/lib64", "/lib", "/usr/lib"};
	struct utsname u;
	char dir[128];
	size_t i;

	read_conf(d, "/etc/ld.so.conf", 0);
	/* Debian's multiarch directories, where ld.so.conf.d usually names them too. */
	if (!uname(&u)) {
		snprintf(dir, sizeof(dir), "/lib/%s-linux-gnu", u.machine);
		dirs_add(d, dir, strlen(dir));
		snprintf(dir, sizeof(dir), "/usr/lib/%s-linux-gnu", u.machine);
		dirs_add(d, dir, strlen(dir));
	}
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
		dirs_add(d, fixed[i], strlen(fixed[i]));
}

/* A DT_RPATH, DT_RUNPATH or LD_LIBRARY_PATH list, $ORIGIN made the loader's directory. */
static void path_list(struct dirs *d, const char *list, const char *origin)
{
	char dir[PATH_MAX];

	while (list && *list) {
		size_t n = strcspn(list, ":;");

		if (!strncmp(list, "$ORIGIN", 7) && (list[7] == '/' || n == 7))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)n - 7, list + 7);
		else if (!strncmp(list, "${ORIGIN}", 9) && (list[9] == '/' || n == 9))
			snprintf(dir, sizeof(dir), "%s%.*s", origin, (int)n - 9, list + 9);
		else if (memchr(list, '$', n))
			dir[0] = 0; /* $LIB, $PLATFORM: not followed */
		else
			snprintf(dir, sizeof(dir), "%.*s", (int)n, list);
		dirs_add(d, dir, strlen(dir));
		list += n + !!list[n];
	}
}

/* Open path if it is a regular ELF file of the executable's machine. */
static struct elf_obj *try_open(const char *path, unsigned int machine)
{
	struct elf_obj *o;
	struct stat st;

	if (stat(path, &st) || !S_ISREG(st.st_mode) || elf_obj__open(path, &o))
		return NULL;
	if (machine && elf_obj__machine(o) != machine) {
		elf_obj__free(o);
		return NULL;
	}
	return o;
}

static int add(struct needed *nd, const char *name, const char *path, struct elf_obj *elf)
{
	struct needed_obj *e;
	char real[PATH_MAX];

	if (vec_grow((void **)&nd->v, &nd->cap, nd->n, sizeof(*nd->v)))
		return -ENOMEM;
	e = &nd->v[nd->n];
	e->name = strdup(name);
	e->path = path ? strdup(realpath(path, real) ? real : path) : NULL;
	e->elf = elf;
	if (!e->name || (path && !e->path)) {
		free(e->name);
		free(e->path);
		return -ENOMEM;
	}
	nd->n++;
	return 0;
}

static bool known(const struct needed *nd, const char *name)
{
	size_t i;

	for (i = 0; i < nd->n; i++) {
		const struct elf_dyn *dy = nd->v[i].elf ? elf_obj__dyn(nd->v[i].elf) : NULL;

		if (!strcmp(nd->v[i].name, name) || (dy && dy->soname && !strcmp(dy->soname, name)))
			return true;
	}
	return false;
}

/* Where ld.so finds name, needed by object i: the file opened, its path in path. */
static struct elf_obj *find(struct needed *nd, size_t i, const char *name, const struct dirs *sys,
			    char *path, size_t len)
{
	const struct elf_dyn *own = elf_obj__dyn(nd->v[i].elf), *exe = elf_obj__dyn(nd->v[0].elf);
	unsigned int machine = elf_obj__machine(nd->v[0].elf);
	char origin[PATH_MAX], *slash;
	struct dirs d = {};
	struct elf_obj *o = NULL;
	size_t k;

	if (strchr(name, '/')) {
		snprintf(path, len, "%s", name);
		return try_open(path, machine);
	}
	snprintf(origin, sizeof(origin), "%s", nd->v[i].path);
	slash = strrchr(origin, '/');
	if (slash)
		*slash = 0;
	if (own && !own->runpath) {
		path_list(&d, own->rpath, origin);
		/* The executable's DT_RPATH covers what its libraries load, as ld.so does. */
		if (i && exe && !exe->runpath && nd->v[0].path) {
			char eorigin[PATH_MAX];

			snprintf(eorigin, sizeof(eorigin), "%s", nd->v[0].path);
			slash = strrchr(eorigin, '/');
			if (slash)
				*slash = 0;
			path_list(&d, exe->rpath, eorigin);
		}
	}
	path_list(&d, getenv("LD_LIBRARY_PATH"), origin);
	if (own)
		path_list(&d, own->runpath, origin);
	for (k = 0; k < sys->n; k++)
		dirs_add(&d, sys->v[k], strlen(sys->v[k]));
	for (k = 0; k < d.n && !o; k++) {
		snprintf(path, len, "%s/%s", d.v[k], name);
		o = try_open(path, machine);
	}
	dirs_free(&d);
	return o;
}

int needed__load(const char *exe, struct needed **out)
{
	struct dirs sys = {};
	struct needed *nd;
	struct elf_obj *o;
	char path[PATH_MAX];
	size_t i, j;
	int err;

	*out = NULL;
	nd = calloc(1, sizeof(*nd));
	if (!nd)
		return -ENOMEM;
	err = elf_obj__open(exe, &o);
	if (!err) {
		err = add(nd, exe, exe, o);
		if (err)
			elf_obj__free(o);
	}
	if (err)
		goto cleanup;
	system_dirs(&sys);
	/* Breadth first, each name once, as ld.so loads them. */
	for (i = 0; i < nd->n && nd->n < NEEDED_MAX; i++) {
		const struct elf_dyn *dy = nd->v[i].elf ? elf_obj__dyn(nd->v[i].elf) : NULL;

		for (j = 0; dy && j < dy->nr_needed && nd->n < NEEDED_MAX; j++) {
			if (known(nd, dy->needed[j]))
				continue;
			o = find(nd, i, dy->needed[j], &sys, path, sizeof(path));
			err = add(nd, dy->needed[j], o ? path : NULL, o);
			if (err) {
				elf_obj__free(o);
				goto cleanup;
			}
		}
	}
	*out = nd;
	nd = NULL;
cleanup:
	dirs_free(&sys);
	needed__free(nd);
	return err;
}

void needed__free(struct needed *nd)
{
	size_t i;

	if (!nd)
		return;
	for (i = 0; i < nd->n; i++) {
		free(nd->v[i].name);
		free(nd->v[i].path);
		elf_obj__free(nd->v[i].elf);
	}
	free(nd->v);
	free(nd);
}
