// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/options.h"
#include "tracker/rules.h"
#include "engine/timeline.h"
#include "gpuleak.h"
#include "lib/exit.h"
#include "lib/infile.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/units.h"
#include "lib/vec.h"
#include "live/bpf_setup.h"
#include "live/http.h"
#include "probe/wgpu_abi.h"
#include "symbols/symbolizer.h"

void cli__init_children(struct argp_state *state, const struct argp_child *children)
{
	size_t i;

	for (i = 0; children[i].argp; i++)
		state->child_inputs[i] = state->input;
}

/* tp into the list, once per pid (PID@TICKS checked against the same pid given before). */
static int add_pid(struct argp_state *state, struct cli *c, const struct session_pid *tp)
{
	size_t i;

	for (i = 0; i < c->t.nr_pids; i++) {
		struct session_pid *o = &c->t.pids[i];

		if (o->pid != tp->pid)
			continue;
		if (o->start_ticks && tp->start_ticks && o->start_ticks != tp->start_ticks)
			argp_error(state,
				   "pid %d given twice, with start times %" PRIu64 " and %" PRIu64,
				   tp->pid, o->start_ticks, tp->start_ticks);
		if (!o->start_ticks)
			o->start_ticks = tp->start_ticks;
		return 0;
	}
	if (vec_grow((void **)&c->t.pids, &c->cap_pids, c->t.nr_pids, sizeof(*c->t.pids)))
		return -ENOMEM;
	c->t.pids[c->t.nr_pids++] = *tp;
	return 0;
}

void cli__parse_pid_list(const char *arg, struct argp_state *state, struct cli *c)
{
	const char *p = arg;

	while (*p) {
		struct session_pid tp = {0};
		/* The bad element and where it starts: "-p 12,abc" names "abc", at 4. */
		int at = (int)(p - arg) + 1, len = (int)strcspn(p, ",");
		char *end;
		long v;

		errno = 0;
		v = strtol(p, &end, 10);
		if (errno || end == p || v <= 0 || v > INT_MAX)
			argp_error(state, "invalid PID '%.*s' (element at character %d of '%s')",
				   len, p, at, arg);
		tp.pid = (pid_t)v;
		if (*end == '@') {
			p = end + 1;
			errno = 0;
			tp.start_ticks = strtoull(p, &end, 10);
			if (errno || end == p || *p == '-' || !tp.start_ticks)
				argp_error(state,
					   "invalid PID@TICKS '%.*s' (element at character "
					   "%d of '%s'; TICKS: field 22 of /proc/PID/stat)",
					   len, arg + at - 1, at, arg);
		}
		if (*end && *end != ',')
			argp_error(state, "invalid PID '%.*s' (element at character %d of '%s')",
				   len, arg + at - 1, at, arg);
		p = *end ? end + 1 : end;
		/* One target per process: a pid given twice would be attached twice. */
		if (add_pid(state, c, &tp))
			argp_failure(state, GL_EXIT_ERROR, ENOMEM, "-p");
	}
}

void cli__parse_pid(const char *arg, struct argp_state *state, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		argp_error(state, "invalid PID '%s'", arg);
	*pid = (pid_t)v;
}

/* ---- analysis: rules, steps, the gate, pictures ---- */

#define STDIN_ONCE "standard input is read once: one --rules - or report -"

/* As the rules parser's own files: a rules file is text a person wrote. */
#define RULES_FILE_MAX (16U << 20)

/*
 * --rules FILE read whole, through lib/infile ("-" standard input; a FIFO by name refused, not
 * waited on), then parsed as text named FILE. 0, or -errno with err set.
 */
static int load_rules(struct cli *c, const char *path, char *err, size_t errlen)
{
	const char *name = infile__name(path);
	size_t len = 0;
	char why[256], *buf = NULL;
	int fd, ret;

	ret = infile__open(path, &fd, &(bool){false}, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "--rules %s: %s", name, why);
		return ret;
	}
	ret = infile__read_all(fd, RULES_FILE_MAX, &buf, &len);
	if (ret)
		snprintf(err, errlen, "--rules %s: %s", name,
			 ret == -EFBIG	  ? "more than 16 MiB of rules"
			 : ret == -ENOMEM ? "out of memory"
					  : strerror(-ret));
	else
		ret = rules__parse(c->rules, buf ? buf : "", len, name, err, errlen);
	close(fd);
	free(buf);
	return ret;
}

