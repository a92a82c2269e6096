/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The graph the tracker keeps, as types, and the few reads of it every module and output
 * shares (inline): allocations (keyed by address space and address) belong to sites (where
 * they were made), sites may have an owner (a CUDA context, an NCCL communicator, a WebGPU
 * device, or, for a lower layer, the site of the allocation it sits under). No module owns
 * this header; each owns the part of it that it keeps up to date (tracker.h lists them).
 */
#ifndef GPULEAK_TRACKER_MODEL_H
#define GPULEAK_TRACKER_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>
#include "gpuleak.h"
#include "tracker/alloc_table.h"
#include "lib/hmap.h"

enum owner_kind {
	OWNER_NONE = 0,
	OWNER_LAYER = 1,  /* owner: index of the site of the allocation above */
	OWNER_CTX = 2,	  /* owner: CUcontext */
	OWNER_COMM = 3,	  /* owner: ncclComm_t */
	OWNER_DEVICE = 4, /* owner: a device handle (WebGPU) */
	/*
	 * A segment of a caching allocator (PyTorch's): a CUDA allocation or VMM handle that
	 * holds blocks. Its memory is the blocks' and the cache's, judged on the blocks.
	 */
	OWNER_POOL = 5,
	OWNER_GRAPH = 6, /* memory nodes CUDA graph execs hold (graphs.c); owner: 0 */
};

/*
 * How live memory left a site: by the program's own free (a free, destroy or last release,
 * an async free issued) or with its owner (a context destroyed, a device or primary context
 * reset, a WebGPU device destroyed or released: pending.c, release_where).
 */
enum release_how {
	RELEASE_FREED = 0,
	RELEASE_OWNER = 1,
	NR_RELEASE_HOW,
};

/*
 * Live memory that left since its process's latest allocation, one entry per allocation
 * that went (tproc.shut): every allocation empties the list, so when the process ends it
 * holds what its shutdown released (allocs.h, allocs_note_release). No longer than the
 * allocations that were live, and in steady state a handful.
 */
struct release {
	uint32_t sstack;
	uint16_t api; /* the outermost call it went in */
	uint8_t how;  /* enum release_how */
	uint64_t bytes;
};

/* A site's slot of tproc.peak (allocs.h, allocs_peak_slot): not yet chosen, or none. */
#define PEAK_SLOT_UNSET 0xff
#define PEAK_SLOT_NONE	0xfe

/*
 * Where allocations come from: (process, API, device, call site, owner). Live bytes per site
 * are kept up to date on every record, so reports and timelines never walk the allocations.
 */
struct site {
	pid_t pid;
	uint32_t gen; /* of the process's image (struct tproc's gen): sites are one image's */
	uint16_t api;
	int16_t device;	 /* CUDA device ordinal, -1 for host memory */
	uint64_t caller; /* return address in the caller */
	/* What names the site when its call site does not: the innermost frame of the
	 * program's own code in a stack with Python frames (site_fn), 0: the call site. */
	uint64_t frame;
	int32_t last_err;   /* last error code of a failed call here */
	uint8_t owner_kind; /* enum owner_kind */
	bool counts;	    /* its bytes are memory in the process totals */
	/*
	 * What is live here is judged: leaks, retained, growth, classes. Memory sites are both;
	 * caching-allocator blocks only judged (their bytes are their segments': counts is
	 * false), the segments only memory (OWNER_POOL).
	 */
	bool judged;
	uint16_t layer_api; /* API of a same-address layer seen under allocations here */
	uint8_t cls;	    /* enum site_class: what a rule made of allocations here */
	bool dirty;	    /* live bytes changed since the timeline last sampled */
	uint16_t rule;	    /* the persistent/ignore rule (index + 1), 0: none */
	uint64_t owner;
	uint64_t live_bytes;
	uint64_t live_count;
	uint64_t pending_bytes;
	uint64_t pending_count;
	uint64_t relmapped_bytes; /* VMM handles released while mapped (in live_*) */
	uint64_t relmapped_count;
	uint64_t layer_count; /* live allocations here with a merged same-address layer */
	uint64_t unsized;     /* live allocations of unknown bytes (counted, 0 bytes) */
	uint32_t label;	      /* WebGPU label (tracker labels index + 1), 0: none */
	uint32_t sstacks;     /* first sstack (index), then their next; UINT32_MAX: none */
	uint32_t sstack_last; /* the sstack used last: most calls of a site share a stack */
	uint32_t step_change; /* its entry in the process's step_changes + 1, 0: none (checked) */
	uint8_t peak_slot;    /* its device's tproc.peak slot, PEAK_SLOT_UNSET / _NONE */
	uint8_t mem;	      /* enum cat_mem: the API's, but pinned host memory for a VMM
			       * handle created on the host (device -1) */
	uint64_t allocs;
	uint64_t alloc_bytes;
	uint64_t frees;
	uint64_t failed;
};

