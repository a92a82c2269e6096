// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "engine/analysis.h"
#include "engine/snapshot.h"
#include "capture/capture.h"
#include "lib/exit.h"
#include "lib/infile.h"
#include "lib/json.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/term.h"
#include "lib/units.h"
#include "offline/replay.h"
#include "probe/catalog.h"
#include "output/pictures.h"
#include "output/report.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"
#include "tracker/tracker.h"

struct replay {
	struct capture_reader *rd;
	const struct analysis_opts *a;
	struct analysis *an;
	struct symbolizer *sym;
	struct report rep;
	struct pictures *pics; /* --folded, --perfetto, --svg */
	bool gate_failed;
	uint64_t interval_ns, next_interval_ns;
	uint64_t last_step_line_ns;
	struct capture_proc *procs; /* for the summary; strings owned */
	size_t nr_procs;
	FILE *blocks;		  /* --blocks: the listing goes here, no analysis */
	uint64_t nr_fed;	  /* records into the analysis */
	bool damaged;		  /* reported up to a damaged block: exit 1 */
	int out_err;		  /* a picture could not be written: exit 1 */
	replay_step_fn step_hook; /* replay__analyse: its caller's, at every closed step */
	void *hook_ctx;
	/* gpuleak watch: why the capture was written, and the snapshot its records start with */
	struct capture_trigger trig; /* strings and procs owned */
	bool has_trigger;
	struct snapshot_info si;
};

/* ---- what the reader hands us ---- */

static int on_record(void *ctx, const struct gl_hdr *h)
{
	struct replay *rp = ctx;
	int err;

	/* Interval tables at the record times a live session would have printed them. */
	if (rp->interval_ns && h->ts_ns >= rp->next_interval_ns) {
		if (!rp->a->steps_given)
			report__interval(&rp->rep, h->ts_ns);
		rp->next_interval_ns += rp->interval_ns;
		if (rp->next_interval_ns <= h->ts_ns)
			rp->next_interval_ns = h->ts_ns + rp->interval_ns;
	}
	if (rp->has_trigger)
		snapshot__at(rp->an, &rp->si, rp->nr_fed);
	rp->nr_fed++;
	/* Python frames are named from their records, in stream order, as live. */
	err = symbolizer__py_record(rp->sym, h);
	if (err == -ENOMEM)
		return err;
	err = analysis__feed(rp->an, h);
	/* A record the tracker cannot decode is counted there, as live. */
	return err == -ENOMEM ? err : 0;
}

/* As live: an NDJSON step record each, a line each when --step is given (at most one per
 * --interval of record time when steps are faster). */
static void on_step(void *ctx, pid_t pid, const struct step_stat *st)
{
	struct replay *rp = ctx;

	report__step(&rp->rep, pid, st);
	if (!rp->a->steps_given)
		return;
	if (rp->interval_ns && st->t_end_ns - rp->last_step_line_ns < rp->interval_ns &&
	    rp->last_step_line_ns)
		return;
	rp->last_step_line_ns = st->t_end_ns;
	report__step_line(&rp->rep, pid, st);
}

static void on_step_hook(void *ctx, pid_t pid, const struct step_stat *st)
{
	struct replay *rp = ctx;

	rp->step_hook(rp->hook_ctx, rp->an, rp->sym, pid, st);
}

static int on_maps(void *ctx, uint32_t pid, const struct capture_map *v, size_t n)
{
	struct replay *rp = ctx;
	size_t i;
	int err;

	for (i = 0; i < n; i++) {
		err =
		    symbolizer__add_map(rp->sym, pid, v[i].start, v[i].end, v[i].pgoff, v[i].path);
		if (err)
			return err;
	}
	return 0;
}

static int on_symbol(void *ctx, uint32_t pid, uint64_t addr, const struct sym_info *si)
{
	struct replay *rp = ctx;

	return symbolizer__set(rp->sym, pid, addr, si);
}

static int on_stack(void *ctx, const struct capture_stack *st)
{
	struct replay *rp = ctx;

	return symbolizer__set_stack(rp->sym, st->pid, st->id, st->caller, st->frames, st->nr,
				     st->flags, st->nofp_from);
}

