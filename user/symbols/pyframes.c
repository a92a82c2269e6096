// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hmap.h"
#include "lib/vec.h"
#include "probe/py_abi.h"
#include "symbols/pyframes.h"

/* Persisted in captures (docs/capture-format.md): their layout never moves. */
_Static_assert(offsetof(struct gl_py_code_rec, data) == 52, "gl_py_code_rec");
_Static_assert(sizeof(((struct gl_py_code_rec *)0)->data) == 3488, "gl_py_code_rec");
_Static_assert(offsetof(struct gl_py_stack_rec, frames) == 48, "gl_py_stack_rec");
_Static_assert(sizeof(struct gl_py_frame) == 16, "gl_py_frame");

/* One address standing for a Python frame: a code object (index into codes) at a line. */
struct pframe {
	uint32_t code;
	int32_t line;
};

struct pyframes {
	struct py_code **codes; /* one allocation each: callers keep pointers */
	size_t nr_codes, cap_codes;
	struct hmap code_idx; /* ((u32)pid | fp << 32, code) -> index into codes */
	struct py_stack **stacks;
	size_t nr_stacks, cap_stacks;
	struct hmap stack_idx; /* ((u32)pid, id) -> index into stacks */
	struct pframe *frames;
	size_t nr_frames, cap_frames;
	struct hmap frame_idx; /* (code index + 1, line) -> index into frames */
	uint64_t bad;
};

int pyframes__new(struct pyframes **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void code_free(struct py_code *c)
{
	if (!c)
		return;
	free(c->file);
	free(c->name);
	free(c->table);
	free(c);
}

void pyframes__free(struct pyframes *pf)
{
	size_t i;

	if (!pf)
		return;
	for (i = 0; i < pf->nr_codes; i++)
		code_free(pf->codes[i]);
	for (i = 0; i < pf->nr_stacks; i++)
		free(pf->stacks[i]);
	free(pf->codes);
	free(pf->stacks);
	free(pf->frames);
	hmap__free(&pf->code_idx);
	hmap__free(&pf->stack_idx);
	hmap__free(&pf->frame_idx);
	free(pf);
}

uint64_t pyframes__bad(const struct pyframes *pf)
{
	return pf->bad;
}

/* ---- strings ---- */

static size_t put_utf8(char *out, uint32_t c)
{
	/* What a terminal or a file name should never carry: shown as '?'. */
	if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0) || c > 0x10ffff)
		c = '?';
	if (c < 0x80) {
		out[0] = (char)c;
		return 1;
	}
	if (c < 0x800) {
		out[0] = (char)(0xc0 | c >> 6);
		out[1] = (char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		out[0] = (char)(0xe0 | c >> 12);
		out[1] = (char)(0x80 | ((c >> 6) & 0x3f));
		out[2] = (char)(0x80 | (c & 0x3f));
		return 3;
	}
	out[0] = (char)(0xf0 | c >> 18);
	out[1] = (char)(0x80 | ((c >> 12) & 0x3f));
	out[2] = (char)(0x80 | ((c >> 6) & 0x3f));
	out[3] = (char)(0x80 | (c & 0x3f));
	return 4;
}

/* A str's code units (PEP 393 kind 1, 2 or 4 bytes each) as UTF-8; NULL without memory. */
static char *str_utf8(const uint8_t *p, size_t len, unsigned int kind, bool cut_start)
{
	size_t n = len / kind, i, o = 0;
	char *out = malloc(4 * n + 4);

	if (!out)
		return NULL;
	if (cut_start)
		o += (size_t)sprintf(out, "...");
	for (i = 0; i < n; i++) {
		uint32_t c;

		if (kind == 1)
			c = p[i];
		else if (kind == 2)
			c = (uint32_t)p[2 * i] | (uint32_t)p[2 * i + 1] << 8;
		else
			c = (uint32_t)p[4 * i] | (uint32_t)p[4 * i + 1] << 8 |
			    (uint32_t)p[4 * i + 2] << 16 | (uint32_t)p[4 * i + 3] << 24;
		o += put_utf8(out + o, c);
	}
	out[o] = 0;
	return out;
}