/*
 * A site's allocations from one user stack: what the stack views need (the allocation
 * graph, folded stacks) and where rules with site=/lib= are matched, since those may name
 * any frame. A call without a stack has the site's sstack of stack_id -1. Tables, verdicts
 * and timelines read sites, which hold the sums over their sstacks.
 */
struct site_stack {
	uint32_t site;	     /* index into tracker sites */
	uint32_t next;	     /* the site's next sstack, UINT32_MAX: none */
	int32_t stack_id;    /* gl_call_rec.stack_id, -1: none */
	uint32_t cand_first; /* persistent/ignore rules whose site=/lib= hold here: */
	uint32_t nr_cand;    /* tracker cands[cand_first ...], nr_cand of them */
	bool cand_valid;
	uint64_t live_bytes, live_count;
	uint64_t pending_bytes, pending_count;
	/* Live memory here when its device's live bytes were highest (tproc.peak): taken
	 * lazily, at the first change after a new peak (peak_epoch: the peak it is of). */
	uint64_t peak_epoch, peak_bytes, peak_count;
};

enum site_class {
	CLS_NONE = 0,
	CLS_PERSISTENT = 1, /* meant to stay: never a step-level leak candidate */
	CLS_IGNORED = 2,    /* counted, kept out of verdicts */
	CLS_INIT = 3,	    /* made before the first step, no rule: retained by init */
};

/*
 * How a memory site changed in the step in progress of its process, kept up to date by
 * every allocation and free (the timeline turns it into a step_site_stat when the step
 * closes): sites enter the list at their first change in the step, and the list empties at
 * each step boundary.
 */
struct step_change {
	uint32_t site;	    /* index into tracker sites */
	uint64_t live0;	    /* its live bytes when the step began */
	uint64_t allocated; /* bytes allocated there during the step */
	uint64_t freed;	    /* bytes released there during the step (frees completed) */
};

struct pending_free {
	uint64_t addr;
	uint64_t stream; /* stream key (see pending.c: stream_key) */
	uint64_t ts_ns;	 /* when the free was issued */
	uint8_t space;
	uint8_t until;	 /* enum rule_until: what completes it */
	uint16_t rule;	 /* the deferred rule (index + 1) */
	bool late;	 /* reported as never completed within its window */
	uint64_t serial; /* until=queue-done: the WebGPU queue (stream) finishing this submit */
};

/*
 * A refcounted object (WebGPU buffer, texture, device) beyond its memory: references the
 * program holds, its owner, label and where it gained references. Memory objects live here
 * from creation to their last release; owners from first sight to their last release.
 */
enum tobj_flags {
	TOBJ_OWNER = 1 << 0,	  /* owns other objects (a device) */
	TOBJ_DESTROYED = 1 << 1,  /* its memory is gone, the handle is still referenced */
	TOBJ_ERROR = 1 << 2,	  /* an error object: never memory */
	TOBJ_CLASS_OWED = 1 << 3, /* its label is on the way: its class is checked once it
				   * is in (rule once=, max=) */
};

#define TOBJ_ADDREF_SITES 4