static char *dup_or_empty(const char *s)
{
	return strdup(s ? s : "");
}

static int on_process(void *ctx, const struct capture_proc *p)
{
	struct replay *rp = ctx;
	struct capture_proc *c, *v;
	uint32_t i;

	/* Keep the first four: the summary is for people. */
	if (rp->nr_procs >= 4)
		return 0;
	v = realloc(rp->procs, (rp->nr_procs + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	rp->procs = v;
	c = &v[rp->nr_procs];
	*c = *p;
	c->argc = 0;
	c->comm = dup_or_empty(p->comm);
	c->exe = dup_or_empty(p->exe);
	c->argv = calloc(p->argc + 1, sizeof(*c->argv));
	rp->nr_procs++;
	if (!c->comm || !c->exe || !c->argv)
		return -ENOMEM;
	for (i = 0; i < p->argc && i < 64; i++) {
		c->argv[i] = dup_or_empty(p->argv[i]);
		if (!c->argv[i])
			return -ENOMEM;
		c->argc++;
	}
	return 0;
}

/* The first TRIGGER block says why the capture was written and where its snapshot ends. */
static int on_trigger(void *ctx, const struct capture_trigger *t)
{
	struct replay *rp = ctx;
	uint32_t i;

	if (rp->has_trigger)
		return 0;
	rp->trig = *t;
	rp->trig.name = strdup(t->name);
	rp->trig.detail = strdup(t->detail);
	rp->trig.procs = calloc(t->nr_procs + 1, sizeof(*t->procs));
	rp->si.procs = calloc(t->nr_procs + 1, sizeof(*rp->si.procs));
	if (!rp->trig.name || !rp->trig.detail || !rp->trig.procs || !rp->si.procs)
		return -ENOMEM;
	memcpy(rp->trig.procs, t->procs, t->nr_procs * sizeof(*t->procs));
	for (i = 0; i < t->nr_procs; i++)
		rp->si.procs[i] = (struct snapshot_proc){.pid = (pid_t)t->procs[i].pid,
							 .step = t->procs[i].step,
							 .step_ts_ns = t->procs[i].step_ts_ns};
	rp->si.nr_procs = t->nr_procs;
	rp->si.init_records = t->snapshot_init_records;
	rp->si.records = t->snapshot_records;
	/* Steps of another source than the recording's are the report's own. */
	rp->si.own_steps = t->step_source != (uint32_t)rp->a->steps.source;
	rp->has_trigger = true;
	return 0;
}

static int on_block(void *ctx, const struct capture_block_info *b)
{
	struct replay *rp = ctx;

	if (rp->blocks)
		fprintf(rp->blocks, "%10" PRIu64 "  %-8s %-6s %10u %10u %8u\n", b->offset,
			capture_block_name(b->type), b->codec == CC_ZLIB ? "zlib" : "stored",
			b->raw_len, b->stored_len, b->count);
	return 0;
}

/* ---- output ---- */

static void fmt_time(char *buf, size_t len, uint64_t realtime_ns)
{
	time_t t = realtime_ns / 1000000000ULL;
	struct tm tm;

	if (!realtime_ns || !gmtime_r(&t, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "?");
}

/* The record time ns of a capture as wall-clock time, to the millisecond. */
static void fmt_record_time(char *buf, size_t len, const struct capture_info *in, uint64_t ns)
{
	uint64_t real = ns + (uint64_t)in->realtime_offset_ns;
	time_t t = real / 1000000000ULL;
	struct tm tm;
	char hms[32];

	if (!ns || !gmtime_r(&t, &tm) || !strftime(hms, sizeof(hms), "%Y-%m-%d %H:%M:%S", &tm)) {
		snprintf(buf, len, "?");
		return;
	}
	snprintf(buf, len, "%s.%03u UTC", hms, (unsigned int)(real / 1000000 % 1000));
}

/* The first lines of a watch capture's report: which trigger fired, and what the window is. */
static void print_trigger(struct replay *rp, FILE *out)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	const struct capture_trigger *t = &rp->trig;
	uint64_t bytes = 0, count = 0;
	char when[64], b[32];
	uint32_t i, n = 0;

	fmt_record_time(when, sizeof(when), in, t->ts_ns);
	fputs("trigger: ", out);
	term_fputs(t->name, out, 0);
	fprintf(out, " at %s: ", when);
	term_fputs(t->detail, out, 0);
	fputc('\n', out);
	for (i = 0; i < t->nr_procs; i++) {
		bytes += t->procs[i].start_live_bytes;
		count += t->procs[i].start_live_count;
		n += t->procs[i].start_live_count > 0;
	}
	fmt_bytes(bytes, b, sizeof(b));
	fmt_record_time(when, sizeof(when), in, t->window_start_ns);
	if (!t->snapshot_records) {
		fprintf(out,
			"  window: %.2f s up to the trigger (from %s), %" PRIu64
			" records: the whole session\n",
			t->window_end_ns > t->window_start_ns
			    ? (double)(t->window_end_ns - t->window_start_ns) / 1e9
			    : 0.0,
			when, t->window_records);
		return;
	}
	fprintf(out,
		"  window: %.2f s up to the trigger (from %s), %" PRIu64
		" records; the live set at its start: %" PRIu64 " allocations (%s) in %u "
		"process%s, from a snapshot%s\n",
		t->window_end_ns > t->window_start_ns
		    ? (double)(t->window_end_ns - t->window_start_ns) / 1e9
		    : 0.0,
		when, t->window_records, count, b, n, n == 1 ? "" : "es",
		!(t->flags & CTF_VERIFIED) ? ""
		: t->flags & CTF_EXACT	   ? " (checked exact)"
					   : " (checked: NOT exact)");
	if (t->skipped_bytes)
		fprintf(
		    out,
		    "  the snapshot left out %s it cannot rebuild (WebGPU objects, or layers of a "
		    "freed allocation it cannot make again)\n",
		    fmt_bytes(t->skipped_bytes, b, sizeof(b)));
}

/* The failing call's stack, as the capture names its frames (innermost first). */
static const struct ustack *trigger_stack(struct replay *rp)
{
	const struct capture_trigger *t = &rp->trig;

	if (!(t->flags & CTF_CALL) || t->call.stack_id < 0)
		return NULL;
	return symbolizer__stack(rp->sym, (pid_t)t->pid, t->call.stack_id, t->call.caller);
}

#define TRIGGER_FRAMES 16

static void print_trigger_stack(struct replay *rp, FILE *out)
{
	const struct ustack *st = trigger_stack(rp);
	uint16_t i;

	if (!st || !st->nr)
		return;
	fprintf(out, "  the failing call's stack, innermost first:\n");
	for (i = 0; i < st->nr && i < TRIGGER_FRAMES; i++) {
		fputs("    ", out);
		term_fputs(symbolizer__name(rp->sym, st->pid, st->frames[i]), out, 0);
		fputc('\n', out);
	}
	if (st->nr > TRIGGER_FRAMES)
		fprintf(out, "    ... %u more\n", st->nr - TRIGGER_FRAMES);
}

static void print_summary(struct replay *rp, const char *name, FILE *out)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	uint64_t records = capture_reader__records(rp->rd), size = capture_reader__size(rp->rd);
	char when[64];
	size_t i;
	uint32_t j;

	if (rp->has_trigger) {
		print_trigger(rp, out);
		print_trigger_stack(rp, out);
	}
	fmt_time(when, sizeof(when), in->created_realtime_ns);
	/* Everything here comes from the file, made elsewhere: escaped for the terminal. */
	fprintf(out, "capture %s: recorded %s on %s (%s, Linux %s) by gpuleak %s\n", term_tmp(name),
		when, in->hostname[0] ? term_tmp(in->hostname) : "?", term_tmp(in->arch),
		term_tmp(in->kernel), term_tmp(in->version));
	for (i = 0; i < rp->nr_procs; i++) {
		const struct capture_proc *p = &rp->procs[i];

		fmt_time(when, sizeof(when), p->start_realtime_ns);
		fprintf(out, "  pid %u (%s) started %s:", p->pid, term_tmp(p->comm), when);
		for (j = 0; j < p->argc; j++) {
			fputc(' ', out);
			term_fputs(p->argv[j], out, 0);
		}
		fputc('\n', out);
	}
	fprintf(out, "  %" PRIu64 " records in %u blocks, %" PRIu64 " bytes (%.1f bytes/record)\n",
		records, capture_reader__blocks(rp->rd), size,
		records ? (double)size / records : 0.0);
}

/* What is wrong with a damaged capture, without the "offset N: " the message starts with. */
static const char *damage_why(const struct capture_reader *rd)
{
	const char *e = capture_reader__error(rd), *p = strstr(e, ": ");

	return !strncmp(e, "offset ", 7) && p ? p + 2 : e;
}

/* The trigger of a watch capture, in its verdicts' "capture" member. */
static void trigger_json(struct replay *rp, FILE *f)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	const struct capture_trigger *t = &rp->trig;
	const struct ustack *st;
	char when[64];

	fmt_record_time(when, sizeof(when), in, t->ts_ns);
	fputs(",\"trigger\":{\"cause\":", f);
	json_str(f, t->name);
	fputs(",\"detail\":", f);
	json_str(f, t->detail);
	fprintf(f, ",\"at\":\"%s\",\"pid\":%u,\"tid\":%u", when, t->pid, t->tid);
	if (t->signal)
		fprintf(f, ",\"signal\":%d", t->signal);
	if (t->flags & CTF_CALL) {
		const char *err = cat_error_name(t->call.api, t->call.ret);

		fputs(",\"call\":{\"api\":", f);
		json_str(f, cat_api_name(t->call.api));
		fprintf(f, ",\"ret\":%d", t->call.ret);
		if (err) {
			fputs(",\"error\":", f);
			json_str(f, err);
		}
		fprintf(f, ",\"size\":%" PRIu64 ",\"site\":", t->call.size);
		/* a Python stack's site is its Python frame, as the verdict's sites are */
		json_str(f, symbolizer__site_name(rp->sym, (pid_t)t->pid, t->call.stack_id,
						  t->call.caller));
		st = trigger_stack(rp);
		if (st && st->nr) {
			uint16_t i;

			fputs(",\"stack\":[", f);
			for (i = 0; i < st->nr; i++) {
				if (i)
					fputc(',', f);
				json_str(f, symbolizer__name(rp->sym, st->pid, st->frames[i]));
			}
			fputc(']', f);
		}
		fputc('}', f);
	}
	if (t->flags & CTF_INNER) {
		fputs(",\"inner\":{\"api\":", f);
		json_str(f, cat_api_name(t->inner.api));
		fprintf(f, ",\"ret\":%d}", t->inner.ret);
	}
	fprintf(f,
		",\"window_s\":%.3f,\"window_records\":%" PRIu64 ",\"snapshot_records\":%" PRIu64
		",\"snapshot_exact\":%s}",
		t->window_end_ns > t->window_start_ns
		    ? (double)(t->window_end_ns - t->window_start_ns) / 1e9
		    : 0.0,
		t->window_records, t->snapshot_records,
		(t->flags & CTF_VERIFIED) && (t->flags & CTF_EXACT) && !t->skipped_bytes ? "true"
											 : "false");
}

