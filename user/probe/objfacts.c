// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "lib/hmap.h"
#include "lib/log.h"
#include "lib/rundir.h"
#include "lib/vec.h"
#include "probe/objfacts.h"

#define FACTS_MAGIC "gpuleak-object-facts 1\n"
/* Bounds the file (about 90 bytes a line): the oldest facts go first when it is full. */
#define FACTS_MAX 20000

struct fact {
	struct file_id id;
	unsigned int bits;
	struct objsite *sites; /* with OBJF_SITES */
	size_t nr_sites, cap_sites;
};

struct objfacts {
	struct fact *v;
	size_t n, cap;
	struct hmap idx; /* (dev, ino) -> index in v */
	char path[4200]; /* "": never saved */
	size_t hits;
	size_t nr_sites; /* in all files */
	bool dirty;
};

int file_id__of(const char *path, struct file_id *id)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	*id = (struct file_id){
	    .dev = st.st_dev,
	    .ino = st.st_ino,
	    .size = (uint64_t)st.st_size,
	    .mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ULL + (uint64_t)st.st_mtim.tv_nsec,
	    .ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000ULL + (uint64_t)st.st_ctim.tv_nsec};
	return 0;
}

static bool same(const struct file_id *a, const struct file_id *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* (dev, ino) with the empty key avoided: hmap's k0 may not be HMAP_EMPTY. */
static uint64_t key0(const struct file_id *id)
{
	return id->dev == HMAP_EMPTY ? 0 : id->dev;
}

static struct fact *find(const struct objfacts *f, const struct file_id *id)
{
	uint64_t *i = hmap__get(&f->idx, key0(id), id->ino);

	return i ? &f->v[*i] : NULL;
}

static void drop_sites(struct objfacts *f, struct fact *e)
{
	f->nr_sites -= e->nr_sites;
	free(e->sites);
	e->sites = NULL;
	e->nr_sites = e->cap_sites = 0;
	e->bits &= ~(unsigned int)(OBJF_SITES | OBJF_NO_SITES | OBJF_DEBUG_SYMS);
}

/* A newer version of a file replaces the old one's facts (same device and inode). */
static int put(struct objfacts *f, const struct file_id *id, unsigned int bits)
{
	struct fact *e = find(f, id);

	if (e) {
		if (!same(&e->id, id)) {
			drop_sites(f, e);
			*e = (struct fact){.id = *id};
		}
		e->bits |= bits;
		return 0;
	}
	if (vec_grow((void **)&f->v, &f->cap, f->n, sizeof(*f->v)))
		return -ENOMEM;
	if (hmap__put(&f->idx, key0(id), id->ino, f->n))
		return -ENOMEM;
	f->v[f->n++] = (struct fact){.id = *id, .bits = bits};
	return 0;
}

/* "-" or the string's bytes in hex: no spaces, any bytes but NUL. */
static int unhex(const char *h, char *out, size_t size)
{
	size_t i, n = strlen(h);

	memset(out, 0, size);
	if (!strcmp(h, "-"))
		return 0;
	if (!n || n % 2 || n / 2 >= size)
		return -EINVAL;
	for (i = 0; i < n / 2; i++) {
		unsigned int b;

		if (sscanf(h + 2 * i, "%2x", &b) != 1 || !b || !isxdigit((unsigned char)h[2 * i]) ||
		    !isxdigit((unsigned char)h[2 * i + 1]))
			return -EINVAL;
		out[i] = (char)b;
	}
	return 0;
}

static size_t hex(const char *str, size_t len, char *out, size_t size)
{
	size_t i, n = 0;

	len = strnlen(str, len);
	if (!len)
		return (size_t)snprintf(out, size, "-");
	for (i = 0; i < len && n + 3 <= size; i++)
		n += (size_t)snprintf(out + n, size - n, "%02x", (unsigned char)str[i]);
	return n;
}

/* One site line (after "s "): 0, or -EINVAL. */
static int parse_site(const char *line, struct objsite *o)
{
	unsigned int api, local, source, slow, place, moved;
	char first[64], why[160];
	int used = -1;

	if (sscanf(line, "%x %" SCNx64 " %" SCNx64 " %" SCNx64 " %x %x %x %x %x %63s %159s%n", &api,
		   &o->offset, &o->vaddr, &o->entry_offset, &local, &source, &slow, &place, &moved,
		   first, why, &used) != 11 ||
	    used != (int)strlen(line) || local > 1 || source > 255 || slow > 1 || place > 255 ||
	    moved > 255 || o->offset < o->entry_offset || o->offset - o->entry_offset != moved)
		return -EINVAL;
	o->api = api;
	o->local = local;
	o->source = (uint8_t)source;
	o->slow = slow;
	o->place.place = (uint8_t)place;
	o->place.moved = (uint8_t)moved;
	if (unhex(first, o->place.first, sizeof(o->place.first)) ||
	    unhex(why, o->place.why, sizeof(o->place.why)))
		return -EINVAL;
	return 0;
}

/* The sites that follow a fact's line, into its fact (the last put). */
static int add_site(struct objfacts *f, struct fact *e, const struct objsite *o)
{
	if (!(e->bits & OBJF_SITES) || e->nr_sites >= OBJFACTS_SITES_PER_FILE ||
	    f->nr_sites >= OBJFACTS_SITES_MAX)
		return -EINVAL;
	if (vec_grow((void **)&e->sites, &e->cap_sites, e->nr_sites, sizeof(*e->sites)))
		return -ENOMEM;
	e->sites[e->nr_sites++] = *o;
	f->nr_sites++;
	return 0;
}

int objfacts__parse(const char *buf, size_t len, struct objfacts **out, char *why, size_t whylen)
{
	struct objfacts *f = calloc(1, sizeof(*f));
	const char *p = buf, *end = buf + len;
	unsigned int line = 1;
	size_t cur = 0; /* the last file's line, + 1 */
	int err = 0;

	*out = NULL;
	if (!f)
		return -ENOMEM;
	if (len < strlen(FACTS_MAGIC) || memcmp(buf, FACTS_MAGIC, strlen(FACTS_MAGIC))) {
		snprintf(why, whylen, "line 1: not \"%.*s\"", (int)strlen(FACTS_MAGIC) - 1,
			 FACTS_MAGIC);
		err = -EINVAL;
		goto out;
	}
	for (p += strlen(FACTS_MAGIC); p < end && !err; line++) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char tmp[320];
		struct file_id id;
		struct objsite o;
		unsigned int bits;
		int used = -1;

		if (!nl || (size_t)(nl - p) >= sizeof(tmp)) {
			snprintf(why, whylen, "line %u: %s", line + 1,
				 nl ? "too long" : "no newline at its end");
			err = -EINVAL;
			break;
		}
		memcpy(tmp, p, (size_t)(nl - p));
		tmp[nl - p] = 0;
		p = nl + 1;
		/* A site of the file on the line before (which says OBJF_SITES). */
		if (!strncmp(tmp, "s ", 2)) {
			err = cur ? parse_site(tmp + 2, &o) : -EINVAL;
			if (!err)
				err = add_site(f, &f->v[cur - 1], &o);
			if (err == -EINVAL)
				snprintf(why, whylen,
					 "line %u: not a probe site of the file before", line + 1);
			continue;
		}
		if (cur && (f->v[cur - 1].bits & OBJF_SITES) && !f->v[cur - 1].nr_sites) {
			snprintf(why, whylen, "line %u: no probe site after line %u", line + 1,
				 line);
			err = -EINVAL;
			break;
		}
		if (sscanf(tmp, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %x%n",
			   &id.dev, &id.ino, &id.size, &id.mtime_ns, &id.ctime_ns, &bits,
			   &used) != 6 ||
		    used != (int)strlen(tmp) || !bits || (bits & ~(unsigned int)OBJF_ALL) ||
		    ((bits & OBJF_DEBUG_SYMS) && !(bits & (OBJF_SITES | OBJF_NO_SITES))) ||
		    ((bits & OBJF_SITES) && (bits & OBJF_NO_SITES)) || f->n >= FACTS_MAX) {
			snprintf(why, whylen, "line %u: not six hex fields of known facts",
				 line + 1);
			err = -EINVAL;
			break;
		}
		err = put(f, &id, 0);
		if (err)
			break;
		cur = (size_t)(find(f, &id) - f->v) + 1;
		/* Its sites are the lines that follow: a file said twice keeps the last scan's. */
		if (bits & (OBJF_SITES | OBJF_NO_SITES))
			drop_sites(f, &f->v[cur - 1]);
		f->v[cur - 1].bits |= bits;
	}
	if (!err && cur && (f->v[cur - 1].bits & OBJF_SITES) && !f->v[cur - 1].nr_sites) {
		snprintf(why, whylen, "line %u: no probe site after it", line);
		err = -EINVAL;
	}
out:
	if (err) {
		objfacts__free(f);
		return err;
	}
	*out = f;
	return 0;
}

