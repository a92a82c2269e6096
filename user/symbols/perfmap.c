// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * Perf maps (/tmp/perf-PID.map) as a JIT writes them, parsed as they grow: what names the
 * code of anonymous executable memory (perfmap.h). The symbolizer keeps one per traced process
 * and reads on when a frame falls past what was read.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "symbols/perfmap.h"

/* One line: [start, end) is code named names + name. */
struct pm_ent {
	uint64_t start, end;
	uint32_t seq;  /* order in the file: the later of two overlapping entries wins */
	uint32_t name; /* offset into names */
};

/* Entries an address lookup looks back over for an overlapping, later one. */
#define PM_SCAN 64
/* Bytes of the file before the read offset kept to tell a file rewritten in place. */
#define PM_TAIL	 32
#define PM_CHUNK (64u << 10)

struct perfmap {
	struct pm_ent *v; /* sorted by (start, seq) */
	uint64_t *maxend; /* maxend[i]: the largest end of v[0..i] */
	size_t n, cap;
	char *names; /* NUL-terminated, back to back */
	size_t names_len, names_cap;
	char *line; /* a partial line waiting for its newline (PERFMAP_MAX_LINE bytes) */
	size_t line_len;
	bool skipping; /* inside a line too long to keep: up to its newline */
	uint32_t seq;
	size_t max_entries, max_name_bytes;
	/* the file: */
	int fd;
	dev_t dev;
	ino_t ino;
	uint64_t off; /* bytes read and fed */
	unsigned char tail[PM_TAIL];
	size_t tail_len; /* the last tail_len bytes before off */
	struct perfmap_stats st;
};

int perfmap__new(struct perfmap **out)
{
	struct perfmap *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return -ENOMEM;
	pm->fd = -1;
	pm->max_entries = PERFMAP_MAX_ENTRIES;
	pm->max_name_bytes = PERFMAP_MAX_NAME_BYTES;
	*out = pm;
	return 0;
}

void perfmap__free(struct perfmap *pm)
{
	if (!pm)
		return;
	if (pm->fd >= 0)
		close(pm->fd);
	free(pm->v);
	free(pm->maxend);
	free(pm->names);
	free(pm->line);
	free(pm);
}

void perfmap__set_limits(struct perfmap *pm, size_t max_entries, size_t max_name_bytes)
{
	pm->max_entries = max_entries < PERFMAP_MAX_ENTRIES ? max_entries : PERFMAP_MAX_ENTRIES;
	pm->max_name_bytes =
	    max_name_bytes < PERFMAP_MAX_NAME_BYTES ? max_name_bytes : PERFMAP_MAX_NAME_BYTES;
}

