// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The flight recorder (flight.h): the ring of encoded chunks, the lagging analysis fed what
 * leaves it, the processes and mappings a capture names, and the capture itself.
 * Calls: capture.c (the writer), codec.c (chunks), engine/snapshot.c, engine/analysis.c.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "capture/codec.h"
#include "live/flight.h"
#include "engine/snapshot.h"
#include "tracker/tracker.h"
#include "lib/vec.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

/* A chunk spans at most this much record time (a live session ticks every 50 ms). */
#define CHUNK_NS	1000000000ULL
#define CHUNK_MIN_BYTES (4U << 10)
#define CHUNK_MAX_BYTES (1U << 20)
#define LOOKAHEAD	16

struct chunk {
	uint8_t *p;
	size_t len;
	uint32_t count;
	uint64_t first_ts, last_ts;
};

/* A traced process as a capture names it: its command line and its latest mappings. */
struct fproc {
	struct capture_proc p; /* strings owned */
	bool has_proc;
	struct capture_map *maps; /* strings owned */
	size_t nr_maps;
};

struct flight {
	struct flight_opts o;
	/* o.a for the flight's own analyses (the lag, a snapshot's check): no --memory-viz
	 * trace, which only the live analysis writes */
	struct analysis_opts a;
	/*
	 * Records that name what later ones refer to (a Python stack's frames, a code object, a
	 * C++ class), from what left the ring: a capture starts with them, as the snapshot's
	 * records can name no stack or class without them. Back to back, 8-byte aligned.
	 */
	struct wbuf names;
	uint64_t nr_names;
	uint32_t chunk_bytes;
	struct rec_encoder enc;
	uint64_t enc_first_ts, enc_last_ts;
	struct chunk *ring; /* circular: ring[(head + i) % cap], i < n */
	size_t head, n, cap;
	uint64_t bytes; /* payload bytes of the chunks held */
	uint64_t records;
	uint64_t peak;
	uint64_t evicted;
	struct rec_decoder dec;
	union rec_buf *ahead; /* LOOKAHEAD decoded records, applied in turn */
	struct analysis *lag;
	struct fproc *procs;
	size_t nr_procs, cap_procs;
	int err; /* -ENOMEM: sticky */
};

int flight__new(const struct flight_opts *o, struct flight **out)
{
	struct flight *f = calloc(1, sizeof(*f));
	int err;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	f->o = *o;
	f->a = *o->a;
	f->a.out.memviz_path = NULL;
	f->o.a = &f->a;
	f->chunk_bytes = (uint32_t)(o->ring_bytes / 16);
	if (f->chunk_bytes < CHUNK_MIN_BYTES)
		f->chunk_bytes = CHUNK_MIN_BYTES;
	if (f->chunk_bytes > CHUNK_MAX_BYTES)
		f->chunk_bytes = CHUNK_MAX_BYTES;
	f->ahead = calloc(LOOKAHEAD, sizeof(*f->ahead));
	err = f->ahead ? rec_enc__init(&f->enc) : -ENOMEM;
	if (!err)
		err = rec_dec__init(&f->dec);
	if (!err)
		err = analysis__new(f->o.a, o->frames, o->frames_ctx, &f->lag);
	if (err) {
		flight__free(f);
		return err;
	}
	*out = f;
	return 0;
}

static void fproc_clear(struct fproc *fp)
{
	uint32_t i;
	size_t j;

	for (i = 0; i < fp->p.argc; i++)
		free(fp->p.argv[i]);
	free(fp->p.argv);
	free(fp->p.comm);
	free(fp->p.exe);
	for (j = 0; j < fp->nr_maps; j++) {
		free((char *)fp->maps[j].path);
		free((char *)fp->maps[j].build_id);
	}
	free(fp->maps);
	memset(fp, 0, sizeof(*fp));
}

void flight__free(struct flight *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->n; i++)
		free(f->ring[(f->head + i) % f->cap].p);
	free(f->ring);
	for (i = 0; i < f->nr_procs; i++)
		fproc_clear(&f->procs[i]);
	free(f->procs);
	rec_enc__free(&f->enc);
	rec_dec__free(&f->dec);
	free(f->ahead);
	wbuf__free(&f->names);
	analysis__free(f->lag);
	free(f);
}

/* ---- the ring ---- */

static struct chunk *at(const struct flight *f, size_t i)
{
	return &f->ring[(f->head + i) % f->cap];
}

static uint64_t held(const struct flight *f)
{
	return f->bytes + rec_enc__len(&f->enc);
}

