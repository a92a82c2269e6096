// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The diff engine (diff/diff.h) on hand-made runs: site names split into what sites are
 * matched by, sites paired across builds (offset as a tiebreak only, labels, unsymbolized
 * code), processes by command and rank, where two processes are compared and the gate; and
 * the NDJSON verdicts loader on a small document and its errors.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "diff/diff.h"
#include "diff/diff_verdicts.h"

static bool str_is(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

static void parse_names(void)
{
	static const struct {
		const char *name, *func, *module;
		bool has_off;
		uint64_t off;
	} v[] = {
	    {"leaky+0x14 (loop)", "leaky", "loop", true, 0x14},
	    {"ns::f(int) const+0x10 (libx.so)", "ns::f(int) const", "libx.so", true, 0x10},
	    {"libcuda.so.1+0x1f00", NULL, "libcuda.so.1", true, 0x1f00},
	    {"0x7f0012345678", NULL, NULL, false, 0},
	    {"?", NULL, NULL, false, 0},
	    {"forward (model.py:42)", "forward", "model.py", true, 42},
	    {"makeLogits+0xdc (wgpu_node_jit.mjs:32:20)", "makeLogits", "wgpu_node_jit.mjs", true,
	     0xdc},
	    {"f (a.mjs:3:9)", "f", "a.mjs", true, 3},
	    {"(anonymous)+0x10 (perf-77.map)", "(anonymous)", "perf-77.map", true, 0x10},
	    {"f+0x10 (?)", "f", NULL, true, 0x10},
	    {"weird+0xzz (m)", "weird+0xzz", "m", false, 0},
	};
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		char *func, *module;
		bool has_off;
		uint64_t off;

		if (!CHECK(!diff__parse_site(v[i].name, &func, &module, &has_off, &off), "%s",
			   v[i].name))
			continue;
		CHECK(str_is(func, v[i].func), "%s: function '%s'", v[i].name, func ? func : "-");
		CHECK(str_is(module, v[i].module), "%s: module '%s'", v[i].name,
		      module ? module : "-");
		CHECK(has_off == v[i].has_off && off == v[i].off, "%s: offset %d 0x%lx", v[i].name,
		      has_off, (unsigned long)off);
		free(func);
		free(module);
	}
}

/* A process of comm and pid, exited 0 after steps steps, its sites given as
 * (api, name, label, live bytes). */
struct s {
	const char *api, *name, *label;
	uint64_t live;
};

static struct diff_proc *proc(struct diff_run *r, const char *comm, pid_t pid, size_t steps,
			      const struct s *sites, size_t n)
{
	struct diff_proc *p = diff_run__add_proc(r);
	size_t i;

	snprintf(p->comm, sizeof(p->comm), "%s", comm);
	snprintf(p->state, sizeof(p->state), "exited");
	snprintf(p->step_source, sizeof(p->step_source), "sym");
	p->pid = pid;
	p->steps = steps;
	for (i = 0; i < n; i++) {
		int k = diff_proc__site(p, sites[i].api, sites[i].name, sites[i].label);
		struct diff_site *d = &p->sites[k];

		d->live_bytes = d->leaked_bytes = sites[i].live;
		d->live_count = d->leaked_count = 1;
		d->visible = true;
		p->live_bytes += sites[i].live;
		p->leaked_bytes += sites[i].live;
	}
	return p;
}

static const struct diff_site_pair *pair_of(const struct diff_proc_pair *pp, const char *bname,
					    const char *nname)
{
	size_t i;

	for (i = 0; i < pp->nr_sites; i++) {
		const struct diff_site_pair *sp = &pp->sites[i];

		if (str_is(sp->b ? sp->b->name : NULL, bname) &&
		    str_is(sp->n ? sp->n->name : NULL, nname))
			return sp;
	}
	return NULL;
}

