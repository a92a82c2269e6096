/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * The payload codec of CB_RECORDS blocks: gl records (72 bytes for a call) in a few bytes
 * each before zlib, decoded back bit for bit.
 *
 * Each field goes to its own column (docs/capture-format.md lists them) so zlib sees long
 * runs of like data: the record heads of an allocate/free loop repeat, the call-site codes
 * repeat, and what is left is mostly the time deltas. Fields are predicted from a model
 * both sides update the same way, record by record:
 *
 *   thread     one of the last 7 (pid, tid) pairs, else a literal
 *   call site  an index into the block's dictionary of return addresses; each entry also
 *              predicts the API, size and aux arguments of the next call from that site
 *   address    an allocation's: one of the 16 addresses freed last (caching allocators hand
 *              those out again), else a delta from the last address; a free's: how many
 *              allocations ago it was allocated (up to 65536), else a delta
 *   time       a signed delta from the previous record (ring buffer order is not time order
 *              across CPUs); a sync's entry time as its distance from its return
 *
 * Records that are not traced calls or ticks (process events, loss counters, future kinds,
 * records of another size) are stored verbatim. The model restarts with every block: a
 * block decodes on its own.
 */
#ifndef GPULEAK_CAPTURE_CODEC_H
#define GPULEAK_CAPTURE_CODEC_H

#include <stdint.h>
#include "lib/bytes.h"
#include "capture/capture.h"
#include "gpuleak.h"

/*
 * Byte offsets of the file header (little-endian). Fields are only ever added at the end,
 * with a new minor; hdr_size tells readers how much there is.
 */
enum capture_hdr_off {
	HO_MAGIC = 0,	      /* 8 bytes */
	HO_MAJOR = 8,	      /* u16 */
	HO_MINOR = 10,	      /* u16 */
	HO_HDR_SIZE = 12,     /* u32 */
	HO_FLAGS = 16,	      /* u32 enum capture_flags */
	HO_HDR_CRC = 20,      /* u32 CRC-32 of hdr_size bytes, this field as 0 */
	HO_CREATED = 24,      /* u64 CLOCK_REALTIME ns at create */
	HO_MONO_START = 32,   /* u64 CLOCK_MONOTONIC ns at create */
	HO_REALTIME_OFF = 40, /* s64 CLOCK_REALTIME - CLOCK_MONOTONIC */
	HO_BOOTTIME_OFF = 48, /* s64 CLOCK_BOOTTIME - CLOCK_MONOTONIC */
	HO_PAGE_SIZE = 56,    /* u32 */
	HO_CLK_TCK = 60,      /* u32 */
	HO_END_OFFSET = 64,   /* u64 file size at finish, 0 before */
	HO_NR_RECORDS = 72,   /* u64 at finish */
	HO_NR_BLOCKS = 80,    /* u32 at finish, END excluded */
	HO_RESERVED = 84,     /* u32 0 */
	HO_VERSION = 88,      /* 32 bytes, NUL-padded: gpuleak version */
	HO_ARCH = 120,	      /* 16 bytes: uname machine */
	HO_KERNEL = 136,      /* 64 bytes: uname release */
	HO_HOSTNAME = 200,    /* 64 bytes: uname nodename */
	HO_END = 264,	      /* CAPTURE_HDR_SIZE of minor 0 */
};

/* Byte offsets of a block header (little-endian). */
enum capture_blk_off {
	BO_MAGIC = 0,	     /* 4 bytes "GLBK" */
	BO_TYPE = 4,	     /* u8 enum capture_block_type */
	BO_CODEC = 5,	     /* u8 enum capture_codec */
	BO_FLAGS = 6,	     /* u16 enum capture_block_flags */
	BO_RAW_LEN = 8,	     /* u32 payload bytes once decoded */
	BO_STORED_LEN = 12,  /* u32 payload bytes in the file */
	BO_COUNT = 16,	     /* u32 records or entries */
	BO_PAYLOAD_CRC = 20, /* u32 CRC-32 of the stored payload */
	BO_HDR_CRC = 24,     /* u32 CRC-32 of the 24 bytes before it */
	BO_END = 28,
};

/* CB_MAPS flags. */
enum capture_maps_flags {
	MAPS_FULL = 1 << 0, /* every executable mapping at the scan; else only new ones */
};

/* Map entry flags. */
enum capture_map_flags {
	MAP_DELETED = 1 << 0,
};

