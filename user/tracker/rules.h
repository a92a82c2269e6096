/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Rules: what "meant to stay" and "freed later" mean for a workload. One rule per line,
 * `KIND key=value ...`, # comments:
 *
 *   persistent api=GLOB lib=GLOB site=GLOB label=GLOB size>=N size<=N phase=init|steps<N
 *              pid=N [once] [max=BYTES] [release=session-end]
 *   deferred   api=GLOB ... until=stream-sync|device-sync|event-sync|queue-done window=DUR
 *   ignore     (the matchers above)
 *   cache      api=GLOB pid=N
 *
 * The first rule whose matchers all hold decides (user rules before the built-in defaults).
 * Persistent allocations are never step-level leak candidates; at session end they are
 * "retained", not leaks, unless release=session-end. Ignored ones are counted but kept out
 * of verdicts. Deferred frees stay pending until their completion event. A cache rule names
 * the calls of a caching allocator that gives its cache back when its owner ends (ONNX
 * Runtime's buffer manager, released with its session): growth there is judged on what the
 * program still held when it ended, not on the steps alone (verdict.c, judge_cache).
 */
#ifndef GPULEAK_TRACKER_RULES_H
#define GPULEAK_TRACKER_RULES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum rule_kind {
	RULE_PERSISTENT = 1,
	RULE_DEFERRED = 2,
	RULE_IGNORE = 3,
	RULE_CACHE = 4,
};

/* What completes a deferred free. */
enum rule_until {
	UNTIL_STREAM_SYNC = 1, /* a sync of its stream (or of its device, or an event after it) */
	UNTIL_DEVICE_SYNC = 2, /* a device (or context) synchronization */
	UNTIL_EVENT_SYNC = 3,  /* a sync of an event recorded on its stream after the free */
	UNTIL_QUEUE_DONE = 4,  /* the WebGPU queue's submitted work is done */
};

enum rule_phase {
	PHASE_ANY = 0,
	PHASE_INIT = 1,	       /* before the first step */
	PHASE_STEPS_BELOW = 2, /* during steps < phase_steps (init included) */
};

struct rule {
	enum rule_kind kind;
	char *api; /* globs, NULL: any */
	char *lib;
	char *site;
	char *label;
	bool has_size_min, has_size_max;
	uint64_t size_min, size_max;
	enum rule_phase phase;
	uint64_t phase_steps;
	pid_t pid; /* 0: any */
	bool once;
	uint64_t max_bytes; /* 0: no limit */
	bool release_at_end;
	enum rule_until until;
	uint64_t window_ns; /* 0: no window */
	bool builtin;
	bool preset;  /* from --preset: one of a stack's possible cases, not this run's */
	char *source; /* "FILE:LINE", "--rule" or "built-in" */
	char *text;   /* the rule as written */
	/* Allocations and frees it decided, counted as it matches (through const rules: its
	 * own allocation); one of the user's never deciding anything is said at the end. */
	uint64_t *decided;
};

/*
 * Where the tracker keeps a rule (sites, pending frees, violations) it is a 16-bit index + 1,
 * 0 for none: at most RULES_MAX rules, RULES_BUILTIN_MAX of them kept for the built-ins. A
 * rule beyond that is a parse error, never silently unused.
 */
#define RULES_MAX	  65535
#define RULES_BUILTIN_MAX 8
#define RULES_USER_MAX	  (RULES_MAX - RULES_BUILTIN_MAX)

struct rules {
	struct rule *v;
	size_t n, cap;
	size_t nr_user; /* v[0..nr_user) are the user's, then the built-ins */
};

/* What a rule is matched against. */
struct rule_subject {
	pid_t pid;
	const char *api; /* API name */
	uint64_t size;
	const char *label; /* NULL: none */
	int64_t step;	   /* -1: before the first step */
	/* Frames of the allocation's stack, innermost (the call site) first: function names and
	 * object basenames, NULL where unknown; site= and lib= must hold at one frame. */
	const char *const *syms;
	const char *const *mods;
	/* Python frames (NULL for the others, or all): "file:line", the file as its code object
	 * has it. site= holds at such a frame when it matches "file:line" or "basename:line"
	 * as well as the function; lib= when it matches the file as well as its basename. */
	const char *const *where;
	int nr_frames;
};

int rules__new(struct rules **out);
void rules__free(struct rules *r);
/*
 * Parse rules from text (a file's content or one --rule). src names the origin in messages.
 * On a syntax error, or a rule beyond RULES_USER_MAX in all: -EINVAL and
 * err = "SRC:LINE:COL: what is wrong"; nothing is added.
 */
int rules__parse(struct rules *r, const char *text, size_t len, const char *src, char *err,
		 size_t errlen);
int rules__load_file(struct rules *r, const char *path, char *err, size_t errlen);
/* Load the preset NAME (rules/NAME.rules next to the executable, or $GPULEAK_RULES_DIR). */
int rules__load_preset(struct rules *r, const char *name, char *err, size_t errlen);
/* Add the defaults (async frees until a sync of their stream, WebGPU destroys until the
 * queue is done). Call after the user's rules: the first match decides. */
int rules__add_builtins(struct rules *r);
/* Index of the first cache rule naming api (a catalog name) in process pid, or -1. */
int rules__cache(const struct rules *r, const char *api, pid_t pid);
/* Index of the first rule of kind `kind` matching s, or -1. */
int rules__match(const struct rules *r, enum rule_kind kind, const struct rule_subject *s);
/*
 * The same in two halves, so the tracker can cache the first per call site: the matchers
 * that depend only on where the call came from (api, lib, site, pid) ...
 */
bool rule__match_static(const struct rule *rule, const struct rule_subject *s);
/* ... and those that depend on the allocation (size, label, phase). */
bool rule__match_dynamic(const struct rule *rule, uint64_t size, const char *label, int64_t step);
/* Whether rule i's matchers that need a call site (site=, lib=) are present. */
bool rule__needs_frames(const struct rule *rule);
const char *rule_kind_name(enum rule_kind k);
const char *rule_until_name(enum rule_until u);

#endif
