// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "tracker/rules.h"
#include "lib/infile.h"
#include "lib/units.h"
#include "lib/vec.h"

int rules__new(struct rules **out)
{
	*out = calloc(1, sizeof(**out));
	return *out ? 0 : -ENOMEM;
}

static void rule_free(struct rule *r)
{
	free(r->decided);
	free(r->api);
	free(r->lib);
	free(r->site);
	free(r->label);
	free(r->source);
	free(r->text);
}

void rules__free(struct rules *r)
{
	size_t i;

	if (!r)
		return;
	for (i = 0; i < r->n; i++)
		rule_free(&r->v[i]);
	free(r->v);
	free(r);
}

const char *rule_kind_name(enum rule_kind k)
{
	switch (k) {
	case RULE_PERSISTENT:
		return "persistent";
	case RULE_DEFERRED:
		return "deferred";
	case RULE_IGNORE:
		return "ignore";
	case RULE_CACHE:
		return "cache";
	}
	return "?";
}

const char *rule_until_name(enum rule_until u)
{
	switch (u) {
	case UNTIL_STREAM_SYNC:
		return "stream-sync";
	case UNTIL_DEVICE_SYNC:
		return "device-sync";
	case UNTIL_EVENT_SYNC:
		return "event-sync";
	case UNTIL_QUEUE_DONE:
		return "queue-done";
	}
	return "?";
}

/* ---- the parser ---- */

struct lexer {
	const char *p, *end;
	const char *line_start;
	const char *src;
	int line;
	char *err;
	size_t errlen;
};

static int fail(struct lexer *lx, const char *at, const char *fmt, ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	snprintf(lx->err, lx->errlen, "%s:%d:%d: %s", lx->src, lx->line,
		 (int)(at - lx->line_start) + 1, msg);
	return -EINVAL;
}

static bool is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

/* A token: a bare word up to whitespace/#, a "quoted string" with \" and \\ escapes, or a
 * 'quoted string' without. */
struct token {
	const char *start;
	char *text; /* unquoted, NUL-terminated, owned */
};

static int next_token(struct lexer *lx, struct token *t)
{
	const char *p = lx->p, *s;
	size_t n = 0, cap;
	char *out;

	while (p < lx->end && is_space(*p))
		p++;
	t->start = p;
	t->text = NULL;
	if (p == lx->end || *p == '\n' || *p == '#') {
		lx->p = p;
		return 0;
	}
	/* A token ends at its line: the rest of a large file is no bound to allocate per token. */
	s = memchr(p, '\n', (size_t)(lx->end - p));
	cap = (size_t)((s ? s : lx->end) - p) + 1;
	out = malloc(cap);
	if (!out)
		return -ENOMEM;
	/*
	 * key=value with a quoted value: copy up to the quote, then the quoted part. 'single'
	 * quotes as in a shell (no escapes inside), so that a quote copied from a command line
	 * is a quote, and one left open an error, not part of a pattern.
	 */
	while (p < lx->end && !is_space(*p) && *p != '\n' && *p != '#') {
		if (*p == '"' || *p == '\'') {
			const char *q = p++;

			while (p < lx->end && *p != *q && *p != '\n') {
				if (*q == '"' && *p == '\\' && p + 1 < lx->end &&
				    (p[1] == '"' || p[1] == '\\'))
					p++;
				if (!*p) {
					free(out);
					return fail(lx, p, "NUL byte in a rule");
				}
				out[n++] = *p++;
			}
			if (p == lx->end || *p != *q) {
				free(out);
				return fail(
				    lx, q, "unterminated quoted string (%c without its closing %c)",
				    *q, *q);
			}
			p++;
			continue;
		}
		if (!*p) {
			free(out);
			return fail(lx, p, "NUL byte in a rule");
		}
		out[n++] = *p++;
	}
	out[n] = 0;
	lx->p = p;
	t->text = out;
	return 1;
}

static int parse_u64(const char *s, uint64_t *v)
{
	char *end;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return errno || *end ? -EINVAL : 0;
}

static int set_glob(struct lexer *lx, const struct token *t, char **dst, const char *key,
		    const char *value)
{
	if (*dst)
		return fail(lx, t->start, "%s given twice", key);
	if (!*value)
		return fail(lx, t->start, "%s= needs a pattern", key);
	*dst = strdup(value);
	return *dst ? 0 : -ENOMEM;
}

