// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "lib/hmap.h"
#include "symbols/globs.h"
#include "symbols/pyframes.h"
#include "symbols/pymerge.h"
#include "symbols/stacks.h"
#include "symbols/symbolizer.h"

struct pymerge {
	struct symbolizer *s;	 /* names the frames */
	struct stacks *stacks;	 /* the symbolizer's: merged stacks go there */
	struct pyframes *py;	 /* Python code objects and stacks, from their records */
	struct hmap merged;	 /* ((u32)pid, hash of a merged stack) -> its first id */
	struct hmap canon;	 /* ((u32)pid, id) -> the first id merged to the same frames */
	const char *const *skip; /* --site-skip: frames of these never name a site */
	size_t nr_skip;
};

int pymerge__new(struct symbolizer *s, struct stacks *stacks, struct pymerge **out)
{
	struct pymerge *pm = calloc(1, sizeof(*pm));

	if (!pm)
		return -ENOMEM;
	if (pyframes__new(&pm->py)) {
		free(pm);
		return -ENOMEM;
	}
	pm->s = s;
	pm->stacks = stacks;
	*out = pm;
	return 0;
}

void pymerge__free(struct pymerge *pm)
{
	if (!pm)
		return;
	pyframes__free(pm->py);
	hmap__free(&pm->merged);
	hmap__free(&pm->canon);
	free(pm);
}

void pymerge__set_skip(struct pymerge *pm, const char *const *globs, size_t n)
{
	pm->skip = globs;
	pm->nr_skip = n;
}

/*
 * Frames that never name a site: the interpreter and its way into C (ctypes, libffi), the
 * libraries gpuleak traces, PyTorch's allocator. Object basenames; then Python files.
 */
static const char *const skip_objects[] = {
    "libpython*",  "python*",	  "_ctypes*",	   "libffi.so*", "libcudart.so*",
    "libcuda.so*", "libnccl.so*", "libc.so*",	   "libwebgpu*", "libdawn*",
    "dawn.node",   "libc10*.so*", "libtorch*.so*",
};
static const char *const skip_files[] = {
    "*/site-packages/torch/*",
    "*/dist-packages/torch/*",
    "*/ctypes/__init__.py",
    "<frozen *>",
};

static bool skipped(const struct pymerge *pm, const struct sym_info *si)
{
	if (!si)
		return true;
	if (si->python)
		return globs__any(skip_files, GLOBS_N(skip_files), si->file) ||
		       globs__any(pm->skip, pm->nr_skip, si->file) ||
		       globs__any(pm->skip, pm->nr_skip, si->module);
	return !si->module || globs__any(skip_objects, GLOBS_N(skip_objects), si->module) ||
	       globs__any(pm->skip, pm->nr_skip, si->module);
}

/* A call of the interpreter's evaluation loop: where Python frames run. */
static bool eval_frame(const struct sym_info *si)
{
	return si && si->func && !strncmp(si->func, "_PyEval_EvalFrameDefault", 24);
}

static bool interp_frame(const struct sym_info *si)
{
	return si && si->module &&
	       (!fnmatch("libpython*", si->module, 0) || !fnmatch("python*", si->module, 0));
}

/* The address of Python frame i of st, named as such on first use; 0 without memory. */
static uint64_t py_addr(struct pymerge *pm, const struct py_stack *st, unsigned int i)
{
	struct py_frame_name nm;
	uint64_t addr;

	addr = pyframes__frame(pm->py, st->pid, st->version, &st->frames[i], &nm);
	if (!addr)
		return 0;
	return symbolizer__set_python(pm->s, st->pid, addr, &nm) ? 0 : addr;
}

/*
 * Two Python stack ids merge to the same frames when only what was dropped differs (the
 * native frames of a walk gone astray, how a call of the loop was entered): the first one
 * stands for both, so an allocation site has one stack where a user sees one.
 */
static int canonical(struct pymerge *pm, const struct ustack *st)
{
	uint64_t h = hmap_hash2(st->caller, st->flags | (uint64_t)st->nofp_from << 16), *at;
	const struct ustack *first;
	uint16_t i;

	for (i = 0; i < st->nr; i++)
		h = hmap_hash2(h, st->frames[i]);
	for (;; h++) {
		at = hmap__get(&pm->merged, (uint32_t)st->pid, h);
		if (!at)
			break;
		first = stacks__get(pm->stacks, st->pid, (int32_t)*at, st->caller);
		if (first && first->nr == st->nr && first->flags == st->flags &&
		    first->nofp_from == st->nofp_from && first->site == st->site &&
		    !memcmp(first->frames, st->frames, st->nr * sizeof(st->frames[0])))
			return hmap__put(&pm->canon, (uint32_t)st->pid, (uint32_t)st->id, *at);
	}
	return hmap__put(&pm->merged, (uint32_t)st->pid, h, (uint32_t)st->id);
}

struct merge {
	uint64_t v[STACK_MAX_FRAMES];
	size_t n;
	bool cut;
};

static void merge_add(struct merge *m, uint64_t addr)
{
	if (m->n < STACK_MAX_FRAMES)
		m->v[m->n++] = addr;
	else
		m->cut = true;
}

