// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
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
};

struct objfacts {
	struct fact *v;
	size_t n, cap;
	struct hmap idx; /* (dev, ino) -> index in v */
	char path[4200]; /* "": never saved */
	size_t hits;
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

/* A newer version of a file replaces the old one's facts (same device and inode). */
static int put(struct objfacts *f, const struct file_id *id, unsigned int bits)
{
	struct fact *e = find(f, id);

	if (e) {
		if (!same(&e->id, id))
			*e = (struct fact){.id = *id};
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

int objfacts__parse(const char *buf, size_t len, struct objfacts **out, char *why, size_t whylen)
{
	struct objfacts *f = calloc(1, sizeof(*f));
	const char *p = buf, *end = buf + len;
	unsigned int line = 1;
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
		char tmp[160];
		struct file_id id;
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
		if (sscanf(tmp, "%" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %x%n",
			   &id.dev, &id.ino, &id.size, &id.mtime_ns, &id.ctime_ns, &bits,
			   &used) != 6 ||
		    used != (int)(nl - p) || !bits || (bits & ~(unsigned int)OBJF_ALL) ||
		    f->n >= FACTS_MAX) {
			snprintf(why, whylen, "line %u: not six hex fields of known facts",
				 line + 1);
			err = -EINVAL;
			break;
		}
		err = put(f, &id, bits);
		p = nl + 1;
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
	buf = rundir__read(path, (size_t)FACTS_MAX * 100 + 64, &len);
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
	if (!f)
		return;
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

void objfacts__add(struct objfacts *f, const struct file_id *id, unsigned int bits)
{
	const struct fact *e;

	if (!f || !bits)
		return;
	e = find(f, id);
	if (e && same(&e->id, id) && (e->bits | bits) == e->bits)
		return;
	/* Full: the oldest half goes (files of an upgrade ago), rather than learning nothing. */
	if (!e && f->n >= FACTS_MAX) {
		size_t i, keep = FACTS_MAX / 2;

		memmove(f->v, f->v + f->n - keep, keep * sizeof(*f->v));
		f->n = keep;
		hmap__free(&f->idx);
		f->idx = (struct hmap){0};
		for (i = 0; i < f->n; i++)
			if (hmap__put(&f->idx, key0(&f->v[i].id), f->v[i].id.ino, i))
				return;
	}
	if (!put(f, id, bits))
		f->dirty = true;
}

char *objfacts__format(const struct objfacts *f, size_t *len)
{
	size_t i, n, cap = strlen(FACTS_MAGIC) + f->n * 100 + 1;
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
