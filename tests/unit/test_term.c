// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <stdlib.h>
#include <string.h>
#include "check.h"
#include "lib/term.h"

/* What a terminal is sent for a target's string: controls and broken UTF-8 as \xNN. */
static void escapes(void)
{
	static const struct {
		const char *in, *out;
	} v[] = {
	    {"plain", "plain"},
	    {"a\e]0;PWNED\a\e[2J", "a\\x1b]0;PWNED\\x07\\x1b[2J"},
	    {"two\nlines\ttab", "two\\x0alines\\x09tab"},
	    {"del\x7f", "del\\x7f"},
	    {"\u2514\u2500 caf\u00e9 \U0001f600", "\u2514\u2500 caf\u00e9 \U0001f600"},
	    {"c1 \xc2\x9b"
	     "2J",
	     "c1 \\xc2\\x9b2J"}, /* U+009B, CSI */
	    {"lone \x9b"
	     "2J",
	     "lone \\x9b2J"},				  /* 8-bit CSI */
	    {"overlong \xc0\xaf", "overlong \\xc0\\xaf"}, /* '/' in two bytes */
	    {"cut \xe2\x94", "cut \\xe2\\x94"},		  /* a sequence cut short */
	    {"surrogate \xed\xa0\x80", "surrogate \\xed\\xa0\\x80"},
	    {"", ""},
	};
	char buf[64];
	size_t i;

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
		const char *got = term_str(v[i].in, buf, sizeof(buf));

		CHECK(!strcmp(got, v[i].out), "'%s' -> '%s'", v[i].out, got);
		CHECK(term_clean(v[i].in, 0) == !strcmp(v[i].in, v[i].out), "clean: %s", v[i].out);
	}
	/* Clean strings are not copied: no length limit. */
	CHECK(term_str("plain", buf, sizeof(buf)) != buf, "no copy when clean");
	CHECK(!strcmp(term_str(NULL, buf, sizeof(buf)), "(null)"), "NULL");
}

/* Cut to the buffer at a whole escape, with "..." at the end. */
static void truncation(void)
{
	char buf[16], big[200];
	const char *got;

	memset(big, '\e', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	got = term_str(big, buf, sizeof(buf));
	CHECK(!strcmp(got, "\\x1b\\x1b\\x1b..."), "cut: %s", got);
	got = term_str("\eabcdefghijklmnopqrstuvwxyz", buf, sizeof(buf));
	CHECK(strlen(got) < sizeof(buf) && !strcmp(got + strlen(got) - 3, "..."), "cut: %s", got);
}

/* A diagnostic keeps its line breaks and tabs; a stream gets everything, however long. */
static void streams(void)
{
	char *s = NULL, big[5000];
	size_t len = 0;
	FILE *f = open_memstream(&s, &len);

	if (!CHECK(f, "open_memstream"))
		return;
	term_fputs("line\n\tnext \e[2J\n", f, TERM_KEEP_LINES);
	memset(big, '\e', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	term_fputs(big, f, 0);
	fclose(f);
	CHECK(!strncmp(s, "line\n\tnext \\x1b[2J\n", 19), "kept lines: %.20s", s);
	CHECK_U64(len, 19 + 4 * (sizeof(big) - 1), "whole length");
	free(s);
}

int main(void)
{
	static const struct unit_test tests[] = {
	    {"term_escapes", escapes},
	    {"term_truncation", truncation},
	    {"term_streams", streams},
	};

	return run_unit_tests(tests, sizeof(tests) / sizeof(tests[0]));
}
