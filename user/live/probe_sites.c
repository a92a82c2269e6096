// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include "lib/vec.h"
#include "live/attach.h"
#include "live/probe_sites.h"

struct probe_sites {
	struct kept {
		pid_t pid;
		char *json; /* JSON members, without braces */
	} * v;
	size_t n, cap;
};

int probe_sites__new(struct probe_sites **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void probe_sites__free(struct probe_sites *ps)
{
	size_t i;

	if (!ps)
		return;
	for (i = 0; i < ps->n; i++)
		free(ps->v[i].json);
	free(ps->v);
	free(ps);
}

void probe_sites__keep(struct probe_sites *ps, const struct attach *att, pid_t pid)
{
	struct kept *k;
	size_t len;
	FILE *f;

	/* Out of memory: the verdict goes without them, as without --json. */
	if (!ps || vec_grow((void **)&ps->v, &ps->cap, ps->n, sizeof(*ps->v)))
		return;
	k = &ps->v[ps->n];
	k->pid = pid;
	k->json = NULL;
	f = open_memstream(&k->json, &len);
	if (!f)
		return;
	attach__placement_json(att, pid, f);
	if (fclose(f)) {
		free(k->json);
		return;
	}
	ps->n++;
}

void probe_sites__verdict_more(void *ctx, pid_t pid, FILE *json)
{
	const struct probe_sites *ps = ctx;
	size_t i = ps ? ps->n : 0;

	while (i--)
		if (ps->v[i].pid == pid) {
			fprintf(json, ",%s", ps->v[i].json);
			return;
		}
}
