// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * NDJSON verdicts into a diff_run (diff/diff_verdicts.h). A process's step records come
 * before its verdict, which is its last record; a pid that exec'd has two verdicts, each
 * after its own steps. So step records open a process of their pid, and its verdict closes
 * it; processes with steps and no verdict (a file cut short) are dropped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "diff/diff_verdicts.h"
#include "lib/hmap.h"
#include "lib/json_read.h"
#include "lib/vec.h"

/* NDJSON lines longer than this are refused: a verdict of many thousands of sites fits. */
#define MAX_LINE (256U << 20)

/* A site as a step record tells it apart: one of the parts of a diff_site. */
struct part {
	size_t site;
	uint64_t live;
	uint8_t cls; /* 0 none, 1 init, 2 other */
};

/* A process whose step records were seen and whose verdict was not yet. */
struct open_proc {
	pid_t pid;
	size_t proc; /* index into the run's procs */
	struct part *parts;
	size_t nr_parts, cap_parts;
	struct hmap part_idx;
};

struct loader {
	const char *path;
	size_t line;
	const char *text;
	size_t len;
	char *err;
	size_t errlen;
	struct diff_run *run;
	struct open_proc *open;
	size_t nr_open, cap_open;
	bool *done; /* per proc of the run: its verdict was read */
	size_t cap_done;
};

