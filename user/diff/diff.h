/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * `gpuleak diff`: what changed between two runs. Each input (a capture analysed here, or the
 * NDJSON verdicts a run wrote) is loaded into the same plain model, a diff_run: its
 * processes, their sites with what the verdict says of them at the end, and series of live
 * bytes per step. The comparison is decided here and nowhere else (outputs print a
 * diff_result, and decide nothing):
 *
 *   processes  paired by command and rank (the order by pid among the processes of one
 *              command), or as --pid-base/--pid-new/--comm choose; the others are only in
 *              one run
 *   sites      paired by what survives a rebuild, never by address: a labelled site (WebGPU)
 *              by API and label, any other by API, function and module (a JIT or Python
 *              frame: its script or file, without line and column); the call-site offset (or
 *              line) only breaks ties between sites of one function
 *   alignment  at the end when both runs closed as many steps and ended the same way;
 *              otherwise at the last step both completed (or, with --request, at the step
 *              where both had completed as many requests), so a run that crashed or ran
 *              shorter is compared step for step, never read as "less memory"
 *   the gate   --fail-on-regression: a process whose growth per step rose by more than
 *              --max-growth-increase, whose leaked bytes rose by more than
 *              --max-live-increase, that ended early where its base did not, or that is
 *              missing from the new run
 */
#ifndef GPULEAK_DIFF_DIFF_H
#define GPULEAK_DIFF_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "lib/hmap.h"

/* What an input is. */
enum diff_source {
	DIFF_CAPTURE, /* analysed here, with this command's analysis options */
	DIFF_NDJSON,  /* verdicts judged when they were written */
};

/* A site's bytes at the end of a step where they changed (a sparse series). */
struct diff_sample {
	int64_t step;
	uint64_t live;	 /* all of its live bytes */
	uint64_t leaked; /* of which leak candidates: no rule retains or ignores them, not init */
	uint64_t init;	 /* of which made before the first step (retained by init) */
};

struct diff_site {
	/* What it is matched by (diff__parse_site splits a name into these). */
	char *api;
	char *func;   /* NULL: no symbol named it */
	char *module; /* object basename or source file; NULL: unknown */
	char *label;  /* WebGPU label; NULL: none */
	bool has_off;
	uint64_t off; /* call-site offset in func (a line in a file, a file offset without func) */
	char *name;   /* as a report names it */

	/* At the end, as the verdict lists it. */
	uint64_t live_bytes, live_count; /* every list: leaked + retained + ignored */
	uint64_t leaked_bytes, leaked_count;
	uint64_t init_bytes, init_count; /* retained by init */
	uint64_t persistent_bytes;	 /* retained by a rule */
	uint64_t ignored_bytes;
	uint64_t pending_bytes;
	bool growing; /* a growth leak */
	double slope; /* its bytes per step (0: not growing), to 0.1 byte as NDJSON has it */
	double per_request;
	bool has_allocs; /* captures: allocations made here during the whole run */
	uint64_t allocs, alloc_bytes;
	/* Whether its verdict lists it (something live, pending or growing): with one input
	 * NDJSON, the only sites compared (others are in step records at most). */
	bool visible;

	/* Running value while loading, then the series. */
	uint64_t cur_live, cur_leaked, cur_init;
	struct diff_sample *samples;
	size_t nr_samples, cap_samples;
};

/* A process's live bytes at the end of each step, and what it did up to then. */
struct diff_step {
	int64_t step;
	uint64_t live;
	uint64_t requests;	      /* completed, cumulative */
	uint64_t allocs, alloc_bytes; /* cumulative */
	/* PyTorch's caching allocator at the end of the step, over devices (diff_proc__torch) */
	uint64_t torch_allocated, torch_reserved;
};

struct diff_proc {
	pid_t pid, ppid;
	char comm[16];
	char state[16]; /* exited, detached, ended, exec, running (as the verdict says) */
	int exit_status;
	double duration_s;
	size_t steps;
	char step_source[16];
	uint64_t requests;
	uint64_t live_bytes, live_count, leaked_bytes, init_bytes, persistent_bytes;
	uint64_t ignored_bytes, pending_bytes;
	uint64_t allocs, alloc_bytes, frees, failed_calls;
	double growth_per_step; /* the growth leaks' slopes, summed */
	size_t growth_sites;
	bool approximate;
	/*
	 * PyTorch's caching allocator at the end, over devices, as the verdict's pytorch member
	 * says (torch: it had blocks). torch_known: the input says whether it had any (a
	 * capture always; NDJSON verdicts of a gpuleak before PyTorch support do not).
	 */
	bool torch_known, torch;
	uint64_t torch_allocated, torch_reserved, torch_cached, torch_outside;

