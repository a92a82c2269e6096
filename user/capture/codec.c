// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "capture/codec.h"
#include "lib/hmap.h"

/* ---- the model both sides share ---- */

static int model_init(struct rec_model *m)
{
	memset(m, 0, sizeof(*m));
	return 0;
}

/*
 * The tables grow with the block instead of starting at their full 700 KB: a reader sets up
 * one model per file, the fuzzer one per input, and most blocks are small. Never zeroed:
 * nothing is read that this block did not write (sites below nr_sites, ring entries by
 * sequence number), and while the ring grows, entry seq sits at index seq.
 */
static int grow(void **v, uint32_t *cap, uint32_t max, size_t size)
{
	uint32_t ncap = *cap ? 2 * *cap : 256;
	void *p;

	if (ncap > max)
		ncap = max;
	p = realloc(*v, (size_t)ncap * size);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = ncap;
	return 0;
}

static void model_free(struct rec_model *m)
{
	free(m->sites);
	free(m->alloc_ring);
	m->sites = NULL;
	m->alloc_ring = NULL;
}

/* A new block: forget everything. The rings need no clearing: an entry is only referenced
 * when it was written in this block (by its sequence number). */
static void model_reset(struct rec_model *m)
{
	m->prev_ts = 0;
	m->last_addr = 0;
	m->nr_thr = m->next_thr = 0;
	m->nr_sites = 0;
	m->nr_allocs = 0;
	m->nr_frees = 0;
}

static int thread_slot(const struct rec_model *m, uint32_t pid, uint32_t tid)
{
	int i;

	for (i = 0; i < m->nr_thr; i++)
		if (m->thr[i][0] == pid && m->thr[i][1] == tid)
			return i;
	return HEAD_THREAD_LIT;
}

static void thread_add(struct rec_model *m, uint32_t pid, uint32_t tid)
{
	/* Round robin, not LRU: a thread keeps its slot, so its heads stay the same bytes. */
	m->thr[m->next_thr][0] = pid;
	m->thr[m->next_thr][1] = tid;
	m->next_thr = (m->next_thr + 1) % CODEC_THREADS;
	if (m->nr_thr < CODEC_THREADS)
		m->nr_thr++;
}

/* After a call record: what the next call from its site is predicted to look like. */
static void site_update(struct codec_site *s, const struct gl_call_rec *r)
{
	s->api = r->hdr.api;
	s->size = r->size;
	s->aux = r->aux;
	if (r->hdr.kind != GL_REC_SYNC)
		s->aux2 = r->aux2;
}

static int addr_update(struct rec_model *m, const struct gl_call_rec *r)
{
	if (!r->addr)
		return 0;
	m->last_addr = r->addr;
	if (r->hdr.kind == GL_REC_ALLOC) {
		if (m->nr_allocs == m->cap_ring && m->cap_ring < CODEC_ALLOC_RING &&
		    grow((void **)&m->alloc_ring, &m->cap_ring, CODEC_ALLOC_RING,
			 sizeof(*m->alloc_ring)))
			return -ENOMEM;
		m->alloc_ring[m->nr_allocs++ & (CODEC_ALLOC_RING - 1)] = r->addr;
	} else if (r->hdr.kind == GL_REC_FREE) {
		m->free_ring[m->nr_frees++ & (CODEC_FREE_RING - 1)] = r->addr;
	}
	return 0;
}

/* A new dictionary entry for caller, or NULL when full (the caller uses a scratch entry). */
static struct codec_site *site_add(struct rec_model *m, uint64_t caller, int *err)
{
	struct codec_site *s;

	if (m->nr_sites == CODEC_SITES)
		return NULL;
	if (m->nr_sites == m->cap_sites &&
	    grow((void **)&m->sites, &m->cap_sites, CODEC_SITES, sizeof(*m->sites))) {
		*err = -ENOMEM;
		return NULL;
	}
	s = &m->sites[m->nr_sites++];
	*s = (struct codec_site){.caller = caller};
	return s;
}

static bool is_call(const struct gl_hdr *h)
{
	return h->size == sizeof(struct gl_call_rec) && h->kind >= GL_REC_ALLOC &&
	       h->kind <= GL_REC_NOTIFY;
}

static bool is_plain_tick(const struct gl_hdr *h)
{
	return h->kind == GL_REC_TICK && h->size == sizeof(*h) && !h->depth && !h->api &&
	       !h->flags && !h->pid && !h->tid;
}

