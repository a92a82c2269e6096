// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Pickle protocol 4 opcodes (CPython's Lib/pickletools.py documents each): the smallest that
 * protocol 2 to 4 readers all load, MEMOIZE aside (4). Integers little-endian.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "lib/pickle.h"

enum {
	OP_MARK = '(',
	OP_STOP = '.',
	OP_NONE = 'N',
	OP_BININT = 'J',
	OP_BININT1 = 'K',
	OP_BININT2 = 'M',
	OP_BINUNICODE = 'X',
	OP_EMPTY_DICT = '}',
	OP_SETITEMS = 'u',
	OP_EMPTY_LIST = ']',
	OP_APPENDS = 'e',
	OP_BINGET = 'h',
	OP_LONG_BINGET = 'j',
	OP_PROTO = 0x80,
	OP_TUPLE2 = 0x86,
	OP_NEWTRUE = 0x88,
	OP_NEWFALSE = 0x89,
	OP_LONG1 = 0x8a,
	OP_SHORT_BINUNICODE = 0x8c,
	OP_MEMOIZE = 0x94,
};

struct memo_str {
	char *s;
	uint64_t hash;
	uint32_t idx;
};

/* Opcodes go through a buffer of ours: a stdio call per opcode byte costs 10 times more. */
#define PICKLE_BUF 65536

struct pickle {
	FILE *f;
	int err;
	size_t nr_out;
	uint8_t out[PICKLE_BUF];
	int open; /* containers begun and not ended */
	uint32_t nr_memo;
	struct memo_str *strs; /* open addressing, cap a power of two, s == NULL: free */
	size_t nr_strs, cap_strs;
	char *buf; /* a string made valid UTF-8 */
	size_t cap_buf;
};

static void flush(struct pickle *p)
{
	if (!p->err && p->nr_out && fwrite(p->out, 1, p->nr_out, p->f) != p->nr_out)
		p->err = -EIO;
	p->nr_out = 0;
}

static void put(struct pickle *p, const void *b, size_t n)
{
	if (p->err)
		return;
	if (p->nr_out + n > sizeof(p->out)) {
		flush(p);
		if (n > sizeof(p->out)) {
			if (!p->err && fwrite(b, 1, n, p->f) != n)
				p->err = -EIO;
			return;
		}
	}
	memcpy(p->out + p->nr_out, b, n);
	p->nr_out += n;
}

static void op(struct pickle *p, uint8_t o)
{
	put(p, &o, 1);
}

static void le(struct pickle *p, uint64_t v, size_t n)
{
	uint8_t b[8];
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
	put(p, b, n);
}

int pickle__new(FILE *f, struct pickle **out)
{
	struct pickle *p = calloc(1, sizeof(*p));

	*out = NULL;
	if (!p)
		return -ENOMEM;
	p->f = f;
	op(p, OP_PROTO);
	op(p, 4);
	*out = p;
	return 0;
}

int pickle__end(struct pickle *p)
{
	if (!p->err && p->open)
		p->err = -EINVAL;
	op(p, OP_STOP);
	flush(p);
	return p->err;
}

void pickle__free(struct pickle *p)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < p->cap_strs; i++)
		free(p->strs[i].s);
	free(p->strs);
	free(p->buf);
	free(p);
}

void pickle__dict(struct pickle *p)
{
	op(p, OP_EMPTY_DICT);
	op(p, OP_MARK);
	p->open++;
}

void pickle__dict_end(struct pickle *p)
{
	op(p, OP_SETITEMS);
	p->open--;
}

void pickle__list(struct pickle *p)
{
	op(p, OP_EMPTY_LIST);
	op(p, OP_MARK);
	p->open++;
}

void pickle__list_end(struct pickle *p)
{
	op(p, OP_APPENDS);
	p->open--;
}

void pickle__tuple2(struct pickle *p)
{
	op(p, OP_TUPLE2);
}

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 when it is not one. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t len, i;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return 0;
	if (n < len)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* overlong forms, surrogates (Python's decoder refuses them) and beyond U+10FFFF */
	if ((len == 3 && c < 0x800) || (len == 4 && (c < 0x10000 || c > 0x10ffff)) ||
	    (c >= 0xd800 && c <= 0xdfff))
		return 0;
	return len;
}

/*
 * s as valid UTF-8 (pickle's strings are decoded as such: one bad byte from a target's
 * symbol would make the whole file unreadable), each invalid byte as U+FFFD. *n its length.
 */
