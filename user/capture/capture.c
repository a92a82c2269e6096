// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>
#include "capture/capture.h"
#include "capture/codec.h"
#include "probe/elf_obj.h"
#include "lib/hmap.h"
#include "lib/outfile.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

#ifndef GPULEAK_VERSION
#define GPULEAK_VERSION "0.1.0"
#endif

/*
 * RECORDS payloads go through zlib with Z_RLE: on column-encoded records nearly all of
 * deflate's gain is Huffman coding (each column is a run of like bytes); string matching
 * adds little. Measured on 10 M generated calls (bench/capture_gen): level 1 5.58
 * bytes/call in 1.39 s of deflate, level 6 5.35 in 4.22 s, Z_RLE 5.47 in 0.63 s, and the
 * recorder competes with the target for CPU. The other blocks are small and mostly paths
 * and names, where string matching is what works.
 */
#define ZLEVEL_RECORDS	  1
#define ZSTRATEGY_RECORDS Z_RLE
#define ZLEVEL_TEXT	  6
#define MAX_BLOCK_BYTES	  (16U << 20)

struct capture {
	struct outfile *file;
	int fd; /* the file's: blocks are written whole, unbuffered */
	struct capture_opts o;
	uint64_t off; /* end of the last whole block */
	int err;      /* first write error: sticky */
	struct rec_encoder enc;
	uint64_t block_ts; /* time of the first record of the block being built */
	struct wbuf payload, zbuf;
	z_stream zs; /* one deflate state, reset per block */
	bool zs_ready;
	struct wbuf syms; /* CB_SYMBOLS entries not written yet */
	uint32_t nr_syms;
	struct hmap syms_done; /* ((u32)pid, addr): written or pending */
	struct wbuf stacks;    /* CB_STACKS entries not written yet */
	uint32_t nr_stacks;
	struct hmap stacks_done; /* (pid | id << 32, caller): written or pending */
	struct hmap maps_done;	 /* ((u32)pid, mapping hash): in some CB_MAPS block */
	struct hmap pids_done;	 /* (pid, 0): a full snapshot was written */
	uint64_t records;	 /* in whole blocks on disk */
	uint64_t record_bytes;
	uint32_t blocks;
	uint64_t mono_start; /* the header's monotonic start */
	uint8_t hdr[CAPTURE_HDR_SIZE];
};

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static void put_str(uint8_t *dst, size_t size, const char *s)
{
	/* NUL-padded (dst is zeroed); a reader terminates a full field itself */
	memcpy(dst, s, strnlen(s, size));
}

static void header_init(struct capture *c)
{
	uint64_t mono = clock_ns(CLOCK_MONOTONIC);
	uint64_t real = clock_ns(CLOCK_REALTIME);
	uint64_t boot = clock_ns(CLOCK_BOOTTIME);
	struct utsname u;
	uint8_t *h = c->hdr;

	memset(h, 0, sizeof(c->hdr));
	memcpy(h + HO_MAGIC, CAPTURE_MAGIC, 8);
	put_le16(h + HO_MAJOR, CAPTURE_MAJOR);
	put_le16(h + HO_MINOR, CAPTURE_MINOR);
	put_le32(h + HO_HDR_SIZE, CAPTURE_HDR_SIZE);
	put_le32(h + HO_FLAGS, CAPTURE_F_INCOMPLETE);
	put_le64(h + HO_CREATED, real);
	put_le64(h + HO_MONO_START, mono);
	c->mono_start = mono;
	put_le64(h + HO_REALTIME_OFF, real - mono);
	put_le64(h + HO_BOOTTIME_OFF, boot - mono);
	put_le32(h + HO_PAGE_SIZE, sysconf(_SC_PAGESIZE));
	put_le32(h + HO_CLK_TCK, sysconf(_SC_CLK_TCK));
	put_str(h + HO_VERSION, HO_ARCH - HO_VERSION, GPULEAK_VERSION);
	if (!uname(&u)) {
		put_str(h + HO_ARCH, HO_KERNEL - HO_ARCH, u.machine);
		put_str(h + HO_KERNEL, HO_HOSTNAME - HO_KERNEL, u.release);
		put_str(h + HO_HOSTNAME, HO_END - HO_HOSTNAME, u.nodename);
	}
}

static void header_seal(struct capture *c)
{
	put_le32(c->hdr + HO_HDR_CRC, 0);
	put_le32(c->hdr + HO_HDR_CRC, crc32(0, c->hdr, CAPTURE_HDR_SIZE));
}

static int write_all(int fd, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (!n)
			return -EIO;
		p += n;
		len -= n;
	}
	return 0;
}

