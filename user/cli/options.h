/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The command line's options, each defined once, in groups (argp children) that the
 * commands are made of:
 *
 *   analysis  rules, steps, the gate, pictures     attach run record report
 *     judging   rules and steps alone              attach run record report diff
 *   output    --json, --top, --interval            attach run record report
 *   common    -v                                   attach run record report probes
 *   trace     what and how to trace                attach run record
 *   probing   where probes go                      attach run record        probes
 *   target    -p PID[,PID...]                      attach     record
 *
 * (session: trace, probing, output, common and analysis together, what every live session
 * takes), and each command's own: record's -o/--force/--block-size, report's --blocks and
 * FILE, probes' -p/--lib, run's and record's CMD ARGS. A command's --help lists exactly the
 * options it takes; where an option's words differ by command, its group's help_filter says
 * them.
 */
#ifndef GPULEAK_CLI_OPTIONS_H
#define GPULEAK_CLI_OPTIONS_H

#include <argp.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include "offline/replay.h"
#include "engine/analysis.h"
#include "diff/diff.h"
#include "live/session.h"

struct rules;

/* What the output group sets, for a live session or a report alike. */
struct cli_output {
	const char *json_path;
	int top;
	uint64_t interval_ns;
};

/* What diff takes beside the analysis's rules and steps. */
struct cli_diff {
	const char *base, *new; /* the two inputs */
	const char *json_path;
	int top;
	struct diff_opts o;
	bool analysis_given; /* rules or step options: they apply to captures only */
};

/* Everything parsed; each group writes its part. */
struct cli {
	const char *cmd;
	struct session_opts t;	/* attach, run, record, watch */
	struct watch_opts w;	/* watch */
	struct replay_opts r;	/* report */
	struct analysis_opts a; /* into t.a or r.a */
	struct cli_output out;	/* into t or r */
	struct cli_diff d;	/* diff */
	const char *lib;	/* probes --lib */
	pid_t probe_pid;	/* probes -p */
	bool kernel;		/* probes --kernel: what this kernel offers */
	bool kernel_json;	/* --kernel=json */
	bool verifier;		/* probes --kernel --verifier */
	const char *bpf_object; /* --bpf-object: another build of the BPF object */
	size_t cap_pids;
	struct rules *rules;
	int rules_err;	  /* a rule did not parse: exit 2 before attaching */
	bool stdin_taken; /* --rules - or report - named it: the other cannot */
	/* --rules - is read once the command line is known to be right (nothing read from a
	 * standard input another argument also wanted); its rules go where it was given. */
	bool rules_stdin;
	size_t rules_stdin_at;
	int nr_rule_args;
	char *req_spec;
};

/* The groups, as argp children (input: the struct cli). */
extern const struct argp cli_analysis_argp, cli_output_argp, cli_target_argp, cli_trace_argp,
    cli_probing_argp, cli_common_argp;
/* Of the analysis: how memory is judged (rules, steps), without the gate and pictures. */
extern const struct argp cli_judging_argp;
/* trace, probing, output, common and analysis: what every live session takes. */
extern const struct argp cli_session_argp;

/* The options of each command's own parser. */
enum cli_key {
	OPT_JSON = 0x100,
	OPT_TOP,
	OPT_WAIT,
	OPT_RINGBUF,
	OPT_LIB,
	OPT_LIBC,
	OPT_RULES,
	OPT_RULE,
	OPT_PRESET,
	OPT_STEP,
	OPT_REQUEST,
	OPT_WARMUP,
	OPT_MIN_GROWTH,
	OPT_DEVICE_MEM,
	OPT_FAIL_ON_LEAK,
	OPT_MAX_GROWTH,
	OPT_MAX_LIVE,
	OPT_WEBGPU_ABI,
	OPT_FORCE,
	OPT_BLOCK_SIZE,
	OPT_BLOCKS,
	OPT_STACK_DEPTH,
	OPT_STACK_ENTRIES,
	OPT_FOLDED,
	OPT_PERFETTO,
	OPT_SVG,
	OPT_MEMORY_VIZ,
	OPT_FOLLOW,
	OPT_METRICS,
	OPT_PROBE_AT_ENTRY,
	OPT_DEBUG_DIR,
	OPT_END,
	OPT_DAWN_PROCS,
	OPT_PID_BASE,
	OPT_PID_NEW,
	OPT_COMM,
	OPT_FAIL_ON_REGRESSION,
	OPT_MAX_GROWTH_INCREASE,
	OPT_MAX_LIVE_INCREASE,
	OPT_PYTHON_DEPTH,
	OPT_UNWIND,
	OPT_UNWIND_BYTES,
	OPT_SITE_SKIP,
	OPT_FOLDED_GROWTH,
	OPT_FOLDED_PEAK,
	OPT_UPROBE_LINKS,
	OPT_MAX_OVERHEAD,
	OPT_KERNEL,
	OPT_VERIFIER,
	OPT_BPF_OBJECT,
};

/* Hand the struct cli to every one of a command's children (its parser's ARGP_KEY_INIT). */
void cli__init_children(struct argp_state *state, const struct argp_child *children);
/* -p PID[@TICKS][,PID[@TICKS]...], appended to c->t.pids. */
void cli__parse_pid_list(const char *arg, struct argp_state *state, struct cli *c);
/* One PID. */
void cli__parse_pid(const char *arg, struct argp_state *state, pid_t *pid);

#endif