/* The "capture" member of each verdict: what a live verdict cannot say. */
static char *verdict_extra(struct replay *rp, const char *name)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	char when[64], *buf = NULL;
	uint64_t at;
	uint32_t blk;
	bool cut = capture_reader__truncated(rp->rd, &at);
	size_t len;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fmt_time(when, sizeof(when), in->created_realtime_ns);
	fputs("\"capture\":{\"file\":", f);
	json_str(f, name);
	fputs(",\"gpuleak\":", f);
	json_str(f, in->version);
	fputs(",\"host\":", f);
	json_str(f, in->hostname);
	fputs(",\"arch\":", f);
	json_str(f, in->arch);
	fputs(",\"kernel\":", f);
	json_str(f, in->kernel);
	fprintf(f,
		",\"recorded\":\"%s\",\"records\":%" PRIu64 ",\"blocks\":%u,\"bytes\":%" PRIu64
		",\"finished\":%s,\"truncated\":%s",
		when, capture_reader__records(rp->rd), capture_reader__blocks(rp->rd),
		capture_reader__size(rp->rd), capture_reader__finished(rp->rd) ? "true" : "false",
		cut ? "true" : "false");
	if (cut)
		fprintf(f, ",\"truncated_at\":%" PRIu64, at);
	if (capture_reader__damaged(rp->rd, &at, &blk)) {
		fprintf(f, ",\"damaged_at\":%" PRIu64 ",\"damaged_block\":%u,\"damage\":", at, blk);
		json_str(f, damage_why(rp->rd));
	}
	if (rp->has_trigger)
		trigger_json(rp, f);
	fputc('}', f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static void replay_free(struct replay *rp)
{
	size_t i;
	uint32_t j;

	for (i = 0; i < rp->nr_procs; i++) {
		for (j = 0; j < rp->procs[i].argc; j++)
			free(rp->procs[i].argv[j]);
		free(rp->procs[i].argv);
		free(rp->procs[i].comm);
		free(rp->procs[i].exe);
	}
	free(rp->procs);
	free((char *)rp->trig.name);
	free((char *)rp->trig.detail);
	free(rp->trig.procs);
	snapshot_info__free(&rp->si);
	pictures__free(rp->pics);
	analysis__free(rp->an);
	symbolizer__free(rp->sym);
}

/* First pass: the names and processes; RECORDS blocks are skipped unread. */
static const struct capture_visitor names_visitor = {
    .maps = on_maps,
    .symbol = on_symbol,
    .stack = on_stack,
    .process = on_process,
    .trigger = on_trigger,
};

/* Second pass: the records, into the analysis. */
static const struct capture_visitor records_visitor = {
    .record = on_record,
    .block = on_block,
};

/*
 * What a step source needs that only the recording could have put in the capture. Marker
 * calls and NVTX ranges that are not there are the step source that cannot be placed, as live
 * (a green gate on one step would say nothing): -ENODATA, said. A program that never synced
 * has one step: a warning.
 */
static int check_steps(struct replay *rp, const char *name, bool quiet)
{
	const struct timeline_opts *o = &rp->a->steps;

	if (!rp->a->steps_given || o->source == STEP_INTERVAL || timeline__boundaries(rp->an->tl))
		return 0;
	if (o->source == STEP_MARKER) {
		if (!quiet)
			pr_err("%s: --step sym:%s:%s: no step marker calls recorded: --step sym: "
			       "re-uses the markers of the recording (record with --step "
			       "sym:FILE:SYMBOL)\n",
			       name, rp->a->step_file, rp->a->step_sym);
		return -ENODATA;
	}
	if (o->source == STEP_NVTX) {
		if (!quiet)
			pr_err(
			    "%s: --step nvtx:%s: no NVTX range '%s' recorded: NVTX ranges are in a "
			    "capture only when it was recorded with --step nvtx:NAME\n",
			    name, o->nvtx_name, o->nvtx_name);
		return -ENODATA;
	}
	if (!quiet)
		pr_warn("%s: no synchronization or WebGPU queue submit recorded: every step "
			"is the whole capture\n",
			name);
	return 0;
}

/*
 * A watch capture ends where the live analysis stood at the trigger: said when this report
 * does not come to the same live bytes (with other rules it still should; a snapshot that
 * could not rebuild everything would not).
 */
static void check_trigger(struct replay *rp, const char *name)
{
	const struct capture_trigger *t = &rp->trig;
	uint32_t i;

	for (i = 0; i < t->nr_procs; i++) {
		const struct tproc *p = tracker__proc(rp->an->t, (pid_t)t->procs[i].pid);
		char a[32], b[32];

		if (!p || (p->live_bytes == t->procs[i].live_bytes &&
			   p->pending_bytes == t->procs[i].pending_bytes))
			continue;
		pr_warn("%s: pid %u ends with %s live here, the live analysis had %s at the "
			"trigger\n",
			name, t->procs[i].pid, fmt_bytes(p->live_bytes, a, sizeof(a)),
			fmt_bytes(t->procs[i].live_bytes, b, sizeof(b)));
	}
}

/* --end re-uses the end marker calls of the recording: none means no session ended early. */
static void warn_no_end(struct replay *rp, const char *name)
{
	if (rp->a->end_file && !rp->an->nr_ended)
		pr_warn("%s: no end marker calls recorded: --end re-uses the markers of the "
			"recording (record with --end sym:FILE:SYMBOL)\n",
			name);
}

/* The symbolizer the capture's names go into and the analysis its records go into. */
static int replay_new_analysis(struct replay *rp)
{
	int err = symbolizer__new(NULL, &rp->sym);

	if (err)
		goto cleanup;
	symbolizer__set_site_skip(rp->sym, rp->a->site_skip, rp->a->nr_site_skip);
	err = analysis__new(rp->a, symbolizer__site_frames, rp->sym, &rp->an);
	if (err)
		goto cleanup;
	/* Python frames name a site where its call site is the interpreter's: as live. */
	tracker__set_site_fn(rp->an->t, symbolizer__py_site, rp->sym);
cleanup:
	return err;
}

/*
 * The second pass, the records, into the analysis; then what a capture cut short or damaged
 * needs (its processes' last steps closed, what was kept said) and the warnings about what
 * the options asked for and the capture lacks. 0, or -errno with the reader's message
 * printed when quiet is false.
 */
static int replay_records(struct replay *rp, const char *name, bool quiet)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	const struct tracker *t = rp->an->t;
	uint64_t at;
	uint32_t blk;
	size_t i;
	int err;

	err = capture_reader__read(rp->rd, &records_visitor, rp);
	if (err) {
		if (!quiet)
			pr_err("%s: %s\n", name, capture_reader__error(rp->rd));
		return err;
	}
	rp->damaged = capture_reader__damaged(rp->rd, &at, &blk);
	if (rp->damaged && !quiet)
		pr_err("%s: damaged from block %u at offset %" PRIu64
		       " (%s); reporting the %" PRIu64 " records before it\n",
		       name, blk, at, damage_why(rp->rd), rp->nr_fed);
	else if (capture_reader__truncated(rp->rd, &at) && !quiet)
		pr_warn("%s: capture truncated at offset %" PRIu64 " (%s); reporting the %" PRIu64
			" records of the %u whole blocks before it\n",
			name, at,
			in->flags & CAPTURE_F_INCOMPLETE
			    ? "incomplete: recorder did not finish"
			    : "the recorder finished, the file was cut short later",
			capture_reader__records(rp->rd), capture_reader__blocks(rp->rd));
	if (rp->has_trigger)
		snapshot__at(rp->an, &rp->si, rp->nr_fed);
	if (rp->has_trigger && !quiet && !capture_reader__truncated(rp->rd, &at))
		check_trigger(rp, name);
	/* A capture cut short has no exit or detach record: its last step ends with it. */
	for (i = 0; i < t->nr_procs; i++)
		if (!t->procs[i]->exited && !t->procs[i]->detached)
			timeline__finish(rp->an->tl, t->procs[i]->pid, t->last_ts_ns);
	err = check_steps(rp, name, quiet);
	if (err)
		return err;
	if (!quiet) {
		warn_no_end(rp, name);
		if (symbolizer__py_bad(rp->sym))
			pr_warn("%s: %" PRIu64 " malformed Python records left out: what they "
				"describe is named by native frames, or \"?\"\n",
				name, symbolizer__py_bad(rp->sym));
	}
	return 0;
}

