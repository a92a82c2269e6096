// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpuleak: find GPU memory leaks in a running process with eBPF uprobes. The command line:
 * each command an argp parser of its own arguments and the option groups it takes
 * (options.h), then a live session (attach, run, record), the analysis of a capture
 * (report), or the listing of probes (probes).
 */
#include <argp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/diff_cmd.h"
#include "cli/options.h"
#include "cli/probes.h"
#include "cli/watch_cmd.h"
#include "tracker/rules.h"
#include "lib/exit.h"
#include "lib/outfile.h"
#include "lib/units.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.1.0"
#endif

const char *argp_program_version = "gpuleak " GPULEAK_VERSION;
const char *argp_program_bug_address = "https://github.com/gpuleak/gpuleak/issues";

static const char top_doc[] =
    "gpuleak -- find GPU memory leaks in running processes with eBPF uprobes\n"
    "\n"
    "USAGE:\n"
    "  gpuleak attach -p PID[,PID...] [OPTIONS]  trace running processes\n"
    "  gpuleak run [OPTIONS] -- CMD ARGS   start CMD with the probes in place\n"
    "  gpuleak probes (-p PID | --lib PATH) list the traced APIs found, without attaching\n"
    "  gpuleak record -o FILE (-p PID | -- CMD ARGS)  trace and write a capture file\n"
    "  gpuleak watch -o DIR (-p PID | -- CMD ARGS)    stay attached, write a capture at an OOM\n"
    "  gpuleak report FILE [OPTIONS]       analyse a capture file, anywhere, without root\n"
    "  gpuleak diff BASE NEW [OPTIONS]     what changed between two runs (captures or NDJSON)\n"
    "\n"
    "EXAMPLES:\n"
    "  sudo gpuleak attach -p 4242 --interval 10s\n"
    "  sudo gpuleak attach -p 4242,4243 --follow --metrics :9464\n"
    "  sudo gpuleak run --json verdict.ndjson -- python3 serve.py\n"
    "  gpuleak probes --lib /usr/local/cuda/lib64/libcudart.so.13\n"
    "  sudo gpuleak record -o incident.glc -p 4242 --duration 60s\n"
    "  sudo gpuleak watch -o /var/lib/gpuleak -p 4242\n"
    "  gpuleak report incident.glc --json verdict.ndjson\n"
    "  gpuleak diff main.glc pr.glc --step sym:server:decode_step --fail-on-regression\n"
    "\n"
    "EXIT STATUS: 0 done, 1 runtime error, 2 usage error, 3 --fail-on-leak found leaks, 4 the "
    "command failed (of run, record or watch: it exited non-zero or was killed), 5 diff "
    "--fail-on-regression found a regression; when several apply, the first of 2, 1, 3, 4 "
    "(diff: 2, 1, 5).\n"
    "Run 'gpuleak COMMAND --help' (or 'gpuleak help COMMAND') for the options of a command.";

/* ---- attach ---- */

static const char attach_doc[] =
    "Trace running processes until they exit, Ctrl-C or --duration, then print the "
    "allocations still live, grouped by call site, per process, and a summary across "
    "processes.\v"
    "EXAMPLES:\n"
    "  sudo gpuleak attach -p 4242\n"
    "  sudo gpuleak attach -p 4242 --duration 60s --json /tmp/verdict.ndjson\n"
    "  sudo gpuleak attach -p 4242 --folded live.folded --svg timeline.svg\n"
    "  sudo gpuleak attach -p 4242,4243,4244 --interval 30s\n"
    "  sudo gpuleak attach -p $(pgrep -d, -f vllm) --follow --metrics 0.0.0.0:9464\n"
    "\n"
    "SIGINT, SIGTERM and SIGHUP detach, drain and report; a target that exits or crashes "
    "is reported with its exit status.\n"
    "\n"
    "EXIT STATUS: 0 done, 1 runtime error, 2 usage error, 3 --fail-on-leak found leaks.";

static const struct argp_child attach_children[] = {
    {&cli_target_argp, 0, NULL, 0},
    {&cli_session_argp, 0, NULL, 0},
    {},
};

