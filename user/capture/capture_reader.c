// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Reading capture files. Everything in the file is untrusted: lengths are checked against
 * the limits in capture.h before anything is allocated, every payload is CRC-checked before
 * it is inflated, and every decoder runs on a bounds-checked cursor. Any error names the
 * byte offset of the header or block it was found in.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "capture/capture.h"
#include "capture/codec.h"
#include "lib/infile.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

#define MAX_HDR_SIZE 65536
/* A capture holds a handful of processes; a MAPS block lists one process's objects. */
#define MAX_MAP_ENTRIES 65536
#define MAX_ARGS	65536

struct capture_reader {
	int fd; /* -1: reading mem */
	const uint8_t *mem;
	uint64_t size;
	unsigned int flags;
	struct capture_info info;
	char err[320];
	uint64_t good_end; /* end of the last whole block */
	bool finished;	   /* END block read */
	bool truncated;
	bool corrupt;	      /* corrupt() said why in err */
	uint64_t corrupt_off; /* where: the damaged block (or what follows END) */
	bool damaged;	      /* the last read stopped at corrupt_off, in block nr_damaged */
	uint32_t nr_damaged;  /* 1-based, in file order, END counted */
	uint64_t records;
	uint32_t blocks;
	uint32_t nr_read;    /* blocks read whole, END counted */
	struct wbuf io, raw; /* the stored payload (fd), the decoded payload */
	struct rec_decoder dec;
	bool dec_ready;
	z_stream zs; /* one inflate state, reset per block */
	bool zs_ready;
	union rec_buf rec;
};

static int fail(struct capture_reader *r, int err, uint64_t off, const char *fmt, ...)
{
	int n = snprintf(r->err, sizeof(r->err), "offset %" PRIu64 ": ", off);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - n, fmt, ap);
	va_end(ap);
	return err;
}

/*
 * What a block says is wrong (a CRC, a length, an entry that does not decode): the file is
 * damaged from the block at off on, and what came before it can still be reported. -EINVAL.
 */
static int corrupt(struct capture_reader *r, uint64_t off, const char *fmt, ...)
{
	int n = snprintf(r->err, sizeof(r->err), "offset %" PRIu64 ": ", off);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->err + n, sizeof(r->err) - n, fmt, ap);
	va_end(ap);
	r->corrupt = true;
	r->corrupt_off = off;
	return -EINVAL;
}

/* len bytes at off, or NULL with r->err set. */
static const uint8_t *view(struct capture_reader *r, uint64_t off, size_t len, struct wbuf *buf)
{
	size_t done = 0;

	if (off > r->size || len > r->size - off) {
		fail(r, -EIO, off, "read past the end of the file");
		return NULL;
	}
	if (r->fd < 0)
		return r->mem + off;
	buf->len = 0;
	if (!wbuf__reserve(buf, len ? len : 1)) {
		fail(r, -ENOMEM, off, "out of memory");
		return NULL;
	}
	while (done < len) {
		ssize_t n = pread(r->fd, buf->p + done, len - done, off + done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fail(r, n < 0 ? -errno : -EIO, off + done, "read error: %s",
			     n < 0 ? strerror(errno) : "the file shrank while being read");
			return NULL;
		}
		done += n;
	}
	return buf->p;
}

static void get_str(char *dst, size_t size, const uint8_t *src, size_t field)
{
	size_t n = field < size - 1 ? field : size - 1;

	/* NUL-padded in the file, but a full field has no NUL */
	memcpy(dst, src, n);
	dst[n] = 0;
}