/* ---- encoder ---- */

int rec_enc__init(struct rec_encoder *e)
{
	memset(e, 0, sizeof(*e));
	e->site_hash = calloc(2 * CODEC_SITES, sizeof(*e->site_hash));
	e->addr_hash = calloc(CODEC_ALLOC_RING, sizeof(*e->addr_hash));
	if (!e->site_hash || !e->addr_hash || model_init(&e->m)) {
		rec_enc__free(e);
		return -ENOMEM;
	}
	return 0;
}

void rec_enc__free(struct rec_encoder *e)
{
	int i;

	for (i = 0; i < NR_COLS; i++)
		wbuf__free(&e->col[i]);
	free(e->site_hash);
	free(e->addr_hash);
	model_free(&e->m);
	memset(e, 0, sizeof(*e));
}

size_t rec_enc__len(const struct rec_encoder *e)
{
	size_t n = 0;
	int i;

	for (i = 0; i < NR_COLS; i++)
		n += e->col[i].len;
	return n;
}

/* The site of caller: an existing entry, a new one, or (dictionary full) a scratch entry. */
static struct codec_site *enc_site(struct rec_encoder *e, uint64_t caller, struct codec_site *tmp)
{
	size_t mask = 2 * CODEC_SITES - 1, i = hmap_mix(caller) & mask;
	struct rec_model *m = &e->m;
	struct codec_site *s;

	for (; e->site_hash[i]; i = (i + 1) & mask) {
		s = &m->sites[e->site_hash[i] - 1];
		if (s->caller == caller) {
			wbuf__varint(&e->col[COL_CALLER], e->site_hash[i]);
			return s;
		}
	}
	wbuf__varint(&e->col[COL_CALLER], 0);
	wbuf__varint(&e->col[COL_CALLER], caller);
	s = site_add(m, caller, &e->err);
	if (!s) {
		*tmp = (struct codec_site){.caller = caller};
		return tmp;
	}
	e->site_hash[i] = m->nr_sites;
	return s;
}

static void enc_addr(struct rec_encoder *e, const struct gl_call_rec *r)
{
	struct rec_model *m = &e->m;
	struct wbuf *b = &e->col[COL_ADDR];
	uint64_t k;

	if (!r->addr) {
		wbuf__varint(b, ADDR_NULL);
		return;
	}
	if (r->hdr.kind == GL_REC_ALLOC) {
		uint64_t n = m->nr_frees < CODEC_FREE_RING ? m->nr_frees : CODEC_FREE_RING;

		for (k = 0; k < n; k++) {
			if (m->free_ring[(m->nr_frees - 1 - k) & (CODEC_FREE_RING - 1)] != r->addr)
				continue;
			wbuf__varint(b, ADDR_REF + k);
			return;
		}
	} else if (r->hdr.kind == GL_REC_FREE) {
		size_t slot = hmap_mix(r->addr) & (CODEC_ALLOC_RING - 1);
		const struct addr_slot *s = &e->addr_hash[slot];

		/* A slot may be stale (an earlier block, an evicted ring entry): the ring says. */
		if (s->addr == r->addr && s->seq < m->nr_allocs &&
		    m->nr_allocs - s->seq <= CODEC_ALLOC_RING &&
		    m->alloc_ring[s->seq & (CODEC_ALLOC_RING - 1)] == r->addr) {
			wbuf__varint(b, ADDR_REF + (m->nr_allocs - s->seq - 1));
			return;
		}
	}
	wbuf__varint(b, ADDR_LIT);
	wbuf__svarint(b, (int64_t)(r->addr - m->last_addr));
}