struct tobj {
	uint64_t handle;
	uint64_t owner;	  /* owning object's handle, 0: none */
	int64_t refs;	  /* created with 1; AddRef +1, Release -1 */
	uint32_t label;	  /* index into tracker labels + 1, 0: none */
	uint32_t ordinal; /* owners: 1, 2, ... in order of first sight in the process */
	uint8_t space;
	uint8_t flags; /* enum tobj_flags */
	uint16_t nr_addref;
	/* AddRef call sites (tracker sites) and how many references each added */
	uint32_t addref_site[TOBJ_ADDREF_SITES];
	uint32_t addref_count[TOBJ_ADDREF_SITES];
};

/* A WebGPU queue: submits are numbered, completion callbacks report how far work got. */
struct tqueue {
	uint64_t handle;
	uint64_t owner;	    /* its device, 0: unknown (got before attach) */
	uint64_t submitted; /* submits seen */
	uint64_t done;	    /* submits known complete */
};

/* A completion callback registered for a queue's work up to a submit serial. */
struct queue_watch {
	uint64_t queue;
	uint64_t serial;
	uint64_t userdata1, userdata2;
	uint64_t future; /* a future that completes it (wgpuBufferMapAsync's), 0: a callback */
};

/* What objects are, by their first word (gl_class_rec): an error class, a Dawn image. */
struct obj_class {
	uint64_t vptr;
	uint64_t len; /* GL_CLASS_DAWN_IMAGE: the image's bytes from vptr */
	uint32_t kind;
};

enum violation_kind {
	VIOL_ONCE = 1,		       /* a second allocation of a `once` class while one is live */
	VIOL_MAX = 2,		       /* live bytes of a class above its max= */
	VIOL_NOT_RELEASED = 3,	       /* release=session-end class still live at the end */
	VIOL_FREE_NEVER_COMPLETED = 4, /* a deferred free still pending after its window */
};

struct violation {
	uint8_t kind;  /* enum violation_kind */
	uint16_t rule; /* index into the rules */
	uint32_t site;
	uint64_t bytes;
	uint64_t count;
	uint64_t ts_ns;
	int64_t step;
};

struct rule_live {
	uint64_t bytes;
	uint64_t count;
	bool over_max; /* a max= violation is open: report the next one only after */
};

struct tctx {
	uint64_t ctx;
	int16_t device;
	bool primary;
	bool destroyed;
	uint32_t refs; /* primary context retains */
};

struct tcomm {
	uint64_t comm;
	uint32_t init_site; /* site of the ncclCommInit* call */
	bool destroyed;
	uint64_t ts_ns;
	uint64_t parent; /* ncclDevCommCreate: the communicator it was made on, 0: none */
};

struct tmapping {
	uint64_t va;
	uint64_t size;
	uint64_t handle;
};

struct proc_counters {
	uint64_t allocs;
	uint64_t alloc_bytes;
	uint64_t frees;
	uint64_t freed_bytes;
	uint64_t failed_calls;
	uint64_t unknown_frees;	    /* pointer never seen: allocated before attach, or untraced */
	uint64_t null_frees;	    /* free(NULL): legal no-op */
	uint64_t double_frees;	    /* freed again: while its async free was pending, or after */
	uint64_t addr_reuse;	    /* allocation returned an address still live here */
	uint64_t async_reuse;	    /* stream-ordered reuse of a pending block: legal */
	uint64_t calls;		    /* every traced call seen */
	uint64_t layers;	    /* lower-layer calls folded into an outer allocation */
	uint64_t released_by_owner; /* freed by a context, device or communicator teardown */
	uint64_t error_objects;	    /* creations that returned an error object (not memory) */
	uint64_t unknown_refs;	    /* AddRef/Release/Destroy of objects never seen created */
	uint64_t unmatched_done;    /* completion callbacks matching no registration */
	/* Successful allocations whose out-pointer BPF could not read: size known, not where */
	uint64_t unaddressed_allocs;
	uint64_t unaddressed_bytes;
};

/*
 * A device address range of a process (regions.c): a CUDA allocation of device or managed
 * memory (space SPACE_UVA, key its address), or a VMM mapping (space SPACE_VMM_HANDLE, key
 * its handle). A caching allocator's block lives in the region that holds its address.
 */
struct region {
	uint64_t start, end;
	uint64_t key;
	uint8_t space;
	uint32_t blocks; /* live blocks that start in it */
};