static int parse_header(struct capture_reader *r)
{
	struct capture_info *in = &r->info;
	uint8_t *copy = NULL;
	const uint8_t *h;
	uint32_t crc;
	size_t n = r->size < 16 ? r->size : 16;
	int err = 0;

	h = view(r, 0, n, &r->io);
	if (!h)
		return -EIO;
	if (!r->size)
		return fail(r, -EINVAL, 0, "empty file, not a gpuleak capture");
	if (memcmp(h, CAPTURE_MAGIC, n < 8 ? n : 8))
		return fail(r, -EINVAL, 0, "not a gpuleak capture (no capture magic)");
	if (n < 16)
		return fail(r, -EINVAL, r->size, "file ends inside the capture header");
	/* magic, major and minor are where they are in every version: check them first */
	in->major = get_le16(h + HO_MAJOR);
	in->minor = get_le16(h + HO_MINOR);
	if (in->major != CAPTURE_MAJOR)
		return fail(r, -EPROTONOSUPPORT, HO_MAJOR,
			    "capture format %u.%u; this gpuleak reads %u.x "
			    "(use a matching gpuleak)",
			    in->major, in->minor, CAPTURE_MAJOR);
	in->hdr_size = get_le32(h + HO_HDR_SIZE);
	if (in->hdr_size < HO_END || in->hdr_size > MAX_HDR_SIZE)
		return fail(r, -EINVAL, HO_HDR_SIZE, "bad header size %u", in->hdr_size);
	if (r->size < in->hdr_size)
		return fail(r, -EINVAL, r->size, "file ends inside the %u-byte capture header",
			    in->hdr_size);
	h = view(r, 0, in->hdr_size, &r->io);
	if (!h)
		return -EIO;
	crc = get_le32(h + HO_HDR_CRC);
	copy = malloc(in->hdr_size);
	if (!copy)
		return fail(r, -ENOMEM, 0, "out of memory");
	memcpy(copy, h, in->hdr_size);
	put_le32(copy + HO_HDR_CRC, 0);
	if (!(r->flags & CAPTURE_R_NO_CRC) && crc32(0, copy, in->hdr_size) != crc) {
		err = fail(r, -EINVAL, HO_HDR_CRC, "capture header CRC mismatch (corrupt header)");
		goto cleanup;
	}
	in->flags = get_le32(h + HO_FLAGS);
	in->created_realtime_ns = get_le64(h + HO_CREATED);
	in->monotonic_start_ns = get_le64(h + HO_MONO_START);
	in->realtime_offset_ns = (int64_t)get_le64(h + HO_REALTIME_OFF);
	in->boottime_offset_ns = (int64_t)get_le64(h + HO_BOOTTIME_OFF);
	in->page_size = get_le32(h + HO_PAGE_SIZE);
	in->clk_tck = get_le32(h + HO_CLK_TCK);
	in->end_offset = get_le64(h + HO_END_OFFSET);
	in->nr_records = get_le64(h + HO_NR_RECORDS);
	in->nr_blocks = get_le32(h + HO_NR_BLOCKS);
	get_str(in->version, sizeof(in->version), h + HO_VERSION, HO_ARCH - HO_VERSION);
	get_str(in->arch, sizeof(in->arch), h + HO_ARCH, HO_KERNEL - HO_ARCH);
	get_str(in->kernel, sizeof(in->kernel), h + HO_KERNEL, HO_HOSTNAME - HO_KERNEL);
	get_str(in->hostname, sizeof(in->hostname), h + HO_HOSTNAME, HO_END - HO_HOSTNAME);
cleanup:
	free(copy);
	return err;
}

static int reader_new(struct capture_reader **out, unsigned int flags)
{
	struct capture_reader *r = calloc(1, sizeof(*r));

	*out = r;
	if (!r)
		return -ENOMEM;
	r->fd = -1;
	r->flags = flags;
	return 0;
}

/*
 * A pipe copied to an unnamed temporary file, which then reads as a file: the reader reads
 * twice (names, then records) and at offsets, and a capture may be far larger than memory,
 * so it goes to disk ($TMPDIR, else /tmp), SPOOL_CHUNK bytes of memory at a time, and is gone
 * with its descriptor whatever ends gpuleak. The descriptor, or -errno with r->err set.
 */
#define SPOOL_CHUNK (256U << 10)

static int spool(struct capture_reader *r, int in)
{
	const char *dir = getenv("TMPDIR");
	char tmpl[4200];
	uint8_t *buf = NULL;
	int fd, err = 0;

	if (!dir || !*dir)
		dir = "/tmp";
	fd = open(dir, O_TMPFILE | O_RDWR | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
		/* a file system without O_TMPFILE: a named one, unlinked at once */
		snprintf(tmpl, sizeof(tmpl), "%s/gpuleak-stdin-XXXXXX", dir);
		fd = mkostemp(tmpl, O_CLOEXEC);
		if (fd >= 0)
			unlink(tmpl);
	}
	if (fd < 0) {
		err = -errno;
		snprintf(r->err, sizeof(r->err), "copying it to %s (it is read twice): %s", dir,
			 strerror(errno));
		return err;
	}
	buf = malloc(SPOOL_CHUNK);
	if (!buf) {
		err = -ENOMEM;
		snprintf(r->err, sizeof(r->err), "out of memory");
		goto cleanup;
	}
	for (;;) {
		ssize_t n = read(in, buf, SPOOL_CHUNK), done = 0;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			snprintf(r->err, sizeof(r->err), "read error: %s", strerror(errno));
			goto cleanup;
		}
		if (!n)
			break;
		while (done < n) {
			ssize_t w = write(fd, buf + done, n - done);

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				err = w < 0 ? -errno : -EIO;
				snprintf(r->err, sizeof(r->err),
					 "copying it to %s (it is read twice): %s", dir,
					 strerror(-err));
				goto cleanup;
			}
			done += w;
		}
	}