/*
 * Read rd to the end into the analysis and print the result. Returns 0, or -errno with the
 * reader's message printed (prefixed by name) when quiet is false.
 */
static int replay_reader(struct replay *rp, const char *name, FILE *out, FILE *json, int top,
			 bool quiet)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	const struct tracker *t;
	struct verdict *v = NULL;
	char *extra = NULL;
	int err;

	err = replay_new_analysis(rp);
	if (err)
		goto cleanup;
	err = pictures__open(&rp->a->out, &rp->pics);
	if (err)
		goto cleanup;
	t = rp->an->t;
	rp->rep = (struct report){.t = rp->an->t,
				  .tl = rp->an->tl,
				  .sym = rp->sym,
				  .out = out,
				  .json = json,
				  .top = top,
				  .t0_ns = in->monotonic_start_ns};
	timeline__on_step(rp->an->tl, on_step, rp);
	rp->next_interval_ns = in->monotonic_start_ns + rp->interval_ns;
	err = capture_reader__read(rp->rd, &names_visitor, rp);
	if (err) {
		if (!quiet)
			pr_err("%s: %s\n", name, capture_reader__error(rp->rd));
		goto cleanup;
	}
	/* A watch capture is written at its trigger, after its records: they are timed from
	 * the window's start. */
	if (rp->has_trigger && rp->trig.window_start_ns) {
		rp->rep.t0_ns = rp->trig.window_start_ns;
		rp->next_interval_ns = rp->rep.t0_ns + rp->interval_ns;
	}
	/* What the capture is comes first, then the analysis as live printed it. */
	print_summary(rp, name, out);
	err = replay_records(rp, name, quiet);
	if (err)
		goto cleanup;
	extra = verdict_extra(rp, name);
	rp->rep.verdict_extra = extra;
	/* "Now" is the last thing the capture saw: a process still running when the recorder
	 * stopped short is reported as of then. */
	err = analysis__verdict(rp->an, &v);
	if (err)
		goto cleanup;
	report__final(&rp->rep, v, t->last_ts_ns);
	rp->gate_failed = v->gate_failed;
	/* said, and exit 1; the verdicts are written all the same */
	rp->out_err = pictures__write(rp->pics, &rp->rep, v, rp->an, t->last_ts_ns);