__attribute__((format(printf, 3, 4))) static int bad(struct loader *l, const struct json_value *at,
						     const char *fmt, ...)
{
	unsigned int line, col;
	size_t n;
	va_list ap;

	json_read__position(l->text, l->len, at ? at->off : 0, &line, &col);
	n = (size_t)snprintf(l->err, l->errlen, "%s:%zu:%u: ", l->path, l->line, col);
	if (n < l->errlen) {
		va_start(ap, fmt);
		vsnprintf(l->err + n, l->errlen - n, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* ---- typed members (what the diff needs, with the schema's types) ---- */

static int member(struct loader *l, const struct json_value *obj, const char *rec, const char *key,
		  enum json_kind kind, bool nullable, const struct json_value **out)
{
	const struct json_value *v = json_read__member(obj, key);
	static const char *const kinds[] = {"null",	"a boolean", "a boolean", "a number",
					    "a string", "an array",  "an object"};

	*out = NULL;
	if (!v)
		return bad(l, obj, "%s has no \"%s\"", rec, key);
	if (v->kind == JSON_NULL && nullable)
		return 0;
	if (v->kind == kind || (kind == JSON_TRUE && v->kind == JSON_FALSE))
		*out = v;
	else
		return bad(l, v, "%s: \"%s\" must be %s%s", rec, key, kinds[kind],
			   nullable ? " or null" : "");
	if (kind == JSON_STRING && strlen(v->str.s) != v->str.len)
		return bad(l, v, "%s: \"%s\" holds a NUL character", rec, key);
	return 0;
}

static int get_u64(struct loader *l, const struct json_value *obj, const char *rec, const char *key,
		   uint64_t *out)
{
	const struct json_value *v;
	int err = member(l, obj, rec, key, JSON_NUMBER, false, &v);

	if (err)
		return err;
	if (!v->num.integer || v->num.neg)
		return bad(l, v, "%s: \"%s\" must be a non-negative integer", rec, key);
	*out = v->num.mag;
	return 0;
}

static int get_int(struct loader *l, const struct json_value *obj, const char *rec, const char *key,
		   int64_t min, int64_t max, int64_t *out)
{
	const struct json_value *v;
	int err = member(l, obj, rec, key, JSON_NUMBER, false, &v);
	int64_t x;

	if (err)
		return err;
	if (!v->num.integer)
		goto out_of_range;
	if (v->num.neg) {
		if (min >= 0 || v->num.mag - 1 > (uint64_t)(-(min + 1)))
			goto out_of_range;
		x = -(int64_t)(v->num.mag - 1) - 1;
	} else {
		if (v->num.mag > (uint64_t)max)
			goto out_of_range;
		x = (int64_t)v->num.mag;
	}
	if (x < min)
		goto out_of_range;
	*out = x;
	return 0;
out_of_range:
	return bad(l, v, "%s: \"%s\" must be an integer from %" PRId64 " to %" PRId64, rec, key,
		   min, max);
}

/* A number, or null (then *out is 0 and *known false when known is given). */
static int get_num(struct loader *l, const struct json_value *obj, const char *rec, const char *key,
		   bool nullable, double *out)
{
	const struct json_value *v;
	int err = member(l, obj, rec, key, JSON_NUMBER, nullable, &v);

	*out = v ? v->num.d : 0;
	return err;
}

static int get_str(struct loader *l, const struct json_value *obj, const char *rec, const char *key,
		   bool nullable, const char **out)
{
	const struct json_value *v;
	int err = member(l, obj, rec, key, JSON_STRING, nullable, &v);

	*out = v ? v->str.s : NULL;
	return err;
}

static int get_enum(struct loader *l, const struct json_value *obj, const char *rec,
		    const char *key, const char *const *names, const char **out)
{
	const struct json_value *v;
	int err = member(l, obj, rec, key, JSON_STRING, false, &v);
	size_t i;

	if (err)
		return err;
	for (i = 0; names[i]; i++)
		if (!strcmp(v->str.s, names[i])) {
			*out = names[i];
			return 0;
		}
	return bad(l, v, "%s: \"%s\" is \"%.40s\", not one of gpuleak's", rec, key, v->str.s);
}

static int get_arr(struct loader *l, const struct json_value *obj, const char *rec, const char *key,
		   const struct json_value **out)
{
	return member(l, obj, rec, key, JSON_ARRAY, false, out);
}

static const char *const states[] = {"exited", "detached", "ended", "running", "exec", NULL};
static const char *const sources[] = {"interval", "sync", "sym", "nvtx", NULL};
static const char *const classes[] = {"none", "init", "persistent", "ignored", NULL};

/* ---- processes ---- */

static struct open_proc *open_find(struct loader *l, pid_t pid)
{
	size_t i;

	for (i = 0; i < l->nr_open; i++)
		if (l->open[i].pid == pid)
			return &l->open[i];
	return NULL;
}

static void open_close(struct loader *l, struct open_proc *op)
{
	free(op->parts);
	hmap__free(&op->part_idx);
	*op = l->open[--l->nr_open];
}

/* The process of pid being read: its steps' and its verdict's. NULL without memory. */
static struct open_proc *proc_for(struct loader *l, pid_t pid)
{
	struct open_proc *op = open_find(l, pid);
	struct diff_proc *p;

	if (op)
		return op;
	if (vec_grow((void **)&l->open, &l->cap_open, l->nr_open, sizeof(*l->open)) ||
	    vec_grow((void **)&l->done, &l->cap_done, l->run->nr_procs, sizeof(*l->done)))
		return NULL;
	p = diff_run__add_proc(l->run);
	if (!p)
		return NULL;
	p->pid = pid;
	l->done[l->run->nr_procs - 1] = false;
	op = &l->open[l->nr_open++];
	memset(op, 0, sizeof(*op));
	op->pid = pid;
	op->proc = l->run->nr_procs - 1;
	return op;
}

static uint64_t part_hash(const char *api, const char *site, const char *label, uint8_t cls)
{
	uint64_t h = 0xcbf29ce484222325ULL;
	const char *const v[] = {api, site, label ? label : ""};
	size_t i;
	const char *s;

	for (i = 0; i < 3; i++) {
		for (s = v[i]; *s; s++)
			h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
		h = (h ^ 0xff) * 0x100000001b3ULL;
	}
	return (h ^ cls) | 1;
}

/* The part (api, site, label, class) of op: its index, or -ENOMEM. Sites a step record
 * names the same way are one part (a tracker's sites of one call site and class by owner). */
static ssize_t part_for(struct loader *l, struct open_proc *op, const char *api, const char *site,
			const char *label, const char *cls)
{
	struct diff_proc *p = &l->run->procs[op->proc];
	uint8_t c = !strcmp(cls, "none") ? 0 : !strcmp(cls, "init") ? 1 : 2;
	uint64_t h = part_hash(api, site, label, c), *v = hmap__get(&op->part_idx, h, 0);
	int idx;

	/* A 64-bit hash collision would join two parts: a sample off, never a crash. */
	if (v)
		return (ssize_t)*v;
	idx = diff_proc__site(p, api, site, label);
	if (idx < 0)
		return idx;
	if (vec_grow((void **)&op->parts, &op->cap_parts, op->nr_parts, sizeof(*op->parts)) ||
	    hmap__put(&op->part_idx, h, 0, op->nr_parts))
		return -ENOMEM;
	op->parts[op->nr_parts] = (struct part){.site = (size_t)idx, .cls = c};
	return (ssize_t)op->nr_parts++;
}

/* ---- step records ---- */

static int step_site(struct loader *l, struct open_proc *op, int64_t step,
		     const struct json_value *e)
{
	const char *api, *site, *label, *cls;
	struct diff_proc *p;
	struct part *pt;
	uint64_t live;
	int64_t d;
	ssize_t i;
	int err;

	const struct json_value *pool;

	if (e->kind != JSON_OBJECT) {
		err = bad(l, e, "step record: \"sites\" must hold objects");
		goto cleanup;
	}
	/* A caching allocator's segments: memory, not a site the verdict judges (its blocks). */
	pool = json_read__member(e, "pool");
	if (pool && pool->kind != JSON_TRUE) {
		err = bad(l, pool, "step site: \"pool\" must be true where present");
		goto cleanup;
	}
	if (pool)
		return 0;
	err = get_str(l, e, "step site", "api", false, &api);
	if (err)
		goto cleanup;
	err = get_str(l, e, "step site", "site", false, &site);
	if (err)
		goto cleanup;
	err = get_str(l, e, "step site", "label", true, &label);
	if (err)
		goto cleanup;
	err = get_enum(l, e, "step site", "class", classes, &cls);
	if (err)
		goto cleanup;
	err = get_u64(l, e, "step site", "live_bytes", &live);
	if (err)
		goto cleanup;
	i = part_for(l, op, api, site, label, cls);
	if (i < 0) {
		err = (int)i;
		goto cleanup;
	}
	p = &l->run->procs[op->proc];
	pt = &op->parts[i];
	d = (int64_t)(live - pt->live);
	pt->live = live;
	err = diff_site__change(l->run, p, &p->sites[pt->site], step, d, pt->cls == 0 ? d : 0,
				pt->cls == 1 ? d : 0);
cleanup:
	return err;
}

static int step_record(struct loader *l, const struct json_value *r)
{
	const struct json_value *sites, *other;
	uint64_t live, requests, allocs, alloc_bytes, rest = 0;
	int64_t pid, step;
	struct open_proc *op;
	size_t i;
	int err;

	err = get_int(l, r, "step record", "pid", 1, INT32_MAX, &pid);
	if (err)
		goto cleanup;
	err = get_int(l, r, "step record", "step", -1, INT64_MAX, &step);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "step record", "live_bytes", &live);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "step record", "requests", &requests);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "step record", "allocs", &allocs);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "step record", "allocated_bytes", &alloc_bytes);
	if (err)
		goto cleanup;
	err = get_arr(l, r, "step record", "sites", &sites);
	if (err)
		goto cleanup;
	err = member(l, r, "step record", "other_sites", JSON_OBJECT, false, &other);
	if (err)
		goto cleanup;
	err = get_u64(l, other, "step record: other_sites", "count", &rest);
	if (err)
		goto cleanup;
	op = proc_for(l, (pid_t)pid);
	if (!op) {
		err = -ENOMEM;
		goto cleanup;
	}
	if (l->run->procs[op->proc].nr_series &&
	    l->run->procs[op->proc].series[l->run->procs[op->proc].nr_series - 1].step >= step) {
		err = bad(l, json_read__member(r, "step"),
			  "step record: step %" PRId64 " of pid %" PRId64
			  " does not follow the one before",
			  step, pid);
		goto cleanup;
	}
	for (i = 0; i < sites->arr.n; i++) {
		err = step_site(l, op, step, &sites->arr.v[i]);
		if (err)
			goto cleanup;
	}
	/* A step with more sites than it lists: the others' values are unknown. */
	if (rest)
		l->run->procs[op->proc].sites_exact = false;
	err = diff_proc__step(l->run, &l->run->procs[op->proc], step, live, requests, allocs,
			      alloc_bytes);
	if (err)
		goto cleanup;
	/* PyTorch's buckets: in the step records of processes with PyTorch blocks only. */
	if (json_read__member(r, "torch_allocated_bytes")) {
		uint64_t ta, tr;

		err = get_u64(l, r, "step record", "torch_allocated_bytes", &ta);
		if (err)
			goto cleanup;
		err = get_u64(l, r, "step record", "torch_reserved_bytes", &tr);
		if (err)
			goto cleanup;
		diff_proc__torch_step(&l->run->procs[op->proc], step, ta, tr);
	}
cleanup:
	return err;
}

