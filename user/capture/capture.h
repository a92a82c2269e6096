/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Capture files: everything a live session fed its analysis, persisted so `gpuleak report`
 * can run the same analysis later, elsewhere, without privileges or the target's binaries.
 *
 * A file is a header followed by framed blocks (docs/capture-format.md has the byte layout):
 *
 *   header   magic, major/minor, header size, flags (INCOMPLETE until a clean finish),
 *            header CRC, clocks, host facts, gpuleak version
 *   blocks   block header (magic, type, codec, lengths, count, payload CRC, header CRC),
 *            then the payload, zlib-compressed unless that would not make it smaller
 *
 * The writer appends a RECORDS block at least every second and whenever its encoded
 * records reach the block size, so a killed recorder loses at most the last second, and a
 * reader reports everything up to the last whole block. Every number persisted here (block
 * types, flags, codecs) is never renumbered; new ones are added.
 */
#ifndef GPULEAK_CAPTURE_CAPTURE_H
#define GPULEAK_CAPTURE_CAPTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "gpuleak.h"

#define CAPTURE_MAGIC "\x89GLCAP\r\n" /* 8 bytes; \r\n catches text-mode copies */
#define CAPTURE_MAJOR 1		      /* readers refuse another major */
#define CAPTURE_MINOR                                                                              \
	2			   /* readers accept any minor of their major; 1.1 adds
					 * STACKS blocks, 1.2 TRIGGER blocks (OPTIONAL: older
					 * readers skip them) */
#define CAPTURE_HDR_SIZE       264 /* of this minor; readers accept larger */
#define CAPTURE_BLOCK_MAGIC    "GLBK"
#define CAPTURE_BLOCK_HDR_SIZE 28

/* Limits a reader enforces before allocating anything a file asks for. */
#define CAPTURE_MAX_BLOCK	  (64U << 20) /* raw (decoded) payload bytes of one block */
#define CAPTURE_MAX_STR		  4096	      /* paths, names, arguments */
#define CAPTURE_MAX_RAW_REC	  4096	      /* bytes of one record stored verbatim */
#define CAPTURE_MAX_TRIGGER_PROCS 4096	      /* processes one TRIGGER block names */

/* Default RECORDS block: flushed at this many encoded bytes, or after CAPTURE_FLUSH_NS. */
#define CAPTURE_BLOCK_BYTES (1U << 20)
#define CAPTURE_FLUSH_NS    1000000000ULL

/* Header flags. */
enum capture_flags {
	CAPTURE_F_INCOMPLETE = 1 << 0, /* set at create, cleared when the recorder finished */
};

/* Block types; persisted. */
enum capture_block_type {
	CB_RECORDS = 1, /* gl records, column-encoded (capture/codec.c) */
	CB_MAPS = 2,	/* a snapshot of one process's executable mappings */
	CB_SYMBOLS = 3, /* (pid, address) -> function, offset, module */
	CB_PROCESS = 4, /* a traced process: command line, start time */
	CB_STACKS = 5,	/* (pid, stack id, call site) -> frames, flags (since 1.1) */
	CB_END = 6,	/* the recorder finished: totals; always last */
	CB_TRIGGER = 7, /* why gpuleak watch wrote it, and where its snapshot ends (since 1.2) */
};

/* Block flags. */
enum capture_block_flags {
	CBF_OPTIONAL = 1 << 0, /* a reader that does not know the type may skip the block */
};

/* Block payload codecs; persisted. */
enum capture_codec {
	CC_STORED = 0,
	CC_ZLIB = 1,
};

/* ---- writing ---- */

struct capture;
struct proc_maps;
struct modules;
struct sym_info;
struct ustack;

struct capture_opts {
	bool force;	      /* replace an existing file (else -EEXIST) */
	bool atomic;	      /* written beside the path, put there whole at finish (watch) */
	bool store;	      /* never compress (tests, fuzz seeds) */
	uint32_t block_bytes; /* RECORDS flush threshold; 0: CAPTURE_BLOCK_BYTES */
};