/* One key=value (or flag) of a rule. */
static int parse_item(struct lexer *lx, struct rule *r, const struct token *t, uint32_t *seen)
{
	const char *txt = t->text, *val;
	char key[16];
	size_t klen = strcspn(txt, "=<>");
	enum { EQ, GE, LE } op;

	if (!strcmp(txt, "once")) {
		if (r->kind != RULE_PERSISTENT)
			return fail(lx, t->start, "'once' applies to persistent rules only");
		r->once = true;
		return 0;
	}
	if (!txt[klen])
		return fail(lx, t->start, "expected key=value or 'once', got '%s'", txt);
	if (klen >= sizeof(key) || !klen)
		return fail(lx, t->start, "unknown key in '%s'", txt);
	memcpy(key, txt, klen);
	key[klen] = 0;
	if (!strncmp(txt + klen, ">=", 2)) {
		op = GE;
		val = txt + klen + 2;
	} else if (!strncmp(txt + klen, "<=", 2)) {
		op = LE;
		val = txt + klen + 2;
	} else if (txt[klen] == '=') {
		op = EQ;
		val = txt + klen + 1;
	} else {
		return fail(lx, t->start + klen, "expected '=', '>=' or '<=' after '%s'", key);
	}
	if (op != EQ && strcmp(key, "size"))
		return fail(lx, t->start + klen, "only size takes >= or <=");

#define ONCE(bit)                                                                                  \
	do {                                                                                       \
		if (*seen & (1u << (bit)))                                                         \
			return fail(lx, t->start, "%s given twice", key);                          \
		*seen |= 1u << (bit);                                                              \
	} while (0)

	if (!strcmp(key, "api"))
		return set_glob(lx, t, &r->api, key, val);
	if (!strcmp(key, "lib"))
		return set_glob(lx, t, &r->lib, key, val);
	if (!strcmp(key, "site"))
		return set_glob(lx, t, &r->site, key, val);
	if (!strcmp(key, "label"))
		return set_glob(lx, t, &r->label, key, val);
	if (!strcmp(key, "size")) {
		uint64_t v;

		if (parse_bytes(val, &v))
			return fail(lx, t->start + (val - txt),
				    "bad size '%s' (e.g. 4096, 64KiB, 2GiB)", val);
		if (op == GE || op == EQ) {
			ONCE(0);
			r->has_size_min = true;
			r->size_min = v;
		}
		if (op == LE || op == EQ) {
			ONCE(1);
			r->has_size_max = true;
			r->size_max = v;
		}
		if (r->has_size_min && r->has_size_max && r->size_min > r->size_max)
			return fail(lx, t->start, "size range is empty (%s)", txt);
		return 0;
	}
	if (!strcmp(key, "phase")) {
		ONCE(2);
		if (!strcmp(val, "init")) {
			r->phase = PHASE_INIT;
			return 0;
		}
		if (!strncmp(val, "steps<", 6) && !parse_u64(val + 6, &r->phase_steps) &&
		    r->phase_steps) {
			r->phase = PHASE_STEPS_BELOW;
			return 0;
		}
		return fail(lx, t->start + (val - txt),
			    "phase must be init or steps<N (N >= 1), not '%s'", val);
	}
	if (!strcmp(key, "pid")) {
		uint64_t v;

		ONCE(3);
		if (parse_u64(val, &v) || !v || v > INT_MAX)
			return fail(lx, t->start + (val - txt), "bad pid '%s'", val);
		r->pid = (pid_t)v;
		return 0;
	}
	if (!strcmp(key, "max")) {
		ONCE(4);
		if (r->kind != RULE_PERSISTENT)
			return fail(lx, t->start, "max= applies to persistent rules only");
		if (parse_bytes(val, &r->max_bytes) || !r->max_bytes)
			return fail(lx, t->start + (val - txt), "bad max '%s' (e.g. 16GiB)", val);
		return 0;
	}
	if (!strcmp(key, "release")) {
		ONCE(5);
		if (r->kind != RULE_PERSISTENT)
			return fail(lx, t->start, "release= applies to persistent rules only");
		if (strcmp(val, "session-end"))
			return fail(lx, t->start + (val - txt),
				    "release must be session-end, not '%s'", val);
		r->release_at_end = true;
		return 0;
	}
	if (!strcmp(key, "until")) {
		static const enum rule_until all[] = {UNTIL_STREAM_SYNC, UNTIL_DEVICE_SYNC,
						      UNTIL_EVENT_SYNC, UNTIL_QUEUE_DONE};
		size_t i;

		ONCE(6);
		if (r->kind != RULE_DEFERRED)
			return fail(lx, t->start, "until= applies to deferred rules only");
		for (i = 0; i < sizeof(all) / sizeof(all[0]); i++)
			if (!strcmp(val, rule_until_name(all[i]))) {
				r->until = all[i];
				return 0;
			}
		return fail(
		    lx, t->start + (val - txt),
		    "until must be stream-sync, device-sync, event-sync or queue-done, not '%s'",
		    val);
	}
	if (!strcmp(key, "window")) {
		ONCE(7);
		if (r->kind != RULE_DEFERRED)
			return fail(lx, t->start, "window= applies to deferred rules only");
		if (parse_duration_ns(val, &r->window_ns) || !r->window_ns)
			return fail(lx, t->start + (val - txt), "bad window '%s' (e.g. 500ms, 2s)",
				    val);
		return 0;
	}
#undef ONCE
	return fail(lx, t->start,
		    "unknown key '%s' (api, lib, site, label, size, phase, pid, max, "
		    "release, until, window, once)",
		    key);
}

