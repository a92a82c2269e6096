// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include "probe/proc_maps.h"
#include "lib/vec.h"

static int parse_line(char *line, struct pmap_ent *e)
{
	unsigned int maj, min;
	char perms[5];
	int n = 0;
	char *p;
	size_t len;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &e->start,
		   &e->end, perms, &e->pgoff, &maj, &min, &e->ino, &n) < 7)
		return -EINVAL;
	e->dev = makedev(maj, min);
	e->exec = perms[2] == 'x';
	e->path = NULL;
	e->deleted = false;
	p = line + n;
	len = strlen(p);
	while (len && (p[len - 1] == '\n' || p[len - 1] == ' '))
		p[--len] = 0;
	if (!e->ino || p[0] != '/')
		return 0; /* anonymous, [heap], [vdso], ... */
	if (len > 10 && !strcmp(p + len - 10, " (deleted)")) {
		p[len - 10] = 0;
		e->deleted = true;
	}
	e->path = strdup(p);
	return e->path ? 0 : -ENOMEM;
}

int proc_maps__load(pid_t pid, struct proc_maps **out)
{
	struct proc_maps *m = NULL;
	char path[64], *line = NULL;
	size_t cap = 0, linecap = 0;
	FILE *f;
	int err = 0;

	*out = NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT ? -ESRCH : -errno;
	m = calloc(1, sizeof(*m));
	if (!m) {
		err = -ENOMEM;
		goto cleanup;
	}
	m->pid = pid;
	while (getline(&line, &linecap, f) > 0) {
		if (vec_grow((void **)&m->v, &cap, m->n, sizeof(*m->v))) {
			err = -ENOMEM;
			goto cleanup;
		}
		if (parse_line(line, &m->v[m->n]))
			continue;
		m->n++;
	}
	/* An empty maps file means the process is exiting (its mm is gone). */
	if (!m->n) {
		err = -ESRCH;
		goto cleanup;
	}
	*out = m;
	m = NULL;
cleanup:
	free(line);
	fclose(f);
	proc_maps__free(m);
	return err;
}

bool proc_maps__first_exec(const struct proc_maps *m, size_t i)
{
	const struct pmap_ent *e = &m->v[i];
	size_t j;

	if (!e->exec || !e->path)
		return false;
	for (j = 0; j < i; j++)
		if (m->v[j].exec && m->v[j].path && m->v[j].dev == e->dev && m->v[j].ino == e->ino)
			return false;
	return true;
}

void proc_maps__free(struct proc_maps *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	free(m);
}

const struct pmap_ent *proc_maps__find(const struct proc_maps *m, uint64_t addr)
{
	/* the first mapping ending above addr */
	size_t lo = VEC_BOUND(m->v, m->n, end, addr, true);

	if (lo < m->n && m->v[lo].start <= addr)
		return &m->v[lo];
	return NULL;
}

void proc_maps__open_path(pid_t pid, const struct pmap_ent *e, char *buf, size_t len)
{
	snprintf(buf, len, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, e->start, e->end);
}