cleanup:
	free(buf);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int capture_reader__open(const char *path, unsigned int flags, struct capture_reader **out)
{
	struct capture_reader *r;
	struct stat st;
	bool stream;
	int err = reader_new(out, flags), in;

	if (err)
		return err;
	r = *out;
	/* A FIFO by name would block here: only "-" and /dev/fd/N are read as pipes. */
	err = infile__open(path, &in, &stream, r->err, sizeof(r->err));
	if (err)
		return err;
	if (stream && isatty(in)) {
		snprintf(r->err, sizeof(r->err),
			 "a terminal: give a capture file, or pipe one in (zcat x.glc.gz | gpuleak "
			 "report -)");
		close(in);
		return -EINVAL;
	}
	if (stream) {
		r->fd = spool(r, in);
		close(in);
		if (r->fd < 0) {
			err = r->fd;
			r->fd = -1;
			return err;
		}
	} else {
		r->fd = in;
	}
	if (fstat(r->fd, &st)) {
		err = -errno;
		snprintf(r->err, sizeof(r->err), "%s", strerror(-err));
		return err;
	}
	r->size = st.st_size;
	return parse_header(r);
}

int capture_reader__open_mem(const void *buf, size_t len, unsigned int flags,
			     struct capture_reader **out)
{
	int err = reader_new(out, flags);

	if (err)
		return err;
	(*out)->mem = buf;
	(*out)->size = len;
	return parse_header(*out);
}

void capture_reader__free(struct capture_reader *r)
{
	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	wbuf__free(&r->io);
	wbuf__free(&r->raw);
	if (r->dec_ready)
		rec_dec__free(&r->dec);
	if (r->zs_ready)
		inflateEnd(&r->zs);
	free(r);
}

const char *capture_reader__error(const struct capture_reader *r)
{
	return r->err;
}

const struct capture_info *capture_reader__info(const struct capture_reader *r)
{
	return &r->info;
}

bool capture_reader__truncated(const struct capture_reader *r, uint64_t *at_offset)
{
	if (at_offset)
		*at_offset = r->good_end;
	return r->truncated;
}

bool capture_reader__damaged(const struct capture_reader *r, uint64_t *at_offset, uint32_t *block)
{
	if (at_offset)
		*at_offset = r->damaged ? r->corrupt_off : 0;
	if (block)
		*block = r->damaged ? r->nr_damaged : 0;
	return r->damaged;
}

bool capture_reader__finished(const struct capture_reader *r)
{
	return r->finished;
}

uint64_t capture_reader__records(const struct capture_reader *r)
{
	return r->records;
}

uint32_t capture_reader__blocks(const struct capture_reader *r)
{
	return r->blocks;
}

uint64_t capture_reader__size(const struct capture_reader *r)
{
	return r->size;
}

const char *capture_block_name(unsigned int type)
{
	switch (type) {
	case CB_RECORDS:
		return "RECORDS";
	case CB_MAPS:
		return "MAPS";
	case CB_SYMBOLS:
		return "SYMBOLS";
	case CB_PROCESS:
		return "PROCESS";
	case CB_STACKS:
		return "STACKS";
	case CB_END:
		return "END";
	case CB_TRIGGER:
		return "TRIGGER";
	default:
		return "unknown";
	}
}

/* Whether everything from off to the end of the file is zero bytes. */
static bool zero_tail(struct capture_reader *r, uint64_t off)
{
	uint8_t buf[4096];

	while (off < r->size) {
		size_t n = r->size - off < sizeof(buf) ? r->size - off : sizeof(buf);
		const uint8_t *p;
		size_t i;

		if (r->fd < 0) {
			p = r->mem + off;
		} else {
			if (pread(r->fd, buf, n, off) != (ssize_t)n)
				return false;
			p = buf;
		}
		for (i = 0; i < n; i++)
			if (p[i])
				return false;
		off += n;
	}
	return true;
}