static int add_rule(struct rules *rs, struct rule *r)
{
	if (vec_grow((void **)&rs->v, &rs->cap, rs->n, sizeof(*rs->v)))
		return -ENOMEM;
	rs->v[rs->n++] = *r;
	return 0;
}

/*
 * One line; returns 0 for blank/comment lines and for a parsed rule, -errno otherwise. room:
 * how many more rules may be added (see RULES_MAX).
 */
static int parse_line(struct lexer *lx, size_t room, struct rule *out, bool *got)
{
	struct rule r = {};
	struct token t;
	uint32_t seen = 0;
	const char *start;
	int ret;

	*got = false;
	ret = next_token(lx, &t);
	if (ret <= 0)
		return ret;
	start = t.start;
	ret = 0;
	if (!strcmp(t.text, "persistent"))
		r.kind = RULE_PERSISTENT;
	else if (!strcmp(t.text, "deferred"))
		r.kind = RULE_DEFERRED;
	else if (!strcmp(t.text, "ignore"))
		r.kind = RULE_IGNORE;
	else if (!strcmp(t.text, "cache"))
		r.kind = RULE_CACHE;
	else
		ret =
		    fail(lx, t.start,
			 "unknown rule kind '%s' (persistent, deferred, ignore or cache)", t.text);
	free(t.text);
	while (!ret && (ret = next_token(lx, &t)) > 0) {
		ret = parse_item(lx, &r, &t, &seen);
		free(t.text);
	}
	if (!ret && r.kind == RULE_DEFERRED && !r.until)
		ret = fail(lx, start,
			   "a deferred rule needs until=stream-sync|device-sync|"
			   "event-sync|queue-done");
	/* A cache is an allocator's calls in a process: judged per site, whatever the sizes. */
	if (!ret && r.kind == RULE_CACHE &&
	    (r.lib || r.site || r.label || r.has_size_min || r.has_size_max || r.phase || !r.api))
		ret = fail(lx, start, "a cache rule takes api= (needed) and pid= only");
	if (!ret && r.kind != RULE_DEFERRED && !r.api && !r.lib && !r.site && !r.label &&
	    !r.has_size_min && !r.has_size_max && !r.phase && !r.pid)
		ret = fail(lx, start,
			   "a %s rule needs at least one matcher (api=, lib=, site=, "
			   "label=, size, phase=, pid=)",
			   rule_kind_name(r.kind));
	if (!ret && !room)
		ret = fail(lx, start,
			   "too many rules: at most %d in all (--rules, --rule and "
			   "--preset together)",
			   RULES_USER_MAX);
	if (!ret) {
		const char *eol = memchr(start, '\n', (size_t)(lx->end - start));
		size_t len = (size_t)((eol ? eol : lx->end) - start);

		r.text = strndup(start, len);
		if (asprintf(&r.source, "%s:%d", lx->src, lx->line) < 0)
			r.source = NULL;
		r.decided = calloc(1, sizeof(*r.decided));
		if (!r.text || !r.source || !r.decided)
			ret = -ENOMEM;
	}
	if (ret) {
		rule_free(&r);
		return ret;
	}
	*out = r;
	*got = true;
	return 0;
}

