// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "gpuleak.h"
#include "lib/hmap.h"
#include "symbols/globs.h"
#include "symbols/jssites.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

struct jssites {
	struct symbolizer *s;	 /* names the frames */
	struct stacks *stacks;	 /* the symbolizer's: each stack's site is kept in it */
	struct hmap merged;	 /* ((u32)pid, hash of a stack with its glue folded) -> id */
	struct hmap canon;	 /* ((u32)pid, id) -> the first id folded to the same frames */
	struct hmap funcs;	 /* ((u32)pid, hash of function and script) -> first address */
	const char *const *skip; /* --site-skip: frames of these never name a site */
	size_t nr_skip;
};

int jssites__new(struct symbolizer *s, struct stacks *stacks, struct jssites **out)
{
	struct jssites *js = calloc(1, sizeof(*js));

	if (!js)
		return -ENOMEM;
	js->s = s;
	js->stacks = stacks;
	*out = js;
	return 0;
}

void jssites__free(struct jssites *js)
{
	if (!js)
		return;
	hmap__free(&js->merged);
	hmap__free(&js->canon);
	hmap__free(&js->funcs);
	free(js);
}

void jssites__set_skip(struct jssites *js, const char *const *globs, size_t n)
{
	js->skip = globs;
	js->nr_skip = n;
}

/* A frame of a script a JIT named from its perf map (V8's): its file is the script's path. */
static bool js_frame(const struct sym_info *si)
{
	return si && !si->python && si->file;
}

static bool js_internal(const struct sym_info *si)
{
	return !strncmp(si->file, "node:", 5);
}

/* Scripts that name no site while the program's own are on the stack: packages. */
static const char *const skip_scripts[] = {"*/node_modules/*"};

static bool js_skipped(const struct jssites *js, const struct sym_info *si)
{
	return globs__any(skip_scripts, GLOBS_N(skip_scripts), si->file) ||
	       globs__any(js->skip, js->nr_skip, si->file) ||
	       globs__any(js->skip, js->nr_skip, si->module);
}

static uint64_t str_hash(uint64_t h, const char *str)
{
	for (; str && *str; str++)
		h = (h ^ (uint8_t)*str) * 0x100000001b3ULL;
	return h;
}

/*
 * The address that stands for a JavaScript function wherever V8 runs it: the first one seen
 * of the same function and script location. V8 compiles a function again and again
 * (interpreted, baseline, optimized), each tier at other addresses: one site and one stack
 * for all of them, as a reader sees one function. addr itself when it is no script's, or
 * without memory.
 */
static uint64_t js_func(struct jssites *js, pid_t pid, uint64_t addr)
{
	const struct sym_info *si = symbolizer__info(js->s, pid, addr), *o;
	uint64_t h, *at;

	if (!js_frame(si) || !si->func || !si->module)
		return addr;
	h = str_hash(str_hash(0xcbf29ce484222325ULL, si->func), si->module);
	for (;; h++) {
		at = hmap__get(&js->funcs, (uint32_t)pid, h);
		if (!at)
			break;
		o = symbolizer__info(js->s, pid, *at);
		if (o && o->func && o->module && !strcmp(o->func, si->func) &&
		    !strcmp(o->module, si->module))
			return *at;
	}
	hmap__put(&js->funcs, (uint32_t)pid, h, addr); /* unremembered: stands for itself */
	return addr;
}

/*
 * Node's event loop running a queued callback: its task queues and timers (scripts), V8's
 * microtask runner and libuv's callbacks (native). Above such a frame the callback's own
 * frames begin; whoever queued it returned long ago.
 */
static bool js_loop_frame(const struct sym_info *si)
{
	static const char *const scripts[] = {"node:internal/process/task_queues",
					      "node:internal/timers"};
	static const char *const funcs[] = {"Builtins_RunMicrotasks",
					    "Builtins_PromiseFulfillReactionJob",
					    "Builtins_PromiseRejectReactionJob",
					    "uv__run_timers",
					    "uv__run_check",
					    "uv__run_idle"};

	if (!si)
		return false;
	if (js_frame(si))
		return globs__any(scripts, GLOBS_N(scripts), si->file);
	return globs__any(funcs, GLOBS_N(funcs), si->func);
}