/*
 * The verdict's pytorch member: null without PyTorch blocks, else its buckets over devices;
 * absent in the verdicts of a gpuleak before it (then unknown).
 */
static int torch_member(struct loader *l, struct diff_proc *p, const struct json_value *r)
{
	const struct json_value *t = json_read__member(r, "pytorch");
	int err;

	if (!t)
		return 0;
	p->torch_known = true;
	if (t->kind == JSON_NULL)
		return 0;
	if (t->kind != JSON_OBJECT) {
		err = bad(l, t, "verdict: \"pytorch\" must be an object or null");
		goto cleanup;
	}
	p->torch = true;
	err = get_u64(l, t, "verdict: pytorch", "allocated_bytes", &p->torch_allocated);
	if (err)
		goto cleanup;
	err = get_u64(l, t, "verdict: pytorch", "reserved_bytes", &p->torch_reserved);
	if (err)
		goto cleanup;
	err = get_u64(l, t, "verdict: pytorch", "cached_bytes", &p->torch_cached);
	if (err)
		goto cleanup;
	err = get_u64(l, t, "verdict: pytorch", "outside_bytes", &p->torch_outside);
cleanup:
	return err;
}

/* ---- verdict records ---- */

enum list {
	L_LEAKS,
	L_RETAINED,
	L_IGNORED,
	L_PENDING,
};

