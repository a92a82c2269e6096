// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lib/log.h"
#include "lib/vec.h"
#include "live/bpf_setup.h"
#include "live/live.h"
#include "live/pyconf.h"
#include "live/targets.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "probe/py_abi.h"

/* What one object is, as far as Python goes: read once however many processes map it. */
struct py_obj {
	const struct module *mod;
	int err; /* py_abi__detect's: 0 an interpreter, -ENOENT not one, -ENOTSUP not walkable */
	struct py_abi abi;
	char msg[160];
};

struct pyconf {
	struct py_obj *v;
	size_t n, cap;
	long page;
};

int pyconf__new(struct pyconf **out)
{
	*out = calloc(1, sizeof(**out));
	if (!*out)
		return -ENOMEM;
	(*out)->page = sysconf(_SC_PAGESIZE);
	return 0;
}

void pyconf__free(struct pyconf *pc)
{
	if (!pc)
		return;
	free(pc->v);
	free(pc);
}

static const struct py_obj *obj_of(struct pyconf *pc, struct module *mod)
{
	struct py_obj *o;
	size_t i;

	for (i = 0; i < pc->n; i++)
		if (pc->v[i].mod == mod)
			return &pc->v[i];
	if (vec_grow((void **)&pc->v, &pc->cap, pc->n, sizeof(*pc->v)))
		return NULL;
	o = &pc->v[pc->n++];
	memset(o, 0, sizeof(*o));
	o->mod = mod;
	if (!mod->elf || (module__facts(mod) & OBJF_NOT_PYTHON)) {
		o->err = -ENOENT;
		return o;
	}
	o->err = py_abi__detect(mod->elf, mod->name, &o->abi, o->msg, sizeof(o->msg));
	if (o->err == -ENOENT)
		module__learn(mod, OBJF_NOT_PYTHON);
	return o;
}

/* The interpreter among m's objects (the first that defines _PyRuntime) and its mapping. */
static const struct py_obj *find_interp(struct live *l, const struct proc_maps *m,
					const struct pmap_ent **at)
{
	size_t i;

	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		const struct py_obj *o;
		struct module *mod;

		if (!e->exec || !e->path)
			continue;
		mod = modules__get(l->mods, m->pid, e);
		if (!mod)
			return NULL;
		o = obj_of(l->py, mod);
		if (o && o->err != -ENOENT) {
			*at = e;
			return o;
		}
	}
	return NULL;
}

void pyconf__scan(struct live *l, struct target *t, const struct proc_maps *m)
{
	const struct pmap_ent *e = NULL;
	const struct py_obj *o;
	struct gl_py_cfg cfg;
	uint64_t bias;
	char ver[16];
	int err;

	if (!bpf_setup__python_on(l->bpf))
		return;
	o = find_interp(l, m, &e);
	if (!o)
		return;
	py_abi__version_str(o->abi.version, ver, sizeof(ver));
	if (o->err) {
		if (!t->py_said)
			fprintf(stderr,
				"gpuleak: pid %d runs %s, %s: its allocations are named by "
				"native frames only\n",
				t->pid, o->mod->name, o->msg);
		t->py_said = true;
		return;
	}
#if !defined(__x86_64__)
	if (!t->py_said)
		fprintf(stderr,
			"gpuleak: pid %d runs Python %s: Python frames are read on x86-64 "
			"only\n",
			t->pid, ver);
	t->py_said = true;
	return;
#endif
	if (elf_obj__load_bias(o->mod->elf, e->start, e->pgoff, (uint64_t)l->py->page, &bias)) {
		pr_warn("pid %d: where %s is loaded does not match its segments: no Python "
			"frames\n",
			t->pid, o->mod->name);
		return;
	}
	cfg = o->abi.cfg;
	cfg.runtime = o->abi.runtime_vaddr + bias;
	if (t->py_runtime == cfg.runtime)
		return;
	err = bpf_setup__python(l->bpf, t->pid, &cfg);
	if (err) {
		/* -ENOEXEC: the walk could not be loaded, said once by bpf_setup */
		if (err != -ENOEXEC)
			pr_warn("pid %d: no room for its Python configuration in the kernel (%s): "
				"no Python frames\n",
				t->pid, strerror(-err));
		return;
	}
	t->py_runtime = cfg.runtime;
	if (o->abi.version_hex)
		snprintf(ver, sizeof(ver), "%u.%u.%u", o->abi.version_hex >> 24,
			 (o->abi.version_hex >> 16) & 0xff, (o->abi.version_hex >> 8) & 0xff);
	/* Once per process: a fork or a later scan configures the same interpreter again. */
	if (!t->py_said)
		fprintf(stderr, "gpuleak: pid %d runs Python %s (%s): Python frames on%s%s\n",
			t->pid, ver, o->mod->name, o->msg[0] ? "; " : "", o->msg);
	t->py_said = true;
	if (o->abi.debug_fixed)
		pr_info("pid %d: %u fields of Python %s's layout taken from its _Py_DebugOffsets\n",
			t->pid, o->abi.debug_fixed, ver);
	pr_info("pid %d: _PyRuntime at 0x%" PRIx64 " (%s, load bias 0x%" PRIx64 ")\n", t->pid,
		(uint64_t)cfg.runtime, o->mod->name, bias);
}
