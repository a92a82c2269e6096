// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpuleak diff (cli/diff_cmd.h): the options, each input read as what it is (a capture by
 * its magic, NDJSON by its first character), the comparison, its text and NDJSON, the exit
 * status.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "capture/capture.h"
#include "offline/diff_capture.h"
#include "cli/diff_cmd.h"
#include "cli/options.h"
#include "diff/diff_verdicts.h"
#include "lib/exit.h"
#include "lib/infile.h"
#include "lib/log.h"
#include "lib/outfile.h"
#include "lib/units.h"
#include "output/diff_report.h"

static const struct argp_option diff_options[] = {
    {NULL, 0, NULL, 0, "Output:", 5},
    {"json", OPT_JSON, "FILE", 0,
     "Write NDJSON for CI: a diff_process record per process pair, then a diff record "
     "(docs/gpuleak-diff.schema.json); -: standard output (the text goes to standard error)",
     5},
    {"top", OPT_TOP, "N", 0, "Site rows per process pair (default 20; 0: all)", 5},
    {NULL, 0, NULL, 0, "Which processes (default: paired by command and rank):", 6},
    {"pid-base", OPT_PID_BASE, "PID", 0,
     "Compare this process of BASE (with the process of NEW of its command and rank, or "
     "--pid-new)",
     6},
    {"pid-new", OPT_PID_NEW, "PID", 0,
     "Compare this process of NEW (with the process of BASE of its command and rank, or "
     "--pid-base)",
     6},
    {"comm", OPT_COMM, "NAME", 0, "Only the processes of this command (its comm)", 6},
    {NULL, 0, NULL, 0, "Regression gate:", 7},
    {"fail-on-regression", OPT_FAIL_ON_REGRESSION, NULL, 0,
     "Exit 5 when a process of NEW regressed against BASE: growth per step up by more than "
     "--max-growth-increase, live bytes not retained up by more than --max-live-increase, "
     "ended early (a crash, a capture cut short) where BASE did not, missing from NEW, or not "
     "comparable",
     7},
    {"max-growth-increase", OPT_MAX_GROWTH_INCREASE, "BYTES", 0,
     "Gate: growth per step a process may gain, its growing sites summed (default 0)", 7},
    {"max-live-increase", OPT_MAX_LIVE_INCREASE, "BYTES", 0,
     "Gate: live bytes not retained (no rule, not init) a process may gain where the runs are "
     "compared (default: not checked)",
     7},
    {},
};

static const char diff_doc[] =
    "Compare two runs of a program, BASE (the old build, main) and NEW (the change): per "
    "process, the growth per step, live bytes at the end and at the peak, memory retained "
    "by init, and per call site the same, largest difference first. BASE and NEW are "
    "captures (gpuleak record), analysed here with the options given (as 'gpuleak report' "
    "would), or NDJSON verdicts (gpuleak run/record/report --json), judged when they were "
    "written; one of each compares what both have. One of them may be -, standard "
    "input.\v"
    "EXAMPLES:\n"
    "  gpuleak diff main.glc pr.glc --step sym:server:decode_step\n"
    "  gpuleak diff main.ndjson pr.ndjson --fail-on-regression --max-growth-increase 64KiB\n"
    "  gpuleak diff main.glc pr.glc --preset vllm --request sym:server:begin,end --json d.ndjson\n"
    "  gpuleak diff a.glc b.glc --pid-base 4242 --pid-new 5151\n"
    "\n"
    "Processes are paired by command and rank (their order by pid among the processes of "
    "one command); sites by API and function and module (Python frames: function and file), "
    "WebGPU objects by label, never by address, the call-site offset breaking ties. Runs are "
    "compared at the end when both closed as many steps and ended the same way, otherwise "
    "at the last step both completed (with --request: where both had completed as many "
    "requests), so a run that crashed or ran shorter is never read as less memory.\n"
    "EXIT STATUS: 0 done, 1 an input unreadable, corrupt or damaged (the message says "
    "where; a damaged capture is compared up to its damage) or an output not written, 2 "
    "usage error, 5 --fail-on-regression found a regression (1 and 2 take precedence).";

static const struct argp_child diff_children[] = {
    {&cli_judging_argp, 0, NULL, 0},
    {&cli_common_argp, 0, NULL, 0},
    {},
};

