// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpuleak: find GPU memory leaks in a running process with eBPF uprobes.
 * The command line: one argp parser per subcommand, each filling trace options.
 */
#include <argp.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "live/attach.h"
#include "lib/exit.h"
#include "lib/log.h"
#include "probe/modules.h"
#include "probe/catalog.h"
#include "probe/proc_maps.h"
#include "live/process.h"
#include "capture/replay.h"
#include "engine/rules.h"
#include "engine/timeline.h"
#include "live/session.h"
#include "lib/units.h"
#include "lib/vec.h"
#include "probe/wgpu_abi.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.1.0"
#endif

const char *argp_program_version = "gpuleak " GPULEAK_VERSION;
const char *argp_program_bug_address = "https://github.com/gpuleak/gpuleak/issues";

enum opt_key {
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
	OPT_FOLLOW,
	OPT_METRICS,
	OPT_PROBE_AT_ENTRY,
	OPT_DEBUG_DIR,
	OPT_END,
};

struct cli {
	struct session_opts t;
	struct replay_opts r;
	struct analysis_opts a; /* attach, run, record and report: copied into t or r */
	const char *lib;
	const char *cmd;
	pid_t probe_pid; /* gpuleak probes -p */
	size_t cap_pids;
	struct rules *rules;
	int rules_err; /* a rule did not parse: exit 2 before attaching */
	int nr_rule_args;
	char *req_spec;
};

static const char top_doc[] =
    "gpuleak -- find GPU memory leaks in running processes with eBPF uprobes\n"
    "\n"
    "USAGE:\n"
    "  gpuleak attach -p PID[,PID...] [OPTIONS]  trace running processes\n"
    "  gpuleak run [OPTIONS] -- CMD ARGS   start CMD with the probes in place\n"
    "  gpuleak probes (-p PID | --lib PATH) list the traced APIs found, without attaching\n"
    "  gpuleak record -o FILE (-p PID | -- CMD ARGS)  trace and write a capture file\n"
    "  gpuleak report FILE [OPTIONS]       analyse a capture file, anywhere, without root\n"
    "\n"
    "EXAMPLES:\n"
    "  sudo gpuleak attach -p 4242 --interval 10s\n"
    "  sudo gpuleak attach -p 4242,4243 --follow --metrics :9464\n"
    "  sudo gpuleak run --json verdict.ndjson -- python3 serve.py\n"
    "  gpuleak probes --lib /usr/local/cuda/lib64/libcudart.so.13\n"
    "  sudo gpuleak record -o incident.glc -p 4242 --duration 60s\n"
    "  gpuleak report incident.glc --json verdict.ndjson\n"
    "\n"
    "EXIT STATUS: 0 done, 1 runtime error, 2 usage error, 3 --fail-on-leak found leaks.\n"
    "Run 'gpuleak COMMAND --help' for the options of a command.";