static error_t parse_attach(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, attach_children);
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!c->t.nr_pids)
			argp_error(state, "attach needs -p PID");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp attach_argp = {.parser = parse_attach,
					.args_doc = "-p PID[,PID...]",
					.doc = attach_doc,
					.children = attach_children};

/* ---- run ---- */

static const char run_doc[] =
    "Start CMD held before its first instruction, put the probes in place, then let it run; "
    "trace until it exits.\v"
    "EXAMPLES:\n"
    "  sudo gpuleak run -- ./my_inference_server --model m.gguf\n"
    "  sudo gpuleak run --json out.ndjson --interval 0 -- python3 bench.py\n"
    "\n"
    "A Ctrl-C typed on the terminal reaches CMD too: gpuleak waits for it to exit; a second "
    "Ctrl-C stops at once. SIGINT sent to gpuleak alone (kill -INT), SIGTERM and SIGHUP stop "
    "tracing at once: gpuleak reports, CMD runs on.\n"
    "\n"
    "CI gate: sudo gpuleak run --step sym:./server:decode_step --fail-on-leak \\\n"
    "           --max-growth 1MiB --max-live-at-exit 0 -- ./server --requests 100\n"
    "\n"
    "EXIT STATUS: 0 done, 1 runtime error, 2 usage error, 3 --fail-on-leak found leaks, 4 CMD "
    "failed (exited non-zero or was killed by a signal, said on stderr); when several "
    "apply, the first of 2, 1, 3, 4.";

/* Not an option of run (it starts its own process), but the usage error says what to do
 * instead. */
static const struct argp_option run_refused[] = {
    {"pid", 'p', "PID", OPTION_HIDDEN, NULL, 0},
    {},
};

/* Everything from the first non-option on is the command (run, record). */
static void take_command(struct argp_state *state, struct cli *c)
{
	c->t.argv = &state->argv[state->next - 1];
	state->next = state->argc;
}

static const struct argp_child run_children[] = {
    {&cli_session_argp, 0, NULL, 0},
    {},
};

static error_t parse_run(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, run_children);
		break;
	case 'p':
		cli__parse_pid_list(arg, state, c);
		break;
	case ARGP_KEY_ARG:
		take_command(state, c);
		break;
	case ARGP_KEY_END:
		if (!c->t.argv)
			argp_error(state, "run needs a command: gpuleak run [OPTIONS] -- CMD ARGS");
		if (c->t.nr_pids)
			argp_error(state,
				   "run starts its own process; use 'gpuleak attach -p PID'");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp run_argp = {.options = run_refused,
				     .parser = parse_run,
				     .args_doc = "[OPTIONS] -- CMD [ARGS...]",
				     .doc = run_doc,
				     .children = run_children};

/* ---- record ---- */

static const struct argp_option record_options[] = {
    {"output", 'o', "FILE", 0, "Write the capture to FILE (required; mode 0600)", 0},
    {"force", OPT_FORCE, NULL, 0, "Replace FILE if it exists", 0},
    {"block-size", OPT_BLOCK_SIZE, "BYTES", 0,
     "Write a block once this many bytes of encoded records are buffered (default 1MiB; "
     "blocks are also written every second)",
     0},
    {},
};

static const char record_doc[] =
    "Trace like 'run' (-- CMD ARGS) or 'attach' (-p PID), with the same options and live "
    "output, and also write every record to a capture file, with the command line, map "
    "snapshots and the names of the call sites: 'gpuleak report' analyses it later, on any "
    "machine, without root and without the target's binaries.\v"
    "EXAMPLES:\n"
    "  sudo gpuleak record -o incident.glc -p 4242 --duration 60s\n"
    "  sudo gpuleak record -o run.glc --json live.ndjson -- python3 serve.py\n"
    "  gpuleak report incident.glc\n"
    "\n"
    "FILE is created with mode 0600 (it names code paths of the target), never through a "
    "symlink; an existing regular FILE is only replaced with --force, once the new capture "
    "is finished; until then the new one is written beside FILE. Under sudo it belongs to "
    "the user who ran sudo. Blocks are written at least every second: if gpuleak is killed, FILE "
    "(or "
    "with --force the file beside it) keeps all but the last second.\n"
    "EXIT STATUS: 0 done, 1 runtime error (also when FILE could not be written completely), "
    "2 usage error, 3 --fail-on-leak found leaks (FILE is complete), 4 CMD failed (exited "
    "non-zero or was killed by a signal); when several apply, the first of 2, 1, 3, 4.";

