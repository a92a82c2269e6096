// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * libFuzzer target: the strict JSON reader (lib/json_read.h) and what `gpuleak diff` does with
 * NDJSON verdicts, on arbitrary bytes. Besides not crashing, it checks what the reader
 * promises:
 *   - a refused document says where (an offset within it, line and column from 1) and why;
 *   - an accepted one, written back canonically, reads back to the same tree, and writes
 *     back to the same bytes;
 * and for the bytes as an NDJSON file: when the verdicts loader takes them, the diff of the
 * run against itself is printed (text and NDJSON), and every NDJSON line it writes is itself
 * strict JSON.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "diff/diff.h"
#include "diff/diff_verdicts.h"
#include "lib/json_read.h"
#include "output/diff_report.h"

static void put_str(FILE *f, const char *s, size_t n)
{
	size_t i;

	fputc('"', f);
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

static void put(FILE *f, const struct json_value *v)
{
	char num[64];
	size_t i;

	switch (v->kind) {
	case JSON_NULL:
		fputs("null", f);
		break;
	case JSON_TRUE:
		fputs("true", f);
		break;
	case JSON_FALSE:
		fputs("false", f);
		break;
	case JSON_NUMBER:
		if (v->num.integer) {
			fprintf(f, "%s%llu", v->num.neg ? "-" : "", (unsigned long long)v->num.mag);
			break;
		}
		snprintf(num, sizeof(num), "%.17g", v->num.d);
		/* still a number with a fraction or exponent when read back */
		fprintf(f, "%s%s", num, strpbrk(num, ".e") ? "" : ".0");
		break;
	case JSON_STRING:
		put_str(f, v->str.s, v->str.len);
		break;
	case JSON_ARRAY:
		fputc('[', f);
		for (i = 0; i < v->arr.n; i++) {
			if (i)
				fputc(',', f);
			put(f, &v->arr.v[i]);
		}
		fputc(']', f);
		break;
	case JSON_OBJECT:
		fputc('{', f);
		for (i = 0; i < v->obj.n; i++) {
			if (i)
				fputc(',', f);
			put_str(f, v->obj.m[i].key, v->obj.m[i].key_len);
			fputc(':', f);
			put(f, &v->obj.m[i].v);
		}
		fputc('}', f);
		break;
	}
}

static bool same(const struct json_value *a, const struct json_value *b)
{
	size_t i;

	if (a->kind != b->kind)
		return false;
	switch (a->kind) {
	case JSON_NUMBER:
		return a->num.integer == b->num.integer && a->num.neg == b->num.neg &&
		       a->num.mag == b->num.mag && !memcmp(&a->num.d, &b->num.d, sizeof(double));
	case JSON_STRING:
		return a->str.len == b->str.len && !memcmp(a->str.s, b->str.s, a->str.len);
	case JSON_ARRAY:
		if (a->arr.n != b->arr.n)
			return false;
		for (i = 0; i < a->arr.n; i++)
			if (!same(&a->arr.v[i], &b->arr.v[i]))
				return false;
		return true;
	case JSON_OBJECT:
		if (a->obj.n != b->obj.n)
			return false;
		for (i = 0; i < a->obj.n; i++)
			if (a->obj.m[i].key_len != b->obj.m[i].key_len ||
			    memcmp(a->obj.m[i].key, b->obj.m[i].key, a->obj.m[i].key_len) ||
			    !same(&a->obj.m[i].v, &b->obj.m[i].v))
				return false;
		return true;
	default:
		return true;
	}
}

/* Written canonically into a new buffer (caller frees). */
static char *canonical(const struct json_value *v, size_t *len)
{
	char *buf = NULL;
	FILE *f = open_memstream(&buf, len);

	if (!f)
		abort();
	put(f, v);
	if (fclose(f))
		abort();
	return buf;
}

static void round_trip(const uint8_t *data, size_t size)
{
	struct json_doc *d = NULL, *again = NULL;
	struct json_error err;
	char *c1, *c2;
	size_t n1, n2;
	int ret = json_read__parse((const char *)data, size, &d, &err);

	if (ret) {
		if (ret == -ENOMEM)
			return;
		if (err.off > size || !err.line || !err.col || !err.msg[0]) {
			fprintf(stderr, "refused without a place: off %zu line %u col %u '%s'\n",
				err.off, err.line, err.col, err.msg);
			abort();
		}
		return;
	}
	c1 = canonical(json_read__root(d), &n1);
	if (json_read__parse(c1, n1, &again, &err)) {
		fprintf(stderr, "canonical form refused at %zu: %s\n%s\n", err.off, err.msg, c1);
		abort();
	}
	c2 = canonical(json_read__root(again), &n2);
	if (!same(json_read__root(d), json_read__root(again)) || n1 != n2 || memcmp(c1, c2, n1)) {
		fprintf(stderr, "does not read back to itself:\n%s\n%s\n", c1, c2);
		abort();
	}
	free(c1);
	free(c2);
	json_read__free(d);
	json_read__free(again);
}

/* Each line of an NDJSON output must be strict JSON. */
static void check_lines(const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct json_doc *d = NULL;
		struct json_error err;

		if (json_read__parse(p, n, &d, &err)) {
			fprintf(stderr, "diff wrote invalid JSON at %zu: %s\n%.*s\n", err.off,
				err.msg, (int)n, p);
			abort();
		}
		json_read__free(d);
		p += n + 1;
	}
}

static void verdicts(const uint8_t *data, size_t size)
{
	struct diff_opts o = {.gate = {.on = true, .has_max_live = true}, .warmup_steps = 3};
	struct diff_result *r = NULL;
	struct diff_run *run = NULL;
	char err[512], *buf = NULL;
	size_t len = 0;
	FILE *f, *null, *out;

	if (!size)
		return;
	f = fmemopen((void *)data, size, "r");
	if (!f)
		return;
	if (diff_verdicts__load(f, "fuzz", &run, err, sizeof(err))) {
		fclose(f);
		if (strncmp(err, "fuzz", 4))
			abort();
		return;
	}
	fclose(f);
	if (!diff__compare(run, run, &o, &r)) {
		null = fopen("/dev/null", "w");
		out = open_memstream(&buf, &len);
		if (!null || !out)
			abort();
		diff_text__print(null, r, 0);
		diff_ndjson__write(out, r);
		fclose(null);
		if (fclose(out))
			abort();
		check_lines(buf, len);
		free(buf);
		if (r->regression) /* a run against itself: nothing rose */
			for (size_t i = 0; i < r->nr_procs; i++)
				for (size_t j = 0; j < r->procs[i].nr_gate; j++)
					if (r->procs[i].gate[j].kind == DIFF_GATE_GROWTH ||
					    r->procs[i].gate[j].kind == DIFF_GATE_LIVE)
						abort();
	}
	diff_result__free(r);
	diff_run__free(run);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	round_trip(data, size);
	verdicts(data, size);
	return 0;
}
