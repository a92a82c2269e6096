// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The diff's model (diff/diff.h): runs, their processes and sites, what a site name says
 * of where it is, and the series the loaders fill; the comparison is diff.c's.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "diff/diff.h"
#include "lib/vec.h"

int diff_run__new(enum diff_source source, const char *path, struct diff_run **out)
{
	struct diff_run *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->source = source;
	r->path = strdup(path);
	if (!r->path) {
		free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

static void site_free(struct diff_site *s)
{
	free(s->api);
	free(s->func);
	free(s->module);
	free(s->label);
	free(s->name);
	free(s->samples);
}

void diff_proc__release(struct diff_proc *p)
{
	size_t j;

	for (j = 0; j < p->nr_sites; j++)
		site_free(&p->sites[j]);
	free(p->sites);
	free(p->series);
	hmap__free(&p->site_idx);
}

void diff_run__free(struct diff_run *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->nr_procs; i++)
		diff_proc__release(&r->procs[i]);
	free(r->procs);
	free(r->path);
	free(r->gpuleak);
	free(r);
}

struct diff_proc *diff_run__add_proc(struct diff_run *r)
{
	struct diff_proc *p;

	if (vec_grow((void **)&r->procs, &r->cap_procs, r->nr_procs, sizeof(*r->procs)))
		return NULL;
	p = &r->procs[r->nr_procs++];
	memset(p, 0, sizeof(*p));
	p->sites_exact = true;
	return p;
}

static bool same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static uint64_t str_hash(uint64_t h, const char *s)
{
	/* FNV-1a, then a separator so ("ab","c") and ("a","bc") differ */
	for (; s && *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return (h ^ 0xff) * 0x100000001b3ULL;
}

/* "0x" and at least one hex digit, to the end of s[0..n). */
static bool hex_to_end(const char *s, size_t n, uint64_t *v)
{
	char *end;

	if (n < 3 || s[0] != '0' || s[1] != 'x' || !isxdigit((unsigned char)s[2]))
		return false;
	errno = 0;
	*v = strtoull(s + 2, &end, 16);
	return !errno && end == s + n;
}

/*
 * ":LINE" or ":LINE:COLUMN" at the end of s[0..*n): a source file with where the function is
 * (a Python frame's file and line, a JIT frame's script, line and column from a perf map),
 * taken off; the line in *line.
 */
static bool line_at_end(const char *s, size_t *n, uint64_t *line)
{
	size_t end = *n, k, i;
	uint64_t v[2];

	for (k = 0; k < 2; k++) {
		i = end;
		while (i && s[i - 1] >= '0' && s[i - 1] <= '9')
			i--;
		if (i == end || i < 2 || s[i - 1] != ':' || end - i > 9)
			break;
		v[k] = strtoull(s + i, NULL, 10);
		end = i - 1;
	}
	if (!k)
		return false;
	*line = v[k - 1];
	*n = end;
	return true;
}

static char *dup_n(const char *s, size_t n)
{
	return strndup(s, n);
}

int diff__parse_site(const char *name, char **func, char **module, bool *has_off, uint64_t *off)
{
	size_t len = strlen(name), head = len, mlen;
	const char *open = NULL, *plus = NULL, *p;

	*func = *module = NULL;
	*has_off = false;
	*off = 0;
	/* "... (module)": the last " (" opens the module (C++ names may hold parentheses). */
	if (len >= 4 && name[len - 1] == ')')
		for (p = name; (p = strstr(p, " (")); p++)
			open = p;
	if (open) {
		head = (size_t)(open - name);
		mlen = len - head - 3;
		if (line_at_end(open + 2, &mlen, off))
			*has_off = true;
		if (mlen && !(mlen == 1 && open[2] == '?')) {
			*module = dup_n(open + 2, mlen);
			if (!*module)
				return -ENOMEM;
		}
	}
	for (p = name; (p = strstr(p, "+0x")) && p < name + head; p++)
		plus = p;
	if (plus && hex_to_end(plus + 1, head - (size_t)(plus + 1 - name), off)) {
		*has_off = true;
	} else {
		plus = NULL;
	}
	if (open) {
		/* func+0xoff (module), or func (file:line) */
		size_t flen = plus ? (size_t)(plus - name) : head;

		if (flen) {
			*func = dup_n(name, flen);
			if (!*func)
				return -ENOMEM;
		}
		return 0;
	}
	if (plus && plus > name) {
		/* module+0xfileoff: no symbol covers it */
		*module = dup_n(name, (size_t)(plus - name));
		return *module ? 0 : -ENOMEM;
	}
	/* 0xaddr, ?, or something else: matched by its name alone */
	*has_off = false;
	*off = 0;
	return 0;
}

static uint64_t site_key(const char *api, const char *name, const char *label)
{
	return str_hash(str_hash(str_hash(0xcbf29ce484222325ULL, api), name), label) | 1;
}

static bool site_is(const struct diff_site *s, const char *api, const char *name, const char *label)
{
	return !strcmp(s->api, api) && !strcmp(s->name, name) && same_str(s->label, label);
}

int diff_proc__site(struct diff_proc *p, const char *api, const char *name, const char *label)
{
	uint64_t k, *v;
	struct diff_site *s;
	size_t i;
	int err;

	if (label && !*label)
		label = NULL;
	k = site_key(api, name, label);
	v = hmap__get(&p->site_idx, k, 0);
	if (v && site_is(&p->sites[*v], api, name, label))
		return (int)*v;
	if (v) /* another site with the same hash: rare enough to look for it */
		for (i = 0; i < p->nr_sites; i++)
			if (site_is(&p->sites[i], api, name, label))
				return (int)i;
	if (p->nr_sites >= INT32_MAX ||
	    vec_grow((void **)&p->sites, &p->cap_sites, p->nr_sites, sizeof(*p->sites)))
		return -ENOMEM;
	s = &p->sites[p->nr_sites];
	memset(s, 0, sizeof(*s));
	s->api = strdup(api);
	s->name = strdup(name);
	s->label = label ? strdup(label) : NULL;
	err = diff__parse_site(name, &s->func, &s->module, &s->has_off, &s->off);
	if (!s->api || !s->name || (label && !s->label) || err) {
		site_free(s);
		return -ENOMEM;
	}
	if (!v && hmap__put(&p->site_idx, k, 0, p->nr_sites)) {
		site_free(s);
		return -ENOMEM;
	}
	return (int)p->nr_sites++;
}

int diff_site__change(struct diff_run *r, struct diff_proc *p, struct diff_site *s, int64_t step,
		      int64_t d_live, int64_t d_leaked, int64_t d_init)
{
	struct diff_sample *last = s->nr_samples ? &s->samples[s->nr_samples - 1] : NULL;

	s->cur_live += (uint64_t)d_live;
	s->cur_leaked += (uint64_t)d_leaked;
	s->cur_init += (uint64_t)d_init;
	if (p->series_cut)
		return 0;
	if (last && last->step == step) {
		last->live = s->cur_live;
		last->leaked = s->cur_leaked;
		last->init = s->cur_init;
		return 0;
	}
	if (r->samples >= DIFF_MAX_SAMPLES) {
		p->series_cut = true;
		return 0;
	}
	if (vec_grow((void **)&s->samples, &s->cap_samples, s->nr_samples, sizeof(*s->samples)))
		return -ENOMEM;
	s->samples[s->nr_samples++] = (struct diff_sample){
	    .step = step, .live = s->cur_live, .leaked = s->cur_leaked, .init = s->cur_init};
	r->samples++;
	return 0;
}

int diff_proc__step(struct diff_run *r, struct diff_proc *p, int64_t step, uint64_t live,
		    uint64_t requests, uint64_t allocs, uint64_t alloc_bytes)
{
	struct diff_step st = {.step = step, .live = live};

	if (p->series_cut)
		return 0;
	if (r->samples >= DIFF_MAX_SAMPLES) {
		p->series_cut = true;
		return 0;
	}
	if (vec_grow((void **)&p->series, &p->cap_series, p->nr_series, sizeof(*p->series)))
		return -ENOMEM;
	if (p->nr_series)
		st = p->series[p->nr_series - 1];
	st.step = step;
	st.live = live;
	st.torch_allocated = st.torch_reserved = 0;
	st.requests += requests;
	st.allocs += allocs;
	st.alloc_bytes += alloc_bytes;
	p->series[p->nr_series++] = st;
	r->samples++;
	return 0;
}

void diff_proc__torch_step(struct diff_proc *p, int64_t step, uint64_t allocated, uint64_t reserved)
{
	struct diff_step *st = p->nr_series ? &p->series[p->nr_series - 1] : NULL;

	if (!st || st->step != step)
		return; /* the series was cut */
	st->torch_allocated = allocated;
	st->torch_reserved = reserved;
}

double diff__tenth(double x)
{
	return round(x * 10) / 10;
}