/* A rule's message quotes the rule: bytes a terminal would act on are shown, not sent. */
static void print_rules_error(const char *msg)
{
	const unsigned char *p;

	fputs("gpuleak: ", stderr);
	for (p = (const unsigned char *)msg; *p; p++) {
		if (*p < 0x20 || *p >= 0x7f)
			fprintf(stderr, "\\x%02x", *p);
		else
			fputc(*p, stderr);
	}
	fputc('\n', stderr);
}

/* --rules -, read at the end of the options: its rules moved to where it was given (the
 * first rule that matches decides). */
static void load_rules_stdin(struct cli *c)
{
	struct rules *rs = c->rules;
	size_t at = c->rules_stdin_at, n0 = rs->n, k;
	char err[512];
	int ret;

	c->rules_stdin = false;
	ret = load_rules(c, "-", err, sizeof(err));
	if (ret) {
		print_rules_error(err);
		c->rules_err = ret;
		return;
	}
	/* rotate v[at, n) so that the new v[n0, n) come first: one element at a time, few */
	for (k = n0; k < rs->n; k++) {
		struct rule r = rs->v[k];

		memmove(&rs->v[at + 1], &rs->v[at], (k - at) * sizeof(*rs->v));
		rs->v[at++] = r;
	}
}

/*
 * The analysis: the same for a live session and the report of a capture, in three children:
 * how memory is judged (rules and steps: also what `gpuleak diff` applies to both runs), the
 * CI gate, and the pictures.
 */
static const struct argp_option judging_options[] = {
    {NULL, 0, NULL, 0, "Rules (persistent buffers, deferred frees, ignores):", 1},
    {"rules", OPT_RULES, "FILE", 0,
     "Persistent-buffer, deferred-free and ignore rules, one per line (repeatable; -: "
     "standard input)",
     1},
    {"rule", OPT_RULE, "TEXT", 0,
     "One rule, e.g. 'persistent site=*kv_cache* release=session-end' (repeatable)", 1},
    {"preset", OPT_PRESET, "NAME", 0,
     "Rules for a known stack: vllm, hf-transformers, ort-webgpu, llama.cpp (files in rules/)", 1},
    {"site-skip", OPT_SITE_SKIP, "GLOB", 0,
     "A call from Python is sited at the innermost frame of the program's own code: frames "
     "of objects (basenames) or Python files (paths) matching GLOB are not (repeatable; "
     "built in: the interpreter, ctypes, libffi, the traced libraries, PyTorch's)",
     1},
    {NULL, 0, NULL, 0, "Steps and leak timelines:", 2},
    {"step", OPT_STEP, "SPEC", 0,
     "Step boundaries, one of: interval:DURATION, a time slice, by default interval:1s; "
     "sync, each CUDA sync or WebGPU queue submit; sym:FILE:SYMBOL, each call of a function; "
     "usdt:FILE:PROVIDER:NAME, each hit of a USDT probe; api:NAME, each call of an entry "
     "point in any object that has it (a symbol or Dawn's proc table: "
     "api:wgpuDevicePopErrorScope is once per onnxruntime run); nvtx:NAME, each NVTX range "
     "of that name",
     2},
    {"request", OPT_REQUEST, "sym:FILE:BEGIN,END", 0,
     "Request boundaries: calls of BEGIN and END in FILE (or usdt:FILE:PROVIDER:BEGIN,END: "
     "hits of two USDT probes)",
     2},
    {"end", OPT_END, "sym:FILE:SYMBOL", 0,
     "End a process's session when it calls SYMBOL (its shutdown, say; or "
     "usdt:FILE:PROVIDER:NAME, a USDT probe): checked as at a detach, then gpuleak lets it go",
     2},
    {"warmup-steps", OPT_WARMUP, "N", 0, "Steps before growth counts (default 3)", 2},
    {"min-growth-steps", OPT_MIN_GROWTH, "K", 0,
     "Steps a site must grow in to be a growth leak (default 5)", 2},
    {"device-mem", OPT_DEVICE_MEM, "BYTES", 0,
     "Device memory for time-to-OOM (default: from NVML when present)", 2},
    {},
};

static const struct argp_option gate_options[] = {
    {NULL, 0, NULL, 0, "CI gate:", 3},
    {"fail-on-leak", OPT_FAIL_ON_LEAK, NULL, 0,
     "CI gate: exit 3 on a growth leak, a rule violation or --max-live-at-exit", 3},
    {"max-growth", OPT_MAX_GROWTH, "BYTES", 0,
     "Gate: growth per step a site may have; default 0: any growth leak fails", 3},
    {"max-live-at-exit", OPT_MAX_LIVE, "BYTES", 0,
     "Gate: leaked bytes allowed at the end, not counting what is persistent, ignored or "
     "retained by init",
     3},
    {},
};