static const struct argp_child record_children[] = {
    {&cli_target_argp, 0, NULL, 0},
    {&cli_session_argp, 0, NULL, 0},
    {},
};

static error_t parse_record(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, record_children);
		break;
	case 'o':
		/* The writer rewrites the header at the end: a pipe cannot take that. */
		if (!strcmp(arg, "-"))
			argp_error(state,
				   "-o -: a capture is a file (its header is rewritten at the "
				   "end); write one, then gzip or copy it");
		c->t.capture_path = arg;
		break;
	case OPT_FORCE:
		c->t.capture.force = true;
		break;
	case OPT_BLOCK_SIZE:
		if (parse_bytes(arg, &v) || v < 64 || v > (16ULL << 20))
			argp_error(state, "--block-size must be 64B..16MiB");
		c->t.capture.block_bytes = v;
		break;
	case ARGP_KEY_ARG:
		take_command(state, c);
		break;
	case ARGP_KEY_END:
		if (c->t.nr_pids && c->t.argv)
			argp_error(state, "record takes -p PID or a command, not both: "
					  "gpuleak record -o FILE (-p PID | -- CMD ARGS)");
		if (!c->t.nr_pids && !c->t.argv)
			argp_error(state, "record needs -p PID or a command: "
					  "gpuleak record -o FILE (-p PID | -- CMD ARGS)");
		if (!c->t.capture_path)
			argp_error(state, "record needs -o FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp record_argp = {.options = record_options,
					.parser = parse_record,
					.args_doc = "-o FILE (-p PID | [OPTIONS] -- CMD [ARGS...])",
					.doc = record_doc,
					.children = record_children};

/* ---- report ---- */

static const struct argp_option report_options[] = {
    {"blocks", OPT_BLOCKS, NULL, 0, "List the file's blocks instead of analysing it", 0},
    {},
};

static const char report_doc[] =
    "Analyse a capture file written by 'gpuleak record': the analysis and the report of a "
    "live session, replayed from the recorded events, with the analysis options given "
    "here (rules, steps, gate), which may differ from the recording's. Needs no "
    "privileges, no target and none of its binaries: call sites are named from the "
    "capture.\v"
    "EXAMPLES:\n"
    "  gpuleak report incident.glc\n"
    "  gpuleak report incident.glc --preset vllm --step sync --json verdict.ndjson\n"
    "  gpuleak report incident.glc --fail-on-leak --max-live-at-exit 0\n"
    "  gpuleak report incident.glc --perfetto trace.json --folded live.folded\n"
    "  gpuleak report --blocks incident.glc\n"
    "\n"
    "Steps offline: interval:DURATION and sync work on any capture; sym:FILE:SYMBOL and "
    "--request use the marker calls the recording made (record with the same --step or "
    "--request); nvtx:NAME needs a recording made with --step nvtx:NAME. A capture cut "
    "short (recorder killed, disk full) is reported up to its last whole block, with a "
    "warning; its verdicts say \"truncated\":true. A damaged one, whose CRC does not match, is "
    "reported up to the damaged block, named by number and offset, and exits 1. FILE - is "
    "standard input (zcat x.glc.gz | gpuleak report -).\n"
    "EXIT STATUS: 0 done (also for a truncated capture), 1 unreadable, corrupt or "
    "unsupported capture (the message names the byte offset), or an output not written, "
    "2 usage error, 3 --fail-on-leak found leaks.";

static const struct argp_child report_children[] = {
    {&cli_output_argp, 0, NULL, 0},
    {&cli_common_argp, 0, NULL, 0},
    {&cli_analysis_argp, 0, NULL, 0},
    {},
};