static int read_records(struct capture_reader *r, const struct capture_block_info *b,
			const uint8_t *p, const struct capture_visitor *v, void *ctx)
{
	uint32_t i;
	int err;

	if (!r->dec_ready) {
		if (rec_dec__init(&r->dec))
			return fail(r, -ENOMEM, b->offset, "out of memory");
		r->dec_ready = true;
	}
	if (rec_dec__begin(&r->dec, p, b->raw_len, b->count))
		return corrupt(r, b->offset, "RECORDS block: %s", r->dec.why);
	for (i = 0; i < b->count; i++) {
		if (rec_dec__next(&r->dec, &r->rec))
			return corrupt(r, b->offset, "RECORDS block, record %u: %s", i, r->dec.why);
		if (v->record) {
			err = v->record(ctx, &r->rec.h);
			if (err)
				return fail(r, err, b->offset, "RECORDS block, record %u: %s", i,
					    strerror(-err));
		}
	}
	if (rec_dec__end(&r->dec))
		return corrupt(r, b->offset, "RECORDS block: %s", r->dec.why);
	r->records += b->count;
	return 0;
}

static int read_maps(struct capture_reader *r, const struct capture_block_info *b, const uint8_t *p,
		     const struct capture_visitor *v, void *ctx)
{
	struct rbuf in = rbuf_of(p, b->raw_len);
	struct capture_map *maps;
	char **strs;
	uint64_t pid;
	uint32_t i;
	int err = 0, serr = 0;

	if (b->count > MAX_MAP_ENTRIES || b->count > b->raw_len)
		return corrupt(r, b->offset, "MAPS block: bad entry count %u", b->count);
	maps = calloc(b->count ? b->count : 1, sizeof(*maps));
	strs = calloc(2 * (size_t)b->count + 1, sizeof(*strs));
	if (!maps || !strs) {
		err = fail(r, -ENOMEM, b->offset, "out of memory");
		goto cleanup;
	}
	pid = rbuf__varint(&in);
	rbuf__varint(&in); /* MAPS_FULL: every snapshot only adds mappings to what we know */
	for (i = 0; i < b->count && !in.bad; i++) {
		struct capture_map *m = &maps[i];
		uint64_t len;

		m->start = rbuf__varint(&in);
		len = rbuf__varint(&in);
		m->end = m->start + len;
		m->pgoff = rbuf__varint(&in);
		m->dev = rbuf__varint(&in);
		m->ino = rbuf__varint(&in);
		m->deleted = rbuf__u8(&in) & MAP_DELETED;
		strs[2 * i] = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
		strs[2 * i + 1] = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
		m->path = strs[2 * i] ? strs[2 * i] : "";
		m->build_id = strs[2 * i + 1] ? strs[2 * i + 1] : "";
		if (m->end < m->start)
			in.bad = true;
	}
	if (serr) {
		err = fail(r, serr, b->offset, "out of memory");
		goto cleanup;
	}
	if (in.bad || rbuf__left(&in) || pid > UINT32_MAX) {
		err = corrupt(r, b->offset, "MAPS block: malformed entry %u", i);
		goto cleanup;
	}
	if (v->maps) {
		err = v->maps(ctx, pid, maps, b->count);
		if (err)
			fail(r, err, b->offset, "MAPS block: %s", strerror(-err));
	}
cleanup:
	for (i = 0; strs && i < 2 * b->count; i++)
		free(strs[i]);
	free(strs);
	free(maps);
	return err;
}

static int read_symbols(struct capture_reader *r, const struct capture_block_info *b,
			const uint8_t *p, const struct capture_visitor *v, void *ctx)
{
	struct rbuf in = rbuf_of(p, b->raw_len);
	uint32_t i;
	int err = 0;

	for (i = 0; i < b->count; i++) {
		struct sym_info si = {};
		uint64_t pid, addr;
		char *mod, *func;
		size_t mod_len;
		int serr = 0;

		pid = rbuf__varint(&in);
		addr = rbuf__varint(&in);
		mod = rbuf__str_len(&in, CAPTURE_MAX_STR, &serr, &mod_len);
		func = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
		si.module = mod;
		/* A JIT frame's script after its module and a NUL (capture.c, put_module_file). */
		if (mod && strlen(mod) + 1 < mod_len)
			si.file = mod + strlen(mod) + 1;
		si.func = func;
		si.func_off = rbuf__varint(&in);
		si.file_off = rbuf__varint(&in);
		if (serr)
			err = fail(r, serr, b->offset, "out of memory");
		else if (in.bad || pid > UINT32_MAX)
			err = corrupt(r, b->offset, "SYMBOLS block: malformed entry %u", i);
		else if (v->symbol && (err = v->symbol(ctx, pid, addr, &si)))
			fail(r, err, b->offset, "SYMBOLS block: %s", strerror(-err));
		free(mod);
		free(func);
		if (err)
			return err;
	}
	if (rbuf__left(&in))
		return corrupt(r, b->offset, "SYMBOLS block: bytes after the last entry");
	return 0;
}