enum rec_col {
	COL_HEAD,   /* u8 per record: kind code | thread slot << 3 | API_LIT | HAS_MASK */
	COL_TS,	    /* svarint delta per record (verbatim records carry their own) */
	COL_THREAD, /* varint pid, tid: thread slot 7 */
	COL_CALLER, /* varint: 0 = literal caller follows, else dictionary index + 1 */
	COL_API,    /* varint api: API_LIT */
	COL_MASK,   /* u8 enum rec_mask: HAS_MASK */
	COL_ADDR,   /* varint code [+ svarint delta] */
	COL_SIZE,   /* varint: M_SIZE */
	COL_AUX,    /* varint: M_AUX */
	COL_AUX2,   /* svarint ts - aux2 for syncs; varint aux2 for others with M_AUX2 */
	COL_EXT,    /* ret, stack_id, depth, flags as their mask bits say */
	COL_RAW,    /* varint length, bytes: verbatim records */
	NR_COLS,
};

/* Kind codes in the low 3 bits of a head; 1..6 are GL_REC_ALLOC..GL_REC_NOTIFY. */
#define HEAD_TICK	0
#define HEAD_RAW	7
#define HEAD_THREAD_LIT 7 /* thread slot: pid and tid follow in COL_THREAD */
#define HEAD_API_LIT	0x40
#define HEAD_HAS_MASK	0x80

/* Fields that differ from their prediction. */
enum rec_mask {
	M_SIZE = 1 << 0,  /* predicted: the site's last size */
	M_AUX = 1 << 1,	  /* predicted: the site's last aux */
	M_AUX2 = 1 << 2,  /* predicted: the site's last aux2 (never set for syncs) */
	M_RET = 1 << 3,	  /* predicted: 0 */
	M_STACK = 1 << 4, /* predicted: -1 */
	M_DEPTH = 1 << 5, /* predicted: 0 */
	M_FLAGS = 1 << 6, /* predicted: 0 */
	M_ALL = 0x7f,
};

#define CODEC_THREADS	 7
#define CODEC_SITES	 4096
#define CODEC_ALLOC_RING 65536 /* power of two */
#define CODEC_FREE_RING	 16    /* power of two */

/* ADDR codes. */
#define ADDR_NULL 0
#define ADDR_LIT  1
#define ADDR_REF  2 /* + index: free ring (allocations) or distance - 1 (frees) */

struct codec_site {
	uint64_t caller;
	uint64_t size, aux, aux2;
	uint16_t api;
};

/* What both sides know after the same records. */
struct rec_model {
	uint64_t prev_ts;
	uint64_t last_addr;
	uint32_t thr[CODEC_THREADS][2];
	uint8_t nr_thr, next_thr;
	uint32_t nr_sites, cap_sites;
	struct codec_site *sites; /* grows to CODEC_SITES */
	uint64_t *alloc_ring;	  /* grows to CODEC_ALLOC_RING, then wraps */
	uint64_t nr_allocs;
	uint32_t cap_ring;
	uint64_t free_ring[CODEC_FREE_RING];
	uint64_t nr_frees;
};

struct rec_encoder {
	struct rec_model m;
	struct wbuf col[NR_COLS];
	uint32_t *site_hash; /* 2 * CODEC_SITES slots: site index + 1, 0 empty */
	struct addr_slot {
		uint64_t addr, seq;
	} * addr_hash; /* CODEC_ALLOC_RING slots, direct mapped */
	uint32_t count;
	int err; /* sticky -ENOMEM */
};

/* Large enough for any record a capture may hold, aligned for every gl struct. */
union rec_buf {
	struct gl_hdr h;
	struct gl_call_rec call;
	uint8_t raw[CAPTURE_MAX_RAW_REC];
	uint64_t align;
};

struct rec_decoder {
	struct rec_model m;
	struct rbuf col[NR_COLS];
	uint32_t count, done;
	const char *why; /* what was wrong, for the reader's message */
};

int rec_enc__init(struct rec_encoder *e);
void rec_enc__free(struct rec_encoder *e);
/* 0 or -ENOMEM (the encoder is then unusable). */
int rec_enc__add(struct rec_encoder *e, const struct gl_hdr *h);
/* Encoded bytes so far in this block. */
size_t rec_enc__len(const struct rec_encoder *e);
/* Append the block's payload to out and start a new block. Returns the record count. */
uint32_t rec_enc__finish(struct rec_encoder *e, struct wbuf *out);

int rec_dec__init(struct rec_decoder *d);
void rec_dec__free(struct rec_decoder *d);
/* Start decoding a payload holding count records. 0 or -EINVAL (d->why). */
int rec_dec__begin(struct rec_decoder *d, const uint8_t *p, size_t len, uint32_t count);
/* The next record into *out. 0, or -EINVAL (d->why). */
int rec_dec__next(struct rec_decoder *d, union rec_buf *out);
/* After count records: -EINVAL if any column has bytes left. */
int rec_dec__end(struct rec_decoder *d);

#endif