static void pairs_sites(void)
{
	static const struct s base[] = {
	    {"cudaMalloc", "a+0x10 (app)", NULL, 100},
	    {"cudaMalloc", "a+0x30 (app)", NULL, 200},
	    {"cudaMalloc", "b+0x5 (app)", NULL, 300},
	    {"cudaMalloc", "one+0x5 (app)", NULL, 1},
	    {"wgpuDeviceCreateBuffer", "mk+0x9 (app)", "logits", 400},
	    {"cudaMalloc", "lib.so+0x100", NULL, 500},
	    {"cudaMalloc", "lib.so+0x200", NULL, 600},
	    {"cudaMalloc", "0x7f00", NULL, 700},
	};
	static const struct s new[] = {
	    {"cudaMalloc", "a+0x14 (app)", NULL, 100},
	    {"cudaMalloc", "a+0x40 (app)", NULL, 250},
	    {"cudaMalloc", "c+0x5 (app)", NULL, 300},
	    {"cudaMallocAsync", "one+0x5 (app)", NULL, 1},
	    {"wgpuDeviceCreateBuffer", "other+0x2 (app)", "logits", 400},
	    {"cudaMalloc", "lib.so+0x100", NULL, 500},
	    {"cudaMalloc", "lib.so+0x204", NULL, 600},
	    {"cudaMalloc", "0x7f00", NULL, 700},
	};
	struct diff_run *b = NULL, *n = NULL;
	struct diff_result *r = NULL;
	const struct diff_proc_pair *pp;
	const struct diff_site_pair *sp;
	struct diff_opts o = {0};

	if (diff_run__new(DIFF_CAPTURE, "b", &b) || diff_run__new(DIFF_CAPTURE, "n", &n))
		goto cleanup;
	proc(b, "app", 10, 5, base, sizeof(base) / sizeof(base[0]));
	proc(n, "app", 20, 5, new, sizeof(new) / sizeof(new[0]));
	if (!CHECK(!diff__compare(b, n, &o, &r) && r->nr_procs == 1, "compared"))
		goto cleanup;
	pp = &r->procs[0];

	sp = pair_of(pp, "a+0x10 (app)", "a+0x14 (app)");
	CHECK(sp && sp->by == DIFF_BY_ORDER && !sp->changed, "a: first with first, by order");
	sp = pair_of(pp, "a+0x30 (app)", "a+0x40 (app)");
	CHECK(sp && sp->by == DIFF_BY_ORDER && sp->changed && sp->live.new - sp->live.base == 50,
	      "a: second with second, +50");
	CHECK(pair_of(pp, "b+0x5 (app)", NULL) && pair_of(pp, NULL, "c+0x5 (app)"),
	      "another function: only in one each");
	CHECK(pair_of(pp, "one+0x5 (app)", NULL) && pair_of(pp, NULL, "one+0x5 (app)"),
	      "another API: another site");
	sp = pair_of(pp, "mk+0x9 (app)", "other+0x2 (app)");
	CHECK(sp && sp->by == DIFF_BY_LABEL, "a label pairs across functions");
	sp = pair_of(pp, "lib.so+0x100", "lib.so+0x100");
	CHECK(sp && sp->by == DIFF_BY_SITE, "no symbol: the same file offset");
	CHECK(pair_of(pp, "lib.so+0x200", NULL) && pair_of(pp, NULL, "lib.so+0x204"),
	      "no symbol: another file offset is another site");
	sp = pair_of(pp, "0x7f00", "0x7f00");
	CHECK(sp && sp->by == DIFF_BY_NAME, "nothing known: the same name");
	CHECK_U64(pp->nr_paired, 5, "paired");
	CHECK_U64(pp->nr_only_b, 3, "only in BASE");
	CHECK_U64(pp->nr_only_n, 3, "only in NEW");
	CHECK(pp->sites[0].score >= pp->sites[1].score && pp->sites[0].changed,
	      "largest difference first");
	CHECK(pp->sites[0].score == 600 && pp->sites[0].match == DIFF_ONLY_BASE &&
		  !strcmp(pp->sites[0].b->name, "lib.so+0x200"),
	      "the largest first: the 600 bytes only in BASE, %f", pp->sites[0].score);
cleanup:
	diff_result__free(r);
	diff_run__free(b);
	diff_run__free(n);
}