/* One executable mapping from a CB_MAPS snapshot. */
struct capture_map {
	uint64_t start, end, pgoff, dev, ino;
	bool deleted;
	const char *path;
	const char *build_id; /* hex; "" when none */
};

/* Why gpuleak watch wrote a capture (CB_TRIGGER); persisted: never renumbered. */
enum capture_cause {
	CAUSE_OOM = 1,	      /* an allocation returned out of memory (or a call failed on it) */
	CAUSE_OOM_KILL = 2,   /* the kernel's OOM killer chose the process */
	CAUSE_LIVE = 3,	      /* its live bytes reached --live-above */
	CAUSE_OOM_SOON = 4,   /* its time to OOM fell below --oom-within */
	CAUSE_SIGNAL = 5,     /* SIGUSR1 to gpuleak: on demand */
	CAUSE_FAULT = 6,      /* the process died of a signal that dumps core */
	CAUSE_WGPU_ERROR = 7, /* a WebGPU creation returned an error object */
};

/* A traced call as its record said (the call a trigger fired at). */
struct capture_call {
	uint8_t kind, depth;
	uint16_t api;
	uint32_t tid;
	int32_t ret, stack_id;
	uint64_t addr, size, caller, ts_ns;
};

/* Where one process of a watch capture stood. */
struct capture_trigger_proc {
	uint32_t pid;
	int64_t step;	     /* at the window's start (-1: before its first step) */
	uint64_t step_ts_ns; /* when that step began */
	/* at the trigger, as the live analysis had them: what the report must come to */
	uint64_t live_bytes, live_count, pending_bytes;
	/* at the window's start: what the snapshot holds */
	uint64_t start_live_bytes, start_live_count;
};

enum capture_trigger_flags {
	CTF_CALL = 1 << 0,  /* call: the failing call */
	CTF_INNER = 1 << 1, /* inner: the call under it that ran out (cuMemAlloc in cudaMalloc) */
	CTF_VERIFIED = 1 << 2, /* the snapshot was fed back and compared with what it is of */
	CTF_EXACT = 1 << 3,    /* ... and came out the same */
};

/*
 * What a CB_TRIGGER block says: the cause, the process and call it fired at, and the window:
 * the capture's first snapshot_records records rebuild the live state at the window's start
 * (engine/snapshot.h: the first snapshot_init_records of them before each process's first
 * step), the window_records after them are the records the recorder kept.
 */
struct capture_trigger {
	uint32_t cause; /* enum capture_cause */
	const char *name;
	const char *detail; /* one line: what happened */
	uint32_t pid, tid;
	uint64_t ts_ns;	    /* record time of the trigger */
	int32_t signal;	    /* CAUSE_FAULT: the signal */
	uint64_t threshold; /* CAUSE_LIVE: bytes; CAUSE_OOM_SOON: ns */
	uint32_t flags;	    /* enum capture_trigger_flags */
	struct capture_call call, inner;
	uint64_t window_start_ns, window_end_ns;
	uint64_t snapshot_init_records, snapshot_records, window_records;
	uint32_t step_source;			 /* enum step_source of the recording */
	uint64_t mismatch_bytes, mismatch_sites; /* CTF_VERIFIED and not CTF_EXACT */
	uint64_t skipped_bytes;			 /* live bytes the snapshot could not rebuild */
	struct capture_trigger_proc *procs;
	uint32_t nr_procs;
};

/* What a capture says about one traced process (CB_PROCESS). */
struct capture_proc {
	uint32_t pid;
	uint64_t start_ticks;	    /* /proc/PID/stat starttime, clock ticks after boot */
	uint64_t start_realtime_ns; /* the same as wall-clock time; 0 if unknown */
	char *comm;
	char *exe;
	char **argv;
	uint32_t argc;
};

