// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "capture/capture.h"
#include "live/flight.h"
#include "tracker/tracker.h"
#include "lib/log.h"
#include "live/launch.h"
#include "live/process.h"
#include "live/recorder.h"
#include "live/targets.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

struct recorder {
	struct capture *cap;
	struct flight *flight; /* gpuleak watch, instead of cap */
	uint64_t t0_ns;	       /* the flight recorder's time origin */
	int err;	       /* the capture failed: tracing goes on, the exit status is 1 */
	size_t nr_named;       /* tracker sites before this one have their name in the capture */
	size_t nr_stacks;      /* stacks before this one are in the capture, frames named */
};

int recorder__new(const char *path, const struct capture_opts *o, struct recorder **out)
{
	struct recorder *rec;
	char why[256];
	int err;

	*out = NULL;
	rec = calloc(1, sizeof(*rec));
	if (!rec)
		return -ENOMEM;
	err = capture__create(path, o, &rec->cap, why, sizeof(why));
	if (err) {
		pr_err("cannot create %s: %s%s\n", path, why[0] ? why : strerror(-err),
		       err == -EEXIST ? " (--force replaces it)" : "");
		free(rec);
		return err;
	}
	*out = rec;
	return 0;
}

int recorder__new_flight(const struct flight_opts *o, struct recorder **out)
{
	struct recorder *rec = calloc(1, sizeof(*rec));
	struct timespec ts;
	int err;

	*out = NULL;
	if (!rec)
		return -ENOMEM;
	err = flight__new(o, &rec->flight);
	if (err) {
		free(rec);
		return err;
	}
	clock_gettime(CLOCK_MONOTONIC, &ts);
	rec->t0_ns = (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
	*out = rec;
	return 0;
}

struct flight *recorder__flight(const struct recorder *rec)
{
	return rec ? rec->flight : NULL;
}

void recorder__free(struct recorder *rec)
{
	if (!rec)
		return;
	flight__free(rec->flight);
	capture__free(rec->cap);
	free(rec);
}

void recorder__discard(struct recorder *rec)
{
	if (!rec)
		return;
	flight__free(rec->flight);
	capture__discard(rec->cap);
	free(rec);
}

uint64_t recorder__t0_ns(const struct recorder *rec)
{
	return rec->cap ? capture__t0_ns(rec->cap) : rec->t0_ns;
}

bool recorder__failed(const struct recorder *rec)
{
	return rec && rec->err;
}

static bool writing(const struct recorder *rec)
{
	return rec && !rec->err;
}

static void failed(struct recorder *rec, int err)
{
	struct capture_stats st;

	if (rec->err)
		return;
	rec->err = err;
	if (rec->flight) {
		pr_err("the flight recorder: %s; no more captures, tracing goes on\n",
		       strerror(-err));
		return;
	}
	capture__stats(rec->cap, &st);
	if (capture__temp_path(rec->cap))
		/* --force: the capture it was to replace is left whole */
		pr_err("writing %s: %s; the capture stops at offset %" PRIu64 " (its %" PRIu64
		       " records stay readable in %s; %s is left as it was), tracing goes on\n",
		       capture__path(rec->cap), strerror(-err), st.bytes, st.records,
		       capture__temp_path(rec->cap), capture__path(rec->cap));
	else
		pr_err("writing %s: %s; the capture stops at offset %" PRIu64 " (its %" PRIu64
		       " records stay readable), tracing goes on\n",
		       capture__path(rec->cap), strerror(-err), st.bytes, st.records);
}

void recorder__record(struct recorder *rec, const struct gl_hdr *h)
{
	int err;

	if (!writing(rec))
		return;
	if (rec->flight) {
		err = flight__record(rec->flight, h);
		if (err)
			failed(rec, err);
		return;
	}
	err = capture__write_record(rec->cap, h);
	/* -EINVAL: a record the format has no room for, left out */
	if (err && err != -EINVAL)
		failed(rec, err);
}

void recorder__maps(struct recorder *rec, const struct proc_maps *m, struct modules *mods)
{
	int err;

	if (!writing(rec))
		return;
	err =
	    rec->flight ? flight__maps(rec->flight, m, mods) : capture__add_maps(rec->cap, m, mods);
	if (err)
		failed(rec, err);
}

void recorder__process(struct recorder *rec, const struct target *t)
{
	struct capture_proc p = {.pid = t->pid, .start_ticks = t->start_ticks};
	char comm[16], exe[4096];
	char **argv = NULL;
	int err;

	if (!writing(rec))
		return;
	p.start_realtime_ns = process__start_realtime_ns(p.start_ticks);
	process__comm(p.pid, comm, sizeof(comm));
	p.comm = comm;
	if (t->launch) {
		/* The child's own view is the one it was started with. */
		p.exe = t->launch->exe;
		p.argv = t->launch->argv;
		while (p.argv[p.argc])
			p.argc++;
	} else {
		process__exe(p.pid, exe, sizeof(exe));
		p.exe = exe;
		process__cmdline(p.pid, &argv, &p.argc);
		p.argv = argv;
	}
	err = rec->flight ? flight__process(rec->flight, &p) : capture__add_process(rec->cap, &p);
	free(argv);
	if (err)
		failed(rec, err);
}

/*
 * The name of one address into the capture: 1 when it is there (or needs none), 0 when its
 * mapping is not known yet and this is not the final pass, -errno.
 */
static int add_name(struct recorder *rec, struct symbolizer *sym, pid_t pid, uint64_t addr,
		    bool final)
{
	const struct sym_info *si;
	int err;

	if (!addr || capture__has_symbol(rec->cap, pid, addr))
		return 1;
	si = symbolizer__info(sym, pid, addr);
	if (!si)
		return -ENOMEM;
	if (!si->module && !final)
		return 0;
	err = capture__add_symbol(rec->cap, pid, addr, si);
	return err ? err : 1;
}

/*
 * Reading names from the symbolizer's cache makes them the very strings the live report
 * prints. A stack is written as soon as it is seen, with the verdicts it was given then
 * (truncated, frame pointers), which the live report prints too.
 */
void recorder__names(struct recorder *rec, struct symbolizer *sym, const struct tracker *t,
		     bool final)
{
	const struct stacks *sts = symbolizer__stacks(sym);
	bool all_named = true;
	size_t i;
	int ret = 1;

	/* A flight recorder names what it writes when it writes it. */
	if (!writing(rec) || rec->flight)
		return;
	for (i = rec->nr_named; i < t->nr_sites; i++) {
		const struct site *s = &t->sites[i];

		ret = add_name(rec, sym, s->pid, s->caller, final);
		if (ret < 0)
			goto fail;
		all_named &= ret;
		if (all_named)
			rec->nr_named = i + 1;
	}
	all_named = true;
	for (i = rec->nr_stacks; i < stacks__count(sts); i++) {
		const struct ustack *st = stacks__at(sts, i);
		uint16_t j;

		/* One with Python frames is made again from the records and its native stack. */
		if (gl_stack_is_py(st->id)) {
			if (all_named)
				rec->nr_stacks = i + 1;
			continue;
		}
		ret = capture__add_stack(rec->cap, st);
		for (j = 0; !ret && j < st->nr; j++) {
			int r = add_name(rec, sym, st->pid, st->frames[j], final);

			if (r < 0)
				ret = r;
			all_named &= r > 0;
		}
		if (ret < 0)
			goto fail;
		if (all_named)
			rec->nr_stacks = i + 1;
	}
	return;
fail:
	failed(rec, ret);
}

void recorder__finish(struct recorder *rec)
{
	struct capture_stats st;
	int err;

	if (!writing(rec) || rec->flight)
		return;
	err = capture__finish(rec->cap);
	if (err) {
		failed(rec, err);
		return;
	}
	capture__stats(rec->cap, &st);
	pr_note("wrote %s: %" PRIu64 " records in %u blocks, %" PRIu64
		" bytes (%.1f bytes/record)\n",
		capture__path(rec->cap), st.records, st.blocks, st.bytes,
		st.records ? (double)st.bytes / st.records : 0.0);
}
