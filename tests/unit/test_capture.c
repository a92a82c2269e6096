// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Capture files without a tracer: the record codec rebuilds every record bit for bit, the
 * writer and reader agree on everything a capture holds, a file cut anywhere reads as its
 * whole blocks, and no single flipped bit anywhere goes unnoticed.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "capture/capture.h"
#include "capture/codec.h"
#include "check.h"
#include "probe/proc_maps.h"
#include "symbols/symbolizer.h"

static unsigned int seed = 12345;

static uint64_t rnd(void)
{
	return (uint64_t)rand_r(&seed) << 33 ^ (uint64_t)rand_r(&seed) << 11 ^ rand_r(&seed);
}

/* A value from a small set most of the time, anything now and then. */
static uint64_t pick(const uint64_t *v, size_t n)
{
	return rnd() % 8 ? v[rnd() % n] : rnd();
}

/*
 * A stream of every kind of record, shaped like a trace (repeating sites, sizes, threads,
 * frees of recent allocations) with a dose of anything (extreme values, odd sizes, unknown
 * kinds, time going backwards) so every path of the codec runs.
 */
struct gen {
	uint64_t ts;
	uint64_t live[256];
	size_t nr_live;
	uint64_t freed[8];
	size_t nr_freed;
	uint64_t next_addr;
};

static size_t gen_record(struct gen *g, union rec_buf *out)
{
	static const uint64_t callers[] = {0x401016, 0x401234, 0x7f0012345678, 0};
	static const uint64_t sizes[] = {0, 4096, 2 << 20, 1000, ~0ULL};
	static const uint64_t streams[] = {0, 1, 2, 0x55555555a000};
	static const uint16_t apis[] = {
	    GL_API_CUDA_MALLOC,
	    GL_API_CUDA_MALLOC_ASYNC,
	    GL_API_CUDA_FREE,
	    GL_API_CUDA_FREE_ASYNC,
	    GL_API_CUDA_STREAM_SYNCHRONIZE,
	    GL_API_LD_DEBUG_STATE,
	    0xffff,
	};
	static const uint32_t tids[] = {100, 101, 102, 103, 104, 105, 106, 107, 108};
	struct gl_call_rec *r = &out->call;
	unsigned int what = rnd() % 100;
	size_t i;

	memset(out, 0, 256); /* the largest record made here */
	g->ts += rnd() % 16 ? rnd() % 50000 : -(rnd() % 1000);
	if (what < 5) {
		out->h =
		    (struct gl_hdr){.size = sizeof(out->h), .kind = GL_REC_TICK, .ts_ns = g->ts};
		if (what == 0)
			out->h.pid = 7; /* not a plain tick: stored verbatim */
		return out->h.size;
	}
	if (what < 8) {
		/* verbatim: a process event, a loss record, or something from the future */
		size_t len = what == 5	 ? sizeof(struct gl_proc_rec)
			     : what == 6 ? sizeof(struct gl_loss_rec)
					 : 24 + rnd() % 200;

		for (i = 0; i < len; i++)
			out->raw[i] = rnd();
		out->h.size = len;
		out->h.kind = what == 5 ? GL_REC_PROC : what == 6 ? GL_REC_LOSS : 200;
		out->h.ts_ns = g->ts;
		return len;
	}
	r->hdr.size = sizeof(*r);
	r->hdr.pid = what < 10 ? (uint32_t)rnd() : 4242;
	r->hdr.tid = tids[rnd() % 9];
	r->hdr.ts_ns = g->ts;
	r->hdr.api = apis[rnd() % 7];
	r->caller = pick(callers, 4);
	r->stack_id = rnd() % 10 ? -1 : (int32_t)rnd();
	r->hdr.depth = rnd() % 10 ? 0 : rnd();
	r->hdr.flags = rnd() % 20 ? 0 : rnd();
	r->ret = rnd() % 10 ? 0 : (int32_t)rnd();
	r->size = pick(sizes, 5);
	r->aux = pick(streams, 4);
	r->aux2 = rnd() % 4 ? 0 : rnd();
	if (what < 50) {
		r->hdr.kind = GL_REC_ALLOC;
		if (g->nr_freed && rnd() % 2)
			r->addr = g->freed[rnd() % g->nr_freed];
		else
			r->addr = rnd() % 20  ? (g->next_addr += 4096 * (1 + rnd() % 4))
				  : rnd() % 2 ? 0
					      : ~0ULL;
		if (r->addr && g->nr_live < 256)
			g->live[g->nr_live++] = r->addr;
	} else if (what < 85) {
		r->hdr.kind = GL_REC_FREE;
		if (g->nr_live && rnd() % 8) {
			i = rnd() % g->nr_live;
			r->addr = g->live[i];
			g->live[i] = g->live[--g->nr_live];
			g->freed[g->nr_freed++ % 8] = r->addr;
			if (g->nr_freed > 8)
				g->nr_freed = 8;
		} else {
			r->addr = rnd() % 2 ? 0 : rnd();
		}
	} else {
		r->hdr.kind = GL_REC_ALLOC_FAIL + rnd() % 5; /* ALLOC_FAIL..NOTIFY */
		if (r->hdr.kind == GL_REC_FREE)
			r->hdr.kind = GL_REC_SYNC;
		r->addr = rnd() % 2 ? 0 : rnd();
		if (r->hdr.kind == GL_REC_SYNC)
			r->aux2 = g->ts - rnd() % 100000;
	}
	return sizeof(*r);
}