/*
 * Create path (lib/outfile: mode 0600, since it names code paths of someone's process; under
 * sudo the invoking user's) and write the header with INCOMPLETE set. Never through a
 * symlink, never over anything but a regular file; an existing file is -EEXIST unless
 * opts->force, and then it is replaced only when capture__finish succeeds (the new capture is
 * written beside it until then). 0, or -errno with why (for "cannot create PATH: WHY").
 */
int capture__create(const char *path, const struct capture_opts *opts, struct capture **out,
		    char *why, size_t whylen);
/*
 * Append one record to the RECORDS block being built; writes the block out when it is full
 * or a second (of record time) old. After a write error every call returns that error and
 * the file keeps what was whole before it.
 */
int capture__write_record(struct capture *c, const struct gl_hdr *h);
/* Executable mappings of m->pid, with build-ids from mods (may be NULL); skipped when they
 * did not change since the last snapshot of that pid. */
int capture__add_maps(struct capture *c, const struct proc_maps *m, struct modules *mods);
/* A full snapshot of pid's executable mappings as the reader hands them (a copy kept). */
int capture__add_map_list(struct capture *c, uint32_t pid, const struct capture_map *v, size_t n);
/* Why the capture was written (gpuleak watch). */
int capture__add_trigger(struct capture *c, const struct capture_trigger *tr);
/* count records encoded by the codec (rec_enc__finish) as one RECORDS block, after what is
 * buffered. */
int capture__write_payload(struct capture *c, const uint8_t *p, size_t len, uint32_t count);
int capture__add_process(struct capture *c, const struct capture_proc *p);
/* The name of one address, written with the next block (once per (pid, address)). */
int capture__add_symbol(struct capture *c, uint32_t pid, uint64_t addr, const struct sym_info *si);
bool capture__has_symbol(const struct capture *c, uint32_t pid, uint64_t addr);
/* A user stack (frames, flags), written with the next block, once per (pid, id, caller). */
int capture__add_stack(struct capture *c, const struct ustack *st);
/* Write what is buffered (records, symbols) now. */
int capture__flush(struct capture *c);
/* Flush, append the END block, clear INCOMPLETE, and put the file in place (over the file
 * --force replaces). 0 or the first error of the session. */
int capture__finish(struct capture *c);
/* Frees; a capture not finished stays INCOMPLETE on disk, where capture__temp_path says when
 * it was to replace a file. Accepts NULL. */
void capture__free(struct capture *c);
/* Frees and removes the file: a capture of nothing worth keeping. Accepts NULL. */
void capture__discard(struct capture *c);

struct capture_stats {
	uint64_t records;
	uint64_t record_bytes; /* on disk, RECORDS blocks with their headers */
	uint64_t bytes;	       /* whole file */
	uint32_t blocks;
};
void capture__stats(const struct capture *c, struct capture_stats *st);
const char *capture__path(const struct capture *c);
/* Where the capture is written until it is finished, when that is not its path (--force over
 * an existing file): NULL otherwise. */
const char *capture__temp_path(const struct capture *c);
/* The capture's time origin (CLOCK_MONOTONIC at create): a report of it prints times
 * relative to this, so a live session that records uses it too. */
uint64_t capture__t0_ns(const struct capture *c);

/* ---- reading ---- */

/* The header's facts. */
struct capture_info {
	uint16_t major, minor;
	uint32_t hdr_size;
	uint32_t flags;
	uint64_t created_realtime_ns;
	uint64_t monotonic_start_ns; /* records' clock (CLOCK_MONOTONIC) at create */
	int64_t realtime_offset_ns;  /* CLOCK_REALTIME - CLOCK_MONOTONIC at create */
	int64_t boottime_offset_ns;  /* CLOCK_BOOTTIME - CLOCK_MONOTONIC at create */
	uint32_t page_size;
	uint32_t clk_tck;
	uint64_t end_offset; /* 0 unless the recorder finished */
	uint64_t nr_records; /* 0 unless the recorder finished */
	uint32_t nr_blocks;
	char version[33];
	char arch[17];
	char kernel[65];
	char hostname[65];
};

