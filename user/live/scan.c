// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include "lib/log.h"
#include "live/attach.h"
#include "live/feed.h"
#include "live/fpless.h"
#include "live/live.h"
#include "live/markers.h"
#include "live/pyconf.h"
#include "live/recorder.h"
#include "live/scan.h"
#include "live/targets.h"
#include "probe/catalog.h"
#include "probe/dawn_procs.h"
#include "probe/elf_obj.h"
#include "probe/modules.h"
#include "probe/proc_maps.h"
#include "symbols/symbolizer.h"

bool scan__has_site(struct live *l, const struct proc_maps *m, unsigned int flags, int op)
{
	size_t i, j;

	for (i = 0; i < m->n; i++) {
		struct module *mod;

		if (!m->v[i].exec || !m->v[i].path)
			continue;
		mod = modules__get(l->mods, m->pid, &m->v[i]);
		if (!mod || module__scan(mod))
			continue;
		for (j = 0; j < mod->nr_sites; j++)
			if ((flags && (mod->sites[j].api->flags & flags)) ||
			    (op >= 0 && mod->sites[j].api->op == (enum cat_op)op))
				return true;
	}
	return false;
}

bool scan__has_rendezvous(struct live *l, const struct proc_maps *m)
{
	return scan__has_site(l, m, 0, OP_RENDEZVOUS);
}

void scan__say_tracing(struct live *l, const struct target *t)
{
	char about[96] = "";
	int n = 0;

	if (t->ppid)
		n += snprintf(about + n, sizeof(about) - n, "%schild of %d", n ? ", " : " (",
			      t->ppid);
	if (t->execs)
		n += snprintf(about + n, sizeof(about) - n, "%safter exec", n ? ", " : " (");
	if (t->ns_pid)
		n += snprintf(about + n, sizeof(about) - n, "%spid %u in its namespace",
			      n ? ", " : " (", t->ns_pid);
	pr_note("tracing pid %d%s%s: %zu probes in %zu objects\n", t->pid, about, n ? ")" : "",
		attach__nr_probes(l->att, t->pid), attach__nr_objects(l->att, t->pid));
}

static void class_rec(struct live *l, pid_t pid, enum gl_class_kind kind, uint64_t vptr,
		      uint64_t len)
{
	struct gl_class_rec c = {
	    .hdr = {.size = sizeof(c), .kind = GL_REC_CLASS, .pid = (__u32)pid, .tid = (__u32)pid},
	    .vptr = vptr,
	    .len = len,
	    .kind = kind};

	c.hdr.ts_ns = live_now_ns();
	feed__record(l, &c.hdr);
}

/*
 * An object whose WebGPU entry points came from Dawn's proc table has no MakeError symbol to
 * say a creation returned an error object: what its objects are made of tells instead. The
 * analysis learns where the object is mapped (its vtables are there) and the run-time
 * addresses of its error classes' vtables, as records (gl_class_rec), before any of its
 * probes can fire; sent at every scan, kept once.
 */
static void dawn_classes(struct live *l, const struct proc_maps *m)
{
	size_t i, j, k;

	for (i = 0; i < m->n; i++) {
		const struct pmap_ent *e = &m->v[i];
		uint64_t lo = UINT64_MAX, hi = 0;
		struct module *mod;

		/* Modules are looked up by their code, as attach does: no other file is opened. */
		if (!proc_maps__first_exec(m, i) || !(mod = modules__get(l->mods, m->pid, e)) ||
		    !mod->dawn)
			continue;
		for (j = 0; j < m->n; j++) {
			if (m->v[j].dev != e->dev || m->v[j].ino != e->ino || !m->v[j].path)
				continue;
			lo = m->v[j].start < lo ? m->v[j].start : lo;
			hi = m->v[j].end > hi ? m->v[j].end : hi;
		}
		class_rec(l, m->pid, GL_CLASS_DAWN_IMAGE, lo, hi - lo);
		for (k = 0; k < mod->dawn->nr_error_vptr; k++) {
			uint64_t off;

			if (elf_obj__vaddr_to_off(mod->elf, mod->dawn->error_vptr[k], &off))
				continue;
			for (j = 0; j < m->n; j++) {
				const struct pmap_ent *f = &m->v[j];

				if (f->dev == e->dev && f->ino == e->ino && f->path &&
				    off >= f->pgoff && off - f->pgoff < f->end - f->start) {
					class_rec(l, m->pid, GL_CLASS_ERROR_OBJECT,
						  f->start + off - f->pgoff, 0);
					break;
				}
			}
		}
	}
}

int scan__target(struct live *l, struct target *t)
{
	struct proc_maps *m = NULL;
	int err, nr_new = 0;

	t->rescan_pending = false;
	t->last_rescan_ns = live_now_ns();
	err = proc_maps__load(t->pid, &m);
	if (err)
		goto out;
	symbolizer__add_maps(l->sym, m);
	fpless__scan(l, m);
	recorder__maps(l->rec, m, l->mods);
	err = attach__scan(l->att, m, &nr_new);
	dawn_classes(l, m);
	markers__attach(l->mk, l->att, t, m);
	pyconf__scan(l, t, m);
	if (!t->has_rendezvous)
		t->has_rendezvous = scan__has_rendezvous(l, m);
	if (!t->has_lib && attach__has_required(l->att, t->pid)) {
		t->has_lib = true;
		scan__say_tracing(l, t);
	}
out:
	proc_maps__free(m);
	return err == -ESRCH ? 0 : err;
}