int capture__create(const char *path, const struct capture_opts *opts, struct capture **out,
		    char *why, size_t whylen)
{
	struct capture *c;
	int err;

	*out = NULL;
	if (why && whylen)
		why[0] = 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->o = *opts;
	if (!c->o.block_bytes)
		c->o.block_bytes = CAPTURE_BLOCK_BYTES;
	if (c->o.block_bytes > MAX_BLOCK_BYTES)
		c->o.block_bytes = MAX_BLOCK_BYTES;
	err = rec_enc__init(&c->enc);
	if (err)
		goto cleanup;
	/*
	 * Never an existing file unless forced: a capture is evidence, not scratch. A new one is
	 * written in place (readable while it grows, INCOMPLETE until the end); a forced one
	 * beside the old file, which it replaces only once finished.
	 */
	err = outfile__open(path,
			    opts->atomic  ? OUTFILE_ATOMIC
			    : opts->force ? OUTFILE_REPLACE
					  : OUTFILE_NEW,
			    &c->file, why, whylen);
	if (err)
		goto cleanup;
	c->fd = outfile__fd(c->file);
	header_init(c);
	header_seal(c);
	err = write_all(c->fd, c->hdr, sizeof(c->hdr));
	if (err)
		goto cleanup;
	c->off = sizeof(c->hdr);
	*out = c;
	return 0;
cleanup:
	if (why && whylen && !why[0])
		snprintf(why, whylen, "%s", strerror(-err));
	capture__discard(c);
	return err;
}

static void capture_release(struct capture *c)
{
	rec_enc__free(&c->enc);
	wbuf__free(&c->payload);
	wbuf__free(&c->zbuf);
	if (c->zs_ready)
		deflateEnd(&c->zs);
	wbuf__free(&c->syms);
	hmap__free(&c->syms_done);
	wbuf__free(&c->stacks);
	hmap__free(&c->stacks_done);
	hmap__free(&c->maps_done);
	hmap__free(&c->pids_done);
	free(c);
}

void capture__free(struct capture *c)
{
	if (!c)
		return;
	/* What was written is on disk already (blocks go out whole): closing keeps it where it
	 * is, in place (finished or not) or beside a file it was not finished to replace. */
	outfile__close(c->file);
	capture_release(c);
}

void capture__discard(struct capture *c)
{
	if (!c)
		return;
	outfile__abort(c->file);
	capture_release(c);
}

uint64_t capture__t0_ns(const struct capture *c)
{
	return c->mono_start;
}

const char *capture__path(const struct capture *c)
{
	return outfile__path(c->file);
}

const char *capture__temp_path(const struct capture *c)
{
	return outfile__temp_path(c->file);
}

/* A failed write leaves a partial block: cut it off, so the file ends at a whole block. */
static int fail(struct capture *c, int err)
{
	int ret;

	if (!c->err) {
		c->err = err;
		/* if this fails too, a reader reports the partial block as truncation */
		ret = ftruncate(c->fd, c->off);
		(void)ret;
	}
	return err;
}

static int write_block(struct capture *c, uint8_t type, uint16_t flags, const struct wbuf *raw,
		       uint32_t count)
{
	const uint8_t *stored = raw->p;
	size_t stored_len = raw->len;
	uint8_t codec = CC_STORED, h[CAPTURE_BLOCK_HDR_SIZE];
	int err;

	if (c->err)
		return c->err;
	if (raw->err)
		return fail(c, raw->err);
	if (raw->len > CAPTURE_MAX_BLOCK)
		return fail(c, -EFBIG);
	if (!c->o.store && raw->len) {
		size_t bound = compressBound(raw->len);

		c->zbuf.len = 0;
		if (!wbuf__reserve(&c->zbuf, bound))
			return fail(c, -ENOMEM);
		if (!c->zs_ready) {
			if (deflateInit2(&c->zs, ZLEVEL_RECORDS, Z_DEFLATED, 15, 8,
					 ZSTRATEGY_RECORDS) != Z_OK)
				return fail(c, -ENOMEM);
			c->zs_ready = true;
		}
		deflateReset(&c->zs);
		if (type == CB_RECORDS)
			deflateParams(&c->zs, ZLEVEL_RECORDS, ZSTRATEGY_RECORDS);
		else
			deflateParams(&c->zs, ZLEVEL_TEXT, Z_DEFAULT_STRATEGY);
		c->zs.next_in = raw->p;
		c->zs.avail_in = raw->len;
		c->zs.next_out = c->zbuf.p;
		c->zs.avail_out = bound;
		/* Stored as is when zlib does not make it smaller (tiny blocks). */
		if (deflate(&c->zs, Z_FINISH) == Z_STREAM_END && c->zs.total_out < raw->len) {
			stored = c->zbuf.p;
			stored_len = c->zs.total_out;
			codec = CC_ZLIB;
		}
	}
	memcpy(h + BO_MAGIC, CAPTURE_BLOCK_MAGIC, 4);
	h[BO_TYPE] = type;
	h[BO_CODEC] = codec;
	put_le16(h + BO_FLAGS, flags);
	put_le32(h + BO_RAW_LEN, raw->len);
	put_le32(h + BO_STORED_LEN, stored_len);
	put_le32(h + BO_COUNT, count);
	put_le32(h + BO_PAYLOAD_CRC, crc32(0, stored, stored_len));
	put_le32(h + BO_HDR_CRC, crc32(0, h, BO_HDR_CRC));
	err = write_all(c->fd, h, sizeof(h));
	if (!err)
		err = write_all(c->fd, stored, stored_len);
	if (err)
		return fail(c, err);
	c->off += sizeof(h) + stored_len;
	if (type != CB_END)
		c->blocks++;
	if (type == CB_RECORDS) {
		c->records += count;
		c->record_bytes += sizeof(h) + stored_len;
	}
	return 0;
}