static const char *valid_utf8(struct pickle *p, const char *s, size_t *n)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = strlen(s), i, o = 0, k;

	for (i = 0; i < len; i += k)
		if (!(k = utf8_seq(u + i, len - i)))
			break;
	*n = len;
	if (i == len)
		return s;
	if (p->cap_buf < 3 * len + 1) {
		char *b = realloc(p->buf, 3 * len + 1);

		if (!b) {
			p->err = p->err ? p->err : -ENOMEM;
			*n = 0;
			return "";
		}
		p->buf = b;
		p->cap_buf = 3 * len + 1;
	}
	for (i = 0; i < len; i += k) {
		k = utf8_seq(u + i, len - i);
		if (k) {
			memcpy(p->buf + o, s + i, k);
			o += k;
			continue;
		}
		memcpy(p->buf + o, "\xef\xbf\xbd", 3);
		o += 3;
		k = 1;
	}
	*n = o;
	return p->buf;
}

void pickle__str(struct pickle *p, const char *s)
{
	size_t n;

	s = valid_utf8(p, s ? s : "", &n);
	if (n < 256) {
		op(p, OP_SHORT_BINUNICODE);
		le(p, n, 1);
	} else {
		op(p, OP_BINUNICODE);
		le(p, n, 4);
	}
	put(p, s, n);
}

uint32_t pickle__memo(struct pickle *p)
{
	op(p, OP_MEMOIZE);
	return p->nr_memo++;
}

void pickle__get(struct pickle *p, uint32_t idx)
{
	if (idx < 256) {
		op(p, OP_BINGET);
		le(p, idx, 1);
	} else {
		op(p, OP_LONG_BINGET);
		le(p, idx, 4);
	}
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ULL;
	return h;
}

static int grow_strs(struct pickle *p)
{
	size_t cap = p->cap_strs ? 2 * p->cap_strs : 64, i;
	struct memo_str *v = calloc(cap, sizeof(*v));

	if (!v)
		return -ENOMEM;
	for (i = 0; i < p->cap_strs; i++) {
		size_t j;

		if (!p->strs[i].s)
			continue;
		for (j = p->strs[i].hash & (cap - 1); v[j].s; j = (j + 1) & (cap - 1))
			;
		v[j] = p->strs[i];
	}
	free(p->strs);
	p->strs = v;
	p->cap_strs = cap;
	return 0;
}

void pickle__str_memo(struct pickle *p, const char *s)
{
	uint64_t h;
	size_t j;

	s = s ? s : "";
	if (2 * (p->nr_strs + 1) > p->cap_strs && grow_strs(p)) {
		/* without room: written in full, still right */
		pickle__str(p, s);
		return;
	}
	h = str_hash(s);
	for (j = h & (p->cap_strs - 1); p->strs[j].s; j = (j + 1) & (p->cap_strs - 1)) {
		if (p->strs[j].hash == h && !strcmp(p->strs[j].s, s)) {
			pickle__get(p, p->strs[j].idx);
			return;
		}
	}
	pickle__str(p, s);
	p->strs[j].s = strdup(s);
	if (!p->strs[j].s)
		return;
	p->strs[j].hash = h;
	p->strs[j].idx = pickle__memo(p);
	p->nr_strs++;
}

void pickle__int(struct pickle *p, int64_t v)
{
	uint8_t b[9];
	size_t n = 0;
	uint64_t u = (uint64_t)v;

	if (v >= 0 && v < 256) {
		op(p, OP_BININT1);
		le(p, (uint64_t)v, 1);
		return;
	}
	if (v >= 0 && v < 65536) {
		op(p, OP_BININT2);
		le(p, (uint64_t)v, 2);
		return;
	}
	if (v >= INT32_MIN && v <= INT32_MAX) {
		op(p, OP_BININT);
		le(p, (uint32_t)(int32_t)v, 4);
		return;
	}
	/* LONG1: the shortest two's complement, little-endian */
	do {
		b[n++] = (uint8_t)u;
		u = (uint64_t)((int64_t)u >> 8);
	} while (n < 8 &&
		 !((u == 0 && !(b[n - 1] & 0x80)) || (u == UINT64_MAX && (b[n - 1] & 0x80))));
	op(p, OP_LONG1);
	le(p, n, 1);
	put(p, b, n);
}

void pickle__uint(struct pickle *p, uint64_t v)
{
	uint8_t b[9];
	size_t n;

	if (v <= INT64_MAX) {
		pickle__int(p, (int64_t)v);
		return;
	}
	/* 2^63 and above: nine bytes, the last 0 so that it reads as positive */
	for (n = 0; n < 8; n++)
		b[n] = (uint8_t)(v >> (8 * n));
	b[8] = 0;
	op(p, OP_LONG1);
	le(p, 9, 1);
	put(p, b, 9);
}

void pickle__bool(struct pickle *p, bool v)
{
	op(p, v ? OP_NEWTRUE : OP_NEWFALSE);
}

void pickle__none(struct pickle *p)
{
	op(p, OP_NONE);
}