/* The analysis: the same for a live session and the report of a capture. */
static const struct argp_option analysis_options[] = {
    {NULL, 0, NULL, 0, "Rules (persistent buffers, deferred frees, ignores):", 1},
    {"rules", OPT_RULES, "FILE", 0,
     "Persistent-buffer, deferred-free and ignore rules, one per line (repeatable)", 1},
    {"rule", OPT_RULE, "TEXT", 0,
     "One rule, e.g. 'persistent site=*kv_cache* release=session-end' (repeatable)", 1},
    {"preset", OPT_PRESET, "NAME", 0,
     "Rules for a known stack: vllm, hf-transformers, ort-webgpu, llama.cpp (files in rules/)", 1},
    {NULL, 0, NULL, 0, "Steps and leak timelines:", 2},
    {"step", OPT_STEP, "SPEC", 0,
     "Step boundaries: interval:DURATION (default interval:1s), sync (CUDA syncs, WebGPU "
     "queue submits), sym:FILE:SYMBOL (each call of a function), nvtx:NAME (each NVTX "
     "range of that name)",
     2},
    {"request", OPT_REQUEST, "sym:FILE:BEGIN,END", 0,
     "Request boundaries: calls of BEGIN and END in FILE", 2},
    {"end", OPT_END, "sym:FILE:SYMBOL", 0,
     "End a process's session when it calls SYMBOL (its shutdown, say): checked as at a "
     "detach, then gpuleak lets it go",
     2},
    {"warmup-steps", OPT_WARMUP, "N", 0, "Steps before growth counts (default 3)", 2},
    {"min-growth-steps", OPT_MIN_GROWTH, "K", 0,
     "Steps a site must grow in to be a growth leak (default 5)", 2},
    {"device-mem", OPT_DEVICE_MEM, "BYTES", 0,
     "Device memory for time-to-OOM (default: from NVML when present)", 2},
    {NULL, 0, NULL, 0, "CI gate:", 3},
    {"fail-on-leak", OPT_FAIL_ON_LEAK, NULL, 0,
     "CI gate: exit 3 on a growth leak, a rule violation or --max-live-at-exit", 3},
    {"max-growth", OPT_MAX_GROWTH, "BYTES", 0,
     "Gate: growth per step a site may have (default 0: any growth leak fails)", 3},
    {"max-live-at-exit", OPT_MAX_LIVE, "BYTES", 0,
     "Gate: leaked bytes allowed at the end (persistent, ignored, init excluded)", 3},
    {NULL, 0, NULL, 0, "Pictures (written at the end):", 4},
    {"folded", OPT_FOLDED, "FILE", 0,
     "Live bytes by stack in the folded format of flamegraph.pl and speedscope", 4},
    {"perfetto", OPT_PERFETTO, "FILE", 0,
     "Chrome trace-event JSON for ui.perfetto.dev: live bytes over time, steps, leak "
     "verdicts, pending frees",
     4},
    {"svg", OPT_SVG, "FILE", 0,
     "An SVG timeline of live, persistent and pending bytes, leaking sites highlighted", 4},
    {},
};

static const struct argp_option trace_options[] = {
    {"pid", 'p', "PID[,PID...]", 0,
     "Processes to attach to (attach, record; repeatable). PID@TICKS: only if PID is still "
     "the process that started TICKS clock ticks after boot (field 22 of /proc/PID/stat), "
     "against a PID reused since it was found",
     0},
    {"follow", OPT_FOLLOW, NULL, 0,
     "Also trace every process the targets fork, and what they exec (multi-process "
     "servers, one process per rank)",
     0},
    {"metrics", OPT_METRICS, "[ADDR]:PORT", 0,
     "Serve OpenMetrics (Prometheus) on http://ADDR:PORT/metrics while tracing; ADDR "
     "defaults to 127.0.0.1",
     0},
    {"duration", 'd', "DURATION", 0,
     "Stop after DURATION (e.g. 30s, 5m) and report; the target keeps running", 0},
    {"interval", 'i', "DURATION", 0,
     "Print a compact table every DURATION (default 5s; 0 disables)", 0},
    {"json", OPT_JSON, "FILE", 0,
     "Write NDJSON: one record per interval, one verdict per process, a summary across "
     "processes",
     0},
    {"top", OPT_TOP, "N", 0, "Sites listed in interval tables (default 5)", 0},
    {"wait", OPT_WAIT, NULL, 0,
     "Attach even if no GPU library is loaded yet, and trace it once it is", 0},
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
    {"debug-dir", OPT_DEBUG_DIR, "DIR", 0,
     "Also look for separate debug files of stripped libraries in DIR "
     "(DIR/.build-id/xx/yyyy.debug, or the .gnu_debuglink name under DIR), before "
     "/usr/lib/debug; repeatable",
     0},
    {"webgpu-abi", OPT_WEBGPU_ABI, "GEN", 0,
     "webgpu.h generation of WebGPU libraries when it cannot be detected: sv, sv-tier1 "
     "or cstr",
     0},
    {"probe-at-entry", OPT_PROBE_AT_ENTRY, NULL, 0,
     "Put every probe on its function's first instruction, even one the kernel "
     "single-steps (by default such probes move past instructions that cannot matter to "
     "them: gpuleak probes shows where)",
     0},
    {"verbose", 'v', NULL, 0, "More diagnostics on stderr (-vv: libbpf debug)", 0},
    {},
};

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

