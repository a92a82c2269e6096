// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The flight recorder (live/flight.c): its ring stays within its bytes however many
 * records go through it, and a capture it writes is an ordinary capture whose report ends with
 * the live state the whole stream leads to, site by site and stack by stack, and says why it
 * was written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "check.h"
#include "capture/capture.h"
#include "live/flight.h"
#include "offline/replay.h"
#include "engine/analysis.h"
#include "tracker/rules.h"
#include "engine/snapshot.h"
#include "tracker/tracker.h"
#include "symbols/symbolizer.h"
#include "workload.h"

static struct analysis *new_analysis(struct rules *rs, struct analysis_opts *o)
{
	struct analysis *a;

	memset(o, 0, sizeof(*o));
	o->rules = rs;
	o->steps.source = STEP_MARKER;
	o->steps.warmup_steps = 1;
	o->steps.min_growth_steps = 3;
	return analysis__new(o, NULL, NULL, &a) ? NULL : a;
}

/* What a report of the capture does with it: the trigger first, then the records. */
struct reading {
	struct analysis *an;
	struct capture_trigger t;
	struct snapshot_info si;
	bool has_trigger;
	uint64_t fed;
};

static int on_trigger(void *ctx, const struct capture_trigger *t)
{
	struct reading *rd = ctx;
	uint32_t i;

	rd->t = *t;
	rd->t.name = rd->t.detail = NULL;
	rd->t.procs = NULL;
	rd->si.procs = calloc(t->nr_procs + 1, sizeof(*rd->si.procs));
	if (!rd->si.procs)
		return -ENOMEM;
	for (i = 0; i < t->nr_procs; i++)
		rd->si.procs[i] = (struct snapshot_proc){(pid_t)t->procs[i].pid, t->procs[i].step,
							 t->procs[i].step_ts_ns};
	rd->si.nr_procs = t->nr_procs;
	rd->si.init_records = t->snapshot_init_records;
	rd->si.records = t->snapshot_records;
	rd->has_trigger = CHECK(!strcmp(t->name, "signal"), "name %s", t->name) &&
			  CHECK(!strcmp(t->detail, "on demand"), "detail %s", t->detail);
	return 0;
}

static int on_record(void *ctx, const struct gl_hdr *h)
{
	struct reading *rd = ctx;

	snapshot__at(rd->an, &rd->si, rd->fed++);
	analysis__feed(rd->an, h);
	return 0;
}

/* A workload through a live analysis and a flight recorder, as watch feeds them. */
struct fixture {
	struct stream s;
	struct rules *rs;
	struct analysis_opts o;
	struct analysis *whole;
	struct flight *f;
	struct symbolizer *sym;
	char dir[32], path[64];
};

static void fixture_free(struct fixture *fx)
{
	flight__free(fx->f);
	symbolizer__free(fx->sym);
	analysis__free(fx->whole);
	rules__free(fx->rs);
	free(fx->s.p);
	if (fx->path[0])
		unlink(fx->path);
	if (fx->dir[0])
		rmdir(fx->dir);
}

/* steps of the workload fed to both, the ring within fo's bytes after every record. */
static bool fixture_run(struct fixture *fx, int steps, struct flight_opts *fo)
{
	struct flight_stats fs;
	size_t off = 0, i;

	memset(fx, 0, sizeof(*fx));
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/gpuleak-flight-XXXXXX");
	if (!CHECK(mkdtemp(fx->dir), "mkdtemp")) {
		fx->dir[0] = 0;
		return false;
	}
	snprintf(fx->path, sizeof(fx->path), "%s/w.glc", fx->dir);
	workload(&fx->s, steps);
	if (!CHECK(!rules__new(&fx->rs) && !rules__add_builtins(fx->rs), "rules"))
		return false;
	fx->whole = new_analysis(fx->rs, &fx->o);
	fo->a = &fx->o;
	if (!CHECK(fx->whole && !flight__new(fo, &fx->f) && !symbolizer__new(NULL, &fx->sym),
		   "set up"))
		return false;
	for (i = 0; i < fx->s.n; i++) {
		const struct gl_hdr *h = (const struct gl_hdr *)(fx->s.p + off);

		analysis__feed(fx->whole, h);
		CHECK(!flight__record(fx->f, h), "record %zu", i);
		flight__stats(fx->f, &fs);
		if (!CHECK(fs.ring_bytes <= fo->ring_bytes, "ring holds %" PRIu64 " of %" PRIu64,
			   fs.ring_bytes, fo->ring_bytes))
			return false;
		off += (h->size + 7) & ~7UL;
	}
	return true;
}

