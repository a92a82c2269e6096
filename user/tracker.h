/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The tracker: the live allocation graph of every traced process, rebuilt from records.
 * It is fed the same record stream live (ring buffer) and offline (capture file), and is
 * the only place that decides what a record means; it never reads /proc or the clock.
 */
#ifndef GPULEAK_TRACKER_H
#define GPULEAK_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"
#include "hmap.h"

enum alloc_state {
	AS_LIVE = 0,
	AS_PENDING = 1,		/* async free issued, its stream has not completed yet */
};

enum alloc_flags {
	ALLOC_UNSIZED = 1 << 0,	/* bytes unknown (a texture format gpuleak has no size for) */
};

/* One live allocation. 32 bytes: the table is sized for ten million of them. */
struct alloc {
	uint64_t addr;
	uint64_t size;
	uint64_t ts_ns;		/* when it was allocated */
	uint32_t site;		/* index into tracker sites */
	uint8_t ns;		/* enum cat_ns */
	uint8_t state;		/* enum alloc_state */
	uint16_t flags;		/* enum alloc_flags */
};

/* Open addressing keyed by (ns, addr); slots with size == 0 and addr == 0 are free. */
struct alloc_table {
	struct alloc *slots;
	size_t cap;		/* power of two */
	size_t n;
};

/*
 * Where allocations come from: (process, API, device, owner, call site). Live bytes per site
 * are kept up to date on every record, so reports and timelines never walk the allocations.
 */
struct site {
	pid_t pid;
	uint16_t api;
	int16_t device;		/* CUDA device ordinal, -1 for host memory or none */
	uint64_t caller;	/* return address in the caller */
	uint64_t owner;		/* handle of the owning object (a WebGPU device), 0: none */
	uint32_t next_owner;	/* next site of the same key with another owner, or UINT32_MAX */
	int32_t stack_id;
	int32_t last_err;	/* last error code of a failed call here */
	uint64_t unsized;	/* live allocations of unknown bytes (counted, 0 bytes) */
	uint64_t live_bytes;
	uint64_t live_count;
	uint64_t pending_bytes;
	uint64_t pending_count;
	uint64_t allocs;
	uint64_t alloc_bytes;
	uint64_t frees;
	uint64_t failed;
};

struct pending_free {
	uint64_t addr;
	uint64_t stream;	/* stream key (see tracker.c: stream_key), or the WebGPU queue */
	uint64_t ts_ns;		/* when the free was issued */
	uint64_t serial;	/* by_serial: done once the queue has completed this submit */
	uint8_t ns;		/* enum cat_ns */
	bool by_serial;		/* a queue's submit serial completes it, not a stream sync */
};

/*
 * A refcounted object (WebGPU buffer, texture, device) beyond its memory: references the
 * program holds, its owner, label and where it gained references. Memory objects live here
 * from creation to their last release; owners from first sight to their last release.
 */
enum tobj_flags {
	TOBJ_OWNER = 1 << 0,	/* owns other objects (a device) */
	TOBJ_DESTROYED = 1 << 1, /* its memory is gone, the handle is still referenced */
	TOBJ_ERROR = 1 << 2,	/* an error object: never memory */
};

#define TOBJ_ADDREF_SITES 4

struct tobj {
	uint64_t handle;
	uint64_t owner;		/* owning object's handle, 0: none */
	int64_t refs;		/* created with 1; AddRef +1, Release -1 */
	uint32_t label;		/* index into tracker labels + 1, 0: none */
	uint32_t ordinal;	/* owners: 1, 2, ... in order of first sight in the process */
	uint8_t ns;
	uint8_t flags;		/* enum tobj_flags */
	uint16_t nr_addref;
	/* AddRef call sites (tracker sites) and how many references each added */
	uint32_t addref_site[TOBJ_ADDREF_SITES];
	uint32_t addref_count[TOBJ_ADDREF_SITES];
};

/* A WebGPU queue: submits are numbered, completion callbacks report how far work got. */
struct tqueue {
	uint64_t handle;
	uint64_t owner;		/* its device, 0: unknown (got before attach) */
	uint64_t submitted;	/* submits seen */
	uint64_t done;		/* submits known complete */
};

/* A completion callback registered for a queue's work up to a submit serial. */
struct queue_watch {
	uint64_t queue;
	uint64_t serial;
	uint64_t userdata1, userdata2;
};

struct proc_counters {
	uint64_t allocs;
	uint64_t alloc_bytes;
	uint64_t frees;
	uint64_t freed_bytes;
	uint64_t failed_calls;
	uint64_t unknown_frees;	/* pointer never seen: allocated before attach, or untraced */
	uint64_t null_frees;	/* free(NULL): legal no-op */
	uint64_t double_frees;	/* freed again while its async free was pending */
	uint64_t addr_reuse;	/* allocation returned an address still live here */
	uint64_t async_reuse;	/* stream-ordered reuse of a pending block: legal */
	uint64_t calls;		/* every traced call seen */
	uint64_t error_objects;	/* creations that returned an error object (not memory) */
	uint64_t owner_frees;	/* frees done by destroying their owner (device) */
	uint64_t unknown_refs;	/* AddRef/Release/Destroy of objects never seen created */
	uint64_t unmatched_done; /* completion callbacks matching no registration */
};

struct tproc {
	pid_t pid;
	bool attached;
	bool exited;
	bool detached;
	int exit_status;
	uint64_t start_ticks;
	uint64_t first_ts_ns, last_ts_ns;
	char comm[16];
	struct alloc_table allocs;
	uint64_t live_bytes, live_count;
	uint64_t pending_bytes, pending_count;
	struct pending_free *pend;
	size_t nr_pend, cap_pend;
	struct hmap threads;	/* tid -> current device + 1 */
	struct hmap events;	/* cudaEvent -> stream key of its last record */
	struct hmap objs;	/* (ns, handle) -> struct tobj * */
	struct hmap queues;	/* queue handle -> struct tqueue * */
	struct queue_watch *watch;	/* in registration order */
	size_t nr_watch, cap_watch;
	uint32_t nr_owners;	/* owners seen: the next ordinal */
	struct proc_counters c;
	uint64_t loss[GL_STAT_MAX];	/* latest cumulative BPF loss counts */
	uint64_t records;
};

struct tracker {
	struct tproc **procs;
	size_t nr_procs, cap_procs;
	struct site *sites;
	size_t nr_sites, cap_sites;
	struct hmap site_idx;
	char **labels;		/* interned label strings; tobj.label is index + 1 */
	size_t nr_labels, cap_labels;
	struct hmap label_idx;	/* (hash, length) -> index */
	uint64_t records;
	uint64_t bad_records;	/* unknown kind or size: counted, skipped */
	uint64_t last_ts_ns;
};

int tracker__new(struct tracker **out);
void tracker__free(struct tracker *t);
/* Apply one record. Returns 0, or -EINVAL for a record it cannot decode (counted). */
int tracker__apply(struct tracker *t, const struct gl_hdr *h);
struct tproc *tracker__proc(struct tracker *t, pid_t pid);

/* Total bytes that count against a process's losses (records lost or calls untracked). */
uint64_t tproc__dropped(const struct tproc *p);

/* A refcounted object of p by (ns, handle), or NULL. */
struct tobj *tproc__obj(const struct tproc *p, uint8_t ns, uint64_t handle);
/* The label of an object, "" when it has none. */
const char *tracker__label(const struct tracker *t, const struct tobj *o);

#endif