/* ---- records ---- */

static uint64_t code_k0(pid_t pid, uint32_t fp)
{
	/* never HMAP_EMPTY: a pid is below 2^31 */
	return (uint64_t)fp << 32 | (uint32_t)pid;
}

static bool kind_ok(uint8_t k)
{
	return k == 1 || k == 2 || k == 4;
}

static int add_code(struct pyframes *pf, const struct gl_py_code_rec *r)
{
	size_t fixed = offsetof(struct gl_py_code_rec, data), used;
	struct py_code *c;
	uint64_t *at;

	if (r->hdr.size < fixed)
		return -EINVAL;
	used = (size_t)r->file_len + r->name_len + r->table_len;
	if (used > r->hdr.size - fixed || r->file_len > GL_PY_FILE_MAX ||
	    r->name_len > GL_PY_NAME_MAX || r->table_len > GL_PY_TABLE_MAX ||
	    !kind_ok(r->file_kind) || !kind_ok(r->name_kind) || r->file_len % r->file_kind ||
	    r->name_len % r->name_kind || r->hdr.pid > INT32_MAX)
		return -EINVAL;
	at = hmap__get(&pf->code_idx, code_k0((pid_t)r->hdr.pid, r->fp), r->code);
	/* Sent again (its seen-entry was evicted, or a fork's child shows it): the first one
	 * stays, unless that was only a placeholder for frames that came without it. */
	if (at && pf->codes[*at]->described)
		return 0;
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->pid = (pid_t)r->hdr.pid;
	c->code = r->code;
	c->fp = r->fp;
	c->firstlineno = r->firstlineno;
	c->version = r->version;
	c->flags = r->flags;
	c->described = true;
	if (!(r->flags & GL_PYC_FILE_UNREAD))
		c->file = str_utf8(r->data, r->file_len, r->file_kind, r->flags & GL_PYC_FILE_CUT);
	if (!(r->flags & GL_PYC_NAME_UNREAD))
		c->name = str_utf8(r->data + r->file_len, r->name_len, r->name_kind, false);
	if (!(r->flags & GL_PYC_TABLE_UNREAD) && r->table_len) {
		c->table = malloc(r->table_len);
		if (c->table)
			memcpy(c->table, r->data + r->file_len + r->name_len, r->table_len);
		c->table_len = r->table_len;
	}
	if ((!(r->flags & GL_PYC_FILE_UNREAD) && !c->file) ||
	    (!(r->flags & GL_PYC_NAME_UNREAD) && !c->name) || (c->table_len && !c->table)) {
		code_free(c);
		return -ENOMEM;
	}
	if (at) {
		code_free(pf->codes[*at]);
		pf->codes[*at] = c;
		return 0;
	}
	if (vec_grow((void **)&pf->codes, &pf->cap_codes, pf->nr_codes, sizeof(*pf->codes)) ||
	    hmap__put(&pf->code_idx, code_k0(c->pid, c->fp), c->code, pf->nr_codes)) {
		code_free(c);
		return -ENOMEM;
	}
	pf->codes[pf->nr_codes++] = c;
	return 0;
}

