// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <string.h>
#include "lib/term.h"

/*
 * How many bytes of s make one character that may be printed as it is: 0 when *s must be
 * escaped. A multi-byte UTF-8 sequence must be complete, minimal (no overlong form), not a
 * surrogate, at most U+10FFFF, and not a C1 control.
 */
static size_t printable_len(const unsigned char *s, unsigned int flags)
{
	unsigned int cp, n, i;

	if (*s < 0x80) {
		if (*s == 0x7f)
			return 0;
		if (*s < 0x20)
			return (flags & TERM_KEEP_LINES) && (*s == '\n' || *s == '\t');
		return 1;
	}
	if (*s >= 0xc2 && *s <= 0xdf) {
		n = 2;
		cp = *s & 0x1f;
	} else if (*s >= 0xe0 && *s <= 0xef) {
		n = 3;
		cp = *s & 0x0f;
	} else if (*s >= 0xf0 && *s <= 0xf4) {
		n = 4;
		cp = *s & 0x07;
	} else {
		return 0;
	}
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || (cp >= 0x80 && cp <= 0x9f))
		return 0;
	return n;
}

bool term_clean(const char *s, unsigned int flags)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t n;

	while (*p) {
		n = printable_len(p, flags);
		if (!n)
			return false;
		p += n;
	}
	return true;
}

/* Calls put(ctx, bytes, n) for each piece of s as printed. */
static void escape(const char *s, unsigned int flags, void (*put)(void *, const char *, size_t),
		   void *ctx)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;
	char e[4] = {'\\', 'x'};
	size_t n;

	while (*p) {
		n = printable_len(p, flags);
		if (n) {
			put(ctx, (const char *)p, n);
			p += n;
			continue;
		}
		e[2] = hex[*p >> 4];
		e[3] = hex[*p & 15];
		put(ctx, e, sizeof(e));
		p++;
	}
}

struct sink {
	char *buf;
	size_t len, used;
	bool cut;
};

static void put_buf(void *ctx, const char *b, size_t n)
{
	struct sink *k = ctx;

	/* Whole pieces only, and room for "..." and the NUL once anything is cut. */
	if (k->cut || k->used + n + 4 > k->len) {
		k->cut = true;
		return;
	}
	memcpy(k->buf + k->used, b, n);
	k->used += n;
}

const char *term_str(const char *s, char *buf, size_t len)
{
	struct sink k = {.buf = buf, .len = len};

	if (!s)
		return "(null)";
	if (term_clean(s, 0))
		return s;
	if (len < 4)
		return "";
	escape(s, 0, put_buf, &k);
	if (k.cut) {
		memcpy(buf + k.used, "...", 3);
		k.used += 3;
	}
	buf[k.used] = 0;
	return buf;
}

const char *term_tmp(const char *s)
{
	static char ring[TERM_RING][1024];
	static unsigned int next;

	return term_str(s, ring[next++ % TERM_RING], sizeof(ring[0]));
}

static void put_file(void *ctx, const char *b, size_t n)
{
	fwrite(b, 1, n, ctx);
}

void term_fputs(const char *s, FILE *f, unsigned int flags)
{
	if (!s)
		s = "(null)";
	if (term_clean(s, flags))
		fputs(s, f);
	else
		escape(s, flags, put_file, f);
}