/* Sorted by start, made at a process's first block (until then nothing is kept). */
struct tregions {
	bool on;
	struct region *v;
	size_t n, cap;
	/* Regions gone with blocks still in them: blocks.c releases those blocks. */
	struct region *gone;
	size_t nr_gone, cap_gone;
};

/* Devices a caching allocator's sums are kept for: CUDA ordinals 0..15. */
#define TBLOCKS_DEVICES 16

/* Which probes report a process's blocks: the first seen, the other is ignored. */
enum tblocks_source {
	TBLOCKS_NONE = 0,
	TBLOCKS_USDT = 1, /* pytorch:malloc / pytorch:free */
	TBLOCKS_HOOK = 2, /* c10::reportMemoryUsageToProfiler */
};

/*
 * PyTorch's caching allocator in one process (blocks.c), per device, as torch.cuda.
 * memory_stats says it: allocated (live blocks), reserved (segments holding blocks, and
 * blocks in no segment seen: orphans, which count as memory themselves). Cached is
 * reserved - allocated; what else the process holds on the device is outside PyTorch.
 */
struct tblocks {
	uint8_t source; /* enum tblocks_source */
	uint64_t allocated[TBLOCKS_DEVICES], nr_allocated[TBLOCKS_DEVICES];
	uint64_t reserved[TBLOCKS_DEVICES], nr_segments[TBLOCKS_DEVICES];
	uint64_t orphan[TBLOCKS_DEVICES];
	uint64_t peak_allocated, peak_reserved; /* over devices, at any record */
	uint64_t allocs, alloc_bytes, frees;	/* blocks handed out and freed */
	uint64_t unknown_frees;		/* frees of blocks never seen (allocated before attach) */
	uint64_t released_with_segment; /* blocks whose segment went while they were live */
	uint64_t other_source;		/* records of the probes not used (enum tblocks_source) */
	uint64_t not_cuda;		/* profiler reports of memory on no CUDA device */
};

/*
 * The highest live bytes of one device of a process (CUDA ordinal, WebGPU device, or the
 * host) and when: the live set then is kept per site stack, lazily (site_stack.peak_*).
 */
struct peak {
	uint64_t live_bytes, live_count; /* now */
	uint64_t bytes, count;		 /* at the peak */
	uint64_t ts_ns;
	int64_t step;
	uint64_t epoch; /* peaks reached so far: a site stack's peak_* are of this one when equal */
};

/* Slots of tproc.peak: CUDA devices 0..15, WebGPU devices wgpu#1..#16, the host. */
#define PEAK_CUDA_SLOTS 16
#define PEAK_WGPU_SLOTS 16
#define PEAK_HOST_SLOT	(PEAK_CUDA_SLOTS + PEAK_WGPU_SLOTS)
#define PEAK_SLOTS	(PEAK_HOST_SLOT + 1)

