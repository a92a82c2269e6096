/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/* Minimal JSON writing helpers for NDJSON output. */
#ifndef GPULEAK_LIB_JSON_H
#define GPULEAK_LIB_JSON_H

#include <stdio.h>

/* Write s as a JSON string literal (quotes included), escaping control characters. */
static inline void json_str(FILE *f, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', f);
	for (; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", f);
			break;
		case '\\':
			fputs("\\\\", f);
			break;
		case '\n':
			fputs("\\n", f);
			break;
		case '\t':
			fputs("\\t", f);
			break;
		default:
			if (*p < 0x20)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
	}
	fputc('"', f);
}

#endif