static int read_stacks(struct capture_reader *r, const struct capture_block_info *b,
		       const uint8_t *p, const struct capture_visitor *v, void *ctx)
{
	struct rbuf in = rbuf_of(p, b->raw_len);
	uint64_t frames[STACK_MAX_FRAMES];
	uint32_t i, j;
	int err;

	for (i = 0; i < b->count; i++) {
		struct capture_stack st = {.frames = frames};
		uint64_t pid, id, flags, nofp, nr, prev;

		pid = rbuf__varint(&in);
		id = rbuf__varint(&in);
		st.caller = rbuf__varint(&in);
		flags = rbuf__varint(&in);
		nofp = rbuf__varint(&in);
		nr = rbuf__varint(&in);
		if (in.bad || pid > UINT32_MAX || id > INT32_MAX || nr > STACK_MAX_FRAMES ||
		    nofp > nr)
			return corrupt(r, b->offset, "STACKS block: malformed entry %u", i);
		prev = st.caller;
		for (j = 0; j < nr; j++)
			prev = frames[j] = prev + (uint64_t)rbuf__svarint(&in);
		if (in.bad)
			return corrupt(r, b->offset, "STACKS block: malformed entry %u", i);
		st.pid = pid;
		st.id = (int32_t)id;
		/* a later minor may add flags: what they say is unknown here, not wrong */
		st.flags = (uint32_t)(flags & STACK_FLAGS_KNOWN);
		st.nofp_from = st.flags & STACK_NO_FP ? (uint32_t)nofp : 0;
		st.nr = (uint32_t)nr;
		if (v->stack && (err = v->stack(ctx, &st)))
			return fail(r, err, b->offset, "STACKS block: %s", strerror(-err));
	}
	if (rbuf__left(&in))
		return corrupt(r, b->offset, "STACKS block: bytes after the last entry");
	return 0;
}

static int read_process(struct capture_reader *r, const struct capture_block_info *b,
			const uint8_t *p, const struct capture_visitor *v, void *ctx)
{
	struct rbuf in = rbuf_of(p, b->raw_len);
	struct capture_proc pr = {};
	uint64_t pid, argc;
	uint32_t i;
	int err = 0, serr = 0;

	pid = rbuf__varint(&in);
	pr.start_ticks = rbuf__varint(&in);
	pr.start_realtime_ns = rbuf__varint(&in);
	pr.comm = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
	pr.exe = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
	argc = rbuf__varint(&in);
	/* every argument takes at least its length byte */
	if (in.bad || pid > UINT32_MAX || argc > MAX_ARGS || argc > rbuf__left(&in)) {
		err = corrupt(r, b->offset, "PROCESS block: malformed");
		goto cleanup;
	}
	pr.pid = pid;
	pr.argv = calloc(argc + 1, sizeof(*pr.argv));
	if (!pr.argv) {
		err = fail(r, -ENOMEM, b->offset, "out of memory");
		goto cleanup;
	}
	for (i = 0; i < argc; i++) {
		pr.argv[i] = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
		if (!pr.argv[i] && !serr && !in.bad)
			pr.argv[i] = strdup("");
		if (!pr.argv[i] && !in.bad)
			serr = -ENOMEM;
		if (serr || in.bad)
			break;
		pr.argc++;
	}
	if (serr) {
		err = fail(r, serr, b->offset, "out of memory");
		goto cleanup;
	}
	if (in.bad || rbuf__left(&in) || b->count != 1) {
		err = corrupt(r, b->offset, "PROCESS block: malformed");
		goto cleanup;
	}
	if (v->process && (err = v->process(ctx, &pr)))
		fail(r, err, b->offset, "PROCESS block: %s", strerror(-err));
cleanup:
	for (i = 0; pr.argv && i < pr.argc; i++)
		free(pr.argv[i]);
	free(pr.argv);
	free(pr.comm);
	free(pr.exe);
	return err;
}