static int add_stack(struct pyframes *pf, const struct gl_py_stack_rec *r)
{
	size_t fixed = offsetof(struct gl_py_stack_rec, frames);
	struct py_stack *st;

	if (r->hdr.size < fixed || r->nr > GL_PY_DEPTH_MAX ||
	    r->hdr.size < fixed + r->nr * sizeof(r->frames[0]) || !gl_stack_is_py(r->id) ||
	    r->hdr.pid > INT32_MAX)
		return -EINVAL;
	if (hmap__get(&pf->stack_idx, (uint32_t)r->hdr.pid, (uint32_t)r->id))
		return 0;
	st = malloc(sizeof(*st) + r->nr * sizeof(st->frames[0]));
	if (!st)
		return -ENOMEM;
	st->pid = (pid_t)r->hdr.pid;
	st->id = r->id;
	st->native_id = r->native_id < 0 ? -1 : r->native_id;
	st->nr = r->nr;
	st->flags = r->flags;
	st->version = r->version;
	st->entry_mask = r->entry_mask;
	memcpy(st->frames, r->frames, r->nr * sizeof(st->frames[0]));
	if (vec_grow((void **)&pf->stacks, &pf->cap_stacks, pf->nr_stacks, sizeof(*pf->stacks)) ||
	    hmap__put(&pf->stack_idx, (uint32_t)st->pid, (uint32_t)st->id, pf->nr_stacks)) {
		free(st);
		return -ENOMEM;
	}
	pf->stacks[pf->nr_stacks++] = st;
	return 0;
}

int pyframes__record(struct pyframes *pf, const struct gl_hdr *h)
{
	int err;

	if (h->kind == GL_REC_PY_CODE)
		err = add_code(pf, (const struct gl_py_code_rec *)h);
	else if (h->kind == GL_REC_PY_STACK)
		err = add_stack(pf, (const struct gl_py_stack_rec *)h);
	else
		return 0;
	if (err == -EINVAL)
		pf->bad++;
	return err;
}

const struct py_stack *pyframes__stack(const struct pyframes *pf, pid_t pid, int32_t id)
{
	uint64_t *at = hmap__get(&pf->stack_idx, (uint32_t)pid, (uint32_t)id);

	return at ? pf->stacks[*at] : NULL;
}

static int64_t code_index(const struct pyframes *pf, pid_t pid, const struct gl_py_frame *f)
{
	uint64_t *at = hmap__get(&pf->code_idx, code_k0(pid, f->fp), f->code);

	return at ? (int64_t)*at : -1;
}

const struct py_code *pyframes__code(const struct pyframes *pf, pid_t pid,
				     const struct gl_py_frame *f)
{
	int64_t i = code_index(pf, pid, f);

	return i < 0 || !pf->codes[i]->described ? NULL : pf->codes[i];
}

/* ---- lines ---- */

int32_t py_line_310(const uint8_t *t, size_t len, int32_t firstlineno, int64_t addr)
{
	int64_t start = 0, end;
	int32_t line = firstlineno, cur;
	size_t i;

	if (addr < 0)
		return firstlineno;
	/* (bytes of code, line delta) pairs; -128: the range has no line, the count stays */
	for (i = 0; i + 1 < len; i += 2) {
		int8_t delta = (int8_t)t[i + 1];

		end = start + t[i];
		if (delta != -128) {
			line += delta;
			cur = line;
		} else {
			cur = 0;
		}
		if (t[i] && addr >= start && addr < end)
			return cur > 0 ? cur : 0;
		start = end;
	}
	return 0;
}

/* 6-bit groups, least significant first, bit 6 set while more follow. */
static bool loc_varint(const uint8_t *t, size_t len, size_t *i, uint64_t *v)
{
	unsigned int shift = 0;

	*v = 0;
	while (*i < len && shift < 64) {
		uint8_t b = t[(*i)++];

		*v |= (uint64_t)(b & 63) << shift;
		shift += 6;
		if (!(b & 64))
			return true;
	}
	return false;
}

static bool loc_svarint(const uint8_t *t, size_t len, size_t *i, int64_t *v)
{
	uint64_t u;

	if (!loc_varint(t, len, i, &u))
		return false;
	*v = u & 1 ? -(int64_t)(u >> 1) : (int64_t)(u >> 1);
	return true;
}