static const struct argp_option pictures_options[] = {
    {NULL, 0, NULL, 0, "Pictures (written at the end; -: standard output):", 4},
    {"folded", OPT_FOLDED, "FILE", 0,
     "Live bytes by stack in the folded format of flamegraph.pl and speedscope", 4},
    {"folded-growth", OPT_FOLDED_GROWTH, "FILE", 0,
     "The growth leaks by stack, each weighted by its share of its site's growth in bytes per "
     "step, in the folded format: who grows",
     4},
    {"folded-peak", OPT_FOLDED_PEAK, "FILE", 0,
     "Live bytes by stack at each device's peak, in the folded format: where the memory "
     "was when the most was live, also when it was all released by the end",
     4},
    {"perfetto", OPT_PERFETTO, "FILE", 0,
     "Chrome trace-event JSON for ui.perfetto.dev: live bytes over time, steps, leak "
     "verdicts, pending frees",
     4},
    {"svg", OPT_SVG, "FILE", 0,
     "An SVG timeline of live, persistent and pending bytes, leaking sites highlighted", 4},
    {"memory-viz", OPT_MEMORY_VIZ, "FILE", 0,
     "PyTorch's memory snapshot (a pickle, as torch.cuda.memory._snapshot()) of the process: "
     "segments, blocks, the allocation trace with Python frames, and the memory PyTorch does "
     "not see, for pytorch.org/memory_viz and torch/cuda/_memory_viz.py",
     4},
    {},
};

/*
 * usdt:FILE:PROVIDER:NAME (arg after "usdt:"): FILE, PROVIDER and NAME in place. Whether all
 * three are there.
 */
static bool split_usdt(char *arg, const char **file, const char **provider, const char **name)
{
	char *c2 = strrchr(arg, ':'), *c1;

	/* No FILE "*": api:NAME's every object is for functions, not USDT probes. */
	if (!c2 || !c2[1] || !strncmp(arg, "*:", 2))
		return false;
	*c2 = 0;
	c1 = strrchr(arg, ':');
	if (!c1 || !c1[1] || c1 == arg) {
		*c2 = ':';
		return false;
	}
	*c1 = 0;
	*file = arg;
	*provider = c1 + 1;
	*name = c2 + 1;
	return true;
}

static void parse_step(struct argp_state *state, struct cli *c, char *arg)
{
	struct timeline_opts *o = &c->a.steps;

	if (c->a.steps_given)
		argp_error(state, "one --step only");
	c->a.steps_given = true;
	if (!strncmp(arg, "interval:", 9)) {
		o->source = STEP_INTERVAL;
		if (parse_duration_ns(arg + 9, &o->interval_ns) || !o->interval_ns)
			argp_error(state, "invalid --step interval '%s' (e.g. interval:500ms)",
				   arg + 9);
	} else if (!strcmp(arg, "sync")) {
		o->source = STEP_SYNC;
	} else if (!strncmp(arg, "nvtx:", 5) && arg[5]) {
		if (strlen(arg + 5) > GL_LABEL_MAX)
			argp_error(state, "--step nvtx: names longer than %d bytes are not matched",
				   GL_LABEL_MAX);
		o->source = STEP_NVTX;
		snprintf(o->nvtx_name, sizeof(o->nvtx_name), "%s", arg + 5);
	} else if (!strncmp(arg, "api:", 4) && arg[4] && !strchr(arg + 4, ':')) {
		/* Any object that has the function, by symbol or in Dawn's proc table. */
		o->source = STEP_MARKER;
		c->a.step_file = "*";
		c->a.step_sym = arg + 4;
	} else if (!strncmp(arg, "sym:", 4) && strrchr(arg + 4, ':') && strrchr(arg, ':')[1]) {
		char *colon = strrchr(arg, ':');

		o->source = STEP_MARKER;
		*colon = 0;
		c->a.step_file = arg + 4;
		c->a.step_sym = colon + 1;
		if (!*c->a.step_file)
			argp_error(state, "--step sym:FILE:SYMBOL needs a FILE");
	} else if (!strncmp(arg, "usdt:", 5)) {
		o->source = STEP_MARKER;
		if (!split_usdt(arg + 5, &c->a.step_file, &c->a.step_provider, &c->a.step_sym))
			argp_error(state, "--step usdt: takes usdt:FILE:PROVIDER:NAME, not '%s'",
				   arg);
	} else {
		argp_error(state,
			   "invalid --step '%s' (interval:DURATION, sync, sym:FILE:SYMBOL, "
			   "usdt:FILE:PROVIDER:NAME, api:NAME, nvtx:NAME)",
			   arg);
	}
}