static void pairs_processes(void)
{
	struct diff_run *b = NULL, *n = NULL;
	struct diff_result *r = NULL;
	struct diff_opts o = {0};

	if (diff_run__new(DIFF_NDJSON, "b", &b) || diff_run__new(DIFF_NDJSON, "n", &n))
		goto cleanup;
	proc(b, "w", 100, 1, NULL, 0);
	proc(b, "w", 50, 1, NULL, 0);
	proc(b, "srv", 70, 1, NULL, 0);
	proc(n, "w", 300, 1, NULL, 0);
	proc(n, "w", 200, 1, NULL, 0);
	proc(n, "x", 400, 1, NULL, 0);
	if (!CHECK(!diff__compare(b, n, &o, &r) && r->nr_procs == 4, "four pairs"))
		goto cleanup;
	/* by command, then rank */
	CHECK(r->procs[0].match == DIFF_ONLY_BASE && r->procs[0].b->pid == 70, "srv: BASE only");
	CHECK(r->procs[1].match == DIFF_PAIRED && r->procs[1].rank == 0 &&
		  r->procs[1].b->pid == 50 && r->procs[1].n->pid == 200,
	      "w rank 0: the lower pids");
	CHECK(r->procs[2].match == DIFF_PAIRED && r->procs[2].rank == 1 &&
		  r->procs[2].b->pid == 100 && r->procs[2].n->pid == 300,
	      "w rank 1");
	CHECK(r->procs[3].match == DIFF_ONLY_NEW && r->procs[3].n->pid == 400, "x: NEW only");
	CHECK(r->procs[0].nr_gate == 1 && r->procs[0].gate[0].kind == DIFF_GATE_MISSING,
	      "missing from NEW fails the gate");
	diff_result__free(r);
	r = NULL;
	o.pid_base = 100;
	CHECK(!diff__compare(b, n, &o, &r) && r->nr_procs == 1 && r->procs[0].n->pid == 300,
	      "--pid-base: with its command and rank");
	diff_result__free(r);
	r = NULL;
	o.pid_new = 200;
	CHECK(!diff__compare(b, n, &o, &r) && r->nr_procs == 1 && r->procs[0].n->pid == 200,
	      "--pid-base and --pid-new: that pair");
	diff_result__free(r);
	r = NULL;
	o.pid_new = 999;
	CHECK(diff__compare(b, n, &o, &r) == -ESRCH && !r, "a pid not there");
	o = (struct diff_opts){.comm = "w"};
	CHECK(!diff__compare(b, n, &o, &r) && r->nr_procs == 2, "--comm w: two pairs");
cleanup:
	diff_result__free(r);
	diff_run__free(b);
	diff_run__free(n);
}

/*
 * A run of steps -1..last: the site "leak+0x1 (app)" gains per_step bytes each step from step
 * 0, and the one before its first step holds init bytes made there.
 */
static struct diff_proc *stepped(struct diff_run *r, int64_t last, uint64_t per_step,
				 int exit_status)
{
	struct diff_proc *p = diff_run__add_proc(r);
	int64_t st;
	int k, i;

	snprintf(p->comm, sizeof(p->comm), "app");
	snprintf(p->state, sizeof(p->state), "exited");
	snprintf(p->step_source, sizeof(p->step_source), "sym");
	p->pid = 1;
	p->exit_status = exit_status;
	p->steps = (size_t)(last + 2);
	k = diff_proc__site(p, "cudaMalloc", "leak+0x1 (app)", NULL);
	i = diff_proc__site(p, "cudaMalloc", "init+0x1 (app)", NULL);
	diff_site__change(r, p, &p->sites[i], -1, 1000, 0, 1000);
	diff_proc__step(r, p, -1, 1000, 0, 1, 1000);
	for (st = 0; st <= last; st++) {
		diff_site__change(r, p, &p->sites[k], st, (int64_t)per_step, (int64_t)per_step, 0);
		diff_proc__step(r, p, st, 1000 + (uint64_t)(st + 1) * per_step, 0, 1, per_step);
	}
	p->sites[k].live_bytes = p->sites[k].leaked_bytes = (uint64_t)(last + 1) * per_step;
	p->sites[i].live_bytes = p->sites[i].init_bytes = 1000;
	p->live_bytes = 1000 + p->sites[k].live_bytes;
	p->leaked_bytes = p->sites[k].leaked_bytes;
	p->init_bytes = 1000;
	p->sites[k].growing = per_step > 0;
	p->sites[k].slope = p->growth_per_step = (double)per_step;
	return p;
}

