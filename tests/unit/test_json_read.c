// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * The strict JSON reader (lib/json_read.h): what it accepts and the tree it builds, and for
 * each thing RFC 8259 does not allow, that it is refused with the line, column and reason.
 */
#include <errno.h>
#include <string.h>
#include "check.h"
#include "lib/json_read.h"

static void accepts(void)
{
	static const char doc[] = " {\"a\": [1, -2, 3.5, 1e2, 18446744073709551615, "
				  "-9223372036854775808, 18446744073709551616, -0],\n"
				  " \"s\": \"x\\u00e9\\ud83d\\ude00\\n\\\"\\/\", \"t\": true, "
				  "\"f\": false, \"n\": null, \"o\": {}, \"e\": [], "
				  "\"z\": \"a\\u0000b\", \"u\": \"\xc3\xa9\xe2\x82\xac\"} ";
	const struct json_value *r, *a, *s, *z;
	struct json_doc *d = NULL;
	struct json_error err;

	if (!CHECK(!json_read__parse(doc, strlen(doc), &d, &err), "parses: %s", err.msg))
		return;
	r = json_read__root(d);
	CHECK(r->kind == JSON_OBJECT && r->obj.n == 9, "object of 9 members");
	CHECK_U64(r->off, 1, "root offset");
	a = json_read__member(r, "a");
	if (CHECK(a && a->kind == JSON_ARRAY && a->arr.n == 8, "array a")) {
		CHECK(a->arr.v[0].num.integer && a->arr.v[0].num.mag == 1, "1");
		CHECK(a->arr.v[1].num.integer && a->arr.v[1].num.neg && a->arr.v[1].num.mag == 2,
		      "-2");
		CHECK(!a->arr.v[2].num.integer && a->arr.v[2].num.d == 3.5, "3.5");
		CHECK(!a->arr.v[3].num.integer && a->arr.v[3].num.d == 100, "1e2: not an integer");
		CHECK(a->arr.v[4].num.integer && a->arr.v[4].num.mag == UINT64_MAX, "2^64-1 exact");
		CHECK(a->arr.v[5].num.integer && a->arr.v[5].num.neg &&
			  a->arr.v[5].num.mag == (uint64_t)1 << 63,
		      "-2^63 exact");
		CHECK(!a->arr.v[6].num.integer && a->arr.v[6].num.d == 18446744073709551616.0,
		      "2^64: a double");
		CHECK(a->arr.v[7].num.integer && !a->arr.v[7].num.neg && !a->arr.v[7].num.mag,
		      "-0 is 0");
		CHECK_U64(a->arr.v[1].off, 11, "element offset");
	}
	s = json_read__member(r, "s");
	CHECK(s && s->kind == JSON_STRING && s->str.len == 10 &&
		  !memcmp(s->str.s, "x\xc3\xa9\xf0\x9f\x98\x80\n\"/", 10),
	      "escapes and a surrogate pair decoded");
	z = json_read__member(r, "z");
	CHECK(z && z->str.len == 3 && !memcmp(z->str.s, "a\0b", 4), "an escaped NUL is kept");
	CHECK(json_read__member(r, "t")->kind == JSON_TRUE, "true");
	CHECK(json_read__member(r, "f")->kind == JSON_FALSE, "false");
	CHECK(json_read__member(r, "n")->kind == JSON_NULL, "null");
	CHECK(json_read__member(r, "o")->obj.n == 0 && json_read__member(r, "e")->arr.n == 0,
	      "empty containers");
	CHECK(json_read__member(r, "u")->str.len == 5, "raw UTF-8 kept");
	CHECK(!json_read__member(r, "missing") && !json_read__member(s, "a"), "no such member");
	json_read__free(d);
}

