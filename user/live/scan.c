// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include "live/attach.h"
#include "live/live.h"
#include "live/markers.h"
#include "live/python.h"
#include "live/recorder.h"
#include "live/scan.h"
#include "live/targets.h"
#include "probe/catalog.h"
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
	fprintf(stderr, "gpuleak: tracing pid %d%s%s: %zu probes in %zu objects\n", t->pid, about,
		n ? ")" : "", attach__nr_probes(l->att, t->pid),
		attach__nr_objects(l->att, t->pid));
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
	recorder__maps(l->rec, m, l->mods);
	err = attach__scan(l->att, m, &nr_new);
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