struct tproc {
	pid_t pid;
	/*
	 * Which process of this pid, counting from 0: a new one after an exec (another
	 * program) or an exit (a reused pid). Its sites are its own: an image exec'd at the
	 * same addresses has the same call sites, not the same allocations.
	 */
	uint32_t gen;
	pid_t ppid;	 /* the traced process it was followed from, 0: none */
	uint32_t ns_pid; /* its pid in its own pid namespace, 0: the same as pid */
	bool attached;
	bool exited;
	bool execed; /* ended by exec: the pid lives on as another process */
	bool detached;
	bool ended; /* detached by its end marker (--end) */
	int exit_status;
	uint64_t start_ticks;
	uint64_t first_ts_ns, last_ts_ns;
	char comm[16];
	struct alloc_table allocs;
	uint64_t live_bytes, live_count; /* memory only: no layers, ranges, registrations */
	uint64_t pending_bytes, pending_count;
	struct pending_free *pend;
	size_t nr_pend, cap_pend;
	struct hmap threads; /* tid -> struct tthread * */
	struct hmap events;  /* cudaEvent/CUevent -> stream key of its last record */
	struct hmap regrefs; /* (space, NCCL registration or VMM handle) -> references beyond
			      * the first (mem_calls.c) */
	uint64_t *freed;     /* recently freed addresses (mem_calls.c: FREED_SLOTS), or NULL */
	struct hmap objs;    /* (space, handle) -> struct tobj * */
	struct hmap queues;  /* queue handle -> struct tqueue * */
	struct queue_watch *watch; /* in registration order */
	size_t nr_watch, cap_watch;
	struct obj_class *classes; /* from GL_REC_CLASS records, each once */
	size_t nr_classes, cap_classes;
	uint32_t nr_owners; /* owners seen: the next ordinal */
	struct tctx *ctxs;
	size_t nr_ctxs, cap_ctxs;
	struct tcomm *comms;
	size_t nr_comms, cap_comms;
	struct tmapping *maps;
	size_t nr_maps, cap_maps;
	struct proc_counters c;
	uint64_t loss[GL_STAT_MAX]; /* latest cumulative BPF loss counts */
	uint64_t records;
	/* Tracing's cost: traps counted from its call records, and the latest GL_REC_COST (its
	 * hdr.size 0: none came, as in a capture made before them) */
	uint64_t traps[GL_TRAP_MAX];
	struct gl_cost_rec cost;
	int64_t step;			  /* current step, -1 before the first */
	uint64_t step_ts_ns;		  /* when it began (0: the first step, begun at attach) */
	struct step_change *step_changes; /* memory sites changed in the current step */
	size_t nr_step_changes, cap_step_changes;
	uint64_t init_bytes, init_count; /* live, made before the first step (CLS_INIT) */
	uint64_t persistent_bytes, persistent_count;
	uint64_t ignored_bytes, ignored_count;
	struct rule_live *rule_live; /* per rule */
	struct violation *viols;
	size_t nr_viols, cap_viols;
	uint32_t *dirty; /* sites whose live bytes changed since the last step */
	size_t nr_dirty, cap_dirty;
	struct tthread *last_thread; /* of the last record: most come from one thread */
	struct tregions regions; /* device ranges, once the process has caching-allocator blocks */
	struct tblocks *blocks;	 /* PyTorch's caching allocator, NULL until its first block */
	/* The latest allocation (the shutdown of a process that ends begins after it). */
	int64_t last_alloc_step;
	uint64_t last_alloc_ts_ns;
	/* What left since the latest allocation (struct release), and why memory that leaves
	 * now leaves: the outermost call being applied, whether its owner is being torn down. */
	struct release *shut;
	size_t nr_shut, cap_shut;
	uint16_t cause_api;
	uint8_t release_how;
	struct peak peak[PEAK_SLOTS];
	/* Kept by their modules, made at first use (NULL: nothing of the kind seen). */
	struct tpools *pools;	/* stream-ordered and graph memory pools (pools.c) */
	struct tipc *ipc;	/* IPC mappings opened, multicast bindings (ipc.c) */
	struct tgraphs *graphs; /* captures, graphs and execs with memory nodes (graphs.c) */
};

/* Whether site s is one of process p's (its pid and image). */
static inline bool site__of(const struct site *s, const struct tproc *p)
{
	return s->pid == p->pid && s->gen == p->gen;
}

struct rules;

/*
 * Names of the frames of a call site, for rules with site=/lib=: fills syms/mods (innermost
 * first) and returns how many. Live it is the symbolizer; offline the capture's names.
 */
typedef int (*frames_fn)(void *ctx, pid_t pid, uint64_t caller, int32_t stack_id, const char **syms,
			 const char **mods, const char **where, int max);

/*
 * A call whose stack has Python frames (gl_stack_is_py): the frame that names its site,
 * which the call site does not (a ctypes call's is libffi's), and in *stack_id the id that
 * stands for its stack (several merge to the same frames). Live it is the symbolizer; 0:
 * the call site. Called for those calls only: the others' sites are their call sites.
 */
typedef uint64_t (*site_fn)(void *ctx, pid_t pid, uint64_t caller, int32_t *stack_id);

/*
 * A pending free ended at end_ns, issued at begin_ns: its stream or queue completed, or its
 * memory went otherwise (reused, its owner destroyed). bytes of site (an index).
 */