static void refuses(void)
{
	static const struct {
		const char *text;
		unsigned int line, col;
		const char *why;
	} bad[] = {
	    {"", 1, 1, "end of input"},
	    {"   ", 1, 4, "end of input"},
	    {"{\"a\":1,}", 1, 8, "trailing comma"},
	    {"[1,2,]", 1, 6, "trailing comma"},
	    {"{\"a\" 1}", 1, 6, "expected ':'"},
	    {"{\"a\":1 \"b\":2}", 1, 8, "',' or '}'"},
	    {"[1 2]", 1, 4, "',' or ']'"},
	    {"{'a':1}", 1, 2, "object key"},
	    {"// c\n1", 1, 1, "where a value"},
	    {"01", 1, 1, "leading zero"},
	    {"-", 1, 2, "digit"},
	    {"1.", 1, 3, "fraction"},
	    {"1e", 1, 3, "exponent"},
	    {"1e400", 1, 1, "out of range"},
	    {"NaN", 1, 1, "where a value"},
	    {"-Infinity", 1, 2, "digit"},
	    {"tru", 1, 1, "expected true"},
	    {"nul ", 1, 1, "expected null"},
	    {"\"abc", 1, 1, "unterminated string"},
	    {"\"a\tb\"", 1, 3, "control characters"},
	    {"\"\\x\"", 1, 2, "invalid escape"},
	    {"\"\\u12\"", 1, 2, "four hex digits"},
	    {"\"\\ud83d\"", 1, 2, "not followed by a low one"},
	    {"\"\\ude00\"", 1, 2, "unpaired low surrogate"},
	    {"\"\xc0\xaf\"", 1, 2, "invalid UTF-8"},
	    {"\"\xed\xa0\x80\"", 1, 2, "invalid UTF-8"},
	    {"\"\xf4\x90\x80\x80\"", 1, 2, "invalid UTF-8"},
	    {"\"\xe2\x82\"", 1, 2, "invalid UTF-8"},
	    {"{\"a\":1,\n \"a\":2}", 2, 2, "duplicate key \"a\""},
	    {"{\"k\":{}} x", 1, 10, "after the end"},
	    {"1 2", 1, 3, "after the end"},
	    {"\xef\xbb\xbf{}", 1, 1, "byte order mark"},
	    {"{\"\xc3\xa9\xc3\xa9\": @}", 1, 8, "where a value"},
	    {"[\n[\n", 3, 1, "end of input"},
	};
	struct json_doc *d;
	struct json_error err;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int ret = json_read__parse(bad[i].text, strlen(bad[i].text), &d, &err);

		CHECK(ret == -EINVAL && !d, "'%s' refused (%d)", bad[i].text, ret);
		CHECK(err.line == bad[i].line && err.col == bad[i].col,
		      "'%s': at %u:%u, expected %u:%u (%s)", bad[i].text, err.line, err.col,
		      bad[i].line, bad[i].col, err.msg);
		CHECK(strstr(err.msg, bad[i].why), "'%s': message '%s' says '%s'", bad[i].text,
		      err.msg, bad[i].why);
	}
}

/* Nesting is bounded, and duplicate keys are found in large objects too. */
static void limits(void)
{
	char deep[2 * JSON_READ_MAX_DEPTH + 8], big[64 * 16 + 16];
	struct json_doc *d;
	struct json_error err;
	size_t i, n = 0;

	for (i = 0; i < JSON_READ_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (i = 0; i < JSON_READ_MAX_DEPTH; i++)
		deep[n++] = ']';
	CHECK(!json_read__parse(deep, n, &d, &err), "%d levels accepted: %s", JSON_READ_MAX_DEPTH,
	      err.msg);
	json_read__free(d);
	memmove(deep + 1, deep, n);
	deep[0] = '[';
	deep[++n] = ']';
	n++;
	CHECK(json_read__parse(deep, n, &d, &err) == -EINVAL && strstr(err.msg, "nested deeper"),
	      "%d levels refused: %s", JSON_READ_MAX_DEPTH + 1, err.msg);
	CHECK_U64(err.off, JSON_READ_MAX_DEPTH, "at the level too many");

	n = (size_t)sprintf(big, "{");
	for (i = 0; i < 60; i++)
		n += (size_t)sprintf(big + n, "%s\"k%zu\":%zu", i ? "," : "", i, i);
	n += (size_t)sprintf(big + n, ",\"k7\":0}");
	CHECK(json_read__parse(big, n, &d, &err) == -EINVAL &&
		  strstr(err.msg, "duplicate key \"k7\""),
	      "a duplicate among 61 keys: %s", err.msg);
	big[n - 6] = 'z';
	CHECK(!json_read__parse(big, n, &d, &err), "61 distinct keys: %s", err.msg);
	json_read__free(d);
	json_read__free(NULL);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"json_read_accepts", accepts},
	    {"json_read_refuses", refuses},
	    {"json_read_limits", limits},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
