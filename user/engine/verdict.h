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
#ifndef GPULEAK_ENGINE_VERDICT_H
#define GPULEAK_ENGINE_VERDICT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "engine/timeline.h"
#include "tracker/tracker.h"

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
	VERDICT_SHARED,	  /* IPC mappings, imported and multicast handles left open (ipc.h) */
	VERDICT_GRAPH,	  /* memory launched CUDA graph execs hold (graphs.h) */
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
	GATE_SHARED,	   /* an IPC mapping or shared handle left open (VERDICT_SHARED) */
	GATE_HELD,	   /* an allocator cache's memory the program never released */
};

/* One limit a process exceeds, in the order a report gives them. */
struct gate_violation {
	enum gate_kind kind;
	const struct growth *growth;  /* GATE_GROWTH: the site and its slope */
	const struct violation *rule; /* GATE_RULE */
	uint32_t site;		      /* GATE_SHARED: the site of the mappings */
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

/* Buffers of one size an allocator cache's memory held at the end: what the program kept. */
struct cache_size {
	uint64_t size, count;
};

#define CACHE_SIZES 8

/* Growth at a cache's site that its allocator gave back: its cache warming up, no leak. */
struct cache_warm {
	uint32_t site;
	double slope_per_step;
	uint64_t end_bytes;
};

/*
 * The memory of a caching allocator a cache rule names (rules.h: ONNX Runtime's buffers,
 * given back with its session), split at the process's end: what the program's own
 * releases gave back (its cache and working memory: reserved) and what it never released
 * (gone only with its device at exit, or live at the end: in use by the program, a leak).
 * Without an end seen (a detach) nothing is split: growth there stays judged on the steps.
 */
struct cache_verdict {
	bool on;     /* the process has memory at a site a cache rule names */
	bool judged; /* its end was seen (struct shutdown) */
	uint16_t rule;
	uint64_t freed_bytes, freed_count;    /* released by the program's own calls at its end */
	uint64_t held_bytes, held_count;      /* released with the device, or live at the end */
	struct cache_size sizes[CACHE_SIZES]; /* of held, most bytes first */
	size_t nr_sizes;
	uint64_t other_sizes;	 /* held buffers of sizes beyond the list */
	struct cache_warm *warm; /* growth leaks it took back: the cache warming up */
	size_t nr_warm;
};

/* One way memory went at shutdown: by the program's frees or with an owner, in one call. */
struct shutdown_release {
	uint8_t how;  /* enum release_how */
	uint16_t api; /* the outermost call it went in (the latest of its kind, per site) */
	uint64_t bytes, count;
};

#define SHUTDOWN_RELEASES 8

/*
 * A process's shutdown (tproc__shut_down): all it did after its latest allocation. Its steps
 * are judged up to that allocation (timeline.c, struct cut); what it released after it is
 * said here, so that nobody takes memory a growth leak names for memory still live.
 */
struct shutdown {
	bool on;
	int64_t step; /* of the latest allocation */
	uint64_t ts_ns;
	uint64_t live_bytes, live_count;	       /* live then */
	uint64_t released_bytes, released_count;       /* released after it */
	struct shutdown_release by[SHUTDOWN_RELEASES]; /* largest first, by (how, api) */
	size_t nr_by;
	struct released rel; /* what went, per site and site stack */
};

/* The memory of one site stack, at a moment a list is of (growth: its end; peak: the peak). */
struct stack_bytes {
	uint32_t sstack;
	uint64_t bytes, count;
	double per_step; /* growth: its share of the site's slope, by bytes (else 0) */
};

/* At most this many stacks per entry: the largest. */
#define VERDICT_STACKS 64

/*
 * How a growth leak's memory ended, and who holds it: its stacks at the end of its judged
 * steps (the latest allocation, for a process that shut down), largest first, and what of it
 * the shutdown released, by how, so that a leak released at exit reads as that.
 */
struct growth_end {
	uint64_t live_bytes, live_count;	 /* live at the end */
	uint64_t released_bytes, released_count; /* released at shutdown */
	struct shutdown_release by[SHUTDOWN_RELEASES];
	size_t nr_by;
	struct stack_bytes *stacks;
	size_t nr_stacks;
};

/* A site's live memory at its device's peak, with its stacks, largest first. */
struct peak_site {
	uint32_t site;
	uint64_t bytes, count;
	struct stack_bytes *stacks;
	size_t nr_stacks;
};

/*
 * The live set when a device's live bytes of the process were highest (tracker peak slot):
 * what the end of the run no longer shows when memory went before it (at shutdown, say).
 */
struct peak_view {
	uint8_t slot;	 /* tproc.peak index */
	int16_t device;	 /* CUDA ordinal, -1: the host or a WebGPU device */
	uint32_t webgpu; /* WebGPU device ordinal (wgpu#N), 0: not one */
	uint64_t bytes, count, ts_ns;
	int64_t step;
	uint64_t live_bytes;	 /* live on it at the end */
	bool mostly_gone;	 /* less than half of the peak is still live at the end */
	struct peak_site *sites; /* largest first */
	size_t nr_sites;
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
	struct growth_end *growth_end;	      /* of each growth leak, in its order */
	struct projection proj;		      /* time to OOM of its most pressed device */
	struct shutdown shutdown;

	/* Its peaks, one per device it had memory on, in slot order (CUDA, WebGPU, host). */
	struct peak_view *peaks;
	size_t nr_peaks;

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

	/* A caching allocator a cache rule names (after shutdown, before growth ends). */
	struct cache_verdict cache;

	/* Records it lost (ring buffer full, stash, depth, returns without entry): its numbers
	 * are approximate when not 0. */
	uint64_t dropped;

	/* Memory pools (engine/query.h: tracker/pools.h): what all of them hold in reserve,
	 * freed and not given back, and those worth a line of a report (made or configured by
	 * the program, or holding), in the process's order. */
	uint64_t pool_reserve;
	const struct tpool **pools;
	size_t nr_pools;
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
 * One list of p's sites as it stands, for what is printed between verdicts (interval
 * tables). Caller frees out->v. 0 or -ENOMEM.
 */
int verdict__rank(const struct tracker *t, const struct tproc *p, enum verdict_list k,
		  struct site_list *out);

#endif