static error_t parse_report(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, report_children);
		break;
	case OPT_BLOCKS:
		c->r.list_blocks = true;
		break;
	case ARGP_KEY_ARG:
		if (c->r.path)
			argp_error(state, "report reads one capture file; unexpected '%s'", arg);
		/* (--rules - is read after the options: nothing read yet) */
		if (!strcmp(arg, "-") && c->stdin_taken)
			argp_error(state, "standard input is read once: one --rules - or report -");
		c->stdin_taken |= !strcmp(arg, "-");
		c->r.path = arg;
		break;
	case ARGP_KEY_END:
		if (!c->r.path)
			argp_error(state, "report needs a capture file: gpuleak report FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static const struct argp report_argp = {.options = report_options,
					.parser = parse_report,
					.args_doc = "FILE",
					.doc = report_doc,
					.children = report_children};

/* ---- the commands ---- */

/* The analysis's rules: the user's and the built-ins. GL_EXIT_OK or what to exit with. */
static int finish_rules(struct cli *c)
{
	/* A malformed rule stops everything before anything is attached. */
	if (c->rules_err)
		return GL_EXIT_USAGE;
	if (rules__add_builtins(c->rules)) {
		fprintf(stderr, "gpuleak: built-in rules did not parse\n");
		return GL_EXIT_ERROR;
	}
	c->a.rules = c->rules;
	return GL_EXIT_OK;
}

static int run_session(struct cli *c)
{
	int ret = finish_rules(c);

	if (ret)
		return ret;
	c->t.a = c->a;
	c->t.json_path = c->out.json_path;
	c->t.top = c->out.top;
	c->t.interval_ns = c->out.interval_ns;
	return session__run(&c->t);
}

static int run_report(struct cli *c)
{
	int ret = finish_rules(c);

	if (ret)
		return ret;
	c->r.a = c->a;
	c->r.json_path = c->out.json_path;
	c->r.top = c->out.top;
	c->r.interval_ns = c->out.interval_ns;
	return replay__run(&c->r);
}

static int run_watch(struct cli *c)
{
	c->t.watch = &c->w;
	return run_session(c);
}

static int run_diff(struct cli *c)
{
	int ret = finish_rules(c);

	return ret ? ret : diff_cmd__run(c);
}

static int run_probes(struct cli *c)
{
	/* A malformed rule is a usage error even where rules mean nothing. */
	return c->rules_err ? GL_EXIT_USAGE : probes__run(c);
}

static const struct command {
	const char *name;
	const struct argp *argp;
	int (*run)(struct cli *c);
	uint64_t interval_ns; /* --interval's default */
} commands[] = {
    {"attach", &attach_argp, run_session, 5000000000ULL},
    {"run", &run_argp, run_session, 5000000000ULL},
    {"probes", &cli_probes_argp, run_probes, 0},
    {"record", &record_argp, run_session, 5000000000ULL},
    {"report", &report_argp, run_report, 0},
    /* a recorder left on a node prints nothing until a trigger: no tables by default */
    {"watch", &cli_watch_argp, run_watch, 0},
    {"diff", &cli_diff_argp, run_diff, 0},
};