static void codec_round_trip(void)
{
	enum { N = 200000, BLOCK = 5000 };
	struct rec_encoder enc;
	struct rec_decoder dec;
	struct wbuf payload = {};
	struct gen g = {.ts = 1ULL << 40, .next_addr = 0x7f0000000000};
	union rec_buf *recs = calloc(BLOCK, sizeof(*recs)), out;
	size_t lens[BLOCK];
	int i, j, bad = 0;

	if (!CHECK(recs && !rec_enc__init(&enc) && !rec_dec__init(&dec), "init"))
		return;
	for (i = 0; i < N / BLOCK && !bad; i++) {
		for (j = 0; j < BLOCK; j++) {
			lens[j] = gen_record(&g, &recs[j]);
			if (!CHECK(!rec_enc__add(&enc, &recs[j].h), "add record %d", j))
				goto cleanup;
		}
		payload.len = 0;
		CHECK_U64(rec_enc__finish(&enc, &payload), BLOCK, "records in the block");
		if (!CHECK(!rec_dec__begin(&dec, payload.p, payload.len, BLOCK), "begin: %s",
			   dec.why))
			goto cleanup;
		for (j = 0; j < BLOCK; j++) {
			if (!CHECK(!rec_dec__next(&dec, &out), "block %d record %d: %s", i, j,
				   dec.why))
				goto cleanup;
			if (!CHECK(out.h.size == lens[j] && !memcmp(&out, &recs[j], lens[j]),
				   "block %d record %d (kind %u) differs after decoding", i, j,
				   recs[j].h.kind)) {
				bad = 1;
				break;
			}
		}
		if (!bad)
			CHECK(!rec_dec__end(&dec), "end: %s", dec.why);
	}
cleanup:
	wbuf__free(&payload);
	rec_enc__free(&enc);
	rec_dec__free(&dec);
	free(recs);
}

/* A typical allocate/free stream: what a record costs before zlib (printed, not checked;
 * bench/capture_bench.sh measures whole files). */
static void codec_typical_stream_size(void)
{
	struct rec_encoder enc;
	struct wbuf payload = {};
	struct gl_call_rec r = {.hdr = {.size = sizeof(r), .pid = 4242, .tid = 4242},
				.stack_id = -1};
	uint64_t addrs[64];
	int i, n = 0;

	if (!CHECK(!rec_enc__init(&enc), "init"))
		return;
	for (i = 0; i < 64; i++)
		addrs[i] = 0x7f0000000000 + (uint64_t)i * (2 << 20);
	for (i = 0; i < 100000; i++) {
		r.hdr.ts_ns += 1000 + rnd() % 4000;
		r.hdr.api = i % 2 ? GL_API_CUDA_FREE : GL_API_CUDA_MALLOC;
		r.hdr.kind = i % 2 ? GL_REC_FREE : GL_REC_ALLOC;
		r.caller = i % 2 ? 0x401100 : 0x401000 + 0x20 * (i / 2 % 3);
		r.size = i % 2 ? 0 : 2 << 20;
		r.addr = addrs[(i / 2) % 64];
		rec_enc__add(&enc, &r.hdr);
		n++;
	}
	rec_enc__finish(&enc, &payload);
	printf("  codec: %.2f bytes/record before zlib (alloc/free pairs)\n",
	       (double)payload.len / n);
	CHECK(payload.len < (size_t)n * 8, "column coding keeps a call under 8 bytes: %zu / %d",
	      payload.len, n);
	wbuf__free(&payload);
	rec_enc__free(&enc);
}