/* Whether a record names something later ones refer to, for the whole session. */
static bool names_something(const struct gl_hdr *h)
{
	return h->kind == GL_REC_PY_STACK || h->kind == GL_REC_PY_CODE || h->kind == GL_REC_CLASS;
}

static void keep_name(struct flight *f, const struct gl_hdr *h)
{
	size_t pad = (8 - h->size % 8) % 8;
	static const uint8_t zero[8];

	wbuf__bytes(&f->names, h, h->size);
	wbuf__bytes(&f->names, zero, pad);
	f->nr_names++;
}

/* The naming records of a process no capture names any more go. */
static void forget_names(struct flight *f, uint32_t pid)
{
	size_t in = 0, out = 0;
	uint64_t n = 0;

	while (in < f->names.len) {
		const struct gl_hdr *h = (const struct gl_hdr *)(f->names.p + in);
		size_t sz = (h->size + 7) & ~(size_t)7;

		if (h->pid != pid) {
			memmove(f->names.p + out, f->names.p + in, sz);
			out += sz;
			n++;
		}
		in += sz;
	}
	f->names.len = out;
	f->nr_names = n;
}

/* Processes that exited before the window are no longer named by a capture. */
static void forget_gone(struct flight *f)
{
	size_t i = 0;

	while (i < f->nr_procs) {
		const struct tproc *p = tracker__proc(f->lag->t, (pid_t)f->procs[i].p.pid);

		if (p && p->exited) {
			forget_names(f, f->procs[i].p.pid);
			fproc_clear(&f->procs[i]);
			f->procs[i] = f->procs[--f->nr_procs];
		} else {
			i++;
		}
	}
}

/*
 * The oldest chunk leaves: its records into the lagging analysis. Decoded LOOKAHEAD records
 * ahead of the one applied, each prefetched as it is decoded: with a million allocations
 * live every lookup of the lagging table is a cache miss, and only misses asked for early
 * overlap (as the ring buffer consumer does for the live one).
 */
static int evict(struct flight *f)
{
	struct chunk *c = at(f, 0);
	uint32_t i, ahead = c->count < LOOKAHEAD ? c->count : LOOKAHEAD;
	int err = rec_dec__begin(&f->dec, c->p, c->len, c->count);

	for (i = 0; !err && i < ahead; i++) {
		err = rec_dec__next(&f->dec, &f->ahead[i]);
		if (!err)
			analysis__prefetch(f->lag, &f->ahead[i].h);
	}
	for (i = 0; !err && i < c->count; i++) {
		union rec_buf *r = &f->ahead[i % LOOKAHEAD];

		err = analysis__feed(f->lag, &r->h);
		/* a record the tracker cannot decode is counted there, as live */
		if (err == -EINVAL)
			err = 0;
		if (!err && names_something(&r->h))
			keep_name(f, &r->h);
		if (!err && i + LOOKAHEAD < c->count) {
			err = rec_dec__next(&f->dec, r);
			if (!err)
				analysis__prefetch(f->lag, &r->h);
		}
	}
	/* The chunk's records are ours: a decode error is a bug, never the target's. */
	f->bytes -= c->len;
	f->records -= c->count;
	f->evicted += c->count;
	free(c->p);
	f->head = (f->head + 1) % f->cap;
	f->n--;
	forget_gone(f);
	return err;
}

/* The chunk being built joins the ring; the oldest leave while the ring is over its bounds
 * (room kept for the next chunk). */
static int close_chunk(struct flight *f)
{
	struct wbuf w = {};
	struct chunk *c;
	uint32_t count;
	int err = 0;

	if (!f->enc.count)
		return 0;
	if (f->n == f->cap) {
		size_t cap = f->cap ? 2 * f->cap : 64, i;
		struct chunk *v = calloc(cap, sizeof(*v));

		if (!v)
			return -ENOMEM;
		for (i = 0; i < f->n; i++)
			v[i] = *at(f, i);
		free(f->ring);
		f->ring = v;
		f->cap = cap;
		f->head = 0;
	}
	count = rec_enc__finish(&f->enc, &w);
	if (w.err) {
		wbuf__free(&w);
		return -ENOMEM;
	}
	/* Held as long as the chunk is in the ring: its bytes, not the buffer's growth room. */
	if (w.len < w.cap) {
		uint8_t *p = realloc(w.p, w.len ? w.len : 1);

		if (p)
			w.p = p;
	}
	c = at(f, f->n);
	*c = (struct chunk){.p = w.p,
			    .len = w.len,
			    .count = count,
			    .first_ts = f->enc_first_ts,
			    .last_ts = f->enc_last_ts};
	f->n++;
	f->bytes += c->len;
	while (!err && f->n > 1 && f->bytes + f->chunk_bytes > f->o.ring_bytes)
		err = evict(f);
	while (!err && f->n > 1 && f->o.ring_ns && at(f, 0)->last_ts + f->o.ring_ns < c->last_ts)
		err = evict(f);
	return err;
}