void perfmap__reset(struct perfmap *pm)
{
	pm->n = 0;
	pm->names_len = 0;
	pm->line_len = 0;
	pm->skipping = false;
	pm->seq = 0;
	pm->off = 0;
	pm->tail_len = 0;
	pm->st.entries = 0;
	pm->st.name_bytes = 0;
	pm->st.full = false;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A hexadecimal number of 1 to 16 digits (after an optional 0x) at *p, moved past it. */
static bool parse_hex(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t x = 0;
	int nd = 0, d;

	if (end - s > 2 && s[0] == '0' && (s[1] | 0x20) == 'x' && hexval(s[2]) >= 0)
		s += 2;
	while (s < end && (d = hexval((unsigned char)*s)) >= 0) {
		if (++nd > 16)
			return false;
		x = x << 4 | (uint64_t)d;
		s++;
	}
	*out = x;
	*p = s;
	return nd > 0;
}

/* Skip spaces and tabs: at least one. */
static bool parse_blank(const char **p, const char *end)
{
	const char *s = *p;

	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	if (s == *p)
		return false;
	*p = s;
	return true;
}

static int add_entry(struct perfmap *pm, uint64_t start, uint64_t end, const char *name, size_t len)
{
	size_t i, need = pm->names_len + len + 1;

	if (pm->n >= pm->max_entries || need > pm->max_name_bytes) {
		pm->st.full = true;
		return -ENOSPC;
	}
	if (pm->n == pm->cap) {
		size_t ncap = pm->cap ? 2 * pm->cap : 256;
		struct pm_ent *v = realloc(pm->v, ncap * sizeof(*v));
		uint64_t *m;

		if (!v)
			return -ENOMEM;
		pm->v = v;
		m = realloc(pm->maxend, ncap * sizeof(*m));
		if (!m)
			return -ENOMEM;
		pm->maxend = m;
		pm->cap = ncap;
	}
	if (need > pm->names_cap) {
		size_t ncap = pm->names_cap ? pm->names_cap : 4096;
		char *p;

		while (ncap < need)
			ncap *= 2;
		p = realloc(pm->names, ncap);
		if (!p)
			return -ENOMEM;
		pm->names = p;
		pm->names_cap = ncap;
	}
	/* The target wrote these bytes: no control characters reach a terminal or a file. */
	for (i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		pm->names[pm->names_len + i] = c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
	pm->names[pm->names_len + len] = '\0';
	pm->v[pm->n++] = (struct pm_ent){start, end, pm->seq++, (uint32_t)pm->names_len};
	pm->names_len = need;
	return 0;
}

/* One line without its newline: "START SIZE name". Lines that do not parse are skipped. */
static int parse_line(struct perfmap *pm, const char *s, size_t len)
{
	const char *end = s + len, *name;
	uint64_t start, size;

	pm->st.lines++;
	while (end > s && (end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
		end--;
	if (!parse_hex(&s, end, &start) || !parse_blank(&s, end) || !parse_hex(&s, end, &size) ||
	    !parse_blank(&s, end) || !size || start + size < start) {
		pm->st.malformed++;
		return 0;
	}
	name = s;
	return add_entry(pm, start, start + size, name, (size_t)(end - name));
}

static int cmp_ent(const void *a, const void *b)
{
	const struct pm_ent *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The first of v[lo, hi) that sorts after e. */
static size_t upper_bound(const struct pm_ent *v, size_t lo, size_t hi, const struct pm_ent *e)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cmp_ent(&v[mid], e) <= 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Entries from sorted on were added since the last commit: sort them into the rest. A JIT
 * mostly writes its code at rising addresses, so this is usually an append; otherwise one
 * merge of what the new entries interleave with.
 */
static int commit(struct perfmap *pm, size_t sorted)
{
	size_t i, from = sorted;
	bool in_order = true;

	for (i = sorted + 1; i < pm->n && in_order; i++)
		in_order = cmp_ent(&pm->v[i - 1], &pm->v[i]) <= 0;
	if (!in_order)
		qsort(pm->v + sorted, pm->n - sorted, sizeof(*pm->v), cmp_ent);
	if (sorted && sorted < pm->n && cmp_ent(&pm->v[sorted - 1], &pm->v[sorted]) > 0) {
		size_t na, ia = 0, ib = sorted, d;
		struct pm_ent *a;

		from = upper_bound(pm->v, 0, sorted, &pm->v[sorted]);
		na = sorted - from;
		a = malloc(na * sizeof(*a));
		if (!a) {
			pm->n = sorted; /* the new entries are dropped: the rest stays sorted */
			return -ENOMEM;
		}
		memcpy(a, pm->v + from, na * sizeof(*a));
		/* Writing at d never passes reading at ib: d = from + ia + (ib - sorted). */
		for (d = from; ia < na; d++) {
			if (ib < pm->n && cmp_ent(&pm->v[ib], &a[ia]) < 0)
				pm->v[d] = pm->v[ib++];
			else
				pm->v[d] = a[ia++];
		}
		free(a);
	}
	for (i = from; i < pm->n; i++) {
		uint64_t prev = i ? pm->maxend[i - 1] : 0;

		pm->maxend[i] = pm->v[i].end > prev ? pm->v[i].end : prev;
	}
	pm->st.entries = pm->n;
	pm->st.name_bytes = pm->names_len;
	return 0;
}

static void keep_tail(struct perfmap *pm, const char *buf, size_t len)
{
	if (len >= PM_TAIL) {
		memcpy(pm->tail, buf + len - PM_TAIL, PM_TAIL);
		pm->tail_len = PM_TAIL;
		return;
	}
	if (pm->tail_len + len > PM_TAIL) {
		size_t drop = pm->tail_len + len - PM_TAIL;

		memmove(pm->tail, pm->tail + drop, pm->tail_len - drop);
		pm->tail_len -= drop;
	}
	memcpy(pm->tail + pm->tail_len, buf, len);
	pm->tail_len += len;
}

int perfmap__feed(struct perfmap *pm, const char *buf, size_t len)
{
	size_t sorted = pm->n;
	int err = 0, cerr;

	keep_tail(pm, buf, len);
	pm->off += len;
	if (pm->st.full)
		return -ENOSPC;
	while (len && !err) {
		const char *nl = memchr(buf, '\n', len);
		size_t n = nl ? (size_t)(nl - buf) : len;

		if (pm->skipping || pm->line_len + n >= PERFMAP_MAX_LINE) {
			/* Too long to be a perf map line: dropped up to its newline. */
			if (!pm->skipping) {
				pm->st.lines++;
				pm->st.malformed++;
			}
			pm->skipping = !nl;
			pm->line_len = 0;
		} else if (!nl) {
			if (!pm->line) {
				pm->line = malloc(PERFMAP_MAX_LINE);
				if (!pm->line) {
					err = -ENOMEM;
					break;
				}
			}
			memcpy(pm->line + pm->line_len, buf, n);
			pm->line_len += n;
		} else if (pm->line_len) {
			memcpy(pm->line + pm->line_len, buf, n);
			err = parse_line(pm, pm->line, pm->line_len + n);
			pm->line_len = 0;
		} else {
			err = parse_line(pm, buf, n);
		}
		if (!nl)
			break;
		buf = nl + 1;
		len -= n + 1;
	}
	cerr = commit(pm, sorted);
	return err ? err : cerr;
}

const char *perfmap__find(const struct perfmap *pm, uint64_t addr, uint64_t *start)
{
	struct pm_ent key = {.start = addr, .seq = UINT32_MAX};
	const struct pm_ent *best = NULL;
	size_t i = upper_bound(pm->v, 0, pm->n, &key), k;

	/* Back from the last entry starting at or below addr, while one may still cover it. */
	for (k = 0; i-- > 0 && k < PM_SCAN && pm->maxend[i] > addr; k++)
		if (pm->v[i].end > addr && (!best || pm->v[i].seq > best->seq))
			best = &pm->v[i];
	if (!best)
		return NULL;
	*start = best->start;
	return pm->names + best->name;
}

/*
 * path with root as its "/": absolute symlinks and ".." resolve inside root, as they do for
 * the process whose root it is (never on our side of it); without root, path as it is.
 */
static int open_under(const char *root, const char *path, int flags)
{
	struct open_how how = {.flags = (uint64_t)(flags | O_CLOEXEC),
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	int dfd, fd;

	if (!root) {
		fd = open(path, flags | O_CLOEXEC);
		return fd < 0 ? -errno : fd;
	}
	dfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	fd = (int)syscall(SYS_openat2, dfd, path, &how, sizeof(how));
	if (fd < 0)
		fd = -errno;
	close(dfd);
	return fd;
}

static int open_map(struct perfmap *pm, const char *root, const char *path, uid_t owner)
{
	struct stat st;
	int fd;

	/* O_NONBLOCK: a FIFO in its place must not hang us before fstat says what it is. */
	fd = open_under(root, path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		return fd == -ELOOP ? -EPERM : fd;
	if (fstat(fd, &st)) {
		int err = -errno;

		close(fd);
		return err;
	}
	if (!S_ISREG(st.st_mode) || (st.st_uid != owner && st.st_uid != 0)) {
		close(fd);
		return -EPERM;
	}
	pm->fd = fd;
	pm->dev = st.st_dev;
	pm->ino = st.st_ino;
	return 0;
}

/* Whether path now names another file than the one open (it was replaced). */
static bool replaced(const struct perfmap *pm, const char *root, const char *path)
{
	int fd = open_under(root, path, O_PATH | O_NOFOLLOW);
	struct stat st;
	bool other;

	if (fd < 0)
		return false; /* gone (the process exited): what is open is still its map */
	other = !fstat(fd, &st) && (st.st_dev != pm->dev || st.st_ino != pm->ino);
	close(fd);
	return other;
}

/* Whether the bytes before the read offset are still those that were read. */
static bool same_tail(const struct perfmap *pm)
{
	unsigned char b[PM_TAIL];

	if (!pm->tail_len)
		return true;
	return pread(pm->fd, b, pm->tail_len, (off_t)(pm->off - pm->tail_len)) ==
		   (ssize_t)pm->tail_len &&
	       !memcmp(b, pm->tail, pm->tail_len);
}

static void restart(struct perfmap *pm)
{
	perfmap__reset(pm);
	pm->st.resets++;
}

int perfmap__refresh(struct perfmap *pm, const char *root, const char *path, uid_t owner)
{
	bool reset = false;
	size_t before;
	struct stat st;
	char *buf;
	int err = 0;

	if (pm->fd >= 0 && replaced(pm, root, path)) {
		/* Replaced by another file (a new process with this pid, a new run). */
		close(pm->fd);
		pm->fd = -1;
		reset = true;
	}
	if (pm->fd < 0) {
		err = open_map(pm, root, path, owner);
		if (err)
			return err;
		if (reset || pm->off)
			restart(pm);
	}
	if (fstat(pm->fd, &st))
		return -errno;
	if ((uint64_t)st.st_size < pm->off || !same_tail(pm))
		restart(pm);
	if ((uint64_t)st.st_size == pm->off)
		return 0;
	if (pm->st.full)
		return -ENOSPC;
	buf = malloc(PM_CHUNK);
	if (!buf)
		return -ENOMEM;
	before = pm->n;
	while (!err) {
		ssize_t r = pread(pm->fd, buf, PM_CHUNK, (off_t)pm->off);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			err = r < 0 ? -errno : 0;
			break;
		}
		pm->st.bytes_read += (uint64_t)r;
		err = perfmap__feed(pm, buf, (size_t)r);
	}
	free(buf);
	if (pm->n > before)
		pm->st.refills++;
	if (err && err != -ENOSPC)
		return err;
	return pm->n > before ? 1 : err;
}

void perfmap__stats(const struct perfmap *pm, struct perfmap_stats *st)
{
	*st = pm->st;
}

/* ---- names ---- */

static const char *base_name(const char *path, const char *end)
{
	const char *p = end;

	while (p > path && p[-1] != '/')
		p--;
	return p;
}

/*
 * Where V8's "function script:line:col" splits: at the first space followed by what reads
 * as a script name, a path or a URL ("/srv/a.js", "file:///srv/a.mjs", "node:path"), since
 * function names may hold spaces ("get size"); else at the last space.
 */
static const char *v8_split(const char *s)
{
	const char *sp, *last = NULL;

	for (sp = strchr(s, ' '); sp; sp = strchr(sp + 1, ' ')) {
		const char *r = sp + 1, *q = r;

		last = sp;
		if (*r == '/')
			return sp;
		while (isalnum((unsigned char)*q) || *q == '+' || *q == '-' || *q == '.')
			q++;
		if (q > r && isalpha((unsigned char)*r) && *q == ':')
			return sp;
	}
	return last;
}

/* V8's tags of code that runs a script's functions (log.cc, CodeTag; LazyCompile before 11). */
static bool v8_js_tag(const char *name, size_t len)
{
	static const char *const tags[] = {"JS", "Function", "LazyCompile", "Script", "Eval"};
	size_t i;

	for (i = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
		if (strlen(tags[i]) == len && !memcmp(name, tags[i], len))
			return true;
	return false;
}

static char *dup_or_anon(const char *s, size_t len)
{
	return len ? strndup(s, len) : strdup("(anonymous)");
}

int perfmap__describe(const char *name, char **func, char **where)
{
	const char *colon, *split, *p;

	*func = NULL;
	*where = NULL;
	if (!strncmp(name, "py::", 4)) {
		/* CPython 3.12+: "py::qualname:filename"; qualified names hold no colon. */
		p = name + 4;
		colon = strchr(p, ':');
		if (colon) {
			*func = dup_or_anon(p, (size_t)(colon - p));
			*where = strdup(base_name(colon + 1, colon + 1 + strlen(colon + 1)));
			goto out;
		}
	}
	p = name;
	while (isalpha((unsigned char)*p))
		p++;
	if (*p == ':' && v8_js_tag(name, (size_t)(p - name))) {
		p++;
		if (*p && strchr("~*^+", *p)) /* the tier: interpreted, optimized, baseline... */
			p++;
		split = v8_split(p);
		if (split) {
			const char *scr = split + 1;

			/* the script's basename, with the function's line and column */
			*func = dup_or_anon(p, (size_t)(split - p));
			*where = strdup(base_name(scr, scr + strlen(scr)));
			goto out;
		}
		*func = dup_or_anon(p, strlen(p));
		return *func ? 0 : -ENOMEM;
	}
	*func = strdup(name);
	return *func ? 0 : -ENOMEM;
out:
	if (!*func || !*where) {
		free(*func);
		free(*where);
		*func = *where = NULL;
		return -ENOMEM;
	}
	return 0;
}

/* Whether [s, e) ends in ":digits". */
static const char *strip_number(const char *s, const char *e)
{
	const char *p = e;

	while (p > s && isdigit((unsigned char)p[-1]))
		p--;
	return p < e && p > s && p[-1] == ':' ? p - 1 : NULL;
}

char *perfmap__script(const char *name)
{
	const char *p = name, *split, *scr, *end, *c;

	while (isalpha((unsigned char)*p))
		p++;
	if (*p != ':' || !v8_js_tag(name, (size_t)(p - name)))
		return NULL;
	p++;
	if (*p && strchr("~*^+", *p))
		p++;
	split = v8_split(p);
	if (!split)
		return NULL;
	scr = split + 1;
	end = scr + strlen(scr);
	/* :line:column, then the script as V8 names it: a path, file:// URL or node:module */
	c = strip_number(scr, end);
	if (c)
		end = strip_number(scr, c) ? strip_number(scr, c) : c;
	if (!strncmp(scr, "file://", 7))
		scr += 7;
	return end > scr ? strndup(scr, (size_t)(end - scr)) : NULL;
}