cleanup:
	verdict__free(v);
	free(extra);
	return err;
}

int replay__analyse(const char *path, const void *buf, size_t len, const struct analysis_opts *a,
		    replay_step_fn step, replay_done_fn done, void *ctx)
{
	struct replay rp = {.a = a, .step_hook = step, .hook_ctx = ctx};
	const char *name = infile__name(path);
	struct replay_result res = {0};
	struct verdict *v = NULL;
	bool quiet = false;
	uint64_t at;
	int err;

	err = buf ? capture_reader__open_mem(buf, len, 0, &rp.rd)
		  : capture_reader__open(path, 0, &rp.rd);
	if (err) {
		if (!quiet)
			pr_err("%s: %s\n", name,
			       rp.rd ? capture_reader__error(rp.rd) : strerror(-err));
		goto cleanup;
	}
	err = replay_new_analysis(&rp);
	if (err)
		goto cleanup;
	if (step)
		timeline__on_step(rp.an->tl, on_step_hook, &rp);
	err = capture_reader__read(rp.rd, &names_visitor, &rp);
	if (err) {
		if (!quiet)
			pr_err("%s: %s\n", name, capture_reader__error(rp.rd));
		goto cleanup;
	}
	err = replay_records(&rp, name, quiet);
	if (err)
		goto cleanup;
	err = analysis__verdict(rp.an, &v);
	if (err)
		goto cleanup;
	res = (struct replay_result){.an = rp.an,
				     .sym = rp.sym,
				     .v = v,
				     .info = capture_reader__info(rp.rd),
				     .truncated = capture_reader__truncated(rp.rd, &at),
				     .damaged = rp.damaged};
	err = done(ctx, &res);
cleanup:
	verdict__free(v);
	replay_free(&rp);
	capture_reader__free(rp.rd);
	return err;
}

