// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * gpuleak watch: its own options (the output directory, the ring, the triggers, the bounds on
 * the disk) on top of what every live session takes, attached to -p PIDs or starting
 * -- CMD ARGS. The session is a live session with a flight recorder (live/watch.h).
 */
#include <argp.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "cli/options.h"
#include "cli/watch_cmd.h"
#include "lib/units.h"

/* Keys of watch's own options (beyond enum cli_key). */
enum {
	OPT_WATCH_RING = 0x300,
	OPT_WATCH_RING_TIME,
	OPT_WATCH_ON,
	OPT_WATCH_LIVE_ABOVE,
	OPT_WATCH_OOM_WITHIN,
	OPT_WATCH_COOLDOWN,
	OPT_WATCH_MAX_CAPTURES,
	OPT_WATCH_MAX_DISK,
	OPT_WATCH_NO_VERIFY,
};

static const struct argp_option watch_options[] = {
    {"output", 'o', "DIR", 0,
     "Write captures into DIR (required; made if missing), each named "
     "gpuleak-TIME-PID-CAUSE.glc, mode 0600",
     0},
    {"ring", OPT_WATCH_RING, "BYTES", 0,
     "Keep this many bytes of the most recent records, encoded (default 32MiB, a few bytes a "
     "call)",
     0},
    {"ring-time", OPT_WATCH_RING_TIME, "DURATION", 0,
     "And no records older than DURATION (default: the bytes alone bound the window)", 0},
    {"on", OPT_WATCH_ON, "LIST", 0,
     "Triggers: oom (an allocation out of memory, a WebGPU error object), oom-kill (the "
     "kernel's OOM killer), fault (death by SIGSEGV, SIGABRT, ...), signal (SIGUSR1 to "
     "gpuleak); all, none (default all)",
     0},
    {"live-above", OPT_WATCH_LIVE_ABOVE, "BYTES", 0,
     "Also a capture when a process's live bytes reach BYTES (again once below it)", 0},
    {"oom-within", OPT_WATCH_OOM_WITHIN, "DURATION", 0,
     "Also a capture when a process's time to OOM falls below DURATION (needs a device size: "
     "NVML or --device-mem)",
     0},
    {"cooldown", OPT_WATCH_COOLDOWN, "DURATION", 0,
     "At most one capture per trigger cause in DURATION (default 1m; 0: every trigger)", 0},
    {"max-captures", OPT_WATCH_MAX_CAPTURES, "N", 0,
     "Keep at most N captures in DIR, the oldest removed first (default 16)", 0},
    {"max-disk", OPT_WATCH_MAX_DISK, "BYTES", 0,
     "Keep DIR's captures under BYTES, the oldest removed first (default 1GiB)", 0},
    {"no-verify", OPT_WATCH_NO_VERIFY, NULL, 0,
     "Do not feed each snapshot back to check that it rebuilds the live set exactly", 0},
    {},
};

static const char watch_doc[] =
    "Stay attached with a flight recorder: the live set of every traced process and the most "
    "recent records (--ring) in bounded memory, and a capture written into DIR only when a "
    "trigger fires: an allocation out of memory, the kernel's OOM killer, a fault, a "
    "threshold, SIGUSR1. Each capture is an ordinary capture of every traced process: 'gpuleak "
    "report' shows the trigger, the live set at it and the window's steps before it.\v"
    "EXAMPLES:\n"
    "  sudo gpuleak watch -o /var/lib/gpuleak -p 4242\n"
    "  sudo gpuleak watch -o /var/lib/gpuleak --step sym:./server:decode_step -- ./server\n"
    "  sudo gpuleak watch -o caps -p $(pgrep -d, -f vllm) --follow --live-above 70GiB\n"
    "  kill -USR1 $(pgrep -x gpuleak)          # a capture now\n"
    "  gpuleak report caps/gpuleak-20261201T071825.123Z-4242-oom.glc\n"
    "\n"
    "A trigger in one process writes one capture holding every traced process (all ranks). "
    "Captures are written beside their name and renamed when whole; one that cannot be "
    "written (a full disk) is said in one line and watching goes on. SIGINT, SIGTERM and "
    "SIGHUP stop watching, as attach does.\n"
    "EXIT STATUS: 0 done, 1 runtime error (also when a capture could not be written), 2 "
    "usage error, 3 --fail-on-leak found leaks at the end, 4 -- CMD failed (exited non-zero "
    "or was killed by a signal); when several apply, the first of 2, 1, 3, 4.";