static void get_call(struct rbuf *in, struct capture_call *k)
{
	uint64_t api, tid, v;
	int64_t ret, stack;

	k->kind = rbuf__u8(in);
	k->depth = rbuf__u8(in);
	api = rbuf__varint(in);
	tid = rbuf__varint(in);
	ret = rbuf__svarint(in);
	stack = rbuf__svarint(in);
	k->addr = rbuf__varint(in);
	k->size = rbuf__varint(in);
	k->caller = rbuf__varint(in);
	k->ts_ns = rbuf__varint(in);
	v = (uint64_t)ret + INT32_MAX + 1;
	if (api > UINT16_MAX || tid > UINT32_MAX || v > UINT32_MAX || stack < INT32_MIN ||
	    stack > INT32_MAX)
		in->bad = true;
	k->api = (uint16_t)api;
	k->tid = (uint32_t)tid;
	k->ret = (int32_t)ret;
	k->stack_id = (int32_t)stack;
}

/* At most this many processes in one trigger (what the writer names at most). */
#define MAX_TRIGGER_PROCS CAPTURE_MAX_TRIGGER_PROCS

static int read_trigger(struct capture_reader *r, const struct capture_block_info *b,
			const uint8_t *p, const struct capture_visitor *v, void *ctx)
{
	struct rbuf in = rbuf_of(p, b->raw_len);
	struct capture_trigger t = {};
	uint64_t version, cause, pid, tid, flags, src, nr;
	int64_t sig;
	uint32_t i;
	int err = 0, serr = 0;

	version = rbuf__varint(&in);
	cause = rbuf__varint(&in);
	t.name = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
	t.detail = rbuf__str(&in, CAPTURE_MAX_STR, &serr);
	pid = rbuf__varint(&in);
	tid = rbuf__varint(&in);
	t.ts_ns = rbuf__varint(&in);
	sig = rbuf__svarint(&in);
	t.threshold = rbuf__varint(&in);
	flags = rbuf__varint(&in);
	get_call(&in, &t.call);
	get_call(&in, &t.inner);
	t.window_start_ns = rbuf__varint(&in);
	t.window_end_ns = rbuf__varint(&in);
	t.snapshot_init_records = rbuf__varint(&in);
	t.snapshot_records = rbuf__varint(&in);
	t.window_records = rbuf__varint(&in);
	src = rbuf__varint(&in);
	t.mismatch_bytes = rbuf__varint(&in);
	t.mismatch_sites = rbuf__varint(&in);
	t.skipped_bytes = rbuf__varint(&in);
	nr = rbuf__varint(&in);
	if (serr) {
		err = fail(r, serr, b->offset, "out of memory");
		goto cleanup;
	}
	/* every process takes at least eight bytes */
	if (in.bad || !version || cause > UINT32_MAX || pid > UINT32_MAX || tid > UINT32_MAX ||
	    sig < INT32_MIN || sig > INT32_MAX || flags > UINT32_MAX || src > UINT32_MAX ||
	    nr > MAX_TRIGGER_PROCS || nr * 8 > rbuf__left(&in) ||
	    t.snapshot_init_records > t.snapshot_records || b->count != 1) {
		err = corrupt(r, b->offset, "TRIGGER block: malformed");
		goto cleanup;
	}
	t.cause = (uint32_t)cause;
	t.pid = (uint32_t)pid;
	t.tid = (uint32_t)tid;
	t.signal = (int32_t)sig;
	t.flags = (uint32_t)flags;
	t.step_source = (uint32_t)src;
	t.procs = calloc(nr + 1, sizeof(*t.procs));
	if (!t.procs) {
		err = fail(r, -ENOMEM, b->offset, "out of memory");
		goto cleanup;
	}
	for (i = 0; i < nr && !in.bad; i++) {
		struct capture_trigger_proc *tp = &t.procs[i];
		uint64_t ppid = rbuf__varint(&in);

		tp->step = rbuf__svarint(&in);
		tp->step_ts_ns = rbuf__varint(&in);
		tp->live_bytes = rbuf__varint(&in);
		tp->live_count = rbuf__varint(&in);
		tp->pending_bytes = rbuf__varint(&in);
		tp->start_live_bytes = rbuf__varint(&in);
		tp->start_live_count = rbuf__varint(&in);
		if (ppid > UINT32_MAX || tp->step < -1)
			in.bad = true;
		tp->pid = (uint32_t)ppid;
	}
	t.nr_procs = (uint32_t)nr;
	/* A newer layout only adds fields at the end: what follows is not ours to judge. */
	if (in.bad) {
		err = corrupt(r, b->offset, "TRIGGER block: malformed process %u", i);
		goto cleanup;
	}
	if (!t.name)
		t.name = strdup("");
	if (!t.detail)
		t.detail = strdup("");
	if (!t.name || !t.detail) {
		err = fail(r, -ENOMEM, b->offset, "out of memory");
		goto cleanup;
	}
	if (v->trigger && (err = v->trigger(ctx, &t)))
		fail(r, err, b->offset, "TRIGGER block: %s", strerror(-err));
cleanup:
	free((char *)t.name);
	free((char *)t.detail);
	free(t.procs);
	return err;
}

