/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * A strict JSON reader (RFC 8259) for the files users hand gpuleak (NDJSON verdicts for
 * `gpuleak diff`): one document into a tree, or an error that says where and why. Strict
 * means everything the RFC does not allow is refused, not guessed at: trailing commas,
 * comments, single quotes, leading zeros, NaN and Infinity, unescaped control characters,
 * invalid or overlong UTF-8, unpaired surrogates, duplicate object keys, a byte order mark,
 * anything after the value. Numbers keep their exact integer value when they have one (byte
 * counts beyond 2^53), and every value its byte offset, so a reader of the tree can also say
 * where a well-formed document has a wrong member.
 *
 * The input is untrusted: nesting is bounded (JSON_READ_MAX_DEPTH), work is linear in its
 * length, and it is fuzzed (tests/fuzz/fuzz_json.c).
 */
#ifndef GPULEAK_LIB_JSON_READ_H
#define GPULEAK_LIB_JSON_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_READ_MAX_DEPTH 64

enum json_kind {
	JSON_NULL,
	JSON_FALSE,
	JSON_TRUE,
	JSON_NUMBER,
	JSON_STRING,
	JSON_ARRAY,
	JSON_OBJECT,
};

struct json_member;

struct json_value {
	enum json_kind kind;
	size_t off; /* byte offset of its first character in the text */
	union {
		struct {
			double d; /* the value, rounded to the nearest double */
			bool
			    integer; /* written without fraction or exponent, and in int64/uint64 */
			bool neg;    /* integer: negative */
			uint64_t mag; /* integer: its magnitude, exact */
		} num;
		struct {
			const char *s; /* decoded, NUL-terminated (it may hold NULs of its own) */
			size_t len;
		} str;
		struct {
			const struct json_value *v;
			size_t n;
		} arr;
		struct {
			const struct json_member *m; /* in document order, keys unique */
			size_t n;
		} obj;
	};
};

struct json_member {
	const char *key; /* decoded, NUL-terminated */
	size_t key_len;
	size_t key_off; /* byte offset of the key's opening quote */
	struct json_value v;
};

/* Where a document went wrong: line and column (in characters) are 1-based. */
struct json_error {
	size_t off;
	unsigned int line, col;
	char msg[128];
};

struct json_doc;

/*
 * Parse text[0..len) as one JSON document. 0, -EINVAL with *err saying where and why, or
 * -ENOMEM. The tree lives until json_read__free.
 */
int json_read__parse(const char *text, size_t len, struct json_doc **out, struct json_error *err);
const struct json_value *json_read__root(const struct json_doc *d);
/* NULL accepted. */
void json_read__free(struct json_doc *d);

/* The member key of an object, or NULL (also when v is not an object). */
const struct json_value *json_read__member(const struct json_value *v, const char *key);
/* Line and column (1-based, in characters) of byte offset off of text. */
void json_read__position(const char *text, size_t len, size_t off, unsigned int *line,
			 unsigned int *col);

#endif