int32_t py_line_311(const uint8_t *t, size_t len, int32_t firstlineno, uint64_t unit)
{
	int64_t line = firstlineno, delta;
	uint64_t at = 0, skip;
	size_t i = 0;

	/* Each entry: 1CCCCLLL (code C, L + 1 code units), then what code C carries. */
	while (i < len) {
		uint8_t b = t[i++];
		unsigned int code = (b >> 3) & 15, n = (b & 7) + 1;
		bool has = true;

		if (!(b & 0x80))
			return 0;
		switch (code) {
		case 15: /* no location */
			has = false;
			break;
		case 14: /* long: line delta, end line delta, column + 1, end column + 1 */
			if (!loc_svarint(t, len, &i, &delta) || !loc_varint(t, len, &i, &skip) ||
			    !loc_varint(t, len, &i, &skip) || !loc_varint(t, len, &i, &skip))
				return 0;
			line += delta;
			break;
		case 13: /* no column: line delta */
			if (!loc_svarint(t, len, &i, &delta))
				return 0;
			line += delta;
			break;
		case 10:
		case 11:
		case 12: /* one line: delta C - 10, column, end column */
			line += code - 10;
			i += 2;
			break;
		default: /* short: the same line, a column byte */
			i += 1;
			break;
		}
		if (unit < at + n)
			return has && line > 0 && line <= INT32_MAX ? (int32_t)line : 0;
		at += n;
	}
	return 0;
}

int32_t pyframes__line(const struct py_code *c, uint16_t version, const struct gl_py_frame *f)
{
	uint16_t units = py_abi__code_units(version);

	if (!c || !c->table)
		return 0;
	if (version == 0x030a)
		return py_line_310(c->table, c->table_len, c->firstlineno,
				   2 * (int64_t)(int32_t)f->instr);
	if (!units)
		return 0;
	/* Not in its instructions yet: where the function starts. */
	if (f->instr < units)
		return c->firstlineno;
	return py_line_311(c->table, c->table_len, c->firstlineno, (f->instr - units) / 2);
}

/* ---- frames as addresses ---- */

/* A placeholder for a code object no descriptor named: its frames read "?". */
static int64_t placeholder(struct pyframes *pf, pid_t pid, const struct gl_py_frame *f)
{
	struct py_code *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	c->pid = pid;
	c->code = f->code;
	c->fp = f->fp;
	if (vec_grow((void **)&pf->codes, &pf->cap_codes, pf->nr_codes, sizeof(*pf->codes)) ||
	    hmap__put(&pf->code_idx, code_k0(pid, f->fp), f->code, pf->nr_codes)) {
		free(c);
		return -1;
	}
	pf->codes[pf->nr_codes++] = c;
	return (int64_t)pf->nr_codes - 1;
}

uint64_t pyframes__frame(struct pyframes *pf, pid_t pid, uint16_t version,
			 const struct gl_py_frame *f, struct py_frame_name *name)
{
	int64_t ci = code_index(pf, pid, f);
	const struct py_code *c;
	uint64_t *at;
	int32_t line;

	if (ci < 0)
		ci = placeholder(pf, pid, f);
	if (ci < 0)
		return 0;
	c = pf->codes[ci];
	line = c->described ? pyframes__line(c, version, f) : 0;
	name->file = c->file;
	name->name = c->name;
	name->line = line;
	at = hmap__get(&pf->frame_idx, (uint64_t)ci + 1, (uint64_t)(uint32_t)line);
	if (at)
		return PY_FRAME_BASE | *at;
	if (vec_grow((void **)&pf->frames, &pf->cap_frames, pf->nr_frames, sizeof(*pf->frames)) ||
	    hmap__put(&pf->frame_idx, (uint64_t)ci + 1, (uint64_t)(uint32_t)line, pf->nr_frames))
		return 0;
	pf->frames[pf->nr_frames] = (struct pframe){(uint32_t)ci, line};
	return PY_FRAME_BASE | pf->nr_frames++;
}