static void aligns_and_gates(void)
{
	struct diff_opts o = {.warmup_steps = 3, .gate = {.on = true, .has_max_live = true}};
	struct diff_run *b = NULL, *n = NULL, *c = NULL;
	struct diff_result *r = NULL;
	const struct diff_proc_pair *pp;

	if (diff_run__new(DIFF_CAPTURE, "b", &b) || diff_run__new(DIFF_CAPTURE, "n", &n) ||
	    diff_run__new(DIFF_CAPTURE, "c", &c))
		goto cleanup;
	stepped(b, 11, 10, 0);
	stepped(n, 23, 10, 0);
	stepped(c, 5, 30, 139);
	/* the same growth, twice the steps: compared at step 10, no regression */
	if (!CHECK(!diff__compare(b, n, &o, &r), "compared"))
		goto cleanup;
	pp = &r->procs[0];
	CHECK(pp->align == DIFF_AT_STEP && pp->step_b == 10 && pp->step_n == 10, "at step 10");
	CHECK(pp->leaked.base == 110 && pp->leaked.new == 110, "leaked at step 10: %f %f",
	      pp->leaked.base, pp->leaked.new);
	CHECK(pp->init.base == 1000 && pp->init.new == 1000, "init at step 10");
	CHECK(pp->slopes_fitted && pp->growth.base == 10 && pp->growth.new == 10,
	      "a fit over steps 2..10: %f %f", pp->growth.base, pp->growth.new);
	CHECK(pp->fit_from_b == 2 && pp->fit_from_n == 2, "from the first step after warm-up");
	CHECK(!r->regression && !pp->nr_gate, "no regression");
	diff_result__free(r);
	r = NULL;
	/* a crash at step 5 leaking 3x as fast: compared at step 4, growth and ended early */
	if (!CHECK(!diff__compare(b, c, &o, &r), "compared"))
		goto cleanup;
	pp = &r->procs[0];
	CHECK(pp->clean_b && !pp->clean_n && pp->align == DIFF_AT_STEP && pp->step_b == 4,
	      "a crash: at step 4");
	CHECK(pp->leaked.base == 50 && pp->leaked.new == 150, "leaked at step 4");
	CHECK(pp->growth.base == 10 && pp->growth.new == 30, "growth over steps 2..4");
	CHECK(pp->nr_gate == 3 && pp->gate[0].kind == DIFF_GATE_GROWTH &&
		  pp->gate[0].amount == 20 && pp->gate[1].kind == DIFF_GATE_ENDED_EARLY &&
		  pp->gate[2].kind == DIFF_GATE_LIVE && pp->gate[2].amount == 100,
	      "growth, ended early, live: %zu", pp->nr_gate);
	CHECK(r->regression, "a regression");
	diff_result__free(r);
	r = NULL;
	o.gate.max_growth_increase = 20;
	o.gate.max_live_increase = 100;
	CHECK(!diff__compare(b, c, &o, &r) && r->procs[0].nr_gate == 1 &&
		  r->procs[0].gate[0].kind == DIFF_GATE_ENDED_EARLY,
	      "at the limits: ended early alone");
	diff_result__free(r);
	r = NULL;
	/* the same run: at the end, nothing changed */
	CHECK(!diff__compare(b, b, &o, &r) && r->procs[0].align == DIFF_AT_END &&
		  !r->procs[0].nr_gate && r->procs[0].nr_unchanged == 2,
	      "a run against itself");
cleanup:
	diff_result__free(r);
	diff_run__free(b);
	diff_run__free(n);
	diff_run__free(c);
}

static int load(const char *text, struct diff_run **out, char *err, size_t len)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	if (!f)
		return -errno;
	ret = diff_verdicts__load(f, "t.ndjson", out, err, len);
	fclose(f);
	return ret;
}