	struct diff_site *sites;
	size_t nr_sites, cap_sites;
	struct diff_step *series; /* every closed step, in order */
	size_t nr_series, cap_series;
	/* The site series hold every change of every step in series (NDJSON step records list
	 * the 8 sites that changed most: exact only when no step had more). */
	bool sites_exact;
	/* Series stop short of the end: the run had more steps than are kept. */
	bool series_cut;
	struct hmap site_idx; /* (api, name, label) hash -> index into sites */
};

struct diff_run {
	enum diff_source source;
	char *path;
	char *gpuleak;	/* version that wrote it, NULL: unknown */
	bool truncated; /* a capture cut short */
	struct diff_proc *procs;
	size_t nr_procs, cap_procs;
	size_t samples; /* kept in all, against DIFF_MAX_SAMPLES */
};

/* Samples (site and step) one run keeps; past it, series are cut (diff_proc.series_cut). */
#define DIFF_MAX_SAMPLES (1U << 21)

/* ---- building a run (the loaders: offline/diff_capture.c, diff/diff_verdicts.c) ---- */

int diff_run__new(enum diff_source source, const char *path, struct diff_run **out);
/* NULL accepted. */
void diff_run__free(struct diff_run *r);
/* A new process (zeroed, sites_exact set), or NULL without memory. Invalidates earlier
 * diff_proc pointers of r. */
struct diff_proc *diff_run__add_proc(struct diff_run *r);
/* Free what p holds (its sites and series), not p. */
void diff_proc__release(struct diff_proc *p);
/*
 * The site of p with this API, name and label (NULL: none), added when new: its index, or
 * -ENOMEM. Sites are told apart by what diff__parse_site makes of the name, the API and the
 * label: the parts an input tells apart (a tracker's sites of one call site by owner or
 * class, a step record's by class) are one site here.
 */
int diff_proc__site(struct diff_proc *p, const char *api, const char *name, const char *label);
/* The site's bytes changed by these amounts at the end of step: a sample. 0 or -ENOMEM. */
int diff_site__change(struct diff_run *r, struct diff_proc *p, struct diff_site *s, int64_t step,
		      int64_t d_live, int64_t d_leaked, int64_t d_init);
/* p closed step with live bytes, and in it completed requests and made allocs allocations of
 * alloc_bytes. 0 or -ENOMEM. */
int diff_proc__step(struct diff_run *r, struct diff_proc *p, int64_t step, uint64_t live,
		    uint64_t requests, uint64_t allocs, uint64_t alloc_bytes);
/* PyTorch's allocated and reserved bytes at the end of p's last step, if it is step (after
 * diff_proc__step). */
void diff_proc__torch_step(struct diff_proc *p, int64_t step, uint64_t allocated,
			   uint64_t reserved);
/*
 * Split a site name as the reports write it into what sites are matched by:
 * "func+0x1a (module)", "func+0xdc (script.mjs:32:20)" and "func (file.py:42)" (the file; the
 * offset, else the line, a tiebreak), "module+0x1f00" (no symbol), "0x7f12..."/"?" (nothing). *func and *module are allocated (NULL when absent). 0 or -ENOMEM.
 */
int diff__parse_site(const char *name, char **func, char **module, bool *has_off, uint64_t *off);

/* x to a tenth: slopes as NDJSON verdicts write them, so both kinds of input agree. */
double diff__tenth(double x);

/* ---- comparing two runs ---- */

struct diff_gate_opts {
	bool on;		      /* --fail-on-regression */
	uint64_t max_growth_increase; /* bytes/step a process's growth may rise by */
	bool has_max_live;
	uint64_t max_live_increase; /* leaked bytes may rise by */
};

struct diff_opts {
	pid_t pid_base, pid_new; /* 0: pair by command and rank */
	const char *comm;	 /* only processes of this command; NULL: all */
	bool by_request;	 /* --request: align by requests completed */
	int64_t warmup_steps;	 /* steps a fit of growth leaves out (--warmup-steps) */
	struct diff_gate_opts gate;
};

enum diff_match {
	DIFF_PAIRED,
	DIFF_ONLY_BASE,
	DIFF_ONLY_NEW,
};

/* How two sites were paired. */
enum diff_by {
	DIFF_BY_SITE,	  /* same function, module and offset */
	DIFF_BY_FUNCTION, /* same function and module, the offset moved */
	DIFF_BY_ORDER,	  /* same function and module, several sites: by their offsets' order */
	DIFF_BY_LABEL,	  /* same label, another function */
	DIFF_BY_NAME,	  /* no function or module: the same name */
};

/* One number in both runs; known: both have it (an absent side is 0 and known). */
struct diff_val {
	bool known;
	double base, new;
};