static int read_end(struct capture_reader *r, const struct capture_block_info *b, const uint8_t *p)
{
	struct rbuf in = rbuf_of(p, b->raw_len);
	uint64_t records = rbuf__varint(&in), blocks = rbuf__varint(&in);

	if (in.bad || rbuf__left(&in))
		return corrupt(r, b->offset, "END block: malformed");
	/* Whole blocks missing from the middle pass every CRC: only the totals tell. */
	if (records != r->records || blocks != r->blocks)
		return corrupt(r, b->offset,
			       "END block counts %" PRIu64 " records in %" PRIu64
			       " blocks, the file "
			       "holds %" PRIu64 " in %u",
			       records, blocks, r->records, r->blocks);
	r->finished = true;
	return 0;
}

/* The decoded payload of b (CRC already checked), or NULL. */
static const uint8_t *payload(struct capture_reader *r, const struct capture_block_info *b,
			      const uint8_t *stored)
{
	z_stream *zs = &r->zs;
	int zerr;

	if (b->codec == CC_STORED)
		return stored;
	r->raw.len = 0;
	if (!wbuf__reserve(&r->raw, b->raw_len ? b->raw_len : 1)) {
		fail(r, -ENOMEM, b->offset, "out of memory");
		return NULL;
	}
	if (!r->zs_ready) {
		if (inflateInit(zs) != Z_OK) {
			fail(r, -ENOMEM, b->offset, "out of memory");
			return NULL;
		}
		r->zs_ready = true;
	} else {
		inflateReset(zs);
	}
	zs->next_in = (Bytef *)stored;
	zs->avail_in = b->stored_len;
	zs->next_out = r->raw.p;
	zs->avail_out = b->raw_len;
	zerr = inflate(zs, Z_FINISH);
	/* exactly raw_len bytes from exactly stored_len bytes, nothing more on either side */
	if (zerr != Z_STREAM_END || zs->avail_out || zs->avail_in) {
		corrupt(r, b->offset, "%s block: payload does not decompress (%s)",
			capture_block_name(b->type),
			zerr == Z_STREAM_END  ? "wrong length"
			: zs->msg	      ? zs->msg
			: zerr == Z_BUF_ERROR ? "longer than its length"
					      : zError(zerr));
		return NULL;
	}
	return r->raw.p;
}

/*
 * The block header at off, checked. Returns 1 with *b filled, 0 when the file ends (cut
 * short) at off, or -errno.
 */
