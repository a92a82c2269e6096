// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The strict JSON reader (json_read.h). One pass, recursive descent bounded by
 * JSON_READ_MAX_DEPTH. Values and members are collected on two scratch stacks while their
 * container is parsed and copied into the document's arena when it closes, so every array
 * and object is one contiguous block; strings are decoded straight into the arena.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/json_read.h"
#include "lib/vec.h"

struct chunk {
	struct chunk *next;
	size_t used, cap;
	_Alignas(16) unsigned char data[];
};

struct json_doc {
	struct chunk *chunks;
	struct json_value root;
};

struct parser {
	const char *s;
	size_t len, pos;
	struct json_doc *doc;
	struct json_error *err;
	int depth;
	struct json_value *vals; /* elements of the arrays being parsed */
	size_t nr_vals, cap_vals;
	struct json_member *mems; /* members of the objects being parsed */
	size_t nr_mems, cap_mems;
};

#define CHUNK_BYTES (64U << 10)

static void *arena_alloc(struct json_doc *d, size_t n)
{
	struct chunk *c = d->chunks;
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK_BYTES ? n : CHUNK_BYTES;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->cap = cap;
		c->used = 0;
		c->next = d->chunks;
		d->chunks = c;
	}
	p = c->data + c->used;
	c->used += n;
	return p;
}

void json_read__position(const char *text, size_t len, size_t off, unsigned int *line,
			 unsigned int *col)
{
	unsigned int l = 1, c = 1;
	size_t i;

	for (i = 0; i < off && i < len; i++) {
		unsigned char b = (unsigned char)text[i];

		if (b == '\n') {
			l++;
			c = 1;
		} else if ((b & 0xc0) != 0x80) {
			c++;
		}
	}
	*line = l;
	*col = c;
}

