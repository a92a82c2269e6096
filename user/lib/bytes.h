/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Byte buffers for the capture format: a growable output buffer and a bounds-checked input
 * cursor, with LEB128 varints and little-endian fixed-width fields. Everything a capture
 * file holds is written through these, so the file layout does not depend on the compiler's
 * struct padding.
 *
 * Readers never trust input: every get returns false once the cursor ran out (and stays out),
 * so a decoder checks once per record instead of after every field.
 */
#ifndef GPULEAK_LIB_BYTES_H
#define GPULEAK_LIB_BYTES_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if !defined(__BYTE_ORDER__) || __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
/* Raw records in captures are the gpuleak.h structs as they are in memory. */
#error "gpuleak captures are little-endian; this host is not"
#endif

struct wbuf {
	uint8_t *p;
	size_t len, cap;
	int err; /* sticky -ENOMEM */
};

static inline bool wbuf__reserve(struct wbuf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->err)
		return false;
	if (b->len + more <= b->cap)
		return true;
	cap = b->cap ? b->cap : 256;
	while (cap < b->len + more)
		cap *= 2;
	p = realloc(b->p, cap);
	if (!p) {
		b->err = -ENOMEM;
		return false;
	}
	b->p = p;
	b->cap = cap;
	return true;
}

static inline void wbuf__free(struct wbuf *b)
{
	free(b->p);
	*b = (struct wbuf){};
}

static inline void wbuf__bytes(struct wbuf *b, const void *src, size_t n)
{
	if (!n || !wbuf__reserve(b, n))
		return;
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static inline void wbuf__u8(struct wbuf *b, uint8_t v)
{
	if (b->len < b->cap || wbuf__reserve(b, 1))
		b->p[b->len++] = v;
}

static inline void wbuf__varint(struct wbuf *b, uint64_t v)
{
	uint8_t *p;

	if (b->len + 10 > b->cap && !wbuf__reserve(b, 10))
		return;
	p = b->p + b->len;
	while (v >= 0x80) {
		*p++ = (uint8_t)v | 0x80;
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	b->len = p - b->p;
}

/* Signed values (deltas, error codes): small magnitudes of either sign stay short. */
static inline uint64_t zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

static inline void wbuf__svarint(struct wbuf *b, int64_t v)
{
	wbuf__varint(b, zigzag(v));
}

/* A string: varint length, then the bytes (no NUL). NULL is written as the empty string. */
static inline void wbuf__str(struct wbuf *b, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	wbuf__varint(b, n);
	wbuf__bytes(b, s, n);
}

static inline void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = v;
	p[1] = v >> 8;
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	put_le16(p, v);
	put_le16(p + 2, v >> 16);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le32(p, v);
	put_le32(p + 4, v >> 32);
}

static inline uint16_t get_le16(const uint8_t *p)
{
	return p[0] | (uint16_t)p[1] << 8;
}

static inline uint32_t get_le32(const uint8_t *p)
{
	return get_le16(p) | (uint32_t)get_le16(p + 2) << 16;
}

static inline uint64_t get_le64(const uint8_t *p)
{
	return get_le32(p) | (uint64_t)get_le32(p + 4) << 32;
}

struct rbuf {
	const uint8_t *p, *end;
	bool bad; /* read past the end or a malformed varint: sticky */
};

static inline struct rbuf rbuf_of(const void *p, size_t len)
{
	return (struct rbuf){.p = p, .end = (const uint8_t *)p + len};
}

static inline size_t rbuf__left(const struct rbuf *r)
{
	return r->end - r->p;
}

static inline uint8_t rbuf__u8(struct rbuf *r)
{
	if (r->p >= r->end) {
		r->bad = true;
		return 0;
	}
	return *r->p++;
}

static inline uint64_t rbuf__varint(struct rbuf *r)
{
	uint64_t v = 0;
	unsigned int shift = 0;

	/* One byte is the common case: keep it off the loop. */
	if (r->p < r->end && *r->p < 0x80)
		return *r->p++;
	while (r->p < r->end) {
		uint8_t c = *r->p++;

		/* The tenth byte may only hold the top bit of a 64-bit value. */
		if (shift == 63 && c > 1)
			break;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80))
			return v;
		shift += 7;
		if (shift > 63)
			break;
	}
	r->bad = true;
	return 0;
}

static inline int64_t rbuf__svarint(struct rbuf *r)
{
	return unzigzag(rbuf__varint(r));
}

/* A pointer to n bytes in the input, or NULL (and bad) if fewer are left. */
static inline const uint8_t *rbuf__bytes(struct rbuf *r, size_t n)
{
	const uint8_t *p = r->p;

	if (rbuf__left(r) < n) {
		r->bad = true;
		r->p = r->end;
		return NULL;
	}
	r->p += n;
	return p;
}

/*
 * A string of at most max bytes, copied NUL-terminated into a fresh allocation; NULL for the
 * empty string. Sets bad on a truncated or oversized string; *err = -ENOMEM on allocation
 * failure. *len: its bytes, NULs included (a script's path follows a module's name after one).
 */
static inline char *rbuf__str_len(struct rbuf *r, size_t max, int *err, size_t *len)
{
	uint64_t n = rbuf__varint(r);
	const uint8_t *p;
	char *s;

	*len = 0;
	if (n > max) {
		r->bad = true;
		return NULL;
	}
	p = rbuf__bytes(r, n);
	if (!p || !n)
		return NULL;
	s = malloc(n + 1);
	if (!s) {
		*err = -ENOMEM;
		return NULL;
	}
	memcpy(s, p, n);
	s[n] = 0;
	*len = (size_t)n;
	return s;
}

static inline char *rbuf__str(struct rbuf *r, size_t max, int *err)
{
	size_t len;

	return rbuf__str_len(r, max, err, &len);
}

#endif