/* rules__parse with at most max rules in rs afterwards. */
static int parse_upto(struct rules *rs, const char *text, size_t len, const char *src, char *err,
		      size_t errlen, size_t max)
{
	struct lexer lx = {.p = text,
			   .end = text + len,
			   .line_start = text,
			   .src = src,
			   .line = 1,
			   .err = err,
			   .errlen = errlen};
	struct rule *parsed = NULL;
	size_t n = 0, cap = 0, i;
	int ret = 0;

	if (errlen)
		err[0] = 0;
	while (lx.p < lx.end) {
		struct rule r;
		bool got;

		ret = parse_line(&lx, rs->n + n < max ? max - rs->n - n : 0, &r, &got);
		if (ret)
			break;
		if (got) {
			ret = vec_grow((void **)&parsed, &cap, n, sizeof(*parsed));
			if (ret) {
				rule_free(&r);
				break;
			}
			parsed[n++] = r;
		}
		/* Skip the comment or whatever is left up to the end of the line. */
		while (lx.p < lx.end && *lx.p != '\n')
			lx.p++;
		if (lx.p < lx.end) {
			lx.p++;
			lx.line++;
			lx.line_start = lx.p;
		}
	}
	/* All or nothing: a file with one bad line adds no rule. */
	for (i = 0; i < n; i++) {
		if (!ret && (ret = add_rule(rs, &parsed[i])) == 0) {
			/* user rules go before any built-ins already present */
			continue;
		}
		rule_free(&parsed[i]);
	}
	if (!ret)
		rs->nr_user = rs->n;
	if (ret == -ENOMEM && errlen)
		snprintf(err, errlen, "%s: out of memory", src);
	free(parsed);
	return ret;
}

int rules__parse(struct rules *rs, const char *text, size_t len, const char *src, char *err,
		 size_t errlen)
{
	return parse_upto(rs, text, len, src, err, errlen, RULES_USER_MAX);
}

int rules__load_file(struct rules *r, const char *path, char *err, size_t errlen)
{
	struct stat st;
	char *buf = NULL;
	size_t got = 0;
	char why[128] = "";
	int fd, ret;

	/* Presets come from a folder others may write to: a FIFO there must not hang us. */
	ret = infile__open(path, &fd, NULL, why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "%s: %s", path, why[0] ? why : strerror(-ret));
		return ret;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > (16 << 20)) {
		snprintf(err, errlen, "%s: not a regular file of at most 16 MiB", path);
		close(fd);
		return -EINVAL;
	}
	ret = infile__read_all(fd, 16 << 20, &buf, &got);
	close(fd);
	if (ret)
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
	else
		ret = rules__parse(r, buf ? buf : "", got, path, err, errlen);
	free(buf);
	return ret;
}

/* A preset's rules are marked: they cover what a stack may do, not what this run must. */
static int load_preset_file(struct rules *r, const char *path, char *err, size_t errlen)
{
	size_t before = r->n, i;
	int ret = rules__load_file(r, path, err, errlen);

	for (i = before; !ret && i < r->n; i++)
		r->v[i].preset = true;
	return ret;
}

int rules__load_preset(struct rules *r, const char *name, char *err, size_t errlen)
{
	char exe[PATH_MAX], path[PATH_MAX + 64];
	const char *dir = getenv("GPULEAK_RULES_DIR");
	ssize_t n;
	char *slash;
	size_t i;

	for (i = 0; name[i]; i++)
		if (!(name[i] == '-' || name[i] == '_' || name[i] == '.' ||
		      (name[i] >= 'a' && name[i] <= 'z') || (name[i] >= '0' && name[i] <= '9'))) {
			snprintf(err, errlen, "--preset %s: not a preset name", name);
			return -EINVAL;
		}
	if (dir) {
		snprintf(path, sizeof(path), "%s/%s.rules", dir, name);
		return load_preset_file(r, path, err, errlen);
	}
	/* Next to the executable (the source tree), then the installed location. */
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n > 0) {
		exe[n] = 0;
		slash = strrchr(exe, '/');
		if (slash) {
			*slash = 0;
			/* the source tree: ./gpuleak or .output/gpuleak-asan */
			snprintf(path, sizeof(path), "%s/rules/%s.rules", exe, name);
			if (!access(path, R_OK))
				return load_preset_file(r, path, err, errlen);
			snprintf(path, sizeof(path), "%s/../rules/%s.rules", exe, name);
			if (!access(path, R_OK))
				return load_preset_file(r, path, err, errlen);
		}
	}
	snprintf(path, sizeof(path), "/usr/share/gpuleak/rules/%s.rules", name);
	if (!access(path, R_OK))
		return load_preset_file(r, path, err, errlen);
	snprintf(err, errlen,
		 "--preset %s: no rules/%s.rules next to gpuleak or in "
		 "/usr/share/gpuleak/rules",
		 name, name);
	return -ENOENT;
}