static void loads_verdicts(void)
{
	static const char doc[] =
	    "{\"type\":\"step\",\"pid\":7,\"step\":-1,\"live_bytes\":10,\"requests\":0,\"allocs\":"
	    "1,"
	    "\"allocated_bytes\":10,\"sites\":[{\"api\":\"cudaMalloc\",\"site\":\"w+0x1 (a)\","
	    "\"label\":null,\"class\":\"init\",\"live_bytes\":10}],\"other_sites\":{\"count\":0}}\n"
	    "\n"
	    "{\"type\":\"step\",\"pid\":7,\"step\":0,\"live_bytes\":14,\"requests\":1,\"allocs\":1,"
	    "\"allocated_bytes\":4,\"sites\":[{\"api\":\"cudaMalloc\",\"site\":\"l+0x2 (a)\","
	    "\"label\":null,\"class\":\"none\",\"live_bytes\":4}],\"other_sites\":{\"count\":0}}\n"
	    "{\"type\":\"verdict\",\"pid\":7,\"ppid\":0,\"comm\":\"a\",\"state\":\"exited\","
	    "\"exit_status\":0,\"duration_s\":0.5,\"live_bytes\":14,\"live_count\":2,"
	    "\"pending_bytes\":0,\"allocs\":2,\"alloc_bytes\":14,\"frees\":0,\"failed_calls\":0,"
	    "\"persistent_bytes\":0,\"ignored_bytes\":0,\"init_bytes\":10,\"steps\":2,"
	    "\"step_source\":\"sym\",\"requests\":1,\"approximate\":false,\"leaks\":[{\"api\":"
	    "\"cudaMalloc\",\"site\":\"l+0x2 "
	    "(a)\",\"label\":null,\"memory\":\"device\",\"bytes\":4,"
	    "\"count\":1}],\"retained\":[{\"api\":\"cudaMalloc\",\"site\":\"w+0x1 (a)\",\"label\":"
	    "null,\"memory\":\"device\",\"bytes\":10,\"count\":1,\"retained_by\":\"init\"}],"
	    "\"ignored\":[],\"pending\":[],\"growth\":[{\"api\":\"cudaMalloc\",\"site\":"
	    "\"l+0x2 (a)\",\"bytes\":4,\"slope_bytes_per_step\":4.04}],\"future\":{\"x\":[1]}}\n"
	    "{\"type\":\"summary\"}\n";
	struct diff_run *r = NULL;
	const struct diff_proc *p;
	char err[512];

	if (!CHECK(!load(doc, &r, err, sizeof(err)), "loads: %s", err))
		return;
	p = &r->procs[0];
	CHECK(r->nr_procs == 1 && p->pid == 7 && !strcmp(p->comm, "a") && p->steps == 2,
	      "one process");
	CHECK(p->nr_series == 2 && p->series[1].live == 14 && p->series[1].requests == 1 &&
		  p->series[1].alloc_bytes == 14 && !p->series_cut && p->sites_exact,
	      "its steps");
	CHECK(p->nr_sites == 2 && p->sites[1].growing && p->sites[1].slope == 4.0 &&
		  p->growth_per_step == 4.0 && p->leaked_bytes == 4,
	      "its leak, the slope to a tenth");
	CHECK(p->sites[0].init_bytes == 10 && p->sites[0].samples[0].init == 10, "init");
	diff_run__free(r);

	CHECK(load("{\"type\":\"step\",\"pid\":1,\"step\":0}\n", &r, err, sizeof(err)) == -EINVAL &&
		  !strcmp(err, "t.ndjson:1:1: step record has no \"live_bytes\""),
	      "a member missing: %s", err);
	CHECK(load("\n{\"type\":\"verdict\",\"pid\":1.5}\n", &r, err, sizeof(err)) == -EINVAL &&
		  !strcmp(err, "t.ndjson:2:25: verdict: \"pid\" must be an integer from 1 to "
			       "2147483647"),
	      "a wrong type: %s", err);
	CHECK(load("{\"type\":\"verdict\" \"pid\":1}\n", &r, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "t.ndjson:1:19: ") && strstr(err, "',' or '}'"),
	      "not JSON: %s", err);
	CHECK(load("{\"type\":\"interval\"}\n", &r, err, sizeof(err)) == -EINVAL &&
		  strstr(err, "no verdict records"),
	      "no verdict: %s", err);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"diff_parse_names", parse_names},	       {"diff_pairs_sites", pairs_sites},
	    {"diff_pairs_processes", pairs_processes}, {"diff_aligns_and_gates", aligns_and_gates},
	    {"diff_loads_verdicts", loads_verdicts},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