/* One entry of a verdict's site list into its site. */
static int list_entry(struct loader *l, struct diff_proc *p, enum list k, const char *name,
		      const struct json_value *e)
{
	const char *api, *site, *label, *mem, *by = NULL;
	uint64_t bytes, count;
	struct diff_site *s;
	int idx, err;

	if (e->kind != JSON_OBJECT) {
		err = bad(l, e, "verdict: \"%s\" must hold objects", name);
		goto cleanup;
	}
	err = get_str(l, e, name, "api", false, &api);
	if (err)
		goto cleanup;
	err = get_str(l, e, name, "site", false, &site);
	if (err)
		goto cleanup;
	err = get_str(l, e, name, "label", true, &label);
	if (err)
		goto cleanup;
	err = get_str(l, e, name, "memory", false, &mem);
	if (err)
		goto cleanup;
	err = get_u64(l, e, name, "bytes", &bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, e, name, "count", &count);
	if (err)
		goto cleanup;
	if (k == L_RETAINED) {
		err = get_enum(l, e, name, "retained_by",
			       (const char *const[]){"rule", "init", NULL}, &by);
		if (err)
			goto cleanup;
	}
	/* Address space and registrations are no memory of the process. */
	if (!strcmp(mem, "va") || !strcmp(mem, "registration"))
		return 0;
	idx = diff_proc__site(p, api, site, label);
	if (idx < 0) {
		err = idx;
		goto cleanup;
	}
	s = &p->sites[idx];
	s->visible = true;
	switch (k) {
	case L_PENDING:
		s->pending_bytes += bytes;
		return 0;
	case L_LEAKS:
		s->leaked_bytes += bytes;
		s->leaked_count += count;
		break;
	case L_RETAINED:
		if (!strcmp(by, "init")) {
			s->init_bytes += bytes;
			s->init_count += count;
		} else {
			s->persistent_bytes += bytes;
		}
		break;
	case L_IGNORED:
		s->ignored_bytes += bytes;
		break;
	}
	s->live_bytes += bytes;
	s->live_count += count;
	return 0;
cleanup:
	return err;
}

static int site_list(struct loader *l, struct diff_proc *p, const struct json_value *r, enum list k,
		     const char *name)
{
	const struct json_value *a;
	size_t i;
	int err = get_arr(l, r, "verdict", name, &a);

	for (i = 0; !err && i < a->arr.n; i++)
		err = list_entry(l, p, k, name, &a->arr.v[i]);
	return err;
}

/*
 * A growth entry names its site without its label: it is the site of that API and name
 * whose leaked bytes it ends with, or one the lists do not have (all of it freed at the end).
 */