int flight__record(struct flight *f, const struct gl_hdr *h)
{
	int err;

	if (f->err)
		return f->err;
	if (!f->enc.count)
		f->enc_first_ts = f->enc_last_ts = h->ts_ns;
	err = rec_enc__add(&f->enc, h);
	if (err == -ENOMEM)
		return f->err = err;
	if (err)
		return 0; /* a record the format has no room for: left out, as a capture does */
	f->records++;
	if (h->ts_ns > f->enc_last_ts)
		f->enc_last_ts = h->ts_ns;
	if (rec_enc__len(&f->enc) >= f->chunk_bytes ||
	    (h->ts_ns > f->enc_first_ts && h->ts_ns - f->enc_first_ts >= CHUNK_NS))
		err = close_chunk(f);
	/* A record past chunk_bytes, or a chunk that finished longer than it was open, would
	 * take the ring over its bytes: the oldest chunk goes first. */
	while (!err && f->n && held(f) > f->o.ring_bytes)
		err = evict(f);
	if (held(f) > f->peak)
		f->peak = held(f);
	if (err)
		f->err = err;
	return err;
}

void flight__stats(const struct flight *f, struct flight_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->ring_bytes = held(f);
	st->peak_bytes = f->peak;
	st->records = f->records;
	st->chunks = (uint32_t)f->n;
	st->evicted = f->evicted;
	if (f->n)
		st->first_ts_ns = at(f, 0)->first_ts;
	else if (f->enc.count)
		st->first_ts_ns = f->enc_first_ts;
	st->last_ts_ns = f->enc.count ? f->enc_last_ts : f->n ? at(f, f->n - 1)->last_ts : 0;
}

/* ---- processes ---- */

static struct fproc *fproc_get(struct flight *f, uint32_t pid)
{
	size_t i;

	for (i = 0; i < f->nr_procs; i++)
		if (f->procs[i].p.pid == pid)
			return &f->procs[i];
	if (vec_grow((void **)&f->procs, &f->cap_procs, f->nr_procs, sizeof(*f->procs)))
		return NULL;
	memset(&f->procs[f->nr_procs], 0, sizeof(f->procs[0]));
	f->procs[f->nr_procs].p.pid = pid;
	return &f->procs[f->nr_procs++];
}

static char *dup_str(const char *s, int *err)
{
	char *d = strdup(s ? s : "");

	if (!d)
		*err = -ENOMEM;
	return d;
}

int flight__process(struct flight *f, const struct capture_proc *p)
{
	struct fproc *fp = fproc_get(f, p->pid);
	struct capture_map *maps;
	size_t nr_maps;
	uint32_t i;
	int err = 0;

	if (!fp)
		return -ENOMEM;
	/* A process seen again (an exec) is named anew; its mappings come with the scan. */
	maps = fp->maps;
	nr_maps = fp->nr_maps;
	fp->maps = NULL;
	fp->nr_maps = 0;
	fproc_clear(fp);
	fp->maps = maps;
	fp->nr_maps = nr_maps;
	fp->p = *p;
	fp->p.comm = dup_str(p->comm, &err);
	fp->p.exe = dup_str(p->exe, &err);
	fp->p.argv = calloc(p->argc + 1, sizeof(*fp->p.argv));
	fp->p.argc = 0;
	if (!fp->p.argv)
		err = -ENOMEM;
	for (i = 0; !err && i < p->argc; i++) {
		fp->p.argv[i] = dup_str(p->argv[i], &err);
		if (!err)
			fp->p.argc++;
	}
	fp->has_proc = true;
	return err;
}

int flight__maps(struct flight *f, const struct proc_maps *m, struct modules *mods)
{
	struct fproc *fp = fproc_get(f, (uint32_t)m->pid);
	struct capture_map *v;
	size_t i, n = 0;
	int err = 0;

	if (!fp)
		return -ENOMEM;
	v = calloc(m->n + 1, sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < m->n && !err; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod;

		if (!e->exec || !e->path)
			continue;
		mod = mods ? modules__get(mods, m->pid, e) : NULL;
		v[n] = (struct capture_map){.start = e->start,
					    .end = e->end,
					    .pgoff = e->pgoff,
					    .dev = e->dev,
					    .ino = e->ino,
					    .deleted = e->deleted};
		v[n].path = dup_str(e->path, &err);
		v[n].build_id = dup_str(mod && mod->elf ? elf_obj__build_id(mod->elf) : "", &err);
		n++;
	}
	/* The latest snapshot names this process's addresses: it replaces the one before. */
	for (i = 0; i < fp->nr_maps; i++) {
		free((char *)fp->maps[i].path);
		free((char *)fp->maps[i].build_id);
	}
	free(fp->maps);
	fp->maps = v;
	fp->nr_maps = n;
	return err;
}