/*
 * The site of a stack with JavaScript frames, as for Python: the innermost frame of the
 * program's own scripts (not Node's, not a package's, not --site-skip's); else the
 * innermost script frame of a package; 0 (the call site) without any. Whether the outermost
 * script frame runs in a callback of the event loop.
 */
static void js_judge(struct jssites *js, struct ustack *st)
{
	uint64_t first = 0;
	int outer = -1;
	uint16_t i;

	st->site = 0;
	st->js_flags = 0;
	for (i = 0; i < st->nr; i++) {
		const struct sym_info *si = symbolizer__info(js->s, st->pid, st->frames[i]);

		if (!js_frame(si) || js_internal(si))
			continue;
		outer = i;
		if (!first)
			first = st->frames[i];
		if (!st->site && !js_skipped(js, si))
			st->site = st->frames[i];
	}
	if (!first)
		return;
	st->site = js_func(js, st->pid, st->site ? st->site : first);
	st->js_flags = STACK_JS;
	for (i = (uint16_t)(outer + 1); i < st->nr; i++)
		if (js_loop_frame(symbolizer__info(js->s, st->pid, st->frames[i]))) {
			st->js_flags |= STACK_JS_ASYNC;
			break;
		}
}

/*
 * A JavaScript stack as a reader tells stacks apart: its script frames, each function at one
 * address whatever tier ran it, with each run of native frames around them (V8's builtins
 * and stubs, N-API, the binding, Node's event loop: what tier and entry V8 took) as one 0;
 * the call site, frame 0, as it is (the site's key has it). Into v; its length.
 */
static size_t fold_glue(struct jssites *js, const struct ustack *st, uint64_t *v)
{
	size_t n = 0;
	int i;

	for (i = 0; i < st->nr; i++) {
		bool glue = i > 0 && !symbolizer__script_frame(
					 symbolizer__info(js->s, st->pid, st->frames[i]));

		if (!glue)
			v[n++] = js_func(js, st->pid, st->frames[i]);
		else if (!n || v[n - 1])
			v[n++] = 0;
	}
	return n;
}

/* Stacks the same once their glue is folded are one: the first stands for the others. */
static int js_canonical(struct jssites *js, const struct ustack *st)
{
	uint64_t v[STACK_MAX_FRAMES], w[STACK_MAX_FRAMES], h, *at;
	size_t n = fold_glue(js, st, v), i;
	const struct ustack *first;

	h = hmap_hash2(st->caller, st->site ^ ((uint64_t)st->flags << 48 | st->js_flags));
	for (i = 0; i < n; i++)
		h = hmap_hash2(h, v[i]);
	for (;; h++) {
		at = hmap__get(&js->merged, (uint32_t)st->pid, h);
		if (!at)
			break;
		first = stacks__get(js->stacks, st->pid, (int32_t)*at, st->caller);
		if (first && first->site == st->site && first->flags == st->flags &&
		    first->js_flags == st->js_flags && fold_glue(js, first, w) == n &&
		    !memcmp(v, w, n * sizeof(v[0])))
			return hmap__put(&js->canon, (uint32_t)st->pid, (uint32_t)st->id, *at);
	}
	return hmap__put(&js->merged, (uint32_t)st->pid, h, (uint32_t)st->id);
}

static struct ustack *js_stack(struct jssites *js, pid_t pid, int32_t id, uint64_t caller)
{
	struct ustack *st = stacks__get(js->stacks, pid, id, caller);

	if (!st || gl_stack_is_py(id))
		return NULL;
	if (!st->site_known) {
		st->site_known = 1;
		js_judge(js, st);
		if (st->site && js_canonical(js, st))
			st->site_known = 0; /* out of memory: judged again next time */
	}
	return st;
}

unsigned int jssites__flags(struct jssites *js, pid_t pid, int32_t id, uint64_t caller)
{
	const struct ustack *st = js_stack(js, pid, id, caller);

	return st ? st->js_flags : 0;
}

uint64_t jssites__site(struct jssites *js, pid_t pid, uint64_t caller, int32_t *stack_id)
{
	const struct ustack *st = js_stack(js, pid, *stack_id, caller);
	uint64_t *at;

	if (!st || !st->site)
		return 0;
	at = hmap__get(&js->canon, (uint32_t)pid, (uint32_t)*stack_id);
	if (at)
		*stack_id = (int32_t)*at;
	return st->site == caller ? 0 : st->site;
}