int replay__mem(const void *buf, size_t len, unsigned int reader_flags,
		const struct analysis_opts *a, uint64_t interval_ns, FILE *out, FILE *json)
{
	struct replay rp = {.a = a, .interval_ns = interval_ns};
	int err;

	err = capture_reader__open_mem(buf, len, reader_flags, &rp.rd);
	if (err)
		goto cleanup;
	err = replay_reader(&rp, "mem", out, json, 5, true);
	if (err)
		goto cleanup;
	err = rp.damaged ? -EINVAL : rp.out_err;
cleanup:
	replay_free(&rp);
	capture_reader__free(rp.rd);
	return err;
}

static int no_record(void *ctx, const struct gl_hdr *h)
{
	(void)ctx;
	(void)h;
	return 0;
}

static int list_blocks(struct replay *rp, const char *name)
{
	const struct capture_info *in = capture_reader__info(rp->rd);
	uint64_t at;
	uint32_t blk;
	int err;

	rp->blocks = stdout;
	printf("capture %s: format %u.%u, header %u bytes, flags 0x%x%s\n", term_tmp(name),
	       in->major, in->minor, in->hdr_size, in->flags,
	       in->flags & CAPTURE_F_INCOMPLETE ? " (incomplete)" : "");
	printf("%10s  %-8s %-6s %10s %10s %8s\n", "OFFSET", "TYPE", "CODEC", "RAW", "STORED",
	       "COUNT");
	/* Every block checked and decoded: the listing is also a check of the file. */
	err = capture_reader__read(
	    rp->rd, &(struct capture_visitor){.block = on_block, .record = no_record}, rp);
	if (err) {
		pr_err("%s: %s\n", name, capture_reader__error(rp->rd));
		return err;
	}
	/* The listing is a check of the file: a damaged block is its error, after the blocks
	 * before it. */
	if (capture_reader__damaged(rp->rd, &at, &blk)) {
		pr_err("%s: damaged from block %u at offset %" PRIu64 " (%s)\n", name, blk, at,
		       damage_why(rp->rd));
		return -EINVAL;
	}
	if (capture_reader__truncated(rp->rd, &at))
		printf("truncated at offset %" PRIu64 " of %" PRIu64 "\n", at,
		       capture_reader__size(rp->rd));
	else
		printf("end at offset %" PRIu64 ": finished\n", capture_reader__size(rp->rd));
	return 0;
}