static const char run_doc[] =
    "Start CMD held before its first instruction, put the probes in place, then let it run; "
    "trace until it exits.\v"
    "EXAMPLES:\n"
    "  sudo gpuleak run -- ./my_inference_server --model m.gguf\n"
    "  sudo gpuleak run --json out.ndjson --interval 0 -- python3 bench.py\n"
    "\n"
    "Ctrl-C reaches CMD too; gpuleak waits for it to exit (a second Ctrl-C stops at once).\n"
    "\n"
    "CI gate: sudo gpuleak run --step sym:./server:decode_step --fail-on-leak \\\n"
    "           --max-growth 1MiB --max-live-at-exit 0 -- ./server --requests 100\n"
    "\n"
    "EXIT STATUS: 0 done, 1 runtime error, 2 usage error, 3 --fail-on-leak found leaks.";

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
    "FILE is created with mode 0600 (it names code paths of the target); an existing FILE "
    "is only replaced with --force. Under sudo it belongs to the user who ran sudo. Blocks "
    "are written at least every second: if gpuleak is killed, FILE keeps all but the last "
    "second.\n"
    "EXIT STATUS: 0 done, 1 runtime error (also when FILE could not be written completely), "
    "2 usage error, 3 --fail-on-leak found leaks (FILE is complete).";

static const struct argp_option report_options[] = {
    {"json", OPT_JSON, "FILE", 0, "Write NDJSON: the verdict per process (and intervals)", 0},
    {"top", OPT_TOP, "N", 0, "Sites listed in interval tables (default 5)", 0},
    {"interval", 'i', "DURATION", 0,
     "Print a compact table every DURATION of recorded time (default 0: none)", 0},
    {"blocks", OPT_BLOCKS, NULL, 0, "List the file's blocks instead of analysing it", 0},
    {"verbose", 'v', NULL, 0, "More diagnostics on stderr", 0},
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
    "warning; its verdicts say \"truncated\":true.\n"
    "EXIT STATUS: 0 done (also for a truncated capture), 1 unreadable, corrupt or "
    "unsupported capture (the message names the byte offset), 2 usage error, "
    "3 --fail-on-leak found leaks.";

static const struct argp_option probes_options[] = {
    {"pid", 'p', "PID", 0, "List the traced APIs in the objects mapped by PID", 0},
    {"lib", OPT_LIB, "PATH", 0, "List the traced APIs in the ELF file PATH", 0},
    {"webgpu-abi", OPT_WEBGPU_ABI, "GEN", 0,
     "webgpu.h generation of WebGPU libraries: sv, sv-tier1 or cstr", 0},
    {"probe-at-entry", OPT_PROBE_AT_ENTRY, NULL, 0,
     "Show the probes as --probe-at-entry places them", 0},
    {"verbose", 'v', NULL, 0, "Also list objects without traced APIs", 0},
    {},
};

static const char probes_doc[] =
    "List the traced APIs found in a process or a file: name, family, file offset of the "
    "probe, binding, where the probe sits (entry; entry+N: moved past a first instruction the "
    "kernel single-steps; slow: single-stepped, could not be moved; refused) and object, "
    "then why each probe not at a plain entry is where it is. Attaches nothing.\v"
    "EXAMPLES:\n"
    "  gpuleak probes -p 4242\n"
    "  gpuleak probes --lib /usr/local/cuda/lib64/libcudart.so.13\n"
    "\n"
    "EXIT STATUS: 0 found, 1 nothing traceable or runtime error, 2 usage error.";

/* -p PID[@TICKS][,PID[@TICKS]...], appended to the list. */
static void parse_pid_list(const char *arg, struct argp_state *state, struct cli *c)
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
		if (vec_grow((void **)&c->t.pids, &c->cap_pids, c->t.nr_pids, sizeof(*c->t.pids)))
			argp_failure(state, GL_EXIT_ERROR, ENOMEM, "-p");
		c->t.pids[c->t.nr_pids++] = tp;
		p = *end ? end + 1 : end;
	}
}