/* ---- a capture ---- */

struct writing {
	struct flight *f;
	struct capture *c;
	struct analysis *check; /* the snapshot fed back (verify) */
	struct snapshot_info *si;
	uint64_t fed;
};

static int to_capture(void *ctx, const struct gl_hdr *h)
{
	struct writing *wr = ctx;
	int err = capture__write_record(wr->c, h);

	return err == -EINVAL ? 0 : err;
}

/* The naming records, in the order they came, to emit. */
static int put_names(const struct flight *f, int (*emit)(void *ctx, const struct gl_hdr *h),
		     void *ctx)
{
	size_t off = 0;
	int err = 0;

	while (!err && off < f->names.len) {
		const struct gl_hdr *h = (const struct gl_hdr *)(f->names.p + off);

		err = emit(ctx, h);
		off += (h->size + 7) & ~(size_t)7;
	}
	return err;
}

static int to_check(void *ctx, const struct gl_hdr *h)
{
	struct writing *wr = ctx;
	int err;

	snapshot__at(wr->check, wr->si, wr->fed);
	wr->fed++;
	err = analysis__feed(wr->check, h);
	return err == -EINVAL ? 0 : err;
}

/* The snapshot again, into a fresh analysis, compared with the state it is of. */
static int verify(struct flight *f, struct writing *wr, uint64_t ts, struct capture_trigger *tr)
{
	struct snapshot_info again;
	struct snapshot_diff d;
	int err;

	err = analysis__new(f->o.a, f->o.frames, f->o.frames_ctx, &wr->check);
	if (err)
		return err;
	/* as a report reads the capture: the naming records, then the snapshot */
	wr->fed = 0;
	err = put_names(f, to_check, wr);
	if (!err)
		err = snapshot__emit(f->lag, ts, to_check, wr, &again);
	if (!err) {
		snapshot__at(wr->check, wr->si, wr->fed);
		err = snapshot__compare(f->lag->t, wr->check->t, &d);
		snapshot_info__free(&again);
	}
	analysis__free(wr->check);
	wr->check = NULL;
	if (err)
		return err;
	tr->flags |= CTF_VERIFIED;
	if (!d.bytes && !d.count && !d.comms)
		tr->flags |= CTF_EXACT;
	tr->mismatch_bytes = d.bytes;
	tr->mismatch_sites = d.sites;
	return 0;
}

/* One address's name, when it has one to give (or a module at least). */
static int add_name(struct capture *c, struct symbolizer *sym, pid_t pid, uint64_t addr)
{
	const struct sym_info *si;

	if (!addr || capture__has_symbol(c, (uint32_t)pid, addr))
		return 0;
	si = symbolizer__info(sym, pid, addr);
	if (!si)
		return -ENOMEM;
	return capture__add_symbol(c, (uint32_t)pid, addr, si);
}

/* Names of every call site and of every stack's frames, as the live report names them. */
static int add_names(struct capture *c, struct symbolizer *sym, const struct tracker *t)
{
	const struct stacks *sts = symbolizer__stacks(sym);
	size_t i;
	uint16_t j;
	int err = 0;

	for (i = 0; !err && i < t->nr_sites; i++)
		err = add_name(c, sym, t->sites[i].pid, t->sites[i].caller);
	for (i = 0; !err && i < stacks__count(sts); i++) {
		const struct ustack *st = stacks__at(sts, i);

		/* One with Python frames is made again from the records and its native stack, as
		 * a report of any capture makes it (live/recorder.c). */
		if (gl_stack_is_py(st->id))
			continue;
		err = capture__add_stack(c, st);
		for (j = 0; !err && j < st->nr; j++)
			err = add_name(c, sym, st->pid, st->frames[j]);
	}
	return err;
}

/* Each process the snapshot holds: where it stood, and what the live analysis had. */
static int trigger_procs(struct capture_trigger *tr, const struct snapshot_info *si,
			 struct tracker *lag, const struct tracker *live)
{
	size_t i, n = 0;