/* ---- files ---- */

struct seen {
	union rec_buf *recs;
	size_t n, cap;
	int maps, map_entries, symbols, procs;
	char sym_name[128];
	char argv1[64];
	char build_id[64];
};

static int seen_record(void *ctx, const struct gl_hdr *h)
{
	struct seen *s = ctx;

	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 1024;
		union rec_buf *v = realloc(s->recs, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->recs = v;
		s->cap = cap;
	}
	memcpy(&s->recs[s->n++], h, h->size);
	return 0;
}

static int seen_maps(void *ctx, uint32_t pid, const struct capture_map *v, size_t n)
{
	struct seen *s = ctx;

	(void)pid;
	s->maps++;
	s->map_entries += n;
	if (n)
		snprintf(s->build_id, sizeof(s->build_id), "%s", v[0].build_id);
	return 0;
}

static int seen_symbol(void *ctx, uint32_t pid, uint64_t addr, const struct sym_info *si)
{
	struct seen *s = ctx;

	(void)pid;
	(void)addr;
	s->symbols++;
	snprintf(s->sym_name, sizeof(s->sym_name), "%s+%llu %s", si->func ? si->func : "-",
		 (unsigned long long)si->func_off, si->module ? si->module : "-");
	return 0;
}

static int seen_process(void *ctx, const struct capture_proc *p)
{
	struct seen *s = ctx;

	s->procs++;
	if (p->argc > 1)
		snprintf(s->argv1, sizeof(s->argv1), "%s", p->argv[1]);
	return 0;
}

static const struct capture_visitor seen_visitor = {
    .record = seen_record,
    .maps = seen_maps,
    .symbol = seen_symbol,
    .process = seen_process,
};

static char dir[] = "/tmp/gpuleak-unit-XXXXXX";

/* A capture of n generated records in small blocks, with every other block type. Returns
 * the records written through *recs (caller frees) and the file's bytes through *buf. */
static int make_capture(const char *path, size_t n, union rec_buf **recs, uint8_t **buf,
			size_t *len, bool store)
{
	struct capture_opts o = {.block_bytes = 2000, .store = store};
	char *argv[] = {"loop", "40", NULL};
	struct capture_proc p = {.pid = 4242,
				 .start_ticks = 99,
				 .comm = "loop",
				 .exe = "/opt/loop",
				 .argv = argv,
				 .argc = 2};
	struct pmap_ent ents[2] = {
	    {.start = 0x400000, .end = 0x402000, .pgoff = 0, .exec = true, .path = "/opt/loop"},
	    {.start = 0x7f0000000000,
	     .end = 0x7f0000100000,
	     .pgoff = 0x1000,
	     .exec = true,
	     .path = "/opt/lib/libcudart.so.13"},
	};
	struct proc_maps m = {.pid = 4242, .v = ents, .n = 2};
	struct sym_info si = {.module = "loop", .func = "leaky_sampler", .func_off = 0x14};
	struct gen g = {.ts = 1ULL << 40, .next_addr = 0x7f0000000000};
	struct capture *c = NULL;
	struct stat st;
	FILE *f = NULL;
	size_t i;
	int err;

	*recs = calloc(n ? n : 1, sizeof(**recs));
	*buf = NULL;
	err = *recs ? capture__create(path, &o, &c, NULL, 0) : -ENOMEM;
	if (err)
		goto cleanup;
	err = capture__add_process(c, &p);
	if (!err)
		err = capture__add_maps(c, &m, NULL);
	for (i = 0; !err && i < n; i++) {
		gen_record(&g, &(*recs)[i]);
		err = capture__write_record(c, &(*recs)[i].h);
		if (i == n / 2 && !err)
			err = capture__add_symbol(c, 4242, 0x401014, &si);
	}
	if (!err)
		err = capture__finish(c);
	if (err)
		goto cleanup;
	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &st)) {
		err = -EIO;
		goto cleanup;
	}
	*len = st.st_size;
	*buf = malloc(*len);
	if (!*buf || fread(*buf, 1, *len, f) != *len)
		err = -EIO;