/* The first error wins; the caller unwinds with -EINVAL. */
__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, size_t off, const char *fmt,
						      ...)
{
	va_list ap;

	if (p->err && !p->err->msg[0]) {
		p->err->off = off;
		json_read__position(p->s, p->len, off, &p->err->line, &p->err->col);
		va_start(ap, fmt);
		vsnprintf(p->err->msg, sizeof(p->err->msg), fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

/* A byte as an error message names it. */
static const char *show(unsigned char c, char *buf, size_t len)
{
	if (c >= 0x21 && c < 0x7f)
		snprintf(buf, len, "'%c'", c);
	else if (c == ' ')
		snprintf(buf, len, "a space");
	else
		snprintf(buf, len, "byte 0x%02x", c);
	return buf;
}

static void skip_ws(struct parser *p)
{
	while (p->pos < p->len) {
		char c = p->s[p->pos];

		if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
			return;
		p->pos++;
	}
}

/* Length of the UTF-8 sequence at s[0..n) (RFC 3629: no overlongs, no surrogates), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0], lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		need = 1;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3;
	else
		return 0;
	if (c == 0xe0)
		lo = 0xa0;
	else if (c == 0xed)
		hi = 0x9f;
	else if (c == 0xf0)
		lo = 0x90;
	else if (c == 0xf4)
		hi = 0x8f;
	if (n < need + 1)
		return 0;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i <= need; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	return need + 1;
}

static size_t utf8_put(unsigned char *out, uint32_t cp)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xc0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xe0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
		out[2] = (unsigned char)(0x80 | (cp & 0x3f));
		return 3;
	}
	out[0] = (unsigned char)(0xf0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | ((cp >> 12) & 0x3f));
	out[2] = (unsigned char)(0x80 | ((cp >> 6) & 0x3f));
	out[3] = (unsigned char)(0x80 | (cp & 0x3f));
	return 4;
}

/* Four hex digits at s[at..end), or -1. */
static int32_t hex4(const char *s, size_t at, size_t end)
{
	int32_t v = 0;
	size_t i;

	if (at + 4 > end)
		return -1;
	for (i = at; i < at + 4; i++) {
		char c = s[i];

		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= c - '0';
		else if (c >= 'a' && c <= 'f')
			v |= c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			v |= c - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* One escape at s[j] == '\\' of a string ending at end: its code point into *out. */
static int parse_escape(struct parser *p, size_t *j, size_t end, unsigned char *out, size_t *k)
{
	const char *s = p->s;
	int32_t cp, lo;
	char c = *j + 1 < end ? s[*j + 1] : 0;
	char b[16];
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	const char *e = c ? strchr(from, c) : NULL;

	if (e) {
		out[(*k)++] = (unsigned char)to[e - from];
		*j += 2;
		return 0;
	}
	if (c != 'u')
		return fail(p, *j, "invalid escape: backslash followed by %s",
			    show((unsigned char)c, b, sizeof(b)));
	cp = hex4(s, *j + 2, end);
	if (cp < 0)
		return fail(p, *j, "\\u needs four hex digits");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return fail(p, *j, "unpaired low surrogate \\u%04x", (unsigned int)cp);
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (*j + 12 > end || s[*j + 6] != '\\' || s[*j + 7] != 'u' ||
		    (lo = hex4(s, *j + 8, end)) < 0xdc00 || lo > 0xdfff)
			return fail(p, *j, "high surrogate \\u%04x not followed by a low one",
				    (unsigned int)cp);
		cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
		*j += 6;
	}
	*j += 6;
	*k += utf8_put(out + *k, (uint32_t)cp);
	return 0;
}

/* A string at p->pos (its opening quote), decoded into the arena. */
static int parse_string(struct parser *p, const char **out, size_t *out_len)
{
	const char *s = p->s;
	size_t start = p->pos + 1, end = start, j, k = 0;
	unsigned char *buf;
	char b[16];
	int err;

	while (end < p->len && s[end] != '"')
		end += s[end] == '\\' ? 2 : 1;
	if (end >= p->len)
		return fail(p, p->pos, "unterminated string");
	/* Decoded, a string is never longer than it is written. */
	buf = arena_alloc(p->doc, end - start + 1);
	if (!buf)
		return -ENOMEM;
	for (j = start; j < end;) {
		unsigned char c = (unsigned char)s[j];
		size_t n;

		if (c < 0x20)
			return fail(p, j, "%s in a string: control characters must be escaped",
				    show(c, b, sizeof(b)));
		if (c == '\\') {
			err = parse_escape(p, &j, end, buf, &k);
			if (err)
				return err;
			continue;
		}
		n = utf8_len((const unsigned char *)s + j, end - j);
		if (!n)
			return fail(p, j, "invalid UTF-8 (%s)", show(c, b, sizeof(b)));
		memcpy(buf + k, s + j, n);
		k += n;
		j += n;
	}
	buf[k] = 0;
	*out = (const char *)buf;
	*out_len = k;
	p->pos = end + 1;
	return 0;
}

static bool digit(const struct parser *p)
{
	return p->pos < p->len && p->s[p->pos] >= '0' && p->s[p->pos] <= '9';
}

static int parse_number(struct parser *p, struct json_value *v)
{
	size_t start = p->pos, i;
	char small[64], *copy = small;
	bool integer = true, neg = false;
	uint64_t mag = 0;

	if (p->s[p->pos] == '-') {
		neg = true;
		p->pos++;
	}
	if (!digit(p))
		return fail(p, p->pos, "a number needs a digit here");
	if (p->s[p->pos] == '0') {
		p->pos++;
		if (digit(p))
			return fail(p, start, "number with a leading zero");
	} else {
		while (digit(p))
			p->pos++;
	}
	if (p->pos < p->len && p->s[p->pos] == '.') {
		p->pos++;
		integer = false;
		if (!digit(p))
			return fail(p, p->pos, "a fraction needs a digit after '.'");
		while (digit(p))
			p->pos++;
	}
	if (p->pos < p->len && (p->s[p->pos] == 'e' || p->s[p->pos] == 'E')) {
		p->pos++;
		integer = false;
		if (p->pos < p->len && (p->s[p->pos] == '+' || p->s[p->pos] == '-'))
			p->pos++;
		if (!digit(p))
			return fail(p, p->pos, "an exponent needs a digit");
		while (digit(p))
			p->pos++;
	}
	if (p->pos - start >= sizeof(small)) {
		copy = malloc(p->pos - start + 1);
		if (!copy)
			return -ENOMEM;
	}
	memcpy(copy, p->s + start, p->pos - start);
	copy[p->pos - start] = 0;
	v->num.d = strtod(copy, NULL);
	if (copy != small)
		free(copy);
	if (!isfinite(v->num.d))
		return fail(p, start, "number out of range");
	for (i = start + neg; integer && i < p->pos; i++) {
		unsigned int dg = (unsigned int)(p->s[i] - '0');

		if (mag > (UINT64_MAX - dg) / 10)
			integer = false;
		else
			mag = mag * 10 + dg;
	}
	if (integer && neg && mag > (uint64_t)INT64_MAX + 1)
		integer = false;
	v->kind = JSON_NUMBER;
	v->num.integer = integer;
	v->num.neg = integer && neg && mag;
	v->num.mag = integer ? mag : 0;
	/* An integer is its exact value: -0 is 0. */
	if (integer)
		v->num.d = v->num.neg ? -(double)mag : (double)mag;
	return 0;
}

static int parse_value(struct parser *p, struct json_value *v);

static int keycmp(const void *a, const void *b)
{
	const struct json_member *x = *(const struct json_member *const *)a;
	const struct json_member *y = *(const struct json_member *const *)b;
	size_t n = x->key_len < y->key_len ? x->key_len : y->key_len;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	if (x->key_len != y->key_len)
		return x->key_len < y->key_len ? -1 : 1;
	/* equal keys: the later one is the duplicate */
	return x < y ? -1 : 1;
}

/* An object's keys are unique: O(n^2) for small objects, sorted otherwise. */
static int check_keys(struct parser *p, const struct json_member *m, size_t n)
{
	const struct json_member **v, *dup = NULL;
	size_t i, j;

	if (n <= 16) {
		for (i = 1; i < n && !dup; i++)
			for (j = 0; j < i; j++)
				if (m[i].key_len == m[j].key_len &&
				    !memcmp(m[i].key, m[j].key, m[i].key_len)) {
					dup = &m[i];
					break;
				}
	} else {
		v = malloc(n * sizeof(*v));
		if (!v)
			return -ENOMEM;
		for (i = 0; i < n; i++)
			v[i] = &m[i];
		qsort(v, n, sizeof(*v), keycmp);
		for (i = 1; i < n; i++)
			if (v[i]->key_len == v[i - 1]->key_len &&
			    !memcmp(v[i]->key, v[i - 1]->key, v[i]->key_len) &&
			    (!dup || v[i] < dup))
				dup = v[i];
		free(v);
	}
	if (!dup)
		return 0;
	return fail(p, dup->key_off, "duplicate key \"%.40s\" in an object", dup->key);
}

static int parse_object(struct parser *p, struct json_value *v)
{
	size_t base = p->nr_mems, n, open = p->pos;
	struct json_member m, *out;
	char b[16];
	int err;

	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == '}') {
		p->pos++;
		goto done;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, open, "unterminated object");
		if (p->s[p->pos] != '"')
			return fail(p, p->pos, "%s where an object key (a string) was expected%s",
				    show((unsigned char)p->s[p->pos], b, sizeof(b)),
				    p->s[p->pos] == '}' ? ": trailing comma" : "");
		m.key_off = p->pos;
		err = parse_string(p, &m.key, &m.key_len);
		if (err)
			return err;
		skip_ws(p);
		if (p->pos >= p->len || p->s[p->pos] != ':')
			return fail(p, p->pos, "expected ':' after the key \"%.40s\"", m.key);
		p->pos++;
		err = parse_value(p, &m.v);
		if (err)
			return err;
		if (vec_grow((void **)&p->mems, &p->cap_mems, p->nr_mems, sizeof(*p->mems)))
			return -ENOMEM;
		p->mems[p->nr_mems++] = m;
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, open, "unterminated object");
		if (p->s[p->pos] == '}') {
			p->pos++;
			break;
		}
		if (p->s[p->pos] != ',')
			return fail(p, p->pos, "%s where ',' or '}' was expected after a member",
				    show((unsigned char)p->s[p->pos], b, sizeof(b)));
		p->pos++;
	}
done:
	n = p->nr_mems - base;
	out = n ? arena_alloc(p->doc, n * sizeof(*out)) : NULL;
	if (n && !out)
		return -ENOMEM;
	if (n)
		memcpy(out, p->mems + base, n * sizeof(*out));
	p->nr_mems = base;
	v->kind = JSON_OBJECT;
	v->obj.m = out;
	v->obj.n = n;
	return check_keys(p, out, n);
}

static int parse_array(struct parser *p, struct json_value *v)
{
	size_t base = p->nr_vals, n, open = p->pos;
	struct json_value e, *out;
	char b[16];
	int err;

	p->pos++;
	skip_ws(p);
	if (p->pos < p->len && p->s[p->pos] == ']') {
		p->pos++;
		goto done;
	}
	for (;;) {
		skip_ws(p);
		if (p->pos < p->len && p->s[p->pos] == ']')
			return fail(p, p->pos, "trailing comma before ']'");
		err = parse_value(p, &e);
		if (err)
			return err;
		if (vec_grow((void **)&p->vals, &p->cap_vals, p->nr_vals, sizeof(*p->vals)))
			return -ENOMEM;
		p->vals[p->nr_vals++] = e;
		skip_ws(p);
		if (p->pos >= p->len)
			return fail(p, open, "unterminated array");
		if (p->s[p->pos] == ']') {
			p->pos++;
			break;
		}
		if (p->s[p->pos] != ',')
			return fail(p, p->pos, "%s where ',' or ']' was expected after an element",
				    show((unsigned char)p->s[p->pos], b, sizeof(b)));
		p->pos++;
	}
done:
	n = p->nr_vals - base;
	out = n ? arena_alloc(p->doc, n * sizeof(*out)) : NULL;
	if (n && !out)
		return -ENOMEM;
	if (n)
		memcpy(out, p->vals + base, n * sizeof(*out));
	p->nr_vals = base;
	v->kind = JSON_ARRAY;
	v->arr.v = out;
	v->arr.n = n;
	return 0;
}

static int parse_literal(struct parser *p, struct json_value *v)
{
	static const struct {
		const char *word;
		enum json_kind kind;
	} lit[] = {{"true", JSON_TRUE}, {"false", JSON_FALSE}, {"null", JSON_NULL}};
	size_t i, n;

	for (i = 0; i < sizeof(lit) / sizeof(lit[0]); i++) {
		n = strlen(lit[i].word);
		if (lit[i].word[0] != p->s[p->pos])
			continue;
		if (p->len - p->pos < n || memcmp(p->s + p->pos, lit[i].word, n))
			return fail(p, p->pos, "invalid literal: expected %s", lit[i].word);
		p->pos += n;
		v->kind = lit[i].kind;
		return 0;
	}
	return -EINVAL; /* not reached: the caller saw t, f or n */
}

static int parse_value(struct parser *p, struct json_value *v)
{
	char b[16];
	int err;
	char c;

	skip_ws(p);
	memset(v, 0, sizeof(*v));
	if (p->pos >= p->len)
		return fail(p, p->pos, "unexpected end of input: expected a value");
	v->off = p->pos;
	c = p->s[p->pos];
	if (c == '{' || c == '[') {
		if (++p->depth > JSON_READ_MAX_DEPTH)
			return fail(p, p->pos, "nested deeper than %d levels", JSON_READ_MAX_DEPTH);
		err = c == '{' ? parse_object(p, v) : parse_array(p, v);
		p->depth--;
		return err;
	}
	if (c == '"') {
		v->kind = JSON_STRING;
		return parse_string(p, &v->str.s, &v->str.len);
	}
	if (c == 't' || c == 'f' || c == 'n')
		return parse_literal(p, v);
	if (c == '-' || (c >= '0' && c <= '9'))
		return parse_number(p, v);
	return fail(p, p->pos, "%s where a value was expected",
		    show((unsigned char)c, b, sizeof(b)));
}

void json_read__free(struct json_doc *d)
{
	struct chunk *c, *next;

	if (!d)
		return;
	for (c = d->chunks; c; c = next) {
		next = c->next;
		free(c);
	}
	free(d);
}

int json_read__parse(const char *text, size_t len, struct json_doc **out, struct json_error *err)
{
	struct parser p = {.s = text, .len = len, .err = err};
	char b[16];
	int ret;

	*out = NULL;
	if (err)
		memset(err, 0, sizeof(*err));
	p.doc = calloc(1, sizeof(*p.doc));
	if (!p.doc)
		return -ENOMEM;
	if (len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3)) {
		ret = fail(&p, 0, "byte order mark: JSON text starts with its value");
		goto cleanup;
	}
	ret = parse_value(&p, &p.doc->root);
	if (ret)
		goto cleanup;
	skip_ws(&p);
	if (p.pos < len) {
		ret = fail(&p, p.pos, "%s after the end of the document",
			   show((unsigned char)text[p.pos], b, sizeof(b)));
		goto cleanup;
	}
	*out = p.doc;
	p.doc = NULL;
cleanup:
	free(p.vals);
	free(p.mems);
	json_read__free(p.doc);
	return ret;
}

const struct json_value *json_read__root(const struct json_doc *d)
{
	return &d->root;
}

const struct json_value *json_read__member(const struct json_value *v, const char *key)
{
	size_t i, n = strlen(key);

	if (!v || v->kind != JSON_OBJECT)
		return NULL;
	for (i = 0; i < v->obj.n; i++)
		if (v->obj.m[i].key_len == n && !memcmp(v->obj.m[i].key, key, n))
			return &v->obj.m[i].v;
	return NULL;
}