/* One user stack from a CB_STACKS block: frames innermost first, frames[0] the call site. */
struct capture_stack {
	uint32_t pid;
	int32_t id;
	uint64_t caller;
	uint32_t flags; /* enum stack_flags; bits unknown to this gpuleak cleared */
	uint32_t nofp_from;
	uint32_t nr;
	const uint64_t *frames;
};

struct capture_block_info {
	uint64_t offset; /* of the block header */
	uint8_t type, codec;
	uint16_t flags;
	uint32_t raw_len, stored_len, count;
	uint32_t payload_crc;
};

/*
 * What the reader hands its user, in file order. Any callback may be NULL; a nonzero return
 * stops the read with that value (-errno). Pointers are valid during the call only.
 */
struct capture_visitor {
	int (*record)(void *ctx, const struct gl_hdr *h);
	int (*maps)(void *ctx, uint32_t pid, const struct capture_map *v, size_t n);
	int (*symbol)(void *ctx, uint32_t pid, uint64_t addr, const struct sym_info *si);
	int (*stack)(void *ctx, const struct capture_stack *st);
	int (*process)(void *ctx, const struct capture_proc *p);
	int (*block)(void *ctx, const struct capture_block_info *b); /* before its content */
	int (*trigger)(void *ctx, const struct capture_trigger *t);
};

/* Reader flags. */
enum capture_read_flags {
	CAPTURE_R_NO_CRC = 1 << 0, /* fuzzing: reach the decoders with mutated payloads */
};

struct capture_reader;

/*
 * Open a file (or a buffer the caller keeps alive) and check its header. 0 or -errno; on
 * error with a reader out, capture_reader__error says what and where. path "-" is standard
 * input, and /dev/fd/N an inherited pipe (lib/infile: a FIFO by name is refused, never waited
 * on): a pipe is copied to an unnamed temporary file first, since the file is read twice.
 */
int capture_reader__open(const char *path, unsigned int flags, struct capture_reader **out);
int capture_reader__open_mem(const void *buf, size_t len, unsigned int flags,
			     struct capture_reader **out);
void capture_reader__free(struct capture_reader *r);
/* "offset 4096: block CRC mismatch": the last error, "" when none. */
const char *capture_reader__error(const struct capture_reader *r);
const struct capture_info *capture_reader__info(const struct capture_reader *r);
/*
 * Read every block to the end, calling v; again from the start on every call. A visitor
 * without a record callback checks RECORDS payloads but does not decode them (a pass for
 * names before the records). Returns 0 when the file ended cleanly, was cut short
 * (capture_reader__truncated) or is damaged from a block on (capture_reader__damaged: v saw
 * everything before it), -errno on a read error or a callback's error.
 */
int capture_reader__read(struct capture_reader *r, const struct capture_visitor *v, void *ctx);
/* Whether the file ended inside a block or without an END block; and where the last whole
 * block ended. */
bool capture_reader__truncated(const struct capture_reader *r, uint64_t *at_offset);
/*
 * Whether the last read stopped at a damaged block (a CRC mismatch, a length or entry that
 * does not hold; capture_reader__error says what): at_offset is where the damage starts,
 * block its number (1-based, in file order). What came before it was read, and the read
 * returned 0: capture_reader__truncated is true, at the end of the last whole block.
 */
bool capture_reader__damaged(const struct capture_reader *r, uint64_t *at_offset, uint32_t *block);
/* Whether an END block was read (the recorder finished). */
bool capture_reader__finished(const struct capture_reader *r);
uint64_t capture_reader__records(const struct capture_reader *r);
uint32_t capture_reader__blocks(const struct capture_reader *r);
uint64_t capture_reader__size(const struct capture_reader *r);

const char *capture_block_name(unsigned int type);

#endif