static int parse_pid(const char *arg, struct argp_state *state, pid_t *pid)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(arg, &end, 10);
	if (errno || *end || v <= 0 || v > INT_MAX)
		argp_error(state, "invalid PID '%s'", arg);
	*pid = (pid_t)v;
	return 0;
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
	} else if (!strncmp(arg, "sym:", 4) && strrchr(arg + 4, ':') && strrchr(arg, ':')[1]) {
		char *colon = strrchr(arg, ':');

		o->source = STEP_MARKER;
		*colon = 0;
		c->a.step_file = arg + 4;
		c->a.step_sym = colon + 1;
		if (!*c->a.step_file)
			argp_error(state, "--step sym:FILE:SYMBOL needs a FILE");
	} else {
		argp_error(state,
			   "invalid --step '%s' (interval:DURATION, sync, sym:FILE:SYMBOL, "
			   "nvtx:NAME)",
			   arg);
	}
}

static void parse_webgpu_abi(const char *arg, struct argp_state *state, struct wgpu_abi *abi)
{
	if (wgpu_abi__parse(arg, abi))
		argp_error(state, "invalid --webgpu-abi '%s' (sv, sv-tier1 or cstr)", arg);
}

/* Rules, steps and the gate: a child parser of attach, run, record and report. */
static error_t parse_analysis(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	uint64_t v;

	switch (key) {
	case OPT_STEP:
		parse_step(state, c, arg);
		break;
	case OPT_REQUEST: {
		char *comma = NULL;

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
	case OPT_FOLDED:
		c->a.out.folded_path = arg;
		break;
	case OPT_PERFETTO:
		c->a.out.perfetto_path = arg;
		break;
	case OPT_SVG:
		c->a.out.svg_path = arg;
		break;
	case OPT_RULES:
	case OPT_RULE:
	case OPT_PRESET: {
		char err[512];
		int ret;

		if (key == OPT_RULES)
			ret = rules__load_file(c->rules, arg, err, sizeof(err));
		else if (key == OPT_RULE) {
			char src[32];

			snprintf(src, sizeof(src), "--rule #%d", ++c->nr_rule_args);
			ret = rules__parse(c->rules, arg, strlen(arg), src, err, sizeof(err));
		} else
			ret = rules__load_preset(c->rules, arg, err, sizeof(err));
		if (ret) {
			fprintf(stderr, "gpuleak: %s\n", err);
			c->rules_err = ret;
		}
		break;
	}
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_trace(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = c;
		break;
	case OPT_WEBGPU_ABI:
		parse_webgpu_abi(arg, state, &c->t.webgpu_abi);
		break;
	case 'p':
		parse_pid_list(arg, state, c);
		break;
	case OPT_FOLLOW:
		c->t.follow = true;
		break;
	case OPT_METRICS:
		c->t.metrics_addr = arg;
		break;
	case 'd':
		if (parse_duration_ns(arg, &c->t.duration_ns) || !c->t.duration_ns)
			argp_error(state, "invalid duration '%s' (e.g. 500ms, 30s, 5m)", arg);
		break;
	case 'i':
		if (parse_duration_ns(arg, &c->t.interval_ns))
			argp_error(state, "invalid interval '%s' (e.g. 2s; 0 disables)", arg);
		break;
	case OPT_JSON:
		c->t.json_path = arg;
		break;
	case OPT_TOP:
		c->t.top = atoi(arg);
		if (c->t.top < 0)
			argp_error(state, "invalid --top '%s'", arg);
		break;
	case OPT_WAIT:
		c->t.wait_for_lib = true;
		break;
	case OPT_LIBC:
		c->t.libc = true;
		break;
	case OPT_PROBE_AT_ENTRY:
		c->t.probe_at_entry = true;
		break;
	case OPT_RINGBUF:
		if (parse_bytes(arg, &v) || v < 4096 || (v & (v - 1)) || v > (1ULL << 31))
			argp_error(state, "--ringbuf-size must be a power of two, 4KiB..2GiB");
		c->t.ringbuf_bytes = v;
		break;
	case OPT_STACK_DEPTH: {
		char *end;
		long n = strtol(arg, &end, 10);

		if (!*arg || *end || n < 0 || n > GL_STACK_DEPTH_MAX)
			argp_error(state, "invalid --stack-depth '%s' (0..%d; 0 disables stacks)",
				   arg, GL_STACK_DEPTH_MAX);
		c->t.stack_depth = (unsigned int)n;
		break;
	}
	case OPT_DEBUG_DIR:
		if (c->t.nr_debug_dirs == SYMBOLIZER_MAX_DEBUG_DIRS)
			argp_error(state, "at most %d --debug-dir", SYMBOLIZER_MAX_DEBUG_DIRS);
		if (!*arg)
			argp_error(state, "empty --debug-dir");
		c->t.debug_dirs[c->t.nr_debug_dirs++] = arg;
		break;
	case OPT_STACK_ENTRIES: {
		char *end;
		long n = strtol(arg, &end, 10);

		if (!*arg || *end || n < 1 || n > (1L << 20))
			argp_error(state, "invalid --stack-entries '%s' (1..1048576)", arg);
		c->t.stack_entries = (unsigned int)n;
		break;
	}
	case 'v':
		gl_verbosity++;
		break;
	case ARGP_KEY_ARG:
		if (strcmp(c->cmd, "run") && strcmp(c->cmd, "record"))
			argp_error(state, "unexpected argument '%s'", arg);
		/* Everything from the first non-option on is the command. */
		c->t.argv = &state->argv[state->next - 1];
		state->next = state->argc;
		break;
	case ARGP_KEY_END:
		if (!strcmp(c->cmd, "attach") && !c->t.nr_pids)
			argp_error(state, "attach needs -p PID");
		if (!strcmp(c->cmd, "attach") && c->t.argv)
			argp_error(state, "attach takes -p PID, not a command (use 'gpuleak run')");
		if (!strcmp(c->cmd, "run") && !c->t.argv)
			argp_error(state, "run needs a command: gpuleak run [OPTIONS] -- CMD ARGS");
		if (!strcmp(c->cmd, "run") && c->t.nr_pids)
			argp_error(state,
				   "run starts its own process; use 'gpuleak attach -p PID'");
		if (!strcmp(c->cmd, "record") && !c->t.nr_pids == !c->t.argv)
			argp_error(state, "record needs -p PID or a command: "
					  "gpuleak record -o FILE (-p PID | -- CMD ARGS)");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

/* record: its own options, then everything attach and run take (a child parser). */
static error_t parse_record(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	uint64_t v;

	switch (key) {
	case ARGP_KEY_INIT:
		state->child_inputs[0] = c;
		break;
	case 'o':
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
	case ARGP_KEY_END:
		if (!c->t.capture_path)
			argp_error(state, "record needs -o FILE");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static error_t parse_report(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case OPT_JSON:
		c->r.json_path = arg;
		break;
	case OPT_TOP:
		c->r.top = atoi(arg);
		if (c->r.top < 0)
			argp_error(state, "invalid --top '%s'", arg);
		break;
	case 'i':
		if (parse_duration_ns(arg, &c->r.interval_ns))
			argp_error(state, "invalid interval '%s' (e.g. 2s; 0 disables)", arg);
		break;
	case ARGP_KEY_INIT:
		state->child_inputs[0] = c;
		break;
	case OPT_BLOCKS:
		c->r.list_blocks = true;
		break;
	case 'v':
		gl_verbosity++;
		break;
	case ARGP_KEY_ARG:
		if (c->r.path)
			argp_error(state, "report reads one capture file; unexpected '%s'", arg);
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

static error_t parse_probes(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;

	switch (key) {
	case 'p':
		return parse_pid(arg, state, &c->probe_pid);
	case OPT_LIB:
		c->lib = arg;
		break;
	case OPT_PROBE_AT_ENTRY:
		c->t.probe_at_entry = true;
		break;
	case OPT_WEBGPU_ABI:
		parse_webgpu_abi(arg, state, &c->t.webgpu_abi);
		break;
	case 'v':
		gl_verbosity++;
		break;
	case ARGP_KEY_ARG:
		argp_error(state, "unexpected argument '%s'", arg);
		break;
	case ARGP_KEY_END:
		if (!c->lib == !c->probe_pid)
			argp_error(state, "give exactly one of -p PID or --lib PATH");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

static int print_module(struct module *m, bool *header)
{
	int err = module__scan(m);

	if (err && gl_verbosity)
		fprintf(stderr, "%s: not readable as ELF: %s\n", m->path, strerror(-err));
	if (!m->nr_sites) {
		if (gl_verbosity && !err)
			fprintf(stderr, "%s: no traced APIs\n", m->path);
		return 0;
	}
	if (!*header) {
		printf("%-32s %-7s %-12s %-6s %-8s %s\n", "API", "FAMILY", "OFFSET", "BIND",
		       "PROBE", "OBJECT");
		*header = true;
	}
	module__print_sites(m, stdout);
	return (int)m->nr_required;
}

/* After the table: the webgpu.h generation of each WebGPU object, and why. */
static void print_wgpu_abi(struct module *m)
{
	char d[128];

	if (!m->nr_wgpu_funcs)
		return;
	printf("%s: %s (%s)\n", m->path, wgpu_abi__describe(&m->wgpu, d, sizeof(d)), m->wgpu.why);
	if (m->nr_wgpu_dropped)
		printf("%s: %u WebGPU functions not traced: generation unknown (--webgpu-abi)\n",
		       m->path, m->nr_wgpu_dropped);
}

static int cmd_probes(struct cli *c)
{
	struct modules *mods = NULL;
	struct proc_maps *m = NULL;
	bool header = false;
	int found = 0, err;
	size_t i, j;

	err = modules__new(&mods);
	if (err)
		goto cleanup;
	modules__set_wgpu_abi(mods, &c->t.webgpu_abi);
	modules__move_probes(mods, !c->t.probe_at_entry);
	if (c->lib) {
		struct module *mod = modules__get_path(mods, c->lib);

		if (!mod) {
			err = -errno;
			fprintf(stderr, "gpuleak: %s: %s\n", c->lib, strerror(errno));
			goto cleanup;
		}
		if (!mod->elf) {
			err = mod->open_err;
			fprintf(stderr, "gpuleak: %s: not an ELF object (%s)\n", c->lib,
				strerror(-err));
			goto cleanup;
		}
		found = print_module(mod, &header);
		module__print_placement(mod, stdout);
		print_wgpu_abi(mod);
		if (!found && module__has_hidden_dawn(mod))
			fprintf(
			    stderr,
			    "gpuleak: %s has Dawn (WebGPU) linked in but no wgpu* "
			    "symbols (static and stripped): its WebGPU calls cannot be traced by "
			    "name\n",
			    c->lib);
	} else {
		err = proc_maps__load(c->probe_pid, &m);
		if (err) {
			fprintf(stderr, "gpuleak: %s: %d\n",
				err == -ESRCH ? "no such process" : strerror(-err), c->probe_pid);
			goto cleanup;
		}
		for (i = 0; i < m->n; i++) {
			struct module *mod;
			bool dup = false;

			if (!m->v[i].exec || !m->v[i].path)
				continue;
			for (j = 0; j < i && !dup; j++)
				dup = m->v[j].path && m->v[j].dev == m->v[i].dev &&
				      m->v[j].ino == m->v[i].ino && m->v[j].exec;
			if (dup)
				continue;
			mod = modules__get(mods, c->probe_pid, &m->v[i]);
			if (!mod) {
				err = -ENOMEM;
				goto cleanup;
			}
			found += print_module(mod, &header);
		}
		for (i = 0; i < m->n; i++) {
			struct module *mod;
			bool dup = false;

			if (!m->v[i].exec || !m->v[i].path)
				continue;
			for (j = 0; j < i && !dup; j++)
				dup = m->v[j].path && m->v[j].dev == m->v[i].dev &&
				      m->v[j].ino == m->v[i].ino && m->v[j].exec;
			mod = dup ? NULL : modules__get(mods, c->probe_pid, &m->v[i]);
			if (mod)
				module__print_placement(mod, stdout);
			if (mod)
				print_wgpu_abi(mod);
		}
	}
	if (!found) {
		fprintf(stderr, "gpuleak: no traced GPU allocation API found in %s\n",
			c->lib ? c->lib : "the process's mapped objects");
		err = -ENOENT;
	}
cleanup:
	proc_maps__free(m);
	modules__free(mods);
	return err ? GL_EXIT_ERROR : GL_EXIT_OK;
}

int main(int argc, char **argv)
{
	static const struct argp top = {NULL, NULL, "COMMAND [ARGS...]", top_doc, NULL, NULL, NULL};
	static const struct argp analysis_argp = {
	    analysis_options, parse_analysis, NULL, NULL, NULL, NULL, NULL};
	static const struct argp_child analysis_children[] = {{&analysis_argp, 0, NULL, 0}, {}};
	static const struct argp trace_argp = {trace_options,	  parse_trace, NULL, NULL,
					       analysis_children, NULL,	       NULL};
	static const struct argp_child record_children[] = {{&trace_argp, 0, NULL, 0}, {}};
	struct argp sub = {trace_options, parse_trace, NULL, NULL, analysis_children, NULL, NULL};
	struct cli c = {};
	const char *cmd;
	char name[64];
	int ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	c.t.interval_ns = 5000000000ULL;
	c.t.top = 5;
	c.a.steps.interval_ns = 1000000000ULL;
	c.a.steps.warmup_steps = 3;
	c.a.steps.min_growth_steps = 5;
	c.t.ringbuf_bytes = 64ULL << 20;
	c.t.stack_depth = 32;
	/*
	 * A stack hashes to a bucket of a power-of-two table this size: with a few hundred
	 * distinct allocation stacks a collision in one map is likely, in both (a lost stack,
	 * counted) rare. 4.5 MiB of kernel memory per map at the default depth.
	 */
	c.t.stack_entries = 16384;
	c.r.top = 5;
	if (argc < 2 || argv[1][0] == '-') {
		/* gpuleak --help, --version, or a mistake */
		argp_parse(&top, argc, argv, 0, NULL, NULL);
		fprintf(stderr, "gpuleak: a command is needed: attach, run, probes, record or "
				"report (gpuleak --help)\n");
		return GL_EXIT_USAGE;
	}
	cmd = argv[1];
	c.cmd = cmd;
	snprintf(name, sizeof(name), "gpuleak %s", cmd);
	argv[1] = name;
	if (!strcmp(cmd, "attach")) {
		sub.args_doc = "-p PID[,PID...]";
		sub.doc = attach_doc;
	} else if (!strcmp(cmd, "run")) {
		sub.args_doc = "[OPTIONS] -- CMD [ARGS...]";
		sub.doc = run_doc;
	} else if (!strcmp(cmd, "probes")) {
		sub.options = probes_options;
		sub.children = NULL;
		sub.parser = parse_probes;
		sub.args_doc = "(-p PID | --lib PATH)";
		sub.doc = probes_doc;
	} else if (!strcmp(cmd, "record")) {
		sub.options = record_options;
		sub.parser = parse_record;
		sub.children = record_children;
		sub.args_doc = "-o FILE (-p PID | [OPTIONS] -- CMD [ARGS...])";
		sub.doc = record_doc;
	} else if (!strcmp(cmd, "report")) {
		sub.options = report_options;
		sub.parser = parse_report;
		sub.args_doc = "FILE";
		sub.doc = report_doc;
	} else {
		fprintf(stderr,
			"gpuleak: unknown command '%s' (attach, run, probes, record or "
			"report; gpuleak --help)\n",
			cmd);
		return GL_EXIT_USAGE;
	}
	if (rules__new(&c.rules)) {
		fprintf(stderr, "gpuleak: out of memory\n");
		return GL_EXIT_ERROR;
	}
	/* argp exits with argp_err_exit_status on usage errors. */
	argp_err_exit_status = GL_EXIT_USAGE;
	if (argp_parse(&sub, argc - 1, argv + 1, ARGP_IN_ORDER, NULL, &c)) {
		ret = GL_EXIT_USAGE;
		goto cleanup;
	}
	/* A malformed rule stops everything before anything is attached. */
	if (c.rules_err) {
		ret = GL_EXIT_USAGE;
		goto cleanup;
	}
	if (!strcmp(cmd, "probes")) {
		ret = cmd_probes(&c);
		goto cleanup;
	}
	if (rules__add_builtins(c.rules)) {
		fprintf(stderr, "gpuleak: built-in rules did not parse\n");
		ret = GL_EXIT_ERROR;
		goto cleanup;
	}
	c.a.rules = c.rules;
	if (!strcmp(cmd, "report")) {
		c.r.a = c.a;
		ret = replay__run(&c.r);
		goto cleanup;
	}
	c.t.a = c.a;
	ret = session__run(&c.t);
cleanup:
	rules__free(c.rules);
	free(c.req_spec);
	free(c.t.pids);
	return ret;
}