	tr->procs = calloc(si->nr_procs + live->nr_procs + 1, sizeof(*tr->procs));
	if (!tr->procs)
		return -ENOMEM;
	for (i = 0; i < si->nr_procs && n < CAPTURE_MAX_TRIGGER_PROCS; i++) {
		const struct tproc *p = tracker__proc(lag, si->procs[i].pid);

		tr->procs[n++] =
		    (struct capture_trigger_proc){.pid = (uint32_t)si->procs[i].pid,
						  .step = si->procs[i].step,
						  .step_ts_ns = si->procs[i].step_ts_ns,
						  .start_live_bytes = p ? p->live_bytes : 0,
						  .start_live_count = p ? p->live_count : 0};
	}
	/* Those that began in the window have no snapshot: their state at the trigger still
	 * says what the report must come to. */
	for (i = 0; i < live->nr_procs; i++) {
		const struct tproc *p = live->procs[i];
		size_t k;

		if (!p->attached || p->exited || p->detached)
			continue;
		for (k = 0; k < n && tr->procs[k].pid != (uint32_t)p->pid; k++)
			;
		if (k == n && n == CAPTURE_MAX_TRIGGER_PROCS)
			continue;
		if (k == n)
			tr->procs[n++] =
			    (struct capture_trigger_proc){.pid = (uint32_t)p->pid, .step = -1};
		tr->procs[k].live_bytes = p->live_bytes;
		tr->procs[k].live_count = p->live_count;
		tr->procs[k].pending_bytes = p->pending_bytes;
	}
	tr->nr_procs = (uint32_t)n;
	return 0;
}

int flight__write(struct flight *f, const char *path, struct flight_write *w,
		  struct capture_stats *st, char *why, size_t whylen)
{
	struct capture_opts co = {.atomic = true, .store = f->o.store};
	struct capture_trigger *tr = w->tr;
	struct snapshot_info si = {0};
	struct writing wr = {.f = f, .si = &si};
	struct flight_stats fs;
	uint64_t ts;
	size_t i;
	int err;

	memset(st, 0, sizeof(*st));
	if (f->err) {
		snprintf(why, whylen, "the recorder ran out of memory earlier");
		return f->err;
	}
	/* What is being built goes in too: the window ends at the trigger. */
	err = close_chunk(f);
	if (err) {
		snprintf(why, whylen, "%s", strerror(-err));
		return f->err = err;
	}
	flight__stats(f, &fs);
	err = capture__create(path, &co, &wr.c, why, whylen);
	if (err)
		return err;
	for (i = 0; !err && i < f->nr_procs; i++) {
		if (f->procs[i].has_proc)
			err = capture__add_process(wr.c, &f->procs[i].p);
		if (!err)
			err = capture__add_map_list(wr.c, f->procs[i].p.pid, f->procs[i].maps,
						    f->procs[i].nr_maps);
	}
	/* The snapshot is of the state the window starts from, stamped when that state was. */
	ts = f->lag->t->last_ts_ns ? f->lag->t->last_ts_ns : fs.first_ts_ns;
	if (!err)
		err = f->names.err ? -ENOMEM : put_names(f, to_capture, &wr);
	if (!err)
		err = snapshot__emit(f->lag, ts, to_capture, &wr, &si);
	/* The naming records come first: the snapshot's phases are counted after them. */
	si.init_records += f->nr_names;
	si.records += f->nr_names;
	if (!err)
		err = capture__flush(wr.c);
	if (!err && f->o.verify)
		err = verify(f, &wr, ts, tr);
	for (i = 0; !err && i < f->n; i++)
		err = capture__write_payload(wr.c, at(f, i)->p, at(f, i)->len, at(f, i)->count);
	if (!err) {
		tr->window_start_ns = fs.first_ts_ns;
		tr->window_end_ns = fs.last_ts_ns;
		tr->snapshot_init_records = si.init_records;
		tr->snapshot_records = si.records;
		tr->window_records = fs.records;
		tr->step_source = f->o.a->steps.source;
		tr->skipped_bytes = si.skipped_bytes;
		err = trigger_procs(tr, &si, f->lag->t, w->live);
	}
	if (!err)
		err = capture__add_trigger(wr.c, tr);
	if (!err)
		err = add_names(wr.c, w->sym, w->live);
	if (!err)
		err = capture__finish(wr.c);
	snapshot_info__free(&si);
	free(tr->procs);
	tr->procs = NULL;
	if (err) {
		snprintf(why, whylen, "%s", strerror(-err));
		capture__discard(wr.c);
		return err;
	}
	capture__stats(wr.c, st);
	capture__free(wr.c);
	return 0;
}