cleanup:
	if (f)
		fclose(f);
	capture__free(c);
	return err;
}

static void file_round_trip(void)
{
	char path[64];
	union rec_buf *recs = NULL;
	uint8_t *buf = NULL;
	struct capture_reader *r = NULL;
	struct seen s = {};
	struct stat st;
	size_t len, i;

	snprintf(path, sizeof(path), "%s/rt.glc", dir);
	if (!CHECK(!make_capture(path, 3000, &recs, &buf, &len, false), "write the capture"))
		goto cleanup;
	if (CHECK(!stat(path, &st), "stat"))
		CHECK_U64(st.st_mode & 0777, 0600, "file mode");
	if (!CHECK(!capture_reader__open(path, 0, &r), "open: %s",
		   r ? capture_reader__error(r) : ""))
		goto cleanup;
	CHECK_U64(capture_reader__info(r)->flags, 0, "INCOMPLETE cleared at finish");
	if (!CHECK(!capture_reader__read(r, &seen_visitor, &s), "read: %s",
		   capture_reader__error(r)))
		goto cleanup;
	CHECK(capture_reader__finished(r) && !capture_reader__truncated(r, NULL), "finished");
	CHECK_U64(s.n, 3000, "records read back");
	for (i = 0; i < s.n && i < 3000; i++)
		if (!CHECK(!memcmp(&s.recs[i], &recs[i], recs[i].h.size), "record %zu differs", i))
			break;
	CHECK_U64(s.procs, 1, "process blocks");
	CHECK(!strcmp(s.argv1, "40"), "argv[1]: %s", s.argv1);
	CHECK_U64(s.maps, 1, "maps blocks");
	CHECK_U64(s.map_entries, 2, "map entries");
	CHECK_U64(s.symbols, 1, "symbols");
	CHECK(!strcmp(s.sym_name, "leaky_sampler+20 loop"), "symbol: %s", s.sym_name);
	CHECK(capture_reader__blocks(r) > 20, "small blocks: %u", capture_reader__blocks(r));
	/* A second create of the same path refuses; --force replaces. */
	{
		struct capture *c = NULL;
		struct capture_opts o = {};

		CHECK(capture__create(path, &o, &c, NULL, 0) == -EEXIST, "existing file refused");
		o.force = true;
		CHECK(!capture__create(path, &o, &c, NULL, 0), "--force replaces");
		capture__free(c);
	}
cleanup:
	unlink(path);
	capture_reader__free(r);
	free(s.recs);
	free(recs);
	free(buf);
}

/* Where a read found damage: the offset and number of the block, 0 when none. */
struct damage {
	uint64_t at;
	uint32_t block;
};

/* Read a buffer; returns the reader's result, records through s. */
static int read_mem_damaged(const uint8_t *buf, size_t len, struct seen *s, bool *truncated,
			    struct damage *d)
{
	struct capture_reader *r = NULL;
	int err;

	s->n = 0;
	err = capture_reader__open_mem(buf, len, 0, &r);
	if (!err)
		err = capture_reader__read(r, &seen_visitor, s);
	if (!err && truncated)
		*truncated = capture_reader__truncated(r, NULL);
	if (!err && d && !capture_reader__damaged(r, &d->at, &d->block))
		*d = (struct damage){};
	if (err)
		CHECK(capture_reader__error(r)[0], "an error says why");
	capture_reader__free(r);
	return err;
}

static int read_mem(const uint8_t *buf, size_t len, struct seen *s, bool *truncated)
{
	return read_mem_damaged(buf, len, s, truncated, NULL);
}