static int growth_entry(struct loader *l, struct diff_proc *p, const struct json_value *e)
{
	const char *api, *site;
	double slope, per_req = 0;
	const struct json_value *pr;
	uint64_t bytes;
	ssize_t best = -1;
	size_t i;
	int err;

	if (e->kind != JSON_OBJECT) {
		err = bad(l, e, "verdict: \"growth\" must hold objects");
		goto cleanup;
	}
	err = get_str(l, e, "growth", "api", false, &api);
	if (err)
		goto cleanup;
	err = get_str(l, e, "growth", "site", false, &site);
	if (err)
		goto cleanup;
	err = get_u64(l, e, "growth", "bytes", &bytes);
	if (err)
		goto cleanup;
	err = get_num(l, e, "growth", "slope_bytes_per_step", false, &slope);
	if (err)
		goto cleanup;
	pr = json_read__member(e, "bytes_per_request");
	if (pr) {
		err = get_num(l, e, "growth", "bytes_per_request", false, &per_req);
		if (err)
			goto cleanup;
	}
	for (i = 0; i < p->nr_sites; i++) {
		const struct diff_site *s = &p->sites[i];

		if (strcmp(s->api, api) || strcmp(s->name, site))
			continue;
		if (best < 0 || (s->leaked_bytes == bytes && p->sites[best].leaked_bytes != bytes))
			best = (ssize_t)i;
	}
	if (best < 0) {
		int idx = diff_proc__site(p, api, site, NULL);

		if (idx < 0) {
			err = idx;
			goto cleanup;
		}
		best = idx;
	}
	p->sites[best].visible = true;
	p->sites[best].growing = true;
	p->sites[best].slope += diff__tenth(slope);
	p->sites[best].per_request += diff__tenth(per_req);
	p->growth_per_step += diff__tenth(slope);
	p->growth_sites++;
	return 0;
cleanup:
	return err;
}

static int verdict_record(struct loader *l, const struct json_value *r)
{
	const char *comm, *state, *source;
	const struct json_value *growth, *appr;
	int64_t pid, ppid, status;
	uint64_t steps;
	struct open_proc *op;
	struct diff_proc *p;
	size_t i;
	int err;

	err = get_int(l, r, "verdict", "pid", 1, INT32_MAX, &pid);
	if (err)
		goto cleanup;
	op = proc_for(l, (pid_t)pid);
	if (!op) {
		err = -ENOMEM;
		goto cleanup;
	}
	p = &l->run->procs[op->proc];
	err = get_int(l, r, "verdict", "ppid", 0, INT32_MAX, &ppid);
	if (err)
		goto cleanup;
	err = get_str(l, r, "verdict", "comm", false, &comm);
	if (err)
		goto cleanup;
	err = get_enum(l, r, "verdict", "state", states, &state);
	if (err)
		goto cleanup;
	err = get_int(l, r, "verdict", "exit_status", INT32_MIN, INT32_MAX, &status);
	if (err)
		goto cleanup;
	err = get_num(l, r, "verdict", "duration_s", false, &p->duration_s);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "live_bytes", &p->live_bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "live_count", &p->live_count);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "pending_bytes", &p->pending_bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "allocs", &p->allocs);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "alloc_bytes", &p->alloc_bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "frees", &p->frees);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "failed_calls", &p->failed_calls);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "persistent_bytes", &p->persistent_bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "ignored_bytes", &p->ignored_bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "init_bytes", &p->init_bytes);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "steps", &steps);
	if (err)
		goto cleanup;
	err = get_enum(l, r, "verdict", "step_source", sources, &source);
	if (err)
		goto cleanup;
	err = get_u64(l, r, "verdict", "requests", &p->requests);
	if (err)
		goto cleanup;
	err = member(l, r, "verdict", "approximate", JSON_TRUE, false, &appr);
	if (err)
		goto cleanup;
	err = site_list(l, p, r, L_LEAKS, "leaks");
	if (err)
		goto cleanup;
	err = site_list(l, p, r, L_RETAINED, "retained");
	if (err)
		goto cleanup;
	err = site_list(l, p, r, L_IGNORED, "ignored");
	if (err)
		goto cleanup;
	err = site_list(l, p, r, L_PENDING, "pending");
	if (err)
		goto cleanup;
	err = torch_member(l, p, r);
	if (err)
		goto cleanup;
	err = get_arr(l, r, "verdict", "growth", &growth);
	if (err)
		goto cleanup;
	for (i = 0; i < growth->arr.n; i++) {
		err = growth_entry(l, p, &growth->arr.v[i]);
		if (err)
			goto cleanup;
	}
	p->ppid = (pid_t)ppid;
	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	snprintf(p->state, sizeof(p->state), "%s", state);
	snprintf(p->step_source, sizeof(p->step_source), "%s", source);
	p->exit_status = (int)status;
	p->steps = (size_t)steps;
	p->approximate = appr->kind == JSON_TRUE;
	for (i = 0; i < p->nr_sites; i++)
		p->leaked_bytes += p->sites[i].leaked_bytes;
	/* Step records were written as the steps closed: a verdict with more steps than it
	 * has records of kept them from another file, or they were filtered out. */
	if (p->nr_series && p->nr_series != steps)
		p->series_cut = true;
	l->done[op->proc] = true;
	open_close(l, op);
	return 0;