static void enc_call(struct rec_encoder *e, const struct gl_call_rec *r)
{
	struct rec_model *m = &e->m;
	struct codec_site tmp, *s;
	uint8_t head = r->hdr.kind, mask = 0;
	int slot = thread_slot(m, r->hdr.pid, r->hdr.tid);

	head |= slot << 3;
	if (slot == HEAD_THREAD_LIT) {
		wbuf__varint(&e->col[COL_THREAD], r->hdr.pid);
		wbuf__varint(&e->col[COL_THREAD], r->hdr.tid);
		thread_add(m, r->hdr.pid, r->hdr.tid);
	}
	wbuf__svarint(&e->col[COL_TS], (int64_t)(r->hdr.ts_ns - m->prev_ts));
	m->prev_ts = r->hdr.ts_ns;
	s = enc_site(e, r->caller, &tmp);
	if (r->hdr.api != s->api) {
		head |= HEAD_API_LIT;
		wbuf__varint(&e->col[COL_API], r->hdr.api);
	}
	if (r->size != s->size)
		mask |= M_SIZE;
	if (r->aux != s->aux)
		mask |= M_AUX;
	if (r->hdr.kind != GL_REC_SYNC && r->aux2 != s->aux2)
		mask |= M_AUX2;
	if (r->ret)
		mask |= M_RET;
	if (r->stack_id != -1)
		mask |= M_STACK;
	if (r->hdr.depth)
		mask |= M_DEPTH;
	if (r->hdr.flags)
		mask |= M_FLAGS;
	if (mask) {
		head |= HEAD_HAS_MASK;
		wbuf__u8(&e->col[COL_MASK], mask);
	}
	wbuf__u8(&e->col[COL_HEAD], head);
	enc_addr(e, r);
	if (mask & M_SIZE)
		wbuf__varint(&e->col[COL_SIZE], r->size);
	if (mask & M_AUX)
		wbuf__varint(&e->col[COL_AUX], r->aux);
	if (r->hdr.kind == GL_REC_SYNC)
		wbuf__svarint(&e->col[COL_AUX2], (int64_t)(r->hdr.ts_ns - r->aux2));
	else if (mask & M_AUX2)
		wbuf__varint(&e->col[COL_AUX2], r->aux2);
	if (mask & M_RET)
		wbuf__svarint(&e->col[COL_EXT], r->ret);
	if (mask & M_STACK)
		wbuf__svarint(&e->col[COL_EXT], r->stack_id);
	if (mask & M_DEPTH)
		wbuf__u8(&e->col[COL_EXT], r->hdr.depth);
	if (mask & M_FLAGS)
		wbuf__varint(&e->col[COL_EXT], r->hdr.flags);
	site_update(s, r);
	if (r->hdr.kind == GL_REC_ALLOC && r->addr) {
		struct addr_slot *as = &e->addr_hash[hmap_mix(r->addr) & (CODEC_ALLOC_RING - 1)];

		as->addr = r->addr;
		as->seq = m->nr_allocs;
	}
	if (addr_update(m, r))
		e->err = -ENOMEM;
}

int rec_enc__add(struct rec_encoder *e, const struct gl_hdr *h)
{
	int i;

	if (is_call(h)) {
		enc_call(e, (const struct gl_call_rec *)h);
	} else if (is_plain_tick(h)) {
		wbuf__u8(&e->col[COL_HEAD], HEAD_TICK);
		wbuf__svarint(&e->col[COL_TS], (int64_t)(h->ts_ns - e->m.prev_ts));
		e->m.prev_ts = h->ts_ns;
	} else {
		if (h->size < sizeof(*h) || h->size > CAPTURE_MAX_RAW_REC)
			return -EINVAL;
		wbuf__u8(&e->col[COL_HEAD], HEAD_RAW);
		wbuf__varint(&e->col[COL_RAW], h->size);
		wbuf__bytes(&e->col[COL_RAW], h, h->size);
		e->m.prev_ts = h->ts_ns;
	}
	e->count++;
	for (i = 0; i < NR_COLS; i++)
		if (e->col[i].err)
			return e->col[i].err;
	return e->err;
}

uint32_t rec_enc__finish(struct rec_encoder *e, struct wbuf *out)
{
	uint32_t n = e->count;
	int i;

	wbuf__varint(out, NR_COLS);
	for (i = 0; i < NR_COLS; i++)
		wbuf__varint(out, e->col[i].len);
	for (i = 0; i < NR_COLS; i++) {
		wbuf__bytes(out, e->col[i].p, e->col[i].len);
		e->col[i].len = 0;
	}
	e->count = 0;
	model_reset(&e->m);
	memset(e->site_hash, 0, 2 * CODEC_SITES * sizeof(*e->site_hash));
	return n;
}

/* ---- decoder ---- */

int rec_dec__init(struct rec_decoder *d)
{
	memset(d, 0, sizeof(*d));
	return model_init(&d->m);
}

void rec_dec__free(struct rec_decoder *d)
{
	model_free(&d->m);
}