static void cut_anywhere(void)
{
	char path[64];
	union rec_buf *recs = NULL;
	uint8_t *buf = NULL;
	struct seen s = {};
	size_t len, cut, prev = 0;
	int failures = 0;

	snprintf(path, sizeof(path), "%s/cut.glc", dir);
	if (!CHECK(!make_capture(path, 800, &recs, &buf, &len, false), "write the capture"))
		goto cleanup;
	for (cut = 0; cut <= len && failures < 5; cut++) {
		bool truncated = false;
		int err = read_mem(buf, cut, &s, &truncated);

		if (cut < CAPTURE_HDR_SIZE) {
			failures += !CHECK(err < 0, "cut at %zu in the header is an error", cut);
			continue;
		}
		failures += !CHECK(!err, "cut at %zu reads", cut);
		failures += !CHECK(truncated == (cut < len), "cut at %zu: truncated", cut);
		/* what was read is a prefix of what was written, and only grows */
		failures += !CHECK(s.n >= prev && s.n <= 800, "cut at %zu: %zu records", cut, s.n);
		failures +=
		    !CHECK(!s.n || !memcmp(&s.recs[s.n - 1], &recs[s.n - 1], recs[s.n - 1].h.size),
			   "cut at %zu: last record", cut);
		prev = s.n;
	}
	CHECK_U64(prev, 800, "all records at full length");
cleanup:
	unlink(path);
	free(s.recs);
	free(recs);
	free(buf);
}

/* Whether byte i of a capture is in the file header or a block header. */
static bool in_header(const uint8_t *buf, size_t len, size_t i)
{
	size_t off = CAPTURE_HDR_SIZE;

	if (i < off)
		return true;
	while (off + CAPTURE_BLOCK_HDR_SIZE <= len) {
		if (i < off + CAPTURE_BLOCK_HDR_SIZE)
			return i >= off;
		off += CAPTURE_BLOCK_HDR_SIZE + get_le32(buf + off + BO_STORED_LEN);
	}
	return false;
}

/* The block byte i is in: its offset, its number (1-based), the records before it. */
static void block_of(const uint8_t *buf, size_t len, size_t i, struct damage *d,
		     size_t *records_before)
{
	size_t off = CAPTURE_HDR_SIZE, next;

	*d = (struct damage){.at = off, .block = 1};
	*records_before = 0;
	while (off + CAPTURE_BLOCK_HDR_SIZE <= len) {
		next = off + CAPTURE_BLOCK_HDR_SIZE + get_le32(buf + off + BO_STORED_LEN);
		if (i < next)
			return;
		if (buf[off + BO_TYPE] == CB_RECORDS)
			*records_before += get_le32(buf + off + BO_COUNT);
		off = next;
		*d = (struct damage){.at = off, .block = d->block + 1};
	}
}

/*
 * Every bit of every header, one bit (rotating) of every payload byte: CRCs and the END
 * block's totals leave no place where a flip reads as a good file. A flip in the file header
 * is an error; one in a block damages the file from that block on, named by its offset and
 * number, and exactly the records of the whole blocks before it are read.
 */
static void every_bit_flip_is_noticed_where_it_is(void)
{
	char path[64];
	union rec_buf *recs = NULL;
	uint8_t *buf = NULL;
	struct seen s = {};
	size_t len, i, before;
	int bit, failures = 0;

	snprintf(path, sizeof(path), "%s/flip.glc", dir);
	for (int store = 0; store < 2; store++) {
		if (!CHECK(!make_capture(path, 300, &recs, &buf, &len, store), "write"))
			goto cleanup;
		for (i = 0; i < len && failures < 5; i++) {
			bool all = in_header(buf, len, i);
			struct damage want, got;

			block_of(buf, len, i, &want, &before);
			for (bit = all ? 0 : i % 8; bit < (all ? 8 : (int)(i % 8) + 1); bit++) {
				int err;

				buf[i] ^= 1 << bit;
				err = read_mem_damaged(buf, len, &s, NULL, &got);
				if (i < CAPTURE_HDR_SIZE) {
					failures += !CHECK(err < 0,
							   "flip of bit %d at %zu (of %zu, "
							   "%s) in the header unnoticed",
							   bit, i, len, store ? "stored" : "zlib");
				} else {
					failures += !CHECK(
					    !err && got.at == want.at && got.block == want.block &&
						s.n == before,
					    "flip of bit %d at %zu (of %zu, %s): damage at %" PRIu64
					    " (block %u), %zu records; expected %" PRIu64
					    " (block %u), %zu",
					    bit, i, len, store ? "stored" : "zlib", got.at,
					    got.block, s.n, want.at, want.block, before);
				}
				buf[i] ^= 1 << bit;
			}
		}
		CHECK(!read_mem(buf, len, &s, NULL), "intact file reads");
		unlink(path);
		free(recs);
		free(buf);
		recs = NULL;
		buf = NULL;
	}
cleanup:
	unlink(path);
	free(s.recs);
	free(recs);
	free(buf);
}