int objfacts__open(const char *name, struct objfacts **out)
{
	char dir[200], path[sizeof(((struct objfacts *)0)->path)], why[128] = "";
	size_t len = 0;
	char *buf;
	int err;

	*out = NULL;
	if (!rundir__dir(dir, sizeof(dir)) || strchr(name, '/')) {
		*out = calloc(1, sizeof(**out));
		return *out ? 0 : -ENOMEM;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	buf = rundir__read(path, (size_t)FACTS_MAX * 100 + (size_t)OBJFACTS_SITES_MAX * 256 + 64,
			   &len);
	err = objfacts__parse(buf ? buf : FACTS_MAGIC, buf ? len : strlen(FACTS_MAGIC), out, why,
			      sizeof(why));
	free(buf);
	if (err == -EINVAL) {
		pr_info("%s: %s: objects are scanned afresh\n", path, why);
		err = objfacts__parse(FACTS_MAGIC, strlen(FACTS_MAGIC), out, why, sizeof(why));
		if (!err)
			(*out)->dirty = true; /* replaced at the next save */
	}
	if (!err)
		memcpy((*out)->path, path, sizeof(path));
	return err;
}

void objfacts__free(struct objfacts *f)
{
	size_t i;

	if (!f)
		return;
	for (i = 0; i < f->n; i++)
		free(f->v[i].sites);
	hmap__free(&f->idx);
	free(f->v);
	free(f);
}

unsigned int objfacts__get(struct objfacts *f, const struct file_id *id)
{
	const struct fact *e = f ? find(f, id) : NULL;

	if (!e || !same(&e->id, id))
		return 0;
	f->hits++;
	return e->bits;
}

/* Full: the oldest half goes (files of an upgrade ago), rather than learning nothing. */
static void make_room(struct objfacts *f, const struct file_id *id)
{
	if (!find(f, id) && f->n >= FACTS_MAX) {
		size_t i, keep = FACTS_MAX / 2;

		for (i = 0; i < f->n - keep; i++)
			drop_sites(f, &f->v[i]);
		memmove(f->v, f->v + f->n - keep, keep * sizeof(*f->v));
		f->n = keep;
		hmap__free(&f->idx);
		f->idx = (struct hmap){0};
		for (i = 0; i < f->n; i++)
			if (hmap__put(&f->idx, key0(&f->v[i].id), f->v[i].id.ino, i))
				return;
	}
}

void objfacts__add(struct objfacts *f, const struct file_id *id, unsigned int bits)
{
	const struct fact *e;

	/* What a scan found comes whole (objfacts__set_scan), never as a bit alone. */
	bits &= ~(unsigned int)(OBJF_SITES | OBJF_NO_SITES | OBJF_DEBUG_SYMS);
	if (!f || !bits)
		return;
	e = find(f, id);
	if (e && same(&e->id, id) && (e->bits | bits) == e->bits)
		return;
	make_room(f, id);
	if (!put(f, id, bits))
		f->dirty = true;
}

const struct objsite *objfacts__sites(struct objfacts *f, const struct file_id *id, size_t *n)
{
	const struct fact *e = f ? find(f, id) : NULL;

	if (!e || !same(&e->id, id) || !(e->bits & OBJF_SITES))
		return NULL;
	f->hits++;
	*n = e->nr_sites;
	return e->sites;
}

void objfacts__set_scan(struct objfacts *f, const struct file_id *id, const struct objsite *v,
			size_t n, bool with_debug)
{
	unsigned int bits = (n ? OBJF_SITES : OBJF_NO_SITES) | (with_debug ? OBJF_DEBUG_SYMS : 0);
	struct objsite *copy = NULL;
	struct fact *e;

	if (!f || n > OBJFACTS_SITES_PER_FILE)
		return;
	e = find(f, id);
	if (e && same(&e->id, id) && (e->bits & (OBJF_SITES | OBJF_NO_SITES))) {
		if (!n && (e->bits & (OBJF_SITES | OBJF_NO_SITES | OBJF_DEBUG_SYMS)) == bits)
			return; /* known already */
		drop_sites(f, e);
		f->dirty = true;
	}
	if (n) {
		if (f->nr_sites + n > OBJFACTS_SITES_MAX)
			return;
		copy = malloc(n * sizeof(*copy));
		if (!copy)
			return;
		memcpy(copy, v, n * sizeof(*copy));
	}
	make_room(f, id);
	if (put(f, id, bits)) {
		free(copy);
		return;
	}
	f->dirty = true;
	if (!n)
		return;
	e = find(f, id);
	e->sites = copy;
	e->nr_sites = e->cap_sites = n;
	f->nr_sites += n;
}

char *objfacts__format(const struct objfacts *f, size_t *len)
{
	size_t i, k, n, cap = strlen(FACTS_MAGIC) + f->n * 100 + f->nr_sites * 256 + 1;
	char *buf = malloc(cap);

	if (!buf)
		return NULL;
	n = (size_t)snprintf(buf, cap, "%s", FACTS_MAGIC);
	for (i = 0; i < f->n; i++) {
		const struct fact *e = &f->v[i];

		n += (size_t)snprintf(
		    buf + n, cap - n,
		    "%" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %" PRIx64 " %x\n", e->id.dev,
		    e->id.ino, e->id.size, e->id.mtime_ns, e->id.ctime_ns, e->bits);
		for (k = 0; k < e->nr_sites; k++) {
			const struct objsite *o = &e->sites[k];
			char first[2 * sizeof(o->place.first) + 2],
			    why[2 * sizeof(o->place.why) + 2];

			hex(o->place.first, sizeof(o->place.first) - 1, first, sizeof(first));
			hex(o->place.why, sizeof(o->place.why) - 1, why, sizeof(why));
			n += (size_t)snprintf(
			    buf + n, cap - n,
			    "s %x %" PRIx64 " %" PRIx64 " %" PRIx64 " %x %x %x %x %x %s %s\n",
			    o->api, o->offset, o->vaddr, o->entry_offset, o->local, o->source,
			    o->slow, o->place.place, o->place.moved, first, why);
		}
	}
	*len = n;
	return buf;
}

int objfacts__save(struct objfacts *f)
{
	size_t len;
	char *buf;
	int err;

	if (!f || !f->dirty || !f->path[0])
		return 0;
	buf = objfacts__format(f, &len);
	if (!buf)
		return -ENOMEM;
	err = rundir__write(f->path, buf, len);
	free(buf);
	if (!err)
		f->dirty = false;
	return err;
}

size_t objfacts__hits(const struct objfacts *f)
{
	return f ? f->hits : 0;
}

size_t objfacts__count(const struct objfacts *f)
{
	return f ? f->n : 0;
}

bool objfacts__at(const struct objfacts *f, size_t i, struct file_id *id, unsigned int *bits)
{
	if (!f || i >= f->n)
		return false;
	*id = f->v[i].id;
	*bits = f->v[i].bits;
	return true;
}