int rules__add_builtins(struct rules *rs)
{
	static const char *const defaults =
	    "# async frees complete when their stream does\n"
	    "deferred api=cudaFreeAsync* until=stream-sync\n"
	    "deferred api=cuMemFreeAsync* until=stream-sync\n"
	    "# WebGPU destroys wait for the work the queue was given before them\n"
	    "deferred api=wgpu*Destroy until=queue-done\n";
	size_t before = rs->n, user = rs->nr_user, i;
	char err[256];
	int ret;

	ret = parse_upto(rs, defaults, strlen(defaults), "built-in", err, sizeof(err), RULES_MAX);
	rs->nr_user = user;
	for (i = before; i < rs->n; i++)
		rs->v[i].builtin = true;
	return ret;
}

/* ---- matching ---- */

static bool glob(const char *pat, const char *s)
{
	return s && !fnmatch(pat, s, 0);
}

bool rule__needs_frames(const struct rule *rule)
{
	return rule->site || rule->lib;
}

static bool site_holds(const struct rule *ru, const struct rule_subject *s, int i)
{
	const char *w = s->where ? s->where[i] : NULL, *slash;

	if (glob(ru->site, s->syms[i]))
		return true;
	if (!w)
		return false;
	slash = strrchr(w, '/');
	return glob(ru->site, w) || (slash && glob(ru->site, slash + 1));
}

static bool lib_holds(const struct rule *ru, const struct rule_subject *s, int i)
{
	const char *w = s->where ? s->where[i] : NULL, *colon;
	char file[4096];

	if (glob(ru->lib, s->mods[i]))
		return true;
	/* a Python frame's file, without its ":line" */
	colon = w ? strrchr(w, ':') : NULL;
	if (!colon || (size_t)(colon - w) >= sizeof(file))
		return false;
	memcpy(file, w, (size_t)(colon - w));
	file[colon - w] = 0;
	return glob(ru->lib, file);
}

/*
 * A rule's site= and lib= hold at one frame of the stack: the innermost frame (the call
 * site first, then its callers) whose function matches site= and whose object matches lib=.
 * `lib=libc10_cuda.so site=*Allocator*` is an allocator function of that library, not any
 * such function anywhere with the library somewhere else on the stack.
 */
static int frame_match(const struct rule *ru, const struct rule_subject *s)
{
	int i;

	for (i = 0; i < s->nr_frames; i++)
		if ((!ru->site || site_holds(ru, s, i)) && (!ru->lib || lib_holds(ru, s, i)))
			return i;
	return -1;
}

bool rule__match_static(const struct rule *ru, const struct rule_subject *s)
{
	if (ru->pid && ru->pid != s->pid)
		return false;
	if (ru->api && !glob(ru->api, s->api))
		return false;
	if ((ru->site || ru->lib) && frame_match(ru, s) < 0)
		return false;
	return true;
}

static bool match_dynamic(const struct rule *ru, uint64_t size, const char *label, int64_t step)
{
	if (ru->has_size_min && size < ru->size_min)
		return false;
	if (ru->has_size_max && size > ru->size_max)
		return false;
	if (ru->label && !glob(ru->label, label))
		return false;
	if (ru->phase == PHASE_INIT && step >= 0)
		return false;
	if (ru->phase == PHASE_STEPS_BELOW && step >= (int64_t)ru->phase_steps)
		return false;
	return true;
}

/*
 * The last of a rule's tests, made only once the others held and earlier rules did not
 * decide (the tracker's candidates in order, rules__match): true decides. Counted, for the
 * rules that never decide anything (said at the end: a pattern that names nothing).
 */
bool rule__match_dynamic(const struct rule *ru, uint64_t size, const char *label, int64_t step)
{
	if (!match_dynamic(ru, size, label, step))
		return false;
	if (ru->decided)
		++*ru->decided;
	return true;
}

int rules__cache(const struct rules *r, const char *api, pid_t pid)
{
	struct rule_subject s = {.pid = pid, .api = api, .step = -1};

	return r ? rules__match(r, RULE_CACHE, &s) : -1;
}

int rules__match(const struct rules *r, enum rule_kind kind, const struct rule_subject *s)
{
	size_t i;

	for (i = 0; i < r->n; i++) {
		const struct rule *ru = &r->v[i];

		if (ru->kind == kind && rule__match_static(ru, s) &&
		    rule__match_dynamic(ru, s->size, s->label, s->step))
			return (int)i;
	}
	return -1;
}