static void capture_of_the_window(void)
{
	struct fixture fx;
	struct analysis_opts o2;
	struct capture_reader *rd = NULL;
	struct capture_trigger tr = {
	    .cause = CAUSE_SIGNAL, .name = "signal", .detail = "on demand"};
	struct flight_write w = {.tr = &tr};
	struct flight_stats fs;
	struct capture_stats cs;
	struct reading r = {0};
	struct snapshot_diff d;
	struct flight_opts fo = {.ring_bytes = 16 << 10, .verify = true};
	char why[256];

	if (!fixture_run(&fx, 400, &fo))
		goto cleanup;
	flight__stats(fx.f, &fs);
	CHECK(fs.evicted > 0 && fs.evicted + fs.records == fx.s.n,
	      "%" PRIu64 " evicted + %" PRIu64 " held of %zu", fs.evicted, fs.records, fx.s.n);
	CHECK(fs.peak_bytes <= fo.ring_bytes, "peak %" PRIu64, fs.peak_bytes);
	w.live = fx.whole->t;
	w.sym = fx.sym;
	if (!CHECK(!flight__write(fx.f, fx.path, &w, &cs, why, sizeof(why)), "write: %s", why))
		goto cleanup;
	CHECK((tr.flags & (CTF_VERIFIED | CTF_EXACT)) == (CTF_VERIFIED | CTF_EXACT),
	      "snapshot checked exact (%" PRIu64 " bytes at %" PRIu64 " sites differ)",
	      tr.mismatch_bytes, tr.mismatch_sites);
	CHECK(access(fx.path, F_OK) == 0, "capture in place");
	/* A report of it: the trigger, the snapshot, the window. */
	r.an = new_analysis(fx.rs, &o2);
	if (!CHECK(r.an && !capture_reader__open(fx.path, 0, &rd), "open"))
		goto cleanup;
	if (!CHECK(!capture_reader__read(rd, &(struct capture_visitor){.trigger = on_trigger}, &r),
		   "names pass: %s", capture_reader__error(rd)) ||
	    !CHECK(r.has_trigger, "a trigger"))
		goto cleanup;
	CHECK_U64(r.t.window_records, fs.records, "window records");
	CHECK(!capture_reader__read(rd, &(struct capture_visitor){.record = on_record}, &r),
	      "records: %s", capture_reader__error(rd));
	snapshot__at(r.an, &r.si, r.fed);
	CHECK(capture_reader__finished(rd), "finished");
	CHECK_U64(capture_reader__records(rd), r.t.snapshot_records + r.t.window_records,
		  "records in the file");
	if (CHECK(!snapshot__compare(fx.whole->t, r.an->t, &d), "compare"))
		CHECK(!d.bytes && !d.count,
		      "the report ends where the whole stream does: %" PRIu64 " bytes at %" PRIu64
		      " site stacks differ",
		      d.bytes, d.sites);
	CHECK_U64(tracker__proc(r.an->t, P1)->live_bytes,
		  tracker__proc(fx.whole->t, P1)->live_bytes, "live bytes of P1");
	CHECK_U64(tracker__proc(r.an->t, P1)->persistent_bytes,
		  tracker__proc(fx.whole->t, P1)->persistent_bytes, "persistent bytes of P1");
cleanup:
	capture_reader__free(rd);
	snapshot_info__free(&r.si);
	analysis__free(r.an);
	fixture_free(&fx);
}

/* Through gpuleak report's own replay: the verdict it prints is of the live bytes at the end. */
static void replayed_verdict(void)
{
	struct fixture fx;
	struct capture_trigger tr = {
	    .cause = CAUSE_SIGNAL, .name = "signal", .detail = "on demand"};
	struct flight_write w = {.tr = &tr};
	struct capture_stats cs;
	struct flight_opts fo = {.ring_bytes = 8 << 10};
	char why[256], want[64];
	char *text = NULL, *json = NULL, *buf = NULL;
	size_t tlen = 0, jlen = 0;
	FILE *out = NULL, *js = NULL;
	struct stat stt;
	int fd;

	if (!fixture_run(&fx, 200, &fo))
		goto cleanup;
	w.live = fx.whole->t;
	w.sym = fx.sym;
	if (!CHECK(!flight__write(fx.f, fx.path, &w, &cs, why, sizeof(why)), "write: %s", why))
		goto cleanup;
	fd = open(fx.path, O_RDONLY);
	if (!CHECK(fd >= 0 && !fstat(fd, &stt), "open"))
		goto cleanup;
	buf = malloc(stt.st_size);
	CHECK(buf && read(fd, buf, stt.st_size) == stt.st_size, "read");
	close(fd);
	out = open_memstream(&text, &tlen);
	js = open_memstream(&json, &jlen);
	if (!CHECK(out && js, "streams"))
		goto cleanup;
	CHECK(!replay__mem(buf, stt.st_size, 0, &fx.o, 0, out, js), "replay");
	fclose(out);
	fclose(js);
	out = js = NULL;
	CHECK(!strncmp(text, "trigger: signal at ", 19), "the report's first line: %.80s", text);
	snprintf(want, sizeof(want), "\"live_bytes\":%" PRIu64 ",",
		 tracker__proc(fx.whole->t, P1)->live_bytes);
	CHECK(json && strstr(json, want), "the verdict of P1 has %s", want);
	CHECK(json && strstr(json, "\"trigger\":{\"cause\":\"signal\""), "its trigger");
cleanup:
	if (out)
		fclose(out);
	if (js)
		fclose(js);
	free(text);
	free(json);
	free(buf);
	fixture_free(&fx);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"capture_of_the_window", capture_of_the_window},
	    {"replayed_verdict", replayed_verdict},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