static int block_header(struct capture_reader *r, uint64_t off, struct capture_block_info *b)
{
	const uint8_t *h;

	if (r->size - off < CAPTURE_BLOCK_HDR_SIZE)
		return 0;
	h = view(r, off, CAPTURE_BLOCK_HDR_SIZE, &r->io);
	if (!h)
		return -EIO;
	if (memcmp(h + BO_MAGIC, CAPTURE_BLOCK_MAGIC, 4)) {
		/* A recorder killed while the kernel extended the file leaves zeroes behind. */
		if ((r->info.flags & CAPTURE_F_INCOMPLETE) && zero_tail(r, off))
			return 0;
		return corrupt(r, off, "no block magic (corrupt file or not a block boundary)");
	}
	if (!(r->flags & CAPTURE_R_NO_CRC) && crc32(0, h, BO_HDR_CRC) != get_le32(h + BO_HDR_CRC))
		return corrupt(r, off, "block header CRC mismatch (corrupt block header)");
	*b = (struct capture_block_info){
	    .offset = off,
	    .payload_crc = get_le32(h + BO_PAYLOAD_CRC),
	    .type = h[BO_TYPE],
	    .codec = h[BO_CODEC],
	    .flags = get_le16(h + BO_FLAGS),
	    .raw_len = get_le32(h + BO_RAW_LEN),
	    .stored_len = get_le32(h + BO_STORED_LEN),
	    .count = get_le32(h + BO_COUNT),
	};
	if (b->codec != CC_STORED && b->codec != CC_ZLIB)
		return corrupt(r, off, "%s block: unknown codec %u", capture_block_name(b->type),
			       b->codec);
	if (b->raw_len > CAPTURE_MAX_BLOCK)
		return corrupt(r, off, "%s block: %u bytes, more than a block may hold",
			       capture_block_name(b->type), b->raw_len);
	if (b->codec == CC_STORED ? b->stored_len != b->raw_len
				  : b->stored_len > compressBound(b->raw_len))
		return corrupt(r, off, "%s block: stored length %u does not fit %u bytes",
			       capture_block_name(b->type), b->stored_len, b->raw_len);
	if (r->size - off - CAPTURE_BLOCK_HDR_SIZE < b->stored_len)
		return 0;
	return 1;
}

static int read_block(struct capture_reader *r, const struct capture_block_info *b,
		      const struct capture_visitor *v, void *ctx)
{
	const uint8_t *stored, *p;
	int err;

	stored = view(r, b->offset + CAPTURE_BLOCK_HDR_SIZE, b->stored_len, &r->io);
	if (!stored)
		return -EIO;
	if (!(r->flags & CAPTURE_R_NO_CRC) && crc32(0, stored, b->stored_len) != b->payload_crc)
		return corrupt(r, b->offset, "%s block: payload CRC mismatch (corrupt data)",
			       capture_block_name(b->type));
	/* A pass for names only: records are checked (a corrupt file is refused before any
	 * output) but not decoded (the next pass does). */
	if (b->type == CB_RECORDS && !v->record) {
		if (v->block && (err = v->block(ctx, b)))
			return fail(r, err, b->offset, "%s", strerror(-err));
		r->records += b->count;
		return 0;
	}
	p = payload(r, b, stored);
	if (!p)
		return -EINVAL;
	if (v->block && (err = v->block(ctx, b)))
		return fail(r, err, b->offset, "%s", strerror(-err));
	switch (b->type) {
	case CB_RECORDS:
		return read_records(r, b, p, v, ctx);
	case CB_MAPS:
		return read_maps(r, b, p, v, ctx);
	case CB_SYMBOLS:
		return read_symbols(r, b, p, v, ctx);
	case CB_PROCESS:
		return read_process(r, b, p, v, ctx);
	case CB_STACKS:
		return read_stacks(r, b, p, v, ctx);
	case CB_END:
		return read_end(r, b, p);
	case CB_TRIGGER:
		return read_trigger(r, b, p, v, ctx);
	default:
		if (b->flags & CBF_OPTIONAL)
			return 0;
		return fail(r, -EPROTONOSUPPORT, b->offset,
			    "block type %u (%s) needs a newer gpuleak", b->type,
			    capture_block_name(b->type));
	}
}

int capture_reader__read(struct capture_reader *r, const struct capture_visitor *v, void *ctx)
{
	uint64_t off = r->info.hdr_size;
	int err;

	/* Each call reads the file from its first block. */
	r->good_end = off;
	r->finished = r->truncated = r->corrupt = r->damaged = false;
	r->records = 0;
	r->blocks = 0;
	r->nr_read = 0;
	while (off < r->size) {
		struct capture_block_info b;

		err = r->finished ? corrupt(r, off, "data after the END block")
				  : block_header(r, off, &b);
		if (!err)
			break; /* cut short inside this block */
		if (err > 0)
			err = read_block(r, &b, v, ctx);
		if (err < 0 && r->corrupt)
			goto damaged;
		if (err < 0)
			return err;
		off += CAPTURE_BLOCK_HDR_SIZE + b.stored_len;
		r->good_end = off;
		r->nr_read++;
		if (b.type != CB_END)
			r->blocks++;
	}
	r->truncated = !r->finished;
	return 0;
damaged:
	/* What came before the damage is whole: report it, as a cut-short file is. */
	r->damaged = true;
	r->nr_damaged = r->nr_read + 1;
	r->truncated = true;
	return 0;
}