int capture__flush(struct capture *c)
{
	uint32_t n;
	int err;

	if (c->err)
		return c->err;
	if (c->enc.count) {
		c->payload.len = 0;
		n = rec_enc__finish(&c->enc, &c->payload);
		err = write_block(c, CB_RECORDS, 0, &c->payload, n);
		if (err)
			return err;
	}
	if (c->nr_syms) {
		err = write_block(c, CB_SYMBOLS, 0, &c->syms, c->nr_syms);
		if (err)
			return err;
		c->syms.len = 0;
		c->nr_syms = 0;
	}
	if (c->nr_stacks) {
		/* OPTIONAL: a 1.0 reader reports the records, named by call site alone. */
		err = write_block(c, CB_STACKS, CBF_OPTIONAL, &c->stacks, c->nr_stacks);
		if (err)
			return err;
		c->stacks.len = 0;
		c->nr_stacks = 0;
	}
	return 0;
}

int capture__write_record(struct capture *c, const struct gl_hdr *h)
{
	int err;

	if (c->err)
		return c->err;
	if (!c->enc.count)
		c->block_ts = h->ts_ns;
	err = rec_enc__add(&c->enc, h);
	if (err == -ENOMEM)
		return fail(c, err);
	if (err)
		return err; /* a malformed record: not stored, the capture goes on */
	if (rec_enc__len(&c->enc) >= c->o.block_bytes ||
	    (h->ts_ns > c->block_ts && h->ts_ns - c->block_ts >= CAPTURE_FLUSH_NS))
		return capture__flush(c);
	return 0;
}

static void put_capped(struct wbuf *b, const char *s);

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (uint8_t)*s) * 0x100000001b3ULL;
	return h;
}

static uint64_t map_hash(const struct pmap_ent *e)
{
	return hmap_mix(e->start) ^ hmap_mix(e->end + 3 * e->pgoff) ^
	       hmap_mix(e->dev ^ (e->ino << 1)) ^ str_hash(e->path);
}

int capture__add_maps(struct capture *c, const struct proc_maps *m, struct modules *mods)
{
	struct wbuf b = {};
	uint32_t pid = m->pid, n = 0;
	bool full = !hmap__get(&c->pids_done, pid, 0);
	size_t i;
	int err = 0;

	if (c->err)
		return c->err;
	wbuf__varint(&b, pid);
	wbuf__varint(&b, full ? MAPS_FULL : 0);
	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		struct module *mod;

		if (!e->exec || !e->path || hmap__get(&c->maps_done, pid, map_hash(e)))
			continue;
		mod = mods ? modules__get(mods, m->pid, e) : NULL;
		wbuf__varint(&b, e->start);
		wbuf__varint(&b, e->end - e->start);
		wbuf__varint(&b, e->pgoff);
		wbuf__varint(&b, e->dev);
		wbuf__varint(&b, e->ino);
		wbuf__u8(&b, e->deleted ? MAP_DELETED : 0);
		wbuf__str(&b, e->path);
		wbuf__str(&b, mod && mod->elf ? elf_obj__build_id(mod->elf) : "");
		n++;
	}
	if (!n)
		goto cleanup;
	err = write_block(c, CB_MAPS, 0, &b, n);
	if (err)
		goto cleanup;
	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];

		if (e->exec && e->path && hmap__put(&c->maps_done, pid, map_hash(e), 1)) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	if (full)
		err = hmap__put(&c->pids_done, pid, 0, 1);