static const struct command *command_named(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

/*
 * --help as wide as the tree's 100 columns, the text from column 30: argp's 79 columns broke
 * nearly every option's words mid-phrase. Set for argp only (the user's ARGP_HELP_FMT wins);
 * the variable is gone again before anything runs, so the command never inherits it.
 */
static bool help_fmt_set;

static void help_format(void)
{
	if (getenv("ARGP_HELP_FMT"))
		return;
	help_fmt_set = !setenv("ARGP_HELP_FMT", "rmargin=100,opt-doc-col=30", 0);
}

static void help_format_done(void)
{
	if (help_fmt_set)
		unsetenv("ARGP_HELP_FMT");
	help_fmt_set = false;
}

static void set_defaults(struct cli *c, const struct command *cmd)
{
	c->cmd = cmd->name;
	c->out.top = 5;
	c->d.top = 20;
	c->out.interval_ns = cmd->interval_ns;
	c->a.steps.interval_ns = 1000000000ULL;
	c->a.steps.warmup_steps = 3;
	c->a.steps.min_growth_steps = 5;
	c->t.ringbuf_bytes = 64ULL << 20;
	c->t.stack_depth = 32;
	c->t.python_depth = 32;
	c->t.unwind_bytes = 16 << 10;
	c->t.unwind_auto = true;
	/*
	 * A stack hashes to a bucket of a power-of-two table this size: with a few hundred
	 * distinct allocation stacks a collision in one map is likely, in both (a lost stack,
	 * counted) rare. 4.5 MiB of kernel memory per map at the default depth.
	 */
	c->t.stack_entries = 16384;
	if (!strcmp(cmd->name, "watch"))
		cli__watch_defaults(c);
}

/* At every exit (argp's too): what could not reach standard output is an error, exit 1. */
static void close_stdout(void)
{
	int err = outfile__stdout_close();

	if (err) {
		fprintf(stderr, "gpuleak: writing standard output: %s\n", strerror(-err));
		_exit(GL_EXIT_ERROR);
	}
}

int main(int argc, char **argv)
{
	static const struct argp top = {.args_doc = "COMMAND [ARGS...]", .doc = top_doc};
	const struct command *cmd;
	struct cli c = {};
	char name[64];
	int ret;

	/* Line-buffered, its write errors kept for close_stdout. */
	if (!outfile__stdout_init())
		atexit(close_stdout);
	help_format();
	/* gpuleak help [COMMAND]: the same as --help, for those who type it that way. */
	if (argc >= 2 && !strcmp(argv[1], "help")) {
		/* --help prints and exits 0 */
		if (argc == 2)
			return argp_parse(&top, 2, (char *[]){argv[0], "--help", NULL}, 0, NULL,
					  NULL)
				   ? GL_EXIT_USAGE
				   : GL_EXIT_OK;
		cmd = command_named(argv[2]);
		if (!cmd || argc > 3) {
			fprintf(stderr,
				"gpuleak: help takes one command: attach, run, probes, record, "
				"report, diff or watch (gpuleak help COMMAND)\n");
			return GL_EXIT_USAGE;
		}
		snprintf(name, sizeof(name), "gpuleak %s", cmd->name);
		set_defaults(&c, cmd);
		return argp_parse(cmd->argp, 2, (char *[]){name, "--help", NULL}, 0, NULL, &c)
			   ? GL_EXIT_USAGE
			   : GL_EXIT_OK;
	}
	if (argc < 2 || argv[1][0] == '-') {
		/* gpuleak --help, --version, or a mistake */
		argp_parse(&top, argc, argv, 0, NULL, NULL);
		fprintf(stderr,
			"gpuleak: a command is needed: attach, run, probes, record, report, "
			"diff or watch (gpuleak --help)\n");
		return GL_EXIT_USAGE;
	}
	cmd = command_named(argv[1]);
	if (!cmd) {
		fprintf(stderr,
			"gpuleak: unknown command '%s' (attach, run, probes, record, report, "
			"diff or watch; gpuleak --help)\n",
			argv[1]);
		return GL_EXIT_USAGE;
	}
	set_defaults(&c, cmd);
	/* argp names the command in its messages: "gpuleak run: ..." */
	snprintf(name, sizeof(name), "gpuleak %s", cmd->name);
	argv[1] = name;
	if (rules__new(&c.rules)) {
		fprintf(stderr, "gpuleak: out of memory\n");
		return GL_EXIT_ERROR;
	}
	/* argp exits with argp_err_exit_status on usage errors. */
	argp_err_exit_status = GL_EXIT_USAGE;
	if (argp_parse(cmd->argp, argc - 1, argv + 1, ARGP_IN_ORDER, NULL, &c)) {
		ret = GL_EXIT_USAGE;
	} else {
		help_format_done();
		ret = cmd->run(&c);
	}
	rules__free(c.rules);
	free(c.req_spec);
	free(c.t.pids);
	return ret;
}