static void bad_files(void)
{
	uint8_t hdr[CAPTURE_HDR_SIZE + 10];
	struct capture_reader *r = NULL;
	char path[64];
	union rec_buf *recs = NULL;
	uint8_t *buf = NULL;
	size_t len;

	memset(hdr, 'x', sizeof(hdr));
	CHECK(capture_reader__open_mem(hdr, 0, 0, &r) == -EINVAL, "empty");
	CHECK(strstr(capture_reader__error(r), "offset 0: empty file"), "%s",
	      capture_reader__error(r));
	capture_reader__free(r);
	CHECK(capture_reader__open_mem(hdr, sizeof(hdr), 0, &r) == -EINVAL, "text");
	CHECK(strstr(capture_reader__error(r), "not a gpuleak capture"), "%s",
	      capture_reader__error(r));
	capture_reader__free(r);
	snprintf(path, sizeof(path), "%s/major.glc", dir);
	if (CHECK(!make_capture(path, 10, &recs, &buf, &len, false), "write")) {
		buf[HO_MAJOR] = 2;
		buf[HO_MINOR] = 0;
		CHECK(capture_reader__open_mem(buf, len, 0, &r) == -EPROTONOSUPPORT, "major 2");
		CHECK(strstr(capture_reader__error(r), "offset 8: capture format 2.0"), "%s",
		      capture_reader__error(r));
		capture_reader__free(r);
		buf[HO_MAJOR] = 1;
		buf[HO_MINOR] = CAPTURE_MINOR;
		/* A newer minor with a longer header still reads (the CRC covers it all). */
		CHECK(!capture_reader__open_mem(buf, len, 0, &r), "intact");
		capture_reader__free(r);
	}
	unlink(path);
	free(recs);
	free(buf);
}

static void symbolizer_offline(void)
{
	struct symbolizer *s;
	struct sym_info si = {.module = "libx.so", .func = "f", .func_off = 4};

	if (!CHECK(!symbolizer__new(NULL, &s), "new"))
		return;
	CHECK(!symbolizer__add_map(s, 7, 0x1000, 0x2000, 0x3000, "/gone/libx.so"), "map");
	CHECK(!strcmp(symbolizer__name(s, 7, 0x1010), "libx.so+0x3010"), "from the map: %s",
	      symbolizer__name(s, 7, 0x1010));
	CHECK(!strcmp(symbolizer__name(s, 7, 0x5000), "0x5000"), "unmapped: %s",
	      symbolizer__name(s, 7, 0x5000));
	CHECK(!strcmp(symbolizer__name(s, 8, 0x1010), "0x1010"), "other pid");
	CHECK(!symbolizer__set(s, 7, 0x1020, &si), "set");
	CHECK(!strcmp(symbolizer__name(s, 7, 0x1020), "f+0x4 (libx.so)"), "preloaded: %s",
	      symbolizer__name(s, 7, 0x1020));
	CHECK(!strcmp(symbolizer__module(s, 7, 0x1020), "libx.so"), "module");
	/* An address unmapped when first asked is named once its mapping is known. */
	CHECK(!symbolizer__add_map(s, 7, 0x5000, 0x6000, 0, "/gone/liby.so"), "map");
	CHECK(!strcmp(symbolizer__name(s, 7, 0x5000), "liby.so+0x0"), "late map: %s",
	      symbolizer__name(s, 7, 0x5000));
	symbolizer__free(s);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"capture_codec_round_trip", codec_round_trip},
	    {"capture_codec_typical_stream_size", codec_typical_stream_size},
	    {"capture_file_round_trip", file_round_trip},
	    {"capture_cut_anywhere_reads_whole_blocks", cut_anywhere},
	    {"capture_every_bit_flip_is_noticed_where_it_is",
	     every_bit_flip_is_noticed_where_it_is},
	    {"capture_bad_files", bad_files},
	    {"capture_symbolizer_offline", symbolizer_offline},
	};
	int ret;

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	ret = run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
	rmdir(dir);
	return ret;
}