/* Everything from the first non-option on is the command. */
static void take_command(struct argp_state *state, struct cli *c)
{
	c->t.argv = &state->argv[state->next - 1];
	state->next = state->argc;
}

static const struct argp_child watch_children[] = {
    {&cli_target_argp, 0, NULL, 0},
    {&cli_session_argp, 0, NULL, 0},
    {},
};

static error_t parse_watch(int key, char *arg, struct argp_state *state)
{
	struct cli *c = state->input;
	struct watch_opts *w = &c->w;
	uint64_t v;
	char *end;
	long n;

	switch (key) {
	case ARGP_KEY_INIT:
		cli__init_children(state, watch_children);
		break;
	case 'o':
		if (!*arg || !strcmp(arg, "-"))
			argp_error(state, "-o DIR: a directory the captures go into");
		w->dir = arg;
		break;
	case OPT_WATCH_RING:
		if (parse_bytes(arg, &v) || v < (64 << 10) || v > (64ULL << 30))
			argp_error(state, "invalid --ring '%s' (64KiB..64GiB, e.g. 32MiB)", arg);
		w->ring_bytes = v;
		break;
	case OPT_WATCH_RING_TIME:
		if (parse_duration_ns(arg, &w->ring_ns) || !w->ring_ns)
			argp_error(state, "invalid --ring-time '%s' (e.g. 30s, 10m)", arg);
		break;
	case OPT_WATCH_ON:
		if (watch__parse_on(arg, &w->on))
			argp_error(state,
				   "invalid --on '%s' (a list of oom, oom-kill, fault, signal; or "
				   "all, none)",
				   arg);
		break;
	case OPT_WATCH_LIVE_ABOVE:
		if (parse_bytes(arg, &w->live_above) || !w->live_above)
			argp_error(state, "invalid --live-above '%s' (e.g. 70GiB)", arg);
		break;
	case OPT_WATCH_OOM_WITHIN:
		if (parse_duration_ns(arg, &w->oom_within_ns) || !w->oom_within_ns)
			argp_error(state, "invalid --oom-within '%s' (e.g. 10m)", arg);
		break;
	case OPT_WATCH_COOLDOWN:
		if (parse_duration_ns(arg, &w->cooldown_ns))
			argp_error(state, "invalid --cooldown '%s' (e.g. 5m; 0: none)", arg);
		break;
	case OPT_WATCH_MAX_CAPTURES:
		n = strtol(arg, &end, 10);
		if (!*arg || *end || n < 1 || n > 1000000)
			argp_error(state, "invalid --max-captures '%s' (1..1000000)", arg);
		w->max_captures = (unsigned int)n;
		break;
	case OPT_WATCH_MAX_DISK:
		if (parse_bytes(arg, &w->max_disk) || w->max_disk < (1 << 20))
			argp_error(state, "invalid --max-disk '%s' (at least 1MiB, e.g. 10GiB)",
				   arg);
		break;
	case OPT_WATCH_NO_VERIFY:
		w->no_verify = true;
		break;
	case ARGP_KEY_ARG:
		take_command(state, c);
		break;
	case ARGP_KEY_END:
		if (!c->t.nr_pids == !c->t.argv)
			argp_error(state, "watch needs -p PID or a command: "
					  "gpuleak watch -o DIR (-p PID | -- CMD ARGS)");
		if (!w->dir)
			argp_error(state, "watch needs -o DIR");
		break;
	default:
		return ARGP_ERR_UNKNOWN;
	}
	return 0;
}

const struct argp cli_watch_argp = {.options = watch_options,
				    .parser = parse_watch,
				    .args_doc = "-o DIR (-p PID | [OPTIONS] -- CMD [ARGS...])",
				    .doc = watch_doc,
				    .children = watch_children};

void cli__watch_defaults(struct cli *c)
{
	c->w = (struct watch_opts){.ring_bytes = 32ULL << 20,
				   .on = WATCH_ON_ALL,
				   .cooldown_ns = 60000000000ULL,
				   .max_captures = 16,
				   .max_disk = 1ULL << 30};
	/*
	 * A recorder on every GPU node: 8 MiB of ring buffer (16 MiB of gpuleak's RSS, mapped
	 * twice) drains in 50 ms slices at ~100 k calls/s with a second to spare while a
	 * capture is written; losses are counted, never silent (bench/README.md).
	 */
	c->t.ringbuf_bytes = 8ULL << 20;
}