typedef void (*pending_done_fn)(void *ctx, const struct tproc *p, uint32_t site, uint64_t bytes,
				uint64_t begin_ns, uint64_t end_ns);

/*
 * What happened to device memory, for the allocation trace of --memory-viz (engine/memtrace.c):
 * an allocation entering or leaving a table, a free issued (pending), a VMM range mapped or
 * unmapped, an allocation that failed for want of memory. Persisted nowhere.
 */
enum mem_event_kind {
	MEM_EV_ADD = 1,
	MEM_EV_RELEASE = 2,
	MEM_EV_PENDING = 3,
	MEM_EV_MAP = 4,
	MEM_EV_UNMAP = 5,
	MEM_EV_FAIL = 6,
};

struct mem_event {
	uint64_t addr, size; /* MAP/UNMAP: the range; FAIL: the bytes asked, addr 0 */
	uint64_t ts_ns;
	uint32_t sstack; /* its site stack; UINT32_MAX: none (an unmap of no known handle) */
	int32_t err;	 /* FAIL: the call's error code */
	uint8_t kind;	 /* enum mem_event_kind */
	uint8_t space;	 /* enum cat_space */
	uint8_t flags;	 /* the allocation's (enum alloc_flags), as of the event */
};

struct tracker;
typedef void (*mem_event_fn)(void *ctx, const struct tracker *t, const struct tproc *p,
			     const struct mem_event *e);

#define TRACKER_SITE_CACHE 64

struct tracker {
	const struct rules *rules;
	/* Allocations made before a process's first step and left to no rule are retained by
	 * init (CLS_INIT), not leaks: only when steps are the program's own boundaries. */
	bool init_retained;
	frames_fn frames;
	void *frames_ctx;
	site_fn site_of; /* NULL: every site is its call site */
	void *site_ctx;
	/* The deferred rule of each API, once known (index + 1, 0: none): frees look it up. */
	uint16_t defer_by_api[GL_API_MAX];
	uint8_t defer_known[GL_API_MAX];
	bool defer_per_call; /* a deferred rule looks at frames or the pid: every call */
	pending_done_fn pend_done;
	void *pend_done_ctx;
	mem_event_fn mem_ev; /* NULL unless --memory-viz: one test per allocation and free */
	void *mem_ev_ctx;
	struct tproc **procs;
	size_t nr_procs, cap_procs;
	struct site *sites;
	size_t nr_sites, cap_sites;
	struct hmap site_idx;
	struct site_stack *sstacks;
	size_t nr_sstacks, cap_sstacks;
	struct hmap sstack_idx; /* (site, stack id) -> index into sstacks */
	uint32_t *cands;	/* rule indexes, a run per sstack (site_stack.cand_first) */
	size_t nr_cands, cap_cands;
	uint32_t site_cache[TRACKER_SITE_CACHE]; /* site index + 1 by caller, 0: none */
	char **labels; /* interned label strings; tobj.label is index + 1 */
	size_t nr_labels, cap_labels;
	struct hmap label_idx; /* (hash, length) -> index */
	uint64_t records;
	uint64_t bad_records; /* unknown kind or size: counted, skipped */
	uint64_t last_ts_ns;
	/* IPC handles made by any traced process, for the processes that open them (ipc.c) */
	struct ipc_registry *ipc_exports;
};

/*
 * What a record is made under, which says where its allocations go in the graph: nothing,
 * an allocation of a higher layer (OWNER_LAYER: the outer allocation by key, as a pointer
 * into the table would not survive its growth), or an owner (a communicator being made).
 */
struct call_scope {
	uint8_t owner_kind; /* enum owner_kind */
	uint8_t outer_space;
	uint64_t outer_addr;
	uint64_t owner;
};

/*
 * Whether API family inner is a lower layer of the same memory as family outer: the runtime
 * allocates through the driver, NCCL through the runtime and the driver, the driver's VMM
 * underneath it.
 */