/*
 * Python frames from *next up to the outermost of those one call of the evaluation loop
 * runs (entry_mask), into m; *next moves past them.
 */
static void merge_group(struct merge *m, const struct py_stack *st, const uint64_t *py,
			unsigned int *next)
{
	unsigned int i;

	for (i = *next; i < st->nr; i++) {
		merge_add(m, py[i]);
		if (st->entry_mask & (1ULL << (i & 63)))
			break;
	}
	*next = i < st->nr ? i + 1 : st->nr;
}

/*
 * The stack of a record with Python frames, as py-spy --native shows one: the native
 * frames, with the Python frames in place of the evaluation loop's calls they ran in. A
 * native walk through an interpreter built without frame pointers (all of these here) is
 * unreliable from the interpreter on: what it found there is dropped while Python frames
 * remain to be placed, since the interpreter's own frame chain says where the program
 * was, exactly; the Python frames left then follow the native frames kept.
 */
static int py_merge(struct pymerge *pm, pid_t pid, int32_t id, uint64_t caller)
{
	const struct py_stack *st = pyframes__stack(pm->py, pid, id);
	uint64_t py[GL_PY_DEPTH_MAX], site = 0;
	const uint64_t *nat = &caller;
	size_t nn = 1, bad_from = 1, i;
	unsigned int next = 0, flags = 0, nofp = 0, p;
	const struct ustack *ns = NULL;
	struct merge m = {};
	bool has_eval = false;
	struct ustack *out;
	int err;

	if (!st || stacks__get(pm->stacks, pid, id, caller))
		return 0;
	for (p = 0; p < st->nr; p++) {
		py[p] = py_addr(pm, st, p);
		if (!py[p])
			return -ENOMEM;
	}
	if (st->native_id >= 0)
		ns = stacks__get(pm->stacks, pid, st->native_id, caller);
	if (ns) {
		nat = ns->frames;
		nn = ns->nr;
		bad_from = ns->flags & STACK_NO_FP ? ns->nofp_from : nn;
		flags |= ns->flags & STACK_TRUNCATED;
	}
	if (!caller)
		nn = 0;
	for (i = 0; i < nn; i++)
		has_eval |= eval_frame(symbolizer__info(pm->s, pid, nat[i]));
	for (i = 0; i < nn; i++) {
		const struct sym_info *si = symbolizer__info(pm->s, pid, nat[i]);
		bool bad = i >= bad_from;

		if (eval_frame(si) && next < st->nr) {
			merge_group(&m, st, py, &next);
			continue;
		}
		/* The interpreter again with no Python left: the Python stack was cut here. */
		if (eval_frame(si) && (st->flags & GL_PYS_TRUNCATED)) {
			flags |= STACK_TRUNCATED;
			break;
		}
		/* Found by a walk gone astray: not where the Python frames belong, and once
		 * they are placed, no call of the loop runs any we know of. */
		if (bad && (next < st->nr || eval_frame(si)))
			continue;
		if (!has_eval && interp_frame(si))
			while (next < st->nr)
				merge_add(&m, py[next++]);
		if (bad && !(flags & STACK_NO_FP)) {
			flags |= STACK_NO_FP;
			nofp = (unsigned int)m.n;
		}
		merge_add(&m, nat[i]);
	}
	while (next < st->nr)
		merge_add(&m, py[next++]);
	if (m.cut || (st->flags & GL_PYS_TRUNCATED))
		flags |= STACK_TRUNCATED;
	/* The site: the innermost frame of the program's own code, else its innermost Python. */
	for (i = 0; i < m.n && !site; i++)
		if (!skipped(pm, symbolizer__info(pm->s, pid, m.v[i])))
			site = m.v[i];
	if (!site)
		site = py[0];
	err = stacks__add(pm->stacks, pid, id, caller, m.v, m.n, flags, nofp);
	if (err)
		return err;
	out = stacks__get(pm->stacks, pid, id, caller);
	if (!out)
		return -ENOMEM;
	out->site = site == caller ? 0 : site;
	return canonical(pm, out);
}

int pymerge__record(struct pymerge *pm, const struct gl_hdr *h)
{
	const struct gl_call_rec *r = (const struct gl_call_rec *)h;

	switch (h->kind) {
	case GL_REC_PY_CODE:
	case GL_REC_PY_STACK:
		return pyframes__record(pm->py, h);
	case GL_REC_ALLOC:
	case GL_REC_ALLOC_FAIL:
		if (h->size < sizeof(*r) || !gl_stack_is_py(r->stack_id))
			return 0;
		return py_merge(pm, (pid_t)h->pid, r->stack_id, r->caller);
	default:
		return 0;
	}
}

int32_t pymerge__native_id(const struct pymerge *pm, pid_t pid, int32_t id)
{
	const struct py_stack *st = pyframes__stack(pm->py, pid, id);

	return st ? st->native_id : -1;
}

int32_t pymerge__canonical(const struct pymerge *pm, pid_t pid, int32_t id)
{
	const uint64_t *at = hmap__get(&pm->canon, (uint32_t)pid, (uint32_t)id);

	return at ? (int32_t)*at : id;
}

uint64_t pymerge__bad(const struct pymerge *pm)
{
	return pyframes__bad(pm->py);
}