struct diff_site_pair {
	enum diff_match match;
	enum diff_by by;
	const struct diff_site *b, *n;
	/* At the alignment point (end values where not aligned per site: see at_end); allocs
	 * (made during the whole run) and per_request (the verdicts') only at the end. */
	struct diff_val live, leaked, live_count, peak, init, slope, per_request, allocs;
	bool at_end;  /* the values are the end's, not the aligned step's */
	double score; /* the largest byte difference any of its numbers shows: the order */
	bool changed;
};

/* Where two processes are compared. */
enum diff_align {
	DIFF_AT_END,	 /* same number of steps, ended the same way */
	DIFF_AT_STEP,	 /* the last step both completed */
	DIFF_AT_REQUEST, /* the step in each where both had completed as many requests */
};

/* Why a pair could not be compared where it should be (values then are the end's). */
enum diff_caveat {
	DIFF_OK,
	DIFF_NO_SERIES,	    /* an input has no step records, or the series were cut */
	DIFF_INEXACT_SITES, /* per-site values from step records that list only 8 sites */
	DIFF_TOO_SHORT,	    /* a run has no completed step to compare at */
};

enum diff_gate_kind {
	DIFF_GATE_GROWTH,	/* growth per step rose by more than --max-growth-increase */
	DIFF_GATE_LIVE,		/* leaked bytes rose by more than --max-live-increase */
	DIFF_GATE_ENDED_EARLY,	/* the new run ended badly where the base did not */
	DIFF_GATE_MISSING,	/* a process of the base is not in the new run */
	DIFF_GATE_INCOMPARABLE, /* different step sources, or live bytes not comparable */
};

struct diff_gate_violation {
	enum diff_gate_kind kind;
	double amount;			   /* GROWTH: bytes/step; LIVE: bytes */
	uint64_t limit;			   /* GROWTH, LIVE */
	const struct diff_site_pair *site; /* GROWTH, LIVE: the site that changed most */
};

struct diff_proc_pair {
	enum diff_match match;
	const struct diff_proc *b, *n;
	const char *comm;
	int rank;
	enum diff_align align;
	enum diff_caveat caveat;
	int64_t step_b, step_n; /* DIFF_AT_STEP, DIFF_AT_REQUEST: where each is compared */
	uint64_t requests_at;	/* DIFF_AT_REQUEST */
	bool clean_b, clean_n;	/* ended as a run should: exit 0, detached, ended, exec */
	bool steps_differ;	/* closed different numbers of steps */
	bool sources_differ;	/* their steps are different things (NDJSON inputs) */
	struct diff_val live, leaked, peak, init, persistent, pending, growth, growth_sites;
	struct diff_val steps, requests, alloc_bytes_per_step, allocs_per_step;
	/*
	 * PyTorch's caching allocator (torch: either run had blocks), where compared: at the end
	 * the verdicts' four buckets; at a step allocated and reserved from the step series,
	 * cached their difference, outside unknown (the verdict has it at the end only).
	 */
	bool torch;
	struct diff_val torch_allocated, torch_reserved, torch_cached, torch_outside;
	/* Growth per step is the verdicts' at the end; compared at a step, a least-squares fit
	 * of each run's series of live bytes not retained over the same steps (from the first
	 * after the warm-up to the step compared at), since a run that ended early or ran
	 * shorter had fewer steps to be judged on. */
	bool slopes_fitted;
	int64_t fit_from_b, fit_from_n;
	struct diff_site_pair *sites; /* largest difference first */
	size_t nr_sites;
	size_t nr_paired, nr_only_b, nr_only_n, nr_unchanged;
	struct diff_gate_violation *gate; /* what fails the gate (computed with the gate off too) */
	size_t nr_gate;
};

struct diff_result {
	const struct diff_run *base, *new;
	struct diff_opts o;
	bool mixed; /* one input a capture, the other NDJSON: only what both have is compared */
	struct diff_proc_pair *procs;
	size_t nr_procs;
	size_t nr_paired, nr_only_b, nr_only_n;
	bool regression; /* the gate is on and a pair fails it */
};

/* Compare base with new. 0 or -ENOMEM. */
int diff__compare(const struct diff_run *base, const struct diff_run *new,
		  const struct diff_opts *o, struct diff_result **out);
void diff_result__free(struct diff_result *r);
/* Whether r has a process with this pid. */
bool diff__has_pid(const struct diff_run *r, pid_t pid);

/* Names the outputs share: "paired", "only_base", "only_new"; "site", "function", ... */
const char *diff__match_name(enum diff_match m);
const char *diff__by_name(enum diff_by b);
const char *diff__align_name(enum diff_align a);
const char *diff__caveat_name(enum diff_caveat c);
const char *diff__gate_name(enum diff_gate_kind k);

#endif