static void parse_size(struct argp_state *state, const char *opt, const char *arg, uint64_t *out)
{
	if (parse_bytes(arg, out))
		argp_error(state, "invalid %s '%s' (e.g. 0, 64KiB, 1MiB)", opt, arg);
}

static error_t parse_diff(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	char *end;
	long v;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, diff_children);
		break;
	case OPT_JSON:
		c->d.json_path = arg;
		break;
	case OPT_TOP:
		errno = 0;
		v = strtol(arg, &end, 10);
		if (errno || !*arg || *end || v < 0 || v > 1000000)
			argp_error(state, "invalid --top '%s' (0: all)", arg);
		c->d.top = (int)v;
		break;
	case OPT_PID_BASE:
		cli__parse_pid(arg, state, &c->d.o.pid_base);
		break;
	case OPT_PID_NEW:
		cli__parse_pid(arg, state, &c->d.o.pid_new);
		break;
	case OPT_COMM:
		if (!*arg || strlen(arg) > 15)
			argp_error(state, "--comm takes a command name of 1 to 15 bytes, as "
					  "/proc/PID/comm has it");
		c->d.o.comm = arg;
		break;
	case OPT_FAIL_ON_REGRESSION:
		c->d.o.gate.on = true;
		break;
	case OPT_MAX_GROWTH_INCREASE:
		parse_size(state, "--max-growth-increase", arg, &c->d.o.gate.max_growth_increase);
		break;
	case OPT_MAX_LIVE_INCREASE:
		parse_size(state, "--max-live-increase", arg, &c->d.o.gate.max_live_increase);
		c->d.o.gate.has_max_live = true;
		break;
	case ARGP_KEY_ARG:
		if (!c->d.base)
			c->d.base = arg;
		else if (!c->d.new)
			c->d.new = arg;
		else
			argp_error(state, "diff compares two runs; unexpected '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!c->d.new)
			argp_error(state, "diff needs two runs: gpuleak diff BASE NEW");
		if (!strcmp(c->d.base, "-") && !strcmp(c->d.new, "-"))
			argp_error(state,
				   "standard input (-) can be one of BASE and NEW, not both");
		if (c->d.o.comm && (c->d.o.pid_base || c->d.o.pid_new))
			argp_error(state, "--comm chooses by command, --pid-base/--pid-new by pid: "
					  "give one or the other");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp cli_diff_argp = {.options = diff_options,
				   .parser = parse_diff,
				   .args_doc = "BASE NEW",
				   .doc = diff_doc,
				   .children = diff_children};

/*
 * One input, opened as every file a user names (lib/infile.h: "-" is standard input, a FIFO
 * by name is refused): a capture (by its magic) or NDJSON verdicts (a record starts with
 * '{'). 0, or -errno with the reason printed; *damaged: a capture analysed up to its damage.
 */
static int load(struct cli *c, const char *path, struct diff_run **out, bool *damaged)
{
	const char *name = infile__name(path);
	char why[256], err[512], head[4096];
	const char *p;
	size_t n, i;
	char *buf = NULL;
	bool stream;
	FILE *f = NULL;
	ssize_t got;
	int fd, ret;

	*out = NULL;
	*damaged = false;
	ret = infile__open(path, &fd, &stream, why, sizeof(why));
	if (ret) {
		pr_err("%s: %s\n", name, why);
		return ret;
	}
	if (stream) {
		ret = infile__read_all(fd, SIZE_MAX, &buf, &n);
		p = buf;
	} else {
		got = pread(fd, head, sizeof(head), 0);
		ret = got < 0 ? -errno : 0;
		n = got < 0 ? 0 : (size_t)got;
		p = head;
	}
	if (ret) {
		pr_err("%s: %s\n", name, strerror(-ret));
		goto cleanup;
	}
	if (n >= sizeof(CAPTURE_MAGIC) - 1 &&
	    !memcmp(p, CAPTURE_MAGIC, sizeof(CAPTURE_MAGIC) - 1)) {
		close(fd);
		fd = -1;
		ret = diff_capture__load(path, stream ? buf : NULL, stream ? n : 0, &c->a, out,
					 damaged);
		goto cleanup;
	}
	for (i = 0; i < n && strchr(" \t\r\n", p[i]); i++)
		;
	if (i == n || p[i] != '{') {
		pr_err("%s: offset %zu: neither a capture (gpuleak record -o) nor NDJSON verdicts "
		       "(gpuleak run/record/report --json)\n",
		       name, i);
		ret = -EINVAL;
		goto cleanup;
	}
	f = stream ? fmemopen(buf, n, "r") : fdopen(fd, "r");
	if (!f) {
		ret = -errno;
		pr_err("%s: %s\n", name, strerror(errno));
		goto cleanup;
	}
	if (!stream)
		fd = -1; /* the stream's now */
	ret = diff_verdicts__load(f, name, out, err, sizeof(err));
	if (ret)
		pr_err("%s\n", err);
cleanup:
	if (f)
		fclose(f);
	if (fd >= 0)
		close(fd);
	free(buf);
	return ret;
}

/* What the analysis options cannot change: the verdicts of NDJSON inputs. */
static void warn_judged(const struct cli *c, const struct diff_run *b, const struct diff_run *n)
{
	if (!c->d.analysis_given || (b->source == DIFF_CAPTURE && n->source == DIFF_CAPTURE))
		return;
	if (b->source == DIFF_NDJSON && n->source == DIFF_NDJSON)
		pr_warn("BASE and NEW are NDJSON verdicts, judged when they were written: rules "
			"and step options change nothing here\n");
	else
		pr_warn("%s is NDJSON verdicts, judged when they were written: rules and step "
			"options apply to %s only\n",
			b->source == DIFF_NDJSON ? "BASE" : "NEW",
			b->source == DIFF_NDJSON ? "NEW" : "BASE");
}

int diff_cmd__run(struct cli *c)
{
	struct diff_run *b = NULL, *n = NULL;
	struct diff_result *r = NULL;
	struct outfile *json = NULL;
	/* --json -: the records alone on standard output, the text on standard error */
	FILE *text = outfile__is_stdout(c->d.json_path) ? stderr : stdout;
	bool damaged_b = false, damaged_n = false;
	char why[256];
	int err, ret = GL_EXIT_ERROR;

	c->d.o.by_request = c->a.steps.requests;
	c->d.o.warmup_steps = c->a.steps.warmup_steps;
	err = load(c, c->d.base, &b, &damaged_b);
	if (!err)
		err = load(c, c->d.new, &n, &damaged_n);
	if (err)
		goto cleanup;
	warn_judged(c, b, n);
	err = diff__compare(b, n, &c->d.o, &r);
	if (err == -ESRCH) {
		bool in_b = c->d.o.pid_base && !diff__has_pid(b, c->d.o.pid_base);

		pr_err("no process with pid %d in %s (gpuleak report FILE lists its processes)\n",
		       in_b ? c->d.o.pid_base : c->d.o.pid_new, in_b ? b->path : n->path);
		goto cleanup;
	}
	if (err) {
		pr_err("out of memory\n");
		goto cleanup;
	}
	if (!r->nr_procs) {
		pr_err("no processes to compare%s%s\n", c->d.o.comm ? " of command " : "",
		       c->d.o.comm ? c->d.o.comm : "");
		goto cleanup;
	}
	if (c->d.json_path) {
		err = outfile__open(c->d.json_path, OUTFILE_REPLACE, &json, why, sizeof(why));
		if (err) {
			pr_err("cannot write %s: %s\n", c->d.json_path, why);
			goto cleanup;
		}
		diff_ndjson__write(outfile__stream(json), r);
		err = outfile__commit(json);
		json = NULL;
		if (err) {
			pr_err("writing %s: %s\n", c->d.json_path, strerror(-err));
			goto cleanup;
		}
	}
	diff_text__print(text, r, c->d.top);
	/* A damaged capture was compared up to its damage, and said: as report, exit 1. */
	if (damaged_b || damaged_n)
		goto cleanup;
	ret = r->regression ? GL_EXIT_REGRESSION : GL_EXIT_OK;
cleanup:
	outfile__abort(json);
	diff_result__free(r);
	diff_run__free(b);
	diff_run__free(n);
	return ret;
}