int replay__run(const struct replay_opts *o)
{
	struct replay rp = {.a = &o->a, .interval_ns = o->interval_ns};
	const char *name = infile__name(o->path);
	struct outfile *json_file = NULL;
	FILE *json = NULL;
	char why[256];
	int err;

	err = capture_reader__open(o->path, 0, &rp.rd);
	if (err) {
		pr_err("%s: %s\n", name, rp.rd ? capture_reader__error(rp.rd) : strerror(-err));
		goto cleanup;
	}
	if (o->list_blocks) {
		err = list_blocks(&rp, name);
		goto cleanup;
	}
	if (o->json_path) {
		err = outfile__open(o->json_path, OUTFILE_REPLACE, &json_file, why, sizeof(why));
		if (err) {
			pr_err("cannot write %s: %s\n", o->json_path, why);
			goto cleanup;
		}
		json = outfile__stream(json_file);
	}
	err = replay_reader(&rp, name, pictures__text_stream(o->json_path, &o->a.out), json, o->top,
			    false);
	if (err == -ENOMEM)
		pr_err("out of memory\n");
cleanup:
	/* Verdicts were written (of all, or of what precedes the damage): they replace. */
	if (json_file && !err) {
		err = outfile__commit(json_file);
		if (err)
			pr_err("writing %s: %s\n", o->json_path, strerror(-err));
	} else {
		outfile__abort(json_file);
	}
	replay_free(&rp);
	capture_reader__free(rp.rd);
	/* A step source the capture cannot give: the options do not fit it, as live. */
	if (err == -ENODATA)
		return GL_EXIT_USAGE;
	if (err || rp.damaged || rp.out_err)
		return GL_EXIT_ERROR;
	return rp.gate_failed ? GL_EXIT_GATE : GL_EXIT_OK;
}