static inline bool family_is_lower_layer(unsigned int outer, unsigned int inner)
{
	switch (outer) {
	case GL_FAM_CUDART:
		return inner == GL_FAM_CUDA || inner == GL_FAM_VMM;
	case GL_FAM_NCCL:
		return inner == GL_FAM_CUDART || inner == GL_FAM_CUDA || inner == GL_FAM_VMM;
	case GL_FAM_CUDA:
		return inner == GL_FAM_VMM;
	default:
		return false;
	}
}

/* ---- reading the graph ---- */

/* The live (or pending) allocation of p at (space, addr), or NULL. */
static inline const struct alloc *tracker__alloc(const struct tproc *p, uint8_t space,
						 uint64_t addr)
{
	return alloc_table__find(&p->allocs, space, addr);
}

/* The site (index into sites) of an allocation. */
static inline uint32_t tracker__alloc_site(const struct tracker *t, const struct alloc *a)
{
	return t->sstacks[a->sstack].site;
}

/*
 * Whether p shut down: it ended (exit, exec) rather than being detached, so what it did after
 * its latest allocation (frees on its way out, a reset, a device destroyed, the exit itself)
 * is its shutdown, which the verdict judges apart from its steps.
 */
static inline bool tproc__shut_down(const struct tproc *p)
{
	return p->exited && p->c.allocs;
}

/* Live bytes of site stack ss at its device's peak (struct peak). */
static inline uint64_t sstack__peak_bytes(const struct tproc *p, const struct site *s,
					  const struct site_stack *ss)
{
	const struct peak *pk = s->peak_slot < PEAK_SLOTS ? &p->peak[s->peak_slot] : NULL;

	if (!pk)
		return 0;
	return ss->peak_epoch == pk->epoch ? ss->peak_bytes : ss->live_bytes;
}

static inline uint64_t sstack__peak_count(const struct tproc *p, const struct site *s,
					  const struct site_stack *ss)
{
	const struct peak *pk = s->peak_slot < PEAK_SLOTS ? &p->peak[s->peak_slot] : NULL;

	if (!pk)
		return 0;
	return ss->peak_epoch == pk->epoch ? ss->peak_count : ss->live_count;
}

/* A label by index (tobj.label, site.label), "" for 0. */
static inline const char *tracker__label(const struct tracker *t, uint32_t label)
{
	return label && label <= t->nr_labels ? t->labels[label - 1] : "";
}

/* The first key word of p's objects (tproc.objs) of address space space. */
static inline uint64_t tobj_key(uint8_t space)
{
	return (uint64_t)space << 56 | 1;
}

/* A refcounted object of p by (space, handle), or NULL. */
static inline struct tobj *tproc__obj(const struct tproc *p, uint8_t space, uint64_t handle)
{
	uint64_t *v = hmap__get(&p->objs, tobj_key(space), handle);

	return v ? (struct tobj *)(uintptr_t)*v : NULL;
}

/*
 * What a query wrote through its out-pointer (a catalog entry that copies it at return:
 * RETURNS in catalog.c), len bytes (at most 8); 0 when it was not copied.
 */
static inline uint64_t call__returned(const struct gl_call_rec *r, size_t len)
{
	const struct gl_desc_rec *d = (const struct gl_desc_rec *)r;
	uint64_t v = 0;

	if ((r->hdr.flags & GL_HF_DESC) && !(r->hdr.flags & GL_HF_DESC_READ_FAIL) &&
	    r->hdr.size >= sizeof(*d))
		memcpy(&v, d->desc, len < sizeof(v) ? len : sizeof(v));
	return v;
}

/* Whether VMM handle `handle` of p is mapped somewhere (tproc.maps). */
static inline bool tproc__vmm_mapped(const struct tproc *p, uint64_t handle)
{
	size_t i;

	for (i = 0; i < p->nr_maps; i++)
		if (p->maps[i].handle == handle)
			return true;
	return false;
}

/* The communicator of p with this handle (the latest made), or NULL. */
static inline const struct tcomm *tproc__comm(const struct tproc *p, uint64_t comm)
{
	size_t i = p->nr_comms;

	while (i--)
		if (p->comms[i].comm == comm)
			return &p->comms[i];
	return NULL;
}

#endif