cleanup:
	wbuf__free(&b);
	return err;
}

int capture__add_map_list(struct capture *c, uint32_t pid, const struct capture_map *v, size_t n)
{
	struct wbuf b = {};
	size_t i;
	int err;

	if (c->err)
		return c->err;
	if (!n)
		return 0;
	wbuf__varint(&b, pid);
	wbuf__varint(&b, MAPS_FULL);
	for (i = 0; i < n; i++) {
		wbuf__varint(&b, v[i].start);
		wbuf__varint(&b, v[i].end - v[i].start);
		wbuf__varint(&b, v[i].pgoff);
		wbuf__varint(&b, v[i].dev);
		wbuf__varint(&b, v[i].ino);
		wbuf__u8(&b, v[i].deleted ? MAP_DELETED : 0);
		put_capped(&b, v[i].path);
		put_capped(&b, v[i].build_id);
	}
	err = write_block(c, CB_MAPS, 0, &b, (uint32_t)n);
	wbuf__free(&b);
	return err;
}

static void put_call(struct wbuf *b, const struct capture_call *k)
{
	wbuf__u8(b, k->kind);
	wbuf__u8(b, k->depth);
	wbuf__varint(b, k->api);
	wbuf__varint(b, k->tid);
	wbuf__svarint(b, k->ret);
	wbuf__svarint(b, k->stack_id);
	wbuf__varint(b, k->addr);
	wbuf__varint(b, k->size);
	wbuf__varint(b, k->caller);
	wbuf__varint(b, k->ts_ns);
}

int capture__add_trigger(struct capture *c, const struct capture_trigger *tr)
{
	struct wbuf b = {};
	uint32_t i;
	int err;

	if (c->err)
		return c->err;
	wbuf__varint(&b, 1); /* this layout; a newer one only adds fields at the end */
	wbuf__varint(&b, tr->cause);
	put_capped(&b, tr->name);
	put_capped(&b, tr->detail);
	wbuf__varint(&b, tr->pid);
	wbuf__varint(&b, tr->tid);
	wbuf__varint(&b, tr->ts_ns);
	wbuf__svarint(&b, tr->signal);
	wbuf__varint(&b, tr->threshold);
	wbuf__varint(&b, tr->flags);
	put_call(&b, &tr->call);
	put_call(&b, &tr->inner);
	wbuf__varint(&b, tr->window_start_ns);
	wbuf__varint(&b, tr->window_end_ns);
	wbuf__varint(&b, tr->snapshot_init_records);
	wbuf__varint(&b, tr->snapshot_records);
	wbuf__varint(&b, tr->window_records);
	wbuf__varint(&b, tr->step_source);
	wbuf__varint(&b, tr->mismatch_bytes);
	wbuf__varint(&b, tr->mismatch_sites);
	wbuf__varint(&b, tr->skipped_bytes);
	wbuf__varint(&b, tr->nr_procs);
	for (i = 0; i < tr->nr_procs; i++) {
		const struct capture_trigger_proc *p = &tr->procs[i];

		wbuf__varint(&b, p->pid);
		wbuf__svarint(&b, p->step);
		wbuf__varint(&b, p->step_ts_ns);
		wbuf__varint(&b, p->live_bytes);
		wbuf__varint(&b, p->live_count);
		wbuf__varint(&b, p->pending_bytes);
		wbuf__varint(&b, p->start_live_bytes);
		wbuf__varint(&b, p->start_live_count);
	}
	/* OPTIONAL: an older reader reports the records; the snapshot's memory then all looks
	 * made before the first step. */
	err = write_block(c, CB_TRIGGER, CBF_OPTIONAL, &b, 1);
	wbuf__free(&b);
	return err;
}

int capture__write_payload(struct capture *c, const uint8_t *p, size_t len, uint32_t count)
{
	struct wbuf v = {.p = (uint8_t *)p, .len = len, .cap = len};
	int err = capture__flush(c);

	if (err)
		return err;
	return count ? write_block(c, CB_RECORDS, 0, &v, count) : 0;
}

int capture__add_process(struct capture *c, const struct capture_proc *p)
{
	struct wbuf b = {};
	uint32_t i;
	int err;

	wbuf__varint(&b, p->pid);
	wbuf__varint(&b, p->start_ticks);
	wbuf__varint(&b, p->start_realtime_ns);
	wbuf__str(&b, p->comm);
	wbuf__str(&b, p->exe);
	wbuf__varint(&b, p->argc);
	for (i = 0; i < p->argc; i++) {
		/* one argument longer than a reader accepts: keep its head */
		size_t n = strnlen(p->argv[i], CAPTURE_MAX_STR);

		wbuf__varint(&b, n);
		wbuf__bytes(&b, p->argv[i], n);
	}
	err = write_block(c, CB_PROCESS, 0, &b, 1);
	wbuf__free(&b);
	return err;
}

