// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hmap.h"
#include "symbols/stacks.h"
#include "lib/vec.h"

struct stacks {
	struct hmap idx;   /* (pid | id << 32, caller) -> index into v */
	struct ustack **v; /* one allocation each: callers keep pointers */
	size_t n, cap;
};

int stacks__new(struct stacks **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

void stacks__free(struct stacks *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	hmap__free(&s->idx);
	free(s);
}

static uint64_t key0(pid_t pid, int32_t id)
{
	/* never HMAP_EMPTY: ids are >= 0 here */
	return (uint64_t)(uint32_t)id << 32 | (uint32_t)pid;
}

struct ustack *stacks__get(const struct stacks *s, pid_t pid, int32_t id, uint64_t caller)
{
	uint64_t *i;

	if (id < 0)
		return NULL;
	i = hmap__get(&s->idx, key0(pid, id), caller);
	return i ? s->v[*i] : NULL;
}

size_t stacks__count(const struct stacks *s)
{
	return s->n;
}

struct ustack *stacks__at(const struct stacks *s, size_t index)
{
	return index < s->n ? s->v[index] : NULL;
}

/* A new entry of nr frames, frames left for the caller to fill. */
static struct ustack *add(struct stacks *s, pid_t pid, int32_t id, uint64_t caller, size_t nr)
{
	struct ustack *st;

	if (vec_grow((void **)&s->v, &s->cap, s->n, sizeof(*s->v)))
		return NULL;
	st = calloc(1, sizeof(*st) + nr * sizeof(st->frames[0]));
	if (!st)
		return NULL;
	if (hmap__put(&s->idx, key0(pid, id), caller, s->n)) {
		free(st);
		return NULL;
	}
	st->index = (uint32_t)s->n;
	st->pid = pid;
	st->id = id;
	st->caller = caller;
	st->nr = (uint16_t)nr;
	s->v[s->n++] = st;
	return st;
}

int stacks__intern(struct stacks *s, pid_t pid, int32_t id, uint64_t caller, const uint64_t *raw,
		   size_t n, unsigned int depth, struct ustack **out, int *is_new)
{
	/* The kernel put the call site first, or the walk starts at the caller's caller. */
	size_t lead = n && raw[0] == caller ? 0 : 1, total = n + lead, nr, i;
	struct ustack *st;

	*is_new = 0;
	if (id < 0 || !depth || depth > STACK_MAX_FRAMES || n > depth + 1)
		return -EINVAL;
	st = stacks__get(s, pid, id, caller);
	if (st) {
		*out = st;
		return 0;
	}
	nr = total > depth ? depth : total;
	st = add(s, pid, id, caller, nr);
	if (!st)
		return -ENOMEM;
	st->frames[0] = caller;
	for (i = 1; i < nr; i++)
		st->frames[i] = raw[i - lead];
	if (total > depth)
		st->flags |= STACK_TRUNCATED;
	*out = st;
	*is_new = 1;
	return 0;
}

int stacks__add(struct stacks *s, pid_t pid, int32_t id, uint64_t caller, const uint64_t *frames,
		size_t nr, unsigned int flags, unsigned int nofp_from)
{
	struct ustack *st;

	if (id < 0 || nr > STACK_MAX_FRAMES || (flags & ~STACK_FLAGS_KNOWN) || nofp_from > nr)
		return -EINVAL;
	if (stacks__get(s, pid, id, caller))
		return 0;
	st = add(s, pid, id, caller, nr);
	if (!st)
		return -ENOMEM;
	memcpy(st->frames, frames, nr * sizeof(*frames));
	st->flags = (uint16_t)flags;
	st->nofp_from = (uint16_t)(flags & STACK_NO_FP ? nofp_from : 0);
	return 0;
}