cleanup:
	return err;
}

/* One line: a record of a type the diff reads, or one it skips. */
static int record(struct loader *l)
{
	const struct json_value *r, *type;
	struct json_doc *doc = NULL;
	struct json_error je;
	int err;

	err = json_read__parse(l->text, l->len, &doc, &je);
	if (err == -EINVAL)
		snprintf(l->err, l->errlen, "%s:%zu:%u: %s", l->path, l->line, je.col, je.msg);
	if (err)
		return err;
	r = json_read__root(doc);
	type = json_read__member(r, "type");
	if (r->kind != JSON_OBJECT)
		err = bad(l, r, "an NDJSON record is an object");
	else if (!type || type->kind != JSON_STRING)
		err = bad(l, type ? type : r, "a record needs \"type\", a string");
	else if (!strcmp(type->str.s, "verdict"))
		err = verdict_record(l, r);
	else if (!strcmp(type->str.s, "step"))
		err = step_record(l, r);
	else if (!strncmp(type->str.s, "diff", 4))
		err = bad(l, type,
			  "a record of gpuleak diff: diff reads the verdicts of a run (gpuleak "
			  "run/report --json)");
	json_read__free(doc);
	return err;
}

/* Drop the processes whose verdict never came (a file cut short), keeping the order. */
static void drop_unfinished(struct loader *l)
{
	struct diff_run *r = l->run;
	size_t i, j = 0;

	for (i = 0; i < r->nr_procs; i++) {
		struct diff_proc *p = &r->procs[i];

		if (l->done[i]) {
			r->procs[j++] = *p;
			continue;
		}
		diff_proc__release(p);
	}
	r->nr_procs = j;
}

int diff_verdicts__load(FILE *f, const char *path, struct diff_run **out, char *err, size_t errlen)
{
	struct loader l = {.path = path, .err = err, .errlen = errlen};
	char *line = NULL;
	size_t cap = 0, i;
	ssize_t n;
	int ret;

	*out = NULL;
	err[0] = 0;
	ret = diff_run__new(DIFF_NDJSON, path, &l.run);
	if (ret)
		return ret;
	while ((n = getline(&line, &cap, f)) >= 0) {
		l.line++;
		if (n && line[n - 1] == '\n')
			n--;
		if ((size_t)n > MAX_LINE) {
			snprintf(err, errlen, "%s:%zu: a line longer than %u MiB", path, l.line,
				 MAX_LINE >> 20);
			ret = -EINVAL;
			goto cleanup;
		}
		l.text = line;
		l.len = (size_t)n;
		/* An empty line (or one of blanks) is no record; a record is one line. */
		if (strspn(line, " \t\r") == (size_t)n)
			continue;
		ret = record(&l);
		if (ret)
			goto cleanup;
	}
	if (ferror(f)) {
		ret = -EIO;
		snprintf(err, errlen, "%s: read error", path);
		goto cleanup;
	}
	drop_unfinished(&l);
	if (!l.run->nr_procs) {
		snprintf(err, errlen,
			 "%s: no verdict records (write them with gpuleak run, record or report "
			 "--json FILE)",
			 path);
		ret = -EINVAL;
		goto cleanup;
	}
	*out = l.run;
	l.run = NULL;
cleanup:
	if (ret == -ENOMEM)
		snprintf(err, errlen, "%s: out of memory", path);
	for (i = 0; i < l.nr_open; i++) {
		free(l.open[i].parts);
		hmap__free(&l.open[i].part_idx);
	}
	free(l.open);
	free(l.done);
	free(line);
	diff_run__free(l.run);
	return ret;
}
