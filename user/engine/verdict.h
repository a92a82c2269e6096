/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The verdict: what the analysis concludes about each traced process, decided here and
 * nowhere else. Which sites leak and which hold memory for a reason (retained, ignored,
 * pending), the growth leaks and the time to OOM, what exceeds the CI gate, rank skew
 * across processes, how far the numbers may be from the truth. Judged from the tracker and
 * the timeline into plain data, once at the end of a session (and at each metrics scrape);
 * every output (text, NDJSON, Prometheus, SVG, Perfetto) says what it is handed and decides
 * nothing, so they cannot disagree.
 *
 * A new finding: a member of struct proc_verdict (of struct verdict when it compares
 * processes), a judge in verdict.c's table that fills it (and proc_free releasing what it
 * allocates), then the outputs that say it.
 */
#ifndef GPULEAK_VERDICT_H
#define GPULEAK_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine/timeline.h"
#include "engine/tracker.h"

/* The CI gate: what --fail-on-leak fails on. */
struct gate {
	bool on;
	uint64_t max_growth; /* bytes/step a growing site may reach */
	bool has_max_live;
	uint64_t max_live_at_exit; /* leaked bytes allowed at the end */
};

/* The lists a verdict sorts a process's sites into; a site may be in several. */
enum verdict_list {
	VERDICT_LEAKS,	  /* live memory not under another allocation, not meant to stay */
	VERDICT_RETAINED, /* live memory a persistent rule says is meant to stay, or init's */
	VERDICT_IGNORED,  /* live memory an ignore rule keeps out of verdicts */
	VERDICT_PENDING,  /* async frees waiting for their stream */
	VERDICT_FAILED,	  /* calls that returned an error */
	VERDICT_VA,	  /* reserved virtual ranges: address space, no bytes */
	VERDICT_REG,	  /* registrations of memory allocated elsewhere */
	VERDICT_LISTS,
};

/*
 * Sites of one list: indices into the tracker's sites, largest first (by what the list is
 * of: bytes, or a count where there are no bytes), then by live bytes, then oldest first.
 */
struct site_list {
	uint32_t *v;
	size_t n;
};

/* Why the gate fails; the names are the NDJSON gate violation kinds. */
enum gate_kind {
	GATE_GROWTH,	   /* a growth leak above --max-growth per step */
	GATE_LIVE_AT_EXIT, /* more leaked at the end than --max-live-at-exit */
	GATE_RULE,	   /* a rule violation */
};

/* One limit a process exceeds, in the order a report gives them. */
struct gate_violation {
	enum gate_kind kind;
	const struct growth *growth;  /* GATE_GROWTH: the site and its slope */
	const struct violation *rule; /* GATE_RULE */
	uint64_t limit;		      /* GATE_GROWTH: bytes/step; GATE_LIVE_AT_EXIT: bytes */
};

/*
 * PyTorch's caching allocator on one device, as torch.cuda.memory_stats says it, from outside:
 * allocated (live blocks), reserved (segments holding blocks, and blocks in no segment
 * seen), cached (reserved - allocated: free blocks, raw_alloc blocks no probe reported,
 * rounding), outside (the process's other device memory: NCCL, other libraries' cudaMalloc,
 * segments of raw_alloc alone).
 */
struct torch_device {
	int16_t device;
	uint64_t allocated, allocated_count;
	uint64_t reserved, segments;
	uint64_t cached;
	uint64_t outside;
};

/*
 * The reserve grew over the steps while allocated stayed flat: caching or fragmentation,
 * which torch.cuda.empty_cache() returns; never a leak.
 */
struct torch_cache_growth {
	bool found;
	int64_t first_step, last_step;
	uint64_t reserved_from, reserved_to;
	uint64_t allocated_from, allocated_to;
};

struct torch_verdict {
	bool on;	/* the process has blocks (tproc.blocks) */
	uint8_t source; /* enum tblocks_source */
	struct torch_device dev[TBLOCKS_DEVICES];
	size_t nr_dev;
	uint64_t allocated, reserved, cached, outside; /* over its devices */
	struct torch_cache_growth cache;
};

struct proc_verdict {
	const struct tproc *p;
	/* In the report: attached, or it did something traced. A shell or helper a server
	 * forks that calls nothing traced stays out of every output but the pictures. */
	bool reported;
	struct site_list sites[VERDICT_LISTS];
	uint64_t leaked_bytes; /* live bytes of its leaks */

	/* Over its steps: nothing without a timeline. */
	size_t nr_steps;       /* closed, those no longer kept included */
	struct growth *growth; /* growth leaks, largest slope first */
	size_t nr_growth;
	double growth_per_s, growth_per_step; /* their slopes summed */
	struct projection proj;		      /* time to OOM of its most pressed device */

	/* What exceeds the gate's limits: it fails the gate when the gate is on. */
	struct gate_violation *gate;
	size_t nr_gate;

	/* Rank skew: it grows while its peers (the other reported processes that allocated)
	 * do not, the shape of one misbehaving rank among identical workers. */
	bool skewed;
	double peer_median_per_s; /* the peers' median growth, bytes/s */
	size_t nr_peers;

	/* How far its live bytes may be from the truth (unknown only when out of memory). */
	bool uncertainty_known;
	struct uncertainty uncertainty;

	/* PyTorch's caching allocator (after growth: its cache growth reads the leaks). */
	struct torch_verdict torch;
};

struct verdict {
	struct gate gate;	    /* the limits it was judged by */
	struct proc_verdict *procs; /* every process of the tracker, in its order */
	size_t nr_procs;
	size_t nr_reported;
	uint64_t live_bytes, leaked_bytes; /* over the reported processes */
	bool gate_failed;		   /* the gate is on and a reported process exceeds it */
};

/*
 * Judge every process of t as it stands (tl NULL: no steps, no growth; gate NULL: off).
 * 0 or -ENOMEM.
 */
int verdict__new(const struct tracker *t, struct timeline *tl, const struct gate *gate,
		 struct verdict **out);
void verdict__free(struct verdict *v);
/* The growth leak of pv at site, or NULL. */
const struct growth *verdict__growth_at(const struct proc_verdict *pv, uint32_t site);
/* Whether p is in the report (struct proc_verdict: reported). */
bool verdict__reported(const struct tproc *p);
/*
 * One list of pid's sites as it stands, for what is printed between verdicts (interval
 * tables). Caller frees out->v. 0 or -ENOMEM.
 */
int verdict__rank(const struct tracker *t, pid_t pid, enum verdict_list k, struct site_list *out);

#endif