static error_t parse_analysis(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	uint64_t v;

	/* diff says when these cannot apply to an input (NDJSON verdicts). */
	if (key == OPT_STEP || key == OPT_REQUEST || key == OPT_END || key == OPT_WARMUP ||
	    key == OPT_MIN_GROWTH || key == OPT_RULES || key == OPT_RULE || key == OPT_PRESET)
		c->d.analysis_given = true;
	switch (key) {
	case OPT_STEP:
		parse_step(state, c, arg);
		break;
	case OPT_REQUEST: {
		char *comma = NULL;

		if (!strncmp(arg, "usdt:", 5)) {
			comma = strchr(arg, ',');
			if (!comma || !comma[1] ||
			    !split_usdt(arg + 5, &c->a.req_file, &c->a.req_provider,
					&c->a.req_begin))
				argp_error(state,
					   "--request takes usdt:FILE:PROVIDER:BEGIN,END, not '%s'",
					   arg);
			/* split_usdt cut the name at the comma's left: BEGIN,END */
			comma = strchr(c->a.req_begin, ',');
			*comma = 0;
			c->a.req_end = comma + 1;
			if (!*c->a.req_begin)
				argp_error(state, "--request usdt: needs a BEGIN probe");
			c->a.steps.requests = true;
			break;
		}
		if (strncmp(arg, "sym:", 4) || !(c->req_spec = strdup(arg + 4)) ||
		    !(comma = strchr(c->req_spec, ',')) || !strrchr(c->req_spec, ':') ||
		    strrchr(c->req_spec, ':') > comma)
			argp_error(state, "--request takes sym:FILE:BEGIN,END, not '%s'", arg);
		*comma = 0;
		c->a.req_end = comma + 1;
		*strrchr(c->req_spec, ':') = 0;
		c->a.req_file = c->req_spec;
		c->a.req_begin = c->req_spec + strlen(c->req_spec) + 1;
		if (!*c->a.req_file || !*c->a.req_begin || !*c->a.req_end)
			argp_error(state, "--request takes sym:FILE:BEGIN,END, not '%s'", arg);
		c->a.steps.requests = true;
		break;
	}
	case OPT_END: {
		char *colon = strrchr(arg, ':');

		if (!strncmp(arg, "usdt:", 5)) {
			if (!split_usdt(arg + 5, &c->a.end_file, &c->a.end_provider, &c->a.end_sym))
				argp_error(state, "--end takes usdt:FILE:PROVIDER:NAME, not '%s'",
					   arg);
			break;
		}
		if (strncmp(arg, "sym:", 4) || colon < arg + 4 || colon == arg + 4 || !colon[1])
			argp_error(state, "--end takes sym:FILE:SYMBOL, not '%s'", arg);
		*colon = 0;
		c->a.end_file = arg + 4;
		c->a.end_sym = colon + 1;
		break;
	}
	case OPT_WARMUP:
	case OPT_MIN_GROWTH: {
		char *end;
		long v = strtol(arg, &end, 10);

		if (*end || v < 0 || v > 1000000)
			argp_error(state, "invalid step count '%s'", arg);
		if (key == OPT_WARMUP)
			c->a.steps.warmup_steps = v;
		else
			c->a.steps.min_growth_steps = v ? v : 1;
		break;
	}
	case OPT_DEVICE_MEM:
		if (parse_bytes(arg, &v) || !v)
			argp_error(state, "invalid --device-mem '%s' (e.g. 80GiB)", arg);
		c->a.steps.device_mem = v;
		break;
	case OPT_FAIL_ON_LEAK:
		c->a.gate.on = true;
		break;
	case OPT_MAX_GROWTH:
		if (parse_bytes(arg, &c->a.gate.max_growth))
			argp_error(state, "invalid --max-growth '%s' (e.g. 1MiB)", arg);
		break;
	case OPT_MAX_LIVE:
		if (parse_bytes(arg, &c->a.gate.max_live_at_exit))
			argp_error(state, "invalid --max-live-at-exit '%s' (e.g. 0, 512MiB)", arg);
		c->a.gate.has_max_live = true;
		break;
	case OPT_SITE_SKIP:
		if (c->a.nr_site_skip == ANALYSIS_SITE_SKIP_MAX)
			argp_error(state, "at most %d --site-skip", ANALYSIS_SITE_SKIP_MAX);
		if (!*arg)
			argp_error(state, "empty --site-skip");
		c->a.site_skip[c->a.nr_site_skip++] = arg;
		break;
	case OPT_FOLDED:
		c->a.out.folded_path = arg;
		break;
	case OPT_FOLDED_GROWTH:
		c->a.out.folded_growth_path = arg;
		break;
	case OPT_FOLDED_PEAK:
		c->a.out.folded_peak_path = arg;
		break;
	case OPT_PERFETTO:
		c->a.out.perfetto_path = arg;
		break;
	case OPT_SVG:
		c->a.out.svg_path = arg;
		break;
	case OPT_MEMORY_VIZ:
		c->a.out.memviz_path = arg;
		break;
	case OPT_RULES:
	case OPT_RULE:
	case OPT_PRESET: {
		char err[512];
		int ret;

		if (key == OPT_RULES && !strcmp(arg, "-")) {
			if (c->stdin_taken)
				argp_error(state, STDIN_ONCE);
			c->stdin_taken = c->rules_stdin = true;
			c->rules_stdin_at = c->rules->n;
			break;
		}
		if (key == OPT_RULES) {
			ret = load_rules(c, arg, err, sizeof(err));
		} else if (key == OPT_RULE) {
			char src[32];

			size_t before = c->rules->n;

			snprintf(src, sizeof(src), "--rule #%d", ++c->nr_rule_args);
			ret = rules__parse(c->rules, arg, strlen(arg), src, err, sizeof(err));
			/* Blank, or a comment: a rule meant and lost (an unset shell variable). */
			if (!ret && c->rules->n == before) {
				snprintf(err, sizeof(err),
					 "%s: no rule in '%s' (e.g. --rule 'persistent "
					 "site=*kv_cache*')",
					 src, arg);
				ret = -EINVAL;
			}
		} else
			ret = rules__load_preset(c->rules, arg, err, sizeof(err));
		if (ret) {
			print_rules_error(err);
			c->rules_err = ret;
		}
		break;
	}
	case ARGP_KEY_END:
		/* (every child of the three comes here: the first reads) */
		if (c->rules_stdin)
			load_rules_stdin(c);
		return ARGP_ERR_UNKNOWN;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* Each child parses with parse_analysis, which knows every key of the three. */
const struct argp cli_judging_argp = {.options = judging_options, .parser = parse_analysis};
static const struct argp gate_argp = {.options = gate_options, .parser = parse_analysis};
static const struct argp pictures_argp = {.options = pictures_options, .parser = parse_analysis};

static const struct argp_child analysis_children[] = {
    {&cli_judging_argp, 0, NULL, 0},
    {&gate_argp, 0, NULL, 0},
    {&pictures_argp, 0, NULL, 0},
    {},
};

static error_t parse_analysis_group(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	if (key != ARGP_KEY_INIT)
		return ARGP_ERR_UNKNOWN;
	cli__init_children(state, analysis_children);
	return 0;
}

const struct argp cli_analysis_argp = {.parser = parse_analysis_group,
				       .children = analysis_children};

/* ---- output: what the report writes, live or of a capture ---- */

static const struct argp_option output_options[] = {
    {"json", OPT_JSON, "FILE", 0,
     "Write NDJSON: one record per interval, one verdict per process, a summary across "
     "processes (-: standard output)",
     0},
    {"top", OPT_TOP, "N", 0, "Sites listed in interval tables (default 5)", 0},
    {"interval", 'i', "DURATION", 0,
     "Print a compact table every DURATION, default 5s, 0: none; with --step, a line per step "
     "instead, at most one per DURATION, 0: a line for every step",
     0},
    {},
};

static error_t parse_output(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case OPT_JSON:
		c->out.json_path = arg;
		break;
	case OPT_TOP:
		c->out.top = atoi(arg);
		if (c->out.top < 0)
			argp_error(state, "invalid --top '%s'", arg);
		break;
	case 'i':
		if (parse_duration_ns(arg, &c->out.interval_ns))
			argp_error(state, "invalid interval '%s' (e.g. 2s; 0: no tables)", arg);
		break;
	case ARGP_KEY_END: {
		/* Standard output carries one file whole (the text report goes to stderr then). */
		const char *paths[] = {c->out.json_path, c->a.out.folded_path,
				       c->a.out.perfetto_path, c->a.out.svg_path,
				       c->a.out.memviz_path};
		int i, n = 0;

		for (i = 0; i < 5; i++)
			n += outfile__is_stdout(paths[i]);
		if (n > 1)
			argp_error(state, "one output only can be - (standard output)");
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/*
 * The same option says what it means for the command: argp asks for each option's words
 * with the command's struct cli (a string of ours it frees, or the text it gave).
 */
static bool is_command(const void *input, const char *cmd)
{
	const struct cli *c = input;

	return c && c->cmd && !strcmp(c->cmd, cmd);
}

static char *output_help(int key, const char *text, void *input)
{
	if (!is_command(input, "report"))
		return (char *)text;
	if (key == OPT_JSON)
		return strdup("Write NDJSON: the verdict per process, and intervals; - is standard "
			      "output");
	if (key == 'i')
		return strdup("Print a compact table every DURATION of recorded time; default 0: "
			      "none");
	return (char *)text;
}

static char *output_help_all(int key, const char *text, void *input)
{
	if (is_command(input, "watch") && key == 'i')
		return strdup("Print a compact table every DURATION (default 0: none)");
	return output_help(key, text, input);
}

const struct argp cli_output_argp = {
    .options = output_options, .parser = parse_output, .help_filter = output_help_all};

/* ---- target: the running processes to trace ---- */

static const struct argp_option target_options[] = {
    {"pid", 'p', "PID[,PID...]", 0,
     "Processes to attach to (attach, record, watch; repeatable). PID@TICKS: only if PID is still "
     "the process that started TICKS clock ticks after boot (field 22 of /proc/PID/stat), "
     "against a PID reused since it was found",
     0},
    {},
};

static error_t parse_target(int key, char *arg, struct argp_state *state)
{
	if (key != 'p')
		return ARGP_ERR_UNKNOWN;
	cli__parse_pid_list(arg, state, state->input);
	return 0;
}

const struct argp cli_target_argp = {.options = target_options, .parser = parse_target};

/* ---- trace: what a live session traces, and how ---- */

static const struct argp_option trace_options[] = {
    {"follow", OPT_FOLLOW, NULL, 0,
     "Also trace every process the targets fork, and what those exec (multi-process "
     "servers, one process per rank); without it a fork is only said, and a target's own "
     "exec is traced either way",
     0},
    {"metrics", OPT_METRICS, "[ADDR]:PORT", 0,
     "Serve OpenMetrics (Prometheus) on http://ADDR:PORT/metrics while tracing; ADDR "
     "defaults to 127.0.0.1",
     0},
    {"duration", 'd', "DURATION", 0,
     "Stop after DURATION (e.g. 30s, 5m) and report; the target keeps running", 0},
    {"wait", OPT_WAIT, NULL, 0,
     "Attach even if no GPU library is loaded yet, and trace it once it is; also wait for "
     "a marker's (--step, --request, --end sym:FILE) object not loaded yet",
     0},
    {"libc", OPT_LIBC, NULL, 0,
     "Also trace the C library's malloc, calloc, realloc, posix_memalign, aligned_alloc, "
     "memalign, free, mmap and munmap (host memory beside the GPU's; costs more per call)",
     0},
    {"ringbuf-size", OPT_RINGBUF, "BYTES", 0,
     "BPF ring buffer size, a power of two (default 64MiB)", 0},
    {"stack-depth", OPT_STACK_DEPTH, "N", 0,
     "User stack frames kept per allocation (default 32, at most 120; 0: call sites only, "
     "no stack walk)",
     0},
    {"stack-entries", OPT_STACK_ENTRIES, "N", 0,
     "Distinct stacks each of the two kernel stack maps holds (default 16384; each costs "
     "(depth + 2) x 8 bytes of kernel memory)",
     0},
    {"python-depth", OPT_PYTHON_DEPTH, "N", 0,
     "Python frames kept per allocation of a Python process (CPython 3.10 to 3.13; default "
     "32, at most 64; 0: no Python frames)",
     0},
    {"unwind", OPT_UNWIND, "MODE", 0,
     "How allocation stacks are walked: auto (default), the kernel's frame-pointer walk, and "
     "where it went through an object built without frame pointers a copy of the top of the "
     "stack, unwound with the object's call frame information; fp, the walk alone; dwarf, "
     "a copy at every allocation",
     0},
    {"unwind-bytes", OPT_UNWIND_BYTES, "BYTES", 0,
     "Stack bytes --unwind auto or dwarf copies per allocation, 1KiB to 32KiB (default "
     "16KiB); the frames above them are the frame-pointer walk's",
     0},
    {"max-overhead", OPT_MAX_OVERHEAD, "PCT", 0,
     "Hold what tracing costs each process under PCT % of its CPU: above it, give up, in "
     "this order, Python frames, DWARF stack copies, native stacks (call sites only), and "
     "take them back when its rate falls; every call is still traced",
     0},
    {"uprobe-links", OPT_UPROBE_LINKS, "KIND", 0,
     "How probes are attached: auto (default: uprobe_multi links where the kernel has them, "
     "Linux 6.6+), multi, or classic (one uprobe link per probe, as on older kernels)",
     0},
    {"debug-dir", OPT_DEBUG_DIR, "DIR", 0,
     "Also look for separate debug files of stripped libraries in DIR "
     "(DIR/.build-id/xx/yyyy.debug, or the .gnu_debuglink name under DIR), before "
     "/usr/lib/debug; repeatable",
     0},
    {},
};

static error_t parse_trace(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	uint64_t v;
	char *end;
	long n;

	switch (key) {
	case OPT_FOLLOW:
		c->t.follow = true;
		break;
	case OPT_METRICS:
		/* A typo is the command line's fault: exit 2 before anything is loaded. */
		if (http__check_addr(arg))
			argp_error(state,
				   "invalid --metrics '%s' (PORT, :PORT, ADDR:PORT or [IPv6]:PORT, "
				   "a port of 0..65535)",
				   arg);
		c->t.metrics_addr = arg;
		break;
	case 'd':
		if (parse_duration_ns(arg, &c->t.duration_ns) || !c->t.duration_ns)
			argp_error(state, "invalid duration '%s' (e.g. 500ms, 30s, 5m)", arg);
		break;
	case OPT_WAIT:
		c->t.wait_for_lib = true;
		break;
	case OPT_LIBC:
		c->t.libc = true;
		break;
	case OPT_RINGBUF:
		if (parse_bytes(arg, &v) || v < 4096 || (v & (v - 1)) || v > (1ULL << 31))
			argp_error(state, "--ringbuf-size must be a power of two, 4KiB..2GiB");
		c->t.ringbuf_bytes = v;
		break;
	case OPT_STACK_DEPTH:
		n = strtol(arg, &end, 10);
		if (!*arg || *end || n < 0 || n > GL_STACK_DEPTH_MAX)
			argp_error(state, "invalid --stack-depth '%s' (0..%d; 0 disables stacks)",
				   arg, GL_STACK_DEPTH_MAX);
		c->t.stack_depth = (unsigned int)n;
		break;
	case OPT_STACK_ENTRIES:
		n = strtol(arg, &end, 10);
		if (!*arg || *end || n < 1 || n > (1L << 20))
			argp_error(state, "invalid --stack-entries '%s' (1..1048576)", arg);
		c->t.stack_entries = (unsigned int)n;
		break;
	case OPT_PYTHON_DEPTH:
		n = strtol(arg, &end, 10);
		if (!*arg || *end || n < 0 || n > GL_PY_DEPTH_MAX)
			argp_error(state,
				   "invalid --python-depth '%s' (0..%d; 0: no Python frames)", arg,
				   GL_PY_DEPTH_MAX);
		c->t.python_depth = (unsigned int)n;
		break;
	case OPT_UNWIND:
		c->t.unwind_dwarf = !strcmp(arg, "dwarf");
		c->t.unwind_auto = !strcmp(arg, "auto");
		if (strcmp(arg, "fp") && !c->t.unwind_dwarf && !c->t.unwind_auto)
			argp_error(state, "invalid --unwind '%s' (auto, fp or dwarf)", arg);
		break;
	case OPT_UNWIND_BYTES:
		if (parse_bytes(arg, &v) || v < 1024 || v > GL_USTACK_MAX || (v & 7))
			argp_error(state,
				   "invalid --unwind-bytes '%s' (1KiB..%dKiB, a multiple of 8)",
				   arg, GL_USTACK_MAX >> 10);
		c->t.unwind_bytes = (unsigned int)v;
		break;
	case OPT_MAX_OVERHEAD: {
		double pct = strtod(arg, &end);

		if (!*arg || (*end && strcmp(end, "%")) || !(pct > 0 && pct <= 100))
			argp_error(state,
				   "invalid --max-overhead '%s' (a percentage, 0 < PCT <= 100)",
				   arg);
		c->t.max_overhead = pct / 100;
		break;
	}
	case OPT_UPROBE_LINKS:
		if (!strcmp(arg, "auto"))
			c->t.uprobe_links = BPF_SETUP_LINKS_AUTO;
		else if (!strcmp(arg, "multi"))
			c->t.uprobe_links = BPF_SETUP_LINKS_MULTI;
		else if (!strcmp(arg, "classic"))
			c->t.uprobe_links = BPF_SETUP_LINKS_CLASSIC;
		else
			argp_error(state, "invalid --uprobe-links '%s' (auto, multi or classic)",
				   arg);
		break;
	case OPT_DEBUG_DIR:
		if (c->t.nr_debug_dirs == SYMBOLIZER_MAX_DEBUG_DIRS)
			argp_error(state, "at most %d --debug-dir", SYMBOLIZER_MAX_DEBUG_DIRS);
		if (!*arg)
			argp_error(state, "empty --debug-dir");
		c->t.debug_dirs[c->t.nr_debug_dirs++] = arg;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static char *trace_help(int key, const char *text, void *input)
{
	if (key == OPT_RINGBUF && is_command(input, "watch"))
		return strdup("BPF ring buffer size, a power of two (default 8MiB)");
	return (char *)text;
}

const struct argp cli_trace_argp = {
    .options = trace_options, .parser = parse_trace, .help_filter = trace_help};

/* ---- probing: where probes go (a live session, and gpuleak probes showing it) ---- */

static const struct argp_option probing_options[] = {
    {"webgpu-abi", OPT_WEBGPU_ABI, "GEN", 0,
     "webgpu.h generation of WebGPU libraries when it cannot be detected: sv, sv-tier1 "
     "or cstr",
     0},
    {"probe-at-entry", OPT_PROBE_AT_ENTRY, NULL, 0,
     "Put every probe on its function's first instruction, even one the kernel "
     "single-steps (by default such probes move past instructions that cannot matter to "
     "them: gpuleak probes shows where)",
     0},
    {"dawn-procs", OPT_DAWN_PROCS, NULL, 0,
     "Take Dawn's WebGPU entry points from its proc table, as in an object without symbols, "
     "even where wgpu* and Dawn's C++ symbols exist (no MakeError probe either: error "
     "objects are told by what they are made of)",
     0},
    {},
};

static error_t parse_probing(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case OPT_WEBGPU_ABI:
		if (wgpu_abi__parse(arg, &c->t.webgpu_abi))
			argp_error(state, "invalid --webgpu-abi '%s' (sv, sv-tier1 or cstr)", arg);
		break;
	case OPT_PROBE_AT_ENTRY:
		c->t.probe_at_entry = true;
		break;
	case OPT_DAWN_PROCS:
		c->t.dawn_procs = true;
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static char *probing_help(int key, const char *text, void *input)
{
	if (!is_command(input, "probes"))
		return (char *)text;
	if (key == OPT_WEBGPU_ABI)
		return strdup("webgpu.h generation of WebGPU libraries: sv, sv-tier1 or cstr");
	if (key == OPT_PROBE_AT_ENTRY)
		return strdup("Show the probes as --probe-at-entry places them");
	if (key == OPT_DAWN_PROCS)
		return strdup("Show Dawn's entry points from its proc table, as in an object "
			      "without symbols, even where symbols exist");
	return (char *)text;
}

const struct argp cli_probing_argp = {
    .options = probing_options, .parser = parse_probing, .help_filter = probing_help};

/* ---- common: every command ---- */

static const struct argp_option common_options[] = {
    {"verbose", 'v', NULL, 0, "More diagnostics on stderr (-vv: libbpf debug)", 0},
    {},
};

static error_t parse_common(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	(void)state;
	if (key != 'v')
		return ARGP_ERR_UNKNOWN;
	gl_verbosity++;
	return 0;
}

static char *common_help(int key, const char *text, void *input)
{
	if (key != 'v')
		return (char *)text;
	if (is_command(input, "probes"))
		return strdup("Also list objects without traced APIs");
	if (is_command(input, "report"))
		return strdup("More diagnostics on stderr");
	return (char *)text;
}

const struct argp cli_common_argp = {
    .options = common_options, .parser = parse_common, .help_filter = common_help};

/* ---- a live session: everything attach, run and record take ---- */

static const struct argp_child session_children[] = {
    {&cli_trace_argp, 0, NULL, 0},    {&cli_probing_argp, 0, NULL, 0},
    {&cli_output_argp, 0, NULL, 0},   {&cli_common_argp, 0, NULL, 0},
    {&cli_analysis_argp, 0, NULL, 0}, {},
};

static error_t parse_session(int key, char *arg, struct argp_state *state)
{
	(void)arg;
	if (key != ARGP_KEY_INIT)
		return ARGP_ERR_UNKNOWN;
	cli__init_children(state, session_children);
	return 0;
}

const struct argp cli_session_argp = {.parser = parse_session, .children = session_children};