bool capture__has_symbol(const struct capture *c, uint32_t pid, uint64_t addr)
{
	return hmap__get(&c->syms_done, pid, addr);
}

static void put_capped(struct wbuf *b, const char *s)
{
	size_t n = s ? strnlen(s, CAPTURE_MAX_STR) : 0;

	wbuf__varint(b, n);
	wbuf__bytes(b, s, n);
}

/*
 * A JIT frame's script (V8's, from the perf map) after its module and a NUL: readers that
 * know it split them, older ones read the module up to the NUL, as it always was.
 */
static void put_module_file(struct wbuf *b, const char *module, const char *file)
{
	size_t m = strnlen(module, CAPTURE_MAX_STR), f = strnlen(file, CAPTURE_MAX_STR);

	if (m + 1 + f > CAPTURE_MAX_STR) {
		put_capped(b, module);
		return;
	}
	wbuf__varint(b, m + 1 + f);
	wbuf__bytes(b, module, m);
	wbuf__bytes(b, "", 1);
	wbuf__bytes(b, file, f);
}

int capture__add_symbol(struct capture *c, uint32_t pid, uint64_t addr, const struct sym_info *si)
{
	if (c->err)
		return c->err;
	if (capture__has_symbol(c, pid, addr))
		return 0;
	if (hmap__put(&c->syms_done, pid, addr, 1))
		return -ENOMEM;
	wbuf__varint(&c->syms, pid);
	wbuf__varint(&c->syms, addr);
	if (!si->python && si->file && si->module)
		put_module_file(&c->syms, si->module, si->file);
	else
		put_capped(&c->syms, si->module);
	put_capped(&c->syms, si->func);
	wbuf__varint(&c->syms, si->func_off);
	wbuf__varint(&c->syms, si->file_off);
	c->nr_syms++;
	return c->syms.err;
}

int capture__add_stack(struct capture *c, const struct ustack *st)
{
	uint64_t k0 = (uint64_t)(uint32_t)st->id << 32 | (uint32_t)st->pid, prev;
	uint16_t i;

	if (c->err)
		return c->err;
	if (hmap__get(&c->stacks_done, k0, st->caller))
		return 0;
	if (hmap__put(&c->stacks_done, k0, st->caller, 1))
		return -ENOMEM;
	wbuf__varint(&c->stacks, (uint32_t)st->pid);
	wbuf__varint(&c->stacks, (uint32_t)st->id);
	wbuf__varint(&c->stacks, st->caller);
	wbuf__varint(&c->stacks, st->flags);
	wbuf__varint(&c->stacks, st->nofp_from);
	wbuf__varint(&c->stacks, st->nr);
	/* Each frame as the difference to the one before (the first to the call site): return
	 * addresses of one stack lie in a few objects. */
	prev = st->caller;
	for (i = 0; i < st->nr; i++) {
		wbuf__svarint(&c->stacks, (int64_t)(st->frames[i] - prev));
		prev = st->frames[i];
	}
	c->nr_stacks++;
	return c->stacks.err;
}

int capture__finish(struct capture *c)
{
	struct wbuf end = {};
	int err;

	err = capture__flush(c);
	if (err)
		return err;
	wbuf__varint(&end, c->records);
	wbuf__varint(&end, c->blocks);
	err = write_block(c, CB_END, 0, &end, 0);
	wbuf__free(&end);
	if (err)
		return err;
	put_le32(c->hdr + HO_FLAGS, 0);
	put_le64(c->hdr + HO_END_OFFSET, c->off);
	put_le64(c->hdr + HO_NR_RECORDS, c->records);
	put_le32(c->hdr + HO_NR_BLOCKS, c->blocks);
	header_seal(c);
	/* The END block already tells readers the recorder finished; the header says it to
	 * those that look no further, and where the file must end. */
	if (pwrite(c->fd, c->hdr, sizeof(c->hdr), 0) != (ssize_t)sizeof(c->hdr) || fsync(c->fd))
		return fail(c, errno ? -errno : -EIO);
	/* Whole: now it may replace what --force was told to replace. */
	err = outfile__place(c->file);
	if (err)
		c->err = err;
	return err;
}

void capture__stats(const struct capture *c, struct capture_stats *st)
{
	st->records = c->records;
	st->record_bytes = c->record_bytes;
	st->bytes = c->off;
	st->blocks = c->blocks;
}