static int dec_fail(struct rec_decoder *d, const char *why)
{
	d->why = why;
	return -EINVAL;
}

int rec_dec__begin(struct rec_decoder *d, const uint8_t *p, size_t len, uint32_t count)
{
	struct rbuf r = rbuf_of(p, len);
	uint64_t lens[NR_COLS];
	int i;

	model_reset(&d->m);
	d->count = count;
	d->done = 0;
	d->why = NULL;
	if (rbuf__varint(&r) != NR_COLS || r.bad)
		return dec_fail(d, "records: unknown column layout");
	for (i = 0; i < NR_COLS; i++) {
		lens[i] = rbuf__varint(&r);
		if (r.bad || lens[i] > rbuf__left(&r))
			return dec_fail(d, "records: column length past the payload");
	}
	for (i = 0; i < NR_COLS; i++) {
		const uint8_t *c = rbuf__bytes(&r, lens[i]);

		if (!c && lens[i])
			return dec_fail(d, "records: columns longer than the payload");
		d->col[i] = rbuf_of(c ? c : p, lens[i]);
	}
	if (rbuf__left(&r))
		return dec_fail(d, "records: bytes after the last column");
	/* Every record has a head byte: a count above that is a lie, not a big block. */
	if (count != lens[COL_HEAD])
		return dec_fail(d, "records: record count does not match the payload");
	return 0;
}

static int dec_raw(struct rec_decoder *d, union rec_buf *out)
{
	struct rbuf *c = &d->col[COL_RAW];
	uint64_t len = rbuf__varint(c);
	const uint8_t *p;

	if (c->bad || len < sizeof(struct gl_hdr) || len > CAPTURE_MAX_RAW_REC)
		return dec_fail(d, "records: bad verbatim record length");
	p = rbuf__bytes(c, len);
	if (!p)
		return dec_fail(d, "records: verbatim record past its column");
	memcpy(out->raw, p, len);
	if (out->h.size != len)
		return dec_fail(d, "records: verbatim record size does not match its header");
	d->m.prev_ts = out->h.ts_ns;
	return 0;
}

static int dec_addr(struct rec_decoder *d, struct gl_call_rec *r)
{
	struct rec_model *m = &d->m;
	struct rbuf *c = &d->col[COL_ADDR];
	uint64_t code = rbuf__varint(c), k;

	if (code == ADDR_NULL) {
		r->addr = 0;
	} else if (code == ADDR_LIT) {
		r->addr = m->last_addr + (uint64_t)rbuf__svarint(c);
	} else if (r->hdr.kind == GL_REC_ALLOC) {
		k = code - ADDR_REF;
		if (k >= CODEC_FREE_RING || k >= m->nr_frees)
			return dec_fail(d, "records: allocation refers past the freed addresses");
		r->addr = m->free_ring[(m->nr_frees - 1 - k) & (CODEC_FREE_RING - 1)];
	} else if (r->hdr.kind == GL_REC_FREE) {
		k = code - ADDR_REF;
		if (k >= CODEC_ALLOC_RING || k >= m->nr_allocs)
			return dec_fail(d, "records: free refers past the allocations");
		r->addr = m->alloc_ring[(m->nr_allocs - 1 - k) & (CODEC_ALLOC_RING - 1)];
	} else {
		return dec_fail(d, "records: address reference in a record that has none");
	}
	if (c->bad)
		return dec_fail(d, "records: address column ends early");
	if (code != ADDR_NULL && !r->addr)
		return dec_fail(d, "records: address 0 coded as a non-null address");
	return 0;
}

static int dec_call(struct rec_decoder *d, uint8_t head, struct gl_call_rec *r)
{
	struct rec_model *m = &d->m;
	unsigned int slot = (head >> 3) & 7;
	struct codec_site tmp, *s;
	uint8_t mask = 0;
	uint64_t code, v;
	struct rbuf *c;

	memset(r, 0, sizeof(*r));
	r->hdr.size = sizeof(*r);
	r->hdr.kind = head & 7;
	if (slot == HEAD_THREAD_LIT) {
		c = &d->col[COL_THREAD];
		v = rbuf__varint(c);
		r->hdr.tid = rbuf__varint(c);
		if (c->bad || v > UINT32_MAX)
			return dec_fail(d, "records: bad thread");
		r->hdr.pid = v;
		thread_add(m, r->hdr.pid, r->hdr.tid);
	} else {
		if (slot >= m->nr_thr)
			return dec_fail(d, "records: thread slot not filled yet");
		r->hdr.pid = m->thr[slot][0];
		r->hdr.tid = m->thr[slot][1];
	}
	r->hdr.ts_ns = m->prev_ts + (uint64_t)rbuf__svarint(&d->col[COL_TS]);
	m->prev_ts = r->hdr.ts_ns;

	c = &d->col[COL_CALLER];
	code = rbuf__varint(c);
	if (!code) {
		int err = 0;

		r->caller = rbuf__varint(c);
		s = site_add(m, r->caller, &err);
		if (err)
			return dec_fail(d, "out of memory");
		if (!s) {
			tmp = (struct codec_site){.caller = r->caller};
			s = &tmp;
		}
	} else {
		if (code > m->nr_sites)
			return dec_fail(d, "records: call site not in the dictionary");
		s = &m->sites[code - 1];
		r->caller = s->caller;
	}
	if (head & HEAD_API_LIT) {
		v = rbuf__varint(&d->col[COL_API]);
		if (v > UINT16_MAX)
			return dec_fail(d, "records: bad API id");
		r->hdr.api = v;
	} else {
		r->hdr.api = s->api;
	}
	if (head & HEAD_HAS_MASK) {
		mask = rbuf__u8(&d->col[COL_MASK]);
		if (!mask || (mask & ~M_ALL))
			return dec_fail(d, "records: bad field mask");
		if (r->hdr.kind == GL_REC_SYNC && (mask & M_AUX2))
			return dec_fail(d, "records: bad field mask");
	}
	if (dec_addr(d, r))
		return -EINVAL;
	r->size = mask & M_SIZE ? rbuf__varint(&d->col[COL_SIZE]) : s->size;
	r->aux = mask & M_AUX ? rbuf__varint(&d->col[COL_AUX]) : s->aux;
	if (r->hdr.kind == GL_REC_SYNC)
		r->aux2 = r->hdr.ts_ns - (uint64_t)rbuf__svarint(&d->col[COL_AUX2]);
	else
		r->aux2 = mask & M_AUX2 ? rbuf__varint(&d->col[COL_AUX2]) : s->aux2;
	c = &d->col[COL_EXT];
	r->stack_id = -1;
	if (mask & M_RET)
		r->ret = (int32_t)rbuf__svarint(c);
	if (mask & M_STACK)
		r->stack_id = (int32_t)rbuf__svarint(c);
	if (mask & M_DEPTH)
		r->hdr.depth = rbuf__u8(c);
	if (mask & M_FLAGS) {
		v = rbuf__varint(c);
		if (v > UINT16_MAX)
			return dec_fail(d, "records: bad record flags");
		r->hdr.flags = v;
	}
	site_update(s, r);
	if (addr_update(m, r))
		return dec_fail(d, "out of memory");
	return 0;
}

int rec_dec__next(struct rec_decoder *d, union rec_buf *out)
{
	uint8_t head;
	int i, err;

	if (d->done >= d->count)
		return dec_fail(d, "records: more records than the block holds");
	head = rbuf__u8(&d->col[COL_HEAD]);
	switch (head & 7) {
	case HEAD_TICK:
		if (head)
			return dec_fail(d, "records: bad tick head");
		memset(&out->h, 0, sizeof(out->h));
		out->h.size = sizeof(out->h);
		out->h.kind = GL_REC_TICK;
		out->h.ts_ns = d->m.prev_ts + (uint64_t)rbuf__svarint(&d->col[COL_TS]);
		d->m.prev_ts = out->h.ts_ns;
		err = 0;
		break;
	case HEAD_RAW:
		if (head != HEAD_RAW)
			return dec_fail(d, "records: bad verbatim head");
		err = dec_raw(d, out);
		break;
	default:
		err = dec_call(d, head, &out->call);
		break;
	}
	if (err)
		return err;
	for (i = 0; i < NR_COLS; i++)
		if (d->col[i].bad)
			return dec_fail(d, "records: a column ends early");
	d->done++;
	return 0;
}

int rec_dec__end(struct rec_decoder *d)
{
	int i;

	if (d->done != d->count)
		return dec_fail(d, "records: fewer records than the block holds");
	for (i = 0; i < NR_COLS; i++)
		if (rbuf__left(&d->col[i]))
			return dec_fail(d, "records: bytes left in a column");
	return 0;
}
